//! Synthetic fingerprints shared by the index benchmarks: N uniformly random 64-bit values, 1 % of them
//! replaced by near-copies (1 to k bits flipped) of others, the set-up of the simhash-cpp `find_all` figures
//! in the project's research notes; or, skewed like real SimHash data, N values near a few thousand centres.
//! Deterministic: the same N, k and shape give the same set.

/// Xorshift64: fast, deterministic, good enough to spread fingerprints.
pub struct XorShift(u64);

impl XorShift {
    pub fn new() -> Self {
        XorShift(0x9e37_79b9_7f4a_7c15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The benchmark's N (first argument, e.g. `1e7`; default 1e6) and k (second argument; default 3).
pub fn n_and_k(args: &[String]) -> (usize, u32) {
    let n = args
        .get(1)
        .and_then(|s| s.replace('_', "").parse::<f64>().ok())
        .unwrap_or(1e6) as usize;
    let k = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    (n, k)
}

/// N fingerprints with 1 % planted near-duplicates within k bits.
pub fn fingerprints(n: usize, k: u32, rng: &mut XorShift) -> Vec<u64> {
    let fps: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    plant(fps, k, rng)
}

/// How many centres the skewed set has.
#[allow(dead_code)]
pub const CENTRES: usize = 4096;

/// N skewed fingerprints: each is one of [`CENTRES`] random centres with 4 to 16 random bits flipped, so the
/// keys of every table crowd into a few thousand regions (long runs of rows sharing a key), then 1 % planted
/// near-duplicates within k bits as in [`fingerprints`].
#[allow(dead_code)]
pub fn skewed(n: usize, k: u32, rng: &mut XorShift) -> Vec<u64> {
    let centres: Vec<u64> = (0..CENTRES).map(|_| rng.next()).collect();
    let fps: Vec<u64> = (0..n)
        .map(|_| {
            let mut fp = centres[(rng.next() % CENTRES as u64) as usize];
            for _ in 0..4 + rng.next() % 13 {
                fp ^= 1 << (rng.next() % 64);
            }
            fp
        })
        .collect();
    plant(fps, k, rng)
}

fn plant(mut fps: Vec<u64>, k: u32, rng: &mut XorShift) -> Vec<u64> {
    let n = fps.len();
    for i in 0..n / 100 {
        let src = (rng.next() % n as u64) as usize;
        let flips = 1 + (rng.next() % k.max(1) as u64) as u32;
        let mut fp = fps[src];
        for _ in 0..flips {
            fp ^= 1 << (rng.next() % 64);
        }
        fps[(i * 97) % n] = fp;
    }
    fps
}

/// CPU seconds (user + system, all threads) this process has used so far, from `/proc/self/stat` (Linux; 0
/// elsewhere): on a shared machine, where wall time swings with the load, the CPU time of a phase is steadier.
#[allow(dead_code)]
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name; 100 ticks a second.
    (ticks(11) + ticks(12)) / 100.0
}

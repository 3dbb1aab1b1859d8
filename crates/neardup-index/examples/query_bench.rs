//! Point queries into the online index:
//! `cargo run --release -p neardup-index --example query_bench -- N [K] [--skewed] [--queries Q] [--id-prefix P]`.
//!
//! N synthetic fingerprints (`common/synthetic.rs`, as in `all_pairs_bench`: uniform with 1 % planted
//! near-copies, or with `--skewed` drawn from 4,096 centres), each under a URL-like id
//! (`https://example.org/doc/<i>`, 25 to 32 bytes; `--id-prefix P` replaces the prefix, e.g. `--id-prefix ''`
//! for 10^8 ids in less memory), bulk-loaded with the planner's design for N and K (default
//! 3). Then Q queries (default 200,000): half are stored fingerprints with 0 to K bits flipped, half random.
//! Prints the bulk-load time (ids are formatted on the fly, into a stack buffer, while loading: the time to
//! format them alone is printed beside it), the time of a second table build (`rebuild`), the memory of the
//! tables and of the ids in bytes per fingerprint, and the median and 99th percentile query latency (timed
//! in batches of 100 queries to keep the clock out of the figure). Run it under `/usr/bin/time -v` for peak
//! memory.

use neardup_index::hamming::HammingIndex;
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

#[path = "common/synthetic.rs"]
mod synthetic;

/// A URL-like id formatted into a fixed buffer: no allocation per id, so the load, not the allocator of the
/// benchmark's input, is what is timed, and 10^8 ids need not exist at once outside the index.
struct Url {
    buf: [u8; 48],
    len: usize,
}

impl Url {
    fn new(prefix: &str, i: usize) -> Url {
        let mut buf = [0u8; 48];
        let mut w = &mut buf[..];
        write!(w, "{prefix}{i}").expect("fits");
        let len = 48 - w.len();
        Url { buf, len }
    }
}

impl AsRef<str> for Url {
    fn as_ref(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).expect("ASCII")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, k) = synthetic::n_and_k(&args);
    let skewed = args.iter().any(|a| a == "--skewed");
    let queries_n: usize = args
        .iter()
        .position(|a| a == "--queries")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let prefix: String = args
        .iter()
        .position(|a| a == "--id-prefix")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "https://example.org/doc/".to_owned());
    assert!(prefix.len() <= 28, "--id-prefix: at most 28 bytes");
    let mut rng = synthetic::XorShift::new();
    let fps = if skewed {
        synthetic::skewed(n, k, &mut rng)
    } else {
        synthetic::fingerprints(n, k, &mut rng)
    };
    let t = Instant::now();
    let id_bytes: usize = (0..n).map(|i| black_box(Url::new(&prefix, i)).len).sum();
    let format = t.elapsed().as_secs_f64();
    let (start, cpu) = (Instant::now(), synthetic::cpu_seconds());
    let mut index = HammingIndex::new(k, n);
    index
        .extend(
            fps.iter()
                .enumerate()
                .map(|(i, &fp)| (Url::new(&prefix, i), fp)),
        )
        .expect("load");
    let build = start.elapsed().as_secs_f64();
    let build_cpu = synthetic::cpu_seconds() - cpu;
    let (t, cpu) = (Instant::now(), synthetic::cpu_seconds());
    index.rebuild();
    let rebuild = t.elapsed().as_secs_f64();
    let rebuild_cpu = synthetic::cpu_seconds() - cpu;
    let m = index.memory();
    let queries: Vec<u64> = (0..queries_n)
        .map(|q| {
            if q % 2 == 0 {
                let mut fp = fps[(rng.next() % n as u64) as usize];
                for _ in 0..(rng.next() % (k as u64 + 1)) {
                    fp ^= 1 << (rng.next() % 64);
                }
                fp
            } else {
                rng.next()
            }
        })
        .collect();
    drop(fps);
    let mut per_query = Vec::new();
    let mut found = 0usize;
    for batch in queries.chunks(100) {
        let t = Instant::now();
        for &q in batch {
            found += index.query(q, k).expect("query").len();
        }
        per_query.push(t.elapsed().as_secs_f64() * 1e6 / batch.len() as f64);
    }
    per_query.sort_by(f64::total_cmp);
    let median = per_query[per_query.len() / 2];
    let p99 = per_query[per_query.len() * 99 / 100];
    println!(
        "n = {n}, k = {k}, {}, design: {} ({} tables): bulk load {build:.2} s, {build_cpu:.2} CPU-s (formatting the ids alone {format:.2} s; table build alone {rebuild:.2} s, {rebuild_cpu:.2} CPU-s); tables {:.1} B/fp, ids {:.1} B/fp ({:.1} B of id text); query median {median:.2} µs, p99 {p99:.2} µs; {found} matches",
        if skewed { "skewed" } else { "uniform" },
        index.design(),
        index.design().tables(),
        m.table_bytes_per_entry(),
        m.id_bytes_per_entry(),
        id_bytes as f64 / n as f64,
    );
}

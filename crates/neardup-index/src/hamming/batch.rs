//! Batch mode: every pair of fingerprints within distance k, each reported once, streamed; and clusters, the
//! connected components of those pairs, with deterministic representatives.
//!
//! For each table of the design, the fingerprints are permuted, sorted, and compared within runs of equal key.
//! A pair can share a key in several tables; it is reported only by the first table in which it does (a pair
//! found in table t is skipped if it also agrees on the key bits of an earlier table), so nothing has to be
//! remembered across tables and results stream out in a deterministic order.

use super::plan::Design;
use crate::hamming;
use crate::radix::radix_sort_by_key;
use crate::union_find::UnionFind;

/// Calls `emit(i, j, d)` for every pair of indices `i < j` with `hamming(fps[i], fps[j]) = d ≤ k` exactly once.
///
/// The order is deterministic (by table, then by key, then by index); it depends on the indices,
/// so callers that want output independent of input order assign indices in a canonical order first.
/// From 16,384 fingerprints the comparisons run on the rayon pool's threads while `emit` runs on the calling
/// thread, in the same order (unless the caller is one of the pool's threads, or the process was forked).
///
/// ```
/// use neardup_index::hamming::{all_pairs, plan::Design};
/// let fps = [0u64, 0b111, 0b1111, u64::MAX];
/// let mut pairs = Vec::new();
/// all_pairs(&fps, &Design::new(3, vec![6]).unwrap(), |i, j, d| pairs.push((i, j, d)));
/// pairs.sort();
/// assert_eq!(pairs, [(0, 1, 3), (1, 2, 1)]);
/// ```
pub fn all_pairs(fps: &[u64], design: &Design, emit: impl FnMut(u32, u32, u32)) {
    all_pairs_while(fps, design, || true, emit);
}

/// [`all_pairs`] that stops early once `go_on()` is false: it is asked before each crowded run of equal key
/// (where the time goes) and each group of rows, so a caller can stop a long batch (Ctrl-C in Python) within
/// a run's comparisons. The pairs emitted until then are those [`all_pairs`] emits first.
///
/// ```
/// use neardup_index::hamming::{all_pairs_while, plan::Design};
/// let (fps, design) = ([0u64; 100], Design::new(3, vec![6]).unwrap());
/// let (mut pairs, mut stopped) = (0, 0);
/// all_pairs_while(&fps, &design, || true, |_, _, _| pairs += 1);
/// all_pairs_while(&fps, &design, || false, |_, _, _| stopped += 1);
/// assert_eq!((pairs, stopped), (4950, 0));
/// ```
pub fn all_pairs_while(
    fps: &[u64],
    design: &Design,
    go_on: impl FnMut() -> bool,
    emit: impl FnMut(u32, u32, u32),
) {
    if fps.len() >= PARALLEL_FROM && may_work_in_parallel() {
        all_pairs_in_parallel(fps, design, group_bits(fps.len()), go_on, emit);
    } else {
        all_pairs_in_groups(fps, design, group_bits(fps.len()), go_on, emit);
    }
}

/// Fewer fingerprints than this are compared on the calling thread: handing work to the pool costs more.
const PARALLEL_FROM: usize = 16_384;

/// Whether the pool's other threads can take the comparisons while this one waits for them: not from one of
/// the pool's own threads (which would wait on work queued behind it, with one thread for ever), not in a
/// forked process (whose pool is its own, reached through [`crate::parallel::install`]), not with one thread.
fn may_work_in_parallel() -> bool {
    rayon::current_thread_index().is_none()
        && crate::parallel::generation() == 0
        && rayon::current_num_threads() > 1
}

/// [`all_pairs`] with the number of group bits given (tests use it to exercise grouping on small inputs).
#[allow(unsafe_code)]
fn all_pairs_in_groups(
    fps: &[u64],
    design: &Design,
    group_bits: u32,
    go_on: impl FnMut() -> bool,
    emit: impl FnMut(u32, u32, u32),
) {
    // SAFETY: the best build is one this CPU runs.
    unsafe { Build::best().all_pairs(fps, design, group_bits, go_on, emit) }
}

/// Calls `emit(x, y, d)` for every pair of places `x < y` in `fps` whose fingerprints are `d ≤ k` bits apart:
/// the pairs of one list (a run of a table, a distributed job's bucket), in the order of the loop over `x`
/// then `y`, without a table. Quadratic, but a block of fingerprints at a time in vector registers (below).
///
/// ```
/// let mut pairs = Vec::new();
/// neardup_index::hamming::pairs_within(&[0, 0b111, 0b1111, u64::MAX], 3, |x, y, d| pairs.push((x, y, d)));
/// assert_eq!(pairs, [(0, 1, 3), (1, 2, 1)]);
/// ```
#[allow(unsafe_code)]
pub fn pairs_within(fps: &[u64], k: u32, emit: impl FnMut(usize, usize, u32)) {
    // SAFETY: the best build is one this CPU runs.
    unsafe { Build::best().pairs_within(fps, k, emit) }
}

/// The instruction sets the comparisons are compiled for, chosen at run time.
///
/// Crowded keys make the distance the hot loop: short or templated texts put thousands of fingerprints under
/// one key, and nearly all the time goes to comparing them (almost always to find them farther than k). A
/// build for the baseline x86-64 counts bits in about a dozen instructions, one pair at a time; the same code
/// is also compiled for the `popcnt` instruction (every x86-64 since 2008–2011), for AVX2 (4 pairs at a time)
/// and for AVX-512's `vpopcntq` (8 at a time), and the best the CPU has is used. The results are the same, in
/// the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Build {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Popcnt,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

#[allow(unsafe_code)]
impl Build {
    /// Every build, the best last.
    const ALL: &[Build] = &[
        Build::Baseline,
        #[cfg(target_arch = "x86_64")]
        Build::Popcnt,
        #[cfg(target_arch = "x86_64")]
        Build::Avx2,
        #[cfg(target_arch = "x86_64")]
        Build::Avx512,
    ];

    /// Whether this CPU has the build's features (the standard library caches what the CPU has).
    fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        use std::arch::is_x86_feature_detected as has;
        match self {
            Build::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Build::Popcnt => has!("popcnt"),
            #[cfg(target_arch = "x86_64")]
            Build::Avx2 => has!("avx2") && has!("popcnt"),
            #[cfg(target_arch = "x86_64")]
            Build::Avx512 => has!("avx512f") && has!("avx512vpopcntdq") && has!("popcnt"),
        }
    }

    /// The best build this CPU runs.
    fn best() -> Build {
        let runs = Build::ALL.iter().rev().find(|build| build.runs_here());
        *runs.unwrap_or(&Build::Baseline)
    }

    /// Every pair within k, one group of rows after another on this thread, each group's comparisons in
    /// this build.
    ///
    /// # Safety
    ///
    /// The build must [run here](Build::runs_here).
    unsafe fn all_pairs(
        self,
        fps: &[u64],
        design: &Design,
        group_bits: u32,
        mut go_on: impl FnMut() -> bool,
        mut emit: impl FnMut(u32, u32, u32),
    ) {
        for_each_group(fps, design, group_bits, &mut go_on, |rows, go_on| {
            // SAFETY: the caller checked the build's features.
            unsafe { self.rows_pairs(rows, |found| deliver(found, go_on, &mut emit)) }
        });
    }

    /// [`pairs_of_rows`] in this build.
    ///
    /// # Safety
    ///
    /// The build must [run here](Build::runs_here).
    unsafe fn rows_pairs(self, rows: &Rows<'_>, found: impl FnMut(Found) -> bool) -> bool {
        // SAFETY (each arm): the caller checked the build's features.
        match self {
            Build::Baseline => pairs_of_rows(rows, found),
            #[cfg(target_arch = "x86_64")]
            Build::Popcnt => unsafe { x86::rows_popcnt(rows, found) },
            #[cfg(target_arch = "x86_64")]
            Build::Avx2 => unsafe { x86::rows_avx2(rows, found) },
            #[cfg(target_arch = "x86_64")]
            Build::Avx512 => unsafe { x86::rows_avx512(rows, found) },
        }
    }

    /// [`pairs_within`] in this build.
    ///
    /// # Safety
    ///
    /// The build must [run here](Build::runs_here).
    unsafe fn pairs_within(self, fps: &[u64], k: u32, emit: impl FnMut(usize, usize, u32)) {
        // SAFETY (each arm): the caller checked the build's features.
        match self {
            Build::Baseline => pairs_in_crowded_run(fps, k, &[], emit),
            #[cfg(target_arch = "x86_64")]
            Build::Popcnt => unsafe { x86::within_popcnt(fps, k, emit) },
            #[cfg(target_arch = "x86_64")]
            Build::Avx2 => unsafe { x86::within_avx2(fps, k, emit) },
            #[cfg(target_arch = "x86_64")]
            Build::Avx512 => unsafe { x86::within_avx512(fps, k, emit) },
        }
    }
}

/// [`pairs_of_rows`] and [`pairs_in_crowded_run`] compiled for the instruction sets of later x86-64 CPUs.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Found, Rows, pairs_in_crowded_run, pairs_of_rows};

    macro_rules! build {
        ($features:literal, $rows:ident, $within:ident) => {
            #[target_feature(enable = $features)]
            pub fn $rows(rows: &Rows<'_>, found: impl FnMut(Found) -> bool) -> bool {
                pairs_of_rows(rows, found)
            }

            #[target_feature(enable = $features)]
            pub fn $within(fps: &[u64], k: u32, emit: impl FnMut(usize, usize, u32)) {
                pairs_in_crowded_run(fps, k, &[], emit)
            }
        };
    }

    build!("popcnt", rows_popcnt, within_popcnt);
    build!("avx2,popcnt", rows_avx2, within_avx2);
    build!("avx512f,avx512vpopcntdq,popcnt", rows_avx512, within_avx512);
}

/// Hands on what the comparisons found, as one thread does: a pair to `emit`; at a crowded run, whether to
/// go on.
#[inline(always)]
fn deliver(
    found: Found,
    go_on: &mut impl FnMut() -> bool,
    emit: &mut impl FnMut(u32, u32, u32),
) -> bool {
    match found {
        Found::Pair(i, j, d) => {
            emit(i, j, d);
            true
        }
        Found::Crowded => go_on(),
    }
}

/// [`all_pairs_in_groups`] with each group's comparisons on the pool's threads, a slice of its runs each, and
/// their pairs emitted on this thread in the very order one thread emits them: `go_on` is asked where one
/// thread asks it (before each group and each crowded run), as the slices' results are replayed, and a stop
/// tells the slices still running to give up. So the pairs, the questions and a stopped run's prefix are
/// those of one thread; only the comparisons move.
#[allow(unsafe_code)]
fn all_pairs_in_parallel(
    fps: &[u64],
    design: &Design,
    group_bits: u32,
    mut go_on: impl FnMut() -> bool,
    mut emit: impl FnMut(u32, u32, u32),
) {
    let build = Build::best();
    for_each_group(fps, design, group_bits, &mut go_on, |rows, go_on| {
        let threads = rayon::current_num_threads();
        let slices = slices_at_runs(rows, SLICES_PER_THREAD * threads);
        let stop = std::sync::atomic::AtomicBool::new(false);
        // Each slice sends its pairs, or its panic: this thread waits for every slice it replays, so a slice
        // that ended without sending would leave it waiting for ever.
        type Sent = (usize, std::thread::Result<Vec<Found>>);
        let (done, results) = std::sync::mpsc::channel::<Sent>();
        rayon::in_place_scope(|scope| {
            let spawn = |n: usize| {
                let (done, slice, stop) = (done.clone(), &slices[n], &stop);
                scope.spawn(move |_| {
                    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let mut out = Vec::new();
                        // SAFETY: the best build is one this CPU runs.
                        unsafe {
                            build.rows_pairs(slice, |found| {
                                out.push(found);
                                !stop.load(std::sync::atomic::Ordering::Relaxed)
                            })
                        };
                        out
                    }));
                    let _ = done.send((n, found)); // this thread gave up waiting: nothing to do
                });
            };
            // A few slices ahead of the one being replayed: the pairs waiting stay few.
            let ahead = (SLICES_AHEAD_PER_THREAD * threads).min(slices.len());
            (0..ahead).for_each(spawn);
            let mut waiting = std::collections::BTreeMap::new();
            for n in 0..slices.len() {
                let found = loop {
                    if let Some(found) = waiting.remove(&n) {
                        break found;
                    }
                    let (m, found) = results.recv().expect("a slice sends its pairs");
                    waiting.insert(
                        m,
                        found.unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    );
                };
                if n + ahead < slices.len() {
                    spawn(n + ahead);
                }
                if !found
                    .into_iter()
                    .all(|item| deliver(item, go_on, &mut emit))
                {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    return false;
                }
            }
            true
        })
    });
}

/// A group is cut into about this many slices per thread (more than one: runs differ widely in work).
const SLICES_PER_THREAD: usize = 16;
/// Slices handed to the pool ahead of the one whose pairs are being emitted, per thread.
const SLICES_AHEAD_PER_THREAD: usize = 4;

/// `rows` cut into at most `pieces` slices of about equal length, each ending where a run of equal key ends.
fn slices_at_runs<'a>(rows: &Rows<'a>, pieces: usize) -> Vec<Rows<'a>> {
    let step = rows.rows.len().div_ceil(pieces.max(1)).max(1);
    let mut slices = Vec::new();
    let mut start = 0;
    while start < rows.rows.len() {
        let mut end = (start + step).min(rows.rows.len());
        while end < rows.rows.len() && rows.key(end) == rows.key(end - 1) {
            end += 1;
        }
        slices.push(Rows {
            rows: &rows.rows[start..end],
            ..*rows
        });
        start = end;
    }
    slices
}

/// What the comparisons of some rows find, in order: a pair, or the start of a crowded run (where the
/// caller may stop: [`pairs_of_rows`] goes on only if told `true`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Pair(u32, u32, u32),
    Crowded,
}

/// Rows of one table's group, sorted by key: each a permuted fingerprint and its index.
#[derive(Clone, Copy)]
struct Rows<'a> {
    rows: &'a [(u64, u32)],
    /// 64 − the table's key bits: a row's key is its permuted fingerprint shifted right by this.
    shift: u32,
    k: u32,
    /// The earlier tables' key masks, permuted as this table's fingerprints are.
    earlier: &'a [u64],
}

impl Rows<'_> {
    fn key(&self, row: usize) -> u64 {
        self.rows[row].0 >> self.shift
    }
}

/// Every table's groups of rows in turn, sorted by key, each handed to `pairs` (with `go_on`), which says
/// whether to go on; `go_on` is asked before each group too.
fn for_each_group<G: FnMut() -> bool>(
    fps: &[u64],
    design: &Design,
    group_bits: u32,
    go_on: &mut G,
    mut pairs: impl FnMut(&Rows<'_>, &mut G) -> bool,
) {
    assert!(
        fps.len() < u32::MAX as usize,
        "at most 2^32 - 1 fingerprints per batch"
    );
    let layouts = design.layouts();
    // Each table is processed in groups of equal top key bits, in key order: a counting pass places the
    // indices of every group together (4 bytes per fingerprint), and only one group's rows (16 bytes each)
    // exist at a time, so memory stays near 13 bytes per fingerprint instead of 24.
    let mut members: Vec<u32> = vec![0; fps.len()];
    let mut rows: Vec<(u64, u32)> = Vec::new();
    let mut scratch: Vec<(u64, u32)> = Vec::new();
    for (t, layout) in layouts.iter().enumerate() {
        // The earlier tables' key bits, moved as this table moves a fingerprint's: a bit permutation, so
        // `permute(x ^ y) & permute(m)` is nonzero exactly when `(x ^ y) & m` is.
        let earlier: Vec<u64> = layouts[..t]
            .iter()
            .map(|l| layout.permute(l.key_mask))
            .collect();
        let g_bits = group_bits.min(layout.key_bits);
        // The group is the permuted value's top bits; when the first segment holds them, read them directly.
        let first = layout.segments[0];
        let group_of = |fp: u64| {
            if g_bits == 0 {
                0
            } else if first.width >= g_bits {
                ((fp >> (first.lo + first.width - g_bits)) & ((1u64 << g_bits) - 1)) as usize
            } else {
                (layout.permute(fp) >> (64 - g_bits)) as usize
            }
        };
        let mut starts = vec![0usize; (1 << g_bits) + 1];
        for &fp in fps {
            starts[group_of(fp) + 1] += 1;
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let mut fill = starts.clone();
        for (i, &fp) in fps.iter().enumerate() {
            let g = group_of(fp);
            members[fill[g]] = i as u32;
            fill[g] += 1;
        }
        let shift = 64 - layout.key_bits;
        for g in 0..1 << g_bits {
            if !go_on() {
                return;
            }
            rows.clear();
            rows.extend(
                members[starts[g]..starts[g + 1]]
                    .iter()
                    .map(|&i| (layout.permute(fps[i as usize]), i)),
            );
            // Rows arrive in index order; a stable sort on the key keeps equal keys in index order.
            radix_sort_by_key(&mut rows, &mut scratch, shift, layout.key_bits - g_bits);
            let group = Rows {
                rows: &rows,
                shift,
                k: design.k,
                earlier: &earlier,
            };
            if !pairs(&group, go_on) {
                return;
            }
        }
    }
}

/// The pairs of sorted rows, run by run of equal key, as [`Found`]s in order; `false` once `found` says to
/// stop (it is asked at each crowded run).
#[inline(always)]
fn pairs_of_rows(group: &Rows<'_>, mut found: impl FnMut(Found) -> bool) -> bool {
    let &Rows {
        rows, k, earlier, ..
    } = group;
    // The permuted fingerprints of one run of equal key, side by side for the vector units.
    let mut keys: Vec<u64> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let key = group.key(start);
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| r.0 >> group.shift == key)
                .count();
        let run = &rows[start..end];
        if run.len() <= SHORT_RUN {
            // Most runs of spread-out fingerprints hold one or two: compared directly.
            for (x, &(xk, xi)) in run.iter().enumerate() {
                for &(yk, yi) in &run[x + 1..] {
                    let d = hamming(xk, yk); // a permutation keeps distances
                    if d <= k && earlier.iter().all(|&m| (xk ^ yk) & m != 0) {
                        found(Found::Pair(xi.min(yi), xi.max(yi), d));
                    }
                }
            }
        } else {
            if !found(Found::Crowded) {
                return false;
            }
            keys.clear();
            keys.extend(run.iter().map(|r| r.0));
            pairs_in_crowded_run(&keys, k, earlier, |x, y, d| {
                let (i, j) = (run[x].1, run[y].1);
                found(Found::Pair(i.min(j), i.max(j), d));
            });
        }
        start = end;
    }
    true
}

/// Runs of at most this many fingerprints are compared pair by pair.
const SHORT_RUN: usize = 8;
/// The later members of a crowded run are compared with one a block of this many at a time.
const NEAR_BLOCK: usize = 64;

/// The pairs of one crowded run of equal key, `keys` being its permuted fingerprints in index order:
/// `emit(x, y, d)` for the places `x < y` of each pair within `k` that shares none of the `earlier` tables'
/// keys, in the order of the pair-by-pair loop.
#[inline(always)]
fn pairs_in_crowded_run(
    keys: &[u64],
    k: u32,
    earlier: &[u64],
    mut emit: impl FnMut(usize, usize, u32),
) {
    for (a, &x) in keys.iter().enumerate() {
        // The later members a block at a time: which of them are within k is worked out in vector registers,
        // as a bit mask, and only those are looked at one by one.
        let mut b = a + 1;
        for block in keys[a + 1..].chunks(NEAR_BLOCK) {
            let mut near = block.iter().enumerate().fold(0u64, |mask, (j, &y)| {
                mask | (u64::from(hamming(x, y) <= k) << j)
            });
            while near != 0 {
                let y = b + near.trailing_zeros() as usize;
                near &= near - 1;
                if earlier.iter().all(|&m| (x ^ keys[y]) & m != 0) {
                    emit(a, y, hamming(x, keys[y])); // a permutation keeps distances
                }
            }
            b += block.len();
        }
    }
}

/// How many top key bits split a table into groups: up to 16 groups, none under 1 Mi fingerprints. Each group
/// reads the fingerprints it holds from the whole array, so more groups cost more memory traffic; 16 keep the
/// rows at a sixteenth of their size (about 13 bytes per fingerprint in all).
fn group_bits(n: usize) -> u32 {
    let groups = (n >> 20).max(1);
    groups.next_power_of_two().trailing_zeros().min(4)
}

/// Groups fingerprints into clusters: connected components of the graph whose edges join fingerprints within
/// distance k. Returns only clusters of two or more, each sorted, ordered by their smallest index (the
/// representative). Identical fingerprints are joined directly, so a million copies cost no pairs.
///
/// ```
/// use neardup_index::hamming::{clusters, plan::Design};
/// let fps = [0b1u64, u64::MAX, 0b11, 0b1, 0b1111_0000];
/// assert_eq!(clusters(&fps, &Design::new(3, vec![6]).unwrap()), vec![vec![0, 2, 3]]);
/// ```
pub fn clusters(fps: &[u64], design: &Design) -> Vec<Vec<u32>> {
    let mut uf = UnionFind::new(fps.len());
    // Collapse identical fingerprints: sort indices by value, join runs, keep one index per distinct value.
    let mut order: Vec<u32> = (0..fps.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (fps[i as usize], i));
    let mut unique_fps = Vec::new();
    let mut unique_idx = Vec::new();
    for w in 0..order.len() {
        let i = order[w];
        if w > 0 && fps[order[w - 1] as usize] == fps[i as usize] {
            uf.union(order[w - 1], i);
        } else {
            unique_fps.push(fps[i as usize]);
            unique_idx.push(i);
        }
    }
    all_pairs(&unique_fps, design, |a, b, _| {
        uf.union(unique_idx[a as usize], unique_idx[b as usize])
    });
    uf.clusters()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn brute(fps: &[u64], k: u32) -> BTreeSet<(u32, u32, u32)> {
        let mut out = BTreeSet::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = hamming(fps[i], fps[j]);
                if d <= k {
                    out.insert((i as u32, j as u32, d));
                }
            }
        }
        out
    }

    fn indexed(fps: &[u64], design: &Design) -> Vec<(u32, u32, u32)> {
        let mut v = Vec::new();
        all_pairs(fps, design, |i, j, d| v.push((i, j, d)));
        v
    }

    fn check(fps: &[u64], design: &Design) -> Result<(), TestCaseError> {
        let got = indexed(fps, design);
        let set: BTreeSet<_> = got.iter().copied().collect();
        prop_assert_eq!(set.len(), got.len(), "a pair was reported twice");
        prop_assert_eq!(set, brute(fps, design.k));
        Ok(())
    }

    /// Clustered fingerprints, like real SimHash data: a few centres and points a few bits away from them,
    /// with exact duplicates.
    fn clustered() -> impl Strategy<Value = Vec<u64>> {
        (
            proptest::collection::vec(any::<u64>(), 1..6),
            proptest::collection::vec((any::<usize>(), any::<u64>(), 0u32..8), 0..80),
        )
            .prop_map(|(centres, points)| {
                points
                    .into_iter()
                    .map(|(c, noise, flips)| {
                        let mut x = centres[c % centres.len()];
                        let mut r = noise;
                        for _ in 0..flips {
                            x ^= 1u64 << (r % 64);
                            r = r.rotate_left(7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        }
                        x
                    })
                    .collect()
            })
    }

    thread_local! {
        /// The planner's first choice for k = 0..=7 at a million fingerprints.
        static DESIGNS: Vec<Design> = (0..8).map(|k| crate::hamming::plan::recommend(k, 1e6)).collect();
    }

    proptest! {
        #[test]
        fn exact_recall_k3_six_blocks(fps in clustered()) {
            check(&fps, &Design::new(3, vec![6]).unwrap())?;
        }

        #[test]
        fn exact_recall_k3_two_levels(fps in clustered()) {
            check(&fps, &Design::new(3, vec![4, 4]).unwrap())?;
        }

        #[test]
        fn exact_recall_other_k(fps in clustered(), k in 0usize..8) {
            check(&fps, &DESIGNS.with(|d| d[k].clone()))?;
        }

        #[test]
        fn exact_recall_with_groups(fps in clustered(), g in 1u32..5, two_levels: bool) {
            let design = if two_levels { Design::new(3, vec![4, 4]).unwrap() } else { Design::new(3, vec![5]).unwrap() };
            let mut got = Vec::new();
            all_pairs_in_groups(&fps, &design, g, || true, |i, j, d| got.push((i, j, d)));
            let set: BTreeSet<_> = got.iter().copied().collect();
            prop_assert_eq!(set.len(), got.len(), "a pair was reported twice");
            prop_assert_eq!(set, brute(&fps, 3));
        }

        /// Every build of the kernel this CPU can run gives the baseline's pairs in the baseline's order, on
        /// runs longer than a block (a few centres, hundreds of points around each).
        #[test]
        #[allow(unsafe_code)]
        fn every_build_gives_the_same_pairs_in_the_same_order(
            centres in proptest::collection::vec(any::<u64>(), 1..4),
            seed: u64,
            n in 100usize..400,
            k in 0usize..8,
            stop_after in 0usize..12,
        ) {
            let mut r = seed | 1;
            let fps: Vec<u64> = (0..n)
                .map(|i| {
                    let mut x = centres[i % centres.len()];
                    r ^= r << 13;
                    r ^= r >> 7;
                    r ^= r << 17;
                    for flip in 0..(r % 7) {
                        x ^= 1u64 << ((r >> (6 * flip + 8)) % 64);
                    }
                    x
                })
                .collect();
            let design = DESIGNS.with(|d| d[k].clone());
            type Emit<'a> = &'a mut dyn FnMut(u32, u32, u32);
            let run = |build: &dyn Fn(Emit<'_>)| {
                let mut got = Vec::new();
                build(&mut |i, j, d| got.push((i, j, d)));
                got
            };
            // SAFETY: the baseline build runs everywhere.
            let baseline = run(&|emit| unsafe { Build::Baseline.all_pairs(&fps, &design, 0, || true, emit) });
            let set: BTreeSet<_> = baseline.iter().copied().collect();
            prop_assert_eq!(set.len(), baseline.len(), "a pair was reported twice");
            prop_assert_eq!(set, brute(&fps, k as u32));
            let expected: Vec<_> = brute(&fps, k as u32).into_iter().collect();
            for &build in Build::ALL.iter().filter(|build| build.runs_here()) {
                // SAFETY: the CPU has the build's features.
                let got = run(&|emit| unsafe { build.all_pairs(&fps, &design, 0, || true, emit) });
                prop_assert_eq!(&got, &baseline, "{:?}", build);
                // One list without tables: every pair within k, in loop order.
                let mut within = Vec::new();
                unsafe { build.pairs_within(&fps, k as u32, |x, y, d| within.push((x as u32, y as u32, d))) };
                prop_assert_eq!(&within, &expected, "{:?}", build);
            }
            // Told to stop at its `stop_after + 1`-th question, the run asks no more and its pairs so far are
            // the first of the whole list; never told, it gives them all.
            let (mut asked, mut stopped) = (0, Vec::new());
            let go_on = || { asked += 1; asked <= stop_after };
            all_pairs_while(&fps, &design, go_on, |i, j, d| stopped.push((i, j, d)));
            prop_assert!(baseline.starts_with(&stopped));
            if asked > stop_after {
                prop_assert_eq!(asked, stop_after + 1);
                prop_assert!(stop_after > 0 || stopped.is_empty());
            } else {
                prop_assert_eq!(&stopped, &baseline);
            }
        }

        #[test]
        fn exact_recall_random(fps in proptest::collection::vec(any::<u64>(), 0..60)) {
            check(&fps, &Design::new(2, vec![5]).unwrap())?;
        }
    }

    #[test]
    fn distance_k_is_inclusive_and_k_plus_one_is_out() {
        let design = Design::new(3, vec![6]).unwrap();
        let base = 0xdead_beef_0123_4567_u64;
        for spread in [0u32, 17, 40] {
            let at = |d: u32| (0..d).fold(base, |x, i| x ^ (1u64 << ((i * 13 + spread) % 64)));
            let fps = [base, at(3), at(4)];
            let got: BTreeSet<_> = indexed(&fps, &design).into_iter().collect();
            assert!(got.contains(&(0, 1, 3)), "distance 3 found");
            assert!(
                !got.iter().any(|&(i, j, _)| (i, j) == (0, 2)),
                "distance 4 not reported"
            );
        }
    }

    /// On the pool's threads, the pairs and the questions are the calling thread's, in the same order, and a
    /// stop at any question leaves the same prefix: on crowded runs (short texts' fingerprints share keys by
    /// the thousand) and spread-out ones, in one group and in several.
    #[test]
    fn pairs_found_in_parallel_are_those_of_one_thread_in_order() {
        let mut r = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        };
        let crowded: Vec<u64> = (0..20_000)
            .map(|_| (next() & 0xFFF) << 40 | (next() & 0x3F))
            .collect();
        // Near-copies of spread-out bases: pairs in short runs.
        let bases: Vec<u64> = (0..7_000).map(|_| next()).collect();
        let spread: Vec<u64> = (0..20_000)
            .map(|n| bases[n % 7_000] ^ (1 << (next() % 64)))
            .collect();
        let design = Design::new(3, vec![10]).unwrap();
        for (fps, group_bits) in [(&crowded, 0), (&spread, 0), (&crowded, 2)] {
            let run = |parallel: bool, stop_after: usize| {
                let (mut asked, mut pairs) = (0usize, Vec::new());
                let go_on = || {
                    asked += 1;
                    asked <= stop_after
                };
                let emit = |i, j, d| pairs.push((i, j, d));
                if parallel {
                    all_pairs_in_parallel(fps, &design, group_bits, go_on, emit);
                } else {
                    all_pairs_in_groups(fps, &design, group_bits, go_on, emit);
                }
                (asked, pairs)
            };
            let (questions, whole) = run(false, usize::MAX);
            assert!(whole.len() > 1_000, "{}", whole.len());
            assert_eq!(run(true, usize::MAX), (questions, whole.clone()));
            for stop_after in [0, questions / 3, questions - 1] {
                let (asked, prefix) = run(true, stop_after);
                assert_eq!(
                    (asked, &prefix),
                    (stop_after + 1, &run(false, stop_after).1)
                );
                assert!(whole.starts_with(&prefix));
            }
        }
    }

    #[test]
    fn identical_fingerprints_are_distinct_documents() {
        let design = Design::new(3, vec![6]).unwrap();
        let got: BTreeSet<_> = indexed(&[7, 7, 7], &design).into_iter().collect();
        assert_eq!(got, BTreeSet::from([(0, 1, 0), (0, 2, 0), (1, 2, 0)]));
    }

    mod clusters {
        use super::super::*;
        use crate::union_find::UnionFind;
        use proptest::prelude::*;

        proptest! {
            /// Clusters equal the connected components computed by brute force.
            #[test]
            fn components_match_brute_force(fps in proptest::collection::vec(prop_oneof![any::<u64>(), (0u64..16)], 0..60)) {
                let design = Design::new(3, vec![6]).unwrap();
                let mut uf = UnionFind::new(fps.len());
                for i in 0..fps.len() {
                    for j in i + 1..fps.len() {
                        if hamming(fps[i], fps[j]) <= 3 {
                            uf.union(i as u32, j as u32);
                        }
                    }
                }
                prop_assert_eq!(clusters(&fps, &design), uf.clusters());
            }
        }
    }
}

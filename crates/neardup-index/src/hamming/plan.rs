//! Block-permuted table designs for "all fingerprints within Hamming distance k" (Manku, Jain and Das Sarma,
//! WWW 2007, §3.1), and a planner that chooses one.
//!
//! A **level** with b blocks splits the bits still free into b nearly equal blocks. Two fingerprints at distance
//! ≤ k differ in at most k of those blocks, so at least b − k blocks are equal: every choice of b − k blocks is
//! a table whose key starts with those blocks, and one of the C(b, k) tables puts the pair in the same key
//! bucket. A **design** stacks levels: each further level splits the bits that the previous levels left out of
//! the key (the differences are all there), multiplying the tables and lengthening the key. Manku's examples
//! for k = 3: one level of 6 blocks (20 tables, 31–33-bit keys), two levels of 4 blocks (16 tables, 28 bits).
//!
//! Recall is exact by construction: no pair within k is ever missed (property-tested against brute force).

use std::fmt;

/// A contiguous run of bit positions (`lo` = position of its least significant bit, 0..=63) of a fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The lowest bit position of the run.
    pub lo: u32,
    /// How many bits.
    pub width: u32,
}

/// One table of a design: which bits form its key, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableLayout {
    /// The key's segments, most significant first, followed by every other bit (so the layout is a permutation).
    pub segments: Vec<Segment>,
    /// How many leading bits of the permuted fingerprint form the key.
    pub key_bits: u32,
    /// The key's bits in the original (unpermuted) fingerprint.
    pub key_mask: u64,
}

impl TableLayout {
    /// Moves the bits of `x` into this table's order: the key's bits on top.
    #[inline]
    pub fn permute(&self, x: u64) -> u64 {
        let mut out = 0u64;
        let mut pos = 64;
        for s in &self.segments {
            pos -= s.width;
            out |= ((x >> s.lo) & mask(s.width)) << pos;
        }
        out
    }

    /// The leading permuted bits this layout shares with `other`: the same fingerprint bits, in the same
    /// order. Two tables that share them hold the rows of each value of those bits in one range each.
    pub fn shared_prefix(&self, other: &TableLayout) -> u32 {
        // Run by run, without listing the bits: the planner asks this of every pair of tables of every
        // candidate design (listing them made planning 80 ms, paid by every new index).
        let (mut a, mut b) = (self.segments.iter(), other.segments.iter());
        let run = |s: &Segment| (s.lo + s.width, s.width); // (one above the run's top bit, bits left)
        let (mut x, mut y) = match (a.next(), b.next()) {
            (Some(s), Some(t)) => (run(s), run(t)),
            _ => return 0,
        };
        let mut shared = 0;
        while x.0 == y.0 {
            let step = x.1.min(y.1);
            shared += step;
            x = (x.0 - step, x.1 - step);
            y = (y.0 - step, y.1 - step);
            if x.1 == 0 {
                match a.next() {
                    Some(s) => x = run(s),
                    None => break,
                }
            }
            if y.1 == 0 {
                match b.next() {
                    Some(t) => y = run(t),
                    None => break,
                }
            }
        }
        shared
    }
}

/// The most shared leading bits a nested table uses to find its parent's range: its table of range starts
/// (4 bytes per value of those bits) stays within 256 KiB, in a core's cache.
pub(crate) const MAX_PREFIX_BITS: u32 = 16;

/// The parent table `t` would nest under, and how many shared leading bits pick the parent's ranges: the
/// earlier table that is not nested itself (`packed`; table 0 always is) and shares the most leading bits
/// with it (the first of those that tie), the bits capped by the directory's (so that a range's first row is
/// a directory entry). `None` when it shares none.
pub(crate) fn nest_parent(
    layouts: &[TableLayout],
    packed: impl Fn(usize) -> bool,
    t: usize,
    dir_bits: u32,
) -> Option<(usize, u32)> {
    let (shared, parent) = (0..t)
        .filter(|&p| packed(p))
        .map(|p| (layouts[p].shared_prefix(&layouts[t]), p))
        .max_by_key(|&(shared, p)| (shared, std::cmp::Reverse(p)))?;
    let prefix_bits = shared.min(dir_bits).min(MAX_PREFIX_BITS);
    (prefix_bits > 0).then_some((parent, prefix_bits))
}

#[inline]
fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// A stack of levels (block counts), for a maximum distance k.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Design {
    /// The distance every table of the design guarantees to find.
    pub k: u32,
    /// Block count of each level (each > k).
    pub levels: Vec<u32>,
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|b| format!("{b} blocks, choose {}", b - self.k))
            .collect();
        write!(f, "{}", levels.join(" then "))
    }
}

impl Design {
    /// A design; `None` if a level has k or fewer blocks, or the levels ask for more bits than there are.
    pub fn new(k: u32, levels: Vec<u32>) -> Option<Design> {
        if levels.is_empty() || levels.iter().any(|&b| b <= k) || k >= 64 {
            return None;
        }
        let d = Design { k, levels };
        let keys = d.key_lengths();
        (!keys.is_empty() && keys.iter().all(|&bits| bits > 0)).then_some(d)
    }

    /// Every table's key length in bits, in the order of [`layouts`](Self::layouts): the same split of the
    /// free bits into blocks, counted instead of listed (the planner weighs every candidate design by them).
    pub fn key_lengths(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.count_keys(0, 64, 0, &mut out);
        out
    }

    fn count_keys(&self, level: usize, free: u32, key: u32, out: &mut Vec<u32>) {
        if level == self.levels.len() {
            out.push(key);
            return;
        }
        let b = self.levels[level];
        if free < b {
            return;
        }
        // The blocks of `expand`: as even as possible, larger blocks first.
        let block = |i: usize| free / b + u32::from((i as u32) < free % b);
        for chosen in combinations(b as usize, (b - self.k) as usize) {
            let chosen_bits: u32 = chosen.iter().map(|&i| block(i)).sum();
            self.count_keys(level + 1, free - chosen_bits, key + chosen_bits, out);
        }
    }

    /// The number of tables: the product of C(b, b − k) over the levels.
    pub fn tables(&self) -> u64 {
        self.levels
            .iter()
            .map(|&b| binomial(b as u64, self.k as u64))
            .product()
    }

    /// Every table's layout, in a fixed order.
    pub fn layouts(&self) -> Vec<TableLayout> {
        let all: Vec<u32> = (0..64).rev().collect(); // bit positions, most significant first
        let mut out = Vec::new();
        self.expand(0, &all, Vec::new(), &mut out);
        out
    }

    fn expand(&self, level: usize, free: &[u32], key: Vec<u32>, out: &mut Vec<TableLayout>) {
        if level == self.levels.len() {
            let mut order = key.clone();
            order.extend_from_slice(free);
            let key_mask = key.iter().fold(0u64, |m, &p| m | 1u64 << p);
            out.push(TableLayout {
                segments: segments_of(&order),
                key_bits: key.len() as u32,
                key_mask,
            });
            return;
        }
        let b = self.levels[level] as usize;
        if free.len() < b {
            return;
        }
        // Split the free positions into b blocks as evenly as possible, larger blocks first.
        let (base, extra) = (free.len() / b, free.len() % b);
        let mut blocks = Vec::with_capacity(b);
        let mut at = 0;
        for i in 0..b {
            let len = base + usize::from(i < extra);
            blocks.push(&free[at..at + len]);
            at += len;
        }
        for chosen in combinations(b, b - self.k as usize) {
            let mut next_key = key.clone();
            let mut rest = Vec::new();
            for (i, block) in blocks.iter().enumerate() {
                if chosen.contains(&i) {
                    next_key.extend_from_slice(block);
                } else {
                    rest.extend_from_slice(block);
                }
            }
            self.expand(level + 1, &rest, next_key, out);
        }
    }
}

/// Consecutive bit positions (descending) grouped into segments.
fn segments_of(order: &[u32]) -> Vec<Segment> {
    let mut segs: Vec<Segment> = Vec::new();
    for &p in order {
        match segs.last_mut() {
            Some(s) if s.lo == p + 1 => {
                s.lo = p;
                s.width += 1;
            }
            _ => segs.push(Segment { lo: p, width: 1 }),
        }
    }
    segs
}

/// All ways to choose `r` of `0..n`, in lexicographic order.
fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current = Vec::with_capacity(r);
    fn go(start: usize, n: usize, r: usize, current: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if current.len() == r {
            out.push(current.clone());
            return;
        }
        // Only starts that leave enough to fill the rest: without the bound, a choice of most of many blocks
        // (64 of 64) walked every dead end, 2^64 of them.
        for i in start..=n - (r - current.len()) {
            current.push(i);
            go(i + 1, n, r, current, out);
            current.pop();
        }
    }
    go(0, n, r, &mut current, &mut out);
    out
}

fn binomial(n: u64, k: u64) -> u64 {
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

/// What a design is predicted to cost for N fingerprints (uniformly spread keys; real SimHash data is skewed,
/// so candidate counts are a lower bound).
#[derive(Clone, Debug)]
pub struct Estimate {
    /// The design.
    pub design: Design,
    /// Number of tables.
    pub tables: u64,
    /// Shortest and longest key, in bits.
    pub key_bits: (u32, u32),
    /// Expected candidates checked per query: Σ over tables of N / 2^key_bits.
    pub candidates_per_query: f64,
    /// Bytes for the tables of the online index ([`super::HammingIndex`]): per fingerprint, 8 for the fingerprint
    /// itself (table 0's order) and, per table after the first, a 2-byte row where the table nests (its
    /// ranges of leading bits shared with an earlier table hold at most 2^16 rows) or a 4-byte row (slot and
    /// fragment); plus a 4-byte directory entry per bucket of the top min(key, log2(N / 8)) bits, per table.
    /// Ids not included.
    pub bytes: f64,
}

/// Ranks designs for f = 64 bits, distance k and N fingerprints, within an optional memory budget.
///
/// Candidates: one level of k+1 to k+8 blocks, two levels of k+1 to k+5 blocks each, and three levels of k+1 to
/// k+3. Designs with more than 200 tables are left out. The ranking is by a simple cost model of one query:
/// 60 ns per table probed plus 1 ns per candidate compared, which favours fewer tables until candidates
/// dominate. With a budget, designs over it are dropped.
pub fn plan(k: u32, n: f64, memory_budget: Option<f64>) -> Vec<Estimate> {
    let mut out: Vec<Estimate> = candidates(k)
        .map(|d| estimate(d, n))
        .filter(|e| memory_budget.is_none_or(|m| e.bytes <= m))
        .collect();
    out.sort_by(|a, b| {
        query_cost(a)
            .total_cmp(&query_cost(b))
            .then(a.tables.cmp(&b.tables))
    });
    out
}

/// The candidate designs of [`plan`], in its order (the first of equally ranked designs wins).
fn candidates(k: u32) -> impl Iterator<Item = Design> {
    let mut designs = Vec::new();
    for b in (k + 1).max(1)..=k + 8 {
        designs.push(vec![b]);
    }
    for b1 in k + 1..=k + 5 {
        for b2 in k + 1..=k + 5 {
            designs.push(vec![b1, b2]);
        }
    }
    for b1 in k + 1..=k + 3 {
        for b2 in k + 1..=k + 3 {
            for b3 in k + 1..=k + 3 {
                designs.push(vec![b1, b2, b3]);
            }
        }
    }
    designs
        .into_iter()
        .filter(move |levels| {
            levels
                .iter()
                .map(|&b| binomial(b as u64, k as u64))
                .product::<u64>()
                <= 200
        })
        .filter_map(move |levels| Design::new(k, levels))
}

/// The planner's first choice for distance k and about n fingerprints, with no memory budget (there is
/// always one: a single level of k + 1 blocks fits any k ≤ 63). The same design as `plan(k, n, None)[0]`,
/// ranked by key lengths alone: every new index asks, and estimating each candidate's memory (which only a
/// budget needs) made that milliseconds.
pub fn recommend(k: u32, n: f64) -> Design {
    let cost = |d: &Design| 60.0 * d.tables() as f64 + expected_candidates(&d.key_lengths(), n);
    candidates(k)
        .map(|d| (cost(&d), d))
        .min_by(|(a_cost, a), (b_cost, b)| {
            a_cost.total_cmp(b_cost).then(a.tables().cmp(&b.tables()))
        })
        .map(|(_, d)| d)
        .expect("a single level of k + 1 blocks fits any k up to 63")
}

/// Expected candidates per query over tables with these key lengths: Σ N / 2^key_bits.
fn expected_candidates(key_lengths: &[u32], n: f64) -> f64 {
    key_lengths
        .iter()
        .map(|&bits| n / 2f64.powi(bits as i32))
        .sum()
}

/// The cost model used to rank designs (nanoseconds per query, roughly).
pub fn query_cost(e: &Estimate) -> f64 {
    60.0 * e.tables as f64 + e.candidates_per_query
}

fn estimate(design: Design, n: f64) -> Estimate {
    let layouts = design.layouts();
    let key_lengths: Vec<u32> = layouts.iter().map(|l| l.key_bits).collect();
    let min = key_lengths.iter().copied().min().unwrap_or(0);
    let max = key_lengths.iter().copied().max().unwrap_or(0);
    let candidates = expected_candidates(&key_lengths, n);
    let dir_bits = ((n / 8.0).max(1.0).log2().floor() as u32).min(min).min(30);
    let tables = design.tables();
    // Which tables nest, for well-spread fingerprints: a range's rows ≈ n / 2^prefix, with room for the
    // fullest range to exceed the mean.
    let mut nested = vec![false; layouts.len()];
    for t in 1..layouts.len() {
        nested[t] = nest_parent(&layouts, |p| !nested[p], t, dir_bits)
            .is_some_and(|(_, prefix)| n / 2f64.powi(prefix as i32) <= 60_000.0);
    }
    let rows: f64 = nested[1..].iter().map(|&n| if n { 2.0 } else { 4.0 }).sum();
    let per_fingerprint = 8.0 + rows;
    let bytes = per_fingerprint * n + tables as f64 * 4.0 * 2f64.powi(dir_bits as i32);
    Estimate {
        design,
        tables,
        key_bits: (min, max),
        candidates_per_query: candidates,
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recommend_is_plans_first_choice_and_key_lengths_are_the_layouts() {
        for k in 0..10 {
            for n in [1.0, 10.0, 1e3, 1e5, 1e6, 3e7, 1e9, 1e12] {
                assert_eq!(
                    recommend(k, n),
                    plan(k, n, None).remove(0).design,
                    "k={k} n={n}"
                );
            }
            for design in candidates(k) {
                let keys: Vec<u32> = design.layouts().iter().map(|l| l.key_bits).collect();
                assert_eq!(design.key_lengths(), keys, "{design:?}");
            }
        }
    }

    #[test]
    fn combinations_are_listed_without_walking_dead_ends() {
        assert_eq!(combinations(4, 2).len(), 6);
        assert_eq!(combinations(5, 5), [vec![0, 1, 2, 3, 4]]);
        // 64 blocks of one bit, all chosen: one table keyed by the whole fingerprint (this took 2^64 steps).
        let design = Design::new(0, vec![64]).unwrap();
        assert_eq!(design.key_lengths(), [64]);
        assert_eq!(design.layouts().len(), 1);
    }

    #[test]
    fn shared_prefix_counts_the_leading_bits_in_the_same_order() {
        let bits = |l: &TableLayout| {
            l.segments
                .iter()
                .flat_map(|s| (s.lo..s.lo + s.width).rev())
                .collect::<Vec<u32>>()
        };
        for (k, levels) in [
            (3, vec![6]),
            (3, vec![4, 4]),
            (2, vec![3, 4, 3]),
            (5, vec![7, 6]),
        ] {
            let layouts = Design::new(k, levels).unwrap().layouts();
            for a in &layouts {
                for b in &layouts {
                    let expected = bits(a)
                        .iter()
                        .zip(&bits(b))
                        .take_while(|(x, y)| x == y)
                        .count();
                    assert_eq!(a.shared_prefix(b), expected as u32, "{a:?} {b:?}");
                }
            }
        }
        // Runs that are not maximal (split where the bits go on) share as the bits say.
        let split = |widths: &[(u32, u32)]| TableLayout {
            segments: widths
                .iter()
                .map(|&(lo, width)| Segment { lo, width })
                .collect(),
            key_bits: 0,
            key_mask: 0,
        };
        let whole = split(&[(0, 64)]);
        assert_eq!(split(&[(60, 4), (0, 60)]).shared_prefix(&whole), 64);
        assert_eq!(
            split(&[(60, 4), (0, 50), (50, 10)]).shared_prefix(&whole),
            4
        );
        assert_eq!(
            split(&[(0, 64)]).shared_prefix(&split(&[(1, 63), (0, 1)])),
            64
        );
        assert_eq!(
            split(&[(32, 32), (0, 32)]).shared_prefix(&split(&[(0, 32), (32, 32)])),
            0
        );
    }

    #[test]
    fn manku_designs_for_k3() {
        let six = Design::new(3, vec![6]).unwrap();
        assert_eq!(six.tables(), 20);
        let keys: Vec<u32> = six.layouts().iter().map(|l| l.key_bits).collect();
        assert_eq!(keys.len(), 20);
        assert!(keys.iter().all(|&b| (31..=33).contains(&b)), "{keys:?}");
        let two = Design::new(3, vec![4, 4]).unwrap();
        assert_eq!(two.tables(), 16);
        assert!(two.layouts().iter().all(|l| l.key_bits == 28));
        let ten = Design::new(3, vec![5]).unwrap();
        assert_eq!(ten.tables(), 10);
    }

    #[test]
    fn layouts_are_permutations() {
        for d in [
            Design::new(3, vec![6]).unwrap(),
            Design::new(3, vec![4, 4]).unwrap(),
            Design::new(5, vec![7, 6]).unwrap(),
        ] {
            for l in d.layouts() {
                let total: u32 = l.segments.iter().map(|s| s.width).sum();
                assert_eq!(total, 64);
                let mut seen = 0u64;
                for s in &l.segments {
                    let m = mask(s.width) << s.lo;
                    assert_eq!(seen & m, 0);
                    seen |= m;
                }
                assert_eq!(seen, u64::MAX);
                assert_eq!(l.key_mask.count_ones(), l.key_bits);
                // The permuted key is the key bits, in order.
                let x = 0x0123_4567_89ab_cdef_u64;
                assert_eq!(l.permute(x).count_ones(), x.count_ones());
                assert_eq!(l.permute(l.key_mask).leading_ones(), l.key_bits);
            }
        }
    }

    #[test]
    fn planner_works_up_to_k7() {
        for k in 0..=7 {
            let p = plan(k, 1e9, None);
            assert!(!p.is_empty(), "k = {k}");
            assert!(p.windows(2).all(|w| query_cost(&w[0]) <= query_cost(&w[1])));
        }
        let budget = plan(3, 1e9, Some(64.0 * (1u64 << 30) as f64));
        assert!(budget.iter().all(|e| e.bytes <= 64.0 * (1u64 << 30) as f64));
        assert!(Design::new(3, vec![3]).is_none());
    }
}

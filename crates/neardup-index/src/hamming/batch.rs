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
    all_pairs_in_groups(fps, design, group_bits(fps.len()), emit);
}

/// [`all_pairs`] with the number of group bits given (tests use it to exercise grouping on small inputs).
fn all_pairs_in_groups(
    fps: &[u64],
    design: &Design,
    group_bits: u32,
    mut emit: impl FnMut(u32, u32, u32),
) {
    assert!(
        fps.len() < u32::MAX as usize,
        "at most 2^32 - 1 fingerprints per batch"
    );
    let k = design.k;
    let layouts = design.layouts();
    // Each table is processed in groups of equal top key bits, in key order: a counting pass places the
    // indices of every group together (4 bytes per fingerprint), and only one group's rows (16 bytes each)
    // exist at a time, so memory stays near 13 bytes per fingerprint instead of 24.
    let mut members: Vec<u32> = vec![0; fps.len()];
    let mut rows: Vec<(u64, u32)> = Vec::new();
    let mut scratch: Vec<(u64, u32)> = Vec::new();
    for (t, layout) in layouts.iter().enumerate() {
        let earlier: Vec<u64> = layouts[..t].iter().map(|l| l.key_mask).collect();
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
            rows.clear();
            rows.extend(
                members[starts[g]..starts[g + 1]]
                    .iter()
                    .map(|&i| (layout.permute(fps[i as usize]), i)),
            );
            // Rows arrive in index order; a stable sort on the key keeps equal keys in index order.
            radix_sort_by_key(&mut rows, &mut scratch, shift, layout.key_bits - g_bits);
            let mut start = 0;
            while start < rows.len() {
                let key = rows[start].0 >> shift;
                let end = start
                    + rows[start..]
                        .iter()
                        .take_while(|r| r.0 >> shift == key)
                        .count();
                for a in start..end {
                    for b in a + 1..end {
                        let (x, y) = (rows[a], rows[b]);
                        let d = hamming(x.0, y.0); // a permutation keeps distances
                        if d <= k {
                            let diff = fps[x.1 as usize] ^ fps[y.1 as usize];
                            if earlier.iter().all(|&m| diff & m != 0) {
                                emit(x.1.min(y.1), x.1.max(y.1), d);
                            }
                        }
                    }
                }
                start = end;
            }
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
            all_pairs_in_groups(&fps, &design, g, |i, j, d| got.push((i, j, d)));
            let set: BTreeSet<_> = got.iter().copied().collect();
            prop_assert_eq!(set.len(), got.len(), "a pair was reported twice");
            prop_assert_eq!(set, brute(&fps, 3));
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

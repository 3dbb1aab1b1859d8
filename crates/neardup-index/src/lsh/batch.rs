//! Batch LSH: every pair of signatures that shares a band, and clusters, without an index.
//!
//! For each band, the (band key, index) rows of all signatures are radix-sorted, and runs of equal keys are
//! the band's candidate groups. A pair that shares several bands is reported by the first one only (the
//! earlier bands' values are compared directly), so nothing is remembered across bands and the output order
//! is deterministic: by band, then key, then index.

use super::Banding;
use super::index::{band_key, similarity};
use crate::radix::radix_sort_by_key;
use crate::union_find::UnionFind;

/// Calls `emit(i, j, similarity)` once for every pair `i < j` of signatures (`banding.values` values each,
/// concatenated in `signatures`) that agree on every value of at least one band; `similarity` is the
/// fraction of all values that agree.
///
/// ```
/// use neardup_index::lsh::{Banding, lsh_pairs};
/// let sigs = [1, 2, 3, 4, /* */ 1, 2, 0, 0, /* */ 5, 6, 7, 8];
/// let mut pairs = Vec::new();
/// lsh_pairs(&sigs, &Banding::even(2, 4).unwrap(), |i, j, s| pairs.push((i, j, s)));
/// assert_eq!(pairs, [(0, 1, 0.5)]);
/// ```
pub fn lsh_pairs(signatures: &[u32], banding: &Banding, emit: impl FnMut(u32, u32, f64)) {
    lsh_pairs_or_runs(signatures, banding, usize::MAX, emit, |_, _| {});
}

/// [`lsh_pairs`] for callers that cannot afford every pair of a large run: the pairs of runs (signatures
/// sharing a band's key) of at most `max_run` members are emitted as by [`lsh_pairs`], and each larger run is
/// given whole to `large(band, members)` (members in increasing order), its pairs unlisted. A pair belongs
/// to the first band it shares ([`shares_earlier_band`] tells a later band's run that it is not the pair's);
/// a caller that walks a large run's pairs keeps that rule to see each pair once.
///
/// A run of near-copies of one document has as many members as copies, and its pairs grow with the square:
/// a caller that needs only some of them (centre clustering needs each member's pairs with representatives)
/// takes the run instead.
///
/// ```
/// use neardup_index::lsh::{Banding, lsh_pairs_or_runs};
/// let sigs = [1, 2, 3, 4, /* */ 1, 2, 0, 0, /* */ 1, 2, 5, 5, /* */ 6, 6, 3, 4];
/// let (mut pairs, mut runs) = (Vec::new(), Vec::new());
/// lsh_pairs_or_runs(&sigs, &Banding::even(2, 4).unwrap(), 2,
///     |i, j, s| pairs.push((i, j, s)), |band, members| runs.push((band, members.to_vec())));
/// assert_eq!(pairs, [(0, 3, 0.5)]);
/// assert_eq!(runs, [(0, vec![0, 1, 2])]);
/// ```
pub fn lsh_pairs_or_runs(
    signatures: &[u32],
    banding: &Banding,
    max_run: usize,
    mut emit: impl FnMut(u32, u32, f64),
    mut large: impl FnMut(u32, &[u32]),
) {
    let k = banding.values as usize;
    let n = signatures.len() / k.max(1);
    let all: Vec<u32> = (0..n as u32).collect();
    for_each_group(signatures, banding, &all, |band, group| {
        if group.len() > max_run {
            large(band, group);
            return;
        }
        for (x, &a) in group.iter().enumerate() {
            let sa = &signatures[a as usize * k..(a as usize + 1) * k];
            for &b in &group[x + 1..] {
                let sb = &signatures[b as usize * k..(b as usize + 1) * k];
                if !shares_earlier_band(banding, band, sa, sb) {
                    emit(a, b, similarity(sa, sb));
                }
            }
        }
    });
}

/// Connected components of the "shares a band" graph (with `min_similarity`, only edges whose estimated
/// similarity reaches it): clusters of two or more indices, each sorted, in order of their smallest index
/// (the representative). Identical signatures are joined first and stand in for each other, so a million
/// copies cost no pairs; without `min_similarity`, a band's group is joined in one pass.
///
/// ```
/// use neardup_index::lsh::{Banding, lsh_clusters};
/// let sigs = [1, 2, 3, 4, /* */ 9, 9, 9, 9, /* */ 1, 2, 0, 0, /* */ 0, 0, 7, 7];
/// let banding = Banding::even(2, 4).unwrap();
/// assert_eq!(lsh_clusters(&sigs, &banding, None), vec![vec![0, 2]]);
/// assert!(lsh_clusters(&sigs, &banding, Some(0.6)).is_empty());
/// ```
pub fn lsh_clusters(
    signatures: &[u32],
    banding: &Banding,
    min_similarity: Option<f64>,
) -> Vec<Vec<u32>> {
    let k = banding.values as usize;
    let sig = |i: u32| &signatures[i as usize * k..(i as usize + 1) * k];
    // Under the estimate, documents with identical signatures are interchangeable.
    let mut identical = |_, _| true;
    match min_similarity {
        None => clusters_of(signatures, banding, None, &mut identical),
        Some(t) => clusters_of(
            signatures,
            banding,
            Some(&mut |a, b| similarity(sig(a), sig(b)) >= t),
            &mut identical,
        ),
    }
}

/// [`lsh_clusters`] with any verification: an edge joins candidates `a < b` when `accept(a, b)` holds (for
/// example the exact Jaccard similarity of their shingle sets, when the texts are at hand). Documents with
/// identical signatures stand in for each other (one band pass for all) only when `interchangeable(a, b)`
/// says that `accept` treats them alike (for example: identical shingle sets).
pub fn lsh_clusters_with(
    signatures: &[u32],
    banding: &Banding,
    accept: &mut dyn FnMut(u32, u32) -> bool,
    interchangeable: &mut dyn FnMut(u32, u32) -> bool,
) -> Vec<Vec<u32>> {
    clusters_of(signatures, banding, Some(accept), interchangeable)
}

fn clusters_of(
    signatures: &[u32],
    banding: &Banding,
    mut accept: Option<&mut dyn FnMut(u32, u32) -> bool>,
    interchangeable: &mut dyn FnMut(u32, u32) -> bool,
) -> Vec<Vec<u32>> {
    let k = banding.values as usize;
    let n = signatures.len() / k.max(1);
    let sig = |i: u32| &signatures[i as usize * k..(i as usize + 1) * k];
    let mut uf = UnionFind::new(n);
    // Identical signatures: sort by a key of the whole signature, join the interchangeable ones to the first
    // of their run, and let it stand for them in the band pass.
    let mut whole: Vec<(u64, u32)> = (0..n as u32).map(|i| (band_key(sig(i)), i)).collect();
    radix_sort_by_key(&mut whole, &mut Vec::new(), 0, 64);
    let mut distinct = Vec::with_capacity(n);
    let mut run_head = 0u32;
    for (x, &(key, i)) in whole.iter().enumerate() {
        let same_signature = x > 0 && {
            let (pkey, _) = whole[x - 1];
            pkey == key && sig(run_head) == sig(i)
        };
        let stands_in = same_signature && interchangeable(run_head.min(i), run_head.max(i));
        if stands_in {
            uf.union(run_head, i);
        } else {
            if !same_signature {
                run_head = i;
            }
            distinct.push(i);
        }
    }
    distinct.sort_unstable();
    for_each_group(signatures, banding, &distinct, |_, group| {
        match accept.as_mut() {
            None => {
                for &b in &group[1..] {
                    uf.union(group[0], b);
                }
            }
            Some(accept) => {
                for (x, &a) in group.iter().enumerate() {
                    for &b in &group[x + 1..] {
                        if uf.find(a) != uf.find(b) && accept(a, b) {
                            uf.union(a, b);
                        }
                    }
                }
            }
        }
    });
    uf.clusters()
}

/// For each band, calls `visit(band, group)` for each run (two or more) of `members` with equal band keys,
/// members in increasing order.
fn for_each_group(
    signatures: &[u32],
    banding: &Banding,
    members: &[u32],
    mut visit: impl FnMut(u32, &[u32]),
) {
    let k = banding.values as usize;
    assert!(
        signatures.len() / k.max(1) < u32::MAX as usize,
        "at most 2^32 - 1 signatures per batch"
    );
    let mut rows: Vec<(u64, u32)> = Vec::with_capacity(members.len());
    let mut scratch = Vec::new();
    let mut group = Vec::new();
    for band in 0..banding.bands {
        let range = banding.band_range(band);
        rows.clear();
        rows.extend(members.iter().map(|&i| {
            let start = i as usize * k;
            (
                band_key(&signatures[start + range.start..start + range.end]),
                i,
            )
        }));
        // Stable: members were in increasing order, so each run stays in increasing order.
        radix_sort_by_key(&mut rows, &mut scratch, 0, 64);
        let mut start = 0;
        while start < rows.len() {
            let key = rows[start].0;
            let end = start + rows[start..].partition_point(|r| r.0 == key);
            if end - start > 1 {
                group.clear();
                group.extend(rows[start..end].iter().map(|r| r.1));
                visit(band, &group);
            }
            start = end;
        }
    }
}

/// Whether two signatures agree on every value of some band before `band`: a pair that shares `band` and an
/// earlier one belongs to the earlier.
pub fn shares_earlier_band(banding: &Banding, band: u32, a: &[u32], b: &[u32]) -> bool {
    (0..band).any(|e| {
        let r = banding.band_range(e);
        a[r.clone()] == b[r]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_pairs(sigs: &[Vec<u32>], banding: &Banding) -> Vec<(u32, u32, f64)> {
        let mut out = Vec::new();
        for i in 0..sigs.len() {
            for j in i + 1..sigs.len() {
                let shares = (0..banding.bands).any(|b| {
                    let r = banding.band_range(b);
                    sigs[i][r.clone()] == sigs[j][r]
                });
                if shares {
                    out.push((i as u32, j as u32, similarity(&sigs[i], &sigs[j])));
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn pairs_and_clusters_equal_brute_force(
            sigs in proptest::collection::vec(proptest::collection::vec(0u32..3, 5), 0..60),
            bands in 1u32..=5,
            threshold in proptest::option::of(0.0f64..1.0),
            max_run in 1usize..5,
        ) {
            let banding = Banding::even(bands, 5).unwrap();
            let flat: Vec<u32> = sigs.concat();
            let mut got = Vec::new();
            lsh_pairs(&flat, &banding, |i, j, s| got.push((i, j, s)));
            got.sort_by_key(|p| (p.0, p.1));
            let expected = brute_pairs(&sigs, &banding);
            prop_assert_eq!(&got, &expected);

            // Listed pairs, and large runs walked by the first-band rule, give every pair once.
            let (mut got, mut walked) = (Vec::new(), Vec::new());
            let sig = |i: u32| &flat[i as usize * 5..(i as usize + 1) * 5];
            lsh_pairs_or_runs(&flat, &banding, max_run, |i, j, s| got.push((i, j, s)), |band, members| {
                assert!(members.len() > max_run && members.is_sorted());
                for (x, &a) in members.iter().enumerate() {
                    for &b in &members[x + 1..] {
                        if !shares_earlier_band(&banding, band, sig(a), sig(b)) {
                            walked.push((a, b, similarity(sig(a), sig(b))));
                        }
                    }
                }
            });
            got.extend(walked);
            got.sort_by_key(|p| (p.0, p.1));
            prop_assert_eq!(&got, &expected);

            let mut uf = UnionFind::new(sigs.len());
            for &(i, j, s) in &expected {
                if threshold.is_none_or(|t| s >= t) {
                    uf.union(i, j);
                }
            }
            prop_assert_eq!(lsh_clusters(&flat, &banding, threshold), uf.clusters());

            // A verifier that is not a function of the signatures: only pairs whose index sum is even.
            let mut uf = UnionFind::new(sigs.len());
            for &(i, j, _) in &expected {
                if (i + j) % 2 == 0 {
                    uf.union(i, j);
                }
            }
            let got = lsh_clusters_with(&flat, &banding, &mut |a, b| (a + b) % 2 == 0, &mut |_, _| false);
            prop_assert_eq!(got, uf.clusters());
        }
    }
}

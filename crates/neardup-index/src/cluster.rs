//! Connected components of the "within k" graph, with deterministic representatives.

use crate::all_pairs::all_pairs;
use crate::plan::Design;

/// Union-find over dense indices. The root of a set is always its smallest index, so the representative of a
/// cluster does not depend on the order in which pairs arrive (or on the number of threads that found them).
#[derive(Clone, Debug)]
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// `n` singleton sets.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }

    /// The smallest index of the set holding `x`.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand; // path halving
            x = grand;
        }
        x
    }

    /// The sets of two or more elements, each sorted, in order of their smallest element (the representative).
    pub fn clusters(&mut self) -> Vec<Vec<u32>> {
        let mut by_root: std::collections::BTreeMap<u32, Vec<u32>> =
            std::collections::BTreeMap::new();
        for i in 0..self.parent.len() as u32 {
            let root = self.find(i);
            by_root.entry(root).or_default().push(i);
        }
        by_root.into_values().filter(|g| g.len() > 1).collect()
    }

    /// Merges the sets of `a` and `b`.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.parent[hi as usize] = lo;
        }
    }
}

/// Groups fingerprints into clusters: connected components of the graph whose edges join fingerprints within
/// distance k. Returns only clusters of two or more, each sorted, ordered by their smallest index (the
/// representative). Identical fingerprints are joined directly, so a million copies cost no pairs.
///
/// ```
/// use neardup_index::{cluster::clusters, plan::Design};
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

    proptest! {
        /// Clusters equal the connected components computed by brute force.
        #[test]
        fn components_match_brute_force(fps in proptest::collection::vec(prop_oneof![any::<u64>(), (0u64..16)], 0..60)) {
            let design = Design::new(3, vec![6]).unwrap();
            let mut uf = UnionFind::new(fps.len());
            for i in 0..fps.len() {
                for j in i + 1..fps.len() {
                    if crate::hamming(fps[i], fps[j]) <= 3 {
                        uf.union(i as u32, j as u32);
                    }
                }
            }
            prop_assert_eq!(clusters(&fps, &design), uf.clusters());
        }
    }

    #[test]
    fn representative_is_the_smallest_index_whatever_the_union_order() {
        let mut a = UnionFind::new(5);
        a.union(4, 3);
        a.union(3, 1);
        let mut b = UnionFind::new(5);
        b.union(1, 3);
        b.union(4, 1);
        for i in [1, 3, 4] {
            assert_eq!(a.find(i), 1);
            assert_eq!(b.find(i), 1);
        }
    }
}

//! Union-find over dense indices, shared by the batch clustering of both index kinds.
//!
//! The root of a set is always its smallest index: a union links the larger root under the smaller. So the
//! representative of a cluster is a function of the cluster alone, not of the order in which pairs arrive
//! (or of the number of threads that found them), which is what makes clusters deterministic. Paths are
//! halved on every find.

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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(a.clusters(), vec![vec![1, 3, 4]]);
        assert_eq!(a.clusters(), b.clusters());
    }
}

//! Fast MinHash: one permutation hashing, empty bins filled by further hashing rounds (`minhash-oph-v1`).
//!
//! Classic MinHash applies K independent hash functions to every feature (K hash evaluations per feature).
//! One permutation hashing (OPH; Li, Owen & Zhang, 2012) hashes each feature once: the hash picks one of K
//! bins and the bin keeps the smallest value it has seen, so a feature costs one hash, one multiplication and
//! one compare. What remains is the bins that received no feature.
//!
//! ## Filling empty bins
//!
//! Densification schemes copy a non-empty bin's value into an empty one (Shrivastava's *optimal*
//! densification, ICML 2017, copies from the first non-empty bin of a per-bin random probe sequence). They are
//! unbiased, but on sets smaller than about K the copies repeat the same few samples: with K = 128 and 24
//! features, optimal densification measured 1.33–1.42× the variance of classic MinHash, 1.09–1.18× at 64
//! features (an earlier version of this module, and an independent simulation). So this scheme fills empty
//! bins the way *fast similarity sketching* does (Dahlgaard, Knudsen & Thorup, FOCS 2017): **round 2 hashes
//! every feature again** with a fresh hash into the K bins, and a bin still empty after round r − 1 takes
//! the minimum of the values that land in it in round r; rounds continue until no bin is empty. A set of n
//! features needs about `K·H_K / n` rounds when n < K (≈ 700 hash evaluations in all for K = 128), and
//! long documents almost never need a second round.
//!
//! Why it is unbiased: for bin i let r be the first round in which some feature of A ∪ B lands in it; which
//! round that is depends only on where the features land, not on which features they are. If the smallest
//! value of A ∪ B in (r, i) belongs to A ∩ B, both A and B take exactly that value. If it belongs only to
//! A, A takes it while B takes another feature's value of round r, or a value of a later round: they differ.
//! So `Pr[agree at i] = |A ∩ B| / |A ∪ B| = J` by exchangeability, whatever the set sizes.
//!
//! Variance: within a round every feature lands in exactly one bin, so the bins sample features *without*
//! replacement, and the measured variance is at most classic MinHash's J(1−J)/K everywhere: about 0.5× at
//! 24–64 features, 0.57× at 200, 0.86× at 1,000 and 0.96× at 5,000 features for K = 128 (see the tests).
//!
//! ## Definition (pinned, see `docs/spec/minhash-v1.md`)
//!
//! For a feature hash h, `x = mix64(h ^ key)` with `key = mix64(seed ^ 0x6F70_6800_0000_0001)`. In round 1
//! the bin is `⌊x·K / 2^64⌋` (the high half of the 128-bit product) and the value `x mod 2^32`. In round
//! r ≥ 2, `y = mix64(x ^ mix64(fill_key ^ r))` with `fill_key = mix64(seed ^ 0x6F70_6800_0000_0002)`, bin
//! `⌊y·K / 2^64⌋`, value `y mod 2^32`. A bin holds the smallest value of the first round that reached it.

use crate::shingle::{Features, mix64};
use crate::signature::{MinHashSignature, Scheme, SketchParams};

/// The default number of values (bins) K.
pub const DEFAULT_K: usize = 128;

const FEATURE_KEY_TAG: u64 = 0x6F70_6800_0000_0001;
const FILL_KEY_TAG: u64 = 0x6F70_6800_0000_0002;
const EMPTY: u64 = u64::MAX;

/// `⌊x·k / 2^64⌋`: maps a uniform 64-bit value to `0..k` without a division.
#[inline(always)]
fn scale(x: u64, k: usize) -> usize {
    ((x as u128 * k as u128) >> 64) as usize
}

/// Filling round `round`: each feature's value of the round goes to its bin, which keeps the minimum
/// without a branch; `landed(bin, was_empty)` is told where each went.
#[inline(always)]
fn fill_round(
    bins: &mut [u64],
    mixed: &[u64],
    fill_key: u64,
    round: u64,
    mut landed: impl FnMut(usize, bool),
) {
    let k = bins.len();
    let round_key = mix64(fill_key ^ round);
    for &x in mixed {
        let y = mix64(x ^ round_key);
        let i = scale(y, k);
        let old = bins[i];
        bins[i] = old.min(y & 0xFFFF_FFFF);
        landed(i, old == EMPTY);
    }
}

/// Accumulates feature hashes into K bins; [`finish`](Self::finish) fills the empty ones and returns the
/// signature.
///
/// ```
/// use neardup_sketch::oph::OphMinHasher;
/// use neardup_sketch::shingle::{Features, word_shingles};
/// let mut hasher = OphMinHasher::new(128, 0, Features::Words(5));
/// for h in word_shingles("the cat sat on the mat and the dog sat too".split(' '), 5) {
///     hasher.update(h);
/// }
/// let signature = hasher.finish().expect("at least one feature");
/// assert_eq!(signature.values().len(), 128);
/// assert_eq!(signature.params().to_string(), "minhash-oph-v1(k=128,seed=0,f=w5)");
/// ```
#[derive(Clone, Debug)]
pub struct OphMinHasher {
    params: SketchParams,
    key: u64,
    fill_key: u64,
    /// Bin minima; `EMPTY` (above every 32-bit value) for bins that have seen nothing.
    bins: Vec<u64>,
    non_empty: usize,
    /// Every mixed feature `x` seen (with repeats) while some bin was empty: the input of the filling rounds.
    mixed: Vec<u64>,
    /// Scratch of `finish_into`: the bins a round filled, or the bins still empty.
    empty_bins: Vec<u32>,
}

impl OphMinHasher {
    /// A hasher with K = `k` bins (1 ≤ k ≤ 2^32 − 1) and the given seed; `features` only labels the signature.
    pub fn new(k: usize, seed: u64, features: Features) -> Self {
        assert!(
            (1..=u32::MAX as usize).contains(&k),
            "K must be in 1..=2^32-1"
        );
        OphMinHasher {
            params: SketchParams::new(Scheme::MinHashOph, k as u32, seed, features),
            key: mix64(seed ^ FEATURE_KEY_TAG),
            fill_key: mix64(seed ^ FILL_KEY_TAG),
            bins: vec![EMPTY; k],
            non_empty: 0,
            mixed: Vec::new(),
            empty_bins: Vec::new(),
        }
    }

    /// The parameters of the signatures it makes.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Forgets every feature (keeps the buffers), ready for the next document.
    pub fn reset(&mut self) {
        self.bins.fill(EMPTY);
        self.non_empty = 0;
        self.mixed.clear();
    }

    /// Adds one feature hash. Repeating a feature changes nothing (the sketch is of the feature *set*).
    #[inline(always)]
    pub fn update(&mut self, feature_hash: u64) {
        let x = mix64(feature_hash ^ self.key);
        let k = self.bins.len();
        // The features are kept for the filling rounds only while some bin is empty: once every bin has a
        // value no round will run, so the buffer stops growing (a long document's holds the features up to
        // that point, about K·ln K, until `reset`).
        if self.non_empty < k {
            self.mixed.push(x);
        }
        // Without a branch: while the bins fill (most of a document of a few hundred shingles), whether
        // a value is a new minimum is a coin toss, and a branch on it mispredicts about every other time.
        let bin = &mut self.bins[scale(x, k)];
        let old = *bin;
        self.non_empty += usize::from(old == EMPTY);
        *bin = old.min(x & 0xFFFF_FFFF);
    }

    /// Adds every hash of a slice.
    pub fn extend(&mut self, feature_hashes: &[u64]) {
        for &h in feature_hashes {
            self.update(h);
        }
    }

    /// Whether no feature has been added.
    pub fn is_empty(&self) -> bool {
        self.non_empty == 0
    }

    /// Writes the K values into `out` and resets the hasher for the next document; returns `false` (leaving
    /// `out` unspecified) if no feature was added: an empty set has no signature.
    pub fn finish_into(&mut self, out: &mut [u32]) -> bool {
        let filled = self.fill(out);
        self.reset();
        filled
    }

    fn fill(&mut self, out: &mut [u32]) -> bool {
        let k = self.bins.len();
        assert_eq!(out.len(), k, "out must have K values");
        if self.non_empty == 0 {
            return false;
        }
        // Each round takes the minimum of its values in every bin, without a branch, in `bins` itself: a
        // filled bin's value is already in `out` (what lands in it later is never read, and `reset` clears
        // it), and a bin still empty holds EMPTY, having received nothing in any earlier round. (Testing per
        // feature whether its bin is still empty, the obvious loop, mispredicts a branch for about every
        // other feature.) The bins a round fills are found in one of two ways, whichever reads less.
        // Round 1's values (an empty bin's is overwritten when a later round fills it).
        for (out, &value) in out.iter_mut().zip(&self.bins) {
            *out = value as u32;
        }
        let mut empty = k - self.non_empty;
        let mut round = 1u64;
        // While fewer features than empty bins: each feature notes its bin as it lands, kept if the bin was
        // empty (a document of a few words needs about K·ln K rounds, and a list of the empty bins read after
        // each of them cost K² reads).
        self.empty_bins.resize(self.mixed.len(), 0);
        while empty > self.mixed.len() {
            round += 1;
            let mut filled = 0;
            let noted = &mut self.empty_bins;
            fill_round(
                &mut self.bins,
                &self.mixed,
                self.fill_key,
                round,
                |i, was_empty| {
                    noted[filled] = i as u32;
                    filled += usize::from(was_empty);
                },
            );
            for &i in &self.empty_bins[..filled] {
                out[i as usize] = self.bins[i as usize] as u32;
            }
            empty -= filled;
        }
        if empty == 0 {
            return true;
        }
        // Then the empty bins are listed, and `take_filled_bins` writes those a round filled to `out` and
        // keeps listed those still empty.
        self.empty_bins.resize(k, 0);
        let mut listed = 0;
        for (i, &value) in self.bins.iter().enumerate() {
            // Without a branch: which bins are empty is random.
            self.empty_bins[listed] = i as u32;
            listed += usize::from(value == EMPTY);
        }
        self.empty_bins.truncate(listed);
        loop {
            round += 1;
            fill_round(&mut self.bins, &self.mixed, self.fill_key, round, |_, _| {});
            self.take_filled_bins(out);
            if self.empty_bins.is_empty() {
                return true;
            }
        }
    }

    /// Writes the value of every bin listed in `empty_bins` to `out` and keeps listed only those still
    /// empty, without a branch (a short document's empty bins are scattered at random). An empty bin's
    /// value in `out` is overwritten when a later round fills it.
    fn take_filled_bins(&mut self, out: &mut [u32]) {
        let mut still_empty = 0;
        for j in 0..self.empty_bins.len() {
            let i = self.empty_bins[j];
            let value = self.bins[i as usize];
            out[i as usize] = value as u32;
            self.empty_bins[still_empty] = i;
            still_empty += usize::from(value == EMPTY);
        }
        self.empty_bins.truncate(still_empty);
    }

    /// The signature, or `None` if no feature was added; resets the hasher for the next document.
    pub fn finish(&mut self) -> Option<MinHashSignature> {
        let mut values = vec![0u32; self.bins.len()];
        self.finish_into(&mut values)
            .then(|| MinHashSignature::from_values(self.params, values))
    }
}

/// Classic MinHash with K independent hash functions `mix64(h ^ key_j)`: K times the work of
/// [`OphMinHasher`]. It is the baseline of the estimator tests and the benchmarks, not a scheme.
#[derive(Clone, Debug)]
pub struct ClassicMinHasher {
    keys: Vec<u64>,
    mins: Vec<u32>,
    empty: bool,
}

impl ClassicMinHasher {
    /// K independent hash functions derived from `seed`.
    pub fn new(k: usize, seed: u64) -> Self {
        ClassicMinHasher {
            keys: (0..k as u64)
                .map(|j| mix64(seed ^ mix64(j.wrapping_add(0x636C_6173_7369_6300))))
                .collect(),
            mins: vec![u32::MAX; k],
            empty: true,
        }
    }

    /// Adds one feature hash (K hash evaluations).
    pub fn update(&mut self, feature_hash: u64) {
        self.empty = false;
        for (min, key) in self.mins.iter_mut().zip(&self.keys) {
            *min = (*min).min((mix64(feature_hash ^ key) >> 32) as u32);
        }
    }

    /// The K minima, or `None` for an empty set.
    pub fn finish(&self) -> Option<&[u32]> {
        (!self.empty).then_some(&self.mins[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stats::{Pair, Summary, TRIALS, agreement};

    fn oph_signature(k: usize, seed: u64, set: &[u64]) -> Vec<u32> {
        let mut h = OphMinHasher::new(k, seed, Features::Hashes);
        h.extend(set);
        h.finish().unwrap().values().to_vec()
    }

    /// The module doc's definition, bin by bin: the smallest value of the first round that reached it.
    fn definition(k: usize, seed: u64, set: &[u64]) -> Vec<u32> {
        let key = mix64(seed ^ FEATURE_KEY_TAG);
        let fill_key = mix64(seed ^ FILL_KEY_TAG);
        let mixed: Vec<u64> = set.iter().map(|&h| mix64(h ^ key)).collect();
        let mut out: Vec<Option<u32>> = vec![None; k];
        for &x in &mixed {
            let (bin, value) = (scale(x, k), x as u32);
            out[bin] = Some(out[bin].map_or(value, |v| v.min(value)));
        }
        let mut round = 1u64;
        while out.contains(&None) {
            round += 1;
            let mut this_round: Vec<Option<u32>> = vec![None; k];
            for &x in &mixed {
                let y = mix64(x ^ mix64(fill_key ^ round));
                let (bin, value) = (scale(y, k), y as u32);
                this_round[bin] = Some(this_round[bin].map_or(value, |v| v.min(value)));
            }
            for (bin, value) in out.iter_mut().zip(this_round) {
                if bin.is_none() {
                    *bin = value;
                }
            }
        }
        out.into_iter().map(|v| v.expect("filled")).collect()
    }

    #[test]
    fn equals_the_definition() {
        let mut state = 0x1234_5678u64;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            mix64(state)
        };
        let mut hasher = OphMinHasher::new(128, 0, Features::Hashes);
        for size in (1..40).chain([100, 127, 128, 300, 700, 2000]) {
            for (k, seed) in [(128, 0), (128, 7), (16, 3), (1, 5), (200, 1)] {
                // Repeats (every third feature twice) change nothing.
                let set: Vec<u64> = (0..size).map(|_| next()).collect();
                let fed: Vec<u64> = set.iter().chain(set.iter().step_by(3)).copied().collect();
                if hasher.params().k as usize != k || hasher.params().seed != seed {
                    hasher = OphMinHasher::new(k, seed, Features::Hashes);
                }
                hasher.extend(&fed);
                let mut values = vec![0u32; k];
                assert!(hasher.finish_into(&mut values));
                assert_eq!(
                    values,
                    definition(k, seed, &set),
                    "size {size}, K {k}, seed {seed}"
                );
            }
        }
    }

    #[test]
    fn empty_set_has_no_signature() {
        let mut h = OphMinHasher::new(8, 0, Features::Hashes);
        assert!(h.is_empty());
        assert!(h.finish().is_none());
    }

    #[test]
    fn order_and_repetition_do_not_matter() {
        let set: Vec<u64> = (0..50u64).map(|i| i * 7919).collect();
        let mut shuffled: Vec<u64> = set.iter().rev().copied().collect();
        shuffled.extend_from_slice(&set[..10]);
        assert_eq!(oph_signature(64, 3, &set), oph_signature(64, 3, &shuffled));
    }

    #[test]
    fn single_features_agree_only_with_themselves() {
        let a = oph_signature(128, 0, &[42]);
        assert_eq!(a, oph_signature(128, 0, &[42, 42]));
        let b = oph_signature(128, 0, &[43]);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
        // The one non-empty bin holds the feature's OPH value; the others hold per-bin re-hashes of it.
        assert_eq!(
            a.iter().collect::<std::collections::HashSet<_>>().len(),
            128
        );
    }

    #[test]
    fn reset_reuses_buffers() {
        let mut h = OphMinHasher::new(16, 1, Features::Hashes);
        h.extend(&[1, 2, 3]);
        let first = h.finish().unwrap();
        assert!(h.is_empty(), "finish resets");
        assert!(h.finish().is_none());
        h.extend(&[1, 2, 3]);
        assert_eq!(h.finish().unwrap(), first);
    }

    #[test]
    fn seeds_give_different_permutations() {
        let set: Vec<u64> = (0..1000).collect();
        let a = oph_signature(128, 0, &set);
        let b = oph_signature(128, 1, &set);
        assert!(a.iter().zip(&b).filter(|(x, y)| x == y).count() < 5);
    }

    /// Unbiasedness and variance against classic MinHash, at the J and set sizes the issue names. Each case
    /// runs T trials with fresh random features (a fresh permutation each time) and a fixed seed, so the
    /// test is deterministic; the tolerances come from the standard errors (see `test_stats`).
    #[test]
    fn unbiased_with_classic_variance() {
        const K: usize = 128;
        let mut report = Vec::new();
        // (|A ∪ B|, trials): 24 and 64 leave most of the 128 bins empty; 1,000 and 5,000 fill them.
        for union in [24usize, 64, 200, 1000, 5000] {
            for j in [0.2, 0.5, 0.8, 0.95] {
                let mut summary = Summary::default();
                for trial in 0..TRIALS {
                    let pair = Pair::new(
                        union,
                        j,
                        (union as u64) << 40 | trial << 8 | (j * 100.0) as u64,
                    );
                    let a = oph_signature(K, trial, &pair.a);
                    let b = oph_signature(K, trial, &pair.b);
                    summary.add(agreement(&a, &b), pair.jaccard);
                }
                summary.assert_unbiased(K, &format!("oph |A∪B|={union} J={j}"));
                let ratio = summary.assert_variance_at_most_classic(
                    K,
                    1.10,
                    &format!("oph |A∪B|={union} J={j}"),
                );
                report.push(format!("|A∪B|={union} J={j}: var/classic {ratio:.3}"));
            }
        }
        eprintln!("{}", report.join("\n"));
    }

    /// The classic baseline measured the same way, to check that the theoretical variance J(1−J)/K used above
    /// is what classic MinHash achieves (on short sets, where it is cheap to run).
    #[test]
    fn classic_matches_its_theoretical_variance() {
        const K: usize = 128;
        for j in [0.2, 0.8] {
            let mut summary = Summary::default();
            for trial in 0..600u64 {
                let pair = Pair::new(40, j, 0xC1A5_5000 + trial);
                let mut a = ClassicMinHasher::new(K, trial);
                let mut b = ClassicMinHasher::new(K, trial);
                pair.a.iter().for_each(|&h| a.update(h));
                pair.b.iter().for_each(|&h| b.update(h));
                summary.add(
                    agreement(a.finish().unwrap(), b.finish().unwrap()),
                    pair.jaccard,
                );
            }
            summary.assert_unbiased(K, &format!("classic J={j}"));
            let ratio = summary.variance_ratio_to_classic(K);
            assert!(
                (0.85..1.15).contains(&ratio),
                "classic J={j}: var ratio {ratio}"
            );
        }
    }
}

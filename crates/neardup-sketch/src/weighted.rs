//! Weighted MinHash over sparse, streaming weighted features (TF, TF-IDF): `wminhash-v1` for the weighted
//! Jaccard similarity and `pminhash-v1` for the probability Jaccard similarity.
//!
//! For weights `x`, `y ≥ 0` over features:
//!
//! * **weighted Jaccard** `J_W = Σ min(x_i, y_i) / Σ max(x_i, y_i)` (what ICWS and datasketch's
//!   `WeightedMinHash` estimate; it depends on the scale: a document repeated twice has J_W = 0.5 with itself
//!   under TF weights);
//! * **probability Jaccard** `J_P = Σ_{i: x_i y_i > 0} 1 / Σ_j max(x_j / x_i, y_j / y_i)` (Moulton & Jiang's
//!   P-MinHash; scale-free: each vector is a distribution, and a repeated document has J_P = 1 with itself).
//!
//! Both sketches here are *consistent samples of a Poisson process* drawn in increasing time, in the manner
//! of Ertl's ProbMinHash (TKDE 2022): every feature owns a pseudo-random stream of points `(t, k)` (arrival
//! time t, component k uniform in `0..K`), generated in increasing t from a seed that depends only on the
//! feature hash (and the seed). Component k of the signature is the earliest point of the whole set that
//! landed in k. A feature stops generating as soon as its next time exceeds the largest current component
//! minimum, so after the first features fill every component most features cost one random draw: the
//! expected work is O(features + K log K), with no fixed dimension (unlike ICWS in datasketch).
//!
//! * `pminhash-v1`: feature i's stream has rate `w_i` (time increments `Exp(1)/w_i`); the component value
//!   identifies the *feature*. `Pr[A and B agree at k] = J_P` (P-MinHash), components independent.
//! * `wminhash-v1`: feature i owns the area `[0, w_i) × [0, ∞)` of (weight, time): unit-width weight
//!   intervals `[j, j + 1)`, each with its own rate-1 stream of points `(t, x, k)`, x uniform in the
//!   interval; a point counts only if `x < w_i`. The component value identifies the *point* (feature,
//!   interval, index). Two sets share exactly the points under `min(x_i, y_i)`, so the earliest point of the
//!   union area lies in the shared area with probability `Σ min / Σ max = J_W`: unbiased, components
//!   independent, variance `J_W(1 − J_W)/K` exactly as classic MinHash. Cost grows with `Σ ⌈w_i⌉`, so weights
//!   should be of order 1 or more (TF counts are; scale TF-IDF weights by one fixed factor, the same for every
//!   document — a per-document scaling would change J_W).
//!
//! Determinism: times are sums of `−ln U` computed with this module's own logarithm (IEEE basic operations
//! only), so the signatures do not depend on the platform's `libm`.

use crate::shingle::{Features, mix64};
use crate::signature::{MinHashSignature, Scheme, SketchParams};

/// Which similarity the weighted sketch estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Similarity {
    /// Weighted Jaccard `Σ min / Σ max` (`wminhash-v1`).
    Weighted,
    /// Probability Jaccard (`pminhash-v1`).
    Probability,
}

impl Similarity {
    /// The scheme of the signatures.
    pub const fn scheme(self) -> Scheme {
        match self {
            Similarity::Weighted => Scheme::WeightedJaccard,
            Similarity::Probability => Scheme::ProbabilityJaccard,
        }
    }
}

const STREAM_KEY_TAG: u64 = 0x776D_6800_0000_0001;
const VALUE_KEY_TAG: u64 = 0x776D_6800_0000_0002;
/// Largest accepted weight: the weighted-Jaccard sketch walks ⌈w⌉ unit intervals per feature.
pub const MAX_WEIGHT: f64 = (1u64 << 32) as f64;

/// `ln(m)` for m in [1, 2) by the series `2·atanh((m − 1)/(m + 1))` (relative error below 1e-15): builds
/// the table of [`ln_det`] at compile time.
const fn ln_series(m: f64) -> f64 {
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut series = 1.0 / 47.0;
    let mut odd = 45;
    while odd >= 1 {
        series = series * s2 + 1.0 / odd as f64;
        odd -= 2;
    }
    (2.0 * s) * series
}

/// For i in 0..256, with the interval centre `c_i = 1 + (2i + 1)/512`: `(ln c_i, 1/c_i)`.
const LN_TABLE: [(f64, f64); 256] = {
    let mut table = [(0.0, 0.0); 256];
    let mut i = 0;
    while i < 256 {
        let centre = 1.0 + (2 * i + 1) as f64 / 512.0;
        table[i] = (ln_series(centre), 1.0 / centre);
        i += 1;
    }
    table
};

/// `ln(u)` for `u` in (0, 1], from IEEE basic operations only (no `libm`), so that every platform computes
/// the same bits. `u = m·2^e` with m in [1, 2); the top 8 bits of m pick an interval of width 1/256 with
/// centre `c`; `ln u = e·ln 2 + ln c + ln(1 + r)` with `r = (m − c)/c`, |r| < 2^-9, and
/// `ln(1 + r) ≈ r + r²(−1/2 + r/3)`. Absolute error below 4e-12: the exponential variates are exact far
/// beyond what the estimators can resolve, and cost a table lookup and five multiplications.
fn ln_det(u: f64) -> f64 {
    debug_assert!(u > 0.0 && u <= 1.0);
    let bits = u.to_bits();
    let exponent = ((bits >> 52) & 0x7FF) as i64 - 1023;
    let m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    let index = ((bits >> 44) & 0xFF) as usize;
    let (ln_centre, inverse_centre) = LN_TABLE[index];
    // The centre 1 + (2i + 1)/512 is exact in binary, so m − centre is exact.
    let centre = f64::from_bits(0x3FF0_0000_0000_0000 | ((2 * index as u64 + 1) << 43));
    let r = (m - centre) * inverse_centre;
    exponent as f64 * std::f64::consts::LN_2
        + (ln_centre + r * (1.0 + r * (-0.5 + r * (1.0 / 3.0))))
}

/// A stream of 64-bit pseudo-random values (SplitMix64) and the exponential and uniform draws made from it.
struct Stream(u64);

impl Stream {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// U uniform in (0, 1] on a 2^-53 grid.
    #[inline(always)]
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `Exp(1)`: `−ln U`.
    #[inline(always)]
    fn exp(&mut self) -> f64 {
        -ln_det(self.uniform())
    }
}

/// Accumulates weighted features into a weighted MinHash signature.
///
/// Add every feature **once** with its total weight ([`TermFrequencies`] or [`term_frequencies`] aggregate
/// repeated hashes); [`extend`](Self::extend) adds many, heaviest first, which is faster than `update` in
/// arbitrary order.
///
/// ```
/// use neardup_sketch::shingle::{Features, token_hash};
/// use neardup_sketch::weighted::{Similarity, WeightedMinHasher, term_frequencies};
/// let mut hashes: Vec<u64> = "to be or not to be".split(' ').map(|t| token_hash(t.as_bytes())).collect();
/// let mut sketch = WeightedMinHasher::new(Similarity::Weighted, 128, 0, Features::Words(1));
/// sketch.extend(term_frequencies(&mut hashes));
/// let signature = sketch.finish().expect("non-empty");
/// assert_eq!(signature.params().scheme.name(), "wminhash-v1");
/// ```
#[derive(Clone, Debug)]
pub struct WeightedMinHasher {
    params: SketchParams,
    similarity: Similarity,
    stream_key: u64,
    value_key: u64,
    times: Vec<f64>,
    values: Vec<u32>,
    /// Components not yet hit; while any is, `max_time` is infinite.
    unfilled: usize,
    max_time: f64,
    /// A uniform U ≤ this has `−ln U > max_time` for certain (`e^−max_time` less a 1e-9 margin, far above the
    /// logarithm's error): the first point of a weighted-Jaccard interval is skipped without a logarithm. A
    /// filter only: the result is the same as without it.
    skip_at_or_below: f64,
    /// Scratch of [`extend`](Self::extend).
    pending: Vec<(u64, f64)>,
}

impl WeightedMinHasher {
    /// A sketch of K = `k` components (1 ≤ k ≤ 2^32 − 1); `features` only labels the signature.
    pub fn new(similarity: Similarity, k: usize, seed: u64, features: Features) -> Self {
        assert!(
            (1..=u32::MAX as usize).contains(&k),
            "K must be in 1..=2^32-1"
        );
        WeightedMinHasher {
            params: SketchParams::new(similarity.scheme(), k as u32, seed, features),
            similarity,
            stream_key: mix64(seed ^ STREAM_KEY_TAG),
            value_key: mix64(seed ^ VALUE_KEY_TAG),
            times: vec![f64::INFINITY; k],
            values: vec![0; k],
            unfilled: k,
            max_time: f64::INFINITY,
            skip_at_or_below: 0.0,
            pending: Vec::new(),
        }
    }

    /// The parameters of the signatures it makes.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// Forgets every feature, ready for the next document.
    pub fn reset(&mut self) {
        self.times.fill(f64::INFINITY);
        self.unfilled = self.times.len();
        self.set_max_time(f64::INFINITY);
    }

    fn set_max_time(&mut self, max_time: f64) {
        self.max_time = max_time;
        self.skip_at_or_below = (-max_time).exp() * (1.0 - 1e-9);
    }

    #[inline(always)]
    fn offer(&mut self, time: f64, k_random: u64, value: impl FnOnce() -> u32) {
        let k = ((k_random as u128 * self.times.len() as u128) >> 64) as usize;
        let old = self.times[k];
        if time < old {
            self.times[k] = time;
            self.values[k] = value();
            if old == f64::INFINITY {
                self.unfilled -= 1;
                if self.unfilled == 0 {
                    self.set_max_time(self.times.iter().copied().fold(0.0, f64::max));
                }
            } else if old == self.max_time {
                self.set_max_time(self.times.iter().copied().fold(0.0, f64::max));
            }
        }
    }

    /// Adds a feature with weight `weight` (zero: ignored). Panics if the weight is negative, NaN or above
    /// [`MAX_WEIGHT`].
    pub fn update(&mut self, feature_hash: u64, weight: f64) {
        assert!(
            (0.0..=MAX_WEIGHT).contains(&weight),
            "weight must be in 0..=2^32, got {weight}"
        );
        if weight == 0.0 {
            return;
        }
        let feature_key = feature_hash ^ self.stream_key;
        match self.similarity {
            Similarity::Probability => {
                let mut stream = Stream(mix64(feature_key));
                let inverse = 1.0 / weight;
                let value = mix64(feature_hash ^ self.value_key) as u32;
                let mut time = stream.exp() * inverse;
                while time < self.max_time {
                    let k_random = stream.next();
                    self.offer(time, k_random, || value);
                    time += stream.exp() * inverse;
                }
            }
            Similarity::Weighted => {
                let intervals = weight.ceil() as u64;
                for j in 0..intervals {
                    let interval_seed = mix64(feature_key ^ mix64(j.wrapping_add(1)));
                    let mut stream = Stream(interval_seed);
                    let first = stream.uniform();
                    if first <= self.skip_at_or_below {
                        continue;
                    }
                    let mut time = -ln_det(first);
                    // Only the last interval can be cut by the weight.
                    let cut = weight - j as f64;
                    while time < self.max_time {
                        let point = stream.next();
                        // x − j: the low 32 bits as a fraction; k: from the high bits (in `offer`).
                        let x_in_interval = (point & 0xFFFF_FFFF) as f64 * (1.0 / 4_294_967_296.0);
                        if x_in_interval < cut {
                            let value_key = self.value_key;
                            self.offer(time, point, || {
                                mix64(point ^ interval_seed ^ value_key) as u32
                            });
                        }
                        time += stream.exp();
                    }
                }
            }
        }
    }

    /// Adds many features, the heaviest first. The signature does not depend on the order, but the work does:
    /// a feature's stream runs until its time passes the largest component time, which falls like
    /// 1/(weight added so far), so starting with the heaviest feature (for TF weights, the most frequent
    /// token) cuts the number of points from about `K·H_K·ln(W/w_first)` with a light first feature to
    /// `K·H_K·ln(W/w_max)`.
    pub fn extend(&mut self, features: impl IntoIterator<Item = (u64, f64)>) {
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        pending.extend(features);
        // Only the first feature matters much (a full sort measured no better): move the heaviest there.
        if let Some(heaviest) =
            (0..pending.len()).max_by(|&a, &b| pending[a].1.total_cmp(&pending[b].1))
        {
            pending.swap(0, heaviest);
        }
        for &(feature, weight) in &pending {
            self.update(feature, weight);
        }
        self.pending = pending;
    }

    /// Whether no feature with a positive weight has been added.
    pub fn is_empty(&self) -> bool {
        self.unfilled == self.times.len()
    }

    /// The signature, or `None` for an empty set; resets the sketch for the next document. Every component is
    /// filled once one feature was added (its stream runs until it has hit all of them).
    pub fn finish(&mut self) -> Option<MinHashSignature> {
        let signature = (!self.is_empty())
            .then(|| MinHashSignature::from_values(self.params, self.values.clone()));
        self.reset();
        signature
    }
}

/// Aggregates repeated feature hashes into `(hash, count)` pairs, sorted by hash (sorts `hashes` in place).
pub fn term_frequencies(hashes: &mut [u64]) -> Vec<(u64, f64)> {
    hashes.sort_unstable();
    let mut out: Vec<(u64, f64)> = Vec::new();
    for &h in hashes.iter() {
        match out.last_mut() {
            Some((last, count)) if *last == h => *count += 1.0,
            _ => out.push((h, 1.0)),
        }
    }
    out
}

/// A hasher for keys that are already 64-bit hashes: one multiplication (Fibonacci hashing).
#[derive(Clone, Copy, Default)]
pub struct FeatureHasher(u64);

impl std::hash::Hasher for FeatureHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Counts feature hashes of a document (term frequencies) with a reusable hash table: about 4× faster than
/// [`term_frequencies`]' sort on a document of a thousand tokens. The order in which
/// [`drain`](Self::drain) yields the counts is unspecified, which is fine because a weighted sketch does not
/// depend on the order of its features.
#[derive(Clone, Default)]
pub struct TermFrequencies {
    counts: std::collections::HashMap<u64, u32, std::hash::BuildHasherDefault<FeatureHasher>>,
}

impl TermFrequencies {
    /// An empty counter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one occurrence.
    #[inline]
    pub fn add(&mut self, feature_hash: u64) {
        *self.counts.entry(feature_hash).or_insert(0) += 1;
    }

    /// Distinct features counted.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Yields every `(feature, count)` and empties the counter. Draining visits the whole table, so a table
    /// grown by a long document is first shrunk to the current count: one counter can serve documents of
    /// any length in turn.
    pub fn drain(&mut self) -> impl Iterator<Item = (u64, f64)> + '_ {
        if self.counts.capacity() > 8 * self.counts.len().max(256) {
            self.counts.shrink_to(self.counts.len());
        }
        self.counts.drain().map(|(h, c)| (h, c as f64))
    }
}

/// The exact weighted Jaccard similarity of two sparse vectors (`(feature, weight)` pairs, features distinct).
pub fn weighted_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
    let (mut min_sum, mut max_sum) = (0.0, 0.0);
    let ys: std::collections::HashMap<u64, f64> = y.iter().copied().collect();
    for &(f, wx) in x {
        let wy = ys.get(&f).copied().unwrap_or(0.0);
        min_sum += wx.min(wy);
        max_sum += wx.max(wy);
    }
    let xs: std::collections::HashSet<u64> = x.iter().map(|p| p.0).collect();
    max_sum += y
        .iter()
        .filter(|p| !xs.contains(&p.0))
        .map(|p| p.1)
        .sum::<f64>();
    if max_sum == 0.0 {
        0.0
    } else {
        min_sum / max_sum
    }
}

/// The exact probability Jaccard similarity of two sparse vectors (O(n²): for tests and small inputs).
pub fn probability_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
    let mut union: std::collections::BTreeMap<u64, (f64, f64)> = std::collections::BTreeMap::new();
    for &(f, w) in x {
        union.entry(f).or_default().0 += w;
    }
    for &(f, w) in y {
        union.entry(f).or_default().1 += w;
    }
    let pairs: Vec<(f64, f64)> = union.into_values().collect();
    pairs
        .iter()
        .filter(|(xi, yi)| *xi > 0.0 && *yi > 0.0)
        .map(|&(xi, yi)| {
            let denominator: f64 = pairs.iter().map(|&(xj, yj)| (xj / xi).max(yj / yi)).sum();
            1.0 / denominator
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stats::{SplitMix, Summary, TRIALS, agreement};

    type Vector = Vec<(u64, f64)>;
    type Measure = fn(&[(u64, f64)], &[(u64, f64)]) -> f64;

    #[test]
    fn ln_det_matches_ln() {
        let mut rng = SplitMix(1);
        for _ in 0..100_000 {
            let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            let (ours, libm) = (ln_det(u), u.ln());
            assert!((ours - libm).abs() <= 4e-12, "{u}: {ours} vs {libm}");
        }
        for (i, &(ln_centre, _)) in LN_TABLE.iter().enumerate() {
            let centre = 1.0 + (2 * i + 1) as f64 / 512.0;
            assert!(
                (ln_centre - f64::ln(centre)).abs() <= 2.0 * f64::EPSILON,
                "table {i}"
            );
        }
        assert!(ln_det(1.0).abs() < 4e-12);
        assert!((ln_det(0.5) + std::f64::consts::LN_2).abs() < 4e-12);
        assert!((ln_det(2f64.powi(-53)) - 2f64.powi(-53).ln()).abs() < 4e-12);
    }

    #[test]
    fn term_frequencies_count() {
        let mut hs = vec![5, 3, 5, 5, 9];
        assert_eq!(term_frequencies(&mut hs), [(3, 1.0), (5, 3.0), (9, 1.0)]);
        let mut counter = TermFrequencies::new();
        hs.iter().for_each(|&h| counter.add(h));
        assert_eq!(counter.len(), 3);
        let mut drained: Vec<(u64, f64)> = counter.drain().collect();
        drained.sort_by_key(|p| p.0);
        assert_eq!(drained, [(3, 1.0), (5, 3.0), (9, 1.0)]);
        assert!(counter.is_empty());
        // After a long document, a short one drains only its own entries, from a small table.
        (0..100_000u64).for_each(|h| counter.add(h));
        assert_eq!(counter.drain().count(), 100_000);
        counter.add(7);
        assert_eq!(counter.drain().collect::<Vec<_>>(), [(7, 1.0)]);
        assert!(counter.counts.capacity() < 4096);
    }

    #[test]
    fn exact_similarities() {
        let x = [(1, 2.0), (2, 1.0)];
        let y = [(1, 1.0), (3, 1.0)];
        assert!((weighted_jaccard(&x, &y) - 1.0 / 4.0).abs() < 1e-12);
        // J_P: only feature 1 is shared; Σ_j max(x_j/2, y_j/1) = max(1,1) + max(0.5,0) + max(0,1) = 2.5.
        assert!((probability_jaccard(&x, &y) - 0.4).abs() < 1e-12);
        // Scale: doubling y changes J_W, not J_P.
        let y2 = [(1, 2.0), (3, 2.0)];
        assert!((probability_jaccard(&x, &y2) - 0.4).abs() < 1e-12);
        assert!((weighted_jaccard(&x, &y2) - 2.0 / 5.0).abs() < 1e-12);
    }

    fn signature(sim: Similarity, k: usize, seed: u64, v: &[(u64, f64)]) -> Vec<u32> {
        let mut s = WeightedMinHasher::new(sim, k, seed, Features::Hashes);
        for &(f, w) in v {
            s.update(f, w);
        }
        s.finish().unwrap().values().to_vec()
    }

    #[test]
    fn empty_and_zero_weights() {
        let mut s = WeightedMinHasher::new(Similarity::Weighted, 8, 0, Features::Hashes);
        s.update(1, 0.0);
        assert!(s.finish().is_none());
        s.update(1, 2.0);
        let first = s.finish().unwrap();
        assert!(s.is_empty(), "finish resets");
        s.update(1, 2.0);
        assert_eq!(s.finish().unwrap(), first);
    }

    #[test]
    fn order_does_not_matter_and_scale_does_only_for_weighted() {
        let v: Vec<(u64, f64)> = (0..40u64).map(|i| (i * 31, 0.5 + (i % 7) as f64)).collect();
        let rev: Vec<(u64, f64)> = v.iter().rev().copied().collect();
        for sim in [Similarity::Weighted, Similarity::Probability] {
            assert_eq!(signature(sim, 64, 5, &v), signature(sim, 64, 5, &rev));
            let mut s = WeightedMinHasher::new(sim, 64, 5, Features::Hashes);
            s.extend(v.iter().copied());
            assert_eq!(s.finish().unwrap().values(), signature(sim, 64, 5, &v));
        }
        let doubled: Vec<(u64, f64)> = v.iter().map(|&(f, w)| (f, 2.0 * w)).collect();
        assert_eq!(
            signature(Similarity::Probability, 64, 5, &v),
            signature(Similarity::Probability, 64, 5, &doubled)
        );
        assert_ne!(
            signature(Similarity::Weighted, 64, 5, &v),
            signature(Similarity::Weighted, 64, 5, &doubled)
        );
    }

    /// Weighted pair `(x, y)` whose similarity (by `measure`) is `target` within 2e-3: y is x with every
    /// weight shrunk by the factor `max(0, 1 − λ·u_i)` and extra features of weight `λ·v_i`, λ found by bisection.
    fn pair(n: usize, target: f64, seed: u64, measure: Measure) -> (Vector, Vector, f64) {
        let mut rng = SplitMix(seed);
        let x: Vec<(u64, f64)> = (0..n)
            .map(|_| (rng.next_u64(), 0.3 + 4.0 * rng.next_f64()))
            .collect();
        let shrink: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
        let extra: Vec<(u64, f64)> = (0..n / 2 + 1)
            .map(|_| (rng.next_u64(), 0.3 + 4.0 * rng.next_f64()))
            .collect();
        let make = |lambda: f64| -> Vec<(u64, f64)> {
            let mut y: Vec<(u64, f64)> = x
                .iter()
                .zip(&shrink)
                .map(|(&(f, w), &u)| (f, w * (1.0 - lambda * u).max(0.0)))
                .filter(|p| p.1 > 0.0)
                .collect();
            y.extend(
                extra
                    .iter()
                    .map(|&(f, w)| (f, w * lambda))
                    .filter(|p| p.1 > 0.0),
            );
            y
        };
        let (mut lo, mut hi) = (0.0, 20.0);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if measure(&x, &make(mid)) > target {
                lo = mid
            } else {
                hi = mid
            }
        }
        let y = make(0.5 * (lo + hi));
        let truth = measure(&x, &y);
        assert!(
            (truth - target).abs() < 2e-3,
            "could not reach J = {target} (got {truth})"
        );
        (x, y, truth)
    }

    /// K = 64 here (128 in the OPH tests): the components are independent by construction, so K only scales
    /// the variance, and the smaller K halves the K·ln K start-up work of each of the 76,800 sketches.
    fn check(sim: Similarity, measure: Measure) -> Vec<String> {
        const K: usize = 64;
        let mut report = Vec::new();
        for (n, trials) in [(5usize, TRIALS), (40, TRIALS), (400, TRIALS)] {
            for target in [0.2, 0.5, 0.8, 0.95] {
                let (x, y, truth) = pair(n, target, 77 + n as u64, measure);
                let mut summary = Summary::default();
                for trial in 0..trials {
                    let a = signature(sim, K, trial, &x);
                    let b = signature(sim, K, trial, &y);
                    summary.add(agreement(&a, &b), truth);
                }
                let what = format!("{sim:?} n={n} J={truth:.3}");
                summary.assert_unbiased(K, &what);
                let ratio = summary.assert_variance_at_most_classic(K, 1.10, &what);
                report.push(format!("{what}: var/classic {ratio:.3}"));
            }
        }
        report
    }

    #[test]
    fn weighted_jaccard_is_unbiased_with_classic_variance() {
        eprintln!(
            "{}",
            check(Similarity::Weighted, weighted_jaccard).join("\n")
        );
    }

    #[test]
    fn probability_jaccard_is_unbiased_with_classic_variance() {
        eprintln!(
            "{}",
            check(Similarity::Probability, probability_jaccard).join("\n")
        );
    }
}

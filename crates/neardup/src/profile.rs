//! A document's exact features, kept beside its sketch so that candidate pairs can be verified by the
//! scheme's own measure instead of its estimate.
//!
//! MinHash signatures estimate a similarity; deduplication and `compare` check candidates exactly:
//!
//! | scheme | profile | exact measure |
//! |---|---|---|
//! | `minhash-oph-v1`, `minhash-datasketch-*` | the distinct shingle hashes | Jaccard `|A∩B| / |A∪B|` |
//! | `wminhash-v1` | shingle counts | weighted Jaccard `Σ min / Σ max` |
//! | `pminhash-v1` | shingle counts | probability Jaccard (Moulton & Jiang) |
//! | `simhash-doc-v1`, verified (`dedup --verify exact`) | token counts, or word n-gram set | cosine of term frequencies, or Jaccard |
//!
//! Verifying a weighted scheme with set Jaccard would ask a different question than its sketch answers
//! (two texts with weighted Jaccard 0.98 can have set Jaccard 0.05), so the measure follows the scheme.

use neardup_sketch::signature::Scheme as SketchScheme;

/// Which exact similarity a profile is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Measure {
    /// The Hamming distance of two 64-bit fingerprints (SimHash).
    Hamming,
    /// The Jaccard similarity of two shingle sets.
    Jaccard,
    /// The weighted Jaccard similarity of two shingle-count vectors.
    WeightedJaccard,
    /// The probability Jaccard similarity of two shingle-count vectors.
    ProbabilityJaccard,
    /// The cosine similarity of two term-frequency vectors (the measure a SimHash of term frequencies
    /// estimates: two fingerprints differ in a bit with probability θ/π, θ the angle between the vectors).
    Cosine,
}

impl Measure {
    /// The measure a MinHash-family scheme estimates.
    pub fn of_sketch_scheme(scheme: SketchScheme) -> Measure {
        match scheme {
            SketchScheme::WeightedJaccard => Measure::WeightedJaccard,
            SketchScheme::ProbabilityJaccard => Measure::ProbabilityJaccard,
            _ => Measure::Jaccard,
        }
    }

    /// A short name for output: `distance`, `jaccard`, `weighted jaccard`, `probability jaccard`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Hamming => "distance",
            Measure::Jaccard => "jaccard",
            Measure::WeightedJaccard => "weighted jaccard",
            Measure::ProbabilityJaccard => "probability jaccard",
            Measure::Cosine => "cosine",
        }
    }

    /// The name as a JSON key or column name: `distance`, `jaccard`, `weighted_jaccard`, `probability_jaccard`.
    pub fn key(self) -> &'static str {
        match self {
            Measure::Hamming => "distance",
            Measure::Jaccard => "jaccard",
            Measure::WeightedJaccard => "weighted_jaccard",
            Measure::ProbabilityJaccard => "probability_jaccard",
            Measure::Cosine => "cosine",
        }
    }
}

impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The exact features of one document under a MinHash-family scheme.
#[derive(Clone, Debug, PartialEq)]
pub enum Profile {
    /// The distinct shingle hashes, sorted.
    Set(Vec<u64>),
    /// Each distinct shingle hash with its count in the document, sorted by hash.
    Counts(Vec<(u64, f64)>),
}

impl Profile {
    /// A profile from every shingle hash of a document (in any order, repeated as they occur): a set for
    /// [`Measure::Jaccard`], counts for the weighted measures and the cosine.
    pub fn from_hashes(mut hashes: Vec<u64>, measure: Measure) -> Profile {
        Self::from_scratch(&mut hashes, measure)
    }

    /// [`from_hashes`](Self::from_hashes) from a buffer that is left empty, its capacity kept for the next
    /// document. The profile is allocated once, at its exact size: profiles are kept for every document
    /// of a run, and a vector grown by pushing holds up to twice its length.
    pub fn from_scratch(hashes: &mut Vec<u64>, measure: Measure) -> Profile {
        hashes.sort_unstable();
        let profile = match measure {
            Measure::WeightedJaccard | Measure::ProbabilityJaccard | Measure::Cosine => {
                let distinct = 1 + hashes.windows(2).filter(|w| w[0] != w[1]).count();
                let mut counts: Vec<(u64, f64)> = Vec::with_capacity(distinct);
                for &h in hashes.iter() {
                    match counts.last_mut() {
                        Some((last, c)) if *last == h => *c += 1.0,
                        _ => counts.push((h, 1.0)),
                    }
                }
                Profile::Counts(counts)
            }
            Measure::Jaccard | Measure::Hamming => {
                hashes.dedup();
                Profile::Set(hashes.as_slice().to_vec())
            }
        };
        hashes.clear();
        profile
    }

    /// How many distinct shingles.
    pub fn len(&self) -> usize {
        match self {
            Profile::Set(s) => s.len(),
            Profile::Counts(c) => c.len(),
        }
    }

    /// Whether there is no shingle.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct shingle hashes, sorted.
    pub fn hashes(&self) -> Vec<u64> {
        match self {
            Profile::Set(s) => s.clone(),
            Profile::Counts(c) => c.iter().map(|p| p.0).collect(),
        }
    }

    /// The profile as bytes, to travel between the stages of a distributed run: a tag (0: a set, 1: counts),
    /// then each hash as a little-endian `u64` (with its count as a little-endian `f64`). Equal profiles give
    /// equal bytes, so a runner can group documents by them.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Profile::Set(hashes) => {
                let mut out = Vec::with_capacity(1 + hashes.len() * 8);
                out.push(0);
                for h in hashes {
                    out.extend_from_slice(&h.to_le_bytes());
                }
                out
            }
            Profile::Counts(counts) => {
                let mut out = Vec::with_capacity(1 + counts.len() * 16);
                out.push(1);
                for (h, c) in counts {
                    out.extend_from_slice(&h.to_le_bytes());
                    out.extend_from_slice(&c.to_le_bytes());
                }
                out
            }
        }
    }

    /// A profile from [`Profile::to_bytes`]; refuses bytes of another shape, and profiles that no document
    /// gives (hashes out of order or repeated, a count that is not a whole number from 1 to 2^32), on which
    /// the measures' merges would be wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Profile, crate::Error> {
        let bad = |why: String| crate::Error::Unsupported {
            what: format!("{} bytes are not a profile ({why})", bytes.len()),
        };
        let u64_at = |c: &[u8]| u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
        let profile = match bytes.split_first() {
            Some((0, rest)) if rest.len() % 8 == 0 => {
                Profile::Set(rest.chunks_exact(8).map(u64_at).collect())
            }
            Some((1, rest)) if rest.len() % 16 == 0 => Profile::Counts(
                rest.chunks_exact(16)
                    .map(|c| (u64_at(c), f64::from_bits(u64_at(&c[8..]))))
                    .collect(),
            ),
            _ => {
                return Err(bad(
                    "a tag byte, then 8-byte hashes or 16-byte counts".to_owned()
                ));
            }
        };
        let out_of_order = match &profile {
            Profile::Set(hashes) => hashes.windows(2).position(|w| w[0] >= w[1]),
            Profile::Counts(counts) => counts.windows(2).position(|w| w[0].0 >= w[1].0),
        };
        if let Some(at) = out_of_order {
            return Err(bad(format!(
                "hash {} is not above the one before it",
                at + 1
            )));
        }
        if let Profile::Counts(counts) = &profile
            && let Some(at) = counts
                .iter()
                .position(|&(_, c)| !((1.0..=MAX_COUNT).contains(&c) && c.fract() == 0.0))
        {
            return Err(bad(format!(
                "count {at} is {}, not a whole number from 1 to 2^32",
                counts[at].1
            )));
        }
        Ok(profile)
    }

    /// The exact similarity of two profiles under `measure` (in 0..=1; two empty profiles are identical).
    pub fn similarity(&self, other: &Profile, measure: Measure) -> f64 {
        match (self, other, measure) {
            (Profile::Counts(a), Profile::Counts(b), Measure::WeightedJaccard) => {
                weighted_jaccard(a, b)
            }
            (Profile::Counts(a), Profile::Counts(b), Measure::ProbabilityJaccard) => {
                probability_jaccard(a, b)
            }
            (Profile::Counts(a), Profile::Counts(b), Measure::Cosine) => cosine(a, b),
            // Sets are compared in place: this runs once per verified candidate pair.
            (Profile::Set(a), Profile::Set(b), _) => crate::minhash::exact_jaccard(a, b),
            _ => crate::minhash::exact_jaccard(&self.hashes(), &other.hashes()),
        }
    }

    /// [`Profile::similarity`] if it reaches `threshold`, else `None`: how candidate pairs are judged. Two
    /// sets stop comparing once too few of their values are left to reach it, so that a pair far below the
    /// threshold (most candidates, where near-copies crowd) costs part of a merge.
    pub fn similarity_reaching(
        &self,
        other: &Profile,
        measure: Measure,
        threshold: f64,
    ) -> Option<f64> {
        match (self, other, measure) {
            (Profile::Set(a), Profile::Set(b), _) => {
                crate::minhash::exact_jaccard_reaching(a, b, threshold)
            }
            (Profile::Counts(a), Profile::Counts(b), Measure::WeightedJaccard) => {
                weighted_jaccard_reaching(a, b, threshold)
            }
            (Profile::Counts(a), Profile::Counts(b), Measure::ProbabilityJaccard) => {
                probability_jaccard_reaching(a, b, threshold)
            }
            _ => Some(self.similarity(other, measure)).filter(|&s| s >= threshold),
        }
    }
}

/// The largest count a profile read from bytes may hold: more copies of one shingle than any document
/// within the extraction budgets has, and small enough that sums of squares of counts stay finite.
const MAX_COUNT: f64 = 4_294_967_296.0;

/// The cosine `Σ x_i y_i / (‖x‖ ‖y‖)` of two count vectors sorted by feature (a merge: O(n + m)); two empty
/// vectors are identical (1), an empty and a non-empty one are not (0).
pub fn cosine(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
    let norm = |v: &[(u64, f64)]| v.iter().map(|p| p.1 * p.1).sum::<f64>().sqrt();
    let (nx, ny) = (norm(x), norm(y));
    if nx == 0.0 || ny == 0.0 {
        return if nx == ny { 1.0 } else { 0.0 };
    }
    let (mut dot, mut i, mut j) = (0.0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].0.cmp(&y[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += x[i].1 * y[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    // Rounding can put identical vectors a hair above 1.
    (dot / (nx * ny)).min(1.0)
}

/// How far below a threshold an upper bound must fall before a pair is given up on without its exact value:
/// the bounds are sums of their own, rounded in another order than the measure's (counts are whole numbers,
/// whose sums are exact, so this only matters for other weights).
const BOUND_SLACK: f64 = 1e-9;

/// The sum of a count vector's counts.
fn mass(v: &[(u64, f64)]) -> f64 {
    v.iter().map(|p| p.1).sum()
}

/// Σ min / Σ max over two count vectors sorted by feature (a merge: O(n + m)).
pub fn weighted_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
    weighted_jaccard_within(x, y, None).expect("no bound, no early stop")
}

/// [`weighted_jaccard`] if it is at least `threshold`, else `None`: the same value, found with less work for
/// a pair far below the threshold. With Σmin + Σmax = Σx + Σy, the measure is m / (Σx + Σy − m) for m = Σmin,
/// so reaching the threshold t needs m ≥ t (Σx + Σy) / (1 + t); the merge stops once the Σmin so far plus
/// the smaller of the two vectors' masses still to merge falls short of that.
pub fn weighted_jaccard_reaching(
    x: &[(u64, f64)],
    y: &[(u64, f64)],
    threshold: f64,
) -> Option<f64> {
    let (sum_x, sum_y) = (mass(x), mass(y));
    let least_min_sum =
        threshold * (sum_x + sum_y) / (1.0 + threshold) - BOUND_SLACK * (sum_x + sum_y);
    // A threshold at or below 0 (or NaN) bounds nothing: every pair is measured, then filtered.
    let bound = (threshold > 0.0).then_some((sum_x, sum_y, least_min_sum));
    weighted_jaccard_within(x, y, bound).filter(|&s| s >= threshold)
}

/// The merge of [`weighted_jaccard`], without a branch on the order of two features (about half of which
/// the processor would guess wrong); with `bound = (Σx, Σy, least Σmin)`, `None` once the Σmin cannot reach
/// its least. Σmin and Σmax are added in feature order either way, so the value does not depend on the bound.
fn weighted_jaccard_within(
    x: &[(u64, f64)],
    y: &[(u64, f64)],
    bound: Option<(f64, f64, f64)>,
) -> Option<f64> {
    let (mut min_sum, mut max_sum) = (0.0f64, 0.0f64);
    let (mut left_x, mut left_y, least) = bound.unwrap_or((0.0, 0.0, f64::NEG_INFINITY));
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let ((fx, cx), (fy, cy)) = (x[i], y[j]);
        let (x_first, y_first) = (fx < fy, fy < fx);
        let shared = !x_first && !y_first;
        // Adding 0.0 to a sum of counts (never −0.0) leaves it as it was: the sums are those of the branches.
        min_sum += if shared { cx.min(cy) } else { 0.0 };
        max_sum += if x_first {
            cx
        } else if y_first {
            cy
        } else {
            cx.max(cy)
        };
        left_x -= if y_first { 0.0 } else { cx };
        left_y -= if x_first { 0.0 } else { cy };
        i += usize::from(!y_first);
        j += usize::from(!x_first);
        if min_sum + left_x.min(left_y) < least {
            return None;
        }
    }
    // One vector is merged: the other's rest is in Σmax alone, added one by one as the branches added it.
    max_sum = x[i..]
        .iter()
        .chain(&y[j..])
        .fold(max_sum, |sum, p| sum + p.1);
    Some(if max_sum == 0.0 {
        1.0
    } else {
        min_sum / max_sum
    })
}

/// The probability Jaccard similarity `Σ_{i: x_i y_i > 0} 1 / Σ_j max(x_j / x_i, y_j / y_i)` of two count
/// vectors sorted by feature, in O(n log n).
///
/// For a shared feature i, `max(x_j / x_i, y_j / y_i)` is `x_j / x_i` exactly when `x_j / y_j ≥ x_i / y_i`; with
/// the union's features sorted by the ratio `x_j / y_j`, each inner sum is a suffix sum of `x` plus a prefix
/// sum of `y`, found by binary search.
pub fn probability_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
    probability_jaccard_within(x, y, None).expect("no threshold, no early stop")
}

/// [`probability_jaccard`] if it is at least `threshold`, else `None`: the same value, without its sort for a
/// pair whose upper bound falls short. For a shared feature i, the sum `Σ_j max(x_j / x_i, y_j / y_i)` is at
/// least `Σx / x_i + Y₀ / y_i` (each max is at least `x_j / x_i`, and `y_j / y_i` on the features only y has,
/// whose counts sum to Y₀), and likewise at least `Σy / y_i + X₀ / x_i`; so the measure is at most
/// `Σ_i x_i y_i / max(Σx y_i + Y₀ x_i, Σy x_i + X₀ y_i)`. For two sets (every count 1) the bound is the
/// measure itself, |x ∩ y| / |x ∪ y|.
pub fn probability_jaccard_reaching(
    x: &[(u64, f64)],
    y: &[(u64, f64)],
    threshold: f64,
) -> Option<f64> {
    probability_jaccard_within(x, y, Some(threshold)).filter(|&s| s >= threshold)
}

/// [`probability_jaccard`], or `None` once its upper bound falls below `threshold`.
fn probability_jaccard_within(
    x: &[(u64, f64)],
    y: &[(u64, f64)],
    threshold: Option<f64>,
) -> Option<f64> {
    // The union as (x_j, y_j), and the shared features' (x_i, y_i), both by feature.
    let mut union: Vec<(f64, f64)> = Vec::with_capacity(x.len() + y.len());
    let mut shared: Vec<(f64, f64)> = Vec::with_capacity(x.len().min(y.len()));
    let (mut i, mut j) = (0, 0);
    while i < x.len() || j < y.len() {
        if j == y.len() || (i < x.len() && x[i].0 < y[j].0) {
            union.push((x[i].1, 0.0));
            i += 1;
        } else if i == x.len() || y[j].0 < x[i].0 {
            union.push((0.0, y[j].1));
            j += 1;
        } else {
            union.push((x[i].1, y[j].1));
            shared.push((x[i].1, y[j].1));
            i += 1;
            j += 1;
        }
    }
    if union.is_empty() {
        return Some(1.0);
    }
    if let Some(threshold) = threshold {
        let (sum_x, sum_y) = (mass(x), mass(y));
        let only_x = sum_x - shared.iter().map(|p| p.0).sum::<f64>();
        let only_y = sum_y - shared.iter().map(|p| p.1).sum::<f64>();
        let bound: f64 = shared
            .iter()
            .map(|&(xi, yi)| xi * yi / (sum_x * yi + only_y * xi).max(sum_y * xi + only_x * yi))
            .sum();
        if bound < threshold - BOUND_SLACK {
            return None;
        }
    }
    // Features by their ratio x_j / y_j (x_j / 0 is infinite), compared by `total_cmp`: a total order
    // whatever the weights (comparing the fractions by cross-multiplication, as this once did, is not one
    // once products round, and the sort panicked on such weights). For whole counts below 2^26 distinct
    // fractions are distinct quotients, so the order is the fractions' own. Features of equal ratio may lie
    // in any order: the sums over them below are of whole counts, exact in any order, and an unstable sort
    // gathers the many equal ratios of near-copies (1:1, 1:0, 0:1) in one pass.
    let ratio = |(xj, yj): (f64, f64)| xj / yj;
    let mut sorted: Vec<(f64, (f64, f64))> = union.into_iter().map(|p| (ratio(p), p)).collect();
    sorted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    // prefix_y[m] = Σ y over the first m; suffix_x[m] = Σ x over positions m.. (sorted by ratio).
    let mut prefix_y = vec![0.0; sorted.len() + 1];
    for (m, (_, p)) in sorted.iter().enumerate() {
        prefix_y[m + 1] = prefix_y[m] + p.1;
    }
    let mut suffix_x = vec![0.0; sorted.len() + 1];
    for m in (0..sorted.len()).rev() {
        suffix_x[m] = suffix_x[m + 1] + sorted[m].1.0;
    }
    // The terms are added in feature order. Consecutive shared features often have the same counts (1 and
    // 1, in near-copies), and so the same place among the ratios: it is searched for once.
    let mut last: Option<((f64, f64), usize)> = None;
    let measure = shared
        .iter()
        .map(|&(xi, yi)| {
            let split = match last {
                Some((counts, split)) if counts == (xi, yi) => split,
                _ => {
                    // The first position whose ratio is ≥ x_i / y_i: from there on x_j / x_i is the larger
                    // term.
                    let at = ratio((xi, yi));
                    let split = sorted.partition_point(|(r, _)| r.total_cmp(&at).is_lt());
                    last = Some(((xi, yi), split));
                    split
                }
            };
            1.0 / (suffix_x[split] / xi + prefix_y[split] / yi)
        })
        .sum::<f64>();
    // Rounding put a vector and itself an ulp or two above 1 (about one time in five): a score is at
    // most 1.
    Some(measure.min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vector() -> impl Strategy<Value = Vec<(u64, f64)>> {
        proptest::collection::btree_map(0u64..40, 1u32..6, 0..25)
            .prop_map(|m| m.into_iter().map(|(k, v)| (k, v as f64)).collect())
    }

    proptest! {
        /// Profiles travel as bytes and come back equal; other bytes are refused.
        #[test]
        fn profiles_round_trip_through_bytes(x in vector(), set in proptest::collection::btree_set(any::<u64>(), 0..30)) {
            for p in [Profile::Counts(x.clone()), Profile::Set(set.iter().copied().collect())] {
                let bytes = p.to_bytes();
                prop_assert_eq!(Profile::from_bytes(&bytes).unwrap(), p);
                prop_assert!(Profile::from_bytes(&bytes[..bytes.len() - 1]).is_err() || bytes.len() == 1);
            }
            prop_assert!(Profile::from_bytes(&[]).is_err());
            prop_assert!(Profile::from_bytes(&[2]).is_err());
            // What no document gives is refused: a repeated hash, a count that is not a positive whole number.
            if let Some(&(h, _)) = x.first() {
                let twice = Profile::Counts(vec![(h, 1.0), (h, 1.0)]).to_bytes();
                prop_assert!(Profile::from_bytes(&twice).is_err());
                for count in [0.5, 0.0, -1.0, f64::NAN, f64::INFINITY, 4_294_967_297.0] {
                    let odd = Profile::Counts(vec![(h, count)]).to_bytes();
                    prop_assert!(Profile::from_bytes(&odd).is_err());
                }
            }
        }

        /// The merge and the sort-based forms equal the brute-force definitions in neardup-sketch.
        #[test]
        fn exact_measures_match_brute_force(x in vector(), y in vector()) {
            // No measure is above 1, not even of a vector and itself (where rounding once put it).
            for (a, b) in [(&x, &x), (&x, &y)] {
                for m in [weighted_jaccard(a, b), probability_jaccard(a, b), cosine(a, b)] {
                    prop_assert!((0.0..=1.0).contains(&m), "{m}");
                }
            }
            prop_assume!(!x.is_empty() || !y.is_empty());
            let wj = neardup_sketch::weighted::weighted_jaccard(&x, &y);
            prop_assert!((weighted_jaccard(&x, &y) - wj).abs() < 1e-12);
            let pj = neardup_sketch::weighted::probability_jaccard(&x, &y);
            prop_assert!((probability_jaccard(&x, &y) - pj).abs() < 1e-9, "{} vs {}", probability_jaccard(&x, &y), pj);
        }

        /// The branch-free merge and the unstable sort give the very bits of the forms they replaced (on
        /// whole counts, whose sums are exact in any order), so no score written before changes.
        #[test]
        fn faster_measures_give_the_bits_of_the_forms_they_replaced(
            x in vector(),
            y in vector(),
            scale in proptest::collection::vec(0.1f64..3.0, 40),
        ) {
            prop_assert_eq!(weighted_jaccard(&x, &y).to_bits(), branching_weighted_jaccard(&x, &y).to_bits());
            // The weighted Jaccard adds in the order it did, so fractional weights give its bits too.
            let weighted = |v: &[(u64, f64)]| v.iter().map(|&(f, c)| (f, c * scale[f as usize])).collect::<Vec<_>>();
            let (wx, wy) = (weighted(&x), weighted(&y));
            prop_assert_eq!(weighted_jaccard(&wx, &wy).to_bits(), branching_weighted_jaccard(&wx, &wy).to_bits());
            prop_assert_eq!(probability_jaccard(&x, &y).to_bits(), stable_probability_jaccard(&x, &y).to_bits());
        }

        /// The early stops change nothing: the measure when it reaches the threshold, at thresholds on, near
        /// and beyond its value, on whole counts and on fractional weights.
        #[test]
        fn measures_reaching_a_threshold_are_the_measure_at_or_above_it(
            x in vector(),
            y in vector(),
            scale in proptest::collection::vec(0.1f64..3.0, 40),
            between: f64,
        ) {
            let weighted = |v: &[(u64, f64)]| v.iter().map(|&(f, c)| (f, c * scale[f as usize])).collect::<Vec<_>>();
            for (x, y) in [(x.clone(), y.clone()), (weighted(&x), weighted(&y))] {
                let (wj, pj) = (weighted_jaccard(&x, &y), probability_jaccard(&x, &y));
                for threshold in [wj, pj, wj - 1e-12, pj + 1e-12, between.fract().abs(), 0.0, -1.0, 1.0, 1.5, f64::NAN] {
                    prop_assert_eq!(weighted_jaccard_reaching(&x, &y, threshold), Some(wj).filter(|&s| s >= threshold));
                    prop_assert_eq!(probability_jaccard_reaching(&x, &y, threshold), Some(pj).filter(|&s| s >= threshold));
                }
            }
        }
    }

    /// The weighted Jaccard as it was before its merge lost its branches.
    fn branching_weighted_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
        let (mut min_sum, mut max_sum) = (0.0, 0.0);
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            let take_x = j == y.len() || (i < x.len() && x[i].0 < y[j].0);
            let take_y = i == x.len() || (j < y.len() && y[j].0 < x[i].0);
            if take_x {
                max_sum += x[i].1;
                i += 1;
            } else if take_y {
                max_sum += y[j].1;
                j += 1;
            } else {
                min_sum += x[i].1.min(y[j].1);
                max_sum += x[i].1.max(y[j].1);
                i += 1;
                j += 1;
            }
        }
        if max_sum == 0.0 {
            1.0
        } else {
            min_sum / max_sum
        }
    }

    /// The probability Jaccard as it was before: the union sorted stably, every shared feature searched for.
    fn stable_probability_jaccard(x: &[(u64, f64)], y: &[(u64, f64)]) -> f64 {
        let mut union: Vec<(f64, f64)> = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            if j == y.len() || (i < x.len() && x[i].0 < y[j].0) {
                union.push((x[i].1, 0.0));
                i += 1;
            } else if i == x.len() || y[j].0 < x[i].0 {
                union.push((0.0, y[j].1));
                j += 1;
            } else {
                union.push((x[i].1, y[j].1));
                i += 1;
                j += 1;
            }
        }
        if union.is_empty() {
            return 1.0;
        }
        let by_ratio = |a: &(f64, f64), b: &(f64, f64)| (a.0 * b.1).total_cmp(&(b.0 * a.1));
        let mut sorted = union.clone();
        sorted.sort_by(by_ratio);
        let mut prefix_y = vec![0.0; sorted.len() + 1];
        for (m, p) in sorted.iter().enumerate() {
            prefix_y[m + 1] = prefix_y[m] + p.1;
        }
        let mut suffix_x = vec![0.0; sorted.len() + 1];
        for m in (0..sorted.len()).rev() {
            suffix_x[m] = suffix_x[m + 1] + sorted[m].0;
        }
        union
            .iter()
            .filter(|(xi, yi)| *xi > 0.0 && *yi > 0.0)
            .map(|&(xi, yi)| {
                let split = sorted.partition_point(|p| by_ratio(p, &(xi, yi)).is_lt());
                1.0 / (suffix_x[split] / xi + prefix_y[split] / yi)
            })
            .sum::<f64>()
            // Bounded to 1 since, as the fast form is.
            .min(1.0)
    }

    /// Weights whose cross products round (proptest found them): the sort by ratio once panicked on them
    /// ("user-provided comparison function does not correctly implement a total order").
    #[test]
    fn probability_jaccard_sorts_weights_whose_products_round() {
        let ones = |features: &[u64]| features.iter().map(|&f| (f, 1.0)).collect::<Vec<_>>();
        let mut x = ones(&[0, 1, 2, 3, 4, 5, 6, 8, 10, 14, 24, 33]);
        let mut y = ones(&[7, 10, 11, 12, 13, 15, 16, 17, 18, 24, 25, 33]);
        x[5].1 = 2.0;
        for f in [10, 24, 33] {
            y.iter_mut().find(|p| p.0 == f).unwrap().1 = 5.0;
        }
        let scale = |f: u64| match f {
            24 => 2.472006591611459,
            33 => 1.0959733447503832,
            _ => 0.1,
        };
        let weighted = |v: &[(u64, f64)]| {
            v.iter()
                .map(|&(f, c)| (f, c * scale(f)))
                .collect::<Vec<_>>()
        };
        let (x, y) = (weighted(&x), weighted(&y));
        let exact = neardup_sketch::weighted::probability_jaccard(&x, &y);
        assert!((probability_jaccard(&x, &y) - exact).abs() < 1e-9);
        assert_eq!(
            probability_jaccard_reaching(&x, &y, 0.0),
            Some(probability_jaccard(&x, &y))
        );
    }

    #[test]
    fn profiles_follow_the_measure() {
        let hashes = vec![3, 1, 3, 2, 3];
        assert_eq!(
            Profile::from_hashes(hashes.clone(), Measure::Jaccard),
            Profile::Set(vec![1, 2, 3])
        );
        assert_eq!(
            Profile::from_hashes(hashes, Measure::WeightedJaccard),
            Profile::Counts(vec![(1, 1.0), (2, 1.0), (3, 3.0)])
        );
        // Same words, different counts: sets are equal, weights are not.
        let a = Profile::from_hashes(vec![1, 2, 2, 2, 2], Measure::WeightedJaccard);
        let b = Profile::from_hashes(vec![1, 1, 1, 1, 2], Measure::WeightedJaccard);
        assert!((a.similarity(&b, Measure::Jaccard) - 1.0).abs() < 1e-12);
        assert!((a.similarity(&b, Measure::WeightedJaccard) - 2.0 / 8.0).abs() < 1e-12);
        // (1, 4) · (4, 1) / (√17 · √17) = 8 / 17.
        let (a, b) = (
            Profile::from_hashes(vec![1, 2, 2, 2, 2], Measure::Cosine),
            Profile::from_hashes(vec![1, 1, 1, 1, 2], Measure::Cosine),
        );
        assert!((a.similarity(&b, Measure::Cosine) - 8.0 / 17.0).abs() < 1e-12);
        assert_eq!(a.similarity(&a, Measure::Cosine), 1.0);
        assert_eq!(cosine(&[(1, 2.0)], &[(2, 3.0)]), 0.0);
        assert_eq!(cosine(&[], &[(2, 3.0)]), 0.0);
    }

    #[test]
    fn profiles_from_a_scratch_buffer_are_exact_size_and_empty_it() {
        let mut scratch = Vec::with_capacity(64);
        for measure in [Measure::Jaccard, Measure::WeightedJaccard] {
            scratch.extend([9, 4, 9, 9, 1, 4]);
            let profile = Profile::from_scratch(&mut scratch, measure);
            assert!(scratch.is_empty() && scratch.capacity() >= 64);
            match profile {
                Profile::Set(s) => assert_eq!((s.as_slice(), s.capacity()), (&[1, 4, 9][..], 3)),
                Profile::Counts(c) => {
                    assert_eq!(c, [(1, 1.0), (4, 2.0), (9, 3.0)]);
                    assert_eq!(c.capacity(), 3);
                }
            }
        }
        assert_eq!(
            Profile::from_scratch(&mut scratch, Measure::Jaccard),
            Profile::Set(vec![])
        );
    }
}

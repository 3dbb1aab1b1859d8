//! Choosing k or a threshold on one's own data: the distribution of scores of candidate pairs and of random
//! pairs, precision, recall and F1 per setting against ground truth, a recommendation, and for MinHash the
//! S-curve of the banding deduplication would use with the observed pairs on it.
//!
//! Every pair of the documents given is scored (so give a sample: `neardup calibrate --sample N`): a
//! SimHash pair by its Hamming distance, a MinHash pair by its estimated similarity. What a run at each
//! setting reports is then known exactly:
//!
//! * SimHash at k: the pairs within k bits (`dedup -k K --pairs`);
//! * MinHash at threshold t: the pairs that share a band of the banding chosen for t and whose estimate
//!   reaches t (`dedup --verify estimate --threshold T --pairs`).
//!
//! **Candidate pairs** are the pairs a run at the loosest setting would examine (SimHash: within the largest
//! k, 7; MinHash: sharing a band at the lowest threshold swept); **random pairs** are a uniform sample of all
//! pairs, the background the candidates stand out from.
//!
//! ```
//! use neardup::calibrate::{calibrate, Settings, Truth};
//! use std::ops::ControlFlow;
//! use neardup::{Method, Scheme};
//! let method = Method::SimHash(Scheme::SimhashDocV1);
//! let texts = ["the quick brown fox jumps over the lazy dog", "the quick brown fox jumps over the lazy dog!",
//!              "release notes for version two of the parser"];
//! let ids: Vec<String> = (0..3).map(|i| format!("d{i}")).collect();
//! let sketches = texts.iter().map(|t| method.sketch_text(t)).collect::<Result<Vec<_>, _>>()?;
//! let truth = Truth::parse("d0\td1\t1\n", "truth.tsv")?;
//! let report = calibrate(method, &ids, &sketches, Some(&truth), &Settings::default(), |_| ControlFlow::Continue(()))?;
//! let k0 = &report.sweep[0];
//! assert_eq!((k0.setting, k0.true_positives, k0.precision, k0.recall), (0.0, 1, 1.0, 1.0));
//! # Ok::<(), neardup::Error>(())
//! ```

use crate::dedup::{DEFAULT_THRESHOLD, Verification, default_weights};
use crate::error::Error;
use crate::sketch::{Method, Sketch};
use neardup_index::lsh::{Banding, optimize};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

/// Ground truth: pairs of ids with a similarity (or a 0/1 label).
#[derive(Clone, Debug, Default)]
pub struct Truth {
    pairs: HashMap<(String, String), f64>,
}

impl Truth {
    /// Parses `id_a<TAB>id_b<TAB>similarity` lines (more columns are ignored; a first line whose third
    /// column is not a number is a header; labels are similarities 0 and 1). `source` names the file in
    /// errors.
    pub fn parse(text: &str, source: &str) -> Result<Truth, Error> {
        let mut pairs = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let bad = |why: &str| Error::Unsupported {
                what: format!("{source}, line {}: {why}", n + 1),
            };
            if fields.len() < 3 {
                return Err(bad(
                    "expected id_a<TAB>id_b<TAB>similarity (or a 0/1 label)",
                ));
            }
            let value = match fields[2].trim().parse::<f64>() {
                Ok(v) if (0.0..=1.0).contains(&v) => v,
                Ok(_) => return Err(bad("the similarity is not in 0..1")),
                Err(_) if n == 0 || pairs.is_empty() && line.contains("id") => continue,
                Err(_) => return Err(bad(&format!("'{}' is not a similarity", fields[2]))),
            };
            pairs.insert(ordered(fields[0], fields[1]), value);
        }
        Ok(Truth { pairs })
    }

    /// Truth from pairs given one by one: `(id_a, id_b, similarity)` (a label is a similarity of 0 or 1).
    /// A similarity outside 0..=1 is refused, naming the pair's position (from 0) in `source`.
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (String, String, f64)>,
        source: &str,
    ) -> Result<Truth, Error> {
        let mut truth = Truth::default();
        for (n, (a, b, similarity)) in pairs.into_iter().enumerate() {
            if !(0.0..=1.0).contains(&similarity) {
                return Err(Error::Unsupported {
                    what: format!(
                        "{source}, pair {n} ({a:?}, {b:?}): the similarity {similarity} is not in 0..1"
                    ),
                });
            }
            truth.pairs.insert(ordered(&a, &b), similarity);
        }
        Ok(truth)
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The similarity of a pair, if the truth lists it.
    pub fn get(&self, a: &str, b: &str) -> Option<f64> {
        self.pairs.get(&ordered(a, b)).copied()
    }
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct Settings {
    /// A truth pair is a positive when its similarity is at least this (labels: 1).
    pub truth_threshold: f64,
    /// Recommend the setting with the best recall among those reaching this precision.
    pub target_precision: Option<f64>,
    /// Recommend the setting with the best precision among those reaching this recall.
    pub target_recall: Option<f64>,
    /// How many random pairs to score.
    pub random_pairs: usize,
    /// The seed of the random pairs.
    pub seed: u64,
    /// MinHash: the threshold whose banding the S-curve shows (what `dedup` would use).
    pub threshold: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            truth_threshold: DEFAULT_THRESHOLD,
            target_precision: None,
            target_recall: None,
            random_pairs: 10_000,
            seed: 0,
            threshold: DEFAULT_THRESHOLD,
        }
    }
}

/// One bin of a histogram: scores in `lo..hi` (the last bin includes `hi`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    /// The bin's lower edge.
    pub lo: f64,
    /// Its upper edge.
    pub hi: f64,
    /// Candidate pairs in it.
    pub candidates: u64,
    /// Random pairs in it.
    pub random: u64,
}

/// Precision, recall and F1 at one setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepRow {
    /// k (SimHash) or the threshold (MinHash).
    pub setting: f64,
    /// Pairs a run at this setting reports.
    pub detected: u64,
    /// Of those, positives of the truth.
    pub true_positives: u64,
    /// true positives / detected (1 when nothing is detected).
    pub precision: f64,
    /// true positives / positives.
    pub recall: f64,
    /// The harmonic mean of precision and recall.
    pub f1: f64,
}

/// The recommended setting and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// k or the threshold.
    pub setting: f64,
    /// Its row of the sweep, when there is truth.
    pub row: Option<SweepRow>,
    /// The rule that chose it, in words.
    pub why: String,
}

/// The S-curve of a banding and the observed fraction of pairs sharing a band, by similarity.
#[derive(Clone, Debug, PartialEq)]
pub struct SCurve {
    /// The banding `dedup` would use at [`Settings::threshold`].
    pub banding: Banding,
    /// The threshold it was chosen for.
    pub threshold: f64,
    /// Whether the observed similarities are the truth's (else the estimates).
    pub by_truth: bool,
    /// Per similarity bin of width 0.05: (bin centre, pairs, pairs sharing a band).
    pub observed: Vec<(f64, u64, u64)>,
}

/// Everything [`calibrate`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The method's name.
    pub method: String,
    /// `distance` (SimHash) or `estimated similarity` (MinHash).
    pub score: &'static str,
    /// Documents scored.
    pub documents: usize,
    /// Pairs scored (all of them).
    pub pairs: u64,
    /// Candidate pairs (see the module docs).
    pub candidates: u64,
    /// Random pairs sampled.
    pub random: u64,
    /// The histogram of candidate and random pair scores.
    pub histogram: Vec<Bin>,
    /// Positives of the truth among the documents scored (`None` without truth).
    pub positives: Option<u64>,
    /// Precision, recall and F1 per setting (empty without truth).
    pub sweep: Vec<SweepRow>,
    /// The recommended setting.
    pub recommendation: Recommendation,
    /// MinHash: the S-curve.
    pub s_curve: Option<SCurve>,
}

impl Calibration {
    /// What the setting is called: `k` (SimHash) or `threshold` (MinHash).
    pub fn setting_name(&self) -> &'static str {
        if self.score == "distance" {
            "k"
        } else {
            "threshold"
        }
    }

    /// Every number as one JSON object, as `neardup calibrate` writes `calibration.json` (and
    /// `neardup.calibrate` returns it); `read` is how many documents were read before sampling.
    pub fn to_json(&self, read: usize) -> Value {
        let sweep_json = |r: &SweepRow| {
            json!({
                "setting": r.setting, "detected": r.detected, "true_positives": r.true_positives,
                "precision": r.precision, "recall": r.recall, "f1": r.f1,
            })
        };
        json!({
            "method": self.method,
            "score": self.score,
            "documents_read": read,
            "documents": self.documents,
            "pairs": self.pairs,
            "candidates": self.candidates,
            "random": self.random,
            "histogram": self.histogram.iter().map(|b| json!({
                "lo": b.lo, "hi": b.hi, "candidates": b.candidates, "random": b.random
            })).collect::<Vec<_>>(),
            "positives": self.positives,
            "sweep": self.sweep.iter().map(sweep_json).collect::<Vec<_>>(),
            "recommendation": {
                "setting_name": self.setting_name(),
                "setting": self.recommendation.setting,
                "why": self.recommendation.why,
                "row": self.recommendation.row.as_ref().map(sweep_json),
            },
            "s_curve": self.s_curve.as_ref().map(|c| json!({
                "banding": c.banding.to_string(),
                "bands": c.banding.bands,
                "threshold": c.threshold,
                "by_truth": c.by_truth,
                "observed": c.observed.iter().map(|&(s, all, shared)| json!({
                    "similarity": s, "pairs": all, "sharing_a_band": shared
                })).collect::<Vec<_>>(),
            })),
        })
    }
}

/// Keeps `n` of `docs` chosen uniformly by `seed` (all of them if there are fewer), in their order. Give
/// them in an order that does not depend on how they were read (`neardup calibrate` sorts by id), and the
/// same documents give the same sample in every front door.
pub fn sample<T>(docs: Vec<T>, n: usize, seed: u64) -> Vec<T> {
    if docs.len() <= n {
        return docs;
    }
    // Each document's key is a hash of its position and the seed; the n smallest keys are kept.
    let key = |i: usize| {
        let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by_key(|&i| key(i));
    let mut keep = vec![false; docs.len()];
    for &i in &order[..n] {
        keep[i] = true;
    }
    docs.into_iter()
        .zip(keep)
        .filter_map(|(d, k)| k.then_some(d))
        .collect()
}

/// The thresholds swept for MinHash.
pub const THRESHOLDS: [f64; 10] = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];

/// Scores every pair of `sketches` (one method) and measures what each setting would report. `progress` is
/// called with the fraction done (0..=1) now and then; when it breaks, the scoring stops with
/// [`Error::Stopped`].
pub fn calibrate(
    method: Method,
    ids: &[String],
    sketches: &[Sketch],
    truth: Option<&Truth>,
    settings: &Settings,
    mut progress: impl FnMut(f64) -> ControlFlow<()>,
) -> Result<Calibration, Error> {
    let mut progress = |fraction: f64| match progress(fraction) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(Error::Stopped),
    };
    if ids.len() != sketches.len() {
        return Err(Error::Unsupported {
            what: "one id per sketch".to_owned(),
        });
    }
    if ids.len() < 2 {
        return Err(Error::Unsupported {
            what: format!(
                "calibration needs at least two documents, got {}",
                ids.len()
            ),
        });
    }
    let mut sorted: Vec<&String> = ids.iter().collect();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::DuplicateId { id: w[0].clone() });
    }
    for s in sketches {
        let m = s.method()?;
        if m != method {
            return Err(Error::MethodMismatch {
                left: method.name(),
                right: m.name(),
            });
        }
    }
    let n = ids.len();
    let total = n as u64 * (n as u64 - 1) / 2;
    let random = random_pairs(n, settings.random_pairs, settings.seed);
    let positive = |i: usize, j: usize| {
        truth
            .and_then(|t| t.get(&ids[i], &ids[j]))
            .is_some_and(|s| s >= settings.truth_threshold)
    };
    let positives = truth.map(|t| {
        let index: HashSet<&str> = ids.iter().map(String::as_str).collect();
        t.pairs
            .iter()
            .filter(|((a, b), s)| {
                **s >= settings.truth_threshold
                    && index.contains(a.as_str())
                    && index.contains(b.as_str())
            })
            .count() as u64
    });
    match method {
        Method::SimHash(scheme) => {
            let fps: Vec<u64> = sketches
                .iter()
                .map(|s| s.fingerprint().map_or(0, |f| f.bits()))
                .collect();
            let max_k = crate::schemes::MAX_K;
            // Pairs per distance 0..=max_k, and positives among them.
            let (mut within, mut hits) = (
                vec![0u64; max_k as usize + 1],
                vec![0u64; max_k as usize + 1],
            );
            for i in 0..n {
                if i % 64 == 0 {
                    progress(done(i, n))?;
                }
                for j in i + 1..n {
                    let d = (fps[i] ^ fps[j]).count_ones();
                    if d <= max_k {
                        within[d as usize] += 1;
                        hits[d as usize] += u64::from(positive(i, j));
                    }
                }
            }
            progress(1.0)?;
            let bits = scheme.bits();
            let mut histogram: Vec<Bin> = (0..=bits)
                .map(|d| Bin {
                    lo: d as f64,
                    hi: d as f64,
                    candidates: within.get(d as usize).copied().unwrap_or(0),
                    random: 0,
                })
                .collect();
            for &(i, j) in &random {
                histogram[(fps[i] ^ fps[j]).count_ones() as usize].random += 1;
            }
            let sweep: Vec<SweepRow> = match positives {
                Some(p) => (0..=max_k)
                    .map(|k| {
                        let detected = within[..=k as usize].iter().sum();
                        let tp = hits[..=k as usize].iter().sum();
                        row(k as f64, detected, tp, p)
                    })
                    .collect(),
                None => Vec::new(),
            };
            let recommendation = recommend(&sweep, settings).unwrap_or_else(|| {
                // No truth: the largest k at which random pairs are rarer than one in a thousand.
                let mut cumulative = 0;
                let mut k = 0;
                for (d, bin) in histogram.iter().enumerate().take(max_k as usize + 1) {
                    cumulative += bin.random;
                    if (cumulative as f64) < random.len() as f64 / 1000.0 {
                        k = d;
                    }
                }
                Recommendation {
                    setting: k as f64,
                    row: None,
                    why: format!(
                        "no truth: the largest k at which fewer than 0.1% of {} random pairs are within k",
                        random.len()
                    ),
                }
            });
            Ok(Calibration {
                method: method.name(),
                score: "distance",
                documents: n,
                pairs: total,
                candidates: within.iter().sum(),
                random: random.len() as u64,
                histogram,
                positives,
                sweep,
                recommendation,
                s_curve: None,
            })
        }
        Method::MinHash(scheme) => {
            let sigs: Vec<&[u32]> = sketches
                .iter()
                .map(|s| s.signature().map_or(&[][..], |s| s.values()))
                .collect();
            let values = scheme.values();
            let weights = default_weights(Verification::Estimate);
            let band = |t: f64| optimize(t, values, weights.0, weights.1).map_err(unsupported);
            let bandings: Vec<Banding> = THRESHOLDS
                .iter()
                .map(|&t| band(t))
                .collect::<Result<_, _>>()?;
            let curve_banding = band(settings.threshold)?;
            let bins = 20usize;
            let bin_of = |s: f64| ((s * bins as f64) as usize).min(bins - 1);
            let mut histogram: Vec<Bin> = (0..bins)
                .map(|b| Bin {
                    lo: b as f64 / bins as f64,
                    hi: (b + 1) as f64 / bins as f64,
                    candidates: 0,
                    random: 0,
                })
                .collect();
            let (mut detected, mut hits) =
                (vec![0u64; THRESHOLDS.len()], vec![0u64; THRESHOLDS.len()]);
            let mut observed = vec![(0u64, 0u64); bins];
            let mut candidates = 0u64;
            for i in 0..n {
                if i % 16 == 0 {
                    progress(done(i, n))?;
                }
                for j in i + 1..n {
                    let (x, y) = (sigs[i], sigs[j]);
                    let estimate = neardup_index::lsh::similarity(x, y);
                    let truth_similarity = truth.and_then(|t| t.get(&ids[i], &ids[j]));
                    // Pairs below every threshold's reach are neither candidates nor detected: skip the
                    // band checks (most pairs).
                    let shares = |b: &Banding| {
                        (0..b.bands).any(|k| x[b.band_range(k)] == y[b.band_range(k)])
                    };
                    if shares(&bandings[0]) {
                        candidates += 1;
                        histogram[bin_of(estimate)].candidates += 1;
                    }
                    let is_positive = positive(i, j);
                    for (t, (&threshold, banding)) in THRESHOLDS.iter().zip(&bandings).enumerate() {
                        if estimate >= threshold && shares(banding) {
                            detected[t] += 1;
                            hits[t] += u64::from(is_positive);
                        }
                    }
                    // The S-curve's observations: by the truth's similarity where the truth lists the pair,
                    // else (no truth) by the estimate. Pairs the truth does not list are left out: their
                    // similarity is unknown.
                    let x_value = match truth {
                        Some(_) => truth_similarity,
                        None => Some(estimate),
                    };
                    if let Some(s) = x_value {
                        let o = &mut observed[bin_of(s)];
                        o.0 += 1;
                        o.1 += u64::from(shares(&curve_banding));
                    }
                }
            }
            progress(1.0)?;
            for &(i, j) in &random {
                histogram[bin_of(neardup_index::lsh::similarity(sigs[i], sigs[j]))].random += 1;
            }
            let sweep: Vec<SweepRow> = match positives {
                Some(p) => THRESHOLDS
                    .iter()
                    .enumerate()
                    .map(|(t, &threshold)| row(threshold, detected[t], hits[t], p))
                    .collect(),
                None => Vec::new(),
            };
            let recommendation = recommend(&sweep, settings).unwrap_or_else(|| Recommendation {
                setting: curve_banding.midpoint(),
                row: None,
                why: format!(
                    "no truth: the similarity at which the S-curve of {curve_banding} crosses 1/2; give ground \
                     truth to choose by precision and recall"
                ),
            });
            Ok(Calibration {
                method: method.name(),
                score: "estimated similarity",
                documents: n,
                pairs: total,
                candidates,
                random: random.len() as u64,
                histogram,
                positives,
                sweep,
                recommendation,
                s_curve: Some(SCurve {
                    banding: curve_banding,
                    threshold: settings.threshold,
                    by_truth: truth.is_some(),
                    observed: observed
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| o.0 > 0)
                        .map(|(b, &(all, shared))| ((b as f64 + 0.5) / bins as f64, all, shared))
                        .collect(),
                }),
            })
        }
        Method::BottomK(params) => Err(crate::schemes::pair_by_pair(&params, "calibrated")),
    }
}

fn done(i: usize, n: usize) -> f64 {
    // Row i of the triangle leaves (n − i)² / 2 pairs of n² / 2.
    let left = (n - i) as f64 / n as f64;
    1.0 - left * left
}

fn unsupported(e: impl std::fmt::Display) -> Error {
    Error::Unsupported {
        what: e.to_string(),
    }
}

fn row(setting: f64, detected: u64, tp: u64, positives: u64) -> SweepRow {
    let precision = if detected == 0 {
        1.0
    } else {
        tp as f64 / detected as f64
    };
    let recall = if positives == 0 {
        1.0
    } else {
        tp as f64 / positives as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    SweepRow {
        setting,
        detected,
        true_positives: tp,
        precision,
        recall,
        f1,
    }
}

/// The setting for the target (ties: the earlier row), or the best F1.
fn recommend(sweep: &[SweepRow], settings: &Settings) -> Option<Recommendation> {
    let best = |rows: Vec<&SweepRow>, key: fn(&SweepRow) -> f64| -> Option<SweepRow> {
        rows.into_iter()
            .fold(None, |best: Option<&SweepRow>, r| match best {
                Some(b) if key(b) >= key(r) => Some(b),
                _ => Some(r),
            })
            .copied()
    };
    if sweep.is_empty() {
        return None;
    }
    let (chosen, why) = if let Some(p) = settings.target_precision {
        let rows: Vec<&SweepRow> = sweep.iter().filter(|r| r.precision >= p).collect();
        match best(rows, |r| r.recall) {
            Some(r) => (r, format!("the best recall at precision ≥ {p}")),
            None => (
                best(sweep.iter().collect(), |r| r.precision)?,
                format!("no setting reaches precision {p}: the most precise"),
            ),
        }
    } else if let Some(target) = settings.target_recall {
        let rows: Vec<&SweepRow> = sweep.iter().filter(|r| r.recall >= target).collect();
        match best(rows, |r| r.precision) {
            Some(r) => (r, format!("the best precision at recall ≥ {target}")),
            None => (
                best(sweep.iter().collect(), |r| r.recall)?,
                format!("no setting reaches recall {target}: the best recall"),
            ),
        }
    } else {
        (
            best(sweep.iter().collect(), |r| r.f1)?,
            "the best F1".to_owned(),
        )
    };
    Some(Recommendation {
        setting: chosen.setting,
        row: Some(chosen),
        why,
    })
}

/// Up to `count` distinct pairs (i < j) of `n` documents, drawn uniformly with a seeded generator
/// (splitmix64), sorted: the same for the same inputs on every machine.
fn random_pairs(n: usize, count: usize, seed: u64) -> Vec<(usize, usize)> {
    let total = n as u64 * (n as u64 - 1) / 2;
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut pairs = HashSet::new();
    if count as u64 >= total {
        for i in 0..n {
            for j in i + 1..n {
                pairs.insert((i, j));
            }
        }
    } else {
        while pairs.len() < count {
            let (i, j) = ((next() % n as u64) as usize, (next() % n as u64) as usize);
            if i != j {
                pairs.insert((i.min(j), i.max(j)));
            }
        }
    }
    let mut pairs: Vec<(usize, usize)> = pairs.into_iter().collect();
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MinHashScheme, Scheme};

    /// Six documents (two families of near-copies and one apart), `d0`…`d5`, and their sketches.
    fn corpus(method: Method) -> (Vec<String>, Vec<Sketch>) {
        let texts = [
            "the parser reads every file in the directory and reports errors with line numbers",
            "the parser reads every file in the directory and reports errors with line numbers today",
            "the parser reads each file in the folder and reports errors with their line numbers",
            "release notes: a crash when opening empty files is fixed, and the installer is smaller",
            "release notes: a crash when opening empty files is fixed; the installer is smaller now",
            "an unrelated page about gardening, tomatoes, soil and the weather in spring",
        ];
        let sketches = texts
            .iter()
            .map(|t| method.sketch_text(t).unwrap())
            .collect();
        (
            (0..texts.len()).map(|i| format!("d{i}")).collect(),
            sketches,
        )
    }

    /// [`calibrate`], run to its end.
    fn run(
        method: Method,
        ids: &[String],
        sketches: &[Sketch],
        truth: Option<&Truth>,
        settings: &Settings,
    ) -> Calibration {
        calibrate(method, ids, sketches, truth, settings, |_| {
            ControlFlow::Continue(())
        })
        .unwrap()
    }

    #[test]
    fn simhash_sweep_counts_pairs_within_each_k() {
        let method = Method::SimHash(Scheme::SimhashDocV1);
        let (ids, sketches) = corpus(method);
        let truth = Truth::parse(
            "doc_a\tdoc_b\tjaccard\nd0\td1\t0.9\nd3\td4\t0.85\nd0\td2\t0.3\n",
            "t.tsv",
        )
        .unwrap();
        let report = run(method, &ids, &sketches, Some(&truth), &Settings::default());
        assert_eq!(report.pairs, 15);
        assert_eq!(report.positives, Some(2));
        // Brute force: pairs within k, and positives among them.
        let fps: Vec<u64> = sketches
            .iter()
            .map(|s| s.fingerprint().unwrap().bits())
            .collect();
        for row in &report.sweep {
            let k = row.setting as u32;
            let mut detected = 0;
            let mut tp = 0;
            for i in 0..6 {
                for j in i + 1..6 {
                    if (fps[i] ^ fps[j]).count_ones() <= k {
                        detected += 1;
                        tp += u64::from((i, j) == (0, 1) || (i, j) == (3, 4));
                    }
                }
            }
            assert_eq!(
                (row.detected, row.true_positives),
                (detected, tp),
                "k = {k}"
            );
        }
        // All 15 pairs are the random sample (fewer pairs than asked for); the histogram holds each once.
        assert_eq!(report.random, 15);
        assert_eq!(report.histogram.iter().map(|b| b.random).sum::<u64>(), 15);
        let best = report.sweep.iter().map(|r| r.f1).fold(0.0, f64::max);
        assert_eq!(report.recommendation.row.unwrap().f1, best);
    }

    #[test]
    fn minhash_sweep_and_s_curve() {
        let method = Method::MinHash(MinHashScheme::oph(64, 0, 2).unwrap());
        let (ids, sketches) = corpus(method);
        let truth = Truth::parse("d0\td1\t1\nd3\td4\t1\nd0\td5\t0\n", "labels.tsv").unwrap();
        let settings = Settings {
            target_recall: Some(1.0),
            ..Settings::default()
        };
        let report = run(method, &ids, &sketches, Some(&truth), &settings);
        assert_eq!(report.sweep.len(), THRESHOLDS.len());
        // Detected pairs shrink as the threshold grows.
        assert!(
            report
                .sweep
                .windows(2)
                .all(|w| w[0].detected >= w[1].detected)
        );
        let curve = report.s_curve.unwrap();
        assert!(curve.by_truth);
        // Three truth pairs observed.
        assert_eq!(curve.observed.iter().map(|o| o.1).sum::<u64>(), 3);
        let rec = report.recommendation.row.unwrap();
        assert!(rec.recall >= 1.0 || report.recommendation.why.starts_with("no setting"));
    }

    #[test]
    fn truth_files_are_checked() {
        assert!(
            Truth::parse("a\tb\n", "x.tsv")
                .unwrap_err()
                .to_string()
                .contains("x.tsv, line 1")
        );
        assert!(Truth::parse("a\tb\t2\n", "x.tsv").is_err());
        assert!(
            Truth::parse("a\tb\t1\nc\td\tmaybe\n", "x.tsv")
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        let t = Truth::parse("id_a\tid_b\tsimilarity\nb\ta\t0.5\n", "x.tsv").unwrap();
        assert_eq!((t.len(), t.get("a", "b")), (1, Some(0.5)));
    }

    #[test]
    fn truth_from_pairs_is_the_files_truth_and_names_a_bad_pair() {
        let pairs = |v: &[(&str, &str, f64)]| {
            v.iter()
                .map(|&(a, b, s)| (a.to_owned(), b.to_owned(), s))
                .collect::<Vec<_>>()
        };
        let t = Truth::from_pairs(pairs(&[("b", "a", 0.5), ("c", "d", 1.0)]), "truth").unwrap();
        let f = Truth::parse("a\tb\t0.5\nd\tc\t1\n", "x.tsv").unwrap();
        assert_eq!(t.pairs, f.pairs);
        for bad in [1.5, -0.1, f64::NAN] {
            let e = Truth::from_pairs(pairs(&[("a", "b", 1.0), ("c", "d", bad)]), "truth")
                .unwrap_err()
                .to_string();
            assert!(e.contains("truth, pair 1 (\"c\", \"d\")"), "{e}");
        }
    }

    #[test]
    fn a_sample_depends_on_the_seed_and_keeps_the_order() {
        let docs: Vec<usize> = (0..100).collect();
        let a = sample(docs.clone(), 10, 0);
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a, sample(docs.clone(), 10, 0));
        assert_ne!(a, sample(docs.clone(), 10, 1));
        assert_eq!(sample(docs.clone(), 100, 3), docs);
    }

    #[test]
    fn a_progress_that_breaks_stops_the_scoring() {
        for method in [
            Method::SimHash(Scheme::SimhashDocV1),
            Method::MinHash(MinHashScheme::oph(64, 0, 2).unwrap()),
        ] {
            let (ids, sketches) = corpus(method);
            let mut calls = 0;
            let stopped = calibrate(method, &ids, &sketches, None, &Settings::default(), |_| {
                calls += 1;
                ControlFlow::Break(())
            });
            assert!(matches!(stopped, Err(Error::Stopped)));
            assert_eq!(calls, 1);
        }
    }

    #[test]
    fn the_json_holds_every_number() {
        let method = Method::MinHash(MinHashScheme::oph(64, 0, 2).unwrap());
        let (ids, sketches) = corpus(method);
        let truth = Truth::parse("d0\td1\t1\n", "t.tsv").unwrap();
        let report = run(method, &ids, &sketches, Some(&truth), &Settings::default());
        let json = report.to_json(9);
        assert_eq!(json["documents_read"], 9);
        assert_eq!(json["documents"], 6);
        assert_eq!(json["recommendation"]["setting_name"], "threshold");
        assert_eq!(json["sweep"].as_array().unwrap().len(), THRESHOLDS.len());
        assert_eq!(json["sweep"][0]["detected"], report.sweep[0].detected);
        assert_eq!(json["histogram"].as_array().unwrap().len(), 20);
        assert_eq!(
            json["s_curve"]["bands"],
            report.s_curve.unwrap().banding.bands
        );
    }

    #[test]
    fn random_pairs_are_distinct_and_seeded() {
        let a = random_pairs(100, 50, 7);
        assert_eq!(a, random_pairs(100, 50, 7));
        assert_eq!(a.len(), 50);
        assert!(a.iter().all(|&(i, j)| i < j && j < 100));
        assert_eq!(random_pairs(4, 100, 0).len(), 6);
    }
}

//! Why two documents match, or do not: what they share, where they differ, and how the sketch saw it.
//!
//! [`explain_texts`] takes two extracted texts and a [`Method`] and returns an [`Explanation`]:
//!
//! * **features**: the features the sketch summarizes, shared and unique, with their counts in each
//!   document: doc-v1 tokens for SimHash (term frequencies), the scheme's shingles for MinHash;
//! * **the estimate beside the exact measures**: SimHash's distance d, its similarity 1 − d/64 and the cosine
//!   it estimates, cos(π·d/64) (Charikar: a bit differs with probability θ/π); MinHash's estimated
//!   similarity; and exactly, the cosine of the term frequencies, the Jaccard similarity of the word
//!   n-gram sets, and for MinHash the measure its scheme estimates;
//! * **the verdict** at the scheme's threshold (k bits for SimHash, a similarity for MinHash);
//! * **SimHash bits**: each bit where the fingerprints differ, its counter in each document (Σ over tokens
//!   of count × ±1, the sign of the token hash's bit; the bit is 1 when the counter is positive) and the
//!   tokens whose change of count pushed it across most;
//! * **the diff**: the extracted texts aligned line by line (hunks with context), changed lines side by
//!   side.
//!
//! [`explain_sketches`] does what can be done without text (two stored index entries): the estimate, the
//! verdict and the differing bits, without features or attributions. [`Explanation::to_json`] writes either
//! as one JSON object, the same from every front door (`neardup explain --json`, Python's
//! `neardup.explain`).
//!
//! ```
//! use neardup::explain::{explain_texts, Options};
//! use neardup::{Method, Scheme};
//! let method = Method::SimHash(Scheme::SimhashDocV1);
//! let a = "The quick brown fox jumps over the lazy dog.\nIt was a sunny day.";
//! let b = "The quick brown fox jumps over the lazy cat.\nIt was a sunny day.";
//! let why = explain_texts(method, a, b, &Options::default())?;
//! let features = why.features.as_ref().unwrap();
//! assert!(features.only_a.iter().any(|f| f.text == "dog"));
//! assert!(features.only_b.iter().any(|f| f.text == "cat"));
//! assert_eq!(why.diff.as_ref().unwrap().hunks[0].rows[0].a.as_ref().unwrap().1, "The quick brown fox jumps over the lazy dog.");
//! # Ok::<(), neardup::Error>(())
//! ```

use crate::error::Error;
use crate::minhash::shingle_set;
use crate::profile::{Measure, Profile, cosine};
use crate::sketch::{Method, Sketch};
use neardup_sketch::lookup3::jenkins64_window;
use neardup_sketch::shingle::Features;
use neardup_text::profile::doc_v1;
use serde_json::{Value, json};
use similar::{Algorithm, DiffOp};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What to compute and how much to keep.
#[derive(Clone, Debug)]
pub struct Options {
    /// SimHash: the largest distance (inclusive) of a near-duplicate, for the verdict.
    pub k: u32,
    /// MinHash: the similarity of a near-duplicate, for the verdict.
    pub threshold: f64,
    /// The word n-gram length of the exact Jaccard similarity reported for SimHash (MinHash uses its
    /// scheme's shingles).
    pub shingle: u32,
    /// How many features to keep in each list (shared, only in a, only in b), and per differing bit.
    pub top: usize,
    /// Lines of context around each changed span of the diff.
    pub context: usize,
    /// The most diff rows kept (the rest are counted in [`Diff::omitted_rows`]).
    pub max_rows: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            k: 3,
            threshold: crate::dedup::DEFAULT_THRESHOLD,
            shingle: 3,
            top: 20,
            context: 2,
            max_rows: 400,
        }
    }
}

impl Options {
    /// The default options with the verdict judged as the user asked: at `k` bits for SimHash (0 to
    /// [`MAX_K`](crate::schemes::MAX_K), default 3), at a `threshold` for the other methods (default 0.8).
    /// The setting of the other kind is refused, as `dedup` refuses it.
    pub fn judged(
        method: crate::Method,
        k: Option<u32>,
        threshold: Option<f64>,
    ) -> Result<Options, crate::dedup::SettingsError> {
        use crate::dedup::SettingsError;
        let defaults = Options::default();
        match method {
            crate::Method::SimHash(_) if threshold.is_some() => {
                Err(SettingsError::ThresholdForSimHash)
            }
            crate::Method::SimHash(_) => match k.unwrap_or(defaults.k) {
                k if k > crate::schemes::MAX_K => Err(SettingsError::KOutOfRange { k }),
                k => Ok(Options { k, ..defaults }),
            },
            _ if k.is_some() => Err(SettingsError::KForMinHash {
                method: method.to_string(),
            }),
            _ => Ok(Options {
                threshold: threshold.unwrap_or(defaults.threshold),
                ..defaults
            }),
        }
    }
}

/// One feature (a token or a shingle) and how often it occurs in each document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feature {
    /// The token, or the shingle's tokens joined by one space (or its characters, for character n-grams).
    pub text: String,
    /// Occurrences in document a.
    pub a: u64,
    /// Occurrences in document b.
    pub b: u64,
}

/// The features of both documents, shared and unique.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureLists {
    /// `token` (SimHash: doc-v1 tokens, the fingerprint's features) or `shingle` (MinHash: the scheme's).
    pub kind: &'static str,
    /// Distinct features of a, of b, and in both.
    pub distinct_a: usize,
    /// Distinct features of b.
    pub distinct_b: usize,
    /// Distinct features in both.
    pub distinct_shared: usize,
    /// Shared features, most frequent (a + b) first, then by text; at most [`Options::top`].
    pub shared: Vec<Feature>,
    /// Features only in a, most frequent first; at most [`Options::top`].
    pub only_a: Vec<Feature>,
    /// Features only in b, most frequent first; at most [`Options::top`].
    pub only_b: Vec<Feature>,
}

/// The estimate the sketches give.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Estimate {
    /// SimHash: the Hamming distance, the similarity 1 − d/bits, and the cosine it estimates, cos(π·d/bits).
    SimHash {
        /// Bits that differ.
        distance: u32,
        /// 1 − d/bits.
        similarity: f64,
        /// cos(π·d/bits).
        cosine: f64,
    },
    /// MinHash: the estimated similarity (the fraction of signature values that agree).
    MinHash {
        /// The measure estimated.
        measure: Measure,
        /// Its estimate.
        similarity: f64,
    },
}

/// Exact similarities of the two texts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exact {
    /// The cosine of the doc-v1 term-frequency vectors (the tokens SimHash summarizes).
    pub cosine: f64,
    /// The Jaccard similarity of the word n-gram sets ([`Exact::shingle`] words).
    pub jaccard: f64,
    /// The n of [`Exact::jaccard`].
    pub shingle: u32,
    /// MinHash: the measure the scheme estimates, exactly (Jaccard, weighted or probability Jaccard of its
    /// shingles).
    pub scheme: Option<(Measure, f64)>,
}

/// Whether the two are near-duplicates at the scheme's threshold, and by which rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Near-duplicates or not.
    pub near_duplicate: bool,
    /// The rule, in words: `distance 2 <= k = 3`, `jaccard 0.71 < 0.8`.
    pub rule: String,
}

/// One token's push on a SimHash bit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// The token.
    pub text: String,
    /// Its count in a.
    pub a: u64,
    /// Its count in b.
    pub b: u64,
    /// +1 when the token's hash has the bit set (each occurrence adds 1 to the counter), −1 when not.
    pub sign: i8,
    /// (count in a − count in b) × sign: how far this token moved a's counter from b's.
    pub shift: i64,
}

/// A bit where two fingerprints differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bit {
    /// The bit's number in the spec: 0 is the fingerprint value's most significant bit.
    pub bit: u32,
    /// Its value in a.
    pub a: bool,
    /// Its value in b.
    pub b: bool,
    /// a's counter for the bit (the bit is 1 when it is positive); `None` without text.
    pub counter_a: Option<i64>,
    /// b's counter.
    pub counter_b: Option<i64>,
    /// The tokens that pushed a's counter and b's apart in the direction of the difference, largest shift
    /// first (at most [`Options::top`]).
    pub pushed: Vec<Push>,
}

/// How a diff row's two sides relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowTag {
    /// The same line in both.
    Equal,
    /// A line of a replaced by a line of b.
    Changed,
    /// A line only in a.
    Deleted,
    /// A line only in b.
    Inserted,
}

impl RowTag {
    /// `equal`, `changed`, `deleted`, `inserted`.
    pub fn name(self) -> &'static str {
        match self {
            RowTag::Equal => "equal",
            RowTag::Changed => "changed",
            RowTag::Deleted => "deleted",
            RowTag::Inserted => "inserted",
        }
    }
}

/// One aligned row: a line of a beside a line of b (1-based line numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// How the sides relate.
    pub tag: RowTag,
    /// a's line number and text.
    pub a: Option<(usize, String)>,
    /// b's line number and text.
    pub b: Option<(usize, String)>,
}

/// A changed span with its context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// The aligned rows.
    pub rows: Vec<Row>,
}

/// The aligned line diff of the two texts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    /// Lines of a and of b.
    pub lines_a: usize,
    /// Lines of b.
    pub lines_b: usize,
    /// Lines equal in both.
    pub equal_lines: usize,
    /// The hunks (changed spans with context), in order.
    pub hunks: Vec<Hunk>,
    /// Rows left out after [`Options::max_rows`].
    pub omitted_rows: usize,
}

/// Everything [`explain_texts`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The method's name with its parameters.
    pub scheme: String,
    /// The sketches, in their text form.
    pub sketch_a: String,
    /// b's sketch.
    pub sketch_b: String,
    /// What the sketches estimate.
    pub estimate: Estimate,
    /// The exact measures (`None` without text).
    pub exact: Option<Exact>,
    /// The verdict at the scheme's threshold.
    pub verdict: Verdict,
    /// Shared and unique features (`None` without text).
    pub features: Option<FeatureLists>,
    /// SimHash: the differing bits (empty for MinHash).
    pub bits: Vec<Bit>,
    /// The aligned diff (`None` without text).
    pub diff: Option<Diff>,
}

/// Explains two extracted texts under `method` (SimHash or MinHash; bottom-k samples are refused).
pub fn explain_texts(
    method: Method,
    a: &str,
    b: &str,
    options: &Options,
) -> Result<Explanation, Error> {
    if let Method::BottomK(params) = method {
        return Err(crate::schemes::pair_by_pair(&params, "explained"));
    }
    let (sa, profile_a) = method.sketch_text_with_profile(a)?;
    let (sb, profile_b) = method.sketch_text_with_profile(b)?;
    let mut why = explain_sketches(&sa, &sb, options)?;
    let (tokens_a, tokens_b) = (token_counts(a), token_counts(b));
    let term_frequencies = |t: &BTreeMap<String, (u64, u64)>| {
        let counts: Vec<u64> = t
            .values()
            .flat_map(|&(n, h)| (0..n).map(move |_| h))
            .collect();
        Profile::from_hashes(counts, Measure::Cosine)
    };
    let cos = match (term_frequencies(&tokens_a), term_frequencies(&tokens_b)) {
        (Profile::Counts(x), Profile::Counts(y)) => cosine(&x, &y),
        _ => unreachable!("counts for the cosine"),
    };
    let (shingle, scheme_exact) = match (method, &profile_a, &profile_b) {
        (Method::MinHash(scheme), Some(pa), Some(pb)) => {
            let n = match scheme.params().features {
                Features::Words(n) => n,
                _ => options.shingle,
            };
            (
                n,
                Some((scheme.measure(), pa.similarity(pb, scheme.measure()))),
            )
        }
        _ => (options.shingle, None),
    };
    let words = Features::Words(shingle.max(1));
    let jaccard = crate::minhash::exact_jaccard(&shingle_set(a, words), &shingle_set(b, words));
    why.exact = Some(Exact {
        cosine: cos,
        jaccard,
        shingle: shingle.max(1),
        scheme: scheme_exact,
    });
    match method {
        Method::SimHash(_) => {
            for bit in &mut why.bits {
                attribute(bit, &tokens_a, &tokens_b, options.top);
            }
            why.features = Some(compare_features("token", &tokens_a, &tokens_b, options.top));
        }
        Method::MinHash(scheme) => {
            let features = scheme.params().features;
            let (x, y) = (shingle_texts(a, features), shingle_texts(b, features));
            why.features = Some(compare_features("shingle", &x, &y, options.top));
            // The verdict follows the exact measure, as verified deduplication does.
            if let Some((measure, value)) = scheme_exact {
                why.verdict = threshold_verdict(measure, value, options.threshold);
            }
        }
        Method::BottomK(_) => {}
    }
    why.diff = Some(diff(a, b, options));
    Ok(why)
}

/// Explains two sketches without their texts: the estimate, the verdict and (SimHash) the differing bits.
pub fn explain_sketches(a: &Sketch, b: &Sketch, options: &Options) -> Result<Explanation, Error> {
    let similarity = a.similarity(b)?;
    let (estimate, verdict, bits) = match (a, b) {
        (Sketch::Fingerprint(fa), Sketch::Fingerprint(fb)) => {
            let width = fa.scheme().bits();
            let distance = fa.distance(fb)?;
            let estimate = Estimate::SimHash {
                distance,
                similarity,
                cosine: (std::f64::consts::PI * distance as f64 / width as f64).cos(),
            };
            let near = distance <= options.k;
            let verdict = Verdict {
                near_duplicate: near,
                rule: format!(
                    "distance {distance} {} k = {}",
                    if near { "<=" } else { ">" },
                    options.k
                ),
            };
            let differ = fa.bits() ^ fb.bits();
            let bits = (0..width)
                .filter(|&spec| differ >> (width - 1 - spec) & 1 == 1)
                .map(|spec| Bit {
                    bit: spec,
                    a: fa.bits() >> (width - 1 - spec) & 1 == 1,
                    b: fb.bits() >> (width - 1 - spec) & 1 == 1,
                    counter_a: None,
                    counter_b: None,
                    pushed: Vec::new(),
                })
                .collect();
            (estimate, verdict, bits)
        }
        (Sketch::Signature(sig), Sketch::Signature(_)) => {
            let measure = Measure::of_sketch_scheme(sig.params().scheme);
            (
                Estimate::MinHash {
                    measure,
                    similarity,
                },
                threshold_verdict(measure, similarity, options.threshold),
                Vec::new(),
            )
        }
        _ => {
            return Err(Error::Unsupported {
                what: "bottom-k samples are compared with `neardup compare`, not explained"
                    .to_owned(),
            });
        }
    };
    Ok(Explanation {
        scheme: a.method()?.name(),
        sketch_a: a.to_string(),
        sketch_b: b.to_string(),
        estimate,
        exact: None,
        verdict,
        features: None,
        bits,
        diff: None,
    })
}

fn threshold_verdict(measure: Measure, value: f64, threshold: f64) -> Verdict {
    let near = value >= threshold;
    Verdict {
        near_duplicate: near,
        rule: format!(
            "{measure} {value:.4} {} {threshold}",
            if near { ">=" } else { "<" }
        ),
    }
}

/// Each doc-v1 token (the SimHash features) with its count and its hash.
fn token_counts(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    doc_v1::tokenize(text, |token| {
        let s = token.as_str();
        match counts.get_mut(s) {
            Some(entry) => entry.0 += 1,
            None => {
                let hash = jenkins64_window(token.window(), s.len());
                counts.insert(s.to_owned(), (1, hash));
            }
        }
    });
    counts
}

/// Each shingle of the MinHash schemes as text, with its count (the hash slot is unused: 0). Word n-grams of
/// the tokens (numbers kept), or character n-grams of the tokens joined by one space; a text shorter than n
/// gives one shingle of all of it, as the schemes do.
fn shingle_texts(text: &str, features: Features) -> BTreeMap<String, (u64, u64)> {
    let tokens = doc_v1::tokens_keeping_numbers(text);
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut add = |s: String| counts.entry(s).or_insert((0, 0)).0 += 1;
    match features {
        Features::Words(n) => {
            let n = n.max(1) as usize;
            if !tokens.is_empty() && tokens.len() < n {
                add(tokens.join(" "));
            }
            for w in tokens.windows(n) {
                add(w.join(" "));
            }
        }
        Features::Chars(n) => {
            let chars: Vec<char> = tokens.join(" ").chars().collect();
            let n = n.max(1) as usize;
            if !chars.is_empty() && chars.len() < n {
                add(chars.iter().collect());
            }
            for w in chars.windows(n) {
                add(w.iter().collect());
            }
        }
        Features::Tokens | Features::Hashes => tokens.into_iter().for_each(add),
    }
    counts
}

fn compare_features(
    kind: &'static str,
    a: &BTreeMap<String, (u64, u64)>,
    b: &BTreeMap<String, (u64, u64)>,
    top: usize,
) -> FeatureLists {
    let (mut shared, mut only_a, mut only_b) = (Vec::new(), Vec::new(), Vec::new());
    for (text, &(na, _)) in a {
        let nb = b.get(text).map_or(0, |e| e.0);
        let f = Feature {
            text: text.clone(),
            a: na,
            b: nb,
        };
        if nb > 0 {
            shared.push(f)
        } else {
            only_a.push(f)
        }
    }
    for (text, &(nb, _)) in b {
        if !a.contains_key(text) {
            only_b.push(Feature {
                text: text.clone(),
                a: 0,
                b: nb,
            });
        }
    }
    let distinct_shared = shared.len();
    for list in [&mut shared, &mut only_a, &mut only_b] {
        // Most frequent first; the text breaks ties, so the output is the same on every run.
        list.sort_by(|x, y| {
            (y.a + y.b)
                .cmp(&(x.a + x.b))
                .then_with(|| x.text.cmp(&y.text))
        });
        list.truncate(top);
    }
    FeatureLists {
        kind,
        distinct_a: a.len(),
        distinct_b: b.len(),
        distinct_shared,
        shared,
        only_a,
        only_b,
    }
}

/// Fills a differing bit's counters and the tokens that pushed it apart.
fn attribute(
    bit: &mut Bit,
    a: &BTreeMap<String, (u64, u64)>,
    b: &BTreeMap<String, (u64, u64)>,
    top: usize,
) {
    // Spec bit i is the value's bit 63 − i.
    let value_bit = 63 - bit.bit;
    let sign = |hash: u64| if hash >> value_bit & 1 == 1 { 1i64 } else { -1 };
    let counter = |t: &BTreeMap<String, (u64, u64)>| -> i64 {
        t.values().map(|&(n, h)| n as i64 * sign(h)).sum()
    };
    bit.counter_a = Some(counter(a));
    bit.counter_b = Some(counter(b));
    // The direction of the difference: a's counter above b's when a has the 1.
    let direction = if bit.a { 1 } else { -1 };
    let mut pushes: Vec<Push> = Vec::new();
    let mut consider = |text: &str, na: u64, nb: u64, hash: u64| {
        let s = sign(hash);
        let shift = (na as i64 - nb as i64) * s;
        if shift * direction > 0 {
            pushes.push(Push {
                text: text.to_owned(),
                a: na,
                b: nb,
                sign: s as i8,
                shift,
            });
        }
    };
    for (text, &(na, h)) in a {
        consider(text, na, b.get(text).map_or(0, |e| e.0), h);
    }
    for (text, &(nb, h)) in b {
        if !a.contains_key(text) {
            consider(text, 0, nb, h);
        }
    }
    pushes.sort_by(|x, y| {
        y.shift
            .abs()
            .cmp(&x.shift.abs())
            .then_with(|| x.text.cmp(&y.text))
    });
    pushes.truncate(top);
    bit.pushed = pushes;
}

/// The aligned line diff: hunks of changed lines with `context` equal lines around them; a replaced run of
/// lines is set beside its replacement row by row.
fn diff(a: &str, b: &str, options: &Options) -> Diff {
    // A deadline keeps two long, unrelated texts from costing quadratic time: past it the diff is coarser,
    // still correct.
    // Lines without their terminators: a last line without a newline equals the same line with one.
    let old: Vec<&str> = a.lines().collect();
    let new: Vec<&str> = b.lines().collect();
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &old,
        &new,
        Some(Instant::now() + Duration::from_secs(2)),
    );
    let equal_lines = ops
        .iter()
        .map(|op| match *op {
            DiffOp::Equal { len, .. } => len,
            _ => 0,
        })
        .sum();
    let line = |s: &str| s.trim_end_matches('\r').to_owned();
    let mut hunks = Vec::new();
    let (mut kept, mut omitted) = (0usize, 0usize);
    for group in similar::group_diff_ops(ops, options.context) {
        let mut rows = Vec::new();
        for op in group {
            match op {
                DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } => {
                    for i in 0..len {
                        rows.push(Row {
                            tag: RowTag::Equal,
                            a: Some((old_index + i + 1, line(old[old_index + i]))),
                            b: Some((new_index + i + 1, line(new[new_index + i]))),
                        });
                    }
                }
                DiffOp::Delete {
                    old_index, old_len, ..
                } => {
                    for (i, text) in old.iter().enumerate().skip(old_index).take(old_len) {
                        rows.push(Row {
                            tag: RowTag::Deleted,
                            a: Some((i + 1, line(text))),
                            b: None,
                        });
                    }
                }
                DiffOp::Insert {
                    new_index, new_len, ..
                } => {
                    for (j, text) in new.iter().enumerate().skip(new_index).take(new_len) {
                        rows.push(Row {
                            tag: RowTag::Inserted,
                            a: None,
                            b: Some((j + 1, line(text))),
                        });
                    }
                }
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    for r in 0..old_len.max(new_len) {
                        let a =
                            (r < old_len).then(|| (old_index + r + 1, line(old[old_index + r])));
                        let b =
                            (r < new_len).then(|| (new_index + r + 1, line(new[new_index + r])));
                        let tag = match (&a, &b) {
                            (Some(_), Some(_)) => RowTag::Changed,
                            (Some(_), None) => RowTag::Deleted,
                            _ => RowTag::Inserted,
                        };
                        rows.push(Row { tag, a, b });
                    }
                }
            }
        }
        let room = options.max_rows.saturating_sub(kept);
        if rows.len() > room {
            omitted += rows.len() - room;
            rows.truncate(room);
        }
        kept += rows.len();
        if !rows.is_empty() {
            hunks.push(Hunk { rows });
        }
    }
    Diff {
        lines_a: old.len(),
        lines_b: new.len(),
        equal_lines,
        hunks,
        omitted_rows: omitted,
    }
}

// The JSON of an explanation's parts, for [`Explanation::to_json`].
fn estimate_json(e: &Estimate) -> Value {
    match *e {
        Estimate::SimHash {
            distance,
            similarity,
            cosine,
        } => json!({"distance": distance, "similarity": similarity, "cosine": cosine}),
        Estimate::MinHash {
            measure,
            similarity,
        } => json!({"measure": measure.key(), "similarity": similarity}),
    }
}

fn features_json(f: &FeatureLists) -> Value {
    let list = |v: &[Feature]| -> Vec<Value> {
        v.iter()
            .map(|f| json!({"text": f.text, "a": f.a, "b": f.b}))
            .collect()
    };
    json!({
        "kind": f.kind,
        "distinct_a": f.distinct_a,
        "distinct_b": f.distinct_b,
        "distinct_shared": f.distinct_shared,
        "shared": list(&f.shared),
        "only_a": list(&f.only_a),
        "only_b": list(&f.only_b),
    })
}

fn bit_json(bit: &Bit) -> Value {
    json!({
        "bit": bit.bit,
        "a": u8::from(bit.a),
        "b": u8::from(bit.b),
        "counter_a": bit.counter_a,
        "counter_b": bit.counter_b,
        "pushed": bit.pushed.iter().map(|p| json!({
            "token": p.text, "a": p.a, "b": p.b, "sign": p.sign, "shift": p.shift
        })).collect::<Vec<_>>(),
    })
}

fn diff_json(d: &Diff) -> Value {
    let side = |s: &Option<(usize, String)>| s.as_ref().map(|(n, t)| json!({"line": n, "text": t}));
    json!({
        "lines_a": d.lines_a,
        "lines_b": d.lines_b,
        "equal_lines": d.equal_lines,
        "omitted_rows": d.omitted_rows,
        "hunks": d.hunks.iter().map(|h| h.rows.iter().map(|r| json!({
            "tag": r.tag.name(), "a": side(&r.a), "b": side(&r.b)
        })).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

impl Explanation {
    /// The explanation as one JSON object, as `neardup explain --json` writes it (and `neardup.explain`
    /// returns it): each document's `input` (its name, or null), its sketch, the scheme, the estimate, the
    /// exact measures, the verdict, the features, the differing bits and the diff.
    pub fn to_json(&self, a: Option<&str>, b: Option<&str>) -> Value {
        let why = self;
        json!({
            "a": {"input": a, "sketch": why.sketch_a},
            "b": {"input": b, "sketch": why.sketch_b},
            "scheme": why.scheme,
            "estimate": estimate_json(&why.estimate),
            "exact": why.exact.map(|e| json!({
                "cosine": e.cosine,
                "jaccard": e.jaccard,
                "jaccard_ngram": e.shingle,
                "scheme_measure": e.scheme.map(|(m, _)| m.key()),
                "scheme_value": e.scheme.map(|(_, v)| v),
            })),
            "verdict": {"near_duplicate": why.verdict.near_duplicate, "rule": why.verdict.rule},
            "features": why.features.as_ref().map(features_json),
            "bits": why.bits.iter().map(bit_json).collect::<Vec<_>>(),
            "diff": why.diff.as_ref().map(diff_json),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MinHashScheme, Scheme};

    const A: &str = "Release notes\nFixed a crash when opening empty files.\nThe parser is faster.\nThanks to all contributors.";
    const B: &str = "Release notes\nFixed a crash when opening empty folders.\nThe parser is faster.\nThanks to all contributors.\nNew: dark mode.";

    #[test]
    fn simhash_bits_are_explained_by_their_counters() {
        let method = Method::SimHash(Scheme::SimhashDocV1);
        let why = explain_texts(method, A, B, &Options::default()).unwrap();
        let Estimate::SimHash { distance, .. } = why.estimate else {
            panic!("a SimHash estimate")
        };
        assert_eq!(why.bits.len() as u32, distance);
        assert!(distance > 0);
        for bit in &why.bits {
            // The counters decide the bits: positive means 1.
            assert_eq!(bit.counter_a.unwrap() > 0, bit.a, "bit {}", bit.bit);
            assert_eq!(bit.counter_b.unwrap() > 0, bit.b, "bit {}", bit.bit);
            // The pushes sum to at most the counters' difference in the bit's direction (others pull back).
            let gap = bit.counter_a.unwrap() - bit.counter_b.unwrap();
            assert!(!bit.pushed.is_empty());
            let pushed: i64 = bit.pushed.iter().map(|p| p.shift).sum();
            assert!(pushed.signum() == gap.signum() && pushed.abs() >= gap.abs());
            // Only tokens whose counts differ can push.
            assert!(bit.pushed.iter().all(|p| p.a != p.b));
        }
        let features = why.features.unwrap();
        assert_eq!(features.kind, "token");
        assert_eq!(
            features.only_a,
            vec![Feature {
                text: "files".into(),
                a: 1,
                b: 0
            }]
        );
        let only_b: Vec<&str> = features.only_b.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(only_b, ["dark", "folders", "mode", "new"]);
        let exact = why.exact.unwrap();
        assert!(exact.cosine > 0.8 && exact.cosine < 1.0);
        assert!(exact.jaccard > 0.3 && exact.jaccard < 1.0);
        let diff = why.diff.unwrap();
        assert_eq!((diff.lines_a, diff.lines_b, diff.equal_lines), (4, 5, 3));
        let changed: Vec<&Row> = diff
            .hunks
            .iter()
            .flat_map(|h| &h.rows)
            .filter(|r| r.tag != RowTag::Equal)
            .collect();
        assert_eq!(changed.len(), 2);
        assert_eq!(changed[0].tag, RowTag::Changed);
        assert_eq!(changed[0].a.as_ref().unwrap().0, 2);
        assert_eq!(changed[1].tag, RowTag::Inserted);
        assert_eq!(changed[1].b.as_ref().unwrap().1, "New: dark mode.");
    }

    #[test]
    fn minhash_verdict_follows_the_exact_measure() {
        let method = Method::MinHash(MinHashScheme::oph(128, 0, 2).unwrap());
        let options = Options {
            threshold: 0.5,
            ..Options::default()
        };
        let why = explain_texts(method, A, B, &options).unwrap();
        let exact = why.exact.unwrap();
        let (measure, value) = exact.scheme.unwrap();
        assert_eq!(measure, Measure::Jaccard);
        // The scheme's word 2-grams: the Jaccard of the 2-gram sets.
        assert_eq!(exact.shingle, 2);
        assert!((exact.jaccard - value).abs() < 1e-12);
        assert_eq!(why.verdict.near_duplicate, value >= 0.5);
        let features = why.features.unwrap();
        assert_eq!(features.kind, "shingle");
        assert!(features.only_a.iter().any(|f| f.text == "empty files"));
        assert!(why.bits.is_empty());
        let identical = explain_texts(method, A, A, &options).unwrap();
        assert!(identical.verdict.near_duplicate);
        assert!(identical.diff.unwrap().hunks.is_empty());
        assert!(identical.features.unwrap().only_a.is_empty());
    }

    #[test]
    fn sketches_alone_give_bits_without_attributions() {
        let method = Method::SimHash(Scheme::SimhashDocV1);
        let (a, b) = (
            method.sketch_text(A).unwrap(),
            method.sketch_text(B).unwrap(),
        );
        let why = explain_sketches(&a, &b, &Options::default()).unwrap();
        let fa = a.fingerprint().unwrap().bits();
        let fb = b.fingerprint().unwrap().bits();
        assert_eq!(why.bits.len() as u32, (fa ^ fb).count_ones());
        for bit in &why.bits {
            assert_eq!(bit.a, fa >> (63 - bit.bit) & 1 == 1);
            assert!(bit.counter_a.is_none() && bit.pushed.is_empty());
        }
        assert!(why.features.is_none() && why.diff.is_none());
        let minhash = Method::MinHash(MinHashScheme::default_oph())
            .sketch_text(A)
            .unwrap();
        assert!(explain_sketches(&a, &minhash, &Options::default()).is_err());
    }
}

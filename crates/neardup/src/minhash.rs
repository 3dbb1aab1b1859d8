//! MinHash-family schemes over the doc-v1 token stream: text → tokens → shingles → signature.
//!
//! The token stream is simhash-doc-v1's (steps 1 to 3 of `docs/spec/simhash-doc-v1.md`: normalized,
//! case-folded words, identifiers removed) **except that tokens without a letter are kept** (`2019`, `3`,
//! `_`): SimHash drops them so that dates and counters do not move fingerprints, but word n-gram Jaccard is
//! defined over all words, and release notes that differ only in their version numbers are different
//! documents. The same document from any medium gives the same signature. The sketches and their pinned hashes are
//! `neardup-sketch`'s (`docs/spec/minhash-v1.md`):
//!
//! * `minhash-oph-v1` (the default): word n-gram hashes (xxh3 of each token, rolled into n-grams) into one
//!   permutation hashing with K bins;
//! * `minhash-datasketch-affine32` / `minhash-datasketch-legacy`: bit-exact with `datasketch.MinHash`
//!   updated with each shingle's UTF-8 bytes, a shingle being its tokens joined by one space (U+0020);
//! * `wminhash-v1` / `pminhash-v1`: weighted sketches of the shingle hashes, each weighted by its count in the
//!   document (term frequency), for the weighted or the probability Jaccard similarity.
//!
//! Each thread keeps the hasher of the last scheme it used, so a document costs no allocation.
//!
//! Character n-grams (`f=cN`) run over the tokens joined by one space. A document with fewer tokens than n has
//! one shingle of all of them; a document without tokens has no signature ([`Error::NoTokens`]).

use crate::error::Error;
use crate::profile::{Measure, Profile};
use crate::sketch::Sketch;
use neardup_sketch::bottomk::{BottomKBuilder, BottomKSketch};
use neardup_sketch::datasketch::{DatasketchMinHasher, Variant};
use neardup_sketch::oph::OphMinHasher;
use neardup_sketch::shingle::{Features, WordShingler, char_shingles, token_hash};
use neardup_sketch::signature::{
    MinHashSignature, Scheme as SketchScheme, SketchParams, write_le_values,
};
use neardup_sketch::weighted::{Similarity, TermFrequencies, WeightedMinHasher};
use neardup_text::profile::doc_v1;
use std::cell::RefCell;
use std::fmt;

/// A MinHash-family scheme with all its parameters (K, seed, shingles): two documents' signatures compare only
/// if these are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MinHashScheme {
    params: SketchParams,
}

impl MinHashScheme {
    /// `minhash-oph-v1` with K values, a seed, and word n-grams.
    pub fn oph(k: u32, seed: u64, shingle: u32) -> Result<Self, Error> {
        Self::new(SketchParams::new(
            SketchScheme::MinHashOph,
            k,
            seed,
            Features::Words(shingle),
        ))
    }

    /// The defaults: `minhash-oph-v1`, K = 128, seed 0, word 5-grams.
    pub fn default_oph() -> Self {
        Self::oph(128, 0, 5).expect("valid defaults")
    }

    /// A scheme from its parameters; refuses what cannot be made from text here (bottom-k and weighted
    /// sketches, b-bit compaction, caller-chosen feature hashes, K or n of 0, a datasketch seed above 2^32).
    pub fn new(params: SketchParams) -> Result<Self, Error> {
        let unsupported = |why: &str| Error::Unsupported {
            what: format!("{params}: {why}"),
        };
        match params.scheme {
            SketchScheme::MinHashOph
            | SketchScheme::WeightedJaccard
            | SketchScheme::ProbabilityJaccard => {}
            SketchScheme::DatasketchAffine32 | SketchScheme::DatasketchLegacy => {
                if params.seed > u32::MAX as u64 {
                    return Err(unsupported("datasketch seeds are 32-bit"));
                }
            }
            _ => {
                return Err(unsupported(
                    "documents are sketched with minhash-oph-v1, the datasketch schemes, wminhash-v1 or \
                     pminhash-v1 (bottom-k sketches are not signatures of K values)",
                ));
            }
        }
        if let Some(why) = size_out_of_range(&params) {
            return Err(unsupported(&why));
        }
        if params.b_bits.is_some() {
            return Err(unsupported(
                "b-bit signatures are made by compacting full ones",
            ));
        }
        Ok(MinHashScheme { params })
    }

    /// The parameters.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// The number of signature values (K).
    pub fn values(&self) -> u32 {
        self.params.k
    }

    /// The signature of extracted text, and the number of shingles it summarizes.
    pub fn signature_text(&self, text: &str) -> Result<(MinHashSignature, u64), Error> {
        self.sign(text, None)
    }

    /// The signature of extracted text written into `out`, its K values as 4 little-endian bytes each (no
    /// allocation: what a batch writing into one output buffer needs), and the number of shingles. Panics
    /// if `out` does not hold 4·K bytes; on an error `out` is left as it was.
    pub fn signature_text_into(&self, text: &str, out: &mut [u8]) -> Result<u64, Error> {
        let p = self.params;
        assert_eq!(out.len(), 4 * p.k as usize, "out must hold K values");
        if p.scheme != SketchScheme::MinHashOph {
            let (signature, shingles) = self.sign(text, None)?;
            write_le_values(signature.values(), out);
            return Ok(shingles);
        }
        let shingles = with_cached(&OPH, p, |hasher: &mut OphMinHasher| {
            let shingles = for_each_shingle(text, p.features, |h| hasher.update(h));
            VALUES
                .with_borrow_mut(|values| {
                    values.resize(p.k as usize, 0);
                    hasher
                        .finish_into(values)
                        .then(|| write_le_values(values, out))
                })
                .map(|()| shingles)
        });
        shingles.filter(|&n| n > 0).ok_or_else(|| no_tokens(p))
    }

    /// The signature, and the document's exact [`Profile`] made in the same pass over the text: the distinct
    /// shingle hashes for the unweighted schemes, shingle counts for `wminhash-v1` and `pminhash-v1`. What exact
    /// verification needs.
    pub fn signature_and_profile(&self, text: &str) -> Result<(MinHashSignature, Profile), Error> {
        PROFILE_SCRATCH.with_borrow_mut(|hashes| {
            hashes.clear();
            let signed = self.sign(text, Some(hashes));
            let profile = Profile::from_scratch(hashes, self.measure());
            // A huge document's buffer is not kept for the thread's life.
            hashes.shrink_to(SCRATCH_KEPT);
            Ok((signed?.0, profile))
        })
    }

    /// The exact similarity the scheme's signatures estimate.
    pub fn measure(&self) -> Measure {
        Measure::of_sketch_scheme(self.params.scheme)
    }

    fn sign(
        &self,
        text: &str,
        mut set: Option<&mut Vec<u64>>,
    ) -> Result<(MinHashSignature, u64), Error> {
        let p = self.params;
        let signature = match p.scheme {
            SketchScheme::MinHashOph => with_cached(&OPH, p, |hasher: &mut OphMinHasher| {
                // Two loops, so that the common one (no profile kept) tests nothing per shingle.
                let shingles = match set.as_deref_mut() {
                    None => for_each_shingle(text, p.features, |h| hasher.update(h)),
                    Some(set) => for_each_shingle(text, p.features, |h| {
                        hasher.update(h);
                        set.push(h);
                    }),
                };
                (hasher.finish(), shingles)
            }),
            SketchScheme::WeightedJaccard | SketchScheme::ProbabilityJaccard => {
                with_cached(&WEIGHTED, p, |(counts, hasher): &mut Weighted| {
                    let shingles = for_each_shingle(text, p.features, |h| {
                        counts.add(h);
                        if let Some(set) = set.as_deref_mut() {
                            set.push(h);
                        }
                    });
                    hasher.extend(counts.drain());
                    (hasher.finish(), shingles)
                })
            }
            SketchScheme::DatasketchAffine32 | SketchScheme::DatasketchLegacy => {
                if let Some(set) = set {
                    for_each_shingle(text, p.features, |h| set.push(h));
                }
                datasketch_signature(text, p)
            }
            SketchScheme::BottomK => unreachable!("refused by MinHashScheme::new"),
        };
        match signature {
            (Some(s), shingles) if shingles > 0 => Ok((s, shingles)),
            _ => Err(no_tokens(p)),
        }
    }

    /// The distinct shingle hashes of extracted text, sorted: the set the signature samples (64-bit hashes of
    /// the scheme's n-grams, the same n-grams whatever the MinHash variant).
    pub fn shingle_set(&self, text: &str) -> Vec<u64> {
        shingle_set(text, self.params.features)
    }

    /// The signature as a [`Sketch`].
    pub fn sketch_text(&self, text: &str) -> Result<Sketch, Error> {
        self.signature_text(text).map(|(s, _)| Sketch::Signature(s))
    }
}

/// The distinct hashes of the text's shingles (word n-grams of its tokens, or character n-grams of its tokens
/// joined by spaces), sorted: the set whose Jaccard similarity the MinHash schemes estimate.
pub fn shingle_set(text: &str, features: Features) -> Vec<u64> {
    let mut set = Vec::new();
    for_each_shingle(text, features, |h| set.push(h));
    set.sort_unstable();
    set.dedup();
    set
}

/// Why K (or bottom-k's k) or the shingle length n is outside what is sketched here, if it is.
fn size_out_of_range(params: &SketchParams) -> Option<String> {
    use crate::schemes::{MAX_NUM_PERM, MAX_SHINGLE};
    match params.features {
        Features::Words(n) | Features::Chars(n) if (1..=MAX_SHINGLE).contains(&n) => {}
        _ => {
            return Some(format!(
                "shingles must be word or character n-grams, n from 1 to {MAX_SHINGLE}"
            ));
        }
    }
    (!(1..=MAX_NUM_PERM).contains(&params.k)).then(|| format!("K must be 1 to {MAX_NUM_PERM}"))
}

/// Refuses bottom-k parameters that cannot be made from text.
pub(crate) fn check_bottom_k(params: SketchParams) -> Result<SketchParams, Error> {
    if size_out_of_range(&params).is_none() && params.b_bits.is_none() {
        return Ok(params);
    }
    Err(Error::Unsupported {
        what: format!(
            "{params}: bottom-k samples need k from 1 to {} and word or character n-grams of 1 to {}",
            crate::schemes::MAX_NUM_PERM,
            crate::schemes::MAX_SHINGLE
        ),
    })
}

/// The bottom-k sample of the text's shingle hashes, and the number of shingles.
pub(crate) fn bottom_k(text: &str, params: SketchParams) -> Result<(BottomKSketch, u64), Error> {
    let params = check_bottom_k(params)?;
    let mut builder = BottomKBuilder::new(params.k as usize, params.seed, params.features);
    let shingles = for_each_shingle(text, params.features, |h| builder.add(h));
    if shingles == 0 {
        return Err(Error::NoTokens {
            scheme: params.scheme.name(),
        });
    }
    Ok((builder.finish(), shingles))
}

/// A weighted sketch's reusable state: the term-frequency counter and the hasher.
type Weighted = (TermFrequencies, WeightedMinHasher);

/// What a text without shingles is refused with: an empty set has no signature.
fn no_tokens(p: SketchParams) -> Error {
    Error::NoTokens {
        scheme: p.scheme.name(),
    }
}

thread_local! {
    /// The values [`MinHashScheme::signature_text_into`] fills before writing them out.
    static VALUES: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// Each thread keeps the hasher of the last scheme it used: documents then cost no allocation.
    static OPH: RefCell<Option<OphMinHasher>> = const { RefCell::new(None) };
    static WEIGHTED: RefCell<Option<Weighted>> = const { RefCell::new(None) };
    /// The datasketch-exact hasher, whose permutations take 624 words of MT19937 to draw.
    static DATASKETCH: RefCell<Option<DatasketchMinHasher>> = const { RefCell::new(None) };
    /// The shingle hashes of the document being profiled, before they are sorted into its profile.
    static PROFILE_SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The most shingle hashes a thread's profile buffer keeps room for between documents (8 MiB).
const SCRATCH_KEPT: usize = 1 << 20;

/// State that a scheme's parameters determine, reused per thread.
trait Cached {
    fn make(params: SketchParams) -> Self;
    fn params(&self) -> SketchParams;
    fn reset(&mut self);
}

impl Cached for OphMinHasher {
    fn make(p: SketchParams) -> Self {
        OphMinHasher::new(p.k as usize, p.seed, p.features)
    }
    fn params(&self) -> SketchParams {
        *OphMinHasher::params(self)
    }
    fn reset(&mut self) {
        OphMinHasher::reset(self)
    }
}

impl Cached for DatasketchMinHasher {
    fn make(p: SketchParams) -> Self {
        let variant = if p.scheme == SketchScheme::DatasketchAffine32 {
            Variant::Affine32
        } else {
            Variant::Legacy
        };
        DatasketchMinHasher::new(variant, p.k as usize, p.seed as u32, p.features)
    }
    fn params(&self) -> SketchParams {
        *DatasketchMinHasher::params(self)
    }
    fn reset(&mut self) {
        DatasketchMinHasher::reset(self)
    }
}

impl Cached for Weighted {
    fn make(p: SketchParams) -> Self {
        let similarity = if p.scheme == SketchScheme::WeightedJaccard {
            Similarity::Weighted
        } else {
            Similarity::Probability
        };
        (
            TermFrequencies::new(),
            WeightedMinHasher::new(similarity, p.k as usize, p.seed, p.features),
        )
    }
    fn params(&self) -> SketchParams {
        *self.1.params()
    }
    fn reset(&mut self) {
        // Draining shrinks a table that a long document grew, so the counter serves documents of any length.
        self.0.drain().for_each(drop);
        self.1.reset();
    }
}

/// Runs `f` with this thread's state for `params` (made anew if the thread last used other parameters),
/// reset before use.
fn with_cached<T: Cached, R>(
    cell: &'static std::thread::LocalKey<RefCell<Option<T>>>,
    params: SketchParams,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    cell.with(|cell| {
        let mut slot = cell.borrow_mut();
        let state = match slot.as_mut() {
            Some(state) if state.params() == params => {
                state.reset();
                state
            }
            _ => slot.insert(T::make(params)),
        };
        f(state)
    })
}

/// Calls `f` with the hash of every shingle of the text (word n-grams of its tokens, or character n-grams of
/// its tokens joined by spaces), in order, repeats included; returns how many there were.
fn for_each_shingle(text: &str, features: Features, mut f: impl FnMut(u64)) -> u64 {
    match features {
        Features::Words(n) => {
            let mut shingler = WordShingler::new(n as usize);
            // Inlined where the tokenizer emits: the call and its saved registers cost about 1 % per token.
            doc_v1::tokenize_keeping_numbers(
                text,
                #[inline(always)]
                |token| {
                    if let Some(h) = shingler.push_hash(token_hash(token.bytes())) {
                        f(h);
                    }
                },
            );
            // Counted from the tokens, not per shingle (1 % of the sketch).
            let tokens = shingler.tokens() as u64;
            if let Some(h) = shingler.finish() {
                f(h);
            }
            let n = u64::from(n);
            if tokens >= n {
                tokens - n + 1
            } else {
                u64::from(tokens > 0)
            }
        }
        Features::Chars(n) => {
            let mut count = 0;
            char_shingles(&joined_tokens(text, |_| {}), n as usize).for_each(|h| {
                f(h);
                count += 1;
            });
            count
        }
        // Refused by the schemes' constructors; an empty stream here.
        Features::Tokens | Features::Hashes => 0,
    }
}

/// The datasketch-compatible signature: each shingle's UTF-8 bytes (tokens joined by one space) into
/// `datasketch.MinHash.update`.
fn datasketch_signature(text: &str, p: SketchParams) -> (Option<MinHashSignature>, u64) {
    with_cached(&DATASKETCH, p, |hasher: &mut DatasketchMinHasher| {
        let shingles = datasketch_shingles(text, p.features, |bytes| hasher.update(bytes));
        (Some(hasher.signature()), shingles)
    })
}

/// Calls `update` with the UTF-8 bytes of every shingle as datasketch's users write them (word n-grams as
/// their tokens joined by one space, or character n-grams of the tokens joined by spaces), read in place
/// from the joined tokens; returns how many there were.
fn datasketch_shingles(text: &str, features: Features, mut update: impl FnMut(&[u8])) -> u64 {
    let mut shingles = 0u64;
    let mut update = |bytes: &[u8]| {
        update(bytes);
        shingles += 1;
    };
    match features {
        Features::Words(n) => {
            // A word n-gram is the stretch of the joined tokens from its first token's start to its last's end.
            let mut bounds = Vec::new();
            let joined = joined_tokens(text, |token| bounds.push((token.start, token.end)));
            let n = n as usize;
            if !bounds.is_empty() && bounds.len() < n {
                update(joined.as_bytes());
            }
            for window in bounds.windows(n) {
                update(&joined.as_bytes()[window[0].0..window[n - 1].1]);
            }
        }
        Features::Chars(n) => {
            let joined = joined_tokens(text, |_| {});
            let chars: Vec<(usize, char)> = joined.char_indices().collect();
            let n = n as usize;
            let end = |i: usize| chars.get(i).map_or(joined.len(), |c| c.0);
            if !chars.is_empty() && chars.len() < n {
                update(joined.as_bytes());
            }
            for (start, &(offset, _)) in chars
                .iter()
                .enumerate()
                .take((chars.len() + 1).saturating_sub(n))
            {
                update(&joined.as_bytes()[offset..end(start + n)]);
            }
        }
        Features::Tokens | Features::Hashes => unreachable!("refused by MinHashScheme::new"),
    }
    shingles
}

/// The sizes of the intersection and the union of two sorted, distinct sets.
pub fn set_overlap(a: &[u64], b: &[u64]) -> (usize, usize) {
    let common = neardup_sketch::bottomk::intersection_size(a, b);
    (common, a.len() + b.len() - common)
}

/// The exact Jaccard similarity |A ∩ B| / |A ∪ B| of two sorted, distinct sets (1 for two empty sets).
pub fn exact_jaccard(a: &[u64], b: &[u64]) -> f64 {
    let common = neardup_sketch::bottomk::intersection_size(a, b);
    jaccard_of(common, a.len() + b.len())
}

/// [`exact_jaccard`] if it is at least `threshold`, else `None`: the same value, found with less work for a
/// pair far below the threshold (the merge stops once too few values are left to share).
pub fn exact_jaccard_reaching(a: &[u64], b: &[u64], threshold: f64) -> Option<f64> {
    let sizes = a.len() + b.len();
    // The fewest shared values whose Jaccard reaches the threshold, computed as the Jaccard is (it grows
    // with them), from just below the real solution of c / (sizes − c) = threshold; none, if even the
    // smaller set shared whole falls short.
    let most = a.len().min(b.len());
    let below = (threshold * sizes as f64 / (1.0 + threshold)).floor() - 1.0;
    let from = if below > 0.0 {
        (below as usize).min(most)
    } else {
        0
    };
    let least = (from..=most).find(|&c| jaccard_of(c, sizes) >= threshold);
    let common = neardup_sketch::bottomk::intersection_size_reaching(a, b, least?)?;
    Some(jaccard_of(common, sizes))
}

/// The Jaccard similarity of two sets of `sizes` values in all that share `common`.
fn jaccard_of(common: usize, sizes: usize) -> f64 {
    match sizes - common {
        0 => 1.0,
        union => common as f64 / union as f64,
    }
}

/// The doc-v1 tokens joined by one space: the string character n-grams run over. `on_token` is called with
/// each token's place in it (a word n-gram is the stretch from its first token's start to its last's end).
fn joined_tokens(text: &str, mut on_token: impl FnMut(std::ops::Range<usize>)) -> String {
    let mut joined = String::with_capacity(text.len());
    doc_v1::tokenize_keeping_numbers(text, |token| {
        if !joined.is_empty() {
            joined.push(' ');
        }
        let start = joined.len();
        joined.push_str(token.as_str());
        on_token(start..joined.len());
    });
    joined
}

impl fmt::Display for MinHashScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_words_give_the_same_signature_whatever_the_markup_and_case() {
        let scheme = MinHashScheme::default_oph();
        let (a, n) = scheme
            .signature_text("The quick brown fox jumps over the lazy dog")
            .unwrap();
        let (b, _) = scheme
            .signature_text("the QUICK brown fox,  jumps over the lazy dog!")
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(n, 5); // 9 tokens, word 5-grams
        assert_eq!(a.values().len(), 128);
    }

    #[test]
    fn similarity_tracks_shared_shingles() {
        let scheme = MinHashScheme::oph(256, 7, 3).unwrap();
        let words: Vec<String> = (0..400).map(|i| format!("w{}", i % 173 + i / 7)).collect();
        let a = words.join(" ");
        let b = words[..360].join(" ") + " entirely different closing words here now";
        let (sa, _) = scheme.signature_text(&a).unwrap();
        let (sb, _) = scheme.signature_text(&b).unwrap();
        let j = sa.jaccard(&sb).unwrap();
        assert!(j > 0.7 && j < 0.99, "{j}");
    }

    #[test]
    fn one_pass_gives_the_signature_and_the_set_for_every_scheme() {
        let text = "the cat sat on the mat and the cat sat on the hat again today";
        for scheme in [
            SketchScheme::MinHashOph,
            SketchScheme::DatasketchAffine32,
            SketchScheme::WeightedJaccard,
            SketchScheme::ProbabilityJaccard,
        ] {
            let m =
                MinHashScheme::new(SketchParams::new(scheme, 32, 1, Features::Words(3))).unwrap();
            let (a, n) = m.signature_text(text).unwrap();
            let (b, profile) = m.signature_and_profile(text).unwrap();
            assert_eq!(a, b, "{scheme}");
            assert_eq!(profile.hashes(), m.shingle_set(text), "{scheme}");
            let weighted = matches!(
                scheme,
                SketchScheme::WeightedJaccard | SketchScheme::ProbabilityJaccard
            );
            assert_eq!(matches!(profile, Profile::Counts(_)), weighted, "{scheme}");
            assert_eq!(n, 13, "{scheme}"); // 15 tokens, 13 3-grams (repeats counted)
            assert_eq!(a.params().scheme, scheme);
            // Another thread, and other parameters in between, give the same signature.
            let other =
                MinHashScheme::new(SketchParams::new(scheme, 16, 2, Features::Words(2))).unwrap();
            other.signature_text(text).unwrap();
            let (c, _) =
                std::thread::scope(|s| s.spawn(|| m.signature_text(text).unwrap()).join().unwrap());
            assert_eq!(m.signature_text(text).unwrap().0, a);
            assert_eq!(c, a);
        }
    }

    #[test]
    fn weighted_schemes_see_repeats() {
        let m = MinHashScheme::new(SketchParams::new(
            SketchScheme::WeightedJaccard,
            256,
            0,
            Features::Words(1),
        ))
        .unwrap();
        let (once, _) = m.signature_text("alpha beta gamma delta").unwrap();
        let (twice, _) = m
            .signature_text("alpha beta gamma delta alpha beta gamma delta")
            .unwrap();
        // Weighted Jaccard of counts (1,1,1,1) and (2,2,2,2) is 4 / 8.
        let j = once.jaccard(&twice).unwrap();
        assert!((j - 0.5).abs() < 0.12, "{j}");
    }

    #[test]
    fn the_shingle_count_is_the_number_of_shingles() {
        for words in [0, 1, 4, 5, 6, 100] {
            let text = (0..words)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ");
            for features in [Features::Words(5), Features::Words(1), Features::Chars(4)] {
                let mut calls = 0;
                let count = for_each_shingle(&text, features, |_| calls += 1);
                assert_eq!(count, calls, "{words} words, {features:?}");
            }
        }
    }

    proptest::proptest! {
        /// The early stop changes nothing: the Jaccard when it reaches the threshold, at thresholds that fall
        /// on, between and beyond the values two such sets can have.
        #[test]
        fn exact_jaccard_reaching_is_the_jaccard_at_or_above_the_threshold(
            a in proptest::collection::btree_set(0u64..300, 0..80),
            b in proptest::collection::btree_set(0u64..300, 0..80),
            common in 0usize..80,
            between: f64,
        ) {
            let (x, y): (Vec<u64>, Vec<u64>) = (a.iter().copied().collect(), b.iter().copied().collect());
            let jaccard = exact_jaccard(&x, &y);
            let sizes = x.len() + y.len();
            let on = jaccard_of(common.min(x.len().min(y.len())), sizes);
            for threshold in [jaccard, on, between.fract().abs(), 0.0, -1.0, 1.0, 1.5, f64::NAN] {
                let reached = Some(jaccard).filter(|&j| j >= threshold);
                proptest::prop_assert_eq!(exact_jaccard_reaching(&x, &y, threshold), reached, "{}", threshold);
            }
        }
    }

    #[test]
    fn exact_jaccard_of_shingle_sets() {
        let scheme = MinHashScheme::oph(64, 0, 2).unwrap();
        let a = scheme.shingle_set("a b c d");
        let b = scheme.shingle_set("a b c e");
        assert_eq!((a.len(), b.len()), (3, 3));
        assert_eq!(exact_jaccard(&a, &b), 0.5); // {ab, bc} of {ab, bc, cd, ce}
        assert_eq!(exact_jaccard(&a, &a), 1.0);
        assert_eq!(exact_jaccard(&[], &[]), 1.0);
    }

    #[test]
    fn no_tokens_is_an_error_and_unsupported_schemes_are_refused() {
        let scheme = MinHashScheme::default_oph();
        assert!(matches!(
            scheme
                .signature_text("  ... !! https://example.org ")
                .unwrap_err(),
            Error::NoTokens { .. }
        ));
        // Numbers are words here: release notes that differ only in their versions differ.
        let (a, _) = scheme
            .signature_text("Django 1.11.20 fixes a packaging error in 1.11.19")
            .unwrap();
        let (b, _) = scheme
            .signature_text("Django 2.0.12 fixes a packaging error in 2.0.11")
            .unwrap();
        assert!(a.jaccard(&b).unwrap() < 0.5);
        let bottom_k = SketchParams::new(SketchScheme::BottomK, 64, 0, Features::Words(5));
        assert!(matches!(
            MinHashScheme::new(bottom_k).unwrap_err(),
            Error::Unsupported { .. }
        ));
    }

    #[test]
    fn datasketch_mode_hashes_space_joined_shingles() {
        let params = SketchParams::new(SketchScheme::DatasketchAffine32, 16, 1, Features::Words(2));
        let scheme = MinHashScheme::new(params).unwrap();
        let (sig, n) = scheme.signature_text("Alpha beta GAMMA").unwrap();
        let mut direct = DatasketchMinHasher::new(Variant::Affine32, 16, 1, Features::Words(2));
        direct.update(b"alpha beta");
        direct.update(b"beta gamma");
        assert_eq!(n, 2);
        assert_eq!(sig.values(), direct.hashvalues());
    }
}

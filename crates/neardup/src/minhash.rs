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
//!   updated with each shingle's UTF-8 bytes, a shingle being its tokens joined by one space (U+0020).
//!
//! Character n-grams (`f=cN`) run over the tokens joined by one space. A document with fewer tokens than n has
//! one shingle of all of them; a document without tokens has no signature ([`Error::NoTokens`]).

use crate::error::Error;
use crate::sketch::Sketch;
use neardup_sketch::datasketch::{DatasketchMinHasher, Variant};
use neardup_sketch::oph::OphMinHasher;
use neardup_sketch::shingle::{Features, WordShingler, char_shingles};
use neardup_sketch::signature::{MinHashSignature, Scheme as SketchScheme, SketchParams};
use neardup_text::profile::doc_v1;
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
            SketchScheme::MinHashOph => {}
            SketchScheme::DatasketchAffine32 | SketchScheme::DatasketchLegacy => {
                if params.seed > u32::MAX as u64 {
                    return Err(unsupported("datasketch seeds are 32-bit"));
                }
            }
            _ => {
                return Err(unsupported(
                    "documents are sketched with minhash-oph-v1 or the datasketch schemes",
                ));
            }
        }
        match params.features {
            Features::Words(n) | Features::Chars(n) if n > 0 => {}
            _ => {
                return Err(unsupported(
                    "shingles must be word or character n-grams, n ≥ 1",
                ));
            }
        }
        if params.k == 0 {
            return Err(unsupported("K must be at least 1"));
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
        let p = self.params;
        let no_tokens = || Error::NoTokens {
            scheme: p.scheme.name(),
        };
        let mut shingles = 0u64;
        let signature = match (p.scheme, p.features) {
            (SketchScheme::MinHashOph, Features::Words(n)) => {
                let mut hasher = OphMinHasher::new(p.k as usize, p.seed, p.features);
                let mut shingler = WordShingler::new(n as usize);
                doc_v1::tokenize_keeping_numbers(text, |token| {
                    if let Some(h) = shingler.push_token(token.as_str()) {
                        hasher.update(h);
                        shingles += 1;
                    }
                });
                if let Some(h) = shingler.finish() {
                    hasher.update(h);
                    shingles += 1;
                }
                hasher.finish()
            }
            (SketchScheme::MinHashOph, Features::Chars(n)) => {
                let mut hasher = OphMinHasher::new(p.k as usize, p.seed, p.features);
                for h in char_shingles(&joined_tokens(text), n as usize) {
                    hasher.update(h);
                    shingles += 1;
                }
                hasher.finish()
            }
            (SketchScheme::DatasketchAffine32 | SketchScheme::DatasketchLegacy, features) => {
                let variant = if p.scheme == SketchScheme::DatasketchAffine32 {
                    Variant::Affine32
                } else {
                    Variant::Legacy
                };
                let mut hasher =
                    DatasketchMinHasher::new(variant, p.k as usize, p.seed as u32, features);
                let mut update = |bytes: &[u8]| {
                    hasher.update(bytes);
                    shingles += 1;
                };
                match features {
                    Features::Words(n) => {
                        let mut tokens = Vec::new();
                        doc_v1::tokenize_keeping_numbers(text, |t| {
                            tokens.push(t.as_str().to_owned())
                        });
                        let n = n as usize;
                        if !tokens.is_empty() && tokens.len() < n {
                            update(tokens.join(" ").as_bytes());
                        }
                        for window in tokens.windows(n) {
                            update(window.join(" ").as_bytes());
                        }
                    }
                    Features::Chars(n) => {
                        let joined = joined_tokens(text);
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
                    Features::Hashes => unreachable!("refused by MinHashScheme::new"),
                }
                Some(hasher.signature())
            }
            _ => unreachable!("refused by MinHashScheme::new"),
        };
        match signature {
            Some(s) if shingles > 0 => Ok((s, shingles)),
            _ => Err(no_tokens()),
        }
    }

    /// The distinct shingle hashes of extracted text, sorted: the set the signature samples (64-bit hashes of
    /// the scheme's n-grams, the same n-grams whatever the MinHash variant).
    pub fn shingle_set(&self, text: &str) -> Vec<u64> {
        let mut set: Vec<u64> = match self.params.features {
            Features::Words(n) => {
                let mut shingler = WordShingler::new(n as usize);
                let mut out = Vec::new();
                doc_v1::tokenize_keeping_numbers(text, |token| {
                    out.extend(shingler.push_token(token.as_str()))
                });
                out.extend(shingler.finish());
                out
            }
            Features::Chars(n) => char_shingles(&joined_tokens(text), n as usize).collect(),
            Features::Hashes => unreachable!("refused by MinHashScheme::new"),
        };
        set.sort_unstable();
        set.dedup();
        set
    }

    /// The signature as a [`Sketch`].
    pub fn sketch_text(&self, text: &str) -> Result<Sketch, Error> {
        self.signature_text(text).map(|(s, _)| Sketch::Signature(s))
    }
}

/// The exact Jaccard similarity |A ∩ B| / |A ∪ B| of two sorted, distinct sets (1 for two empty sets).
pub fn exact_jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        1.0
    } else {
        common as f64 / union as f64
    }
}

/// The doc-v1 tokens joined by one space: the string character n-grams run over.
fn joined_tokens(text: &str) -> String {
    let mut joined = String::with_capacity(text.len());
    doc_v1::tokenize_keeping_numbers(text, |token| {
        if !joined.is_empty() {
            joined.push(' ');
        }
        joined.push_str(token.as_str());
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

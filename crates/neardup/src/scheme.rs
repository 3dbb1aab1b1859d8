//! Named, versioned schemes: each pins every choice that changes its output.

use crate::error::{Error, ParseError};
use crate::fingerprint::Fingerprint;
use crate::sketch::{Method, Sketch};
use neardup_sketch::lookup3::jenkins64_window;
use neardup_sketch::simhash::SimHash64;
use neardup_text::decode::EncodingSource;
use neardup_text::media::{Media, MediaHint};
use neardup_text::profile::doc_v1;
use std::fmt;
use std::str::FromStr;

/// A fingerprint scheme. Its name is the prefix of its fingerprint strings.
///
/// There is one scheme today; a new choice anywhere in the pipeline (Unicode version, extraction rule, token
/// rule, hash, bit order) is a new variant with a new name, never a change to an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// `simhash-doc-v1`: 64-bit SimHash of lookup3-hashed doc-v1 tokens, term-frequency weights
    /// (docs/spec/simhash-doc-v1.md).
    SimhashDocV1,
}

/// Every scheme this version knows.
pub const SCHEMES: &[Scheme] = &[Scheme::SimhashDocV1];

/// The result of sketching one document, with what was learned on the way.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The fingerprint or signature.
    pub sketch: Sketch,
    /// The medium the document was read as.
    pub media: Media,
    /// The encoding's name.
    pub encoding: &'static str,
    /// How the encoding was chosen.
    pub encoding_source: EncodingSource,
    /// Whether invalid byte sequences were replaced.
    pub malformed: bool,
    /// How many features (tokens for SimHash, shingles for MinHash) the sketch summarizes.
    pub tokens: u64,
}

impl Analysis {
    pub(crate) fn of(sketch: Sketch, doc: &neardup_text::Extracted, tokens: u64) -> Self {
        Analysis {
            sketch,
            media: doc.media,
            encoding: doc.encoding,
            encoding_source: doc.encoding_source,
            malformed: doc.malformed,
            tokens,
        }
    }

    /// The fingerprint, when the method was SimHash.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.sketch.fingerprint()
    }
}

impl Scheme {
    /// The scheme's stable name, e.g. `simhash-doc-v1`.
    pub const fn name(self) -> &'static str {
        match self {
            Scheme::SimhashDocV1 => "simhash-doc-v1",
        }
    }

    /// Fingerprints a document given as bytes in any supported medium and encoding.
    ///
    /// ```
    /// use neardup::{Scheme, media::MediaHint};
    /// let a = Scheme::SimhashDocV1.fingerprint(b"<p>The quick brown fox</p>", MediaHint::Auto).unwrap();
    /// let b = Scheme::SimhashDocV1.fingerprint(b"the QUICK brown fox", MediaHint::Auto).unwrap();
    /// assert_eq!(a, b);
    /// assert_eq!(a.to_string(), "simhash-doc-v1:qikqezyce3ajc");
    /// ```
    pub fn fingerprint(self, bytes: &[u8], hint: MediaHint<'_>) -> Result<Fingerprint, Error> {
        let doc = neardup_text::extract(bytes, hint)?;
        self.fingerprint_text(&doc.text)
    }

    /// Like [`fingerprint`](Self::fingerprint), also reporting the medium, encoding and token count.
    pub fn analyze(self, bytes: &[u8], hint: MediaHint<'_>) -> Result<Analysis, Error> {
        Method::SimHash(self).analyze(bytes, hint)
    }

    /// Fingerprints every document of a file: one for most media, one per response record of a WARC archive,
    /// each with its id inside the file (`None` for the file itself, and for an error that ends a damaged
    /// archive).
    ///
    /// ```
    /// use neardup::{Scheme, media::MediaHint};
    /// let docs = Scheme::SimhashDocV1.analyze_documents(b"<p>one page</p>", MediaHint::Auto);
    /// assert_eq!(docs.len(), 1);
    /// assert!(docs[0].0.is_none() && docs[0].1.is_ok());
    /// ```
    pub fn analyze_documents(
        self,
        bytes: &[u8],
        hint: MediaHint<'_>,
    ) -> Vec<(Option<String>, Result<Analysis, Error>)> {
        Method::SimHash(self)
            .analyze_documents(bytes, hint, false)
            .into_iter()
            .map(|d| (d.id, d.result.map(|(analysis, _)| analysis)))
            .collect()
    }

    /// Fingerprints text that is already extracted (steps 1 to 7 of the spec).
    pub fn fingerprint_text(self, text: &str) -> Result<Fingerprint, Error> {
        self.fingerprint_text_counted(text).map(|(fp, _)| fp)
    }

    pub(crate) fn fingerprint_text_counted(self, text: &str) -> Result<(Fingerprint, u64), Error> {
        match self {
            Scheme::SimhashDocV1 => {
                let mut acc = SimHash64::new();
                // Inlined into each of the tokenizer's emit sites: a call per token costs more than the hash.
                doc_v1::tokenize(
                    text,
                    #[inline(always)]
                    |token| acc.add(jenkins64_window(token.window(), token.len())),
                );
                if acc.features() == 0 {
                    return Err(Error::NoTokens {
                        scheme: self.name(),
                    });
                }
                Ok((Fingerprint::new(self, acc.finish()), acc.features()))
            }
        }
    }

    /// The number of bits of this scheme's fingerprints.
    pub const fn bits(self) -> u32 {
        match self {
            Scheme::SimhashDocV1 => 64,
        }
    }

    /// The similarity at or above which two documents are "close" (0.98 for simhash-doc-v1: d ≤ 1).
    pub const fn close_threshold(self) -> f64 {
        0.98
    }

    /// The similarity at or above which two documents are "loose" near-duplicates (0.90: d ≤ 6).
    pub const fn loose_threshold(self) -> f64 {
        0.90
    }

    /// The default Hamming distance for lookups (k = 3).
    pub const fn default_k(self) -> u32 {
        3
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scheme {
    type Err = ParseError;

    /// Parses a scheme name, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SCHEMES
            .iter()
            .copied()
            .find(|sc| sc.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseError::UnknownScheme {
                scheme: s.to_owned(),
                known: SCHEMES
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

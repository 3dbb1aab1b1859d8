//! # neardup: the near-duplicate engine
//!
//! This crate is the library every front door (the `neardup` command today) translates. It composes the text
//! pipeline (`neardup-text`), the sketches (`neardup-sketch`) and the indexes (`neardup-index`):
//!
//! * **schemes** ([`schemes`], [`Method`], [`Scheme`], [`MinHashScheme`]): named, versioned ways to turn a
//!   document into a sketch, resolved by name or alias in one registry, and the self-describing sketch strings;
//! * **dedup** ([`dedup`]): documents in, verified pairs or clusters out through a [`dedup::Sink`]; clusters
//!   keep every member within the threshold of its representative by default, with lineage;
//! * **index** ([`index`]): an index of one method's sketches over any store, queried by sketch;
//! * **plan** ([`plan`]): table designs and LSH bands for a size and a threshold;
//! * **calibrate** ([`calibrate`]): score distributions, precision and recall per k or threshold against
//!   ground truth, and a recommended setting, on a sample of the user's own documents;
//! * **explain** ([`explain`]): why two documents match: shared and unique features, the estimate beside the
//!   exact measures, the SimHash bits that differ and the tokens that pushed them, an aligned diff.
//!
//! ```text
//! bytes ─ detect/decode/extract ─▶ text ─ doc-v1 profile ─▶ tokens ─ features ─▶ SimHash | MinHash | bottom-k
//!       ─ encode ─▶ "scheme:base32…"        sketches ─ dedup | index ─▶ pairs, clusters, matches
//! ```
//!
//! A scheme is the unit of interoperability: `simhash-doc-v1` pins the Unicode version, normalization,
//! token rules, hash function and bit order (`docs/spec/simhash-doc-v1.md`), and golden vectors in
//! `testdata/vectors/` hold any implementation to it. The same text gives the same fingerprint from any
//! medium, on any machine, in any implementation that follows the spec.
//!
//! ```
//! use neardup::{Fingerprint, Scheme, Verdict, media::MediaHint};
//!
//! let scheme = Scheme::SimhashDocV1;
//! let a = scheme.fingerprint(b"<h1>Release notes</h1><p>Fixed a crash when opening empty files.</p>", MediaHint::Auto)?;
//! let b: Fingerprint = a.to_string().parse()?;            // the string form round-trips
//! assert_eq!(a.distance(&b)?, 0);
//! assert_eq!(a.verdict(&b)?, Verdict::Close);
//! # Ok::<(), neardup::Error>(())
//! ```
//!
//! Errors are typed ([`Error`]): a document without tokens has no fingerprint ([`Error::NoTokens`]), never an
//! all-zero one, and fingerprints of different schemes refuse to be compared ([`Error::SchemeMismatch`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calibrate;
pub mod dedup;
mod error;
pub mod explain;
mod fingerprint;
pub mod index;
mod minhash;
pub mod plan;
mod profile;
mod scheme;
pub mod schemes;
mod sketch;
pub mod vectors;

pub use error::{Error, ParseError};
pub use fingerprint::{Fingerprint, Verdict};
pub use index::Preset;
pub use minhash::{MinHashScheme, exact_jaccard, set_overlap, shingle_set};
pub use neardup_sketch::bottomk::{BottomKSketch, Estimate as SampleEstimate};
/// The MinHash-family sketches, their parameters and errors, re-exported from `neardup-sketch`.
pub use neardup_sketch::shingle::Features;
pub use neardup_sketch::signature::{
    MinHashSignature, Scheme as SketchScheme, SketchMismatch, SketchParams,
};
pub use profile::{Measure, Profile};
pub use scheme::{Analysis, SCHEMES, Scheme};
pub use sketch::{DocumentAnalysis, Method, Sketch};

/// Parallel work that survives `fork(2)` (for front doors loaded into programs that fork: Python).
pub use neardup_index::parallel;
/// datasketch, bit-exact, for front doors that speak it (the Python package's `neardup.datasketch`): its
/// MinHash (SHA-1, NumPy's MT19937 draws, `LeanMinHash` bytes), from `neardup-sketch`, and its `MinHashLSH`
/// band tables ([`BandTables`](datasketch::BandTables)), from `neardup-index`.
pub mod datasketch {
    pub use neardup_index::lsh::{BandTables, BandTablesError};
    pub use neardup_sketch::datasketch::*;
}
/// Text extraction and tokenization, re-exported for callers that need the steps (golden vectors, tools).
pub use neardup_text as text;
/// Media detection and hints, re-exported from `neardup-text`.
pub use neardup_text::media;

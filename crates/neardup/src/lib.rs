//! # neardup: interoperable near-duplicate fingerprints
//!
//! This is the library front door. It composes the text pipeline (`neardup-text`) and the sketches
//! (`neardup-sketch`) into named, versioned **schemes**, and owns the self-describing fingerprint strings:
//!
//! ```text
//! bytes ─ detect/decode/extract ─▶ text ─ doc-v1 profile ─▶ tokens ─ lookup3 ─▶ 64-bit features
//!       ─ SimHash ─▶ 64 bits ─ encode ─▶ "simhash-doc-v1:" + base32 (13 characters)
//! ```
//!
//! A scheme is the unit of interoperability: `simhash-doc-v1` pins the Unicode version, normalization,
//! token rules, hash function and bit order (`docs/spec/simhash-doc-v1.md`), and golden vectors in
//! `testdata/vectors/simhash-doc-v1/` hold any implementation to it. The same text gives the same
//! fingerprint from any medium, on any machine, in any implementation that follows the spec.
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

pub mod dedup;
mod error;
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

/// Text extraction and tokenization, re-exported for callers that need the steps (golden vectors, tools).
pub use neardup_text as text;
/// Media detection and hints, re-exported from `neardup-text`.
pub use neardup_text::media;

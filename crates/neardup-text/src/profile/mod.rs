//! Tokenization profiles: the versioned rules that turn extracted text into tokens.
//!
//! A profile is part of a scheme's pinned definition: changing any rule here changes fingerprints, so a
//! profile is never edited in place. A new rule is a new profile (and a new scheme name).
//!
//! * [`doc_v1`]: the profile of `simhash-doc-v1` (docs/spec/simhash-doc-v1.md, steps 1 to 3).

mod blocks;
pub mod doc_v1;
pub mod props;

//! Hamming-distance search over 64-bit SimHash fingerprints: table designs, the online index, and batch pairs
//! and clusters.
//!
//! The problem of Manku, Jain and Das Sarma (WWW 2007): find every fingerprint within k bits of another.
//! Naively that is all pairs, or C(64, k) probes per query; block-permuted tables make it a handful of
//! sorted lookups with exact recall. [`plan`] chooses the tables (and predicts their cost), [`HammingIndex`]
//! holds them in memory for insert, remove and query by id, and [`all_pairs`] and [`clusters`] answer the
//! batch question without an index. The layout mirrors [`crate::lsh`]: plan ↔ banding, index ↔ index,
//! batch ↔ batch.

mod batch;
mod index;
pub mod mapped;
pub mod plan;
mod tables;

pub use batch::{all_pairs, all_pairs_while, clusters, pairs_within};
pub use index::{HammingIndex, IndexError, Loader, Match};

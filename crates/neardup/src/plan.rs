//! Planning an index: the permuted-table designs for N fingerprints and distance k (Manku, Jain and Das
//! Sarma), and the LSH bandings for a similarity threshold, with published presets. Front doors show these
//! to users choosing settings; [`crate::dedup`] and [`crate::index`] use the same choices.

pub use neardup_index::hamming::plan::{Design, Estimate, plan, query_cost, recommend};
pub use neardup_index::lsh::{Banding, BandingError, Preset, optimize};

//! LSH banding for MinHash signatures: the banding and its optimizer, the online index, batch pairs and
//! clusters, and datasketch's exact band tables ([`BandTables`]).
//!
//! A signature is K `u32` values (any MinHash-family scheme: the fraction of equal positions estimates the
//! Jaccard similarity). Banding cuts it into b bands; documents that agree on a whole band are candidates,
//! and their estimated similarity is reported with them so callers can verify against a threshold.

mod banding;
// `unsafe` for prefetch hints and for mapping pages ahead of the inserts (`madvise`).
#[allow(unsafe_code)]
mod band_tables;
mod batch;
pub(crate) mod index;
pub mod mapped;

pub use band_tables::{BandTables, BandTablesError};
pub use banding::{Banding, BandingError, PRESETS, Preset, optimize};
pub use batch::{
    lsh_clusters, lsh_clusters_with, lsh_pairs, lsh_pairs_or_runs, shares_earlier_band,
};
pub use index::{Candidate, LshError, LshIndex, band_key, similarity};

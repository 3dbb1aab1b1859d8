//! # neardup-index: finding fingerprints within k bits
//!
//! The Hamming distance problem of Manku, Jain and Das Sarma (WWW 2007): given 64-bit SimHash fingerprints,
//! find every pair (or every stored fingerprint) within Hamming distance k. Naively that is all pairs, or
//! C(64, k) probes per query; block-permuted tables make it a handful of sorted lookups, with exact recall.
//!
//! * [`plan`]: table designs (one or more levels of blocks) and a planner that predicts tables, key bits,
//!   candidates per query and memory for N fingerprints, and ranks the designs.
//! * [`all_pairs`](mod@all_pairs): batch mode, every pair within k exactly once, streamed.
//! * [`cluster`]: connected components with deterministic representatives (the smallest index).
//! * [`online`]: insert, remove and query by id in memory, exact within k, in compact tables: the
//!   fingerprints once in table 0's order, then per table a bucket directory, an 8-bit key fragment and a
//!   4-byte slot per row (about 58 bytes per fingerprint with 10 tables); ids in one arena.
//! * [`lsh`]: LSH banding for MinHash signatures: the optimizer and presets, an online index, batch pairs and
//!   clusters.
//! * [`store`]: the `Store` seam, the embedded redb store, and the persistent index over it.
//!
//! ```
//! use neardup_index::hamming::{clusters, plan};
//! let design = plan::recommend(3, 1e6);   // the recommended design for k = 3
//! let fps = [0xffff_0000_ffff_0000, 0xffff_0000_ffff_0001, 0x0123_4567_89ab_cdef];
//! assert_eq!(clusters(&fps, &design), vec![vec![0, 1]]);
//! ```
//!
//! Not here yet: a shared distributed store (the [`store::Store`] trait is its seam).
//! This crate knows nothing of text or media.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod hamming;
mod ids;
pub mod lsh;
pub mod memory;
pub mod persistent;
mod radix;
pub mod store;
pub mod union_find;

/// Hamming distance between two 64-bit fingerprints (defined in `neardup-sketch`, beside SimHash).
pub use neardup_sketch::hamming;

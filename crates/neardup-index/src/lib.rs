//! # neardup-index: finding fingerprints within k bits
//!
//! This crate will hold the permuted Hamming tables (Manku, Jain and Das Sarma 2007) with their planner, LSH
//! bands, clustering and the `Store` seam. Today it holds the one primitive every comparison uses.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// Hamming distance between two 64-bit fingerprints: the number of differing bits.
///
/// ```
/// assert_eq!(neardup_index::hamming(0b1011, 0b0110), 3);
/// ```
#[inline(always)]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

//! # neardup-sketch: token hashes and sketches
//!
//! The hashing half of neardup's pipeline (`text → tokens → features → sketch`): this crate turns features
//! into fixed-size sketches and knows nothing of text, media or storage.
//!
//! * [`lookup3`]: Bob Jenkins' `hashlittle2`, the token hash pinned by the `simhash-doc-v1` scheme, written
//!   here because the crates.io ports are wrong or panic (see the module docs).
//! * [`simhash`]: Charikar's SimHash with a bit-sliced, branch-free accumulator ([`simhash::SimHash64`]).
//!
//! ```
//! use neardup_sketch::{lookup3::jenkins64, simhash::SimHash64};
//! let mut acc = SimHash64::new();
//! for token in ["hello", "world"] {
//!     acc.add(jenkins64(token.as_bytes()));
//! }
//! let fingerprint: u64 = acc.finish();
//! # let _ = fingerprint;
//! ```
//!
//! Every function here is a pure function of its input; bit order is the big-endian integer reading of the
//! hash octets (octet 0's most significant bit is the integer's bit 63).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bbit;
pub mod bottomk;
pub mod datasketch;
pub mod lookup3;
pub mod oph;
pub mod shingle;
pub mod signature;
pub mod simhash;
pub mod weighted;

#[cfg(test)]
mod test_stats;

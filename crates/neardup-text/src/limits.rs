//! Limits on the work one document may cause: every parser here reads untrusted bytes.
//!
//! None of these changes a fingerprint: a document within the limits gives the same text whatever they are,
//! and a document past them gives an error that names the limit.

use std::io::Read;
use std::time::Duration;

/// The most bytes that decompressing one container (a gzip WARC, an EPUB, a compressed HTTP body) may give.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Decompressed data may be at most this many times its compressed size (beyond a 16 MiB allowance):
/// text compresses 3 to 10 times; a "zip bomb" thousands of times.
pub const MAX_RATIO: u64 = 100;

/// The most time PDF text extraction may take for one document.
pub const PDF_TIMEOUT: Duration = Duration::from_secs(60);

/// The deepest HTML element nesting accepted (the XML limit is [`crate::xml::MAX_DEPTH`]).
pub const MAX_HTML_DEPTH: usize = 10_000;

/// How many decompressed bytes a container of `compressed` bytes may give.
pub fn decompressed_budget(compressed: u64) -> u64 {
    compressed
        .saturating_mul(MAX_RATIO)
        .clamp(16 << 20, MAX_DECOMPRESSED)
}

/// Reads all of `reader`, failing with `Err(budget)` if it gives more than `budget` bytes.
pub(crate) fn read_bounded(reader: impl Read, budget: u64) -> Result<Vec<u8>, ReadBounded> {
    let mut out = Vec::new();
    reader
        .take(budget.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ReadBounded::Io(e.to_string()))?;
    if out.len() as u64 > budget {
        return Err(ReadBounded::TooLarge(budget));
    }
    Ok(out)
}

/// Why a bounded read failed.
#[derive(Debug)]
pub(crate) enum ReadBounded {
    /// The data is corrupt.
    Io(String),
    /// The data is larger than the budget (given).
    TooLarge(u64),
}

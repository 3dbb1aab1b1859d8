//! Limits on the work one document may cause: every parser here reads untrusted bytes.
//!
//! None of these changes a fingerprint: a document within the limits gives the same text whatever they are,
//! and a document past them gives an error that names the limit.

use std::io::Read;
use std::time::Duration;

/// The most bytes that decompressing one document may give (an EPUB's entries together, a compressed HTTP
/// body; a WARC record's body is bounded lower, by [`MAX_WARC_PAYLOAD`]): what one document may hold in
/// memory, within the process's 1 GiB.
pub const MAX_DECOMPRESSED: u64 = 256 << 20;

/// The most bytes one WARC record's block may hold to be read as a document (larger ones are skipped and
/// reported).
pub const MAX_WARC_RECORD: u64 = 256 << 20;

/// The most bytes a WARC record's HTTP payload may decompress to.
pub const MAX_WARC_PAYLOAD: u64 = 64 << 20;

/// Decompressed data may be at most this many times its compressed size (beyond a 16 MiB allowance):
/// text compresses 3 to 10 times; a "zip bomb" thousands of times.
pub const MAX_RATIO: u64 = 100;

/// The most time PDF text extraction may take for one document (a 500-page book takes a few seconds).
pub const PDF_TIMEOUT: Duration = Duration::from_secs(30);

/// The deepest HTML element nesting accepted, as the parser builds the tree (the XML limit is
/// [`crate::xml::MAX_DEPTH`]).
pub const MAX_HTML_DEPTH: usize = 10_000;

/// The most elements the HTML parser may create for one document, the ones it re-creates for misnested
/// formatting included: about 250 MB of tree. Real pages hold a few thousand; the largest, tens of thousands.
pub const MAX_HTML_ELEMENTS: usize = 1_000_000;

/// The most attributes one HTML start tag may carry (the parser's check for duplicates is quadratic in them).
pub const MAX_HTML_ATTRIBUTES: usize = 1_000;

/// The most time parsing one HTML document may take, a backstop for shapes the budgets above do not bound
/// (a ten-megabyte page takes well under a second).
pub const HTML_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest run of text without white space accepted: tokenization normalizes one such run at a time,
/// and NFKC may expand it 18 times (U+FDFA), so the run bounds the memory a text costs. A run this long is
/// not words (a whole novel in Japanese has line breaks).
pub const MAX_RUN: usize = 16 << 20;

/// Refuses a text holding a run of more than [`MAX_RUN`] bytes without white space.
pub fn check_runs(text: &str) -> Result<(), crate::ExtractError> {
    if text.len() <= MAX_RUN {
        return Ok(());
    }
    let mut run_start = 0;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            run_start = i + c.len_utf8();
        } else if i - run_start >= MAX_RUN {
            return Err(crate::ExtractError::LongRun { limit: MAX_RUN });
        }
    }
    Ok(())
}

/// How many decompressed bytes `compressed` bytes may give by the ratio alone: what bounds a stream read
/// a piece at a time (a `.warc.gz`), whose size costs time, not memory.
pub fn ratio_budget(compressed: u64) -> u64 {
    compressed.saturating_mul(MAX_RATIO).max(16 << 20)
}

/// How many decompressed bytes a container of `compressed` bytes may give when it is held whole.
pub fn decompressed_budget(compressed: u64) -> u64 {
    ratio_budget(compressed).min(MAX_DECOMPRESSED)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_without_white_space_are_bounded() {
        let words = "word ".repeat(MAX_RUN / 5 + 10);
        assert!(check_runs(&words).is_ok());
        let mut run = "x".repeat(MAX_RUN);
        assert!(check_runs(&format!("a {run} b")).is_ok());
        run.push('x');
        assert_eq!(
            check_runs(&format!("a {run}\u{3000}b")),
            Err(crate::ExtractError::LongRun { limit: MAX_RUN })
        );
    }
}

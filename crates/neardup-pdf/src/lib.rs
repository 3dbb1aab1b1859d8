//! # neardup-pdf: the text layer of a PDF, page by page
//!
//! neardup reads PDFs with [`pdf_oxide`], the best pure-Rust text extractor we measured (mean F1 0.99 against
//! `pdftotext` on LaTeX, LibreOffice and XeTeX files; it keeps two-column reading order). It is a very large
//! crate (about 700 CPU-seconds to compile), so it lives alone in this crate: the workspace compiles it once and
//! every other crate rebuilds without touching it.
//!
//! This crate only returns each page's raw text. What neardup does with it (joining hyphenated words,
//! repairing spacing diacritics, dropping running headers) is a rule of the fingerprint scheme and lives in
//! `neardup-text`, next to the other media's rules.
//!
//! PDFs are hostile input: every call runs on its own thread, under [`std::panic::catch_unwind`], and with a
//! time limit. A document that panics or runs out of time gives an error, never a crash or a hang. (A thread
//! that overruns its time is left to finish in the background; its result is thrown away.)

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "oxide")]
use pdf_oxide::document::PdfDocument;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

/// The name of the threads that extract PDFs: a program may silence its panic hook for them (their panics
/// are caught and returned as [`PdfError::Panic`]).
pub const THREAD_NAME: &str = "neardup-pdf";

/// Why a PDF gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PdfError {
    /// The file is not a PDF that can be opened (bad header, broken cross-reference table...).
    #[error("cannot open PDF: {0}")]
    Open(String),
    /// The PDF is encrypted and the empty user password does not open it.
    #[error("the PDF is encrypted and needs a password (the empty password does not open it)")]
    Encrypted,
    /// The page tree cannot be read.
    #[error("cannot read the PDF's page tree: {0}")]
    Pages(String),
    /// A page's content stream cannot be read.
    #[error("cannot extract the text of page {page}: {message}")]
    Page {
        /// The page number, from 1.
        page: usize,
        /// What went wrong.
        message: String,
    },
    /// The PDF has pages but no text on any of them: a scan or images only.
    #[error(
        "the PDF has no text layer ({pages} pages, no text on any): it is probably scanned; run OCR first"
    )]
    NoTextLayer {
        /// The number of pages.
        pages: usize,
    },
    /// The PDF has no pages.
    #[error("the PDF has no pages")]
    NoPages,
    /// The extractor panicked on this file (a bug in the extractor, caught).
    #[error("the PDF extractor failed on this file (internal panic: {0})")]
    Panic(String),
    /// This build has no PDF extractor (the `oxide` feature is off).
    #[error("this build of neardup has no PDF support (built without the pdf feature)")]
    Unavailable,
    /// Extraction took longer than the limit.
    #[error("PDF text extraction took longer than the limit of {0} s")]
    TimedOut(u64),
}

/// Extracts the text of every page, in page order, each page in the extractor's reading order.
///
/// Runs on a thread of its own with a 256 MiB stack (PDF object graphs nest deeply), catches panics, and gives
/// up after `timeout`.
pub fn extract_pages(bytes: &[u8], timeout: Duration) -> Result<Vec<String>, PdfError> {
    let data = bytes.to_vec();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .stack_size(256 << 20)
        .spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(|| extract_pages_here(data)))
                .unwrap_or_else(|payload| Err(PdfError::Panic(panic_message(&*payload))));
            // The receiver is gone if the caller timed out: nothing to do.
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(PdfError::Open(format!("cannot start a thread: {e}")));
    }
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(PdfError::TimedOut(timeout.as_secs())),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(PdfError::Panic(
            "the extraction thread ended without a result".into(),
        )),
    }
}

/// Without the extractor: every PDF is refused.
#[cfg(not(feature = "oxide"))]
fn extract_pages_here(_: Vec<u8>) -> Result<Vec<String>, PdfError> {
    Err(PdfError::Unavailable)
}

/// The extraction itself, on the calling thread.
#[cfg(feature = "oxide")]
fn extract_pages_here(data: Vec<u8>) -> Result<Vec<String>, PdfError> {
    let doc = PdfDocument::from_bytes(data).map_err(|e| open_error(&e))?;
    if doc.is_encrypted() {
        match doc.authenticate(b"") {
            Ok(true) => {}
            Ok(false) | Err(_) => return Err(PdfError::Encrypted),
        }
    }
    let count = doc.page_count().map_err(|e| match e {
        pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
        e => PdfError::Pages(e.to_string()),
    })?;
    if count == 0 {
        return Err(PdfError::NoPages);
    }
    let mut pages = Vec::with_capacity(count);
    for i in 0..count {
        let text = doc.extract_text(i).map_err(|e| match e {
            pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
            e => PdfError::Page {
                page: i + 1,
                message: e.to_string(),
            },
        })?;
        pages.push(text);
    }
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(PdfError::NoTextLayer { pages: count });
    }
    Ok(pages)
}

#[cfg(feature = "oxide")]
fn open_error(e: &pdf_oxide::error::Error) -> PdfError {
    match e {
        pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
        e => PdfError::Open(e.to_string()),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(30);

    #[test]
    #[cfg(feature = "oxide")]
    fn garbage_is_an_open_error() {
        let e = extract_pages(b"%PDF-1.4\ngarbage", LIMIT).unwrap_err();
        assert!(
            matches!(
                e,
                PdfError::Open(_) | PdfError::Pages(_) | PdfError::NoPages
            ),
            "{e:?}"
        );
        assert!(extract_pages(b"", LIMIT).is_err());
    }
}

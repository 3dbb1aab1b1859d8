//! # neardup-text: from bytes to tokens
//!
//! The first half of neardup's pipeline, and the only crate that knows about text:
//!
//! ```text
//! bytes ─ detect ─▶ media ─ decode ─▶ Unicode ─ extract ─▶ text ─ profile ─▶ tokens
//! ```
//!
//! * [`media`] decides what a document is, from its content first and its file name second.
//! * [`decode`] finds the character encoding (BOM, HTTP charset, declared charset, UTF-8, detection) and says how.
//! * [`extract()`] turns a document into plain text, one module per medium: plain text as decoded; HTML through
//!   an HTML5 parser, keeping the main content; [`xml`] by vocabulary (JATS, TEI, DocBook, other); PDF through
//!   `neardup-pdf` (pdf_oxide, isolated in its own crate because it is a large build) and then this crate's
//!   rules for hyphenation, accents and running headers; [`epub`] by its spine. [`extract_documents()`] also
//!   reads a [`warc`] archive, which holds many documents.
//! * [`limits`] bounds what one document may cost (decompression ratio, nesting depth, entity expansion, PDF
//!   time): every parser here reads untrusted bytes, and a hostile file is an error, never a crash or a hang.
//! * [`profile`] holds the versioned tokenization rules of the schemes (`doc_v1` for `simhash-doc-v1`).
//!
//! Every rule that changes text is written in `docs/spec/simhash-doc-v1.md`; parsers whose behaviour decides
//! the text (quick-xml, pdf_oxide) are pinned exactly.
//!
//! Every step is a pure function of its input: the same bytes give the same text and tokens on every machine,
//! whatever the thread count. The Unicode data (ICU4X 2.4.0, Unicode 18.0.0) is pinned exactly, because a
//! new Unicode version would change tokens and therefore fingerprints.
//!
//! ```
//! use neardup_text::{extract, media::MediaHint};
//! let doc = extract(b"<p>Hello <b>W</b>orld</p><script>x()</script>", MediaHint::Auto).unwrap();
//! assert_eq!(doc.text, "Hello World");
//! assert_eq!(neardup_text::profile::doc_v1::tokens(&doc.text), ["hello", "world"]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
pub mod epub;
mod extract;
mod html;
pub mod limits;
pub mod media;
mod pdf;
pub mod profile;
mod text_builder;
pub mod warc;
pub mod xml;

pub use extract::{Document, ExtractError, Extracted, extract, extract_documents};
pub use neardup_pdf::{
    PdfError, THREAD_NAME as PDF_THREAD_NAME, Worker as PdfWorker,
    isolate_in_worker as isolate_pdf_in_worker, run_worker as run_pdf_worker,
};

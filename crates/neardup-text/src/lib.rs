//! # neardup-text: from bytes to tokens
//!
//! The first half of neardup's pipeline, and the only crate that knows about text:
//!
//! ```text
//! bytes ─ detect ─▶ media ─ decode ─▶ Unicode ─ extract ─▶ text ─ profile ─▶ tokens
//! ```
//!
//! * [`media`] decides what a document is, from its content first and its file name second.
//! * [`decode`] finds the character encoding (BOM, declared charset, UTF-8, detection) and says how.
//! * [`extract()`] turns a document into plain text: plain text as decoded, HTML through an HTML5 parser.
//! * [`profile`] holds the versioned tokenization rules of the schemes (`doc_v1` for `simhash-doc-v1`).
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
mod extract;
mod html;
pub mod media;
pub mod profile;
mod text_builder;

pub use extract::{ExtractError, Extracted, extract};

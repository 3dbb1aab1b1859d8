//! Bytes to extracted text: detection, decoding and per-medium extraction, with typed errors.

use crate::decode::{Decoded, EncodingSource, decode};
use crate::html::html_to_text;
use crate::media::{Media, MediaHint, detect};
use crate::text_builder::TextBuilder;

/// Why a document gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// A format recognised by its magic bytes that this version cannot read.
    #[error("{0} is not a supported medium (supported: text, html)")]
    UnsupportedMedia(&'static str),
    /// The bytes are not text in any encoding (they hold NUL bytes outside UTF-16).
    #[error(
        "binary content: found a NUL byte at offset {offset}; not text in any encoding (use --media text to force)"
    )]
    Binary {
        /// Offset of the first NUL byte.
        offset: usize,
    },
}

/// A document's text and how it was obtained.
#[derive(Clone, Debug)]
pub struct Extracted {
    /// The extracted text in canonical white-space form (no leading or trailing white space; inner runs become one space, or one line break where they hold one).
    pub text: String,
    /// The medium it was read as.
    pub media: Media,
    /// The encoding's WHATWG name (`UTF-8`, `windows-1252`, `Shift_JIS`, ...).
    pub encoding: &'static str,
    /// How the encoding was chosen.
    pub encoding_source: EncodingSource,
    /// Whether invalid byte sequences were replaced by U+FFFD.
    pub malformed: bool,
}

/// Detects, decodes and extracts a document's text.
///
/// ```
/// use neardup_text::{extract, media::{Media, MediaHint}};
/// let doc = extract(b"Caf\xe9 cr\xe8me, br\xfbl\xe9e et cr\xeape au sucre", MediaHint::Auto).unwrap();
/// assert_eq!(doc.media, Media::Text);
/// assert_eq!(doc.encoding, "windows-1252");
/// assert_eq!(doc.text, "Café crème, brûlée et crêpe au sucre");
/// ```
pub fn extract(bytes: &[u8], hint: MediaHint<'_>) -> Result<Extracted, ExtractError> {
    let media = detect(bytes, hint).map_err(|u| ExtractError::UnsupportedMedia(u.0))?;
    let Decoded {
        text,
        encoding,
        source,
        malformed,
    } = decode(bytes, media == Media::Html);
    if !matches!(hint, MediaHint::Force(_))
        && let Some(offset) = text.find('\0')
    {
        return Err(ExtractError::Binary {
            offset: byte_offset_hint(bytes, offset),
        });
    }
    let text = match media {
        Media::Text => {
            let mut b = TextBuilder::with_capacity(text.len());
            b.push_lines(&text);
            b.finish()
        }
        Media::Html => html_to_text(&text),
    };
    Ok(Extracted {
        text,
        media,
        encoding: encoding.name(),
        encoding_source: source,
        malformed,
    })
}

/// The byte offset of the first NUL in the input (the decoded offset differs for UTF-16 and legacy encodings).
fn byte_offset_hint(bytes: &[u8], decoded_offset: usize) -> usize {
    bytes.iter().position(|&b| b == 0).unwrap_or(decoded_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        assert_eq!(
            extract(b"%PDF-1.4", MediaHint::Auto).unwrap_err(),
            ExtractError::UnsupportedMedia("PDF")
        );
        assert_eq!(
            extract(b"ab\0\x01\x02cd", MediaHint::Auto).unwrap_err(),
            ExtractError::Binary { offset: 2 }
        );
        assert!(extract(b"", MediaHint::Auto).unwrap().text.is_empty());
    }
}

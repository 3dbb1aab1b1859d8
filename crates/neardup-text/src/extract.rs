//! Bytes to extracted text: detection, decoding and per-medium extraction, with typed errors.

use crate::decode::{Decoded, EncodingSource, Prescan, decode_with};
use crate::epub::EpubError;
use crate::html::html_to_text;
use crate::media::{Media, MediaHint, detect};
use crate::text_builder::TextBuilder;
use crate::warc::WarcError;
use crate::xml::XmlError;
use encoding_rs::Encoding;
use neardup_pdf::PdfError;

/// Why a document gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// A format recognised by its magic bytes that this version cannot read.
    #[error("{0} is not a supported medium (supported: text, html, xml, pdf, epub, warc)")]
    UnsupportedMedia(&'static str),
    /// A PDF without text, encrypted, or broken.
    #[error(transparent)]
    Pdf(#[from] PdfError),
    /// XML that is not well-formed or passes a limit.
    #[error(transparent)]
    Xml(#[from] XmlError),
    /// A broken EPUB.
    #[error(transparent)]
    Epub(#[from] EpubError),
    /// A broken WARC archive or record.
    #[error(transparent)]
    Warc(#[from] WarcError),
    /// HTML nesting deeper than the limit.
    #[error("HTML elements nest deeper than the limit of {limit}")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// HTML past one of its markup budgets ([`crate::limits::MAX_HTML_ELEMENTS`],
    /// [`crate::limits::MAX_HTML_ATTRIBUTES`]).
    #[error("HTML has more {what} than the limit of {limit}")]
    HtmlBudget {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// Text with a run longer than [`crate::limits::MAX_RUN`] without white space.
    #[error(
        "the text has a run of more than {limit} bytes without white space (not words; the limit bounds memory)"
    )]
    LongRun {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Extraction passed its time budget.
    #[error("extraction took longer than the limit of {seconds} s")]
    TimedOut {
        /// The limit, in seconds.
        seconds: u64,
    },
    /// A WARC archive holds many documents: [`extract_documents`] reads them.
    #[error(
        "a WARC archive holds many documents (one per response record), not one: `neardup hash` and `neardup dedup` list each"
    )]
    ManyDocuments,
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
    extract_as(bytes, media, None, matches!(hint, MediaHint::Force(_)))
}

/// One document of a file: most files are one document; a WARC archive is many.
#[derive(Debug)]
pub struct Document {
    /// The document's id inside its file (a WARC record's `WARC-Target-URI`), or `None` for the file itself.
    pub id: Option<String>,
    /// Its size in bytes: the file's, or the record's payload (after transfer and content decoding).
    pub bytes: u64,
    /// A WARC record's id and date.
    pub record: Option<crate::warc::RecordMeta>,
    /// Its text, or why it has none.
    pub result: Result<Extracted, ExtractError>,
}

/// Detects, decodes and extracts every document of a file: one for most media, one per response record for
/// a WARC archive (in archive order, each read and extracted when it is asked for, so that memory holds one
/// record at a time). A WARC that is damaged part-way gives the documents before the damage and then one
/// item with `id: None` and the error.
pub fn extract_documents<'a>(
    bytes: &'a [u8],
    hint: MediaHint<'_>,
) -> Box<dyn Iterator<Item = Document> + 'a> {
    let whole = |result| {
        Box::new(std::iter::once(Document {
            id: None,
            bytes: bytes.len() as u64,
            record: None,
            result,
        }))
    };
    let media = match detect(bytes, hint) {
        Ok(m) => m,
        Err(u) => return whole(Err(ExtractError::UnsupportedMedia(u.0))),
    };
    if media != Media::Warc {
        return whole(extract_as(
            bytes,
            media,
            None,
            matches!(hint, MediaHint::Force(_)),
        ));
    }
    Box::new(crate::warc::warc_documents(bytes).map(|item| match item {
        Ok(r) => Document {
            bytes: r.body.as_ref().map_or(0, |b| b.len() as u64),
            result: match r.body {
                Ok(body) => extract_as(&body, r.media, r.charset, false),
                Err(e) => Err(e.into()),
            },
            id: Some(r.uri),
            record: Some(r.record),
        },
        Err(e) => Document {
            id: None,
            bytes: 0,
            record: None,
            result: Err(e.into()),
        },
    }))
}

/// Extracts a document whose medium is known; `charset` is a charset from outside the document (HTTP).
fn extract_as(
    bytes: &[u8],
    media: Media,
    charset: Option<&'static Encoding>,
    forced: bool,
) -> Result<Extracted, ExtractError> {
    let binary = |text: String, encoding: &'static str, source: EncodingSource| Extracted {
        text,
        media,
        encoding,
        encoding_source: source,
        malformed: false,
    };
    match media {
        Media::Pdf => {
            let pages = neardup_pdf::extract_pages(bytes, crate::limits::PDF_TIMEOUT)?;
            return Ok(binary(
                crate::pdf::pages_to_text(&pages),
                "binary",
                EncodingSource::Container,
            ));
        }
        Media::Epub => {
            return Ok(binary(
                crate::epub::epub_to_text(bytes)?,
                "binary",
                EncodingSource::Container,
            ));
        }
        Media::Warc => return Err(ExtractError::ManyDocuments),
        Media::Text | Media::Html | Media::Xml => {}
    }
    let prescan = match media {
        Media::Html => Prescan::Html,
        Media::Xml => Prescan::Xml,
        _ => Prescan::None,
    };
    let Decoded {
        text,
        encoding,
        source,
        malformed,
    } = decode_with(bytes, prescan, charset);
    if !forced && let Some(offset) = text.find('\0') {
        return Err(ExtractError::Binary {
            offset: byte_offset_hint(bytes, offset),
        });
    }
    let text = match media {
        Media::Html => html_to_text(&text)?,
        Media::Xml => crate::xml::xml_to_text(&text)?,
        _ => {
            let mut b = TextBuilder::with_capacity(text.len());
            b.push_lines(&text);
            b.finish()
        }
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
        assert!(matches!(
            extract(b"%PDF-1.4", MediaHint::Auto).unwrap_err(),
            ExtractError::Pdf(_)
        ));
        assert_eq!(
            extract(b"\x89PNG\r\n\x1a\n", MediaHint::Auto).unwrap_err(),
            ExtractError::UnsupportedMedia("PNG image")
        );
        assert_eq!(
            extract(b"WARC/1.1\r\n", MediaHint::Auto).unwrap_err(),
            ExtractError::ManyDocuments
        );
        assert_eq!(
            extract(b"ab\0\x01\x02cd", MediaHint::Auto).unwrap_err(),
            ExtractError::Binary { offset: 2 }
        );
        assert!(extract(b"", MediaHint::Auto).unwrap().text.is_empty());
    }
}

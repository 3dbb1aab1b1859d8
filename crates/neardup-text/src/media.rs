//! What a document is: detection by content first, the file name as a hint, and an explicit override.

use std::fmt;

/// A medium that neardup can extract text from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Media {
    /// Plain text in any encoding.
    Text,
    /// HTML or XHTML.
    Html,
    /// XML: JATS, TEI and DocBook by their own rules, any other vocabulary as all of its text.
    Xml,
    /// PDF: its text layer.
    Pdf,
    /// EPUB: the XHTML documents of its spine, in order.
    Epub,
    /// A WARC archive (`.warc`, or gzip-compressed `.warc.gz`): many documents, one per response record.
    Warc,
}

/// Every medium, in the order they are listed to users.
pub const ALL_MEDIA: &[Media] = &[
    Media::Text,
    Media::Html,
    Media::Xml,
    Media::Pdf,
    Media::Epub,
    Media::Warc,
];

impl Media {
    /// The lowercase name used in output and in `--media`.
    pub fn name(self) -> &'static str {
        match self {
            Media::Text => "text",
            Media::Html => "html",
            Media::Xml => "xml",
            Media::Pdf => "pdf",
            Media::Epub => "epub",
            Media::Warc => "warc",
        }
    }

    /// Parses a name given by a user (`text`, `txt`, `html`, `htm`, `xhtml`, `xml`, `jats`, `tei`, `docbook`,
    /// `pdf`, `epub`, `warc`), ignoring case.
    pub fn from_name(name: &str) -> Option<Media> {
        match name.to_ascii_lowercase().as_str() {
            "text" | "txt" | "plain" => Some(Media::Text),
            "html" | "htm" | "xhtml" => Some(Media::Html),
            "xml" | "jats" | "tei" | "docbook" => Some(Media::Xml),
            "pdf" => Some(Media::Pdf),
            "epub" => Some(Media::Epub),
            "warc" => Some(Media::Warc),
            _ => None,
        }
    }
}

impl fmt::Display for Media {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the caller knows about a document's medium.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MediaHint<'a> {
    /// Nothing: detect from the content.
    #[default]
    Auto,
    /// The document's file name or path: its extension decides when the content does not.
    FileName(&'a str),
    /// The medium is known: no detection.
    Force(Media),
}

/// A format we recognise by its magic bytes but cannot extract text from (yet, or ever).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

/// Formats we do not read, recognised by their leading bytes. Checked before anything else so that an image or
/// an archive is never fingerprinted as if it were text.
const MAGIC: &[(&[u8], &str)] = &[
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"\x7fELF", "ELF executable"),
    (b"{\\rtf", "RTF document"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "OLE document (DOC, XLS, ...)",
    ),
];

/// Decides the medium of a document from its leading bytes and the hint.
///
/// Order (simhash-doc-v1 spec, "Media detection"): a forced medium wins; then magic bytes: `%PDF-` in the first
/// 1024 bytes is PDF, `WARC/` is WARC, gzip whose content starts with `WARC/` is WARC, a zip archive whose
/// first entry is `mimetype` = `application/epub+zip` (or any zip named `.epub`) is EPUB, and other magic
/// bytes give [`Unsupported`]; then HTML sniffing of the content (the first tag, after white space and a
/// BOM); then XML sniffing (an XML declaration, a doctype or a first element that is not HTML); then the file
/// extension; then text.
pub fn detect(bytes: &[u8], hint: MediaHint<'_>) -> Result<Media, Unsupported> {
    if let MediaHint::Force(m) = hint {
        return Ok(m);
    }
    let ext = match hint {
        MediaHint::FileName(name) => media_of_extension(name),
        _ => None,
    };
    if bytes[..bytes.len().min(1024)]
        .windows(5)
        .any(|w| w == b"%PDF-")
    {
        return Ok(Media::Pdf);
    }
    if bytes.starts_with(b"WARC/") {
        return Ok(Media::Warc);
    }
    if bytes.starts_with(b"\x1f\x8b") {
        return if ext == Some(Media::Warc) || gzip_holds_warc(bytes) {
            Ok(Media::Warc)
        } else {
            Err(Unsupported("gzip-compressed data"))
        };
    }
    if bytes.starts_with(b"PK\x03\x04") {
        return if ext == Some(Media::Epub) || is_epub_zip(bytes) {
            Ok(Media::Epub)
        } else {
            Err(Unsupported("zip archive (DOCX, ODT, ...)"))
        };
    }
    for (magic, name) in MAGIC {
        if bytes.starts_with(magic) {
            return Err(Unsupported(name));
        }
    }
    if sniff_html(bytes) {
        return Ok(Media::Html);
    }
    if sniff_xml(bytes) {
        return Ok(Media::Xml);
    }
    match ext {
        // Container media need their magic bytes: a `.pdf` without `%PDF-` is not a PDF.
        Some(m @ (Media::Html | Media::Text | Media::Xml)) => Ok(m),
        _ => Ok(Media::Text),
    }
}

/// The medium an extension suggests (`page.HTML` → HTML), if any.
pub fn media_of_extension(name: &str) -> Option<Media> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".warc.gz") {
        return Some(Media::Warc);
    }
    let ext = lower.rsplit_once('.')?.1;
    match ext {
        "html" | "htm" | "xhtml" | "shtml" | "xht" => Some(Media::Html),
        "txt" | "text" | "md" | "markdown" | "rst" | "asciidoc" | "adoc" | "org" => {
            Some(Media::Text)
        }
        "xml" | "nxml" | "jats" | "tei" | "dbk" | "docbook" => Some(Media::Xml),
        "pdf" => Some(Media::Pdf),
        "epub" => Some(Media::Epub),
        "warc" => Some(Media::Warc),
        _ => None,
    }
}

/// An EPUB's first zip entry is the uncompressed file `mimetype` holding `application/epub+zip` (EPUB OCF
/// 3.3, "ZIP container media type identification"): its name starts at offset 30 and its content follows.
fn is_epub_zip(bytes: &[u8]) -> bool {
    bytes.len() > 58 && &bytes[30..38] == b"mimetype" && &bytes[38..58] == b"application/epub+zip"
}

/// Whether gzip data starts with a WARC record: the first few bytes are inflated and looked at.
fn gzip_holds_warc(bytes: &[u8]) -> bool {
    use std::io::Read;
    let mut head = [0u8; 5];
    let mut dec = flate2::read::GzDecoder::new(bytes);
    dec.read_exact(&mut head).is_ok() && &head == b"WARC/"
}

/// The tags that mark HTML when they open a document (the WHATWG MIME sniffing list).
const HTML_OPENERS: &[&[u8]] = &[
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
];

/// The first bytes of a document as ASCII: after a BOM, UTF-16 is read through every other byte.
fn probe(bytes: &[u8]) -> Vec<u8> {
    if bytes.starts_with(b"\xff\xfe") {
        bytes[2..].iter().step_by(2).take(512).copied().collect()
    } else if bytes.starts_with(b"\xfe\xff") {
        // The low byte of each big-endian unit; a file of the BOM alone has none.
        bytes.get(3..).map_or_else(Vec::new, |rest| {
            rest.iter().step_by(2).take(512).copied().collect()
        })
    } else {
        bytes
            .strip_prefix(b"\xef\xbb\xbf")
            .unwrap_or(bytes)
            .iter()
            .take(1024)
            .copied()
            .collect()
    }
}

/// XML sniffing, after HTML sniffing failed: after an optional BOM and white space, the content opens with an
/// XML declaration `<?xml`, a `<!DOCTYPE`, or a first element that declares a namespace (`xmlns` in its start
/// tag). A bare `<name>` is not enough: plain text may start with one.
pub fn sniff_xml(bytes: &[u8]) -> bool {
    let probe = probe(bytes);
    let start = probe
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(probe.len());
    let p = &probe[start..];
    if p.starts_with(b"<?xml") && p.get(5).is_some_and(|b| b.is_ascii_whitespace()) {
        return true;
    }
    if p.len() > 9 && p[..9].eq_ignore_ascii_case(b"<!doctype") {
        return true;
    }
    if p.first() != Some(&b'<') || !p.get(1).is_some_and(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let tag_end = p.iter().position(|&b| b == b'>').unwrap_or(p.len());
    p[..tag_end]
        .windows(6)
        .any(|w| w == b" xmlns" || w == b"\nxmlns")
}

/// WHATWG-style sniffing: after an optional BOM and white space, does the content open with an HTML tag?
/// UTF-16 content is read through its ASCII bytes (every other byte), so a UTF-16 HTML file sniffs too.
pub fn sniff_html(bytes: &[u8]) -> bool {
    let probe = probe(bytes);
    let start = probe
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c))
        .unwrap_or(probe.len());
    let mut p = &probe[start..];
    // An XML declaration may precede XHTML; after one, only `<html` or an HTML doctype make HTML (an XML
    // document whose root is `<a>` or `<p>` stays XML).
    if p.starts_with(b"<?xml") {
        match p.windows(2).position(|w| w == b"?>") {
            Some(end) => {
                p = &p[end + 2..];
                let ws = p
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .unwrap_or(p.len());
                p = &p[ws..];
                let opens = |tag: &[u8]| {
                    p.len() > tag.len()
                        && p[..tag.len()].eq_ignore_ascii_case(tag)
                        && matches!(p[tag.len()], b' ' | b'>' | b'\t' | b'\n' | b'\r' | 0x0c)
                };
                return opens(b"<html") || opens(b"<!doctype html");
            }
            None => return false,
        }
    }
    HTML_OPENERS.iter().any(|opener| {
        p.len() > opener.len()
            && p[..opener.len()].eq_ignore_ascii_case(opener)
            && (opener == b"<!--"
                || matches!(p[opener.len()], b' ' | b'>' | b'\t' | b'\n' | b'\r' | 0x0c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of a byte-order mark alone (or with half a code unit) is text, and no panic.
    #[test]
    fn bom_alone() {
        for bom in [&b"\xfe\xff"[..], b"\xff\xfe", b"\xef\xbb\xbf"] {
            assert_eq!(detect(bom, MediaHint::Auto), Ok(Media::Text), "{bom:?}");
            assert_eq!(crate::extract(bom, MediaHint::Auto).unwrap().text, "");
        }
        // Half a code unit after the mark is one malformed character.
        for bom in [&b"\xfe\xff\x00"[..], b"\xff\xfe\x00"] {
            assert_eq!(detect(bom, MediaHint::Auto), Ok(Media::Text), "{bom:?}");
            assert!(crate::extract(bom, MediaHint::Auto).unwrap().malformed);
        }
    }

    #[test]
    fn detection_order() {
        assert_eq!(
            detect(b"<!DOCTYPE html><p>x", MediaHint::Auto),
            Ok(Media::Html)
        );
        assert_eq!(
            detect(b"\xef\xbb\xbf  <HTML lang=en>", MediaHint::Auto),
            Ok(Media::Html)
        );
        assert_eq!(
            detect(b"<p>x</p>", MediaHint::FileName("a.txt")),
            Ok(Media::Html)
        );
        assert_eq!(
            detect(b"just words", MediaHint::FileName("a.htm")),
            Ok(Media::Html)
        );
        assert_eq!(
            detect(b"just words", MediaHint::FileName("a.md")),
            Ok(Media::Text)
        );
        assert_eq!(
            detect(b"<pre>x", MediaHint::Auto),
            Ok(Media::Text),
            "<pre is not an opener"
        );
        assert_eq!(
            detect(b"<abbr>", MediaHint::Auto),
            Ok(Media::Text),
            "<a must end the tag name"
        );
        assert_eq!(detect(b"%PDF-1.7", MediaHint::Auto), Ok(Media::Pdf));
        assert_eq!(
            detect(b"junk\n%PDF-1.7", MediaHint::FileName("a.txt")),
            Ok(Media::Pdf)
        );
        assert_eq!(
            detect(b"not a pdf", MediaHint::FileName("a.pdf")),
            Ok(Media::Text),
            "a container medium needs its magic bytes"
        );
        assert_eq!(detect(b"WARC/1.1\r\n", MediaHint::Auto), Ok(Media::Warc));
        assert_eq!(
            detect(b"PK\x03\x04rest", MediaHint::Auto),
            Err(Unsupported("zip archive (DOCX, ODT, ...)"))
        );
        assert_eq!(
            detect(b"PK\x03\x04rest", MediaHint::FileName("b.EPUB")),
            Ok(Media::Epub)
        );
        assert_eq!(
            detect(b"\x1f\x8b\x08\x00", MediaHint::FileName("c.warc.gz")),
            Ok(Media::Warc)
        );
        assert_eq!(
            detect(b"\x1f\x8b\x08\x00", MediaHint::Auto),
            Err(Unsupported("gzip-compressed data"))
        );
        assert_eq!(
            detect(b"<?xml version=\"1.0\"?><article>", MediaHint::Auto),
            Ok(Media::Xml)
        );
        assert_eq!(
            detect(b"<?xml version=\"1.0\"?><a><p>x</p></a>", MediaHint::Auto),
            Ok(Media::Xml),
            "after an XML declaration only <html makes HTML"
        );
        assert_eq!(
            detect(
                b"<TEI xmlns=\"http://www.tei-c.org/ns/1.0\">",
                MediaHint::Auto
            ),
            Ok(Media::Xml)
        );
        assert_eq!(
            detect(
                b"<!DOCTYPE article PUBLIC \"-//NLM//DTD JATS\">",
                MediaHint::Auto
            ),
            Ok(Media::Xml)
        );
        assert_eq!(
            detect(b"<abc>text</abc>", MediaHint::Auto),
            Ok(Media::Text),
            "a bare element is not enough to call it XML"
        );
        assert_eq!(
            detect(b"x <y> z", MediaHint::FileName("data.xml")),
            Ok(Media::Xml)
        );
        assert_eq!(
            detect(b"%PDF-1.7", MediaHint::Force(Media::Text)),
            Ok(Media::Text)
        );
        assert_eq!(
            detect(
                b"<?xml version=\"1.0\"?>\n<html xmlns=\"x\">",
                MediaHint::Auto
            ),
            Ok(Media::Html)
        );
        let utf16: Vec<u8> = "\u{feff}<html>"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        assert_eq!(detect(&utf16, MediaHint::Auto), Ok(Media::Html));
    }
}

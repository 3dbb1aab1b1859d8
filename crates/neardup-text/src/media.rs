//! What a document is: detection by content first, the file name as a hint, and an explicit override.

use std::fmt;

/// A medium that neardup can extract text from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Media {
    /// Plain text in any encoding.
    Text,
    /// HTML or XHTML.
    Html,
}

impl Media {
    /// The lowercase name used in output and in `--media`.
    pub fn name(self) -> &'static str {
        match self {
            Media::Text => "text",
            Media::Html => "html",
        }
    }

    /// Parses a name given by a user (`text`, `txt`, `html`, `htm`, `xhtml`), ignoring case.
    pub fn from_name(name: &str) -> Option<Media> {
        match name.to_ascii_lowercase().as_str() {
            "text" | "txt" | "plain" => Some(Media::Text),
            "html" | "htm" | "xhtml" => Some(Media::Html),
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

/// Formats recognised by their leading bytes. Checked before anything else so that a PDF or a zip file
/// is never fingerprinted as if it were text.
const MAGIC: &[(&[u8], &str)] = &[
    (b"%PDF-", "PDF"),
    (b"PK\x03\x04", "zip archive (EPUB, DOCX, ODT, ...)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"\x7fELF", "ELF executable"),
    (b"WARC/", "WARC archive"),
    (b"{\\rtf", "RTF document"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "OLE document (DOC, XLS, ...)",
    ),
];

/// Decides the medium of a document from its leading bytes and the hint.
///
/// Order: a forced medium wins; then magic bytes of formats we do not read give [`Unsupported`]; then HTML
/// sniffing of the content (the first tag, after white space and a BOM); then the file extension; then text.
pub fn detect(bytes: &[u8], hint: MediaHint<'_>) -> Result<Media, Unsupported> {
    if let MediaHint::Force(m) = hint {
        return Ok(m);
    }
    for (magic, name) in MAGIC {
        if bytes.starts_with(magic) {
            return Err(Unsupported(name));
        }
    }
    if sniff_html(bytes) {
        return Ok(Media::Html);
    }
    if let MediaHint::FileName(name) = hint
        && let Some(m) = media_of_extension(name)
    {
        return Ok(m);
    }
    Ok(Media::Text)
}

/// The medium an extension suggests (`page.HTML` → HTML), if any.
pub fn media_of_extension(name: &str) -> Option<Media> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" | "xhtml" | "shtml" | "xht" => Some(Media::Html),
        "txt" | "text" | "md" | "markdown" | "rst" | "asciidoc" | "adoc" | "org" => {
            Some(Media::Text)
        }
        _ => None,
    }
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

/// WHATWG-style sniffing: after an optional BOM and white space, does the content open with an HTML tag?
/// UTF-16 content is read through its ASCII bytes (every other byte), so a UTF-16 HTML file sniffs too.
pub fn sniff_html(bytes: &[u8]) -> bool {
    let probe: Vec<u8> = if bytes.starts_with(b"\xff\xfe") {
        bytes[2..].iter().step_by(2).take(512).copied().collect()
    } else if bytes.starts_with(b"\xfe\xff") {
        bytes[3..].iter().step_by(2).take(512).copied().collect()
    } else {
        bytes
            .strip_prefix(b"\xef\xbb\xbf")
            .unwrap_or(bytes)
            .iter()
            .take(1024)
            .copied()
            .collect()
    };
    let start = probe
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c))
        .unwrap_or(probe.len());
    let mut p = &probe[start..];
    // An XML declaration may precede XHTML.
    if p.starts_with(b"<?xml") {
        match p.windows(2).position(|w| w == b"?>") {
            Some(end) => {
                p = &p[end + 2..];
                let ws = p
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .unwrap_or(p.len());
                p = &p[ws..];
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
        assert_eq!(
            detect(b"%PDF-1.7", MediaHint::Auto),
            Err(Unsupported("PDF"))
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

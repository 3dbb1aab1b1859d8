//! Character encodings: which one a document uses, how we know, and decoding it to Unicode.
//!
//! Order of trust (simhash-doc-v1 spec, "Decoding"): a byte order mark; then, for HTML, a charset declared in
//! the first 1024 bytes (`<meta charset>` or `http-equiv` Content-Type, as browsers prescan); then UTF-16 recognised
//! by the pattern of zero bytes; then UTF-8 if the whole document is valid UTF-8; then chardetng's guess
//! (the detector Firefox uses). Invalid byte sequences become U+FFFD, which separates tokens, and are reported.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};
use std::fmt;

/// How the encoding was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodingSource {
    /// A byte order mark.
    Bom,
    /// A charset declared inside the document (`<meta charset>`, `<?xml encoding=...?>`).
    Declared,
    /// A charset given from outside the document: an HTTP `Content-Type` header in a WARC record.
    External,
    /// The container format defines the encoding of its text (PDF, EPUB).
    Container,
    /// The whole document is valid UTF-8.
    Utf8,
    /// The zero-byte pattern of BOM-less UTF-16.
    Utf16Pattern,
    /// chardetng's statistical guess.
    Detected,
}

impl EncodingSource {
    /// The lowercase name used in output.
    pub fn name(self) -> &'static str {
        match self {
            EncodingSource::Bom => "bom",
            EncodingSource::Declared => "declared",
            EncodingSource::External => "external",
            EncodingSource::Container => "container",
            EncodingSource::Utf8 => "utf-8-valid",
            EncodingSource::Utf16Pattern => "utf-16-pattern",
            EncodingSource::Detected => "detected",
        }
    }
}

impl fmt::Display for EncodingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded document.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The text, without a BOM.
    pub text: String,
    /// The encoding used.
    pub encoding: &'static Encoding,
    /// How it was chosen.
    pub source: EncodingSource,
    /// Whether some bytes were invalid in that encoding (and became U+FFFD).
    pub malformed: bool,
}

/// Which declaration inside the document names its charset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prescan {
    /// None (plain text).
    None,
    /// HTML's `<meta charset>` prescan.
    Html,
    /// The XML declaration's `encoding` pseudo-attribute.
    Xml,
}

/// Decodes a document; `html` enables the `<meta charset>` prescan.
pub fn decode(bytes: &[u8], html: bool) -> Decoded {
    decode_with(
        bytes,
        if html { Prescan::Html } else { Prescan::None },
        None,
    )
}

/// Decodes a document with the given in-document prescan and an optional charset from outside the document
/// (an HTTP header), which ranks after a BOM and before any declaration inside the document.
pub fn decode_with(bytes: &[u8], prescan: Prescan, external: Option<&'static Encoding>) -> Decoded {
    let (encoding, source) = choose(bytes, prescan, external);
    // `decode_with_bom_removal` strips a BOM of the chosen encoding only.
    let (text, malformed) = encoding.decode_with_bom_removal(bytes);
    Decoded {
        text: text.into_owned(),
        encoding,
        source,
        malformed,
    }
}

fn choose(
    bytes: &[u8],
    prescan: Prescan,
    external: Option<&'static Encoding>,
) -> (&'static Encoding, EncodingSource) {
    if let Some((enc, _)) = Encoding::for_bom(bytes) {
        return (enc, EncodingSource::Bom);
    }
    if let Some(enc) = external {
        return (ascii_compatible(enc), EncodingSource::External);
    }
    let declared = match prescan {
        Prescan::None => None,
        Prescan::Html => prescan_meta_charset(bytes),
        Prescan::Xml => xml_declared_encoding(bytes),
    };
    if let Some(enc) = declared {
        return (enc, EncodingSource::Declared);
    }
    // Before the UTF-8 check: ASCII text in UTF-16 is also valid (if NUL-ridden) UTF-8.
    if let Some(enc) = utf16_by_zero_bytes(bytes) {
        return (enc, EncodingSource::Utf16Pattern);
    }
    if std::str::from_utf8(bytes).is_ok() {
        return (UTF_8, EncodingSource::Utf8);
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    (
        detector.guess(None, chardetng::Utf8Detection::Allow),
        EncodingSource::Detected,
    )
}

/// BOM-less UTF-16: text in Latin scripts has a zero in (nearly) every other byte. Demands a strong,
/// one-sided pattern on the first 4 KiB so that binary junk is not taken for UTF-16.
fn utf16_by_zero_bytes(bytes: &[u8]) -> Option<&'static Encoding> {
    let probe = &bytes[..bytes.len().min(4096) & !1];
    if probe.len() < 8 {
        return None;
    }
    let pairs = probe.len() / 2;
    let even_zeros = probe.iter().step_by(2).filter(|&&b| b == 0).count();
    let odd_zeros = probe.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    if odd_zeros * 10 >= pairs * 7 && even_zeros * 20 <= pairs {
        Some(UTF_16LE)
    } else if even_zeros * 10 >= pairs * 7 && odd_zeros * 20 <= pairs {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// The HTML "prescan a byte stream to determine its encoding" step, reduced to what real pages use:
/// `<meta charset=X>` and `<meta http-equiv=Content-Type content="...; charset=X">` in the first 1024 bytes,
/// outside comments. A declared UTF-16 means UTF-8 (the bytes were ASCII-compatible to be read at all), and
/// x-user-defined means windows-1252, as in browsers.
pub fn prescan_meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(1024)];
    let mut i = 0;
    while i < head.len() {
        if head[i..].starts_with(b"<!--") {
            i = match find(&head[i + 4..], b"-->") {
                Some(end) => i + 4 + end + 3,
                None => return None,
            };
            continue;
        }
        if head[i] == b'<' && head.len() > i + 5 && head[i + 1..i + 5].eq_ignore_ascii_case(b"meta")
        {
            let end = head[i..]
                .iter()
                .position(|&b| b == b'>')
                .map_or(head.len(), |p| i + p);
            let tag = head[i + 5..end].to_ascii_lowercase();
            if let Some(label) = charset_in_meta(&tag)
                && let Some(enc) = Encoding::for_label(label)
            {
                return Some(ascii_compatible(enc));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    None
}

/// A declared UTF-16 means UTF-8 (the declaration was readable as ASCII, so the bytes are not UTF-16), and
/// x-user-defined means windows-1252, as in browsers.
fn ascii_compatible(enc: &'static Encoding) -> &'static Encoding {
    if enc == UTF_16LE || enc == UTF_16BE {
        UTF_8
    } else if enc == encoding_rs::X_USER_DEFINED {
        encoding_rs::WINDOWS_1252
    } else {
        enc
    }
}

/// The `encoding` of an XML declaration (`<?xml version="1.0" encoding="ISO-8859-1"?>`) at the very start.
pub fn xml_declared_encoding(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(1024)];
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = find(head, b"?>")?;
    let decl = head[..end].to_ascii_lowercase();
    let at = find(&decl, b"encoding")?;
    let rest = trim_start(&decl[at + 8..]);
    let rest = trim_start(rest.strip_prefix(b"=")?);
    let quote = *rest.first()?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let value = &rest[1..];
    let close = value.iter().position(|&b| b == quote)?;
    Encoding::for_label(&value[..close]).map(ascii_compatible)
}

/// Finds `charset=VALUE` in a lowercased meta tag's attributes (both the `charset` attribute and the
/// `content` attribute of an `http-equiv` declaration use this form).
fn charset_in_meta(tag: &[u8]) -> Option<&[u8]> {
    let at = find(tag, b"charset")?;
    let mut rest = &tag[at + 7..];
    rest = trim_start(rest);
    rest = rest.strip_prefix(b"=")?;
    rest = trim_start(rest);
    let quote = match rest.first() {
        Some(b'"') | Some(b'\'') => Some(rest[0]),
        _ => None,
    };
    if quote.is_some() {
        rest = &rest[1..];
    }
    let end = rest
        .iter()
        .position(|&b| {
            Some(b) == quote
                || matches!(
                    b,
                    b';' | b' ' | b'\t' | b'\n' | b'\r' | b'/' | b'>' | b'"' | b'\''
                )
        })
        .unwrap_or(rest.len());
    let label = &rest[..end];
    (!label.is_empty()).then_some(label)
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_of_trust() {
        let d = decode(b"\xef\xbb\xbfcaf\xc3\xa9", false);
        assert_eq!(
            (d.text.as_str(), d.encoding, d.source),
            ("café", UTF_8, EncodingSource::Bom)
        );
        let d = decode(b"caf\xc3\xa9", false);
        assert_eq!((d.text.as_str(), d.source), ("café", EncodingSource::Utf8));
        let d = decode(b"<meta charset=\"iso-8859-1\"><p>caf\xc3\xa9", true);
        assert_eq!(
            (d.encoding, d.source),
            (encoding_rs::WINDOWS_1252, EncodingSource::Declared)
        );
        let d = decode(
            "Это русский текст, записанный в кодировке windows-1251 для проверки.".as_bytes(),
            false,
        );
        assert_eq!(d.source, EncodingSource::Utf8);
        let (cp1251, _, _) = encoding_rs::WINDOWS_1251
            .encode("Это русский текст, записанный в кодировке для проверки.");
        let d = decode(&cp1251, false);
        assert_eq!(
            (d.encoding, d.source),
            (encoding_rs::WINDOWS_1251, EncodingSource::Detected)
        );
        assert!(d.text.starts_with("Это русский"));
        let le: Vec<u8> = "plain UTF-16 text"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let d = decode(&le, false);
        assert_eq!(
            (d.text.as_str(), d.source),
            ("plain UTF-16 text", EncodingSource::Utf16Pattern)
        );
    }

    #[test]
    fn xml_declaration_and_external_charset() {
        let d = decode_with(
            b"<?xml version='1.0' encoding='ISO-8859-1'?><a>caf\xe9</a>",
            Prescan::Xml,
            None,
        );
        assert_eq!(
            (d.encoding, d.source, d.text.contains("café")),
            (encoding_rs::WINDOWS_1252, EncodingSource::Declared, true)
        );
        let d = decode_with(
            b"<meta charset=utf-8><p>caf\xe9",
            Prescan::Html,
            Some(encoding_rs::WINDOWS_1252),
        );
        assert_eq!(
            (d.encoding, d.source),
            (encoding_rs::WINDOWS_1252, EncodingSource::External)
        );
        assert_eq!(xml_declared_encoding(b"<?xml version=\"1.0\"?>"), None);
    }

    #[test]
    fn meta_prescan() {
        let p = |s: &[u8]| prescan_meta_charset(s).map(|e| e.name());
        assert_eq!(p(b"<html><head><META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=Shift_JIS\">"), Some("Shift_JIS"));
        assert_eq!(p(b"<meta charset=utf-16>"), Some("UTF-8"));
        assert_eq!(
            p(b"<!-- <meta charset=koi8-r> --><meta charset='euc-kr'>"),
            Some("EUC-KR")
        );
        assert_eq!(p(b"<meta charset=bogus>"), None);
        assert_eq!(p(b"<p>no meta</p>"), None);
    }
}

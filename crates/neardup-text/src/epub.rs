//! EPUB to text (simhash-doc-v1 spec, "EPUB"): the XHTML documents of the spine, in spine order, each
//! extracted as HTML (main content included), separated by block breaks.
//!
//! The package document is found through `META-INF/container.xml` (the first `rootfile`); its `manifest` maps
//! ids to files and its `spine` lists them in reading order. Spine items that are not XHTML or HTML (images,
//! SVG) carry no text. Decompression is bounded ([`crate::limits`]).

use crate::ExtractError;
use crate::decode::{Prescan, decode_with};
use crate::html::html_to_text;
use crate::limits::{ReadBounded, decompressed_budget, read_bounded};
use crate::text_builder::TextBuilder;
use quick_xml::XmlVersion;
use quick_xml::events::Event;
use quick_xml::reader::Reader;
use std::collections::HashMap;
use std::io::Cursor;

/// Why an EPUB gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EpubError {
    /// The zip container or a file in it cannot be read, or a required part is missing.
    #[error("malformed EPUB: {0}")]
    Malformed(String),
    /// Decompression passed its budget.
    #[error("EPUB decompresses to more than {0} bytes (the limit for its size; a zip bomb?)")]
    TooLarge(u64),
}

/// The text of an EPUB file.
pub(crate) fn epub_to_text(bytes: &[u8]) -> Result<String, ExtractError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| EpubError::Malformed(format!("not a zip archive: {e}")))?;
    read_spine(&mut zip, bytes.len() as u64)
}

fn read_spine(zip: &mut zip::ZipArchive<Cursor<&[u8]>>, size: u64) -> Result<String, ExtractError> {
    let bytes_len = size;
    let mut budget = decompressed_budget(bytes_len);
    let mut read = |zip: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str| {
        let file = zip
            .by_name(name)
            .map_err(|e| EpubError::Malformed(format!("{name}: {e}")))?;
        let data = read_bounded(file, budget).map_err(|e| match e {
            ReadBounded::Io(m) => EpubError::Malformed(format!("{name}: {m}")),
            ReadBounded::TooLarge(_) => EpubError::TooLarge(decompressed_budget(bytes_len)),
        })?;
        budget -= data.len() as u64;
        Ok::<_, EpubError>(data)
    };
    let container = read(zip, "META-INF/container.xml")?;
    let opf_path = first_attr(&container, "rootfile", "full-path")
        .ok_or_else(|| EpubError::Malformed("container.xml names no rootfile".into()))?;
    let opf = read(zip, &opf_path)?;
    let base = opf_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let spine = spine_files(&opf).map_err(|e| EpubError::Malformed(format!("{opf_path}: {e}")))?;
    let mut out = TextBuilder::with_capacity(bytes_len as usize);
    for (href, media_type) in spine {
        if !matches!(
            media_type.as_str(),
            "application/xhtml+xml" | "text/html" | "application/html"
        ) {
            continue;
        }
        let path = resolve(base, &href);
        let data = read(zip, &path)?;
        let decoded = decode_with(&data, Prescan::Xml, None);
        out.block_break();
        out.push_lines(&html_to_text(&decoded.text)?);
        out.block_break();
    }
    Ok(out.finish())
}

/// The value of attribute `attr` on the first element named `element` (local names).
fn first_attr(xml: &[u8], element: &str, attr: &str) -> Option<String> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).ok()? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == element => {
                return e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.local_name().as_ref() == attr)
                    .and_then(|a| {
                        a.normalized_value(XmlVersion::Implicit1_0)
                            .ok()
                            .map(|v| v.into_owned())
                    });
            }
            Event::Eof => return None,
            _ => {}
        }
        buf.clear();
    }
}

/// The spine of a package document: (href, media type) in reading order.
fn spine_files(opf: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut reader = Reader::from_reader(opf);
    let mut buf = Vec::new();
    let mut manifest: HashMap<String, (String, String)> = HashMap::new();
    let mut spine: Vec<String> = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("malformed package document: {e}"))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let attr = |name: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == name)
                        .and_then(|a| {
                            a.normalized_value(XmlVersion::Implicit1_0)
                                .ok()
                                .map(|v| v.into_owned())
                        })
                };
                match e.local_name().as_ref() {
                    "item" => {
                        if let (Some(id), Some(href)) = (attr("id"), attr("href")) {
                            let media_type = attr("media-type").unwrap_or_default();
                            manifest.insert(id, (href, media_type));
                        }
                    }
                    "itemref" => {
                        if let Some(idref) = attr("idref") {
                            spine.push(idref);
                        }
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if spine.is_empty() {
        return Err("the spine lists no documents".into());
    }
    spine
        .into_iter()
        .map(|id| {
            manifest
                .get(&id)
                .cloned()
                .ok_or_else(|| format!("spine item '{id}' is not in the manifest"))
        })
        .collect()
}

/// Resolves an href relative to the package document's folder: percent-decoding, `.` and `..` segments.
fn resolve(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or(href);
    let mut parts: Vec<String> = base
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for seg in href.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(percent_decode(s)),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            resolve("OEBPS", "text/ch%201.xhtml#x"),
            "OEBPS/text/ch 1.xhtml"
        );
        assert_eq!(resolve("a/b", "../c.xhtml"), "a/c.xhtml");
        assert_eq!(resolve("", "c.xhtml"), "c.xhtml");
    }

    #[test]
    fn not_a_zip() {
        assert!(matches!(
            epub_to_text(b"PK\x03\x04garbage"),
            Err(ExtractError::Epub(EpubError::Malformed(_)))
        ));
    }
}

//! WARC archives (simhash-doc-v1 spec, "WARC"): a small record reader over the uncompressed archive.
//!
//! A `.warc.gz` file is a series of gzip members (one per record, usually); it is inflated whole, within the
//! decompression budget of [`crate::limits`]. Each record is `WARC/1.x`, header lines, a blank line, then
//! `Content-Length` bytes of block. Every `response` record whose block is an HTTP response (`application/http`)
//! with a 2xx status and a body of an HTML, XHTML, XML, PDF or plain-text type is a document whose id is its
//! `WARC-Target-URI`. Its body is de-chunked (`Transfer-Encoding: chunked`) and decompressed
//! (`Content-Encoding: gzip`, `deflate`); the `charset` of its `Content-Type` ranks after a BOM and before the
//! document's own declarations. Other records (request, metadata, warcinfo, revisit, images...) are skipped.

use crate::limits::{ReadBounded, decompressed_budget, read_bounded};
use crate::media::Media;
use encoding_rs::Encoding;

/// Why a WARC archive, or one of its records, gave no document.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum WarcError {
    /// The archive is not a series of WARC records from this point on.
    #[error("malformed WARC at byte {offset}: {message}")]
    Malformed {
        /// The offset in the uncompressed archive.
        offset: usize,
        /// What is wrong.
        message: String,
    },
    /// The gzip data is corrupt.
    #[error("corrupt gzip data in WARC: {0}")]
    Gzip(String),
    /// Decompression passed its budget.
    #[error("WARC decompresses to more than {0} bytes (the limit for its size; a gzip bomb?)")]
    TooLarge(u64),
    /// A record's HTTP payload cannot be decoded.
    #[error("cannot decode the HTTP payload: {0}")]
    Payload(String),
}

/// One document of a WARC archive: a response record's payload.
#[derive(Clone, Debug)]
pub struct WarcDocument {
    /// `WARC-Target-URI`.
    pub uri: String,
    /// `WARC-Record-ID` and `WARC-Date`, as written in the record.
    pub record: RecordMeta,
    /// The medium given by the HTTP `Content-Type`.
    pub media: Media,
    /// The charset given by the HTTP `Content-Type`, if any and known.
    pub charset: Option<&'static Encoding>,
    /// The payload, de-chunked and decompressed; or why it could not be.
    pub body: Result<Vec<u8>, WarcError>,
}

/// What identifies a WARC record besides its target URI.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordMeta {
    /// `WARC-Record-ID` (`<urn:uuid:…>`), if present.
    pub record_id: Option<String>,
    /// `WARC-Date`, if present.
    pub date: Option<String>,
}

/// Reads the documents of a WARC archive (plain or gzip-compressed). A structural error ends the list: the
/// documents before it are returned with it.
pub fn warc_documents(bytes: &[u8]) -> (Vec<WarcDocument>, Option<WarcError>) {
    let inflated;
    let data: &[u8] = if bytes.starts_with(b"\x1f\x8b") {
        let budget = decompressed_budget(bytes.len() as u64);
        match read_bounded(flate2::read::MultiGzDecoder::new(bytes), budget) {
            Ok(d) => {
                inflated = d;
                &inflated
            }
            Err(ReadBounded::TooLarge(n)) => return (Vec::new(), Some(WarcError::TooLarge(n))),
            Err(ReadBounded::Io(m)) => return (Vec::new(), Some(WarcError::Gzip(m))),
        }
    } else {
        bytes
    };
    let mut docs = Vec::new();
    let mut pos = 0;
    loop {
        while pos < data.len() && matches!(data[pos], b'\r' | b'\n') {
            pos += 1;
        }
        if pos >= data.len() {
            return (docs, None);
        }
        let record = match read_record(data, pos) {
            Ok(r) => r,
            Err(message) => {
                return (
                    docs,
                    Some(WarcError::Malformed {
                        offset: pos,
                        message,
                    }),
                );
            }
        };
        pos = record.end;
        if let Some(doc) = document_of(&record) {
            docs.push(doc);
        }
    }
}

struct Record<'a> {
    headers: Vec<(String, String)>,
    block: &'a [u8],
    end: usize,
}

impl Record<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The end of a header section (after its blank line) and its lines.
fn parse_headers(data: &[u8]) -> Option<(usize, Vec<(String, String)>)> {
    let end = find(data, b"\r\n\r\n")
        .map(|e| e + 4)
        .or_else(|| find(data, b"\n\n").map(|e| e + 2))?;
    let text = String::from_utf8_lossy(&data[..end]);
    let mut headers = Vec::new();
    for line in text.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    Some((end, headers))
}

fn read_record(data: &[u8], pos: usize) -> Result<Record<'_>, String> {
    let rest = &data[pos..];
    if !rest.starts_with(b"WARC/") {
        return Err("expected a record starting with 'WARC/'".into());
    }
    let (head_len, headers) =
        parse_headers(rest).ok_or("the record's header never ends (no blank line)")?;
    let length: usize = header(&headers, "Content-Length")
        .ok_or("the record has no Content-Length")?
        .parse()
        .map_err(|_| "the record's Content-Length is not a number".to_owned())?;
    let start = pos + head_len;
    let end = start
        .checked_add(length)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| {
            format!(
                "the record's Content-Length ({length}) runs past the end of the archive (truncated?)"
            )
        })?;
    Ok(Record {
        headers,
        block: &data[start..end],
        end,
    })
}

/// The medium of an HTTP `Content-Type`, and its charset.
fn media_of_content_type(value: &str) -> (Option<Media>, Option<&'static Encoding>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if k.trim().eq_ignore_ascii_case("charset") {
            Encoding::for_label(v.trim().trim_matches('"').as_bytes())
        } else {
            None
        }
    });
    let media = match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Media::Html),
        "application/pdf" => Some(Media::Pdf),
        "text/plain" => Some(Media::Text),
        "text/xml" | "application/xml" => Some(Media::Xml),
        m if m.ends_with("+xml") => Some(Media::Xml),
        _ => None,
    };
    (media, charset)
}

fn document_of(record: &Record<'_>) -> Option<WarcDocument> {
    if !record
        .header("WARC-Type")
        .is_some_and(|t| t.eq_ignore_ascii_case("response"))
    {
        return None;
    }
    if !record
        .header("Content-Type")
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/http"))
    {
        return None;
    }
    let uri = record
        .header("WARC-Target-URI")?
        .trim_matches(|c| c == '<' || c == '>')
        .to_owned();
    let (head_len, http) = parse_headers(record.block)?;
    let status_line = String::from_utf8_lossy(record.block.split(|&b| b == b'\n').next()?);
    let status: u16 = status_line.split_whitespace().nth(1)?.parse().ok()?;
    if !(200..300).contains(&status) {
        return None;
    }
    let (media, charset) = media_of_content_type(header(&http, "Content-Type")?);
    let media = media?;
    let mut body = Ok(record.block[head_len..].to_vec());
    if header(&http, "Transfer-Encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        body = body.and_then(|b| dechunk(&b));
    }
    if let Some(enc) = header(&http, "Content-Encoding") {
        let enc = enc.trim().to_ascii_lowercase();
        body = body.and_then(|b| decompress(&enc, b));
    }
    let record_meta = RecordMeta {
        record_id: record.header("WARC-Record-ID").map(|v| v.trim().to_owned()),
        date: record.header("WARC-Date").map(|v| v.trim().to_owned()),
    };
    Some(WarcDocument {
        uri,
        record: record_meta,
        media,
        charset,
        body,
    })
}

fn dechunk(data: &[u8]) -> Result<Vec<u8>, WarcError> {
    let mut out = Vec::with_capacity(data.len());
    let mut pos = 0;
    loop {
        let line_end = find(&data[pos..], b"\n")
            .ok_or_else(|| WarcError::Payload("chunked body ends without a last chunk".into()))?;
        let line = String::from_utf8_lossy(&data[pos..pos + line_end]);
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| WarcError::Payload(format!("bad chunk size '{size_text}'")))?;
        pos += line_end + 1;
        if size == 0 {
            return Ok(out);
        }
        let end = pos
            .checked_add(size)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| WarcError::Payload("a chunk runs past the end of the body".into()))?;
        out.extend_from_slice(&data[pos..end]);
        pos = end;
        while pos < data.len() && matches!(data[pos], b'\r' | b'\n') {
            pos += 1;
            if data[pos - 1] == b'\n' {
                break;
            }
        }
    }
}

fn decompress(encoding: &str, body: Vec<u8>) -> Result<Vec<u8>, WarcError> {
    let budget = decompressed_budget(body.len() as u64);
    let result = match encoding {
        "" | "identity" => return Ok(body),
        "gzip" | "x-gzip" => read_bounded(flate2::read::MultiGzDecoder::new(&body[..]), budget),
        // HTTP's "deflate" is zlib-wrapped; some servers send raw deflate.
        "deflate" => read_bounded(flate2::read::ZlibDecoder::new(&body[..]), budget)
            .or_else(|_| read_bounded(flate2::read::DeflateDecoder::new(&body[..]), budget)),
        other => {
            return Err(WarcError::Payload(format!(
                "unsupported Content-Encoding '{other}'"
            )));
        }
    };
    result.map_err(|e| match e {
        ReadBounded::TooLarge(n) => WarcError::TooLarge(n),
        ReadBounded::Io(m) => WarcError::Payload(format!("corrupt {encoding} body: {m}")),
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn record(kind: &str, uri: &str, block: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype={kind}\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    }

    #[test]
    fn records() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"<p>zipped</p>").unwrap();
        let gz = gz.finish().unwrap();
        let mut warc = record("request", "http://a/", b"GET / HTTP/1.1\r\n\r\n");
        warc.extend(record(
            "response",
            "http://a/",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=windows-1251\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<p>a\r\n3\r\nbc<\r\n0\r\n\r\n",
        ));
        let mut gz_resp =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
                .to_vec();
        gz_resp.extend(&gz);
        warc.extend(record("response", "<http://b/>", &gz_resp));
        warc.extend(record(
            "response",
            "http://c/",
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\nmissing",
        ));
        warc.extend(record(
            "response",
            "http://d/x.png",
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG",
        ));
        let (docs, err) = warc_documents(&warc);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].uri, "http://a/");
        assert_eq!(docs[0].body.as_ref().unwrap(), b"<p>abc<");
        assert_eq!(docs[0].charset, Some(encoding_rs::WINDOWS_1251));
        assert_eq!(docs[1].uri, "http://b/");
        assert_eq!(docs[1].body.as_ref().unwrap(), b"<p>zipped</p>");

        // Truncated: the documents before the damage are kept, and the damage is reported.
        let mut cut = warc.clone();
        cut.truncate(warc.len() - 20);
        let (docs, err) = warc_documents(&cut);
        assert_eq!(docs.len(), 2);
        assert!(matches!(err, Some(WarcError::Malformed { .. })));
    }
}

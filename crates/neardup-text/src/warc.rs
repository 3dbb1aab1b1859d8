//! WARC archives (simhash-doc-v1 spec, "WARC"): a small record reader over the uncompressed archive.
//!
//! A `.warc.gz` file is a series of gzip members (one per record, usually); it is inflated as it is read, a
//! record at a time, so memory holds one record, never the archive (the ratio of [`crate::limits`] bounds the
//! whole). Each record is `WARC/1.x`, header lines, a blank line, then
//! `Content-Length` bytes of block. Every `response` record whose block is an HTTP response (`application/http`)
//! with a 2xx status and a body of an HTML, XHTML, XML, PDF or plain-text type is a document whose id is its
//! `WARC-Target-URI`. Its body is de-chunked (`Transfer-Encoding: chunked`) and decompressed
//! (`Content-Encoding: gzip`, `deflate`); the `charset` of its `Content-Type` ranks after a BOM and before the
//! document's own declarations. Other records (request, metadata, warcinfo, revisit, images...) are skipped.

use crate::limits::{
    MAX_WARC_PAYLOAD, MAX_WARC_RECORD, ReadBounded, decompressed_budget, ratio_budget, read_bounded,
};
use crate::media::Media;
use encoding_rs::Encoding;
use std::io::{BufRead, BufReader, Read};

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

/// The most bytes a record's header section may hold.
const MAX_HEADER: u64 = 1 << 20;

/// Reads the documents of a WARC archive (plain or gzip-compressed), one record at a time: memory holds one
/// record, never the archive (a `.warc.gz` is inflated as it is read). Each item is a document, or a
/// structural error that ends the list (the documents before it were given).
pub fn warc_documents(bytes: &[u8]) -> WarcDocuments<'_> {
    let (reader, budget): (Box<dyn BufRead + '_>, u64) = if bytes.starts_with(b"\x1f\x8b") {
        (
            Box::new(BufReader::with_capacity(
                64 << 10,
                flate2::bufread::MultiGzDecoder::new(bytes),
            )),
            ratio_budget(bytes.len() as u64),
        )
    } else {
        (Box::new(bytes), u64::MAX)
    };
    WarcDocuments {
        reader: Read::take(reader, budget),
        budget,
        offset: 0,
        done: false,
    }
}

/// The documents of a WARC archive, read as they are asked for: see [`warc_documents`].
pub struct WarcDocuments<'a> {
    reader: std::io::Take<Box<dyn BufRead + 'a>>,
    budget: u64,
    /// Where the next record starts, in the uncompressed archive.
    offset: u64,
    done: bool,
}

impl Iterator for WarcDocuments<'_> {
    type Item = Result<WarcDocument, WarcError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.next_record() {
                Ok(None) => self.done = true,
                Ok(Some(record)) => {
                    if let Some(doc) = document_of(&record) {
                        return Some(Ok(doc));
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl WarcDocuments<'_> {
    fn malformed(&self, offset: u64, message: impl Into<String>) -> WarcError {
        WarcError::Malformed {
            offset: offset as usize,
            message: message.into(),
        }
    }

    /// One line, with its terminator, within what is left of `limit` header bytes.
    fn read_line(&mut self, line: &mut Vec<u8>, limit: &mut u64) -> Result<usize, WarcError> {
        line.clear();
        let n = (&mut self.reader)
            .take(*limit)
            .read_until(b'\n', line)
            .map_err(|e| self.read_error(e))?;
        *limit -= n as u64;
        self.offset += n as u64;
        Ok(n)
    }

    fn read_error(&self, e: std::io::Error) -> WarcError {
        WarcError::Gzip(e.to_string())
    }

    /// The next record, `None` at the end of the archive.
    fn next_record(&mut self) -> Result<Option<Record>, WarcError> {
        let mut line = Vec::new();
        // Blank lines between records; then `WARC/…`.
        let start = loop {
            let at = self.offset;
            let mut limit = MAX_HEADER;
            if self.read_line(&mut line, &mut limit)? == 0 {
                return if self.reader.limit() == 0 {
                    Err(WarcError::TooLarge(self.budget))
                } else {
                    Ok(None)
                };
            }
            if !line.trim_ascii().is_empty() {
                break at;
            }
        };
        if !line.starts_with(b"WARC/") {
            return Err(self.malformed(start, "expected a record starting with 'WARC/'"));
        }
        let mut headers = Vec::new();
        let mut limit = MAX_HEADER;
        loop {
            if self.read_line(&mut line, &mut limit)? == 0 || !line.ends_with(b"\n") {
                return Err(self.malformed(
                    start,
                    if limit == 0 {
                        "the record's header is over 1 MiB"
                    } else {
                        "the record's header never ends (no blank line)"
                    },
                ));
            }
            if !header_line(&line, &mut headers) {
                break;
            }
        }
        let length: u64 = header(&headers, "Content-Length")
            .ok_or_else(|| self.malformed(start, "the record has no Content-Length"))?
            .parse()
            .map_err(|_| self.malformed(start, "the record's Content-Length is not a number"))?;
        let mut record = Record {
            headers,
            block: Vec::new(),
            offset: start,
            too_large: None,
        };
        if !is_http_response(&record) || length > MAX_WARC_RECORD {
            // Not a document, or too large to hold (skipped whole, and said): read past it.
            self.skip(length, start)?;
            record.too_large = (length > MAX_WARC_RECORD).then_some(length);
            return Ok(Some(record));
        }
        let mut block = Vec::with_capacity(length.min(1 << 20) as usize);
        let got = (&mut self.reader)
            .take(length)
            .read_to_end(&mut block)
            .map_err(|e| self.read_error(e))?;
        self.offset += got as u64;
        if (got as u64) < length {
            return Err(self.truncated(start, length));
        }
        Ok(Some(Record { block, ..record }))
    }

    fn skip(&mut self, length: u64, start: u64) -> Result<(), WarcError> {
        let got = std::io::copy(&mut (&mut self.reader).take(length), &mut std::io::sink())
            .map_err(|e| self.read_error(e))?;
        self.offset += got;
        if got < length {
            return Err(self.truncated(start, length));
        }
        Ok(())
    }

    fn truncated(&self, start: u64, length: u64) -> WarcError {
        if self.reader.limit() == 0 {
            return WarcError::TooLarge(self.budget);
        }
        self.malformed(
            start,
            format!(
                "the record's Content-Length ({length}) runs past the end of the archive (truncated?)"
            ),
        )
    }
}

struct Record {
    headers: Headers,
    block: Vec<u8>,
    /// Where the record starts in the uncompressed archive.
    offset: u64,
    /// The length of a block too large to read (not read).
    too_large: Option<u64>,
}

impl Record {
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

/// Whether a record is a `response` whose block is an HTTP message: the records that can hold documents.
fn is_http_response(record: &Record) -> bool {
    record
        .header("WARC-Type")
        .is_some_and(|t| t.eq_ignore_ascii_case("response"))
        && record.header("Content-Type").is_some_and(|t| {
            t.get(..16)
                .is_some_and(|p| p.eq_ignore_ascii_case("application/http"))
        })
}

/// Header lines as (name, value) pairs.
type Headers = Vec<(String, String)>;

/// Reads one header line (WARC or HTTP, with its line break) into `headers`: `false` for the blank line that
/// ends the section. A line without `:` is skipped.
fn header_line(line: &[u8], headers: &mut Headers) -> bool {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\r', '\n']);
    if text.is_empty() {
        return false;
    }
    if let Some((k, v)) = text.split_once(':') {
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    true
}

/// The end of an HTTP header section (after its first blank line), its status line and its header lines.
fn parse_headers(data: &[u8]) -> Option<(usize, String, Headers)> {
    let mut lines = data.split_inclusive(|&b| b == b'\n');
    let first = lines.next()?;
    let status = String::from_utf8_lossy(first)
        .trim_end_matches(['\r', '\n'])
        .to_owned();
    let mut end = first.len();
    let mut headers = Vec::new();
    for line in lines {
        end += line.len();
        if !header_line(line, &mut headers) {
            return Some((end, status, headers));
        }
    }
    None
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

/// The document a record holds: `None` for records that hold none (requests, metadata, redirects, errors,
/// images...); a document whose body is an error for a response that should hold one and cannot be read.
fn document_of(record: &Record) -> Option<WarcDocument> {
    if !is_http_response(record) {
        return None;
    }
    let record_meta = RecordMeta {
        record_id: record.header("WARC-Record-ID").map(|v| v.trim().to_owned()),
        date: record.header("WARC-Date").map(|v| v.trim().to_owned()),
    };
    let uri = record
        .header("WARC-Target-URI")
        .map(|u| u.trim_matches(|c| c == '<' || c == '>').to_owned());
    let failed = |message: String| {
        let uri = uri.clone().unwrap_or_else(|| match &record_meta.record_id {
            Some(id) => format!("record {id}"),
            None => format!("record at byte {}", record.offset),
        });
        Some(WarcDocument {
            uri,
            record: record_meta.clone(),
            media: Media::Text,
            charset: None,
            body: Err(WarcError::Payload(message)),
        })
    };
    if let Some(length) = record.too_large {
        return failed(format!(
            "the response record is {length} bytes, over the limit of {MAX_WARC_RECORD}; skipped"
        ));
    }
    let Some(uri) = uri.clone() else {
        return failed("the response record has no WARC-Target-URI".to_owned());
    };
    let Some((head_len, status_line, http)) = parse_headers(&record.block) else {
        return failed("the HTTP response has no end of headers (no blank line)".to_owned());
    };
    let status = status_line
        .strip_prefix("HTTP/")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok());
    let Some(status) = status else {
        let shown: String = status_line.chars().take(40).collect();
        return failed(format!(
            "the HTTP response does not start with a status line (`{}`)",
            shown.escape_default()
        ));
    };
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
    let budget = decompressed_budget(body.len() as u64).min(MAX_WARC_PAYLOAD);
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
        let docs: Vec<_> = warc_documents(&warc).collect::<Result<_, _>>().unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].uri, "http://a/");
        assert_eq!(docs[0].body.as_ref().unwrap(), b"<p>abc<");
        assert_eq!(docs[0].charset, Some(encoding_rs::WINDOWS_1251));
        assert_eq!(docs[1].uri, "http://b/");
        assert_eq!(docs[1].body.as_ref().unwrap(), b"<p>zipped</p>");

        // Truncated: the documents before the damage are kept, and the damage is reported.
        let mut cut = warc.clone();
        cut.truncate(warc.len() - 20);
        let items: Vec<_> = warc_documents(&cut).collect();
        assert_eq!(items.len(), 3);
        assert!(items[..2].iter().all(Result::is_ok));
        assert!(matches!(items[2], Err(WarcError::Malformed { .. })));
    }

    /// Responses that should hold a document and cannot be read are named, not dropped.
    #[test]
    fn unreadable_responses_are_reported() {
        let no_uri = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\nContent-Type: application/http\r\nContent-Length: 4\r\n\r\nabcd\r\n\r\n".to_vec();
        let mut warc = no_uri;
        warc.extend(record(
            "response",
            "http://garbage/",
            b"garbage\r\n\r\n<p>x",
        ));
        warc.extend(record("response", "http://headless/", b"HTTP/1.1 200 OK"));
        let docs: Vec<_> = warc_documents(&warc).collect::<Result<_, _>>().unwrap();
        let shown: Vec<_> = docs
            .iter()
            .map(|d| (d.uri.as_str(), d.body.as_ref().unwrap_err().to_string()))
            .collect();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert_eq!(shown[0].0, "record <urn:uuid:1>");
        assert!(shown[0].1.contains("no WARC-Target-URI"), "{shown:?}");
        assert!(shown[1].1.contains("status line"), "{shown:?}");
        assert!(shown[2].1.contains("no end of headers"), "{shown:?}");
    }

    /// Records separated by bare line feeds are read in one pass (finding each header's end once scanned
    /// the rest of the archive), and a gzip archive is read a record at a time.
    #[test]
    fn many_records_in_one_pass() {
        let block = "HTTP/1.1 200 OK\nContent-Type: text/plain\n\nhello";
        let one = format!(
            "WARC/1.0\nWARC-Type: response\nWARC-Target-URI: http://a/\nContent-Type: application/http\nContent-Length: {}\n\n{block}\n\n",
            block.len()
        );
        let warc = one.repeat(100_000).into_bytes();
        let started = std::time::Instant::now();
        assert_eq!(warc_documents(&warc).filter(Result::is_ok).count(), 100_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&warc).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(warc_documents(&gz).filter(Result::is_ok).count(), 100_000);
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    /// A gzip-encoded payload stops at its own limit, whatever the ratio allows.
    #[test]
    fn payload_bombs_stop_at_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b' '; (MAX_WARC_PAYLOAD + 1) as usize])
            .unwrap();
        let mut block =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
                .to_vec();
        block.extend(gz.finish().unwrap());
        let warc = record("response", "http://bomb/", &block);
        let docs: Vec<_> = warc_documents(&warc).collect::<Result<_, _>>().unwrap();
        assert!(
            matches!(docs[0].body, Err(WarcError::TooLarge(n)) if n <= MAX_WARC_PAYLOAD),
            "{:?}",
            docs[0].body.as_ref().map(Vec::len)
        );
    }
}

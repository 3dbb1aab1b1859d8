//! JSON Lines: reading lines from plain or compressed files, counting the bytes consumed; turning a line
//! into a record's fields; adding the removed rows' fields.

use crate::error::IoError;
use crate::format::Compression;
use crate::record::{DatasetOptions, FieldPath};
use serde_json::Value;
use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

/// Counts the bytes read from the file (before decompression).
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A numbered line, or the number of the line that could not be read and why.
pub(crate) type LineResult<'a> = Result<(u64, &'a [u8]), (u64, std::io::Error)>;

/// The lines of a JSON Lines file, numbered from 1; blank lines are skipped (but counted).
pub(crate) struct Lines {
    reader: Box<dyn BufRead>,
    consumed: Rc<Cell<u64>>,
    line_no: u64,
    buf: Vec<u8>,
}

impl Lines {
    pub(crate) fn open(path: &Path, compression: Compression) -> std::io::Result<Lines> {
        let consumed = Rc::new(Cell::new(0));
        let file = Counting {
            inner: File::open(path)?,
            count: consumed.clone(),
        };
        let reader: Box<dyn BufRead> = match compression {
            Compression::None => Box::new(BufReader::with_capacity(1 << 20, file)),
            Compression::Gzip => Box::new(BufReader::with_capacity(
                1 << 20,
                flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file)),
            )),
            Compression::Zstd => Box::new(BufReader::with_capacity(
                1 << 20,
                zstd::stream::read::Decoder::new(file)?,
            )),
        };
        Ok(Lines {
            reader,
            consumed,
            line_no: 0,
            buf: Vec::new(),
        })
    }

    /// The count of bytes read from the file so far, updated as reading goes.
    pub(crate) fn consumed(&self) -> Rc<Cell<u64>> {
        self.consumed.clone()
    }

    /// The next non-blank line (with its line terminator, if any) and its number; `Err` carries the
    /// number of the line that could not be read. After an error the caller stops: a reader that failed
    /// may fail again forever.
    pub(crate) fn next_line(&mut self) -> Option<LineResult<'_>> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {
                    self.line_no += 1;
                    if !self.buf.trim_ascii().is_empty() {
                        return Some(Ok((self.line_no, &self.buf[..])));
                    }
                }
                Err(e) => return Some(Err((self.line_no + 1, e))),
            }
        }
    }
}

/// A JSON line's fields, or why it is not a record.
pub(crate) enum JsonFields {
    /// Not JSON, or not an object.
    Bad(String),
    /// An object: its id and text (or why not) and medium.
    Object {
        /// `Ok(None)`: the object has no id (the record is named by its place, `FILE:LINE`).
        id: Result<Option<String>, String>,
        text: Result<String, String>,
        media: Option<String>,
    },
}

fn take_field<'v>(value: &'v mut Value, path: &FieldPath) -> Option<&'v mut Value> {
    path.segments()
        .iter()
        .try_fold(value, |v, name| v.get_mut(name.as_str()))
}

/// A line without the UTF-8 byte-order mark some tools write at the start of a file.
fn without_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line)
}

/// Parses a line into a record's fields. Ids that are JSON integers are taken as their decimal text; other
/// numbers are refused (a float, or an integer past 64 bits that a JSON reader rounds, would not name the
/// record it came from: `1e29` and `100000000000000000000000000001` would be one id).
pub(crate) fn parse(line: &[u8], options: &DatasetOptions) -> JsonFields {
    let mut value: Value = match serde_json::from_slice(without_bom(line)) {
        Ok(v) => v,
        Err(e) => return JsonFields::Bad(format!("not a JSON object: {e}")),
    };
    if !value.is_object() {
        return JsonFields::Bad(format!(
            "not a JSON object but {}",
            match value {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        ));
    }
    let id_field = &options.id_field;
    let id = match options.id_field.lookup(&value) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) if !n.is_f64() => Ok(Some(n.to_string())),
        Some(Value::Number(n)) => Err(format!(
            "the \"{id_field}\" field is the number {n}, not an integer of at most 64 bits: write ids that are \
             not as strings"
        )),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(format!(
            "the \"{id_field}\" field is not a string or a number"
        )),
    };
    let media = options
        .media_field
        .as_ref()
        .and_then(|p| p.lookup(&value))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let text_field = &options.text_field;
    let text = match take_field(&mut value, &options.text_field) {
        Some(Value::String(s)) => Ok(std::mem::take(s)),
        None | Some(Value::Null) => Err(format!("no \"{text_field}\" field")),
        Some(_) => Err(format!("the \"{text_field}\" field is not a string")),
    };
    JsonFields::Object { id, text, media }
}

/// The fields a removed row gets.
pub(crate) const ADDED_FIELDS: [&str; 2] = ["duplicate_of", "score"];

/// A removed row: the original object, byte for byte, with `duplicate_of` and `score` added at its end.
/// Refuses (naming `origin`) an object that already has either field.
pub(crate) fn removed_line(
    line: &[u8],
    duplicate_of: &str,
    score: f64,
    origin: &dyn std::fmt::Display,
) -> Result<Vec<u8>, IoError> {
    let object: serde_json::Map<String, Value> = serde_json::from_slice(without_bom(line))
        .map_err(|e| IoError::Data {
            path: origin.to_string(),
            message: format!("not a JSON object on the second pass: {e}"),
        })?;
    if let Some(field) = ADDED_FIELDS.iter().find(|f| object.contains_key(**f)) {
        return Err(IoError::FieldClash {
            origin: origin.to_string(),
            field: (*field).to_owned(),
        });
    }
    let trimmed = without_bom(line).trim_ascii_end();
    // A JSON object ends with '}' once trailing whitespace is gone.
    let body = &trimmed[..trimmed.len() - 1];
    let mut out = Vec::with_capacity(line.len() + duplicate_of.len() + 48);
    out.extend_from_slice(body);
    if !object.is_empty() {
        out.push(b',');
    }
    out.extend_from_slice(b"\"duplicate_of\":");
    out.extend_from_slice(
        serde_json::to_string(duplicate_of)
            .expect("a string serializes")
            .as_bytes(),
    );
    out.extend_from_slice(b",\"score\":");
    // serde_json writes a non-finite score as null: JSON has no NaN.
    out.extend_from_slice(
        serde_json::to_string(&score)
            .expect("a number serializes")
            .as_bytes(),
    );
    out.extend_from_slice(b"}\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_fields_are_appended() {
        let line = br#"{"id": "a", "n": 1.50}  "#;
        let out = removed_line(line, "b\"x", 0.75, &"f:1").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\": \"a\", \"n\": 1.50,\"duplicate_of\":\"b\\\"x\",\"score\":0.75}\n"
        );
        let out = removed_line(b"{ }\r\n", "b", 1.0, &"f:1").unwrap();
        assert_eq!(out, b"{ \"duplicate_of\":\"b\",\"score\":1.0}\n");
        let err = removed_line(br#"{"score": 3}"#, "b", 1.0, &"f:2").unwrap_err();
        assert!(err.to_string().contains("'score'"), "{err}");
        assert!(err.to_string().starts_with("f:2:"), "{err}");
    }

    #[test]
    fn fields_and_numeric_ids() {
        let o = DatasetOptions::default();
        match parse(br#"{"id": 12, "text": "t"}"#, &o) {
            JsonFields::Object { id, text, .. } => {
                assert_eq!(id, Ok(Some("12".to_owned())));
                assert_eq!(text, Ok("t".to_owned()));
            }
            JsonFields::Bad(e) => panic!("{e}"),
        }
        assert!(matches!(parse(b"[1]", &o), JsonFields::Bad(m) if m.contains("array")));
        // A byte-order mark before the object is not part of it.
        assert!(matches!(
            parse(b"\xef\xbb\xbf{\"id\": \"a\", \"text\": \"t\"}", &o),
            JsonFields::Object { id: Ok(Some(id)), .. } if id == "a"
        ));
        // Integers keep every digit; numbers a JSON reader would round are refused, not merged.
        for (line, want) in [
            (
                &br#"{"id": 18446744073709551615, "text": "t"}"#[..],
                Some("18446744073709551615"),
            ),
            (
                br#"{"id": -9223372036854775808, "text": "t"}"#,
                Some("-9223372036854775808"),
            ),
            (
                br#"{"id": 123456789012345678901234567890, "text": "t"}"#,
                None,
            ),
            (br#"{"id": 1.5, "text": "t"}"#, None),
        ] {
            match parse(line, &o) {
                JsonFields::Object { id, .. } => match want {
                    Some(want) => assert_eq!(id, Ok(Some(want.to_owned()))),
                    None => assert!(id.is_err_and(|e| e.contains("as strings")), "{line:?}"),
                },
                JsonFields::Bad(e) => panic!("{e}"),
            }
        }
        assert!(matches!(parse(b"{\"id\":", &o), JsonFields::Bad(_)));
    }
}

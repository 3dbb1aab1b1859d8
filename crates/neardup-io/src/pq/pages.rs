//! A walk over the page headers of the column chunks a read will decode, before it decodes them.
//!
//! The parquet crate sizes its output buffer by the uncompressed size a page header claims, and its Snappy
//! codec fills that buffer with zeros before decompressing into it: a damaged header claiming 1.4 GB costs
//! 1.4 GB at once, whatever the page holds (found by the fuzzer: a dictionary page of no bytes). The crate
//! does not expose its headers, so this module reads them itself (Thrift's compact protocol) and refuses a
//! page claiming more than [`MAX_PAGE_BYTES`].
//!
//! The walk must find the pages where the decoder will: the decoder reads each field by its number,
//! whatever type the field says it has, and accepts varints of any length, so a damaged header can mean one
//! thing to it and another to a plain Thrift reader. Here every field the decoder knows must have the type
//! the Parquet format gives it, varints are at most ten bytes and in range, and anything else is refused as
//! a damaged header: what is accepted, both read alike. Headers that real writers produce always pass.

use super::StrictFile;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;
use std::io::Read;

/// The largest page this reader decodes, in bytes once decompressed: the same bound as any other
/// decompressed document (a page holds at least one whole value).
pub(crate) const MAX_PAGE_BYTES: u64 = 256 << 20;

/// Nested structs and containers in a header, at most (real headers nest three deep).
const MAX_NESTING: usize = 32;

/// Checks every page header of the projected column chunks of one row group; the error names the column,
/// the page's offset and what is wrong.
pub(crate) fn check_row_group(
    file: &StrictFile,
    metadata: &ParquetMetaData,
    row_group: usize,
    projection: &ProjectionMask,
) -> Result<(), String> {
    let group = metadata.row_group(row_group);
    for (leaf, column) in group.columns().iter().enumerate() {
        if !projection.leaf_included(leaf) {
            continue;
        }
        // As `byte_range`, which panics on negative values (the decoder reports those).
        let start = column
            .dictionary_page_offset()
            .unwrap_or(column.data_page_offset());
        let (Ok(start), Ok(length)) = (
            u64::try_from(start),
            u64::try_from(column.compressed_size()),
        ) else {
            continue;
        };
        check_chunk(file, start, length)
            .map_err(|e| format!("column {}: {e}", column.column_path()))?;
    }
    Ok(())
}

/// Walks the pages of the chunk at `start`, `length` bytes long.
fn check_chunk(file: &StrictFile, start: u64, length: u64) -> Result<(), String> {
    let end = start.saturating_add(length);
    let mut offset = start;
    while offset < end {
        let damaged = |what: &str| format!("damaged page header at offset {offset}: {what}");
        let at = At { file, offset };
        let mut header = HeaderReader {
            input: std::io::BufReader::with_capacity(256, at),
            consumed: 0,
        };
        let page = header.page_header().map_err(|e| damaged(&e))?;
        let decoded = matches!(page.kind, DATA_PAGE | DICTIONARY_PAGE | DATA_PAGE_V2);
        if decoded && page.uncompressed > MAX_PAGE_BYTES {
            return Err(format!(
                "the page at offset {offset} claims {} bytes once decompressed, more than the {} MiB this \
                 reader decodes",
                page.uncompressed,
                MAX_PAGE_BYTES >> 20
            ));
        }
        let next = offset + header.consumed + page.compressed;
        if next > end {
            return Err(damaged("the page runs past the end of its column chunk"));
        }
        offset = next;
    }
    Ok(())
}

/// The file from an offset on, read with positioned reads: a header is usually one small `pread`.
struct At<'f> {
    file: &'f StrictFile,
    offset: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(self.offset, buf)?;
        self.offset += n as u64;
        Ok(n)
    }
}

// Page types, from parquet.thrift.
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const DATA_PAGE_V2: i32 = 3;

/// The fields of a page header the walk needs.
struct PageHeader {
    kind: i32,
    uncompressed: u64,
    compressed: u64,
}

// Compact protocol type codes.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const I8: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// What a known field must be.
#[derive(Clone, Copy)]
enum Field {
    I32,
    I64,
    Binary,
    Bool,
    Struct(&'static [(i16, Field)]),
}

/// The structs of a page header as parquet.thrift defines them (fields the decoder reads by number).
const STATISTICS: &[(i16, Field)] = &[
    (1, Field::Binary),
    (2, Field::Binary),
    (3, Field::I64),
    (4, Field::I64),
    (5, Field::Binary),
    (6, Field::Binary),
    (7, Field::Bool),
    (8, Field::Bool),
];
const DATA_PAGE_HEADER: &[(i16, Field)] = &[
    (1, Field::I32),
    (2, Field::I32),
    (3, Field::I32),
    (4, Field::I32),
    (5, Field::Struct(STATISTICS)),
];
const DICTIONARY_PAGE_HEADER: &[(i16, Field)] =
    &[(1, Field::I32), (2, Field::I32), (3, Field::Bool)];
const DATA_PAGE_HEADER_V2: &[(i16, Field)] = &[
    (1, Field::I32),
    (2, Field::I32),
    (3, Field::I32),
    (4, Field::I32),
    (5, Field::I32),
    (6, Field::I32),
    (7, Field::Bool),
    (8, Field::Struct(STATISTICS)),
];
const PAGE_HEADER: &[(i16, Field)] = &[
    (1, Field::I32),
    (2, Field::I32),
    (3, Field::I32),
    (4, Field::I32),
    (5, Field::Struct(DATA_PAGE_HEADER)),
    (6, Field::Struct(&[])),
    (7, Field::Struct(DICTIONARY_PAGE_HEADER)),
    (8, Field::Struct(DATA_PAGE_HEADER_V2)),
];

/// Thrift compact protocol, read strictly; counts the bytes it consumed.
struct HeaderReader<R> {
    input: R,
    consumed: u64,
}

impl<R: Read> HeaderReader<R> {
    /// A `PageHeader`'s type and sizes; the rest is checked and skipped.
    fn page_header(&mut self) -> Result<PageHeader, String> {
        let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
        self.read_struct(PAGE_HEADER, 0, &mut |id, value| match id {
            1 => kind = Some(value),
            2 => uncompressed = Some(value),
            3 => compressed = Some(value),
            _ => {}
        })?;
        let size = |value: Option<i32>, name: &str| match value {
            None => Err(format!("no {name}")),
            Some(v) => u64::try_from(v).map_err(|_| format!("a negative {name} ({v})")),
        };
        Ok(PageHeader {
            kind: kind.ok_or("no page type")?,
            uncompressed: size(uncompressed, "uncompressed size")?,
            compressed: size(compressed, "compressed size")?,
        })
    }

    /// A struct whose known fields are `fields`; each top-level i32 field's value goes to `on_i32`.
    fn read_struct(
        &mut self,
        fields: &[(i16, Field)],
        depth: usize,
        on_i32: &mut dyn FnMut(i16, i32),
    ) -> Result<(), String> {
        if depth > MAX_NESTING {
            return Err("nested too deep".into());
        }
        let mut id = 0i16;
        loop {
            let head = self.byte()?;
            // The decoder's rule: a zero type ends the struct, whatever the delta.
            let kind = head & 0x0f;
            if kind == 0 {
                return Ok(());
            }
            id = match head >> 4 {
                0 => i16::try_from(self.zigzag()?).map_err(|_| "a field number out of range")?,
                delta => id
                    .checked_add(i16::from(delta))
                    .ok_or("a field number out of range")?,
            };
            let known = fields.iter().find(|(n, _)| *n == id).map(|&(_, f)| f);
            match known {
                None => self.skip(kind, depth + 1)?,
                Some(field) => {
                    let fits = match field {
                        Field::I32 => kind == I32,
                        Field::I64 => kind == I64,
                        Field::Binary => kind == BINARY,
                        Field::Bool => kind == BOOL_TRUE || kind == BOOL_FALSE,
                        Field::Struct(_) => kind == STRUCT,
                    };
                    if !fits {
                        return Err(format!("field {id} has type {kind}"));
                    }
                    match field {
                        Field::I32 => {
                            let value = i32::try_from(self.zigzag()?)
                                .map_err(|_| format!("field {id} out of range"))?;
                            on_i32(id, value);
                        }
                        Field::Struct(inner) => {
                            self.read_struct(inner, depth + 1, &mut |_, _| {})?
                        }
                        _ => self.skip(kind, depth + 1)?,
                    }
                }
            }
        }
    }

    /// Skips a value of an unknown field as the decoder does.
    fn skip(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_NESTING {
            return Err("nested too deep".into());
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE => {}
            I8 => self.skip_bytes(1)?,
            I16 | I32 | I64 => {
                self.varint()?;
            }
            DOUBLE => self.skip_bytes(8)?,
            UUID => self.skip_bytes(16)?,
            BINARY => {
                let length = self.varint()?;
                self.skip_bytes(length)?;
            }
            LIST | SET => {
                let head = self.byte()?;
                if head != 0 {
                    let count = match head >> 4 {
                        15 => self.count()?,
                        n => u64::from(n),
                    };
                    let element = head & 0x0f;
                    // Thrift puts a byte per boolean element; the decoder skips none: refused.
                    self.element(element)?;
                    for _ in 0..count {
                        self.skip(element, depth + 1)?;
                    }
                }
            }
            MAP => {
                let count = self.count()?;
                if count > 0 {
                    let kinds = self.byte()?;
                    self.element(kinds >> 4)?;
                    self.element(kinds & 0x0f)?;
                    for _ in 0..count {
                        self.skip(kinds >> 4, depth + 1)?;
                        self.skip(kinds & 0x0f, depth + 1)?;
                    }
                }
            }
            STRUCT => self.read_struct(&[], depth, &mut |_, _| {})?,
            other => return Err(format!("type {other}")),
        }
        Ok(())
    }

    /// A container's element type: any value type but a boolean.
    fn element(&self, kind: u8) -> Result<(), String> {
        match kind {
            I8..=UUID => Ok(()),
            other => Err(format!("a container of type {other}")),
        }
    }

    /// A container's size, at most `i32::MAX` as the decoder allows.
    fn count(&mut self) -> Result<u64, String> {
        let count = self.varint()?;
        if count > i32::MAX as u64 {
            return Err(format!("a container of {count} elements"));
        }
        Ok(count)
    }

    fn byte(&mut self) -> Result<u8, String> {
        let mut one = [0u8];
        self.input
            .read_exact(&mut one)
            .map_err(|e| format!("cut short ({e})"))?;
        self.consumed += 1;
        Ok(one[0])
    }

    fn skip_bytes(&mut self, count: u64) -> Result<(), String> {
        let skipped = std::io::copy(&mut (&mut self.input).take(count), &mut std::io::sink())
            .map_err(|e| format!("cut short ({e})"))?;
        self.consumed += skipped;
        if skipped == count {
            Ok(())
        } else {
            Err("cut short".into())
        }
    }

    /// An unsigned LEB128 varint of at most ten bytes and 64 bits.
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint longer than 64 bits".into())
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let raw = self.varint()?;
        Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<(PageHeader, u64), String> {
        let mut reader = HeaderReader {
            input: bytes,
            consumed: 0,
        };
        let header = reader.page_header()?;
        Ok((header, reader.consumed))
    }

    /// Type 0, sizes 4 and 4, then `rest`.
    fn header(rest: &[u8]) -> Vec<u8> {
        [&[0x15, 0x00, 0x15, 0x08, 0x15, 0x08][..], rest].concat()
    }

    #[test]
    fn unknown_fields_are_skipped_and_counted() {
        // Field 9 (delta 6): a list of three i32; field 10: a struct holding a binary; then the end.
        let bytes = header(&[
            0x69, 0x35, 0x02, 0x04, 0x06, 0x1c, 0x18, 0x02, b'h', b'i', 0x00, 0x00,
        ]);
        let (page, consumed) = read(&[&bytes[..], b"page bytes"].concat()).unwrap();
        assert_eq!((page.kind, page.uncompressed, page.compressed), (0, 4, 4));
        assert_eq!(consumed, bytes.len() as u64);
    }

    #[test]
    fn what_the_decoder_would_read_otherwise_is_refused() {
        // The compressed size typed as a boolean (the decoder reads a varint after it anyway).
        assert!(read(&[0x15, 0x00, 0x15, 0x08, 0x12, 0x00, 0x00]).is_err());
        // An eleven-byte varint (the decoder wraps it).
        let long = [
            &[0x15, 0x00, 0x15][..],
            &[0x80; 10],
            &[0x01, 0x15, 0x08, 0x00],
        ]
        .concat();
        assert!(read(&long).is_err());
        // A size over i32 (the decoder truncates it).
        assert!(
            read(&[
                0x15, 0x00, 0x15, 0x80, 0x80, 0x80, 0x80, 0x10, 0x15, 0x08, 0x00
            ])
            .is_err()
        );
        // A list of booleans (a byte each in Thrift, none for the decoder).
        assert!(read(&header(&[0x69, 0x31, 0x01, 0x00])).is_err());
        // Negative sizes, missing sizes, a header cut short.
        assert!(read(&[0x15, 0x00, 0x15, 0x07, 0x15, 0x08, 0x00]).is_err());
        assert!(read(&[0x15, 0x00, 0x15, 0x08, 0x00]).is_err());
        assert!(read(&[0x15, 0x00, 0x15]).is_err());
    }
}

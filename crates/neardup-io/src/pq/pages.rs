//! A walk over the page headers of the column chunks a read will decode, before it decodes them: a page
//! that claims more than [`MAX_PAGE_BYTES`] uncompressed is refused.
//!
//! The parquet crate sizes its output buffer by the uncompressed size a page header claims, and its Snappy
//! codec fills that buffer with zeros before decompressing into it: a damaged header claiming 2 GiB costs
//! 2 GiB of memory at once, whatever the page holds (the fuzzer saw a 1.2 GB step). The crate does not
//! expose its headers, so this module reads the three leading fields of each header itself (Thrift's
//! compact protocol), skipping the rest. It only ever refuses an oversized page: a header it cannot read
//! ends the walk silently, and the decoder then reports the damage in its own words.

use super::StrictFile;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;
use std::io::Read;

/// The largest page this reader decodes, in bytes once decompressed: the same bound as any other
/// decompressed document (a page holds at least one whole value).
pub(crate) const MAX_PAGE_BYTES: u64 = 256 << 20;

/// Nested structs and containers skipped in a header, at most (real headers nest three deep).
const MAX_NESTING: usize = 32;

/// Checks every page header of the projected column chunks of every row group; the error names the row
/// group, the column and the page's size.
pub(crate) fn check_page_sizes(
    file: &StrictFile,
    metadata: &ParquetMetaData,
    projection: &ProjectionMask,
    limit: u64,
) -> Result<(), String> {
    for (group_index, group) in metadata.row_groups().iter().enumerate() {
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
            if let Some(claimed) = oversized_page(file, start, length, limit) {
                return Err(format!(
                    "a page of column {} in row group {group_index} claims {claimed} bytes once \
                     decompressed, more than the {} MiB this reader decodes",
                    column.column_path(),
                    limit >> 20
                ));
            }
        }
    }
    Ok(())
}

/// The claimed uncompressed size of the first page over `limit` in the chunk at `start`, if any.
fn oversized_page(file: &StrictFile, start: u64, length: u64, limit: u64) -> Option<u64> {
    let end = start.checked_add(length)?;
    let mut offset = start;
    while offset < end {
        let reader = file.get_read(offset).ok()?;
        let mut header = HeaderReader {
            input: reader,
            consumed: 0,
        };
        let page = header.page_header()?;
        let decoded = matches!(page.kind, DATA_PAGE | DICTIONARY_PAGE | DATA_PAGE_V2);
        if decoded && page.uncompressed > limit {
            return Some(page.uncompressed);
        }
        offset = offset
            .checked_add(header.consumed)?
            .checked_add(page.compressed)?;
    }
    None
}

// Page types, from parquet.thrift.
const DATA_PAGE: i64 = 0;
const DICTIONARY_PAGE: i64 = 2;
const DATA_PAGE_V2: i64 = 3;

/// The fields of a page header the walk needs.
struct PageHeader {
    kind: i64,
    uncompressed: u64,
    compressed: u64,
}

/// Thrift compact protocol, read just far enough to skip any value; counts the bytes it consumed.
struct HeaderReader<R> {
    input: R,
    consumed: u64,
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

impl<R: Read> HeaderReader<R> {
    /// Fields 1 to 3 of a `PageHeader` (type, uncompressed size, compressed size); `None` if the header
    /// is unreadable or lacks one, or a size is negative.
    fn page_header(&mut self) -> Option<PageHeader> {
        let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
        let mut field = 0i64;
        loop {
            let head = self.byte()?;
            if head == 0 {
                break;
            }
            let kind_code = head & 0x0f;
            field = match head >> 4 {
                0 => self.zigzag()?,
                delta => field + i64::from(delta),
            };
            match (field, kind_code) {
                (1, I32) => kind = Some(self.zigzag()?),
                (2, I32) => uncompressed = u64::try_from(self.zigzag()?).ok(),
                (3, I32) => compressed = u64::try_from(self.zigzag()?).ok(),
                _ => self.skip(kind_code, 0)?,
            }
        }
        Some(PageHeader {
            kind: kind?,
            uncompressed: uncompressed?,
            compressed: compressed?,
        })
    }

    fn skip(&mut self, kind: u8, depth: usize) -> Option<()> {
        if depth > MAX_NESTING {
            return None;
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
                let count = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                // A boolean element is one byte in a list.
                let element = match head & 0x0f {
                    BOOL_TRUE | BOOL_FALSE => I8,
                    other => other,
                };
                for _ in 0..count {
                    self.skip(element, depth + 1)?;
                }
            }
            MAP => {
                let count = self.varint()?;
                if count > 0 {
                    let kinds = self.byte()?;
                    for _ in 0..count {
                        self.skip(kinds >> 4, depth + 1)?;
                        self.skip(kinds & 0x0f, depth + 1)?;
                    }
                }
            }
            STRUCT => loop {
                let head = self.byte()?;
                if head == 0 {
                    break;
                }
                if head >> 4 == 0 {
                    self.zigzag()?;
                }
                self.skip(head & 0x0f, depth + 1)?;
            },
            _ => return None,
        }
        Some(())
    }

    fn byte(&mut self) -> Option<u8> {
        let mut one = [0u8];
        self.input.read_exact(&mut one).ok()?;
        self.consumed += 1;
        Some(one[0])
    }

    fn skip_bytes(&mut self, count: u64) -> Option<()> {
        let skipped =
            std::io::copy(&mut (&mut self.input).take(count), &mut std::io::sink()).ok()?;
        self.consumed += skipped;
        (skipped == count).then_some(())
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn zigzag(&mut self) -> Option<i64> {
        let raw = self.varint()?;
        Some((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }
}

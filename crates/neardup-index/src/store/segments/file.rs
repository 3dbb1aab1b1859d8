//! One immutable segment file: named sections of bytes, checksummed by blocks, opened by mapping.
//!
//! ```text
//! header   64 bytes   magic "NDSEG\0\0\x01", version, rows, sequence, value width, deletions, CRC-32
//! sections            each 8-byte aligned (so `u32` and `u64` columns are read in place)
//! directory           count, then per section: name length (u16), name, offset (u64), length (u64)
//! checksums           CRC-32 of every 64 KiB block of [0, data end)
//! footer   32 bytes   directory offset, checksums offset, data end, CRC-32 of directory + checksums +
//!                     these 24 bytes, magic "SEG1"
//! ```
//!
//! Opening checks the header, the footer, the directory and the checksum table (a few bytes per 64 KiB), and
//! that every section lies inside the data: a truncated or foreign file is refused at once. The data itself is
//! not read at open (that is the point); [`SegmentFile::verify`] reads it all against the block checksums, and
//! every merge does so before it rewrites a segment. Numbers are little-endian.

use memmap2::Mmap;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"NDSEG\0\0\x01";
const END_MAGIC: &[u8; 4] = b"SEG1";
const VERSION: u32 = 1;
const HEADER: usize = 64;
const FOOTER: usize = 32;
/// Bytes per checksummed block.
pub(crate) const BLOCK: usize = 1 << 16;
/// The value width that says "values differ in length" (a `values.ends` column gives their ends).
pub(crate) const VARIABLE: u32 = u32::MAX;

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Entries in the segment.
    pub rows: u64,
    /// The last batch folded into it.
    pub sequence: u64,
    /// Every value's length, or [`VARIABLE`].
    pub value_width: u32,
    /// Ids the segment deletes from older segments.
    pub deletions: u64,
}

/// Writes a segment file section by section, a block at a time: bytes gather in a 64 KiB block, which is
/// checksummed whole (small appends would each take the CRC's slow path) and written.
pub(crate) struct SegmentWriter {
    path: PathBuf,
    out: File,
    written: u64,
    block: Vec<u8>,
    sums: Vec<u32>,
    sections: Vec<(String, u64, u64)>,
    open_section: Option<(String, u64)>,
}

impl SegmentWriter {
    /// Creates `path` (which must not exist) and writes the header.
    pub fn create(path: &Path, header: Header) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut writer = SegmentWriter {
            path: path.to_path_buf(),
            out: file,
            written: 0,
            block: Vec::with_capacity(BLOCK),
            sums: Vec::new(),
            sections: Vec::new(),
            open_section: None,
        };
        writer.write(&encode_header(header))?;
        Ok(writer)
    }

    /// Bytes into the data, through the block checksums.
    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        self.written += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = (BLOCK - self.block.len()).min(bytes.len());
            self.block.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.block.len() == BLOCK {
                self.flush_block()?;
            }
        }
        Ok(())
    }

    /// Checksums and writes the gathered block.
    fn flush_block(&mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.sums.push(crc32fast::hash(&self.block));
            self.out.write_all(&self.block)?;
            self.block.clear();
        }
        Ok(())
    }

    /// Starts a section (8-byte aligned).
    pub fn begin(&mut self, name: &str) -> std::io::Result<()> {
        debug_assert!(self.open_section.is_none());
        let pad = (8 - self.written % 8) % 8;
        self.write(&[0u8; 8][..pad as usize])?;
        self.open_section = Some((name.to_owned(), self.written));
        Ok(())
    }

    /// Appends to the open section.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write(bytes)
    }

    /// Ends the open section.
    pub fn end(&mut self) -> std::io::Result<()> {
        if let Some((name, start)) = self.open_section.take() {
            self.sections.push((name, start, self.written - start));
        }
        Ok(())
    }

    /// A whole section at once.
    pub fn section(&mut self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.begin(name)?;
        self.append(bytes)?;
        self.end()
    }

    /// Writes the directory, the checksums and the footer, and makes the file durable.
    pub fn finish(mut self) -> std::io::Result<PathBuf> {
        let data_end = self.written;
        self.flush_block()?;
        let mut tail = Vec::new();
        tail.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        for (name, offset, len) in &self.sections {
            tail.extend_from_slice(&(name.len() as u16).to_le_bytes());
            tail.extend_from_slice(name.as_bytes());
            tail.extend_from_slice(&offset.to_le_bytes());
            tail.extend_from_slice(&len.to_le_bytes());
        }
        let dir_offset = data_end;
        let sums_offset = data_end + tail.len() as u64;
        for sum in &self.sums {
            tail.extend_from_slice(&sum.to_le_bytes());
        }
        tail.extend_from_slice(&dir_offset.to_le_bytes());
        tail.extend_from_slice(&sums_offset.to_le_bytes());
        tail.extend_from_slice(&data_end.to_le_bytes());
        let crc = crc32fast::hash(&tail);
        tail.extend_from_slice(&crc.to_le_bytes());
        tail.extend_from_slice(END_MAGIC);
        self.out.write_all(&tail)?;
        self.out.sync_all()?;
        Ok(self.path)
    }
}

fn encode_header(h: Header) -> [u8; HEADER] {
    let mut b = [0u8; HEADER];
    b[..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[16..24].copy_from_slice(&h.rows.to_le_bytes());
    b[24..32].copy_from_slice(&h.sequence.to_le_bytes());
    b[32..36].copy_from_slice(&h.value_width.to_le_bytes());
    b[40..48].copy_from_slice(&h.deletions.to_le_bytes());
    let crc = crc32fast::hash(&b[..HEADER - 4]);
    b[HEADER - 4..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// What tells a file from another that later took its name: an index never reuses a segment's name, but
/// its directory may be replaced by another index's while a reader has it open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    len: u64,
    #[cfg(unix)]
    device: u64,
    #[cfg(unix)]
    inode: u64,
    #[cfg(not(unix))]
    modified: Option<std::time::SystemTime>,
}

impl FileIdentity {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        FileIdentity {
            len: meta.len(),
            #[cfg(unix)]
            device: meta.dev(),
            #[cfg(unix)]
            inode: meta.ino(),
            #[cfg(not(unix))]
            modified: meta.modified().ok(),
        }
    }
}

/// A mapped segment file.
pub(crate) struct SegmentFile {
    path: PathBuf,
    identity: FileIdentity,
    map: Mmap,
    header: Header,
    sections: HashMap<String, Range<usize>>,
    data_end: usize,
    sums: Range<usize>,
}

impl std::fmt::Debug for SegmentFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentFile")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish()
    }
}

/// Maps a file read-only.
///
/// Segment files are written once (under a temporary name, then renamed) and never modified in place: the
/// only writers of the directory are this module's, which create new files and delete old ones (a deleted
/// file stays mapped until unmapped). A file truncated by someone else would make reads of the lost pages fail
/// with SIGBUS, which no user-space check prevents; checksums catch every other change.
#[allow(unsafe_code)]
fn map(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: see above: the file is immutable for as long as this crate's writers are the only ones.
    unsafe { Mmap::map(file) }
}

impl SegmentFile {
    /// Maps a segment and checks its frame (header, footer, directory, checksum table).
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let meta = file.metadata().map_err(|e| e.to_string())?;
        let (identity, len) = (FileIdentity::of(&meta), meta.len() as usize);
        if len < HEADER + FOOTER {
            return Err(format!(
                "{len} bytes, shorter than a segment's header and footer (truncated?)"
            ));
        }
        let map = map(&file).map_err(|e| e.to_string())?;
        let b = &map[..];
        if &b[..8] != MAGIC {
            return Err("not a neardup segment (bad magic)".into());
        }
        if crc32fast::hash(&b[..HEADER - 4]) != u32_at(b, HEADER - 4) {
            return Err("the header's checksum does not match (damaged)".into());
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(format!(
                "segment format {version}; this build reads format {VERSION}"
            ));
        }
        let header = Header {
            rows: u64_at(b, 16),
            sequence: u64_at(b, 24),
            value_width: u32_at(b, 32),
            deletions: u64_at(b, 40),
        };
        let foot = len - FOOTER;
        if &b[len - 4..] != END_MAGIC {
            return Err("the footer is missing (truncated?)".into());
        }
        let (dir_offset, sums_offset, data_end) = (
            u64_at(b, foot) as usize,
            u64_at(b, foot + 8) as usize,
            u64_at(b, foot + 16) as usize,
        );
        if !(HEADER <= data_end
            && data_end == dir_offset
            && dir_offset <= sums_offset
            && sums_offset <= foot)
        {
            return Err("the footer's offsets are inconsistent (damaged)".into());
        }
        if crc32fast::hash(&b[dir_offset..foot + 24]) != u32_at(b, foot + 24) {
            return Err("the directory's checksum does not match (damaged or truncated)".into());
        }
        if (foot - sums_offset) != data_end.div_ceil(BLOCK) * 4 {
            return Err("the checksum table does not cover the data (damaged)".into());
        }
        let mut sections = HashMap::new();
        let dir = &b[dir_offset..sums_offset];
        let bad = || "the section directory is malformed (damaged)".to_owned();
        let count = u32_at(dir.get(..4).ok_or_else(bad)?, 0) as usize;
        let mut at = 4;
        for _ in 0..count {
            let name_len =
                u16::from_le_bytes(dir.get(at..at + 2).ok_or_else(bad)?.try_into().expect("2"))
                    as usize;
            at += 2;
            let name = std::str::from_utf8(dir.get(at..at + name_len).ok_or_else(bad)?)
                .map_err(|_| bad())?
                .to_owned();
            at += name_len;
            let fields = dir.get(at..at + 16).ok_or_else(bad)?;
            let (offset, size) = (u64_at(fields, 0) as usize, u64_at(fields, 8) as usize);
            at += 16;
            let end = offset.checked_add(size).ok_or_else(bad)?;
            if offset < HEADER || end > data_end || offset % 8 != 0 {
                return Err(format!("section '{name}' lies outside the data (damaged)"));
            }
            sections.insert(name, offset..end);
        }
        Ok(SegmentFile {
            path: path.to_path_buf(),
            identity,
            map,
            header,
            sections,
            data_end,
            sums: sums_offset..foot,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which file was mapped.
    pub fn identity(&self) -> FileIdentity {
        self.identity
    }

    /// The header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// The bytes of a section.
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.sections.get(name).map(|r| &self.map[r.clone()])
    }

    /// Where a section lies in the file.
    pub fn range(&self, name: &str) -> Option<Range<usize>> {
        self.sections.get(name).cloned()
    }

    /// Every section's name and size in bytes.
    pub fn sections(&self) -> impl Iterator<Item = (&str, usize)> {
        self.sections
            .iter()
            .map(|(name, r)| (name.as_str(), r.len()))
    }

    /// The whole mapped file.
    pub fn data(&self) -> &[u8] {
        &self.map
    }

    /// The file's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// Reads every block against its checksum.
    pub fn verify(&self) -> Result<(), String> {
        let data = &self.map[..self.data_end];
        for (n, block) in data.chunks(BLOCK).enumerate() {
            let expected = u32_at(&self.map, self.sums.start + 4 * n);
            let found = crc32fast::hash(block);
            if found != expected {
                let start = n * BLOCK;
                return Err(format!(
                    "block {n} (bytes {start}..{}) has checksum {found:08x}, expected {expected:08x} (damaged)",
                    start + block.len()
                ));
            }
        }
        Ok(())
    }
}

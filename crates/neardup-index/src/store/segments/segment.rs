//! One segment's entries, read in place: the ids and values of its rows, the ids it deletes (tombstones), and
//! the sections an index kind added.
//!
//! Sections written here (every column little-endian, 8-byte aligned in the file):
//!
//! | section | what |
//! |---|---|
//! | `ids.bytes`, `ids.ends32` or `ids.ends64`, `ids.hash`, `ids.tags` | the rows' ids: their bytes, the end of each, and an open-addressing table (linear probing) of rows by xxh3-64 of the id: `ids.hash` holds a row per bucket (a power of two of them, at most 3/4 full) and `ids.tags` a byte per bucket, 0 for an empty one, else the hash's top 8 bits (1 for 0), so that a probe compares an id only when its tag matches |
//! | `values`, and `values.ends64` when lengths differ | the rows' values (fixed width: the header says which) |
//! | `del.bytes`, `del.ends32`/`del.ends64`, `del.hash` | the ids this segment deletes from older segments, laid out like the rows' ids |
//!
//! Every read of a row checks its bounds: a damaged file gives `None`, never a panic.

use super::Arrange;
use super::file::{FileIdentity, Header, SegmentFile, SegmentWriter, VARIABLE};
use std::ops::Range;
use std::path::Path;

/// The id-hash of the lookup tables (xxh3-64 of the id's bytes, the hash pinned for the shingles).
pub(super) fn id_hash(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

/// A column of end offsets (`u32` or `u64` each) that cuts a byte section into items: item i spans from
/// the end of item i - 1 (0 for the first) to its own end.
#[derive(Clone, Debug)]
struct Ends {
    range: Range<usize>,
    width: usize,
}

impl Ends {
    /// Where item `i` lies in its byte section (`None` past the file's end, in a damaged file).
    fn span(&self, data: &[u8], i: usize) -> Option<Range<usize>> {
        let end = |i: usize| -> Option<usize> {
            let at = self.range.start + i * self.width;
            let mut b = [0u8; 8];
            b[..self.width].copy_from_slice(data.get(at..at + self.width)?);
            Some(u64::from_le_bytes(b) as usize)
        };
        let start = if i == 0 { 0 } else { end(i - 1)? };
        Some(start..end(i)?)
    }
}

/// Writes the end offsets of items of these lengths as section `name` (`u64`s when `wide`, else `u32`s).
fn write_ends(
    out: &mut SegmentWriter,
    name: &str,
    lengths: impl Iterator<Item = usize>,
    wide: bool,
) -> std::io::Result<()> {
    out.begin(name)?;
    let mut end = 0u64;
    for len in lengths {
        end += len as u64;
        let bytes = end.to_le_bytes();
        out.append(if wide { &bytes[..] } else { &bytes[..4] })?;
    }
    out.end()
}

/// Where one table of ids lies: bytes, ends (and their width) and the hash table with its tags.
#[derive(Clone, Debug)]
struct IdColumns {
    count: usize,
    bytes: Range<usize>,
    ends: Ends,
    hash: Range<usize>,
    tags: Range<usize>,
}

/// A bucket's tag: the hash's top 8 bits, never 0 (the empty bucket's).
fn tag(hash: u64) -> u8 {
    ((hash >> 56) as u8).max(1)
}

impl IdColumns {
    fn find_in(file: &SegmentFile, prefix: &str, count: usize) -> Result<Option<Self>, String> {
        let range = |name: &str| file.range(&format!("{prefix}.{name}"));
        let Some(bytes) = range("bytes") else {
            return Ok(None);
        };
        let (ends, end_width) = match (range("ends32"), range("ends64")) {
            (Some(r), _) => (r, 4),
            (None, Some(r)) => (r, 8),
            (None, None) => return Err(format!("the {prefix} ends are missing (damaged)")),
        };
        let hash =
            range("hash").ok_or_else(|| format!("the {prefix} hash is missing (damaged)"))?;
        let tags =
            range("tags").ok_or_else(|| format!("the {prefix} tags are missing (damaged)"))?;
        let buckets = hash.len() / 4;
        if ends.len() != count * end_width
            || tags.len() != buckets
            || !hash.len().is_multiple_of(4)
            || !buckets.is_power_of_two()
            || buckets < count
        {
            return Err(format!(
                "the {prefix} sections' sizes do not match their count (damaged)"
            ));
        }
        Ok(Some(IdColumns {
            count,
            bytes,
            ends: Ends {
                range: ends,
                width: end_width,
            },
            hash,
            tags,
        }))
    }

    fn id_bytes<'a>(&self, data: &'a [u8], i: usize) -> Option<&'a [u8]> {
        if i >= self.count {
            return None;
        }
        data[self.bytes.clone()].get(self.ends.span(data, i)?)
    }

    fn id<'a>(&self, data: &'a [u8], i: usize) -> Option<&'a str> {
        std::str::from_utf8(self.id_bytes(data, i)?).ok()
    }

    /// Reads the first tag a lookup of `hash` reads, and nothing else: [`super::warmed`] does it for a group
    /// of lookups at once, so that their random reads of memory overlap instead of following one another.
    fn warm(&self, data: &[u8], hash: u64) {
        let tags = &data[self.tags.clone()];
        if !tags.is_empty() {
            std::hint::black_box(tags[hash as usize & (tags.len() - 1)]);
        }
    }

    /// The row of an id whose [`id_hash`] is `hash`.
    fn find(&self, data: &[u8], id: &str, hash: u64) -> Option<usize> {
        let (table, tags) = (&data[self.hash.clone()], &data[self.tags.clone()]);
        let buckets = tags.len();
        if buckets == 0 {
            return None;
        }
        let wanted = tag(hash);
        let mut at = hash as usize & (buckets - 1);
        // At most one pass over the table, even in a damaged file.
        for _ in 0..buckets {
            match tags[at] {
                0 => return None,
                t if t == wanted => {
                    let i = u32::from_le_bytes(table[at * 4..at * 4 + 4].try_into().expect("4"));
                    // Bytes, not text: the id asked for is valid UTF-8, so equal bytes are an equal id.
                    if self.id_bytes(data, i as usize) == Some(id.as_bytes()) {
                        return Some(i as usize);
                    }
                }
                _ => {}
            }
            at = (at + 1) & (buckets - 1);
        }
        None
    }
}

/// Writes a table of ids (in order) as the sections `{prefix}.bytes`, `.ends32`/`.ends64` and `.hash`.
fn write_ids<'a>(
    out: &mut SegmentWriter,
    prefix: &str,
    ids: impl Iterator<Item = &'a str> + Clone,
) -> std::io::Result<()> {
    out.begin(&format!("{prefix}.bytes"))?;
    let (mut total, mut count) = (0u64, 0usize);
    for id in ids.clone() {
        out.append(id.as_bytes())?;
        total += id.len() as u64;
        count += 1;
    }
    out.end()?;
    let wide = total > u64::from(u32::MAX);
    let name = format!("{prefix}.{}", if wide { "ends64" } else { "ends32" });
    write_ends(out, &name, ids.clone().map(str::len), wide)?;
    let buckets = (count + count / 3).max(1).next_power_of_two();
    let mut table = vec![u32::MAX; buckets];
    let mut tags = vec![0u8; buckets];
    for (i, id) in ids.enumerate() {
        let hash = id_hash(id);
        let mut at = hash as usize & (buckets - 1);
        while tags[at] != 0 {
            at = (at + 1) & (buckets - 1);
        }
        table[at] = i as u32;
        tags[at] = tag(hash);
    }
    out.section(&format!("{prefix}.hash"), bytemuck::cast_slice(&table))?;
    out.section(&format!("{prefix}.tags"), &tags)
}

/// One mapped segment.
#[derive(Debug)]
pub struct Segment {
    file: SegmentFile,
    rows: usize,
    ids: IdColumns,
    deleted: Option<IdColumns>,
    values: Range<usize>,
    value_ends: Option<Ends>,
    value_width: usize,
}

impl Segment {
    pub(super) fn open(path: &Path) -> Result<Segment, String> {
        let file = SegmentFile::open(path)?;
        let header = file.header();
        let rows = usize::try_from(header.rows).map_err(|_| "too many rows".to_owned())?;
        let deletions =
            usize::try_from(header.deletions).map_err(|_| "too many deletions".to_owned())?;
        let ids = IdColumns::find_in(&file, "ids", rows)?
            .ok_or("the section 'ids.bytes' is missing (damaged)")?;
        let deleted = IdColumns::find_in(&file, "del", deletions)?;
        if deleted.is_none() && deletions > 0 {
            return Err("the deleted ids are missing (damaged)".into());
        }
        let values = file
            .range("values")
            .ok_or("the section 'values' is missing (damaged)")?;
        let value_ends = (header.value_width == VARIABLE)
            .then(|| {
                file.range("values.ends64")
                    .map(|range| Ends { range, width: 8 })
                    .ok_or("the section 'values.ends64' is missing (damaged)")
            })
            .transpose()?;
        let value_width = if header.value_width == VARIABLE {
            0
        } else {
            header.value_width as usize
        };
        let fits = match &value_ends {
            Some(ends) => ends.range.len() == rows * 8,
            None => values.len() == rows * value_width,
        };
        if !fits {
            return Err("the values' size does not match the row count (damaged)".into());
        }
        Ok(Segment {
            file,
            rows,
            ids,
            deleted,
            values,
            value_ends,
            value_width,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether this is the segment mapped from the file `path` names now (see [`SegmentFile::identity`]).
    pub(super) fn is_file_at(&self, path: &Path) -> bool {
        self.file.path() == path
            && std::fs::metadata(path)
                .is_ok_and(|meta| FileIdentity::of(&meta) == self.file.identity())
    }

    /// Rows (entries stored) in the segment, some perhaps shadowed by newer segments.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Ids this segment deletes from older segments.
    pub fn deletions(&self) -> usize {
        self.deleted.as_ref().map_or(0, |d| d.count)
    }

    /// The file's size in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.file.bytes()
    }

    /// Where a section of `count` values of `T` lies, if it is there with that size and aligned for `T`
    /// (and this machine is little-endian, as the file is): what an index kind checks once per segment, to
    /// read the section in place with [`cast`](Self::cast) at every query.
    pub(crate) fn column<T: bytemuck::Pod>(
        &self,
        name: &str,
        count: usize,
    ) -> Option<Range<usize>> {
        let range = self.file.range(name)?;
        let fits = range.len() == count * std::mem::size_of::<T>()
            && bytemuck::try_cast_slice::<u8, T>(&self.file.data()[range.clone()]).is_ok();
        (fits && cfg!(target_endian = "little")).then_some(range)
    }

    /// The values of a column found by [`column`](Self::column) (empty for a range that is not one).
    pub(crate) fn cast<T: bytemuck::Pod>(&self, range: &Range<usize>) -> &[T] {
        bytemuck::try_cast_slice(&self.file.data()[range.clone()]).unwrap_or(&[])
    }

    /// Every section's name and size in bytes (the entries' and the index kind's).
    pub fn sections(&self) -> impl Iterator<Item = (&str, usize)> {
        self.file.sections()
    }

    /// A section an index kind added (see [`Arrange`]).
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.file.section(name)
    }

    /// The id of a row (`None` past the end, or in a damaged file).
    pub fn id(&self, row: usize) -> Option<&str> {
        self.ids.id(self.file.data(), row)
    }

    /// The value of a row.
    pub fn value(&self, row: usize) -> Option<&[u8]> {
        if row >= self.rows {
            return None;
        }
        let data = self.file.data();
        let span = match &self.value_ends {
            None => row * self.value_width..(row + 1) * self.value_width,
            Some(ends) => ends.span(data, row)?,
        };
        data[self.values.clone()].get(span)
    }

    /// The row of an id.
    pub fn find(&self, id: &str) -> Option<usize> {
        self.find_hashed(id, id_hash(id))
    }

    /// Whether the segment deletes an id (from older segments).
    pub fn deletes(&self, id: &str) -> bool {
        self.deletes_hashed(id, id_hash(id))
    }

    /// [`find`](Self::find) for an id whose [`id_hash`] is known.
    pub(super) fn find_hashed(&self, id: &str, hash: u64) -> Option<usize> {
        self.ids.find(self.file.data(), id, hash)
    }

    /// [`deletes`](Self::deletes) for an id whose [`id_hash`] is known.
    pub(super) fn deletes_hashed(&self, id: &str, hash: u64) -> bool {
        self.deleted
            .as_ref()
            .is_some_and(|d| d.find(self.file.data(), id, hash).is_some())
    }

    /// Reads the memory that looking up an id of this hash starts with (see [`super::warmed`]).
    pub(super) fn warm(&self, hash: u64) {
        let data = self.file.data();
        self.ids.warm(data, hash);
        if let Some(deleted) = &self.deleted {
            deleted.warm(data, hash);
        }
    }

    /// The ids this segment deletes.
    pub(super) fn deleted_ids(&self) -> impl Iterator<Item = Option<&str>> {
        let data = self.file.data();
        self.deleted
            .iter()
            .flat_map(move |d| (0..d.count).map(move |i| d.id(data, i)))
    }

    /// Reads every block of the file against its checksum.
    pub fn verify(&self) -> Result<(), String> {
        self.file.verify()
    }

    /// Writes a segment of `entries` (id, value) laid out by `arrange` (sorted by id without one), deleting
    /// `deleted` from older segments, to `path` (which must not exist), durably.
    pub(super) fn write(
        path: &Path,
        entries: &[(&str, &[u8])],
        deleted: &[&str],
        sequence: u64,
        arrange: Option<&dyn Arrange>,
    ) -> Result<(), String> {
        let n = entries.len();
        // Rows are numbered in `u32` (the kinds' row columns, the id hash table), `u32::MAX` meaning none.
        if n >= u32::MAX as usize {
            return Err(format!("{n} entries: a segment holds fewer than 2^32 - 1"));
        }
        let order = match arrange {
            Some(a) => a.order(n, &|i| entries[i].1)?,
            None => {
                let mut order: Vec<u32> = (0..n as u32).collect();
                order.sort_unstable_by_key(|&i| entries[i as usize].0);
                order
            }
        };
        if order.len() != n {
            return Err("the layout's row order has the wrong length".into());
        }
        let width = entries.first().map_or(0, |e| e.1.len());
        let fixed = entries.iter().all(|e| e.1.len() == width);
        let header = Header {
            rows: n as u64,
            deletions: deleted.len() as u64,
            sequence,
            value_width: if fixed { width as u32 } else { VARIABLE },
        };
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut out = SegmentWriter::create(path, header).map_err(io)?;
        let rows = order.iter().map(|&i| entries[i as usize]);
        write_ids(&mut out, "ids", rows.clone().map(|(id, _)| id)).map_err(io)?;
        if !fixed {
            write_ends(
                &mut out,
                "values.ends64",
                rows.clone().map(|(_, v)| v.len()),
                true,
            )
            .map_err(io)?;
        }
        out.begin("values").map_err(io)?;
        for (_, value) in rows {
            out.append(value).map_err(io)?;
        }
        out.end().map_err(io)?;
        if !deleted.is_empty() {
            write_ids(&mut out, "del", deleted.iter().copied()).map_err(io)?;
        }
        if let Some(a) = arrange {
            let row = |r: usize| entries[order[r] as usize].1;
            a.sections(n, &row, &mut |name, bytes| {
                out.section(name, bytes).map_err(io)
            })?;
        }
        out.finish().map_err(io)?;
        Ok(())
    }
}

//! The on-disk segment backend: immutable mapped segments, a write-ahead log, and a manifest that names them.
//!
//! The Hamming-distance paper's layout (Manku, Jain and Das Sarma, §3.1.3): compact sorted tables, "new entries
//! in trees, checking both, and periodically merging the trees back into the sorted lists". Here:
//!
//! * a **segment** ([`Segment`]) is one immutable file of entries: the ids (their bytes, their ends, and an
//!   open-addressing hash table of rows for lookups by id), the values, and the sections an index kind adds
//!   through [`Arrange`] (the permuted tables of a Hamming index, see `hamming::mapped`). It is mapped with
//!   `memmap2`, not read: opening an index of any size reads a header, a footer and the manifest, and queries
//!   read the tables through the page cache;
//! * the **write-ahead log** (`wal`) holds every batch committed since the segments were written, fsync'd
//!   before the batch is acknowledged; the batches since the segments (the **delta**) are also kept in memory,
//!   where the index layer keeps its own small index of them;
//! * a **merge** ([`SegmentStore::merge`], and automatically when the delta reaches an eighth of the entries,
//!   at least [`MergePolicy::min_changes`]) writes the live entries into a new segment, starts a new log, and
//!   swaps the **manifest** (`manifest`); then the old files are removed. A crash at any moment leaves the old
//!   manifest or the new one, and the files of the other are removed at the next open;
//! * **many readers, one writer**: the writer holds `DIR/LOCK` (an advisory lock, released by the kernel when
//!   the process dies); readers ([`SegmentStore::open_reader`]) take no lock and follow the writer by reading
//!   the manifest and the log's tail whenever they are asked for the sequence or the changes.
//!
//! The store knows entries and bytes, not index kinds: the kind's layout comes in through [`Arrange`], chosen
//! by whoever opens the store (`crate::disk`). It passes the conformance suite like every backend.
//!
//! Checks: every record of the log, the manifest and each segment's frame (header, footer, directory, checksum
//! table) are checked when read; the data blocks of a segment are checked by [`SegmentStore::verify`] and by
//! every merge before it rewrites them (reading them all at open would defeat mapping).

mod file;
mod manifest;
mod wal;

use self::file::{Header, SegmentFile, SegmentWriter, VARIABLE};
use self::manifest::{Manifest, ReadError, segment_name, sync_dir, wal_name};
use self::wal::Wal;
use super::{
    Batch, Change, ChangesSince, Retention, Settings, Store, StoreError, Visit, check_batch,
    check_settings,
};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The name of the lock file the writer holds.
pub const LOCK_FILE: &str = "LOCK";
/// The file that marks a directory as a segmented index.
pub const MANIFEST_FILE: &str = manifest::FILE;

/// A segment's layout: the row order and the sections an index kind adds.
#[derive(Debug, Default)]
pub struct Arranged {
    /// Row r holds entry `order[r]` (a permutation of the entries).
    pub order: Vec<u32>,
    /// Named sections, computed over the rows in that order.
    pub sections: Vec<(String, Vec<u8>)>,
}

/// How an index kind lays out a segment: the order of its rows, and the sections it adds.
pub trait Arrange: Send + Sync {
    /// Given the values of `n` entries (`value(i)`), the row order (row r holds entry `order[r]`; a
    /// permutation of `0..n`) and the named sections to add, computed over the rows in that order. An error
    /// (a value the kind cannot hold) stops the merge; nothing is changed.
    fn arrange<'a>(&self, n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Arranged, String>;
}

/// When the writer merges by itself: when the delta holds at least `max(min_changes, fraction × entries in
/// the segments)` ids. `min_changes = usize::MAX` merges only when asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MergePolicy {
    /// Ids in the delta below which no merge happens.
    pub min_changes: usize,
    /// The delta's size, as a fraction of the segments' entries, that starts a merge.
    pub fraction: f64,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            min_changes: 1 << 18,
            fraction: 0.125,
        }
    }
}

/// One mapped segment.
#[derive(Debug)]
pub struct Segment {
    file: SegmentFile,
    rows: usize,
    ids: Range<usize>,
    /// Id ends: `(range, width in bytes)`.
    id_ends: (Range<usize>, usize),
    hash: Range<usize>,
    values: Range<usize>,
    value_ends: Option<Range<usize>>,
    value_width: usize,
}

/// The id-hash of the segments' lookup table (xxh3-64 of the id's bytes, pinned with the shingle hash).
fn id_hash(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

impl Segment {
    fn open(path: &Path) -> Result<Segment, String> {
        let file = SegmentFile::open(path)?;
        let header = file.header();
        let rows = usize::try_from(header.rows).map_err(|_| "too many rows".to_owned())?;
        let need = |name: &str| {
            file.range(name)
                .ok_or_else(|| format!("the section '{name}' is missing (damaged)"))
        };
        let id_ends = match (file.range("ids.ends32"), file.range("ids.ends64")) {
            (Some(r), _) => (r, 4),
            (None, Some(r)) => (r, 8),
            (None, None) => return Err("the id ends are missing (damaged)".into()),
        };
        let (ids, hash, values) = (need("ids.bytes")?, need("ids.hash")?, need("values")?);
        let value_ends = (header.value_width == VARIABLE)
            .then(|| need("values.ends64"))
            .transpose()?;
        let value_width = if header.value_width == VARIABLE {
            0
        } else {
            header.value_width as usize
        };
        let buckets = hash.len() / 4;
        let sizes_fit = id_ends.0.len() == rows * id_ends.1
            && hash.len() % 4 == 0
            && buckets.is_power_of_two()
            && buckets >= rows
            && match &value_ends {
                Some(ends) => ends.len() == rows * 8,
                None => values.len() == rows * value_width,
            };
        if !sizes_fit {
            return Err("the sections' sizes do not match the row count (damaged)".into());
        }
        Ok(Segment {
            file,
            rows,
            ids,
            id_ends,
            hash,
            values,
            value_ends,
            value_width,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Entries in the segment (some may be shadowed by later changes).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The file's size in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.file.bytes()
    }

    /// The whole mapped file (sections are found with [`range`](Self::range)).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.file.data()
    }

    /// Where a section lies in the file.
    pub(crate) fn range(&self, name: &str) -> Option<Range<usize>> {
        self.file.range(name)
    }

    /// A section an index kind added (see [`Arrange`]).
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.file.section(name)
    }

    fn end_of(&self, ends: &Range<usize>, width: usize, row: usize) -> Option<usize> {
        let at = ends.start + row * width;
        Some(le_u64(self.file.data().get(at..at + width)?) as usize)
    }

    /// The id of a row (`None` past the end, or in a damaged file).
    pub fn id(&self, row: usize) -> Option<&str> {
        if row >= self.rows {
            return None;
        }
        let (ends, w) = (&self.id_ends.0, self.id_ends.1);
        let start = if row == 0 {
            0
        } else {
            self.end_of(ends, w, row - 1)?
        };
        let end = self.end_of(ends, w, row)?;
        let bytes = self.file.data()[self.ids.clone()].get(start..end)?;
        std::str::from_utf8(bytes).ok()
    }

    /// The value of a row.
    pub fn value(&self, row: usize) -> Option<&[u8]> {
        if row >= self.rows {
            return None;
        }
        let values = &self.file.data()[self.values.clone()];
        match &self.value_ends {
            None => values.get(row * self.value_width..(row + 1) * self.value_width),
            Some(ends) => {
                let start = if row == 0 {
                    0
                } else {
                    self.end_of(ends, 8, row - 1)?
                };
                values.get(start..self.end_of(ends, 8, row)?)
            }
        }
    }

    /// The row of an id.
    pub fn find(&self, id: &str) -> Option<usize> {
        let table = &self.file.data()[self.hash.clone()];
        let buckets = table.len() / 4;
        if buckets == 0 {
            return None;
        }
        let mut at = id_hash(id) as usize & (buckets - 1);
        // At most one pass over the table, even in a damaged file.
        for _ in 0..buckets {
            let row = u32::from_le_bytes(table[at * 4..at * 4 + 4].try_into().expect("4"));
            if row == u32::MAX {
                return None;
            }
            if self.id(row as usize) == Some(id) {
                return Some(row as usize);
            }
            at = (at + 1) & (buckets - 1);
        }
        None
    }

    /// Reads every block of the file against its checksum.
    pub fn verify(&self) -> Result<(), String> {
        self.file.verify()
    }

    /// Writes a segment of `entries` (id, value), laid out by `arrange` (sorted by id without one), to `path`.
    fn write(
        path: &Path,
        entries: &[(&str, &[u8])],
        sequence: u64,
        arrange: Option<&dyn Arrange>,
    ) -> Result<(), String> {
        let n = entries.len();
        let Arranged { order, sections } = match arrange {
            Some(a) => a.arrange(n, &|i| entries[i].1)?,
            None => {
                let mut order: Vec<u32> = (0..n as u32).collect();
                order.sort_unstable_by_key(|&i| entries[i as usize].0);
                Arranged {
                    order,
                    sections: Vec::new(),
                }
            }
        };
        if order.len() != n {
            return Err("the layout's row order has the wrong length".into());
        }
        let width = entries.first().map_or(0, |e| e.1.len());
        let fixed = entries.iter().all(|e| e.1.len() == width);
        let header = Header {
            rows: n as u64,
            sequence,
            value_width: if fixed { width as u32 } else { VARIABLE },
        };
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut out = SegmentWriter::create(path, header).map_err(io)?;
        let id_bytes: usize = entries.iter().map(|e| e.0.len()).sum();
        let rows = order.iter().map(|&i| entries[i as usize]);
        out.begin("ids.bytes").map_err(io)?;
        for (id, _) in rows.clone() {
            out.append(id.as_bytes()).map_err(io)?;
        }
        out.end().map_err(io)?;
        let wide = id_bytes > u32::MAX as usize;
        out.begin(if wide { "ids.ends64" } else { "ids.ends32" })
            .map_err(io)?;
        let mut end = 0u64;
        for (id, _) in rows.clone() {
            end += id.len() as u64;
            let bytes = end.to_le_bytes();
            out.append(if wide { &bytes[..] } else { &bytes[..4] })
                .map_err(io)?;
        }
        out.end().map_err(io)?;
        let buckets = (n + n / 3).max(1).next_power_of_two();
        let mut table = vec![u32::MAX; buckets];
        for (row, (id, _)) in rows.clone().enumerate() {
            let mut at = id_hash(id) as usize & (buckets - 1);
            while table[at] != u32::MAX {
                at = (at + 1) & (buckets - 1);
            }
            table[at] = row as u32;
        }
        out.section("ids.hash", bytemuck::cast_slice(&table))
            .map_err(io)?;
        drop(table);
        if !fixed {
            out.begin("values.ends64").map_err(io)?;
            let mut end = 0u64;
            for (_, value) in rows.clone() {
                end += value.len() as u64;
                out.append(&end.to_le_bytes()).map_err(io)?;
            }
            out.end().map_err(io)?;
        }
        out.begin("values").map_err(io)?;
        for (_, value) in rows {
            out.append(value).map_err(io)?;
        }
        out.end().map_err(io)?;
        for (name, bytes) in &sections {
            out.section(name, bytes).map_err(io)?;
        }
        out.finish().map_err(io)?;
        Ok(())
    }
}

/// The segments of one generation of an index, and the last batch they hold.
#[derive(Debug)]
pub struct SegmentSet {
    /// Increases at every merge.
    pub generation: u64,
    /// The last batch folded into the segments.
    pub sequence: u64,
    /// The segments (at most one in this version: every merge writes all entries into one).
    pub segments: Vec<Segment>,
}

impl SegmentSet {
    /// Entries in the segments, shadowed ones included.
    pub fn rows(&self) -> usize {
        self.segments.iter().map(Segment::rows).sum()
    }

    /// Whether an id has a row in a segment.
    pub fn contains(&self, id: &str) -> bool {
        self.segments.iter().any(|s| s.find(id).is_some())
    }

    /// The bytes of the segment files.
    pub fn file_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::file_bytes).sum()
    }
}

/// What [`Store::segmented`] returns: the segments and, in order, every batch committed after them.
#[derive(Debug)]
pub struct Segmented {
    /// The segments.
    pub set: Arc<SegmentSet>,
    /// The batches after `set.sequence`, in order.
    pub recent: Vec<Batch>,
}

/// A retained batch of the log: where its record lies in the log file.
#[derive(Clone, Copy, Debug)]
struct Logged {
    sequence: u64,
    offset: u64,
    changes: u64,
}

struct Writer {
    /// Held for the handle's life: the advisory lock is the one-writer rule.
    _lock: File,
    wal: Wal,
}

struct Inner {
    dir: PathBuf,
    writer: Option<Writer>,
    arrange: Option<Arc<dyn Arrange>>,
    manifest: Manifest,
    set: Arc<SegmentSet>,
    /// Every id changed since the segments: its value now, or `None` if deleted.
    delta: HashMap<String, Option<Vec<u8>>>,
    live: u64,
    sequence: u64,
    /// The retained batches (newest last) and how many changes they hold.
    log: VecDeque<Logged>,
    logged: u64,
    /// Where the log's complete records end.
    wal_end: u64,
    merge: MergePolicy,
    merge_error: Option<String>,
}

/// A segmented index's store: see the module documentation. Clones are handles to the same open store.
#[derive(Clone)]
pub struct SegmentStore {
    dir: PathBuf,
    settings: Arc<Settings>,
    shared: Arc<Mutex<Inner>>,
    retention: Retention,
}

impl std::fmt::Debug for SegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentStore")
            .field("dir", &self.dir)
            .finish()
    }
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

fn foreign(path: &Path, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Foreign {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Takes the writer's lock, or says who has it.
fn lock(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_error(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error(&path, e)),
    }
}

/// Loads the state a manifest names: maps its segments and reads its log.
fn load(
    dir: &Path,
    manifest: Manifest,
    arrange: Option<Arc<dyn Arrange>>,
    retention: Retention,
) -> Result<Inner, StoreError> {
    if manifest.segments.len() > 1 {
        return Err(foreign(
            &dir.join(manifest::FILE),
            "it names several segments: written by a later version of neardup",
        ));
    }
    let mut segments = Vec::new();
    for name in &manifest.segments {
        let path = dir.join(name);
        segments.push(Segment::open(&path).map_err(|e| foreign(&path, e))?);
    }
    let set = Arc::new(SegmentSet {
        generation: manifest.generation,
        sequence: manifest.sequence,
        segments,
    });
    let wal_path = dir.join(&manifest.wal);
    let base = wal::base(&wal_path).map_err(|e| foreign(&wal_path, e))?;
    if base != manifest.sequence {
        return Err(foreign(
            &wal_path,
            format!(
                "the log follows batch {base}, but the manifest's segments end at batch {}",
                manifest.sequence
            ),
        ));
    }
    let mut inner = Inner {
        dir: dir.to_path_buf(),
        writer: None,
        arrange,
        live: set.rows() as u64,
        sequence: manifest.sequence,
        manifest,
        set,
        delta: HashMap::new(),
        log: VecDeque::new(),
        logged: 0,
        wal_end: wal::HEADER,
        merge: MergePolicy::default(),
        merge_error: None,
    };
    inner.read_log(retention)?;
    Ok(inner)
}

impl Inner {
    fn wal_path(&self) -> PathBuf {
        self.dir.join(&self.manifest.wal)
    }

    /// Reads the log's records after `wal_end`: copies of batches before the segments go to the change log
    /// only, later ones into the delta too.
    fn read_log(&mut self, retention: Retention) -> Result<(), StoreError> {
        let path = self.wal_path();
        let first = self.wal_end == wal::HEADER;
        let next = (!first).then_some(self.sequence + 1);
        let tail = wal::read(&path, self.wal_end, next).map_err(|e| foreign(&path, e))?;
        let base = self.set.sequence;
        let mut offset = self.wal_end;
        for (batch, end) in tail.batches {
            if batch.sequence <= base {
                self.log_batch(&batch, offset, retention);
            } else if batch.sequence == self.sequence + 1 {
                self.replay(&batch, offset, retention);
            } else {
                return Err(foreign(
                    &path,
                    format!(
                        "the log jumps from batch {} to batch {} (damaged)",
                        self.sequence, batch.sequence
                    ),
                ));
            }
            offset = end;
        }
        self.wal_end = tail.end;
        Ok(())
    }

    /// Whether an id is stored now.
    fn present(&self, id: &str) -> bool {
        match self.delta.get(id) {
            Some(value) => value.is_some(),
            None => self.set.contains(id),
        }
    }

    /// Folds a committed batch (whose record starts at `offset`) into the delta and the log.
    fn replay(&mut self, batch: &Batch, offset: u64, retention: Retention) {
        for change in &batch.changes {
            let before = self.present(change.id());
            let after = match change {
                Change::Put { id, value } => {
                    self.delta.insert(id.clone(), Some(value.clone()));
                    true
                }
                Change::Delete(id) => {
                    self.delta.insert(id.clone(), None);
                    false
                }
            };
            self.live = self.live + u64::from(after) - u64::from(before);
        }
        self.sequence = batch.sequence;
        self.log_batch(batch, offset, retention);
    }

    /// Keeps a batch in the change log, dropping the oldest beyond the retention limit.
    fn log_batch(&mut self, batch: &Batch, offset: u64, retention: Retention) {
        self.log.push_back(Logged {
            sequence: batch.sequence,
            offset,
            changes: batch.changes.len() as u64,
        });
        self.logged += batch.changes.len() as u64;
        let limit = retention.limit(self.live);
        while self.logged > limit {
            let Some(oldest) = self.log.pop_front() else {
                break;
            };
            self.logged -= oldest.changes;
        }
    }

    /// A reader catches up with the writer: a new manifest is loaded whole, else the log's new records are read.
    fn catch_up(&mut self, retention: Retention) -> Result<(), StoreError> {
        if self.writer.is_some() {
            return Ok(());
        }
        let mut attempts = 0;
        loop {
            let manifest = Manifest::read(&self.dir).map_err(|e| self.manifest_error(e))?;
            if manifest.generation == self.manifest.generation {
                return self.read_log(retention);
            }
            // A merge happened: load the new generation (whose files a second merge may remove meanwhile).
            match load(&self.dir, manifest, self.arrange.clone(), retention) {
                Ok(mut fresh) => {
                    fresh.merge = self.merge;
                    *self = fresh;
                    return Ok(());
                }
                Err(_) if attempts < 5 => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn manifest_error(&self, e: ReadError) -> StoreError {
        match e {
            ReadError::Missing => StoreError::Missing(self.dir.clone()),
            ReadError::Bad(reason) => foreign(&self.dir.join(manifest::FILE), reason),
        }
    }

    /// Every batch after the segments, read from the log.
    fn recent(&self) -> Result<Vec<Batch>, StoreError> {
        let path = self.wal_path();
        let tail = wal::read(&path, wal::HEADER, None).map_err(|e| foreign(&path, e))?;
        Ok(tail
            .batches
            .into_iter()
            .map(|(b, _)| b)
            .filter(|b| b.sequence > self.set.sequence && b.sequence <= self.sequence)
            .collect())
    }

    /// The batches the change log keeps, read from the log.
    fn retained(&self) -> Result<Vec<Batch>, StoreError> {
        let Some(oldest) = self.log.front() else {
            return Ok(Vec::new());
        };
        let path = self.wal_path();
        let tail = wal::read(&path, oldest.offset, Some(oldest.sequence))
            .map_err(|e| foreign(&path, e))?;
        Ok(tail
            .batches
            .into_iter()
            .map(|(b, _)| b)
            .take_while(|b| b.sequence <= self.sequence)
            .collect())
    }

    /// Writes the live entries into a new segment, starts a new log and swaps the manifest.
    fn merge(&mut self) -> Result<(), StoreError> {
        if self.writer.is_none() {
            return Err(StoreError::Refused {
                path: self.dir.clone(),
                reason: "this handle is a reader: only the writer merges".into(),
            });
        }
        for segment in &self.set.segments {
            segment.verify().map_err(|e| foreign(segment.path(), e))?;
        }
        let generation = self.manifest.generation + 1;
        let (seg_name, wal_name) = (segment_name(generation), wal_name(generation));
        let (seg_path, new_wal_path) = (self.dir.join(&seg_name), self.dir.join(&wal_name));
        let tmp = self.dir.join(format!("{seg_name}.tmp"));
        let cleanup = || {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&seg_path);
            let _ = std::fs::remove_file(&new_wal_path);
        };
        cleanup();
        type Written = (Vec<Segment>, (Wal, Vec<u64>));
        let written = (|| -> Result<Written, StoreError> {
            let mut entries: Vec<(&str, &[u8])> = Vec::with_capacity(self.live as usize);
            for segment in &self.set.segments {
                for row in 0..segment.rows() {
                    let (Some(id), Some(value)) = (segment.id(row), segment.value(row)) else {
                        return Err(foreign(segment.path(), format!("row {row} is damaged")));
                    };
                    if !self.delta.contains_key(id) {
                        entries.push((id, value));
                    }
                }
            }
            let mut recent: Vec<(&str, &[u8])> = self
                .delta
                .iter()
                .filter_map(|(id, v)| v.as_deref().map(|v| (id.as_str(), v)))
                .collect();
            recent.sort_unstable();
            entries.extend(recent);
            let mut segments = Vec::new();
            if !entries.is_empty() {
                Segment::write(&tmp, &entries, self.sequence, self.arrange.as_deref())
                    .map_err(|e| io_error(&tmp, e))?;
                std::fs::rename(&tmp, &seg_path).map_err(|e| io_error(&seg_path, e))?;
                segments.push(Segment::open(&seg_path).map_err(|e| foreign(&seg_path, e))?);
            }
            let retained = self.retained()?;
            let (wal, offsets) = Wal::create(&new_wal_path, self.sequence, &retained)
                .map_err(|e| io_error(&new_wal_path, e))?;
            Ok((segments, (wal, offsets)))
        })();
        let (segments, (new_wal, offsets)) = match written {
            Ok(w) => w,
            Err(e) => {
                cleanup();
                return Err(e);
            }
        };
        let manifest = Manifest {
            generation,
            sequence: self.sequence,
            segments: if segments.is_empty() {
                Vec::new()
            } else {
                vec![seg_name]
            },
            wal: wal_name,
            settings: self.manifest.settings.clone(),
        };
        if let Err(e) = sync_dir(&self.dir).and_then(|()| manifest.write(&self.dir)) {
            cleanup();
            return Err(io_error(&self.dir.join(manifest::FILE), e));
        }
        let old = std::mem::replace(&mut self.manifest, manifest);
        for name in old.segments.iter().chain([&old.wal]) {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
        let _ = sync_dir(&self.dir);
        self.set = Arc::new(SegmentSet {
            generation,
            sequence: self.sequence,
            segments,
        });
        self.delta.clear();
        // The change log is the same batches, now copied at the start of the new log file.
        for (logged, offset) in self.log.iter_mut().zip(offsets) {
            logged.offset = offset;
        }
        self.wal_end = new_wal.len();
        if let Some(writer) = &mut self.writer {
            writer.wal = new_wal;
        }
        Ok(())
    }

    /// Removes files no manifest names (left by a crash during a merge).
    fn remove_strays(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours =
                name.starts_with("seg-") || name.starts_with("wal-") || name == "MANIFEST.tmp";
            let live = self.manifest.segments.contains(&name) || self.manifest.wal == name;
            if ours && !live {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

impl SegmentStore {
    /// Creates a segmented index in `dir` (created if missing), with no entries, and opens it for writing.
    /// `arrange` lays out the segments of the index's kind (`None`: entries only).
    pub fn create(
        dir: &Path,
        settings: &Settings,
        arrange: Option<Arc<dyn Arrange>>,
    ) -> Result<Self, StoreError> {
        check_settings(dir, settings)?;
        if dir.join(manifest::FILE).exists() || dir.join(super::FILE_NAME).exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        let new_dir = !dir.exists();
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let made = (|| {
            let lock = lock(dir)?;
            let wal_path = dir.join(wal_name(1));
            let _ = std::fs::remove_file(&wal_path);
            Wal::create(&wal_path, 0, &[]).map_err(|e| io_error(&wal_path, e))?;
            let manifest = Manifest {
                generation: 1,
                sequence: 0,
                segments: Vec::new(),
                wal: wal_name(1),
                settings: settings.clone(),
            };
            // The manifest comes last: until it exists, the directory is no index.
            sync_dir(dir)
                .and_then(|()| manifest.write(dir))
                .map_err(|e| io_error(&dir.join(manifest::FILE), e))?;
            Ok(lock)
        })();
        let lock = match made {
            Ok(lock) => lock,
            Err(e) => {
                // A create that fails (a full disk) leaves nothing that later commands would trip over.
                if new_dir {
                    let _ = std::fs::remove_dir_all(dir);
                } else {
                    for name in [
                        wal_name(1),
                        format!("{}.tmp", manifest::FILE),
                        LOCK_FILE.to_owned(),
                    ] {
                        let _ = std::fs::remove_file(dir.join(name));
                    }
                }
                return Err(e);
            }
        };
        drop(lock);
        Self::open(dir, arrange)
    }

    /// Opens the index in `dir` for writing (one writer at a time: another gets [`StoreError::Locked`]).
    /// A torn last log record (a write that was never acknowledged) is cut off; files of an unfinished merge
    /// are removed.
    pub fn open(dir: &Path, arrange: Option<Arc<dyn Arrange>>) -> Result<Self, StoreError> {
        let manifest = Self::manifest(dir)?;
        let lock = lock(dir)?;
        // Read again under the lock: a writer that held it may have merged in between.
        let manifest = if Self::manifest(dir)? == manifest {
            manifest
        } else {
            Self::manifest(dir)?
        };
        let retention = Retention::default();
        let mut inner = load(dir, manifest, arrange, retention)?;
        let wal_path = inner.wal_path();
        let wal = Wal::open(&wal_path, inner.wal_end).map_err(|e| io_error(&wal_path, e))?;
        inner.writer = Some(Writer { _lock: lock, wal });
        inner.remove_strays();
        Ok(Self::handle(dir, inner, retention))
    }

    /// Opens the index in `dir` for reading, beside a writer (no lock is taken): the handle follows the
    /// writer's commits and merges whenever it is asked for the sequence or the changes.
    pub fn open_reader(dir: &Path, arrange: Option<Arc<dyn Arrange>>) -> Result<Self, StoreError> {
        let retention = Retention::default();
        let mut attempts = 0;
        loop {
            let manifest = Self::manifest(dir)?;
            match load(dir, manifest, arrange.clone(), retention) {
                Ok(inner) => return Ok(Self::handle(dir, inner, retention)),
                // The writer merged between the manifest and its files: read the new manifest.
                Err(_) if attempts < 5 => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn manifest(dir: &Path) -> Result<Manifest, StoreError> {
        Manifest::read(dir).map_err(|e| match e {
            ReadError::Missing => StoreError::Missing(dir.to_path_buf()),
            ReadError::Bad(reason) => foreign(&dir.join(manifest::FILE), reason),
        })
    }

    fn handle(dir: &Path, inner: Inner, retention: Retention) -> Self {
        SegmentStore {
            dir: dir.to_path_buf(),
            settings: Arc::new(inner.manifest.settings.clone()),
            shared: Arc::new(Mutex::new(inner)),
            retention,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state is changed only after the durable step succeeded, so a poisoned lock holds a whole state.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this handle writes (holds the lock).
    pub fn is_writer(&self) -> bool {
        self.lock().writer.is_some()
    }

    /// Sets when the writer merges by itself.
    pub fn set_merge_policy(&self, policy: MergePolicy) {
        self.lock().merge = policy;
    }

    /// Writes every live entry into a new segment now (see the module documentation).
    pub fn merge(&self) -> Result<(), StoreError> {
        self.lock().merge()
    }

    /// Why the last automatic merge failed, if it did (the batches stay in the log; the next commit tries
    /// again).
    pub fn merge_error(&self) -> Option<String> {
        self.lock().merge_error.clone()
    }

    /// Reads every file of the index against its checksums: the manifest, every log record, and every
    /// block of every segment.
    pub fn verify(&self) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.catch_up(self.retention)?;
        for segment in &inner.set.segments {
            segment.verify().map_err(|e| foreign(segment.path(), e))?;
        }
        inner.recent().map(drop)
    }

    /// Files and bytes on disk: the segments, and the log.
    pub fn disk_bytes(&self) -> (u64, u64) {
        let inner = self.lock();
        (inner.set.file_bytes(), inner.wal_end)
    }
}

impl Store for SegmentStore {
    fn location(&self) -> &Path {
        &self.dir
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.catch_up(self.retention)?;
        for segment in &inner.set.segments {
            for row in 0..segment.rows() {
                let (Some(id), Some(value)) = (segment.id(row), segment.value(row)) else {
                    return Err(foreign(segment.path(), format!("row {row} is damaged")));
                };
                if !inner.delta.contains_key(id) {
                    f(id, value)?;
                }
            }
        }
        for (id, value) in &inner.delta {
            if let Some(value) = value {
                f(id, value)?;
            }
        }
        Ok(())
    }

    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError> {
        check_batch(&self.dir, batch)?;
        let retention = self.retention;
        let mut inner = self.lock();
        if batch.is_empty() {
            return Ok(inner.sequence);
        }
        let sequence = inner.sequence + 1;
        let record = Batch {
            sequence,
            changes: batch.to_vec(),
        };
        let offset = inner.wal_end;
        let end = match &mut inner.writer {
            None => {
                return Err(StoreError::Refused {
                    path: self.dir.clone(),
                    reason: "this handle is a reader; open the index for writing".into(),
                });
            }
            Some(writer) => {
                let path = writer.wal.path().to_path_buf();
                writer.wal.append(&record).map_err(|e| io_error(&path, e))?
            }
        };
        inner.replay(&record, offset, retention);
        inner.wal_end = end;
        let policy = inner.merge;
        let due = (policy.min_changes as f64).max(policy.fraction * inner.set.rows() as f64);
        if inner.delta.len() as f64 >= due {
            // The batch is durable already: a failed merge is remembered, not returned.
            inner.merge_error = inner.merge().err().map(|e| e.to_string());
        }
        Ok(sequence)
    }

    fn sequence(&self) -> u64 {
        let mut inner = self.lock();
        // A reader that cannot read the writer's files reports the last sequence it saw; the next call
        // that returns a Result (changes_since, for_each) says what is wrong.
        let _ = inner.catch_up(self.retention);
        inner.sequence
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        let mut inner = self.lock();
        inner.catch_up(self.retention)?;
        if since > inner.sequence {
            return Err(StoreError::Ahead {
                path: self.dir.clone(),
                asked: since,
                sequence: inner.sequence,
            });
        }
        if since == inner.sequence {
            return Ok(ChangesSince::Changes(Vec::new()));
        }
        let oldest = inner.log.front().map_or(inner.sequence + 1, |l| l.sequence);
        if since + 1 < oldest {
            return Ok(ChangesSince::TooOld { oldest });
        }
        let start = inner.log[(since + 1 - oldest) as usize].offset;
        let path = inner.wal_path();
        let tail = wal::read(&path, start, Some(since + 1)).map_err(|e| foreign(&path, e))?;
        let batches = tail
            .batches
            .into_iter()
            .map(|(b, _)| b)
            .take_while(|b| b.sequence <= inner.sequence)
            .collect();
        Ok(ChangesSince::Changes(batches))
    }

    fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
    }

    fn segments(&self) -> Option<Arc<SegmentSet>> {
        Some(self.lock().set.clone())
    }

    fn segmented(&self) -> Result<Option<Segmented>, StoreError> {
        let mut inner = self.lock();
        inner.catch_up(self.retention)?;
        Ok(Some(Segmented {
            set: inner.set.clone(),
            recent: inner.recent()?,
        }))
    }
}

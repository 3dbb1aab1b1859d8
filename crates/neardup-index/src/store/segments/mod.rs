//! The on-disk segment backend: immutable mapped segments, write-ahead logs, and a manifest that names them.
//!
//! The Hamming-distance paper's layout (Manku, Jain and Das Sarma, §3.1.3): compact sorted tables, "new entries
//! in trees, checking both, and periodically merging the trees back into the sorted lists". Here:
//!
//! * a **segment** ([`Segment`]) is one immutable file: the ids and values of its rows, the ids it deletes
//!   from older segments, and the sections an index kind adds through [`Arrange`] (the permuted tables of a
//!   Hamming index, see `hamming::mapped`). It is mapped with `memmap2`, not read: opening an index of any
//!   size reads the manifest, each segment's header, footer and directory, and the recent log, and queries
//!   read the tables through the page cache. Segments are listed oldest first; a newer segment's row or
//!   deletion of an id shadows the older rows of that id. A segment stays mapped once while flushes and
//!   merges come and go around it (the next set of segments takes the same mapping), so the pages of a large
//!   segment are faulted in once, not after every flush;
//! * the **write-ahead log** (`wal`) holds every batch committed since the segments were written, fsync'd
//!   before the batch is acknowledged; those batches (the **delta**) are also kept in memory, where the index
//!   layer keeps its own small index of them;
//! * a **flush** (when the delta holds [`MergePolicy::flush_changes`] ids, 16,384 by default) writes the delta
//!   into a new segment, starts a new log, and swaps the **manifest** (`manifest`); a **background merge**
//!   (one thread, `neardup-merge`) then writes the newest segments that are not much larger into one (a
//!   tiered merge: see [`MergePolicy`]) and swaps the manifest again, while the writer goes on committing and
//!   flushing on top of them. [`SegmentStore::merge`] merges everything into one segment. A crash at any
//!   moment leaves the old manifest or the new one, and the files of the other are removed at the next open.
//!   So the delta, and the work of an open, stay small at any size, and inserts never wait for a big merge;
//!   closing the store (dropping its last handle) finishes the running merge;
//! * the **change log** (what [`Store::changes_since`] answers from) is the logs themselves: older logs stay,
//!   read-only, while it keeps some of their batches ([`DEFAULT_RETENTION`]: 100,000 changes; a reader
//!   further behind reloads, which costs a mapping and the delta);
//! * **many readers, one writer**: the writer holds `DIR/LOCK` (an advisory lock, released by the kernel when
//!   the process dies); readers ([`SegmentStore::open_reader`]) take no lock and follow the writer by reading
//!   the manifest and the log's tail whenever they are asked for the sequence or the changes.
//!
//! The store knows entries and bytes, not index kinds: the kind's layout comes in through [`Arrange`], chosen
//! by whoever opens the store (`crate::disk`). It passes the conformance suite like every backend, with the
//! default policy and with a flush at every commit.
//!
//! Checks: every log record, the manifest and each segment's frame (header, footer, directory, checksum
//! table) are checked when read; the data blocks of a segment are checked by [`SegmentStore::verify`] and
//! before a merge rewrites them (reading them all at open would defeat mapping).

mod crash;
mod file;
mod manifest;
mod segment;
mod wal;

use self::manifest::{Manifest, ReadError, segment_name, sync_dir, wal_name};
pub use self::segment::Segment;
use self::wal::Wal;
use super::{
    Batch, Change, ChangesSince, Retention, Settings, Store, StoreError, Visit, check_batch,
    check_settings,
};
use hashbrown::HashMap;
use rayon::prelude::*;
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The name of the lock file the writer holds.
pub const LOCK_FILE: &str = "LOCK";
/// The file that marks a directory as a segmented index.
pub const MANIFEST_FILE: &str = manifest::FILE;

/// Where [`Arrange::sections`] hands each section (name, bytes) as it is built.
pub type EmitSection<'e> = dyn FnMut(&str, &[u8]) -> Result<(), String> + 'e;

/// How an index kind lays out a segment: the order of its rows, and the sections it adds.
///
/// The two are asked for apart so that a segment is written with one section in memory at a time: the rows
/// (ids and values) are written in the order first, then each section as it is built. (A merge into one
/// segment of 10^8 rows held every table at once before: 20 GB at its peak.)
pub trait Arrange: Send + Sync {
    /// The row order for the values of `n` entries (`value(i)`): row r holds entry `order[r]`, a permutation
    /// of `0..n`. An error (a value the kind cannot hold) stops the write; nothing is changed.
    fn order<'a>(&self, n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Vec<u32>, String>;

    /// The kind's named sections, computed over the `n` rows in that order (`row(r)` is row r's value), each
    /// handed to `emit` as soon as it is built, always in the same order.
    fn sections<'a>(
        &self,
        n: usize,
        row: &dyn Fn(usize) -> &'a [u8],
        emit: &mut EmitSection<'_>,
    ) -> Result<(), String>;
}

/// When the writer writes the delta into a segment, and which segments the background merge merges.
///
/// When the delta holds `flush_changes` ids, it is written into a new segment. Then the newest segments that
/// are not much larger are merged into one, in the background: going from the newest to the oldest, a
/// segment joins while the rows gathered so far are at least `1 / ratio` of its rows, and always when there
/// would otherwise be more than `max_segments`. So segments grow by factors of about `ratio` and a query looks
/// at a handful of segments. The rows gathered grow as older segments join, so one flush can carry a merge
/// through several tiers: each entry is written more often than log_ratio(N / flush) times (a model of the
/// rule with instant merges: 9.8 times per entry at 10^7 with the default ratio of 4, 7.5 with 2, 5.7 with 1,
/// which keeps more segments: docs/performance.md weighs the two). `flush_changes = usize::MAX` flushes only
/// when asked ([`SegmentStore::merge`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MergePolicy {
    /// Ids in the delta that start a flush.
    pub flush_changes: usize,
    /// How much larger than the rows gathered an older segment may be and still join the merge.
    pub ratio: usize,
    /// The most segments the index keeps.
    pub max_segments: usize,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            flush_changes: 1 << 14,
            ratio: 4,
            max_segments: 8,
        }
    }
}

/// The segments of one generation of an index, and the last batch they hold.
#[derive(Debug)]
pub struct SegmentSet {
    /// Increases at every flush or merge.
    pub generation: u64,
    /// The last batch folded into the segments.
    pub sequence: u64,
    /// The ids the segments hold (rows not shadowed by newer segments).
    pub entries: u64,
    /// The segments, oldest first: a newer segment's rows and deletions shadow older rows of the same id.
    /// A segment that outlives a flush or merge is the same mapping in the next set.
    pub segments: Vec<Arc<Segment>>,
}

impl SegmentSet {
    /// Rows in the segments, shadowed ones included.
    pub fn rows(&self) -> usize {
        self.segments.iter().map(|s| s.rows()).sum()
    }

    /// The segment and row that hold an id now, if one does.
    pub fn lookup(&self, id: &str) -> Option<(usize, usize)> {
        lookup_in(&self.segments, id)
    }

    /// Whether a segment newer than segment `i` puts or deletes `id` (so that segment i's row is stale).
    pub fn shadowed(&self, i: usize, id: &str) -> bool {
        mentioned_in(&self.segments[i + 1..], id)
    }

    /// The bytes of the segment files.
    pub fn file_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.file_bytes()).sum()
    }
}

/// What [`Store::segmented`] returns: the segments, and what the batches committed after them did.
#[derive(Debug)]
pub struct Segmented {
    /// The segments.
    pub set: Arc<SegmentSet>,
    /// Every id those batches changed, with its value now (`None`: deleted).
    pub changed: Vec<(String, Option<Vec<u8>>)>,
    /// The last batch they include.
    pub sequence: u64,
}

/// A retained batch of the change log: which log file holds it, and where.
#[derive(Clone, Debug)]
struct Logged {
    sequence: u64,
    wal: Arc<str>,
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
    /// The ids stored now, once counted (`None` until asked): counting looks the delta's ids up in the
    /// segments, which neither an open nor an insert should pay for; a flush counts them, a retention that
    /// depends on the entry count keeps the count up to date.
    live: Option<u64>,
    sequence: u64,
    /// The retained batches (newest last) and how many changes they hold.
    log: VecDeque<Logged>,
    logged: u64,
    /// Where the active log's complete records end.
    wal_end: u64,
    merge: MergePolicy,
    merge_error: Option<String>,
    /// The next number for a new segment or log file.
    next_file: u64,
    /// The background merge, while one runs.
    merger: Option<std::thread::JoinHandle<()>>,
    /// A merge of every segment into one was asked for ([`SegmentStore::merge_in_background`]) and has not
    /// started yet.
    merge_all: bool,
    /// Whether the merger thread is at work (cleared by the thread, under the lock, as it decides to stop).
    merge_running: bool,
    /// Set when the store is closed: the running merge is finished and installed, and no other starts.
    closing: bool,
}

/// What the handles of one open store share: when the last is dropped, the running merge (if any) is
/// finished and installed, no other is started, and then the lock is released: no thread writes into the
/// directory once the store is closed, and the work done is kept (as Lucene's `IndexWriter` waits for its
/// merges when it closes).
struct Owner {
    shared: Arc<Mutex<Inner>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        let handle = {
            let mut inner = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            inner.closing = true;
            inner.merger.take()
        };
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// The number in a segment's or a log's file name.
fn file_number(name: &str) -> Option<u64> {
    name.get(4..20)?.parse().ok()
}

/// A temporary name no other writer uses, for a file being written.
fn temporary(final_name: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{final_name}.tmp-{}-{n}", std::process::id())
}

/// Entries (id, value) and deleted ids, borrowed from segments and the delta.
type Gathered<'a> = (Vec<(&'a str, &'a [u8])>, Vec<&'a str>);

/// The live rows and the deletions to keep when `set.segments[range]` (and the delta, if given: newer than
/// every segment) are written into one segment. A row is dropped when a newer segment of the range (or the
/// delta) puts or deletes its id; a deletion is kept only while a segment older than the range holds the id.
fn gather<'a>(
    set: &'a SegmentSet,
    range: std::ops::Range<usize>,
    delta: Option<&'a HashMap<String, Option<Vec<u8>>>>,
) -> Result<Gathered<'a>, StoreError> {
    let in_delta = |id: &str| delta.is_some_and(|d| d.contains_key(id));
    let older = &set.segments[..range.start];
    let mut entries: Vec<(&str, &[u8])> = Vec::new();
    let mut deleted: Vec<&str> = Vec::new();
    for i in range.clone() {
        let segment = &set.segments[i];
        let newer = &set.segments[i + 1..range.end];
        let mut damaged = None;
        let rows =
            (0..segment.rows()).map_while(|row| match (segment.id(row), segment.value(row)) {
                (Some(id), Some(value)) => Some((value, id)),
                _ => {
                    damaged = Some(row);
                    None
                }
            });
        warmed(rows, newer, |value, id, hash| {
            if !in_delta(id) && !mentioned_hashed(newer, id, hash) {
                entries.push((id, value));
            }
        });
        if let Some(row) = damaged {
            return Err(foreign(segment.path(), format!("row {row} is damaged")));
        }
        if !older.is_empty() {
            for id in segment.deleted_ids() {
                let id = id.ok_or_else(|| foreign(segment.path(), "a deleted id is damaged"))?;
                if !in_delta(id) && !mentioned_in(newer, id) && lookup_in(older, id).is_some() {
                    deleted.push(id);
                }
            }
        }
    }
    if let Some(delta) = delta {
        let mut recent: Vec<(&str, &[u8])> = Vec::new();
        for (id, value) in delta {
            match value {
                Some(v) => recent.push((id, v)),
                None if lookup_in(older, id).is_some() => deleted.push(id),
                None => {}
            }
        }
        recent.sort_unstable();
        entries.extend(recent);
    }
    deleted.sort_unstable();
    deleted.dedup();
    Ok((entries, deleted))
}

/// Writes the segments of `range` into one new segment named `name`, under a temporary name; returns it
/// (the caller renames it when it installs the merge).
fn write_merged(
    set: &SegmentSet,
    range: std::ops::Range<usize>,
    tmp: &Path,
    arrange: Option<&dyn Arrange>,
) -> Result<(), StoreError> {
    for segment in &set.segments[range.clone()] {
        segment.verify().map_err(|e| foreign(segment.path(), e))?;
    }
    let (entries, deleted) = gather(set, range, None)?;
    Segment::write(tmp, &entries, &deleted, set.sequence, arrange).map_err(|e| io_error(tmp, e))
}

/// Starts the background merger if the policy calls for a merge and none runs. The merger merges, installs,
/// and goes on with the next merge the policy calls for, until there is none (or the store is closed).
fn spawn_merge(shared: &Arc<Mutex<Inner>>, inner: &mut Inner) {
    // `merge_running` is cleared under the lock when the merger decides to stop, so a merge asked for
    // before that is taken by the running merger, and one asked for after it starts a new one.
    if inner.writer.is_none() || inner.closing || inner.merge_running {
        return;
    }
    if let Some(done) = inner.merger.take() {
        let _ = done.join();
    }
    let Some(mut job) = inner.merge_job() else {
        return;
    };
    let arrange = inner.arrange.clone();
    let weak = Arc::downgrade(shared);
    let spawned = std::thread::Builder::new()
        .name("neardup-merge".into())
        .spawn(move || {
            loop {
                let written =
                    write_merged(&job.set, job.range.clone(), &job.tmp, arrange.as_deref());
                // The store may be gone (its handles dropped): then the work is dropped too.
                let Some(shared) = weak.upgrade() else {
                    let _ = std::fs::remove_file(&job.tmp);
                    return;
                };
                let mut inner = shared.lock().unwrap_or_else(|e| e.into_inner());
                let installed = written.and_then(|()| inner.install(&job));
                if let Err(e) = installed {
                    let _ = std::fs::remove_file(&job.tmp);
                    inner.merge_error = Some(e.to_string());
                    inner.merge_running = false;
                    return;
                }
                // One merge may make the next one due.
                match inner.merge_job() {
                    Some(next) if !inner.closing => job = next,
                    _ => {
                        inner.merge_running = false;
                        return;
                    }
                }
            }
        });
    match spawned {
        Ok(handle) => {
            inner.merger = Some(handle);
            inner.merge_running = true;
        }
        Err(e) => inner.merge_error = Some(format!("cannot start a merge thread: {e}")),
    }
}

/// A merge to do: the segments of `set` in `range`, into a new segment `name`, written as `tmp`.
struct MergeJob {
    set: Arc<SegmentSet>,
    range: std::ops::Range<usize>,
    name: String,
    tmp: PathBuf,
}

/// A segmented index's store: see the module documentation. Clones are handles to the same open store.
#[derive(Clone)]
pub struct SegmentStore {
    dir: PathBuf,
    settings: Arc<Settings>,
    shared: Arc<Mutex<Inner>>,
    _owner: Arc<Owner>,
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

/// A log that cannot be read: damage is named as such, other failures as I/O errors.
fn wal_error(path: &Path, e: std::io::Error) -> StoreError {
    if e.kind() == std::io::ErrorKind::InvalidData {
        foreign(path, e)
    } else {
        io_error(path, e)
    }
}

/// The change log a segmented store keeps by default: 100,000 changes whatever the index's size. A reader
/// further behind reloads, which over segments costs a mapping and the delta, not every entry.
pub const DEFAULT_RETENTION: Retention = Retention {
    min_changes: 100_000,
    per_entry: 0.0,
};

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

/// Maps the segments a manifest names (cheap: a mapping and a frame check each), taking the mapping of each
/// one that `previous` already maps.
fn open_set(
    dir: &Path,
    manifest: &Manifest,
    previous: Option<&SegmentSet>,
) -> Result<Arc<SegmentSet>, StoreError> {
    let mut segments = Vec::with_capacity(manifest.segments.len());
    for name in &manifest.segments {
        let path = dir.join(name);
        // A segment the previous set maps keeps its mapping: mapping it anew would drop the page tables of
        // every page read so far, and every flush (each 16,384 inserts) would then fault each page of the
        // largest segment in again, a writer's lookups and the queries alike.
        let kept = previous
            .and_then(|set| set.segments.iter().find(|s| s.is_file_at(&path)))
            .map(Arc::clone);
        segments.push(match kept {
            Some(segment) => segment,
            None => Arc::new(Segment::open(&path).map_err(|e| foreign(&path, e))?),
        });
    }
    Ok(Arc::new(SegmentSet {
        generation: manifest.generation,
        sequence: manifest.sequence,
        entries: manifest.entries,
        segments,
    }))
}

/// Reads `DIR/MANIFEST`, naming what is wrong with it.
fn read_manifest(dir: &Path) -> Result<Manifest, StoreError> {
    Manifest::read(dir).map_err(|e| match e {
        ReadError::Missing => StoreError::Missing(dir.to_path_buf()),
        ReadError::Bad(reason) => foreign(&dir.join(manifest::FILE), reason),
    })
}

/// Loads the state a manifest names: maps its segments (keeping the mappings of `previous` that it still
/// names) and reads its logs.
fn load(
    dir: &Path,
    manifest: Manifest,
    previous: Option<&SegmentSet>,
    arrange: Option<Arc<dyn Arrange>>,
    retention: Retention,
) -> Result<Inner, StoreError> {
    let set = open_set(dir, &manifest, previous)?;
    let mut inner = Inner {
        dir: dir.to_path_buf(),
        writer: None,
        arrange,
        live: None,
        sequence: manifest.sequence,
        manifest,
        set,
        delta: HashMap::new(),
        log: VecDeque::new(),
        logged: 0,
        wal_end: wal::HEADER,
        merge: MergePolicy::default(),
        merge_error: None,
        next_file: 0,
        merger: None,
        merge_all: false,
        merge_running: false,
        closing: false,
    };
    inner.next_file = inner
        .manifest
        .segments
        .iter()
        .chain(&inner.manifest.wals)
        .filter_map(|n| file_number(n))
        .chain([inner.manifest.generation])
        .max()
        .unwrap_or(0)
        + 1;
    // The older logs hold batches already in the segments, kept for the change log only: their numbers and
    // places are read, and a damaged one shortens the change log (readers reload) rather than the index.
    let older: Vec<String> = inner.manifest.wals[..inner.manifest.wals.len() - 1].to_vec();
    let mut next: Option<u64> = None;
    for name in &older {
        let path = dir.join(name);
        match check_older_log(&path, next) {
            Ok(records) => {
                let name: Arc<str> = Arc::from(name.as_str());
                for (sequence, changes, offset) in records {
                    next = Some(sequence + 1);
                    inner.log_batch(sequence, changes, &name, offset, retention);
                }
            }
            Err(_) => {
                inner.log.clear();
                inner.logged = 0;
                next = None;
            }
        }
    }
    if next.is_some_and(|n| n != inner.set.sequence + 1) {
        inner.log.clear();
        inner.logged = 0;
    }
    let path = inner.wal_path();
    let base = wal::base(&path).map_err(|e| wal_error(&path, e))?;
    if base != inner.set.sequence {
        return Err(foreign(
            &path,
            format!(
                "the log follows batch {base}, but the segments end at batch {} (damaged)",
                inner.set.sequence
            ),
        ));
    }
    inner.read_log(retention)?;
    Ok(inner)
}

impl Inner {
    fn wal_path(&self) -> PathBuf {
        self.dir.join(self.active_wal())
    }

    fn active_wal(&self) -> &str {
        self.manifest.wals.last().expect("a manifest names a log")
    }

    /// Reads the active log's records after `wal_end` into the delta.
    fn read_log(&mut self, retention: Retention) -> Result<(), StoreError> {
        let path = self.wal_path();
        let tail = wal::read(&path, self.wal_end, Some(self.sequence + 1), true)
            .map_err(|e| wal_error(&path, e))?;
        let name: Arc<str> = Arc::from(self.active_wal());
        for record in tail.records {
            if let Some(batch) = &record.batch {
                self.replay(
                    batch.sequence,
                    &batch.changes,
                    &name,
                    record.offset,
                    retention,
                );
            }
        }
        self.wal_end = tail.end;
        Ok(())
    }

    /// The ids stored now (counted the first time it is asked; see `live`).
    fn live(&mut self) -> u64 {
        if let Some(live) = self.live {
            return live;
        }
        let segments = &self.set.segments;
        let delta: Vec<(bool, &str)> = self
            .delta
            .iter()
            .map(|(id, value)| (value.is_some(), id.as_str()))
            .collect();
        // Each id is a random read of every large segment's hash table: a flush of 20,000 ids into an index
        // of 10^8 spent most of its time here on one core. The counts of pieces add up on all cores.
        let (added, gone) = crate::parallel::install(|| {
            delta
                .par_chunks(LIVE_PIECE)
                .map(|piece| {
                    let (mut added, mut gone) = (0u64, 0u64);
                    warmed(piece.iter().copied(), segments, |put, id, hash| {
                        added += u64::from(put);
                        gone += u64::from(lookup_hashed(segments, id, hash).is_some());
                    });
                    (added, gone)
                })
                .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        let live = (self.manifest.entries + added).saturating_sub(gone);
        self.live = Some(live);
        live
    }

    /// Whether an id is stored now.
    fn present(&self, id: &str) -> bool {
        match self.delta.get(id) {
            Some(value) => value.is_some(),
            None => self.set.lookup(id).is_some(),
        }
    }

    /// Folds a committed batch (whose record is at `offset` in log `wal`) into the delta and the change log.
    fn replay(
        &mut self,
        sequence: u64,
        changes: &[Change],
        wal: &Arc<str>,
        offset: u64,
        retention: Retention,
    ) {
        for change in changes {
            let before = self.live.is_some() && self.present(change.id());
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
            if let Some(live) = &mut self.live {
                *live = *live + u64::from(after) - u64::from(before);
            }
        }
        self.sequence = sequence;
        self.log_batch(sequence, changes.len() as u64, wal, offset, retention);
    }

    /// Keeps a batch in the change log, dropping the oldest beyond the retention limit.
    fn log_batch(
        &mut self,
        sequence: u64,
        changes: u64,
        wal: &Arc<str>,
        offset: u64,
        retention: Retention,
    ) {
        self.log.push_back(Logged {
            sequence,
            wal: Arc::clone(wal),
            offset,
            changes,
        });
        self.logged += changes;
        let entries = if retention.per_entry > 0.0 {
            self.live()
        } else {
            0
        };
        let limit = retention.limit(entries);
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
            let manifest = read_manifest(&self.dir)?;
            if manifest.generation == self.manifest.generation {
                return self.read_log(retention);
            }
            // A flush happened: load the new generation (whose files a second flush may remove meanwhile).
            match load(
                &self.dir,
                manifest,
                Some(&self.set),
                self.arrange.clone(),
                retention,
            ) {
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

    /// The batches from `from` to the last committed one, read from the logs (`None` if a log the change
    /// log points into is gone: a flush removed it meanwhile).
    fn batches_from(&self, from: u64) -> Result<Option<Vec<Batch>>, StoreError> {
        let Some(first) = self.log.iter().find(|l| l.sequence == from) else {
            return Ok(Some(Vec::new()));
        };
        let start = self
            .manifest
            .wals
            .iter()
            .position(|w| **w == *first.wal)
            .unwrap_or(usize::MAX);
        let mut batches = Vec::new();
        for (i, name) in self.manifest.wals.iter().enumerate().skip(start) {
            let path = self.dir.join(name);
            let offset = if i == start {
                first.offset
            } else {
                wal::HEADER
            };
            let tail = match wal::read(&path, offset, None, true) {
                Ok(tail) => tail,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(wal_error(&path, e)),
            };
            batches.extend(tail.records.into_iter().filter_map(|r| r.batch));
        }
        batches.retain(|b| b.sequence >= from && b.sequence <= self.sequence);
        Ok(Some(batches))
    }

    /// The newest segments a background merge should write into one (see [`MergePolicy`]), if any.
    fn merge_plan(&mut self) -> Option<std::ops::Range<usize>> {
        let segments = &self.set.segments;
        let n = segments.len();
        if std::mem::take(&mut self.merge_all) && n >= 2 {
            return Some(0..n);
        }
        let mut gathered = segments.last()?.rows() + segments.last()?.deletions();
        let mut k = 1;
        for older in segments[..n - 1].iter().rev() {
            let too_many = n - k > self.merge.max_segments.max(1);
            if too_many || gathered.saturating_mul(self.merge.ratio.max(1)) >= older.rows() {
                gathered += older.rows();
                k += 1;
            } else {
                break;
            }
        }
        (k >= 2).then(|| n - k..n)
    }

    /// The next merge the policy calls for, with its file's name.
    fn merge_job(&mut self) -> Option<MergeJob> {
        let range = self.merge_plan()?;
        let name = segment_name(self.next_file);
        self.next_file += 1;
        let tmp = self.dir.join(temporary(&name));
        Some(MergeJob {
            set: Arc::clone(&self.set),
            range,
            name,
            tmp,
        })
    }

    /// Installs a merge of `set.segments[range]` written to `tmp`: if those segments are still the live ones
    /// in those places (flushes only add newer ones), the new segment replaces them in a new manifest and
    /// their files are removed.
    fn install(&mut self, job: &MergeJob) -> Result<(), StoreError> {
        let MergeJob {
            set,
            range,
            name,
            tmp,
        } = job;
        let range = range.clone();
        let merged: Vec<String> = set.segments[range.clone()]
            .iter()
            .filter_map(|s| Some(s.path().file_name()?.to_string_lossy().into_owned()))
            .collect();
        if self.manifest.segments.get(range.clone()) != Some(&merged[..]) {
            return Err(StoreError::Stopped(
                "the segments changed during the merge; it was dropped".into(),
            ));
        }
        let path = self.dir.join(name);
        if path.exists() {
            return Err(io_error(&path, "exists already"));
        }
        std::fs::rename(tmp, &path).map_err(|e| io_error(&path, e))?;
        crash::point("merge-segment-renamed");
        let mut names: Vec<String> = self.manifest.segments[..range.start].to_vec();
        names.push(name.to_owned());
        names.extend_from_slice(&self.manifest.segments[range.end..]);
        let manifest = Manifest {
            generation: self.manifest.generation + 1,
            segments: names,
            ..self.manifest.clone()
        };
        if let Err(e) = sync_dir(&self.dir).and_then(|()| manifest.write(&self.dir)) {
            let _ = std::fs::remove_file(&path);
            return Err(io_error(&self.dir.join(manifest::FILE), e));
        }
        self.manifest = manifest;
        crash::point("merge-manifest-swapped");
        for old in &merged {
            let _ = std::fs::remove_file(self.dir.join(old));
            crash::point("merge-old-file-removed");
        }
        let _ = sync_dir(&self.dir);
        self.reopen_segments()
    }

    /// Maps the manifest's segments into a new set.
    fn reopen_segments(&mut self) -> Result<(), StoreError> {
        self.set = open_set(&self.dir, &self.manifest, Some(&self.set))?;
        Ok(())
    }

    /// Writes the delta into a new segment (with every segment, for `full`: one segment holds everything,
    /// without deletions), starts a new log and swaps the manifest; then removes what the new manifest no
    /// longer names (merged segments, logs the change log no longer needs). A flush is small; merging the
    /// segments it leaves is the background merge's work ([`spawn_merge`]).
    fn flush(&mut self, full: bool) -> Result<(), StoreError> {
        if self.writer.is_none() {
            return Err(StoreError::Refused {
                path: self.dir.clone(),
                reason: "this handle is a reader: only the writer merges".into(),
            });
        }
        let count = self.set.segments.len();
        let kept = if full { 0 } else { count };
        if full {
            for segment in &self.set.segments {
                segment.verify().map_err(|e| foreign(segment.path(), e))?;
            }
        }
        let (seg_name, new_wal_name) = (segment_name(self.next_file), wal_name(self.next_file + 1));
        self.next_file += 2;
        let (seg_path, new_wal_path) = (self.dir.join(&seg_name), self.dir.join(&new_wal_name));
        let tmp = self.dir.join(temporary(&seg_name));
        let cleanup = || {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&new_wal_path);
        };
        let written = (|| -> Result<(bool, Wal), StoreError> {
            let (entries, deleted) = gather(&self.set, kept..count, Some(&self.delta))?;
            let wrote = !(entries.is_empty() && deleted.is_empty());
            if wrote {
                Segment::write(
                    &tmp,
                    &entries,
                    &deleted,
                    self.sequence,
                    self.arrange.as_deref(),
                )
                .map_err(|e| io_error(&tmp, e))?;
            }
            let wal = Wal::create(&new_wal_path, self.sequence)
                .map_err(|e| io_error(&new_wal_path, e))?;
            Ok((wrote, wal))
        })();
        let (wrote, new_wal) = match written {
            Ok(w) => w,
            Err(e) => {
                cleanup();
                return Err(e);
            }
        };
        if wrote && let Err(e) = std::fs::rename(&tmp, &seg_path) {
            cleanup();
            return Err(io_error(&seg_path, e));
        }
        crash::point("flush-segment-renamed");
        let mut segment_names: Vec<String> = self.manifest.segments[..kept].to_vec();
        if wrote {
            segment_names.push(seg_name);
        }
        // The logs the change log still points into, then the new one.
        let mut wals: Vec<String> = self
            .manifest
            .wals
            .iter()
            .filter(|w| self.log.iter().any(|l| *l.wal == ***w))
            .cloned()
            .collect();
        wals.push(new_wal_name);
        let manifest = Manifest {
            generation: self.manifest.generation + 1,
            sequence: self.sequence,
            entries: self.live(),
            segments: segment_names,
            wals,
            settings: self.manifest.settings.clone(),
        };
        if let Err(e) = sync_dir(&self.dir).and_then(|()| manifest.write(&self.dir)) {
            cleanup();
            let _ = std::fs::remove_file(&seg_path);
            return Err(io_error(&self.dir.join(manifest::FILE), e));
        }
        let old = std::mem::replace(&mut self.manifest, manifest);
        crash::point("flush-manifest-swapped");
        for name in old.segments.iter().chain(&old.wals) {
            if !self.manifest.names(name) {
                let _ = std::fs::remove_file(self.dir.join(name));
                crash::point("flush-old-file-removed");
            }
        }
        let _ = sync_dir(&self.dir);
        self.delta.clear();
        // The manifest holds the count now; later inserts need not keep it.
        self.live = None;
        self.wal_end = new_wal.len();
        if let Some(writer) = &mut self.writer {
            writer.wal = new_wal;
        }
        self.reopen_segments()
    }

    /// Removes files no manifest names (left by a crash during a flush).
    fn remove_strays(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours =
                name.starts_with("seg-") || name.starts_with("wal-") || name == "MANIFEST.tmp";
            if ours && !self.manifest.names(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The records (sequence, changes, offset) of an older log, which must be whole: its header right, its records
/// following `next` (when known) without a torn one at the end.
fn check_older_log(path: &Path, next: Option<u64>) -> Result<Vec<(u64, u64, u64)>, StoreError> {
    let base = wal::base(path).map_err(|e| wal_error(path, e))?;
    if next.is_some_and(|n| n != base + 1) {
        return Err(foreign(
            path,
            format!(
                "the log follows batch {base}, but the log before it ends at batch {}",
                next.unwrap_or(1) - 1
            ),
        ));
    }
    let tail =
        wal::read(path, wal::HEADER, Some(base + 1), false).map_err(|e| wal_error(path, e))?;
    if tail.torn > 0 {
        return Err(foreign(
            path,
            format!(
                "the last {} bytes are not a whole record (damaged or truncated)",
                tail.torn
            ),
        ));
    }
    Ok(tail
        .records
        .iter()
        .map(|r| (r.sequence, r.changes, r.offset))
        .collect())
}

/// The segment and row of `segments` (oldest first) that hold an id now: the newest segment that mentions
/// the id says whether it is there.
fn lookup_in(segments: &[Arc<Segment>], id: &str) -> Option<(usize, usize)> {
    lookup_hashed(segments, id, segment::id_hash(id))
}

/// [`lookup_in`] for an id whose hash is known.
fn lookup_hashed(segments: &[Arc<Segment>], id: &str, hash: u64) -> Option<(usize, usize)> {
    for (i, segment) in segments.iter().enumerate().rev() {
        if let Some(row) = segment.find_hashed(id, hash) {
            return Some((i, row));
        }
        if segment.deletes_hashed(id, hash) {
            return None;
        }
    }
    None
}

/// Whether any of `segments` puts or deletes an id.
fn mentioned_in(segments: &[Arc<Segment>], id: &str) -> bool {
    mentioned_hashed(segments, id, segment::id_hash(id))
}

/// [`mentioned_in`] for an id whose hash is known.
fn mentioned_hashed(segments: &[Arc<Segment>], id: &str, hash: u64) -> bool {
    segments
        .iter()
        .any(|s| s.find_hashed(id, hash).is_some() || s.deletes_hashed(id, hash))
}

/// Lookups done in a group at once.
const GROUP: usize = 16;

/// Ids of the delta counted on one core at a time when a flush counts the live ids.
const LIVE_PIECE: usize = 2048;

/// Calls `each(item, id, its hash)` for every item, in order, having read the memory that looking the ids
/// up in `segments` starts with, [`GROUP`] ids at a time. A lookup that misses (most of them, when a bulk
/// load adds new ids) is one random read of each segment's tags; done one after the other they were most of
/// a flush's entry count and of a merge's gathering at 10^7 entries, and a group's reads overlap.
fn warmed<'a, T>(
    items: impl Iterator<Item = (T, &'a str)>,
    segments: &[Arc<Segment>],
    mut each: impl FnMut(T, &'a str, u64),
) {
    let mut items = items.peekable();
    let mut group: Vec<(T, &'a str, u64)> = Vec::with_capacity(GROUP);
    while items.peek().is_some() {
        group.extend(
            items
                .by_ref()
                .take(GROUP)
                .map(|(item, id)| (item, id, segment::id_hash(id))),
        );
        for segment in segments {
            for (_, _, hash) in &group {
                segment.warm(*hash);
            }
        }
        for (item, id, hash) in group.drain(..) {
            each(item, id, hash);
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
            Wal::create(&wal_path, 0).map_err(|e| io_error(&wal_path, e))?;
            let manifest = Manifest {
                generation: 1,
                sequence: 0,
                entries: 0,
                segments: Vec::new(),
                wals: vec![wal_name(1)],
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
        // An index first (the lock file is not made in a directory that holds none), then the manifest as
        // it is under the lock: a writer that held it may have merged in between.
        read_manifest(dir)?;
        let lock = lock(dir)?;
        let manifest = read_manifest(dir)?;
        let retention = DEFAULT_RETENTION;
        let mut inner = load(dir, manifest, None, arrange, retention)?;
        let wal_path = inner.wal_path();
        let wal = Wal::open(&wal_path, inner.wal_end).map_err(|e| io_error(&wal_path, e))?;
        inner.writer = Some(Writer { _lock: lock, wal });
        inner.remove_strays();
        Ok(Self::handle(dir, inner, retention))
    }

    /// Opens the index in `dir` for reading, beside a writer (no lock is taken): the handle follows the
    /// writer's commits and merges whenever it is asked for the sequence or the changes.
    pub fn open_reader(dir: &Path, arrange: Option<Arc<dyn Arrange>>) -> Result<Self, StoreError> {
        let retention = DEFAULT_RETENTION;
        let mut attempts = 0;
        loop {
            let manifest = read_manifest(dir)?;
            match load(dir, manifest, None, arrange.clone(), retention) {
                Ok(inner) => return Ok(Self::handle(dir, inner, retention)),
                // The writer merged between the manifest and its files: read the new manifest.
                Err(_) if attempts < 5 => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The settings of the index in `dir`, read from its manifest alone.
    pub fn read_settings(dir: &Path) -> Result<Settings, StoreError> {
        read_manifest(dir).map(|m| m.settings)
    }

    fn handle(dir: &Path, inner: Inner, retention: Retention) -> Self {
        let settings = Arc::new(inner.manifest.settings.clone());
        let shared = Arc::new(Mutex::new(inner));
        SegmentStore {
            dir: dir.to_path_buf(),
            settings,
            _owner: Arc::new(Owner {
                shared: Arc::clone(&shared),
            }),
            shared,
            retention,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state is changed only after the durable step succeeded, so a poisoned lock holds a whole state.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets when the writer merges by itself.
    pub fn set_merge_policy(&self, policy: MergePolicy) {
        self.lock().merge = policy;
    }

    /// Writes every live entry into one new segment now, dropping shadowed rows and deletions (after the
    /// background merge, if one runs).
    pub fn merge(&self) -> Result<(), StoreError> {
        self.wait_for_merges();
        self.lock().flush(true)
    }

    /// Writes the recent changes into a segment, then starts writing every segment into one on the merge
    /// thread, and returns: the writer goes on committing and flushing meanwhile (its new segments stay
    /// beside the merged one), readers keep reading the old segments until the new manifest is in place.
    /// After a bulk load this makes each query probe one segment's tables instead of several. A merge
    /// already running finishes first; this one follows. Returns whether there is anything to merge (two
    /// segments or more). Only the writer merges.
    pub fn merge_in_background(&self) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        if inner.writer.is_none() {
            return Err(StoreError::Refused {
                path: self.dir.clone(),
                reason: "this handle is a reader: only the writer merges".into(),
            });
        }
        // The recent changes first (a small segment, written now): the merge then holds every entry, and
        // queries after it probe one segment and an empty memory.
        if !inner.delta.is_empty() {
            inner.flush(false)?;
        }
        if inner.set.segments.len() < 2 {
            return Ok(false);
        }
        inner.merge_all = true;
        spawn_merge(&self.shared, &mut inner);
        Ok(true)
    }

    /// Whether a background merge is running or asked for.
    pub fn merging(&self) -> bool {
        let inner = self.lock();
        inner.merge_all || inner.merge_running
    }

    /// Waits until no background merge runs (one merge may start the next: this waits for them all).
    pub fn wait_for_merges(&self) {
        loop {
            let Some(handle) = self.lock().merger.take() else {
                return;
            };
            let _ = handle.join();
        }
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
        let (older, active) = inner.manifest.wals.split_at(inner.manifest.wals.len() - 1);
        let mut next = None;
        for name in older {
            let records = check_older_log(&inner.dir.join(name), next)?;
            next = records.last().map(|r| r.0 + 1).or(next);
        }
        let path = inner.dir.join(&active[0]);
        let tail = wal::read(&path, wal::HEADER, Some(inner.set.sequence + 1), true)
            .map_err(|e| wal_error(&path, e))?;
        if tail.torn > 0 {
            return Err(foreign(
                &path,
                format!(
                    "the last {} bytes are not a whole record (a write cut short by a crash, never acknowledged; the writer removes them when it opens the index)",
                    tail.torn
                ),
            ));
        }
        Ok(())
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
        let set = &inner.set;
        for (i, segment) in set.segments.iter().enumerate() {
            for row in 0..segment.rows() {
                let (Some(id), Some(value)) = (segment.id(row), segment.value(row)) else {
                    return Err(foreign(segment.path(), format!("row {row} is damaged")));
                };
                if !inner.delta.contains_key(id) && !set.shadowed(i, id) {
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
        let offset = inner.wal_end;
        let name: Arc<str> = Arc::from(inner.active_wal());
        let end = match &mut inner.writer {
            None => {
                return Err(StoreError::Refused {
                    path: self.dir.clone(),
                    reason: "this handle is a reader; open the index for writing".into(),
                });
            }
            Some(writer) => {
                let path = writer.wal.path().to_path_buf();
                writer
                    .wal
                    .append(sequence, batch)
                    .map_err(|e| io_error(&path, e))?
            }
        };
        inner.replay(sequence, batch, &name, offset, retention);
        inner.wal_end = end;
        if inner.delta.len() >= inner.merge.flush_changes {
            // The batch is durable already: a failed flush is remembered, not returned.
            match inner.flush(false) {
                Ok(()) => spawn_merge(&self.shared, &mut inner),
                Err(e) => inner.merge_error = Some(e.to_string()),
            }
            // Backpressure: when flushes outrun the merges (a sustained load on few cores), the writer waits
            // for the merger to catch up rather than let segments, and the cost of every query, pile up.
            if inner.set.segments.len() > 2 * inner.merge.max_segments.max(1)
                && let Some(merger) = inner.merger.take()
            {
                drop(inner);
                let _ = merger.join();
            }
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
        match inner.batches_from(since + 1)? {
            Some(batches) => Ok(ChangesSince::Changes(batches)),
            // A log was removed by a flush meanwhile: the reader reloads.
            None => Ok(ChangesSince::TooOld {
                oldest: inner.sequence + 1,
            }),
        }
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
            // The delta is those batches folded already: no need to read the log again.
            changed: inner
                .delta
                .iter()
                .map(|(id, value)| (id.clone(), value.clone()))
                .collect(),
            sequence: inner.sequence,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("neardup-seg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn puts(from: usize, count: usize) -> Vec<Change> {
        (from..from + count)
            .map(|i| Change::Put {
                id: format!("id-{i}"),
                value: vec![i as u8; 8],
            })
            .collect()
    }

    /// A segment that outlives a flush is the same mapping afterwards, in the writer and in a reader that
    /// catches up (a new mapping would fault in every page read so far again).
    #[test]
    fn segments_keep_their_mapping_across_flushes() {
        let dir = temp("keep-mapping");
        let mut writer = SegmentStore::create(&dir, &Settings::new(), None).unwrap();
        // A flush at every commit and no merge of a small segment into a larger one.
        writer.set_merge_policy(MergePolicy {
            flush_changes: 1,
            ratio: 1,
            max_segments: 100,
        });
        writer.apply(&puts(0, 50)).unwrap();
        writer.wait_for_merges();
        let reader = SegmentStore::open_reader(&dir, None).unwrap();
        let (first, seen) = (writer.segments().unwrap(), reader.segments().unwrap());
        assert_eq!(first.segments.len(), 1);
        assert_eq!(seen.segments.len(), 1);
        writer.apply(&puts(50, 2)).unwrap();
        writer.wait_for_merges();
        let second = writer.segments().unwrap();
        assert_eq!(second.segments.len(), 2);
        assert!(Arc::ptr_eq(&first.segments[0], &second.segments[0]));
        assert_eq!(reader.sequence(), 2);
        let caught_up = reader.segments().unwrap();
        assert_eq!(caught_up.segments.len(), 2);
        assert!(Arc::ptr_eq(&seen.segments[0], &caught_up.segments[0]));
        assert_eq!(caught_up.entries, 52);
        drop((writer, reader));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file that took a mapped segment's name (another index's, in a replaced directory) is not taken for it.
    #[test]
    fn a_replaced_file_is_not_the_mapped_segment() {
        let dir = temp("replaced");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("seg-0000000000000001.nds");
        let write = |path: &Path, id: &str| {
            let value = [1u8; 8];
            Segment::write(path, &[(id, &value[..])], &[], 1, None).unwrap();
        };
        write(&path, "a");
        let segment = Segment::open(&path).unwrap();
        assert!(segment.is_file_at(&path));
        assert!(!segment.is_file_at(&dir.join("seg-0000000000000002.nds")));
        let other = dir.join("other.nds");
        write(&other, "b");
        std::fs::rename(&other, &path).unwrap();
        assert!(!segment.is_file_at(&path));
        assert!(Segment::open(&path).unwrap().find("b").is_some());
        drop(segment);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

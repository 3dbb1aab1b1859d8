//! The embedded backend: one file, `DIR/index.redb`, in redb (a pure-Rust, copy-on-write B-tree with ACID
//! transactions).
//!
//! # Layout (format `neardup-index-2`)
//!
//! | table | key → value | holds |
//! |---|---|---|
//! | `meta` | `&str → &str` | `format`, then the settings (see [`super::meta`]) |
//! | `values` | `&str → &[u8]` | the entries |
//! | `state` | `&str → u64` | `sequence` (the last batch's number) and `logged` (changes in the log) |
//! | `log` | `u64 → &[u8]` | the retained batches, encoded (see [`encode`]) |
//! | `log_sizes` | `u64 → u64` | each retained batch's number of changes |
//!
//! Each batch is one transaction committed with immediate durability: when [`Store::apply`] returns, the batch
//! survives `kill -9` or a power cut at any later instant; a crash during the commit leaves the previous
//! state. The entries, the sequence number and the log move together.
//!
//! **Older files.** Indexes written before the byte-level store (format `neardup-index-1`: table
//! `entries: &str → u64` for a Hamming index, `signatures: &str → &[u8]` for an LSH index, no `kind` in a
//! Hamming index made before LSH existed) are migrated when opened, in one transaction: fingerprints become
//! their 8 little-endian bytes, signatures keep theirs, the format becomes `neardup-index-2`. A crash during
//! the migration leaves the old file as it was.
//!
//! **Damaged files.** A file that does not start with redb's magic bytes is refused before redb sees it.
//! Otherwise the file is opened with redb's integrity check (every page's checksum is verified, one read of
//! the file), so a file altered since redb wrote it is refused on open instead of being trusted. Every redb
//! call runs on a thread named [`QUIET_THREAD_NAME`] and a panic there becomes a [`StoreError::Foreign`]
//! naming the file; a program that installs a panic hook can stay silent for that thread name (the
//! `neardup` command does), so a damaged file gives one clean error.
//!
//! Reading streams: a second thread walks redb's B-tree and hands entries over in chunks of 65,536 (ids in
//! one buffer, values in another: no allocation per entry), so the walk overlaps the caller's work.

use super::{
    Batch, Change, ChangesSince, Retention, Settings, Store, StoreError, Visit, check_batch,
    check_settings,
};
use redb::{
    Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableError,
};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
const VALUES: TableDefinition<&str, &[u8]> = TableDefinition::new("values");
const STATE: TableDefinition<&str, u64> = TableDefinition::new("state");
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const LOG_SIZES: TableDefinition<u64, u64> = TableDefinition::new("log_sizes");
/// Format 1: fingerprints of a Hamming index.
const LEGACY_ENTRIES: TableDefinition<&str, u64> = TableDefinition::new("entries");
/// Format 1: signatures of an LSH index, as little-endian `u32` values.
const LEGACY_SIGNATURES: TableDefinition<&str, &[u8]> = TableDefinition::new("signatures");

/// The meta key of the format.
pub(crate) const FORMAT_KEY: &str = "format";
/// The value of the `format` meta key: a file without it is not a neardup index.
pub const FORMAT: &str = "neardup-index-2";
/// The format before the byte-level store; files in it are migrated on open.
pub const LEGACY_FORMAT: &str = "neardup-index-1";
/// The file of an index inside its directory.
pub const FILE_NAME: &str = "index.redb";
/// The name of the threads that run redb calls: a panic on one (a damaged file) is reported as an error, and
/// a panic hook may stay silent for it.
pub const QUIET_THREAD_NAME: &str = "neardup-index-redb";
/// The first bytes of every redb file.
const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// The embedded store: a redb file in the index directory. Clones are handles to the same open file.
pub struct RedbStore {
    path: PathBuf,
    /// `None` only while dropping.
    inner: Option<Arc<Inner>>,
    retention: Retention,
}

struct Inner {
    db: Database,
    settings: Settings,
    /// The last committed batch, as this process knows it (every commit goes through a handle of this `Inner`,
    /// redb's lock keeps other processes out).
    sequence: AtomicU64,
}

impl Clone for RedbStore {
    fn clone(&self) -> Self {
        RedbStore {
            path: self.path.clone(),
            inner: self.inner.clone(),
            retention: self.retention,
        }
    }
}

impl Drop for RedbStore {
    fn drop(&mut self) {
        // The last handle closes the database, on a quiet thread: closing a damaged file may panic.
        if let Some(inner) = self.inner.take()
            && Arc::strong_count(&inner) == 1
        {
            let _ = quiet(&self.path, move || {
                drop(inner);
                Ok(())
            });
        }
    }
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Runs `f` on a thread named [`QUIET_THREAD_NAME`]; a panic there is a [`StoreError::Foreign`].
fn quiet<T: Send>(
    path: &Path,
    f: impl FnOnce() -> Result<T, StoreError> + Send,
) -> Result<T, StoreError> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name(QUIET_THREAD_NAME.into())
            .spawn_scoped(scope, f)
            .map_err(|e| io(path, e))?;
        thread
            .join()
            .unwrap_or_else(|panic| Err(damaged(path, panic)))
    })
}

fn damaged(path: &Path, panic: Box<dyn Any + Send>) -> StoreError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "an unknown failure".into());
    StoreError::Foreign {
        path: path.to_path_buf(),
        reason: format!("the database failed while reading it ({message})"),
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// A redb error: corruption means a damaged file, anything else is I/O.
fn storage(path: &Path, e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        redb::Error::Corrupted(reason) => StoreError::Foreign {
            path: path.to_path_buf(),
            reason,
        },
        redb::Error::DatabaseAlreadyOpen => StoreError::Locked(path.to_path_buf()),
        other => io(path, other),
    }
}

impl RedbStore {
    /// Creates a store in `dir` (created if missing) with these settings; refuses if one is there.
    pub fn create(dir: &Path, settings: &Settings) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        if path.exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        check_settings(&path, settings)?;
        let new_dir = !dir.exists();
        std::fs::create_dir_all(dir).map_err(|e| io(&path, e))?;
        // Made under a temporary name and renamed when complete: a create that fails (a full disk) or is
        // killed leaves no file that later commands would take for a broken index.
        let partial = dir.join(format!("{FILE_NAME}.creating"));
        let _ = std::fs::remove_file(&partial);
        let made = quiet(&partial, || {
            let p = &partial;
            let db = Database::create(p).map_err(|e| storage(p, e))?;
            let txn = db.begin_write().map_err(|e| storage(p, e))?;
            {
                let mut meta = txn.open_table(META).map_err(|e| storage(p, e))?;
                meta.insert(FORMAT_KEY, FORMAT).map_err(|e| storage(p, e))?;
                for (key, value) in settings {
                    meta.insert(key.as_str(), value.as_str())
                        .map_err(|e| storage(p, e))?;
                }
                create_tables(&txn, p)?;
            }
            txn.commit().map_err(|e| storage(p, e))?;
            Ok(db)
        })
        .and_then(|db| {
            std::fs::rename(&partial, &path).map_err(|e| io(&path, e))?;
            // The rename is durable once the directory is.
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io(&path, e))?;
            Ok(db)
        });
        let db = match made {
            Ok(db) => db,
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                if new_dir {
                    let _ = std::fs::remove_dir(dir);
                }
                return Err(e);
            }
        };
        Ok(RedbStore {
            inner: Some(Arc::new(Inner {
                db,
                settings: settings.clone(),
                sequence: AtomicU64::new(0),
            })),
            path,
            retention: Retention::default(),
        })
    }

    /// Opens the store in `dir`, migrating a file of the previous format (see the module documentation).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        if !path.is_file() {
            return Err(StoreError::Missing(dir.to_path_buf()));
        }
        let foreign = |reason: String| StoreError::Foreign {
            path: path.clone(),
            reason,
        };
        let mut head = [0u8; MAGIC.len()];
        let read = std::fs::File::open(&path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .map_err(|e| io(&path, e))?;
        if read < MAGIC.len() || head != MAGIC {
            return Err(foreign("it is not a redb database file".into()));
        }
        let (db, settings, sequence) = quiet(&path, || {
            let p = &path;
            let db = Database::builder()
                .set_check_integrity_on_open(true)
                .open(p)
                .map_err(|e| match e {
                    redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked(p.clone()),
                    other => foreign(other.to_string()),
                })?;
            let (format, mut settings) = read_meta(&db, p)?;
            if format == LEGACY_FORMAT {
                migrate(&db, p)?;
            } else if format != FORMAT {
                return Err(foreign(format!("format '{format}', expected '{FORMAT}'")));
            }
            settings.remove(FORMAT_KEY);
            let txn = db.begin_read().map_err(|e| storage(p, e))?;
            let state = txn
                .open_table(STATE)
                .map_err(|e| foreign(format!("no state table ({e})")))?;
            let sequence = state
                .get("sequence")
                .map_err(|e| storage(p, e))?
                .map_or(0, |v| v.value());
            drop((state, txn));
            Ok((db, settings, sequence))
        })?;
        Ok(RedbStore {
            inner: Some(Arc::new(Inner {
                db,
                settings,
                sequence: AtomicU64::new(sequence),
            })),
            path,
            retention: Retention::default(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn inner(&self) -> &Arc<Inner> {
        self.inner
            .as_ref()
            .expect("a store being dropped is not used")
    }
}

/// The tables of format 2 besides `meta`, empty, and the state at sequence 0.
fn create_tables(txn: &redb::WriteTransaction, p: &Path) -> Result<(), StoreError> {
    txn.open_table(VALUES).map_err(|e| storage(p, e))?;
    txn.open_table(LOG).map_err(|e| storage(p, e))?;
    txn.open_table(LOG_SIZES).map_err(|e| storage(p, e))?;
    let mut state = txn.open_table(STATE).map_err(|e| storage(p, e))?;
    state.insert("sequence", 0).map_err(|e| storage(p, e))?;
    state.insert("logged", 0).map_err(|e| storage(p, e))?;
    Ok(())
}

/// The format and every setting of the `meta` table.
fn read_meta(db: &Database, p: &Path) -> Result<(String, Settings), StoreError> {
    let foreign = |reason: String| StoreError::Foreign {
        path: p.to_path_buf(),
        reason,
    };
    let txn = db.begin_read().map_err(|e| storage(p, e))?;
    let table = txn
        .open_table(META)
        .map_err(|e| foreign(format!("no settings table ({e})")))?;
    let mut settings = Settings::new();
    for row in table.iter().map_err(|e| storage(p, e))? {
        let (key, value) = row.map_err(|e| storage(p, e))?;
        settings.insert(key.value().to_owned(), value.value().to_owned());
    }
    let format = settings
        .get(FORMAT_KEY)
        .cloned()
        .ok_or_else(|| foreign(format!("the setting '{FORMAT_KEY}' is missing")))?;
    Ok((format, settings))
}

/// Format 1 → 2 in one transaction.
fn migrate(db: &Database, p: &Path) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(|e| storage(p, e))?;
    {
        let mut values = txn.open_table(VALUES).map_err(|e| storage(p, e))?;
        match txn.open_table(LEGACY_ENTRIES) {
            Ok(old) => {
                for row in old.iter().map_err(|e| storage(p, e))? {
                    let (id, fp) = row.map_err(|e| storage(p, e))?;
                    values
                        .insert(id.value(), fp.value().to_le_bytes().as_slice())
                        .map_err(|e| storage(p, e))?;
                }
            }
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(storage(p, e)),
        }
        match txn.open_table(LEGACY_SIGNATURES) {
            Ok(old) => {
                for row in old.iter().map_err(|e| storage(p, e))? {
                    let (id, sig) = row.map_err(|e| storage(p, e))?;
                    values
                        .insert(id.value(), sig.value())
                        .map_err(|e| storage(p, e))?;
                }
            }
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(storage(p, e)),
        }
    }
    txn.delete_table(LEGACY_ENTRIES)
        .map_err(|e| storage(p, e))?;
    txn.delete_table(LEGACY_SIGNATURES)
        .map_err(|e| storage(p, e))?;
    create_tables(&txn, p)?;
    txn.open_table(META)
        .map_err(|e| storage(p, e))?
        .insert(FORMAT_KEY, FORMAT)
        .map_err(|e| storage(p, e))?;
    txn.commit().map_err(|e| storage(p, e))
}

/// A batch as the log stores it: per change, a tag (0 put, 1 delete), the id's length (u32 LE) and bytes,
/// and for a put the value's length (u32 LE) and bytes.
fn encode(batch: &[Change]) -> Vec<u8> {
    let mut out = Vec::new();
    for change in batch {
        let (tag, id, value) = match change {
            Change::Put { id, value } => (0u8, id, Some(value)),
            Change::Delete(id) => (1u8, id, None),
        };
        out.push(tag);
        out.extend_from_slice(&(id.len() as u32).to_le_bytes());
        out.extend_from_slice(id.as_bytes());
        if let Some(value) = value {
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
    }
    out
}

/// The inverse of [`encode`]; `None` for bytes it did not write.
fn decode(mut bytes: &[u8]) -> Option<Vec<Change>> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = bytes.split_at_checked(n)?;
        *bytes = rest;
        Some(head)
    }
    fn length(bytes: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(bytes, 4)?.try_into().ok()?) as usize)
    }
    let mut changes = Vec::new();
    while let Some(&tag) = bytes.first() {
        bytes = &bytes[1..];
        let n = length(&mut bytes)?;
        let id = std::str::from_utf8(take(&mut bytes, n)?).ok()?.to_owned();
        changes.push(match tag {
            0 => {
                let n = length(&mut bytes)?;
                Change::Put {
                    id,
                    value: take(&mut bytes, n)?.to_vec(),
                }
            }
            1 => Change::Delete(id),
            _ => return None,
        });
    }
    Some(changes)
}

impl Store for RedbStore {
    fn location(&self) -> &Path {
        &self.path
    }

    fn settings(&self) -> &Settings {
        &self.inner().settings
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        /// Entries read by the reading thread, in two buffers: no allocation per entry.
        #[derive(Default)]
        struct Chunk {
            ids: String,
            id_ends: Vec<usize>,
            values: Vec<u8>,
            value_ends: Vec<usize>,
        }
        const CHUNK: usize = 1 << 16;
        let (inner, p) = (self.inner(), self.path.as_path());
        // Walking redb's B-tree (a second, quiet thread) overlaps with the caller's work on each entry (this
        // one).
        std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::sync_channel::<Chunk>(4);
            let reader = std::thread::Builder::new()
                .name(QUIET_THREAD_NAME.into())
                .spawn_scoped(scope, move || -> Result<(), StoreError> {
                    let txn = inner.db.begin_read().map_err(|e| storage(p, e))?;
                    let table = txn.open_table(VALUES).map_err(|e| storage(p, e))?;
                    let mut chunk = Chunk::default();
                    for row in table.iter().map_err(|e| storage(p, e))? {
                        let (id, value) = row.map_err(|e| storage(p, e))?;
                        chunk.ids.push_str(id.value());
                        chunk.id_ends.push(chunk.ids.len());
                        chunk.values.extend_from_slice(value.value());
                        chunk.value_ends.push(chunk.values.len());
                        if chunk.id_ends.len() == CHUNK
                            && send.send(std::mem::take(&mut chunk)).is_err()
                        {
                            return Ok(()); // the caller stopped on an error of its own
                        }
                    }
                    let _ = send.send(chunk);
                    Ok(())
                })
                .map_err(|e| io(p, e))?;
            let mut result = Ok(());
            'chunks: for chunk in receive {
                let (mut id_start, mut value_start) = (0, 0);
                for (&id_end, &value_end) in chunk.id_ends.iter().zip(&chunk.value_ends) {
                    let id = &chunk.ids[id_start..id_end];
                    if let Err(e) = f(id, &chunk.values[value_start..value_end]) {
                        result = Err(e);
                        break 'chunks;
                    }
                    (id_start, value_start) = (id_end, value_end);
                }
            }
            // The receiver is gone by now, so a reader still running stops at its next chunk.
            let read = reader.join().unwrap_or_else(|panic| Err(damaged(p, panic)));
            // A damaged file explains a stop better than what the caller made of the entries before it.
            read.and(result)
        })
    }

    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError> {
        check_batch(&self.path, batch)?;
        if batch.is_empty() {
            return Ok(self.sequence());
        }
        let (inner, p, retention) = (self.inner(), self.path.as_path(), self.retention);
        let sequence = quiet(p, || {
            let s = |e: redb::Error| storage(p, e);
            let txn = inner.db.begin_write().map_err(|e| storage(p, e))?;
            let sequence;
            {
                let mut values = txn.open_table(VALUES).map_err(|e| storage(p, e))?;
                for change in batch {
                    match change {
                        Change::Put { id, value } => {
                            values.insert(id.as_str(), value.as_slice()).map(drop)
                        }
                        Change::Delete(id) => values.remove(id.as_str()).map(drop),
                    }
                    .map_err(|e| storage(p, e))?;
                }
                let entries = values.len().map_err(|e| storage(p, e))?;
                let mut state = txn.open_table(STATE).map_err(|e| storage(p, e))?;
                let get = |state: &redb::Table<&str, u64>, key| {
                    state
                        .get(key)
                        .map(|v| v.map_or(0, |v| v.value()))
                        .map_err(|e| s(e.into()))
                };
                sequence = get(&state, "sequence")? + 1;
                let mut logged = get(&state, "logged")?;
                let mut log = txn.open_table(LOG).map_err(|e| storage(p, e))?;
                let mut sizes = txn.open_table(LOG_SIZES).map_err(|e| storage(p, e))?;
                let (size, limit) = (batch.len() as u64, retention.limit(entries));
                if size > limit {
                    // Replaying past this batch is impossible without it: the whole log goes.
                    log.retain(|_, _| false).map_err(|e| storage(p, e))?;
                    sizes.retain(|_, _| false).map_err(|e| storage(p, e))?;
                    logged = 0;
                } else {
                    log.insert(sequence, encode(batch).as_slice())
                        .map_err(|e| storage(p, e))?;
                    sizes.insert(sequence, size).map_err(|e| storage(p, e))?;
                    logged += size;
                    while logged > limit {
                        let (first, n) = {
                            let (k, v) = sizes
                                .pop_first()
                                .map_err(|e| storage(p, e))?
                                .expect("a log over its limit has batches");
                            (k.value(), v.value())
                        };
                        log.remove(first).map_err(|e| storage(p, e))?;
                        logged -= n;
                    }
                }
                state
                    .insert("sequence", sequence)
                    .map_err(|e| storage(p, e))?;
                state.insert("logged", logged).map_err(|e| storage(p, e))?;
            }
            txn.commit().map_err(|e| storage(p, e))?;
            Ok(sequence)
        })?;
        inner.sequence.fetch_max(sequence, Ordering::SeqCst);
        Ok(sequence)
    }

    fn sequence(&self) -> u64 {
        self.inner().sequence.load(Ordering::SeqCst)
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        let (inner, p) = (self.inner(), self.path.as_path());
        quiet(p, || {
            let txn = inner.db.begin_read().map_err(|e| storage(p, e))?;
            let state = txn.open_table(STATE).map_err(|e| storage(p, e))?;
            let sequence = state
                .get("sequence")
                .map_err(|e| storage(p, e))?
                .map_or(0, |v| v.value());
            if since > sequence {
                return Err(StoreError::Ahead {
                    path: p.to_path_buf(),
                    asked: since,
                    sequence,
                });
            }
            let log = txn.open_table(LOG).map_err(|e| storage(p, e))?;
            let oldest = log
                .first()
                .map_err(|e| storage(p, e))?
                .map_or(sequence + 1, |(k, _)| k.value());
            if since + 1 < oldest {
                return Ok(ChangesSince::TooOld { oldest });
            }
            let mut batches = Vec::new();
            for row in log.range(since + 1..).map_err(|e| storage(p, e))? {
                let (k, v) = row.map_err(|e| storage(p, e))?;
                let changes = decode(v.value()).ok_or_else(|| StoreError::Foreign {
                    path: p.to_path_buf(),
                    reason: format!("batch {} of the change log is damaged", k.value()),
                })?;
                batches.push(Batch {
                    sequence: k.value(),
                    changes,
                });
            }
            Ok(ChangesSince::Changes(batches))
        })
    }

    fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_codec_round_trips() {
        let batch = vec![
            Change::Put {
                id: "a\tb\n".into(),
                value: vec![1, 2, 3],
            },
            Change::Delete(String::new()),
            Change::Put {
                id: "ü".into(),
                value: vec![],
            },
        ];
        assert_eq!(decode(&encode(&batch)).unwrap(), batch);
        let bytes = encode(&batch);
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode(&[7, 0, 0, 0, 0]), None);
    }
}

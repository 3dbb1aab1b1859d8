//! Persistence: the `Store` seam, its embedded backend, and the index that runs over it.
//!
//! A [`Store`] holds the durable state of an index: its settings ([`Meta`]) and its entries (id → fingerprint).
//! It does all the I/O; the index logic ([`HammingIndex`]) stays in memory and is rebuilt from the store when
//! an index is opened. [`PersistentIndex`] applies every change to the store first and to memory second, so
//! what the store acknowledged is what the index holds. A shared, distributed store is another implementation
//! of the same trait.
//!
//! [`RedbStore`] is the embedded default: one file, `DIR/index.redb`, in redb (a pure-Rust, copy-on-write
//! B-tree with ACID transactions). Each batch of changes is one transaction committed with immediate
//! durability: when [`Store::apply`] returns, the batch survives `kill -9` or a power cut at any later instant;
//! a crash during the commit leaves the previous state.

use crate::online::{HammingIndex, IndexError, Match};
use crate::plan::Design;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};

const ENTRIES: TableDefinition<&str, u64> = TableDefinition::new("entries");
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// The value of the `format` meta key: a file without it is not a neardup index.
pub const FORMAT: &str = "neardup-index-1";
/// The file of an index inside its directory.
pub const FILE_NAME: &str = "index.redb";

/// An index's settings, fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The fingerprint scheme of every entry (`simhash-doc-v1`); others are refused by the callers.
    pub scheme: String,
    /// The table design (its k is the largest distance queries can ask for).
    pub design: Design,
}

/// One change to an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Store a fingerprint under an id (replacing the id's previous one).
    Put(String, u64),
    /// Remove an id.
    Delete(String),
}

/// Why a store could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No index at the path.
    #[error("no index at {0}: create one with `neardup index create {0}`")]
    Missing(PathBuf),
    /// An index already exists where one was to be created.
    #[error("an index already exists at {0}")]
    Exists(PathBuf),
    /// The file is not an index of this format, or is damaged beyond redb's own recovery.
    #[error("{path} is not a neardup index or is damaged: {reason}")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// Another process has the index open.
    #[error("{0} is open in another process (one writer at a time)")]
    Locked(PathBuf),
    /// The in-memory index refused the entries (it is full).
    #[error(transparent)]
    Index(#[from] IndexError),
    /// An I/O or storage error.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        reason: String,
    },
}

/// The durable state of an index.
pub trait Store {
    /// The settings.
    fn meta(&self) -> &Meta;
    /// Every entry, for rebuilding the in-memory index.
    fn entries(&self) -> Result<Vec<(String, u64)>, StoreError>;
    /// Calls `f` with every entry, stopping at its first error: what [`PersistentIndex::open`] uses. The
    /// default goes through [`Store::entries`]; a store that can stream its entries without an allocation per
    /// id overrides it.
    fn for_each_entry(
        &self,
        f: &mut dyn FnMut(&str, u64) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for (id, fp) in self.entries()? {
            f(&id, fp)?;
        }
        Ok(())
    }
    /// Applies a batch of changes atomically and durably: once this returns `Ok`, the whole batch survives a
    /// crash; if it fails or the process dies during it, none of it is applied.
    fn apply(&mut self, batch: &[Change]) -> Result<(), StoreError>;
}

/// The embedded store: a redb file in the index directory.
pub struct RedbStore {
    path: PathBuf,
    db: Database,
    meta: Meta,
}

impl RedbStore {
    /// Creates an index in `dir` (created if missing); refuses if one is there.
    pub fn create(dir: &Path, meta: Meta) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        if path.exists() {
            return Err(StoreError::Exists(dir.to_path_buf()));
        }
        std::fs::create_dir_all(dir).map_err(|e| io(&path, e))?;
        let db = Database::create(&path).map_err(|e| io(&path, e))?;
        let txn = db.begin_write().map_err(|e| io(&path, e))?;
        {
            let mut t = txn.open_table(META).map_err(|e| io(&path, e))?;
            let levels: Vec<String> = meta.design.levels.iter().map(|b| b.to_string()).collect();
            for (key, value) in [
                ("format", FORMAT.to_owned()),
                ("scheme", meta.scheme.clone()),
                ("k", meta.design.k.to_string()),
                ("levels", levels.join(",")),
            ] {
                t.insert(key, value.as_str()).map_err(|e| io(&path, e))?;
            }
            txn.open_table(ENTRIES).map_err(|e| io(&path, e))?;
        }
        txn.commit().map_err(|e| io(&path, e))?;
        Ok(RedbStore { path, db, meta })
    }

    /// Opens the index in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        if !path.is_file() {
            return Err(StoreError::Missing(dir.to_path_buf()));
        }
        let db = Database::open(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked(path.clone()),
            other => StoreError::Foreign {
                path: path.clone(),
                reason: other.to_string(),
            },
        })?;
        let foreign = |reason: String| StoreError::Foreign {
            path: path.clone(),
            reason,
        };
        let txn = db.begin_read().map_err(|e| io(&path, e))?;
        let table = txn
            .open_table(META)
            .map_err(|e| foreign(format!("no settings table ({e})")))?;
        let get = |key: &str| -> Result<String, StoreError> {
            match table.get(key) {
                Ok(Some(v)) => Ok(v.value().to_owned()),
                Ok(None) => Err(foreign(format!("the setting '{key}' is missing"))),
                Err(e) => Err(foreign(e.to_string())),
            }
        };
        let format = get("format")?;
        if format != FORMAT {
            return Err(foreign(format!("format '{format}', expected '{FORMAT}'")));
        }
        let k: u32 = get("k")?.parse().map_err(|_| foreign("bad k".to_owned()))?;
        let levels: Vec<u32> = get("levels")?
            .split(',')
            .map(|b| b.parse().map_err(|_| foreign("bad levels".to_owned())))
            .collect::<Result<_, _>>()?;
        let design =
            Design::new(k, levels).ok_or_else(|| foreign("invalid table design".to_owned()))?;
        let scheme = get("scheme")?;
        drop(table);
        drop(txn);
        Ok(RedbStore {
            path,
            db,
            meta: Meta { scheme, design },
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

impl Store for RedbStore {
    fn meta(&self) -> &Meta {
        &self.meta
    }

    fn entries(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let txn = self.db.begin_read().map_err(|e| io(&self.path, e))?;
        let table = txn.open_table(ENTRIES).map_err(|e| io(&self.path, e))?;
        let mut out = Vec::with_capacity(table.len().unwrap_or(0) as usize);
        for row in table.iter().map_err(|e| io(&self.path, e))? {
            let (id, fp) = row.map_err(|e| io(&self.path, e))?;
            out.push((id.value().to_owned(), fp.value()));
        }
        Ok(out)
    }

    fn for_each_entry(
        &self,
        f: &mut dyn FnMut(&str, u64) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        /// Entries decoded by the reading thread, in one buffer: no allocation per id.
        #[derive(Default)]
        struct Chunk {
            ids: String,
            ends: Vec<usize>,
            fps: Vec<u64>,
        }
        const CHUNK: usize = 1 << 16;
        let txn = self.db.begin_read().map_err(|e| io(&self.path, e))?;
        let table = txn.open_table(ENTRIES).map_err(|e| io(&self.path, e))?;
        // Walking redb's B-tree (a second thread) overlaps with the caller's work on each entry (this one).
        std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::sync_channel::<Chunk>(4);
            let reader = scope.spawn(move || -> Result<(), StoreError> {
                let mut chunk = Chunk::default();
                for row in table.iter().map_err(|e| io(&self.path, e))? {
                    let (id, fp) = row.map_err(|e| io(&self.path, e))?;
                    chunk.ids.push_str(id.value());
                    chunk.ends.push(chunk.ids.len());
                    chunk.fps.push(fp.value());
                    if chunk.fps.len() == CHUNK && send.send(std::mem::take(&mut chunk)).is_err() {
                        return Ok(()); // the caller stopped on an error of its own
                    }
                }
                let _ = send.send(chunk);
                Ok(())
            });
            let mut result = Ok(());
            'chunks: for chunk in receive {
                let mut start = 0;
                for (&end, &fp) in chunk.ends.iter().zip(&chunk.fps) {
                    if let Err(e) = f(&chunk.ids[start..end], fp) {
                        result = Err(e);
                        break 'chunks;
                    }
                    start = end;
                }
            }
            // The receiver is gone by now, so a reader still running stops at its next chunk.
            let read = reader
                .join()
                .unwrap_or_else(|_| Err(io(&self.path, "the thread reading the entries panicked")));
            result.and(read)
        })
    }

    fn apply(&mut self, batch: &[Change]) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(|e| io(&self.path, e))?;
        {
            let mut table = txn.open_table(ENTRIES).map_err(|e| io(&self.path, e))?;
            for change in batch {
                match change {
                    Change::Put(id, fp) => table.insert(id.as_str(), *fp).map(|_| ()),
                    Change::Delete(id) => table.remove(id.as_str()).map(|_| ()),
                }
                .map_err(|e| io(&self.path, e))?;
            }
        }
        txn.commit().map_err(|e| io(&self.path, e))
    }
}

/// An online index whose every change is durable before it is visible.
pub struct PersistentIndex<S: Store> {
    store: S,
    index: HammingIndex,
}

impl<S: Store> PersistentIndex<S> {
    /// Loads every entry of the store into memory.
    pub fn open(store: S) -> Result<Self, StoreError> {
        let mut index = HammingIndex::with_design(store.meta().design.clone());
        // One bulk load and one table build, not an insert (and periodic rebuilds) per entry.
        let mut loader = index.loader();
        store.for_each_entry(&mut |id, fp| Ok(loader.push(id, fp)?))?;
        loader.finish();
        Ok(PersistentIndex { store, index })
    }

    /// The settings.
    pub fn meta(&self) -> &Meta {
        self.store.meta()
    }

    /// Applies a batch: durably to the store, then to memory.
    pub fn apply(&mut self, batch: &[Change]) -> Result<(), StoreError> {
        self.store.apply(batch)?;
        for change in batch {
            match change {
                Change::Put(id, fp) => self.index.insert(id, *fp)?,
                Change::Delete(id) => {
                    self.index.remove(id);
                }
            }
        }
        Ok(())
    }

    /// Every stored id within `k` of `fp`.
    pub fn query(&self, fp: u64, k: u32) -> Result<Vec<Match>, IndexError> {
        self.index.query(fp, k)
    }

    /// The in-memory index.
    pub fn index(&self) -> &HammingIndex {
        &self.index
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("neardup-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn meta() -> Meta {
        Meta {
            scheme: "simhash-doc-v1".into(),
            design: Design::new(3, vec![6]).unwrap(),
        }
    }

    #[test]
    fn survives_reopening() {
        let dir = temp("reopen");
        let mut idx = PersistentIndex::open(RedbStore::create(&dir, meta()).unwrap()).unwrap();
        idx.apply(&[
            Change::Put("a".into(), 0b1011),
            Change::Put("b".into(), u64::MAX),
            Change::Put("c".into(), 0b1),
        ])
        .unwrap();
        idx.apply(&[Change::Delete("b".into())]).unwrap();
        drop(idx);
        let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.meta(), &meta());
        assert_eq!(idx.index().len(), 2);
        let ids: Vec<String> = idx.query(0, 3).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(ids, ["c", "a"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn clear_errors() {
        let dir = temp("errors");
        assert!(matches!(RedbStore::open(&dir), Err(StoreError::Missing(_))));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(FILE_NAME),
            b"this is not a database, just some text that is long enough",
        )
        .unwrap();
        let err = RedbStore::open(&dir).err().expect("foreign file refused");
        assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
        std::fs::remove_file(dir.join(FILE_NAME)).unwrap();
        let store = RedbStore::create(&dir, meta()).unwrap();
        drop(store);
        assert!(matches!(
            RedbStore::create(&dir, meta()),
            Err(StoreError::Exists(_))
        ));
        // A truncated file is refused, not half-read.
        let bytes = std::fs::read(dir.join(FILE_NAME)).unwrap();
        std::fs::write(dir.join(FILE_NAME), &bytes[..bytes.len() / 3]).unwrap();
        assert!(RedbStore::open(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

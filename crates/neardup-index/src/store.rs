//! Persistence: the `Store` seam, its embedded backend, and the index that runs over it.
//!
//! A [`Store`] holds the durable state of an index: its settings ([`Meta`]) and its entries (id → 64-bit
//! fingerprint for a Hamming index, id → MinHash signature for an LSH index). It does all the I/O; the index
//! logic ([`HammingIndex`], [`LshIndex`]) stays in memory and is rebuilt from the store when an index is
//! opened. [`PersistentIndex`] applies every change to the store first and to memory second, so
//! what the store acknowledged is what the index holds. A shared, distributed store is another implementation
//! of the same trait.
//!
//! [`RedbStore`] is the embedded default: one file, `DIR/index.redb`, in redb (a pure-Rust, copy-on-write
//! B-tree with ACID transactions). Each batch of changes is one transaction committed with immediate
//! durability: when [`Store::apply`] returns, the batch survives `kill -9` or a power cut at any later instant;
//! a crash during the commit leaves the previous state.

use crate::lsh::{Banding, LshError, LshIndex};
use crate::hamming::plan::Design;
use crate::hamming::{HammingIndex, IndexError};
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};

const ENTRIES: TableDefinition<&str, u64> = TableDefinition::new("entries");
/// Signatures as little-endian `u32` values.
const SIGNATURES: TableDefinition<&str, &[u8]> = TableDefinition::new("signatures");
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// The value of the `format` meta key: a file without it is not a neardup index.
pub const FORMAT: &str = "neardup-index-1";
/// The file of an index inside its directory.
pub const FILE_NAME: &str = "index.redb";

/// An index's settings, fixed at creation.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The scheme of every entry (`simhash-doc-v1`, a MinHash scheme with its parameters); others are refused
    /// by the callers.
    pub scheme: String,
    /// What kind of index, with its layout.
    pub kind: Kind,
}

/// The kind of an index and its layout.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Permuted tables over 64-bit fingerprints (its k is the largest distance queries can ask for).
    Hamming(Design),
    /// LSH bands over MinHash signatures, and the estimated Jaccard similarity matches must reach.
    Lsh {
        /// The bands.
        banding: Banding,
        /// The similarity threshold the banding was chosen for.
        threshold: f64,
    },
}

impl Kind {
    /// `hamming` or `lsh`.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Hamming(_) => "hamming",
            Kind::Lsh { .. } => "lsh",
        }
    }
}

/// One change to an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Store a fingerprint under an id (replacing the id's previous one), in a Hamming index.
    Put(String, u64),
    /// Store a signature under an id (replacing the id's previous one), in an LSH index.
    PutSignature(String, Vec<u32>),
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
    /// The in-memory Hamming index refused the entries (it is full).
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The in-memory LSH index refused the entries (wrong signature length, or full).
    #[error(transparent)]
    Lsh(#[from] LshError),
    /// A change of the other kind (a fingerprint for an LSH index, or a signature for a Hamming index).
    #[error("a {index} index cannot store a {change}")]
    WrongKind {
        /// The index's kind.
        index: &'static str,
        /// What the change carried.
        change: &'static str,
    },
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
    /// Every fingerprint entry of a Hamming index, for rebuilding the in-memory index.
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
    /// Calls `visit` with every signature entry of an LSH index.
    fn for_each_signature(&self, visit: &mut dyn FnMut(&str, &[u32])) -> Result<(), StoreError>;
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
            let mut settings = vec![
                ("format", FORMAT.to_owned()),
                ("scheme", meta.scheme.clone()),
                ("kind", meta.kind.name().to_owned()),
            ];
            match &meta.kind {
                Kind::Hamming(design) => {
                    let levels: Vec<String> = design.levels.iter().map(|b| b.to_string()).collect();
                    settings.push(("k", design.k.to_string()));
                    settings.push(("levels", levels.join(",")));
                    txn.open_table(ENTRIES).map_err(|e| io(&path, e))?;
                }
                Kind::Lsh {
                    banding: b,
                    threshold,
                } => {
                    settings.push(("threshold", threshold.to_string()));
                    settings.push(("values", b.values.to_string()));
                    settings.push(("bands", b.bands.to_string()));
                    settings.push(("rows", b.rows.to_string()));
                    settings.push(("wide", b.wide.to_string()));
                    txn.open_table(SIGNATURES).map_err(|e| io(&path, e))?;
                }
            }
            for (key, value) in settings {
                t.insert(key, value.as_str()).map_err(|e| io(&path, e))?;
            }
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
        let number = |key: &str| -> Result<u32, StoreError> {
            get(key)?
                .parse()
                .map_err(|_| foreign(format!("the setting '{key}' is not a number")))
        };
        // Indexes made before LSH existed have no kind: they are Hamming indexes.
        let kind = match table.get("kind").map_err(|e| foreign(e.to_string()))? {
            None => "hamming".to_owned(),
            Some(v) => v.value().to_owned(),
        };
        let kind = match kind.as_str() {
            "hamming" => {
                let levels: Vec<u32> = get("levels")?
                    .split(',')
                    .map(|b| b.parse().map_err(|_| foreign("bad levels".to_owned())))
                    .collect::<Result<_, _>>()?;
                Kind::Hamming(
                    Design::new(number("k")?, levels)
                        .ok_or_else(|| foreign("invalid table design".to_owned()))?,
                )
            }
            "lsh" => {
                let (values, bands, rows, wide) = (
                    number("values")?,
                    number("bands")?,
                    number("rows")?,
                    number("wide")?,
                );
                let valid = bands > 0
                    && rows > 0
                    && wide < bands
                    && bands as u64 * rows as u64 + wide as u64 <= values as u64;
                if !valid {
                    return Err(foreign("invalid banding".to_owned()));
                }
                let threshold: f64 = get("threshold")?
                    .parse()
                    .map_err(|_| foreign("the setting 'threshold' is not a number".to_owned()))?;
                Kind::Lsh {
                    banding: Banding {
                        values,
                        bands,
                        rows,
                        wide,
                    },
                    threshold,
                }
            }
            other => return Err(foreign(format!("unknown index kind '{other}'"))),
        };
        let scheme = get("scheme")?;
        drop(table);
        drop(txn);
        Ok(RedbStore {
            path,
            db,
            meta: Meta { scheme, kind },
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

    fn for_each_signature(&self, visit: &mut dyn FnMut(&str, &[u32])) -> Result<(), StoreError> {
        let txn = self.db.begin_read().map_err(|e| io(&self.path, e))?;
        let table = txn.open_table(SIGNATURES).map_err(|e| io(&self.path, e))?;
        let mut values = Vec::new();
        for row in table.iter().map_err(|e| io(&self.path, e))? {
            let (id, bytes) = row.map_err(|e| io(&self.path, e))?;
            let bytes = bytes.value();
            values.clear();
            values.extend(
                bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            visit(id.value(), &values);
        }
        Ok(())
    }

    fn apply(&mut self, batch: &[Change]) -> Result<(), StoreError> {
        let kind = self.meta.kind.name();
        let txn = self.db.begin_write().map_err(|e| io(&self.path, e))?;
        {
            let mut fps = match self.meta.kind {
                Kind::Hamming(_) => Some(txn.open_table(ENTRIES).map_err(|e| io(&self.path, e))?),
                Kind::Lsh { .. } => None,
            };
            let mut sigs = match self.meta.kind {
                Kind::Lsh { .. } => {
                    Some(txn.open_table(SIGNATURES).map_err(|e| io(&self.path, e))?)
                }
                Kind::Hamming(_) => None,
            };
            let mut bytes = Vec::new();
            for change in batch {
                let wrong = |change| StoreError::WrongKind {
                    index: kind,
                    change,
                };
                match (change, &mut fps, &mut sigs) {
                    (Change::Put(id, fp), Some(t), _) => t.insert(id.as_str(), *fp).map(|_| ()),
                    (Change::PutSignature(id, sig), _, Some(t)) => {
                        bytes.clear();
                        bytes.extend(sig.iter().flat_map(|v| v.to_le_bytes()));
                        t.insert(id.as_str(), bytes.as_slice()).map(|_| ())
                    }
                    (Change::Delete(id), Some(t), _) => t.remove(id.as_str()).map(|_| ()),
                    (Change::Delete(id), _, Some(t)) => t.remove(id.as_str()).map(|_| ()),
                    (Change::Put(..), ..) => return Err(wrong("fingerprint")),
                    (Change::PutSignature(..), ..) => return Err(wrong("signature")),
                    (Change::Delete(_), None, None) => unreachable!("one table is open"),
                }
                .map_err(|e| io(&self.path, e))?;
            }
        }
        txn.commit().map_err(|e| io(&self.path, e))
    }
}

/// The in-memory side of a persistent index: one of the two kinds.
#[derive(Clone, Debug)]
pub enum Memory {
    /// Permuted Hamming tables.
    Hamming(HammingIndex),
    /// LSH bands.
    Lsh(LshIndex),
}

/// An online index whose every change is durable before it is visible.
pub struct PersistentIndex<S: Store> {
    store: S,
    memory: Memory,
}

impl<S: Store> PersistentIndex<S> {
    /// Loads every entry of the store into memory.
    pub fn open(store: S) -> Result<Self, StoreError> {
        let memory = match &store.meta().kind {
            Kind::Hamming(design) => {
                let mut index = HammingIndex::with_design(design.clone());
                // One bulk load and one table build, not an insert (and periodic rebuilds) per entry.
                let mut loader = index.loader();
                store.for_each_entry(&mut |id, fp| Ok(loader.push(id, fp)?))?;
                loader.finish();
                Memory::Hamming(index)
            }
            Kind::Lsh { banding, .. } => {
                let mut index = LshIndex::new(*banding);
                let (mut ids, mut values) = (Vec::new(), Vec::new());
                store.for_each_signature(&mut |id, sig| {
                    ids.push(id.to_owned());
                    values.push(sig.to_vec());
                })?;
                // One bulk load: each band's table is filled in memory order.
                index.extend(
                    ids.iter()
                        .map(String::as_str)
                        .zip(values.iter().map(Vec::as_slice)),
                )?;
                Memory::Lsh(index)
            }
        };
        Ok(PersistentIndex { store, memory })
    }

    /// The settings.
    pub fn meta(&self) -> &Meta {
        self.store.meta()
    }

    /// Applies a batch: checks it, applies it durably to the store, then to memory. A batch with a change the
    /// index cannot take (the other kind, a signature of the wrong length) is refused whole, before anything
    /// is written.
    pub fn apply(&mut self, batch: &[Change]) -> Result<(), StoreError> {
        for change in batch {
            match (change, &self.memory) {
                (Change::Put(..), Memory::Lsh(_)) => {
                    return Err(StoreError::WrongKind {
                        index: "lsh",
                        change: "fingerprint",
                    });
                }
                (Change::PutSignature(..), Memory::Hamming(_)) => {
                    return Err(StoreError::WrongKind {
                        index: "hamming",
                        change: "signature",
                    });
                }
                (Change::PutSignature(_, sig), Memory::Lsh(index)) => index.check(sig)?,
                _ => {}
            }
        }
        self.store.apply(batch)?;
        for change in batch {
            match (change, &mut self.memory) {
                (Change::Put(id, fp), Memory::Hamming(index)) => index.insert(id, *fp)?,
                (Change::PutSignature(id, sig), Memory::Lsh(index)) => index.insert(id, sig)?,
                (Change::Delete(id), Memory::Hamming(index)) => {
                    index.remove(id);
                }
                (Change::Delete(id), Memory::Lsh(index)) => {
                    index.remove(id);
                }
                // The store refused these already.
                (Change::Put(..), Memory::Lsh(_))
                | (Change::PutSignature(..), Memory::Hamming(_)) => {
                    unreachable!("the store checks the kind of every change")
                }
            }
        }
        Ok(())
    }

    /// The in-memory index.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The in-memory Hamming index, if this is one.
    pub fn hamming(&self) -> Option<&HammingIndex> {
        match &self.memory {
            Memory::Hamming(index) => Some(index),
            Memory::Lsh(_) => None,
        }
    }

    /// The in-memory LSH index, if this is one.
    pub fn lsh(&self) -> Option<&LshIndex> {
        match &self.memory {
            Memory::Lsh(index) => Some(index),
            Memory::Hamming(_) => None,
        }
    }

    /// How many ids are stored.
    pub fn len(&self) -> usize {
        match &self.memory {
            Memory::Hamming(index) => index.len(),
            Memory::Lsh(index) => index.len(),
        }
    }

    /// Whether no id is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an id is stored.
    pub fn contains(&self, id: &str) -> bool {
        match &self.memory {
            Memory::Hamming(index) => index.get(id).is_some(),
            Memory::Lsh(index) => index.get(id).is_some(),
        }
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
            kind: Kind::Hamming(Design::new(3, vec![6]).unwrap()),
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
        assert_eq!(idx.len(), 2);
        let ids: Vec<String> = idx
            .hamming()
            .unwrap()
            .query(0, 3)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, ["c", "a"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lsh_index_survives_reopening_and_refuses_fingerprints() {
        let dir = temp("lsh");
        let meta = Meta {
            scheme: "minhash-test".into(),
            kind: Kind::Lsh {
                banding: Banding::even(2, 4).unwrap(),
                threshold: 0.5,
            },
        };
        let mut idx =
            PersistentIndex::open(RedbStore::create(&dir, meta.clone()).unwrap()).unwrap();
        idx.apply(&[
            Change::PutSignature("a".into(), vec![1, 2, 3, 4]),
            Change::PutSignature("b".into(), vec![1, 2, 0, 0]),
            Change::PutSignature("c".into(), vec![7, 7, 7, 7]),
        ])
        .unwrap();
        idx.apply(&[Change::Delete("c".into())]).unwrap();
        let err = idx.apply(&[Change::Put("d".into(), 1)]).unwrap_err();
        assert!(matches!(err, StoreError::WrongKind { .. }), "{err}");
        let err = idx
            .apply(&[Change::PutSignature("d".into(), vec![1])])
            .unwrap_err();
        assert!(err.to_string().contains("4"), "{err}");
        drop(idx);
        let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.meta(), &meta);
        assert_eq!(idx.len(), 2);
        let found = idx.lsh().unwrap().query(&[1, 2, 9, 9]).unwrap();
        let ids: Vec<&str> = found.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(idx.hamming().is_none());
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

//! The `Store` seam: the only place that does I/O for index state. It deals in bytes and knows nothing of
//! index kinds, like tantivy's `Directory`.
//!
//! A [`Store`] holds
//!
//! * **settings**: a map of strings ([`Settings`]), written at creation. What they mean is the business of the
//!   codec in [`meta`] ([`Meta`] ⇄ settings, with its validation), written once for every backend;
//! * **entries**: id → bytes. The index layer ([`crate::persistent`]) encodes a fingerprint as 8
//!   little-endian bytes and a MinHash signature as little-endian `u32`s; a store never looks inside;
//! * **a change sequence**: every committed batch gets the next sequence number, and a bounded log of the
//!   latest batches lets a reader catch up with a writer ([`Store::changes_since`]).
//!
//! Backends: [`MemoryStore`] (in memory; handles are clones sharing one store), [`RedbStore`] (one redb file,
//! `DIR/index.redb`) and [`SegmentStore`] (immutable mapped segments, a write-ahead log and a manifest in `DIR`;
//! see [`segments`]); in its own crate, `neardup-store-redis` (Redis or Redis Cluster, a store that answers
//! queries itself: see [`served`]). Every backend must pass the conformance suite in `store::conformance` (behind the
//! `conformance` cargo feature for backends in other crates), which this crate runs over both.
//!
//! # Batches
//!
//! [`Store::apply`] applies a batch of [`Change`]s atomically and durably: when it returns `Ok`, the whole
//! batch is visible and (for a persistent backend) survives a crash; when it fails, none of it is applied
//! and the sequence does not move. Within a batch, later changes win (a put then a delete of one id leaves
//! nothing). An empty batch commits nothing and gets no number. Every store refuses, with
//! [`StoreError::Refused`] and before anything is applied, an id longer than [`MAX_ID_BYTES`] or a value
//! longer than [`MAX_VALUE_BYTES`].
//!
//! # One writer at a time
//!
//! A store has one writer at a time: the index layer keeps an in-memory copy that is right only if the batches
//! it did not write are replayed, in order, through [`Store::changes_since`] (which
//! [`PersistentIndex::refresh`](crate::persistent::PersistentIndex::refresh) does). [`RedbStore`] enforces the
//! rule across processes with redb's file lock (a second process gets [`StoreError::Locked`]); in-process
//! handles of either backend (clones) are not policed: their batches are still atomic and numbered in commit
//! order, and readers follow them with `changes_since`.
//!
//! # The change log and its retention
//!
//! The log keeps the newest batches whose changes number, together, at most
//! `max(retention.min_changes, retention.per_entry × entries)` (by default max(100 000, entries / 16)),
//! entries being the ids stored after the commit; older batches are dropped at each commit, and a batch
//! larger than the bound alone empties the log. So however long the store lives, the log holds at most a
//! sixteenth as many changes as the index has entries (or 100 000 changes, for a small index), and a reader
//! that fell further behind is told [`ChangesSince::TooOld`] and reloads every entry (cheaper, at that point,
//! than keeping the log needed to spare it).

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod memory;
pub mod meta;
mod redb;
pub mod segments;
pub mod served;

pub use self::memory::MemoryStore;
pub use self::redb::{FILE_NAME, FORMAT, LEGACY_FORMAT, QUIET_THREAD_NAME, RedbStore};
pub use self::segments::{SegmentSet, SegmentStore, Segmented};
pub use meta::{Kind, Meta, MetaError, Settings};
use std::path::{Path, PathBuf};

/// The longest id a store accepts, in bytes.
pub const MAX_ID_BYTES: usize = 65_535;
/// The longest value a store accepts, in bytes (16 MiB).
pub const MAX_VALUE_BYTES: usize = 1 << 24;

/// One change to a store's entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Store `value` under `id`, replacing what the id had.
    Put {
        /// The id.
        id: String,
        /// The bytes.
        value: Vec<u8>,
    },
    /// Remove an id (nothing happens if it is absent).
    Delete(String),
}

impl Change {
    /// The id the change is about.
    pub fn id(&self) -> &str {
        match self {
            Change::Put { id, .. } | Change::Delete(id) => id,
        }
    }
}

/// A committed batch: its sequence number and its changes, as they were applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The batch's sequence number (the first batch a store commits is 1).
    pub sequence: u64,
    /// The changes, in order.
    pub changes: Vec<Change>,
}

/// The answer of [`Store::changes_since`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangesSince {
    /// Every batch committed after the sequence number asked about, in commit order (none if it is current).
    Changes(Vec<Batch>),
    /// The log no longer reaches back that far: reload every entry (and continue from the sequence read
    /// before the reload).
    TooOld {
        /// The oldest batch still in the log (the store's sequence + 1 when the log is empty).
        oldest: u64,
    },
}

/// How much of the change log a store keeps: the newest batches whose changes number at most
/// `max(min_changes, per_entry × entries)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retention {
    /// Changes kept however small the index.
    pub min_changes: u64,
    /// Changes kept per stored entry, beyond that.
    pub per_entry: f64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            min_changes: 100_000,
            per_entry: 1.0 / 16.0,
        }
    }
}

impl Retention {
    /// The most changes the log keeps when the store holds `entries` ids.
    pub fn limit(&self, entries: u64) -> u64 {
        self.min_changes
            .max((entries as f64 * self.per_entry) as u64)
    }
}

/// Why a store could not be opened, read or written. Every message names the store and the problem.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No store at the path.
    #[error("no index at {0}")]
    Missing(PathBuf),
    /// A store already exists where one was to be created.
    #[error("an index already exists at {0}")]
    Exists(PathBuf),
    /// The file is not a store of this format, or is damaged.
    #[error("{path} is not a neardup index or is damaged: {reason}")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// Another writer (another process, or another handle in this one) has the store open.
    #[error(
        "{0} is already open for writing (one writer at a time: another process, or another handle in this \
         one, has it)"
    )]
    Locked(PathBuf),
    /// A change or setting the store does not take (an id or value too long, a reserved setting); nothing
    /// of the batch was applied.
    #[error("{path}: refused: {reason}")]
    Refused {
        /// The store.
        path: PathBuf,
        /// What was refused.
        reason: String,
    },
    /// Changes asked for after a sequence number the store has not reached: another store.
    #[error(
        "{path}: changes after batch {asked} were asked for, but the store has committed {sequence}"
    )]
    Ahead {
        /// The store.
        path: PathBuf,
        /// The sequence number asked about.
        asked: u64,
        /// The store's sequence number.
        sequence: u64,
    },
    /// An I/O or storage error.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        reason: String,
    },
    /// A caller's callback stopped [`Store::for_each`] with an error of its own.
    #[error("{0}")]
    Stopped(String),
}

/// What [`Store::for_each`] calls with each entry (id, value): `dyn FnMut(&str, &[u8]) -> Result<(), StoreError>`.
pub type Visit<'a> = dyn FnMut(&str, &[u8]) -> Result<(), StoreError> + 'a;

/// The durable state of an index: settings, entries (id → bytes) and a change sequence. See the module
/// documentation for the contract every backend keeps.
pub trait Store {
    /// Where the store lives, for messages: its file, or `memory`.
    fn location(&self) -> &Path;

    /// The settings written at creation.
    fn settings(&self) -> &Settings;

    /// Calls `f` with every entry, in no particular order, stopping at `f`'s first error (which it returns).
    /// The store streams: it holds no copy of all entries. `f` must not call back into the store (a backend
    /// may hold a lock or a read transaction meanwhile).
    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError>;

    /// Applies a batch atomically and durably and returns its sequence number (the current one for an empty
    /// batch, which commits nothing).
    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError>;

    /// The sequence number of the last committed batch (0 before the first).
    fn sequence(&self) -> u64;

    /// The batches committed after batch `since`, in order, or [`ChangesSince::TooOld`] when the log has
    /// dropped some of them.
    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError>;

    /// Sets how much of the change log this handle keeps when it commits.
    fn set_retention(&mut self, retention: Retention);

    /// For a store that keeps its entries in immutable mapped segments ([`SegmentStore`]): the current
    /// segments, which an index queries in place instead of loading them. `None` for other stores.
    fn segments(&self) -> Option<std::sync::Arc<SegmentSet>> {
        None
    }

    /// The current segments with every batch committed after them, read together (what an index loads to
    /// open over segments). `None` for stores without segments.
    fn segmented(&self) -> Result<Option<Segmented>, StoreError> {
        Ok(None)
    }

    /// For a store that holds the index's buckets itself and answers its queries (a shared Redis; see
    /// [`served`]): its query side. An index over it keeps nothing in memory. `None` for other stores.
    fn served(&self) -> Option<&dyn served::Served> {
        None
    }
}

/// Checks the limits every store enforces, before anything is applied (for every backend, in this crate or
/// another).
pub fn check_batch(path: &Path, batch: &[Change]) -> Result<(), StoreError> {
    for change in batch {
        let refused = |reason: String| StoreError::Refused {
            path: path.to_path_buf(),
            reason,
        };
        if change.id().len() > MAX_ID_BYTES {
            return Err(refused(format!(
                "an id of {} bytes (at most {MAX_ID_BYTES})",
                change.id().len()
            )));
        }
        if let Change::Put { id, value } = change
            && value.len() > MAX_VALUE_BYTES
        {
            let shown: String = id.chars().take(64).collect();
            return Err(refused(format!(
                "the value of '{shown}' has {} bytes (at most {MAX_VALUE_BYTES})",
                value.len()
            )));
        }
    }
    Ok(())
}

/// Refuses settings a caller may not set: the backends' own (for every backend).
pub fn check_settings(path: &Path, settings: &Settings) -> Result<(), StoreError> {
    if settings.contains_key(redb::FORMAT_KEY) {
        return Err(StoreError::Refused {
            path: path.to_path_buf(),
            reason: format!("the setting '{}' is the store's own", redb::FORMAT_KEY),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A scratch directory for one store of the suite, removed when the test's factory goes.
    fn conformance_dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("neardup-conformance-")
            .tempdir()
            .expect("scratch directory")
    }

    mod memory {
        use crate::store::MemoryStore;
        use crate::store::conformance::Factory;

        fn factory() -> Factory<'static, MemoryStore> {
            Factory {
                create: Box::new(|settings| MemoryStore::new(settings.clone()).unwrap()),
                reopen: Box::new(|store| store.clone()),
            }
        }

        crate::store_conformance_tests!(factory());
    }

    mod redb {
        use super::conformance_dir;
        use crate::store::conformance::Factory;
        use crate::store::{RedbStore, Store};

        /// A fresh directory per store; reopening drops the handle (closing the file) and opens it again.
        fn factory() -> Factory<'static, RedbStore> {
            // The scratch directories live as long as the factory, which is one test.
            let mut scratch: Vec<tempfile::TempDir> = Vec::new();
            Factory {
                create: Box::new(move |settings| {
                    scratch.push(conformance_dir());
                    let dir = scratch.last().unwrap().path().join("index");
                    RedbStore::create(&dir, settings).unwrap()
                }),
                reopen: Box::new(|store| {
                    let dir = store.location().parent().unwrap().to_path_buf();
                    drop(store);
                    RedbStore::open(&dir).unwrap()
                }),
            }
        }

        crate::store_conformance_tests!(factory());
    }

    mod segments {
        use super::conformance_dir;
        use crate::store::conformance::Factory;
        use crate::store::segments::MergePolicy;
        use crate::store::{SegmentStore, Store};

        /// A fresh directory per store; reopening drops the handle (releasing the lock) and opens it again.
        /// With `merge_always`, every commit also merges, so every case runs across merges too.
        pub(super) fn factory(merge_always: bool) -> Factory<'static, SegmentStore> {
            let mut scratch: Vec<tempfile::TempDir> = Vec::new();
            let policy = move |store: SegmentStore| {
                if merge_always {
                    store.set_merge_policy(MergePolicy {
                        flush_changes: 1,
                        ..MergePolicy::default()
                    });
                }
                store
            };
            Factory {
                create: Box::new(move |settings| {
                    scratch.push(conformance_dir());
                    let dir = scratch.last().unwrap().path().join("index");
                    policy(SegmentStore::create(&dir, settings, None).unwrap())
                }),
                reopen: Box::new(move |store| {
                    let dir = store.location().to_path_buf();
                    drop(store);
                    policy(SegmentStore::open(&dir, None).unwrap())
                }),
            }
        }

        crate::store_conformance_tests!(factory(false));

        mod merging_at_every_commit {
            crate::store_conformance_tests!(super::factory(true));
        }
    }
}

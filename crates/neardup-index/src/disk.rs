//! Indexes on disk: the two embedded backends behind one type, chosen at creation and recognized at open.
//!
//! | backend | files in the index's directory | open | many processes |
//! |---|---|---|---|
//! | [`Backend::Segments`] (the default) | `MANIFEST`, `seg-*.nds`, `wal-*.log`, `LOCK` | maps the segments: constant time | one writer, any number of readers |
//! | [`Backend::Redb`] | `index.redb` | loads every entry into memory | one process |
//!
//! This module is where a store meets the index kinds' layouts: a segmented store is given the layout of its
//! index's kind ([`arrange_for`]: the permuted tables of a Hamming index, the sorted band keys of an LSH
//! index), so its flushes and merges write segments that queries read in place. The stores themselves stay
//! ignorant of kinds.

use crate::hamming::mapped::HammingArrange;
use crate::lsh::mapped::LshArrange;
use crate::store::segments::{Arrange, MANIFEST_FILE, SegmentSet, Segmented};
use crate::store::{
    ChangesSince, Kind, Meta, RedbStore, Retention, SegmentStore, Settings, Store, StoreError,
    Visit,
};
use std::path::Path;
use std::sync::Arc;

/// Which embedded backend holds an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Backend {
    /// Mapped immutable segments with a write-ahead log ([`SegmentStore`]).
    #[default]
    Segments,
    /// One redb database file ([`RedbStore`]).
    Redb,
}

impl Backend {
    /// `segments` or `redb`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Segments => "segments",
            Backend::Redb => "redb",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "segments" => Ok(Backend::Segments),
            "redb" => Ok(Backend::Redb),
            other => Err(format!(
                "unknown store '{other}': use 'segments' (the default) or 'redb'"
            )),
        }
    }
}

/// The layout a segmented store writes for an index with these settings: the permuted tables of a Hamming
/// index, the sorted band keys of an LSH index.
pub fn arrange_for(settings: &Settings) -> Option<Arc<dyn Arrange>> {
    match Meta::from_settings(settings).ok()?.kind {
        Kind::Hamming(design) => Some(Arc::new(HammingArrange::new(design))),
        Kind::Lsh { banding, .. } => Some(Arc::new(LshArrange::new(banding))),
    }
}

/// An index's store on disk, of either backend.
#[derive(Clone, Debug)]
pub enum DiskStore {
    /// Segments.
    Segments(SegmentStore),
    /// redb.
    Redb(RedbStore),
}

impl DiskStore {
    /// Creates an index's store in `dir` with `backend`.
    pub fn create(dir: &Path, settings: &Settings, backend: Backend) -> Result<Self, StoreError> {
        match backend {
            // The segment store refuses a directory holding a redb file itself.
            Backend::Segments => {
                SegmentStore::create(dir, settings, arrange_for(settings)).map(DiskStore::Segments)
            }
            Backend::Redb => {
                if dir.join(MANIFEST_FILE).exists() {
                    return Err(StoreError::Exists(dir.to_path_buf()));
                }
                RedbStore::create(dir, settings).map(DiskStore::Redb)
            }
        }
    }

    /// Opens the store in `dir` for writing, whichever backend it is.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_as(dir, false)
    }

    /// Opens the store in `dir` for reading beside a writer (segments), or like [`open`](Self::open) (redb,
    /// which one process holds at a time).
    pub fn open_reader(dir: &Path) -> Result<Self, StoreError> {
        Self::open_as(dir, true)
    }

    fn open_as(dir: &Path, reader: bool) -> Result<Self, StoreError> {
        if dir.join(MANIFEST_FILE).exists() {
            // The settings (and so the layout) are in the manifest.
            let arrange = arrange_for(&SegmentStore::read_settings(dir)?);
            let store = if reader {
                SegmentStore::open_reader(dir, arrange)?
            } else {
                SegmentStore::open(dir, arrange)?
            };
            Ok(DiskStore::Segments(store))
        } else {
            RedbStore::open(dir).map(DiskStore::Redb)
        }
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        match self {
            DiskStore::Segments(_) => Backend::Segments,
            DiskStore::Redb(_) => Backend::Redb,
        }
    }

    /// The segmented store, if it is one.
    pub fn as_segments(&self) -> Option<&SegmentStore> {
        match self {
            DiskStore::Segments(store) => Some(store),
            DiskStore::Redb(_) => None,
        }
    }
}

impl Store for DiskStore {
    fn location(&self) -> &Path {
        match self {
            DiskStore::Segments(s) => s.location(),
            DiskStore::Redb(s) => s.location(),
        }
    }

    fn settings(&self) -> &Settings {
        match self {
            DiskStore::Segments(s) => s.settings(),
            DiskStore::Redb(s) => s.settings(),
        }
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        match self {
            DiskStore::Segments(s) => s.for_each(f),
            DiskStore::Redb(s) => s.for_each(f),
        }
    }

    fn apply(&mut self, batch: &[crate::store::Change]) -> Result<u64, StoreError> {
        match self {
            DiskStore::Segments(s) => s.apply(batch),
            DiskStore::Redb(s) => s.apply(batch),
        }
    }

    fn sequence(&self) -> u64 {
        match self {
            DiskStore::Segments(s) => s.sequence(),
            DiskStore::Redb(s) => s.sequence(),
        }
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        match self {
            DiskStore::Segments(s) => s.changes_since(since),
            DiskStore::Redb(s) => s.changes_since(since),
        }
    }

    fn set_retention(&mut self, retention: Retention) {
        match self {
            DiskStore::Segments(s) => s.set_retention(retention),
            DiskStore::Redb(s) => s.set_retention(retention),
        }
    }

    fn segments(&self) -> Option<Arc<SegmentSet>> {
        match self {
            DiskStore::Segments(s) => s.segments(),
            DiskStore::Redb(_) => None,
        }
    }

    fn segmented(&self) -> Result<Option<Segmented>, StoreError> {
        match self {
            DiskStore::Segments(s) => s.segmented(),
            DiskStore::Redb(_) => Ok(None),
        }
    }
}

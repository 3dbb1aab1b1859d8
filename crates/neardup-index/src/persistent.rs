//! The persistent index: an in-memory index of either kind kept in step with any [`Store`].
//!
//! This is where index kinds meet bytes, so it sits above both `store` (which knows only bytes) and the
//! in-memory indexes ([`HammingIndex`], [`LshIndex`], which know no I/O). It reads the kind and layout from the
//! store's settings ([`Meta`]), encodes a fingerprint as its 8 little-endian bytes and a signature as its
//! little-endian `u32` values, and checks lengths both ways.
//!
//! [`PersistentIndex::apply`] checks a batch whole, applies it durably to the store first and to memory
//! second, so what the store acknowledged is what the index holds. [`PersistentIndex::refresh`] replays the
//! batches other handles committed since (or reloads everything when the store's log no longer reaches back):
//! a reader follows a writer.
//!
//! Over a store with mapped segments ([`SegmentStore`](crate::store::SegmentStore)) whose segments carry the
//! index's structures (a Hamming index's permuted tables, an LSH index's sorted band keys), nothing is
//! loaded: the memory holds only the batches committed after the segments (a small [`HammingIndex`] or
//! [`LshIndex`]), queries read the segments in place and the memory, and the ids changed since the segments
//! are skipped in the segments. When the store flushes or merges, the index takes the new segments and the
//! memory keeps only what is newer.
//!
//! Over a *served* store ([`crate::store::served`], a shared Redis), nothing is held at all: the memory stays
//! empty, writes go to the store, and every query asks the store for the entries that share a bucket with it
//! and measures them here, so it sees what every other process has written.

use crate::hamming::mapped::MappedTables;
use crate::hamming::plan::TableLayout;
use crate::hamming::{HammingIndex, IndexError, Match};
use crate::lsh::mapped::{MappedBands, signature_values};
use crate::lsh::{Banding, Candidate, LshError, LshIndex, similarity};
use crate::memory::MemoryStats;
use crate::store::SegmentSet;
use crate::store::{Batch, Change, ChangesSince, Kind, Meta, MetaError, Store, StoreError};
use hashbrown::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// One change to a persistent index, in the index's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Store a fingerprint under an id (replacing the id's previous one), in a Hamming index.
    Put(String, u64),
    /// Store a signature under an id (replacing the id's previous one), in an LSH index.
    PutSignature(String, Vec<u32>),
    /// Remove an id.
    Delete(String),
}

/// Why a persistent index could not be opened, read or changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store's settings are not those of an index.
    #[error("{path}: {error}")]
    Meta {
        /// The store.
        path: PathBuf,
        /// What is wrong with the settings.
        error: MetaError,
    },
    /// A stored value does not have the index's encoding.
    #[error(
        "{path}: the value stored for '{id}' has {bytes} bytes, but a {kind} index stores {expected}"
    )]
    Value {
        /// The store.
        path: PathBuf,
        /// The id.
        id: String,
        /// The value's length.
        bytes: usize,
        /// The index's kind.
        kind: &'static str,
        /// What it stores.
        expected: String,
    },
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
}

/// The in-memory side of a persistent index: one of the two kinds.
#[derive(Clone, Debug)]
pub enum Memory {
    /// Permuted Hamming tables.
    Hamming(HammingIndex),
    /// LSH bands.
    Lsh(LshIndex),
}

impl Memory {
    /// The memory the index holds.
    pub fn stats(&self) -> MemoryStats {
        match self {
            Memory::Hamming(index) => index.memory(),
            Memory::Lsh(index) => index.memory(),
        }
    }
}

/// What [`PersistentIndex::refresh`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refreshed {
    /// Nothing was committed since the index last looked.
    Current,
    /// This many batches were replayed.
    Replayed(usize),
    /// The store's log did not reach back: every entry was reloaded.
    Reloaded,
}

/// An online index whose every change is durable before it is visible.
///
/// ```
/// use neardup_index::hamming::plan::Design;
/// use neardup_index::persistent::{Edit, PersistentIndex};
/// use neardup_index::store::{Kind, MemoryStore, Meta};
/// let meta = Meta { scheme: "simhash-doc-v1".into(), kind: Kind::Hamming(Design::new(3, vec![6]).unwrap()) };
/// let store = MemoryStore::new(meta.to_settings()).unwrap();
/// let mut writer = PersistentIndex::open(store.clone()).unwrap();
/// let mut reader = PersistentIndex::open(store).unwrap();
/// writer.apply(&[Edit::Put("a".into(), 0b1011), Edit::Put("b".into(), u64::MAX)]).unwrap();
/// reader.refresh().unwrap(); // follows the writer
/// let found = reader.hamming().unwrap().query(0b1001, 3).unwrap();
/// assert_eq!(found[0].id, "a");
/// ```
pub struct PersistentIndex<S: Store> {
    store: S,
    meta: Meta,
    memory: Memory,
    /// The last batch the memory reflects.
    seen: u64,
    /// The store's segments, when the index reads them in place.
    mapped: Option<Mapped>,
}

/// Segments queried in place, and what changed since they were written.
struct Mapped {
    set: Arc<SegmentSet>,
    /// The kind's structures in each segment.
    kind: MappedKind,
    /// Ids changed since the segments: their rows there are stale.
    touched: HashSet<String>,
    /// How many segment rows are stale, once counted (`usize::MAX` until then): counting looks every touched
    /// id up in the segments, which inserts need not pay for.
    stale: std::sync::atomic::AtomicUsize,
}

/// A Hamming index's tables or an LSH index's bands, per segment.
enum MappedKind {
    Hamming {
        tables: Vec<MappedTables>,
        layouts: Vec<TableLayout>,
    },
    Lsh {
        bands: Vec<MappedBands>,
        banding: Banding,
    },
}

impl Mapped {
    /// The segments' value of an id not changed since.
    fn value(&self, id: &str) -> Option<&[u8]> {
        if self.touched.contains(id) {
            return None;
        }
        let (segment, row) = self.set.lookup(id)?;
        self.set.segments[segment].value(row)
    }

    /// The id of a segment row found by a query, unless a newer place changed it; an error if the row is
    /// unreadable.
    fn current_id(&self, i: usize, row: u32) -> Result<Option<&str>, Error> {
        let segment = &self.set.segments[i];
        let id = segment.id(row as usize).ok_or_else(|| {
            Error::Store(StoreError::Foreign {
                path: segment.path().to_path_buf(),
                reason: format!("row {row} has no readable id (damaged)"),
            })
        })?;
        Ok((!self.touched.contains(id) && !self.set.shadowed(i, id)).then_some(id))
    }

    /// Marks an id as changed since the segments.
    fn touch(&mut self, id: &str) {
        if !self.touched.contains(id) {
            self.touched.insert(id.to_owned());
            *self.stale.get_mut() = usize::MAX;
        }
    }

    /// The segment rows that the ids changed since shadow.
    fn stale(&self) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let known = self.stale.load(Relaxed);
        if known != usize::MAX {
            return known;
        }
        let counted = self
            .touched
            .iter()
            .filter(|id| self.set.lookup(id).is_some())
            .count();
        self.stale.store(counted, Relaxed);
        counted
    }

    /// The segments' fingerprint of an id not changed since.
    fn fingerprint(&self, id: &str) -> Option<u64> {
        Some(u64::from_le_bytes(self.value(id)?.try_into().ok()?))
    }
}

/// What an entry holds: a fingerprint (Hamming index) or a signature's values (LSH index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored {
    /// A SimHash fingerprint.
    Fingerprint(u64),
    /// A MinHash signature's values.
    Signature(Vec<u32>),
}

/// The error for an edit of the other kind than the index's memory.
fn wrong_kind(memory: &Memory) -> Error {
    match memory {
        Memory::Lsh(_) => Error::WrongKind {
            index: "lsh",
            change: "fingerprint",
        },
        Memory::Hamming(_) => Error::WrongKind {
            index: "hamming",
            change: "signature",
        },
    }
}

/// A fingerprint's bytes.
fn encode_fingerprint(fp: u64) -> Vec<u8> {
    fp.to_le_bytes().to_vec()
}

/// A signature's bytes.
fn encode_signature(signature: &[u32]) -> Vec<u8> {
    signature.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl<S: Store> PersistentIndex<S> {
    /// Reads the settings and loads every entry of the store into memory.
    pub fn open(store: S) -> Result<Self, Error> {
        let meta = Meta::from_settings(store.settings()).map_err(|error| Error::Meta {
            path: store.location().to_path_buf(),
            error,
        })?;
        let memory = match &meta.kind {
            Kind::Hamming(design) => Memory::Hamming(HammingIndex::with_design(design.clone())),
            Kind::Lsh { banding, .. } => Memory::Lsh(LshIndex::new(*banding)),
        };
        let mut index = PersistentIndex {
            store,
            meta,
            memory,
            seen: 0,
            mapped: None,
        };
        if index.store.served().is_some() {
            // The store answers queries itself: nothing to load.
            index.seen = index.store.sequence();
        } else {
            index.load()?;
        }
        Ok(index)
    }

    /// Replaces the memory with every entry of the store. The sequence is read first: a batch committed
    /// during the load is replayed by the next refresh, which does no harm (replaying batches in order gives
    /// the same state, whatever was already applied).
    fn load(&mut self) -> Result<(), Error> {
        if self.load_mapped()? {
            return Ok(());
        }
        self.mapped = None;
        let seen = self.store.sequence();
        let path = self.store.location().to_path_buf();
        // Errors of the index layer stop the store's walk and are reported as themselves.
        let mut failure: Option<Error> = None;
        let mut stop = |e: Error| {
            failure = Some(e);
            StoreError::Stopped("the index refused an entry".into())
        };
        let walked = match &self.meta.kind {
            Kind::Hamming(design) => {
                let mut index = HammingIndex::with_design(design.clone());
                // One bulk load and one table build, not an insert (and periodic rebuilds) per entry.
                let mut loader = index.loader();
                let walked = self.store.for_each(&mut |id, value| {
                    let fp = decode_fingerprint(&path, id, value).map_err(&mut stop)?;
                    loader.push(id, fp).map_err(|e| stop(e.into()))
                });
                loader.finish();
                self.memory = Memory::Hamming(index);
                walked
            }
            Kind::Lsh { banding, .. } => {
                let mut index = LshIndex::new(*banding);
                let k = banding.values as usize;
                let (mut ids, mut ends, mut values) = (String::new(), Vec::new(), Vec::new());
                let walked = self.store.for_each(&mut |id, value| {
                    if value.len() != 4 * k {
                        return Err(stop(not_a_signature(&path, id, value, k)));
                    }
                    ids.push_str(id);
                    ends.push(ids.len());
                    values.extend(signature_values(value));
                    Ok(())
                });
                // One bulk load: each band's table is filled in memory order.
                let starts = std::iter::once(0).chain(ends.iter().copied());
                index.extend(
                    starts
                        .zip(&ends)
                        .map(|(start, &end)| &ids[start..end])
                        .zip(values.chunks_exact(k.max(1))),
                )?;
                self.memory = Memory::Lsh(index);
                walked
            }
        };
        match (walked, failure) {
            (_, Some(e)) => return Err(e),
            (Err(e), None) => return Err(e.into()),
            (Ok(()), None) => {}
        }
        self.seen = seen;
        Ok(())
    }

    /// Opens the store's segments in place, if it has segments with this index's tables, and replays the
    /// batches after them into an otherwise empty memory. Returns whether it did.
    fn load_mapped(&mut self) -> Result<bool, Error> {
        let Some(segmented) = self.store.segmented()? else {
            return Ok(false);
        };
        let segments = &segmented.set.segments;
        let kind = match &self.meta.kind {
            Kind::Hamming(design) => {
                let layouts = design.layouts();
                let tables: Option<Vec<MappedTables>> = segments
                    .iter()
                    .map(|segment| MappedTables::find(segment, design, &layouts))
                    .collect();
                tables.map(|tables| MappedKind::Hamming { tables, layouts })
            }
            Kind::Lsh { banding, .. } => segments
                .iter()
                .map(|segment| MappedBands::find(segment, banding))
                .collect::<Option<Vec<MappedBands>>>()
                .map(|bands| MappedKind::Lsh {
                    bands,
                    banding: *banding,
                }),
        };
        let Some(kind) = kind else {
            return Ok(false);
        };
        let mut mapped = Mapped {
            set: segmented.set,
            kind,
            touched: HashSet::new(),
            stale: std::sync::atomic::AtomicUsize::new(0),
        };
        // What the batches after the segments did, each id's last state, loaded in bulk (one table build,
        // not one insert and its rebuilds per change).
        for (id, _) in &segmented.changed {
            mapped.touch(id);
        }
        let path = self.store.location().to_path_buf();
        let puts = segmented
            .changed
            .iter()
            .filter_map(|(id, v)| Some((id.as_str(), v.as_deref()?)));
        self.memory = match &self.meta.kind {
            Kind::Hamming(design) => {
                let mut index = HammingIndex::with_design(design.clone());
                let mut loader = index.loader();
                for (id, value) in puts {
                    loader.push(id, decode_fingerprint(&path, id, value)?)?;
                }
                loader.finish();
                Memory::Hamming(index)
            }
            Kind::Lsh { banding, .. } => {
                let mut index = LshIndex::new(*banding);
                let signatures: Vec<(&str, Vec<u32>)> = puts
                    .map(|(id, value)| (id, signature_values(value).collect()))
                    .collect();
                index.extend(signatures.iter().map(|(id, sig)| (*id, sig.as_slice())))?;
                Memory::Lsh(index)
            }
        };
        self.seen = segmented.sequence;
        self.mapped = Some(mapped);
        Ok(true)
    }

    /// Whether the store has merged since the index took its segments (a [`refresh`](Self::refresh) takes
    /// the new ones).
    pub fn segments_changed(&self) -> bool {
        match (&self.mapped, self.store.segments()) {
            (Some(mapped), Some(now)) => now.generation != mapped.set.generation,
            _ => false,
        }
    }

    /// The settings.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Applies a batch: checks it, applies it durably to the store, then to memory, and returns its sequence
    /// number. A batch with a change the index cannot take (the other kind, a signature of the wrong length)
    /// is refused whole, before anything is written. If another handle committed batches since this index
    /// last looked, they are replayed with this one, in order ([`refresh`](Self::refresh)).
    pub fn apply(&mut self, batch: &[Edit]) -> Result<u64, Error> {
        let changes = self.prepare(batch)?;
        if changes.is_empty() {
            return Ok(self.store.sequence());
        }
        let sequence = self.store.apply(&changes)?;
        self.applied(batch, sequence)?;
        Ok(sequence)
    }

    /// Whether the store answers queries itself (a shared store): the memory stays empty.
    fn is_served(&self) -> bool {
        self.store.served().is_some()
    }

    /// The store's changes for a batch of edits, each checked against the index's kind: the first half of
    /// [`apply`](Self::apply), for a writer that commits them through another handle of the store (so that
    /// readers of this index's memory never wait for the durable write) and then calls
    /// [`applied`](Self::applied).
    pub fn prepare(&self, batch: &[Edit]) -> Result<Vec<Change>, Error> {
        let mut changes = Vec::with_capacity(batch.len());
        for edit in batch {
            changes.push(match (edit, &self.memory) {
                (Edit::Put(..), Memory::Lsh(_)) | (Edit::PutSignature(..), Memory::Hamming(_)) => {
                    return Err(wrong_kind(&self.memory));
                }
                (Edit::Put(id, fp), Memory::Hamming(_)) => Change::Put {
                    id: id.clone(),
                    value: encode_fingerprint(*fp),
                },
                (Edit::PutSignature(id, sig), Memory::Lsh(index)) => {
                    index.check(sig)?;
                    Change::Put {
                        id: id.clone(),
                        value: encode_signature(sig),
                    }
                }
                (Edit::Delete(id), _) => Change::Delete(id.clone()),
            });
        }
        Ok(changes)
    }

    /// Brings the memory up to a batch of edits ([`prepare`](Self::prepare)d) that a handle of the same store
    /// committed as `sequence`: applied directly when it is the next batch, else everything since the memory
    /// last looked is replayed from the store, in order.
    pub fn applied(&mut self, batch: &[Edit], sequence: u64) -> Result<(), Error> {
        if sequence <= self.seen {
            return Ok(());
        }
        if self.is_served() {
            self.seen = sequence;
            return Ok(());
        }
        if sequence != self.seen + 1 {
            // Another handle wrote in between: replay everything since, this batch included, in order.
            self.refresh()?;
            return Ok(());
        }
        if self.segments_changed() {
            // The store merged this batch into new segments: take them, with an empty memory.
            self.load()?;
            return Ok(());
        }
        for edit in batch {
            if let (Some(mapped), Edit::Put(id, _) | Edit::PutSignature(id, _) | Edit::Delete(id)) =
                (&mut self.mapped, edit)
            {
                mapped.touch(id);
            }
            match (edit, &mut self.memory) {
                (Edit::Put(id, fp), Memory::Hamming(index)) => index.insert(id, *fp)?,
                (Edit::PutSignature(id, sig), Memory::Lsh(index)) => index.insert(id, sig)?,
                (Edit::Delete(id), Memory::Hamming(index)) => {
                    index.remove(id);
                }
                (Edit::Delete(id), Memory::Lsh(index)) => {
                    index.remove(id);
                }
                // Refused by `prepare` before anything was committed.
                (Edit::Put(..), memory @ Memory::Lsh(_))
                | (Edit::PutSignature(..), memory @ Memory::Hamming(_)) => {
                    return Err(wrong_kind(memory));
                }
            }
        }
        self.seen = sequence;
        Ok(())
    }

    /// Brings the memory up to the store's latest batch: replays the batches committed since it last looked
    /// (by another handle of the store), or reloads every entry when the store's log no longer reaches back.
    pub fn refresh(&mut self) -> Result<Refreshed, Error> {
        if self.is_served() {
            // Queries read the store as it is now: there is nothing to catch up with.
            self.seen = self.seen.max(self.store.sequence());
            return Ok(Refreshed::Current);
        }
        if self.store.sequence() == self.seen {
            if !self.segments_changed() {
                return Ok(Refreshed::Current);
            }
            // A merge with no new batch: take the new segments.
            self.load()?;
            return Ok(Refreshed::Reloaded);
        }
        let batches = match self.store.changes_since(self.seen)? {
            ChangesSince::Changes(_) if self.segments_changed() => {
                self.load()?;
                return Ok(Refreshed::Reloaded);
            }
            ChangesSince::Changes(batches) => batches,
            ChangesSince::TooOld { .. } => {
                self.load()?;
                return Ok(Refreshed::Reloaded);
            }
        };
        self.replay(&batches)?;
        Ok(Refreshed::Replayed(batches.len()))
    }

    /// Applies committed batches to the memory, in order.
    fn replay(&mut self, batches: &[Batch]) -> Result<(), Error> {
        let path = self.store.location().to_path_buf();
        for batch in batches {
            for change in &batch.changes {
                if let Some(mapped) = &mut self.mapped {
                    mapped.touch(change.id());
                }
                match (change, &mut self.memory) {
                    (Change::Put { id, value }, Memory::Hamming(index)) => {
                        index.insert(id, decode_fingerprint(&path, id, value)?)?
                    }
                    (Change::Put { id, value }, Memory::Lsh(index)) => {
                        let signature: Vec<u32> = signature_values(value).collect();
                        if value.len() % 4 != 0 || index.check(&signature).is_err() {
                            let k = index.banding().values as usize;
                            return Err(not_a_signature(&path, id, value, k));
                        }
                        index.insert(id, &signature)?
                    }
                    (Change::Delete(id), Memory::Hamming(index)) => {
                        index.remove(id);
                    }
                    (Change::Delete(id), Memory::Lsh(index)) => {
                        index.remove(id);
                    }
                }
            }
            self.seen = batch.sequence;
        }
        Ok(())
    }

    /// The last committed batch the memory reflects.
    pub fn sequence(&self) -> u64 {
        self.seen
    }

    /// Every stored id within distance `k` (at most the design's k) of a fingerprint, each once, nearest
    /// first, then by id: from the segments in place (when the index reads them so) and the memory.
    pub fn query_fingerprint(&self, fp: u64, k: u32) -> Result<Vec<Match>, Error> {
        let Memory::Hamming(index) = &self.memory else {
            return Err(wrong_kind(&self.memory));
        };
        if let Some(served) = self.store.served() {
            let path = self.store.location();
            let mut found = Vec::new();
            for (id, value) in served.neighbours(&encode_fingerprint(fp))? {
                let distance = crate::hamming(fp, decode_fingerprint(path, &id, &value)?);
                if distance <= k {
                    found.push(Match { distance, id });
                }
            }
            found.sort();
            return Ok(found);
        }
        let mut found = index.query(fp, k)?;
        if let Some(mapped) = &self.mapped
            && let MappedKind::Hamming { tables, layouts } = &mapped.kind
        {
            let mut rows = Vec::new();
            for (i, (segment, tables)) in mapped.set.segments.iter().zip(tables).enumerate() {
                rows.clear();
                tables.candidates(segment, layouts, fp, k, &mut rows);
                rows.sort_unstable();
                rows.dedup();
                for &(row, distance) in &rows {
                    if let Some(id) = mapped.current_id(i, row)? {
                        found.push(Match {
                            distance,
                            id: id.to_owned(),
                        });
                    }
                }
            }
            found.sort();
        }
        Ok(found)
    }

    /// Every stored id that shares a band with a signature, with its estimated similarity, most similar
    /// first, then by id: from the segments in place (when the index reads them so) and the memory.
    pub fn query_signature(&self, signature: &[u32]) -> Result<Vec<Candidate>, Error> {
        let Memory::Lsh(index) = &self.memory else {
            return Err(wrong_kind(&self.memory));
        };
        if let Some(served) = self.store.served() {
            index.check(signature)?;
            let mut found: Vec<Candidate> = served
                .neighbours(&encode_signature(signature))?
                .into_iter()
                .map(|(id, value)| {
                    let stored: Vec<u32> = signature_values(&value).collect();
                    Candidate {
                        id,
                        similarity: similarity(&stored, signature),
                    }
                })
                .collect();
            sort_candidates(&mut found);
            return Ok(found);
        }
        let mut found = index.query(signature)?;
        if let Some(mapped) = &self.mapped
            && let MappedKind::Lsh { bands, banding } = &mapped.kind
        {
            let mut rows = Vec::new();
            for (i, (segment, bands)) in mapped.set.segments.iter().zip(bands).enumerate() {
                rows.clear();
                bands.candidates(segment, banding, signature, &mut rows);
                rows.sort_unstable();
                rows.dedup();
                for &row in &rows {
                    if let Some(id) = mapped.current_id(i, row)? {
                        let stored: Option<Vec<u32>> = segment
                            .value(row as usize)
                            .map(|v| signature_values(v).collect());
                        found.push(Candidate {
                            id: id.to_owned(),
                            similarity: similarity(&stored.unwrap_or_default(), signature),
                        });
                    }
                }
            }
            sort_candidates(&mut found);
        }
        Ok(found)
    }

    /// An entry's stored value (as [`Store::for_each`] gives it) decoded: a fingerprint in a Hamming
    /// index, a signature in an LSH index; an error naming the id if it is neither.
    pub fn decode(&self, id: &str, value: &[u8]) -> Result<Stored, Error> {
        let path = self.store.location();
        match &self.meta.kind {
            Kind::Hamming(_) => decode_fingerprint(path, id, value).map(Stored::Fingerprint),
            Kind::Lsh { banding, .. } => {
                let k = banding.values as usize;
                if value.len() != 4 * k {
                    return Err(not_a_signature(path, id, value, k));
                }
                Ok(Stored::Signature(signature_values(value).collect()))
            }
        }
    }

    /// Calls `f` with every entry as this handle sees it, the same entries as [`len`](Self::len), the
    /// lookups and the queries: a reader's as of its last [`refresh`](Self::refresh), not what a writer
    /// committed since (which [`Store::for_each`] would read). The segments' live rows, then the entries in
    /// memory. Stops at `f`'s first error, and at a segment row that cannot be read. `None` for a store
    /// that serves every read itself (Redis), which has no snapshot: walk the store instead.
    pub fn for_each_seen(
        &self,
        f: &mut dyn FnMut(&str, Stored) -> Result<(), Error>,
    ) -> Option<Result<(), Error>> {
        if self.store.served().is_some() {
            return None;
        }
        Some((|| {
            if let Some(mapped) = &self.mapped {
                for (i, segment) in mapped.set.segments.iter().enumerate() {
                    for row in 0..segment.rows() {
                        let Some(id) = mapped.current_id(i, row as u32)? else {
                            continue;
                        };
                        // A deletion row has no value: the id is not stored.
                        if let Some(value) = segment.value(row) {
                            f(id, self.decode(id, value)?)?;
                        }
                    }
                }
            }
            match &self.memory {
                Memory::Hamming(index) => {
                    index.try_for_each(|id, fp| f(id, Stored::Fingerprint(fp)))
                }
                Memory::Lsh(index) => {
                    index.try_for_each(|id, values| f(id, Stored::Signature(values.to_vec())))
                }
            }
        })())
    }

    /// The stored signature of an id, in an LSH index.
    pub fn signature(&self, id: &str) -> Option<Vec<u32>> {
        let Memory::Lsh(index) = &self.memory else {
            return None;
        };
        if let Some(served) = self.store.served() {
            return Some(signature_values(&served.get(id).ok()??).collect());
        }
        index
            .get(id)
            .map(<[u32]>::to_vec)
            .or_else(|| Some(signature_values(self.mapped.as_ref()?.value(id)?).collect()))
    }

    /// The stored fingerprint of an id, in a Hamming index.
    pub fn fingerprint(&self, id: &str) -> Option<u64> {
        let Memory::Hamming(index) = &self.memory else {
            return None;
        };
        if let Some(served) = self.store.served() {
            return Some(u64::from_le_bytes(served.get(id).ok()??.try_into().ok()?));
        }
        index
            .get(id)
            .or_else(|| self.mapped.as_ref()?.fingerprint(id))
    }

    /// The segments the index reads in place, if it does.
    pub fn segments(&self) -> Option<&SegmentSet> {
        self.mapped.as_ref().map(|m| &*m.set)
    }

    /// The in-memory index: every entry, or (over mapped segments) the entries changed since them.
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
        if let Some(served) = self.store.served() {
            // A store that cannot be read counts nothing; its queries and writes report the error.
            return served.count().unwrap_or(0) as usize;
        }
        let in_memory = match &self.memory {
            Memory::Hamming(index) => index.len(),
            Memory::Lsh(index) => index.len(),
        };
        in_memory
            + self
                .mapped
                .as_ref()
                .map_or(0, |m| m.set.entries as usize - m.stale())
    }

    /// Whether no id is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an id is stored.
    pub fn contains(&self, id: &str) -> bool {
        match &self.memory {
            Memory::Hamming(_) => self.fingerprint(id).is_some(),
            Memory::Lsh(_) => self.signature(id).is_some(),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }
}

/// Most similar first, then by id.
fn sort_candidates(found: &mut [Candidate]) {
    found.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// The error for a stored value that is not a signature of `k` values.
fn not_a_signature(path: &std::path::Path, id: &str, value: &[u8], k: usize) -> Error {
    Error::Value {
        path: path.to_path_buf(),
        id: id.to_owned(),
        bytes: value.len(),
        kind: "lsh",
        expected: format!("{} ({k} values of 4 bytes)", 4 * k),
    }
}

fn decode_fingerprint(path: &std::path::Path, id: &str, value: &[u8]) -> Result<u64, Error> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| Error::Value {
        path: path.to_path_buf(),
        id: id.to_owned(),
        bytes: value.len(),
        kind: "hamming",
        expected: "8 (a fingerprint)".into(),
    })?;
    Ok(u64::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{Backend, DiskStore};
    use crate::hamming::plan::Design;
    use crate::lsh::Banding;
    use crate::store::segments::MergePolicy;
    use crate::store::{FILE_NAME, MemoryStore, RedbStore, Retention};
    use proptest::prelude::*;
    use std::path::Path;

    pub(crate) fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("neardup-persistent-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn meta() -> Meta {
        Meta {
            scheme: "simhash-doc-v1".into(),
            kind: Kind::Hamming(Design::new(3, vec![6]).unwrap()),
        }
    }

    fn lsh_meta() -> Meta {
        Meta {
            scheme: "minhash-test".into(),
            kind: Kind::Lsh {
                banding: Banding::even(2, 4).unwrap(),
                threshold: 0.5,
            },
        }
    }

    fn ids_near<S: Store>(idx: &PersistentIndex<S>, fp: u64) -> Vec<String> {
        let found = idx.hamming().unwrap().query(fp, 3).unwrap();
        found.into_iter().map(|m| m.id).collect()
    }

    #[test]
    fn survives_reopening() {
        let dir = temp("reopen");
        let store = RedbStore::create(&dir, &meta().to_settings()).unwrap();
        let mut idx = PersistentIndex::open(store).unwrap();
        idx.apply(&[
            Edit::Put("a".into(), 0b1011),
            Edit::Put("b".into(), u64::MAX),
            Edit::Put("c".into(), 0b1),
        ])
        .unwrap();
        assert_eq!(idx.apply(&[Edit::Delete("b".into())]).unwrap(), 2);
        drop(idx);
        let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.meta(), &meta());
        assert_eq!((idx.len(), idx.sequence()), (2, 2));
        assert_eq!(ids_near(&idx, 0), ["c", "a"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lsh_index_survives_reopening_and_refuses_fingerprints() {
        let dir = temp("lsh");
        let store = RedbStore::create(&dir, &lsh_meta().to_settings()).unwrap();
        let mut idx = PersistentIndex::open(store).unwrap();
        idx.apply(&[
            Edit::PutSignature("a".into(), vec![1, 2, 3, 4]),
            Edit::PutSignature("b".into(), vec![1, 2, 0, 0]),
            Edit::PutSignature("c".into(), vec![7, 7, 7, 7]),
        ])
        .unwrap();
        idx.apply(&[Edit::Delete("c".into())]).unwrap();
        let err = idx.apply(&[Edit::Put("d".into(), 1)]).unwrap_err();
        assert!(matches!(err, Error::WrongKind { .. }), "{err}");
        let err = idx
            .apply(&[
                Edit::PutSignature("e".into(), vec![1, 1, 1, 1]),
                Edit::PutSignature("d".into(), vec![1]),
            ])
            .unwrap_err();
        assert!(err.to_string().contains("4"), "{err}");
        assert!(!idx.contains("e"), "a refused batch is refused whole");
        assert_eq!(idx.store().sequence(), 2);
        drop(idx);
        let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.meta(), &lsh_meta());
        assert_eq!(idx.len(), 2);
        let found = idx.lsh().unwrap().query(&[1, 2, 9, 9]).unwrap();
        let ids: Vec<&str> = found.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(idx.hamming().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A reader follows a writer through the change log, over both backends and both kinds; a writer that
    /// was not the only one replays the others' batches with its own.
    /// A reader follows a writer of the same store; `merging`: the store merges at every commit, so the
    /// reader takes the new segments (a reload) rather than replaying batches.
    fn follows<S: Store + Clone>(store: S, kind_is_lsh: bool, merging: bool) {
        let mut writer = PersistentIndex::open(store.clone()).unwrap();
        let mut reader = PersistentIndex::open(store.clone()).unwrap();
        let put = |id: &str, x: u32| {
            if kind_is_lsh {
                Edit::PutSignature(id.into(), vec![x, x, x, x])
            } else {
                Edit::Put(id.into(), u64::from(x))
            }
        };
        assert_eq!(reader.refresh().unwrap(), Refreshed::Current);
        writer.apply(&[put("a", 1), put("b", 2)]).unwrap();
        writer
            .apply(&[Edit::Delete("a".into()), put("c", 3)])
            .unwrap();
        let expected = if merging {
            Refreshed::Reloaded
        } else {
            Refreshed::Replayed(2)
        };
        assert_eq!(reader.refresh().unwrap(), expected);
        assert_eq!(reader.sequence(), 2);
        for id in ["b", "c"] {
            assert!(reader.contains(id), "{id}");
        }
        assert!(!reader.contains("a"));
        // The reader writes too: the writer's next batch replays it first.
        reader.apply(&[put("d", 4)]).unwrap();
        writer.apply(&[put("e", 5)]).unwrap();
        for id in ["b", "c", "d", "e"] {
            assert!(writer.contains(id), "{id}");
        }
        assert_eq!((writer.len(), writer.sequence()), (4, 4));
        // Far behind the bounded log: a reload.
        writer.store.set_retention(Retention {
            min_changes: 1,
            per_entry: 0.0,
        });
        writer.apply(&[put("f", 6), put("g", 7)]).unwrap();
        assert_eq!(reader.refresh().unwrap(), Refreshed::Reloaded);
        assert_eq!((reader.len(), reader.sequence()), (6, 5));
        assert!(reader.contains("g"));
    }

    #[test]
    fn a_reader_follows_a_writer() {
        for lsh in [false, true] {
            let meta = if lsh { lsh_meta() } else { meta() };
            follows(MemoryStore::new(meta.to_settings()).unwrap(), lsh, false);
            let dir = temp(&format!("follow-{lsh}"));
            follows(
                RedbStore::create(&dir, &meta.to_settings()).unwrap(),
                lsh,
                false,
            );
            std::fs::remove_dir_all(&dir).unwrap();
            for merge_always in [false, true] {
                let dir = temp(&format!("follow-seg-{lsh}-{merge_always}"));
                let store =
                    DiskStore::create(&dir, &meta.to_settings(), Backend::Segments).unwrap();
                if merge_always {
                    store.as_segments().unwrap().set_merge_policy(MergePolicy {
                        flush_changes: 1,
                        ..MergePolicy::default()
                    });
                }
                follows(store, lsh, merge_always);
                std::fs::remove_dir_all(&dir).unwrap();
            }
        }
    }

    /// A merge of every segment, started in the background: writes go on, queries answer the same before
    /// and after, and the index takes the one new segment when asked (or at its next write).
    #[test]
    fn a_background_merge_of_every_segment_changes_no_answer() {
        let dir = temp("merge-all");
        let store = DiskStore::create(&dir, &meta().to_settings(), Backend::Segments).unwrap();
        let segments = store.as_segments().unwrap().clone();
        // Batches of falling size: the tiered policy (ratio 1) leaves each in its own segment.
        segments.set_merge_policy(MergePolicy {
            flush_changes: 10,
            ratio: 1,
            max_segments: 100,
        });
        let mut index = PersistentIndex::open(store).unwrap();
        let fp = |i: u64| (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // Segments and memory both.
        let near = |index: &PersistentIndex<DiskStore>, probe: u64| -> Vec<String> {
            let found = index.query_fingerprint(probe, 3).unwrap();
            found.into_iter().map(|m| m.id).collect()
        };
        let mut next = 0;
        for size in [40, 20, 10] {
            let batch: Vec<Edit> = (next..next + size)
                .map(|i| Edit::Put(format!("id-{i}"), fp(i)))
                .collect();
            index.apply(&batch).unwrap();
            next += size;
        }
        index.apply(&[Edit::Delete("id-3".into())]).unwrap();
        assert_eq!(segments.segments().unwrap().segments.len(), 3);
        let probes: Vec<u64> = (0..next).map(|i| fp(i) ^ 0b11).collect();
        let before: Vec<Vec<String>> = probes.iter().map(|&p| near(&index, p)).collect();
        assert!(!before[3].contains(&"id-3".to_owned()));
        assert!(before[4].contains(&"id-4".to_owned()));

        assert!(segments.merge_in_background().unwrap());
        index.apply(&[Edit::Put("late".into(), fp(1000))]).unwrap();
        segments.wait_for_merges();
        assert!(!segments.merging());
        if index.segments_changed() {
            index.refresh().unwrap();
        }
        assert!(!index.segments_changed());
        assert_eq!(index.segments().unwrap().segments.len(), 1);
        let after: Vec<Vec<String>> = probes.iter().map(|&p| near(&index, p)).collect();
        assert_eq!(after, before);
        assert_eq!(near(&index, fp(1000)), ["late"]);
        assert_eq!(index.len(), 70);
        // The late entry is in the log alone: merging again writes it into the one segment; then there is
        // nothing to merge. A reader cannot merge.
        assert!(segments.merge_in_background().unwrap());
        segments.wait_for_merges();
        assert_eq!(segments.segments().unwrap().segments.len(), 1);
        assert!(!segments.merge_in_background().unwrap());
        index.refresh().unwrap();
        assert_eq!(near(&index, fp(1000)), ["late"]);
        let reader = DiskStore::open_reader(&dir).unwrap();
        assert!(reader.as_segments().unwrap().merge_in_background().is_err());
        drop((index, segments, reader));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Over segments, an LSH index answers as the in-memory one does, through flushes, background merges,
    /// deletions and reopening; and its segments carry the bands (it reads them in place).
    #[test]
    fn lsh_segments_answer_like_memory() {
        let dir = temp("lsh-segments");
        let settings = lsh_meta().to_settings();
        let banding = Banding::even(2, 4).unwrap();
        let mut reference = LshIndex::new(banding);
        let policy = MergePolicy {
            flush_changes: 5,
            ratio: 2,
            max_segments: 3,
        };
        let open = |create: bool| {
            let store = if create {
                DiskStore::create(&dir, &settings, Backend::Segments).unwrap()
            } else {
                DiskStore::open(&dir).unwrap()
            };
            store.as_segments().unwrap().set_merge_policy(policy);
            PersistentIndex::open(store).unwrap()
        };
        let mut index = open(true);
        let signature = |i: u32| vec![i % 7, i % 5, i % 3, i];
        for i in 0..120u32 {
            let id = format!("doc{}", i % 50);
            if i % 9 == 4 {
                index.apply(&[Edit::Delete(id.clone())]).unwrap();
                reference.remove(&id);
            } else {
                index
                    .apply(&[Edit::PutSignature(id.clone(), signature(i))])
                    .unwrap();
                reference.insert(&id, &signature(i)).unwrap();
            }
            if i % 40 == 39 {
                drop(index);
                index = open(false);
                assert!(index.segments().is_some(), "the bands are read in place");
            }
            for q in [0u32, 3, 35, i] {
                assert_eq!(
                    index.query_signature(&signature(q)).unwrap(),
                    reference.query(&signature(q)).unwrap(),
                    "after {i} changes, query {q}"
                );
            }
            assert_eq!(index.len(), reference.len());
        }
        drop(index);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Put(u8, u64),
        Delete(u8),
        Query(u64, u32),
        Merge,
        Reopen,
        ReaderCatchesUp,
    }

    fn op() -> impl Strategy<Value = Op> {
        let near = (0usize..3, any::<u64>(), 0u32..6).prop_map(|(c, r, flips)| {
            let centres = [0u64, u64::MAX, 0x0f0f_0f0f_0f0f_0f0f];
            (0..flips).fold(centres[c], |x, i| {
                x ^ (1u64 << (r.rotate_left(i * 13) % 64))
            })
        });
        prop_oneof![
            6 => (any::<u8>(), near.clone()).prop_map(|(id, fp)| Op::Put(id % 30, fp)),
            2 => any::<u8>().prop_map(|id| Op::Delete(id % 30)),
            4 => (near, 0u32..4).prop_map(|(fp, k)| Op::Query(fp, k)),
            1 => Just(Op::Merge),
            1 => Just(Op::Reopen),
            1 => Just(Op::ReaderCatchesUp),
        ]
    }

    fn expected(model: &std::collections::BTreeMap<String, u64>, fp: u64, k: u32) -> Vec<Match> {
        let mut out: Vec<Match> = model
            .iter()
            .filter(|(_, v)| crate::hamming(**v, fp) <= k)
            .map(|(id, v)| Match {
                distance: crate::hamming(*v, fp),
                id: id.clone(),
            })
            .collect();
        out.sort();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Over mapped segments, a writer and a reader in its own handle (as another process) answer every
        /// query exactly as a plain map does, through merges (by policy and by hand) and reopenings.
        #[test]
        fn segments_answer_like_a_map(ops in proptest::collection::vec(op(), 1..120), small in any::<bool>()) {
            static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let dir = temp(&format!("segments-prop-{}", RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
            // Small flushes and few segments: every shape of flush, tiered merge and deletion happens.
            let policy = if small {
                MergePolicy { flush_changes: 3, ratio: 2, max_segments: 3 }
            } else {
                MergePolicy::default()
            };
            let open = |create: bool| {
                let store = if create {
                    DiskStore::create(&dir, &meta().to_settings(), Backend::Segments).unwrap()
                } else {
                    DiskStore::open(&dir).unwrap()
                };
                store.as_segments().unwrap().set_merge_policy(policy);
                PersistentIndex::open(store).unwrap()
            };
            let mut writer = open(true);
            let mut reader = PersistentIndex::open(DiskStore::open_reader(&dir).unwrap()).unwrap();
            let mut model = std::collections::BTreeMap::new();
            for op in ops {
                match op {
                    Op::Put(id, fp) => {
                        writer.apply(&[Edit::Put(format!("doc{id}"), fp)]).unwrap();
                        model.insert(format!("doc{id}"), fp);
                    }
                    Op::Delete(id) => {
                        writer.apply(&[Edit::Delete(format!("doc{id}"))]).unwrap();
                        model.remove(&format!("doc{id}"));
                    }
                    Op::Query(fp, k) => {
                        prop_assert_eq!(writer.query_fingerprint(fp, k).unwrap(), expected(&model, fp, k));
                    }
                    Op::Merge => writer.store().as_segments().unwrap().merge().unwrap(),
                    Op::Reopen => {
                        drop(writer);
                        writer = open(false);
                        prop_assert!(writer.segments().is_some(), "the reopened index reads its segments in place");
                    }
                    Op::ReaderCatchesUp => {
                        reader.refresh().unwrap();
                        prop_assert_eq!(reader.len(), model.len());
                        for fp in [0u64, u64::MAX, 0x0f0f_0f0f_0f0f_0f0f] {
                            prop_assert_eq!(reader.query_fingerprint(fp, 3).unwrap(), expected(&model, fp, 3));
                        }
                    }
                }
                prop_assert_eq!(writer.len(), model.len());
            }
            for (id, fp) in &model {
                prop_assert_eq!(writer.fingerprint(id), Some(*fp));
            }
            drop((writer, reader));
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn settings_and_values_of_the_wrong_shape_are_named() {
        let mut settings = meta().to_settings();
        settings.insert("k".into(), "three".into());
        let err = PersistentIndex::open(MemoryStore::new(settings).unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("'k'") && err.contains("memory"), "{err}");
        let mut store = MemoryStore::new(meta().to_settings()).unwrap();
        store
            .apply(&[Change::Put {
                id: "short".into(),
                value: vec![1, 2, 3],
            }])
            .unwrap();
        let err = PersistentIndex::open(store).err().unwrap().to_string();
        assert!(err.contains("'short'") && err.contains("3 bytes"), "{err}");
        let mut store = MemoryStore::new(lsh_meta().to_settings()).unwrap();
        store
            .apply(&[Change::Put {
                id: "odd".into(),
                value: vec![0; 15],
            }])
            .unwrap();
        let err = PersistentIndex::open(store).err().unwrap().to_string();
        assert!(err.contains("'odd'") && err.contains("16"), "{err}");
    }

    /// Writes an index the way the code before the byte-level store did, with raw redb calls.
    fn write_format_1(dir: &Path, lsh: bool, with_kind: bool) {
        use redb::{Database, TableDefinition};
        const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
        const ENTRIES: TableDefinition<&str, u64> = TableDefinition::new("entries");
        const SIGNATURES: TableDefinition<&str, &[u8]> = TableDefinition::new("signatures");
        std::fs::create_dir_all(dir).unwrap();
        let db = Database::create(dir.join(FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.insert("format", "neardup-index-1").unwrap();
            if lsh {
                for (k, v) in [
                    ("scheme", "minhash-test"),
                    ("kind", "lsh"),
                    ("threshold", "0.5"),
                    ("values", "4"),
                    ("bands", "2"),
                    ("rows", "2"),
                    ("wide", "0"),
                ] {
                    meta.insert(k, v).unwrap();
                }
                let mut sigs = txn.open_table(SIGNATURES).unwrap();
                for (id, sig) in [("a", [1u32, 2, 3, 4]), ("b", [1, 2, 0, 0])] {
                    let bytes: Vec<u8> = sig.iter().flat_map(|v| v.to_le_bytes()).collect();
                    sigs.insert(id, bytes.as_slice()).unwrap();
                }
            } else {
                for (k, v) in [("scheme", "simhash-doc-v1"), ("k", "3"), ("levels", "6")] {
                    meta.insert(k, v).unwrap();
                }
                if with_kind {
                    meta.insert("kind", "hamming").unwrap();
                }
                let mut entries = txn.open_table(ENTRIES).unwrap();
                for (id, fp) in [("a", 0b1011u64), ("b", u64::MAX), ("c", 0b1)] {
                    entries.insert(id, fp).unwrap();
                }
            }
        }
        txn.commit().unwrap();
    }

    #[test]
    fn indexes_of_format_1_are_migrated_on_open() {
        for (name, lsh, with_kind) in [("v1-old", false, false), ("v1-hamming", false, true)] {
            let dir = temp(name);
            write_format_1(&dir, lsh, with_kind);
            let mut idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
            assert_eq!(idx.meta(), &meta());
            assert_eq!((idx.len(), idx.sequence()), (3, 0));
            assert_eq!(ids_near(&idx, 0), ["c", "a"]);
            idx.apply(&[Edit::Delete("a".into())]).unwrap();
            drop(idx);
            let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
            assert_eq!(ids_near(&idx, 0), ["c"]);
            assert_eq!(idx.sequence(), 1);
            std::fs::remove_dir_all(&dir).unwrap();
        }
        let dir = temp("v1-lsh");
        write_format_1(&dir, true, true);
        let mut idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.meta(), &lsh_meta());
        let found = idx.lsh().unwrap().query(&[1, 2, 9, 9]).unwrap();
        assert_eq!(found.len(), 2);
        idx.apply(&[Edit::PutSignature("c".into(), vec![5, 5, 5, 5])])
            .unwrap();
        drop(idx);
        let idx = PersistentIndex::open(RedbStore::open(&dir).unwrap()).unwrap();
        assert_eq!(idx.len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A damaged file gives a clean error naming it, however it was damaged: never a panic, never a silent
    /// half-read. (The CLI's test of the same checks that nothing is printed either.)
    #[test]
    fn damaged_files_are_refused_cleanly() {
        let dir = temp("damaged");
        let build = || {
            let _ = std::fs::remove_dir_all(&dir);
            let store = RedbStore::create(&dir, &meta().to_settings()).unwrap();
            let mut idx = PersistentIndex::open(store).unwrap();
            let mut x = 7u64;
            let batch: Vec<Edit> = (0..20_000)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    Edit::Put(format!("https://example.org/{i}"), x)
                })
                .collect();
            idx.apply(&batch).unwrap();
            drop(idx);
            std::fs::read(dir.join(FILE_NAME)).unwrap()
        };
        let original = build();
        let mut noise = 12345u64;
        let mut random = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    noise ^= noise << 13;
                    noise ^= noise >> 7;
                    noise ^= noise << 17;
                    noise as u8
                })
                .collect()
        };
        let len = original.len();
        let overwrite = |bytes: &mut Vec<u8>, at: usize, with: &[u8]| {
            bytes[at..at + with.len()].copy_from_slice(with);
        };
        let mut damaged: Vec<(&str, Vec<u8>)> = vec![
            ("random bytes", random(len)),
            ("empty", Vec::new()),
            ("truncated", original[..len / 3].to_vec()),
            ("truncated to the header", original[..600].to_vec()),
        ];
        let mut middle = original.clone();
        overwrite(&mut middle, len / 2, &random(4096));
        damaged.push(("4 KiB of noise in the middle", middle));
        let mut zeroed = original.clone();
        overwrite(&mut zeroed, len / 2 - 20_000, &vec![0; 40_000]);
        damaged.push(("40 KB of zeros in the middle", zeroed));
        let mut header = original.clone();
        overwrite(&mut header, 9, &random(300));
        damaged.push(("the header after the magic bytes", header));
        let mut flips = original.clone();
        for i in (4096..len).step_by(997) {
            flips[i] ^= 0x20;
        }
        damaged.push(("a bit flipped every 997 bytes", flips));
        for (how, bytes) in damaged {
            std::fs::write(dir.join(FILE_NAME), &bytes).unwrap();
            let opened = RedbStore::open(&dir)
                .map_err(Error::from)
                .and_then(PersistentIndex::open);
            let err = match opened {
                Ok(idx) => panic!("{how}: opened with {} entries", idx.len()),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(&*dir.to_string_lossy()), "{how}: {err}");
            assert!(err.contains("damaged"), "{how}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Indexes as a library: create or open an index over any [`Store`], insert, replace, remove and query
//! documents by their sketches, and get matches scored by the scheme's measure.
//!
//! The conversion of sketches into stored entries and the dispatch on the kind of index (permuted Hamming
//! tables for SimHash fingerprints, LSH bands for MinHash signatures) live here, once, for every front door.
//! An index holds one method with fixed parameters; sketches of any other are refused before anything is
//! written.
//!
//! ```
//! use neardup::index::{Index, IndexSettings, Radius};
//! use neardup::{Method, Scheme};
//!
//! let dir = std::env::temp_dir().join(format!("neardup-doc-index-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let method = Method::SimHash(Scheme::SimhashDocV1);
//! let mut index = Index::create(&dir, method, &IndexSettings::default())?;
//! index.insert("a", &method.sketch_text("the quick brown fox jumps over the lazy dog")?)?;
//! let query = method.sketch_text("The quick brown fox jumps over the lazy dog!")?;
//! let matches = index.query(&query, Radius::Default)?;
//! assert_eq!(matches[0].id, "a");
//! let page = b"<html><body><p>The quick brown fox jumps over the lazy dog.</p></body></html>";
//! let matches = index.query_document(page, neardup::media::MediaHint::Auto, Radius::Default)?;
//! assert_eq!(matches[0].id, "a");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), neardup::Error>(())
//! ```

use crate::dedup::Score;
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::sketch::{Method, Sketch};
pub use neardup_index::disk::{Backend, DiskStore};
pub use neardup_index::hamming::plan::Design;
use neardup_index::hamming::plan::recommend;
pub use neardup_index::lsh::{Banding, Preset};
pub use neardup_index::persistent::{Edit as Change, Refreshed};
use neardup_index::persistent::{Error as PersistentError, Memory, PersistentIndex, Stored};
pub use neardup_index::store::{Kind, MemoryStore, QUIET_THREAD_NAME, RedbStore, Store};
use neardup_index::store::{Meta, SegmentStore, StoreError};
use std::path::Path;

mod location;
pub mod shared;
pub use location::{IndexStore, Location, RedisLocation, RedisStore, StoreKind, is_redis_url};
pub use shared::{GroupCommit, Reply, Shared, Write, Written};

/// How an index is laid out, chosen at creation.
#[derive(Clone, Debug)]
pub struct IndexSettings {
    /// SimHash: the largest distance queries may ask for (0 to 7).
    pub k: u32,
    /// SimHash: the expected number of entries (chooses the table design).
    pub expected: f64,
    /// MinHash: the similarity matches must reach, the bands, and how they are chosen.
    pub dedup: crate::dedup::Options,
    /// MinHash: a published configuration's bands and threshold.
    pub preset: Option<&'static Preset>,
    /// Where an index on disk keeps its entries: mapped segments (the default) or a redb file.
    pub backend: Backend,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            k: 3,
            expected: 1e6,
            // Queries verify candidates by the estimate, so recall is bought when choosing bands.
            dedup: crate::dedup::Options {
                verification: crate::dedup::Verification::Estimate,
                ..Default::default()
            },
            preset: None,
            backend: Backend::default(),
        }
    }
}

/// How far a query looks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Radius {
    /// The index's own: its k, or its threshold.
    Default,
    /// SimHash: at most this many bits (at most the index's k).
    Distance(u32),
    /// MinHash: at least this estimated similarity (0 lists every LSH candidate).
    Similarity(f64),
}

impl Radius {
    /// The radius a front door was asked for: a distance `k` (SimHash), a similarity `threshold` (MinHash),
    /// or neither (the index's own), for an index of `method`. Refuses both at once, the other family's, and
    /// a threshold outside 0..1.
    pub fn asked(method: Method, k: Option<u32>, threshold: Option<f64>) -> Result<Radius, Error> {
        let simhash = matches!(method, Method::SimHash(_));
        let bad = |reason: String| Err(Error::BadRadius { reason });
        match (k, threshold) {
            (Some(_), Some(_)) => bad(
                "give a distance k (SimHash) or a similarity threshold (MinHash), not both"
                    .to_owned(),
            ),
            (Some(_), None) if !simhash => Err(wrong_family(method)),
            (None, Some(_)) if simhash => Err(wrong_family(method)),
            (None, Some(t)) if !(0.0..=1.0).contains(&t) => {
                bad(format!("threshold {t} is not a similarity in 0..1"))
            }
            (Some(k), None) => Ok(Radius::Distance(k)),
            (None, Some(t)) => Ok(Radius::Similarity(t)),
            (None, None) => Ok(Radius::Default),
        }
    }
}

/// A distance asked of a MinHash index, or a similarity of a SimHash one.
fn wrong_family(method: Method) -> Error {
    let reason = if matches!(method, Method::SimHash(_)) {
        format!("a threshold is for MinHash indexes; this index holds {method} fingerprints: use k")
    } else {
        format!(
            "k is a Hamming distance for SimHash indexes; this index holds {method} signatures: use a threshold"
        )
    };
    Error::BadRadius { reason }
}

/// A radius made concrete for an index: the distance or the similarity a query reaches.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reach {
    Distance(u32),
    Similarity(f64),
}

/// A stored id near a query, with its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Match {
    /// The stored id.
    pub id: String,
    /// Its distance or estimated similarity to the query.
    pub score: Score,
}

/// The size of an index.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Stored entries.
    pub entries: usize,
    /// Bytes of the tables (or bands) in memory.
    pub table_bytes: u64,
    /// Bytes of the id table in memory.
    pub id_bytes: u64,
}

/// What an index holds and how: the answer of `neardup index stats` and Python's `Index.stats()`
/// ([`Index::summary`]), whose JSON fields are named as these.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Stored entries.
    pub entries: usize,
    /// The scheme of every entry.
    pub scheme: String,
    /// `hamming` (SimHash tables) or `lsh` (MinHash bands).
    pub kind: &'static str,
    /// The largest distance a query may ask for (Hamming tables).
    pub k: Option<u32>,
    /// The similarity the bands were chosen for (LSH).
    pub threshold: Option<f64>,
    /// The tables' design or the banding, in words (`4 blocks, choose 1`, `16 bands × 8 rows`).
    pub design: String,
    /// How many tables (or bands) the design has.
    pub tables: u64,
    /// Where the entries are kept: `segments`, `redb`, `redis` or `memory`.
    pub store: &'static str,
    /// Bytes of the segment files (or the redb file); 0 in Redis or memory.
    pub file_bytes: u64,
    /// Bytes of the write-ahead log (segments only).
    pub log_bytes: u64,
    /// Bytes of the tables (or bands) in this process's memory.
    pub memory_table_bytes: u64,
    /// Bytes of the id table in this process's memory.
    pub memory_id_bytes: u64,
}

impl Summary {
    /// The summary as one JSON object (`neardup index stats --json`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a summary is plain data")
    }
}

/// An index's segments at one moment ([`Index::segments`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentsNow {
    /// Segment files the store's manifest names.
    pub segments: usize,
    /// Whether a background merge runs or is asked for.
    pub merging: bool,
}

/// A persistent index of one method's sketches, over a [`Store`] (on disk by default, in mapped segments or a
/// redb file; in Redis for an index that many processes share; [`MemoryStore`] for an index that lives only
/// in memory).
pub struct Index<S: Store = IndexStore> {
    inner: PersistentIndex<S>,
    method: Method,
    location: String,
}

/// Entries [`Index::insert_all`] writes in one durable transaction: a caller that stores a long column a
/// transaction at a time (to check for an interrupt between them) takes this many.
pub const TRANSACTION_ENTRIES: usize = 10_000;

impl Index<IndexStore> {
    /// Creates an index at `location` for documents sketched with `method`: a directory (created if missing,
    /// in a directory that exists: a mistyped parent is an error, not a tree of new directories; the
    /// backend `settings.backend`, mapped segments by default) or a Redis URL (`redis://HOST:PORT/NAME`,
    /// `redis+cluster://HOST:PORT,…/NAME`). Refuses bottom-k samples, which are compared pair by pair.
    pub fn create(
        location: &Path,
        method: Method,
        settings: &IndexSettings,
    ) -> Result<Self, Error> {
        let meta = layout(method, settings)?;
        let parsed = parse_location(location)?;
        let shown = parsed.shown();
        let store = match parsed {
            Location::Dir(dir) => {
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty())
                    && !parent.is_dir()
                {
                    return Err(Error::Index {
                        location: shown.clone(),
                        reason: format!(
                            "{shown}: its directory {} does not exist (create it first)",
                            parent.display()
                        ),
                    });
                }
                DiskStore::create(&dir, &meta.to_settings(), settings.backend).map(IndexStore::Disk)
            }
            Location::Redis(redis) => RedisStore::create(
                &redis,
                &meta.to_settings(),
                settings.expected.clamp(1.0, 1e12) as u64,
            )
            .map(IndexStore::Redis),
        }
        .map_err(|e| store_error(&shown, e))?;
        Self::from_store(store, shown)
    }

    /// Opens the index at `location` (a directory or a Redis URL) for writing: one writer at a time for a
    /// directory, whichever backend holds it; any number of writers in Redis.
    pub fn open(location: &Path) -> Result<Self, Error> {
        Self::open_as(location, false)
    }

    /// Opens the index at `location` for reading: beside a running writer for an index in segments (the
    /// reader sees what the writer commits after each [`refresh`](Self::refresh)); like [`open`](Self::open)
    /// for a redb file, which one process holds at a time; for Redis, a handle that refuses writes and whose
    /// every query reads the entries as they are.
    pub fn open_reader(location: &Path) -> Result<Self, Error> {
        Self::open_as(location, true)
    }

    fn open_as(location: &Path, reader: bool) -> Result<Self, Error> {
        let parsed = parse_location(location)?;
        let shown = parsed.shown();
        let store = match parsed {
            Location::Dir(dir) if reader => DiskStore::open_reader(&dir).map(IndexStore::Disk),
            Location::Dir(dir) => DiskStore::open(&dir).map(IndexStore::Disk),
            Location::Redis(redis) if reader => {
                RedisStore::open_reader(&redis).map(IndexStore::Redis)
            }
            Location::Redis(redis) => RedisStore::open(&redis).map(IndexStore::Redis),
        }
        .map_err(|e| store_error(&shown, e))?;
        Self::from_store(store, shown)
    }

    /// Where the index's entries are kept.
    pub fn store_kind(&self) -> StoreKind {
        self.store().kind()
    }

    /// Writes every entry into a new segment now (an index in segments; the writer also does it by itself
    /// when the entries changed since the last merge reach an eighth of the index).
    pub fn merge(&mut self) -> Result<(), Error> {
        self.segments_to_merge()?
            .merge()
            .map_err(|e| self.index_error(e))?;
        self.refresh().map(drop)
    }

    /// The segment store under the index, if it is kept in segments.
    fn as_segments(&self) -> Option<&SegmentStore> {
        self.store().as_disk().and_then(DiskStore::as_segments)
    }

    /// The segment store under the index, or the error that says a merge needs one.
    fn segments_to_merge(&self) -> Result<&SegmentStore, Error> {
        self.as_segments().ok_or_else(|| {
            self.index_error(format!(
                "an index in {} has no segments to merge",
                self.store_kind().name()
            ))
        })
    }

    /// Starts writing every segment into one in the background and returns at once (see
    /// [`SegmentStore::merge_in_background`](neardup_index::store::SegmentStore::merge_in_background)):
    /// writes go on meanwhile, and queries read the old segments until the index takes the new one
    /// ([`refresh`](Self::refresh), or the next write). Returns whether there was more than one segment.
    pub fn merge_in_background(&self) -> Result<bool, Error> {
        self.segments_to_merge()?
            .merge_in_background()
            .map_err(|e| self.index_error(e))
    }

    /// The segments on disk now and whether a background merge runs: `None` for an index that is not kept
    /// in segments.
    pub fn segments(&self) -> Option<SegmentsNow> {
        let store = self.as_segments()?;
        Some(SegmentsNow {
            segments: store.segments().map_or(0, |set| set.segments.len()),
            merging: store.merging(),
        })
    }

    /// Checks the index whole: every file of an index in segments against its checksums (a redb file is
    /// checked by redb when it is opened); every entry of an index in Redis read and decoded, and counted
    /// against the count the index keeps.
    pub fn verify(&self) -> Result<(), Error> {
        match self.store() {
            IndexStore::Disk(DiskStore::Segments(store)) => {
                store.verify().map_err(|e| self.index_error(e))
            }
            IndexStore::Disk(DiskStore::Redb(_)) => Ok(()),
            IndexStore::Redis(store) => {
                let mut entries = 0u64;
                let kind = self.kind().clone();
                store
                    .for_each(&mut |id, value| {
                        entries += 1;
                        let expected = match &kind {
                            Kind::Hamming(_) => 8,
                            Kind::Lsh { banding, .. } => 4 * banding.values as usize,
                        };
                        if value.len() == expected {
                            Ok(())
                        } else {
                            Err(StoreError::Stopped(format!(
                                "the entry of '{id}' has {} bytes, not {expected}",
                                value.len()
                            )))
                        }
                    })
                    .map_err(|e| self.index_error(e))?;
                let counted = self.len() as u64;
                if counted != entries {
                    return Err(self.index_error(format!(
                        "{entries} entries are stored but the index counts {counted} (a writer died \
                         in the middle of a batch?)"
                    )));
                }
                Ok(())
            }
        }
    }

    /// What the index holds and how (see [`Summary`]).
    pub fn summary(&self) -> Summary {
        self.summary_in(self.store_kind().name(), self.disk_bytes())
    }

    /// Bytes on disk: (segment files, write-ahead log) for segments, (file, 0) for redb, (0, 0) for Redis.
    pub fn disk_bytes(&self) -> (u64, u64) {
        match self.store() {
            IndexStore::Disk(DiskStore::Segments(store)) => store.disk_bytes(),
            IndexStore::Disk(DiskStore::Redb(store)) => (
                std::fs::metadata(store.location())
                    .map(|m| m.len())
                    .unwrap_or(0),
                0,
            ),
            IndexStore::Redis(_) => (0, 0),
        }
    }
}

fn parse_location(location: &Path) -> Result<Location, Error> {
    Location::parse(location).map_err(|reason| Error::Index {
        location: "index location".into(),
        reason,
    })
}

impl Index<MemoryStore> {
    /// An index that lives only in memory, laid out as [`Index::create`] lays out one on disk.
    pub fn in_memory(method: Method, settings: &IndexSettings) -> Result<Self, Error> {
        let meta = layout(method, settings)?;
        let store = MemoryStore::new(meta.to_settings()).map_err(|e| Error::Index {
            location: "memory".to_owned(),
            reason: e.to_string(),
        })?;
        Self::from_store(store, "memory".to_owned())
    }

    /// What the index holds and how (see [`Summary`]).
    pub fn summary(&self) -> Summary {
        self.summary_in("memory", (0, 0))
    }
}

/// The layout of a new index of `method`: Hamming tables for SimHash, LSH bands for MinHash. Refuses bottom-k
/// samples, which are compared pair by pair.
fn layout(method: Method, settings: &IndexSettings) -> Result<Meta, Error> {
    let kind = match method {
        Method::BottomK(params) => {
            return Err(crate::schemes::pair_by_pair(&params, "indexed"));
        }
        Method::SimHash(_) => {
            crate::schemes::check_k(settings.k)?;
            Kind::Hamming(recommend(settings.k, settings.expected.max(1.0)))
        }
        Method::MinHash(scheme) => {
            let (banding, threshold) = settings
                .dedup
                .choose_bands(settings.preset, scheme.values())?;
            Kind::Lsh { banding, threshold }
        }
    };
    Ok(Meta {
        scheme: method.name(),
        kind,
    })
}

impl<S: Store> Index<S> {
    /// An error of this index: its location, and what went wrong.
    fn index_error(&self, reason: impl std::fmt::Display) -> Error {
        Error::Index {
            location: self.location.clone(),
            reason: reason.to_string(),
        }
    }

    /// The index held by a store; `location` names it in messages.
    pub fn from_store(store: S, location: String) -> Result<Self, Error> {
        let inner = PersistentIndex::open(store).map_err(|e| Error::Index {
            location: location.clone(),
            reason: e.to_string(),
        })?;
        let method: Method = inner.meta().scheme.parse()?;
        Ok(Index {
            inner,
            method,
            location,
        })
    }

    /// The method of every entry.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The kind of index and its layout.
    pub fn kind(&self) -> &Kind {
        &self.inner.meta().kind
    }

    /// Where it is (as given when opened).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// How many ids are stored.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether no id is stored.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether an id is stored.
    pub fn contains(&self, id: &str) -> bool {
        self.inner.contains(id)
    }

    /// The stored sketch of an id.
    pub fn get(&self, id: &str) -> Option<Sketch> {
        let stored = match self.inner.memory() {
            Memory::Hamming(_) => Stored::Fingerprint(self.inner.fingerprint(id)?),
            Memory::Lsh(_) => Stored::Signature(self.inner.signature(id)?),
        };
        self.sketch_of(stored)
    }

    /// A stored fingerprint or signature as a sketch of the index's method (None if it is of the other
    /// kind, which an index of this method does not store).
    fn sketch_of(&self, stored: Stored) -> Option<Sketch> {
        match (stored, self.method) {
            (Stored::Fingerprint(bits), Method::SimHash(scheme)) => {
                Some(Sketch::Fingerprint(Fingerprint::new(scheme, bits)))
            }
            (Stored::Signature(values), Method::MinHash(scheme)) => Some(Sketch::Signature(
                crate::MinHashSignature::from_values(*scheme.params(), values),
            )),
            _ => None,
        }
    }

    /// Refuses a sketch of another method or other parameters.
    pub fn check(&self, sketch: &Sketch) -> Result<(), Error> {
        let method = sketch.method()?;
        if method == self.method {
            Ok(())
        } else {
            Err(Error::MethodMismatch {
                left: self.method.name(),
                right: method.name(),
            })
        }
    }

    /// Stores a sketch under an id (replacing the id's previous one), durably: when this returns, the entry
    /// survives a crash.
    pub fn insert(&mut self, id: &str, sketch: &Sketch) -> Result<(), Error> {
        self.insert_all(std::iter::once((id, sketch))).map(|_| ())
    }

    /// Stores many sketches, in transactions of up to [`TRANSACTION_ENTRIES`]; returns how many were stored.
    /// Every sketch is checked before its transaction is written.
    pub fn insert_all<'a, I, D>(&mut self, entries: I) -> Result<usize, Error>
    where
        I: IntoIterator<Item = (D, &'a Sketch)>,
        D: AsRef<str>,
    {
        let mut batch = Vec::new();
        let mut stored = 0;
        for (id, sketch) in entries {
            batch.push(self.change(id.as_ref(), sketch)?);
            if batch.len() == TRANSACTION_ENTRIES {
                stored += self.apply(std::mem::take(&mut batch))?;
            }
        }
        stored += self.apply(batch)?;
        Ok(stored)
    }

    /// Applies changes made by [`Index::change`] and [`Index::removal`] as one durable transaction; returns
    /// how many.
    pub fn apply(&mut self, changes: Vec<Change>) -> Result<usize, Error> {
        if changes.is_empty() {
            return Ok(0);
        }
        self.inner
            .apply(&changes)
            .map_err(|e| self.index_error(e))?;
        Ok(changes.len())
    }

    /// The change that stores `sketch` under `id`, if the sketch is of the index's method.
    pub fn change(&self, id: &str, sketch: &Sketch) -> Result<Change, Error> {
        self.check(sketch)?;
        Ok(match sketch {
            Sketch::Fingerprint(fp) => Change::Put(id.to_owned(), fp.bits()),
            Sketch::Signature(sig) => Change::PutSignature(id.to_owned(), sig.values().to_vec()),
            Sketch::BottomK(_) => unreachable!("no index holds bottom-k samples"),
        })
    }

    /// The change that removes `id`.
    pub fn removal(&self, id: &str) -> Change {
        Change::Delete(id.to_owned())
    }

    /// Removes ids, durably; returns how many were stored (absent ids are not an error).
    pub fn remove<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> Result<usize, Error> {
        let changes: Vec<Change> = ids
            .into_iter()
            .filter(|id| self.contains(id))
            .map(|id| self.removal(id))
            .collect();
        self.apply(changes)
    }

    /// Sketches a document (bytes in any supported medium) with the index's method and stores it under `id`.
    pub fn insert_document(
        &mut self,
        id: &str,
        bytes: &[u8],
        hint: crate::media::MediaHint<'_>,
    ) -> Result<(), Error> {
        let sketch = self.method.analyze(bytes, hint)?.sketch;
        self.insert(id, &sketch)
    }

    /// The stored ids near a document (bytes in any supported medium), sketched with the index's method.
    pub fn query_document(
        &self,
        bytes: &[u8],
        hint: crate::media::MediaHint<'_>,
        radius: Radius,
    ) -> Result<Vec<Match>, Error> {
        let sketch = self.method.analyze(bytes, hint)?.sketch;
        self.query(&sketch, radius)
    }

    /// The stored ids near a sketch string (`simhash-doc-v1:…`, `minhash-oph-v1:k=128,…:…`).
    pub fn query_str(&self, sketch: &str, radius: Radius) -> Result<Vec<Match>, Error> {
        self.query(&sketch.parse()?, radius)
    }

    /// The stored ids near a sketch, with their scores, closest first (then by id). Refuses sketches of
    /// another method and a distance above the index's k.
    pub fn query(&self, sketch: &Sketch, radius: Radius) -> Result<Vec<Match>, Error> {
        self.check(sketch)?;
        let reach = self.reach(radius)?;
        let mut matches: Vec<Match> = match (sketch, self.inner.memory(), reach) {
            (Sketch::Fingerprint(fp), Memory::Hamming(_), Reach::Distance(k)) => self
                .inner
                .query_fingerprint(fp.bits(), k)
                .map_err(|e| self.index_error(e))?
                .into_iter()
                .map(|m| Match {
                    id: m.id,
                    score: Score::Distance(m.distance),
                })
                .collect(),
            (Sketch::Signature(sig), Memory::Lsh(_), Reach::Similarity(t)) => self
                .inner
                .query_signature(sig.values())
                .map_err(|e| self.index_error(e))?
                .into_iter()
                .filter(|c| c.similarity >= t)
                .map(|c| Match {
                    id: c.id,
                    score: Score::Similarity(c.similarity),
                })
                .collect(),
            _ => unreachable!("check() refused other methods, reach() other radii"),
        };
        sort_matches(&mut matches);
        Ok(matches)
    }

    /// The score of two sketches of the index's method if it is within `radius` (the measure queries use:
    /// Hamming distance, or the similarity estimated from the signatures).
    pub fn score_within(&self, a: &Sketch, b: &Sketch, radius: Radius) -> Option<Score> {
        match (a, b, self.reach(radius).ok()?) {
            (Sketch::Fingerprint(x), Sketch::Fingerprint(y), Reach::Distance(k)) => {
                let d = neardup_index::hamming(x.bits(), y.bits());
                (d <= k).then_some(Score::Distance(d))
            }
            (Sketch::Signature(x), Sketch::Signature(y), Reach::Similarity(t)) => {
                let s = neardup_index::lsh::similarity(x.values(), y.values());
                (s >= t).then_some(Score::Similarity(s))
            }
            _ => None,
        }
    }

    /// How far a radius reaches in this index: its own k or threshold by default. Refuses a radius of the
    /// other family, a distance above the index's k (its tables could not find every match) and a
    /// similarity below its threshold (its bands would miss most such matches) but 0, which lists every
    /// LSH candidate.
    fn reach(&self, radius: Radius) -> Result<Reach, Error> {
        match (self.kind(), radius) {
            (Kind::Hamming(design), Radius::Default) => Ok(Reach::Distance(design.k)),
            (Kind::Hamming(design), Radius::Distance(k)) if k > design.k => {
                Err(Error::Unsupported {
                    what: format!(
                        "k = {k} is larger than the index's k = {}: its tables cannot find every match",
                        design.k
                    ),
                })
            }
            (Kind::Hamming(_), Radius::Distance(k)) => Ok(Reach::Distance(k)),
            (Kind::Lsh { threshold, .. }, Radius::Default) => Ok(Reach::Similarity(*threshold)),
            // 0 asks for every LSH candidate, whatever its estimate (documented as such).
            (Kind::Lsh { threshold, .. }, Radius::Similarity(t)) if t > 0.0 && t < *threshold => {
                Err(Error::Unsupported {
                    what: format!(
                        "threshold = {t} is below the index's threshold = {threshold}: its LSH bands were \
                         chosen for similarities of {threshold} or more and would miss most matches below it \
                         (0 lists every LSH candidate)"
                    ),
                })
            }
            (Kind::Lsh { .. }, Radius::Similarity(t)) => Ok(Reach::Similarity(t)),
            (Kind::Hamming(_), Radius::Similarity(_)) | (Kind::Lsh { .. }, Radius::Distance(_)) => {
                Err(wrong_family(self.method))
            }
        }
    }

    /// Calls `f` with every entry as (id, sketch), in the store's order (which depends on the index's
    /// history), streaming: nothing is collected. The entries are those this handle sees, as `len`, `get`
    /// and the queries do: a reader's as of its last [`refresh`](Self::refresh) (an index in Redis has no
    /// such snapshot, and is read as it is). Stops at `f`'s first error, which it returns, and at an entry
    /// whose stored bytes are not a sketch of the index's method (a damaged store), naming it. `f` must not
    /// call back into the index.
    pub fn for_each_entry<E: From<Error>>(
        &self,
        mut f: impl FnMut(&str, Sketch) -> Result<(), E>,
    ) -> Result<(), E> {
        // The caller's error, or a damaged entry's, stops the walk and is returned as itself.
        let mut failed = None;
        let mut visit = |id: &str, stored: Result<Stored, Error>| -> bool {
            let sketch = stored.and_then(|stored| {
                self.sketch_of(stored).ok_or_else(|| {
                    self.index_error(format!("the entry of '{id}' is not a {}", self.method))
                })
            });
            match sketch.map_err(E::from).and_then(|sketch| f(id, sketch)) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        };
        let stopped = || "the walk was stopped".to_owned();
        let seen = self.inner.for_each_seen(&mut |id, stored| {
            visit(id, Ok(stored))
                .then_some(())
                .ok_or_else(|| PersistentError::Store(StoreError::Stopped(stopped())))
        });
        let walked = match seen {
            Some(walked) => walked.map_err(|e| self.index_error(e)),
            None => self
                .store()
                .for_each(&mut |id, value| {
                    let stored = self
                        .inner
                        .decode(id, value)
                        .map_err(|e| self.index_error(e));
                    visit(id, stored)
                        .then_some(())
                        .ok_or_else(|| StoreError::Stopped(stopped()))
                })
                .map_err(|e| self.index_error(e)),
        };
        match failed {
            Some(e) => Err(e),
            None => walked.map_err(E::from),
        }
    }

    /// Every entry as (id, sketch), sorted by id (in byte order): the same list for the same entries,
    /// whatever the store and the order they were added in. Holds them all in memory;
    /// [`for_each_entry`](Self::for_each_entry) streams them instead.
    pub fn entries(&self) -> Result<Vec<(String, Sketch)>, Error> {
        let mut entries = Vec::with_capacity(self.len());
        self.for_each_entry(|id, sketch| {
            entries.push((id.to_owned(), sketch));
            Ok::<_, Error>(())
        })?;
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// Entries and memory.
    pub fn stats(&self) -> Stats {
        let memory = match self.inner.memory() {
            Memory::Hamming(h) => h.memory(),
            Memory::Lsh(l) => l.memory(),
        };
        Stats {
            entries: self.len(),
            table_bytes: memory.table_bytes as u64,
            id_bytes: memory.id_bytes as u64,
        }
    }

    /// The summary of this index, kept in `store` with `(file_bytes, log_bytes)` on disk.
    fn summary_in(&self, store: &'static str, (file_bytes, log_bytes): (u64, u64)) -> Summary {
        let stats = self.stats();
        let (design, tables, k, threshold) = match self.kind() {
            Kind::Hamming(design) => (design.to_string(), design.tables(), Some(design.k), None),
            Kind::Lsh { banding, threshold } => (
                banding.to_string(),
                banding.bands as u64,
                None,
                Some(*threshold),
            ),
        };
        Summary {
            entries: stats.entries,
            scheme: self.method.name(),
            kind: self.kind().name(),
            k,
            threshold,
            design,
            tables,
            store,
            file_bytes,
            log_bytes,
            memory_table_bytes: stats.table_bytes,
            memory_id_bytes: stats.id_bytes,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        self.inner.store()
    }

    /// The sequence number of the last batch this index has applied.
    pub fn sequence(&self) -> u64 {
        self.inner.sequence()
    }

    /// Whether the store's segments changed (a merge) since this index took them: until a
    /// [`refresh`](Self::refresh), queries read the old ones (the same entries; their files' space is
    /// freed only once no index maps them).
    pub fn segments_changed(&self) -> bool {
        self.inner.segments_changed()
    }

    /// Catches up with what other writers of the same store committed since this index was opened (or last
    /// refreshed): their batches replayed in order, or everything reloaded when the store's change log no
    /// longer reaches back.
    pub fn refresh(&mut self) -> Result<Refreshed, Error> {
        self.inner.refresh().map_err(|e| self.index_error(e))
    }
}

/// Closest first, then by id.
fn sort_matches(matches: &mut [Match]) {
    matches.sort_by(|a, b| {
        if a.score.closer_than(b.score) {
            std::cmp::Ordering::Less
        } else if b.score.closer_than(a.score) {
            std::cmp::Ordering::Greater
        } else {
            a.id.cmp(&b.id)
        }
    });
}

/// A store's error, for the index at `shown` (its location as messages show it).
fn store_error(shown: &str, e: StoreError) -> Error {
    match e {
        StoreError::Missing(_) => Error::NoIndex {
            location: shown.to_owned(),
        },
        other => Error::Index {
            location: shown.to_owned(),
            reason: other.to_string(),
        },
    }
}

//! # neardup-index: candidates for near-duplicates, in memory and in a store
//!
//! Two kinds of sketch, two kinds of index, laid out alike:
//!
//! | | SimHash fingerprints ([`mod@hamming`]) | MinHash signatures ([`lsh`]) |
//! |---|---|---|
//! | layout choice | [`hamming::plan`]: block-permuted table designs for k, with predicted cost | [`lsh::Banding`]: bands × rows for a Jaccard threshold, presets |
//! | online index | [`hamming::HammingIndex`]: every id within k bits, exact | [`lsh::LshIndex`]: every id sharing a band, with its estimated similarity |
//! | batch | [`hamming::all_pairs`], [`hamming::clusters`] | [`lsh::lsh_pairs`], [`lsh::lsh_clusters`] |
//! | datasketch's semantics | | [`lsh::BandTables`]: `MinHashLSH`'s band tables, exact, for the Python drop-in |
//!
//! Shared by both: one id table (the user's ids in one arena, a map keeping 32 bits of each id's hash, bulk
//! resolution in bucket order), [`union_find`] (deterministic: the smallest index represents its cluster),
//! [`memory`] (the bytes `index stats` reports), and [`hamming()`], the distance (from `neardup-sketch`).
//!
//! ## Persistence: the `Store` seam
//!
//! [`store::Store`] is the only place that does I/O for index state, and it knows nothing of index kinds:
//! settings are a string map (decoded once, by [`store::meta`]), entries are id → bytes, and every committed
//! batch gets a sequence number, with a bounded log that lets a reader catch up
//! ([`Store::changes_since`](store::Store::changes_since)). Backends: [`store::MemoryStore`] and
//! [`store::RedbStore`] (one redb file per index, migrating files of the previous format, refusing damaged
//! ones with a clean error), [`store::SegmentStore`] (mapped segments, the default on disk), and, in the crate
//! `neardup-store-redis`, a Redis store that answers queries itself ([`store::served`], with the buckets of
//! [`buckets`]). All pass the conformance suite `store::conformance` (compiled for this crate's
//! tests, and for other crates' backends behind the `conformance` feature). [`persistent::PersistentIndex`]
//! puts an index of either kind over any store: durable first, visible second, and able to
//! [`refresh`](persistent::PersistentIndex::refresh) from other writers' batches.
//!
//! ```
//! use neardup_index::hamming::{clusters, plan};
//! use neardup_index::persistent::{Edit, PersistentIndex};
//! use neardup_index::store::{Kind, MemoryStore, Meta};
//!
//! // Batch: clusters of fingerprints within k = 3.
//! let design = plan::recommend(3, 1e6);
//! let fps = [0xffff_0000_ffff_0000, 0xffff_0000_ffff_0001, 0x0123_4567_89ab_cdef];
//! assert_eq!(clusters(&fps, &design), vec![vec![0, 1]]);
//!
//! // Online and persistent: the same design over a store (a `RedbStore` for an index on disk).
//! let meta = Meta { scheme: "simhash-doc-v1".into(), kind: Kind::Hamming(design) };
//! let mut index = PersistentIndex::open(MemoryStore::new(meta.to_settings()).unwrap()).unwrap();
//! index.apply(&[Edit::Put("a".into(), fps[0]), Edit::Put("c".into(), fps[2])]).unwrap();
//! let found = index.hamming().unwrap().query(fps[1], 3).unwrap();
//! assert_eq!((found[0].id.as_str(), found[0].distance), ("a", 1));
//! ```
//!
//! This crate knows nothing of text or media.

// `unsafe` in three places: mapping segment files (store::segments::file), the fork handler with its
// lock-free pool pointer (parallel), and the prefetch hints and page mapping of datasketch's band tables
// (lsh::band_tables).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod buckets;
pub mod disk;
pub mod hamming;
mod ids;
pub mod lsh;
pub mod memory;
#[allow(unsafe_code)]
pub mod parallel;
pub mod persistent;
mod radix;
pub mod store;
pub mod union_find;

/// Hamming distance between two 64-bit fingerprints (defined in `neardup-sketch`, beside SimHash).
pub use neardup_sketch::hamming;

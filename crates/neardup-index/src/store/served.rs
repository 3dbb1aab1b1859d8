//! Stores that hold an index's structures themselves and answer its queries: a shared store (Redis) that
//! many processes read and write at once, where no process could keep a copy of the index in memory.
//!
//! Such a store still knows nothing of index kinds. It is given a [`Buckets`] at creation (the index's
//! layout, from [`crate::buckets::buckets_for`]): the bucket of a value in each table, a Hamming index's
//! permuted key or an LSH index's band key. It files every entry under its buckets and, asked for the
//! neighbours of a probe, returns every current entry that shares a bucket with it;
//! [`PersistentIndex`](crate::persistent::PersistentIndex) then measures each (Hamming distance, estimated
//! similarity) as it does for its own tables. Exact recall is the store's promise: an entry stored before the
//! question is among the neighbours, whatever other processes are writing.

use super::StoreError;

/// An index's layout, as a served store sees it: one bucket per table for each value.
pub trait Buckets: Send + Sync + std::fmt::Debug {
    /// How many tables (a Hamming design's tables, an LSH banding's bands).
    fn tables(&self) -> usize;

    /// The significant leading bits of each table's bucket ids (the rest are zero).
    fn bits(&self, table: usize) -> u32;

    /// The bucket of `value` in each table, left-aligned in a `u64` (its top [`bits`](Self::bits) bits), or
    /// `None` for a value that is not an entry of the index (a wrong length).
    fn buckets(&self, value: &[u8]) -> Option<Vec<u64>>;
}

/// A store that answers an index's queries itself (see the module documentation).
pub trait Served {
    /// How many ids are stored.
    fn count(&self) -> Result<u64, StoreError>;

    /// The value stored under an id.
    fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Every stored entry (id, value) that shares at least one table's bucket with `probe`, each once, as it
    /// is now: an entry stored before the call is there; one replaced or removed is there only with its
    /// current value, or not at all.
    fn neighbours(&self, probe: &[u8]) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
}

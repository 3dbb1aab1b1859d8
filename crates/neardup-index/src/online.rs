//! The online index: insert, remove and query by the user's ids, with exact recall within k.
//!
//! Fingerprints live in slots (dense `u32` numbers); ids (URLs, paths, DOIs) map to slots. Each table of the
//! design keeps the slots that were present at its last rebuild as `(permuted fingerprint, slot)` sorted by
//! value, with a directory of the rows' top bits, so a query is one directory lookup and a short search per
//! table, then a scan of the rows that share its key. Slots
//! added since the last rebuild sit in a short pending list that queries scan directly; when it grows past an
//! eighth of the indexed slots (and at least 4,096), the tables are rebuilt, so an insert costs O(log N)
//! amortized. Removal marks the slot dead; rebuilds drop dead slots.
//!
//! This is the in-memory structure. Persistence (a write-ahead log and segments behind a `Store` trait) builds
//! on it and is not part of this version.

use crate::hamming;
use crate::plan::{Design, TableLayout, recommend};
use crate::radix::radix_sort_by_key;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// An id and its distance to the query.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    /// Hamming distance to the query.
    pub distance: u32,
    /// The stored id.
    pub id: String,
}

/// Refusals of the online index.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum IndexError {
    /// A query asked for a larger distance than the tables guarantee.
    #[error(
        "distance {asked} is larger than the index's k = {k}: its tables cannot find every match beyond k"
    )]
    DistanceTooLarge {
        /// The distance asked for.
        asked: u32,
        /// The index's k.
        k: u32,
    },
    /// The index is full.
    #[error("the index holds 2^32 - 1 slots, its maximum")]
    Full,
}

/// An in-memory Hamming index with exact recall for distances up to its k.
///
/// ```
/// use neardup_index::online::HammingIndex;
/// let mut index = HammingIndex::new(3, 1000);
/// index.insert("https://example.org/a", 0xffff_0000_ffff_0000).unwrap();
/// index.insert("https://example.org/b", 0xffff_0000_ffff_0007).unwrap(); // 3 bits away
/// index.insert("https://example.org/c", 0x0123_4567_89ab_cdef).unwrap();
/// let found = index.query(0xffff_0000_ffff_0000, 3).unwrap();
/// let ids: Vec<&str> = found.iter().map(|m| m.id.as_str()).collect();
/// assert_eq!(ids, ["https://example.org/a", "https://example.org/b"]);
/// index.remove("https://example.org/a");
/// assert_eq!(index.query(0xffff_0000_ffff_0000, 3).unwrap().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct HammingIndex {
    k: u32,
    design: Design,
    layouts: Vec<TableLayout>,
    /// Each id once; removed slots hold an empty id until the next rebuild compacts them away.
    ids: Vec<Box<str>>,
    fps: Vec<u64>,
    alive: Vec<bool>,
    live: usize,
    by_id: IdMap,
    tables: Vec<Vec<(u64, u32)>>,
    /// Per table, `dir_bits` top key bits → the first row with that prefix (and one past the end).
    directories: Vec<Vec<u32>>,
    dir_bits: u32,
    /// Slots from here on are not in the tables yet.
    indexed_upto: u32,
}

impl HammingIndex {
    /// An empty index for distances up to `k`, with the planner's design for about `expected` fingerprints.
    pub fn new(k: u32, expected: usize) -> Self {
        let design = recommend(k, expected.max(1) as f64);
        Self::with_design(design)
    }

    /// An empty index with a given design.
    pub fn with_design(design: Design) -> Self {
        let layouts = design.layouts();
        HammingIndex {
            k: design.k,
            tables: vec![Vec::new(); layouts.len()],
            directories: vec![Vec::new(); layouts.len()],
            dir_bits: 0,
            design,
            layouts,
            ids: Vec::new(),
            fps: Vec::new(),
            alive: Vec::new(),
            live: 0,
            by_id: IdMap::default(),
            indexed_upto: 0,
        }
    }

    /// The largest distance a query can ask for.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The table design.
    pub fn design(&self) -> &Design {
        &self.design
    }

    /// How many ids are stored.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no id is stored.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The fingerprint stored for an id.
    pub fn get(&self, id: &str) -> Option<u64> {
        self.by_id.get(&self.ids, id).map(|s| self.fps[s as usize])
    }

    /// Stores `fp` under `id`, replacing what the id had. Two ids with the same fingerprint are two entries.
    pub fn insert(&mut self, id: &str, fp: u64) -> Result<(), IndexError> {
        self.push(id.into(), fp)?;
        let pending = self.fps.len() - self.indexed_upto as usize;
        if pending > (self.indexed_upto as usize / 8).max(4096) {
            self.rebuild();
        }
        Ok(())
    }

    /// Stores many entries at once (a later entry for an id replaces an earlier one) and builds the tables
    /// once: the fast way to load an index.
    pub fn extend<I: IntoIterator<Item = (String, u64)>>(
        &mut self,
        entries: I,
    ) -> Result<(), IndexError> {
        let entries = entries.into_iter();
        let more = entries.size_hint().0;
        self.ids.reserve(more);
        self.fps.reserve(more);
        self.alive.reserve(more);
        let hasher = &self.by_id.hasher;
        self.by_id
            .table
            .reserve(more, |&s| hasher.hash_one(&*self.ids[s as usize]));
        for (id, fp) in entries {
            self.push(id.into_boxed_str(), fp)?;
        }
        self.rebuild();
        Ok(())
    }

    /// Appends a slot for an id that is not stored.
    /// Gives `id` a new slot holding `fp`; a slot the id had before is retired. One hash probe either way.
    fn push(&mut self, id: Box<str>, fp: u64) -> Result<(), IndexError> {
        let slot = u32::try_from(self.fps.len())
            .ok()
            .filter(|&s| s < u32::MAX)
            .ok_or(IndexError::Full)?;
        if let Some(old) = self.by_id.upsert(&self.ids, &id, slot) {
            self.alive[old as usize] = false;
            self.ids[old as usize] = Box::default();
            self.live -= 1;
        }
        self.ids.push(id);
        self.fps.push(fp);
        self.alive.push(true);
        self.live += 1;
        Ok(())
    }

    /// Removes an id; returns whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        match self.by_id.remove(&self.ids, id) {
            Some(slot) => {
                self.alive[slot as usize] = false;
                self.ids[slot as usize] = Box::default();
                self.live -= 1;
                true
            }
            None => false,
        }
    }

    /// Every stored id within distance `k` (≤ the index's k) of `fp`, each once, nearest first, then by id.
    pub fn query(&self, fp: u64, k: u32) -> Result<Vec<Match>, IndexError> {
        if k > self.k {
            return Err(IndexError::DistanceTooLarge {
                asked: k,
                k: self.k,
            });
        }
        let mut slots: Vec<(u32, u32)> = Vec::new();
        for ((layout, table), dir) in self.layouts.iter().zip(&self.tables).zip(&self.directories) {
            let q = layout.permute(fp);
            let shift = 64 - layout.key_bits;
            let key = q >> shift;
            // The directory narrows the search to the rows that share the key's top bits.
            let (lo, hi) = if self.dir_bits == 0 {
                (0, table.len())
            } else {
                let bucket = (q >> (64 - self.dir_bits)) as usize;
                (dir[bucket] as usize, dir[bucket + 1] as usize)
            };
            let rows = &table[lo..hi];
            let first = rows.partition_point(|r| r.0 >> shift < key);
            for &(value, slot) in rows[first..].iter().take_while(|r| r.0 >> shift == key) {
                let d = hamming(value, q);
                if d <= k && self.alive[slot as usize] {
                    slots.push((slot, d));
                }
            }
        }
        for slot in self.indexed_upto as usize..self.fps.len() {
            let d = hamming(self.fps[slot], fp);
            if d <= k && self.alive[slot] {
                slots.push((slot as u32, d));
            }
        }
        slots.sort_unstable();
        slots.dedup();
        let mut out: Vec<Match> = slots
            .into_iter()
            .map(|(s, distance)| Match {
                distance,
                id: self.ids[s as usize].to_string(),
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Rebuilds the tables from the live slots, compacting away removed ones.
    pub fn rebuild(&mut self) {
        if self.live < self.fps.len() {
            let mut ids = Vec::with_capacity(self.live);
            let mut fps = Vec::with_capacity(self.live);
            for slot in 0..self.fps.len() {
                if self.alive[slot] {
                    ids.push(std::mem::take(&mut self.ids[slot]));
                    fps.push(self.fps[slot]);
                }
            }
            self.by_id = IdMap::default();
            for slot in 0..ids.len() as u32 {
                self.by_id.insert(&ids, slot);
            }
            self.alive = vec![true; ids.len()];
            self.ids = ids;
            self.fps = fps;
        }
        // A directory of about one bucket per row, capped by the shortest key and at 2^26 buckets.
        let min_key = self.layouts.iter().map(|l| l.key_bits).min().unwrap_or(0);
        let n = self.fps.len().max(1);
        self.dir_bits = (usize::BITS - 1 - n.leading_zeros()).min(min_key).min(26);
        let mut scratch = Vec::new();
        for ((layout, table), dir) in self
            .layouts
            .iter()
            .zip(self.tables.iter_mut())
            .zip(self.directories.iter_mut())
        {
            table.clear();
            table.extend(
                self.fps
                    .iter()
                    .enumerate()
                    .map(|(s, &fp)| (layout.permute(fp), s as u32)),
            );
            radix_sort_by_key(table, &mut scratch, 0, 64);
            dir.clear();
            if self.dir_bits > 0 {
                // The rows are sorted: one sequential sweep writes each bucket's first row.
                let shift = 64 - self.dir_bits;
                let buckets = 1usize << self.dir_bits;
                dir.reserve(buckets + 1);
                for (row, &(value, _)) in table.iter().enumerate() {
                    let bucket = (value >> shift) as usize;
                    while dir.len() <= bucket {
                        dir.push(row as u32);
                    }
                }
                dir.resize(buckets + 1, table.len() as u32);
            }
        }
        self.indexed_upto = self.fps.len() as u32;
    }
}

/// Ids to slots. The table holds only slot numbers; the ids themselves live once, in `HammingIndex::ids`.
#[derive(Clone, Debug, Default)]
struct IdMap {
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl IdMap {
    fn get(&self, ids: &[Box<str>], id: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(id);
        self.table.find(hash, |&s| &*ids[s as usize] == id).copied()
    }

    /// Points `id` at `slot` (a slot not yet in `ids`), returning the slot it pointed at before, if any.
    fn upsert(&mut self, ids: &[Box<str>], id: &str, slot: u32) -> Option<u32> {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(id);
        match self.table.entry(
            hash,
            |&s| &*ids[s as usize] == id,
            |&s| hasher.hash_one(&*ids[s as usize]),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                Some(std::mem::replace(e.get_mut(), slot))
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(slot);
                None
            }
        }
    }

    /// Adds `slot`, whose id (already in `ids`) is not in the map.
    fn insert(&mut self, ids: &[Box<str>], slot: u32) {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(&*ids[slot as usize]);
        self.table
            .insert_unique(hash, slot, |&s| hasher.hash_one(&*ids[s as usize]));
    }

    fn remove(&mut self, ids: &[Box<str>], id: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(id);
        self.table
            .find_entry(hash, |&s| &*ids[s as usize] == id)
            .ok()
            .map(|e| e.remove().0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, u64),
        Remove(u8),
        Query(u64, u32),
        Rebuild,
        Extend(Vec<(u8, u64)>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Fingerprints near a few centres, so that queries find things; ids from a small set, so that
        // replacement and removal happen.
        let near = (0usize..4, any::<u64>(), 0u32..6).prop_map(|(c, r, flips)| {
            let centres = [0u64, u64::MAX, 0x0f0f_0f0f_0f0f_0f0f, 0x1234_5678_9abc_def0];
            (0..flips).fold(centres[c], |x, i| {
                x ^ (1u64 << (r.rotate_left(i * 11) % 64))
            })
        });
        prop_oneof![
            4 => (any::<u8>(), near.clone()).prop_map(|(id, fp)| Op::Insert(id % 40, fp)),
            1 => any::<u8>().prop_map(|id| Op::Remove(id % 40)),
            3 => (near, 0u32..4).prop_map(|(fp, k)| Op::Query(fp, k)),
            1 => Just(Op::Rebuild),
            1 => proptest::collection::vec((any::<u8>(), any::<u64>()), 0..20).prop_map(Op::Extend),
        ]
    }

    proptest! {
        /// Every query equals a brute-force scan of a plain map, whatever the history of inserts, removals and
        /// rebuilds: recall is exactly 1 and there are no false matches.
        #[test]
        fn queries_equal_brute_force(ops in proptest::collection::vec(op(), 1..200)) {
            let mut index = HammingIndex::with_design(Design::new(3, vec![6]).unwrap());
            let mut model: std::collections::BTreeMap<String, u64> = Default::default();
            for op in ops {
                match op {
                    Op::Insert(id, fp) => {
                        index.insert(&format!("doc{id}"), fp).unwrap();
                        model.insert(format!("doc{id}"), fp);
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(index.remove(&format!("doc{id}")), model.remove(&format!("doc{id}")).is_some());
                    }
                    Op::Query(fp, k) => {
                        let mut expected: Vec<Match> = model
                            .iter()
                            .filter(|(_, v)| hamming(**v, fp) <= k)
                            .map(|(id, v)| Match { distance: hamming(*v, fp), id: id.clone() })
                            .collect();
                        expected.sort();
                        prop_assert_eq!(index.query(fp, k).unwrap(), expected);
                    }
                    Op::Rebuild => index.rebuild(),
                    Op::Extend(entries) => {
                        let entries: Vec<(String, u64)> = entries.into_iter().map(|(id, fp)| (format!("doc{}", id % 40), fp)).collect();
                        for (id, fp) in &entries {
                            model.insert(id.clone(), *fp);
                        }
                        index.extend(entries).unwrap();
                    }
                }
                prop_assert_eq!(index.len(), model.len());
            }
        }
    }

    #[test]
    fn refuses_distances_beyond_k() {
        let index = HammingIndex::new(3, 10);
        assert_eq!(
            index.query(0, 4).unwrap_err(),
            IndexError::DistanceTooLarge { asked: 4, k: 3 }
        );
    }

    #[test]
    fn many_inserts_trigger_rebuilds_and_stay_exact() {
        let mut index = HammingIndex::new(3, 100_000);
        let mut x = 1u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            index.insert(&i.to_string(), x).unwrap();
        }
        let probe = index.get("12345").unwrap();
        let found = index.query(probe ^ 0b101, 3).unwrap();
        assert!(found.iter().any(|m| m.id == "12345" && m.distance == 2));
    }
}

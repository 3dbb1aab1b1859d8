//! The online index: insert, remove and query by the user's ids, with exact recall within k.
//!
//! Fingerprints live in slots (dense `u32` numbers); ids (URLs, paths, DOIs) map to slots. Each table of the
//! design orders the slots that were present at its last rebuild by the table's permuted fingerprint, so that
//! a query is one directory lookup and a short search per table, then a distance check of the rows that share
//! its key. Slots added since the last rebuild sit in a short pending list that queries scan directly; when it
//! grows past an eighth of the indexed slots (and at least 4,096), the tables are rebuilt, so an insert costs
//! O(log N) amortized. Removal marks the slot dead; rebuilds drop dead slots.
//!
//! # Compact tables
//!
//! A table row is not a copy of the permuted fingerprint (8 bytes) and a slot (4 bytes). Instead:
//!
//! * **The fingerprints themselves are table 0.** A rebuild renumbers the slots in table 0's order, so table 0
//!   needs no slot column: row i is slot i, and `fps` (8 bytes per fingerprint) is stored once, for all tables.
//! * **A directory** per table maps the top `dir_bits` bits of the permuted value (about log2(N / 8), never
//!   more than the shortest key) to the table's first row with that prefix: 4 bytes per 8 rows.
//! * **A word per row** in every other table: the row's slot in the low bits (as many as the largest slot
//!   needs: 24 at 10^7, 27 at 10^8) and, in the bits left, the *fragment*: the permuted value's bits right
//!   after the directory bits. Within a directory bucket the key comparison reads only these words (sorted by
//!   fragment); only rows whose fragment matches the query's key fetch their fingerprint, by slot, for the
//!   distance. One read gives both, where separate slot and fragment columns took two. Table 0 needs no
//!   column: its fragments are read from the fingerprints, which are in its order. When a key is longer than
//!   directory plus fragment bits (fragments shrink as slots grow), the rows whose fragments match are
//!   narrowed by comparing the whole permuted value, so recall stays exact.
//! * **Nested tables** hold a `u16` word per row instead. Tables whose keys start with the same bits (in 5
//!   blocks choose 2, the four keyed by block 0 then another) hold the rows of each value of those bits in one
//!   range each, so a later table names a row by its position within that range of an earlier table (11 bits
//!   at 10^7, 14 at 10^8), not by its slot; the range's first row comes from a small table of starts (2^13
//!   entries), once per probe. Six of the ten tables nest; a table whose ranges outgrow 16 bits (skewed data,
//!   or more than about 2 × 10^8 fingerprints) keeps 4-byte words.
//!
//! With 10 tables that is 8 + 3 × 4 + 6 × 2 + 10 × 0.5 ≈ 37 bytes per fingerprint (48 before nested tables),
//! plus a liveness bit, against 160 for `(u64, u32)` rows. Ids are separate, in the id table both index kinds share (`crate::ids`): one byte
//! buffer in arrival order with an end offset per id (no allocation per id), a slot → id array that rebuilds
//! permute (cheaper than moving the bytes), and a hash table of slot numbers with 32 bits of each id's hash
//! (so that growing it never rereads the ids). A rebuild squeezes the ids of removed entries out of the buffer.
//! This is Manku et al.'s §3.1.3 idea (store only what the sorted order does not already say) in a form that
//! keeps every row addressable, so no block has to be decompressed to answer a query.
//!
//! Rebuilds sort each table with a radix sort of packed `(top 32 permuted bits, slot)` words and build the
//! tables other than table 0 in parallel (rayon); each table's content depends only on the fingerprints, never
//! on the thread count.
//!
//! Bulk loads ([`HammingIndex::extend`], [`HammingIndex::loader`]) store the entries first and then resolve
//! their ids in one batch, inserting into the id map in the order of its buckets: near-sequential writes
//! instead of one cache miss per id.
//!
//! This is the in-memory structure; [`crate::persistent`] makes it persistent.

use super::plan::{Design, TableLayout, recommend};
use super::tables::{self, Table};
use crate::hamming;
use crate::ids::IdTable;
use crate::memory::MemoryStats;

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
/// use neardup_index::hamming::HammingIndex;
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
    /// The id of every slot; removed slots keep their bytes until the next rebuild.
    ids: IdTable,
    /// The fingerprint of every slot; slots below `indexed_upto` are in table 0's order.
    fps: Vec<u64>,
    /// One bit per slot.
    alive: Vec<u64>,
    live: usize,
    tables: Vec<Table>,
    /// Directory bits, the same for every table.
    dir_bits: u32,
    /// Slots from here on are not in the tables yet.
    indexed_upto: u32,
    /// The pending slots by block, so that a query need not scan them all.
    pending: PendingBlocks,
}

/// The slots inserted since the last rebuild, found by pigeonhole: the 64 bits are cut into k + 1 blocks, and
/// two fingerprints within k bits agree on at least one block whole. Each block maps its value to the pending
/// slots that have it, so a query looks up k + 1 short lists instead of scanning every pending slot (up to an
/// eighth of the index: 1.25 million slots at 10^7, a millisecond a query).
#[derive(Clone, Debug, Default)]
struct PendingBlocks {
    /// (shift, mask) of each block.
    blocks: Vec<(u32, u64)>,
    /// Per block: block value → pending slots.
    slots: Vec<hashbrown::HashMap<u64, Vec<u32>>>,
}

impl PendingBlocks {
    fn new(k: u32) -> Self {
        let count = k + 1;
        let mut blocks = Vec::with_capacity(count as usize);
        let mut start = 0;
        for b in 0..count {
            let width = 64 / count + u32::from(b < 64 % count);
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            blocks.push((start, mask));
            start += width;
        }
        PendingBlocks {
            slots: vec![hashbrown::HashMap::new(); blocks.len()],
            blocks,
        }
    }

    fn insert(&mut self, fp: u64, slot: u32) {
        for (&(shift, mask), map) in self.blocks.iter().zip(&mut self.slots) {
            map.entry((fp >> shift) & mask).or_default().push(slot);
        }
    }

    /// Every pending slot that agrees with `fp` on a block (each may come more than once).
    fn candidates(&self, fp: u64) -> impl Iterator<Item = u32> + '_ {
        self.blocks
            .iter()
            .zip(&self.slots)
            .filter_map(move |(&(shift, mask), map)| map.get(&((fp >> shift) & mask)))
            .flatten()
            .copied()
    }

    fn clear(&mut self) {
        for map in &mut self.slots {
            *map = hashbrown::HashMap::new();
        }
    }

    fn bytes(&self) -> usize {
        self.slots
            .iter()
            .map(|m| m.capacity() * 40 + m.values().map(|v| v.capacity() * 4).sum::<usize>())
            .sum()
    }
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
        let pending = PendingBlocks::new(design.k);
        let mut index = HammingIndex {
            k: design.k,
            tables: vec![Table::default(); layouts.len()],
            dir_bits: 0,
            design,
            layouts,
            ids: IdTable::default(),
            fps: Vec::new(),
            alive: Vec::new(),
            live: 0,
            indexed_upto: 0,
            pending,
        };
        index.rebuild();
        index
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

    /// The memory the index holds, tables and ids apart.
    pub fn memory(&self) -> MemoryStats {
        let tables: usize = self.tables.iter().map(Table::bytes).sum();
        MemoryStats {
            entries: self.live,
            tables: self.tables.len(),
            table_bytes: tables
                + self.fps.capacity() * 8
                + self.alive.capacity() * 8
                + self.pending.bytes(),
            id_bytes: self.ids.memory_bytes(),
        }
    }

    /// Calls `f` with every stored (id, fingerprint), in slot order, until its first error.
    pub fn try_for_each<E>(&self, mut f: impl FnMut(&str, u64) -> Result<(), E>) -> Result<(), E> {
        let mut alive = self
            .fps
            .iter()
            .enumerate()
            .filter(|&(slot, _)| self.is_alive(slot));
        alive.try_for_each(|(slot, &fp)| f(self.ids.id(slot as u32), fp))
    }

    /// The fingerprint stored for an id.
    pub fn get(&self, id: &str) -> Option<u64> {
        self.ids.get(id).map(|s| self.fps[s as usize])
    }

    #[inline(always)]
    fn is_alive(&self, slot: usize) -> bool {
        self.alive[slot / 64] >> (slot % 64) & 1 == 1
    }

    fn kill(&mut self, slot: usize) {
        self.alive[slot / 64] &= !(1u64 << (slot % 64));
        self.live -= 1;
    }

    /// Stores `fp` under `id`, replacing what the id had. Two ids with the same fingerprint are two entries.
    pub fn insert(&mut self, id: &str, fp: u64) -> Result<(), IndexError> {
        self.push(id, fp)?;
        let pending = self.fps.len() - self.indexed_upto as usize;
        if pending > (self.indexed_upto as usize / 8).max(4096) {
            self.rebuild();
        }
        Ok(())
    }

    /// Stores many entries at once (a later entry for an id replaces an earlier one) and builds the tables
    /// once: the fast way to load an index. The same as pushing them through a [`loader`](Self::loader).
    pub fn extend<S: AsRef<str>, I: IntoIterator<Item = (S, u64)>>(
        &mut self,
        entries: I,
    ) -> Result<(), IndexError> {
        let entries = entries.into_iter();
        let mut loader = self.loader();
        loader.reserve(entries.size_hint().0);
        for (id, fp) in entries {
            loader.push(id.as_ref(), fp)?;
        }
        loader.finish();
        Ok(())
    }

    /// A bulk loader: entries pushed into it are stored at once, their ids are resolved (a later entry for an
    /// id replaces an earlier one, and one stored before) in one batch, and the tables are rebuilt once, when
    /// it is finished or dropped. For loading from a callback, where [`extend`](Self::extend) does not fit.
    ///
    /// ```
    /// use neardup_index::hamming::HammingIndex;
    /// let mut index = HammingIndex::new(3, 1000);
    /// let mut loader = index.loader();
    /// loader.push("a", 0b1011).unwrap();
    /// loader.push("b", 0b1111).unwrap();
    /// loader.push("a", 0b0011).unwrap(); // replaces the first "a"
    /// loader.finish();
    /// assert_eq!((index.len(), index.get("a")), (2, Some(0b0011)));
    /// ```
    pub fn loader(&mut self) -> Loader<'_> {
        let from = self.fps.len();
        Loader { index: self, from }
    }

    /// Stores `fp` under `id` like [`insert`](Self::insert), but never rebuilds the tables; until a
    /// [`rebuild`](Self::rebuild), queries find the entry by scanning the pending ones. A [`loader`](Self::loader)
    /// is faster for many entries: it resolves their ids in one batch.
    pub fn insert_without_rebuild(&mut self, id: &str, fp: u64) -> Result<(), IndexError> {
        self.push(id, fp)
    }

    /// Gives `id` a new slot holding `fp`; a slot the id had before is retired. One hash probe either way.
    fn push(&mut self, id: &str, fp: u64) -> Result<(), IndexError> {
        let slot = self.next_slot()?;
        let (_, old) = self.ids.assign(id);
        self.append_slot(fp);
        self.pending.insert(fp, slot);
        if let Some(old) = old {
            self.kill(old as usize);
        }
        Ok(())
    }

    fn next_slot(&self) -> Result<u32, IndexError> {
        u32::try_from(self.fps.len())
            .ok()
            .filter(|&s| s < u32::MAX)
            .ok_or(IndexError::Full)
    }

    /// Stores a slot, live, without touching the id map.
    fn append(&mut self, id: &str, fp: u64) {
        self.ids.push(id);
        self.append_slot(fp);
    }

    /// The fingerprint and liveness of the slot whose id was just given.
    fn append_slot(&mut self, fp: u64) {
        let slot = self.fps.len();
        self.fps.push(fp);
        if slot.is_multiple_of(64) {
            self.alive.push(0);
        }
        self.alive[slot / 64] |= 1 << (slot % 64);
        self.live += 1;
    }

    /// Puts the ids of slots `from..` into the id map in one batch (see [`IdTable::map_from`]), a later slot
    /// replacing an earlier one with the same id.
    fn map_from(&mut self, from: usize) {
        let (alive, live) = (&mut self.alive, &mut self.live);
        self.ids.map_from(from, |old| {
            let old = old as usize;
            alive[old / 64] &= !(1u64 << (old % 64));
            *live -= 1;
        });
    }

    /// Removes an id; returns whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        match self.ids.remove(id) {
            Some(slot) => {
                self.kill(slot as usize);
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
        tables::candidates(
            &self.layouts,
            |t| tables::view(&self.tables, &self.layouts, t),
            self.dir_bits,
            &self.fps,
            fp,
            k,
            &mut slots,
        );
        slots.retain(|&(slot, _)| self.is_alive(slot as usize));
        for slot in self.pending.candidates(fp) {
            let d = hamming(self.fps[slot as usize], fp);
            if d <= k && self.is_alive(slot as usize) {
                slots.push((slot, d));
            }
        }
        slots.sort_unstable();
        slots.dedup();
        let mut out: Vec<Match> = slots
            .into_iter()
            .map(|(s, distance)| Match {
                distance,
                id: self.ids.id(s).to_owned(),
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Rebuilds the tables from the live slots, renumbering the slots in table 0's order and compacting away
    /// removed ones.
    pub fn rebuild(&mut self) {
        // The old tables go first: they would double the memory at the peak of the build.
        for table in &mut self.tables {
            *table = Table::default();
        }
        let live_slots: Vec<u32> = (0..self.fps.len() as u32)
            .filter(|&s| self.is_alive(s as usize))
            .collect();
        let n = live_slots.len();
        // A directory of about one bucket per 8 rows, capped by the shortest key.
        self.dir_bits = tables::dir_bits_for(n, &self.layouts);
        let dir_bits = self.dir_bits;
        let (order, first) =
            tables::build_first(&self.layouts[0], &self.fps, &live_slots, dir_bits);
        drop(live_slots);
        // New slot i is old slot `order[i]`.
        self.fps = order.iter().map(|&o| self.fps[o as usize]).collect();
        self.tables[0] = first;
        let (fps, layouts, first_dir) = (&self.fps, &self.layouts, &self.tables[0].dir);
        let ids = &mut self.ids;
        // The other tables (in parallel) and the ids (beside them) only need the renumbered fingerprints.
        let (others, ()) = crate::parallel::install(|| {
            rayon::join(
                || tables::build_others(layouts, fps, dir_bits, first_dir),
                || ids.renumber(&order),
            )
        });
        for (t, table) in others.into_iter().enumerate() {
            self.tables[t + 1] = table;
        }
        self.alive = vec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            self.alive[n / 64] = (1u64 << (n % 64)) - 1;
        }
        self.live = n;
        self.indexed_upto = n as u32;
        self.pending.clear();
    }
}

/// A bulk load in progress; see [`HammingIndex::loader`]. Finishing it (or dropping it, on an error path)
/// resolves the ids and rebuilds the tables.
pub struct Loader<'a> {
    index: &'a mut HammingIndex,
    from: usize,
}

impl Loader<'_> {
    /// Makes room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        let index = &mut *self.index;
        index.ids.reserve(additional, 0);
        index.fps.reserve(additional);
        index.alive.reserve(additional / 64 + 1);
    }

    /// Stores `fp` under `id`; until the load is finished, neither is visible.
    pub fn push(&mut self, id: &str, fp: u64) -> Result<(), IndexError> {
        self.index.next_slot()?;
        self.index.append(id, fp);
        Ok(())
    }

    /// Resolves the ids and rebuilds the tables.
    pub fn finish(self) {}
}

impl Drop for Loader<'_> {
    fn drop(&mut self) {
        self.index.map_from(self.from);
        self.index.rebuild();
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

    proptest! {
        /// Pending slots (inserted since the last rebuild) are found through their blocks for every k the
        /// planner allows, exactly as a scan finds them.
        #[test]
        fn pending_slots_are_found_for_every_k(
            k in 0u32..=7,
            base in any::<u64>(),
            flips in proptest::collection::vec(proptest::collection::vec(0u32..64, 0..9), 1..60),
        ) {
            let mut index = HammingIndex::new(k, 1000);
            let fps: Vec<u64> = flips
                .iter()
                .map(|bits| bits.iter().fold(base, |x, &b| x ^ (1u64 << b)))
                .collect();
            for (i, &fp) in fps.iter().enumerate() {
                index.insert(&format!("p{i}"), fp).unwrap();
            }
            for q in 0..=k {
                let found: Vec<String> = index.query(base, q).unwrap().into_iter().map(|m| m.id).collect();
                let mut expected: Vec<(u32, String)> = fps
                    .iter()
                    .enumerate()
                    .filter(|(_, fp)| hamming(**fp, base) <= q)
                    .map(|(i, fp)| (hamming(*fp, base), format!("p{i}")))
                    .collect();
                expected.sort();
                prop_assert_eq!(found, expected.into_iter().map(|(_, id)| id).collect::<Vec<_>>());
            }
        }
    }

    /// Clustered fingerprints (a few centres, points a few bits away, exact duplicates) or uniform ones.
    fn fingerprints(max: usize) -> impl Strategy<Value = Vec<u64>> {
        let clustered = (
            proptest::collection::vec(any::<u64>(), 1..8),
            proptest::collection::vec((any::<usize>(), any::<u64>(), 0u32..9), 0..max),
        )
            .prop_map(|(centres, points)| {
                points
                    .into_iter()
                    .map(|(c, noise, flips)| {
                        (0..flips).fold(centres[c % centres.len()], |x, i| {
                            x ^ 1u64 << (noise.rotate_left(i * 7) % 64)
                        })
                    })
                    .collect()
            });
        prop_oneof![clustered, proptest::collection::vec(any::<u64>(), 0..max)]
    }

    /// Designs whose keys are shorter than, equal to, and longer than directory plus fragment bits, and longer
    /// than the 32 bits the table builds pack (k = 0 and 1: 64- and 32-bit keys).
    fn designs() -> impl Strategy<Value = Design> {
        prop_oneof![
            Just(Design::new(3, vec![4]).unwrap()),
            Just(Design::new(3, vec![5]).unwrap()),
            Just(Design::new(3, vec![6]).unwrap()),
            Just(Design::new(3, vec![4, 4]).unwrap()),
            Just(Design::new(0, vec![1]).unwrap()),
            Just(Design::new(1, vec![2]).unwrap()),
            Just(crate::hamming::plan::recommend(7, 1e6)),
        ]
    }

    fn brute(model: &[(String, u64)], fp: u64, k: u32) -> Vec<Match> {
        let mut expected: Vec<Match> = model
            .iter()
            .filter(|(_, v)| hamming(*v, fp) <= k)
            .map(|(id, v)| Match {
                distance: hamming(*v, fp),
                id: id.clone(),
            })
            .collect();
        expected.sort();
        expected
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Thousands of entries, so that directories have up to 2^8 buckets and fragments matter, over designs
        /// with every key length; queries near stored values and at random equal brute force, before and after
        /// inserts that stay pending and removals.
        #[test]
        fn bulk_loaded_queries_equal_brute_force(
            fps in fingerprints(2500),
            design in designs(),
            probes in proptest::collection::vec((any::<usize>(), any::<u64>(), 0u32..5), 1..40),
            removals in proptest::collection::vec(any::<usize>(), 0..20),
        ) {
            let k = design.k;
            let mut index = HammingIndex::with_design(design);
            let mut model: Vec<(String, u64)> =
                fps.iter().enumerate().map(|(i, &fp)| (format!("id{i}"), fp)).collect();
            index.extend(model.iter().map(|(id, fp)| (id.as_str(), *fp))).unwrap();
            let check = |index: &HammingIndex, model: &[(String, u64)]| -> Result<(), TestCaseError> {
                for &(at, noise, flips) in &probes {
                    let q = match model.get(at % model.len().max(1)) {
                        Some(&(_, fp)) if noise % 4 != 0 => {
                            (0..flips).fold(fp, |x, i| x ^ 1u64 << (noise.rotate_left(i * 5) % 64))
                        }
                        _ => noise,
                    };
                    for kq in [0, k / 2, k] {
                        prop_assert_eq!(index.query(q, kq).unwrap(), brute(model, q, kq));
                    }
                }
                Ok(())
            };
            check(&index, &model)?;
            // A few inserts stay pending (below the rebuild threshold); removals mark slots dead.
            for (i, &(at, noise, _)) in probes.iter().enumerate().take(10) {
                let fp = model.get(at % model.len().max(1)).map_or(noise, |m| m.1 ^ 1);
                index.insert(&format!("new{i}"), fp).unwrap();
                model.push((format!("new{i}"), fp));
            }
            for r in removals {
                if model.is_empty() {
                    break;
                }
                let (id, _) = model.swap_remove(r % model.len());
                prop_assert!(index.remove(&id));
            }
            prop_assert_eq!(index.len(), model.len());
            check(&index, &model)?;
            index.rebuild();
            check(&index, &model)?;
        }
    }

    #[test]
    fn keys_longer_than_packed_bits_stay_exact() {
        // k = 0: one table whose key is all 64 bits. Values equal in their top 32 bits and in their directory
        // and fragment bits differ only in the low bits: only the whole-key comparison tells them apart.
        let mut index = HammingIndex::with_design(Design::new(0, vec![1]).unwrap());
        let base = 0xabcd_ef01_0000_0000_u64;
        let entries: Vec<(String, u64)> = (0..4000u64)
            .map(|i| (format!("e{i}"), base | ((i * 7919) % 4096))) // distinct: 7919 is odd
            .collect();
        index.extend(entries.clone()).unwrap();
        for (id, fp) in entries.iter().step_by(97) {
            let found = index.query(*fp, 0).unwrap();
            assert_eq!(
                found,
                vec![Match {
                    distance: 0,
                    id: id.clone()
                }]
            );
        }
        assert_eq!(index.query(base | 1 << 20, 0).unwrap(), vec![]);
    }

    #[test]
    fn skewed_keys_share_buckets_and_stay_exact() {
        // Every fingerprint shares its top 40 bits: all rows of a table fall into one directory bucket.
        let design = Design::new(3, vec![5]).unwrap();
        let mut index = HammingIndex::with_design(design);
        let mut model = Vec::new();
        let mut x = 7u64;
        for i in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let fp = 0x5555_5555_5500_0000 | (x & 0xff_ffff);
            model.push((format!("s{i}"), fp));
        }
        index.extend(model.clone()).unwrap();
        for (_, fp) in model.iter().step_by(50) {
            for q in [*fp, fp ^ 0b1011, fp ^ (1 << 63)] {
                assert_eq!(index.query(q, 3).unwrap(), brute(&model, q, 3));
            }
        }
    }

    #[test]
    fn tables_do_not_depend_on_thread_count() {
        let mut x = 99u64;
        let entries: Vec<(String, u64)> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (format!("t{i}"), x & 0xffff_0000_ffff_ffff)
            })
            .collect();
        let build = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut index = HammingIndex::with_design(Design::new(3, vec![5]).unwrap());
                index.extend(entries.clone()).unwrap();
                index
            })
        };
        let (one, three) = (build(1), build(3));
        assert_eq!(one.fps, three.fps);
        for (a, b) in one.tables.iter().zip(&three.tables) {
            assert_eq!(a, b);
        }
        for (id, _) in entries.iter().step_by(1000) {
            assert_eq!(one.get(id), three.get(id));
        }
    }

    #[test]
    fn ten_tables_take_under_40_bytes_per_fingerprint() {
        let mut index = HammingIndex::with_design(Design::new(3, vec![5]).unwrap());
        let mut x = 5u64;
        index
            .extend((0..200_000).map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (format!("https://example.org/{i}"), x)
            }))
            .unwrap();
        let m = index.memory();
        assert_eq!((m.entries, m.tables), (200_000, 10));
        // 8 + 3 × 4 + 6 × 2 for the fingerprints and rows (six tables nest), the directories and range starts.
        assert!(m.table_bytes_per_entry() <= 40.0, "{m:?}");
        // The ids: their text, an 8-byte end offset each, and the hash table (9 bytes a bucket, at most two
        // buckets per entry).
        let text: usize = (0..200_000)
            .map(|i| format!("https://example.org/{i}").len())
            .sum();
        assert!(m.id_bytes <= text + 200_000 * (8 + 18) + 4096, "{m:?}");
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

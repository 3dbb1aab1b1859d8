//! The online LSH index: insert, remove and query MinHash signatures by the user's ids.
//!
//! Each band is an open-addressing table from the band's key (a 64-bit hash of its values) to the newest
//! slot with that key; older slots with the same key are chained through a per-band `next` array. A cell is
//! 8 bytes (the key's top 32 bits as a tag, and the slot) and sits at the tag's low bits, so an insert or a
//! lookup is about one cache miss per band, a query issues all bands' misses before it waits for any, and
//! the table grows without reading a signature.
//! Queries check a candidate's band values before they report it, so a tag collision (2^-32) costs a
//! comparison, never a wrong answer. Removal retires the slot (queries skip it); when retired slots
//! outnumber live ones the tables are rebuilt without them.

use super::Banding;
use crate::ids::IdTable;
use crate::memory::MemoryStats;
use crate::radix::radix_sort_by_key;
use rayon::prelude::*;

const END: u32 = u32::MAX;

/// A candidate found by a query: an id and its estimated Jaccard similarity to the query (the fraction of
/// signature values that agree).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The stored id.
    pub id: String,
    /// Estimated Jaccard similarity, 0 to 1.
    pub similarity: f64,
}

/// Refusals of the LSH index.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum LshError {
    /// A signature of the wrong length.
    #[error("a signature has {got} values, but this index holds signatures of {expected}")]
    Length {
        /// Values the index expects.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// The index is full.
    #[error("the index holds 2^32 - 1 slots, its maximum")]
    Full,
}

/// One band's table: open addressing with linear probing, at most half full.
#[derive(Clone, Debug, Default)]
struct BandTable {
    /// `tag << 32 | newest slot`, or `EMPTY`.
    cells: Vec<u64>,
    used: usize,
    /// Per slot: the next older slot in its chain, or `END`.
    next: Vec<u32>,
}

const EMPTY: u64 = u64::MAX;

impl BandTable {
    #[inline]
    fn home(&self, tag: u64) -> usize {
        tag as usize & (self.cells.len() - 1)
    }

    /// The newest slot whose key has `key`'s tag, starting the probe at `home`.
    #[inline]
    fn head(&self, key: u64) -> u32 {
        if self.cells.is_empty() {
            return END;
        }
        let tag = key >> 32;
        let mask = self.cells.len() - 1;
        let mut i = self.home(tag);
        loop {
            let c = self.cells[i];
            if c == EMPTY {
                return END;
            }
            if c >> 32 == tag {
                return c as u32;
            }
            i = (i + 1) & mask;
        }
    }

    /// Makes room for `more` keys.
    fn reserve(&mut self, more: usize) {
        while (self.used + more) * 2 > self.cells.len() {
            self.grow();
        }
    }

    /// Makes `slot` the head of `key`'s chain; `first` is the key's home cell, already read. Slots may come
    /// in any order across keys, but in increasing order within a key.
    #[inline]
    fn push_at(&mut self, key: u64, first: u64, slot: u32) {
        let tag = key >> 32;
        let mask = self.cells.len() - 1;
        let mut i = self.home(tag);
        let mut c = first;
        if self.next.len() <= slot as usize {
            self.next.resize(slot as usize + 1, END);
        }
        loop {
            if c == EMPTY {
                self.used += 1;
                break;
            }
            if c >> 32 == tag {
                self.next[slot as usize] = c as u32;
                break;
            }
            i = (i + 1) & mask;
            c = self.cells[i];
        }
        self.cells[i] = tag << 32 | slot as u64;
    }

    fn grow(&mut self) {
        let size = (self.cells.len() * 2).max(64);
        let old = std::mem::replace(&mut self.cells, vec![EMPTY; size]);
        let mask = self.cells.len() - 1;
        for c in old.into_iter().filter(|&c| c != EMPTY) {
            let mut i = self.home(c >> 32);
            while self.cells[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.cells[i] = c;
        }
    }
}

/// An in-memory LSH index over signatures of a fixed length.
///
/// ```
/// use neardup_index::lsh::{Banding, LshIndex};
/// let mut index = LshIndex::new(Banding::even(4, 8).unwrap());
/// index.insert("a", &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
/// index.insert("b", &[1, 2, 3, 4, 5, 6, 0, 0]).unwrap(); // shares the first three bands
/// index.insert("c", &[9, 9, 9, 9, 9, 9, 9, 9]).unwrap();
/// let found = index.query(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
/// assert_eq!(found.len(), 2);
/// assert_eq!((found[0].id.as_str(), found[0].similarity), ("a", 1.0));
/// assert_eq!((found[1].id.as_str(), found[1].similarity), ("b", 0.75));
/// ```
#[derive(Clone, Debug)]
pub struct LshIndex {
    banding: Banding,
    ids: IdTable,
    /// `values` per slot.
    signatures: Vec<u32>,
    alive: Vec<bool>,
    live: usize,
    bands: Vec<BandTable>,
    /// Per band, during an insert: its key and home cell.
    scratch: Vec<(u64, u64)>,
}

impl LshIndex {
    /// An empty index for signatures of `banding.values` values.
    pub fn new(banding: Banding) -> Self {
        LshIndex {
            banding,
            ids: IdTable::default(),
            signatures: Vec::new(),
            alive: Vec::new(),
            live: 0,
            bands: vec![BandTable::default(); banding.bands as usize],
            scratch: Vec::new(),
        }
    }

    /// The banding.
    pub fn banding(&self) -> &Banding {
        &self.banding
    }

    /// How many ids are stored.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no id is stored.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Calls `f` with every stored (id, signature), in slot order, until its first error.
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&str, &[u32]) -> Result<(), E>,
    ) -> Result<(), E> {
        let values = self.banding.values as usize;
        let mut alive = self
            .signatures
            .chunks_exact(values)
            .enumerate()
            .filter(|&(slot, _)| self.alive[slot]);
        alive.try_for_each(|(slot, signature)| f(self.ids.id(slot as u32), signature))
    }

    /// The signature stored for an id.
    pub fn get(&self, id: &str) -> Option<&[u32]> {
        self.ids.get(id).map(|s| self.signature(s))
    }

    fn signature(&self, slot: u32) -> &[u32] {
        let k = self.banding.values as usize;
        &self.signatures[slot as usize * k..(slot as usize + 1) * k]
    }

    /// Whether a signature has the length this index holds.
    pub fn check(&self, signature: &[u32]) -> Result<(), LshError> {
        if signature.len() == self.banding.values as usize {
            Ok(())
        } else {
            Err(LshError::Length {
                expected: self.banding.values as usize,
                got: signature.len(),
            })
        }
    }

    /// Stores `signature` under `id`, replacing what the id had.
    pub fn insert(&mut self, id: &str, signature: &[u32]) -> Result<(), LshError> {
        let slot = self.append(id, signature)?;
        self.link(slot);
        self.compact_if_sparse();
        Ok(())
    }

    /// Stores many entries at once (a later entry for an id replaces an earlier one): the fast way to load an
    /// index. Each band's new keys are sorted by their cell, so the table is filled in memory order instead
    /// of one random cache miss per key.
    pub fn extend<'a, I>(&mut self, entries: I) -> Result<(), LshError>
    where
        I: IntoIterator<Item = (&'a str, &'a [u32])>,
    {
        let entries = entries.into_iter();
        let more = entries.size_hint().0;
        self.ids.reserve(more, more * 24);
        self.signatures.reserve(more * self.banding.values as usize);
        self.alive.reserve(more);
        let first = self.ids.slots() as u32;
        let outcome = entries.into_iter().try_for_each(|(id, signature)| {
            self.check(signature)?;
            if self.ids.slots() >= END as usize - 1 {
                return Err(LshError::Full);
            }
            self.ids.push(id);
            self.signatures.extend_from_slice(signature);
            self.alive.push(true);
            self.live += 1;
            Ok(())
        });
        // Whatever was accepted is resolved (in one batch, a later entry for an id retiring an earlier one)
        // and linked, even if a later entry was refused.
        let (alive, live) = (&mut self.alive, &mut self.live);
        self.ids.map_from(first as usize, |old| {
            alive[old as usize] = false;
            *live -= 1;
        });
        self.link_range(first, self.ids.slots() as u32);
        self.compact_if_sparse();
        outcome
    }

    /// Gives `id` a new slot holding `signature`, not yet linked into the bands; the slot the id had before
    /// is retired.
    fn append(&mut self, id: &str, signature: &[u32]) -> Result<u32, LshError> {
        self.check(signature)?;
        if self.ids.slots() >= END as usize - 1 {
            return Err(LshError::Full);
        }
        let (slot, old) = self.ids.assign(id);
        self.signatures.extend_from_slice(signature);
        self.alive.push(true);
        self.live += 1;
        if let Some(old) = old {
            self.retire(old);
        }
        Ok(slot)
    }

    /// Links slots `first..last` (newer than every linked slot) into every band. Each band's keys are sorted
    /// by home cell first, so the table is written in memory order.
    fn link_range(&mut self, first: u32, last: u32) {
        let k = self.banding.values as usize;
        let (banding, signatures) = (&self.banding, &self.signatures);
        // Bands are independent: each thread fills whole bands, so the result does not depend on threads.
        crate::parallel::install(|| {
            self.bands.par_iter_mut().enumerate().for_each(|(b, band)| {
                let range = banding.band_range(b as u32);
                band.reserve((last - first) as usize);
                band.next.resize(last as usize, END);
                let home_bits = band.cells.len().trailing_zeros();
                let mut rows: Vec<(u64, u32)> = (first..last)
                    .map(|slot| {
                        let start = slot as usize * k;
                        (
                            band_key(&signatures[start + range.start..start + range.end]),
                            slot,
                        )
                    })
                    .collect();
                // By home cell (the tag's low bits), stable, so equal keys stay in slot order (newest last).
                radix_sort_by_key(&mut rows, &mut Vec::new(), 32, home_bits);
                for &(key, slot) in &rows {
                    let cell = band.cells[band.home(key >> 32)];
                    band.push_at(key, cell, slot);
                }
            })
        });
    }

    /// Puts a new slot at the head of its chain in every band.
    fn link(&mut self, slot: u32) {
        let start = slot as usize * self.banding.values as usize;
        let signature = &self.signatures[start..start + self.banding.values as usize];
        self.scratch.clear();
        for (b, band) in self.bands.iter_mut().enumerate() {
            let key = band_key(&signature[self.banding.band_range(b as u32)]);
            band.reserve(1);
            // Reading each band's home cell here, in a loop with no other dependence, lets the CPU wait for all
            // bands' cache misses at once instead of one after another.
            let first = band.cells[band.home(key >> 32)];
            self.scratch.push((key, first));
        }
        for (band, &(key, first)) in self.bands.iter_mut().zip(&self.scratch) {
            band.push_at(key, first, slot);
        }
    }

    /// Marks a slot dead; queries skip it until a rebuild drops it.
    fn retire(&mut self, slot: u32) {
        self.alive[slot as usize] = false;
        self.live -= 1;
    }

    /// Rebuilds when retired slots outnumber live ones. Only at the end of a change: a rebuild renumbers
    /// every slot.
    fn compact_if_sparse(&mut self) {
        if self.ids.slots() - self.live > self.live.max(4096) {
            self.rebuild();
        }
    }

    /// Removes an id; returns whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        match self.ids.remove(id) {
            Some(slot) => {
                self.retire(slot);
                self.compact_if_sparse();
                true
            }
            None => false,
        }
    }

    /// Every stored id that shares at least one band with `signature`, with its estimated similarity, most
    /// similar first, then by id.
    pub fn query(&self, signature: &[u32]) -> Result<Vec<Candidate>, LshError> {
        self.check(signature)?;
        // In groups of bands, all first probes are independent loads: read the heads first, walk chains after.
        const GROUP: usize = 16;
        let mut heads = vec![END; self.bands.len()];
        for group_start in (0..self.bands.len()).step_by(GROUP) {
            let end = (group_start + GROUP).min(self.bands.len());
            for (b, band) in self.bands[group_start..end].iter().enumerate() {
                let range = self.banding.band_range((group_start + b) as u32);
                heads[group_start + b] = band.head(band_key(&signature[range]));
            }
        }
        Ok(self.candidates(signature, &heads))
    }

    /// [`query`](Self::query) for many signatures at once (concatenated, `values` each): one result per
    /// signature, in order. Each band's probes are sorted by table cell first, so the tables are read in
    /// memory order, and bands and queries are spread over threads; the results do not depend on threads.
    pub fn query_many(&self, signatures: &[u32]) -> Result<Vec<Vec<Candidate>>, LshError> {
        let k = self.banding.values as usize;
        if !signatures.len().is_multiple_of(k) {
            return Err(LshError::Length {
                expected: k,
                got: signatures.len() % k,
            });
        }
        let n = signatures.len() / k;
        crate::parallel::install(|| Ok(self.query_slices(signatures, n)))
    }

    /// The candidates of each of `n` signatures laid end to end (see `query_many`), on all cores.
    fn query_slices(&self, signatures: &[u32], n: usize) -> Vec<Vec<Candidate>> {
        let k = self.banding.values as usize;
        // Per band, the head of each query's chain.
        let heads: Vec<Vec<u32>> = self
            .bands
            .par_iter()
            .enumerate()
            .map(|(b, band)| {
                if band.cells.is_empty() {
                    return vec![END; n];
                }
                let range = self.banding.band_range(b as u32);
                let mut rows: Vec<(u64, u32)> = (0..n)
                    .map(|q| {
                        (
                            band_key(&signatures[q * k + range.start..q * k + range.end]),
                            q as u32,
                        )
                    })
                    .collect();
                let home_bits = band.cells.len().trailing_zeros();
                radix_sort_by_key(&mut rows, &mut Vec::new(), 32, home_bits);
                let mut heads = vec![END; n];
                for (key, q) in rows {
                    heads[q as usize] = band.head(key);
                }
                heads
            })
            .collect();
        (0..n)
            .into_par_iter()
            .map(|q| {
                let query_heads: Vec<u32> = heads.iter().map(|h| h[q]).collect();
                self.candidates(&signatures[q * k..(q + 1) * k], &query_heads)
            })
            .collect()
    }

    /// The live slots on the chains that start at `heads` (one per band) whose band equals the query's, as
    /// candidates: most similar first, then by id.
    fn candidates(&self, signature: &[u32], heads: &[u32]) -> Vec<Candidate> {
        let mut slots = Vec::new();
        for (b, (band, &head)) in self.bands.iter().zip(heads).enumerate() {
            let range = self.banding.band_range(b as u32);
            let mut at = head;
            // A chain holds one key's slots (or, after a 32-bit tag collision, two keys'): check the band.
            while at != END {
                if self.signature(at)[range.clone()] == signature[range.clone()] {
                    slots.push(at);
                }
                at = band.next[at as usize];
            }
        }
        slots.sort_unstable();
        slots.dedup();
        let mut out: Vec<Candidate> = slots
            .into_iter()
            .filter(|&s| self.alive[s as usize])
            .map(|s| Candidate {
                id: self.ids.id(s).to_owned(),
                similarity: similarity(self.signature(s), signature),
            })
            .collect();
        out.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| a.id.cmp(&b.id))
        });
        out
    }

    /// Rebuilds the band tables from the live slots, dropping retired ones.
    pub fn rebuild(&mut self) {
        let order: Vec<u32> = (0..self.ids.slots() as u32)
            .filter(|&s| self.alive[s as usize])
            .collect();
        self.ids.renumber(&order);
        let k = self.banding.values as usize;
        let mut signatures = Vec::with_capacity(order.len() * k);
        for &old in &order {
            let old = old as usize;
            signatures.extend_from_slice(&self.signatures[old * k..(old + 1) * k]);
        }
        self.signatures = signatures;
        self.alive = vec![true; self.live];
        for band in &mut self.bands {
            *band = BandTable::default();
        }
        self.link_range(0, self.live as u32);
    }

    /// Memory held: the signatures and band tables (as "tables"), and the ids.
    pub fn memory(&self) -> MemoryStats {
        let bands: usize = self
            .bands
            .iter()
            .map(|b| b.cells.capacity() * 8 + b.next.capacity() * 4)
            .sum();
        MemoryStats {
            entries: self.live,
            tables: self.bands.len(),
            table_bytes: self.signatures.capacity() * 4 + self.alive.capacity() + bands,
            id_bytes: self.ids.memory_bytes(),
        }
    }
}

/// The fraction of positions where two signatures agree: the MinHash estimate of their Jaccard similarity.
pub fn similarity(a: &[u32], b: &[u32]) -> f64 {
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    equal as f64 / a.len().max(1) as f64
}

/// A 64-bit key for a band's values; distinct bands collide with probability about 2^-64. Segments store
/// these keys (`lsh.b{b}.keys`, see `docs/index-format.md`): the function is part of the on-disk format, pinned
/// by a test, and a change to it needs a new segment format.
#[inline]
pub fn band_key(values: &[u32]) -> u64 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (values.len() as u64).wrapping_mul(M);
    let mut pairs = values.chunks_exact(2);
    for p in &mut pairs {
        let w = p[0] as u64 | (p[1] as u64) << 32;
        h = (h ^ w).wrapping_mul(M).rotate_left(29);
    }
    if let [last] = pairs.remainder() {
        h = (h ^ *last as u64).wrapping_mul(M).rotate_left(29);
    }
    // murmur3's finalizer: every input bit reaches every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    const PINNED: [u64; 5] = [
        0x0,
        0x88ab_fba2_d85a_10ab,
        0xd195_d6e5_3bc3_a0bc,
        0x3c37_c6b8_5b3b_d723,
        0x1513_1c38_0a4c_c305,
    ];

    /// The band key is part of the segments' format: these values must never change.
    #[test]
    fn band_keys_are_pinned() {
        let got = [
            band_key(&[]),
            band_key(&[1]),
            band_key(&[1, 2]),
            band_key(&[1, 2, 3]),
            band_key(&[u32::MAX; 8]),
        ];
        assert_eq!(got, PINNED, "{got:#x?}");
    }

    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, Vec<u32>),
        Remove(u8),
        Query(Vec<u32>),
        Rebuild,
        Extend(Vec<(u8, Vec<u32>)>),
    }

    fn signature() -> impl Strategy<Value = Vec<u32>> {
        // Values from a tiny alphabet, so that bands collide often.
        proptest::collection::vec(0u32..3, 6)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any::<u8>(), signature()).prop_map(|(id, s)| Op::Insert(id % 30, s)),
            1 => any::<u8>().prop_map(|id| Op::Remove(id % 30)),
            3 => signature().prop_map(Op::Query),
            1 => Just(Op::Rebuild),
            1 => proptest::collection::vec((any::<u8>(), signature()), 0..12).prop_map(Op::Extend),
        ]
    }

    proptest! {
        /// Every query returns exactly the stored ids that share a whole band with it, whatever the history.
        #[test]
        fn queries_equal_brute_force(ops in proptest::collection::vec(op(), 1..150)) {
            let banding = Banding::even(4, 6).unwrap(); // rows 2, 2, 1, 1
            let mut index = LshIndex::new(banding);
            let mut model: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
            for op in ops {
                match op {
                    Op::Insert(id, s) => {
                        index.insert(&format!("d{id}"), &s).unwrap();
                        model.insert(format!("d{id}"), s);
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(index.remove(&format!("d{id}")), model.remove(&format!("d{id}")).is_some());
                    }
                    Op::Query(q) => {
                        let shares = |s: &[u32]| (0..4).any(|b| {
                            let r = banding.band_range(b);
                            s[r.clone()] == q[r]
                        });
                        let mut expected: Vec<(String, f64)> = model
                            .iter()
                            .filter(|(_, s)| shares(s))
                            .map(|(id, s)| (id.clone(), similarity(s, &q)))
                            .collect();
                        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                        let got: Vec<(String, f64)> = index.query(&q).unwrap().into_iter().map(|c| (c.id, c.similarity)).collect();
                        prop_assert_eq!(&got, &expected);
                        let twice: Vec<u32> = q.iter().chain(&q).copied().collect();
                        for many in index.query_many(&twice).unwrap() {
                            let many: Vec<(String, f64)> = many.into_iter().map(|c| (c.id, c.similarity)).collect();
                            prop_assert_eq!(&many, &expected);
                        }
                    }
                    Op::Rebuild => index.rebuild(),
                    Op::Extend(entries) => {
                        let entries: Vec<(String, Vec<u32>)> =
                            entries.into_iter().map(|(id, s)| (format!("d{}", id % 30), s)).collect();
                        index.extend(entries.iter().map(|(id, s)| (id.as_str(), s.as_slice()))).unwrap();
                        model.extend(entries);
                    }
                }
                prop_assert_eq!(index.len(), model.len());
            }
        }
    }

    #[test]
    fn refuses_signatures_of_another_length() {
        let mut index = LshIndex::new(Banding::even(2, 4).unwrap());
        assert_eq!(
            index.insert("a", &[1, 2, 3]).unwrap_err(),
            LshError::Length {
                expected: 4,
                got: 3
            }
        );
        assert!(index.query(&[1; 5]).is_err());
    }

    #[test]
    fn many_removals_compact_and_stay_exact() {
        let mut index = LshIndex::new(Banding::even(4, 8).unwrap());
        for i in 0..20_000u32 {
            index
                .insert(&i.to_string(), &[i, i, i, i, i % 7, 0, 0, i])
                .unwrap();
        }
        for i in 0..19_000u32 {
            assert!(index.remove(&i.to_string()));
        }
        assert_eq!(index.len(), 1000);
        let found = index.query(&[19_500, 19_500, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(found[0].id, "19500");
        assert_eq!(index.get("5"), None);
        assert_eq!(index.get("19999").unwrap()[0], 19_999);
    }
}

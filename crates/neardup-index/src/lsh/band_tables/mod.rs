//! datasketch's `MinHashLSH` band tables, exact: [`BandTables`].

mod ahead;
mod heads;

use hashbrown::DefaultHashBuilder;
use heads::HeadTable;
use std::hash::BuildHasher;

/// Refusals of [`BandTables`]. The messages are datasketch's where datasketch has one.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum BandTablesError {
    /// Zero bands or rows, or values neither 4 nor 8 bytes wide.
    #[error("bands and rows are positive; values are 4 or 8 bytes")]
    Shape,
    /// An id of `u32::MAX`, which marks free slots.
    #[error("ids are below 2**32 - 1")]
    IdTooLarge,
    /// An insert under an id already stored.
    #[error("The given key already exists")]
    Exists,
    /// An id more than 2^20 beyond the largest one seen: ids are meant to be dense.
    #[error("ids are dense: give the next free one")]
    Sparse,
    /// Fewer bytes than an entry's `b·r` values.
    #[error("expected at least {expected} bytes, got {got}")]
    Short {
        /// Bytes of an entry's values.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// A band number not below the number of bands.
    #[error("band {band} of {bands}")]
    NoBand {
        /// The band asked for.
        band: usize,
        /// The number of bands.
        bands: usize,
    },
    /// An id that is not stored.
    #[error("no entry {0}")]
    Absent(u32),
}

/// datasketch's `MinHashLSH` band tables, exact, for a front door that keeps datasketch's semantics (the
/// Python package's `neardup.datasketch`).
///
/// Unlike [`LshIndex`](super::LshIndex), which estimates similarity from `u32` signatures and is keyed by
/// the user's string ids, these tables answer datasketch's questions exactly: which entries hold the same
/// bytes as a query in at least one band, what datasketch's bucket keys are (a band's values, big-endian),
/// and how many entries each bucket has. Values are 4 or 8 bytes wide (`uint32` or `uint64` NumPy arrays),
/// given as bytes in native order; entries are the caller's dense `u32` ids (the caller reuses freed ones).
///
/// # Layout
///
/// Each entry's `b·r` values are kept once, in an arena of slots. A band's table (open addressing, a tag
/// and a slot per entry) maps a hash of the band's bytes to the first slot of a chain threaded through the
/// slots (previous and next per slot and band), so inserting allocates nothing per bucket and removing is
/// O(1). Matching stays exact: a query collects the chains' slots of all bands first, then compares one
/// matching band's bytes per distinct slot (two band contents with one hash share a chain but never match
/// each other). Collecting first lets the bands' lookups overlap in memory, and a slot found in every band
/// is compared once, not once per band.
///
/// Inserts come one at a time from the caller's loop, on one thread; the pages they are about to write are
/// mapped by another core first (on Linux, with `madvise`).
///
/// ```
/// use neardup_index::lsh::BandTables;
///
/// // 2 bands of 2 rows of u32 values.
/// let mut tables = BandTables::new(2, 2, 4).unwrap();
/// let bytes = |v: [u32; 4]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
/// tables.insert(0, &bytes([1, 2, 3, 4])).unwrap();
/// tables.insert(1, &bytes([1, 2, 9, 9])).unwrap(); // shares band 0 with entry 0
/// tables.insert(2, &bytes([7, 7, 9, 8])).unwrap(); // shares no band
/// assert_eq!(tables.query(&bytes([1, 2, 5, 5]), 2).unwrap(), vec![0, 1]);
/// tables.remove(0).unwrap();
/// assert_eq!(tables.query(&bytes([1, 2, 5, 5]), 2).unwrap(), vec![1]);
/// ```
pub struct BandTables {
    bands: usize,
    rows: usize,
    width: usize,
    /// `b·r·width` bytes per slot, the values as given (native byte order).
    arena: Vec<u8>,
    /// The arena's next pages, mapped ahead of the inserts on another core.
    arena_ahead: ahead::MapAhead,
    id_of_slot: Vec<u32>,
    free: Vec<u32>,
    /// Per id, its slot (`NONE` if absent).
    slot_of: Vec<u32>,
    /// Per band: hash of the band's bytes → first slot of its chain.
    heads: Vec<HeadTable>,
    /// Per slot and band (`slot·b + band`): the previous and next slot of its chain.
    links: Vec<[u32; 2]>,
    links_ahead: ahead::MapAhead,
    hasher: DefaultHashBuilder,
}

impl std::fmt::Debug for BandTables {
    /// The shape and the number of entries, not the values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BandTables")
            .field("bands", &self.bands)
            .field("rows", &self.rows)
            .field("width", &self.width)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// The id of a free slot.
const FREE: u32 = u32::MAX;
/// No slot: the end of a chain, or an id without an entry.
const NONE: u32 = u32::MAX;

impl BandTables {
    /// Empty tables of `bands` bands of `rows` values of `width` bytes (4 or 8).
    pub fn new(bands: usize, rows: usize, width: usize) -> Result<Self, BandTablesError> {
        if bands == 0 || rows == 0 || !(width == 4 || width == 8) {
            return Err(BandTablesError::Shape);
        }
        Ok(BandTables {
            bands,
            rows,
            width,
            arena: Vec::new(),
            arena_ahead: Default::default(),
            id_of_slot: Vec::new(),
            free: Vec::new(),
            slot_of: Vec::new(),
            heads: (0..bands).map(|_| HeadTable::default()).collect(),
            links: Vec::new(),
            links_ahead: Default::default(),
            hasher: DefaultHashBuilder::default(),
        })
    }

    /// The number of bands, `b`.
    pub fn bands(&self) -> usize {
        self.bands
    }

    /// Bytes of one value: 4 or 8.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Bytes of an entry's `b·r` values.
    fn entry_len(&self) -> usize {
        self.bands * self.rows * self.width
    }

    /// Bytes of one band's `r` values.
    fn band_len(&self) -> usize {
        self.rows * self.width
    }

    /// The number of entries stored.
    pub fn len(&self) -> usize {
        // Slots in use: every slot ever made, less the free ones.
        self.id_of_slot.len() - self.free.len()
    }

    /// Whether no entry is stored (then every band's table is empty: datasketch's `is_empty`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` is stored.
    pub fn contains(&self, id: u32) -> bool {
        self.slot_of.get(id as usize).is_some_and(|&s| s != NONE)
    }

    /// The stored ids, sorted.
    pub fn ids(&self) -> Vec<u32> {
        (0..self.slot_of.len() as u32)
            .filter(|&id| self.slot_of[id as usize] != NONE)
            .collect()
    }

    /// Stores an entry under `id` from the bytes of its values (native order); the first `b·r` values of
    /// `data` are kept, and it may hold more (a MinHash of more permutations than the bands use).
    pub fn insert(&mut self, id: u32, data: &[u8]) -> Result<(), BandTablesError> {
        let values = self.entry_bytes(data)?;
        if id == FREE {
            return Err(BandTablesError::IdTooLarge);
        }
        if self.contains(id) {
            return Err(BandTablesError::Exists);
        }
        let at = id as usize;
        if at > self.slot_of.len() + (1 << 20) {
            return Err(BandTablesError::Sparse);
        }
        let stride = self.entry_len();
        let slot = match self.free.pop() {
            Some(slot) => {
                let start = slot as usize * stride;
                self.arena[start..start + stride].copy_from_slice(values);
                self.id_of_slot[slot as usize] = id;
                slot
            }
            None => {
                self.arena_ahead.reserve(&mut self.arena, stride);
                self.arena.extend_from_slice(values);
                self.id_of_slot.push(id);
                self.links_ahead.reserve(&mut self.links, self.bands);
                self.links
                    .extend(std::iter::repeat_n([NONE, NONE], self.bands));
                (self.id_of_slot.len() - 1) as u32
            }
        };
        if at >= self.slot_of.len() {
            self.slot_of.resize(at + 1, NONE);
        }
        self.slot_of[at] = slot;
        for (band, hash) in self.band_hashes(values, self.bands).into_iter().enumerate() {
            let next = self.heads[band].replace(hash, slot).unwrap_or(NONE);
            *self.link_mut(slot, band) = [NONE, next];
            if next != NONE {
                self.link_mut(next, band)[0] = slot;
            }
        }
        Ok(())
    }

    /// The ids whose values equal `data`'s exactly in at least one of the first `bands` bands (all of
    /// them when `bands` is larger), sorted.
    pub fn query(&self, data: &[u8], bands: usize) -> Result<Vec<u32>, BandTablesError> {
        let values = self.entry_bytes(data)?;
        Ok(self.query_ids(values, bands.min(self.bands)))
    }

    /// Removes the entry of `id`.
    pub fn remove(&mut self, id: u32) -> Result<(), BandTablesError> {
        let slot = self.slot(id)?;
        for band in 0..self.bands {
            let [prev, next] = *self.link(slot, band);
            if prev != NONE {
                self.link_mut(prev, band)[1] = next;
            } else {
                let hash = self.hasher.hash_one(self.band_of_slot(slot, band));
                if next != NONE {
                    self.heads[band].replace(hash, next);
                } else {
                    self.heads[band].remove(hash);
                }
            }
            if next != NONE {
                self.link_mut(next, band)[0] = prev;
            }
            *self.link_mut(slot, band) = [NONE, NONE];
        }
        self.slot_of[id as usize] = NONE;
        self.id_of_slot[slot as usize] = FREE;
        self.free.push(slot);
        Ok(())
    }

    /// The `b·r` values of `id`'s entry, in native byte order.
    pub fn values(&self, id: u32) -> Result<&[u8], BandTablesError> {
        let slot = self.slot(id)? as usize;
        let stride = self.entry_len();
        Ok(&self.arena[slot * stride..(slot + 1) * stride])
    }

    /// datasketch's bucket keys of `id`'s entry: each band's values as big-endian bytes.
    pub fn band_keys(&self, id: u32) -> Result<Vec<Vec<u8>>, BandTablesError> {
        let slot = self.slot(id)?;
        Ok((0..self.bands)
            .map(|band| self.key_bytes(self.band_of_slot(slot, band)))
            .collect())
    }

    /// The bucket key (as in [`band_keys`](Self::band_keys)) of every entry in one band, those of a
    /// bucket one after another (two buckets whose bytes hash alike may come interleaved).
    pub fn band_entries(
        &self,
        band: usize,
    ) -> Result<impl Iterator<Item = Vec<u8>> + '_, BandTablesError> {
        let table = self.band_table(band)?;
        Ok(table.heads().flat_map(move |head| {
            self.chain(head, band)
                .map(move |slot| self.key_bytes(self.band_of_slot(slot, band)))
        }))
    }

    /// The ids in one band's bucket of `key` (as in [`band_keys`](Self::band_keys)), sorted; found by its
    /// hash, not by a scan.
    pub fn band_members(&self, band: usize, key: &[u8]) -> Result<Vec<u32>, BandTablesError> {
        let table = self.band_table(band)?;
        if key.len() != self.band_len() {
            return Ok(Vec::new());
        }
        // The key is the band's values byte-swapped; swapping again gives the stored bytes.
        let values = self.key_bytes(key);
        let head = table.get(self.hasher.hash_one(values.as_slice()));
        let mut ids: Vec<u32> = (head.into_iter())
            .flat_map(|head| self.chain(head, band))
            .filter(|&slot| self.band_of_slot(slot, band) == values.as_slice())
            .map(|slot| self.id_of_slot[slot as usize])
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn band_of_slot(&self, slot: u32, band: usize) -> &[u8] {
        let start = slot as usize * self.entry_len() + band * self.band_len();
        &self.arena[start..start + self.band_len()]
    }

    /// The slots of the chain that starts at `head` in `band`.
    fn chain(&self, head: u32, band: usize) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(head), move |&slot| {
            Some(self.link(slot, band)[1]).filter(|&next| next != NONE)
        })
    }

    /// The previous and next slot of `slot`'s chain in `band`.
    fn link(&self, slot: u32, band: usize) -> &[u32; 2] {
        &self.links[slot as usize * self.bands + band]
    }

    fn link_mut(&mut self, slot: u32, band: usize) -> &mut [u32; 2] {
        &mut self.links[slot as usize * self.bands + band]
    }

    /// The first `b·r` values' bytes of `data` (which may hold more values).
    fn entry_bytes<'a>(&self, data: &'a [u8]) -> Result<&'a [u8], BandTablesError> {
        data.get(..self.entry_len()).ok_or(BandTablesError::Short {
            expected: self.entry_len(),
            got: data.len(),
        })
    }

    fn slot(&self, id: u32) -> Result<u32, BandTablesError> {
        match self.slot_of.get(id as usize) {
            Some(&slot) if slot != NONE => Ok(slot),
            _ => Err(BandTablesError::Absent(id)),
        }
    }

    fn band_table(&self, band: usize) -> Result<&HeadTable, BandTablesError> {
        self.heads.get(band).ok_or(BandTablesError::NoBand {
            band,
            bands: self.bands,
        })
    }

    /// Asks for a chain slot's link and band bytes, which a query reads next.
    fn prefetch_slot(&self, slot: u32, band: usize) {
        prefetch(self.link(slot, band));
        prefetch(&self.band_of_slot(slot, band)[0]);
    }

    fn key_bytes(&self, band_bytes: &[u8]) -> Vec<u8> {
        // datasketch's key: the band's values byte-swapped (big-endian).
        band_bytes
            .chunks_exact(self.width)
            .flat_map(|v| v.iter().rev().copied())
            .collect()
    }

    /// The hashes of the first `bands` bands of `values`, each band's table line asked for as it is
    /// hashed: the lookups that follow find their lines on the way, their misses overlapping.
    fn band_hashes(&self, values: &[u8], bands: usize) -> Vec<u64> {
        let band_len = self.band_len();
        (0..bands)
            .map(|band| {
                let hash = self
                    .hasher
                    .hash_one(&values[band * band_len..(band + 1) * band_len]);
                self.heads[band].prefetch(hash);
                hash
            })
            .collect()
    }

    /// The ids sharing at least one of the first `bands` bands of `values` exactly, sorted.
    ///
    /// Each step asks for the memory of the next before reading any of it (the head table lines in
    /// `band_hashes`, then each chain slot's link and band bytes as the slot is found), so that the cache
    /// misses overlap instead of following one another: each is a miss in an index larger than the
    /// processor's L2 cache.
    fn query_ids(&self, values: &[u8], bands: usize) -> Vec<u32> {
        let band_len = self.band_len();
        let key = |band: usize| &values[band * band_len..(band + 1) * band_len];
        let heads: Vec<u32> = (self.band_hashes(values, bands).into_iter().enumerate())
            .map(|(band, hash)| {
                let head = self.heads[band].get(hash).unwrap_or(NONE);
                if head != NONE {
                    self.prefetch_slot(head, band);
                }
                head
            })
            .collect();
        let mut candidates: Vec<(u32, u32)> = Vec::with_capacity(2 * bands);
        for (band, &head) in heads.iter().enumerate() {
            let mut slot = head;
            while slot != NONE {
                candidates.push((slot, band as u32));
                slot = self.link(slot, band)[1];
                if slot != NONE {
                    self.prefetch_slot(slot, band);
                }
            }
        }
        candidates.sort_unstable();
        // A slot matches if one of its bands found by hash holds exactly the query's bytes.
        let mut found = Vec::new();
        for group in candidates.chunk_by(|a, b| a.0 == b.0) {
            let slot = group[0].0;
            if group
                .iter()
                .any(|&(_, band)| self.band_of_slot(slot, band as usize) == key(band as usize))
            {
                found.push(self.id_of_slot[slot as usize]);
            }
        }
        found.sort_unstable();
        found
    }
}

/// Asks the CPU to load the cache line that holds `value`, without waiting for it.
#[inline]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, and the address is of a live value.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::collections::btree_map::Entry;

    /// A small deterministic generator (xorshift).
    struct Draws(u64);

    impl Draws {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn bytes_of(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// The answer by definition: the stored ids sharing a whole band with `query` among its first `bands`.
    fn naive(
        stored: &BTreeMap<u32, Vec<u32>>,
        query: &[u32],
        rows: usize,
        bands: usize,
    ) -> Vec<u32> {
        let band = |v: &[u32], b: usize| v[b * rows..(b + 1) * rows].to_vec();
        stored
            .iter()
            .filter(|(_, v)| (0..bands).any(|b| band(v, b) == band(query, b)))
            .map(|(&id, _)| id)
            .collect()
    }

    /// Random inserts (into freed slots too), removals and queries agree with the definition. Values come
    /// from a tiny alphabet so that buckets are shared and chains are long.
    #[test]
    fn agrees_with_the_definition() {
        let (bands, rows) = (4, 2);
        let mut tables = BandTables::new(bands, rows, 4).unwrap();
        let mut stored: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut draws = Draws(0x2545_f491_4f6c_dd1d);
        let value = |draws: &mut Draws| -> Vec<u32> {
            (0..bands * rows)
                .map(|_| (draws.next() % 3) as u32)
                .collect()
        };
        for _ in 0..20_000 {
            let id = (draws.next() % 300) as u32;
            match draws.next() % 4 {
                0 | 1 => {
                    let v = value(&mut draws);
                    let result = tables.insert(id, &bytes_of(&v));
                    match stored.entry(id) {
                        Entry::Occupied(_) => assert_eq!(result, Err(BandTablesError::Exists)),
                        Entry::Vacant(place) => {
                            result.unwrap();
                            place.insert(v);
                        }
                    }
                }
                2 => {
                    let result = tables.remove(id);
                    match stored.remove(&id) {
                        Some(_) => result.unwrap(),
                        None => assert_eq!(result, Err(BandTablesError::Absent(id))),
                    }
                }
                _ => {
                    let q = value(&mut draws);
                    let used = 1 + (draws.next() % bands as u64) as usize;
                    assert_eq!(
                        tables.query(&bytes_of(&q), used).unwrap(),
                        naive(&stored, &q, rows, used)
                    );
                }
            }
            assert_eq!(tables.len(), stored.len());
        }
        assert_eq!(tables.ids(), stored.keys().copied().collect::<Vec<_>>());
        for (&id, v) in &stored {
            assert_eq!(tables.values(id).unwrap(), bytes_of(v));
            for (band, key) in tables.band_keys(id).unwrap().into_iter().enumerate() {
                let members = tables.band_members(band, &key).unwrap();
                let expected: Vec<u32> = (stored.iter())
                    .filter(|(_, w)| {
                        w[band * rows..(band + 1) * rows] == v[band * rows..(band + 1) * rows]
                    })
                    .map(|(&i, _)| i)
                    .collect();
                assert_eq!(members, expected);
            }
        }
        // Each band lists every entry's key once.
        for band in 0..bands {
            let mut listed: Vec<Vec<u8>> = tables.band_entries(band).unwrap().collect();
            let mut expected: Vec<Vec<u8>> = stored
                .keys()
                .map(|&id| tables.band_keys(id).unwrap()[band].clone())
                .collect();
            listed.sort();
            expected.sort();
            assert_eq!(listed, expected);
        }
    }

    /// Enough entries that the arena and links are mapped ahead on other threads and every band's table
    /// grows past the size mapped on two cores; every answer is still exact, after removals and reuse of
    /// the freed slots too. Each odd entry shares exactly band `id % bands` with the entry before it.
    #[test]
    fn large_tables_known_answers() {
        let (bands, rows, n) = (8usize, 4usize, 300_000u32);
        let mut tables = BandTables::new(bands, rows, 8).unwrap();
        let entry = |id: u32| -> Vec<u8> {
            let partner = id & !1;
            let shared = partner as usize / 2 % bands;
            (0..bands * rows)
                .flat_map(|i| {
                    let value = if i / rows == shared {
                        u64::from(partner) << 8 | i as u64
                    } else {
                        u64::from(id) << 8 | i as u64 | 1 << 60
                    };
                    value.to_ne_bytes()
                })
                .collect()
        };
        for id in 0..n {
            tables.insert(id, &entry(id)).unwrap();
        }
        let check = |tables: &BandTables, id: u32, present: &dyn Fn(u32) -> bool| {
            let expected: Vec<u32> = [id & !1, id | 1]
                .into_iter()
                .filter(|&i| present(i))
                .collect();
            assert_eq!(
                tables.query(&entry(id), bands).unwrap(),
                expected,
                "id {id}"
            );
        };
        for id in (0..n).step_by(997) {
            check(&tables, id, &|_| true);
        }
        // Remove every fourth entry, then put new values into the freed slots under the same ids.
        for id in (0..n).step_by(4) {
            tables.remove(id).unwrap();
        }
        for id in (1..n).step_by(997) {
            check(&tables, id, &|i| i % 4 != 0);
        }
        for id in (0..n).step_by(4) {
            tables.insert(id, &entry(id)).unwrap();
        }
        assert_eq!(tables.len(), n as usize);
        for id in (0..n).step_by(991) {
            check(&tables, id, &|_| true);
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(BandTables::new(0, 1, 4).err(), Some(BandTablesError::Shape));
        assert_eq!(BandTables::new(1, 1, 2).err(), Some(BandTablesError::Shape));
        let mut tables = BandTables::new(2, 2, 4).unwrap();
        let values = bytes_of(&[1, 2, 3, 4, 5]);
        assert_eq!(
            tables.insert(0, &values[..15]),
            Err(BandTablesError::Short {
                expected: 16,
                got: 15
            })
        );
        assert_eq!(
            tables.insert(FREE, &values),
            Err(BandTablesError::IdTooLarge)
        );
        assert_eq!(
            tables.insert(2 << 20, &values),
            Err(BandTablesError::Sparse)
        );
        tables.insert(0, &values).unwrap();
        assert_eq!(tables.insert(0, &values), Err(BandTablesError::Exists));
        assert_eq!(tables.remove(1), Err(BandTablesError::Absent(1)));
        assert_eq!(
            tables.band_members(2, &[0; 8]).err(),
            Some(BandTablesError::NoBand { band: 2, bands: 2 })
        );
        // A key of the wrong length names no bucket.
        assert_eq!(tables.band_members(0, &[0; 7]), Ok(vec![]));
        // A failed insert changed nothing.
        assert_eq!((tables.len(), tables.ids()), (1, vec![0]));
        assert_eq!(
            format!("{tables:?}"),
            "BandTables { bands: 2, rows: 2, width: 4, len: 1, .. }"
        );
    }

    /// datasketch's bucket keys are the band's values big-endian, whatever the width.
    #[test]
    fn bucket_keys_are_big_endian() {
        let mut tables = BandTables::new(1, 2, 8).unwrap();
        let values: Vec<u8> = [0x0102_0304_0506_0708u64, 9]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        tables.insert(5, &values).unwrap();
        let key = [[1u8, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 9]].concat();
        assert_eq!(tables.band_keys(5).unwrap(), vec![key.clone()]);
        assert_eq!(tables.band_members(0, &key).unwrap(), vec![5]);
        assert!(tables.band_entries(0).unwrap().eq([key]));
    }
}

//! The one id table of both index kinds: the user's ids (URLs, paths, DOIs) and the dense slot numbers the
//! indexes use instead.
//!
//! * **An arena**: every id in one byte buffer, in the order the ids arrived, with an end offset per entry
//!   (entry e is `bytes[ends[e - 1]..ends[e]]`): a million ids are two allocations, not a million.
//!   `entry_of` maps slots to entries, so renumbering slots (a Hamming rebuild puts them in table 0's order)
//!   permutes a 4-byte array instead of moving the ids' bytes, whose random reads would cost more than all
//!   the tables' sorts. Entries that no slot keeps (ids removed or replaced) are squeezed out by
//!   [`IdTable::renumber`], in one sequential pass.
//! * **A map** from id to slot: a hash table of `(slot, 32 bits of the id's hash)`. With the hash at hand,
//!   growing the table or renumbering slots never reads an id again, and a probe reads an id only when its
//!   hash matches. The 32 bits are spread over the table's 64-bit hash by an invertible multiplication.
//! * **Bulk resolution** ([`IdTable::map_from`]): ids pushed without touching the map are hashed in arrival
//!   order (sequential reads of the arena), sorted by their bucket, and inserted in bucket order: nearly
//!   sequential writes instead of one cache miss per id, several times faster for millions of ids.
//!
//! The map holds only live slots (an id's newest); a slot whose id was replaced or removed keeps its bytes
//! until the next [`renumber`](IdTable::renumber).

use crate::radix::radix_sort_by_key;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// Ids by slot, and live slots by id.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdTable {
    arena: Arena,
    map: IdMap,
}

impl IdTable {
    /// The number of slots (live or retired).
    #[inline]
    pub(crate) fn slots(&self) -> usize {
        self.arena.entry_of.len()
    }

    /// The id of a slot.
    #[inline]
    pub(crate) fn id(&self, slot: u32) -> &str {
        self.arena.get(slot)
    }

    /// The live slot of an id.
    pub(crate) fn get(&self, id: &str) -> Option<u32> {
        self.map.get(&self.arena, id)
    }

    /// Room for `more` ids of about `bytes` bytes in all (the map grows when ids are resolved).
    pub(crate) fn reserve(&mut self, more: usize, bytes: usize) {
        self.arena.bytes.reserve(bytes);
        self.arena.ends.reserve(more);
        self.arena.entry_of.reserve(more);
    }

    /// Gives `id` the next slot without resolving it: the map does not know it until
    /// [`map_from`](Self::map_from) covers it. Returns the slot.
    #[inline]
    pub(crate) fn push(&mut self, id: &str) -> u32 {
        let slot = self.slots() as u32;
        self.arena.push(id);
        slot
    }

    /// Gives `id` the next slot and points the id at it; returns the slot, and the slot the id had before
    /// (now retired), if any. One hash probe.
    pub(crate) fn assign(&mut self, id: &str) -> (u32, Option<u32>) {
        let h = self.map.hash(id);
        let slot = self.push(id);
        (slot, self.map.upsert(&self.arena, h, slot))
    }

    /// Resolves the ids of slots `from..` (pushed with [`push`](Self::push)), a later slot replacing an
    /// earlier one with the same id; calls `retired` with every slot an id pointed at before. Equal ids hash
    /// alike and the bucket sort is stable, so they still meet in slot order.
    pub(crate) fn map_from(&mut self, from: usize, mut retired: impl FnMut(u32)) {
        let to = self.slots();
        if from >= to {
            return;
        }
        self.map.reserve(to - from);
        // hashbrown keeps 7/8 of a power-of-two bucket count usable and indexes buckets by the hash's low bits.
        let buckets = (self.map.table.capacity() / 7 * 8)
            .max(1)
            .next_power_of_two();
        let mut rows: Vec<(u64, u32)> = (from..to)
            .map(|s| (spread(self.map.hash(self.arena.get(s as u32))), s as u32))
            .collect();
        radix_sort_by_key(&mut rows, &mut Vec::new(), 0, buckets.trailing_zeros());
        for (hash, slot) in rows {
            if let Some(old) = self.map.upsert(&self.arena, unspread(hash), slot) {
                retired(old);
            }
        }
    }

    /// Forgets an id; returns the slot it had.
    pub(crate) fn remove(&mut self, id: &str) -> Option<u32> {
        self.map.remove(&self.arena, id)
    }

    /// Keeps only the slots of `order`, new slot i being old slot `order[i]`; `order` must hold every slot
    /// the map points at (the live ones). The arena and the map are renumbered side by side (rayon).
    pub(crate) fn renumber(&mut self, order: &[u32]) {
        let old_len = self.slots();
        let (arena, map) = (&mut self.arena, &mut self.map);
        crate::parallel::install(|| {
            rayon::join(
                || arena.renumber(order),
                || {
                    let mut new_slot = vec![u32::MAX; old_len];
                    for (new, &old) in order.iter().enumerate() {
                        new_slot[old as usize] = new as u32;
                    }
                    // An id's hash does not change: rewrite the slots in place.
                    for (s, _) in map.table.iter_mut() {
                        *s = new_slot[*s as usize];
                    }
                },
            )
        });
    }

    /// Bytes held: the arena (ids, end offsets, slot → entry) and the map.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.arena.bytes() + self.map.table.allocation_size()
    }
}

/// Every id in one buffer, in arrival order; see the module documentation.
#[derive(Clone, Debug, Default)]
struct Arena {
    bytes: String,
    ends: Vec<u64>,
    entry_of: Vec<u32>,
}

impl Arena {
    #[inline]
    fn entry(&self, e: usize) -> &str {
        let start = if e == 0 { 0 } else { self.ends[e - 1] as usize };
        &self.bytes[start..self.ends[e] as usize]
    }

    /// The id of a slot.
    #[inline]
    fn get(&self, slot: u32) -> &str {
        self.entry(self.entry_of[slot as usize] as usize)
    }

    /// Appends the id of the next slot.
    fn push(&mut self, id: &str) {
        self.entry_of.push(self.ends.len() as u32);
        self.bytes.push_str(id);
        self.ends.push(self.bytes.len() as u64);
    }

    /// Keeps only the slots of `order`, new slot i being old slot `order[i]`; entries no slot keeps (removed
    /// or replaced ids) are squeezed out in one sequential pass that keeps the others in arrival order.
    fn renumber(&mut self, order: &[u32]) {
        let mut entry_of: Vec<u32> = order.iter().map(|&s| self.entry_of[s as usize]).collect();
        if self.ends.len() > order.len() {
            let mut kept = vec![false; self.ends.len()];
            for &e in &entry_of {
                kept[e as usize] = true;
            }
            let mut moved = vec![u32::MAX; self.ends.len()];
            let mut out = Arena {
                bytes: String::with_capacity(self.bytes.len()),
                ends: Vec::with_capacity(order.len()),
                entry_of: Vec::new(),
            };
            for (e, _) in kept.iter().enumerate().filter(|(_, k)| **k) {
                moved[e] = out.ends.len() as u32;
                out.bytes.push_str(self.entry(e));
                out.ends.push(out.bytes.len() as u64);
            }
            for e in &mut entry_of {
                *e = moved[*e as usize];
            }
            *self = out;
        }
        // The buffer grew by doubling; what a renumbering leaves is kept at its size.
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.entry_of = entry_of;
    }

    fn bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 8 + self.entry_of.capacity() * 4
    }
}

/// Ids to slots: slot numbers and 32 bits of each id's hash; the ids themselves live once, in the arena.
#[derive(Clone, Debug, Default)]
struct IdMap {
    table: HashTable<(u32, u32)>,
    hasher: DefaultHashBuilder,
}

/// The table's 64-bit hash from the 32 bits kept: a multiplication spreads them over the high bits (the
/// table's tag) and keeps the low bits (its bucket index) uniform.
#[inline(always)]
fn spread(h: u32) -> u64 {
    u64::from(h).wrapping_mul(SPREAD)
}

/// The 32 bits kept, back from [`spread`]'s result (multiplying by an odd number is invertible mod 2^64).
#[inline(always)]
fn unspread(hash: u64) -> u32 {
    hash.wrapping_mul(UNSPREAD) as u32
}

const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
/// SPREAD's inverse mod 2^64, by Newton's iteration (each step doubles the correct low bits).
const UNSPREAD: u64 = {
    let mut x = SPREAD;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(SPREAD.wrapping_mul(x)));
        i += 1;
    }
    x
};
const _: () = assert!(SPREAD.wrapping_mul(UNSPREAD) == 1);

impl IdMap {
    #[inline]
    fn hash(&self, id: &str) -> u32 {
        self.hasher.hash_one(id) as u32
    }

    fn get(&self, ids: &Arena, id: &str) -> Option<u32> {
        let h = self.hash(id);
        self.table
            .find(spread(h), |&(s, hs)| hs == h && ids.get(s) == id)
            .map(|&(s, _)| s)
    }

    /// Points the id of `slot` (already in `ids`, its hash `h`) at `slot`, returning the slot it pointed at
    /// before, if any.
    fn upsert(&mut self, ids: &Arena, h: u32, slot: u32) -> Option<u32> {
        let id = ids.get(slot);
        match self.table.entry(
            spread(h),
            |&(s, hs)| hs == h && ids.get(s) == id,
            |&(_, hs)| spread(hs),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                Some(std::mem::replace(&mut e.get_mut().0, slot))
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert((slot, h));
                None
            }
        }
    }

    fn remove(&mut self, ids: &Arena, id: &str) -> Option<u32> {
        let h = self.hash(id);
        self.table
            .find_entry(spread(h), |&(s, hs)| hs == h && ids.get(s) == id)
            .ok()
            .map(|e| e.remove().0.0)
    }

    fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional, |&(_, h)| spread(h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_replace_remove_renumber() {
        let mut ids = IdTable::default();
        assert_eq!(ids.assign("a"), (0, None));
        assert_eq!(ids.assign("bb"), (1, None));
        assert_eq!(ids.assign("a"), (2, Some(0)));
        assert_eq!(ids.get("a"), Some(2));
        assert_eq!(ids.id(1), "bb");
        assert_eq!(ids.remove("bb"), Some(1));
        assert_eq!(ids.get("bb"), None);
        assert_eq!(ids.remove("bb"), None);
        ids.renumber(&[2]);
        assert_eq!(ids.get("a"), Some(0));
        assert_eq!(ids.slots(), 1);
        assert_eq!(ids.id(0), "a");
        ids.assign("");
        assert_eq!(ids.get(""), Some(1));
    }

    #[test]
    fn bulk_resolution_equals_one_by_one() {
        let names: Vec<String> = (0..5000).map(|i| format!("id{}", i % 3001)).collect();
        let mut one = IdTable::default();
        let mut retired_one = Vec::new();
        for n in &names {
            if let (_, Some(old)) = one.assign(n) {
                retired_one.push(old);
            }
        }
        let mut bulk = IdTable::default();
        for n in &names {
            bulk.push(n);
        }
        let mut retired_bulk = Vec::new();
        bulk.map_from(0, |old| retired_bulk.push(old));
        retired_one.sort_unstable();
        retired_bulk.sort_unstable();
        assert_eq!(retired_one, retired_bulk);
        for n in &names {
            assert_eq!(one.get(n), bulk.get(n));
        }
        // Renumbering in reverse keeps every live id findable, and drops the retired entries' bytes.
        let mut live: Vec<u32> = names.iter().map(|n| bulk.get(n).unwrap()).collect();
        live.sort_unstable();
        live.dedup();
        live.reverse();
        bulk.renumber(&live);
        assert_eq!(bulk.slots(), 3001);
        for (new, &old) in live.iter().enumerate() {
            assert_eq!(bulk.id(new as u32), one.id(old));
            assert_eq!(bulk.get(one.id(old)), Some(new as u32));
        }
    }
}

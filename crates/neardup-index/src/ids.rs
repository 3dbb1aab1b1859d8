//! The user's ids (URLs, paths, DOIs) and the dense slot numbers the indexes use instead.
//!
//! Ids live in one byte arena with an offset per slot, so a million ids are two allocations, not a million;
//! the hash table maps an id to its slot and stores only the slot number. A slot whose id was replaced or
//! removed keeps its bytes until [`IdTable::compact`] drops them.

use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// Ids by slot, and slots by id.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdTable {
    bytes: String,
    /// `starts[s]..starts[s + 1]` is slot `s`'s id.
    starts: Vec<usize>,
    map: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl IdTable {
    /// The number of slots (live or retired).
    pub(crate) fn slots(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// The id of a slot.
    pub(crate) fn id(&self, slot: u32) -> &str {
        let s = slot as usize;
        &self.bytes[self.starts[s]..self.starts[s + 1]]
    }

    /// The live slot of an id.
    pub(crate) fn get(&self, id: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(id);
        self.map.find(hash, |&s| self.id(s) == id).copied()
    }

    /// Room for `more` ids of about `bytes` bytes in all.
    pub(crate) fn reserve(&mut self, more: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        self.starts.reserve(more + 1);
        let (starts, text, hasher) = (&self.starts, &self.bytes, &self.hasher);
        self.map.reserve(more, |&s| {
            let s = s as usize;
            hasher.hash_one(&text[starts[s]..starts[s + 1]])
        });
    }

    /// Gives `id` the next slot; returns it, and the slot the id had before (now retired), if any.
    pub(crate) fn assign(&mut self, id: &str) -> (u32, Option<u32>) {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let slot = self.slots() as u32;
        self.bytes.push_str(id);
        self.starts.push(self.bytes.len());
        let (starts, text, hasher) = (&self.starts, &self.bytes, &self.hasher);
        let of = |s: u32| &text[starts[s as usize]..starts[s as usize + 1]];
        let hash = hasher.hash_one(id);
        match self
            .map
            .entry(hash, |&s| of(s) == id, |&s| hasher.hash_one(of(s)))
        {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                (slot, Some(std::mem::replace(e.get_mut(), slot)))
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(slot);
                (slot, None)
            }
        }
    }

    /// Forgets an id; returns the slot it had.
    pub(crate) fn remove(&mut self, id: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(id);
        let (starts, text) = (&self.starts, &self.bytes);
        self.map
            .find_entry(hash, |&s| {
                &text[starts[s as usize]..starts[s as usize + 1]] == id
            })
            .ok()
            .map(|e| e.remove().0)
    }

    /// Keeps the slots for which `keep` is true, renumbered densely in their old order; returns, for each old
    /// slot, its new number (or `u32::MAX` if dropped).
    pub(crate) fn compact(&mut self, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let mut fresh = IdTable::default();
        let mut renumber = Vec::with_capacity(self.slots());
        for slot in 0..self.slots() as u32 {
            if keep(slot) {
                renumber.push(fresh.slots() as u32);
                fresh.assign(self.id(slot));
            } else {
                renumber.push(u32::MAX);
            }
        }
        *self = fresh;
        renumber
    }

    /// Bytes held: the arena, the offsets and the map.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.starts.capacity() * std::mem::size_of::<usize>()
            + self.map.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_replace_remove_compact() {
        let mut ids = IdTable::default();
        assert_eq!(ids.assign("a"), (0, None));
        assert_eq!(ids.assign("bb"), (1, None));
        assert_eq!(ids.assign("a"), (2, Some(0)));
        assert_eq!(ids.get("a"), Some(2));
        assert_eq!(ids.id(1), "bb");
        assert_eq!(ids.remove("bb"), Some(1));
        assert_eq!(ids.get("bb"), None);
        assert_eq!(ids.remove("bb"), None);
        let renumber = ids.compact(|s| s == 2);
        assert_eq!(renumber, [u32::MAX, u32::MAX, 0]);
        assert_eq!(ids.get("a"), Some(0));
        assert_eq!(ids.slots(), 1);
        assert_eq!(ids.id(0), "a");
        ids.assign("");
        assert_eq!(ids.get(""), Some(1));
    }
}

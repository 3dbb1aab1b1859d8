//! One band's table of chain heads: a 64-bit hash of a band's bytes → the first slot of the chain of
//! entries whose band hashes alike. Open addressing with linear probing, each entry a 32-bit tag of the
//! hash and the head slot side by side, so a lookup is usually one cache line: the general hash maps it
//! replaces spent two (control bytes, then the bucket) on every band of every query.
//!
//! The tag is the low 32 bits of the hash and also gives the home position, so the table can grow without
//! the hashes. Two band contents whose tags are equal share a chain; the caller compares bytes on lookup,
//! as it must anyway for hashes that collide.
//!
//! An entry keeps its head plus one, so that an empty entry is all zeros: a grown table is zeroed memory
//! that nothing has to fill, and its pages are mapped on two cores ([`super::ahead::map_now`]) before the
//! entries move in, instead of one page fault at a time as they land.

/// The stored head of an empty entry.
const EMPTY: u32 = 0;

#[derive(Default)]
pub(super) struct HeadTable {
    /// `[tag, head + 1]`; all zeros for an empty entry. The length is zero or a power of two.
    entries: Vec<[u32; 2]>,
    len: usize,
}

impl HeadTable {
    /// Asks the CPU to load the cache line where the lookup of `hash` begins. A query or an insert touches
    /// one random line per band; asking for all of them first lets their misses overlap.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        if let Some(mask) = self.entries.len().checked_sub(1) {
            super::prefetch(&self.entries[hash as u32 as usize & mask]);
        }
    }

    /// The head of the chain for `hash`, if any.
    #[inline]
    pub(super) fn get(&self, hash: u64) -> Option<u32> {
        let tag = hash as u32;
        let mask = self.entries.len().checked_sub(1)?;
        let mut at = tag as usize & mask;
        loop {
            let [t, head] = self.entries[at];
            if head == EMPTY {
                return None;
            }
            if t == tag {
                return Some(head - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Makes `head` the chain's head for `hash`, returning the previous head if there was one.
    pub(super) fn replace(&mut self, hash: u64, head: u32) -> Option<u32> {
        debug_assert_ne!(head, u32::MAX);
        let stored = head + 1;
        if (self.len + 1) * 4 > self.entries.len() * 3 {
            self.grow();
        }
        let tag = hash as u32;
        let mask = self.entries.len() - 1;
        let mut at = tag as usize & mask;
        loop {
            let entry = &mut self.entries[at];
            if entry[1] == EMPTY {
                *entry = [tag, stored];
                self.len += 1;
                return None;
            }
            if entry[0] == tag {
                return Some(std::mem::replace(&mut entry[1], stored) - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Removes the chain for `hash` (backward-shift deletion: no tombstones).
    pub(super) fn remove(&mut self, hash: u64) {
        let tag = hash as u32;
        let Some(mask) = self.entries.len().checked_sub(1) else {
            return;
        };
        let mut at = tag as usize & mask;
        loop {
            let [t, head] = self.entries[at];
            if head == EMPTY {
                return;
            }
            if t == tag {
                break;
            }
            at = (at + 1) & mask;
        }
        // Shift each later entry of the run back into the hole when its home allows it.
        let mut hole = at;
        let mut next = (hole + 1) & mask;
        loop {
            let [t, head] = self.entries[next];
            if head == EMPTY {
                break;
            }
            let home = t as usize & mask;
            // The entry may move to the hole if the hole lies on its probe path (home ..= next, cyclically).
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(hole) & mask) {
                self.entries[hole] = self.entries[next];
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.entries[hole] = [0, EMPTY];
        self.len -= 1;
    }

    /// The chains' heads, in table order.
    pub(super) fn heads(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries
            .iter()
            .map(|e| e[1])
            .filter(|&head| head != EMPTY)
            .map(|head| head - 1)
    }

    fn grow(&mut self) {
        let capacity = (self.entries.len() * 2).max(16);
        let old = std::mem::replace(&mut self.entries, vec![[0, EMPTY]; capacity]);
        super::ahead::map_now(self.entries.as_ptr_range());
        let mask = capacity - 1;
        for [tag, head] in old.into_iter().filter(|e| e[1] != EMPTY) {
            let mut at = tag as usize & mask;
            while self.entries[at][1] != EMPTY {
                at = (at + 1) & mask;
            }
            self.entries[at] = [tag, head];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Random inserts, replacements and removals agree with a map, including tags that share a home.
    #[test]
    fn agrees_with_a_map() {
        let mut table = HeadTable::default();
        let mut model: HashMap<u32, u32> = HashMap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..200_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Few distinct tags, many in the same low bits: long runs and wrap-around.
            let tag = ((state >> 8) as u32 % 3_000) * 64 + (state as u32 % 3);
            let hash = u64::from(tag) | (state & !0xffff_ffff);
            match state % 5 {
                0 | 1 => {
                    assert_eq!(table.replace(hash, step), model.insert(tag, step));
                }
                2 => {
                    table.remove(hash);
                    model.remove(&tag);
                }
                _ => assert_eq!(table.get(hash), model.get(&tag).copied()),
            }
            assert_eq!(table.len, model.len());
        }
        for (&tag, &head) in &model {
            assert_eq!(table.get(u64::from(tag)), Some(head));
        }
        let mut heads: Vec<u32> = table.heads().collect();
        let mut expected: Vec<u32> = model.values().copied().collect();
        heads.sort_unstable();
        expected.sort_unstable();
        assert_eq!(heads, expected);
    }
}

//! Duplicate-id detection: one 128-bit hash of each document's id, with where it was first seen.
//!
//! An entry is a 16-byte hash (xxh3-128) and a 16-byte location (input index, line or row): 32 bytes in a
//! hash table at most 7/8 full with one control byte per slot, so about 37 bytes per document on average
//! (twice that for a moment while the table grows). Keeping the ids themselves would cost their length
//! plus 24 bytes each. Two different ids have the same 128-bit hash with probability about n²/2¹²⁹: under
//! 10⁻¹⁴ for a trillion ids, far below the odds of a disk or memory error, so a hash match is taken as a
//! match.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The table's keys are already uniform hashes: use their low bits as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for (i, b) in bytes.iter().take(8).enumerate() {
            self.0 |= u64::from(*b) << (8 * i);
        }
    }
    fn write_u128(&mut self, i: u128) {
        self.0 = i as u64;
    }
}

/// The ids seen so far, each with its first location (input index, line or row number).
#[derive(Default)]
pub(crate) struct IdSet {
    seen: HashMap<u128, (u32, u64), BuildHasherDefault<Identity>>,
}

impl IdSet {
    /// Records `id` at `at`; if it was seen before, returns where.
    pub(crate) fn first_seen(&mut self, id: &str, at: (u32, u64)) -> Option<(u32, u64)> {
        let key = xxhash_rust::xxh3::xxh3_128(id.as_bytes());
        match self.seen.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(at);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_location_is_remembered() {
        let mut ids = IdSet::default();
        assert_eq!(ids.first_seen("a", (0, 1)), None);
        assert_eq!(ids.first_seen("b", (0, 2)), None);
        assert_eq!(ids.first_seen("a", (1, 7)), Some((0, 1)));
        assert_eq!(ids.first_seen("a", (1, 9)), Some((0, 1)));
    }
}

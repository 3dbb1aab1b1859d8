//! Memory statistics: what an in-memory index holds, in bytes allocated, tables and ids apart.
//!
//! Both index kinds report the same [`MemoryStats`] (what `index stats` prints), counting capacities, not
//! lengths: the figure is what the allocator handed out. "Tables" are everything that answers queries (for a
//! Hamming index the fingerprints, liveness bits and permuted tables; for an LSH index the signatures and
//! band tables); "ids" are the id table (module `ids`): the id bytes, their offsets and the id map.

/// Memory held by an index, in bytes allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Stored ids (live entries).
    pub entries: usize,
    /// Number of tables.
    pub tables: usize,
    /// Fingerprints, liveness bits, and every table's slot column, fragment column and directory.
    pub table_bytes: usize,
    /// The ids: their bytes, their end offsets, and the id → slot hash table.
    pub id_bytes: usize,
}

impl MemoryStats {
    /// Table bytes per stored entry.
    pub fn table_bytes_per_entry(&self) -> f64 {
        self.table_bytes as f64 / self.entries.max(1) as f64
    }

    /// Id bytes per stored entry.
    pub fn id_bytes_per_entry(&self) -> f64 {
        self.id_bytes as f64 / self.entries.max(1) as f64
    }
}

//! The compact permuted tables, written once for both homes of an index: vectors in memory
//! ([`super::HammingIndex`]) and sections of a mapped segment file ([`super::mapped`]).
//!
//! A table orders rows by the table's permuted fingerprint. Row columns: a `u32` slot per row (none for table 0,
//! whose row i is slot i), an 8-bit fragment (the permuted value's bits right after the directory bits), and a
//! directory of `2^dir_bits + 1` row numbers (the first row of each top-bits prefix, then the row count). See
//! the module documentation of [`super::index`] for the byte count and the reasons.
//!
//! The query kernel ([`candidates`]) reads every column through [`Columns`], and treats what it reads as
//! untrusted: a directory entry past the end is clamped and a slot past the end is skipped, so a damaged file
//! gives wrong answers at worst, never a panic.

use super::plan::TableLayout;
use crate::hamming;
use crate::radix::radix_sort_by_key;
use rayon::prelude::*;

/// Bits of the permuted value kept per row after the directory bits.
pub(crate) const FRAG_BITS: u32 = 8;

/// The columns of one table, wherever they live.
pub(crate) trait Columns {
    /// The slot of each row; empty for table 0.
    fn slots(&self) -> &[u32];
    /// The fragment of each row.
    fn frags(&self) -> &[u8];
    /// The directory.
    fn dir(&self) -> &[u32];
}

/// One permuted table held in vectors.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    /// The slot of each row; empty for table 0, whose row i is slot i.
    pub slots: Vec<u32>,
    /// The permuted value's `FRAG_BITS` bits after the directory bits, per row.
    pub frags: Vec<u8>,
    /// `2^dir_bits + 1` entries: the first row of each top-bits prefix, then the number of rows.
    pub dir: Vec<u32>,
}

impl Table {
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * 4 + self.frags.capacity() + self.dir.capacity() * 4
    }
}

impl Columns for Table {
    fn slots(&self) -> &[u32] {
        &self.slots
    }
    fn frags(&self) -> &[u8] {
        &self.frags
    }
    fn dir(&self) -> &[u32] {
        &self.dir
    }
}

/// The fragment of a permuted value: its `FRAG_BITS` bits after the top `dir_bits`.
#[inline(always)]
fn fragment(permuted: u64, dir_bits: u32) -> u8 {
    ((permuted << dir_bits) >> (64 - FRAG_BITS)) as u8
}

/// The directory bucket of a permuted value.
#[inline(always)]
fn bucket(permuted: u64, dir_bits: u32) -> usize {
    if dir_bits == 0 {
        0
    } else {
        (permuted >> (64 - dir_bits)) as usize
    }
}

/// The first index in `lo..hi` where `pred` is false (`pred` true then false over the range).
#[inline(always)]
fn partition(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Directory bits for `n` rows: about one bucket per 8 rows, capped by the shortest key (and at 30).
pub(crate) fn dir_bits_for(n: usize, layouts: &[TableLayout]) -> u32 {
    let min_key = layouts.iter().map(|l| l.key_bits).min().unwrap_or(0);
    match n / 8 {
        0 => 0,
        b => (usize::BITS - 1 - b.leading_zeros()).min(min_key).min(30),
    }
}

/// `slots` (in increasing order) sorted by `layout`'s permuted fingerprint, ties in slot order, each packed as
/// `top 32 permuted bits << 32 | slot`, into `rows` (`scratch` is the sort's second buffer; both are reused
/// from table to table, which spares page faults). Deterministic: a function of the fingerprints alone.
fn sort_rows(
    layout: &TableLayout,
    fps: &[u64],
    slots: impl Iterator<Item = u32>,
    rows: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
) {
    rows.clear();
    rows.extend(slots.map(|s| (layout.permute(fps[s as usize]) >> 32) << 32 | u64::from(s)));
    radix_sort_by_key(rows, scratch, 32, 32);
    if layout.key_bits > 32 {
        // Keys longer than the packed bits: runs of equal top bits are put in full permuted order.
        let mut start = 0;
        while start < rows.len() {
            let top = rows[start] >> 32;
            let end = start + rows[start..].partition_point(|r| r >> 32 == top);
            if end - start > 1 {
                rows[start..end].sort_by_key(|&r| layout.permute(fps[r as u32 as usize]));
            }
            start = end;
        }
    }
}

/// The fragment column and directory of sorted rows.
fn columns(layout: &TableLayout, fps: &[u64], rows: &[u64], dir_bits: u32) -> (Vec<u8>, Vec<u32>) {
    // The packed top 32 bits hold the fragment when the directory leaves room; otherwise permute again.
    let frags = if dir_bits + FRAG_BITS <= 32 {
        rows.iter()
            .map(|&r| fragment(r >> 32 << 32, dir_bits))
            .collect()
    } else {
        rows.iter()
            .map(|&r| fragment(layout.permute(fps[r as u32 as usize]), dir_bits))
            .collect()
    };
    let buckets = 1usize << dir_bits;
    let mut dir = Vec::with_capacity(buckets + 1);
    // The rows are sorted: one sequential sweep writes each bucket's first row.
    for (row, &r) in rows.iter().enumerate() {
        let b = bucket(r >> 32 << 32, dir_bits);
        while dir.len() <= b {
            dir.push(row as u32);
        }
    }
    dir.resize(buckets + 1, rows.len() as u32);
    (frags, dir)
}

/// Table 0 over `slots` of `fps`: the order that renumbers them (new slot i is old slot `order[i]`) and the
/// table's columns (no slot column: row i is new slot i).
pub(crate) fn build_first(
    layout: &TableLayout,
    fps: &[u64],
    slots: &[u32],
    dir_bits: u32,
) -> (Vec<u32>, Table) {
    let (mut rows, mut scratch) = (Vec::with_capacity(slots.len()), Vec::new());
    sort_rows(layout, fps, slots.iter().copied(), &mut rows, &mut scratch);
    drop(scratch);
    let order: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let (frags, dir) = columns(layout, fps, &rows, dir_bits);
    let table = Table {
        slots: Vec::new(),
        frags,
        dir,
    };
    (order, table)
}

/// The tables after the first over every slot of `fps` (already in table 0's order), in parallel; each
/// table's content depends only on the fingerprints, never on the thread count.
pub(crate) fn build_others(layouts: &[TableLayout], fps: &[u64], dir_bits: u32) -> Vec<Table> {
    let n = fps.len() as u32;
    layouts
        .par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(rows, scratch), layout| {
                sort_rows(layout, fps, 0..n, rows, scratch);
                let (frags, dir) = columns(layout, fps, rows, dir_bits);
                let slots = rows.iter().map(|&r| r as u32).collect();
                Table { slots, frags, dir }
            },
        )
        .collect()
}

/// Pushes onto `out` every (slot, distance) within `k` of `fp` that the tables find (a slot may come once per
/// table that finds it). Liveness is the caller's business.
pub(crate) fn candidates<T: Columns>(
    layouts: &[TableLayout],
    tables: &[T],
    dir_bits: u32,
    fps: &[u64],
    fp: u64,
    k: u32,
    out: &mut Vec<(u32, u32)>,
) {
    // In phases across the tables (all directory reads, then all fragment searches, then all candidates),
    // so that the memory accesses of different tables overlap instead of waiting on one another.
    let mut ranges: Vec<(usize, usize, u64)> = Vec::with_capacity(tables.len());
    for (layout, table) in layouts.iter().zip(tables) {
        let q = layout.permute(fp);
        let b = bucket(q, dir_bits);
        let (dir, rows) = (table.dir(), table.frags().len());
        let at = |i: usize| dir.get(i).map_or(rows, |&r| (r as usize).min(rows));
        let (lo, hi) = (at(b), at(b + 1));
        ranges.push((lo, hi.max(lo), q));
    }
    for ((layout, table), range) in layouts.iter().zip(tables).zip(ranges.iter_mut()) {
        let (lo, hi, q) = *range;
        // Within the bucket, rows are sorted by their next bits: compare the key's part of the fragment.
        let below = layout.key_bits - dir_bits;
        let drop = FRAG_BITS - below.min(FRAG_BITS);
        let want = u32::from(fragment(q, dir_bits)) >> drop;
        let frags = table.frags();
        let first = partition(lo, hi, |i| u32::from(frags[i]) >> drop < want);
        let end = partition(first, hi, |i| u32::from(frags[i]) >> drop == want);
        *range = (first, end, q);
    }
    let mut slots_found: Vec<usize> = Vec::new();
    for (t, ((layout, table), &(mut first, mut end, q))) in
        layouts.iter().zip(tables).zip(&ranges).enumerate()
    {
        let slots = table.slots();
        let slot_of = |i: usize| {
            if t == 0 {
                Some(i)
            } else {
                slots.get(i).map(|&s| s as usize)
            }
        };
        if layout.key_bits - dir_bits > FRAG_BITS {
            // The key is longer than directory and fragment: narrow by the whole permuted key.
            let shift = 64 - layout.key_bits;
            let key = q >> shift;
            let key_of = |i: usize| {
                slot_of(i)
                    .and_then(|s| fps.get(s))
                    .map_or(u64::MAX, |&f| layout.permute(f) >> shift)
            };
            first = partition(first, end, |i| key_of(i) < key);
            end = partition(first, end, |i| key_of(i) == key);
        }
        // Fragment bits past the key are fingerprint bits too: more than k of them differing rules a row
        // out without fetching its fingerprint.
        let past_key = FRAG_BITS - (layout.key_bits - dir_bits).min(FRAG_BITS);
        let past_key_mask = ((1u32 << past_key) - 1) as u8;
        let qf = fragment(q, dir_bits);
        let frags = table.frags();
        slots_found.extend(
            (first..end)
                .filter(|&i| ((frags[i] ^ qf) & past_key_mask).count_ones() <= k)
                .filter_map(slot_of),
        );
    }
    // The fingerprints last, all together.
    for slot in slots_found {
        if let Some(&stored) = fps.get(slot) {
            let d = hamming(stored, fp);
            if d <= k {
                out.push((slot as u32, d));
            }
        }
    }
}

//! The compact permuted tables, written once for both homes of an index: vectors in memory
//! ([`super::HammingIndex`]) and sections of a mapped segment file ([`super::mapped`]).
//!
//! A table orders rows by the table's permuted fingerprint and has a directory of `2^dir_bits + 1` row
//! numbers (the first row of each top-bits prefix, then the row count). Table 0's row i is slot i, so it needs
//! no other column: a row's fragment is read from its fingerprint. Every other table holds one `u32` word per
//! row: the slot in the low `slot_bits` bits (as many as the largest slot needs), and above it, in the
//! `32 - slot_bits` bits left, the *fragment*: the permuted value's bits right after the directory bits. One
//! word, one memory read, tells a row's key bits and where its fingerprint is. (Segments written before
//! 2026-11-26 hold a `u32` slot column and an 8-bit fragment column per table: [`Rows::Split`] reads them.)
//! See the module documentation of [`super::index`] for the byte count and the reasons.
//!
//! The query kernel ([`candidates`]) reads every table through a [`View`], and treats what it reads as
//! untrusted: a directory entry past the end is clamped and a slot past the end is skipped, so a damaged file
//! gives wrong answers at worst, never a panic.

use super::plan::TableLayout;
use crate::hamming;
use crate::radix::radix_sort_by_key;
use rayon::prelude::*;

/// Fragment bits of the first format's fragment column ([`Rows::Split`]).
const SPLIT_FRAG_BITS: u32 = 8;

/// Fragment bits of table 0, whose fragments are computed from the fingerprints: as many as a `u32` holds.
const FIRST_FRAG_BITS: u32 = 32;

/// How a table's rows are stored.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rows<'a> {
    /// Table 0: row i is slot i, and its fragment is computed from fingerprint i permuted by `layout`.
    First { layout: &'a TableLayout },
    /// A word per row: the slot in the low `slot_bits` bits, the fragment in the bits above.
    Packed { words: &'a [u32], slot_bits: u32 },
    /// The first format of segments: a slot column and an 8-bit fragment column.
    Split { slots: &'a [u32], frags: &'a [u8] },
}

/// One table as the query kernel reads it, wherever it lives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View<'a> {
    pub rows: Rows<'a>,
    /// The directory.
    pub dir: &'a [u32],
    /// The number of rows (directory entries past it are clamped to it).
    pub len: usize,
}

/// A table's rows as one layout stores them: the kernel's loops are compiled once per layout
/// ([`with_rows`]), so that reading a row is a load and a shift, not a match.
trait RowRead {
    /// The fragment bits of each row.
    fn frag_bits(&self) -> u32;
    /// Row `i`'s fragment; 0 for a row past the end.
    fn frag(&self, i: usize) -> u64;
    /// Row `i`'s slot, or `None` for a row past the end.
    fn slot(&self, i: usize) -> Option<usize>;
}

/// [`Rows::First`].
struct FirstRows<'a> {
    fps: &'a [u64],
    layout: &'a TableLayout,
    dir_bits: u32,
    len: usize,
}

impl RowRead for FirstRows<'_> {
    #[inline(always)]
    fn frag_bits(&self) -> u32 {
        FIRST_FRAG_BITS
    }
    #[inline(always)]
    fn frag(&self, i: usize) -> u64 {
        self.fps.get(i).map_or(0, |&f| {
            fragment(self.layout.permute(f), self.dir_bits, self.frag_bits())
        })
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> Option<usize> {
        (i < self.len).then_some(i)
    }
}

/// [`Rows::Packed`].
struct PackedRows<'a> {
    words: &'a [u32],
    slot_bits: u32,
}

impl RowRead for PackedRows<'_> {
    #[inline(always)]
    fn frag_bits(&self) -> u32 {
        32 - self.slot_bits.min(32)
    }
    #[inline(always)]
    fn frag(&self, i: usize) -> u64 {
        self.words
            .get(i)
            .map_or(0, |&w| u64::from(w) >> self.slot_bits)
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> Option<usize> {
        let mask = (1u64 << self.slot_bits) - 1;
        self.words.get(i).map(|&w| (u64::from(w) & mask) as usize)
    }
}

/// [`Rows::Split`].
struct SplitRows<'a> {
    slots: &'a [u32],
    frags: &'a [u8],
}

impl RowRead for SplitRows<'_> {
    #[inline(always)]
    fn frag_bits(&self) -> u32 {
        SPLIT_FRAG_BITS
    }
    #[inline(always)]
    fn frag(&self, i: usize) -> u64 {
        self.frags.get(i).map_or(0, |&f| u64::from(f))
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> Option<usize> {
        self.slots.get(i).map(|&s| s as usize)
    }
}

/// Runs `$body` with `$rows` bound to the [`RowRead`] of `$view`'s layout.
macro_rules! with_rows {
    ($view:expr, $fps:expr, $dir_bits:expr, |$rows:ident| $body:expr) => {
        match $view.rows {
            Rows::First { layout } => {
                let $rows = FirstRows {
                    fps: $fps,
                    layout,
                    dir_bits: $dir_bits,
                    len: $view.len,
                };
                $body
            }
            Rows::Packed { words, slot_bits } => {
                let $rows = PackedRows { words, slot_bits };
                $body
            }
            Rows::Split { slots, frags } => {
                let $rows = SplitRows { slots, frags };
                $body
            }
        }
    };
}

/// One permuted table held in vectors.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    /// Per row, `fragment << slot_bits | slot`; empty for table 0, whose row i is slot i.
    pub words: Vec<u32>,
    /// The slot's bits in a word.
    pub slot_bits: u32,
    /// `2^dir_bits + 1` entries: the first row of each top-bits prefix, then the number of rows.
    pub dir: Vec<u32>,
    /// The number of rows.
    pub rows: usize,
}

impl Table {
    pub fn bytes(&self) -> usize {
        self.words.capacity() * 4 + self.dir.capacity() * 4
    }

    /// The table as the kernel reads it; `layout` is its layout, needed by table 0 (`first`).
    pub fn view<'a>(&'a self, layout: &'a TableLayout, first: bool) -> View<'a> {
        let rows = if first {
            Rows::First { layout }
        } else {
            Rows::Packed {
                words: &self.words,
                slot_bits: self.slot_bits,
            }
        };
        View {
            rows,
            dir: &self.dir,
            len: self.rows,
        }
    }
}

/// The slot bits of a table of `n` rows: enough for slot `n - 1`, at least 1.
pub(crate) fn slot_bits_for(n: usize) -> u32 {
    (u64::BITS - (n.saturating_sub(1) as u64).leading_zeros()).max(1)
}

/// The fragment of a permuted value: its `bits` bits after the top `dir_bits` (`bits` ≤ 64 − `dir_bits`).
#[inline(always)]
fn fragment(permuted: u64, dir_bits: u32, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        (permuted << dir_bits) >> (64 - bits)
    }
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

/// The directory of sorted rows.
fn directory(rows: &[u64], dir_bits: u32) -> Vec<u32> {
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
    dir
}

/// The packed words of sorted rows: `fragment << slot_bits | slot`.
fn words(
    layout: &TableLayout,
    fps: &[u64],
    rows: &[u64],
    dir_bits: u32,
    slot_bits: u32,
) -> Vec<u32> {
    let bits = 32 - slot_bits;
    // The packed top 32 bits hold the fragment when the directory leaves room; otherwise permute again.
    let frag = |r: u64| {
        if dir_bits + bits <= 32 {
            fragment(r >> 32 << 32, dir_bits, bits)
        } else {
            fragment(layout.permute(fps[r as u32 as usize]), dir_bits, bits)
        }
    };
    rows.iter()
        .map(|&r| {
            // `bits` + `slot_bits` = 32, so the shifted fragment fits (a shift by 32 would not: u64).
            ((frag(r) << slot_bits) | (r & 0xFFFF_FFFF)) as u32
        })
        .collect()
}

/// `slots` of `fps` in table 0's order, packed as [`sort_rows`] packs them.
fn first_rows(layout: &TableLayout, fps: &[u64], slots: &[u32]) -> Vec<u64> {
    let (mut rows, mut scratch) = (Vec::with_capacity(slots.len()), Vec::new());
    sort_rows(layout, fps, slots.iter().copied(), &mut rows, &mut scratch);
    rows
}

/// The order of table 0 over `slots` of `fps`: new slot i is old slot `order[i]`.
pub(crate) fn first_order(layout: &TableLayout, fps: &[u64], slots: &[u32]) -> Vec<u32> {
    first_rows(layout, fps, slots)
        .iter()
        .map(|&r| r as u32)
        .collect()
}

/// Table 0 over `slots` of `fps`: its order ([`first_order`]) and the table's directory (no other column:
/// row i is new slot i).
pub(crate) fn build_first(
    layout: &TableLayout,
    fps: &[u64],
    slots: &[u32],
    dir_bits: u32,
) -> (Vec<u32>, Table) {
    let rows = first_rows(layout, fps, slots);
    let order: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let table = Table {
        words: Vec::new(),
        slot_bits: 0,
        dir: directory(&rows, dir_bits),
        rows: rows.len(),
    };
    (order, table)
}

/// The tables after the first over every slot of `fps` (already in table 0's order), in parallel; each
/// table's content depends only on the fingerprints, never on the thread count.
pub(crate) fn build_others(layouts: &[TableLayout], fps: &[u64], dir_bits: u32) -> Vec<Table> {
    build_others_packed(layouts, fps, dir_bits, slot_bits_for(fps.len()))
}

/// [`build_others`] with words of `slot_bits` slot bits (at least what the slots need).
fn build_others_packed(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    slot_bits: u32,
) -> Vec<Table> {
    let n = fps.len() as u32;
    layouts
        .par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(rows, scratch), layout| {
                sort_rows(layout, fps, 0..n, rows, scratch);
                Table {
                    words: words(layout, fps, rows, dir_bits, slot_bits),
                    slot_bits,
                    dir: directory(rows, dir_bits),
                    rows: rows.len(),
                }
            },
        )
        .collect()
}

/// Table 0's directory over `fps` already in table 0's order (a sweep, no sort).
pub(crate) fn first_directory(layout: &TableLayout, fps: &[u64], dir_bits: u32) -> Vec<u32> {
    let rows: Vec<u64> = fps.iter().map(|&f| layout.permute(f) >> 32 << 32).collect();
    directory(&rows, dir_bits)
}

/// [`build_others`], a few tables at a time (as many as rayon has threads), each handed to `each` with its
/// index in `layouts` as soon as it is built and dropped after: the tables of a segment being written are
/// never all in memory at once. Stops at the first error of `each`.
pub(crate) fn build_in_turn<E>(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    mut each: impl FnMut(usize, Table) -> Result<(), E>,
) -> Result<(), E> {
    let slot_bits = slot_bits_for(fps.len());
    let width = rayon::current_num_threads().max(1);
    for (c, chunk) in layouts.chunks(width).enumerate() {
        let built = build_others_packed(chunk, fps, dir_bits, slot_bits);
        for (i, table) in built.into_iter().enumerate() {
            each(c * width + i, table)?;
        }
    }
    Ok(())
}

/// Pushes onto `out` every (slot, distance) within `k` of `fp` that the tables find (a slot may come once per
/// table that finds it). Liveness is the caller's business.
pub(crate) fn candidates<'t>(
    layouts: &[TableLayout],
    table: impl Fn(usize) -> View<'t>,
    dir_bits: u32,
    fps: &[u64],
    fp: u64,
    k: u32,
    out: &mut Vec<(u32, u32)>,
) {
    // In phases across the tables (all directory reads, then all fragment searches, then all candidates),
    // so that the memory accesses of different tables overlap instead of waiting on one another.
    let mut ranges: Vec<(usize, usize, u64)> = Vec::with_capacity(layouts.len());
    for (t, layout) in layouts.iter().enumerate() {
        let table = table(t);
        let q = layout.permute(fp);
        let b = bucket(q, dir_bits);
        let (dir, rows) = (table.dir, table.len);
        let at = |i: usize| dir.get(i).map_or(rows, |&r| (r as usize).min(rows));
        let (lo, hi) = (at(b), at(b + 1));
        ranges.push((lo, hi.max(lo), q));
    }
    for ((t, layout), range) in layouts.iter().enumerate().zip(ranges.iter_mut()) {
        let (lo, hi, q) = *range;
        let (first, end) = with_rows!(table(t), fps, dir_bits, |rows| {
            // Within the bucket, rows are sorted by their next bits: compare the key's part of the fragment.
            let bits = rows.frag_bits();
            let drop = bits - (layout.key_bits - dir_bits).min(bits);
            let want = fragment(q, dir_bits, bits) >> drop;
            let first = partition(lo, hi, |i| rows.frag(i) >> drop < want);
            (
                first,
                partition(first, hi, |i| rows.frag(i) >> drop == want),
            )
        });
        *range = (first, end, q);
    }
    let mut slots_found: Vec<usize> = Vec::new();
    for ((t, layout), &(first, end, q)) in layouts.iter().enumerate().zip(&ranges) {
        with_rows!(table(t), fps, dir_bits, |rows| {
            rows_within(
                &rows,
                layout,
                fps,
                (first, end),
                q,
                dir_bits,
                k,
                &mut slots_found,
            )
        });
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

/// Pushes onto `found` the slots of rows `first..end` (those whose fragments match the query's key) that may
/// be within `k` of the query, whose permuted value is `q`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rows_within(
    rows: &impl RowRead,
    layout: &TableLayout,
    fps: &[u64],
    (mut first, mut end): (usize, usize),
    q: u64,
    dir_bits: u32,
    k: u32,
    found: &mut Vec<usize>,
) {
    let bits = rows.frag_bits();
    if layout.key_bits - dir_bits > bits {
        // The key is longer than directory and fragment: narrow by the whole permuted key.
        let shift = 64 - layout.key_bits;
        let key = q >> shift;
        let key_of = |i: usize| {
            rows.slot(i)
                .and_then(|s| fps.get(s))
                .map_or(u64::MAX, |&f| layout.permute(f) >> shift)
        };
        first = partition(first, end, |i| key_of(i) < key);
        end = partition(first, end, |i| key_of(i) == key);
    }
    // Fragment bits past the key are fingerprint bits too: more than k of them differing rules a row out
    // without fetching its fingerprint.
    let past_key = bits - (layout.key_bits - dir_bits).min(bits);
    let past_key_mask = (1u64 << past_key) - 1;
    let qf = fragment(q, dir_bits, bits);
    found.extend(
        (first..end)
            .filter(|&i| ((rows.frag(i) ^ qf) & past_key_mask).count_ones() <= k)
            .filter_map(|i| rows.slot(i)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hamming::plan::Design;
    use proptest::prelude::*;

    /// Fingerprints in clusters (a centre and copies 0 to 4 bits away), so that queries find rows.
    fn clustered(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let centre = next();
            for _ in 0..(next() % 6).min((n - out.len()) as u64) {
                let r = next();
                let flips = r % 5;
                out.push((0..flips).fold(centre, |f, b| f ^ 1 << ((r >> (8 + 6 * b)) % 64)));
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever the fragment bits a word leaves (31 down to none, as slots grow to 2^32), the kernel
        /// finds exactly the rows within k: short fragments only make it compare more fingerprints.
        #[test]
        fn every_fragment_width_finds_exactly_the_rows_within_k(
            seed in any::<u64>(),
            n in 1usize..3000,
            slot_bits in prop_oneof![Just(None), (12u32..=32).prop_map(Some)],
            blocks in 4u32..=6,
        ) {
            let design = Design::new(3, vec![blocks]).unwrap();
            let layouts = design.layouts();
            let fps = clustered(seed, n);
            let dir_bits = dir_bits_for(n, &layouts);
            let all: Vec<u32> = (0..n as u32).collect();
            let (order, first) = build_first(&layouts[0], &fps, &all, dir_bits);
            let sorted: Vec<u64> = order.iter().map(|&o| fps[o as usize]).collect();
            let slot_bits = slot_bits.unwrap_or(slot_bits_for(n)).max(slot_bits_for(n));
            let others = build_others_packed(&layouts[1..], &sorted, dir_bits, slot_bits);
            let tables: Vec<Table> = std::iter::once(first).chain(others).collect();
            let view = |t: usize| tables[t].view(&layouts[t], t == 0);
            for (i, &stored) in sorted.iter().enumerate().step_by(7) {
                let q = stored ^ (1u64 << (i % 64));
                let mut found = Vec::new();
                candidates(&layouts, view, dir_bits, &sorted, q, 3, &mut found);
                found.sort_unstable();
                found.dedup();
                let want: Vec<(u32, u32)> = sorted
                    .iter()
                    .enumerate()
                    .map(|(s, &f)| (s as u32, hamming(f, q)))
                    .filter(|&(_, d)| d <= 3)
                    .collect();
                prop_assert_eq!(found, want);
            }
        }
    }
}

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
//!
//! **Nested tables.** Tables whose permuted values start with the same bits (in a design of 5 blocks choose
//! 2, the four tables keyed by block 0 then another block) hold the rows of each value of those shared
//! leading bits in one contiguous range each, the same set of rows in the same range of rows. So a later
//! table need not name a row's slot (24 bits at 10^7, 27 at 10^8): it names the row's position within its
//! range in an earlier *parent* table (11 bits at 10^7, 14 at 10^8), and a query finds the range's start in
//! the parent's directory, once per probe. Such a table holds a `u16` word per row, the position in the low
//! `local_bits` and the fragment in the bits above ([`Nest`]); a table that shares no leading bits with an
//! earlier packed table, or whose ranges are too long for 16 bits (skewed data, or beyond about 2 × 10^8 rows
//! in 13-bit ranges), keeps packed `u32` words. In 5 choose 2, six of the nine tables after the first nest
//! (three under table 0, whose positions are slots, three under a packed table): 8 + 3 × 4 + 6 × 2 bytes per
//! fingerprint plus the directories, about 37 at 10^7 against 48 with packed words only.
//!
//! See the module documentation of [`super::index`] for the byte count and the reasons.
//!
//! The query kernel ([`candidates`]) reads every table through a [`View`], and treats what it reads as
//! untrusted: a directory entry past the end is clamped and a slot past the end is skipped, so a damaged file
//! gives wrong answers at worst, never a panic.

use super::plan::{self, TableLayout};
use crate::hamming;
use crate::radix::radix_sort_by_key;
use rayon::prelude::*;

/// Fragment bits of the first format's fragment column ([`Rows::Split`]).
const SPLIT_FRAG_BITS: u32 = 8;

/// Fragment bits of table 0, whose fragments are computed from the fingerprints: as many as a `u32` holds.
const FIRST_FRAG_BITS: u32 = 32;

/// The bits of a nested table's word.
pub(crate) const NESTED_BITS: u32 = 16;

/// How a nested table's rows point into its parent's rows (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Nest {
    /// The parent: table 0 or a table of packed words, earlier than this one.
    pub parent: usize,
    /// The leading permuted bits this table shares with its parent that pick a range of the parent's rows
    /// (at most the directory bits, so that the range's start is a directory entry).
    pub prefix_bits: u32,
    /// The bits of a row's position within its range; the fragment has the `16 - local_bits` above them.
    pub local_bits: u32,
}

/// What a nested table's parent gives for a row: its slot.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Parent<'a> {
    /// Table 0: its row i is slot i.
    First,
    /// A table of packed words.
    Packed { words: &'a [u32], slot_bits: u32 },
}

/// How a table's rows are stored.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rows<'a> {
    /// Table 0: row i is slot i, and its fragment is computed from fingerprint i permuted by `layout`.
    First { layout: &'a TableLayout },
    /// A word per row: the slot in the low `slot_bits` bits, the fragment in the bits above.
    Packed { words: &'a [u32], slot_bits: u32 },
    /// A `u16` word per row: the row's position within its range of the parent's rows in the low
    /// `nest.local_bits` bits, the fragment in the bits above; `starts` holds the first row in the parent of
    /// each value of the shared leading bits, then the number of rows.
    Nested {
        words: &'a [u16],
        nest: Nest,
        parent: Parent<'a>,
        starts: &'a [u32],
    },
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

/// The slot of a parent's row.
trait SlotOf {
    fn slot_of(&self, row: usize) -> Option<usize>;
}

/// Table 0 as a parent: row i is slot i.
struct FirstSlots {
    len: usize,
}

impl SlotOf for FirstSlots {
    #[inline(always)]
    fn slot_of(&self, row: usize) -> Option<usize> {
        (row < self.len).then_some(row)
    }
}

impl SlotOf for PackedRows<'_> {
    #[inline(always)]
    fn slot_of(&self, row: usize) -> Option<usize> {
        self.slot(row)
    }
}

/// [`Rows::Nested`], for one query: `base` is the first row of the query's range in the parent.
struct NestedRows<'a, P> {
    words: &'a [u16],
    local_bits: u32,
    base: usize,
    parent: P,
}

impl View<'_> {
    /// The first row of the query's range in a nested table's parent (0 for other tables), for a query whose
    /// permuted value is `q`.
    #[inline(always)]
    fn base(&self, q: u64) -> usize {
        match self.rows {
            Rows::Nested { nest, starts, .. } => {
                let prefix = bucket(q, nest.prefix_bits.min(plan::MAX_PREFIX_BITS));
                starts
                    .get(prefix)
                    .map_or(self.len, |&r| (r as usize).min(self.len))
            }
            _ => 0,
        }
    }
}

impl<P: SlotOf> RowRead for NestedRows<'_, P> {
    #[inline(always)]
    fn frag_bits(&self) -> u32 {
        NESTED_BITS - self.local_bits
    }
    #[inline(always)]
    fn frag(&self, i: usize) -> u64 {
        self.words
            .get(i)
            .map_or(0, |&w| u64::from(w) >> self.local_bits)
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> Option<usize> {
        let mask = (1usize << self.local_bits) - 1;
        let &w = self.words.get(i)?;
        self.parent.slot_of(self.base + (usize::from(w) & mask))
    }
}

/// Runs `$body` with `$rows` bound to the [`RowRead`] of `$view`'s layout; `$base` is [`View::base`] of the
/// query.
macro_rules! with_rows {
    ($view:expr, $fps:expr, $dir_bits:expr, $base:expr, |$rows:ident| $body:expr) => {
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
            Rows::Nested {
                words,
                nest,
                parent,
                ..
            } => {
                let local_bits = nest.local_bits.min(NESTED_BITS);
                match parent {
                    Parent::First => {
                        let $rows = NestedRows {
                            words,
                            local_bits,
                            base: $base,
                            parent: FirstSlots { len: $view.len },
                        };
                        $body
                    }
                    Parent::Packed {
                        words: p,
                        slot_bits,
                    } => {
                        let $rows = NestedRows {
                            words,
                            local_bits,
                            base: $base,
                            parent: PackedRows {
                                words: p,
                                slot_bits,
                            },
                        };
                        $body
                    }
                }
            }
        }
    };
}

/// One permuted table held in vectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Table {
    /// Its rows' words, if it has any.
    pub words: Words,
    /// `2^dir_bits + 1` entries: the first row of each top-bits prefix, then the number of rows.
    pub dir: Vec<u32>,
    /// The number of rows.
    pub rows: usize,
}

/// The words of a table's rows, as [`Rows`] reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Words {
    /// Table 0: none (its row i is slot i).
    #[default]
    First,
    /// Per row, `fragment << slot_bits | slot`.
    Packed { words: Vec<u32>, slot_bits: u32 },
    /// Per row, `fragment << nest.local_bits | position in the parent's range`, and the parent's first row of
    /// each value of the shared leading bits, then the row count.
    Nested {
        words: Vec<u16>,
        nest: Nest,
        starts: Vec<u32>,
    },
}

impl Table {
    pub fn bytes(&self) -> usize {
        let words = match &self.words {
            Words::First => 0,
            Words::Packed { words, .. } => words.capacity() * 4,
            Words::Nested { words, starts, .. } => words.capacity() * 2 + starts.capacity() * 4,
        };
        words + self.dir.capacity() * 4
    }
}

/// Table `t` of `tables` (all of a design's, table 0 first) as the kernel reads it.
pub(crate) fn view<'a>(tables: &'a [Table], layouts: &'a [TableLayout], t: usize) -> View<'a> {
    let table = &tables[t];
    let rows = match &table.words {
        Words::First => Rows::First {
            layout: &layouts[0],
        },
        Words::Packed { words, slot_bits } => Rows::Packed {
            words,
            slot_bits: *slot_bits,
        },
        Words::Nested {
            words,
            nest,
            starts,
        } => Rows::Nested {
            words,
            nest: *nest,
            parent: match &tables[nest.parent].words {
                Words::Packed { words, slot_bits } => Parent::Packed {
                    words,
                    slot_bits: *slot_bits,
                },
                _ => Parent::First,
            },
            starts,
        },
    };
    View {
        rows,
        dir: &table.dir,
        len: table.rows,
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

/// The fragment of `bits` bits of a sorted row (packed as [`sort_rows`] packs them).
fn row_fragment(layout: &TableLayout, fps: &[u64], r: u64, dir_bits: u32, bits: u32) -> u64 {
    // The packed top 32 bits hold the fragment when the directory leaves room; otherwise permute again.
    if dir_bits + bits <= 32 {
        fragment(r >> 32 << 32, dir_bits, bits)
    } else {
        fragment(layout.permute(fps[r as u32 as usize]), dir_bits, bits)
    }
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
    rows.iter()
        .map(|&r| {
            // `bits` + `slot_bits` = 32, so the shifted fragment fits (a shift by 32 would not: u64).
            let frag = row_fragment(layout, fps, r, dir_bits, bits);
            ((frag << slot_bits) | (r & 0xFFFF_FFFF)) as u32
        })
        .collect()
}

/// The first row of each range of `prefix_bits` leading bits in a table whose directory is `dir`, then the
/// row count: `2^prefix_bits + 1` entries.
fn range_starts(dir: &[u32], dir_bits: u32, prefix_bits: u32) -> Vec<u32> {
    let shift = dir_bits - prefix_bits;
    (0..=1usize << prefix_bits)
        .map(|v| dir[v << shift])
        .collect()
}

/// The nested words of sorted rows: `fragment << local_bits | position within the parent's range`, where
/// `starts` are the parent's [`range_starts`] and `parent_row` gives a slot's row in the parent.
fn nested_words(
    layout: &TableLayout,
    fps: &[u64],
    rows: &[u64],
    dir_bits: u32,
    nest: Nest,
    starts: &[u32],
    parent_row: impl Fn(usize) -> usize,
) -> Vec<u16> {
    let bits = NESTED_BITS - nest.local_bits;
    rows.iter()
        .map(|&r| {
            // The shared leading bits are the top of the packed 32 (prefix_bits ≤ 16).
            let prefix = (r >> (64 - nest.prefix_bits)) as usize;
            let start = starts[prefix] as usize;
            let position = parent_row(r as u32 as usize) - start;
            let frag = row_fragment(layout, fps, r, dir_bits, bits);
            ((frag << nest.local_bits) | position as u64) as u16
        })
        .collect()
}

/// Which tables after the first nest, and under which parent, for every slot of `fps` (already in table 0's
/// order, whose directory is `first_dir`): decided from the fingerprints before any table is built, in table
/// order (a table nests under the earlier packed table it shares the most leading bits with, if its ranges
/// are short enough for positions of at most 16 bits, and of at least `min_local_bits`).
pub(crate) fn plan_nests(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    first_dir: &[u32],
    min_local_bits: u32,
) -> Vec<Option<Nest>> {
    let mut nests: Vec<Option<Nest>> = vec![None; layouts.len()];
    // The longest range per (parent, shared bits): tables under the same parent share the count.
    let mut longest_of: std::collections::BTreeMap<(usize, u32), usize> = Default::default();
    for t in 1..layouts.len() {
        let Some((parent, prefix_bits)) =
            plan::nest_parent(layouts, |p| nests[p].is_none(), t, dir_bits)
        else {
            continue;
        };
        let longest = *longest_of.entry((parent, prefix_bits)).or_insert_with(|| {
            if parent == 0 {
                // Table 0's directory already counts the rows of each prefix.
                let stride = 1usize << (dir_bits - prefix_bits);
                (0..1usize << prefix_bits)
                    .map(|v| (first_dir[(v + 1) * stride] - first_dir[v * stride]) as usize)
                    .max()
                    .unwrap_or(0)
            } else {
                let mut counts = vec![0u32; 1 << prefix_bits];
                let layout = &layouts[parent];
                for &f in fps {
                    counts[(layout.permute(f) >> (64 - prefix_bits)) as usize] += 1;
                }
                counts.into_iter().max().unwrap_or(0) as usize
            }
        });
        let local_bits = slot_bits_for(longest).max(min_local_bits);
        nests[t] = (local_bits <= NESTED_BITS).then_some(Nest {
            parent,
            prefix_bits,
            local_bits,
        });
    }
    nests
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
        words: Words::First,
        dir: directory(&rows, dir_bits),
        rows: rows.len(),
    };
    (order, table)
}

/// The tables after the first over every slot of `fps` (already in table 0's order, whose directory is
/// `first_dir`), as [`build_in_turn`] builds them.
pub(crate) fn build_others(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    first_dir: &[u32],
) -> Vec<Table> {
    let mut out = Vec::with_capacity(layouts.len().saturating_sub(1));
    let nests = plan_nests(layouts, fps, dir_bits, first_dir, 1);
    let built: Result<(), std::convert::Infallible> =
        build_in_turn(layouts, fps, dir_bits, first_dir, &nests, |_, table| {
            out.push(table);
            Ok(())
        });
    let Ok(()) = built;
    out
}

/// Table 0's directory over `fps` already in table 0's order (a sweep, no sort).
pub(crate) fn first_directory(layout: &TableLayout, fps: &[u64], dir_bits: u32) -> Vec<u32> {
    let rows: Vec<u64> = fps.iter().map(|&f| layout.permute(f) >> 32 << 32).collect();
    directory(&rows, dir_bits)
}

/// What a packed table keeps while tables that may nest under it are still to be built.
struct Kept {
    dir: Vec<u32>,
    /// The row of each slot.
    row_of: Vec<u32>,
}

/// Builds the tables after the first of `layouts` (all of a design's) over every slot of `fps` (already in
/// table 0's order, whose directory is `first_dir`), nested as `nests` says ([`plan_nests`]), a few at a
/// time (as many as rayon has threads), and hands each to `each` with its index in `layouts`, in order, as
/// soon as it is built: the tables of a segment being written are never all in memory at once. A packed
/// table keeps its directory and the row of each slot while a table still to come nests under it. Every
/// table depends only on the fingerprints, never on the thread count. Stops at the first error of `each`.
pub(crate) fn build_in_turn<E>(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    first_dir: &[u32],
    nests: &[Option<Nest>],
    each: impl FnMut(usize, Table) -> Result<(), E>,
) -> Result<(), E> {
    let slot_bits = slot_bits_for(fps.len());
    build_with(layouts, fps, dir_bits, first_dir, nests, slot_bits, each)
}

/// [`build_in_turn`] with packed words of `slot_bits` slot bits (at least what the slots need; tests choose
/// narrower fragments than the data would).
fn build_with<E>(
    layouts: &[TableLayout],
    fps: &[u64],
    dir_bits: u32,
    first_dir: &[u32],
    nests: &[Option<Nest>],
    slot_bits: u32,
    mut each: impl FnMut(usize, Table) -> Result<(), E>,
) -> Result<(), E> {
    let n = fps.len();
    let width = crate::parallel::install(rayon::current_num_threads).max(1);
    let mut kept: std::collections::BTreeMap<usize, Kept> = std::collections::BTreeMap::new();
    // Whether a table from `from` on nests under `p`.
    let parent_of_any = |p: usize, from: usize| {
        nests[from.min(nests.len())..]
            .iter()
            .any(|n| n.is_some_and(|n| n.parent == p))
    };
    let mut next = 1;
    while next < layouts.len() {
        // The next tables in order whose parents are built (a table's parent comes before it).
        let mut chunk: Vec<usize> = Vec::with_capacity(width);
        while next < layouts.len()
            && chunk.len() < width
            && !nests[next].is_some_and(|n| chunk.contains(&n.parent))
        {
            chunk.push(next);
            next += 1;
        }
        let kept_now = &kept;
        let built: Vec<(Table, Option<Vec<u32>>)> = crate::parallel::install(|| {
            chunk
                .par_iter()
                .map_init(
                    || (Vec::new(), Vec::new()),
                    |(rows, scratch), &t| {
                        let layout = &layouts[t];
                        sort_rows(layout, fps, 0..n as u32, rows, scratch);
                        let mut row_of = None;
                        let words = match nests[t] {
                            Some(nest) => {
                                // Table 0's rows are the slots; a packed parent's were kept.
                                let parent = (nest.parent != 0).then(|| &kept_now[&nest.parent]);
                                let parent_dir = parent.map_or(first_dir, |p| &p.dir);
                                let starts = range_starts(parent_dir, dir_bits, nest.prefix_bits);
                                let row = |s: usize| parent.map_or(s, |p| p.row_of[s] as usize);
                                let words =
                                    nested_words(layout, fps, rows, dir_bits, nest, &starts, row);
                                Words::Nested {
                                    words,
                                    nest,
                                    starts,
                                }
                            }
                            None => {
                                if parent_of_any(t, t + 1) {
                                    let mut of = vec![0u32; n];
                                    for (row, &r) in rows.iter().enumerate() {
                                        of[r as u32 as usize] = row as u32;
                                    }
                                    row_of = Some(of);
                                }
                                let words = words(layout, fps, rows, dir_bits, slot_bits);
                                Words::Packed { words, slot_bits }
                            }
                        };
                        let table = Table {
                            words,
                            dir: directory(rows, dir_bits),
                            rows: rows.len(),
                        };
                        (table, row_of)
                    },
                )
                .collect()
        });
        for (&t, (table, row_of)) in chunk.iter().zip(built) {
            if let Some(row_of) = row_of {
                let dir = table.dir.clone();
                kept.insert(t, Kept { dir, row_of });
            }
            each(t, table)?;
        }
        kept.retain(|&p, _| parent_of_any(p, next));
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
    // Per table: the query's rows (first its bucket, then those that match its key), its permuted value,
    // and the start of its range in a nested table's parent.
    let mut ranges: Vec<(usize, usize, u64, usize)> = Vec::with_capacity(layouts.len());
    for (t, layout) in layouts.iter().enumerate() {
        let table = table(t);
        let q = layout.permute(fp);
        let b = bucket(q, dir_bits);
        let (dir, rows) = (table.dir, table.len);
        let at = |i: usize| dir.get(i).map_or(rows, |&r| (r as usize).min(rows));
        let (lo, hi) = (at(b), at(b + 1));
        ranges.push((lo, hi.max(lo), q, table.base(q)));
    }
    for ((t, layout), range) in layouts.iter().enumerate().zip(ranges.iter_mut()) {
        let (lo, hi, q, base) = *range;
        let (first, end) = with_rows!(table(t), fps, dir_bits, base, |rows| {
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
        *range = (first, end, q, base);
    }
    let mut slots_found: Vec<usize> = Vec::new();
    for ((t, layout), &(first, end, q, base)) in layouts.iter().enumerate().zip(&ranges) {
        with_rows!(table(t), fps, dir_bits, base, |rows| {
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

/// The rows matching a query's fragment above which they are narrowed by the whole key before their
/// fingerprints are fetched.
const NARROW_ABOVE: usize = 8;

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
    if layout.key_bits - dir_bits > bits && end - first > NARROW_ABOVE {
        // The key is longer than directory and fragment: narrow many rows by the whole permuted key (a few
        // are cheaper to fetch all, side by side, than by a search whose every step waits on a fetch; rows
        // of another key that come through are still checked by distance, and found by their own table).
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

        /// Whatever the fragment bits a word leaves (31 down to none, as slots grow to 2^32, and 15 down to
        /// none in nested words), and whatever the directory bits, the kernel finds exactly the rows within k:
        /// short fragments only make it compare more fingerprints.
        #[test]
        fn every_fragment_width_finds_exactly_the_rows_within_k(
            seed in any::<u64>(),
            n in 1usize..3000,
            slot_bits in prop_oneof![Just(None), (12u32..=32).prop_map(Some)],
            local_bits in prop_oneof![Just(1u32), 1u32..=16],
            dir_bits in prop_oneof![Just(None), (0u32..=16).prop_map(Some)],
            blocks in 4u32..=6,
        ) {
            let design = Design::new(3, vec![blocks]).unwrap();
            let layouts = design.layouts();
            let fps = clustered(seed, n);
            // More directory bits than the data would get, too: nested tables then share fewer leading bits
            // with their parents than the directory has, as at 10^7 (13 against 20).
            let min_key = layouts.iter().map(|l| l.key_bits).min().unwrap();
            let dir_bits = dir_bits.map_or(dir_bits_for(n, &layouts), |d| d.min(min_key));
            let all: Vec<u32> = (0..n as u32).collect();
            let (order, first) = build_first(&layouts[0], &fps, &all, dir_bits);
            let sorted: Vec<u64> = order.iter().map(|&o| fps[o as usize]).collect();
            let slot_bits = slot_bits.unwrap_or(slot_bits_for(n)).max(slot_bits_for(n));
            let nests = plan_nests(&layouts, &sorted, dir_bits, &first.dir, local_bits);
            let first_dir = first.dir.clone();
            let mut tables = vec![first];
            let built: Result<(), ()> =
                build_with(&layouts, &sorted, dir_bits, &first_dir, &nests, slot_bits, |_, t| {
                    tables.push(t);
                    Ok(())
                });
            built.unwrap();
            if blocks > 4 && dir_bits > 0 {
                // Tables keyed by the same first block nest (blocks = 4 chooses one block: none share).
                let nested = tables.iter().any(|t| matches!(t.words, Words::Nested { .. }));
                prop_assert!(nested);
            }
            let view = |t: usize| view(&tables, &layouts, t);
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

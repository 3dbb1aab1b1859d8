//! A Hamming index's tables inside a segment file, queried where they lie.
//!
//! A merge of a segmented store ([`crate::store::segments`]) hands the entries to [`HammingArrange`], which
//! orders the rows by table 0 (so the segment's value column, the fingerprints, is table 0's fingerprint
//! column) and adds each table's columns as sections, the same columns [`super::HammingIndex`] holds in
//! vectors: `hamming.t{i}.frags`, `hamming.t{i}.dir`, and `hamming.t{i}.slots` for every table but the first,
//! plus `hamming.design`, which names the design and the directory bits. [`MappedTables`] finds those sections
//! once per segment, and each query runs the one query kernel over slices of the mapped file: nothing is
//! loaded, and the page cache holds what queries touch.

use super::plan::{Design, TableLayout};
use super::tables::{self, Columns};
use crate::store::segments::{Arrange, Arranged, Segment};
use std::ops::Range;

/// The section that names the design a segment's tables were built for.
const DESIGN_SECTION: &str = "hamming.design";

fn design_text(design: &Design, dir_bits: u32) -> String {
    let levels: Vec<String> = design.levels.iter().map(u32::to_string).collect();
    format!(
        "k={} levels={} dir_bits={dir_bits}",
        design.k,
        levels.join(",")
    )
}

/// Lays out a segment for a Hamming index of one design (see the module documentation).
pub struct HammingArrange {
    design: Design,
    layouts: Vec<TableLayout>,
}

impl HammingArrange {
    /// The layout for `design`.
    pub fn new(design: Design) -> Self {
        let layouts = design.layouts();
        HammingArrange { design, layouts }
    }
}

impl Arrange for HammingArrange {
    fn arrange<'a>(&self, n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Arranged, String> {
        if n >= u32::MAX as usize {
            return Err(format!("{n} entries: a segment holds fewer than 2^32 - 1"));
        }
        let mut fps = Vec::with_capacity(n);
        for i in 0..n {
            let bytes: [u8; 8] = value(i).try_into().map_err(|_| {
                format!("a value of {} bytes, not a fingerprint's 8", value(i).len())
            })?;
            fps.push(u64::from_le_bytes(bytes));
        }
        let dir_bits = tables::dir_bits_for(n, &self.layouts);
        let all: Vec<u32> = (0..n as u32).collect();
        let (order, first) = tables::build_first(&self.layouts[0], &fps, &all, dir_bits);
        drop(all);
        let sorted: Vec<u64> = order.iter().map(|&o| fps[o as usize]).collect();
        drop(fps);
        let others = tables::build_others(&self.layouts[1..], &sorted, dir_bits);
        let mut sections = vec![(
            DESIGN_SECTION.to_owned(),
            design_text(&self.design, dir_bits).into_bytes(),
        )];
        for (t, table) in std::iter::once(first).chain(others).enumerate() {
            if t > 0 {
                sections.push((
                    format!("hamming.t{t}.slots"),
                    bytemuck::cast_slice(&table.slots).to_vec(),
                ));
            }
            sections.push((format!("hamming.t{t}.frags"), table.frags));
            sections.push((
                format!("hamming.t{t}.dir"),
                bytemuck::cast_slice(&table.dir).to_vec(),
            ));
        }
        Ok(Arranged { order, sections })
    }
}

/// One table's columns in a mapped file.
struct TableRef<'a> {
    slots: &'a [u32],
    frags: &'a [u8],
    dir: &'a [u32],
}

impl Columns for TableRef<'_> {
    fn slots(&self) -> &[u32] {
        self.slots
    }
    fn frags(&self) -> &[u8] {
        self.frags
    }
    fn dir(&self) -> &[u32] {
        self.dir
    }
}

/// Where a segment's tables lie, found and checked once.
#[derive(Clone, Debug)]
pub struct MappedTables {
    dir_bits: u32,
    fps: Range<usize>,
    /// Per table: slots (empty for table 0), fragments, directory.
    tables: Vec<[Range<usize>; 3]>,
}

impl MappedTables {
    /// The tables of `segment` if it holds tables of `design` (else `None`: a segment written without them,
    /// or for another design, is loaded instead), checking every column's size and alignment.
    pub fn find(segment: &Segment, design: &Design, layouts: &[TableLayout]) -> Option<Self> {
        let text = std::str::from_utf8(segment.section(DESIGN_SECTION)?).ok()?;
        let dir_bits: u32 = text.rsplit_once("dir_bits=")?.1.parse().ok()?;
        if dir_bits > 30 || text != design_text(design, dir_bits) {
            return None;
        }
        let rows = segment.rows();
        let fps = segment.column::<u64>("values", rows)?;
        let dir_len = (1usize << dir_bits) + 1;
        let mut tables = Vec::with_capacity(layouts.len());
        for t in 0..layouts.len() {
            let slots = if t == 0 {
                0..0
            } else {
                segment.column::<u32>(&format!("hamming.t{t}.slots"), rows)?
            };
            let frags = segment.column::<u8>(&format!("hamming.t{t}.frags"), rows)?;
            let dir = segment.column::<u32>(&format!("hamming.t{t}.dir"), dir_len)?;
            tables.push([slots, frags, dir]);
        }
        Some(MappedTables {
            dir_bits,
            fps,
            tables,
        })
    }

    /// Pushes every (row, distance) within `k` of `fp` that the tables find (rows may repeat).
    pub fn candidates(
        &self,
        segment: &Segment,
        layouts: &[TableLayout],
        fp: u64,
        k: u32,
        out: &mut Vec<(u32, u32)>,
    ) {
        let tables: Vec<TableRef<'_>> = self
            .tables
            .iter()
            .map(|[slots, frags, dir]| TableRef {
                slots: segment.cast(slots),
                frags: segment.cast(frags),
                dir: segment.cast(dir),
            })
            .collect();
        let fps = segment.cast(&self.fps);
        tables::candidates(layouts, &tables, self.dir_bits, fps, fp, k, out);
    }
}

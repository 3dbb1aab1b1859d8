//! A Hamming index's tables inside a segment file, queried where they lie.
//!
//! A merge of a segmented store ([`crate::store::segments`]) hands the entries to [`HammingArrange`], which
//! orders the rows by table 0 (so the segment's value column, the fingerprints, is table 0's fingerprint
//! column) and adds each table's columns as sections, the same columns [`super::HammingIndex`] holds in
//! vectors: `hamming.t{i}.dir` for every table and `hamming.t{i}.rows` (a `u32` word per row: fragment and
//! slot) for every table but the first, plus `hamming.design`, which names the design, the directory bits and
//! the slot bits. [`MappedTables`] finds those sections once per segment, and each query runs the one query
//! kernel over slices of the mapped file: nothing is loaded, and the page cache holds what queries touch.
//!
//! Segments written before packed rows (their design text names no slot bits) hold `hamming.t{i}.slots` and
//! `hamming.t{i}.frags` instead; they are read in place too. A reader that predates packed rows does not
//! recognize the new design text and loads such a segment into memory instead of mapping it: slower to open,
//! the same answers.

use super::plan::{Design, TableLayout};
use super::tables::{self, Rows, View};
use crate::store::segments::{Arrange, EmitSection, Segment};
use std::ops::Range;

/// The section that names the design a segment's tables were built for.
const DESIGN_SECTION: &str = "hamming.design";

/// The design section's text: the design, the directory bits, and the slot bits of the packed tables
/// (`None`: the first format's slot and fragment columns).
fn design_text(design: &Design, dir_bits: u32, slot_bits: Option<u32>) -> String {
    let levels: Vec<String> = design.levels.iter().map(u32::to_string).collect();
    let packed = slot_bits.map_or(String::new(), |b| format!(" slot_bits={b}"));
    format!(
        "k={} levels={} dir_bits={dir_bits}{packed}",
        design.k,
        levels.join(",")
    )
}

/// The directory bits and slot bits a design section's text names, if it is the text of `design`.
fn parse_design_text(text: &str, design: &Design) -> Option<(u32, Option<u32>)> {
    let field = |name: &str| {
        text.split(' ')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .map(|v| v.parse::<u32>().ok())
    };
    let dir_bits = field("dir_bits")??;
    let slot_bits = match field("slot_bits") {
        None => None,
        Some(bits) => Some(bits.filter(|b| (1..=32).contains(b))?),
    };
    (dir_bits <= 30 && text == design_text(design, dir_bits, slot_bits))
        .then_some((dir_bits, slot_bits))
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

/// The fingerprints of `n` values, or what is wrong with the first that is not one.
fn fingerprints<'a>(n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Vec<u64>, String> {
    (0..n)
        .map(|i| {
            let bytes: [u8; 8] = value(i).try_into().map_err(|_| {
                format!("a value of {} bytes, not a fingerprint's 8", value(i).len())
            })?;
            Ok(u64::from_le_bytes(bytes))
        })
        .collect()
}

impl Arrange for HammingArrange {
    fn order<'a>(&self, n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Vec<u32>, String> {
        let fps = fingerprints(n, value)?;
        let all: Vec<u32> = (0..n as u32).collect();
        Ok(tables::first_order(&self.layouts[0], &fps, &all))
    }

    fn sections<'a>(
        &self,
        n: usize,
        row: &dyn Fn(usize) -> &'a [u8],
        emit: &mut EmitSection<'_>,
    ) -> Result<(), String> {
        // The fingerprints in row order: table 0's order.
        let sorted = fingerprints(n, row)?;
        let dir_bits = tables::dir_bits_for(n, &self.layouts);
        let slot_bits = tables::slot_bits_for(n);
        emit(
            DESIGN_SECTION,
            design_text(&self.design, dir_bits, Some(slot_bits)).as_bytes(),
        )?;
        let first = tables::first_directory(&self.layouts[0], &sorted, dir_bits);
        emit("hamming.t0.dir", bytemuck::cast_slice(&first))?;
        drop(first);
        tables::build_in_turn(&self.layouts[1..], &sorted, dir_bits, |i, table| {
            debug_assert_eq!(table.slot_bits, slot_bits);
            let t = i + 1;
            emit(
                &format!("hamming.t{t}.rows"),
                bytemuck::cast_slice(&table.words),
            )?;
            emit(
                &format!("hamming.t{t}.dir"),
                bytemuck::cast_slice(&table.dir),
            )
        })
    }
}

/// Where one table's row columns lie in a segment.
#[derive(Clone, Debug)]
enum RowColumns {
    /// Table 0: none (its rows are the fingerprints).
    First,
    /// `hamming.t{i}.rows`.
    Packed(Range<usize>),
    /// The first format's `hamming.t{i}.slots` and `hamming.t{i}.frags`.
    Split(Range<usize>, Range<usize>),
}

/// Where a segment's tables lie, found and checked once.
#[derive(Clone, Debug)]
pub struct MappedTables {
    dir_bits: u32,
    /// The packed words' slot bits (0 for the first format).
    slot_bits: u32,
    fps: Range<usize>,
    /// Per table: its row columns and its directory.
    tables: Vec<(RowColumns, Range<usize>)>,
}

impl MappedTables {
    /// The tables of `segment` if it holds tables of `design` (else `None`: a segment written without them,
    /// or for another design, is loaded instead), checking every column's size and alignment.
    pub fn find(segment: &Segment, design: &Design, layouts: &[TableLayout]) -> Option<Self> {
        let text = std::str::from_utf8(segment.section(DESIGN_SECTION)?).ok()?;
        let (dir_bits, slot_bits) = parse_design_text(text, design)?;
        let rows = segment.rows();
        let fps = segment.column::<u64>("values", rows)?;
        let dir_len = (1usize << dir_bits) + 1;
        let mut tables = Vec::with_capacity(layouts.len());
        for t in 0..layouts.len() {
            let columns = if t == 0 {
                RowColumns::First
            } else if slot_bits.is_some() {
                RowColumns::Packed(segment.column::<u32>(&format!("hamming.t{t}.rows"), rows)?)
            } else {
                RowColumns::Split(
                    segment.column::<u32>(&format!("hamming.t{t}.slots"), rows)?,
                    segment.column::<u8>(&format!("hamming.t{t}.frags"), rows)?,
                )
            };
            let dir = segment.column::<u32>(&format!("hamming.t{t}.dir"), dir_len)?;
            tables.push((columns, dir));
        }
        Some(MappedTables {
            dir_bits,
            slot_bits: slot_bits.unwrap_or(0),
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
        let fps: &[u64] = segment.cast(&self.fps);
        let tables: Vec<View<'_>> = self
            .tables
            .iter()
            .zip(layouts)
            .map(|((columns, dir), layout)| View {
                rows: match columns {
                    RowColumns::First => Rows::First { layout },
                    RowColumns::Packed(words) => Rows::Packed {
                        words: segment.cast(words),
                        slot_bits: self.slot_bits,
                    },
                    RowColumns::Split(slots, frags) => Rows::Split {
                        slots: segment.cast(slots),
                        frags: segment.cast(frags),
                    },
                },
                dir: segment.cast(dir),
                len: fps.len(),
            })
            .collect();
        tables::candidates(layouts, |t| tables[t], self.dir_bits, fps, fp, k, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Written = (Vec<u32>, Vec<(String, Vec<u8>)>);

    #[test]
    fn sections_do_not_depend_on_the_thread_count() {
        let arrange = HammingArrange::new(Design::new(3, vec![5]).unwrap());
        let values: Vec<[u8; 8]> = (0..5000u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 7)).to_le_bytes())
            .collect();
        let write = |threads: usize| -> Written {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let order = arrange.order(values.len(), &|i| &values[i][..]).unwrap();
                let mut sections = Vec::new();
                let row = |r: usize| &values[order[r] as usize][..];
                arrange
                    .sections(values.len(), &row, &mut |name, bytes| {
                        sections.push((name.to_owned(), bytes.to_vec()));
                        Ok(())
                    })
                    .unwrap();
                (order, sections)
            })
        };
        let one = write(1);
        assert_eq!(one, write(3));
        // The design, table 0's directory, then each further table's rows and directory, in that order.
        let names: Vec<&str> = one.1.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names.len(), 2 + 2 * 9);
        assert_eq!(
            names[..4],
            [
                "hamming.design",
                "hamming.t0.dir",
                "hamming.t1.rows",
                "hamming.t1.dir"
            ]
        );
        assert_eq!(names[19], "hamming.t9.dir");
    }
}

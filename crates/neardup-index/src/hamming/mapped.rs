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
//! A nested table (see the `tables` module and docs/index-format.md) holds `hamming.t{i}.nested` (a `u16`
//! word per row: fragment and position within the parent's range) and `hamming.t{i}.starts` (the first row
//! of each range in the parent) instead of `hamming.t{i}.rows`; the design text lists the nested tables, each
//! with its parent, shared bits and position bits (`nested=1:0:13:11,…`), and a reader checks every one
//! against the design before it maps anything.
//!
//! Segments written before packed rows (their design text names no slot bits) hold `hamming.t{i}.slots` and
//! `hamming.t{i}.frags` instead; segments written before nested tables name none. Both are read in place too.
//! A reader that predates a layout does not recognize its design text and loads such a segment into memory
//! instead of mapping it: slower to open, the same answers.

use super::plan::{Design, MAX_PREFIX_BITS, TableLayout};
use super::tables::{self, Nest, Parent, Rows, View, Words};
use crate::store::segments::{Arrange, EmitSection, Segment};
use std::ops::Range;

/// The section that names the design a segment's tables were built for.
const DESIGN_SECTION: &str = "hamming.design";

/// What a design section says beside the design: how the tables are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    dir_bits: u32,
    /// The slot bits of the packed tables (`None`: the first format's slot and fragment columns).
    slot_bits: Option<u32>,
    /// Per table, its nest if it is nested (as [`tables::plan_nests`] gives them).
    nested: Vec<Option<Nest>>,
}

/// The design section's text: the design, the directory bits, the slot bits of the packed tables and the
/// nested tables (`table:parent:prefix_bits:local_bits`, comma-separated; no field when none nests).
fn design_text(design: &Design, stored: &Stored) -> String {
    let levels: Vec<String> = design.levels.iter().map(u32::to_string).collect();
    let packed = stored
        .slot_bits
        .map_or(String::new(), |b| format!(" slot_bits={b}"));
    let nested: Vec<String> = (stored.nested.iter().enumerate())
        .filter_map(|(t, n)| Some((t, (*n)?)))
        .map(|(t, n)| format!("{t}:{}:{}:{}", n.parent, n.prefix_bits, n.local_bits))
        .collect();
    let nested = if nested.is_empty() {
        String::new()
    } else {
        format!(" nested={}", nested.join(","))
    };
    format!(
        "k={} levels={} dir_bits={}{packed}{nested}",
        design.k,
        levels.join(","),
        stored.dir_bits
    )
}

/// How the tables are stored, if `text` is a design section's text for `design` whose every nest the
/// design allows (a nested table after its parent, the parent packed, the shared bits really shared and
/// within the directory's, the position bits within a word).
fn parse_design_text(text: &str, design: &Design, layouts: &[TableLayout]) -> Option<Stored> {
    let field = |name: &str| {
        text.split(' ')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let number = |name: &str| field(name).map(|v| v.parse::<u32>().ok());
    let dir_bits = number("dir_bits")??;
    let slot_bits = match number("slot_bits") {
        None => None,
        Some(bits) => Some(bits.filter(|b| (1..=32).contains(b))?),
    };
    let mut nested: Vec<Option<Nest>> = vec![None; layouts.len()];
    let mut last = 0;
    for entry in field("nested").map(|v| v.split(',')).into_iter().flatten() {
        let parts: Vec<u32> = entry
            .split(':')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        let &[t, parent, prefix_bits, local_bits] = parts.as_slice() else {
            return None;
        };
        let (t, parent) = (t as usize, parent as usize);
        // In increasing order, so that an earlier table's nest is known when a later one names it.
        let valid = t > last
            && t < layouts.len()
            && parent < t
            && nested[parent].is_none()
            && slot_bits.is_some()
            && (1..=dir_bits.min(MAX_PREFIX_BITS)).contains(&prefix_bits)
            && layouts[parent].shared_prefix(&layouts[t]) >= prefix_bits
            && (1..=tables::NESTED_BITS).contains(&local_bits);
        if !valid {
            return None;
        }
        nested[t] = Some(Nest {
            parent,
            prefix_bits,
            local_bits,
        });
        last = t;
    }
    let stored = Stored {
        dir_bits,
        slot_bits,
        nested,
    };
    // The writer's directory never has more bits than the shortest key (the kernel subtracts them from it).
    let min_key = layouts.iter().map(|l| l.key_bits).min().unwrap_or(0);
    (dir_bits <= min_key.min(30) && text == design_text(design, &stored)).then_some(stored)
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
        let first = tables::first_directory(&self.layouts[0], &sorted, dir_bits);
        let nests = tables::plan_nests(&self.layouts, &sorted, dir_bits, &first, 1);
        let stored = Stored {
            dir_bits,
            slot_bits: Some(tables::slot_bits_for(n)),
            nested: nests,
        };
        emit(
            DESIGN_SECTION,
            design_text(&self.design, &stored).as_bytes(),
        )?;
        emit("hamming.t0.dir", bytemuck::cast_slice(&first))?;
        tables::build_in_turn(
            &self.layouts,
            &sorted,
            dir_bits,
            &first,
            &stored.nested,
            |t, table| {
                match &table.words {
                    Words::Nested { words, starts, .. } => {
                        emit(&format!("hamming.t{t}.nested"), bytemuck::cast_slice(words))?;
                        emit(
                            &format!("hamming.t{t}.starts"),
                            bytemuck::cast_slice(starts),
                        )?;
                    }
                    Words::Packed { words, .. } => {
                        emit(&format!("hamming.t{t}.rows"), bytemuck::cast_slice(words))?;
                    }
                    Words::First => {}
                }
                emit(
                    &format!("hamming.t{t}.dir"),
                    bytemuck::cast_slice(&table.dir),
                )
            },
        )
    }
}

/// Where one table's row columns lie in a segment.
#[derive(Clone, Debug)]
enum RowColumns {
    /// Table 0: none (its rows are the fingerprints).
    First,
    /// `hamming.t{i}.rows`.
    Packed(Range<usize>),
    /// `hamming.t{i}.nested` and `hamming.t{i}.starts`, and how its rows point into its parent's.
    Nested(Range<usize>, Range<usize>, Nest),
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
        let stored = parse_design_text(text, design, layouts)?;
        let (dir_bits, slot_bits) = (stored.dir_bits, stored.slot_bits);
        let rows = segment.rows();
        let fps = segment.column::<u64>("values", rows)?;
        let dir_len = (1usize << dir_bits) + 1;
        let mut tables = Vec::with_capacity(layouts.len());
        for t in 0..layouts.len() {
            let columns = if t == 0 {
                RowColumns::First
            } else if let Some(nest) = stored.nested[t] {
                let words = segment.column::<u16>(&format!("hamming.t{t}.nested"), rows)?;
                let starts_len = (1usize << nest.prefix_bits) + 1;
                let starts = segment.column::<u32>(&format!("hamming.t{t}.starts"), starts_len)?;
                RowColumns::Nested(words, starts, nest)
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
                    RowColumns::Nested(words, starts, nest) => {
                        // The design text was checked: the parent is table 0 or a packed table.
                        let (parent_columns, _) = &self.tables[nest.parent];
                        Rows::Nested {
                            words: segment.cast(words),
                            nest: *nest,
                            parent: match parent_columns {
                                RowColumns::Packed(words) => Parent::Packed {
                                    words: segment.cast(words),
                                    slot_bits: self.slot_bits,
                                },
                                _ => Parent::First,
                            },
                            starts: segment.cast(starts),
                        }
                    }
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
        // The design, table 0's directory, then each further table's rows (or nested rows and their range
        // starts) and directory, in that order.
        let names: Vec<&str> = one.1.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names.len(), 2 + 2 * 9 + 6);
        assert_eq!(
            names[..5],
            [
                "hamming.design",
                "hamming.t0.dir",
                "hamming.t1.nested",
                "hamming.t1.starts",
                "hamming.t1.dir"
            ]
        );
        assert_eq!(names[names.len() - 1], "hamming.t9.dir");
        // 5 blocks choose 2: the tables keyed by blocks 0, 1 and 2 then another nest under the first of them,
        // and the design text, which says so, reads back.
        let nested: Vec<usize> = (1..10)
            .filter(|t| names.contains(&format!("hamming.t{t}.nested").as_str()))
            .collect();
        assert_eq!(nested, [1, 2, 3, 5, 6, 8]);
        let text = std::str::from_utf8(&one.1[0].1).unwrap();
        let stored = parse_design_text(text, &arrange.design, &arrange.layouts).unwrap();
        let parents: Vec<(usize, usize)> = (stored.nested.iter().enumerate())
            .filter_map(|(t, nest)| Some((t, nest.as_ref()?.parent)))
            .collect();
        assert_eq!(parents, [(1, 0), (2, 0), (3, 0), (5, 4), (6, 4), (8, 7)]);
        assert!(
            text.starts_with("k=3 levels=5 dir_bits=9 slot_bits=13 nested=1:0:9:"),
            "{text}"
        );
    }

    #[test]
    fn design_texts_that_the_design_does_not_allow_are_refused() {
        let design = Design::new(3, vec![5]).unwrap();
        let layouts = design.layouts();
        let ok = "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:13:11,5:4:13:11";
        assert!(parse_design_text(ok, &design, &layouts).is_some());
        assert!(
            parse_design_text("k=3 levels=5 dir_bits=20 slot_bits=24", &design, &layouts).is_some()
        );
        for bad in [
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=",
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:14:11", // tables 0 and 1 share 13 bits
            "k=3 levels=5 dir_bits=12 slot_bits=24 nested=1:0:13:11", // more than the directory's bits
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=4:0:13:11", // table 4 shares none with table 0
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:13:11,2:1:13:11", // a nested parent
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=2:0:13:11,1:0:13:11", // out of order
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:13:17", // positions wider than a word
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:13:0",
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=10:9:13:11", // no table 10
            "k=3 levels=5 dir_bits=20 nested=1:0:13:11",               // split columns do not nest
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:13",
            "k=3 levels=5 dir_bits=20 slot_bits=24 nested=1:0:013:11", // not the canonical text
            "k=3 levels=5 dir_bits=26 slot_bits=24", // more directory bits than the 25-bit keys have
        ] {
            assert!(parse_design_text(bad, &design, &layouts).is_none(), "{bad}");
        }
    }
}

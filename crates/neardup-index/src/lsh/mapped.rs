//! An LSH index's bands inside a segment file, queried where they lie.
//!
//! A merge of a segmented store hands the entries (signatures: K little-endian `u32` each) to
//! [`LshArrange`], which keeps their order and adds, per band b, the band keys of every row sorted
//! (`lsh.b{b}.keys`, `u64`) and the row of each (`lsh.b{b}.rows`, `u32`), plus `lsh.banding`, which names the
//! banding. A query computes its band keys, finds each in the sorted keys by binary search, and checks the
//! band's values of each row found against its own before it reports the row: a key collision costs a
//! comparison, never a wrong candidate. The key is `band_key` (in `lsh::index`), which is therefore part of the on-disk format
//! (`docs/index-format.md`).

use super::Banding;
use super::index::band_key;
use crate::radix::radix_sort_by_key;
use crate::store::segments::{Arrange, EmitSection, Segment};
use std::ops::Range;

/// The section that names the banding a segment's bands were built for.
const BANDING_SECTION: &str = "lsh.banding";

fn banding_text(b: &Banding) -> String {
    format!(
        "values={} bands={} rows={} wide={}",
        b.values, b.bands, b.rows, b.wide
    )
}

/// The values of a signature (or of a band of one) from its stored bytes: little-endian `u32`s, the encoding
/// every store of an LSH index holds.
pub(crate) fn signature_values(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Lays out a segment for an LSH index of one banding (see the module documentation).
pub struct LshArrange {
    banding: Banding,
}

impl LshArrange {
    /// The layout for `banding`.
    pub fn new(banding: Banding) -> Self {
        LshArrange { banding }
    }
}

impl Arrange for LshArrange {
    fn order<'a>(&self, n: usize, value: &dyn Fn(usize) -> &'a [u8]) -> Result<Vec<u32>, String> {
        let k = self.banding.values as usize;
        for i in 0..n {
            if value(i).len() != 4 * k {
                return Err(format!(
                    "a value of {} bytes, not a signature's {} ({k} values)",
                    value(i).len(),
                    4 * k
                ));
            }
        }
        Ok((0..n as u32).collect())
    }

    fn sections<'a>(
        &self,
        n: usize,
        row: &dyn Fn(usize) -> &'a [u8],
        emit: &mut EmitSection<'_>,
    ) -> Result<(), String> {
        emit(BANDING_SECTION, banding_text(&self.banding).as_bytes())?;
        // Band by band (the values come through a callback, read once a band): keys, sorted with their rows,
        // written before the next band is built.
        let mut band_values: Vec<u32> = Vec::new();
        let mut rows: Vec<(u64, u32)> = Vec::new();
        let mut scratch: Vec<(u64, u32)> = Vec::new();
        for b in 0..self.banding.bands {
            let range = self.banding.band_range(b);
            rows.clear();
            rows.extend((0..n).map(|i| {
                let bytes = row(i)
                    .get(range.start * 4..range.end * 4)
                    .unwrap_or_default();
                band_values.clear();
                band_values.extend(signature_values(bytes));
                (band_key(&band_values), i as u32)
            }));
            radix_sort_by_key(&mut rows, &mut scratch, 0, 64);
            let keys: Vec<u64> = rows.iter().map(|r| r.0).collect();
            emit(&format!("lsh.b{b}.keys"), bytemuck::cast_slice(&keys))?;
            drop(keys);
            let slots: Vec<u32> = rows.iter().map(|r| r.1).collect();
            emit(&format!("lsh.b{b}.rows"), bytemuck::cast_slice(&slots))?;
        }
        Ok(())
    }
}

/// Where a segment's bands lie, found and checked once.
#[derive(Clone, Debug)]
pub struct MappedBands {
    /// Per band: keys, rows.
    bands: Vec<[Range<usize>; 2]>,
}

impl MappedBands {
    /// The bands of `segment` if it holds bands of `banding` (else `None`: the segment is loaded instead),
    /// checking every column's size and alignment.
    pub fn find(segment: &Segment, banding: &Banding) -> Option<Self> {
        let text = std::str::from_utf8(segment.section(BANDING_SECTION)?).ok()?;
        if text != banding_text(banding) {
            return None;
        }
        let rows = segment.rows();
        let mut bands = Vec::with_capacity(banding.bands as usize);
        for b in 0..banding.bands {
            let keys = segment.column::<u64>(&format!("lsh.b{b}.keys"), rows)?;
            let slots = segment.column::<u32>(&format!("lsh.b{b}.rows"), rows)?;
            bands.push([keys, slots]);
        }
        Some(MappedBands { bands })
    }

    /// Pushes every row that agrees with `signature` on a whole band (rows may repeat).
    pub fn candidates(
        &self,
        segment: &Segment,
        banding: &Banding,
        signature: &[u32],
        out: &mut Vec<u32>,
    ) {
        for (b, [keys, rows]) in self.bands.iter().enumerate() {
            let (keys, rows) = (segment.cast::<u64>(keys), segment.cast::<u32>(rows));
            let range = banding.band_range(b as u32);
            let want = &signature[range.clone()];
            let key = band_key(want);
            let first = keys.partition_point(|&k| k < key);
            for (&k, &row) in keys[first..].iter().zip(&rows[first.min(rows.len())..]) {
                if k != key {
                    break;
                }
                let Some(value) = segment.value(row as usize) else {
                    continue;
                };
                let Some(band) = value.get(range.start * 4..range.end * 4) else {
                    continue;
                };
                // Compared in place: a candidate costs no allocation.
                if signature_values(band).eq(want.iter().copied()) {
                    out.push(row);
                }
            }
        }
    }
}

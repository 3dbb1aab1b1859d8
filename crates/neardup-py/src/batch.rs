//! Batch work over a column of documents in Arrow's string layout (offsets + data + validity), done on all
//! cores. Each row's result depends only on the row, and results come back in row order, so the output never
//! depends on the thread count.

use neardup::media::MediaHint;
use neardup::{Method, Profile, Sketch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;

/// An Arrow `string`/`large_string`/`binary` column as Python hands it over (`neardup._buffers`): the
/// offsets buffer, the data buffer, the offsets' width (4 or 8 bytes), the validity bitmap (None when
/// nothing is null), and the array's offset and length (a sliced array shares its parent's buffers).
pub type Buffers<'a> = (&'a [u8], &'a [u8], usize, Option<&'a [u8]>, usize, usize);

/// A borrowed Arrow column, checked.
pub struct Column<'a> {
    /// The `len + 1` offsets of this column's rows.
    offsets: Vec<u64>,
    data: &'a [u8],
    validity: Option<&'a [u8]>,
    /// The first row's bit in `validity`.
    first: usize,
}

impl<'a> Column<'a> {
    /// Checks the buffers: the offsets of rows `offset..offset + len` (and the one after) are there,
    /// non-decreasing and within `data`; `validity`, if any, has a bit for each of those rows.
    pub fn new(buffers: Buffers<'a>) -> PyResult<Self> {
        let (offsets, data, offset_width, validity, first, len) = buffers;
        let wanted = first
            .checked_add(len + 1)
            .and_then(|n| n.checked_mul(offset_width))
            .filter(|&n| n <= offsets.len())
            .ok_or_else(|| PyValueError::new_err("the column's offsets buffer is short"))?;
        let offsets = &offsets[first * offset_width..wanted];
        let offsets: Vec<u64> = match offset_width {
            4 => offsets
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64)
                .collect(),
            8 => offsets
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            w => return Err(PyValueError::new_err(format!("offsets of {w} bytes"))),
        };
        if offsets.windows(2).any(|w| w[0] > w[1]) || offsets[len] as usize > data.len() {
            return Err(PyValueError::new_err(
                "the column's offsets do not describe its data (not an Arrow string column?)",
            ));
        }
        if let Some(v) = validity
            && v.len() * 8 < first + len
        {
            return Err(PyValueError::new_err(
                "the column's validity bitmap is short",
            ));
        }
        Ok(Column {
            offsets,
            data,
            validity,
            first,
        })
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Row `i`'s bytes, or `None` for a null.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let bit = self.first + i;
        if let Some(v) = self.validity
            && v[bit / 8] & (1 << (bit % 8)) == 0
        {
            return None;
        }
        Some(&self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize])
    }
}

/// One row's sketch, its exact profile (when asked for) and its length in tokens or shingles.
pub struct Sketched {
    pub sketch: Sketch,
    pub profile: Option<Profile>,
    pub tokens: u64,
}

/// Sketches every row in parallel; a row that cannot be sketched (a null, no tokens, a broken document)
/// gives its message.
pub fn sketch_rows(
    column: &Column<'_>,
    method: Method,
    hint: MediaHint<'_>,
    keep_profiles: bool,
) -> Vec<Result<Sketched, String>> {
    (0..column.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let bytes = column.get(i).ok_or_else(|| "null value".to_owned())?;
            let extracted = neardup::text::extract(bytes, hint).map_err(|e| e.to_string())?;
            let (analysis, profile) = if keep_profiles {
                method.analyze_with_profile(&extracted)
            } else {
                method.analyze_extracted(&extracted).map(|a| (a, None))
            }
            .map_err(|e| e.to_string())?;
            Ok(Sketched {
                sketch: analysis.sketch,
                profile,
                tokens: analysis.tokens,
            })
        })
        .collect()
}

//! Arrow columns built natively for the Python side: values as little-endian bytes and string columns in
//! Arrow's layout (offsets, data, validity), which `neardup/__init__.py` wraps with
//! `pyarrow.Array.from_buffers`, so a result of millions of rows costs no Python object per row.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Values as their little-endian bytes, one after another.
pub fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to: fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let bytes: Vec<[u8; N]> = values.iter().map(|&v| to(v)).collect();
    PyBytes::new(py, bytes.as_flattened())
}

/// A string column in Arrow's layout: the offsets' width (4: `string`, 8: `large_string`, past 2 GiB of
/// text), the offsets, the data and the validity bitmap (None when nothing is null).
pub type StringColumn<'py> = (
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
);

/// `n` rows of `value(row)` (None: null) as an Arrow string column.
pub fn string_column<'py, 'a>(
    py: Python<'py>,
    n: usize,
    value: impl Fn(usize) -> Option<&'a [u8]>,
) -> StringColumn<'py> {
    let total: usize = (0..n).filter_map(&value).map(<[u8]>::len).sum();
    let width = if total <= i32::MAX as usize { 4 } else { 8 };
    let mut offsets = Vec::with_capacity((n + 1) * width);
    let mut data = Vec::with_capacity(total);
    let mut validity = vec![0u8; n.div_ceil(8)];
    let mut nulls = false;
    let push_offset = |offsets: &mut Vec<u8>, at: usize| {
        if width == 4 {
            offsets.extend_from_slice(&(at as i32).to_le_bytes());
        } else {
            offsets.extend_from_slice(&(at as i64).to_le_bytes());
        }
    };
    push_offset(&mut offsets, 0);
    for r in 0..n {
        match value(r) {
            Some(v) => {
                data.extend_from_slice(v);
                validity[r / 8] |= 1 << (r % 8);
            }
            None => nulls = true,
        }
        push_offset(&mut offsets, data.len());
    }
    (
        width,
        PyBytes::new(py, &offsets),
        PyBytes::new(py, &data),
        nulls.then(|| PyBytes::new(py, &validity)),
    )
}

//! Batch work over a column of documents in Arrow's string layout (offsets + data + validity), done on all
//! cores. Each row's result depends only on the row, and results come back in row order, so the output never
//! depends on the thread count.

use crate::strings;
use neardup::Method;
use neardup::dedup::distributed::Signed;
use neardup::dedup::{Dedup, SimHashCheck, Verification};
use neardup::media::{Media, MediaHint};
use neardup::parallel;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyString, PyTuple};
use rayon::prelude::*;
use std::borrow::Cow;

/// One chunk of an Arrow `string`/`large_string`/`binary` column as Python hands it over (an item of
/// `neardup._buffers`'s tuple): the offsets buffer, the data buffer, the offsets' width (4 or 8 bytes), the
/// validity bitmap (None when nothing is null), the array's offset and length (a sliced array shares its
/// parent's buffers), and whether it holds bytes (binary) rather than text (string).
pub type Buffers<'a> = (
    &'a [u8],
    &'a [u8],
    usize,
    Option<&'a [u8]>,
    usize,
    usize,
    bool,
);

/// The bytes of a `pyarrow.Buffer` (or of `bytes`), read where they are: a column's data is not copied.
/// The stable ABI has no buffer protocol before Python 3.11, so a pyarrow buffer is read at its `address`
/// for `size` bytes. The tuple of buffers handed to a native function holds the buffer objects, so the
/// memory lives as long as the call borrows it, and Arrow buffers are immutable.
struct ArrowBytes<'a>(&'a [u8]);

impl<'a, 'py> FromPyObject<'a, 'py> for ArrowBytes<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(bytes) = obj.extract::<&'a [u8]>() {
            return Ok(ArrowBytes(bytes));
        }
        let py = obj.py();
        let kind = obj.get_type();
        if kind.name()? != "Buffer" || kind.module()? != "pyarrow.lib" {
            return Err(PyTypeError::new_err(format!(
                "expected a pyarrow.Buffer or bytes, not {}",
                kind.name()?
            )));
        }
        let address: usize = obj.getattr(intern!(py, "address"))?.extract()?;
        let size: usize = obj.getattr(intern!(py, "size"))?.extract()?;
        if size == 0 {
            return Ok(ArrowBytes(&[]));
        }
        // SAFETY: a live pyarrow.Buffer (checked above, and kept alive by the borrowed argument for the
        // lifetime 'a) owns `size` readable bytes at `address`, which nothing mutates.
        Ok(ArrowBytes(unsafe {
            std::slice::from_raw_parts(address as *const u8, size)
        }))
    }
}

type BufferTuple<'a> = (
    ArrowBytes<'a>,
    ArrowBytes<'a>,
    usize,
    Option<ArrowBytes<'a>>,
    usize,
    usize,
    bool,
);

fn extract_buffers<'a>(obj: Borrowed<'a, '_, PyAny>) -> PyResult<Buffers<'a>> {
    let (offsets, data, width, validity, first, len, binary): BufferTuple<'a> = obj.extract()?;
    Ok((
        offsets.0,
        data.0,
        width,
        validity.map(|v| v.0),
        first,
        len,
        binary,
    ))
}

/// A column as the native functions take it: the Arrow buffers of each of its chunks (a `pyarrow.ChunkedArray`
/// is read chunk by chunk, never concatenated), or a Python list of `str`/`bytes`/`None`, copied once into one
/// buffer (much cheaper than building an Arrow array from it).
pub enum ColumnInput<'a> {
    Arrow(Vec<Buffers<'a>>),
    Items(Py<PyList>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for ColumnInput<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(list) = obj.cast::<PyList>() {
            return Ok(ColumnInput::Items(list.to_owned().unbind()));
        }
        let chunks = obj.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err("expected a list of documents or a tuple of Arrow chunks' buffers")
        })?;
        (0..chunks.len())
            .map(|i| {
                // SAFETY: `PyTuple_GetItem` returns a borrowed reference, or null with an exception set. The
                // tuple, borrowed for 'a, holds its items for 'a (a tuple is immutable), so the item and the
                // buffers it holds outlive the slices read from them.
                let chunk = unsafe {
                    Borrowed::from_ptr_or_err(
                        obj.py(),
                        pyo3::ffi::PyTuple_GetItem(chunks.as_ptr(), i as pyo3::ffi::Py_ssize_t),
                    )
                }?;
                extract_buffers(chunk)
            })
            .collect::<PyResult<_>>()
            .map(ColumnInput::Arrow)
    }
}

/// The rows of a Python list, copied into Arrow's layout: offsets, data and a validity bitmap, and which
/// rows were `bytes` (None when none were).
#[derive(Default)]
pub struct OwnedRows {
    offsets: Vec<u64>,
    data: Vec<u8>,
    validity: Option<Vec<u8>>,
    binary: Option<Vec<bool>>,
    /// Whether a `str` with a lone surrogate was copied (its UTF-8 kept the surrogate, so the text rows
    /// are checked, and that row fails with its message).
    surrogates: bool,
}

/// The id an integer of any kind stands for, its decimal text (as the CLI reads integer ids); `None` for
/// anything else. `operator.index` takes Python's and NumPy's integers, not floats; a `bool` is refused.
pub fn integer_id(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_instance_of::<PyBool>() {
        return Ok(None);
    }
    match value.call_method0(intern!(value.py(), "__index__")) {
        Ok(int) => Ok(Some(int.str()?.to_cow()?.into_owned())),
        Err(_) => Ok(None),
    }
}

/// What a Python list holds, which decides what its rows may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOf {
    /// Documents: `str`, `bytes` or `None`; a `str` that UTF-8 cannot encode is the row's failure.
    Documents,
    /// Ids: `str`, `bytes`, `None` or an integer of any kind (its decimal text; not a `bool`).
    Ids,
    /// Other columns (sketches, keys): `str`, `bytes` or `None`.
    Values,
}

impl OwnedRows {
    /// Copies the list's `str` (as UTF-8) and `bytes` values, and for ids its integers (as their decimal
    /// text, as the CLI reads integer ids); `None` is a null. Anything else is a `TypeError` naming the row.
    pub fn from_list(list: &Bound<'_, PyList>, kind: ListOf) -> PyResult<Self> {
        let mut rows = OwnedRows::default();
        rows.fill_from(list, 0, usize::MAX, usize::MAX, kind)?;
        Ok(rows)
    }

    /// Replaces these rows by the list's rows from `first` on, until at least `max_bytes` bytes or
    /// `max_rows` rows are held (or the list ends), keeping the buffers; returns the row after the last
    /// one copied. Errors name the row by its place in the whole list. A `str` with a lone surrogate (which
    /// UTF-8 cannot encode) is an error, or in documents a row that fails when it is analyzed, as other
    /// documents that cannot be sketched do.
    fn fill_from(
        &mut self,
        list: &Bound<'_, PyList>,
        first: usize,
        max_bytes: usize,
        max_rows: usize,
        kind: ListOf,
    ) -> PyResult<usize> {
        let documents = kind == ListOf::Documents;
        self.offsets.clear();
        self.offsets.push(0);
        self.data.clear();
        self.surrogates = false;
        let mut nulls = Vec::new();
        let mut binary = Vec::new();
        let end = list.len();
        let mut row = first;
        while row < end && self.data.len() < max_bytes && row - first < max_rows {
            let item = list.get_item(row)?;
            if let Ok(s) = item.cast::<PyString>() {
                if !strings::append_utf8(s, &mut self.data) {
                    // Python's UTF-8 encoder into a `bytes`, copied once into the piece (`to_cow` would
                    // copy it a second time); it also names what is wrong with a lone surrogate.
                    let text = match s.encode_utf8() {
                        Ok(text) => text,
                        Err(_) if documents => {
                            self.surrogates = true;
                            s.call_method1(intern!(s.py(), "encode"), ("utf-8", "surrogatepass"))?
                                .cast_into::<PyBytes>()?
                        }
                        Err(e) => {
                            return Err(PyValueError::new_err(format!(
                                "row {row}: not valid Unicode text: {e}"
                            )));
                        }
                    };
                    self.data.extend_from_slice(text.as_bytes());
                }
            } else if let Ok(b) = item.cast::<PyBytes>() {
                self.data.extend_from_slice(b.as_bytes());
                binary.push(row - first);
            } else if item.is_none() {
                nulls.push(row - first);
            } else if kind == ListOf::Ids
                && let Some(id) = integer_id(&item)?
            {
                self.data.extend_from_slice(id.as_bytes());
            } else if kind == ListOf::Ids {
                return Err(PyTypeError::new_err(format!(
                    "row {row}: ids must be strings, bytes or integers, not {}",
                    item.get_type().name()?
                )));
            } else {
                return Err(PyTypeError::new_err(format!(
                    "row {row}: documents must be str or bytes, not {}",
                    item.get_type().name()?
                )));
            }
            self.offsets.push(self.data.len() as u64);
            row += 1;
        }
        let n = row - first;
        self.validity = (!nulls.is_empty()).then(|| {
            let mut bits = vec![0xff; n.div_ceil(8)];
            for r in nulls {
                bits[r / 8] &= !(1 << (r % 8));
            }
            bits
        });
        self.binary = (!binary.is_empty()).then(|| {
            let mut rows = vec![false; n];
            for r in binary {
                rows[r] = true;
            }
            rows
        });
        Ok(row)
    }

    /// The rows as a column. The text rows came from `str`, as UTF-8 written by [`strings::append_utf8`]
    /// (simdutf's conversions of characters that are not surrogates) or by Python's encoder, so they are
    /// valid UTF-8 and are not checked again, unless one kept a lone surrogate.
    fn column(&self) -> Column<'_> {
        let part = Part {
            offsets: Cow::Borrowed(&self.offsets),
            data: &self.data,
            validity: self.validity.as_deref(),
            first: 0,
            binary: match &self.binary {
                None => RowKinds::Text,
                Some(rows) => RowKinds::PerRow(rows),
            },
        };
        Column::of_parts(vec![part], !self.surrogates)
    }
}

impl<'a> ColumnInput<'a> {
    /// Copies a list's rows (under the GIL); Arrow buffers stay where they are.
    pub fn rows(&self, py: Python<'_>) -> PyResult<Option<OwnedRows>> {
        self.rows_of(py, ListOf::Values)
    }

    /// [`rows`](Self::rows) of a column of ids, whose integers are their decimal text.
    pub fn id_rows(&self, py: Python<'_>) -> PyResult<Option<OwnedRows>> {
        self.rows_of(py, ListOf::Ids)
    }

    fn rows_of(&self, py: Python<'_>, kind: ListOf) -> PyResult<Option<OwnedRows>> {
        match self {
            ColumnInput::Arrow(_) => Ok(None),
            ColumnInput::Items(list) => OwnedRows::from_list(list.bind(py), kind).map(Some),
        }
    }

    /// The column, reading the buffers in place or the rows copied by [`rows`](Self::rows).
    pub fn column<'b>(&self, rows: &'b Option<OwnedRows>) -> PyResult<Column<'b>>
    where
        'a: 'b,
    {
        match (self, rows) {
            (ColumnInput::Arrow(chunks), _) => Column::new(chunks),
            (ColumnInput::Items(_), Some(rows)) => Ok(rows.column()),
            (ColumnInput::Items(_), None) => unreachable!("rows() copies a list"),
        }
    }

    /// The number of rows.
    pub fn len(&self, py: Python<'_>) -> usize {
        match self {
            ColumnInput::Arrow(chunks) => chunks.iter().map(|c| c.5).sum(),
            ColumnInput::Items(list) => list.bind(py).len(),
        }
    }
}

/// An Arrow column is worked on a stretch at a time, Python's signals checked and `progress` called between
/// stretches: this many rows...
const STRETCH_ROWS: usize = 16_384;
/// ...or fewer, where they hold more than this many bytes of text (a column of long documents: 16,384 of
/// 500 KB would be 8 GB, a minute of work on two cores between two looks at Ctrl-C). One row at least.
const STRETCH_BYTES: u64 = 64 << 20;

/// Rows are handed to the thread pool in runs of about this many bytes of text (or of `ROWS_PER_TASK`
/// rows, whichever is fewer); rows with less text in all are analyzed on the calling thread, where waking
/// the pool would cost more than it saves.
const TASK_BYTES: u64 = 64 << 10;
const ROWS_PER_TASK: usize = 64;

/// How rows `rows` of a column are shared among the pool's threads: `None`, on the calling thread (too little
/// text to be worth waking the pool); otherwise in runs of at least this many rows.
fn task_rows(column: &Column<'_>, rows: &std::ops::Range<usize>) -> Option<usize> {
    let bytes = column.bytes(rows.clone());
    if rows.len() < 2 || bytes < TASK_BYTES {
        return None;
    }
    let average = (bytes / rows.len() as u64).max(1);
    Some(((TASK_BYTES / average) as usize).clamp(1, ROWS_PER_TASK))
}

/// A list is copied and sketched a piece at a time: about this many bytes of text...
const PIECE_BYTES: usize = 2 << 20;
/// ...or this many rows, whichever comes first.
const PIECE_ROWS: usize = 4096;

/// The exact profiles kept beside the sketches: none (sketching alone), or those a run verifies with.
#[derive(Clone, Copy, Debug)]
pub struct Profiles {
    keep: bool,
    /// SimHash: the measure whose profile is kept.
    check: Option<SimHashCheck>,
}

impl Profiles {
    /// Sketches alone.
    pub const NONE: Profiles = Profiles {
        keep: false,
        check: None,
    };

    /// The profiles `dedup` verifies its candidates with, if it verifies exactly.
    pub fn of(dedup: &Dedup) -> Profiles {
        Profiles {
            keep: dedup.options().verification == Verification::Exact,
            check: dedup.simhash_verification().map(|(check, _)| check),
        }
    }
}

/// [`analyze_input`] with a sketch of each row by `method`, and its exact profile as `profiles` asks.
pub fn sketch_input(
    py: Python<'_>,
    input: &ColumnInput<'_>,
    method: Method,
    hint: MediaHint<'_>,
    profiles: Profiles,
    progress: Option<&Py<PyAny>>,
) -> PyResult<Vec<Result<Signed, RowFailure>>> {
    analyze_input(py, input, hint, true, progress, signer(method, profiles))
}

/// The rows that could not be analyzed, `(row, message)` in row order.
pub fn failures_of(results: &[Result<Signed, RowFailure>]) -> Failures {
    results
        .iter()
        .enumerate()
        .filter_map(|(row, result)| {
            result
                .as_ref()
                .err()
                .map(|f| (row, f.message.clone(), f.kind))
        })
        .collect()
}

/// Calls a Python progress callback as `progress(rows_done, rows)`; what it raises stops the work.
fn report_progress(
    py: Python<'_>,
    progress: Option<&Py<PyAny>>,
    done: usize,
    total: usize,
) -> PyResult<()> {
    if let Some(callback) = progress {
        callback.call1(py, (done, total))?;
    }
    Ok(())
}

/// [`analyze_rows`] over a column as Python handed it over ([`in_pieces`]), with the GIL released while it
/// waits.
pub fn analyze_input(
    py: Python<'_>,
    input: &ColumnInput<'_>,
    hint: MediaHint<'_>,
    parallel: bool,
    progress: Option<&Py<PyAny>>,
    analyze: impl Fn(&str) -> Result<Signed, neardup::Error> + Sync,
) -> PyResult<Vec<Result<Signed, RowFailure>>> {
    let mut results = Vec::with_capacity(input.len(py));
    in_pieces(py, input, progress, |column, rows, _| {
        results.extend(analyze_rows(column, rows, hint, parallel, &analyze))
    })?;
    Ok(results)
}

/// Runs `stretch` over a column as Python handed it over, as `stretch(column, rows, first)`: `rows` of
/// `column`, whose row 0 is the input's row `first`. An Arrow column is read in place, a stretch of rows at a
/// time ([`in_stretches`]); a list is copied a piece at a time ([`in_list_pieces`]). `progress`, a Python
/// callable, is called on the calling thread as `progress(rows_done, rows)` between stretches and at the
/// end; an exception it raises stops the work and is raised.
fn in_pieces(
    py: Python<'_>,
    input: &ColumnInput<'_>,
    progress: Option<&Py<PyAny>>,
    mut stretch: impl FnMut(&Column<'_>, std::ops::Range<usize>, usize) + Send,
) -> PyResult<()> {
    match input {
        ColumnInput::Arrow(chunks) => {
            let column = Column::new(chunks)?;
            in_stretches(py, &column, progress, |rows| stretch(&column, rows, 0))
        }
        ColumnInput::Items(list) => in_list_pieces(py, list.bind(py), progress, |column, first| {
            stretch(column, 0..column.len(), first)
        }),
    }
}

/// Runs `piece` over a list of documents a piece at a time, as `piece(rows, first)`, `rows` being the
/// piece's rows copied and `first` the list's row number of its first. A list's rows must be copied under
/// the GIL, one thread's work (Python's UTF-8 encoding of each `str`, about 0.1 s for 100 MB); so they are
/// copied a piece at a time on the calling thread while the pieces already copied are worked on (by one
/// helper thread, on all cores when `piece` uses them), and the copy costs no wall time when the work is
/// slower. The buffers of finished pieces are reused; the pieces come in row order.
///
/// `progress` is called as [`in_pieces`] says, on the calling thread.
fn in_list_pieces(
    py: Python<'_>,
    list: &Bound<'_, PyList>,
    progress: Option<&Py<PyAny>>,
    mut piece: impl FnMut(&Column<'_>, usize) + Send,
) -> PyResult<()> {
    let n = list.len();
    if n > 0 {
        report_progress(py, progress, 0, n)?;
    }
    let mut rows = OwnedRows::default();
    let mut next = copy_piece(list, n, 0, &mut rows)?;
    if next == n {
        // A list that fits in one piece (a small batch) is worked on by this thread: no helper thread.
        py.detach(|| piece(&rows.column(), 0));
        return report_progress(py, progress, n, n);
    }
    // Rows worked on so far, for `progress` (the copier reports them; the worker counts them).
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Two pieces in flight at most: one being worked on, one copied and waiting.
    let (to_work, pieces) = std::sync::mpsc::sync_channel::<OwnedRows>(1);
    let (to_reuse, spare) = std::sync::mpsc::channel::<OwnedRows>();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let mut first = 0;
            for rows in pieces {
                let column = rows.column();
                piece(&column, first);
                first += column.len();
                done.store(first, std::sync::atomic::Ordering::Relaxed);
                // The copier may have finished; then the buffers are simply dropped.
                let _ = to_reuse.send(rows);
            }
        });
        let copied = (|| -> PyResult<()> {
            let mut reported = 0;
            loop {
                // Waiting for the worker to take the piece, the GIL is released: other Python threads
                // (and signal handlers) run meanwhile.
                if py.detach(|| to_work.send(rows)).is_err() {
                    break; // the worker panicked: its join below says so
                }
                if next == n {
                    break;
                }
                // Ctrl-C (KeyboardInterrupt) stops a long list between pieces.
                py.check_signals()?;
                // Each count once: the worker may not have finished a piece since the last report.
                let rows_done = done.load(std::sync::atomic::Ordering::Relaxed);
                if rows_done != reported {
                    report_progress(py, progress, rows_done, n)?;
                    reported = rows_done;
                }
                rows = spare.try_recv().unwrap_or_default();
                next = copy_piece(list, n, next, &mut rows)?;
            }
            Ok(())
        })();
        drop(to_work);
        py.detach(|| worker.join())
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        copied?;
        report_progress(py, progress, n, n)
    })
}

/// Copies the piece of a list of `n` documents that starts at row `next` into `rows` (under the GIL);
/// returns the row after it. The list must still have `n` rows: another thread (or `progress`) may change
/// it while the GIL is released, and the output was sized for the rows it had when the call began.
fn copy_piece(
    list: &Bound<'_, PyList>,
    n: usize,
    next: usize,
    rows: &mut OwnedRows,
) -> PyResult<usize> {
    let max_rows = PIECE_ROWS.min(n - next);
    let next = rows.fill_from(list, next, PIECE_BYTES, max_rows, ListOf::Documents)?;
    if list.len() != n {
        return Err(PyRuntimeError::new_err(format!(
            "the list of documents changed size while it was read ({n} rows, now {})",
            list.len()
        )));
    }
    Ok(next)
}

/// Whether a column's rows are text (`str`) or documents in any medium (`bytes`).
enum RowKinds<'a> {
    Text,
    Binary,
    PerRow(&'a [bool]),
}

/// A borrowed Arrow column, checked: its chunks, read in place, and their rows numbered as one column.
pub struct Column<'a> {
    parts: Vec<Part<'a>>,
    /// The column's row number of each part's first row, and the column's length after the last.
    starts: Vec<usize>,
    /// Whether the text rows are known to be UTF-8 (copied from `str`), so need no check.
    text_is_utf8: bool,
}

/// One chunk of a [`Column`].
struct Part<'a> {
    /// Which rows are bytes rather than text.
    binary: RowKinds<'a>,
    /// The `len + 1` offsets of this chunk's rows.
    offsets: Cow<'a, [u64]>,
    data: &'a [u8],
    validity: Option<&'a [u8]>,
    /// The first row's bit in `validity`.
    first: usize,
}

impl<'a> Column<'a> {
    /// Checks each chunk's buffers: the offsets of rows `offset..offset + len` (and the one after) are there,
    /// non-decreasing and within `data`; `validity`, if any, has a bit for each of those rows.
    pub fn new(chunks: &[Buffers<'a>]) -> PyResult<Self> {
        let parts = chunks
            .iter()
            .map(|&chunk| Part::new(chunk))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Column::of_parts(parts, false))
    }

    fn of_parts(parts: Vec<Part<'a>>, text_is_utf8: bool) -> Self {
        let mut starts = vec![0];
        for part in &parts {
            starts.push(starts.last().unwrap() + part.offsets.len() - 1);
        }
        Column {
            parts,
            starts,
            text_is_utf8,
        }
    }

    pub fn len(&self) -> usize {
        *self.starts.last().unwrap()
    }

    /// The part that holds row `i`, and the row's place in it.
    fn locate(&self, i: usize) -> (&Part<'a>, usize) {
        let p = if self.parts.len() == 1 {
            0
        } else {
            self.starts.partition_point(|&s| s <= i) - 1
        };
        (&self.parts[p], i - self.starts[p])
    }

    /// Whether row `i` holds bytes (a document in any medium) rather than text.
    pub fn is_binary(&self, i: usize) -> bool {
        let (part, i) = self.locate(i);
        match part.binary {
            RowKinds::Text => false,
            RowKinds::Binary => true,
            RowKinds::PerRow(rows) => rows[i],
        }
    }

    /// The bytes of rows `rows` in the data buffers.
    fn bytes(&self, rows: std::ops::Range<usize>) -> u64 {
        self.parts
            .iter()
            .zip(self.starts.windows(2))
            .map(|(part, span)| {
                let first = rows.start.clamp(span[0], span[1]) - span[0];
                let end = rows.end.clamp(span[0], span[1]) - span[0];
                part.offsets[end] - part.offsets[first]
            })
            .sum()
    }

    /// Row `i`'s bytes, or `None` for a null.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let (part, i) = self.locate(i);
        let bit = part.first + i;
        if let Some(v) = part.validity
            && v[bit / 8] & (1 << (bit % 8)) == 0
        {
            return None;
        }
        Some(&part.data[part.offsets[i] as usize..part.offsets[i + 1] as usize])
    }
}

impl<'a> Part<'a> {
    fn new(buffers: Buffers<'a>) -> PyResult<Self> {
        let (offsets, data, offset_width, validity, first, len, binary) = buffers;
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
        Ok(Part {
            binary: if binary {
                RowKinds::Binary
            } else {
                RowKinds::Text
            },
            offsets: Cow::Owned(offsets),
            data,
            validity,
            first,
        })
    }
}

/// A text's analysis: as it is (as the CLI reads the text field of records), unless `hint` forces a medium
/// other than text, which is extracted from the text's bytes first.
pub fn analyze_text_as<T>(
    text: &str,
    hint: MediaHint<'_>,
    analyze: impl FnOnce(&str) -> Result<T, neardup::Error>,
) -> Result<T, RowFailure> {
    if matches!(hint, MediaHint::Auto | MediaHint::Force(Media::Text)) {
        Ok(analyze(text)?)
    } else {
        analyze_extracted(text.as_bytes(), hint, analyze)
    }
}

/// A document's analysis: its text extracted (the medium detected, or forced by `hint`), then analyzed.
fn analyze_extracted<T>(
    bytes: &[u8],
    hint: MediaHint<'_>,
    analyze: impl FnOnce(&str) -> Result<T, neardup::Error>,
) -> Result<T, RowFailure> {
    let extracted = neardup::text::extract(bytes, hint).map_err(neardup::Error::from)?;
    Ok(analyze(&extracted.text)?)
}

/// The analysis `neardup.dedup` needs of a text: its sketch by `method`, its length, and its exact profile
/// as `profiles` asks.
pub fn signer(
    method: Method,
    profiles: Profiles,
) -> impl Fn(&str) -> Result<Signed, neardup::Error> + Sync {
    move |text| {
        let (sketch, length, profile) =
            method.analyze_text_checked(text, profiles.keep, profiles.check)?;
        Ok(Signed {
            sketch,
            profile,
            length,
        })
    }
}

/// Analyzes the rows `range` of the column, each a [`Signed`] (sketch, exact profile when asked for,
/// length), on all cores or (`parallel` false: a Spark task, one of many on the machine) one at a time on
/// this thread; a row that cannot be analyzed (a null, no tokens, a broken document) gives its message.
/// Text rows are taken as they are unless `hint` forces a medium other than text (as the CLI reads the text
/// field of records); bytes rows are documents in any medium, detected unless forced.
fn analyze_rows(
    column: &Column<'_>,
    range: std::ops::Range<usize>,
    hint: MediaHint<'_>,
    parallel: bool,
    analyze: impl Fn(&str) -> Result<Signed, neardup::Error> + Sync,
) -> Vec<Result<Signed, RowFailure>> {
    let row = |i: usize| analyze_row(column, i, hint, &analyze);
    if let Some(min_rows) = task_rows(column, &range).filter(|_| parallel) {
        parallel::install(|| {
            range
                .into_par_iter()
                .with_min_len(min_rows)
                .map(row)
                .collect()
        })
    } else {
        range.map(row).collect()
    }
}

/// Row `i` of the column analyzed: a text row as it is (unless `hint` forces a medium other than text), a
/// bytes row as a document in any medium; a null, or text that is not UTF-8, is a failure.
fn analyze_row<T>(
    column: &Column<'_>,
    i: usize,
    hint: MediaHint<'_>,
    analyze: impl FnOnce(&str) -> Result<T, neardup::Error>,
) -> Result<T, RowFailure> {
    let bytes = column
        .get(i)
        .ok_or_else(|| RowFailure::from("null value".to_owned()))?;
    if column.is_binary(i) {
        return analyze_extracted(bytes, hint, analyze);
    }
    let text = if column.text_is_utf8 {
        // SAFETY: such rows were written as UTF-8 from `str` values (`OwnedRows::column`).
        unsafe { std::str::from_utf8_unchecked(bytes) }
    } else {
        checked_utf8(bytes).map_err(RowFailure::from)?
    };
    analyze_text_as(text, hint, analyze)
}

/// Sketches a column by `method` straight into `out`, row i at `out[i·width..]` (`width` being
/// [`Method::sketch_bytes`]), on all cores with the GIL released, a stretch at a time ([`in_pieces`]): no
/// sketch of its own per row, nor a copy of them all (10^7 rows of 128 values held 5 GB twice). Returns the
/// rows that could not be sketched, which are left as they were.
pub fn sketch_into(
    py: Python<'_>,
    input: &ColumnInput<'_>,
    method: &Method,
    hint: MediaHint<'_>,
    out: &mut [u8],
    width: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<Failures> {
    assert_eq!(
        out.len(),
        input.len(py) * width,
        "out must hold a row per row"
    );
    let mut failures = Vec::new();
    let sketch = |column: &Column<'_>, rows: std::ops::Range<usize>, first: usize| {
        let out = &mut out[(first + rows.start) * width..(first + rows.end) * width];
        let sketch_row = |(row_out, i): (&mut [u8], usize)| {
            analyze_row(column, i, hint, |text| {
                method.sketch_text_into(text, row_out)
            })
            .err()
            .map(|failure| (first + i, failure.message, failure.kind))
        };
        if let Some(min_rows) = task_rows(column, &rows) {
            failures.extend(parallel::install(|| {
                out.par_chunks_exact_mut(width)
                    .zip(rows)
                    .with_min_len(min_rows)
                    .filter_map(sketch_row)
                    .collect::<Vec<_>>()
            }))
        } else {
            failures.extend(out.chunks_exact_mut(width).zip(rows).filter_map(sketch_row))
        }
    };
    in_pieces(py, input, progress, sketch)?;
    Ok(failures)
}

/// Runs `stretch` over the rows of `column` a stretch at a time ([`stretch_end`]) with the GIL released,
/// Python's signals checked (Ctrl-C stops a long run) and `progress` called between stretches and at the
/// end.
fn in_stretches(
    py: Python<'_>,
    column: &Column<'_>,
    progress: Option<&Py<PyAny>>,
    mut stretch: impl FnMut(std::ops::Range<usize>) + Send,
) -> PyResult<()> {
    let n = column.len();
    py.detach(|| {
        let mut start = 0;
        while start < n {
            Python::attach(|py| {
                py.check_signals()?;
                report_progress(py, progress, start, n)
            })?;
            let end = stretch_end(column, start);
            stretch(start..end);
            start = end;
        }
        Python::attach(|py| report_progress(py, progress, n, n))
    })
}

/// The end of the stretch of `column` that starts at row `start` (before its end): [`STRETCH_ROWS`] rows,
/// or as many as hold [`STRETCH_BYTES`] of text if fewer, one at least.
fn stretch_end(column: &Column<'_>, start: usize) -> usize {
    let end = (start + STRETCH_ROWS).min(column.len());
    if column.bytes(start..end) <= STRETCH_BYTES {
        return end;
    }
    // The furthest end that keeps the stretch within the bytes, by bisection: it lies in `low..=high`.
    let (mut low, mut high) = (start + 1, end - 1);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if column.bytes(start..middle) <= STRETCH_BYTES {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

/// `bytes` as text, checked by the fast check first; std's, which names the place of a fault, only on a
/// failure (see [`utf8_problem`]).
pub fn checked_utf8(bytes: &[u8]) -> Result<&str, String> {
    simdutf8::basic::from_utf8(bytes)
        .or_else(|_| std::str::from_utf8(bytes).map_err(|e| utf8_problem(bytes, &e)))
}

/// What is wrong with text that is not UTF-8: a lone surrogate (encoded as UTF-8 would encode it, as a
/// Python `str` may hold one, or CESU-8), or the place of another fault.
fn utf8_problem(bytes: &[u8], error: &std::str::Utf8Error) -> String {
    let at = error.valid_up_to();
    match bytes.get(at..at + 3) {
        Some(&[0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF]) => {
            let code = 0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
            format!("not valid text: a lone surrogate (U+{code:04X}) at byte {at}")
        }
        _ => format!("not UTF-8: {error}"),
    }
}

/// Each row's id, checked: one per row, none null, each UTF-8 text (`bytes` ids too: the result's ids
/// are strings, in Python and in Arrow).
pub fn row_ids<'a>(ids: &Column<'a>, n: usize) -> PyResult<Vec<&'a str>> {
    if ids.len() != n {
        return Err(PyValueError::new_err(format!(
            "{} ids for {n} documents",
            ids.len()
        )));
    }
    (0..n)
        .map(|r| {
            let id = ids.get(r).ok_or_else(|| {
                PyValueError::new_err(format!("row {r}: the id is null: ids must not be null"))
            })?;
            checked_utf8(id)
                .map_err(|problem| PyValueError::new_err(format!("row {r}: the id is {problem}")))
        })
        .collect()
}

/// The ids of a column's rows: a column given (of the kinds [`ColumnInput`] takes; a list's copied), or
/// none, the rows then numbered from `first` in decimal (as the CLI numbers records without an id).
pub enum IdColumn<'a, 'b> {
    Given(&'b ColumnInput<'a>, Option<OwnedRows>),
    Numbered(Vec<String>),
}

impl<'a, 'b> IdColumn<'a, 'b> {
    pub fn read(
        py: Python<'_>,
        ids: Option<&'b ColumnInput<'a>>,
        rows: usize,
        first: usize,
    ) -> PyResult<Self> {
        Ok(match ids {
            Some(ids) => IdColumn::Given(ids, ids.id_rows(py)?),
            None => IdColumn::Numbered((first..first + rows).map(|r| r.to_string()).collect()),
        })
    }

    /// Each of the `n` rows' ids, checked as [`row_ids`] checks them.
    pub fn texts(&self, n: usize) -> PyResult<Vec<&str>> {
        match self {
            IdColumn::Given(ids, owned) => row_ids(&ids.column(owned)?, n),
            IdColumn::Numbered(numbers) => Ok(numbers.iter().map(String::as_str).collect()),
        }
    }
}

/// The rows that could not be analyzed, as Python's `_report` takes them: `(row, message, kind)`.
pub type Failures = Vec<(usize, String, &'static str)>;

/// Why a row could not be analyzed: its message, and the `neardup.Error` kind it is (`"NoTokens"`,
/// `"MediaError"`, or `"Error"` for a null or text that is not UTF-8), which `errors="raise"` raises.
#[derive(Clone, Debug)]
pub struct RowFailure {
    pub message: String,
    pub kind: &'static str,
}

impl From<String> for RowFailure {
    fn from(message: String) -> Self {
        RowFailure {
            message,
            kind: "Error",
        }
    }
}

impl From<neardup::Error> for RowFailure {
    fn from(e: neardup::Error) -> Self {
        // The kind and the message `to_py` gives the same error raised on its own.
        let kind = match &e {
            neardup::Error::NoTokens { .. } => "NoTokens",
            neardup::Error::Extract(_) => "MediaError",
            _ => "Error",
        };
        RowFailure {
            message: crate::errors::python_message(&e),
            kind,
        }
    }
}

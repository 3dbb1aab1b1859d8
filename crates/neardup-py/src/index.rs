//! `neardup.Index`: the engine's `Index`, in memory or in the same files as `neardup index` (so the CLI and
//! Python can share one). Queries take a read lock and run with the GIL released; writes take the write lock.

use crate::api::Whole;
use crate::api::{PySketch, as_sketch, media_hint, method_of, sketch_document};
use crate::batch::{
    ColumnInput, Failures, Profiles, checked_utf8, failures_of, integer_id, row_ids, sketch_input,
};
use crate::columns::{StringColumn, le_bytes, string_column};
use crate::errors::{IntoPy, interrupted_saying};
use neardup::dedup::Score;
use neardup::index::{
    Index, IndexSettings, IndexStore, Kind, Match, MemoryStore, Radius, StoreKind,
    TRANSACTION_ENTRIES, is_redis_url,
};
use neardup::parallel;
use neardup::{Method, Sketch};
use pyo3::exceptions::{PyNotADirectoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::RwLock;

/// Queries `query_many` answers between two checks of Python's signals.
const QUERY_STRETCH: usize = 1_024;

/// The error of a column call stopped by Python's signals (Ctrl-C) after `done` of `total` rows: a
/// `KeyboardInterrupt` says how far it went (what was stored stays stored); another error as it is.
fn stopped_after(py: Python<'_>, error: PyErr, done: usize, total: usize, what: &str) -> PyErr {
    interrupted_saying(py, error, || {
        format!("interrupted: {done} of {total} rows {what}")
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyIndex>()
}

enum AnyIndex {
    Disk(Index<IndexStore>),
    Memory(Index<MemoryStore>),
}

/// Runs `$body` with `$i` bound to the index, whatever its store.
macro_rules! with {
    ($any:expr, $i:ident => $body:expr) => {
        match $any {
            AnyIndex::Disk($i) => $body,
            AnyIndex::Memory($i) => $body,
        }
    };
}

/// An index of one scheme's sketches: add documents (or sketches) under ids, and ask which stored ids are
/// within a distance `k` (SimHash) or a similarity `threshold` (MinHash) of a document. The Python class
/// `neardup.Index` derives from it, adding the column methods (`add_many`, `query_many`) over the
/// underscored ones here.
#[pyclass(name = "NativeIndex", module = "neardup._native", subclass)]
pub struct PyIndex {
    /// None once closed.
    inner: RwLock<Option<AnyIndex>>,
    /// Fixed when the index was made, so known after it is closed.
    method: Method,
    location: String,
    /// The fork generation (`parallel::generation`) of the process that opened it: a handle a forked child
    /// inherited refuses to change an index on disk (both processes would append to the same files) and
    /// is forgotten, not dropped, when the child lets it go (the parent still holds the files).
    opened_in: u64,
}

/// A match's score as Python gets it: a distance is an `int` (as `Sketch.distance` gives it), a similarity
/// a `float`.
#[derive(IntoPyObject)]
enum ScoreValue {
    Distance(u32),
    Similarity(f64),
}

fn matches(found: Vec<Match>) -> Vec<(String, ScoreValue)> {
    found
        .into_iter()
        .map(|m| {
            let score = match m.score {
                Score::Distance(d) => ScoreValue::Distance(d),
                Score::Similarity(s) => ScoreValue::Similarity(s),
            };
            (m.id, score)
        })
        .collect()
}

impl PyIndex {
    /// Runs `f` on the index under the read lock, or says that it is closed.
    fn read<T>(&self, f: impl FnOnce(&AnyIndex) -> T) -> PyResult<T> {
        match &*self.inner.read().unwrap_or_else(|e| e.into_inner()) {
            Some(index) => Ok(f(index)),
            None => Err(self.closed_error()),
        }
    }

    /// Drops an index this process opened; forgets one inherited from the parent of a fork, whose files,
    /// log and merging thread are the parent's (a forked child has none of the parent's threads to join).
    fn let_go(&self, index: Option<AnyIndex>) {
        if self.inherited() {
            std::mem::forget(index);
        } else {
            drop(index);
        }
    }

    /// Whether this process is a forked child of the one that opened the index.
    fn inherited(&self) -> bool {
        parallel::generation() != self.opened_in
    }

    /// [`write`](Self::write) for a change to the entries, refused through a handle on disk that a forked
    /// child inherited.
    fn change<T>(&self, f: impl FnOnce(&mut AnyIndex) -> T) -> PyResult<T> {
        self.write(|i| {
            let on_disk = matches!(i, AnyIndex::Disk(d) if d.store_kind() != StoreKind::Redis);
            if on_disk && self.inherited() {
                return Err(crate::errors::IndexError::new_err(format!(
                    "{}: this handle was opened before this process was forked from its parent, which \
                     still writes through it: open the index again in this process (read_only=True \
                     beside the parent's writer)",
                    self.location
                )));
            }
            Ok(f(i))
        })?
    }

    /// Runs `f` on the index under the write lock, or says that it is closed.
    fn write<T>(&self, f: impl FnOnce(&mut AnyIndex) -> T) -> PyResult<T> {
        match &mut *self.inner.write().unwrap_or_else(|e| e.into_inner()) {
            Some(index) => Ok(f(index)),
            None => Err(self.closed_error()),
        }
    }

    fn closed_error(&self) -> PyErr {
        crate::errors::IndexError::new_err(format!(
            "the index {} is closed (open it again to use it)",
            self.location
        ))
    }

    /// The method of every entry.
    fn method(&self) -> Method {
        self.method
    }

    /// The sketch of a document, or the sketch given (as `sketch=`, or in the document's place: a
    /// `neardup.Sketch` is never a document, so `add(id, index.get(other))` means what it says).
    fn sketch_of(
        &self,
        py: Python<'_>,
        document: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
        media: Option<&str>,
    ) -> PyResult<Sketch> {
        match (document, sketch) {
            (Some(given), None) if given.is_instance_of::<PySketch>() => as_sketch(given),
            (Some(doc), None) => {
                let method = self.method();
                sketch_document(py, method, doc, media)
            }
            (None, Some(s)) => as_sketch(s),
            (None, None) => Err(PyValueError::new_err(
                "give a document, or sketch= (a neardup.Sketch or its string)",
            )),
            (Some(_), Some(_)) => Err(PyValueError::new_err(
                "give a document, or sketch= (a neardup.Sketch or its string), not both",
            )),
        }
    }
}

impl Drop for PyIndex {
    fn drop(&mut self) {
        let index = self
            .inner
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.let_go(index);
    }
}

#[pymethods]
impl PyIndex {
    /// Opens the index at `path`, or creates it there (or in memory when `path` is None) for `scheme`. `path`
    /// is a directory or a Redis URL (`redis://HOST:PORT/NAME`, `redis+cluster://HOST:PORT,…/NAME`): an index
    /// in Redis is shared by every process that opens it, and each query reads it as it is.
    /// SimHash: `k` is the largest distance queries may ask for (default 3) and `expected` the number of
    /// entries the tables are designed for. MinHash: `threshold` (default 0.8) chooses the LSH bands.
    /// `read_only=True` opens an existing index beside its writer (another process: `neardup index add`, the
    /// server): it sees what the writer committed at each `refresh()`, and refuses writes.
    #[new]
    #[pyo3(signature = (path=None, scheme=None, *, k=None, threshold=None, expected=None, num_perm=None, seed=None, shingle=None, char_shingle=None, read_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: Option<PathBuf>,
        scheme: Option<&str>,
        k: Option<Whole>,
        threshold: Option<f64>,
        expected: Option<f64>,
        num_perm: Option<Whole>,
        seed: Option<Whole>,
        shingle: Option<Whole>,
        char_shingle: Option<Whole>,
        read_only: bool,
    ) -> PyResult<Self> {
        let k = Whole::checked::<u32>("k", k)?;
        let open = |path: &PathBuf| {
            if read_only {
                Index::open_reader(path)
            } else {
                Index::open(path)
            }
        };
        // A directory is opened if it exists and holds something (an empty one is where a new index goes,
        // as `neardup index create` takes it); an index in Redis if it is there.
        let opened = match &path {
            Some(p) if p.to_str().is_some_and(is_redis_url) => match open(p) {
                Ok(index) => Some(index),
                Err(neardup::Error::NoIndex { .. }) => None,
                Err(e) => return Err(e).py_err(),
            },
            Some(p) if p.exists() && !p.is_dir() => {
                return Err(PyNotADirectoryError::new_err(format!(
                    "{}: a file, not an index (an index is a directory: give a new or empty one to make \
                     an index there)",
                    p.display()
                )));
            }
            Some(p) if p.exists() && !is_empty_dir(p) => Some(open(p).py_err()?),
            _ => None,
        };
        let opened = match (&path, opened) {
            // The engine's own error names the path: a `FileNotFoundError` (no index there).
            (Some(p), None) if read_only => Some(open(p).py_err()?),
            (None, _) if read_only => {
                return Err(PyValueError::new_err(
                    "read_only=True opens an existing index: give the path or URL of one",
                ));
            }
            (Some(p), None) if scheme.is_none() => {
                // `Index("minhash")` for `Index(None, "minhash")` would make a directory `minhash`.
                if let Some(name) = p
                    .to_str()
                    .filter(|name| neardup::schemes::lookup(name).is_ok())
                {
                    return Err(PyValueError::new_err(format!(
                        "'{name}' is a scheme's name, and the first argument is the index's path: \
                         Index(None, '{name}') for an index in memory, or Index('./{name}', '{name}') \
                         for one in a directory of that name"
                    )));
                }
                None
            }
            (_, opened) => opened,
        };
        let inner = if let (Some(path), Some(index)) = (&path, opened) {
            Radius::asked(index.method(), k, threshold).py_err()?;
            // An index keeps the radius it was made with: its tables (or bands) were built for it.
            match (index.kind(), k, threshold) {
                (Kind::Hamming(design), Some(k), _) if k != design.k => {
                    return Err(PyValueError::new_err(format!(
                        "{}: the index was made with k = {}, which it keeps (its tables were built for it): \
                         open it without k; query(..., k=...) narrows one query",
                        path.display(),
                        design.k
                    )));
                }
                (Kind::Lsh { threshold: own, .. }, _, Some(t)) if t != *own => {
                    return Err(PyValueError::new_err(format!(
                        "{}: the index was made with threshold = {own}, which it keeps (its LSH bands were \
                         chosen for it): open it without threshold; query(..., threshold=...) raises one query's",
                        path.display()
                    )));
                }
                _ => {}
            }
            if let Some(scheme) = scheme {
                let asked = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
                if asked != index.method() {
                    return Err(crate::errors::SchemeMismatch::new_err(format!(
                        "{}: the index holds {} sketches, not {}",
                        path.display(),
                        index.method(),
                        asked
                    )));
                }
            }
            AnyIndex::Disk(index)
        } else {
            let method = method_of(
                scheme.unwrap_or("simhash-doc-v1"),
                num_perm,
                seed,
                shingle,
                char_shingle,
            )?;
            Radius::asked(method, k, threshold).py_err()?;
            let mut settings = IndexSettings::default();
            if let Some(k) = k {
                settings.k = k;
            }
            if let Some(expected) = expected {
                if !(expected >= 1.0 && expected.is_finite()) {
                    return Err(PyValueError::new_err(format!(
                        "expected must be a count of at least 1 (e.g. 1e9), not {expected}"
                    )));
                }
                settings.expected = expected;
            }
            settings.dedup.threshold = threshold;
            match &path {
                Some(path) => AnyIndex::Disk(Index::create(path, method, &settings).py_err()?),
                None => AnyIndex::Memory(Index::in_memory(method, &settings).py_err()?),
            }
        };
        let (method, location) = with!(&inner, i => (i.method(), i.location().to_owned()));
        Ok(PyIndex {
            inner: RwLock::new(Some(inner)),
            method,
            location,
            opened_in: parallel::generation(),
        })
    }

    /// The scheme of every entry.
    #[getter]
    fn scheme(&self) -> String {
        self.method().name()
    }

    /// Where the index lives (a path, or "memory").
    #[getter]
    fn location(&self) -> String {
        self.location.clone()
    }

    /// Catches up with what other writers of the index committed since it was opened (or last refreshed):
    /// returns whether anything changed.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        use neardup::index::Refreshed;
        py.detach(|| self.write(|i| with!(i, i => i.refresh())))?
            .py_err()
            .map(|r| r != Refreshed::Current)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.read(|i| with!(i, i => i.len()))
    }

    fn __contains__(&self, id: Id) -> PyResult<bool> {
        self.read(|i| with!(i, i => i.contains(&id.0)))
    }

    /// The stored sketch of an id, or None.
    fn get(&self, id: Id) -> PyResult<Option<PySketch>> {
        Ok(self
            .read(|i| with!(i, i => i.get(&id.0)))?
            .map(|sketch| PySketch { sketch }))
    }

    /// Stores a document (bytes or text, any medium) or a sketch (a `neardup.Sketch` in the document's place,
    /// or its string as `sketch=`) under `id`, replacing what the id held.
    /// Durable when it returns, for an index on disk.
    #[pyo3(signature = (id, document=None, *, sketch=None, media=None))]
    fn add(
        &self,
        py: Python<'_>,
        id: Id,
        document: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
        media: Option<&str>,
    ) -> PyResult<PySketch> {
        let sketch = self.sketch_of(py, document, sketch, media)?;
        py.detach(|| self.change(|i| with!(i, i => i.insert(&id.0, &sketch))))?
            .py_err()?;
        Ok(PySketch { sketch })
    }

    /// Stores many `(id, sketch)` pairs (sketches or their strings; any iterable of pairs, such as
    /// `zip(ids, sketches)`) in one durable write.
    fn add_sketches(&self, py: Python<'_>, entries: &Bound<'_, PyAny>) -> PyResult<usize> {
        let entries = entries
            .try_iter()?
            .enumerate()
            .map(|(n, pair)| {
                let pair = pair?;
                let (id, sketch): (Id, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "entry {n}: expected an (id, sketch) pair, not {}",
                        pair.repr()
                            .map_or_else(|_| "?".to_owned(), |r| r.to_string())
                    ))
                })?;
                Ok((id.0, as_sketch(&sketch)?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        py.detach(|| {
            self.change(
                |i| with!(i, i => i.insert_all(entries.iter().map(|(id, s)| (id.as_str(), s)))),
            )
        })?
        .py_err()
    }

    /// The stored ids near a document or a sketch (a `neardup.Sketch`, or `sketch=` with it or its string),
    /// closest first: `[(id, score)]`, the score a distance (SimHash) or an estimated similarity (MinHash).
    /// `k` or `threshold` narrows the index's own radius.
    #[pyo3(signature = (document=None, *, sketch=None, k=None, threshold=None, media=None))]
    fn query(
        &self,
        py: Python<'_>,
        document: Option<&Bound<'_, PyAny>>,
        sketch: Option<&Bound<'_, PyAny>>,
        k: Option<Whole>,
        threshold: Option<f64>,
        media: Option<&str>,
    ) -> PyResult<Vec<(String, ScoreValue)>> {
        let k = Whole::checked::<u32>("k", k)?;
        let sketch = self.sketch_of(py, document, sketch, media)?;
        let method = self.method();
        let radius = Radius::asked(method, k, threshold).py_err()?;
        py.detach(|| self.read(|i| with!(i, i => i.query(&sketch, radius))))?
            .py_err()
            .map(matches)
    }

    /// Sketches a column of documents (see `batch::ColumnInput`) on all cores with the GIL released, and
    /// stores each under its row's id (`ids`: Arrow buffers of strings), in order, in transactions of
    /// 10,000; if a row cannot be sketched and not `keep_going`, stores nothing. Returns how many were
    /// stored and the failures `(row, message)`.
    #[pyo3(signature = (ids, documents, *, media=None, keep_going=false, progress=None))]
    fn _add_column(
        &self,
        py: Python<'_>,
        ids: ColumnInput<'_>,
        documents: ColumnInput<'_>,
        media: Option<&str>,
        keep_going: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(usize, Failures)> {
        let method = self.method();
        let hint = media_hint(media)?;
        // A closed index (or one a forked child may not change) is refused before any sketching.
        self.change(|_| ())?;
        let id_rows = ids.id_rows(py)?;
        let id_column = ids.column(&id_rows)?;
        let ids = row_ids(&id_column, documents.len(py))?;
        let mut entries = Vec::with_capacity(ids.len());
        let mut failures = Vec::new();
        for (row, signed) in sketch_input(
            py,
            &documents,
            method,
            hint,
            Profiles::NONE,
            progress.as_ref(),
        )?
        .into_iter()
        .enumerate()
        {
            match signed {
                Ok(signed) => entries.push((ids[row], signed.sketch)),
                Err(failure) => failures.push((row, failure.message, failure.kind)),
            }
        }
        if !failures.is_empty() && !keep_going {
            return Ok((0, failures));
        }
        // One durable transaction at a time (the engine's own size), Python's signals checked between:
        // Ctrl-C stops the storing there, and says how much was stored.
        let mut stored = 0;
        for transaction in entries.chunks(TRANSACTION_ENTRIES) {
            stored += py
                .detach(|| {
                    self.change(
                        |i| with!(i, i => i.insert_all(transaction.iter().map(|(id, s)| (*id, s)))),
                    )
                })?
                .py_err()?;
            if let Err(e) = py.check_signals() {
                return Err(stopped_after(py, e, stored, entries.len(), "stored"));
            }
        }
        Ok((stored, failures))
    }

    /// Sketches a column of documents and queries the index with each, on all cores with the GIL
    /// released. Returns the matches as columns, each query's closest first, queries in row order: the
    /// query's row (`int64` bytes), the stored id (a [`StringColumn`]) and the score (`float64` bytes);
    /// and the rows that could not be sketched `(row, message)`, which have no matches.
    #[pyo3(signature = (documents, *, k=None, threshold=None, media=None, progress=None, limit=None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn _query_column<'py>(
        &self,
        py: Python<'py>,
        documents: ColumnInput<'_>,
        k: Option<Whole>,
        threshold: Option<f64>,
        media: Option<&str>,
        progress: Option<Py<PyAny>>,
        limit: Option<Whole>,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        StringColumn<'py>,
        Bound<'py, PyBytes>,
        Failures,
    )> {
        let k = Whole::checked::<u32>("k", k)?;
        let limit = Whole::count("limit", limit, u32::MAX)?.map_or(usize::MAX, |l| l as usize);
        let method = self.method();
        let radius = Radius::asked(method, k, threshold).py_err()?;
        let hint = media_hint(media)?;
        self.read(|_| ())?;
        let signed = sketch_input(
            py,
            &documents,
            method,
            hint,
            Profiles::NONE,
            progress.as_ref(),
        )?;
        // Answered a stretch of queries at a time, Python's signals checked between: a query may have
        // many matches (a large cluster), so that a column of them takes long.
        let mut found = Vec::with_capacity(signed.len());
        for stretch in signed.chunks(QUERY_STRETCH) {
            let answers = py
                .detach(|| {
                    self.read(|i| {
                        parallel::install(|| {
                            with!(i, i => stretch
                            .par_iter()
                            .map(|s| match s {
                                // Closest first: the cut keeps a query's best matches, and its
                                // memory, not the whole cluster's.
                                Ok(s) => i.query(&s.sketch, radius).map(|mut found| {
                                    found.truncate(limit);
                                    found
                                }),
                                Err(_) => Ok(Vec::new()),
                            })
                            .collect::<Result<Vec<_>, _>>())
                        })
                    })
                })?
                .py_err()?;
            found.extend(answers);
            if let Err(e) = py.check_signals() {
                return Err(stopped_after(py, e, found.len(), signed.len(), "answered"));
            }
        }
        let failures = failures_of(&signed);
        let (mut rows, mut scores, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        for (row, matches) in found.into_iter().enumerate() {
            for m in matches {
                rows.push(row as i64);
                scores.push(m.score.value());
                ids.push(m.id);
            }
        }
        Ok((
            le_bytes(py, &rows, i64::to_le_bytes),
            string_column(py, ids.len(), |j| Some(ids[j].as_bytes())),
            le_bytes(py, &scores, f64::to_le_bytes),
            failures,
        ))
    }

    /// Removes an id; returns whether it was stored.
    fn remove(&self, py: Python<'_>, id: Id) -> PyResult<bool> {
        py.detach(|| self.change(|i| with!(i, i => i.remove([id.0.as_str()]))))?
            .py_err()
            .map(|n| n > 0)
    }

    /// Every entry, sorted by id: the ids and the sketches' strings, as columns (see `neardup.Index.entries`).
    fn _entries<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(usize, StringColumn<'py>, StringColumn<'py>)> {
        let entries = py
            .detach(|| self.read(|i| with!(i, i => i.entries())))?
            .py_err()?;
        let sketches: Vec<String> = entries.iter().map(|(_, s)| s.to_string()).collect();
        Ok((
            entries.len(),
            string_column(py, entries.len(), |r| Some(entries[r].0.as_bytes())),
            string_column(py, sketches.len(), |r| Some(sketches[r].as_bytes())),
        ))
    }

    /// What the index holds and how, as `neardup index stats --json` prints it: `entries`, `scheme`,
    /// `kind`, `k` or `threshold`, `design`, `tables`, `store` (`segments`, `redb`, `redis`, `memory`),
    /// `file_bytes`, `log_bytes`, `memory_table_bytes`, `memory_id_bytes`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let summary = self.read(|i| match i {
            AnyIndex::Disk(i) => i.summary(),
            AnyIndex::Memory(i) => i.summary(),
        })?;
        // The CLI's JSON object, so that both name and shape the fields alike.
        let json = summary.to_json().to_string();
        py.import("json")?
            .call_method1("loads", (json,))?
            .cast_into::<PyDict>()
            .map_err(Into::into)
    }

    /// Reads every file of an index on disk against its checksums (every entry of one in Redis), as
    /// `neardup index verify` does; raises `neardup.IndexError` naming the damaged file. Nothing to check
    /// for an index in memory.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            self.read(|i| match i {
                AnyIndex::Disk(i) => i.verify(),
                AnyIndex::Memory(_) => Ok(()),
            })
        })?
        .py_err()
    }

    /// Writes every entry of an index in segments into one new segment now, emptying the write-ahead log
    /// (the writer also merges by itself as the index grows). Other kinds of index (in memory, redb, Redis)
    /// have no segments: merging one raises `neardup.IndexError`.
    fn merge(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            self.change(|i| match i {
                AnyIndex::Disk(i) => i.merge(),
                AnyIndex::Memory(_) => Err(neardup::Error::Index {
                    location: "memory".into(),
                    reason: "an index in memory has no segments to merge".into(),
                }),
            })
        })?
        .py_err()
    }

    /// Closes the index: an index on disk lets its files go (another writer may open them; every add had
    /// already been made durable), one in memory frees it. Later calls raise `neardup.IndexError`; closing
    /// again does nothing. `with neardup.Index(...) as index:` closes it at the end of the block.
    fn close(&self, py: Python<'_>) {
        // Waits without the GIL for calls in other threads to finish, then drops the index.
        py.detach(|| {
            let index = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
            self.let_go(index)
        });
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Refused, saying what to do: the index's files, lock and connections belong to this process (an
    /// Index passed to a `spawn` or `forkserver` worker, Python 3.14's default on Linux, is pickled).
    fn __reduce__(&self) -> PyResult<()> {
        let how = if self.location == "memory" {
            "an index in memory lives in one process: pass its entries() (or the documents) instead"
                .to_owned()
        } else {
            format!(
                "open it again in the other process, neardup.Index({:?}) (with read_only=True beside this \
                 writer; an index in Redis takes any number of writers)",
                self.location
            )
        };
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a neardup.Index cannot be pickled: {how}"
        )))
    }

    fn __repr__(&self) -> String {
        let state = match self.__len__() {
            Ok(n) => format!("entries={n}"),
            Err(_) => "closed".to_owned(),
        };
        format!(
            "neardup.Index({:?}, scheme={:?}, {state})",
            self.location,
            self.scheme(),
        )
    }
}

/// Whether `path` is a directory with nothing in it.
fn is_empty_dir(path: &std::path::Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// An id as Python code passes one: a `str`, UTF-8 `bytes` (their text), or an integer of any kind (its
/// decimal text, as a column of integer ids is read).
struct Id(String);

impl<'a, 'py> FromPyObject<'a, 'py> for Id {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyString>() {
            return obj.extract().map(Id);
        }
        // UTF-8 bytes, as a column of ids may hold (add_many, dedup): the id is their text.
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return checked_utf8(bytes.as_bytes())
                .map(|text| Id(text.to_owned()))
                .map_err(|problem| {
                    PyValueError::new_err(format!("an id given as bytes must be UTF-8 ({problem})"))
                });
        }
        if let Some(id) = integer_id(&obj)? {
            return Ok(Id(id));
        }
        Err(PyTypeError::new_err(format!(
            "an id must be a string, UTF-8 bytes or an integer, not {}",
            obj.get_type().name()?
        )))
    }
}

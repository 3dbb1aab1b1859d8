//! `neardup.dedup_files`: the engine's `Dedup` over datasets on disk (JSON Lines, Parquet, directories of
//! shards), read by `neardup-io` as `neardup dedup` reads them: a batch of 4,096 records (or 64 MiB of
//! text) at a time, each batch sketched on all cores, so that nothing but each document's id and sketch (and
//! exact profile) is held; and, when asked, the deduplicated split written by the same second pass as the
//! CLI's `--output` and `--removed`. The GIL is released throughout; Python's signals are checked between
//! batches, and whenever the engine reports its progress finding pairs, so Ctrl-C stops a long run.

use crate::api::Whole;
use crate::api::{media_hint, method_of};
use crate::batch::{Profiles, analyze_text_as, signer};
use crate::dedup::{RowIds, RowSink, Rows, RunArgs, TableColumns, new_dedup};
use crate::errors::IntoPy;
use neardup::dedup::{Document, Member};
use neardup::media::{Media, MediaHint};
use neardup::parallel;
use neardup_io::{Dataset, DatasetOptions, Decision, FieldPath, FieldRole, IoError, Outputs};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;

/// Records read and sketched per batch (as the CLI's).
const BATCH_ROWS: usize = 4096;
/// Problems kept with their place and message (all are counted): a file of bad lines does not fill memory.
const PROBLEMS_KEPT: usize = 1000;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dedup_files, m)?)?;
    Ok(())
}

fn field(name: &str, what: &str) -> PyResult<FieldPath> {
    FieldPath::new(name).map_err(|e| PyValueError::new_err(format!("{what}: {}", e.0)))
}

/// The problems of a run: the first [`PROBLEMS_KEPT`] with their place and message, and how many.
#[derive(Default)]
struct Problems {
    kept: Vec<(String, String)>,
    count: u64,
}

impl Problems {
    fn add(&mut self, place: String, message: String) {
        self.count += 1;
        if self.kept.len() < PROBLEMS_KEPT {
            self.kept.push((place, message));
        }
    }
}

/// What the Python side needs of a run: the result table's columns (see `dedup::TableColumns`), the first
/// problems `(where, message)` (records that are not documents, documents that could not be sketched,
/// files that could not be read), and how many there were.
type Outcome<'py> = (TableColumns<'py>, Vec<(String, String)>, u64);

/// Deduplicates the records of `paths`; with `output` or `removed`, writes the split (unless `strict` and a
/// problem was found: then nothing is written and the problems are returned for the caller to raise).
#[pyfunction]
#[pyo3(signature = (paths, scheme, *, id_field="id", text_field="text", media_field=None, k=None, threshold=None, verify=None, measure=None, verify_ngram=None, clustering="centres", representative="smallest-id", media=None, num_perm=None, seed=None, shingle=None, char_shingle=None, output=None, removed=None, strict=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn dedup_files<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    scheme: &str,
    id_field: &str,
    text_field: &str,
    media_field: Option<&str>,
    k: Option<Whole>,
    threshold: Option<f64>,
    verify: Option<&str>,
    measure: Option<&str>,
    verify_ngram: Option<Whole>,
    clustering: &str,
    representative: &str,
    media: Option<&str>,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
    output: Option<PathBuf>,
    removed: Option<PathBuf>,
    strict: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Outcome<'py>> {
    let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
    let hint = media_hint(media)?;
    let (mut dedup, interrupts) = new_dedup(
        method,
        &RunArgs {
            k,
            threshold,
            verify,
            measure,
            verify_ngram,
            clustering,
            representative,
        },
    )?;
    let options = DatasetOptions {
        id_field: field(id_field, "id_field")?,
        text_field: field(text_field, "text_field")?,
        media_field: media_field.map(|f| field(f, "media_field")).transpose()?,
        format: None,
    };
    if paths.is_empty() {
        return Err(PyValueError::new_err("no paths given"));
    }
    if paths.iter().any(|p| p == "-") {
        return Err(PyValueError::new_err(
            "'-' (standard input) is the command's: in Python, read the records and pass their texts to neardup.dedup",
        ));
    }
    let (dataset, open_errors) = Dataset::open(&paths, options);
    if dataset.inputs().is_empty() {
        let first = open_errors
            .first()
            .map_or_else(|| "no input".to_owned(), ToString::to_string);
        return Err(PyFileNotFoundError::new_err(format!(
            "no dataset to read: {first}"
        )));
    }
    // Outputs that cannot be written, or would replace an input, are refused before the run.
    let checked = dataset
        .check_outputs(Outputs {
            kept: output.as_deref(),
            removed: removed.as_deref(),
            table: None,
        })
        .map_err(split_error)?;
    for notice in dataset.notices().iter().chain(&checked.notices) {
        warn::<pyo3::exceptions::PyUserWarning>(py, notice)?;
    }
    let mut problems = Problems::default();
    for e in &open_errors {
        problems.add(e.file.clone(), e.message.clone());
    }
    let analyze = signer(method, Profiles::of(&dedup));
    let run = py.detach(|| -> PyResult<_> {
        // Each document's id (a sketched one's is the engine's) and ordinal, in input order; a document's row
        // is its place here.
        let mut ids = RowIds::default();
        let mut ordinals: Vec<u64> = Vec::new();
        // `progress(bytes read, total bytes)`, called on this thread; its error (or Ctrl-C) stops the read
        // at the next batch.
        let total = dataset.total_bytes();
        let progress_error: Cell<Option<PyErr>> = Cell::new(None);
        let mut report = |bytes: u64| {
            if let Some(callback) = &progress {
                let error = progress_error
                    .take()
                    .or_else(|| Python::attach(|py| callback.call1(py, (bytes, total)).err()));
                progress_error.set(error);
            }
        };
        let read = dataset.for_each_batch(BATCH_ROWS, &mut report, &mut |batch| {
            if let Some(e) = progress_error.take() {
                return Err(e);
            }
            // Ctrl-C (KeyboardInterrupt) stops a long run between batches.
            Python::attach(|py| py.check_signals())?;
            let signed: Vec<_> = parallel::install(|| {
                batch
                    .par_iter()
                    .map(|record| {
                        let text = record.text.as_deref().ok()?;
                        let hint = match record.media.as_deref().and_then(Media::from_name) {
                            Some(forced) => MediaHint::Force(forced),
                            None => hint,
                        };
                        Some(analyze_text_as(text, hint, &analyze))
                    })
                    .collect()
            });
            for (record, signed) in batch.into_iter().zip(signed) {
                let label = record.origin.to_string();
                match (record.text, signed) {
                    (Err(why), _) => problems.add(label, why),
                    (Ok(_), Some(Ok(s))) => {
                        dedup
                            .push(Document {
                                profile: s.profile,
                                length: s.length,
                                ..Document::new(record.id, s.sketch)
                            })
                            .py_err()?;
                        ids.push_sketched();
                        ordinals.push(record.ordinal);
                    }
                    (Ok(_), outcome) => {
                        let why = outcome
                            .and_then(Result::err)
                            .map(|failure| failure.message)
                            .unwrap_or_default();
                        problems.add(format!("{label} ({})", record.id), why);
                        ids.push_unsketched(&record.id);
                        ordinals.push(record.ordinal);
                    }
                }
            }
            Ok::<_, PyErr>(())
        })?;
        if let Some(e) = progress_error.take() {
            return Err(e);
        }
        for e in &read.errors {
            let place = e.position.map_or_else(String::new, |p| format!(":{p}"));
            problems.add(format!("{}{place}", e.file), e.message.clone());
        }
        // Not one document is a run that read the wrong field (or the wrong files): an error, before
        // anything is written, as the CLI's is a non-zero exit.
        let notices = read.field_notices(dataset.options());
        let read_nothing = notices.iter().find_map(|n| match n.field {
            FieldRole::Text => Some((n, "check text_field")),
            FieldRole::Format => Some((
                n,
                "dedup_files reads datasets of records (JSON Lines, Parquet): for files that are each \
                 one document (HTML, PDF, text, …), read them and pass their contents to neardup.dedup, \
                 with their paths as ids",
            )),
            FieldRole::Id => None,
        });
        if let Some((notice, advice)) = read_nothing {
            let first = problems
                .kept
                .first()
                .map_or_else(String::new, |(place, why)| {
                    format!(" (the first: {place}: {why})")
                });
            return Err(PyValueError::new_err(format!(
                "{}; {advice}{first}",
                notice.message
            )));
        }
        let mut rows = Rows::new(ids.len());
        dedup
            .clusters(&mut RowSink {
                rows: &mut rows,
                row_of: |m: &Member<'_>| ids.row_of(m),
            })
            .map_err(|e| Python::attach(|py| interrupts.error(py, e, ids.len())))?;
        let write = (output.is_some() || removed.is_some()) && !(strict && problems.count > 0);
        if write {
            let by_ordinal: HashMap<u64, Decision> = rows
                .removals()
                .map(|(r, of, score)| {
                    let duplicate_of = ids.id(&dedup, of).to_owned();
                    (
                        ordinals[r],
                        Decision::Remove {
                            duplicate_of,
                            score,
                        },
                    )
                })
                .collect();
            let split = dataset
                .write_split(
                    &|ordinal| by_ordinal.get(&ordinal).cloned().unwrap_or(Decision::Keep),
                    output.as_deref(),
                    removed.as_deref(),
                )
                .map_err(split_error)?;
            if let Some(e) = split.errors.first() {
                return Err(PyOSError::new_err(format!(
                    "the dataset could not be written whole: {e}"
                )));
            }
        }
        Ok((ids, rows, problems, notices))
    });
    let (ids, rows, problems, notices) = run?;
    // A misspelt id field is otherwise silent: every record is then known by its place.
    for notice in notices.iter().filter(|n| n.field == FieldRole::Id) {
        warn::<pyo3::exceptions::PyRuntimeWarning>(
            py,
            &format!("{}; check id_field", notice.message),
        )?;
    }
    Ok((
        rows.table_columns(py, |r| ids.id(&dedup, r).as_bytes()),
        problems.kept,
        problems.count,
    ))
}

/// Issues a Python warning of category `W` at the caller's line. Its control characters are shown escaped
/// (a NUL as `\0`, others as `\xNN`): messages name files, fields and records, whose escape sequences must
/// not drive a terminal or a notebook, and a C string cannot hold a NUL.
fn warn<W: pyo3::PyTypeInfo>(py: Python<'_>, message: &str) -> PyResult<()> {
    let mut shown = String::with_capacity(message.len());
    for c in message.chars() {
        match c {
            '\0' => shown.push_str("\\0"),
            c if c.is_control() => shown.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => shown.push(c),
        }
    }
    let message = std::ffi::CString::new(shown).expect("NULs escaped");
    PyErr::warn(py, &py.get_type::<W>(), &message, 1)
}

/// A split refused as asked (an output that is an input, a format that does not follow) is a `ValueError`;
/// one that failed while it was written, an `OSError`.
fn split_error(e: IoError) -> PyErr {
    match e {
        IoError::Unsupported { .. } | IoError::FieldClash { .. } => {
            PyValueError::new_err(e.to_string())
        }
        e => PyOSError::new_err(e.to_string()),
    }
}

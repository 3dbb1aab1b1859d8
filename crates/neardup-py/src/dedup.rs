//! `neardup.dedup`: the engine's `Dedup` over a column of documents. Clusters come back as row numbers; the
//! Python side turns them into a `pyarrow.Table` with the CLI's columns, taking ids from the caller's array.

use crate::api::Whole;
use crate::api::{media_hint, method_of};
use crate::batch::{ColumnInput, Failures, IdColumn, Profiles, sketch_input};
use crate::columns::{StringColumn, le_bytes, string_column};
use crate::errors::{IntoPy, interrupted_saying, to_py};
use neardup::Method;
use neardup::dedup::{
    Cluster, Clustering, Dedup, Document, ExactMeasure, Member, Options, Representative, Score,
    Settings, Sink, Spelling, Verification,
};
use neardup::parallel;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::slice::ParallelSliceMut;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dedup_column, m)?)?;
    Ok(())
}

/// Each row's place in the clusters: its cluster (0: none), its representative's row and the row it
/// duplicates (-1: none), and its score (NaN: none).
pub struct Rows {
    cluster: Vec<u64>,
    representative: Vec<i64>,
    duplicate_of: Vec<i64>,
    score: Vec<f64>,
}

impl Rows {
    /// `n` rows in no cluster.
    pub fn new(n: usize) -> Self {
        Rows {
            cluster: vec![0; n],
            representative: vec![-1; n],
            duplicate_of: vec![-1; n],
            score: vec![f64::NAN; n],
        }
    }

    /// The rows that duplicate another: `(row, the row it duplicates, score)`.
    pub fn removals(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        self.duplicate_of
            .iter()
            .enumerate()
            .filter(|&(_, &of)| of >= 0)
            .map(|(r, &of)| (r, of as usize, self.score[r]))
    }

    /// The rows' places as little-endian bytes, by row number: `representative` and `duplicate_of`
    /// (`int64`), `score` (`float64`).
    pub fn row_numbers<'py>(&self, py: Python<'py>) -> [Bound<'py, PyBytes>; 3] {
        [
            le_bytes(py, &self.representative, i64::to_le_bytes),
            le_bytes(py, &self.duplicate_of, i64::to_le_bytes),
            le_bytes(py, &self.score, f64::to_le_bytes),
        ]
    }
}

/// The result table's columns, as `neardup.dedup` and `neardup.dedup_files` hand them to Python:
/// `cluster` (`uint64` bytes, 0 for none) and `score` (`float64` bytes, NaN for none), then `id`,
/// `representative` and `duplicate_of` as [`StringColumn`]s.
pub type TableColumns<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    StringColumn<'py>,
    StringColumn<'py>,
    StringColumn<'py>,
);

impl Rows {
    /// The result table's columns, with each row's id `id_of(row)`: the id columns are built here, so the
    /// Python side needs no `take` or `cast` (nor `pyarrow.compute`'s import).
    pub fn table_columns<'py, 'a>(
        &self,
        py: Python<'py>,
        id_of: impl Fn(usize) -> &'a [u8],
    ) -> TableColumns<'py> {
        let n = self.cluster.len();
        let of_row = |row: i64| (row >= 0).then(|| id_of(row as usize));
        (
            le_bytes(py, &self.cluster, u64::to_le_bytes),
            le_bytes(py, &self.score, f64::to_le_bytes),
            string_column(py, n, |r| Some(id_of(r))),
            string_column(py, n, |r| of_row(self.representative[r])),
            string_column(py, n, |r| of_row(self.duplicate_of[r])),
        )
    }
}

/// Collects clusters into [`Rows`], finding each member's row with `row_of` (by its ordinal, the engine's
/// count of documents pushed before it, or by its id). A removed member duplicates its cluster's
/// representative, whose row is found once per cluster.
pub struct RowSink<'a, F: Fn(&Member<'_>) -> usize> {
    pub rows: &'a mut Rows,
    pub row_of: F,
}

impl<F: Fn(&Member<'_>) -> usize> Sink for RowSink<'_, F> {
    fn pair(&mut self, _: &str, _: &str, _: Score) -> std::io::Result<()> {
        Ok(())
    }

    fn cluster(&mut self, cluster: &Cluster<'_>) -> std::io::Result<()> {
        let kept = cluster.representative();
        let representative = (self.row_of)(kept);
        for m in &cluster.members {
            let r = (self.row_of)(m);
            self.rows.cluster[r] = cluster.number as u64;
            self.rows.representative[r] = representative as i64;
            if let Some(of) = m.duplicate_of {
                debug_assert_eq!(of, kept.id, "a member duplicates its representative");
                self.rows.duplicate_of[r] = representative as i64;
            }
            if let Some(score) = m.score {
                self.rows.score[r] = score.value();
            }
        }
        Ok(())
    }
}

/// The rows of a run whose documents could not be sketched, ascending. The engine holds only the others,
/// numbered as they were pushed (their ordinals), so a row and its document's ordinal map onto each other
/// through this list alone: the front door keeps no table of its own per row, nor a second copy of the ids.
#[derive(Default)]
pub struct Unsketched(Vec<usize>);

impl Unsketched {
    /// Adds a row after every row added so far.
    pub fn push(&mut self, row: usize) {
        debug_assert!(self.0.last().is_none_or(|&last| last < row));
        self.0.push(row);
    }

    /// The row of the document the engine numbered `ordinal`.
    pub fn row_of_ordinal(&self, ordinal: u64) -> usize {
        // The i-th unsketched row has rows[i] − i sketched rows before it (a count that never falls as i
        // grows): the row is `ordinal` plus the unsketched rows with at most `ordinal` sketched before them.
        let ordinal = ordinal as usize;
        let (mut low, mut high) = (0, self.0.len());
        while low < high {
            let middle = (low + high) / 2;
            if self.0[middle] - middle <= ordinal {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        ordinal + low
    }

    /// A row's place: `Ok(ordinal)` of its document in the engine, or `Err(i)` for the i-th unsketched row.
    pub fn place(&self, row: usize) -> Result<usize, usize> {
        match self.0.binary_search(&row) {
            Ok(i) => Err(i),
            Err(before) => Ok(row - before),
        }
    }
}

/// The ids of a run's rows, each kept once: a sketched row's is its engine document's, and only the rows
/// that could not be sketched keep their own (about 40 bytes a row less than a list of every id beside the
/// engine's documents).
#[derive(Default)]
pub struct RowIds {
    rows: usize,
    unsketched: Unsketched,
    unsketched_ids: Vec<Box<str>>,
}

impl RowIds {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Counts a row whose document was pushed to the engine (after the push: its id is the document's).
    pub fn push_sketched(&mut self) {
        self.rows += 1;
    }

    /// Counts a row whose document could not be sketched, keeping its id.
    pub fn push_unsketched(&mut self, id: &str) {
        self.unsketched.push(self.rows);
        self.unsketched_ids.push(id.into());
        self.rows += 1;
    }

    /// A row's id, with `dedup` the run its documents were pushed to.
    pub fn id<'a>(&'a self, dedup: &'a Dedup, row: usize) -> &'a str {
        match self.unsketched.place(row) {
            Ok(ordinal) => &dedup.documents()[ordinal].id,
            Err(i) => &self.unsketched_ids[i],
        }
    }

    /// The row of a cluster's member.
    pub fn row_of(&self, member: &Member<'_>) -> usize {
        self.unsketched
            .row_of_ordinal(member.ordinal.expect("a document, not an index entry"))
    }
}

pub fn parse_clustering(name: &str) -> PyResult<Clustering> {
    match name {
        "centres" | "centers" => Ok(Clustering::Centres),
        "components" => Ok(Clustering::Components),
        _ => Err(PyValueError::new_err(format!(
            "clustering '{name}' is not one of: centres, components"
        ))),
    }
}

pub fn parse_representative(name: &str) -> PyResult<Representative> {
    match name {
        "smallest-id" => Ok(Representative::SmallestId),
        "first" => Ok(Representative::FirstSeen),
        "longest" => Ok(Representative::Longest),
        _ => Err(PyValueError::new_err(format!(
            "representative '{name}' is not one of: smallest-id, first, longest"
        ))),
    }
}

pub fn parse_verification(name: &str) -> PyResult<Verification> {
    match name {
        "exact" => Ok(Verification::Exact),
        "estimate" => Ok(Verification::Estimate),
        "none" => Ok(Verification::None),
        _ => Err(PyValueError::new_err(format!(
            "verify '{name}' is not one of: exact, estimate, none"
        ))),
    }
}

/// The settings of a run as `neardup.dedup`, `dedup_files` and `neardup.spark.dedup` take them (the names
/// of their keyword arguments).
pub struct RunArgs<'a> {
    pub k: Option<Whole>,
    pub threshold: Option<f64>,
    pub verify: Option<&'a str>,
    pub measure: Option<&'a str>,
    pub verify_ngram: Option<Whole>,
    pub clustering: &'a str,
    pub representative: &'a str,
}

/// The engine's `Dedup` for a run of `method` with these settings ([`run_options`]), stopped by Ctrl-C
/// ([`Interrupts`]).
pub fn new_dedup(method: Method, args: &RunArgs<'_>) -> PyResult<(Dedup, Interrupts)> {
    let mut dedup = Dedup::new(method, run_options(method, args)?).py_err()?;
    let interrupts = Interrupts::watch(&mut dedup);
    Ok((dedup, interrupts))
}

/// Python's signals checked whenever the engine reports a run's progress, so that Ctrl-C (or a notebook's
/// interrupt) stops a run finding and clustering its pairs without the GIL (minutes, on tens of millions of
/// documents), as it stops the sketching before; and any other long engine call that reports its progress
/// (a calibration's scoring).
#[derive(Clone, Default)]
pub struct Interrupts(Arc<Mutex<Option<PyErr>>>);

impl Interrupts {
    /// Watches `dedup`: its first exception from a signal handler stops the run.
    fn watch(dedup: &mut Dedup) -> Interrupts {
        let interrupts = Interrupts::default();
        let checks = interrupts.clone();
        dedup.on_progress(move |_| checks.check());
        interrupts
    }

    /// Runs Python's signal handlers (taking the GIL): `Break`, the exception kept for the error, when one
    /// raises.
    pub fn check(&self) -> ControlFlow<()> {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    /// The Python exception for an error of the run over `documents` documents: for a stopped run, the
    /// signal handler's (a `KeyboardInterrupt` saying where it stopped).
    pub fn error(&self, py: Python<'_>, error: neardup::Error, documents: usize) -> PyErr {
        self.error_saying(py, error, || {
            format!(
                "interrupted while finding the near-duplicates of {documents} sketched documents; \
                 nothing was returned"
            )
        })
    }

    /// The Python exception for an engine error: for a call stopped by a signal, the handler's, saying
    /// `saying()` if it is a `KeyboardInterrupt`.
    pub fn error_saying(
        &self,
        py: Python<'_>,
        error: neardup::Error,
        saying: impl FnOnce() -> String,
    ) -> PyErr {
        let raised = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        match (error, raised) {
            (neardup::Error::Stopped, Some(raised)) => interrupted_saying(py, raised, saying),
            (error, _) => to_py(error),
        }
    }
}

/// The engine's options for a run of `method`, by the engine's rules for every front door
/// ([`Settings::options`]), so that the same arguments mean the same run from the command line, Python and
/// Spark.
pub fn run_options(method: Method, args: &RunArgs<'_>) -> PyResult<Options> {
    let settings = Settings {
        k: Whole::checked::<u32>("k", args.k)?,
        threshold: args.threshold,
        verify: args.verify.map(parse_verification).transpose()?,
        measure: args.measure.map(parse_measure).transpose()?,
        verify_ngram: Whole::checked::<u32>("verify_ngram", args.verify_ngram)?,
        clustering: parse_clustering(args.clustering)?,
        representative: parse_representative(args.representative)?,
        ..Settings::default()
    };
    settings
        .options(method)
        .map_err(|e| PyValueError::new_err(e.message(&Spelling::ARGUMENTS)))
}

fn parse_measure(name: &str) -> PyResult<ExactMeasure> {
    match name {
        "jaccard" => Ok(ExactMeasure::Jaccard),
        "cosine" => Ok(ExactMeasure::Cosine),
        _ => Err(PyValueError::new_err(format!(
            "measure '{name}' is not one of: jaccard, cosine"
        ))),
    }
}

/// Each row's rank among the ids in byte order, the ids checked to be unique. Inside the engine a row's id
/// is its rank, so that the engine's policies (smallest id, ties) see the caller's order of ids whatever
/// their type and size.
pub fn id_ranks(ids: &[&str]) -> PyResult<Vec<u64>> {
    let mut by_id: Vec<usize> = (0..ids.len()).collect();
    parallel::install(|| by_id.par_sort_unstable_by_key(|&r| ids[r]));
    if let Some(pair) = by_id.windows(2).find(|pair| ids[pair[0]] == ids[pair[1]]) {
        let (a, b) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
        return Err(PyValueError::new_err(format!(
            "rows {a} and {b} have the same id {:?}: ids must be unique",
            ids[a]
        )));
    }
    let mut ranks = vec![0u64; ids.len()];
    for (rank, &r) in by_id.iter().enumerate() {
        ranks[r] = rank as u64;
    }
    Ok(ranks)
}

/// Deduplicates a column (Arrow chunks or a list, see `batch::ColumnInput`) whose rows have the ids of
/// `ids` (the same kinds of column; None: the row numbers, in decimal), pushing rows in column order.
/// Returns the result table's columns ([`TableColumns`]) and the failures `(row, message)`.
#[pyfunction]
#[pyo3(signature = (column, ids, scheme, *, k=None, threshold=None, verify=None, measure=None, verify_ngram=None, clustering="centres", representative="smallest-id", media=None, num_perm=None, seed=None, shingle=None, char_shingle=None, progress=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn dedup_column<'py>(
    py: Python<'py>,
    column: ColumnInput<'_>,
    ids: Option<ColumnInput<'_>>,
    scheme: &str,
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
    progress: Option<Py<PyAny>>,
) -> PyResult<(TableColumns<'py>, Failures)> {
    let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
    let hint = media_hint(media)?;
    let n = column.len(py);
    let id_column = IdColumn::read(py, ids.as_ref(), n, 0)?;
    let id_texts = id_column.texts(n)?;
    let order = py.detach(|| id_ranks(&id_texts))?;
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
    let signed = sketch_input(
        py,
        &column,
        method,
        hint,
        Profiles::of(&dedup),
        progress.as_ref(),
    )?;
    let (rows, failures) = py
        .detach(|| -> Result<_, neardup::Error> {
            let mut failures = Vec::new();
            let mut unsketched = Unsketched::default();
            for (r, result) in signed.into_iter().enumerate() {
                match result {
                    // Inside the engine a row's id is its id rank, zero-padded so that byte order is rank
                    // order.
                    Ok(s) => dedup.push(Document {
                        profile: s.profile,
                        length: s.length,
                        ..Document::new(format!("{:020}", order[r]), s.sketch)
                    })?,
                    Err(failure) => {
                        unsketched.push(r);
                        failures.push((r, failure.message, failure.kind));
                    }
                }
            }
            let mut rows = Rows::new(n);
            dedup.clusters(&mut RowSink {
                rows: &mut rows,
                row_of: |m: &Member<'_>| unsketched.row_of_ordinal(m.ordinal.expect("a document")),
            })?;
            Ok((rows, failures))
        })
        .map_err(|e| interrupts.error(py, e, n))?;
    Ok((rows.table_columns(py, |r| id_texts[r].as_bytes()), failures))
}

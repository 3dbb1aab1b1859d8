//! `neardup.Dedup`: the engine's `Dedup` fed a column at a time, for documents that arrive in batches (a
//! `pyarrow.RecordBatchReader`, a database cursor, a streamed Hugging Face dataset) and may not fit in memory
//! together. Each column is sketched on all cores with the GIL released, as `neardup.dedup` sketches one;
//! only each document's id and sketch (and exact profile, when the run verifies exactly) are kept. Rows are
//! numbered across the columns in the order added, so the clusters are those `neardup.dedup` gives for the
//! columns joined into one.

use crate::api::{Whole, media_hint, method_of};
use crate::batch::{ColumnInput, Failures, IdColumn, Profiles, failures_of, sketch_input};
use crate::columns::{StringColumn, le_bytes, string_column};
use crate::dedup::{Interrupts, RowIds, RowSink, Rows, RunArgs, TableColumns, new_dedup};
use crate::errors::IntoPy;
use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use neardup::Method;
use neardup::dedup::{Cluster, Dedup, Document, Member, Score, Sink};
use neardup::media::MediaHint;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::hash::BuildHasher;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeDedup>()?;
    Ok(())
}

/// The state of a `neardup.Dedup`: the engine's run, and each row's id.
#[pyclass(name = "NativeDedup", module = "neardup._native")]
pub struct NativeDedup {
    method: Method,
    hint: MediaHint<'static>,
    dedup: Dedup,
    interrupts: Interrupts,
    /// Each row's id, in the order added (documents that could not be sketched too: they are rows), kept
    /// once: a sketched row's is its engine document's.
    ids: RowIds,
    /// The rows, found by their ids (which must be unique across every column added).
    rows_by_id: HashTable<usize>,
    hasher: DefaultHashBuilder,
}

impl NativeDedup {
    fn id(&self, row: usize) -> &str {
        self.ids.id(&self.dedup, row)
    }

    fn row_of(&self, id: &str) -> Option<usize> {
        self.rows_by_id
            .find(self.hasher.hash_one(id), |&r| self.id(r) == id)
            .copied()
    }

    /// Refuses an id of `ids` that repeats another, in these ids or among the rows already added, naming both
    /// rows (numbered across the columns).
    fn check_unique(&self, ids: &[&str]) -> PyResult<()> {
        let base = self.ids.len();
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
        for (r, &id) in ids.iter().enumerate() {
            let earlier = self.row_of(id).or_else(|| seen.insert(id, base + r));
            if let Some(first) = earlier {
                return Err(PyValueError::new_err(format!(
                    "rows {first} and {} have the same id {id:?}: ids must be unique",
                    base + r
                )));
            }
        }
        Ok(())
    }
}

#[pymethods]
impl NativeDedup {
    #[new]
    #[pyo3(signature = (scheme, *, k=None, threshold=None, verify=None, measure=None, verify_ngram=None, clustering="centres", representative="smallest-id", media=None, num_perm=None, seed=None, shingle=None, char_shingle=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
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
    ) -> PyResult<Self> {
        let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
        let hint = media_hint(media)?;
        let (dedup, interrupts) = new_dedup(
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
        Ok(NativeDedup {
            method,
            hint,
            dedup,
            interrupts,
            ids: RowIds::default(),
            rows_by_id: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        })
    }

    /// Sketches a column whose rows have the ids of `ids` (None: their row numbers, counted across the
    /// columns added, in decimal) and adds its rows. Returns the rows that could not be sketched, `(row,
    /// message, kind)`, numbered across the columns; unless `keep_going`, a column with such a row adds
    /// nothing (the caller raises). Repeated ids are refused before anything is sketched.
    #[pyo3(signature = (column, ids, *, keep_going, progress=None))]
    fn add_column(
        &mut self,
        py: Python<'_>,
        column: ColumnInput<'_>,
        ids: Option<ColumnInput<'_>>,
        keep_going: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Failures> {
        let n = column.len(py);
        let base = self.ids.len();
        // Rows without ids are numbered across the columns added.
        let id_column = IdColumn::read(py, ids.as_ref(), n, base)?;
        let id_texts = id_column.texts(n)?;
        self.check_unique(&id_texts)?;
        let signed = sketch_input(
            py,
            &column,
            self.method,
            self.hint,
            Profiles::of(&self.dedup),
            progress.as_ref(),
        )?;
        // Rows are numbered across the columns added.
        let mut failures = failures_of(&signed);
        failures.iter_mut().for_each(|f| f.0 += base);
        if !keep_going && !failures.is_empty() {
            return Ok(failures);
        }
        for (id, result) in id_texts.iter().zip(signed) {
            let row = self.ids.len();
            match result {
                Ok(s) => {
                    self.dedup
                        .push(Document {
                            profile: s.profile,
                            length: s.length,
                            ..Document::new((*id).to_owned(), s.sketch)
                        })
                        .py_err()?;
                    self.ids.push_sketched();
                }
                Err(_) => self.ids.push_unsketched(id),
            }
            let (ids, dedup, hasher) = (&self.ids, &self.dedup, &self.hasher);
            self.rows_by_id
                .insert_unique(hasher.hash_one(*id), row, |&r| {
                    hasher.hash_one(ids.id(dedup, r))
                });
        }
        Ok(failures)
    }

    /// The clusters of every row added so far, as the result table's columns (see `dedup::TableColumns`).
    fn clusters<'py>(&mut self, py: Python<'py>) -> PyResult<TableColumns<'py>> {
        let n = self.ids.len();
        let this = &*self;
        let rows = py
            .detach(|| -> Result<Rows, neardup::Error> {
                let mut rows = Rows::new(n);
                this.dedup.clusters(&mut RowSink {
                    rows: &mut rows,
                    row_of: |m: &Member<'_>| this.ids.row_of(m),
                })?;
                Ok(rows)
            })
            .map_err(|e| self.interrupts.error(py, e, n))?;
        Ok(rows.table_columns(py, |r| self.id(r).as_bytes()))
    }

    /// Every verified pair of the rows added so far, once, as `neardup dedup --pairs` lists them: the two
    /// ids (`a < b` in byte order) as string columns, and the scores (`float64` bytes).
    #[allow(clippy::type_complexity)]
    fn pairs<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(StringColumn<'py>, StringColumn<'py>, Bound<'py, PyBytes>)> {
        let n = self.ids.len();
        let this = &*self;
        let pairs = py
            .detach(|| -> Result<PairRows<'_>, neardup::Error> {
                let mut pairs = PairRows {
                    this,
                    rows: Vec::new(),
                    scores: Vec::new(),
                };
                this.dedup.pairs(&mut pairs)?;
                Ok(pairs)
            })
            .map_err(|e| self.interrupts.error(py, e, n))?;
        let id = |r: usize| Some(self.id(r).as_bytes());
        let count = pairs.rows.len();
        Ok((
            string_column(py, count, |i| id(pairs.rows[i][0])),
            string_column(py, count, |i| id(pairs.rows[i][1])),
            le_bytes(py, &pairs.scores, f64::to_le_bytes),
        ))
    }

    /// The number of rows added.
    fn __len__(&self) -> usize {
        self.ids.len()
    }

    /// The scheme's name, with its parameters.
    #[getter]
    fn scheme(&self) -> String {
        self.method.name()
    }
}

/// Collects a run's pairs as the rows of their two ids, and their scores.
struct PairRows<'a> {
    this: &'a NativeDedup,
    rows: Vec<[usize; 2]>,
    scores: Vec<f64>,
}

impl Sink for PairRows<'_> {
    fn pair(&mut self, a: &str, b: &str, score: Score) -> std::io::Result<()> {
        let row = |id| {
            self.this
                .row_of(id)
                .expect("every document pushed is a row")
        };
        self.rows.push([row(a), row(b)]);
        self.scores.push(score.value());
        Ok(())
    }

    fn cluster(&mut self, _: &Cluster<'_>) -> std::io::Result<()> {
        Ok(())
    }
}

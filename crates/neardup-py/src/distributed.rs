//! `neardup._native.Stages`: the engine's distributed stages (`neardup::dedup::distributed`) over Arrow
//! columns, for `neardup.spark` (and any other runner). Each method takes a batch of rows and gives one result
//! per row, in row order, one row at a time unless asked (`parallel`): a Spark task is one of many on its machine.

use crate::api::Whole;
use crate::api::{media_hint, method_of};
use crate::batch::{Column, ColumnInput, OwnedRows, analyze_input};
use crate::dedup::{RowSink, Rows, RunArgs, run_options};
use crate::errors::IntoPy;
use neardup::dedup::distributed::{Bucket, NodeKey, Stages, bucket_part, copy_bucket};
use neardup::dedup::{Document, Member, Options, Representative, Score};
use neardup::media::MediaHint;
use neardup::{Method, Profile, Sketch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStages>()?;
    Ok(())
}

/// The stages of one run, built from the run's settings on the driver and again on every executor.
#[pyclass(name = "Stages", module = "neardup._native", frozen)]
pub struct PyStages {
    stages: Stages,
    hint: MediaHint<'static>,
}

/// A value of `N` bytes from a binary column, as the stages make bucket and node keys.
fn fixed_width<const N: usize>(value: Option<&[u8]>, row: usize, what: &str) -> PyResult<[u8; N]> {
    value.and_then(|v| v.try_into().ok()).ok_or_else(|| {
        PyValueError::new_err(format!(
            "row {row}: the {what} is not {N} bytes, as the stages make it"
        ))
    })
}

/// Little-endian bytes of fixed-width values, as Python reads them with NumPy.
fn le_bytes<'py, const N: usize>(py: Python<'py>, values: &[[u8; N]]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, values.as_flattened())
}

/// A packed bucket record: the bucket's 10 bytes, then the node's 16, then for SimHash the fingerprint's
/// 8 (little-endian), by which the pairing keeps only the pairs within k bits ([`PyStages::record_width`]).
const RECORD: usize = 26;

impl PyStages {
    /// The bytes of one packed bucket record in this run: [`RECORD`], and the pairing bits' 8 where the run
    /// pairs within k bits (its records carry [`Stages::pairing_bits`]).
    fn record_width(&self) -> usize {
        RECORD + self.stages.pairs_within().map_or(0, |_| 8)
    }

    fn sketch_at(&self, column: &Column<'_>, row: usize) -> PyResult<Sketch> {
        let bytes = column
            .get(row)
            .ok_or_else(|| PyValueError::new_err(format!("row {row}: no sketch (null)")))?;
        self.stages
            .sketch_from_bytes(bytes)
            .map_err(|e| PyValueError::new_err(format!("row {row}: {e}")))
    }

    fn profile_at(&self, column: &Column<'_>, row: usize) -> PyResult<Option<Profile>> {
        column
            .get(row)
            .map(Profile::from_bytes)
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("row {row}: {e}")))
    }
}

/// The rows of `inputs` that must be copied (those of a list; Arrow buffers are read in place), for
/// [`table_columns`].
fn copied_rows<const N: usize>(
    py: Python<'_>,
    inputs: [&ColumnInput<'_>; N],
) -> PyResult<[Option<OwnedRows>; N]> {
    let mut rows = [const { None }; N];
    for (rows, input) in rows.iter_mut().zip(inputs) {
        *rows = input.rows(py)?;
    }
    Ok(rows)
}

/// The columns of one table, `inputs` read over their [`copied_rows`]: refused unless of one length.
fn table_columns<'b, const N: usize>(
    inputs: [&ColumnInput<'b>; N],
    copied: &'b [Option<OwnedRows>; N],
) -> PyResult<[Column<'b>; N]> {
    let columns = inputs
        .iter()
        .zip(copied)
        .map(|(input, rows)| input.column(rows))
        .collect::<PyResult<Vec<_>>>()?;
    if columns.iter().any(|c| c.len() != columns[0].len()) {
        return Err(PyValueError::new_err("the columns differ in length"));
    }
    Ok(columns
        .try_into()
        .unwrap_or_else(|_| unreachable!("one column per input")))
}

/// The row ranges of equal values in a column sorted by them (a bucket's, or a component's, rows).
fn same_key_rows<'c>(keys: &'c Column<'_>) -> impl Iterator<Item = std::ops::Range<usize>> + 'c {
    let n = keys.len();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= n {
            return None;
        }
        let key = keys.get(start);
        let end = (start + 1..n)
            .find(|&row| keys.get(row) != key)
            .unwrap_or(n);
        let rows = start..end;
        start = end;
        Some(rows)
    })
}

/// Row `row` of a column of text (ids, labels), or why not.
fn text_at<'a>(column: &Column<'a>, row: usize, what: &str) -> PyResult<&'a str> {
    let bytes = column
        .get(row)
        .ok_or_else(|| PyValueError::new_err(format!("row {row}: no {what} (null)")))?;
    std::str::from_utf8(bytes)
        .map_err(|e| PyValueError::new_err(format!("row {row}: the {what} is not UTF-8: {e}")))
}

#[pymethods]
impl PyStages {
    /// The stages for a scheme and the run's settings (the same names as `neardup.spark.dedup`'s).
    /// `distinct` (how many distinct sketches, or an estimate) chooses SimHash's tables: the work, never
    /// the result.
    #[new]
    #[pyo3(signature = (scheme, *, k=None, threshold=None, verify=None, measure=None, verify_ngram=None, clustering="centres", representative="smallest-id", media=None, num_perm=None, seed=None, shingle=None, char_shingle=None, large_cluster=1000, distinct=1))]
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
        large_cluster: usize,
        distinct: u64,
    ) -> PyResult<Self> {
        let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
        let options = Options {
            large_cluster,
            ..run_options(
                method,
                &RunArgs {
                    k,
                    threshold,
                    verify,
                    measure,
                    verify_ngram,
                    // "first" parses, and the stages refuse it with the reason (input order across machines).
                    clustering,
                    representative,
                },
            )?
        };
        Ok(PyStages {
            stages: Stages::new(method, options, distinct).py_err()?,
            hint: media_hint(media)?,
        })
    }

    /// The method's full name (`minhash-oph-v1(k=128,seed=0,f=w5)`, `simhash-doc-v1`).
    #[getter]
    fn method(&self) -> String {
        self.stages.method().name()
    }

    /// MinHash: `(bands, rows, threshold)` of the LSH bands in use; `None` for SimHash.
    #[getter]
    fn bands(&self) -> Option<(u32, u32, f64)> {
        self.stages.bands().map(|(b, t)| (b.bands, b.rows, t))
    }

    /// Whether every candidate pair of stage 4 is a pair (SimHash without a check): nothing to judge.
    #[getter]
    fn candidates_are_pairs(&self) -> bool {
        self.stages.candidates_are_pairs()
    }

    /// How many bucket keys each node has.
    #[getter]
    fn buckets_per_node(&self) -> usize {
        self.stages.buckets_per_node()
    }

    /// Whether documents carry exact profiles (part of a node's identity, judged with candidates).
    #[getter]
    fn keeps_profiles(&self) -> bool {
        self.stages.keeps_profiles()
    }

    /// Whether the representative is the longest document (else the smallest id).
    #[getter]
    fn keeps_longest(&self) -> bool {
        self.stages.options().representative == Representative::Longest
    }

    /// The width of a sketch in bytes.
    #[getter]
    fn sketch_width(&self) -> usize {
        match self.stages.method() {
            Method::MinHash(scheme) => scheme.values() as usize * 4,
            _ => 8,
        }
    }

    /// Stages 1 and 2 over a column of documents: `(sketches, profile_offsets, profile_data, lengths,
    /// nodes, failures)`, the sketches `sketch_width` bytes each (zeros for a failed row), the profiles as
    /// Arrow `binary` offsets (`int32`) and data (empty profiles where none is kept), the lengths as `int64`,
    /// each row's node key (16 bytes: equal for identical sketches and profiles; zeros for a failed row), and
    /// the failed rows with their messages.
    #[pyo3(signature = (column, parallel=false))]
    #[allow(clippy::type_complexity)]
    fn sign<'py>(
        &self,
        py: Python<'py>,
        column: ColumnInput<'_>,
        parallel: bool,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Bound<'py, PyBytes>,
        Vec<(usize, String)>,
    )> {
        let width = self.sketch_width();
        let results = analyze_input(py, &column, self.hint, parallel, None, |text| {
            self.stages.sign(text)
        })?;
        let n = results.len();
        let (sketches, offsets, data, lengths, nodes, failures) = py.detach(|| {
            let mut sketches = Vec::with_capacity(n * width);
            let mut nodes: Vec<NodeKey> = Vec::with_capacity(n);
            let mut offsets: Vec<[u8; 4]> = Vec::with_capacity(n + 1);
            let mut data = Vec::new();
            let mut lengths: Vec<[u8; 8]> = Vec::with_capacity(n);
            let mut failures = Vec::new();
            offsets.push(0i32.to_le_bytes());
            for (row, result) in results.into_iter().enumerate() {
                match result {
                    Ok(s) => {
                        let sketch = Stages::sketch_bytes(&s.sketch);
                        let profile = s.profile.as_ref().map(Profile::to_bytes);
                        nodes.push(Stages::node_key_of(&sketch, profile.as_deref()));
                        sketches.extend_from_slice(&sketch);
                        if let Some(p) = &profile {
                            data.extend_from_slice(p);
                        }
                        lengths.push((s.length as i64).to_le_bytes());
                    }
                    Err(failure) => {
                        sketches.resize(sketches.len() + width, 0);
                        nodes.push([0; 16]);
                        lengths.push(0i64.to_le_bytes());
                        failures.push((row, failure.message));
                    }
                }
                let end = i32::try_from(data.len()).map_err(|_| {
                    PyValueError::new_err(
                        "a batch's profiles pass 2 GiB: use smaller batches (spark.sql.execution.arrow.maxRecordsPerBatch)",
                    )
                })?;
                offsets.push(end.to_le_bytes());
            }
            Ok::<_, PyErr>((sketches, offsets, data, lengths, nodes, failures))
        })?;
        Ok((
            PyBytes::new(py, &sketches),
            le_bytes(py, &offsets),
            PyBytes::new(py, &data),
            le_bytes(py, &lengths),
            le_bytes(py, &nodes),
            failures,
        ))
    }

    /// Stage 3 over a column of sketches and their nodes' keys, packed for a shuffle of few rows:
    /// `(parts, record_offsets, records)`. Each document has `buckets_per_node` buckets, then its node's copy
    /// bucket (stage 2 in the same shuffle: `neardup::dedup::distributed::copy_bucket`); each bucket row is a
    /// record (the bucket's 10 bytes, the node's 16, SimHash's fingerprint's 8), grouped by the bucket's
    /// part (one of `parts`, a function of the bucket alone): one output row per part present, its number
    /// (`int32`) and its records (an Arrow `binary` value: offsets `int32`, then the data). Shuffled by part,
    /// every record of a bucket meets in one task, and Spark moves a few hundred rows per task instead of
    /// 17 per document (its cost per row was most of the job).
    fn buckets<'py>(
        &self,
        py: Python<'py>,
        sketches: ColumnInput<'_>,
        nodes: ColumnInput<'_>,
        parts: u32,
    ) -> PyResult<[Bound<'py, PyBytes>; 3]> {
        let inputs = [&sketches, &nodes];
        let copied = copied_rows(py, inputs)?;
        let [sketches, nodes] = table_columns(inputs, &copied)?;
        let parts = parts.max(1);
        let (numbers, offsets, data) = py.detach(|| {
            let mut by_part: Vec<Vec<u8>> = vec![Vec::new(); parts as usize];
            for row in 0..sketches.len() {
                let sketch = self.sketch_at(&sketches, row)?;
                let node: NodeKey = fixed_width(nodes.get(row), row, "node")?;
                let bits = self.stages.pairing_bits(&sketch).map(u64::to_le_bytes);
                let mut put = |bucket: &Bucket| {
                    let part = &mut by_part[bucket_part(bucket, parts) as usize];
                    part.extend_from_slice(bucket);
                    part.extend_from_slice(&node);
                    if let Some(bits) = &bits {
                        part.extend_from_slice(bits);
                    }
                };
                for bucket in self.stages.buckets(&sketch).py_err()? {
                    put(&bucket);
                }
                put(&copy_bucket(&node));
            }
            let (mut numbers, mut offsets, mut data) = (Vec::new(), vec![0i32.to_le_bytes()], Vec::new());
            for (number, records) in by_part.iter().enumerate() {
                if records.is_empty() {
                    continue;
                }
                data.extend_from_slice(records);
                let end = i32::try_from(data.len()).map_err(|_| {
                    PyValueError::new_err(
                        "a batch's bucket records pass 2 GiB: use smaller batches (spark.sql.execution.arrow.maxRecordsPerBatch)",
                    )
                })?;
                numbers.push((number as i32).to_le_bytes());
                offsets.push(end.to_le_bytes());
            }
            Ok::<_, PyErr>((numbers, offsets, data))
        })?;
        Ok([
            le_bytes(py, &numbers),
            le_bytes(py, &offsets),
            PyBytes::new(py, &data),
        ])
    }

    /// Stage 4's grouping over a column of packed bucket records ([`Self::buckets`]) that holds every record
    /// of its buckets: the distinct pairs of nodes sharing a bucket of few nodes or few candidates (SimHash:
    /// within k bits),
    /// `a < b`, and `(n, n)` for each node with two or more records in its copy bucket, as `(a, b)`, 16 bytes
    /// per node, concatenated, sorted; then the buckets of more nodes, kept whole for [`Self::join_runs`], as
    /// `(bucket, node)` rows (10 and 16 bytes), sorted.
    fn pairs<'py>(
        &self,
        py: Python<'py>,
        records: ColumnInput<'_>,
    ) -> PyResult<[Bound<'py, PyBytes>; 4]> {
        let owned = records.rows(py)?;
        let records = records.column(&owned)?;
        let width = self.record_width();
        let (a, b, run, node) = py.detach(|| {
            let mut rows: Vec<(Bucket, NodeKey, u64)> = Vec::new();
            for row in 0..records.len() {
                let packed = records.get(row).unwrap_or_default();
                if packed.len() % width != 0 {
                    return Err(PyValueError::new_err(format!(
                        "row {row}: {} bytes of bucket records are not whole {width}-byte records",
                        packed.len()
                    )));
                }
                rows.extend(packed.chunks_exact(width).map(|record| {
                    let bits = record
                        .get(RECORD..)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u64::from_le_bytes);
                    (
                        record[..10].try_into().expect("10 bytes"),
                        record[10..RECORD].try_into().expect("16 bytes"),
                        bits,
                    )
                }));
            }
            let found = self.stages.candidates(rows);
            let a: Vec<NodeKey> = found.pairs.iter().map(|p| p.0).collect();
            let b: Vec<NodeKey> = found.pairs.iter().map(|p| p.1).collect();
            let run: Vec<Bucket> = found.runs.iter().map(|r| r.0).collect();
            let node: Vec<NodeKey> = found.runs.iter().map(|r| r.1).collect();
            Ok::<_, PyErr>((a, b, run, node))
        })?;
        Ok([
            le_bytes(py, &a),
            le_bytes(py, &b),
            le_bytes(py, &run),
            le_bytes(py, &node),
        ])
    }

    /// Stage 4 over the buckets kept whole ([`Self::pairs`]), their rows together (sorted by bucket): `runs`
    /// names each row's bucket, `nodes` its node, and each row carries the node's sketch and profile. Returns
    /// the judged pairs that connect what each bucket's pairs connect (the engine's `Stages::join_run`), as
    /// `(a, b, score)`: 16 bytes per node, and a `float64`.
    fn join_runs<'py>(
        &self,
        py: Python<'py>,
        runs: ColumnInput<'_>,
        nodes: ColumnInput<'_>,
        sketches: ColumnInput<'_>,
        profiles: ColumnInput<'_>,
    ) -> PyResult<[Bound<'py, PyBytes>; 3]> {
        let inputs = [&runs, &nodes, &sketches, &profiles];
        let copied = copied_rows(py, inputs)?;
        let [runs, nodes, sketches, profiles] = table_columns(inputs, &copied)?;
        let (a, b, score) = py.detach(|| {
            let (mut a, mut b, mut score) = (Vec::new(), Vec::new(), Vec::new());
            for rows in same_key_rows(&runs) {
                let mut members = Vec::with_capacity(rows.len());
                for row in rows {
                    members.push((
                        fixed_width::<16>(nodes.get(row), row, "node")?,
                        self.sketch_at(&sketches, row)?,
                        self.profile_at(&profiles, row)?,
                    ));
                }
                for (x, y, s) in self.stages.join_run(&members).py_err()? {
                    a.push(x);
                    b.push(y);
                    score.push(s.value().to_le_bytes());
                }
            }
            Ok::<_, PyErr>((a, b, score))
        })?;
        Ok([le_bytes(py, &a), le_bytes(py, &b), le_bytes(py, &score)])
    }

    /// Stage 4 over candidate pairs (row i: a's sketch and profile, b's sketch and profile): each pair's score
    /// as a `float64`, NaN where it is not a pair.
    fn judge<'py>(
        &self,
        py: Python<'py>,
        a_sketches: ColumnInput<'_>,
        a_profiles: ColumnInput<'_>,
        b_sketches: ColumnInput<'_>,
        b_profiles: ColumnInput<'_>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let inputs = [&a_sketches, &a_profiles, &b_sketches, &b_profiles];
        let copied = copied_rows(py, inputs)?;
        let [sa, pa, sb, pb] = table_columns(inputs, &copied)?;
        let n = sa.len();
        let out = py.detach(|| {
            let mut out: Vec<[u8; 8]> = Vec::with_capacity(n);
            for row in 0..n {
                let (a, b) = (self.sketch_at(&sa, row)?, self.sketch_at(&sb, row)?);
                let (ap, bp) = (self.profile_at(&pa, row)?, self.profile_at(&pb, row)?);
                let score = self
                    .stages
                    .judge(&a, ap.as_ref(), &b, bp.as_ref())
                    .map_err(|e| PyValueError::new_err(format!("row {row}: {e}")))?;
                out.push(score.map_or(f64::NAN, Score::value).to_le_bytes());
            }
            Ok::<_, PyErr>(out)
        })?;
        Ok(le_bytes(py, &out))
    }

    /// Stage 6 over whole components, their rows together (sorted by label): `labels` names each row's
    /// component, `ids` its document, and each row carries its own sketch and profile (identical copies
    /// included: the engine groups them as one machine does). Returns each row's representative and
    /// `duplicate_of` as row numbers (`int64`, -1: none; a row in no cluster of two or more has no
    /// representative) and its score (`float64`, NaN: none).
    fn clusters<'py>(
        &self,
        py: Python<'py>,
        labels: ColumnInput<'_>,
        ids: ColumnInput<'_>,
        sketches: ColumnInput<'_>,
        profiles: ColumnInput<'_>,
        lengths: &[u8],
    ) -> PyResult<[Bound<'py, PyBytes>; 3]> {
        let inputs = [&labels, &ids, &sketches, &profiles];
        let copied = copied_rows(py, inputs)?;
        let [labels, ids, sketches, profiles] = table_columns(inputs, &copied)?;
        let n = labels.len();
        if lengths.len() / 8 != n {
            return Err(PyValueError::new_err("the columns differ in length"));
        }
        let rows = py.detach(|| {
            // Cluster numbers stay local to each component (0 for none): the runner numbers clusters.
            let mut rows = Rows::new(n);
            for component in same_key_rows(&labels) {
                let start = component.start;
                let mut pushed = Vec::with_capacity(component.len());
                let mut by_id: Vec<(&str, usize)> = Vec::with_capacity(component.len());
                for row in component {
                    let sketch = self.sketch_at(&sketches, row)?;
                    let profile = self.profile_at(&profiles, row)?;
                    let length = i64::from_le_bytes(
                        lengths[row * 8..row * 8 + 8].try_into().expect("8 bytes"),
                    );
                    let id = text_at(&ids, row, "id")?;
                    by_id.push((id, row));
                    pushed.push(Document {
                        profile,
                        length: length.max(0) as u64,
                        ..Document::new(id, sketch)
                    });
                }
                by_id.sort_unstable();
                self.stages
                    .clusters(
                        pushed,
                        &mut RowSink {
                            rows: &mut rows,
                            // The engine names only the documents it was given, all of them in `by_id`.
                            row_of: |m: &Member<'_>| {
                                by_id
                                    .binary_search_by(|(x, _)| (*x).cmp(m.id))
                                    .map_or(start, |i| by_id[i].1)
                            },
                        },
                    )
                    .py_err()?;
            }
            Ok::<_, PyErr>(rows)
        })?;
        Ok(rows.row_numbers(py))
    }

    fn __repr__(&self) -> String {
        format!("Stages({})", self.stages.method().name())
    }
}

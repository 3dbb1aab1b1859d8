//! `neardup.calibrate`: which k or threshold fits the user's documents, measured as `neardup calibrate`
//! measures it. The engine ([`neardup::calibrate`]) samples, scores every pair and writes the JSON object;
//! this module reads the column as `neardup.dedup` reads one, checks the settings as the command's flags
//! are checked, and stops the scoring on Ctrl-C.

use crate::api::{Whole, media_hint, method_of, similarity};
use crate::batch::{ColumnInput, Failures, IdColumn, Profiles, sketch_input};
use crate::dedup::{Interrupts, id_ranks};
use crate::errors::IntoPy;
use neardup::calibrate::{Settings, Truth, calibrate, sample};
use neardup::{Method, Sketch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(calibrate_column, m)?)?;
    Ok(())
}

/// Calibrates on a column (Arrow chunks or a list, see `batch::ColumnInput`) whose rows have the ids of
/// `ids` (None: the row numbers, in decimal). The truth comes as a file's text and its name, or as pairs.
/// Returns `calibration.json`'s object as JSON text, and the rows that could not be sketched `(row,
/// message, kind)`, which are left out.
#[pyfunction]
#[pyo3(signature = (column, ids, scheme, *, truth_text=None, truth_pairs=None, truth_threshold=0.8, target_precision=None, target_recall=None, threshold=0.8, sample_size=None, random_pairs=None, sample_seed=None, media=None, num_perm=None, seed=None, shingle=None, char_shingle=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn calibrate_column(
    py: Python<'_>,
    column: ColumnInput<'_>,
    ids: Option<ColumnInput<'_>>,
    scheme: &str,
    truth_text: Option<(String, String)>,
    truth_pairs: Option<Vec<(String, String, f64)>>,
    truth_threshold: f64,
    target_precision: Option<f64>,
    target_recall: Option<f64>,
    threshold: f64,
    sample_size: Option<Whole>,
    random_pairs: Option<Whole>,
    sample_seed: Option<Whole>,
    media: Option<&str>,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, Failures)> {
    // Everything the command refuses, refused before any work.
    let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
    if let Method::BottomK(_) = method {
        return Err(PyValueError::new_err(format!(
            "{method} samples are compared pair by pair: calibrate a SimHash or MinHash scheme"
        )));
    }
    let hint = media_hint(media)?;
    let sample_size = Whole::checked::<u32>("sample", sample_size)?.map_or(2000, |n| n as usize);
    if sample_size < 2 {
        return Err(PyValueError::new_err(
            "sample must keep at least two documents",
        ));
    }
    if target_precision.is_some() && target_recall.is_some() {
        return Err(PyValueError::new_err(
            "target_precision and target_recall each choose the recommendation: give one",
        ));
    }
    let settings = Settings {
        truth_threshold: similarity("truth_threshold", truth_threshold)?,
        target_precision: target_precision
            .map(|p| similarity("target_precision", p))
            .transpose()?,
        target_recall: target_recall
            .map(|r| similarity("target_recall", r))
            .transpose()?,
        random_pairs: Whole::checked::<u32>("random_pairs", random_pairs)?
            .map_or(10_000, |n| n as usize),
        seed: Whole::checked::<u64>("sample_seed", sample_seed)?.unwrap_or(0),
        threshold: similarity("threshold", threshold)?,
    };
    let truth = match (truth_text, truth_pairs) {
        (Some((text, source)), _) => Some((Truth::parse(&text, &source).py_err()?, source)),
        (None, Some(pairs)) => Some((
            Truth::from_pairs(pairs, "truth").py_err()?,
            "truth".to_owned(),
        )),
        (None, None) => None,
    };
    if let Some((truth, source)) = &truth
        && truth.is_empty()
    {
        return Err(PyValueError::new_err(format!("{source}: no pairs")));
    }

    let n = column.len(py);
    let id_column = IdColumn::read(py, ids.as_ref(), n, 0)?;
    let id_texts = id_column.texts(n)?;
    let ranks = py.detach(|| id_ranks(&id_texts))?;
    let signed = sketch_input(py, &column, method, hint, Profiles::NONE, progress.as_ref())?;
    // The documents in id order, as the command sorts the paths it read: the sample is then the same
    // whatever the order the rows came in.
    let mut failures = Failures::new();
    let mut docs: Vec<(u64, String, Sketch)> = Vec::with_capacity(n);
    for (r, result) in signed.into_iter().enumerate() {
        match result {
            Ok(s) => docs.push((ranks[r], id_texts[r].to_owned(), s.sketch)),
            Err(failure) => failures.push((r, failure.message, failure.kind)),
        }
    }
    docs.sort_unstable_by_key(|d| d.0);
    let read = docs.len();
    let (ids, sketches): (Vec<String>, Vec<Sketch>) = sample(docs, sample_size, settings.seed)
        .into_iter()
        .map(|(_, id, sketch)| (id, sketch))
        .unzip();

    // Every pair of a large sample takes a while: Python's signals are checked as the scoring goes.
    let interrupts = Interrupts::default();
    let report = py
        .detach(|| {
            calibrate(
                method,
                &ids,
                &sketches,
                truth.as_ref().map(|(t, _)| t),
                &settings,
                |_| interrupts.check(),
            )
        })
        .map_err(|e| {
            interrupts.error_saying(py, e, || {
                format!(
                    "interrupted while scoring the pairs of {} documents; nothing was returned",
                    ids.len()
                )
            })
        })?;
    Ok((report.to_json(read).to_string(), failures))
}

//! `neardup.explain`: why two documents match, or do not, as `neardup explain --json` says it. The engine's
//! [`neardup::explain`] does the work and writes the JSON object; this module reads the operands as the rest
//! of the package reads documents (a `str` is text, bytes a document in any medium, a `neardup.Sketch` a
//! stored sketch) and checks the settings as the command does.

use crate::api::{PySketch, Whole, document_bytes, media_hint, method_of, similarity};
use crate::errors::{IntoPy, to_py_about};
use neardup::dedup::Spelling;
use neardup::explain::{Options, explain_sketches, explain_texts};
use neardup::media::{Media, MediaHint};
use neardup::{Method, Sketch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    Ok(())
}

/// An operand: the text of a document, or a sketch without its text.
enum Operand {
    Text(String),
    Stored(Sketch),
}

impl Operand {
    fn read(py: Python<'_>, data: &Bound<'_, PyAny>, hint: MediaHint<'static>) -> PyResult<Self> {
        if let Ok(sketch) = data.cast::<PySketch>() {
            return Ok(Operand::Stored(sketch.get().sketch.clone()));
        }
        if let Ok(text) = data.cast::<PyString>()
            && matches!(hint, MediaHint::Auto | MediaHint::Force(Media::Text))
        {
            return Ok(Operand::Text(text.to_cow()?.into_owned()));
        }
        let bytes = document_bytes(data)?;
        let extracted = py
            .detach(|| neardup::text::extract(&bytes, hint))
            .map_err(neardup::Error::from)
            .py_err()?;
        Ok(Operand::Text(extracted.text))
    }

    fn sketch(&self, method: Method, name: &str) -> PyResult<Sketch> {
        match self {
            Operand::Stored(sketch) => Ok(sketch.clone()),
            Operand::Text(text) => method.sketch_text(text).map_err(|e| to_py_about(name, e)),
        }
    }
}

/// The explanation of `a` and `b` as a JSON object (`neardup explain --json`'s, each `input` null).
#[pyfunction]
#[pyo3(signature = (a, b, scheme=None, *, k=None, threshold=None, ngram=None, top=None, context=None, max_rows=None, media=None, num_perm=None, seed=None, shingle=None, char_shingle=None))]
#[allow(clippy::too_many_arguments)]
fn explain(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    scheme: Option<&str>,
    k: Option<Whole>,
    threshold: Option<f64>,
    ngram: Option<Whole>,
    top: Option<Whole>,
    context: Option<Whole>,
    max_rows: Option<Whole>,
    media: Option<&str>,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
) -> PyResult<String> {
    let hint = media_hint(media)?;
    let (a, b) = (Operand::read(py, a, hint)?, Operand::read(py, b, hint)?);
    // Without a scheme, a sketch given says which (as `neardup explain --index` takes the index's).
    let stored = [&a, &b].into_iter().find_map(|o| match o {
        Operand::Stored(sketch) => Some(sketch.method().py_err()),
        Operand::Text(_) => None,
    });
    let method = match (scheme, stored) {
        (None, Some(method))
            if num_perm.is_none()
                && seed.is_none()
                && shingle.is_none()
                && char_shingle.is_none() =>
        {
            method?
        }
        (scheme, _) => method_of(
            scheme.unwrap_or("simhash-doc-v1"),
            num_perm,
            seed,
            shingle,
            char_shingle,
        )?,
    };
    let threshold = threshold.map(|t| similarity("threshold", t)).transpose()?;
    let judged = Options::judged(method, Whole::checked::<u32>("k", k)?, threshold)
        .map_err(|e| PyValueError::new_err(e.message(&Spelling::ARGUMENTS)))?;
    // The command's defaults: word 3-grams, 10 features a list, 2 lines of context, 200 diff rows.
    let count = |name, value, default: u32| {
        Whole::checked::<u32>(name, value).map(|v| v.unwrap_or(default) as usize)
    };
    let options = Options {
        shingle: Whole::count("ngram", ngram, 64)?.unwrap_or(3),
        top: count("top", top, 10)?,
        context: count("context", context, 2)?,
        max_rows: count("max_rows", max_rows, 200)?,
        ..judged
    };
    // Name the document whose sketch cannot be made (no words), not just the reason.
    let (sketch_a, sketch_b) = (a.sketch(method, "a")?, b.sketch(method, "b")?);
    let why = py
        .detach(|| match (&a, &b) {
            (Operand::Text(x), Operand::Text(y)) => explain_texts(method, x, y, &options),
            _ => explain_sketches(&sketch_a, &sketch_b, &options),
        })
        .py_err()?;
    Ok(why.to_json(None, None).to_string())
}

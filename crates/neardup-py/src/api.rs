//! Fingerprints, sketches, comparison and the scheme registry, one document at a time, and batch sketching.

use crate::batch::{ColumnInput, Failures, Profiles, failures_of, sketch_input, sketch_into};
use crate::columns::string_column;
use crate::errors::{IntoPy, UnsupportedError};
use neardup::media::{Media, MediaHint};
use neardup::parallel;
use neardup::schemes::{MAX_NUM_PERM, MAX_SHINGLE, Params, method_named};
use neardup::{Method, Sketch};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySketch>()?;
    m.add_function(wrap_pyfunction!(sketch, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_column, m)?)?;
    Ok(())
}

/// The bytes of a document given as `bytes`, `bytearray`, `memoryview` or `str` (UTF-8).
pub fn document_bytes<'a>(data: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(match s.to_cow()? {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        });
    }
    if let Ok(v) = data.extract::<Vec<u8>>() {
        return Ok(Cow::Owned(v));
    }
    Err(PyTypeError::new_err(format!(
        "a document is bytes or str, not {}",
        data.get_type().name()?
    )))
}

/// The media hint for a `media=` argument: `None` detects from the content; a name forces it.
pub fn media_hint(media: Option<&str>) -> PyResult<MediaHint<'static>> {
    match media {
        None => Ok(MediaHint::Auto),
        Some(name) if name.eq_ignore_ascii_case("auto") => Ok(MediaHint::Auto),
        Some(name) => Media::from_name(name).map(MediaHint::Force).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown media '{name}' (known: auto, text, html, xml, pdf, epub, warc)"
            ))
        }),
    }
}

/// The method a scheme name and its parameters name.
pub fn method_of(
    scheme: &str,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
) -> PyResult<Method> {
    let params = Params {
        num_perm: Whole::count("num_perm", num_perm, MAX_NUM_PERM)?,
        seed: Whole::checked("seed", seed)?,
        shingle: Whole::count("shingle", shingle, MAX_SHINGLE)?,
        char_shingle: Whole::count("char_shingle", char_shingle, MAX_SHINGLE)?,
    };
    method_named(scheme, &params).py_err()
}

/// A similarity argument, in 0..=1 (as the command's `parse_similarity` takes its flags), named by its
/// argument when it is not one.
pub fn similarity(name: &str, value: f64) -> PyResult<f64> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(PyValueError::new_err(format!(
            "{name} {value} is not a similarity in 0..1"
        )))
    }
}

/// A whole-number argument as Python passes one (an `int`, NumPy's integers too), taken as it is and
/// checked against its type's range by [`checked`](Self::checked), which names the argument: pyo3's own
/// conversion says only "out of range integral type conversion attempted" for `k=-1`.
#[derive(Clone, Copy, Debug)]
pub struct Whole(i128);

impl<'a, 'py> FromPyObject<'a, 'py> for Whole {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        obj.extract::<i128>().map(Whole).map_err(|e| {
            if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
                PyValueError::new_err(format!(
                    "{} is not a whole number any setting takes",
                    obj.repr()
                        .map_or_else(|_| "?".to_owned(), |r| r.to_string())
                ))
            } else {
                e
            }
        })
    }
}

impl Whole {
    /// A count from 1 to `max` (the number of values, a shingle's length), named by its argument: the
    /// engine's own message names the spec's symbol (K), not the argument.
    pub fn count(name: &str, value: Option<Whole>, max: u32) -> PyResult<Option<u32>> {
        match value {
            Some(Whole(v)) if !(1..=i128::from(max)).contains(&v) => Err(PyValueError::new_err(
                format!("{name} must be a whole number from 1 to {max}, not {v}"),
            )),
            value => Whole::checked(name, value),
        }
    }

    /// The value as `T`, or a `ValueError` naming the argument. A negative value is told only that it must
    /// not be: the type's maximum would read as the setting's (k's is the scheme's, 7 for SimHash, which
    /// the engine names once the value converts).
    pub fn checked<T: Unsigned>(name: &str, value: Option<Whole>) -> PyResult<Option<T>> {
        value
            .map(|Whole(v)| {
                T::try_from(v).map_err(|_| {
                    PyValueError::new_err(if v < 0 {
                        format!("{name} must be a whole number, 0 or more, not {v}")
                    } else {
                        format!(
                            "{name} must be a whole number from 0 to {}, not {v}",
                            T::MAX
                        )
                    })
                })
            })
            .transpose()
    }
}

/// The unsigned types a [`Whole`] argument converts to, with the largest value for its message.
pub trait Unsigned: TryFrom<i128> {
    const MAX: u64;
}

impl Unsigned for u32 {
    const MAX: u64 = u32::MAX as u64;
}

impl Unsigned for u64 {
    const MAX: u64 = u64::MAX;
}

/// A document's sketch: a SimHash fingerprint (`simhash-doc-v1:…`) or a MinHash-family signature. Its string
/// form is self-describing and parses back (`Sketch.parse`).
#[pyclass(name = "Sketch", module = "neardup", frozen, eq, from_py_object)]
#[derive(Clone, PartialEq)]
pub struct PySketch {
    pub sketch: Sketch,
}

#[pymethods]
impl PySketch {
    /// Parses the string form (`simhash-doc-v1:4bq3pkeb6ge3q`, `minhash-oph-v1:k=128,seed=0,f=w5:…`).
    #[new]
    fn new(text: &str) -> PyResult<Self> {
        Self::parse(text)
    }

    /// Parses the string form.
    #[staticmethod]
    fn parse(text: &str) -> PyResult<Self> {
        // Surrounding white space (a line read from a file) is not part of the string.
        Ok(PySketch {
            sketch: text.trim().parse().py_err()?,
        })
    }

    /// The scheme's canonical name.
    #[getter]
    fn scheme(&self) -> PyResult<String> {
        Ok(self.sketch.method().py_err()?.name())
    }

    /// SimHash: the 64-bit value; `None` for a signature.
    #[getter]
    fn value(&self) -> Option<u64> {
        self.sketch.fingerprint().map(|f| f.bits())
    }

    /// MinHash: the signature's values; `None` for a fingerprint.
    #[getter]
    fn values(&self) -> Option<Vec<u32>> {
        self.sketch.signature().map(|s| s.values().to_vec())
    }

    /// SimHash: the Hamming distance to another fingerprint of the same scheme.
    fn distance(&self, other: &PySketch) -> PyResult<u32> {
        match (self.sketch.fingerprint(), other.sketch.fingerprint()) {
            (Some(a), Some(b)) => a.distance(&b).py_err(),
            _ => Err(UnsupportedError::new_err(
                "distance is the Hamming distance of two SimHash fingerprints: use similarity() for signatures",
            )),
        }
    }

    /// The similarity to another sketch of the same scheme: 1 − distance/64 for SimHash, the estimated
    /// Jaccard similarity for MinHash.
    fn similarity(&self, other: &PySketch) -> PyResult<f64> {
        self.sketch.similarity(&other.sketch).py_err()
    }

    fn __str__(&self) -> String {
        self.sketch.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Sketch('{}')", self.sketch)
    }

    fn __hash__(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.sketch.to_string().hash(&mut h);
        h.finish()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        Ok((slf.get_type().into_any(), (slf.get().sketch.to_string(),)))
    }
}

/// A sketch given as a `Sketch` or its string form.
pub fn as_sketch(value: &Bound<'_, PyAny>) -> PyResult<Sketch> {
    if let Ok(s) = value.cast::<PySketch>() {
        return Ok(s.get().sketch.clone());
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s.to_cow()?.trim().parse().py_err();
    }
    Err(PyTypeError::new_err(format!(
        "expected a neardup.Sketch or its string form, not {}",
        value.get_type().name()?
    )))
}

/// The sketch of one document (bytes in any supported medium, or text), with any scheme.
#[pyfunction]
#[pyo3(signature = (data, scheme="simhash-doc-v1", *, media=None, num_perm=None, seed=None, shingle=None, char_shingle=None))]
#[allow(clippy::too_many_arguments)]
fn sketch(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    scheme: &str,
    media: Option<&str>,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
) -> PyResult<PySketch> {
    let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
    Ok(PySketch {
        sketch: sketch_document(py, method, data, media)?,
    })
}

/// A document's sketch by `method`, made with the GIL released. A `str` is text, sketched as it is (as the
/// CLI reads the text field of records) unless `media` names another medium; bytes are a document in any
/// medium, detected unless `media` names it.
pub fn sketch_document(
    py: Python<'_>,
    method: Method,
    data: &Bound<'_, PyAny>,
    media: Option<&str>,
) -> PyResult<Sketch> {
    let hint = media_hint(media)?;
    if let Ok(text) = data.cast::<PyString>()
        && matches!(hint, MediaHint::Auto | MediaHint::Force(Media::Text))
    {
        let text = text.to_cow()?;
        let (sketch, _, _) = py.detach(|| method.analyze_text(&text, false)).py_err()?;
        return Ok(sketch);
    }
    let bytes = document_bytes(data)?;
    let analysis = py.detach(|| method.analyze(&bytes, hint)).py_err()?;
    Ok(analysis.sketch)
}

/// The SimHash fingerprint of one document; refuses MinHash schemes (use `sketch`).
#[pyfunction]
#[pyo3(signature = (data, scheme="simhash-doc-v1", *, media=None))]
fn fingerprint(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    scheme: &str,
    media: Option<&str>,
) -> PyResult<PySketch> {
    let method = method_of(scheme, None, None, None, None)?;
    if !matches!(method, Method::SimHash(_)) {
        return Err(UnsupportedError::new_err(format!(
            "{scheme} makes signatures, not fingerprints: use neardup.sketch(data, scheme='{scheme}')"
        )));
    }
    Ok(PySketch {
        sketch: sketch_document(py, method, data, media)?,
    })
}

/// Compares two sketches (or their strings): `{"similarity": s}`, with `"distance"` and `"verdict"` for
/// SimHash fingerprints.
#[pyfunction]
fn compare<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let (a, b) = (as_sketch(a)?, as_sketch(b)?);
    let out = PyDict::new(py);
    out.set_item("similarity", a.similarity(&b).py_err()?)?;
    if let (Some(fa), Some(fb)) = (a.fingerprint(), b.fingerprint()) {
        out.set_item("distance", fa.distance(&fb).py_err()?)?;
        out.set_item("verdict", fa.verdict(&fb).py_err()?.name())?;
    }
    Ok(out)
}

/// The scheme registry: one dict per scheme.
#[pyfunction]
fn schemes(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    neardup::schemes::REGISTRY
        .iter()
        .map(|s| {
            let d = PyDict::new(py);
            d.set_item("name", s.name)?;
            d.set_item("aliases", s.aliases.to_vec())?;
            d.set_item("family", format!("{:?}", s.family).to_lowercase())?;
            d.set_item("measure", format!("{:?}", s.measure).to_lowercase())?;
            d.set_item("indexable", s.indexable)?;
            d.set_item("max_k", s.max_k)?;
            d.set_item("default_seed", s.default_seed)?;
            d.set_item("about", s.about)?;
            Ok(d)
        })
        .collect()
}

/// Sketches a column of documents (a list or Arrow buffers, see `batch::ColumnInput`) on all cores with the
/// GIL released. Returns `(kind, width, values, failures)`, `failures` being `(row, message)` pairs in row
/// order:
/// * `kind` "simhash" (one `uint64` per row) or "minhash" (`width` `uint32` values per row), `values` the
///   little-endian bytes in a `bytearray` (a failed row's are zeros);
/// * with `strings`, any scheme: `kind` "strings", and `width` and `values` each sketch's self-describing
///   string (`simhash-doc-v1:…`, as `neardup hash` prints it; formatted on all cores) as an Arrow string
///   column (the offsets' width, and `(offsets, data, validity)`), null for a row that failed.
#[pyfunction]
#[pyo3(signature = (column, scheme, *, media=None, num_perm=None, seed=None, shingle=None, char_shingle=None, progress=None, strings=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn sketch_column<'py>(
    py: Python<'py>,
    column: ColumnInput<'_>,
    scheme: &str,
    media: Option<&str>,
    num_perm: Option<Whole>,
    seed: Option<Whole>,
    shingle: Option<Whole>,
    char_shingle: Option<Whole>,
    progress: Option<Py<PyAny>>,
    strings: bool,
) -> PyResult<(&'static str, usize, Bound<'py, PyAny>, Failures)> {
    let method = method_of(scheme, num_perm, seed, shingle, char_shingle)?;
    let hint = media_hint(media)?;
    let (kind, width) = match method {
        _ if strings => ("strings", 0),
        Method::SimHash(_) => ("simhash", 1),
        Method::MinHash(scheme) => ("minhash", scheme.values() as usize),
        Method::BottomK(_) => {
            return Err(UnsupportedError::new_err(
                "bottom-k samples vary in length: sketch them one at a time with neardup.sketch",
            ));
        }
    };
    if !strings {
        // Arrow buffers are read in place (a list's rows copied a piece at a time) and the sketches written
        // in place into the bytearray NumPy then views: no copy of the values on either side.
        let row_bytes = method
            .sketch_bytes()
            .expect("bottom-k samples were refused above");
        let mut failures = Vec::new();
        let values = PyByteArray::new_with(py, column.len(py) * row_bytes, |out| {
            failures = sketch_into(
                py,
                &column,
                &method,
                hint,
                out,
                row_bytes,
                progress.as_ref(),
            )?;
            Ok(())
        })?;
        return Ok((kind, width, values.into_any(), failures));
    }
    let rows = sketch_input(py, &column, method, hint, Profiles::NONE, progress.as_ref())?;
    let texts: Vec<Option<String>> = py.detach(|| {
        parallel::install(|| {
            rows.par_iter()
                .map(|row| row.as_ref().ok().map(|done| done.sketch.to_string()))
                .collect()
        })
    });
    let (width, offsets, data, validity) =
        string_column(py, texts.len(), |r| texts[r].as_deref().map(str::as_bytes));
    let values = (offsets, data, validity).into_pyobject(py)?.into_any();
    Ok((kind, width, values, failures_of(&rows)))
}

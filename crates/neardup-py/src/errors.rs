//! The exceptions: `neardup.Error` and one subclass per kind of failure, each carrying the engine's message.
//! A missing index is Python's own `FileNotFoundError`, and two documents with one id in a run a `ValueError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    neardup,
    Error,
    PyException,
    "Every error the neardup engine raises."
);
create_exception!(
    neardup,
    SchemeMismatch,
    Error,
    "Two fingerprints or sketches of different schemes or parameters cannot be compared."
);
create_exception!(
    neardup,
    MediaError,
    Error,
    "A document's text could not be extracted (unsupported, broken, binary, or over a limit)."
);
create_exception!(
    neardup,
    NoTokens,
    Error,
    "A document has no words after extraction and normalization, so it has no fingerprint."
);
create_exception!(
    neardup,
    ParseError,
    Error,
    "A string is not a fingerprint or sketch, or names an unknown scheme."
);
create_exception!(
    neardup,
    UnsupportedError,
    Error,
    "A scheme, parameter or radius this operation cannot use."
);
create_exception!(
    neardup,
    IndexError,
    Error,
    "An index could not be created, opened, read or written."
);

/// Registers the exception classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("SchemeMismatch", py.get_type::<SchemeMismatch>())?;
    m.add("MediaError", py.get_type::<MediaError>())?;
    m.add("NoTokens", py.get_type::<NoTokens>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("IndexError", py.get_type::<IndexError>())?;
    Ok(())
}

/// An engine error's message as Python users read it: the library's advice names the CLI's flag, which in
/// Python is the `media` argument.
pub fn python_message(e: &neardup::Error) -> String {
    e.to_string().replace("--media text", "media=\"text\"")
}

/// `error` from Python's signals during a long call: a `KeyboardInterrupt` (Ctrl-C) with `saying()` as its
/// message, so that it tells how far the call went; another exception as it is.
pub fn interrupted_saying(py: Python<'_>, error: PyErr, saying: impl FnOnce() -> String) -> PyErr {
    if error.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err(saying());
    }
    error
}

/// The Python exception for an engine error.
pub fn to_py(e: neardup::Error) -> PyErr {
    let message = python_message(&e);
    exception(e, message)
}

/// [`to_py`], its message naming what it is about (`"b: no tokens: …"`).
pub fn to_py_about(subject: &str, e: neardup::Error) -> PyErr {
    let message = format!("{subject}: {}", python_message(&e));
    exception(e, message)
}

/// The exception of `e`'s kind, saying `message`.
fn exception(e: neardup::Error, message: String) -> PyErr {
    use neardup::Error as E;
    match e {
        E::Extract(_) => MediaError::new_err(message),
        E::NoTokens { .. } => NoTokens::new_err(message),
        E::Parse(_) | E::ParseSketch(_) | E::UnknownScheme { .. } => ParseError::new_err(message),
        E::SchemeMismatch { .. } | E::MethodMismatch { .. } | E::SketchMismatch(_) => {
            SchemeMismatch::new_err(message)
        }
        E::NoIndex { .. } => PyFileNotFoundError::new_err(message),
        E::Index { .. } | E::Busy { .. } | E::Output { .. } => IndexError::new_err(message),
        E::DuplicateId { .. } => PyValueError::new_err(message),
        E::BadRadius { .. } | E::Unsupported { .. } => UnsupportedError::new_err(message),
        // What stopped the run raised its own exception, which the front door raises instead.
        E::Stopped => Error::new_err(message),
    }
}

/// `?` on engine results in functions returning `PyResult`.
pub trait IntoPy<T> {
    /// The result with a Python exception in place of an engine error.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, neardup::Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

//! PDFs read in a worker process of this interpreter, as the `neardup` command reads them in one of its own.
//!
//! The extractor runs on a thread of the caller by default, where a PDF built to overflow its stack (a
//! million nested arrays) aborts the whole interpreter and a notebook's or a pipeline's state with it. The
//! package therefore names a worker at import (`_isolate_pdfs`): this interpreter, started without site
//! packages, loading this very module by its path and running `_pdf_worker`, which reads PDFs from standard
//! input under the extractor's time limit and memory ceiling (each thread that reads PDFs keeps its worker
//! for the next one). A crash costs that worker and is the
//! document's error ([`neardup::text::PdfError::Crashed`]). An interpreter that cannot be started so (an
//! embedded one whose `sys.executable` is another program) fails the engine's first question to its worker,
//! and PDFs are read on threads, as before.

use pyo3::prelude::*;
use std::ffi::OsString;
use std::path::PathBuf;

/// What the worker interpreter runs (`sys.argv[1]` is this module's file): the module is loaded by its path,
/// not imported, so that neither the `neardup` package nor NumPy nor site packages are loaded for one PDF.
const WORKER_SCRIPT: &str = "import sys, importlib.util as u
spec = u.spec_from_file_location('neardup._native', sys.argv[1])
module = u.module_from_spec(spec)
spec.loader.exec_module(module)
sys.exit(module._pdf_worker())
";

/// From now on every PDF this process reads is read by `python` running `module` as a worker.
#[pyfunction]
fn _isolate_pdfs(python: PathBuf, module: OsString) {
    let args = ["-I", "-S", "-c", WORKER_SCRIPT].map(OsString::from);
    neardup::text::isolate_pdf_in_worker(neardup::text::PdfWorker {
        program: python,
        args: args.into_iter().chain([module]).collect(),
        env: Vec::new(),
    });
}

/// The worker's side: reads PDFs from standard input until it ends, answers each on standard output (its
/// pages or its error), and returns the exit status.
#[pyfunction]
fn _pdf_worker(py: Python<'_>) -> u8 {
    py.detach(neardup::text::run_pdf_worker)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_isolate_pdfs, m)?)?;
    m.add_function(wrap_pyfunction!(_pdf_worker, m)?)?;
    Ok(())
}

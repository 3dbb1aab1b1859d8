//! # neardup-py: the Python package's native module, `neardup._native`
//!
//! A translation of the engine (`neardup`) into Python, and nothing more: every fingerprint, signature,
//! match and cluster is made by the same code as the CLI's and the server's, so Python results equal theirs.
//! The Python package around it (`python/neardup/`) adds the types users see: `neardup.Index`,
//! `neardup.dedup` returning a `pyarrow.Table`, and `neardup.datasketch`, a drop-in for datasketch 2.0.
//!
//! * `api`: fingerprints, sketches, comparison, the scheme registry, and batch sketching over Arrow string
//!   buffers (GIL released, all cores, results in input order whatever the thread count);
//! * `index`: the engine's `Index`, in memory or in the same files as `neardup index`;
//! * `explain`: why two documents match, or do not (`neardup explain --json`'s object);
//! * `calibrate`: which k or threshold fits a column of documents (`neardup calibrate`'s `calibration.json`);
//! * `dedup`: the engine's `Dedup`, clusters as row numbers for the Python side to turn into a table;
//! * `stream`: the same fed a column at a time (`neardup.Dedup`), for documents that arrive in batches;
//! * `files`: the same over datasets on disk (JSON Lines, Parquet), read by `neardup-io` as the CLI reads
//!   them, with the deduplicated split written by its second pass;
//! * `distributed`: the engine's distributed stages (sign, bucket keys, judge, cluster a component) over
//!   Arrow columns, which `neardup.spark` runs on Spark's executors;
//! * `datasketch`: the kernels under `neardup.datasketch` (datasketch's permutations, hashing and band
//!   tables), bit-exact with datasketch 2.0;
//! * `batch` and `columns`: columns in (Arrow buffers read in place, or a list copied once; sketched on all
//!   cores) and out (values and strings built as Arrow buffers);
//! * `strings`: a `str`'s text as UTF-8, read from the string's own characters where CPython's layout is
//!   the known one, four times faster than Python's encoder;
//! * `pdf`: every PDF read in a worker process of this interpreter, so that a hostile one cannot abort it;
//! * `errors`: the exception hierarchy (`neardup.Error` and its kinds), carrying the engine's messages.
//!
//! Buffers cross the boundary as bytes, or as NumPy arrays' and pyarrow buffers' addresses (read in place,
//! never copied: a column of text is not duplicated), rather than through the buffer protocol,
//! which the stable ABI has only from Python 3.11: one abi3 wheel serves CPython 3.9 and later.

mod api;
mod batch;
mod calibrate;
mod columns;
mod datasketch;
mod dedup;
mod distributed;
mod errors;
mod explain;
mod files;
mod index;
mod pdf;
mod stream;
mod strings;

use pyo3::prelude::*;

/// The native module. Its names are re-exported, documented and typed by the `neardup` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Forked children (multiprocessing, datasets.map(num_proc=...)) get a pool of their own.
    neardup::parallel::watch_forks();
    errors::register(m)?;
    strings::register(m)?;
    api::register(m)?;
    explain::register(m)?;
    calibrate::register(m)?;
    index::register(m)?;
    dedup::register(m)?;
    stream::register(m)?;
    files::register(m)?;
    distributed::register(m)?;
    datasketch::register(m)?;
    pdf::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

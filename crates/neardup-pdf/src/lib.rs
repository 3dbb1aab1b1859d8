//! # neardup-pdf: the text layer of a PDF, page by page
//!
//! neardup reads PDFs with [`pdf_oxide`], the best pure-Rust text extractor we measured (mean F1 0.99 against
//! `pdftotext` on LaTeX, LibreOffice and XeTeX files; it keeps two-column reading order). It is a very large
//! crate (about 700 CPU-seconds to compile), so it lives alone in this crate: the workspace compiles it once and
//! every other crate rebuilds without touching it.
//!
//! This crate only returns each page's raw text. What neardup does with it (joining hyphenated words,
//! repairing spacing diacritics, dropping running headers) is a rule of the fingerprint scheme and lives in
//! `neardup-text`, next to the other media's rules.
//!
//! PDFs are hostile input. By default every call runs on its own thread, under [`std::panic::catch_unwind`],
//! and with a time limit: a document that panics or runs out of time gives an error. A thread cannot be
//! stopped, though, and a stack overflow aborts the whole process; so a program that owns its process (the
//! `neardup` command, the server) calls [`isolate_in_worker`] once, and every PDF is then read by a worker
//! process ([`run_worker`]) under a memory ceiling, killed when its time is up: a PDF that crashes the
//! extractor, loops or eats memory costs that worker, never the caller. Before the first PDF the worker is
//! asked to read an empty document: a program that cannot serve as one (an embedded Python whose
//! `sys.executable` is not Python, say) leaves PDFs on threads, as without isolation, instead of failing
//! every one as a crash.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "oxide")]
use pdf_oxide::document::PdfDocument;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::time::Duration;

/// The name of the threads that extract PDFs: a program may silence its panic hook for them (their panics
/// are caught and returned as [`PdfError::Panic`]).
pub const THREAD_NAME: &str = "neardup-pdf";

/// Why a PDF gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PdfError {
    /// The file is not a PDF that can be opened (bad header, broken cross-reference table...).
    #[error("cannot open PDF: {0}")]
    Open(String),
    /// The PDF is encrypted and the empty user password does not open it.
    #[error("the PDF is encrypted and needs a password (the empty password does not open it)")]
    Encrypted,
    /// The page tree cannot be read.
    #[error("cannot read the PDF's page tree: {0}")]
    Pages(String),
    /// A page's content stream cannot be read.
    #[error("cannot extract the text of page {page}: {message}")]
    Page {
        /// The page number, from 1.
        page: usize,
        /// What went wrong.
        message: String,
    },
    /// The PDF has pages but no text on any of them: a scan or images only.
    #[error(
        "the PDF has no text layer ({pages} pages, no text on any): it is probably scanned; run OCR first"
    )]
    NoTextLayer {
        /// The number of pages.
        pages: usize,
    },
    /// The PDF has no pages.
    #[error("the PDF has no pages")]
    NoPages,
    /// The extractor panicked on this file (a bug in the extractor, caught).
    #[error("the PDF extractor failed on this file (internal panic: {0})")]
    Panic(String),
    /// This build has no PDF extractor (the `oxide` feature is off).
    #[error("this build of neardup has no PDF support (built without the pdf feature)")]
    Unavailable,
    /// Extraction took longer than the limit.
    #[error("PDF text extraction took longer than the limit of {0} s")]
    TimedOut(u64),
    /// The worker process reading the PDF died (a stack overflow, or memory past its ceiling).
    #[error("the PDF extractor crashed on this file ({0})")]
    Crashed(String),
}

/// How a worker process is started: see [`isolate_in_worker`].
#[derive(Clone, Debug)]
pub struct Worker {
    /// The program, which must call [`run_worker`] when given `args`.
    pub program: std::path::PathBuf,
    /// Its arguments.
    pub args: Vec<std::ffi::OsString>,
    /// Variables set in its environment besides the caller's (an allocator's settings, say: the worker's
    /// address space is capped at [`WORKER_MEMORY`], and what the program reserves counts against it).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

static WORKER: std::sync::OnceLock<Worker> = std::sync::OnceLock::new();

/// Whether [`WORKER`] answers: asked once, before the first PDF (see [`isolating_worker`]).
static WORKER_ANSWERS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// How long the worker has to answer that first question: a process start and an empty document, on a
/// machine that may be busy.
const PROBE_TIME: Duration = Duration::from_secs(30);

/// The stack of the thread that extracts a PDF.
pub const STACK: usize = 256 << 20;

/// The most memory (address space) a worker may map: past it the extractor's allocation fails and the worker
/// dies, which is reported as [`PdfError::Crashed`]. It includes the [`STACK`] reserved for the thread.
pub const WORKER_MEMORY: u64 = 1 << 30;

/// From now on, every PDF in this process is read by a worker process started as `worker` says. Call it
/// once, early (later calls are ignored).
pub fn isolate_in_worker(worker: Worker) {
    let _ = WORKER.set(worker);
}

/// Extracts the text of every page, in page order, each page in the extractor's reading order.
///
/// Runs in a worker process if [`isolate_in_worker`] was called (and the worker answers), else on a
/// thread of its own with a [`STACK`]-byte stack (PDF object graphs nest deeply) that catches panics;
/// either way it gives up after `timeout`.
pub fn extract_pages(bytes: &[u8], timeout: Duration) -> Result<Vec<String>, PdfError> {
    if let Some(answer) = isolating_worker().and_then(|w| extract_in_worker(w, bytes, timeout)) {
        return answer;
    }
    // No worker, or one that cannot start now (its program was replaced or removed while running).
    extract_on_thread(bytes.to_vec(), Some(timeout))
}

/// The worker that reads PDFs, if [`isolate_in_worker`] named one and it answers. The first caller asks it
/// to read an empty document (the others wait); any answer but a crash or a time-out will do.
fn isolating_worker() -> Option<&'static Worker> {
    let worker = WORKER.get()?;
    let answers = *WORKER_ANSWERS.get_or_init(|| {
        !matches!(
            extract_in_worker(worker, b"", PROBE_TIME),
            None | Some(Err(PdfError::Crashed(_) | PdfError::TimedOut(_)))
        )
    });
    answers.then_some(worker)
}

/// Extracts on a thread of its own, with a large stack, waiting for it up to `timeout` (or as long as it takes).
fn extract_on_thread(data: Vec<u8>, timeout: Option<Duration>) -> Result<Vec<String>, PdfError> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .stack_size(STACK)
        .spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(|| extract_pages_here(data)))
                .unwrap_or_else(|payload| Err(PdfError::Panic(panic_message(&*payload))));
            // The receiver is gone if the caller timed out: nothing to do.
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(PdfError::Open(format!("cannot start a thread: {e}")));
    }
    let received = match timeout {
        Some(timeout) => rx.recv_timeout(timeout),
        None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
    };
    match received {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(PdfError::TimedOut(timeout.map_or(0, |t| t.as_secs())))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(PdfError::Panic(
            "the extraction thread ended without a result".into(),
        )),
    }
}

/// Reads one PDF in a worker process: its bytes on the worker's standard input, its pages (or its error) on
/// the worker's standard output. The worker is killed when `timeout` passes. `None` when it cannot start.
fn extract_in_worker(
    worker: &Worker,
    bytes: &[u8],
    timeout: Duration,
) -> Option<Result<Vec<String>, PdfError>> {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    let spawned = Command::new(&worker.program)
        .args(&worker.args)
        .envs(worker.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = spawned.ok()?;
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    // Written and read on threads of their own, so that neither pipe fills while the other waits; scoped, so
    // that the document is written from where it is. Killing the worker ends both.
    let (output, status) = std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(bytes);
            }
        });
        let (tx, rx) = mpsc::channel();
        scope.spawn(move || {
            let mut out = Vec::new();
            let read = stdout.map(|mut s| s.read_to_end(&mut out).map(|_| out));
            let _ = tx.send(read);
        });
        let output = rx.recv_timeout(timeout);
        if output.is_err() {
            let _ = child.kill();
        }
        (output, child.wait())
    });
    Some(match output {
        Err(_) => Err(PdfError::TimedOut(timeout.as_secs())),
        Ok(Some(Ok(out))) if status.as_ref().is_ok_and(|s| s.success()) => decode(&out)
            .unwrap_or_else(|| Err(PdfError::Crashed("the worker's answer is garbled".into()))),
        _ => Err(PdfError::Crashed(match status {
            Ok(s) => describe_exit(s),
            Err(e) => e.to_string(),
        })),
    })
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let what = match signal {
                6 => "aborted: a stack overflow, or memory past the worker's ceiling",
                9 => "killed",
                11 => "segmentation fault",
                _ => "killed by a signal",
            };
            return format!("{what}; signal {signal}");
        }
    }
    format!("the worker exited with {status}")
}

/// The worker's side: reads a PDF from standard input, extracts it, writes the answer to standard output.
/// A program that calls [`isolate_in_worker`] runs this (and nothing else) when started with the worker's
/// arguments, and exits with the status it returns (0, or 2 when standard input or output failed). The
/// worker's address space is capped at [`WORKER_MEMORY`] first.
pub fn run_worker() -> u8 {
    use std::io::{Read, Write};
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, setrlimit};
        let limit = Rlimit {
            current: Some(WORKER_MEMORY),
            maximum: Some(WORKER_MEMORY),
        };
        let _ = setrlimit(Resource::As, limit);
    }
    let mut data = Vec::new();
    if std::io::stdin().lock().read_to_end(&mut data).is_err() {
        return 2;
    }
    // No time limit here: the caller kills the worker when its time is up.
    let result = extract_on_thread(data, None);
    let mut out = std::io::stdout().lock();
    match out.write_all(&encode(&result)).and_then(|_| out.flush()) {
        Ok(()) => 0,
        Err(_) => 2,
    }
}

/// The worker's answer: the pages or the error, as JSON.
fn encode(result: &Result<Vec<String>, PdfError>) -> Vec<u8> {
    serde_json::to_vec(result).expect("pages and errors serialize")
}

/// The caller's reading of [`encode`]; `None` for anything else.
fn decode(data: &[u8]) -> Option<Result<Vec<String>, PdfError>> {
    serde_json::from_slice(data).ok()
}

/// Without the extractor: every PDF is refused.
#[cfg(not(feature = "oxide"))]
fn extract_pages_here(_: Vec<u8>) -> Result<Vec<String>, PdfError> {
    Err(PdfError::Unavailable)
}

/// The extraction itself, on the calling thread.
#[cfg(feature = "oxide")]
fn extract_pages_here(data: Vec<u8>) -> Result<Vec<String>, PdfError> {
    let doc = PdfDocument::from_bytes(data).map_err(|e| open_error(&e))?;
    if doc.is_encrypted() {
        match doc.authenticate(b"") {
            Ok(true) => {}
            Ok(false) | Err(_) => return Err(PdfError::Encrypted),
        }
    }
    let count = doc.page_count().map_err(|e| match e {
        pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
        e => PdfError::Pages(e.to_string()),
    })?;
    if count == 0 {
        return Err(PdfError::NoPages);
    }
    let mut pages = Vec::with_capacity(count);
    for i in 0..count {
        let text = doc.extract_text(i).map_err(|e| match e {
            pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
            e => PdfError::Page {
                page: i + 1,
                message: e.to_string(),
            },
        })?;
        pages.push(text);
    }
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(PdfError::NoTextLayer { pages: count });
    }
    Ok(pages)
}

#[cfg(feature = "oxide")]
fn open_error(e: &pdf_oxide::error::Error) -> PdfError {
    match e {
        pdf_oxide::error::Error::EncryptedPdf => PdfError::Encrypted,
        e => PdfError::Open(e.to_string()),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(30);

    #[test]
    #[cfg(feature = "oxide")]
    fn garbage_is_an_open_error() {
        let e = extract_pages(b"%PDF-1.4\ngarbage", LIMIT).unwrap_err();
        assert!(
            matches!(
                e,
                PdfError::Open(_) | PdfError::Pages(_) | PdfError::NoPages
            ),
            "{e:?}"
        );
        assert!(extract_pages(b"", LIMIT).is_err());
    }

    #[test]
    fn answers_round_trip() {
        let answers = [
            Ok(vec![
                "page one".to_owned(),
                String::new(),
                "trois — ü".to_owned(),
            ]),
            Ok(vec![]),
            Err(PdfError::Open("bad xref".into())),
            Err(PdfError::Encrypted),
            Err(PdfError::Pages("p".into())),
            Err(PdfError::Page {
                page: 7,
                message: "m".into(),
            }),
            Err(PdfError::NoTextLayer { pages: 3 }),
            Err(PdfError::NoPages),
            Err(PdfError::Panic("x".into())),
            Err(PdfError::Unavailable),
            Err(PdfError::TimedOut(60)),
            Err(PdfError::Crashed("c".into())),
        ];
        for answer in answers {
            assert_eq!(decode(&encode(&answer)), Some(answer));
        }
        assert_eq!(decode(b"O\x05"), None);
        assert_eq!(decode(b""), None);
    }
}

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
//! `neardup` command, the server, the Python package) calls [`isolate_in_worker`] once, and every PDF is
//! then read by a worker process ([`run_worker`]) under a memory ceiling, killed when its time is up: a PDF
//! that crashes the extractor, loops or eats memory costs that worker, never the caller. Each thread keeps
//! its worker for its next PDF, up to [`WORKER_DOCUMENTS`] of them (a process start per PDF cost up to a
//! tenth of the time); a worker that waits [`WORKER_IDLE`] for one exits, and the next PDF starts another.
//! Before the first PDF the worker is asked to read an empty document: a program that cannot serve as one
//! (an embedded Python whose `sys.executable` is not Python, say) leaves PDFs on threads, as without
//! isolation, instead of failing every one as a crash.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "oxide")]
use pdf_oxide::document::PdfDocument;
use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
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
    extract_on_thread(bytes.to_vec(), timeout)
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

/// Extracts on a thread of its own, with a large stack, waiting for it up to `timeout`.
fn extract_on_thread(data: Vec<u8>, timeout: Duration) -> Result<Vec<String>, PdfError> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .stack_size(STACK)
        .spawn(move || {
            // The receiver is gone if the caller timed out: nothing to do.
            let _ = tx.send(extract_caught(data));
        });
    if let Err(e) = spawned {
        return Err(PdfError::Open(format!("cannot start a thread: {e}")));
    }
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(PdfError::TimedOut(timeout.as_secs())),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(PdfError::Panic(
            "the extraction thread ended without a result".into(),
        )),
    }
}

/// The extraction on the calling thread (which needs a [`STACK`]-byte stack), a panic caught as an error.
fn extract_caught(data: Vec<u8>) -> Result<Vec<String>, PdfError> {
    catch_unwind(AssertUnwindSafe(|| extract_pages_here(data)))
        .unwrap_or_else(|payload| Err(PdfError::Panic(panic_message(&*payload))))
}

/// A worker process and its pipes, kept by the thread that started it between the PDFs it reads (see
/// [`THREAD_WORKER`]).
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// How many PDFs it has read.
    served: u32,
    /// The process that started it: a child forked from that one inherits the pipes, not the worker.
    owner: u32,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Only the process that started a worker may end it (the pipes a forked child inherited close with
        // it). A worker kept between PDFs is idle, or is being killed for its time: this waits for nothing.
        if self.owner == std::process::id() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The most PDFs one worker reads before it is replaced: what a long-lived extractor leaves behind (a
/// fragmented heap, against its memory ceiling) is bounded.
pub const WORKER_DOCUMENTS: u32 = 100;

/// The largest answer read from a worker; a longer length is a garbled answer.
const MAX_ANSWER: u64 = 1 << 32;

thread_local! {
    /// Each thread that reads PDFs keeps its worker between them: a process start (and for a Python worker,
    /// an interpreter's) per PDF was 10-18 ms of a 100-150 ms document. Kept per thread, not in a shared
    /// pool, so that no lock is held across a `fork` (a Python process forks from a thread that may be
    /// reading PDFs): workers are at most one per such thread and end with it.
    static THREAD_WORKER: std::cell::RefCell<Option<Running>> = const { std::cell::RefCell::new(None) };
}

/// Reads one PDF in a worker process, the one this thread kept if it has one: the document's length and
/// bytes on the worker's standard input, the answer's length and the pages (or the error) on its standard
/// output. The worker is killed when `timeout` passes. `None` when no worker can start.
///
/// A crash in a worker that had read other PDFs is asked again of a new one, so that what those left behind
/// is never this document's error.
fn extract_in_worker(
    worker: &Worker,
    bytes: &[u8],
    timeout: Duration,
) -> Option<Result<Vec<String>, PdfError>> {
    let kept = THREAD_WORKER
        .with(|slot| slot.borrow_mut().take())
        .filter(|running| running.owner == std::process::id());
    if let Some(running) = kept {
        let answer = ask_and_keep(running, bytes, timeout);
        if !matches!(answer, Err(PdfError::Crashed(_))) {
            return Some(answer);
        }
    }
    Some(ask_and_keep(start(worker)?, bytes, timeout))
}

/// [`ask`]s `running`, and keeps it for this thread's next PDF if it may read another.
fn ask_and_keep(
    mut running: Running,
    bytes: &[u8],
    timeout: Duration,
) -> Result<Vec<String>, PdfError> {
    let (answer, alive) = ask(&mut running, bytes, timeout);
    if alive && running.served < WORKER_DOCUMENTS {
        THREAD_WORKER.with(|slot| *slot.borrow_mut() = Some(running));
    }
    answer
}

/// Starts a worker process, or `None` when it cannot start (its program was replaced or removed while
/// running, say).
fn start(worker: &Worker) -> Option<Running> {
    let mut child = Command::new(&worker.program)
        .args(&worker.args)
        .envs(worker.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    Some(Running {
        child,
        stdin,
        stdout,
        served: 0,
        owner: std::process::id(),
    })
}

/// Asks `running` to read one PDF, waiting up to `timeout`: its answer, and whether the worker may read
/// another (it answered, and is still running).
fn ask(
    running: &mut Running,
    bytes: &[u8],
    timeout: Duration,
) -> (Result<Vec<String>, PdfError>, bool) {
    running.served += 1;
    let Running {
        child,
        stdin,
        stdout,
        ..
    } = running;
    // Written and read on threads of their own, so that neither pipe fills while the other waits; scoped, so
    // that the document is written from where it is. Killing the worker ends both.
    let answer = std::thread::scope(|scope| {
        scope.spawn(move || {
            let _ = write_frame(stdin, bytes);
        });
        let (tx, rx) = mpsc::channel();
        scope.spawn(move || {
            let _ = tx.send(read_frame(stdout));
        });
        let answer = rx.recv_timeout(timeout);
        if answer.is_err() {
            let _ = child.kill();
        }
        answer
    });
    match answer {
        Err(_) => (Err(PdfError::TimedOut(timeout.as_secs())), false),
        Ok(Some(frame)) => match decode(&frame) {
            Some(answer) => (answer, true),
            None => (
                Err(PdfError::Crashed("the worker's answer is garbled".into())),
                false,
            ),
        },
        // No answer: the worker died.
        Ok(None) => {
            let _ = child.kill();
            let status = child.wait();
            let why = match status {
                Ok(s) => describe_exit(s),
                Err(e) => e.to_string(),
            };
            (Err(PdfError::Crashed(why)), false)
        }
    }
}

/// A worker's answer: one frame (see [`next_frame`]); `None` at the end of input, for a frame cut short, or
/// for a length past [`MAX_ANSWER`].
fn read_frame(input: &mut impl Read) -> Option<Vec<u8>> {
    next_frame(input, MAX_ANSWER).ok().flatten()
}

/// One length-prefixed frame (a little-endian `u64`, then that many bytes): `Ok(None)` when the input ends
/// before a frame, an error for a frame cut short or longer than `limit`.
fn next_frame(input: &mut impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = [0u8; 8];
    match input.read_exact(&mut length) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let length = u64::from_le_bytes(length);
    if length > limit {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    let mut frame = Vec::new();
    input.take(length).read_to_end(&mut frame)?;
    if frame.len() as u64 != length {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(frame))
}

/// Writes `bytes` as one frame (see [`next_frame`]) and flushes it.
fn write_frame(output: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    output.write_all(&(bytes.len() as u64).to_le_bytes())?;
    output.write_all(bytes)?;
    output.flush()
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

/// The worker's side: reads PDFs from standard input until it ends, each as a length and its bytes, and
/// answers each on standard output (a length and the pages or the error, as JSON). A program that calls
/// [`isolate_in_worker`] runs this (and nothing else) when started with the worker's arguments, and exits
/// with the status it returns (0 at the end of input, 2 when standard input or output failed). The
/// worker's address space is capped at [`WORKER_MEMORY`] first, and it exits by itself once it has waited
/// [`WORKER_IDLE`] for a PDF (`NEARDUP_PDF_WORKER_IDLE_SECS` seconds, if set).
pub fn run_worker() -> u8 {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, setrlimit};
        let limit = Rlimit {
            current: Some(WORKER_MEMORY),
            maximum: Some(WORKER_MEMORY),
        };
        let _ = setrlimit(Resource::As, limit);
    }
    let idle = worker_idle();
    // Milliseconds since `started` when the last PDF was answered; u64::MAX while one is being read.
    let started = std::time::Instant::now();
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let watched = answered.clone();
    let since_start = move || started.elapsed().as_millis() as u64;
    let _ = std::thread::Builder::new()
        .name("neardup-pdf-idle".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(250).min(idle));
                let last = watched.load(std::sync::atomic::Ordering::SeqCst);
                if last != u64::MAX && since_start().saturating_sub(last) >= idle.as_millis() as u64
                {
                    // A request that arrives now is lost with the worker: the caller asks again of a new one.
                    std::process::exit(0);
                }
            }
        });
    // Every PDF is read on one thread with a large stack, made once: a thread made per PDF left its stack
    // mapped for a while after its answer, and a few of them (256 MiB each) filled the worker's ceiling.
    // No time limit here: the caller kills the worker when its time is up.
    let serve = move || {
        let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
        loop {
            let data = match next_frame(&mut input, u64::MAX) {
                Ok(Some(data)) => data,
                Ok(None) => return 0,
                Err(_) => return 2,
            };
            answered.store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
            if write_frame(&mut output, &encode(&extract_caught(data))).is_err() {
                return 2;
            }
            answered.store(since_start(), std::sync::atomic::Ordering::SeqCst);
        }
    };
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .stack_size(STACK)
        .spawn(serve)
        .map_or(2, |reader| reader.join().unwrap_or(2))
}

/// How long a worker waits for its next PDF before it exits: 30 s, or `NEARDUP_PDF_WORKER_IDLE_SECS`
/// seconds. A thread keeps its worker between PDFs (see [`extract_pages`]) but may read no other: an idle
/// worker that ends itself gives its memory back, and the next PDF starts a new one.
fn worker_idle() -> Duration {
    std::env::var("NEARDUP_PDF_WORKER_IDLE_SECS")
        .ok()
        .and_then(|secs| secs.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs > 0.0)
        .map_or(WORKER_IDLE, Duration::from_secs_f64)
}

/// How long a worker waits for a PDF before it exits, unless `NEARDUP_PDF_WORKER_IDLE_SECS` says otherwise.
pub const WORKER_IDLE: Duration = Duration::from_secs(30);

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

    #[test]
    fn frames_are_read_whole_or_not_at_all() {
        let mut framed = 5u64.to_le_bytes().to_vec();
        framed.extend_from_slice(b"hello");
        framed.extend_from_slice(&0u64.to_le_bytes());
        let mut input = framed.as_slice();
        assert_eq!(read_frame(&mut input).as_deref(), Some(&b"hello"[..]));
        assert_eq!(read_frame(&mut input).as_deref(), Some(&b""[..]));
        assert_eq!(read_frame(&mut input), None);
        // Cut short, or a length no answer has.
        assert_eq!(read_frame(&mut &framed[..7]), None);
        assert_eq!(read_frame(&mut &framed[..10]), None);
        assert_eq!(read_frame(&mut &u64::MAX.to_le_bytes()[..]), None);
    }
}

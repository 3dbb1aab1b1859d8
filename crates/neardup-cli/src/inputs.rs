//! Turning command-line operands into documents: files, directories walked recursively in a stable order,
//! and `-` for standard input.

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neardup::media::{Media, MediaHint};
use neardup::{Analysis, Fingerprint, Scheme};
use rayon::prelude::*;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// One document to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file path (as given, or found under a given directory).
    File(PathBuf),
    /// Standard input.
    Stdin,
}

impl Source {
    /// How the document is named in output: the path as given or found, or `-`.
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Stdin => "-".to_owned(),
        }
    }

    /// The file name used as a media hint.
    pub fn name_hint(&self) -> Option<String> {
        match self {
            Source::File(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Source::Stdin => None,
        }
    }

    /// Reads the whole document, refusing anything larger than `max_bytes`.
    pub fn read(&self, max_bytes: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        match self {
            Source::File(p) => {
                let f = std::fs::File::open(p).with_context(|| "cannot open".to_string())?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                if len > max_bytes {
                    anyhow::bail!(
                        "file is {} bytes, over the --max-bytes limit of {max_bytes}",
                        len
                    );
                }
                f.take(max_bytes + 1)
                    .read_to_end(&mut buf)
                    .context("cannot read")?;
            }
            Source::Stdin => {
                std::io::stdin()
                    .lock()
                    .take(max_bytes + 1)
                    .read_to_end(&mut buf)
                    .context("cannot read stdin")?;
            }
        }
        if buf.len() as u64 > max_bytes {
            anyhow::bail!("input is over the --max-bytes limit of {max_bytes} bytes");
        }
        Ok(buf)
    }
}

/// A problem with an operand itself (missing path, unreadable directory entry), reported per operand.
pub struct OperandError {
    pub label: String,
    pub message: String,
}

/// Expands operands into documents. Directories are walked recursively; their files are listed in byte
/// order of their paths so that output never depends on the file system's order. Hidden files and
/// directories (names starting with '.') under a directory are skipped; a hidden file named explicitly is read.
pub fn expand(operands: &[String]) -> (Vec<Source>, Vec<OperandError>) {
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    for op in operands {
        if op == "-" {
            sources.push(Source::Stdin);
            continue;
        }
        let path = Path::new(op);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let walker = walkdir::WalkDir::new(path)
                    .sort_by(|a, b| a.file_name().cmp(b.file_name()))
                    .into_iter()
                    .filter_entry(|e| {
                        e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                    });
                for entry in walker {
                    match entry {
                        Ok(e) if e.file_type().is_file() => {
                            sources.push(Source::File(e.into_path()))
                        }
                        Ok(e) if e.file_type().is_symlink() => {
                            if e.path().is_file() {
                                sources.push(Source::File(e.into_path()));
                            }
                        }
                        Ok(_) => {}
                        Err(e) => errors.push(OperandError {
                            label: e
                                .path()
                                .map_or_else(|| op.clone(), |p| p.display().to_string()),
                            message: e.to_string(),
                        }),
                    }
                }
            }
            Ok(_) => sources.push(Source::File(path.to_path_buf())),
            Err(e) => errors.push(OperandError {
                label: op.clone(),
                message: io_message(&e),
            }),
        }
    }
    (sources, errors)
}

/// An I/O error in words a user can act on.
pub fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

/// How documents are read and fingerprinted: shared by every command that reads documents.
#[derive(Args, Clone)]
pub struct DocArgs {
    /// Treat every input as this medium instead of detecting it: auto, text, html, xml, pdf, epub or warc.
    #[arg(long, default_value = "auto", value_name = "MEDIA", value_parser = parse_media)]
    pub media: MediaChoice,
    /// The fingerprint scheme.
    #[arg(long, default_value = "simhash-doc-v1")]
    pub scheme: Scheme,
    /// Refuse documents larger than this many bytes.
    #[arg(long, default_value_t = 256 << 20, value_name = "BYTES")]
    pub max_bytes: u64,
}

impl DocArgs {
    /// Reads and fingerprints one document; the error is a message ready to print after the document's name.
    pub fn analyze(&self, source: &Source) -> (u64, Result<Analysis, String>) {
        let bytes = match source.read(self.max_bytes) {
            Ok(b) => b,
            Err(e) => return (0, Err(format!("{e:#}"))),
        };
        let name = source.name_hint();
        let result = self
            .scheme
            .analyze(&bytes, self.media.hint(name.as_deref()))
            .map_err(|e| e.to_string());
        (bytes.len() as u64, result)
    }

    /// Reads and fingerprints every document of a file: one, or one per response record of a WARC archive,
    /// labelled by its `WARC-Target-URI` (an error that ends a damaged archive is labelled by the file).
    pub fn analyze_all(&self, source: &Source) -> Vec<Outcome> {
        let bytes = match source.read(self.max_bytes) {
            Ok(b) => b,
            Err(e) => {
                return vec![Outcome {
                    label: source.label(),
                    bytes: 0,
                    result: Err(format!("{e:#}")),
                }];
            }
        };
        let name = source.name_hint();
        let docs = self
            .scheme
            .analyze_documents(&bytes, self.media.hint(name.as_deref()));
        let single = docs.len() == 1 && docs[0].0.is_none();
        docs.into_iter()
            .map(|(id, result)| {
                // A record's error also names the archive it came from.
                let result = result.map_err(|e| match &id {
                    Some(_) => format!("{e} (record in {})", source.label()),
                    None => e.to_string(),
                });
                Outcome {
                    label: id.unwrap_or_else(|| source.label()),
                    bytes: if single { bytes.len() as u64 } else { 0 },
                    result,
                }
            })
            .collect()
    }

    /// Expands `operands` (files, directories, `-`), reports on stderr the ones that cannot be expanded, and
    /// reads and fingerprints the documents in parallel batches, handing each batch to `on_batch` in input
    /// order, with the progress bar (to print around). A WARC archive gives one outcome per record.
    /// Returns how many operands could not be expanded.
    pub fn fingerprint_batches(
        &self,
        operands: &[String],
        mut on_batch: impl FnMut(Vec<Outcome>, &ProgressBar) -> Result<()>,
    ) -> Result<usize> {
        let (sources, operand_errors) = expand(operands);
        for e in &operand_errors {
            eprintln!("neardup: {}: {}", e.label, e.message);
        }
        let progress = progress_bar(sources.len() as u64);
        // Parallel inside a batch, in order across batches: memory stays bounded and results arrive early.
        for batch in sources.chunks(256) {
            let outcomes: Vec<Outcome> = batch
                .par_iter()
                .map(|s| self.analyze_all(s))
                .collect::<Vec<_>>()
                .into_iter()
                .flatten()
                .collect();
            progress.inc(batch.len() as u64);
            on_batch(outcomes, &progress)?;
        }
        progress.finish_and_clear();
        Ok(operand_errors.len())
    }

    /// The fingerprint of an operand that is a file, `-` (stdin), or a fingerprint string (a path that exists
    /// wins over a string that looks like a fingerprint).
    pub fn fingerprint_of(&self, operand: &str) -> Result<Fingerprint> {
        let source = if operand == "-" {
            Source::Stdin
        } else if Path::new(operand).exists() {
            Source::File(operand.into())
        } else if Fingerprint::looks_like_fingerprint(operand) {
            return operand
                .parse::<Fingerprint>()
                .with_context(|| operand.to_owned());
        } else {
            bail!("{operand}: no such file, and not a fingerprint (SCHEME:BASE32)");
        };
        let (_, result) = self.analyze(&source);
        result
            .map(|a| a.fingerprint)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.label()))
    }
}

/// One document read and fingerprinted.
pub struct Outcome {
    /// The document's name: its path as given or found, or `-`.
    pub label: String,
    /// Its size in bytes (0 if it could not be read).
    pub bytes: u64,
    /// What it gave, or why it gave nothing.
    pub result: Result<Analysis, String>,
}

/// The exit status of a command over many documents: 1 if any of them failed (each was reported), else 0.
pub fn exit_status(failures: usize) -> std::process::ExitCode {
    if failures > 0 {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Reports a document that gave no fingerprint, without tearing the progress bar.
pub fn report(progress: &ProgressBar, label: &str, message: &str) {
    progress.suspend(|| eprintln!("neardup: {label}: {message}"));
}

/// A progress bar for `len` files, drawn only when stderr is a terminal (hidden in pipes and CI).
pub fn progress_bar(len: u64) -> ProgressBar {
    if len < 2 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} hashing [{bar:30}] {human_pos}/{human_len} files, {elapsed} elapsed, eta {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar
}

/// `-j/--threads`: the size of the worker pool.
#[derive(Args, Clone, Copy)]
pub struct Threads {
    /// Worker threads for reading and fingerprinting (default: one per core). Output is the same for any
    /// number.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    threads: Option<usize>,
}

impl Threads {
    /// Sizes the global worker pool, if asked.
    pub fn apply(self) -> Result<()> {
        if let Some(n) = self.threads {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build_global()?;
        }
        Ok(())
    }
}

/// `--media`: detect, or force one medium.
#[derive(Clone, Copy)]
pub enum MediaChoice {
    Auto,
    Forced(Media),
}

pub fn parse_media(s: &str) -> Result<MediaChoice, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(MediaChoice::Auto);
    }
    Media::from_name(s).map(MediaChoice::Forced).ok_or_else(|| {
        format!("unknown medium '{s}' (expected auto, text, html, xml, pdf, epub or warc)")
    })
}

impl MediaChoice {
    pub fn hint(self, name: Option<&str>) -> MediaHint<'_> {
        match (self, name) {
            (MediaChoice::Forced(m), _) => MediaHint::Force(m),
            (MediaChoice::Auto, Some(n)) => MediaHint::FileName(n),
            (MediaChoice::Auto, None) => MediaHint::Auto,
        }
    }
}

/// A JSONL line to (id, text); the id falls back to `FILE:LINE`.
pub fn parse_jsonl_line(
    line: &str,
    file: &str,
    line_no: usize,
) -> (String, Result<String, String>) {
    let fallback = format!("{file}:{line_no}");
    let value: serde_json::Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return (fallback, Err(format!("not a JSON object: {e}"))),
    };
    let id = match value.get("id") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => fallback,
    };
    match value.get("text") {
        Some(serde_json::Value::String(t)) => (id, Ok(t.clone())),
        Some(_) => (id, Err("the \"text\" field is not a string".to_owned())),
        None => (id, Err("no \"text\" field".to_owned())),
    }
}

/// Opens a line-oriented input: a file, or standard input for `-`. The error names the file in words a user
/// can act on.
pub fn open_lines(operand: &str) -> Result<Box<dyn std::io::BufRead>, String> {
    if operand == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    std::fs::File::open(operand)
        .map(|f| {
            Box::new(std::io::BufReader::with_capacity(1 << 20, f)) as Box<dyn std::io::BufRead>
        })
        .map_err(|e| format!("{operand}: {}", io_message(&e)))
}

/// One JSON Lines document: its id and its text, or why the line is not a document.
pub type JsonlDoc = (String, Result<String, String>);

/// Reads JSON Lines inputs in batches of up to `size` documents (blank lines skipped) and hands each batch to
/// `on_batch`, in input order. Inputs that cannot be opened are reported on stderr and counted; the count is
/// returned.
pub fn for_each_jsonl_batch(
    operands: &[String],
    size: usize,
    mut on_batch: impl FnMut(Vec<JsonlDoc>) -> Result<()>,
) -> Result<usize> {
    let mut unopened = 0;
    for operand in operands {
        let reader = match open_lines(operand) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("neardup: {e}");
                unopened += 1;
                continue;
            }
        };
        let mut lines = reader.lines().enumerate();
        loop {
            let batch: Vec<JsonlDoc> = lines
                .by_ref()
                .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
                .take(size)
                .map(|(n, l)| match l {
                    Ok(l) => parse_jsonl_line(&l, operand, n + 1),
                    Err(e) => (
                        format!("{operand}:{}", n + 1),
                        Err(format!("cannot read: {e}")),
                    ),
                })
                .collect();
            if batch.is_empty() {
                break;
            }
            on_batch(batch)?;
        }
    }
    Ok(unopened)
}

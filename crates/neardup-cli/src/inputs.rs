//! Turning command-line operands into documents: files, directories walked recursively in a stable order,
//! and `-` for standard input.

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neardup::media::{Media, MediaHint};
use neardup::{Analysis, Method, Profile, Sketch};
use rayon::prelude::*;
use std::io::Read;
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
            Source::File(p) => path_label(p),
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
                let f = open_for_reading(p).with_context(|| "cannot open".to_string())?;
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

/// How a path is named in output: as it is when it is UTF-8, else with each byte that is not as `\xNN` (and
/// each `\` as `\\`), so that two names never print as one.
pub fn path_label(path: &Path) -> String {
    if let Some(s) = path.to_str() {
        return s.to_owned();
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut out = String::new();
        for chunk in path.as_os_str().as_bytes().utf8_chunks() {
            out.push_str(&chunk.valid().replace('\\', "\\\\"));
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        out
    }
    #[cfg(not(unix))]
    path.display().to_string()
}

/// Opens a file to read, without blocking on a FIFO (named pipe) that no process writes to: `open` would
/// wait for a writer forever. A pipe with a writer (`<(command)`) is read to its end as before; one without
/// reads as empty.
fn open_for_reading(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(OFlags::NONBLOCK.bits() as i32)
            .open(path)?;
        let flags = fcntl_getfl(&file)?;
        fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
        Ok(file)
    }
    #[cfg(not(unix))]
    std::fs::File::open(path)
}

/// A problem with an operand itself (missing path, unreadable directory entry), reported per operand.
pub struct OperandError {
    pub label: String,
    pub message: String,
}

/// Expands operands into documents. Directories are walked recursively; their files are listed in byte
/// order of their paths so that output never depends on the file system's order. Hidden files and
/// directories (names starting with '.') under a directory are skipped; a hidden file named explicitly is read.
///
/// Every file is read once, under the first name it is reached by (`dedup site site/v2.0` does not make a
/// file its own duplicate): files are identified by device and inode. Symbolic links found while walking a
/// directory are skipped unless `follow` (a link and its target would otherwise be two copies of one file);
/// a link named on the command line is read.
/// Files that are not regular files (FIFOs, sockets, devices) found under a directory are skipped with a
/// notice, and so, when not following links, are links (counted, one notice per operand).
pub fn expand(
    operands: &[std::ffi::OsString],
    follow: bool,
    selection: &Selection,
) -> (Vec<Source>, Vec<OperandError>, Vec<OperandError>) {
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    let mut notices = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut push = |path: PathBuf, sources: &mut Vec<Source>| {
        if seen.insert(file_identity(&path)) {
            sources.push(Source::File(path));
        }
    };
    for op in operands {
        if op == "-" {
            sources.push(Source::Stdin);
            continue;
        }
        let path = Path::new(op);
        let op = path_label(path);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let walker = walkdir::WalkDir::new(path)
                    .follow_links(follow)
                    .sort_by(|a, b| a.file_name().cmp(b.file_name()))
                    .into_iter()
                    .filter_entry(|e| e.depth() == 0 || !neardup_io::is_hidden(e.file_name()));
                let mut links = 0usize;
                for entry in walker {
                    match entry {
                        Ok(e) if e.file_type().is_file() => {
                            let relative = e.path().strip_prefix(path).unwrap_or(e.path());
                            if selection.admits(relative) {
                                push(e.into_path(), &mut sources)
                            }
                        }
                        Ok(e) if e.file_type().is_dir() => {}
                        Ok(e) if e.file_type().is_symlink() => links += 1,
                        Ok(e) => notices.push(OperandError {
                            label: path_label(e.path()),
                            message: format!(
                                "skipped: {} is not a regular file",
                                special_kind(&e.file_type())
                            ),
                        }),
                        Err(e) => errors.push(OperandError {
                            label: e.path().map_or_else(|| op.clone(), path_label),
                            message: e.to_string(),
                        }),
                    }
                }
                if links > 0 {
                    notices.push(OperandError {
                        label: op.clone(),
                        message: format!(
                            "skipped {links} symbolic link{} (-L/--follow reads what links point to)",
                            if links == 1 { "" } else { "s" }
                        ),
                    });
                }
            }
            Ok(_) => push(path.to_path_buf(), &mut sources),
            Err(e) => errors.push(OperandError {
                label: op.clone(),
                message: io_message(&e),
            }),
        }
    }
    (sources, errors, notices)
}

/// A warning for the files among documents whose names say JSON Lines or Parquet (a directory holding other
/// files too, or such files named beside documents): each is read as one document (a compressed or Parquet
/// one fails), which is seldom what was meant. `takes_records`: the command reads records with --jsonl.
fn shards_among_documents(sources: &[Source], takes_records: bool) -> Option<OperandError> {
    let mut shards = sources.iter().filter_map(|s| match s {
        Source::File(path) if neardup_io::is_shard(path) => Some(path),
        _ => None,
    });
    let first = shards.next()?;
    let (files, read, their) = match shards.count() {
        0 => (
            "named as JSON Lines or Parquet".to_owned(),
            "read as one document",
            "its",
        ),
        more => (
            format!(
                "this and {more} more file{} named as JSON Lines or Parquet",
                if more == 1 { "" } else { "s" }
            ),
            "each read as one document",
            "their",
        ),
    };
    let advice = if takes_records {
        format!("--jsonl reads {their} records instead, and leaves the other files out")
    } else {
        "`neardup hash --jsonl` and `neardup dedup --jsonl` read records (`neardup hash --jsonl DATASET | \
         neardup index add-fingerprints INDEX -` indexes them)"
            .to_owned()
    };
    Some(OperandError {
        label: path_label(first),
        message: format!(
            "{files}, among other documents: {read} (compressed and Parquet ones fail); {advice}"
        ),
    })
}

/// "a FIFO", "a socket", "a device": what a file that is not a regular file is.
fn special_kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    let _ = file_type;
    "a special file"
}

/// What identifies a file whatever the name it is reached by: device and inode on Unix, the canonical path
/// elsewhere (or the path as given when it cannot be resolved).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum FileIdentity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn file_identity(path: &Path) -> FileIdentity {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(path) {
            return FileIdentity::Inode(m.dev(), m.ino());
        }
    }
    FileIdentity::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// An I/O error in words a user can act on.
pub fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

/// Which scheme sketches the documents: SimHash fingerprints or MinHash-family signatures, with parameters.
#[derive(Args, Clone, Default)]
pub struct MethodArgs {
    /// The scheme: simhash-doc-v1 (alias simhash: 64-bit SimHash fingerprints, the default), minhash-oph-v1
    /// (alias minhash: fast MinHash signatures), minhash-datasketch-affine32 (alias datasketch: bit-exact
    /// with datasketch.MinHash), minhash-datasketch-legacy (datasketch < 2.0), wminhash-v1 (weighted Jaccard
    /// of shingle counts), pminhash-v1 (probability Jaccard of shingle counts) or bottomk-v1 (a sample of
    /// shingles for resemblance and containment, with `neardup compare`).
    #[arg(long, value_name = "SCHEME")]
    pub scheme: Option<String>,
    /// MinHash: values per signature (K, datasketch's num_perm), or the k of a bottom-k sample [default: 128].
    #[arg(long, value_name = "K", value_parser = crate::plan::parse_num_perm)]
    pub num_perm: Option<u32>,
    /// MinHash: the seed of the permutations [default: 0; datasketch's default is 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// MinHash: shingles are word n-grams of this length [default: 5].
    #[arg(long, value_name = "N")]
    pub shingle: Option<u32>,
    /// MinHash: shingles are character n-grams of this length (over the words joined by spaces) instead.
    #[arg(long, value_name = "N", conflicts_with = "shingle")]
    pub char_shingle: Option<u32>,
    #[arg(skip)]
    resolved: std::sync::OnceLock<Method>,
}

impl MethodArgs {
    /// The method the flags describe (checked once, then remembered); `defaults` are (K, word n-gram) where
    /// a caller (a preset) has its own.
    pub fn method_with(&self, defaults: Option<(u32, u32)>) -> Result<Method> {
        if let Some(m) = self.resolved.get() {
            return Ok(*m);
        }
        let info = neardup::schemes::lookup(
            self.scheme
                .as_deref()
                .unwrap_or(neardup::schemes::REGISTRY[0].name),
        )?;
        let params = neardup::schemes::Params {
            num_perm: self.num_perm,
            seed: self.seed,
            shingle: self.shingle,
            char_shingle: self.char_shingle,
        };
        if info.family == neardup::schemes::Family::SimHash
            && let Some(param) = params.given().first()
        {
            bail!(
                "--{} applies to MinHash schemes, not {} (add --scheme minhash)",
                param.replace('_', "-"),
                info.name
            );
        }
        let (num_perm, shingle) = defaults.unwrap_or((
            neardup::schemes::DEFAULT_NUM_PERM,
            neardup::schemes::DEFAULT_SHINGLE,
        ));
        let method = info.method_with_defaults(&params, num_perm, shingle)?;
        Ok(*self.resolved.get_or_init(|| method))
    }

    /// The method, with the built-in defaults.
    pub fn method(&self) -> Result<Method> {
        self.method_with(None)
    }

    /// Uses `method` (an index's): refuses if the flags asked for another.
    pub fn adopt(&self, method: Method, whose: &str) -> Result<()> {
        let asked = [
            self.num_perm.is_some(),
            self.seed.is_some(),
            self.shingle.is_some(),
            self.char_shingle.is_some(),
        ];
        if self.scheme.is_some() || asked.contains(&true) {
            let wanted = self.method()?;
            if wanted != method {
                bail!(
                    "{whose} holds {method} sketches, not {wanted}: schemes and parameters are never mixed"
                );
            }
        }
        let _ = self.resolved.set(method);
        Ok(())
    }
}

/// How documents are read and sketched: shared by every command that reads documents.
#[derive(Args, Clone)]
pub struct DocArgs {
    /// A directory whose files are never read as documents: the index a command writes, when it lies
    /// inside a directory being added.
    #[arg(skip)]
    pub skip_dir: Option<PathBuf>,
    /// A file the command writes (the cluster table): refused before anything is read if it is one of the
    /// inputs, noted if a later run over an input directory would read it.
    #[arg(skip)]
    pub writes: Option<PathBuf>,
    /// Whether the command reads records with --jsonl (`hash`, `dedup`), for the advice given when JSON Lines
    /// or Parquet files are found among documents.
    #[arg(skip)]
    pub takes_records: bool,
    /// Treat every input as this medium instead of detecting it: auto, text, html, xml, pdf, epub or warc.
    #[arg(long, default_value = "auto", value_name = "MEDIA", value_parser = parse_media)]
    pub media: MediaChoice,
    #[command(flatten)]
    pub method: MethodArgs,
    /// Refuse documents larger than this many bytes (K, M, G suffixes: powers of 1024).
    #[arg(long, default_value = "256M", value_name = "BYTES", value_parser = crate::plan::parse_size)]
    pub max_bytes: u64,
    /// Follow symbolic links while walking directories (a file reached twice is still read once).
    #[arg(short = 'L', long)]
    pub follow: bool,
    /// Only read files (found in directories) whose path below the directory matches GLOB; a GLOB starting
    /// with '!' excludes instead. Repeatable, as ripgrep's -g.
    #[arg(short = 'g', long, value_name = "GLOB")]
    pub glob: Vec<String>,
    /// Leave out files (found in directories) whose path matches GLOB. Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Only read files of these types (found in directories), by extension: html, xml, pdf, epub, warc,
    /// text, jsonl, parquet. Repeatable.
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = parse_file_type)]
    pub file_type: Vec<&'static FileType>,
    /// Also read the paths listed in FILE, one per line, or separated by NUL bytes ('-' for stdin).
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<String>,
    /// Treat documents without any words (empty, only markup or numbers) as failures: exit status 1.
    #[arg(long)]
    pub strict: bool,
    /// Also keep each document's exact profile (MinHash; SimHash with `simhash_check`), for exact
    /// verification.
    #[arg(skip)]
    pub keep_profiles: bool,
    /// SimHash: the exact measure candidates are verified with (the profile kept).
    #[arg(skip)]
    pub simhash_check: Option<neardup::dedup::SimHashCheck>,
}

impl DocArgs {
    /// Whether files found in directories are chosen (`--glob`, `--exclude`, `--type`): those choose among
    /// documents, so a directory is then never taken for a dataset of shards.
    pub fn selects_files(&self) -> bool {
        !self.glob.is_empty() || !self.exclude.is_empty() || !self.file_type.is_empty()
    }

    /// Reads and sketches one document.
    pub fn analyze(&self, source: &Source) -> (u64, Result<Analysis, Problem>) {
        let (method, bytes) = match self.method_and_bytes(source) {
            Ok(read) => read,
            Err(e) => return (0, Err(Problem::failed(e))),
        };
        let name = source.name_hint();
        let result = method
            .analyze(&bytes, self.media.hint(name.as_deref()))
            .map_err(|e| Problem::of(&e, e.to_string()));
        (bytes.len() as u64, result)
    }

    /// The method and the document's bytes, or a message ready to print after the document's name.
    fn method_and_bytes(&self, source: &Source) -> Result<(Method, Vec<u8>), String> {
        let method = self.method.method().map_err(|e| format!("{e:#}"))?;
        let bytes = source.read(self.max_bytes).map_err(|e| format!("{e:#}"))?;
        Ok((method, bytes))
    }

    /// Sketches a record's text: taken as extracted text, or, with a medium other than text (the record's
    /// own, from a media field, else `--media`: HTML in a crawl's JSONL), extracted as that medium first.
    pub fn sketch_text_as(
        &self,
        media: Option<MediaChoice>,
        method: Method,
        text: &str,
        keep_profile: bool,
    ) -> Result<(Sketch, Option<Profile>, u64), Problem> {
        sketch_record_text(
            media.unwrap_or(self.media),
            method,
            text,
            keep_profile,
            self.simhash_check,
        )
        .map_err(|e| Problem::of(&e, e.to_string()))
    }

    /// Reads a document and extracts its text.
    pub fn extract_text(&self, source: &Source) -> Result<String> {
        let bytes = source.read(self.max_bytes)?;
        let name = source.name_hint();
        Ok(neardup::text::extract(&bytes, self.media.hint(name.as_deref()))?.text)
    }

    /// Reads and sketches every document of a file: one, or one per response record of a WARC archive,
    /// labelled by its `WARC-Target-URI` (an error that ends a damaged archive is labelled by the file). With
    /// `keep_profiles`, MinHash outcomes carry their exact profiles.
    pub fn analyze_all(&self, source: &Source) -> Vec<Outcome> {
        let failed = |message: String| {
            vec![Outcome {
                label: source.label(),
                bytes: 0,
                record: None,
                container: None,
                result: Err(Problem::failed(message)),
                profile: None,
            }]
        };
        let (method, bytes) = match self.method_and_bytes(source) {
            Ok(read) => read,
            Err(e) => return failed(e),
        };
        let name = source.name_hint();
        let docs = method.analyze_documents_checked(
            &bytes,
            self.media.hint(name.as_deref()),
            self.keep_profiles,
            self.simhash_check,
        );
        docs.into_iter()
            .map(|doc| {
                // A record's error also names the archive it came from.
                let result = doc.result.map_err(|e| match &doc.id {
                    Some(_) => Problem::of(&e, format!("{e} (record in {})", source.label())),
                    None => Problem::of(&e, e.to_string()),
                });
                let (result, profile) = match result {
                    Ok((analysis, profile)) => (Ok(analysis), profile),
                    Err(e) => (Err(e), None),
                };
                Outcome {
                    container: doc.id.is_some().then(|| source.label()),
                    label: doc.id.unwrap_or_else(|| source.label()),
                    bytes: doc.bytes,
                    record: doc.record,
                    result,
                    profile,
                }
            })
            .collect()
    }

    /// Expands `operands` (files, directories, `-`), reports on stderr the ones that cannot be expanded, and
    /// reads and sketches the documents in parallel batches, handing each batch to `on_batch` in input
    /// order, with the progress bar (to print around). A WARC archive gives one outcome per record.
    /// Returns how many operands could not be expanded.
    pub fn fingerprint_batches(
        &self,
        operands: &[std::ffi::OsString],
        mut on_batch: impl FnMut(Vec<Outcome>, &ProgressBar) -> Result<()>,
    ) -> Result<usize> {
        self.method.method()?;
        let mut operands = operands.to_vec();
        if let Some(list) = &self.files_from {
            operands.extend(read_file_list(list)?.into_iter().map(Into::into));
        }
        let selection = Selection::new(&self.glob, &self.exclude, &self.file_type)?;
        let (mut sources, operand_errors, mut notices) = expand(&operands, self.follow, &selection);
        if let Some(skip) = self.skip_dir.as_ref().and_then(|d| d.canonicalize().ok()) {
            // The operands the index lies inside (or that lie inside it), each with the index's path below
            // it (empty for the latter): files found under such an operand are its path joined to theirs, so
            // a prefix test (no system call) finds the index's files, and other operands cost nothing.
            let inside: Vec<(PathBuf, PathBuf)> = operands
                .iter()
                .map(PathBuf::from)
                .filter_map(|op| {
                    let canonical = op.canonicalize().ok()?;
                    // An operand inside the index is all the index's.
                    let below = match skip.strip_prefix(&canonical) {
                        Ok(below) => below.to_path_buf(),
                        Err(_) if canonical.starts_with(&skip) => PathBuf::new(),
                        Err(_) => return None,
                    };
                    Some((op, below))
                })
                .collect();
            let before = sources.len();
            sources.retain(|s| match s {
                Source::File(p) => !inside
                    .iter()
                    .any(|(op, below)| p.strip_prefix(op).is_ok_and(|r| r.starts_with(below))),
                Source::Stdin => true,
            });
            let skipped = before - sources.len();
            if skipped > 0 {
                notices.push(OperandError {
                    label: path_label(&skip),
                    message: format!("skipped {skipped} files of the index itself"),
                });
            }
        }
        if let Some(output) = &self.writes {
            check_output_place(output, &operands, &selection, &mut notices)?;
        }
        if let Some(notice) = shards_among_documents(&sources, self.takes_records) {
            notices.push(notice);
        }
        let progress = progress_bar(sources.len() as u64);
        for e in &operand_errors {
            report(&progress, &e.label, &e.message);
        }
        for n in &notices {
            warn(&progress, &n.label, &n.message);
        }
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

    /// The sketch of an operand that is a file, `-` (stdin), or a fingerprint or signature string (a path that
    /// exists wins over a string that looks like a sketch).
    pub fn sketch_of(&self, operand: &str) -> Result<Sketch> {
        let source = if operand == "-" {
            Source::Stdin
        } else if Path::new(operand).exists() {
            Source::File(operand.into())
        } else if Sketch::looks_like_sketch(operand) {
            return operand
                .parse::<Sketch>()
                .with_context(|| operand.to_owned());
        } else {
            bail!("{operand}: no such file, and not a fingerprint or signature (SCHEME:...)");
        };
        let (_, result) = self.analyze(&source);
        result
            .map(|a| a.sketch)
            .map_err(|e| anyhow::anyhow!("{}: {}", source.label(), e.message))
    }
}

/// One document read and sketched.
pub struct Outcome {
    /// The document's name: its path as given or found, or `-`.
    pub label: String,
    /// Its size in bytes: the file's, or the record's inside a WARC archive (0 if it could not be read).
    pub bytes: u64,
    /// A WARC record's id and date.
    pub record: Option<neardup::text::warc::RecordMeta>,
    /// The archive a record came from (`None` for a whole file).
    pub container: Option<String>,
    /// What it gave, or why it gave nothing.
    pub result: Result<Analysis, Problem>,
    /// Its exact profile, when [`DocArgs::keep_profiles`] asked for it.
    pub profile: Option<Profile>,
}

/// Why a document gave no sketch.
#[derive(Clone, Debug)]
pub struct Problem {
    /// In words, ready to print after the document's name.
    pub message: String,
    /// Whether it is only empty (no words after extraction): a warning, not a failure, unless `--strict`.
    pub empty: bool,
}

impl Problem {
    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Problem {
            message: message.into(),
            empty: false,
        }
    }

    /// The problem of a library error, with its message.
    pub fn of(error: &neardup::Error, message: String) -> Self {
        Problem {
            message,
            empty: matches!(error, neardup::Error::NoTokens { .. }),
        }
    }
}

/// Documents that gave no sketch: failures, and empty documents (warnings).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Documents that could not be read or sketched, and operands that could not be expanded.
    pub failed: usize,
    /// Documents without words.
    pub empty: usize,
}

impl Tally {
    /// Counts and reports a problem on stderr (without tearing the progress bar).
    pub fn record(&mut self, progress: &ProgressBar, label: &str, problem: &Problem) {
        if problem.empty {
            self.empty += 1;
            warn(progress, label, &problem.message);
        } else {
            self.failed += 1;
            report(progress, label, &problem.message);
        }
    }

    /// "2 failed, 1 empty" for summaries.
    pub fn describe(&self) -> String {
        format!("{} failed, {} empty", self.failed, self.empty)
    }

    /// 1 if anything failed (or, with `strict`, was empty), else 0.
    pub fn exit_status(&self, strict: bool) -> std::process::ExitCode {
        exit_status(self.failed + if strict { self.empty } else { 0 })
    }
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
    progress.suspend(|| say!("{label}: {message}"));
}

/// Reports a warning about a document or operand, without tearing the progress bar.
pub fn warn(progress: &ProgressBar, label: &str, message: &str) {
    progress.suspend(|| say!("warning: {label}: {message}"));
}

/// A name (path, id) as it may be written to a terminal: control characters (line breaks, escape sequences)
/// are shown escaped, so that a file or record name cannot forge lines or drive the terminal.
pub fn terminal_safe(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return name.into();
    }
    let mut shown = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown.into()
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

/// A record's text sketched: taken as extracted text, or, with a medium other than text, extracted as that
/// medium first (`neardup bench --media` times the same path). Its sketch, profile (with `keep_profile`) and
/// token count.
pub fn sketch_record_text(
    media: MediaChoice,
    method: Method,
    text: &str,
    keep_profile: bool,
    check: Option<neardup::dedup::SimHashCheck>,
) -> Result<(Sketch, Option<Profile>, u64), neardup::Error> {
    match media.extracted() {
        Some(media) => method
            .analyze_documents_checked(
                text.as_bytes(),
                MediaHint::Force(media),
                keep_profile,
                check,
            )
            .into_iter()
            .next()
            .map(|d| d.result.map(|(a, p)| (a.sketch, p, a.tokens)))
            .unwrap_or(Err(neardup::Error::NoTokens {
                scheme: "any scheme",
            })),
        None => method
            .analyze_text_checked(text, keep_profile, check)
            .map(|(sketch, tokens, profile)| (sketch, profile, tokens)),
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

impl std::fmt::Display for MediaChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MediaChoice::Auto => f.write_str("auto"),
            MediaChoice::Forced(m) => write!(f, "{m}"),
        }
    }
}

impl MediaChoice {
    /// The medium a record's text is extracted as: one forced other than text (auto and text take the text
    /// as it is).
    pub fn extracted(self) -> Option<Media> {
        match self {
            MediaChoice::Forced(media) if media != Media::Text => Some(media),
            _ => None,
        }
    }

    pub fn hint(self, name: Option<&str>) -> MediaHint<'_> {
        match (self, name) {
            (MediaChoice::Forced(m), _) => MediaHint::Force(m),
            (MediaChoice::Auto, Some(n)) => MediaHint::FileName(n),
            (MediaChoice::Auto, None) => MediaHint::Auto,
        }
    }
}

/// Opens a line-oriented input: a file, or standard input for `-`. The error names the file in words a user
/// can act on.
pub fn open_lines(operand: &str) -> Result<Box<dyn std::io::BufRead>, String> {
    if operand == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    open_for_reading(Path::new(operand))
        .map(|f| {
            Box::new(std::io::BufReader::with_capacity(1 << 20, f)) as Box<dyn std::io::BufRead>
        })
        .map_err(|e| format!("{operand}: {}", io_message(&e)))
}

/// How a record is named in messages: `FILE:LINE (ID)`, or `FILE:LINE` when it has no id.
pub fn record_label(location: &str, id: &str) -> String {
    if location == id {
        location.to_owned()
    } else {
        format!("{location} ({id})")
    }
}

/// A named set of file extensions (`--type`).
#[derive(Debug)]
pub struct FileType {
    pub name: &'static str,
    pub globs: &'static [&'static str],
}

/// The types `--type` knows.
pub const FILE_TYPES: &[FileType] = &[
    FileType {
        name: "html",
        globs: &["*.html", "*.htm", "*.xhtml"],
    },
    FileType {
        name: "xml",
        globs: &["*.xml"],
    },
    FileType {
        name: "pdf",
        globs: &["*.pdf"],
    },
    FileType {
        name: "epub",
        globs: &["*.epub"],
    },
    FileType {
        name: "warc",
        globs: &["*.warc", "*.warc.gz"],
    },
    FileType {
        name: "text",
        globs: &["*.txt", "*.text", "*.md", "*.rst"],
    },
    FileType {
        name: "jsonl",
        globs: &["*.jsonl", "*.jsonl.gz", "*.jsonl.zst", "*.ndjson"],
    },
    FileType {
        name: "parquet",
        globs: &["*.parquet"],
    },
];

fn parse_file_type(s: &str) -> Result<&'static FileType, String> {
    FILE_TYPES
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let known: Vec<&str> = FILE_TYPES.iter().map(|t| t.name).collect();
            format!("unknown type '{s}' (known: {})", known.join(", "))
        })
}

/// Which files found while walking a directory are read: `--glob`, `--exclude` and `--type`.
pub struct Selection {
    include: Option<globset::GlobSet>,
    exclude: globset::GlobSet,
}

impl Selection {
    pub fn new(globs: &[String], exclude: &[String], types: &[&FileType]) -> Result<Self> {
        let build = |patterns: &mut dyn Iterator<Item = &str>| -> Result<Option<globset::GlobSet>> {
            let mut builder = globset::GlobSetBuilder::new();
            let mut any = false;
            for p in patterns {
                builder.add(globset::Glob::new(p).with_context(|| format!("the glob '{p}'"))?);
                any = true;
            }
            Ok(if any { Some(builder.build()?) } else { None })
        };
        let include = build(
            &mut globs
                .iter()
                .filter(|g| !g.starts_with('!'))
                .map(String::as_str)
                .chain(types.iter().flat_map(|t| t.globs.iter().copied())),
        )?;
        let exclude = build(
            &mut globs
                .iter()
                .filter_map(|g| g.strip_prefix('!'))
                .chain(exclude.iter().map(String::as_str)),
        )?
        .unwrap_or_else(globset::GlobSet::empty);
        Ok(Selection { include, exclude })
    }

    /// Whether a file at `relative` (its path below the directory walked) is read.
    pub fn admits(&self, relative: &Path) -> bool {
        let name = relative.file_name().map(Path::new).unwrap_or(relative);
        let matches = |set: &globset::GlobSet| set.is_match(relative) || set.is_match(name);
        !matches(&self.exclude) && self.include.as_ref().is_none_or(matches)
    }
}

/// Refuses an output that is one of the inputs (the operand itself, or a file a directory operand yields:
/// writing it would replace a document), and notes one that a later run over an input directory would read
/// as a document. Paths are compared resolved (`..`, links).
fn check_output_place(
    output: &Path,
    operands: &[std::ffi::OsString],
    selection: &Selection,
    notices: &mut Vec<OperandError>,
) -> Result<()> {
    let resolved = neardup_io::resolved_output(output)?;
    for (op, below) in operands_holding(&resolved, operands) {
        let read_as_input = |how: &str| {
            anyhow::anyhow!(
                "{}: this output {how} {}: writing it would replace that document; write to another file",
                output.display(),
                path_label(Path::new(op))
            )
        };
        if below.as_os_str().is_empty() {
            return Err(read_as_input("is the input"));
        }
        if !neardup_io::is_hidden_below(&below) && selection.admits(&below) {
            if resolved.is_file() {
                return Err(read_as_input("is a file read from the input directory"));
            }
            notices.push(OperandError {
                label: path_label(output),
                message: format!(
                    "this output is inside the input directory {}, so a later run over it will read it as a document",
                    path_label(Path::new(op))
                ),
            });
        }
    }
    Ok(())
}

/// The operands that are `resolved` (a path with links and `..` resolved) or a directory holding it, each
/// with the rest of `resolved` below it (empty for the operand itself); `-` and missing operands hold
/// nothing.
pub fn operands_holding<'a>(
    resolved: &'a Path,
    operands: &'a [std::ffi::OsString],
) -> impl Iterator<Item = (&'a std::ffi::OsString, PathBuf)> + 'a {
    operands.iter().filter_map(move |op| {
        let canonical = Path::new(op).canonicalize().ok()?;
        Some((op, resolved.strip_prefix(&canonical).ok()?.to_path_buf()))
    })
}

/// The paths listed in a file (`--files-from`): one per line, or NUL-separated when the list holds a NUL.
pub fn read_file_list(list: &str) -> Result<Vec<String>> {
    let mut bytes = Vec::new();
    if list == "-" {
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("--files-from -: cannot read stdin")?;
    } else {
        bytes = std::fs::read(list).map_err(|e| anyhow::anyhow!("{list}: {}", io_message(&e)))?;
    }
    let text = String::from_utf8_lossy(&bytes);
    let separator = if text.contains('\0') { '\0' } else { '\n' };
    Ok(text
        .split(separator)
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

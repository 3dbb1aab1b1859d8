//! A dataset: resolved input files, read as a stream of records (first pass) and split by decision into
//! kept and removed outputs (second pass).

use crate::error::{InputError, IoError, io_message};
use crate::format::{Format, sniff_file};
use crate::ids::IdSet;
use crate::jsonl::{self, JsonFields, Lines};
use crate::output::{ParquetOutput, TextOutput};
use crate::pq::{self, RowReader};
use crate::record::{
    DatasetOptions, Decision, Origin, Position, ReadSummary, Record, SplitSummary,
};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::file::metadata::PageIndexPolicy;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Rows per Parquet batch on the second pass, which reads every column: documents can be large, so keep
/// batches small (the writer gathers them into row groups).
const SPLIT_BATCH_ROWS: usize = 1024;

/// A batch of the first pass ends at this much text (or at its number of records, whichever comes first):
/// large documents make small batches, so the three batches in flight stay small.
pub const BATCH_TEXT_BYTES: u64 = 64 << 20;

/// What the reading thread of [`Dataset::for_each_batch`] hands over.
enum ReadEvent {
    /// A batch, and the input bytes consumed once it was read.
    Batch(Vec<Record>, u64),
    /// The input bytes consumed at the end of a file.
    Progress(u64),
}

/// The caller of [`Dataset::for_each_batch`] stopped the read.
#[derive(Debug)]
struct Stopped;

/// One input file of a dataset.
#[derive(Debug)]
pub struct InputFile {
    label: Arc<str>,
    path: PathBuf,
    format: Format,
    bytes: u64,
    /// Keeps standard input's spool file alive as long as the dataset.
    _spool: Option<tempfile::TempPath>,
}

impl InputFile {
    /// The file as given or found under a directory operand, or `-` for standard input.
    pub fn label(&self) -> &str {
        &self.label
    }
    /// How it is read.
    pub fn format(&self) -> Format {
        self.format
    }
    /// Its size on disk (standard input: the bytes spooled).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Input files of records, resolved from command-line operands and readable any number of times: once for
/// sketches ([`Dataset::for_each_batch`]), again to write the split ([`Dataset::write_split`]).
#[derive(Debug)]
pub struct Dataset {
    inputs: Vec<InputFile>,
    /// The directories named as operands, resolved, each with its operand: an output inside one is read
    /// as a shard by the next run over it.
    directories: Vec<(Arc<str>, PathBuf)>,
    /// What the user should know about the operands, each in a sentence: the files of a directory
    /// operand left out because they are not shards.
    notices: Vec<String>,
    options: DatasetOptions,
    /// Records per input on the last complete read of it: the second pass must see the same.
    counts: Mutex<Vec<Option<u64>>>,
}

/// Where an output will be: its directory resolved (links, `..`), which must exist, and its name in it
/// (the file itself resolved too where it is already a link); an existing directory is refused.
pub fn resolved_output(path: &Path) -> Result<PathBuf, IoError> {
    let name = path.file_name().ok_or_else(|| IoError::Unsupported {
        path: path.display().to_string(),
        message: "an output must name a file".to_owned(),
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).map_err(|source| IoError::Io {
        path: format!("{}: its directory {}", path.display(), dir.display()),
        source,
    })?;
    let resolved = dir.join(name);
    // An existing output may itself be a link to an input.
    let resolved = std::fs::canonicalize(&resolved).unwrap_or(resolved);
    if resolved.is_dir() {
        return Err(IoError::Unsupported {
            path: path.display().to_string(),
            message: "is a directory: an output must name a file".to_owned(),
        });
    }
    Ok(resolved)
}

/// Copies `reader` (standard input) to a temporary file, deleted when the returned path is dropped, so that
/// it can be read twice.
pub fn spool(reader: &mut dyn Read) -> std::io::Result<tempfile::TempPath> {
    let mut file = tempfile::NamedTempFile::new()?;
    std::io::copy(reader, file.as_file_mut())?;
    file.as_file().sync_data()?;
    Ok(file.into_temp_path())
}

/// Whether a file is a shard: its name ends in a dataset extension (`.jsonl`, `.json`, `.ndjson`, each
/// optionally `.gz` or `.zst`, or `.parquet`).
pub fn is_shard(path: &Path) -> bool {
    Format::from_path(path).is_some()
}

/// Whether walking `dir` (as [`Dataset::open`] walks it) finds shards and no other file but markers whose
/// names start with `_` (Spark's and Hadoop's `_SUCCESS`, which [`Dataset::open`] leaves out silently): such
/// a directory is a dataset, nothing else. The walk stops at the first other file, so a directory of
/// documents costs about one entry.
pub fn holds_only_shards(dir: &Path) -> bool {
    let mut shards = 0usize;
    for found in dataset_files(dir) {
        match found {
            Ok(Found::Shard(_)) => shards += 1,
            _ => return false,
        }
    }
    shards > 0
}

/// The files a deduplication run writes, for [`Dataset::check_outputs`]: the split (kept and removed
/// records, in the inputs' format) and the cluster table (in any format the caller writes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Outputs<'a> {
    /// The kept records.
    pub kept: Option<&'a Path>,
    /// The removed records.
    pub removed: Option<&'a Path>,
    /// The cluster table.
    pub table: Option<&'a Path>,
}

/// What [`Dataset::check_outputs`] found: the split's format, and what to tell the user.
#[derive(Clone, Debug, Default)]
pub struct CheckedOutputs {
    /// The format of the split's outputs (`None` when neither is written).
    pub split_format: Option<Format>,
    /// Outputs that a later run over an input directory would read as shards, each in a sentence.
    pub notices: Vec<String>,
    /// Outputs that are not shards but lie inside an input directory (each as given, with the directory as
    /// given): a later run reading the directory as a dataset leaves them out, but the directory no longer
    /// [holds only shards](holds_only_shards).
    pub beside_shards: Vec<(PathBuf, String)>,
}

/// Whether an entry met while walking a directory is hidden (its name starts with '.'): walks skip it and
/// everything below it.
pub fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".")
}

/// Whether a path below a directory passes through a hidden entry, which walking the directory skips.
pub fn is_hidden_below(relative: &Path) -> bool {
    relative.components().any(|c| is_hidden(c.as_os_str()))
}

/// A file met walking a directory operand.
enum Found {
    /// A shard, read as records.
    Shard(walkdir::DirEntry),
    /// Another file (not a `_` marker), left out.
    Other(walkdir::DirEntry),
}

/// The files under `dir` in the walk's order, each a shard or another file: hidden entries (names starting
/// with '.') and everything below them are skipped, and so are markers, directories and entries that are
/// neither files nor links to files.
fn dataset_files(dir: &Path) -> impl Iterator<Item = walkdir::Result<Found>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden(e.file_name()))
        .filter_map(|entry| match entry {
            Err(e) => Some(Err(e)),
            Ok(e)
                if !(e.file_type().is_file()
                    || (e.file_type().is_symlink() && e.path().is_file())) =>
            {
                None
            }
            Ok(e) if is_shard(e.path()) => Some(Ok(Found::Shard(e))),
            Ok(e) if is_marker(e.file_name()) => None,
            Ok(e) => Some(Ok(Found::Other(e))),
        })
}

/// What walking a directory operand found: its shards, and how many other files it leaves out with the
/// first of them, which the user is told about.
struct Walked {
    shards: Vec<PathBuf>,
    others: usize,
    first_other: Option<PathBuf>,
}

/// The files a directory operand's walk reads, in a phrase.
const SHARD_NAMES: &str = ".jsonl, .json, .ndjson (optionally .gz or .zst) or .parquet files";

/// The shards under `dir` ([`dataset_files`]), sorted by path bytes, and the other files.
fn walk(dir: &Path, errors: &mut Vec<InputError>, label: &str) -> Walked {
    let by_bytes = |a: &Path, b: &Path| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    };
    let mut walked = Walked {
        shards: Vec::new(),
        others: 0,
        first_other: None,
    };
    for found in dataset_files(dir) {
        match found {
            Ok(Found::Shard(e)) => walked.shards.push(e.into_path()),
            Ok(Found::Other(e)) => {
                walked.others += 1;
                if walked
                    .first_other
                    .as_deref()
                    .is_none_or(|first| by_bytes(e.path(), first).is_lt())
                {
                    walked.first_other = Some(e.into_path());
                }
            }
            Err(e) => errors.push(InputError {
                file: e
                    .path()
                    .map_or_else(|| label.to_owned(), |p| p.display().to_string()),
                position: None,
                message: e.io_error().map_or_else(|| e.to_string(), io_message),
            }),
        }
    }
    walked.shards.sort_by(|a, b| by_bytes(a, b));
    walked
}

/// Whether a file's name marks a directory's state rather than holding data (Spark's and Hadoop's
/// `_SUCCESS`, Databricks' `_committed_…`): it starts with `_`.
fn is_marker(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b"_")
}

/// Receives a JSON Lines record, its raw line and the bytes consumed so far.
type EmitLine<'a, E> = dyn FnMut(Record, &[u8], u64) -> Result<(), E> + 'a;

/// How a file ended: its records, and the error that ended it early.
struct FileEnd {
    records: u64,
    error: Option<InputError>,
}

/// A Parquet file's schema (once, on opening) or one of its batches with its records.
enum ParquetEvent<'a> {
    Schema(&'a SchemaRef),
    Batch(&'a RecordBatch, Vec<Record>),
}

/// One read of the dataset: ordinals, duplicate ids.
struct Pass<'d> {
    dataset: &'d Dataset,
    ids: IdSet,
    next_ordinal: u64,
    duplicate_ids: u64,
    ids_from_field: u64,
    not_objects: u64,
}

impl<'d> Pass<'d> {
    fn new(dataset: &'d Dataset) -> Pass<'d> {
        Pass {
            dataset,
            ids: IdSet::default(),
            next_ordinal: 0,
            duplicate_ids: 0,
            ids_from_field: 0,
            not_objects: 0,
        }
    }

    fn position(&self, input: usize, number: u64) -> Position {
        match self.dataset.inputs[input].format {
            Format::Parquet => Position::Row(number),
            Format::Jsonl(_) => Position::Line(number),
        }
    }

    /// A record from its fields: a missing id (`Ok(None)`: no such field or column, or a null) falls back
    /// to `FILE:POSITION`, as does one that cannot be read (the record is then not a document); a repeated
    /// id makes it a non-document naming both places.
    fn record(
        &mut self,
        input: usize,
        position: Position,
        id: Result<Option<String>, String>,
        text: Result<String, String>,
        media: Option<String>,
    ) -> Record {
        let origin = Origin {
            file: self.dataset.inputs[input].label.clone(),
            position,
        };
        if matches!((&id, &text), (Ok(Some(_)), Ok(_))) {
            self.ids_from_field += 1;
        }
        let id = id.map(|id| id.unwrap_or_else(|| origin.to_string()));
        let (id, text) = match (id, text) {
            (Ok(id), Ok(text)) => {
                match self.ids.first_seen(&id, (input as u32, position.number())) {
                    Some((first_input, first_number)) => {
                        self.duplicate_ids += 1;
                        let first = Origin {
                            file: self.dataset.inputs[first_input as usize].label.clone(),
                            position: self.position(first_input as usize, first_number),
                        };
                        let message = format!("duplicate id '{id}' at {origin} (first at {first})");
                        (id, Err(message))
                    }
                    None => (id, Ok(text)),
                }
            }
            (Ok(id), Err(e)) => (id, Err(e)),
            (Err(e), Ok(_)) => (origin.to_string(), Err(e)),
            (Err(e), Err(f)) => (origin.to_string(), Err(format!("{e}; {f}"))),
        };
        let ordinal = self.next_ordinal;
        self.next_ordinal += 1;
        Record {
            ordinal,
            bytes: text.as_ref().map_or(0, |t| t.len() as u64),
            id,
            text,
            media,
            origin,
        }
    }

    /// A Parquet file that cannot be read from row `row` on: reported at that row.
    fn failed_at_row(&self, input: usize, row: u64, error: String) -> FileEnd {
        let message = format!("cannot read row {row} or later: {error}");
        self.failed(input, Some(Position::Row(row)), message, row)
    }

    fn failed(
        &self,
        input: usize,
        position: Option<Position>,
        message: String,
        records: u64,
    ) -> FileEnd {
        FileEnd {
            records,
            error: Some(InputError {
                file: self.dataset.inputs[input].label.to_string(),
                position,
                message,
            }),
        }
    }

    /// Reads a JSON Lines input, handing each record with its raw line and the bytes consumed so far to
    /// `emit`. A read error ends the file and is reported once.
    fn read_jsonl<E>(
        &mut self,
        input: usize,
        compression: crate::Compression,
        emit: &mut EmitLine<'_, E>,
    ) -> Result<FileEnd, E> {
        let dataset = self.dataset;
        let options = &dataset.options;
        let mut lines = match Lines::open(&self.dataset.inputs[input].path, compression) {
            Ok(l) => l,
            Err(e) => {
                return Ok(self.failed(input, None, format!("cannot open: {}", io_message(&e)), 0));
            }
        };
        let consumed = lines.consumed();
        let mut records = 0;
        while let Some(line) = lines.next_line() {
            let (line_no, raw) = match line {
                Ok(l) => l,
                Err((line_no, e)) => {
                    let message = format!("cannot read line {line_no}: {}", io_message(&e));
                    return Ok(self.failed(input, Some(Position::Line(line_no)), message, records));
                }
            };
            let position = Position::Line(line_no);
            let record = match jsonl::parse(raw, options) {
                JsonFields::Bad(message) => {
                    self.not_objects += 1;
                    self.record(input, position, Err(message), Ok(String::new()), None)
                }
                JsonFields::Object { id, text, media } => {
                    self.record(input, position, id, text, media)
                }
            };
            records += 1;
            emit(record, raw, consumed.get())?;
        }
        Ok(FileEnd {
            records,
            error: None,
        })
    }

    /// Reads a Parquet input in batches of `batch_rows`, only the needed columns if `project`. A read error
    /// ends the file and is reported once.
    fn read_parquet<E>(
        &mut self,
        input: usize,
        batch_rows: usize,
        project: bool,
        on: &mut dyn FnMut(ParquetEvent<'_>, u64) -> Result<(), E>,
    ) -> Result<FileEnd, E> {
        let dataset = self.dataset;
        let file = match File::open(&dataset.inputs[input].path).and_then(pq::StrictFile::new) {
            Ok(f) => f,
            Err(e) => {
                return Ok(self.failed(input, None, format!("cannot open: {}", io_message(&e)), 0));
            }
        };
        // Page indexes are not read: pages are found by walking their headers, which is what the walk
        // below checks.
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Skip);
        let metadata = match pq::guarded(|| ArrowReaderMetadata::load(&file, options)) {
            Ok(m) => m,
            Err(e) => {
                let message = format!("not a readable Parquet file: {e}");
                return Ok(self.failed(input, None, message, 0));
            }
        };
        let total_rows = metadata.metadata().file_metadata().num_rows().max(0) as u64;
        on(ParquetEvent::Schema(metadata.schema()), 0)?;
        let mask = if project {
            pq::projection(metadata.parquet_schema(), &dataset.options)
        } else {
            ProjectionMask::all()
        };
        let mut row = 0u64;
        // Row group by row group: its pages' headers are checked before any page is decoded (the decoder
        // allocates what a header claims), so the rows before a damaged group are still read.
        for group in 0..metadata.metadata().num_row_groups() {
            let reader =
                pq::check_row_group(&file, metadata.metadata(), group, &mask).and_then(|()| {
                    let handle = file.try_clone().map_err(|e| io_message(&e))?;
                    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
                        handle,
                        metadata.clone(),
                    )
                    .with_projection(mask.clone())
                    .with_row_groups(vec![group])
                    .with_batch_size(batch_rows.min(1 << 16));
                    pq::guarded(|| builder.build())
                });
            let mut reader = match reader {
                Ok(r) => r,
                Err(e) => return Ok(self.failed_at_row(input, row, e)),
            };
            // Each batch is decoded under a guard: the decoders panic on some damaged pages.
            loop {
                let batch = match pq::guarded(|| reader.next().transpose()) {
                    Ok(Some(batch)) => batch,
                    Ok(None) => break,
                    Err(e) => return Ok(self.failed_at_row(input, row, e)),
                };
                let rows = RowReader::new(&batch, &dataset.options);
                let mut records = Vec::with_capacity(batch.num_rows());
                for r in 0..batch.num_rows() {
                    let record = self.record(
                        input,
                        Position::Row(row),
                        rows.id(r),
                        rows.text(r, project),
                        rows.media(r),
                    );
                    records.push(record);
                    row += 1;
                }
                let consumed = (u128::from(dataset.inputs[input].bytes) * u128::from(row)
                    / u128::from(total_rows.max(row).max(1))) as u64;
                on(ParquetEvent::Batch(&batch, records), consumed)?;
            }
        }
        Ok(FileEnd {
            records: row,
            error: None,
        })
    }
}

impl Dataset {
    /// Resolves operands: files; directories (recursively, sorted by path bytes, hidden entries skipped)
    /// of shards whose names end in `.jsonl`, `.json` or `.ndjson` (each optionally `.gz` or `.zst`) or
    /// `.parquet`; `-` for standard input, spooled to a temporary file so that it can be read twice.
    /// Problems with an operand (missing, unreadable, a directory with no shards, `-` twice) come back as
    /// errors naming it, and the rest is still usable.
    pub fn open(operands: &[String], options: DatasetOptions) -> (Dataset, Vec<InputError>) {
        Dataset::open_with_stdin(operands, options, &mut std::io::stdin().lock())
    }

    /// [`Dataset::open`], with `stdin` read for the operand `-`.
    pub fn open_with_stdin(
        operands: &[String],
        options: DatasetOptions,
        stdin: &mut dyn Read,
    ) -> (Dataset, Vec<InputError>) {
        let mut inputs = Vec::new();
        let mut directories = Vec::new();
        let mut errors = Vec::new();
        let mut notices = Vec::new();
        let mut stdin_seen = false;
        let error = |file: &str, message: String| InputError {
            file: file.to_owned(),
            position: None,
            message,
        };
        for op in operands {
            if op == "-" {
                if std::mem::replace(&mut stdin_seen, true) {
                    errors.push(error(op, "standard input given twice".to_owned()));
                    continue;
                }
                let spooled = spool(stdin).and_then(|temp| {
                    let format = match options.format {
                        Some(f) => f,
                        None => sniff_file(&temp)?,
                    };
                    let bytes = std::fs::metadata(&temp)?.len();
                    Ok((temp, format, bytes))
                });
                match spooled {
                    Ok((temp, format, bytes)) => inputs.push(InputFile {
                        label: Arc::from("-"),
                        path: temp.to_path_buf(),
                        format,
                        bytes,
                        _spool: Some(temp),
                    }),
                    Err(e) => errors.push(error(
                        op,
                        format!("cannot read standard input: {}", io_message(&e)),
                    )),
                }
                continue;
            }
            let path = Path::new(op);
            let files = match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => {
                    if let Ok(resolved) = std::fs::canonicalize(path) {
                        directories.push((Arc::from(op.as_str()), resolved));
                    }
                    let walked = walk(path, &mut errors, op);
                    if walked.shards.is_empty() {
                        errors.push(error(op, format!("a directory with no {SHARD_NAMES}")));
                    } else if let Some(first) = &walked.first_other {
                        let count = walked.others;
                        notices.push(format!(
                            "{op}: {} in this directory {} not read (the first: {}): records are read \
                             only from {SHARD_NAMES} (name a file to read it whatever its name)",
                            if count == 1 { "1 file".to_owned() } else { format!("{count} files") },
                            if count == 1 { "is" } else { "are" },
                            first.display()
                        ));
                    }
                    walked.shards
                }
                Ok(_) => vec![path.to_path_buf()],
                Err(e) => {
                    errors.push(error(op, io_message(&e)));
                    continue;
                }
            };
            for file in files {
                let label = file.display().to_string();
                let format = match options.format.or_else(|| Format::from_path(&file)) {
                    Some(f) => Ok(f),
                    None => sniff_file(&file),
                };
                let described = format.and_then(|f| Ok((f, std::fs::metadata(&file)?.len())));
                match described {
                    Ok((format, bytes)) => inputs.push(InputFile {
                        label: Arc::from(label.as_str()),
                        path: file,
                        format,
                        bytes,
                        _spool: None,
                    }),
                    Err(e) => errors.push(error(&label, io_message(&e))),
                }
            }
        }
        let counts = Mutex::new(vec![None; inputs.len()]);
        (
            Dataset {
                inputs,
                directories,
                notices,
                options,
                counts,
            },
            errors,
        )
    }

    /// What opening found that the user should know, each in a sentence naming the operand: files in a
    /// directory that are not read because they are not shards (`notes.txt` beside `part-0.jsonl`), which
    /// would otherwise be left out silently. Neither errors nor counted as failures.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The input files, in reading order.
    pub fn inputs(&self) -> &[InputFile] {
        &self.inputs
    }

    /// How records are read.
    pub fn options(&self) -> &DatasetOptions {
        &self.options
    }

    /// On-disk bytes of all inputs, for a progress bar over [`Dataset::for_each_batch`]'s `progress`.
    pub fn total_bytes(&self) -> u64 {
        self.inputs.iter().map(|i| i.bytes).sum()
    }

    fn remember_count(&self, input: usize, records: u64) {
        if let Ok(mut counts) = self.counts.lock() {
            counts[input] = Some(records);
        }
    }

    fn check_count(&self, input: usize, records: u64) -> Result<(), IoError> {
        let first = self.counts.lock().ok().and_then(|c| c[input]);
        match first {
            Some(first) if first != records => Err(IoError::Changed {
                path: self.inputs[input].label.to_string(),
                first,
                second: records,
            }),
            _ => {
                self.remember_count(input, records);
                Ok(())
            }
        }
    }

    /// Streams every record, in input order, in batches of up to `batch_rows` (fewer once a batch holds
    /// [`BATCH_TEXT_BYTES`] of text); `progress(bytes)` is called with the input bytes consumed so far
    /// (compressed bytes for .gz/.zst, file bytes for Parquet), at most [`Dataset::total_bytes`]. The files
    /// are read on a thread of their own, up to two batches ahead of `on_batch`, which (like `progress`)
    /// runs on the calling thread.
    ///
    /// A record that is not a document (not a JSON object, a missing or non-string text, a missing id, an
    /// id seen before) is still yielded, with `text: Err(message)`, so that the caller reports and counts
    /// it; its id falls back to `FILE:LINE` / `FILE:ROW` when it has none. A repeated id's message names
    /// both places: `duplicate id 'a' at g.jsonl:3 (first at f.jsonl:1)`.
    ///
    /// Reading never fails as a whole: a file that cannot be opened or read to its end (an I/O error,
    /// corrupt gzip, zstd or Parquet) is reported once in [`ReadSummary::errors`], naming the file and the
    /// line or row, and the next file is read. The only error returned is `on_batch`'s, which stops the
    /// read.
    ///
    /// Memory: besides the batch, duplicate-id detection keeps a 128-bit hash of each document's id with
    /// its first location, about 37 bytes per document (see the `ids` module: a hash match is taken as the
    /// same id; two different ids collide with probability about n²/2¹²⁹).
    pub fn for_each_batch<E>(
        &self,
        batch_rows: usize,
        progress: &mut dyn FnMut(u64),
        on_batch: &mut dyn FnMut(Vec<Record>) -> Result<(), E>,
    ) -> Result<ReadSummary, E> {
        // The next batch is read (JSON parsed, Parquet decoded: one thread's work) while the caller works
        // on this one, typically sketching it on every core. Three batches at most are held: the caller's,
        // one waiting in the channel, and the one being read.
        let (to_caller, events) = std::sync::mpsc::sync_channel::<ReadEvent>(1);
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                self.read_batches(batch_rows, &mut |event| to_caller.send(event).is_ok())
            });
            let mut failed = None;
            for event in &events {
                match event {
                    ReadEvent::Batch(batch, bytes) => {
                        if let Err(e) = on_batch(batch) {
                            failed = Some(e);
                            break;
                        }
                        progress(bytes);
                    }
                    ReadEvent::Progress(bytes) => progress(bytes),
                }
            }
            // Dropping the receiver stops a reader still going (its next send fails).
            drop(events);
            let summary = reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match failed {
                Some(e) => Err(e),
                None => Ok(summary),
            }
        })
    }

    /// The reading of [`for_each_batch`](Self::for_each_batch), on its own thread: each batch and each
    /// progress report goes to `emit`, which returns `false` when nobody is listening any more (reading
    /// then stops).
    fn read_batches(
        &self,
        batch_rows: usize,
        emit: &mut dyn FnMut(ReadEvent) -> bool,
    ) -> ReadSummary {
        let batch_rows = batch_rows.max(1);
        let mut pass = Pass::new(self);
        let mut summary = ReadSummary::default();
        let mut batch: Vec<Record> = Vec::with_capacity(batch_rows.min(1 << 16));
        let mut batch_bytes = 0u64;
        let mut done = 0u64;
        for (input, file) in self.inputs.iter().enumerate() {
            let mut push = |record: Record, consumed: u64| -> Result<(), Stopped> {
                summary.records += 1;
                if record.text.is_ok() {
                    summary.documents += 1;
                } else {
                    summary.not_documents += 1;
                }
                batch_bytes += record.bytes;
                batch.push(record);
                if batch.len() >= batch_rows || batch_bytes >= BATCH_TEXT_BYTES {
                    batch_bytes = 0;
                    let full =
                        std::mem::replace(&mut batch, Vec::with_capacity(batch_rows.min(1 << 16)));
                    if !emit(ReadEvent::Batch(full, done + consumed)) {
                        return Err(Stopped);
                    }
                }
                Ok(())
            };
            let end = match file.format {
                Format::Jsonl(compression) => {
                    pass.read_jsonl(input, compression, &mut |r, _, consumed| push(r, consumed))
                }
                Format::Parquet => {
                    pass.read_parquet(input, batch_rows, true, &mut |event, consumed| {
                        if let ParquetEvent::Batch(_, records) = event {
                            for r in records {
                                push(r, consumed)?;
                            }
                        }
                        Ok(())
                    })
                }
            };
            let Ok(end) = end else {
                return summary; // the caller stopped listening
            };
            self.remember_count(input, end.records);
            summary.files += 1;
            summary.errors.extend(end.error);
            done += file.bytes;
            if !emit(ReadEvent::Progress(done)) {
                return summary;
            }
        }
        if !batch.is_empty() && !emit(ReadEvent::Batch(batch, done)) {
            return summary;
        }
        summary.duplicate_ids = pass.duplicate_ids;
        summary.ids_from_field = pass.ids_from_field;
        summary.not_objects = pass.not_objects;
        summary.bytes = done;
        summary
    }

    /// Checks the files a run will write, before any work: each name of the split tells its format, which
    /// is the inputs' (JSONL to JSONL, Parquet to Parquet); no two outputs are one file; none is one of the
    /// inputs (an output replaces its file once written, and the input's records would be gone: for the
    /// split, the removed ones; for the table, all); and each one's directory exists. Returns the split's
    /// format, and a notice for each output that a later run over one of the input directories would read
    /// as a shard. Call it before the first pass, so that a run is not spent on outputs that cannot be
    /// written; `write_split` checks again.
    pub fn check_outputs(&self, outputs: Outputs<'_>) -> Result<CheckedOutputs, IoError> {
        let refuse = |path: &Path, message: String| IoError::Unsupported {
            path: path.display().to_string(),
            message,
        };
        let mut checked = CheckedOutputs::default();
        let mut resolved = Vec::new();
        for path in [outputs.kept, outputs.removed].into_iter().flatten() {
            let format = Format::from_path(path).ok_or_else(|| {
                refuse(
                    path,
                    "cannot tell the output format from the name: use .jsonl, .json or .ndjson \
                     (optionally .gz or .zst), or .parquet"
                        .to_owned(),
                )
            })?;
            if let Some(input) = self
                .inputs
                .iter()
                .find(|i| i.format.family() != format.family())
            {
                return Err(refuse(
                    path,
                    format!(
                        "{} is {} and this output is {}: the split writes JSONL inputs to JSONL \
                         (.jsonl/.json/.ndjson, optionally .gz/.zst) and Parquet inputs to Parquet",
                        input.label,
                        input.format.family(),
                        format.family()
                    ),
                ));
            }
            resolved.push((path, resolved_output(path)?));
            checked.split_format = Some(format);
        }
        if let Some(table) = outputs.table {
            resolved.push((table, resolved_output(table)?));
        }
        if resolved.is_empty() {
            return Ok(checked);
        }
        // Each input resolved once, whatever the number of outputs.
        let inputs: Vec<(PathBuf, &InputFile)> = self
            .inputs
            .iter()
            .filter_map(|i| Some((std::fs::canonicalize(&i.path).ok()?, i)))
            .collect();
        for (n, (path, output)) in resolved.iter().enumerate() {
            if let Some((_, input)) = inputs.iter().find(|(p, _)| p == output) {
                return Err(refuse(
                    path,
                    format!(
                        "this output is the input {}: writing it would replace the input (and lose \
                         its records); write to another file",
                        input.label
                    ),
                ));
            }
            if let Some((other, _)) = resolved[..n].iter().find(|(_, o)| o == output) {
                return Err(refuse(
                    path,
                    format!("this output and {} are the same file", other.display()),
                ));
            }
            let read_later = self.directories.iter().find(|(_, dir)| {
                output
                    .strip_prefix(dir)
                    .is_ok_and(|below| !is_hidden_below(below))
            });
            match read_later {
                Some((dir, _)) if is_shard(output) => checked.notices.push(format!(
                    "{}: this output is inside the input directory {dir}, so a later run over {dir} \
                     will read it as input",
                    path.display()
                )),
                Some((dir, _)) => checked
                    .beside_shards
                    .push((path.to_path_buf(), dir.to_string())),
                None => {}
            }
        }
        Ok(checked)
    }

    /// The second pass: re-reads the inputs and writes, in input order with every original field, each
    /// document decided [`Decision::Keep`] to `kept` and each decided [`Decision::Remove`] to `removed`
    /// (either may be `None`). `decide` is asked only about documents (records that
    /// [`Dataset::for_each_batch`] yields with `text: Ok`); every other record is kept, so kept + removed
    /// is the whole input.
    ///
    /// The output format follows the extension: `.jsonl`, `.json` or `.ndjson` (optionally `.gz` or
    /// `.zst`), or `.parquet`. Supported: JSON Lines → JSON Lines (kept lines byte for byte; removed
    /// objects get `duplicate_of` and `score` added at their end) and Parquet → Parquet (the inputs'
    /// schema for kept rows; removed rows get a `duplicate_of: Utf8` and a `score: Float64` column). Other
    /// conversions are refused before anything is written, and so is a record that already has a field
    /// named `duplicate_of` or `score` when the removed rows are written.
    ///
    /// Outputs are written under a temporary name beside the destination and renamed into place once
    /// complete: on error, no output file is left behind (and the error names the path). An input that
    /// gives a different number of records than on the first pass fails the split with
    /// [`IoError::Changed`].
    pub fn write_split(
        &self,
        decide: &dyn Fn(u64) -> Decision,
        kept: Option<&Path>,
        removed: Option<&Path>,
    ) -> Result<SplitSummary, IoError> {
        let checked = self.check_outputs(Outputs {
            kept,
            removed,
            table: None,
        })?;
        match checked.split_format {
            Some(Format::Parquet) => self.split_parquet(decide, kept, removed),
            _ => self.split_jsonl(decide, kept, removed),
        }
    }

    fn split_jsonl(
        &self,
        decide: &dyn Fn(u64) -> Decision,
        kept: Option<&Path>,
        removed: Option<&Path>,
    ) -> Result<SplitSummary, IoError> {
        let open = |path: Option<&Path>| -> Result<Option<TextOutput>, IoError> {
            path.map(|p| match Format::from_path(p) {
                Some(Format::Jsonl(c)) => TextOutput::create(p, c),
                _ => unreachable!("checked by write_split"),
            })
            .transpose()
        };
        let mut kept_out = open(kept)?;
        let mut removed_out = open(removed)?;
        let mut summary = SplitSummary::default();
        let mut pass = Pass::new(self);
        for (input, file) in self.inputs.iter().enumerate() {
            let Format::Jsonl(compression) = file.format else {
                unreachable!("checked by write_split")
            };
            let end = pass.read_jsonl(input, compression, &mut |record, raw, _| {
                let decision = match record.text {
                    Ok(_) => decide(record.ordinal),
                    Err(_) => Decision::Keep,
                };
                match decision {
                    Decision::Keep => {
                        summary.kept += 1;
                        if let Some(out) = kept_out.as_mut() {
                            out.write_all(raw)?;
                            if !raw.ends_with(b"\n") {
                                out.write_all(b"\n")?;
                            }
                        }
                    }
                    Decision::Remove {
                        duplicate_of,
                        score,
                    } => {
                        summary.removed += 1;
                        if let Some(out) = removed_out.as_mut() {
                            let line =
                                jsonl::removed_line(raw, &duplicate_of, score, &record.origin)?;
                            out.write_all(&line)?;
                        }
                    }
                }
                Ok(())
            })?;
            self.check_count(input, end.records)?;
            summary.errors.extend(end.error);
        }
        for out in [kept_out, removed_out].into_iter().flatten() {
            out.commit()?;
        }
        Ok(summary)
    }

    fn split_parquet(
        &self,
        decide: &dyn Fn(u64) -> Decision,
        kept: Option<&Path>,
        removed: Option<&Path>,
    ) -> Result<SplitSummary, IoError> {
        let mut kept_out: Option<ParquetOutput> = None;
        let mut removed_out: Option<ParquetOutput> = None;
        let mut schema: Option<(SchemaRef, Arc<str>)> = None;
        let mut summary = SplitSummary::default();
        let mut pass = Pass::new(self);
        for (input, file) in self.inputs.iter().enumerate() {
            let end = pass.read_parquet(input, SPLIT_BATCH_ROWS, false, &mut |event, _| match event {
                ParquetEvent::Schema(s) => {
                    match &schema {
                        None => {
                            if let Some(path) = kept {
                                kept_out = Some(ParquetOutput::create(path, s.clone())?);
                            }
                            if let Some(path) = removed {
                                let with_fields = removed_schema(s, &file.label)?;
                                removed_out = Some(ParquetOutput::create(path, with_fields)?);
                            }
                            schema = Some((s.clone(), file.label.clone()));
                        }
                        Some((first, first_label)) if first.fields() != s.fields() => {
                            return Err(IoError::Unsupported {
                                path: file.label.to_string(),
                                message: format!(
                                    "its columns differ from those of {first_label}: a Parquet split \
                                     writes inputs of one schema"
                                ),
                            });
                        }
                        Some(_) => {}
                    }
                    Ok(())
                }
                ParquetEvent::Batch(batch, records) => {
                    let mut keep = Vec::with_capacity(records.len());
                    let mut remove = Vec::with_capacity(records.len());
                    let mut duplicate_of = Vec::new();
                    let mut scores = Vec::new();
                    for record in &records {
                        let decision = match record.text {
                            Ok(_) => decide(record.ordinal),
                            Err(_) => Decision::Keep,
                        };
                        match decision {
                            Decision::Keep => {
                                keep.push(true);
                                remove.push(false);
                            }
                            Decision::Remove {
                                duplicate_of: d,
                                score,
                            } => {
                                keep.push(false);
                                remove.push(true);
                                duplicate_of.push(d);
                                scores.push(score);
                            }
                        }
                    }
                    summary.removed += duplicate_of.len() as u64;
                    summary.kept += (records.len() - duplicate_of.len()) as u64;
                    if let Some(out) = kept_out.as_mut() {
                        let rows = filter(batch, keep, &file.label)?;
                        out.write(rows.columns().to_vec())?;
                    }
                    if let Some(out) = removed_out.as_mut() {
                        let rows = filter(batch, remove, &file.label)?;
                        let mut columns = rows.columns().to_vec();
                        columns.push(Arc::new(StringArray::from(duplicate_of)));
                        columns.push(Arc::new(Float64Array::from(scores)));
                        out.write(columns)?;
                    }
                    Ok(())
                }
            })?;
            self.check_count(input, end.records)?;
            summary.errors.extend(end.error);
        }
        if schema.is_none() && (kept.is_some() || removed.is_some()) {
            let path = kept.or(removed).expect("one output").display().to_string();
            return Err(IoError::Unsupported {
                path,
                message: "no readable Parquet input to take the schema from".to_owned(),
            });
        }
        for out in [kept_out, removed_out].into_iter().flatten() {
            out.commit()?;
        }
        Ok(summary)
    }
}

/// The rows of `batch` where `mask` is true.
fn filter(batch: &RecordBatch, mask: Vec<bool>, label: &str) -> Result<RecordBatch, IoError> {
    arrow_select::filter::filter_record_batch(batch, &BooleanArray::from(mask))
        .map_err(|e| IoError::data(label, e))
}

/// The removed rows' schema: the input's, plus `duplicate_of: Utf8` and `score: Float64`; refuses an input
/// that already has either column.
fn removed_schema(schema: &SchemaRef, label: &str) -> Result<SchemaRef, IoError> {
    if let Some(field) = jsonl::ADDED_FIELDS
        .iter()
        .find(|f| schema.column_with_name(f).is_some())
    {
        return Err(IoError::FieldClash {
            origin: label.to_owned(),
            field: (*field).to_owned(),
        });
    }
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new("duplicate_of", DataType::Utf8, false)));
    fields.push(Arc::new(Field::new("score", DataType::Float64, false)));
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

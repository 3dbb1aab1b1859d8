//! `neardup index`: a translation of the library's [`neardup::index::Index`]: a persistent index that answers
//! "what is within k bits of this?" (SimHash fingerprints in permuted tables) or "what has an estimated
//! Jaccard similarity of at least t with this?" (MinHash signatures in LSH bands).

use crate::inputs::{self, DocArgs, MethodArgs, Tally};
use crate::output::{Lines, OutputGuard};
use crate::plan::parse_count;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use neardup::dedup::{Options, Score, Verification};
use neardup::index::{Backend, Index, IndexSettings, Kind, Radius, StoreKind};
use neardup::{Method, Preset, Sketch};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
An index is a directory. By default (--store segments) it holds immutable segment files that are
mapped, not loaded (opening takes milliseconds at any size; queries read the tables through the
page cache), a write-ahead log of the changes since, and a MANIFEST naming them. The writer merges
the log into a new segment by itself when the changes reach an eighth of the index (or at once,
with `index merge`). --store redb keeps one index.redb file that is loaded into memory at open.

Every change is committed durably before the command reports it: an added fingerprint that was
acknowledged survives kill -9 or a power cut at any later moment. Ids are your strings (paths,
URLs, DOIs); two ids with the same fingerprint are two entries. One process writes at a time;
with segments, `query` and `stats` read beside a running writer and see what it has committed.
`index verify` reads every file against its checksums.

An index holds one scheme with fixed parameters: SimHash fingerprints (the default) in permuted
tables for distances up to k, or, with --scheme minhash, MinHash signatures in LSH bands chosen for
a Jaccard --threshold (or a --preset). Commands that read documents sketch them with the index's
scheme; sketches of another scheme or other parameters are refused.

In Redis: give a URL wherever a directory goes, redis://[USER:PASSWORD@]HOST:PORT/NAME for one
server or redis+cluster://HOST:PORT,HOST:PORT/NAME for a cluster (any of its nodes). The index
(entries and tables, spread over the cluster's slots) lives in Redis, so any number of processes
and machines write and query it at once, each query reading it as it is (two round trips). Add
?wait=N to acknowledge a batch only once N replicas confirm it (it then survives the failover of a
primary). A password missing from the URL is read from NEARDUP_REDIS_PASSWORD (and a user from
NEARDUP_REDIS_USERNAME); messages never show it.

'-' means standard input: for add, one document; for add-fingerprints, lines of id<TAB>sketch; for
query, lines of sketches (or the sketch<TAB>path lines of `neardup hash`); for remove, one id per
line. A writer whose output is closed early (a closed pipe) still commits everything it read, then
exits with status 2 and says so.

Examples:
    neardup index create idx -k 3 --n 1e7
    neardup index create mh-idx --scheme minhash --threshold 0.8
    neardup index add idx docs/
    neardup hash --jsonl corpus.jsonl | neardup index add-fingerprints idx -
    neardup index query idx new-page.html crawl.warc.gz simhash-doc-v1:qikqezyce3ajc
    neardup hash today/ | neardup index query idx -
    neardup index add mh-idx corpus/ && neardup index query mh-idx draft.txt
    neardup index remove idx docs/old.html
    neardup index stats idx
    neardup index merge idx && neardup index verify idx
    neardup index create redis+cluster://10.0.0.5:7000,10.0.0.6:7000/web --n 1e8";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct IndexArgs {
    #[command(subcommand)]
    command: IndexCommand,
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Create an empty index in a directory or in Redis.
    Create(CreateArgs),
    /// Fingerprint documents (files, directories, '-') and add them, ids being their paths.
    Add {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// Files, directories (recursively) or '-'.
        #[arg(required_unless_present = "files_from")]
        paths: Vec<std::ffi::OsString>,
        #[command(flatten)]
        doc: DocArgs,
    },
    /// Add fingerprints or signatures read from TSV (id<TAB>sketch, or the sketch<TAB>path lines of
    /// `neardup hash`) or JSON lines (`id` or `path`, and `fingerprint`).
    AddFingerprints {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// Input files, or '-' for stdin.
        #[arg(default_value = "-")]
        inputs: Vec<String>,
        /// Lines per transaction.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// After each committed batch, print "ok N" (N = lines committed so far) and flush.
        #[arg(long)]
        ack: bool,
    },
    /// Find the stored ids near documents, fingerprints or signatures (nothing is added): within k bits, or
    /// at an estimated Jaccard similarity of at least the threshold. Prints item<TAB>id<TAB>distance (or
    /// similarity), closest first.
    Query {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// Files, directories, WARC archives, fingerprint or signature strings, or '-' for sketches on stdin,
        /// one per line.
        #[arg(required = true)]
        items: Vec<String>,
        /// SimHash: distance (default: the index's k; at most the index's k).
        #[arg(short, long)]
        k: Option<u32>,
        /// MinHash: the similarity to reach (default: the index's threshold; 0 lists every LSH candidate).
        #[arg(long, value_parser = crate::plan::parse_similarity)]
        threshold: Option<f64>,
        /// Print JSON lines.
        #[arg(long, conflicts_with = "null")]
        json: bool,
        #[command(flatten)]
        lines: Lines,
        #[command(flatten)]
        doc: DocArgs,
    },
    /// Remove ids.
    Remove {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// The ids to remove, or '-' for ids on stdin, one per line.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Print every entry as id<TAB>sketch lines, sorted by id: what `index add-fingerprints` reads back
    /// (into another index, another store, a later version), and the same lines for the same entries
    /// whatever the store and the order they were added in.
    Export {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// Print JSON lines ({"id": …, "fingerprint": …}) instead: ids may then hold tabs and line breaks.
        #[arg(long)]
        json: bool,
        /// Stream the entries in the store's order instead of sorting them by id (sorting holds every
        /// entry in memory: about 100 bytes per fingerprint, 550 per signature of 128 values).
        #[arg(long)]
        store_order: bool,
    },
    /// Entries, settings and size of an index.
    Stats {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write every entry of an index in segments into one new segment now, emptying the write-ahead log
    /// (an index that `neardup serve` holds: POST /v1/indexes/NAME/merge to the service instead).
    Merge {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
    },
    /// Read every file of an index against its checksums: the manifest, every log record, every block of
    /// every segment. Exits with status 1 and names the file and what is wrong if one is damaged.
    Verify {
        /// The index: a directory, or a Redis URL (redis://HOST:PORT/NAME, redis+cluster://…).
        #[arg(value_name = "INDEX")]
        dir: PathBuf,
    },
}

#[derive(Args)]
struct CreateArgs {
    /// The index: a directory (created if missing, in a directory that exists), or a Redis URL (redis://HOST:PORT/NAME,
    /// redis+cluster://HOST:PORT,HOST:PORT/NAME).
    #[arg(value_name = "INDEX")]
    dir: PathBuf,
    /// SimHash: the largest distance queries may ask for (inclusive), 0 to 7.
    #[arg(short, long, default_value_t = 3)]
    k: u32,
    /// SimHash: the expected number of fingerprints: chooses the table design (see `neardup plan`).
    #[arg(short, long, default_value = "1e6", value_parser = parse_count)]
    n: f64,
    /// MinHash: the estimated Jaccard similarity matches must reach; chooses the LSH bands.
    #[arg(long, default_value_t = 0.8, value_parser = crate::plan::parse_similarity)]
    threshold: f64,
    /// MinHash: a published configuration (fineweb, refinedweb, gopher, the-stack).
    #[arg(long, value_parser = crate::plan::parse_preset)]
    preset: Option<&'static Preset>,
    /// MinHash: weights of false positives and false negatives when choosing the LSH bands (queries
    /// verify candidates by their estimated similarity, so recall is bought by default).
    #[arg(long, value_name = "FP,FN", default_value = "0.05,0.95", value_parser = crate::dedup::parse_weights)]
    weights: (f64, f64),
    /// Where the entries live: `segments` (mapped segment files and a write-ahead log: opens at once,
    /// readers beside a writer) or `redb` (one database file, loaded into memory at open).
    #[arg(long, default_value = "segments", value_parser = clap::value_parser!(Backend))]
    store: Backend,
    #[command(flatten)]
    method: MethodArgs,
}

fn open(dir: &Path) -> Result<Index> {
    opened(dir, Index::open(dir))
}

/// Opens an index for reading: beside a running writer, for an index in segments.
fn open_reader(dir: &Path) -> Result<Index> {
    opened(dir, Index::open_reader(dir))
}

fn opened(dir: &Path, index: Result<Index, neardup::Error>) -> Result<Index> {
    index.map_err(|e| match e {
        neardup::Error::NoIndex { .. } => anyhow::anyhow!(
            "{e}: create one with `neardup index create {}`",
            dir.display()
        ),
        other => other.into(),
    })
}

pub fn run(args: IndexArgs) -> Result<ExitCode> {
    match args.command {
        IndexCommand::Create(args) => create(&args),
        IndexCommand::Add { dir, paths, doc } => add(&dir, &paths, &doc),
        IndexCommand::AddFingerprints {
            dir,
            inputs,
            batch,
            ack,
        } => add_fingerprints(&dir, &inputs, batch, ack),
        IndexCommand::Query {
            dir,
            items,
            k,
            threshold,
            json,
            lines,
            doc,
        } => query(&dir, &items, k, threshold, json, lines, &doc),
        IndexCommand::Remove { dir, ids } => remove(&dir, &ids),
        IndexCommand::Export {
            dir,
            json,
            store_order,
        } => export(&dir, json, store_order),
        IndexCommand::Stats { dir, json } => stats(&dir, json),
        IndexCommand::Merge { dir } => merge(&dir),
        IndexCommand::Verify { dir } => verify(&dir),
    }
}

fn merge(dir: &Path) -> Result<ExitCode> {
    let mut index = open(dir)?;
    let started = std::time::Instant::now();
    index.merge()?;
    let (segments, log) = index.disk_bytes();
    say!(
        "merged {} entries into one segment of {segments} bytes in {:.2} s (log: {log} bytes)",
        index.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn verify(dir: &Path) -> Result<ExitCode> {
    let index = open_reader(dir)?;
    index.verify()?;
    let (segments, log) = index.disk_bytes();
    let checked = match index.store_kind() {
        StoreKind::Segments => format!("{segments} bytes of segments and {log} of log checked"),
        StoreKind::Redb => "checked by redb at open".to_owned(),
        StoreKind::Redis => "every entry read and decoded".to_owned(),
    };
    say!(
        "{} is whole ({} entries; {checked})",
        index.location(),
        index.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn create(args: &CreateArgs) -> Result<ExitCode> {
    let preset = args.preset;
    let method = args
        .method
        .method_with(preset.map(|p| (p.values, p.shingle)))?;
    if preset.is_some() && matches!(method, Method::SimHash(_)) {
        bail!("--preset configures MinHash: add --scheme minhash");
    }
    let settings = IndexSettings {
        k: args.k,
        expected: args.n,
        dedup: Options {
            // A preset brings its own threshold.
            threshold: preset.is_none().then_some(args.threshold),
            weights: Some(args.weights),
            verification: Verification::Estimate,
            ..Options::default()
        },
        preset,
        backend: args.store,
    };
    let index = Index::create(&args.dir, method, &settings)?;
    let layout = match index.kind() {
        Kind::Hamming(design) => format!("k = {}, {design}, {} tables", args.k, design.tables()),
        Kind::Lsh { banding, threshold } => format!("Jaccard ≥ {threshold}, {banding}"),
    };
    say!(
        "created {} ({method}, {layout}, in {})",
        index.location(),
        index.store_kind().name()
    );
    Ok(ExitCode::SUCCESS)
}

fn add(dir: &Path, paths: &[std::ffi::OsString], doc: &DocArgs) -> Result<ExitCode> {
    let mut index = open(dir)?;
    let method = index.method();
    doc.method.adopt(method, &dir.display().to_string())?;
    let doc = &DocArgs {
        skip_dir: Some(dir.to_path_buf()),
        ..doc.clone()
    };
    let mut added = 0usize;
    let mut tally = Tally::default();
    tally.failed += doc.fingerprint_batches(paths, |outcomes, progress| {
        let mut changes = Vec::with_capacity(outcomes.len());
        for o in outcomes {
            let change = o.result.and_then(|a| {
                index
                    .change(&o.label, &a.sketch)
                    .map_err(|e| inputs::Problem::failed(e.to_string()))
            });
            match change {
                Ok(change) => changes.push(change),
                Err(problem) => tally.record(progress, &o.label, &problem),
            }
        }
        added += index.apply(changes)?;
        Ok(())
    })?;
    say!(
        "added {added} documents to {} ({} entries), {}",
        dir.display(),
        index.len(),
        tally.describe()
    );
    Ok(tally.exit_status(doc.strict))
}

fn add_fingerprints(dir: &Path, inputs: &[String], batch: usize, ack: bool) -> Result<ExitCode> {
    let mut index = open(dir)?;
    let method = index.method();
    let mut out = OutputGuard::new(std::io::stdout().lock());
    let (mut committed, mut bad) = (0usize, 0usize);
    // One transaction per batch; with --ack, "ok N" only once the batch is durable. A closed output stops the
    // acknowledgements, not the writes: every line read is still committed.
    let mut commit = |index: &mut Index, changes: &mut Vec<_>| -> Result<()> {
        committed += index.apply(std::mem::take(changes))?;
        if ack {
            out.line(|w| {
                writeln!(w, "ok {committed}")?;
                w.flush()
            });
        }
        Ok(())
    };
    for input in inputs {
        let reader = inputs::open_lines(input).map_err(anyhow::Error::msg)?;
        let mut changes = Vec::with_capacity(batch);
        let mut read_error = None;
        // Lines as bytes: a line that is not UTF-8 is refused alone, and the lines after it are read.
        for (n, line) in reader.split(b'\n').enumerate() {
            let line = match line {
                Ok(line) => line,
                Err(e) => {
                    read_error = Some(anyhow::Error::new(e).context(format!("{input}:{}", n + 1)));
                    break;
                }
            };
            let line = match std::str::from_utf8(&line) {
                Ok(line) => line.trim_end_matches('\r'),
                Err(e) => {
                    bad += 1;
                    say!(
                        "{input}:{}: not UTF-8 (invalid byte at column {})",
                        n + 1,
                        e.valid_up_to() + 1
                    );
                    continue;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match parse_entry(line, method).and_then(|(id, sketch)| {
                index.change(&id, &sketch).map_err(|e| {
                    let shown: String = sketch.to_string().chars().take(48).collect();
                    format!("{shown}… is refused: {e}")
                })
            }) {
                Ok(change) => changes.push(change),
                Err(e) => {
                    bad += 1;
                    say!("{input}:{}: {}", n + 1, e);
                }
            }
            if changes.len() >= batch.max(1) {
                commit(&mut index, &mut changes)?;
            }
        }
        // What was read before a read error is committed before the error is reported.
        if !changes.is_empty() {
            commit(&mut index, &mut changes)?;
        }
        if let Some(e) = read_error {
            return Err(e);
        }
    }
    say!(
        "added {committed} sketches ({} entries), {bad} lines refused",
        index.len()
    );
    if let Some(e) = out.error() {
        say!(
            "error: acknowledgements could not be written ({e}); all {committed} sketches read were committed"
        );
        return Ok(ExitCode::from(2));
    }
    Ok(inputs::exit_status(bad))
}

fn query(
    dir: &Path,
    items: &[String],
    k: Option<u32>,
    threshold: Option<f64>,
    json: bool,
    lines: Lines,
    doc: &DocArgs,
) -> Result<ExitCode> {
    let index = open_reader(dir)?;
    let method = index.method();
    doc.method.adopt(method, &dir.display().to_string())?;
    let radius = Radius::asked(method, k, threshold)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut out = OutputGuard::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut tally = Tally::default();
    let mut answer = |item: &str, sketch: &Sketch| -> Result<()> {
        let matches = index.query(sketch, radius)?;
        out.line(|w| {
            if json {
                let list: Vec<_> = matches
                    .iter()
                    .map(|m| match m.score {
                        Score::Distance(d) => json!({"id": m.id, "distance": d}),
                        Score::Similarity(s) => json!({"id": m.id, "similarity": s}),
                    })
                    .collect();
                writeln!(
                    w,
                    "{}",
                    json!({"query": item, "fingerprint": sketch.to_string(), "matches": list})
                )
            } else {
                for m in &matches {
                    write!(w, "{}\t{}\t{}", lines.id(item), lines.id(&m.id), m.score)?;
                    lines.end(w)?;
                }
                Ok(())
            }
        });
        Ok(())
    };
    let hidden = indicatif::ProgressBar::hidden();
    let mut documents = Vec::new();
    for item in items {
        if item == "-" {
            for (n, line) in std::io::stdin().lock().lines().enumerate() {
                let line = line.with_context(|| format!("stdin:{}", n + 1))?;
                if line.trim().is_empty() {
                    continue;
                }
                match parse_query_line(&line) {
                    Ok((label, sketch)) => answer(&label, &sketch)?,
                    Err(e) => tally.record(
                        &hidden,
                        &format!("-:{}", n + 1),
                        &inputs::Problem::failed(e),
                    ),
                }
            }
        } else if !Path::new(item).exists() && Sketch::looks_like_sketch(item) {
            match item.parse::<Sketch>() {
                Ok(sketch) => answer(item, &sketch)?,
                Err(e) => tally.record(&hidden, item, &inputs::Problem::failed(e.to_string())),
            }
        } else {
            documents.push(std::ffi::OsString::from(item));
        }
    }
    if !documents.is_empty() {
        tally.failed += doc.fingerprint_batches(&documents, |outcomes, progress| {
            for o in outcomes {
                match o.result {
                    Ok(a) => answer(&o.label, &a.sketch)?,
                    Err(problem) => tally.record(progress, &o.label, &problem),
                }
            }
            Ok(())
        })?;
    }
    match out.finish() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
        Ok(()) => Ok(tally.exit_status(doc.strict)),
    }
}

/// A line of sketches on stdin for `query -`: a sketch alone, or `sketch<TAB>label` (the output of
/// `neardup hash`), or `label<TAB>sketch`.
fn parse_query_line(line: &str) -> Result<(String, Sketch), String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let (label, text) = match line.split_once('\t') {
        None => (line.trim().to_owned(), line.trim().to_owned()),
        Some((a, b)) if Sketch::looks_like_sketch(a) => (b.to_owned(), a.to_owned()),
        Some((a, b)) => (a.to_owned(), b.to_owned()),
    };
    let sketch = text.trim().parse::<Sketch>().map_err(|e| e.to_string())?;
    Ok((label, sketch))
}

fn remove(dir: &Path, ids: &[String]) -> Result<ExitCode> {
    let mut index = open(dir)?;
    let mut wanted: Vec<String> = Vec::new();
    for id in ids {
        if id == "-" {
            for line in std::io::stdin().lock().lines() {
                let line = line.context("stdin")?;
                let line = line.trim_end_matches('\r');
                if !line.is_empty() {
                    wanted.push(line.to_owned());
                }
            }
        } else {
            wanted.push(id.clone());
        }
    }
    let absent: Vec<&String> = wanted.iter().filter(|id| !index.contains(id)).collect();
    for id in &absent {
        say!("{id}: not in the index");
    }
    let removed = index.remove(wanted.iter().map(String::as_str))?;
    say!("removed {removed} ids ({} entries left)", index.len());
    Ok(inputs::exit_status(absent.len()))
}

/// Why an id cannot be a line of the TSV export, if it cannot.
fn tsv_refuses(id: &str) -> Option<String> {
    id.contains(['\t', '\n', '\r']).then(|| {
        format!(
            "the id {id:?} holds a tab or a line break, which TSV cannot carry: export with --json"
        )
    })
}

fn export(dir: &Path, json: bool, store_order: bool) -> Result<ExitCode> {
    let index = open_reader(dir)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = |id: &str, sketch: &Sketch| -> Result<()> {
        if json {
            writeln!(
                out,
                "{}",
                json!({"id": id, "fingerprint": sketch.to_string()})
            )?;
        } else if let Some(refused) = tsv_refuses(id) {
            bail!(refused);
        } else {
            writeln!(out, "{id}\t{sketch}")?;
        }
        Ok(())
    };
    let mut exported = 0usize;
    if store_order {
        index.for_each_entry(|id, sketch| {
            line(id, &sketch)?;
            exported += 1;
            Ok::<_, anyhow::Error>(())
        })?;
    } else {
        let entries = index.entries()?;
        // Sorted entries are all at hand: an id TSV cannot carry is refused before any line is printed.
        if !json && let Some(refused) = entries.iter().find_map(|(id, _)| tsv_refuses(id)) {
            bail!(refused);
        }
        for (id, sketch) in entries {
            line(&id, &sketch)?;
            exported += 1;
        }
    }
    out.flush()?;
    say!("{exported} entries of {} exported", index.location());
    Ok(ExitCode::SUCCESS)
}

fn stats(dir: &Path, json: bool) -> Result<ExitCode> {
    let index = open_reader(dir)?;
    let summary = index.summary();
    let store_kind = index.store_kind();
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", summary.to_json())?;
        return Ok(ExitCode::SUCCESS);
    }
    let per_entry = |b: u64| b as f64 / summary.entries.max(1) as f64;
    writeln!(out, "entries\t{}", summary.entries)?;
    writeln!(out, "scheme\t{}", summary.scheme)?;
    writeln!(out, "kind\t{}", summary.kind)?;
    if let Some(k) = summary.k {
        writeln!(out, "k\t{k}")?;
    }
    if let Some(t) = summary.threshold {
        writeln!(out, "threshold\t{t}")?;
    }
    writeln!(
        out,
        "design\t{} ({} tables)",
        summary.design, summary.tables
    )?;
    writeln!(out, "store\t{}", summary.store)?;
    if store_kind != StoreKind::Redis {
        writeln!(
            out,
            "file bytes\t{} ({:.1} per entry)",
            summary.file_bytes,
            per_entry(summary.file_bytes)
        )?;
    }
    if store_kind == StoreKind::Segments {
        writeln!(out, "log bytes\t{}", summary.log_bytes)?;
    }
    if store_kind == StoreKind::Redis {
        // The index lives in Redis: this process holds nothing of it.
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "memory, tables\t{} ({:.1} per entry)",
        summary.memory_table_bytes,
        per_entry(summary.memory_table_bytes)
    )?;
    writeln!(
        out,
        "memory, ids\t{} ({:.1} per entry)",
        summary.memory_id_bytes,
        per_entry(summary.memory_id_bytes)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// One input line of add-fingerprints: TSV in either column order, or a JSON object; the sketch must be of
/// `method`.
fn parse_entry(line: &str, method: Method) -> Result<(String, Sketch), String> {
    let (id, text) = if line.trim_start().starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
        let id = v
            .get("id")
            .or_else(|| v.get("path"))
            .and_then(|x| x.as_str())
            .ok_or("no \"id\" (or \"path\") field")?;
        let fp = v
            .get("fingerprint")
            .and_then(|x| x.as_str())
            .ok_or("no \"fingerprint\" field")?;
        (id.to_owned(), fp.to_owned())
    } else {
        let (a, b) = line.split_once('\t').ok_or("expected id<TAB>fingerprint")?;
        if Sketch::looks_like_sketch(a) && !Sketch::looks_like_sketch(b) {
            (b.to_owned(), a.to_owned())
        } else {
            (a.to_owned(), b.to_owned())
        }
    };
    let sketch: Sketch = text
        .trim()
        .parse()
        .map_err(|e: neardup::Error| e.to_string())?;
    match sketch.method() {
        Ok(m) if m == method => Ok((id, sketch)),
        Ok(m) => {
            let shown: String = text.chars().take(48).collect();
            Err(format!(
                "{shown}… is a {m} sketch; the index holds {method}"
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

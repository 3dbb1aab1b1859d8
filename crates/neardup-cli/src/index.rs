//! `neardup index`: a persistent index of fingerprints that answers "what is within k bits of this?".

use crate::inputs::{self, DocArgs};
use crate::plan::parse_count;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use neardup::{Fingerprint, Scheme};
use neardup_index::plan::recommend;
use neardup_index::store::{Change, Meta, PersistentIndex, RedbStore};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
An index is a directory holding one file (index.redb, an embedded transactional database). Every
change is committed durably before the command reports it: an added fingerprint that was
acknowledged survives kill -9 or a power cut at any later moment. Ids are your strings (paths,
URLs, DOIs); two ids with the same fingerprint are two entries. One process writes at a time.

Examples:
    neardup index create idx --k 3 --n 1e7
    neardup index add idx docs/
    neardup hash --jsonl corpus.jsonl | neardup index add-fingerprints idx -
    neardup index query idx new-page.html simhash-doc-v1:qikqezyce3ajc
    neardup index remove idx docs/old.html
    neardup index stats idx";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct IndexArgs {
    #[command(subcommand)]
    command: IndexCommand,
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Create an empty index in DIR.
    Create {
        /// The index directory (created if missing).
        dir: PathBuf,
        /// The largest distance queries may ask for (inclusive), 0 to 7.
        #[arg(short, long, default_value_t = 3)]
        k: u32,
        /// The expected number of fingerprints: chooses the table design (see `neardup plan`).
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        n: f64,
        /// The scheme of the fingerprints the index will hold.
        #[arg(long, default_value = "simhash-doc-v1")]
        scheme: Scheme,
    },
    /// Fingerprint documents (files, directories, '-') and add them, ids being their paths.
    Add {
        /// The index directory.
        dir: PathBuf,
        /// Files, directories (recursively) or '-'.
        #[arg(required = true)]
        paths: Vec<String>,
        #[command(flatten)]
        doc: DocArgs,
    },
    /// Add fingerprints read from TSV (id<TAB>fingerprint, or the fingerprint<TAB>path lines of
    /// `neardup hash`) or JSON lines (`id` or `path`, and `fingerprint`).
    AddFingerprints {
        /// The index directory.
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
    /// Find the stored ids within k bits of documents or fingerprint strings.
    Query {
        /// The index directory.
        dir: PathBuf,
        /// Files, '-', or fingerprint strings.
        #[arg(required = true)]
        items: Vec<String>,
        /// Distance (default: the index's k; at most the index's k).
        #[arg(short, long)]
        k: Option<u32>,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        doc: DocArgs,
    },
    /// Remove ids.
    Remove {
        /// The index directory.
        dir: PathBuf,
        /// The ids to remove.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Entries, settings and size of an index.
    Stats {
        /// The index directory.
        dir: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn open(dir: &Path) -> Result<PersistentIndex<RedbStore>> {
    Ok(PersistentIndex::open(RedbStore::open(dir)?)?)
}

fn check_scheme(index: &PersistentIndex<RedbStore>, scheme: Scheme, what: &str) -> Result<()> {
    if index.meta().scheme != scheme.name() {
        bail!(
            "{what} is {scheme}, but the index holds {} fingerprints: schemes are never mixed",
            index.meta().scheme
        );
    }
    Ok(())
}

pub fn run(args: IndexArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match args.command {
        IndexCommand::Create { dir, k, n, scheme } => {
            if k > 7 {
                bail!("--k {k} is out of range (0 to 7)");
            }
            let design = recommend(k, n);
            let store = RedbStore::create(
                &dir,
                Meta {
                    scheme: scheme.name().to_owned(),
                    design: design.clone(),
                },
            )?;
            eprintln!(
                "neardup: created {} (k = {k}, {}, {} tables)",
                store.path().display(),
                design,
                design.tables()
            );
            Ok(ExitCode::SUCCESS)
        }
        IndexCommand::Add { dir, paths, doc } => {
            let mut index = open(&dir)?;
            check_scheme(&index, doc.scheme, "--scheme")?;
            let (mut added, mut failed) = (0usize, 0usize);
            let unexpanded = doc.fingerprint_batches(&paths, |outcomes, progress| {
                let mut changes = Vec::with_capacity(outcomes.len());
                for o in outcomes {
                    match o.result {
                        Ok(a) => changes.push(Change::Put(o.label, a.fingerprint.bits())),
                        Err(e) => {
                            failed += 1;
                            inputs::report(progress, &o.label, &e);
                        }
                    }
                }
                index.apply(&changes)?;
                added += changes.len();
                Ok(())
            })?;
            failed += unexpanded;
            eprintln!(
                "neardup: added {added} documents to {} ({} entries), {failed} failed",
                dir.display(),
                index.index().len()
            );
            Ok(inputs::exit_status(failed))
        }
        IndexCommand::AddFingerprints {
            dir,
            inputs,
            batch,
            ack,
        } => {
            let mut index = open(&dir)?;
            let scheme: Scheme = index.meta().scheme.parse().context("the index's scheme")?;
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let (mut committed, mut bad) = (0usize, 0usize);
            {
                // One transaction per batch; with --ack, "ok N" only once the batch is durable.
                let mut commit = |changes: &mut Vec<Change>| -> Result<()> {
                    if changes.is_empty() {
                        return Ok(());
                    }
                    index.apply(changes)?;
                    committed += changes.len();
                    changes.clear();
                    if ack {
                        writeln!(out, "ok {committed}")?;
                        out.flush()?;
                    }
                    Ok(())
                };
                for input in &inputs {
                    let reader = inputs::open_lines(input).map_err(anyhow::Error::msg)?;
                    let mut changes = Vec::with_capacity(batch);
                    for (n, line) in reader.lines().enumerate() {
                        let line = line.with_context(|| format!("{input}:{}", n + 1))?;
                        if line.trim().is_empty() {
                            continue;
                        }
                        match parse_entry(&line, scheme) {
                            Ok((id, fp)) => changes.push(Change::Put(id, fp)),
                            Err(e) => {
                                bad += 1;
                                eprintln!("neardup: {input}:{}: {e}", n + 1);
                            }
                        }
                        if changes.len() >= batch.max(1) {
                            commit(&mut changes)?;
                        }
                    }
                    commit(&mut changes)?;
                }
            }
            eprintln!(
                "neardup: added {committed} fingerprints ({} entries), {bad} lines refused",
                index.index().len()
            );
            Ok(inputs::exit_status(bad))
        }
        IndexCommand::Query {
            dir,
            items,
            k,
            json,
            doc,
        } => {
            let index = open(&dir)?;
            let k = k.unwrap_or(index.meta().design.k);
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut failed = 0;
            for item in &items {
                let fp = match doc.fingerprint_of(item) {
                    Ok(fp) => fp,
                    Err(e) => {
                        failed += 1;
                        eprintln!("neardup: {e:#}");
                        continue;
                    }
                };
                check_scheme(&index, fp.scheme(), &format!("{item}'s fingerprint"))?;
                let matches = index.query(fp.bits(), k)?;
                if json {
                    let list: Vec<_> = matches
                        .iter()
                        .map(|m| json!({"id": m.id, "distance": m.distance}))
                        .collect();
                    writeln!(
                        out,
                        "{}",
                        json!({"query": item, "fingerprint": fp.to_string(), "matches": list})
                    )?;
                } else {
                    for m in &matches {
                        writeln!(out, "{item}\t{}\t{}", m.id, m.distance)?;
                    }
                }
            }
            out.flush()?;
            Ok(inputs::exit_status(failed))
        }
        IndexCommand::Remove { dir, ids } => {
            let mut index = open(&dir)?;
            let present: Vec<&String> = ids
                .iter()
                .filter(|id| index.index().get(id).is_some())
                .collect();
            for id in ids.iter().filter(|id| index.index().get(id).is_none()) {
                eprintln!("neardup: {id}: not in the index");
            }
            let changes: Vec<Change> = present
                .iter()
                .map(|id| Change::Delete((*id).clone()))
                .collect();
            index.apply(&changes)?;
            eprintln!(
                "neardup: removed {} ids ({} entries left)",
                changes.len(),
                index.index().len()
            );
            Ok(inputs::exit_status(ids.len() - changes.len()))
        }
        IndexCommand::Stats { dir, json } => {
            let index = open(&dir)?;
            let bytes = std::fs::metadata(index.store().path())
                .map(|m| m.len())
                .unwrap_or(0);
            let meta = index.meta();
            let memory = index.index().memory();
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"entries": index.index().len(), "scheme": meta.scheme, "k": meta.design.k,
                           "design": meta.design.to_string(), "tables": meta.design.tables(), "file_bytes": bytes,
                           "memory_table_bytes": memory.table_bytes, "memory_id_bytes": memory.id_bytes})
                )?;
            } else {
                writeln!(out, "entries\t{}", index.index().len())?;
                writeln!(out, "scheme\t{}", meta.scheme)?;
                writeln!(out, "k\t{}", meta.design.k)?;
                writeln!(
                    out,
                    "design\t{} ({} tables)",
                    meta.design,
                    meta.design.tables()
                )?;
                writeln!(out, "file bytes\t{bytes}")?;
                writeln!(
                    out,
                    "memory, tables\t{} ({:.1} per entry)",
                    memory.table_bytes,
                    memory.table_bytes_per_entry()
                )?;
                writeln!(
                    out,
                    "memory, ids\t{} ({:.1} per entry)",
                    memory.id_bytes,
                    memory.id_bytes_per_entry()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// One input line of add-fingerprints: TSV in either column order, or a JSON object.
fn parse_entry(line: &str, scheme: Scheme) -> Result<(String, u64), String> {
    let (id, fp_text) = if line.trim_start().starts_with('{') {
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
        if Fingerprint::looks_like_fingerprint(a) && !Fingerprint::looks_like_fingerprint(b) {
            (b.to_owned(), a.to_owned())
        } else {
            (a.to_owned(), b.to_owned())
        }
    };
    let fp: Fingerprint = fp_text
        .trim()
        .parse()
        .map_err(|e: neardup::ParseError| e.to_string())?;
    if fp.scheme() != scheme {
        return Err(format!(
            "{} is a {} fingerprint; the index holds {scheme}",
            fp,
            fp.scheme()
        ));
    }
    Ok((id, fp.bits()))
}

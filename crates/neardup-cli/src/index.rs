//! `neardup index`: a persistent index that answers "what is within k bits of this?" (SimHash fingerprints in
//! permuted tables) or "what has an estimated Jaccard similarity of at least t with this?" (MinHash
//! signatures in LSH bands).

use crate::dedup::choose_bands;
use crate::inputs::{self, DocArgs, MethodArgs};
use crate::plan::parse_count;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use neardup::{Method, Sketch};
use neardup_index::hamming::plan::recommend;
use neardup_index::lsh::Preset;
use neardup_index::persistent::{Edit as Change, Memory, PersistentIndex};
use neardup_index::store::{Kind, Meta, RedbStore, StoreError};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
An index is a directory holding one file (index.redb, an embedded transactional database). Every
change is committed durably before the command reports it: an added fingerprint that was
acknowledged survives kill -9 or a power cut at any later moment. Ids are your strings (paths,
URLs, DOIs); two ids with the same fingerprint are two entries. One process writes at a time.

An index holds one scheme with fixed parameters: SimHash fingerprints (the default) in permuted
tables for distances up to k, or, with --scheme minhash, MinHash signatures in LSH bands chosen for
a Jaccard --threshold (or a --preset). Commands that read documents sketch them with the index's
scheme; sketches of another scheme or other parameters are refused.

Examples:
    neardup index create idx --k 3 --n 1e7
    neardup index create mh-idx --scheme minhash --threshold 0.8
    neardup index add idx docs/
    neardup hash --jsonl corpus.jsonl | neardup index add-fingerprints idx -
    neardup index query idx new-page.html simhash-doc-v1:qikqezyce3ajc
    neardup index add mh-idx corpus/ && neardup index query mh-idx draft.txt
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
        /// SimHash: the largest distance queries may ask for (inclusive), 0 to 7.
        #[arg(short, long, default_value_t = 3)]
        k: u32,
        /// SimHash: the expected number of fingerprints: chooses the table design (see `neardup plan`).
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        n: f64,
        /// MinHash: the estimated Jaccard similarity matches must reach; chooses the LSH bands.
        #[arg(long, default_value_t = 0.8)]
        threshold: f64,
        /// MinHash: a published configuration (fineweb, refinedweb, gopher, the-stack).
        #[arg(long, value_parser = crate::plan::parse_preset)]
        preset: Option<&'static Preset>,
        /// MinHash: weights of false positives and false negatives when choosing the LSH bands (queries
        /// verify candidates by their estimated similarity, so recall is bought by default).
        #[arg(long, value_name = "FP,FN", default_value = "0.05,0.95", value_parser = crate::dedup::parse_weights)]
        weights: (f64, f64),
        #[command(flatten)]
        method: MethodArgs,
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
    /// Add fingerprints or signatures read from TSV (id<TAB>sketch, or the sketch<TAB>path lines of
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
    /// Find the stored ids near documents, fingerprints or signatures: within k bits, or at an estimated
    /// Jaccard similarity of at least the threshold. Prints item<TAB>id<TAB>distance (or similarity).
    Query {
        /// The index directory.
        dir: PathBuf,
        /// Files, '-', or fingerprint or signature strings.
        #[arg(required = true)]
        items: Vec<String>,
        /// SimHash: distance (default: the index's k; at most the index's k).
        #[arg(short, long)]
        k: Option<u32>,
        /// MinHash: the similarity to reach (default: the index's threshold; 0 lists every LSH candidate).
        #[arg(long)]
        threshold: Option<f64>,
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
    Ok(PersistentIndex::open(open_store(dir)?)?)
}

/// Opens the store of an index, telling how to make one where there is none.
pub fn open_store(dir: &Path) -> Result<RedbStore> {
    RedbStore::open(dir).map_err(|e| match e {
        StoreError::Missing(_) => anyhow::Error::new(e).context(format!(
            "create one with `neardup index create {}`",
            dir.display()
        )),
        e => e.into(),
    })
}

/// The index's method, from its stored scheme name.
fn method_of(index: &PersistentIndex<RedbStore>, dir: &Path) -> Result<Method> {
    index
        .meta()
        .scheme
        .parse()
        .with_context(|| format!("{}: the index's scheme", dir.display()))
}

/// The change that stores `sketch` under `id`, if the sketch is of the index's method.
fn put(id: String, sketch: &Sketch, method: Method) -> Result<Change, String> {
    match sketch.method() {
        Ok(m) if m == method => {}
        Ok(m) => return Err(format!("a {m} sketch; the index holds {method}")),
        Err(e) => return Err(e.to_string()),
    }
    Ok(change(id, sketch))
}

/// The change that stores a sketch under an id (fingerprints and signatures; no index holds bottom-k
/// samples, which every command that writes an index refuses first).
pub fn change(id: String, sketch: &Sketch) -> Change {
    match sketch {
        Sketch::Fingerprint(fp) => Change::Put(id, fp.bits()),
        Sketch::Signature(sig) => Change::PutSignature(id, sig.values().to_vec()),
        Sketch::BottomK(_) => unreachable!("no index holds bottom-k samples"),
    }
}

pub fn run(args: IndexArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match args.command {
        IndexCommand::Create {
            dir,
            k,
            n,
            threshold,
            preset,
            weights,
            method,
        } => {
            let method = method.method_with(preset.map(|p| (p.values, p.shingle)))?;
            let kind = match method {
                Method::BottomK(params) => bail!(
                    "{params} samples are compared pair by pair (neardup compare), not indexed: use a \
                     SimHash or MinHash scheme"
                ),
                Method::SimHash(_) => {
                    if preset.is_some() {
                        bail!("--preset configures MinHash: add --scheme minhash");
                    }
                    if k > 7 {
                        bail!("--k {k} is out of range (0 to 7)");
                    }
                    Kind::Hamming(recommend(k, n))
                }
                Method::MinHash(scheme) => {
                    // A preset brings its own threshold.
                    let threshold = preset.is_none().then_some(threshold);
                    let (banding, threshold) =
                        choose_bands(preset, threshold, scheme.values(), weights)?;
                    Kind::Lsh { banding, threshold }
                }
            };
            let layout = match &kind {
                Kind::Hamming(design) => format!("k = {k}, {design}, {} tables", design.tables()),
                Kind::Lsh { banding, threshold } => format!("Jaccard ≥ {threshold}, {banding}"),
            };
            let store = RedbStore::create(
                &dir,
                &Meta {
                    scheme: method.name(),
                    kind,
                }
                .to_settings(),
            )?;
            eprintln!(
                "neardup: created {} ({method}, {layout})",
                store.path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        IndexCommand::Add { dir, paths, doc } => {
            let mut index = open(&dir)?;
            let method = method_of(&index, &dir)?;
            doc.method.adopt(method, &dir.display().to_string())?;
            let (mut added, mut failed) = (0usize, 0usize);
            let unexpanded = doc.fingerprint_batches(&paths, |outcomes, progress| {
                let mut changes = Vec::with_capacity(outcomes.len());
                for o in outcomes {
                    match o
                        .result
                        .and_then(|a| put(o.label.clone(), &a.sketch, method))
                    {
                        Ok(change) => changes.push(change),
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
                index.len()
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
            let method = method_of(&index, &dir)?;
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
                        match parse_entry(&line, method) {
                            Ok(change) => changes.push(change),
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
                "neardup: added {committed} sketches ({} entries), {bad} lines refused",
                index.len()
            );
            Ok(inputs::exit_status(bad))
        }
        IndexCommand::Query {
            dir,
            items,
            k,
            threshold,
            json,
            doc,
        } => {
            let index = open(&dir)?;
            let method = method_of(&index, &dir)?;
            doc.method.adopt(method, &dir.display().to_string())?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut failed = 0;
            for item in &items {
                let sketch = match doc.sketch_of(item) {
                    Ok(sketch) => sketch,
                    Err(e) => {
                        failed += 1;
                        eprintln!("neardup: {e:#}");
                        continue;
                    }
                };
                if let Err(e) = put(String::new(), &sketch, method) {
                    bail!("{item} is {e}: schemes and parameters are never mixed");
                }
                // (id, score as printed, score as JSON)
                let matches: Vec<(String, String, serde_json::Value)> =
                    match (&sketch, index.memory()) {
                        (Sketch::Fingerprint(fp), Memory::Hamming(h)) => h
                            .query(fp.bits(), k.unwrap_or(h.k()))?
                            .into_iter()
                            .map(|m| {
                                (
                                    m.id,
                                    m.distance.to_string(),
                                    json!({"distance": m.distance}),
                                )
                            })
                            .collect(),
                        (Sketch::Signature(sig), Memory::Lsh(l)) => {
                            let t = match (threshold, &index.meta().kind) {
                                (Some(t), _) => t,
                                (None, Kind::Lsh { threshold, .. }) => *threshold,
                                (None, Kind::Hamming(_)) => 0.0,
                            };
                            l.query(sig.values())?
                                .into_iter()
                                .filter(|c| c.similarity >= t)
                                .map(|c| {
                                    (
                                        c.id,
                                        format!("{:.4}", c.similarity),
                                        json!({"similarity": c.similarity}),
                                    )
                                })
                                .collect()
                        }
                        _ => unreachable!("put() checked the method"),
                    };
                if json {
                    let list: Vec<_> = matches
                        .iter()
                        .map(|(id, _, score)| {
                            let mut m = json!({ "id": id });
                            m.as_object_mut()
                                .expect("an object")
                                .extend(score.as_object().expect("an object").clone());
                            m
                        })
                        .collect();
                    writeln!(
                        out,
                        "{}",
                        json!({"query": item, "fingerprint": sketch.to_string(), "matches": list})
                    )?;
                } else {
                    for (id, score, _) in &matches {
                        writeln!(out, "{item}\t{id}\t{score}")?;
                    }
                }
            }
            out.flush()?;
            Ok(inputs::exit_status(failed))
        }
        IndexCommand::Remove { dir, ids } => {
            let mut index = open(&dir)?;
            let present: Vec<&String> = ids.iter().filter(|id| index.contains(id)).collect();
            for id in ids.iter().filter(|id| !index.contains(id)) {
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
                index.len()
            );
            Ok(inputs::exit_status(ids.len() - changes.len()))
        }
        IndexCommand::Stats { dir, json } => {
            let index = open(&dir)?;
            let bytes = std::fs::metadata(index.store().path())
                .map(|m| m.len())
                .unwrap_or(0);
            let meta = index.meta();
            let memory = match index.memory() {
                Memory::Hamming(h) => h.memory(),
                Memory::Lsh(l) => l.memory(),
            };
            let (layout, tables, k, threshold) = match &meta.kind {
                Kind::Hamming(design) => {
                    (design.to_string(), design.tables(), Some(design.k), None)
                }
                Kind::Lsh { banding, threshold } => (
                    banding.to_string(),
                    banding.bands as u64,
                    None,
                    Some(*threshold),
                ),
            };
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"entries": index.len(), "scheme": meta.scheme, "kind": meta.kind.name(), "k": k,
                           "threshold": threshold, "design": layout, "tables": tables, "file_bytes": bytes,
                           "memory_table_bytes": memory.table_bytes, "memory_id_bytes": memory.id_bytes})
                )?;
            } else {
                writeln!(out, "entries\t{}", index.len())?;
                writeln!(out, "scheme\t{}", meta.scheme)?;
                writeln!(out, "kind\t{}", meta.kind.name())?;
                if let Some(k) = k {
                    writeln!(out, "k\t{k}")?;
                }
                if let Some(t) = threshold {
                    writeln!(out, "threshold\t{t}")?;
                }
                writeln!(out, "design\t{layout} ({tables} tables)")?;
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
fn parse_entry(line: &str, method: Method) -> Result<Change, String> {
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
    put(id, &sketch, method).map_err(|e| {
        let shown: String = text.chars().take(48).collect();
        format!("{shown}… is {e}")
    })
}

//! `neardup dedup`: fingerprint everything, find every pair within k bits, print clusters or pairs.

use crate::hash::progress_bar;
use crate::inputs::{self, DocArgs, Source};
use anyhow::{Result, bail};
use clap::Args;
use neardup_index::{all_pairs::all_pairs, cluster::clusters, hamming, plan::plan};
use rayon::prelude::*;
use serde_json::json;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

const AFTER_HELP: &str = "\
Every document is fingerprinted (in parallel), then every pair of documents whose fingerprints
are within k bits is found with block-permuted tables: exactly, with no pair missed. Documents
are identified by their path as given (or the \"id\" field with --jsonl).

Output (clusters, the default): the connected components of the \"within k\" graph, one line per
member, the representative first. The representative is the member whose id is smallest in byte
order, and clusters are numbered in that order, so the output does not depend on the order of the
inputs or on the number of threads:

    1<TAB>docs/a.html<TAB>0
    1<TAB>docs/b.html<TAB>2      (cluster, member, distance to the representative)

With --pairs: one line per pair, id_a<TAB>id_b<TAB>distance (id_a < id_b), for scoring and other
tools. With --json: JSON lines. A summary goes to stderr. Documents that cannot be fingerprinted
are reported on stderr and left out; the exit status is then 1.

This version keeps the index in memory; a persistent index (--index DIR) is not built yet.

Examples:
    neardup dedup docs/
    neardup dedup --k 5 --pairs old/ new/ > pairs.tsv
    zstd -dc corpus.jsonl.zst | neardup dedup --jsonl --json - > clusters.jsonl";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct DedupArgs {
    /// Files, directories (recursively), '-' for stdin, or JSON Lines corpora with --jsonl.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// The largest Hamming distance (inclusive) at which two documents are near-duplicates, 0 to 7.
    #[arg(short, long, default_value_t = 3)]
    k: u32,
    /// Print every pair instead of clusters.
    #[arg(long)]
    pairs: bool,
    /// Print JSON lines.
    #[arg(long)]
    json: bool,
    /// Read the inputs as JSON Lines: "id" and "text" fields, the text taken as already extracted.
    #[arg(long)]
    jsonl: bool,
    #[command(flatten)]
    doc: DocArgs,
    /// Worker threads for fingerprinting (default: one per core). Output is the same for any number.
    #[arg(short = 'j', long, value_name = "N")]
    threads: Option<usize>,
}

pub fn run(args: DedupArgs) -> Result<ExitCode> {
    if args.k > 7 {
        bail!(
            "--k {} is out of range (0 to 7); similarity 1 - k/64 below 0.89 is not a near-duplicate",
            args.k
        );
    }
    if let Some(n) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global()?;
    }
    let started = Instant::now();
    let (mut docs, failed) = if args.jsonl {
        read_jsonl(&args)?
    } else {
        read_files(&args)
    };
    // Canonical order: by id, so that indices, pairs and clusters do not depend on the input order.
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    let fps: Vec<u64> = docs.iter().map(|d| d.1).collect();
    let design = plan(args.k, fps.len().max(1) as f64, None).remove(0).design;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut in_clusters, mut cluster_count, mut pair_count) = (0usize, 0usize, 0usize);
    if args.pairs {
        let mut result = Ok(());
        all_pairs(&fps, &design, |i, j, d| {
            pair_count += 1;
            let (a, b) = (&docs[i as usize].0, &docs[j as usize].0);
            if result.is_ok() {
                result = if args.json {
                    writeln!(out, "{}", json!({"a": a, "b": b, "distance": d}))
                } else {
                    writeln!(out, "{a}\t{b}\t{d}")
                };
            }
        });
        result?;
    } else {
        for (n, members) in clusters(&fps, &design).iter().enumerate() {
            let rep = members[0] as usize;
            cluster_count += 1;
            in_clusters += members.len();
            if args.json {
                let list: Vec<_> = members
                    .iter()
                    .map(|&m| json!({"id": docs[m as usize].0, "distance": hamming(fps[rep], fps[m as usize])}))
                    .collect();
                let line = json!({"cluster": n + 1, "representative": docs[rep].0, "size": members.len(), "members": list});
                writeln!(out, "{line}")?;
            } else {
                for &m in members {
                    writeln!(
                        out,
                        "{}\t{}\t{}",
                        n + 1,
                        docs[m as usize].0,
                        hamming(fps[rep], fps[m as usize])
                    )?;
                }
            }
        }
    }
    out.flush()?;
    let secs = started.elapsed().as_secs_f64();
    if args.pairs {
        eprintln!(
            "neardup: {} documents, {pair_count} pairs within k = {} ({}), {failed} failed, {secs:.2} s",
            docs.len(),
            args.k,
            design
        );
    } else {
        eprintln!(
            "neardup: {} documents, {} duplicates in {cluster_count} clusters (k = {}), {failed} failed, {secs:.2} s",
            docs.len(),
            in_clusters - cluster_count,
            args.k
        );
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Fingerprints files and directories in parallel; returns (id, fingerprint) and the number that failed.
fn read_files(args: &DedupArgs) -> (Vec<(String, u64)>, usize) {
    let (sources, operand_errors) = inputs::expand(&args.paths);
    let mut failed = operand_errors.len();
    for e in &operand_errors {
        eprintln!("neardup: {}: {}", e.label, e.message);
    }
    let progress = progress_bar(sources.len() as u64);
    let mut docs = Vec::with_capacity(sources.len());
    for batch in sources.chunks(256) {
        let results: Vec<(String, Result<u64, String>)> = batch
            .par_iter()
            .map(|s: &Source| {
                (
                    s.label(),
                    args.doc.analyze(s).1.map(|a| a.fingerprint.bits()),
                )
            })
            .collect();
        for (label, r) in results {
            progress.inc(1);
            match r {
                Ok(fp) => docs.push((label, fp)),
                Err(e) => {
                    failed += 1;
                    progress.suspend(|| eprintln!("neardup: {label}: {e}"));
                }
            }
        }
    }
    progress.finish_and_clear();
    (docs, failed)
}

/// Fingerprints JSON Lines documents in parallel batches.
fn read_jsonl(args: &DedupArgs) -> Result<(Vec<(String, u64)>, usize)> {
    let mut docs = Vec::new();
    let mut failed = 0;
    for operand in &args.paths {
        let reader = match inputs::open_lines(operand) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("neardup: {e}");
                failed += 1;
                continue;
            }
        };
        let mut lines = reader.lines().enumerate();
        loop {
            let batch: Vec<(String, Result<String, String>)> = lines
                .by_ref()
                .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
                .take(4096)
                .map(|(n, l)| match l {
                    Ok(l) => inputs::parse_jsonl_line(&l, operand, n + 1),
                    Err(e) => (
                        format!("{operand}:{}", n + 1),
                        Err(format!("cannot read: {e}")),
                    ),
                })
                .collect();
            if batch.is_empty() {
                break;
            }
            let results: Vec<(String, Result<u64, String>)> = batch
                .into_par_iter()
                .map(|(id, text)| {
                    let fp = text.and_then(|t| {
                        args.doc
                            .scheme
                            .fingerprint_text(&t)
                            .map(|f| f.bits())
                            .map_err(|e| e.to_string())
                    });
                    (id, fp)
                })
                .collect();
            for (id, r) in results {
                match r {
                    Ok(fp) => docs.push((id, fp)),
                    Err(e) => {
                        failed += 1;
                        eprintln!("neardup: {id}: {e}");
                    }
                }
            }
        }
    }
    Ok((docs, failed))
}

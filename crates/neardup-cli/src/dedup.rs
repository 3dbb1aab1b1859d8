//! `neardup dedup`: fingerprint everything, find every pair within k bits, print clusters or pairs.

use crate::inputs::{self, DocArgs, Threads};
use anyhow::{Result, bail};
use clap::Args;
use neardup_index::cluster::{UnionFind, clusters};
use neardup_index::store::{Change, PersistentIndex, RedbStore};
use neardup_index::{all_pairs::all_pairs, hamming, plan::recommend};
use rayon::prelude::*;
use serde_json::json;
use std::io::Write;
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

With --index DIR the documents are also checked against a persistent index (`neardup index`) and
then added to it, so a crawl can be deduplicated day after day; stored ids that match are part of
the clusters or pairs.

Examples:
    neardup dedup docs/
    neardup dedup --k 5 --pairs old/ new/ > pairs.tsv
    zstd -dc corpus.jsonl.zst | neardup dedup --jsonl --json - > clusters.jsonl
    neardup dedup --index crawl-idx today/";

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
    /// Check the documents against a persistent index (see `neardup index`) as well as against each other,
    /// then add them to it. Stored ids that match appear in the output; an id already stored is replaced.
    #[arg(long, value_name = "DIR")]
    index: Option<std::path::PathBuf>,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(args: DedupArgs) -> Result<ExitCode> {
    if args.k > 7 {
        bail!(
            "--k {} is out of range (0 to 7); similarity 1 - k/64 below 0.89 is not a near-duplicate",
            args.k
        );
    }
    args.threads.apply()?;
    let started = Instant::now();
    let (mut docs, failed) = if args.jsonl {
        read_jsonl(&args)?
    } else {
        read_files(&args)?
    };
    // Canonical order: by id, so that indices, pairs and clusters do not depend on the input order.
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    let fps: Vec<u64> = docs.iter().map(|d| d.1).collect();
    let design = recommend(args.k, fps.len().max(1) as f64);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut in_clusters, mut cluster_count, mut pair_count) = (0usize, 0usize, 0usize);
    let mut stored = None;
    if let Some(dir) = &args.index {
        let (nodes, edges, index) = with_index(dir, &docs, &fps, &design, &args)?;
        let node_fps: Vec<u64> = nodes.iter().map(|n| n.1).collect();
        if args.pairs {
            for &(i, j, d) in &edges {
                pair_count += 1;
                print_pair(
                    &mut out,
                    &nodes[i as usize].0,
                    &nodes[j as usize].0,
                    d,
                    args.json,
                )?;
            }
        } else {
            let mut uf = UnionFind::new(nodes.len());
            for &(i, j, _) in &edges {
                uf.union(i, j);
            }
            for (n, members) in uf.clusters().iter().enumerate() {
                cluster_count += 1;
                in_clusters += members.len();
                print_cluster(&mut out, n + 1, members, &nodes, &node_fps, args.json)?;
            }
        }
        stored = Some(index);
    } else if args.pairs {
        let mut result = Ok(());
        all_pairs(&fps, &design, |i, j, d| {
            pair_count += 1;
            if result.is_ok() {
                result = print_pair(
                    &mut out,
                    &docs[i as usize].0,
                    &docs[j as usize].0,
                    d,
                    args.json,
                );
            }
        });
        result?;
    } else {
        for (n, members) in clusters(&fps, &design).iter().enumerate() {
            cluster_count += 1;
            in_clusters += members.len();
            print_cluster(&mut out, n + 1, members, &docs, &fps, args.json)?;
        }
    }
    if let (Some(mut index), Some(dir)) = (stored, &args.index) {
        for chunk in docs.chunks(10_000) {
            let changes: Vec<Change> = chunk
                .iter()
                .map(|(id, fp)| Change::Put(id.clone(), *fp))
                .collect();
            index.apply(&changes)?;
        }
        eprintln!(
            "neardup: added {} documents to {} ({} entries)",
            docs.len(),
            dir.display(),
            index.len()
        );
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
    Ok(inputs::exit_status(failed))
}

/// Fingerprints files and directories in parallel; returns (id, fingerprint) and the number that failed.
fn read_files(args: &DedupArgs) -> Result<(Vec<(String, u64)>, usize)> {
    let mut docs = Vec::new();
    let mut failed = 0;
    let unexpanded = args
        .doc
        .fingerprint_batches(&args.paths, |outcomes, progress| {
            for o in outcomes {
                match o.result {
                    Ok(a) => docs.push((o.label, a.fingerprint.bits())),
                    Err(e) => {
                        failed += 1;
                        inputs::report(progress, &o.label, &e);
                    }
                }
            }
            Ok(())
        })?;
    Ok((docs, failed + unexpanded))
}

/// Fingerprints JSON Lines documents in parallel batches.
fn read_jsonl(args: &DedupArgs) -> Result<(Vec<(String, u64)>, usize)> {
    let mut docs = Vec::new();
    let mut failed = 0;
    let unopened = inputs::for_each_jsonl_batch(&args.paths, 4096, |batch| {
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
        Ok(())
    })?;
    failed += unopened;
    Ok((docs, failed))
}

/// One pair line.
fn print_pair(out: &mut impl Write, a: &str, b: &str, d: u32, json: bool) -> std::io::Result<()> {
    if json {
        writeln!(out, "{}", json!({"a": a, "b": b, "distance": d}))
    } else {
        writeln!(out, "{a}\t{b}\t{d}")
    }
}

/// One cluster: its members (indices into `ids`, smallest first, the representative) with their distance to
/// the representative.
fn print_cluster(
    out: &mut impl Write,
    number: usize,
    members: &[u32],
    ids: &[(String, u64)],
    fps: &[u64],
    json: bool,
) -> std::io::Result<()> {
    let rep = members[0] as usize;
    if json {
        let list: Vec<_> = members
            .iter()
            .map(|&m| json!({"id": ids[m as usize].0, "distance": hamming(fps[rep], fps[m as usize])}))
            .collect();
        writeln!(
            out,
            "{}",
            json!({"cluster": number, "representative": ids[rep].0, "size": members.len(), "members": list})
        )
    } else {
        for &m in members {
            writeln!(
                out,
                "{number}\t{}\t{}",
                ids[m as usize].0,
                hamming(fps[rep], fps[m as usize])
            )?;
        }
        Ok(())
    }
}

/// The graph of new documents and the stored entries they match: nodes sorted by id (new documents win over
/// a stored entry with the same id), and edges (i < j) sorted.
type Graph = (
    Vec<(String, u64)>,
    Vec<(u32, u32, u32)>,
    PersistentIndex<RedbStore>,
);

fn with_index(
    dir: &std::path::Path,
    docs: &[(String, u64)],
    fps: &[u64],
    design: &neardup_index::plan::Design,
    args: &DedupArgs,
) -> Result<Graph> {
    let index = PersistentIndex::open(RedbStore::open(dir)?)?;
    if index.meta().scheme != args.doc.scheme.name() {
        bail!(
            "{} holds {} fingerprints, not {}: schemes are never mixed",
            dir.display(),
            index.meta().scheme,
            args.doc.scheme
        );
    }
    let Some(hamming) = index.hamming() else {
        bail!(
            "{} is an LSH index of {} signatures: use it with --scheme {}",
            dir.display(),
            index.meta().scheme,
            index.meta().scheme
        );
    };
    if args.k > hamming.k() {
        bail!(
            "--k {} is larger than the index's k = {}: its tables cannot find every match",
            args.k,
            hamming.k()
        );
    }
    let new_ids: std::collections::HashSet<&str> = docs.iter().map(|d| d.0.as_str()).collect();
    // Stored entries within k of a new document (the stored version of a new id is superseded, not a match).
    let mut stored: std::collections::BTreeMap<String, u64> = Default::default();
    let mut cross: Vec<(usize, String, u32)> = Vec::new();
    for (i, (_, fp)) in docs.iter().enumerate() {
        for m in hamming.query(*fp, args.k)? {
            if !new_ids.contains(m.id.as_str()) {
                let stored_fp = hamming.get(&m.id).expect("a matched id is stored");
                stored.insert(m.id.clone(), stored_fp);
                cross.push((i, m.id, m.distance));
            }
        }
    }
    let mut nodes: Vec<(String, u64)> = docs.to_vec();
    nodes.extend(stored);
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let position: std::collections::HashMap<&str, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.0.as_str(), i as u32))
        .collect();
    let mut edges = Vec::new();
    all_pairs(fps, design, |i, j, d| {
        let (a, b) = (
            position[docs[i as usize].0.as_str()],
            position[docs[j as usize].0.as_str()],
        );
        edges.push((a.min(b), a.max(b), d));
    });
    for (i, id, d) in cross {
        let (a, b) = (position[docs[i].0.as_str()], position[id.as_str()]);
        edges.push((a.min(b), a.max(b), d));
    }
    edges.sort_unstable();
    edges.dedup();
    Ok((nodes, edges, index))
}

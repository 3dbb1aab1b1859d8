//! `neardup dedup`: sketch everything, find every near-duplicate pair (within k bits for SimHash, at an
//! estimated Jaccard similarity of at least a threshold for MinHash), print clusters or pairs.

use crate::inputs::{self, DocArgs, Threads};
use anyhow::{Result, bail};
use clap::Args;
use neardup::{Method, Sketch, exact_jaccard};
use neardup_index::hamming; // the distance function (and the module)
use neardup_index::hamming::{all_pairs, clusters, plan::recommend};
use neardup_index::lsh::{
    Banding, Preset, lsh_clusters, lsh_clusters_with, lsh_pairs, optimize, similarity,
};
use neardup_index::persistent::{Edit as Change, PersistentIndex};
use neardup_index::store::{Kind, RedbStore};
use neardup_index::union_find::UnionFind;
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
tools. With --json: JSON lines. A summary goes to stderr.

With --scheme minhash: documents are MinHash signatures of their word 5-grams (--shingle,
--num-perm), candidates come from LSH bands chosen for --threshold (see `neardup plan --scheme
minhash`) or from --preset, and a candidate pair is kept when its Jaccard similarity reaches the
threshold: computed exactly from the shingle sets (--verify exact, the default; entries of a
persistent index have no text, so the estimate judges them), estimated from the signatures
(--verify estimate: no shingle sets in memory), or not checked (--verify none). The third column
is that similarity (to the representative, in clusters).

Documents that cannot be sketched are reported on stderr and left out; the exit status is then 1.

With --index DIR the documents are also checked against a persistent index (`neardup index`) and
then added to it, so a crawl can be deduplicated day after day; stored ids that match are part of
the clusters or pairs.

Examples:
    neardup dedup docs/
    neardup dedup --k 5 --pairs old/ new/ > pairs.tsv
    zstd -dc corpus.jsonl.zst | neardup dedup --jsonl --json - > clusters.jsonl
    neardup dedup --index crawl-idx today/
    neardup dedup --scheme minhash --threshold 0.8 --pairs corpus/
    zstd -dc crawl.jsonl.zst | neardup dedup --jsonl --scheme minhash --preset fineweb -";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct DedupArgs {
    /// Files, directories (recursively), '-' for stdin, or JSON Lines corpora with --jsonl.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// SimHash: the largest Hamming distance (inclusive) at which two documents are near-duplicates, 0 to 7.
    #[arg(short, long, default_value_t = 3)]
    k: u32,
    /// MinHash: the Jaccard similarity (exact or estimated, see --verify) at which two documents are
    /// near-duplicates [default: 0.8, or the index's].
    #[arg(long)]
    threshold: Option<f64>,
    /// MinHash: a published configuration (fineweb, refinedweb, gopher, the-stack): its signature size,
    /// shingles, bands and threshold.
    #[arg(long, value_parser = crate::plan::parse_preset)]
    preset: Option<&'static Preset>,
    /// MinHash: weights of false positives and false negatives when choosing the LSH bands [default:
    /// 0.05,0.95 when candidates are verified, which buys recall with candidates that verification then
    /// drops; 0.5,0.5 with --verify none, as datasketch].
    #[arg(long, value_name = "FP,FN", value_parser = parse_weights)]
    weights: Option<(f64, f64)>,
    /// MinHash: how candidate pairs are checked against the threshold: exact (Jaccard of the shingle sets,
    /// kept in memory), estimate (from the signatures) or none (every LSH candidate is a pair).
    #[arg(long, default_value = "exact", value_parser = ["estimate", "exact", "none"])]
    verify: String,
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

/// How close a pair is: a Hamming distance (SimHash) or an estimated Jaccard similarity (MinHash).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
enum Score {
    Distance(u32),
    Similarity(f64),
}

impl Score {
    fn json(self) -> serde_json::Value {
        match self {
            Score::Distance(d) => json!({ "distance": d }),
            Score::Similarity(s) => json!({ "similarity": s }),
        }
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Score::Distance(d) => write!(f, "{d}"),
            Score::Similarity(s) => write!(f, "{s:.4}"),
        }
    }
}

/// The LSH bands and threshold for signatures of `values` values: a preset's (its threshold unless
/// `threshold` is given), or the optimizer's for `threshold` (default 0.8) with the given weights.
pub fn choose_bands(
    preset: Option<&Preset>,
    threshold: Option<f64>,
    values: u32,
    (fp, fn_): (f64, f64),
) -> Result<(Banding, f64), neardup_index::lsh::BandingError> {
    match preset {
        Some(p) => Ok((p.banding_for(values)?, threshold.unwrap_or(p.threshold))),
        None => {
            let t = threshold.unwrap_or(0.8);
            Ok((optimize(t, values, fp, fn_)?, t))
        }
    }
}

/// `--weights FP,FN`.
pub fn parse_weights(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("'{s}' is not two non-negative weights FP,FN (e.g. 0.5,0.5)");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let (a, b): (f64, f64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a >= 0.0 && b >= 0.0 && a + b > 0.0 {
        Ok((a, b))
    } else {
        Err(bad())
    }
}

/// The optimizer's weights (false positives, false negatives) by default: when candidates are verified, a
/// false positive costs one comparison and a false negative a lost pair, so recall is bought.
pub fn default_weights(verify: &str) -> (f64, f64) {
    if verify == "none" {
        (0.5, 0.5)
    } else {
        (0.05, 0.95)
    }
}

/// How MinHash candidates are checked.
enum Verify {
    /// Every candidate is a pair.
    Nothing,
    /// The estimated Jaccard similarity reaches the threshold.
    Estimate(f64),
    /// The exact Jaccard similarity of the shingle sets (one per document) reaches the threshold.
    Exact(f64, Vec<Vec<u64>>),
}

/// The documents, sorted by id, as SimHash fingerprints or as MinHash signatures (`values` per document).
enum Batch {
    SimHash(Vec<u64>),
    MinHash {
        signatures: Vec<u32>,
        banding: Banding,
        verify: Verify,
    },
}

impl Batch {
    /// The score of documents `i` and `j`.
    fn score(&self, i: usize, j: usize) -> Score {
        match self {
            Batch::SimHash(fps) => Score::Distance(hamming(fps[i], fps[j])),
            Batch::MinHash {
                verify: Verify::Exact(_, sets),
                ..
            } => Score::Similarity(exact_jaccard(&sets[i], &sets[j])),
            Batch::MinHash {
                signatures,
                banding,
                ..
            } => {
                let k = banding.values as usize;
                Score::Similarity(similarity(
                    &signatures[i * k..(i + 1) * k],
                    &signatures[j * k..(j + 1) * k],
                ))
            }
        }
    }

    /// The similarity threshold of a MinHash batch that verifies.
    fn threshold(&self) -> Option<f64> {
        match self {
            Batch::MinHash {
                verify: Verify::Estimate(t) | Verify::Exact(t, _),
                ..
            } => Some(*t),
            _ => None,
        }
    }

    /// Every pair (i < j) of near-duplicates, streamed.
    fn pairs(&self, k: u32, mut emit: impl FnMut(u32, u32, Score)) {
        match self {
            Batch::SimHash(fps) => {
                all_pairs(fps, &recommend(k, fps.len().max(1) as f64), |i, j, d| {
                    emit(i, j, Score::Distance(d))
                })
            }
            Batch::MinHash {
                signatures,
                banding,
                verify,
            } => lsh_pairs(signatures, banding, |i, j, s| match verify {
                Verify::Nothing => emit(i, j, Score::Similarity(s)),
                Verify::Estimate(t) => {
                    if s >= *t {
                        emit(i, j, Score::Similarity(s))
                    }
                }
                Verify::Exact(t, sets) => {
                    let exact = exact_jaccard(&sets[i as usize], &sets[j as usize]);
                    if exact >= *t {
                        emit(i, j, Score::Similarity(exact))
                    }
                }
            }),
        }
    }

    /// Clusters of two or more, by smallest index.
    fn clusters(&self, k: u32) -> Vec<Vec<u32>> {
        match self {
            Batch::SimHash(fps) => clusters(fps, &recommend(k, fps.len().max(1) as f64)),
            Batch::MinHash {
                signatures,
                banding,
                verify,
            } => match verify {
                Verify::Nothing => lsh_clusters(signatures, banding, None),
                Verify::Estimate(t) => lsh_clusters(signatures, banding, Some(*t)),
                Verify::Exact(t, sets) => lsh_clusters_with(
                    signatures,
                    banding,
                    &mut |a, b| exact_jaccard(&sets[a as usize], &sets[b as usize]) >= *t,
                    &mut |a, b| sets[a as usize] == sets[b as usize],
                ),
            },
        }
    }
}

pub fn run(mut args: DedupArgs) -> Result<ExitCode> {
    args.doc.keep_shingles = args.verify == "exact";
    if args.k > 7 {
        bail!(
            "--k {} is out of range (0 to 7); similarity 1 - k/64 below 0.89 is not a near-duplicate",
            args.k
        );
    }
    let preset = args.preset;
    // With an index, its scheme, parameters and LSH bands decide; flags may only repeat them.
    let index = match &args.index {
        Some(dir) => Some(PersistentIndex::open(crate::index::open_store(dir)?)?),
        None => None,
    };
    let method = match (&index, &args.index) {
        (Some(index), Some(dir)) => {
            if preset.is_some() {
                bail!(
                    "--preset cannot change an existing index's settings ({})",
                    dir.display()
                );
            }
            let method: Method = index.meta().scheme.parse()?;
            args.doc.method.adopt(method, &dir.display().to_string())?;
            method
        }
        _ => args
            .doc
            .method
            .method_with(preset.map(|p| (p.values, p.shingle)))?,
    };
    if preset.is_some() && matches!(method, Method::SimHash(_)) {
        bail!("--preset configures MinHash: add --scheme minhash");
    }
    if let Method::BottomK(params) = method {
        bail!(
            "{params} samples are compared pair by pair (neardup compare), not deduplicated: use a SimHash \
             or MinHash scheme"
        );
    }
    args.threads.apply()?;
    let started = Instant::now();
    let (mut read, failed) = if args.jsonl {
        read_jsonl(&args, method)?
    } else {
        read_files(&args)?
    };
    // Canonical order: by id, so that indices, pairs and clusters do not depend on the input order.
    read.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sets = Vec::new();
    let docs: Vec<Doc> = read
        .into_iter()
        .map(|(id, sketch, shingles)| {
            sets.extend(shingles);
            (id, sketch)
        })
        .collect();
    let batch = match method {
        Method::BottomK(_) => unreachable!("refused above"),
        Method::SimHash(_) => Batch::SimHash(
            docs.iter()
                .map(|d| d.1.fingerprint().expect("SimHash sketches").bits())
                .collect(),
        ),
        Method::MinHash(scheme) => {
            let (banding, threshold) = match (index.as_ref().map(|i| &i.meta().kind), preset) {
                (Some(Kind::Lsh { banding, threshold }), _) => {
                    if args.threshold.is_some_and(|t| t != *threshold) {
                        bail!(
                            "the index's LSH bands were chosen for Jaccard ≥ {threshold}; --threshold cannot change them"
                        );
                    }
                    (*banding, *threshold)
                }
                (Some(Kind::Hamming(_)), _) => unreachable!("a SimHash index has a SimHash method"),
                (None, preset) => {
                    let weights = args.weights.unwrap_or(default_weights(&args.verify));
                    choose_bands(preset, args.threshold, scheme.values(), weights)?
                }
            };
            let mut signatures = Vec::with_capacity(docs.len() * banding.values as usize);
            for d in &docs {
                signatures.extend_from_slice(d.1.signature().expect("MinHash sketches").values());
            }
            let verify = match args.verify.as_str() {
                "none" => Verify::Nothing,
                "exact" => Verify::Exact(threshold, sets),
                _ => Verify::Estimate(threshold),
            };
            Batch::MinHash {
                signatures,
                banding,
                verify,
            }
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut in_clusters, mut cluster_count, mut pair_count) = (0usize, 0usize, 0usize);
    let mut stored = None;
    if let (Some(index), Some(dir)) = (index, &args.index) {
        let (nodes, edges, index) = with_index(dir, index, &docs, &batch, &args)?;
        if args.pairs {
            for (i, j, score) in &edges {
                pair_count += 1;
                print_pair(
                    &mut out,
                    &nodes[*i as usize].0,
                    &nodes[*j as usize].0,
                    *score,
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
                let score = |a: u32, b: u32| score(&nodes[a as usize].1, &nodes[b as usize].1);
                print_cluster(&mut out, n + 1, members, &nodes, &score, args.json)?;
            }
        }
        stored = Some(index);
    } else if args.pairs {
        let mut result = Ok(());
        batch.pairs(args.k, |i, j, score| {
            pair_count += 1;
            if result.is_ok() {
                result = print_pair(
                    &mut out,
                    &docs[i as usize].0,
                    &docs[j as usize].0,
                    score,
                    args.json,
                );
            }
        });
        result?;
    } else {
        let score = |a: u32, b: u32| batch.score(a as usize, b as usize);
        for (n, members) in batch.clusters(args.k).iter().enumerate() {
            cluster_count += 1;
            in_clusters += members.len();
            print_cluster(&mut out, n + 1, members, &docs, &score, args.json)?;
        }
    }
    if let (Some(mut index), Some(dir)) = (stored, &args.index) {
        for chunk in docs.chunks(10_000) {
            let changes: Vec<Change> = chunk
                .iter()
                .map(|(id, sketch)| crate::index::change(id.clone(), sketch))
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
    let within = match &batch {
        Batch::SimHash(_) => format!("within k = {}", args.k),
        Batch::MinHash {
            banding, verify, ..
        } => match verify {
            Verify::Estimate(t) => format!("at estimated Jaccard ≥ {t} ({method}, {banding})"),
            Verify::Exact(t, _) => format!("at exact Jaccard ≥ {t} ({method}, {banding})"),
            Verify::Nothing => format!("sharing an LSH band ({method}, {banding}, unverified)"),
        },
    };
    if args.pairs {
        eprintln!(
            "neardup: {} documents, {pair_count} pairs {within}, {failed} failed, {secs:.2} s",
            docs.len(),
        );
    } else {
        eprintln!(
            "neardup: {} documents, {} duplicates in {cluster_count} clusters {within}, {failed} failed, {secs:.2} s",
            docs.len(),
            in_clusters - cluster_count,
        );
    }
    Ok(inputs::exit_status(failed))
}

/// A document's id and sketch.
type Doc = (String, Sketch);

/// The score between two sketches of the same method.
fn score(a: &Sketch, b: &Sketch) -> Score {
    match (a, b) {
        (Sketch::Fingerprint(a), Sketch::Fingerprint(b)) => {
            Score::Distance(hamming(a.bits(), b.bits()))
        }
        (Sketch::Signature(a), Sketch::Signature(b)) => {
            Score::Similarity(similarity(a.values(), b.values()))
        }
        _ => unreachable!("one method per run"),
    }
}

/// A document read: its id, sketch, and shingle set (when kept for exact verification).
type Read = (String, Sketch, Option<Vec<u64>>);

/// Sketches files and directories in parallel; returns the documents and the number that failed.
fn read_files(args: &DedupArgs) -> Result<(Vec<Read>, usize)> {
    let mut docs = Vec::new();
    let mut failed = 0;
    let unexpanded = args
        .doc
        .fingerprint_batches(&args.paths, |outcomes, progress| {
            for o in outcomes {
                match o.result {
                    Ok(a) => docs.push((o.label, a.sketch, o.shingles)),
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

/// Sketches JSON Lines documents in parallel batches.
fn read_jsonl(args: &DedupArgs, method: Method) -> Result<(Vec<Read>, usize)> {
    let mut docs = Vec::new();
    let mut failed = 0;
    let keep = args.doc.keep_shingles;
    let unopened = inputs::for_each_jsonl_batch(&args.paths, 4096, |batch| {
        type Sketched = (String, Result<(Sketch, Option<Vec<u64>>), String>);
        let results: Vec<Sketched> = batch
            .into_par_iter()
            .map(|(id, text)| {
                let sketch = text.and_then(|t| {
                    if keep {
                        method.sketch_text_with_set(&t)
                    } else {
                        method.sketch_text(&t).map(|s| (s, None))
                    }
                    .map_err(|e| e.to_string())
                });
                (id, sketch)
            })
            .collect();
        for (id, r) in results {
            match r {
                Ok((sketch, set)) => docs.push((id, sketch, set)),
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
fn print_pair(
    out: &mut impl Write,
    a: &str,
    b: &str,
    score: Score,
    json: bool,
) -> std::io::Result<()> {
    if json {
        let mut line = json!({"a": a, "b": b});
        line.as_object_mut()
            .expect("an object")
            .extend(score.json().as_object().expect("an object").clone());
        writeln!(out, "{line}")
    } else {
        writeln!(out, "{a}\t{b}\t{score}")
    }
}

/// One cluster: its members (indices into `docs`, smallest first, the representative) with their score
/// against the representative.
fn print_cluster(
    out: &mut impl Write,
    number: usize,
    members: &[u32],
    docs: &[Doc],
    score: &impl Fn(u32, u32) -> Score,
    json: bool,
) -> std::io::Result<()> {
    let rep = members[0];
    if json {
        let list: Vec<_> = members
            .iter()
            .map(|&m| {
                let mut member = json!({"id": docs[m as usize].0});
                member
                    .as_object_mut()
                    .expect("an object")
                    .extend(score(rep, m).json().as_object().expect("an object").clone());
                member
            })
            .collect();
        writeln!(
            out,
            "{}",
            json!({"cluster": number, "representative": docs[rep as usize].0, "size": members.len(), "members": list})
        )
    } else {
        for &m in members {
            writeln!(out, "{number}\t{}\t{}", docs[m as usize].0, score(rep, m))?;
        }
        Ok(())
    }
}

/// The graph of new documents and the stored entries they match: nodes sorted by id (new documents win over
/// a stored entry with the same id), and edges (i < j) sorted.
type Graph = (Vec<Doc>, Vec<(u32, u32, Score)>, PersistentIndex<RedbStore>);

fn with_index(
    dir: &std::path::Path,
    index: PersistentIndex<RedbStore>,
    docs: &[Doc],
    batch: &Batch,
    args: &DedupArgs,
) -> Result<Graph> {
    if let (Kind::Hamming(design), Batch::SimHash(_)) = (&index.meta().kind, batch)
        && args.k > design.k
    {
        bail!(
            "--k {} is larger than the index's k = {}: its tables cannot find every match",
            args.k,
            design.k
        );
    }
    let new_ids: std::collections::HashSet<&str> = docs.iter().map(|d| d.0.as_str()).collect();
    // Stored entries that match a new document (the stored version of a new id is superseded, not a match).
    let mut stored: std::collections::BTreeMap<String, Sketch> = Default::default();
    let mut cross: Vec<(usize, String, Score)> = Vec::new();
    for (i, (_, sketch)) in docs.iter().enumerate() {
        let matches: Vec<(String, Score, Sketch)> = match (sketch, index.hamming(), index.lsh()) {
            (Sketch::Fingerprint(fp), Some(h), _) => h
                .query(fp.bits(), args.k)?
                .into_iter()
                .map(|m| {
                    let stored_fp = h.get(&m.id).expect("a matched id is stored");
                    let sketch =
                        Sketch::Fingerprint(neardup::Fingerprint::new(fp.scheme(), stored_fp));
                    (m.id, Score::Distance(m.distance), sketch)
                })
                .collect(),
            (Sketch::Signature(sig), _, Some(l)) => {
                let threshold = batch.threshold();
                l.query(sig.values())?
                    .into_iter()
                    .filter(|c| threshold.is_none_or(|t| c.similarity >= t))
                    .map(|c| {
                        let values = l.get(&c.id).expect("a matched id is stored").to_vec();
                        let sketch = Sketch::Signature(neardup::MinHashSignature::from_values(
                            *sig.params(),
                            values,
                        ));
                        (c.id, Score::Similarity(c.similarity), sketch)
                    })
                    .collect()
            }
            _ => bail!(
                "{} is a {} index, but the documents were sketched with the other kind of scheme",
                dir.display(),
                index.meta().kind.name()
            ),
        };
        for (id, score, sketch) in matches {
            if !new_ids.contains(id.as_str()) {
                stored.insert(id.clone(), sketch);
                cross.push((i, id, score));
            }
        }
    }
    let mut nodes: Vec<Doc> = docs.to_vec();
    nodes.extend(stored);
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let position: std::collections::HashMap<&str, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.0.as_str(), i as u32))
        .collect();
    let mut edges = Vec::new();
    batch.pairs(args.k, |i, j, score| {
        let (a, b) = (
            position[docs[i as usize].0.as_str()],
            position[docs[j as usize].0.as_str()],
        );
        edges.push((a.min(b), a.max(b), score));
    });
    for (i, id, score) in cross {
        let (a, b) = (position[docs[i].0.as_str()], position[id.as_str()]);
        edges.push((a.min(b), a.max(b), score));
    }
    edges.sort_by_key(|e| (e.0, e.1));
    edges.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    Ok((nodes, edges, index))
}

//! `neardup dedup`: a translation of the library's [`neardup::dedup`] engine: read and sketch the documents,
//! push them, and write the pairs or clusters it finds.

use crate::inputs::{DocArgs, Tally, Threads};
use crate::output::{Lines, OutputGuard};
use crate::records::{self, RecordArgs};
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use neardup::dedup::{
    Cluster, Clustering, Dedup, Document, ExactMeasure, Options, Progress, Representative, Score,
    Settings, Sink, Spelling, Stage, Summary, Verification,
};
use neardup::index::{Index, Kind};
use neardup::text::warc::RecordMeta;
use neardup::{Method, Preset};
use neardup_io::{ClusterRow, Dataset, Decision, Outputs, TableWriter};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const AFTER_HELP: &str = "\
Every document is sketched (in parallel); documents with identical sketches are grouped; every
pair within k bits (SimHash) is found with block-permuted tables, exactly, or every pair sharing
an LSH band (MinHash) is checked against the threshold. Documents are identified by their path
as given (or the \"id\" field with --jsonl); a file reached by two names is read once.

Output (clusters, the default): one line per member, the representative (the document to keep)
first, then the members that duplicate it with their score against it:

    1<TAB>docs/a.html<TAB>0
    1<TAB>docs/b.html<TAB>2      (cluster, member, distance to the representative)

Clusters are safe to act on: with --clustering centres (the default), documents are taken in the
--keep order; each joins the closest representative it is within k (or the threshold) of, else
becomes a representative. Every member is therefore within the threshold of the representative it
duplicates. --clustering components gives connected components instead: A near B near C puts A
and C together however far apart they are (chains of small edits can join whole unrelated
manuals), so do not delete the non-representatives of a component without looking.

--keep chooses the representative: smallest-id (the default; byte order of ids), first (input
order) or longest (most tokens). With --index, stored documents always come first: what is
stored is kept, and the fourth column says whether a member is stored or new.

Output does not depend on the input order (except with --keep first) or on the number of threads.
With --pairs: one line per pair, id_a<TAB>id_b<TAB>score (id_a < id_b). With --json: JSON lines
with the member's duplicate_of (and a WARC record's warc_record_id and warc_date). Ids with tabs,
newlines or backslashes are escaped in TSV (\\t, \\n, \\r, \\\\); with -0/--null they are written
as they are and each line ends with a NUL byte. A summary with the cluster-size distribution goes to stderr; clusters larger than
--warn-cluster-size are named.

With --scheme minhash: documents are MinHash signatures of their word 5-grams (--shingle,
--num-perm), candidates come from LSH bands chosen for --threshold (see `neardup plan --scheme
minhash`) or from --preset, and a candidate pair is kept when its similarity reaches the
threshold: computed exactly (--verify exact, the default: Jaccard of the shingle sets, or the
weighted / probability Jaccard of shingle counts for wminhash-v1 / pminhash-v1; entries of a
persistent index keep no text, so the estimate judges them), estimated from the signatures
(--verify estimate), or not checked (--verify none: no threshold guarantee).

SimHash fingerprints summarize word counts, blind to word order: with --verify exact, a pair within
k bits is kept only when its exact similarity also reaches --threshold (default 0.8): the Jaccard
similarity of the two documents' word 3-gram sets (--measure jaccard, the default; --verify-ngram
N for other n-grams) or the cosine of their term frequencies (--measure cosine). The score column
stays the distance. On real documentation this raises precision at a given k with little loss of
recall (docs/accuracy-simhash.md).

Records (JSON Lines, .jsonl.gz, .jsonl.zst, Parquet, directories of nothing else; --jsonl for stdin
and directories that hold other files too, --id-field and --text-field for other field names):
--output FILE writes the deduplicated dataset (the kept records, every field preserved, in input order;
JSON Lines or Parquet like the input, compression by extension), --removed FILE the removed records
with two more fields, duplicate_of and score. Records that are not documents (bad lines) are kept.
--table FILE writes the cluster table (id, cluster, representative, duplicate_of, score) as .parquet,
.jsonl or .tsv, for documents too. With any of these files, clusters are not printed on stdout. A
file that is one of the inputs, or two of them that are one file, are refused before anything is
read; one inside an input directory is written with a warning (a later run over the directory would
read it).

Documents that cannot be sketched are reported on stderr and left out; the exit status is then 1.
Documents without words are a warning (exit status 0 unless --strict).

With --index INDEX (a directory or a Redis URL) the documents are also checked against a persistent index (`neardup index`) and
then added to it, so a crawl can be deduplicated day after day. The index is updated even when the
output is cut short (a closed pipe); the command then exits with status 2 and says so.

Examples:
    neardup dedup docs/
    neardup dedup -k 5 --pairs old/ new/ > pairs.tsv
    zstd -dc corpus.jsonl.zst | neardup dedup --jsonl --json - > clusters.jsonl
    neardup dedup --index crawl-idx today/
    neardup dedup -k 5 --verify exact --threshold 0.8 --pairs corpus/
    neardup dedup --scheme minhash --threshold 0.8 --pairs corpus/
    zstd -dc crawl.jsonl.zst | neardup dedup --jsonl --scheme minhash --preset fineweb -
    neardup dedup corpus.parquet --output kept.parquet --removed removed.parquet
    neardup dedup --jsonl shards/ --text-field content --output kept.jsonl.zst";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct DedupArgs {
    /// Files, directories (recursively), '-' for stdin, or JSON Lines and Parquet datasets (see --jsonl).
    #[arg(required_unless_present = "files_from", value_name = "PATH")]
    paths: Vec<std::ffi::OsString>,
    /// SimHash: the largest Hamming distance (inclusive) at which two documents are near-duplicates, 0 to
    /// 7 [default: 3].
    #[arg(short, long)]
    k: Option<u32>,
    /// MinHash: the similarity (exact or estimated, see --verify) at which two documents are
    /// near-duplicates [default: 0.8, or the index's].
    #[arg(long, value_parser = crate::plan::parse_similarity)]
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
    /// How candidate pairs are checked against the threshold. MinHash [default: exact]. SimHash [default:
    /// none, the distance alone]: with exact, pairs within k must also reach --threshold by --measure.
    #[arg(long, value_enum)]
    verify: Option<VerifyArg>,
    /// SimHash with --verify exact: the exact measure, jaccard (of word n-grams, --verify-ngram) or cosine
    /// (of term frequencies) [default: jaccard].
    #[arg(long, value_enum, requires = "verify")]
    measure: Option<MeasureArg>,
    /// SimHash with --verify exact --measure jaccard: the word n-gram length [default: 3].
    #[arg(long, value_name = "N", requires = "verify", value_parser = clap::value_parser!(u32).range(1..=64))]
    verify_ngram: Option<u32>,
    /// How pairs become clusters: centres (every member within the threshold of its representative) or
    /// components (connected components: transitive, members can be far apart).
    #[arg(long, value_enum, default_value = "centres")]
    clustering: ClusteringArg,
    /// Which member of a cluster is kept (its representative).
    #[arg(long, value_enum, default_value = "smallest-id")]
    keep: KeepArg,
    /// Name clusters larger than this in a warning.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    warn_cluster_size: usize,
    /// Print every pair instead of clusters.
    #[arg(long)]
    pairs: bool,
    /// Print JSON lines.
    #[arg(long, conflicts_with = "null")]
    json: bool,
    #[command(flatten)]
    lines: crate::output::Lines,
    /// Print a header line naming the TSV columns.
    #[arg(long)]
    header: bool,
    #[command(flatten)]
    records: RecordArgs,
    /// Records: write the deduplicated dataset (the kept records, all fields) to FILE (.jsonl, .jsonl.gz,
    /// .jsonl.zst or .parquet, the input's family).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Records: write the removed records, with duplicate_of and score, to FILE.
    #[arg(long, value_name = "FILE")]
    removed: Option<PathBuf>,
    /// Write the cluster table (id, cluster, representative, duplicate_of, score) to FILE (.parquet,
    /// .jsonl, .jsonl.gz, .jsonl.zst, .tsv).
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    #[command(flatten)]
    doc: DocArgs,
    /// Check the documents against a persistent index (a directory or a Redis URL; see `neardup index`) as
    /// well as against each other, then add them to it. Stored ids that match appear in the output; an id already stored is replaced.
    #[arg(long, value_name = "INDEX")]
    index: Option<std::path::PathBuf>,
    #[command(flatten)]
    threads: Threads,
}

#[derive(Clone, Copy, ValueEnum)]
enum VerifyArg {
    /// The exact measure of the scheme, over the documents' shingles.
    Exact,
    /// The similarity estimated from the signatures.
    Estimate,
    /// Every LSH candidate is a pair.
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum MeasureArg {
    /// The Jaccard similarity of the sets of word n-grams.
    Jaccard,
    /// The cosine of the term-frequency vectors (the tokens the fingerprint summarizes).
    Cosine,
}

#[derive(Clone, Copy, ValueEnum)]
enum ClusteringArg {
    Centres,
    Components,
}

#[derive(Clone, Copy, ValueEnum)]
enum KeepArg {
    /// The smallest id in byte order.
    SmallestId,
    /// The first in input order.
    First,
    /// The one with the most tokens (shingles for MinHash), then the smallest id.
    Longest,
}

/// `--weights FP,FN`.
pub fn parse_weights(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("'{s}' is not two non-negative weights FP,FN (e.g. 0.5,0.5)");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let (a, b): (f64, f64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a >= 0.0 && b >= 0.0 && a + b > 0.0 && (a + b).is_finite() {
        Ok((a, b))
    } else {
        Err(bad())
    }
}

impl DedupArgs {
    /// The engine's options; refuses flags that do not apply to the method (the engine's rules, in the
    /// flags' spelling).
    fn options(&self, method: Method) -> Result<Options> {
        if let (Method::SimHash(scheme), Some(_)) = (method, self.preset) {
            bail!("--preset applies to MinHash schemes, not {scheme} (add --scheme minhash)");
        }
        let settings = Settings {
            k: self.k,
            threshold: self.threshold,
            verify: self.verify.map(|verify| match verify {
                VerifyArg::Exact => Verification::Exact,
                VerifyArg::Estimate => Verification::Estimate,
                VerifyArg::None => Verification::None,
            }),
            measure: self.measure.map(|measure| match measure {
                MeasureArg::Jaccard => ExactMeasure::Jaccard,
                MeasureArg::Cosine => ExactMeasure::Cosine,
            }),
            verify_ngram: self.verify_ngram,
            weights: self.weights,
            clustering: match self.clustering {
                ClusteringArg::Centres => Clustering::Centres,
                ClusteringArg::Components => Clustering::Components,
            },
            representative: match self.keep {
                KeepArg::SmallestId => Representative::SmallestId,
                KeepArg::First => Representative::FirstSeen,
                KeepArg::Longest => Representative::Longest,
            },
            large_cluster: self.warn_cluster_size,
        };
        settings
            .options(method)
            .map_err(|e| anyhow::anyhow!(e.message(&Spelling::FLAGS)))
    }
}

pub fn run(mut args: DedupArgs) -> Result<ExitCode> {
    // With an index, its scheme, parameters and LSH bands decide; flags may only repeat them.
    let index = match &args.index {
        Some(dir) => Some(Index::open(dir)?),
        None => None,
    };
    let method = match &index {
        Some(index) => {
            if args.preset.is_some() {
                bail!(
                    "--preset cannot change an existing index's settings ({})",
                    index.location()
                );
            }
            let method = index.method();
            args.doc.method.adopt(method, index.location())?;
            method
        }
        None => args
            .doc
            .method
            .method_with(args.preset.map(|p| (p.values, p.shingle)))?,
    };
    let mut options = args.options(method)?;
    if let Some(index) = &index
        && let Kind::Lsh { banding, threshold } = index.kind()
    {
        if args.threshold.is_some_and(|t| t != *threshold) {
            bail!(
                "the index's LSH bands were chosen for a similarity ≥ {threshold}; --threshold cannot change them"
            );
        }
        options.banding = Some(*banding);
        options.threshold = Some(*threshold);
    }
    let mut dedup = Dedup::with_preset(method, options, args.preset)?;
    args.doc.keep_profiles = dedup.options().verification == Verification::Exact;
    args.doc.simhash_check = dedup.simhash_verification().map(|(check, _)| check);
    args.threads.apply()?;
    let records = args.records.wanted(&args.paths, &args.doc);
    if !records && (args.output.is_some() || args.removed.is_some()) {
        bail!(
            "--output and --removed write the records of a dataset: give JSON Lines or Parquet inputs (or \
             --jsonl for stdin, and for directories that hold other files too)"
        );
    }
    if args.pairs && (args.output.is_some() || args.removed.is_some() || args.table.is_some()) {
        bail!("--output, --removed and --table follow the clusters: leave out --pairs");
    }
    let started = Instant::now();
    let mut tally = Tally::default();
    // Records: each pushed document's record ordinal, for writing the split. Files: each WARC member's record.
    let (dataset, ordinals, warc_records) = if records {
        let dataset = args.records.open(&args.paths, &args.doc, &mut tally)?;
        // Outputs that cannot be written, or would replace an input, are refused before the run.
        let checked = dataset.check_outputs(Outputs {
            kept: args.output.as_deref(),
            removed: args.removed.as_deref(),
            table: args.table.as_deref(),
        })?;
        for notice in &checked.notices {
            say!("warning: {notice}");
        }
        // A table inside a directory that was read as a dataset because it held only shards makes it a
        // directory of documents for the next run without --jsonl.
        if !args.records.jsonl {
            for (table, dir) in &checked.beside_shards {
                say!(
                    "warning: {}: this table is inside {dir}, read as a dataset because it held only \
                     shards; a later run over it needs --jsonl (without it, its files are documents)",
                    table.display()
                );
            }
        }
        let ordinals = read_records(&args, &dataset, &mut dedup, &mut tally)?;
        (Some(dataset), ordinals, WarcRecords::new())
    } else {
        let (read, warc_records) = read_files(&args, &mut dedup)?;
        tally = read;
        (None, Vec::new(), warc_records)
    };
    let finding = records::phase("finding near-duplicates");
    let bar = finding.clone();
    // Ctrl-C ends the process; nothing asks the run to stop.
    dedup.on_progress(move |p| {
        bar.set_message(describe_progress(p));
        std::ops::ControlFlow::Continue(())
    });
    if let Some(index) = &index {
        dedup.merge_index(index)?;
    }

    let files = args.output.is_some() || args.removed.is_some() || args.table.is_some();
    let stdout = std::io::stdout();
    let mut sink = CliSink {
        out: OutputGuard::new(std::io::BufWriter::new(stdout.lock())),
        json: args.json,
        lines: args.lines,
        warc_records,
        with_source: index.is_some(),
        quiet: files,
        removals: HashMap::new(),
        table: match &args.table {
            Some(path) => Some(TableWriter::create(path, args.header)?),
            None => None,
        },
    };
    if args.header && !args.json && !files {
        let header = match (args.pairs, index.is_some()) {
            (true, _) => format!("id_a\tid_b\t{}", dedup.measure().key()),
            (false, false) => format!("cluster\tid\t{}", dedup.measure().key()),
            (false, true) => format!("cluster\tid\t{}\tsource", dedup.measure().key()),
        };
        let lines = args.lines;
        sink.out.line(|w| {
            write!(w, "{header}")?;
            lines.end(w)
        });
    }
    let summary = if args.pairs {
        dedup.pairs(&mut sink)?
    } else {
        dedup.clusters(&mut sink)?
    };
    finding.finish_and_clear();
    sink.out.flush();
    if let (Some(table), Some(path)) = (sink.table.take(), &args.table) {
        let rows = table.finish()?;
        say!("wrote {rows} rows to {}", path.display());
    }
    if let Some(dataset) = &dataset
        && (args.output.is_some() || args.removed.is_some())
    {
        write_split(&args, dataset, &ordinals, &sink.removals)?;
    }

    // The index is updated whatever happened to the output: what the user asked to store is stored.
    if let Some(mut index) = index {
        let added = index.insert_all(dedup.documents().iter().map(|d| (&d.id, &d.sketch)))?;
        say!(
            "added {added} documents to {} ({} entries)",
            index.location(),
            index.len()
        );
        if let Some(e) = sink.out.error() {
            say!("error: the output was cut short ({e}); the index was updated all the same");
            return Ok(ExitCode::from(2));
        }
    }
    print_summary(&dedup, &summary, &tally, args.pairs, started);
    Ok(tally.exit_status(args.doc.strict))
}

/// The spinner's words for a stage of the engine.
fn describe_progress(p: Progress) -> String {
    let count = |n: u64| indicatif::HumanCount(n).to_string();
    match p.stage {
        Stage::Grouping => "grouping identical sketches".to_owned(),
        Stage::Candidates => format!(
            "finding near-duplicates among {} distinct sketches: {} candidates checked, {} pairs",
            count(p.distinct),
            count(p.candidates),
            count(p.pairs)
        ),
        Stage::Writing => format!("clustering and writing {} pairs", count(p.pairs)),
    }
}

fn print_summary(dedup: &Dedup, summary: &Summary, tally: &Tally, pairs: bool, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    let within = match dedup.bands() {
        None => match dedup.simhash_verification() {
            Some((check, t)) => format!("within k = {} and at {check} ≥ {t}", dedup.options().k),
            None => format!("within k = {}", dedup.options().k),
        },
        Some((banding, t)) => {
            let measure = dedup.measure();
            match dedup.options().verification {
                Verification::Estimate => format!("at estimated {measure} ≥ {t} ({banding})"),
                Verification::Exact => format!("at {measure} ≥ {t} ({banding})"),
                Verification::None => format!("sharing an LSH band ({banding}, unverified)"),
            }
        }
    };
    let stored = if summary.stored > 0 {
        format!(" and {} stored", summary.stored)
    } else {
        String::new()
    };
    if pairs {
        say!(
            "{} documents{stored}, {} pairs {within}, {}, {secs:.2} s",
            summary.documents,
            summary.pairs,
            tally.describe()
        );
        return;
    }
    say!(
        "{} documents{stored}, {} duplicates in {} clusters {within}, {}, {secs:.2} s",
        summary.documents,
        summary.duplicates,
        summary.clusters,
        tally.describe()
    );
    if !summary.sizes.is_empty() {
        let sizes: Vec<String> = summary
            .sizes
            .iter()
            .map(|&(lo, hi, n)| {
                if lo == hi {
                    format!("{lo}: {n}")
                } else {
                    format!("{lo}-{hi}: {n}")
                }
            })
            .collect();
        let largest: Vec<String> = summary
            .largest
            .iter()
            .map(|(rep, size)| format!("{size} ({rep})"))
            .collect();
        say!(
            "cluster sizes {}; largest {}",
            sizes.join(", "),
            largest.join(", ")
        );
    }
    for warning in &summary.warnings {
        say!("warning: {warning}");
    }
}

/// Writes the kept and removed records.
fn write_split(
    args: &DedupArgs,
    dataset: &Dataset,
    ordinals: &[u64],
    removals: &HashMap<u64, (String, f64)>,
) -> Result<()> {
    // Removals are keyed by the document's push index; the dataset knows records by ordinal.
    let by_ordinal: HashMap<u64, &(String, f64)> = removals
        .iter()
        .map(|(&doc, removal)| (ordinals[doc as usize], removal))
        .collect();
    let writing = records::phase("writing the deduplicated dataset");
    let split = dataset.write_split(
        &|ordinal| match by_ordinal.get(&ordinal) {
            Some((of, score)) => Decision::Remove {
                duplicate_of: of.clone(),
                score: *score,
            },
            None => Decision::Keep,
        },
        args.output.as_deref(),
        args.removed.as_deref(),
    )?;
    writing.finish_and_clear();
    for e in &split.errors {
        say!("{e}");
    }
    let name = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or_else(|| "not written".to_owned(), |p| p.display().to_string())
    };
    say!(
        "kept {} records ({}), removed {} ({})",
        split.kept,
        name(&args.output),
        split.removed,
        name(&args.removed)
    );
    if !split.errors.is_empty() {
        bail!("the dataset could not be written whole");
    }
    Ok(())
}

/// Writes pairs and clusters as TSV or JSON lines, collects the removals for the dataset split and writes
/// the cluster table. A write error on stdout (a closed pipe) is kept, not returned, so that the run goes
/// on to update an index and write its files.
struct CliSink<W: Write> {
    out: OutputGuard<W>,
    json: bool,
    lines: Lines,
    warc_records: WarcRecords,
    with_source: bool,
    /// Files carry the results: nothing on stdout.
    quiet: bool,
    /// Removed documents (by push index): the representative and the score.
    removals: HashMap<u64, (String, f64)>,
    table: Option<TableWriter>,
}

fn score_json(score: Score) -> (&'static str, serde_json::Value) {
    match score {
        Score::Distance(d) => ("distance", json!(d)),
        Score::Similarity(s) => ("similarity", json!(s)),
    }
}

impl<W: Write> Sink for CliSink<W> {
    fn pair(&mut self, a: &str, b: &str, score: Score) -> std::io::Result<()> {
        let (json, lines) = (self.json, self.lines);
        if self.quiet {
            return Ok(());
        }
        self.out.line(|w| {
            if json {
                let (key, value) = score_json(score);
                let mut line = json!({"a": a, "b": b});
                line[key] = value;
                writeln!(w, "{line}")
            } else {
                write!(w, "{}\t{}\t{score}", lines.id(a), lines.id(b))?;
                lines.end(w)
            }
        });
        Ok(())
    }

    fn cluster(&mut self, cluster: &Cluster<'_>) -> std::io::Result<()> {
        let (json, lines, with_source) = (self.json, self.lines, self.with_source);
        let warc_records = &self.warc_records;
        let number = cluster.number;
        let representative = cluster.representative().id;
        for m in &cluster.members[1..] {
            if let (Some(ordinal), Some(of), Some(score)) = (m.ordinal, m.duplicate_of, m.score) {
                self.removals
                    .insert(ordinal, (of.to_owned(), score.value()));
            }
        }
        if let Some(table) = &mut self.table {
            for m in &cluster.members {
                table
                    .write(&ClusterRow {
                        id: m.id,
                        cluster: number as u64,
                        representative,
                        duplicate_of: m.duplicate_of,
                        score: m.score.map(Score::value),
                    })
                    .map_err(std::io::Error::other)?;
            }
        }
        if self.quiet {
            return Ok(());
        }
        self.out.line(|w| {
            if json {
                let members: Vec<_> = cluster
                    .members
                    .iter()
                    .map(|m| {
                        let mut member = json!({"id": m.id});
                        if let (Some(of), Some(score)) = (m.duplicate_of, m.score) {
                            member["duplicate_of"] = json!(of);
                            let (key, value) = score_json(score);
                            member[key] = value;
                        }
                        if with_source {
                            member["stored"] = json!(m.stored);
                        }
                        if let Some(record) = warc_records.get(m.id) {
                            member["warc_record_id"] = json!(record.record_id);
                            member["warc_date"] = json!(record.date);
                        }
                        member
                    })
                    .collect();
                writeln!(
                    w,
                    "{}",
                    json!({"cluster": number, "representative": cluster.representative().id,
                           "size": cluster.members.len(), "members": members})
                )
            } else {
                let identical = match cluster.members.get(1).and_then(|m| m.score) {
                    Some(Score::Similarity(_)) => Score::Similarity(1.0),
                    _ => Score::Distance(0),
                };
                for m in &cluster.members {
                    let score = m.score.unwrap_or(identical);
                    write!(w, "{number}\t{}\t{score}", lines.id(m.id))?;
                    if with_source {
                        write!(w, "\t{}", if m.stored { "stored" } else { "new" })?;
                    }
                    lines.end(w)?;
                }
                Ok(())
            }
        });
        Ok(())
    }
}

/// Reads and sketches files and directories in parallel, pushing each document; returns the tally.
///
/// A file is read once whatever the names it is reached by, so ids are unique, except for WARC records,
/// named by their target URI: a URI captured in two archives (a re-crawl) or twice in one is named
/// `URI (in ARCHIVE)`, or `URI (in ARCHIVE, record N)`, everywhere it occurs.
fn read_files(args: &DedupArgs, dedup: &mut Dedup) -> Result<(Tally, WarcRecords)> {
    let mut tally = Tally::default();
    let mut read: Vec<(Option<String>, Option<RecordMeta>, Document)> = Vec::new();
    let doc = DocArgs {
        skip_dir: args.index.clone(),
        writes: args.table.clone(),
        takes_records: true,
        ..args.doc.clone()
    };
    tally.failed += doc.fingerprint_batches(&args.paths, |outcomes, progress| {
        for o in outcomes {
            match o.result {
                Ok(a) => read.push((
                    o.container,
                    o.record,
                    Document {
                        length: a.tokens,
                        profile: o.profile,
                        ..Document::new(o.label, a.sketch)
                    },
                )),
                Err(problem) => tally.record(progress, &o.label, &problem),
            }
        }
        Ok(())
    })?;
    let mut count: std::collections::HashMap<(String, Option<String>), usize> = Default::default();
    let mut by_id: std::collections::HashMap<String, usize> = Default::default();
    for (container, _, doc) in &read {
        *count
            .entry((doc.id.clone(), container.clone()))
            .or_default() += 1;
        *by_id.entry(doc.id.clone()).or_default() += 1;
    }
    let mut nth: std::collections::HashMap<(String, Option<String>), usize> = Default::default();
    let mut records = WarcRecords::new();
    for (container, record, mut doc) in read {
        if let Some(archive) = container.as_deref()
            && by_id[&doc.id] > 1
        {
            let key = (doc.id.clone(), container.clone());
            let n = nth.entry(key.clone()).or_default();
            *n += 1;
            doc.id = if count[&key] > 1 {
                format!("{} (in {archive}, record {n})", doc.id)
            } else {
                format!("{} (in {archive})", doc.id)
            };
        }
        if let Some(record) = record {
            records.insert(doc.id.clone(), record);
        }
        dedup.push(doc)?;
    }
    Ok((tally, records))
}

/// The WARC records of a run by document id, for their `WARC-Record-ID` and date in JSON output.
type WarcRecords = HashMap<String, RecordMeta>;

/// Reads the records of a dataset and pushes each document; returns each pushed document's record ordinal.
/// Records that are not documents (bad lines, duplicate ids) are reported and counted by the reader.
fn read_records(
    args: &DedupArgs,
    dataset: &Dataset,
    dedup: &mut Dedup,
    tally: &mut Tally,
) -> Result<Vec<u64>> {
    let method = dedup.method();
    let keep = args.doc.keep_profiles;
    let mut ordinals = Vec::new();
    records::sketch_all(dataset, &args.doc, method, keep, tally, |batch| {
        for record in batch {
            // Those that could not be sketched are counted by sketch_all.
            if let Ok((sketch, profile, length)) = record.result {
                ordinals.push(record.ordinal);
                dedup.push(Document {
                    length,
                    profile,
                    ..Document::new(record.id, sketch)
                })?;
            }
        }
        Ok(())
    })?;
    Ok(ordinals)
}

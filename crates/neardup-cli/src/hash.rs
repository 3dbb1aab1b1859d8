//! `neardup hash`: fingerprints for files, directories, stdin and JSONL corpora.

use crate::inputs::{DocArgs, Outcome, Tally, Threads};
use crate::records::{self, RecordArgs};
use anyhow::Result;
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

const AFTER_HELP: &str = "\
Output: one line per document, in the order the paths were given (directories in sorted path order,
whatever the number of threads):

    simhash-doc-v1:qikqezyce3ajc<TAB>docs/index.html

A WARC archive (.warc, .warc.gz) gives one line per HTML, XML, PDF or text response record, named
by its WARC-Target-URI.

With --scheme minhash, each line carries a MinHash signature instead, its parameters in the string:
    minhash-oph-v1:k=128,seed=0,f=w5:BASE32...<TAB>docs/index.html

With --json, one JSON object per line with the medium, the encoding and how it was chosen, and the
token count. A document that cannot be fingerprinted (unreadable, binary, unsupported medium, a
PDF without a text layer, malformed XML, or with no words at all) is reported on stderr with its
path; the others still go on, and the exit status is 1 if any failed.

Media are detected from the content (magic bytes, HTML and XML sniffing), the file extension
second; --media overrides. Text is extracted per medium: HTML's main content (<main>, role=main,
a single <article>, itemprop=articleBody; never nav, aside, forms, hidden elements), XML by its
vocabulary (JATS, TEI, DocBook, else all text), the text layer of a PDF (hyphenation at line ends
joined, running headers dropped), the spine of an EPUB.

The scheme, simhash-doc-v1: text is extracted as above, Cf
characters deleted, NFKC-normalized and case-folded; chunks that are URLs, e-mail addresses or DOIs
are dropped; words are runs of letters, marks, digits and '_' (each Han, kana, Thai, Lao, Khmer or
Myanmar letter is a word of its own); each word occurrence is hashed with lookup3 and summed into a
64-bit SimHash. Full definition: docs/spec/simhash-doc-v1.md.

Examples:
    neardup hash paper.pdf paper.html paper.xml
    neardup hash crawl.warc.gz
    neardup hash --json docs/ > fingerprints.jsonl
    neardup hash --scheme minhash --num-perm 256 --shingle 3 docs/
    curl -s https://example.org/ | neardup hash --media html -
    zstd -dc corpus.jsonl.zst | neardup hash --jsonl -";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct HashArgs {
    /// Files, directories (walked recursively, hidden entries skipped) or '-' for stdin.
    #[arg(required_unless_present = "files_from", value_name = "PATH")]
    paths: Vec<std::ffi::OsString>,
    /// Write one JSON object per line instead of `FINGERPRINT<TAB>PATH`.
    #[arg(long, conflicts_with = "null")]
    json: bool,
    #[command(flatten)]
    lines: crate::output::Lines,
    #[command(flatten)]
    records: RecordArgs,
    #[command(flatten)]
    doc: DocArgs,
    /// Report each document's medium, encoding and token count on stderr, and a summary at the end.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    threads: Threads,
}

pub fn run(mut args: HashArgs) -> Result<ExitCode> {
    args.threads.apply()?;
    // Documents' warnings point to --jsonl, which this command has.
    args.doc.takes_records = true;
    if args.records.wanted(&args.paths, &args.doc) {
        return run_records(&args);
    }
    let started = Instant::now();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut docs, mut total_bytes) = (0usize, 0u64);
    let mut tally = Tally::default();
    tally.failed += args
        .doc
        .fingerprint_batches(&args.paths, |outcomes, progress| {
            for o in outcomes {
                docs += 1;
                total_bytes += o.bytes;
                print_outcome(&mut out, &o, &args, progress, &mut tally)?;
            }
            // Output appears batch by batch, as it is ready.
            out.flush()?;
            Ok(())
        })?;
    Ok(finish(&args, docs, total_bytes, &tally, started))
}

/// Prints one outcome; returns whether it succeeded.
fn print_outcome(
    out: &mut impl Write,
    o: &Outcome,
    args: &HashArgs,
    progress: &ProgressBar,
    tally: &mut Tally,
) -> Result<()> {
    match &o.result {
        Ok(a) => {
            if args.json {
                let mut line = json!({
                    "path": o.label,
                    "fingerprint": a.sketch.to_string(),
                    "media": a.media.name(),
                    "encoding": a.encoding,
                    "encoding_source": a.encoding_source.name(),
                    "malformed": a.malformed,
                    "tokens": a.tokens,
                    "bytes": o.bytes,
                });
                if let Some(record) = &o.record {
                    line["warc_record_id"] = json!(record.record_id);
                    line["warc_date"] = json!(record.date);
                }
                writeln!(out, "{line}")?;
            } else {
                write!(out, "{}\t{}", a.sketch, args.lines.id(&o.label))?;
                args.lines.end(out)?;
            }
            if args.verbose {
                let malformed = if a.malformed {
                    ", invalid bytes replaced"
                } else {
                    ""
                };
                progress.suspend(|| {
                    say!(
                        "{}: {}, {} ({}){malformed}, {} tokens",
                        o.label,
                        a.media,
                        a.encoding,
                        a.encoding_source,
                        a.tokens
                    )
                });
            }
            Ok(())
        }
        Err(problem) => {
            if args.json {
                let kind = if problem.empty { "empty" } else { "error" };
                writeln!(out, "{}", json!({ "path": o.label, kind: problem.message }))?;
            }
            tally.record(progress, &o.label, problem);
            Ok(())
        }
    }
}

/// One JSONL document's outcome.
/// Sketches the records of JSON Lines or Parquet inputs in parallel batches, printed in input order.
fn run_records(args: &HashArgs) -> Result<ExitCode> {
    let method = args.doc.method.method()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let started = Instant::now();
    let (mut docs, mut total_bytes) = (0usize, 0u64);
    let mut tally = Tally::default();
    let dataset = args.records.open(&args.paths, &args.doc, &mut tally)?;
    records::sketch_all(&dataset, &args.doc, method, false, &mut tally, |batch| {
        for record in batch {
            docs += 1;
            total_bytes += record.bytes;
            match &record.result {
                Ok((sketch, _, _)) if args.json => writeln!(
                    out,
                    "{}",
                    json!({"id": record.id, "fingerprint": sketch.to_string(), "bytes": record.bytes})
                )?,
                Ok((sketch, _, _)) => {
                    write!(out, "{sketch}\t{}", args.lines.id(&record.id))?;
                    args.lines.end(&mut out)?;
                }
                // Counted and reported by sketch_all; written here as a line of the output too.
                Err(problem) if args.json => {
                    let kind = if problem.empty { "empty" } else { "error" };
                    writeln!(out, "{}", json!({"id": record.id, kind: problem.message}))?;
                }
                Err(_) => {}
            }
        }
        Ok(())
    })?;
    out.flush()?;
    Ok(finish(args, docs, total_bytes, &tally, started))
}

/// The end of a run: the summary if asked, and the exit status (1 if any document failed).
fn finish(args: &HashArgs, docs: usize, bytes: u64, tally: &Tally, started: Instant) -> ExitCode {
    if args.verbose {
        let secs = started.elapsed().as_secs_f64();
        say!(
            "{docs} documents, {:.1} MB in {secs:.2} s ({:.1} MB/s), {}",
            bytes as f64 / 1e6,
            bytes as f64 / 1e6 / secs.max(1e-9),
            tally.describe()
        );
    }
    tally.exit_status(args.doc.strict)
}

//! `neardup`: the command-line front door. Each subcommand translates arguments into calls of the `neardup`
//! library (the engine: schemes, [`neardup::dedup`], [`neardup::index`]) and formats the results; no
//! algorithm lives here, and nothing below the engine is imported. `serve` starts the `neardup-server`
//! crate's service.

// Doc comments in this crate are `--help` text, where `<TAB>` means a tab character, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

/// mimalloc instead of glibc's allocator: the service allocates and frees small buffers on whichever tokio
/// worker runs a request, where glibc's arenas and `malloc_consolidate` cost about 15 % of its fingerprint
/// query throughput (docs/performance.md, the service); batch commands use less CPU and the same peak memory
/// at 10^6 documents and more. (Not in the Python module: Spark's forked Python workers were not tested with
/// it long enough.)
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `eprintln!` for the run's report: "neardup: " and the message, its control characters shown escaped.
/// Messages carry paths, record ids, field values and the library's errors, which must not forge report lines
/// or drive the terminal (an id holding `ESC [2J` would clear it). Defined before the modules that use it.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("neardup: {}", $crate::inputs::terminal_safe(&format!($($arg)*)))
    };
}

mod bench;
mod calibrate;
mod charts;
mod compare;
mod dedup;
mod explain;
mod hash;
mod index;
mod inputs;
mod output;
mod plan;
mod records;
mod serve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

const ABOUT: &str = "Find near-duplicate documents with interoperable fingerprints.";

const LONG_ABOUT: &str = "\
Find near-duplicate documents with interoperable fingerprints.

neardup reads text, HTML, XML (JATS, TEI, DocBook), PDF, EPUB and WARC archives in any encoding,
extracts the text, and computes a fingerprint under a named, versioned scheme. The default scheme is simhash-doc-v1: a 64-bit SimHash of the
document's words (Unicode-normalized, case-folded, URLs and DOIs removed), written as
'simhash-doc-v1:' and 13 base32 characters. The same text gives the same fingerprint from
any medium and in any implementation of the spec (docs/spec/simhash-doc-v1.md).

Two documents whose fingerprints differ in d bits have similarity 1 - d/64:
close >= 0.98 (d <= 1), loose >= 0.90 (d <= 6); k = 3 is the default lookup distance.

With --scheme minhash (and the other MinHash-family schemes of docs/spec/minhash-v1.md), every
command works with MinHash signatures of word n-grams instead: similarity is the Jaccard
similarity of the shingle sets, found with LSH bands chosen for a threshold.";

#[derive(Parser)]
#[command(name = "neardup", version, about = ABOUT, long_about = LONG_ABOUT, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fingerprint files, directories (recursively) or stdin.
    Hash(hash::HashArgs),
    /// Compare two documents or fingerprints: distance, similarity, verdict.
    Compare(compare::CompareArgs),
    /// Explain why two documents match or not: shared and unique features, the estimate beside the exact
    /// measures, the SimHash bits that differ and the tokens behind them, an aligned diff.
    Explain(explain::ExplainArgs),
    /// Find near-duplicates: sketch everything, print clusters (or pairs) within k bits (SimHash) or at a
    /// Jaccard threshold (MinHash).
    Dedup(dedup::DedupArgs),
    /// Choose k or a threshold on your own documents: score distributions, precision and recall per
    /// setting against ground truth, charts (SVG, PNG) and one self-contained report.html.
    Calibrate(calibrate::CalibrateArgs),
    /// A persistent index: create, add, add-fingerprints, query, remove, stats.
    Index(index::IndexArgs),
    /// Choose the permuted-table design for N fingerprints and distance k.
    Plan(plan::PlanArgs),
    /// Measure single-thread fingerprinting throughput (text in, fingerprint out) on a JSONL corpus.
    Bench(bench::BenchArgs),
    /// Serve indexes over HTTP: online lookup and durable inserts, with tokens, limits and metrics.
    Serve(serve::ServeArgs),
    /// Internal: read one PDF from standard input and write its pages (the isolated PDF reader).
    #[command(hide = true, name = "pdf-worker")]
    PdfWorker,
}

fn main() -> ExitCode {
    // A panic inside the PDF extractor, or inside the index's database on a damaged file, is caught and
    // reported as an error; the default hook would also print a panic message and backtrace for it, as if
    // neardup itself had crashed. Those threads are known by name.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let quiet = [
            neardup::text::PDF_THREAD_NAME,
            neardup::index::QUIET_THREAD_NAME,
        ];
        let caught = std::thread::current()
            .name()
            .is_some_and(|name| quiet.contains(&name))
            || neardup_io::decoding_parquet();
        if !caught {
            default_hook(info);
        }
    }));
    let cli = Cli::parse();
    // Every PDF is read by a worker process of this same program, killed when its time is up and capped in
    // memory: a PDF that overflows the extractor's stack or eats memory costs that worker, not this run.
    if let Ok(program) = std::env::current_exe() {
        neardup::text::isolate_pdf_in_worker(neardup::text::PdfWorker {
            program,
            args: vec!["pdf-worker".into()],
            // mimalloc reserves 1 GiB of address space at a time, the worker's whole ceiling: a smaller step.
            env: vec![("MIMALLOC_ARENA_RESERVE".into(), "64MiB".into())],
        });
    }
    let result = match cli.command {
        Command::Hash(args) => hash::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Dedup(args) => dedup::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Index(args) => index::run(args),
        Command::Serve(args) => serve::run(args),
        // The worker reads its PDF on a thread of its own: the isolation above is for its callers.
        Command::PdfWorker => return ExitCode::from(neardup::text::run_pdf_worker()),
    };
    match result {
        Ok(code) => code,
        // The reader of a read-only command's output went away (`neardup hash ... | head`): stop quietly,
        // as other tools do. Commands that write (an index, files) finish their writes and report a closed
        // output themselves, with a non-zero status.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            say!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

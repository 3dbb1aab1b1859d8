//! `neardup compare`: how close two documents (or fingerprints) are.

use crate::inputs::DocArgs;
use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Each operand is a file, '-' for stdin, or a fingerprint string such as
simhash-doc-v1:qikqezyce3ajc (any case; '===' padding accepted). Files are fingerprinted with the
scheme of --scheme; fingerprints carry their own scheme, and two different schemes are never
compared.

Output: both fingerprints, the Hamming distance d, the similarity 1 - d/64, and the verdict:
close (similarity >= 0.98, d <= 1), loose (>= 0.90, d <= 6) or different.

Examples:
    neardup compare paper.html paper.txt
    neardup compare --json old/page.html simhash-doc-v1:qikqezyce3ajc";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct CompareArgs {
    /// The first document or fingerprint.
    a: String,
    /// The second document or fingerprint.
    b: String,
    /// Write one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    doc: DocArgs,
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.a == "-" && args.b == "-" {
        bail!("only one operand can be '-' (stdin)");
    }
    let fa = args.doc.fingerprint_of(&args.a)?;
    let fb = args.doc.fingerprint_of(&args.b)?;
    let distance = fa.distance(&fb)?;
    let similarity = fa.similarity(&fb)?;
    let verdict = fa.verdict(&fb)?;
    if args.json {
        let report = json!({
            "a": {"input": args.a, "fingerprint": fa.to_string()},
            "b": {"input": args.b, "fingerprint": fb.to_string()},
            "scheme": fa.scheme().name(),
            "distance": distance,
            "similarity": similarity,
            "verdict": verdict.name(),
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "{}\t{}", fa, args.a)?;
        writeln!(out, "{}\t{}", fb, args.b)?;
        writeln!(out, "distance\t{distance}")?;
        writeln!(out, "similarity\t{similarity:.6}")?;
        writeln!(out, "verdict\t{verdict}")?;
    }
    Ok(ExitCode::SUCCESS)
}

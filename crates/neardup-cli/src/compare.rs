//! `neardup compare`: how close two documents (or fingerprints, or signatures) are.

use crate::inputs::{DocArgs, Source};
use anyhow::{Context, Result, bail};
use clap::Args;
use neardup::{Method, Sketch, exact_jaccard};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Each operand is a file, '-' for stdin, or a fingerprint or signature string such as
simhash-doc-v1:qikqezyce3ajc (any case; '===' padding accepted). Files are sketched with the
scheme of --scheme; strings carry their own scheme and parameters, and sketches of different
schemes or parameters are never compared.

SimHash output: both fingerprints, the Hamming distance d, the similarity 1 - d/64, and the
verdict: close (similarity >= 0.98, d <= 1), loose (>= 0.90, d <= 6) or different.

MinHash output (--scheme minhash, or two signature strings): the estimated Jaccard similarity
of the two shingle sets (the fraction of signature values that agree) and, when both operands are
documents, the exact Jaccard similarity of their shingle sets.

Examples:
    neardup compare paper.html paper.txt
    neardup compare --json old/page.html simhash-doc-v1:qikqezyce3ajc
    neardup compare --scheme minhash --shingle 3 v1/README v2/README";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct CompareArgs {
    /// The first document, fingerprint or signature.
    a: String,
    /// The second document, fingerprint or signature.
    b: String,
    /// Write one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    doc: DocArgs,
}

/// An operand's sketch, and its shingle set when it is a document sketched with MinHash.
fn operand(doc: &DocArgs, operand: &str) -> Result<(Sketch, Option<Vec<u64>>)> {
    let method = doc.method.method()?;
    let is_document = operand == "-" || Path::new(operand).exists();
    match method {
        Method::MinHash(scheme) if is_document => {
            let source = if operand == "-" {
                Source::Stdin
            } else {
                Source::File(operand.into())
            };
            let text = doc.extract_text(&source).with_context(|| source.label())?;
            let sketch = scheme.sketch_text(&text).with_context(|| source.label())?;
            Ok((sketch, Some(scheme.shingle_set(&text))))
        }
        _ => Ok((doc.sketch_of(operand)?, None)),
    }
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.a == "-" && args.b == "-" {
        bail!("only one operand can be '-' (stdin)");
    }
    let (sa, shingles_a) = operand(&args.doc, &args.a)?;
    let (sb, shingles_b) = operand(&args.doc, &args.b)?;
    let similarity = sa.similarity(&sb)?;
    match (&sa, &sb) {
        (Sketch::Fingerprint(fa), Sketch::Fingerprint(fb)) => {
            let distance = fa.distance(fb)?;
            let verdict = fa.verdict(fb)?;
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
                writeln!(out, "{fa}\t{}", args.a)?;
                writeln!(out, "{fb}\t{}", args.b)?;
                writeln!(out, "distance\t{distance}")?;
                writeln!(out, "similarity\t{similarity:.6}")?;
                writeln!(out, "verdict\t{verdict}")?;
            }
        }
        _ => {
            let exact = match (&shingles_a, &shingles_b) {
                (Some(a), Some(b)) => Some(exact_jaccard(a, b)),
                _ => None,
            };
            let scheme = sa.signature().map(|s| s.params().to_string());
            if args.json {
                let report = json!({
                    "a": {"input": args.a, "signature": sa.to_string(), "shingles": shingles_a.as_ref().map(Vec::len)},
                    "b": {"input": args.b, "signature": sb.to_string(), "shingles": shingles_b.as_ref().map(Vec::len)},
                    "scheme": scheme,
                    "estimated_jaccard": similarity,
                    "exact_jaccard": exact,
                });
                writeln!(out, "{report}")?;
            } else {
                writeln!(out, "scheme\t{}", scheme.unwrap_or_default())?;
                writeln!(out, "estimated jaccard\t{similarity:.6}")?;
                if let Some(exact) = exact {
                    writeln!(out, "exact jaccard\t{exact:.6}")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

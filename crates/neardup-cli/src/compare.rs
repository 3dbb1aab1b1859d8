//! `neardup compare`: how close two documents (or fingerprints, or signatures) are.

use crate::inputs::{DocArgs, Source};
use anyhow::{Context, Result, bail};
use clap::Args;
use neardup::{Measure, Method, Profile, SampleEstimate, Sketch, set_overlap, shingle_set};
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

MinHash output (--scheme minhash, or two signature strings): the estimated similarity (the
fraction of signature values that agree) and, when both operands are documents, the exact value of
the measure the scheme estimates: the Jaccard similarity of the shingle sets, or for wminhash-v1
and pminhash-v1 the weighted or probability Jaccard similarity of the shingle counts. Each number
is labelled with its measure.

With --exit-code, the exit status says the verdict, like cmp -s or diff: 0 when the two are
near-duplicates (SimHash: within k = 3 bits, or -k; MinHash: exact, else estimated, similarity at
least --threshold, default 0.8; bottom-k: resemblance at least --threshold), 1 when they are not.

Bottom-k output (--scheme bottomk): estimated resemblance (Jaccard) and containment of each in
the other (|A ∩ B| / |A|: 'this page is part of that document'), each with the number of sampled
shingles it rests on, and the exact values when both operands are documents.

Examples:
    neardup compare paper.html paper.txt
    neardup compare --json old/page.html simhash-doc-v1:qikqezyce3ajc
    neardup compare --scheme minhash --shingle 3 v1/README v2/README
    neardup compare --scheme bottomk --num-perm 1024 page.html report.pdf
    neardup compare --exit-code a.html b.html && echo same";

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
    /// Exit with status 0 if the two are near-duplicates, 1 if not (errors: 2).
    #[arg(long)]
    exit_code: bool,
    /// With --exit-code, SimHash: the largest distance that counts as a near-duplicate [default: 3].
    #[arg(short, long)]
    k: Option<u32>,
    /// With --exit-code, MinHash and bottom-k: the similarity that counts as a near-duplicate
    /// [default: 0.8].
    #[arg(long, value_parser = crate::plan::parse_similarity)]
    threshold: Option<f64>,
    #[command(flatten)]
    doc: DocArgs,
}

/// An operand's sketch, and its exact profile when it is a document sketched from shingles.
fn operand(doc: &DocArgs, operand: &str) -> Result<(Sketch, Option<Profile>)> {
    let method = doc.method.method()?;
    let is_document = operand == "-" || Path::new(operand).exists();
    let features = match method {
        Method::MinHash(scheme) => Some(scheme.params().features),
        Method::BottomK(params) => Some(params.features),
        Method::SimHash(_) => None,
    };
    match features {
        Some(features) if is_document => {
            let source = if operand == "-" {
                Source::Stdin
            } else {
                Source::File(operand.into())
            };
            let text = doc.extract_text(&source).with_context(|| source.label())?;
            // MinHash makes the profile in the same pass as the signature; bottom-k needs a second pass.
            let (sketch, profile) = method
                .sketch_text_with_profile(&text)
                .with_context(|| source.label())?;
            Ok((
                sketch,
                Some(profile.unwrap_or_else(|| Profile::Set(shingle_set(&text, features)))),
            ))
        }
        _ => Ok((doc.sketch_of(operand)?, None)),
    }
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.a == "-" && args.b == "-" {
        bail!("only one operand can be '-' (stdin)");
    }
    if !args.exit_code && (args.k.is_some() || args.threshold.is_some()) {
        bail!(
            "-k and --threshold set what --exit-code counts as a near-duplicate: add --exit-code"
        );
    }
    let (sa, profile_a) = operand(&args.doc, &args.a)?;
    let (sb, profile_b) = operand(&args.doc, &args.b)?;
    let similarity = sa.similarity(&sb)?;
    let threshold = args.threshold.unwrap_or(neardup::dedup::DEFAULT_THRESHOLD);
    // Whether the two are near-duplicates, for --exit-code.
    let same;
    match (&sa, &sb) {
        (Sketch::Fingerprint(fa), Sketch::Fingerprint(fb)) => {
            let distance = fa.distance(fb)?;
            let verdict = fa.verdict(fb)?;
            same = distance <= args.k.unwrap_or(fa.scheme().default_k());
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
        (Sketch::BottomK(a), Sketch::BottomK(b)) => {
            let resemblance = a.resemblance(b)?;
            let a_in_b = a.containment_in(b)?;
            let b_in_a = b.containment_in(a)?;
            same = resemblance.value >= threshold;
            let exact = match (&profile_a, &profile_b) {
                (Some(x), Some(y)) => {
                    let (x, y) = (x.hashes(), y.hashes());
                    let (common, union) = set_overlap(&x, &y);
                    let ratio = |n: usize, d: usize| n as f64 / d.max(1) as f64;
                    Some((
                        ratio(common, union),
                        ratio(common, x.len()),
                        ratio(common, y.len()),
                    ))
                }
                _ => None,
            };
            if args.json {
                let est = |e: SampleEstimate| json!({"value": e.value, "sample": e.sample, "exact": e.exact});
                let report = json!({
                    "a": {"input": args.a, "sketch": sa.to_string()},
                    "b": {"input": args.b, "sketch": sb.to_string()},
                    "scheme": a.params().to_string(),
                    "resemblance": est(resemblance),
                    "containment_a_in_b": est(a_in_b),
                    "containment_b_in_a": est(b_in_a),
                    "exact": exact.map(|(r, ab, ba)| json!({"resemblance": r, "containment_a_in_b": ab, "containment_b_in_a": ba})),
                });
                writeln!(out, "{report}")?;
            } else {
                writeln!(out, "scheme\t{}", a.params())?;
                for (name, e) in [
                    ("resemblance", resemblance),
                    ("containment of a in b", a_in_b),
                    ("containment of b in a", b_in_a),
                ] {
                    let how = if e.exact {
                        "exact".to_owned()
                    } else {
                        format!("{} sampled shingles", e.sample)
                    };
                    writeln!(out, "{name}\t{:.6}\t({how})", e.value)?;
                }
                if let Some((r, ab, ba)) = exact {
                    writeln!(out, "exact resemblance\t{r:.6}")?;
                    writeln!(out, "exact containment of a in b\t{ab:.6}")?;
                    writeln!(out, "exact containment of b in a\t{ba:.6}")?;
                }
            }
        }
        _ => {
            let measure = sa.method().map_or(Measure::Jaccard, |m| m.measure());
            let exact = match (&profile_a, &profile_b) {
                (Some(a), Some(b)) => Some(a.similarity(b, measure)),
                _ => None,
            };
            same = exact.unwrap_or(similarity) >= threshold;
            let scheme = sa.signature().map(|s| s.params().to_string());
            if args.json {
                let report = json!({
                    "a": {"input": args.a, "signature": sa.to_string(), "shingles": profile_a.as_ref().map(Profile::len)},
                    "b": {"input": args.b, "signature": sb.to_string(), "shingles": profile_b.as_ref().map(Profile::len)},
                    "scheme": scheme,
                    "measure": measure.key(),
                    format!("estimated_{}", measure.key()): similarity,
                    format!("exact_{}", measure.key()): exact,
                });
                writeln!(out, "{report}")?;
            } else {
                writeln!(out, "scheme\t{}", scheme.unwrap_or_default())?;
                writeln!(out, "estimated {measure}\t{similarity:.6}")?;
                if let Some(exact) = exact {
                    writeln!(out, "exact {measure}\t{exact:.6}")?;
                }
            }
        }
    }
    out.flush()?;
    Ok(if args.exit_code && !same {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

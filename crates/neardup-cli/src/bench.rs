//! `neardup bench`: end-to-end sketching throughput on one thread, text in, fingerprint or signature out.

use crate::inputs::MediaChoice;
use crate::inputs::MethodArgs;
use anyhow::{Context, Result, bail};
use clap::Args;
use neardup::Sketch;
use std::io::BufRead;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

const AFTER_HELP: &str = "\
Loads the documents into memory first, then fingerprints all of them --repeat times on one thread
and prints the time of each pass, the median and the throughput in MB/s (10^6 bytes of UTF-8 text
per second). Reading and JSON parsing are not timed. With --media, each \"text\" is a document of that
medium (an HTML page, say): its extraction is timed too, as `neardup hash` and the service do it.

Examples (the corpus of the evaluation data is JSONL compressed with zstd):
    zstd -dc ../shared/eval/corpus/corpus-00.jsonl.zst | neardup bench --mb 100 -
    neardup bench --repeat 9 docs.jsonl
    neardup bench --scheme minhash --num-perm 128 docs.jsonl
    neardup bench --media html pages.jsonl      # \"text\" holds whole HTML pages";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct BenchArgs {
    /// JSON Lines files ('-' for stdin) whose objects have a "text" field.
    #[arg(required = true, value_name = "JSONL")]
    inputs: Vec<String>,
    /// Use only the first MB megabytes of text (10^6 bytes).
    #[arg(long, value_name = "MB")]
    mb: Option<f64>,
    /// Number of timed passes.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    #[command(flatten)]
    method: MethodArgs,
    /// Each "text" is a whole document of this medium (html, xml, ...), extracted in the timed passes as
    /// `neardup hash --jsonl --media MEDIA` does; without it (or with text or auto), the text is sketched as
    /// it is.
    #[arg(long, value_name = "MEDIA", value_parser = crate::inputs::parse_media)]
    media: Option<MediaChoice>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let method = args.method.method()?;
    let mut out = std::io::stdout().lock();
    let limit = args.mb.map(|mb| (mb * 1e6) as usize).unwrap_or(usize::MAX);
    let mut texts = Vec::new();
    let mut bytes = 0usize;
    'files: for input in &args.inputs {
        let reader = crate::inputs::open_lines(input).map_err(anyhow::Error::msg)?;
        for (n, line) in reader.lines().enumerate() {
            let line = line.with_context(|| format!("{input}:{}", n + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(&line)
                .with_context(|| format!("{input}:{}: not JSON", n + 1))?;
            let Some(text) = v.get("text").and_then(|t| t.as_str()) else {
                bail!("{input}:{}: no \"text\" string field", n + 1);
            };
            if bytes + text.len() > limit {
                break 'files;
            }
            bytes += text.len();
            texts.push(text.to_owned());
        }
    }
    if texts.is_empty() {
        bail!("no documents to time");
    }
    let non_ascii = texts
        .iter()
        .map(|t| t.bytes().filter(|b| !b.is_ascii()).count())
        .sum::<usize>();
    let mut passes = Vec::with_capacity(args.repeat);
    let mut checksum = 0u64;
    for pass in 0..args.repeat.max(1) {
        let start = Instant::now();
        let mut sum = 0u64;
        for t in &texts {
            let sketch = match args.media {
                None => method.sketch_text(t),
                Some(media) => crate::inputs::sketch_record_text(media, method, t, false, None)
                    .map(|(sketch, _, _)| sketch),
            };
            match sketch {
                Ok(Sketch::Fingerprint(fp)) => sum = sum.wrapping_add(fp.bits()),
                Ok(Sketch::Signature(sig)) => {
                    sum = sig
                        .values()
                        .iter()
                        .fold(sum, |s, &v| s.rotate_left(5) ^ u64::from(v))
                }
                Ok(Sketch::BottomK(sample)) => {
                    sum = sample
                        .hashes()
                        .iter()
                        .fold(sum, |s, &v| s.rotate_left(5) ^ v)
                }
                Err(_) => {}
            }
        }
        passes.push(start.elapsed().as_secs_f64());
        // A checksum of all sketches of one pass: equal checksums mean equal output.
        if pass == 0 {
            checksum = sum;
        }
    }
    let mut sorted = passes.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mbps = bytes as f64 / 1e6 / median;
    if args.json {
        let report = serde_json::json!({
            "scheme": method.name(), "media": args.media.map(|m| m.to_string()), "documents": texts.len(), "bytes": bytes,
            "non_ascii_fraction": non_ascii as f64 / bytes as f64, "passes_s": passes,
            "median_s": median, "mb_per_s": mbps, "checksum": format!("{checksum:016x}"),
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(
            out,
            "{} documents, {:.1} MB ({:.1} % non-ASCII bytes), scheme {}{}",
            texts.len(),
            bytes as f64 / 1e6,
            100.0 * non_ascii as f64 / bytes as f64,
            method,
            match args.media.and_then(MediaChoice::extracted) {
                Some(m) => format!(", extracted as {m} documents"),
                None => String::new(),
            }
        )?;
        let shown: Vec<String> = passes.iter().map(|p| format!("{p:.3}")).collect();
        writeln!(out, "passes (s): {}", shown.join(" "))?;
        writeln!(
            out,
            "median {median:.3} s = {mbps:.1} MB/s on one thread (checksum {checksum:016x})"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

//! `neardup plan`: which permuted-table design to use for N fingerprints and distance k, or which LSH banding
//! to use for MinHash signatures and a Jaccard threshold.

use crate::charts::{Chart, Series, Style};
use anyhow::{Result, bail};
use clap::Args;
use neardup::plan::{Banding, Estimate, Preset, optimize, plan, query_cost};
use plotters::prelude::SeriesLabelPosition;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Finding every fingerprint within k bits uses block-permuted tables (Manku, Jain and Das Sarma
2007): the 64 bits are split into blocks; any two fingerprints within k bits agree on all but at
most k blocks, so one table per choice of agreeing blocks finds every such pair, with no misses.
More tables mean longer keys and fewer candidates to check, but more memory.

For each design the table shows the tables, the key length in bits, the expected candidates
checked per query (N / 2^key per table, for well-spread fingerprints; real data is skewed, so
treat it as a lower bound) and the memory of the index's tables (per fingerprint: 8 bytes for the
fingerprint and, per table after the first, a 2-byte row where the table shares leading key bits
with an earlier one and its ranges of them hold at most 65,536 fingerprints, else a 4-byte row;
plus the bucket directories; ids not included). The first row is the recommendation: the lowest
predicted query cost (60 ns per table + 1 ns per candidate) within the memory budget.

With --scheme minhash (any MinHash scheme), it chooses the LSH banding instead: b bands of r
signature values; two documents become candidates when all values of a band agree, which
happens with probability P(J) = 1 - (1 - J^r)^b for Jaccard similarity J. The banding minimizes
the weighted areas of false positives (P below the threshold) and false negatives (1 - P above
it), as datasketch does, but never leaves signature values unused without saying so: where b does
not divide the number of values, some bands get one more row. It prints the S-curve. Presets
reproduce published pipelines (fineweb, refinedweb/gopher, the-stack).

Examples:
    neardup plan -n 1e9 -k 3
    neardup plan --n 1e8 --k 5 --memory 64G
    neardup plan --scheme minhash --threshold 0.8
    neardup plan --scheme minhash --threshold 0.7 --num-perm 256 --fn-weight 0.7
    neardup plan --scheme minhash --preset fineweb
    neardup plan --scheme minhash --threshold 0.8 --plot s-curve.svg
    neardup plan -n 1e9 -k 3 --plot designs.png";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct PlanArgs {
    /// Expected number of fingerprints (1e9, 250000000, ...); needed for SimHash tables.
    #[arg(short, long, value_parser = parse_count)]
    n: Option<f64>,
    /// The scheme family to plan for: simhash (permuted tables) or minhash (LSH bands).
    #[arg(long, default_value = "simhash")]
    scheme: String,
    /// MinHash: the Jaccard similarity to find.
    #[arg(long, default_value_t = 0.8, value_parser = parse_similarity)]
    threshold: f64,
    /// MinHash: values per signature (K, datasketch's num_perm).
    #[arg(
        long = "num-perm",
        visible_alias = "values",
        value_name = "K",
        default_value_t = 128,
        value_parser = parse_num_perm
    )]
    values: u32,
    /// MinHash: a published configuration instead of the optimizer (fineweb, refinedweb, gopher, the-stack).
    #[arg(long, value_parser = parse_preset)]
    preset: Option<&'static Preset>,
    /// MinHash: weight of false positives in the optimizer [default: 0.05, what `neardup dedup` and
    /// `neardup index create` use, since they verify candidates; datasketch uses 0.5].
    #[arg(long, default_value_t = neardup::dedup::default_weights(neardup::dedup::Verification::Exact).0, value_parser = parse_weight)]
    fp_weight: f64,
    /// MinHash: weight of false negatives in the optimizer [default: 0.95; datasketch uses 0.5].
    #[arg(long, default_value_t = neardup::dedup::default_weights(neardup::dedup::Verification::Exact).1, value_parser = parse_weight)]
    fn_weight: f64,
    /// Maximum Hamming distance to find (inclusive), 0 to 7.
    #[arg(short, long, default_value_t = 3)]
    k: u32,
    /// Memory budget for the tables (bytes, or with a K/M/G/T suffix, powers of 1024).
    #[arg(long, value_parser = parse_bytes)]
    memory: Option<f64>,
    /// How many designs to show.
    #[arg(long, default_value_t = 8)]
    top: usize,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
    /// Also draw the plan to FILE (.svg or .png): the S-curve with the printed points (MinHash), or the
    /// designs' expected candidates per query against their tables (SimHash).
    #[arg(long, value_name = "FILE")]
    plot: Option<std::path::PathBuf>,
}

/// `--preset NAME`: one of the published LSH configurations.
pub fn parse_preset(s: &str) -> Result<&'static Preset, String> {
    Preset::named(s).map_err(|e| e.to_string())
}

/// A similarity from 0 to 1 (`--threshold`): NaN, infinities and values outside are refused.
pub fn parse_similarity(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if (0.0..=1.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "'{s}' is not a similarity between 0 and 1 (e.g. 0.8)"
        )),
    }
}

/// A weight of the optimizer: a finite number, at least 0.
pub fn parse_weight(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(w) if w >= 0.0 && w.is_finite() => Ok(w),
        _ => Err(format!("'{s}' is not a weight of at least 0 (e.g. 0.5)")),
    }
}

/// A count of signature values (`--num-perm`), within the engine's range.
pub fn parse_num_perm(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(k) if (1..=neardup::schemes::MAX_NUM_PERM).contains(&k) => Ok(k),
        _ => Err(format!(
            "'{s}' is not a number of values from 1 to {}",
            neardup::schemes::MAX_NUM_PERM
        )),
    }
}

pub fn parse_count(s: &str) -> Result<f64, String> {
    match s.replace('_', "").parse::<f64>() {
        Ok(n) if n >= 1.0 && n.is_finite() => Ok(n),
        _ => Err(format!(
            "'{s}' is not a count of at least 1 (e.g. 1e9 or 250000000)"
        )),
    }
}

/// A size in bytes as a whole number (`--max-bytes 256M`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bytes = parse_bytes(s)?;
    if bytes >= 1.0 && bytes < u64::MAX as f64 {
        Ok(bytes as u64)
    } else {
        Err(format!("'{s}' is not a size of at least one byte"))
    }
}

/// A size: bytes, or with a K/M/G/T suffix (powers of 1024; `KB`, `KiB` alike).
pub fn parse_bytes(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t
        .strip_suffix("IB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(&t)
        .to_owned();
    let (num, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1024f64),
        Some('M') => (&t[..t.len() - 1], 1024f64.powi(2)),
        Some('G') => (&t[..t.len() - 1], 1024f64.powi(3)),
        Some('T') => (&t[..t.len() - 1], 1024f64.powi(4)),
        _ => (t.as_str(), 1.0),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n * mult)
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 64G, 512M, 1000000)"))
}

fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    let family = args.scheme.to_ascii_lowercase();
    if family.starts_with("minhash") || family.starts_with("wminhash") {
        return run_lsh(&args);
    }
    if !family.starts_with("simhash") {
        bail!(
            "--scheme {}: plan knows the simhash family (permuted tables) and the minhash family (LSH bands)",
            args.scheme
        );
    }
    let Some(n) = args.n else {
        bail!(
            "--n is needed to plan SimHash tables: the expected number of fingerprints (e.g. --n 1e9)"
        );
    };
    let mut out = std::io::stdout().lock();
    if args.k > neardup::schemes::MAX_K {
        bail!(
            "--k {} is out of range: the planner covers k = 0 to {} for 64-bit fingerprints",
            args.k,
            neardup::schemes::MAX_K
        );
    }
    let designs: Vec<Estimate> = plan(args.k, n, args.memory);
    if designs.is_empty() {
        bail!(
            "no design fits in {} for {} fingerprints at k = {}: raise --memory",
            human_bytes(args.memory.unwrap_or(0.0)),
            n,
            args.k
        );
    }
    if let Some(file) = &args.plot {
        crate::charts::write_file(&designs_chart(&designs, &args), file)?;
    }
    if args.json {
        for (rank, e) in designs.iter().take(args.top).enumerate() {
            let line = json!({
                "rank": rank + 1, "design": e.design.to_string(), "levels": e.design.levels, "k": args.k,
                "tables": e.tables, "key_bits_min": e.key_bits.0, "key_bits_max": e.key_bits.1,
                "candidates_per_query": e.candidates_per_query, "bytes": e.bytes, "cost": query_cost(e),
            });
            writeln!(out, "{line}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "k = {}, N = {:.3e}{}",
        args.k,
        n,
        args.memory
            .map_or(String::new(), |m| format!(", memory ≤ {}", human_bytes(m)))
    )?;
    writeln!(
        out,
        "{:<4} {:<36} {:>6} {:>9} {:>14} {:>11}",
        "rank", "design", "tables", "key bits", "cand./query", "memory"
    )?;
    for (rank, e) in designs.iter().take(args.top).enumerate() {
        let keys = if e.key_bits.0 == e.key_bits.1 {
            format!("{}", e.key_bits.0)
        } else {
            format!("{}-{}", e.key_bits.0, e.key_bits.1)
        };
        writeln!(
            out,
            "{:<4} {:<36} {:>6} {:>9} {:>14.1} {:>11}",
            rank + 1,
            e.design.to_string(),
            e.tables,
            keys,
            e.candidates_per_query,
            human_bytes(e.bytes)
        )?;
    }
    writeln!(
        out,
        "recommended: {} ({} tables)",
        designs[0].design, designs[0].tables
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The LSH banding for a threshold (or a preset), with its S-curve.
fn run_lsh(args: &PlanArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let (banding, threshold, source) = match args.preset {
        Some(preset) => (preset.banding(), preset.threshold, Some(preset)),
        None => (
            optimize(args.threshold, args.values, args.fp_weight, args.fn_weight)?,
            args.threshold,
            None,
        ),
    };
    // datasketch's grid (b·r ≤ K) and default weights (0.5, 0.5), for comparison.
    let datasketch = (1..=banding.values)
        .flat_map(|b| (1..=banding.values / b).map(move |r| (b, r)))
        .map(|(b, r)| Banding::fixed(b, r, banding.values).expect("b·r ≤ K"))
        .min_by(|x, y| {
            let cost = |z: &Banding| {
                let (fp, fn_) = z.error_areas(threshold);
                0.5 * fp + 0.5 * fn_
            };
            cost(x).total_cmp(&cost(y))
        })
        .expect("K ≥ 1");
    let curve: Vec<(f64, f64)> = (0..10)
        .map(|i| 0.5 + 0.05 * i as f64)
        .map(|j| (j, banding.probability(j)))
        .collect();
    let (fp, fn_) = banding.error_areas(threshold);
    if let Some(file) = &args.plot {
        crate::charts::write_file(&s_curve_chart(&banding, threshold, &curve), file)?;
    }
    if args.json {
        let line = json!({
            "threshold": threshold, "values": banding.values, "bands": banding.bands, "rows": banding.rows,
            "wide_bands": banding.wide, "unused_values": banding.unused(), "preset": source.map(|p| p.name),
            "false_positive_area": fp, "false_negative_area": fn_, "midpoint": banding.midpoint(),
            "s_curve": curve.iter().map(|(j, p)| json!({"jaccard": j, "p_candidate": p})).collect::<Vec<_>>(),
        });
        writeln!(out, "{line}")?;
        return Ok(ExitCode::SUCCESS);
    }
    match source {
        Some(p) => writeln!(out, "preset {}: {}", p.name, p.source)?,
        None => writeln!(
            out,
            "Jaccard ≥ {threshold} with {} values per signature (weights: false positives {}, false negatives {}; \
             the bands `neardup dedup` uses with these settings)",
            banding.values, args.fp_weight, args.fn_weight
        )?,
    }
    writeln!(out, "banding: {banding}")?;
    writeln!(out, "{:<8} {:>12}", "Jaccard", "P(candidate)")?;
    for (j, p) in &curve {
        writeln!(out, "{j:<8.2} {p:>12.4}")?;
    }
    writeln!(
        out,
        "P(candidate) = 0.5 at Jaccard {:.3}; false-positive area {fp:.4}, false-negative area {fn_:.4}",
        banding.midpoint()
    )?;
    if source.is_none() {
        let (dfp, dfn) = datasketch.error_areas(threshold);
        writeln!(
            out,
            "datasketch's optimizer would choose {datasketch} (areas {dfp:.4} / {dfn:.4})"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The S-curve of a banding, with the points the table prints.
pub fn s_curve_chart(banding: &Banding, threshold: f64, printed: &[(f64, f64)]) -> Chart {
    Chart {
        title: format!("S-curve of {banding}"),
        x_label: "Jaccard similarity".to_owned(),
        y_label: "P(candidate)".to_owned(),
        x: (0.0, 1.0),
        y: (0.0, 1.05),
        series: vec![
            Series {
                name: "1 - (1 - s^r)^b".to_owned(),
                points: (0..=100)
                    .map(|i| i as f64 / 100.0)
                    .map(|j| (j, banding.probability(j)))
                    .collect(),
                style: Style::Line,
            },
            Series {
                name: "the printed table".to_owned(),
                points: printed.to_vec(),
                style: Style::Points,
            },
        ],
        markers: vec![(threshold, format!("threshold {threshold}"))],
        legend: SeriesLabelPosition::UpperLeft,
    }
}

/// The designs shown (the --top first), as expected candidates per query (log10) against tables.
fn designs_chart(designs: &[Estimate], args: &PlanArgs) -> Chart {
    let shown: Vec<&Estimate> = designs.iter().take(args.top).collect();
    let point = |e: &Estimate| (e.tables as f64, e.candidates_per_query.max(1e-3).log10());
    let points: Vec<(f64, f64)> = shown.iter().map(|e| point(e)).collect();
    let (x_max, y_min, y_max) = points
        .iter()
        .fold((1.0f64, 0.0f64, 1.0f64), |(x, lo, hi), p| {
            (x.max(p.0), lo.min(p.1), hi.max(p.1))
        });
    Chart {
        title: format!(
            "table designs for k = {}, N = {:.1e}",
            args.k,
            args.n.unwrap_or(0.0)
        ),
        x_label: "tables".to_owned(),
        y_label: "log10 candidates per query".to_owned(),
        x: (0.0, x_max * 1.1 + 1.0),
        y: (y_min.floor() - 0.5, y_max.ceil() + 0.5),
        series: vec![
            Series {
                name: format!("the {} designs shown", points.len()),
                points: points.clone(),
                style: Style::Points,
            },
            Series {
                name: format!("recommended: {}", designs[0].design),
                points: vec![point(&designs[0])],
                style: Style::Points,
            },
        ],
        markers: Vec::new(),
        legend: SeriesLabelPosition::UpperRight,
    }
}

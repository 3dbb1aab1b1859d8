//! `neardup plan`: which permuted-table design to use for N fingerprints and distance k.

use anyhow::{Result, bail};
use clap::Args;
use neardup_index::plan::{Estimate, plan, query_cost};
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
fingerprint, 1 byte per table and a 4-byte slot per table after the first; plus the bucket
directories; ids not included). The first row is the recommendation: the lowest predicted
query cost (60 ns per table + 1 ns per candidate) within the memory budget.

Examples:
    neardup plan --n 1e9 --k 3
    neardup plan --n 1e8 --k 5 --memory 64G";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct PlanArgs {
    /// Expected number of fingerprints (1e9, 250000000, ...).
    #[arg(long, value_parser = parse_count)]
    n: f64,
    /// Maximum Hamming distance to find (inclusive), 0 to 7.
    #[arg(long, default_value_t = 3)]
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
}

pub fn parse_count(s: &str) -> Result<f64, String> {
    match s.replace('_', "").parse::<f64>() {
        Ok(n) if n >= 1.0 && n.is_finite() => Ok(n),
        _ => Err(format!(
            "'{s}' is not a count of at least 1 (e.g. 1e9 or 250000000)"
        )),
    }
}

fn parse_bytes(s: &str) -> Result<f64, String> {
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
        .map(|n| n * mult)
        .map_err(|_| format!("'{s}' is not a size (e.g. 64G, 512M, 1000000)"))
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
    let mut out = std::io::stdout().lock();
    if args.k > 7 {
        bail!(
            "--k {} is out of range: the planner covers k = 0 to 7 for 64-bit fingerprints",
            args.k
        );
    }
    let designs: Vec<Estimate> = plan(args.k, args.n, args.memory);
    if designs.is_empty() {
        bail!(
            "no design fits in {} for {} fingerprints at k = {}: raise --memory",
            human_bytes(args.memory.unwrap_or(0.0)),
            args.n,
            args.k
        );
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
        args.n,
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

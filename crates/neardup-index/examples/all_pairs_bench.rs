//! All pairs within k on synthetic fingerprints: `cargo run --release -p neardup-index --example all_pairs_bench -- N [K] [BLOCKS]`.
//!
//! N random 64-bit fingerprints, 1 % of them replaced by near-copies (1 to K bits flipped) of others, the same
//! set-up as the simhash-cpp `find_all` figures in the project's research notes. Prints the time of the search
//! alone (generation excluded) and the number of pairs; run it under `/usr/bin/time -v` for peak memory.
//! BLOCKS picks a one-level design (6 = Manku's 20 tables for k = 3, as simhash-cpp uses); default: the
//! planner's choice.

use neardup_index::hamming::all_pairs;
use neardup_index::hamming::plan::{Design, recommend};
use std::time::Instant;

#[path = "common/synthetic.rs"]
mod synthetic;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, k) = synthetic::n_and_k(&args);
    let design = match args.get(3).and_then(|s| s.parse::<u32>().ok()) {
        Some(b) => Design::new(k, vec![b]).expect("a valid block count (more than k)"),
        None => recommend(k, n as f64),
    };
    let fps = synthetic::fingerprints(n, k, &mut synthetic::XorShift::new());
    let start = Instant::now();
    let mut pairs = 0u64;
    all_pairs(&fps, &design, |_, _, _| pairs += 1);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "n = {n}, k = {k}, design: {design} ({} tables): {pairs} pairs in {secs:.3} s",
        design.tables()
    );
}

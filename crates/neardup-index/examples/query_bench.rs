//! Point queries into the online index: `cargo run --release -p neardup-index --example query_bench -- N [K]`.
//!
//! N synthetic fingerprints (`common/synthetic.rs`, as in `all_pairs_bench`), then 200,000 queries:
//! half are stored fingerprints with 0 to K bits flipped, half are random. Prints build time and the median
//! and 99th percentile query latency (timed in batches of 100 queries to keep the clock out of the figure).

use neardup_index::online::HammingIndex;
use std::time::Instant;

#[path = "common/synthetic.rs"]
mod synthetic;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, k) = synthetic::n_and_k(&args);
    let mut rng = synthetic::XorShift::new();
    let fps = synthetic::fingerprints(n, k, &mut rng);
    // Ids like a crawler's (URL-sized strings), made before the clock starts: the load is what is timed.
    let entries: Vec<(String, u64)> = fps
        .iter()
        .enumerate()
        .map(|(i, &fp)| (format!("https://example.org/{i}"), fp))
        .collect();
    let start = Instant::now();
    let mut index = HammingIndex::new(k, n);
    index.extend(entries).expect("load");
    let build = start.elapsed().as_secs_f64();
    let t = Instant::now();
    index.rebuild();
    let rebuild = t.elapsed().as_secs_f64();
    let queries: Vec<u64> = (0..200_000)
        .map(|q| {
            if q % 2 == 0 {
                let mut fp = fps[(rng.next() % n as u64) as usize];
                for _ in 0..(rng.next() % (k as u64 + 1)) {
                    fp ^= 1 << (rng.next() % 64);
                }
                fp
            } else {
                rng.next()
            }
        })
        .collect();
    let mut per_query = Vec::new();
    let mut found = 0usize;
    for batch in queries.chunks(100) {
        let t = Instant::now();
        for &q in batch {
            found += index.query(q, k).expect("query").len();
        }
        per_query.push(t.elapsed().as_secs_f64() * 1e6 / batch.len() as f64);
    }
    per_query.sort_by(f64::total_cmp);
    let median = per_query[per_query.len() / 2];
    let p99 = per_query[per_query.len() * 99 / 100];
    println!(
        "n = {n}, k = {k}, design: {} ({} tables): bulk load {build:.2} s ({:.0} entries/s; table build alone {rebuild:.2} s); query median {median:.2} µs, p99 {p99:.2} µs; {found} matches",
        index.design(),
        index.design().tables(),
        n as f64 / build
    );
}

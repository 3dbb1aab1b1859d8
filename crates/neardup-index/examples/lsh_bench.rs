//! LSH inserts and queries: `cargo run --release -p neardup-index --example lsh_bench -- [N] [BANDS] [ROWS]`.
//!
//! N signatures of BANDS × ROWS values (default 1,000,000 of 16 × 8 = 128, the configuration peers are
//! measured with), 1 % of them near-copies of others (a few values changed), ids shaped like URLs. Inserts
//! them one by one into an empty index (the online path, no bulk load), then runs 200,000 queries: half
//! are stored signatures with a few values changed, half random. Prints inserts/s, queries/s and memory.

use neardup_index::lsh::{Banding, LshIndex};
use std::time::Instant;

#[path = "common/synthetic.rs"]
#[allow(dead_code)] // only its random generator is used here
mod synthetic;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .map(|s| s.parse::<f64>().expect("N: a number") as usize)
        .unwrap_or(1_000_000);
    let bands: u32 = args.get(2).map_or(16, |s| s.parse().expect("BANDS"));
    let rows: u32 = args.get(3).map_or(8, |s| s.parse().expect("ROWS"));
    let k = (bands * rows) as usize;
    let banding = Banding::fixed(bands, rows, bands * rows).expect("banding");
    let mut rng = synthetic::XorShift::new();
    let mut sigs: Vec<u32> = Vec::with_capacity(n * k);
    for i in 0..n {
        if i > 0 && i % 100 == 0 {
            // A near-copy: an earlier signature with about 5 % of its values changed.
            let of = (rng.next() % i as u64) as usize;
            for j in 0..k {
                let v = sigs[of * k + j];
                sigs.push(if rng.next().is_multiple_of(20) {
                    rng.next() as u32
                } else {
                    v
                });
            }
        } else {
            sigs.extend((0..k).map(|_| rng.next() as u32));
        }
    }
    let ids: Vec<String> = (0..n).map(|i| format!("https://example.org/{i}")).collect();
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let mut index = LshIndex::new(banding);
    for (i, id) in ids.iter().enumerate() {
        index.insert(id, &sigs[i * k..(i + 1) * k]).expect("insert");
    }
    let (insert_s, insert_cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    // The bulk path, as a store loads an index (and as peers' `insert_many`).
    let (bulk_start, cpu) = (Instant::now(), cpu_seconds());
    let mut bulk = LshIndex::new(banding);
    bulk.extend(
        ids.iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), &sigs[i * k..(i + 1) * k])),
    )
    .expect("extend");
    let (bulk_s, bulk_cpu) = (bulk_start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    drop(bulk);
    let queries: Vec<Vec<u32>> = (0..200_000)
        .map(|q| {
            if q % 2 == 0 {
                let of = (rng.next() % n as u64) as usize;
                let mut s = sigs[of * k..(of + 1) * k].to_vec();
                for _ in 0..4 {
                    s[(rng.next() % k as u64) as usize] = rng.next() as u32;
                }
                s
            } else {
                (0..k).map(|_| rng.next() as u32).collect()
            }
        })
        .collect();
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let mut found = 0usize;
    for q in &queries {
        found += index.query(q).expect("query").len();
    }
    let (query_s, query_cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let flat: Vec<u32> = queries.concat();
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let found_many: usize = index
        .query_many(&flat)
        .expect("query_many")
        .iter()
        .map(Vec::len)
        .sum();
    let (many_s, many_cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    assert_eq!(found_many, found, "query_many finds what query finds");
    let q = queries.len() as f64;
    println!(
        "{n} signatures, {banding}\n  inserts one by one: {:.0}/s wall, {:.0} per CPU-s\n  bulk insert (extend): {:.0}/s wall, {:.0} per CPU-s\n  queries one by one: {:.0}/s wall, {:.0} per CPU-s ({found} candidates)\n  bulk queries (query_many): {:.0}/s wall, {:.0} per CPU-s\n  memory: {:.0} bytes per signature",
        n as f64 / insert_s,
        n as f64 / insert_cpu,
        n as f64 / bulk_s,
        n as f64 / bulk_cpu,
        q / query_s,
        q / query_cpu,
        q / many_s,
        q / many_cpu,
        {
            let m = index.memory();
            (m.table_bytes + m.id_bytes) as f64 / n as f64
        }
    );
}

/// The process's CPU time, all threads (Linux `/proc/self/stat`, in ticks of 1/100 s; wall time elsewhere), so
/// that figures taken on a busy machine are comparable.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (which is in parentheses and may hold spaces): utime is the 12th.
            let rest = &s[s.rfind(')')? + 2..];
            let mut fields = rest.split_whitespace().skip(11);
            let user: f64 = fields.next()?.parse().ok()?;
            let system: f64 = fields.next()?.parse().ok()?;
            Some((user + system) / 100.0)
        })
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed().as_secs_f64()
        })
}

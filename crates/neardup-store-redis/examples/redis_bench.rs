//! Throughput, latency and memory of an index in Redis (see docs/redis.md, "Benchmark"):
//!
//! ```text
//! cargo run --release -p neardup-store-redis --example redis_bench -- \
//!     --url redis://127.0.0.1:6379/bench --n 1000000 [--kind simhash|minhash] [--queries 20000] [--clients 2]
//! ```
//!
//! Loads N entries (SimHash fingerprints in clusters of near-duplicates, or 128-value MinHash signatures
//! from the generator `benches/redis/datasketch_redis.py` shares, so the peer indexes the same ones) in batches
//! of 10,000, then times queries from one process and from `--clients` processes at once (this program
//! again, with `--query-only`). Prints one JSON line per measure. The index is deleted at the end unless
//! `--keep`.

use neardup_index::hamming::plan::recommend;
use neardup_index::lsh::Banding;
use neardup_index::persistent::{Edit, PersistentIndex};
use neardup_index::store::{Kind, Meta};
use neardup_store_redis::{RedisLocation, RedisStore};
use std::time::Instant;

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Entry i's fingerprint: one of N/4 bases with up to 3 bits flipped.
fn fingerprint(i: u64, n: u64) -> u64 {
    let mut s = i ^ 0x5eed;
    let mut b = (splitmix(&mut s) % (n / 4).max(1)) ^ 0xba5e;
    let base = splitmix(&mut b);
    (0..splitmix(&mut s) % 4).fold(base, |fp, _| fp ^ (1 << (splitmix(&mut s) % 64)))
}

/// Entry i's signature: 128 values, the same as `benches/redis/datasketch_redis.py` makes. Entries come in
/// groups of 4 that share a base; each value is the base's with probability 7/8, else another.
fn signature(i: u64) -> Vec<u32> {
    let mut base = (i / 4).wrapping_mul(0x9e37_79b9) ^ 0xba5e;
    let mut s = i ^ 0x5eed;
    (0..128)
        .map(|_| {
            let v = (splitmix(&mut base) >> 32) as u32;
            let r = splitmix(&mut s);
            if r.is_multiple_of(8) {
                (r >> 32) as u32
            } else {
                v
            }
        })
        .collect()
}

struct Args {
    url: String,
    n: u64,
    kind: String,
    queries: u64,
    clients: usize,
    query_only: bool,
    keep: bool,
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        n: 1_000_000,
        kind: "simhash".into(),
        queries: 20_000,
        clients: 2,
        query_only: false,
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--url" => a.url = value(),
            "--n" => a.n = value().parse::<f64>().expect("--n N") as u64,
            "--kind" => a.kind = value(),
            "--queries" => a.queries = value().parse().expect("--queries Q"),
            "--clients" => a.clients = value().parse().expect("--clients C"),
            "--query-only" => a.query_only = true,
            "--keep" => a.keep = true,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!a.url.is_empty(), "--url redis://HOST:PORT/NAME is needed");
    a
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Times `queries` queries; prints and returns (per second, p50 µs, p99 µs).
fn run_queries(index: &PersistentIndex<RedisStore>, a: &Args, seed: u64) -> (f64, f64, f64) {
    let mut latencies = Vec::with_capacity(a.queries as usize);
    let mut s = seed;
    let mut found = 0usize;
    let started = Instant::now();
    for _ in 0..a.queries {
        let i = splitmix(&mut s) % a.n;
        let t = Instant::now();
        found += if a.kind == "simhash" {
            index
                .query_fingerprint(fingerprint(i ^ 1, a.n), 3)
                .unwrap()
                .len()
        } else {
            index.query_signature(&signature(i)).unwrap().len()
        };
        latencies.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let secs = started.elapsed().as_secs_f64();
    assert!(found > 0, "the queries found nothing: is the index loaded?");
    latencies.sort_by(f64::total_cmp);
    (
        a.queries as f64 / secs,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    )
}

fn main() {
    // `--print-signature I`: entry I's signature, to check that the peer's script makes the same.
    if std::env::args().nth(1).as_deref() == Some("--print-signature") {
        let i: u64 = std::env::args()
            .nth(2)
            .and_then(|i| i.parse().ok())
            .expect("an entry number");
        println!("{:?}", signature(i));
        return;
    }
    let a = args();
    let location = RedisLocation::parse(&a.url).expect("a Redis URL");
    if a.query_only {
        let index = PersistentIndex::open(RedisStore::open(&location).unwrap()).unwrap();
        let (qps, p50, p99) = run_queries(&index, &a, std::process::id() as u64);
        println!("{qps} {p50} {p99}");
        return;
    }
    let kind = if a.kind == "simhash" {
        Kind::Hamming(recommend(3, a.n as f64))
    } else {
        let banding = Banding::fixed(16, 8, 128).unwrap();
        Kind::Lsh {
            banding,
            threshold: 0.8,
        }
    };
    let scheme = if a.kind == "simhash" {
        "simhash-doc-v1"
    } else {
        "minhash-oph-v1"
    };
    let meta = Meta {
        scheme: scheme.into(),
        kind,
    };
    let _ = RedisStore::destroy(&location);
    let store = RedisStore::create(&location, &meta.to_settings(), a.n).unwrap();
    let memory_before = store.used_memory().unwrap();
    let mut index = PersistentIndex::open(store).unwrap();
    let started = Instant::now();
    let mut i = 0;
    while i < a.n {
        let end = (i + 10_000).min(a.n);
        let batch: Vec<Edit> = (i..end)
            .map(|j| {
                let id = format!("doc-{j:09}");
                if a.kind == "simhash" {
                    Edit::Put(id, fingerprint(j, a.n))
                } else {
                    Edit::PutSignature(id, signature(j))
                }
            })
            .collect();
        index.apply(&batch).unwrap();
        i = end;
        if i % 1_000_000 == 0 {
            eprintln!("loaded {i} in {:.0} s", started.elapsed().as_secs_f64());
        }
    }
    let load = started.elapsed().as_secs_f64();
    let memory = index.store().used_memory().unwrap() - memory_before;
    println!(
        "{{\"measure\": \"load\", \"kind\": \"{}\", \"n\": {}, \"inserts_per_s\": {:.0}, \"redis_bytes_per_entry\": {:.1}}}",
        a.kind,
        a.n,
        a.n as f64 / load,
        memory as f64 / a.n as f64
    );
    let (qps, p50, p99) = run_queries(&index, &a, 7);
    println!(
        "{{\"measure\": \"queries\", \"clients\": 1, \"per_s\": {qps:.0}, \"p50_us\": {p50:.0}, \"p99_us\": {p99:.0}}}"
    );
    if a.clients > 1 {
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..a.clients)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args(["--url", &a.url, "--n", &a.n.to_string(), "--kind", &a.kind])
                    .args(["--queries", &a.queries.to_string(), "--query-only"])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let (mut total, mut p50s, mut p99s) = (0.0, 0.0f64, 0.0f64);
        for child in children {
            let out = child.wait_with_output().unwrap();
            let v: Vec<f64> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            total += v[0];
            p50s = p50s.max(v[1]);
            p99s = p99s.max(v[2]);
        }
        println!(
            "{{\"measure\": \"queries\", \"clients\": {}, \"per_s\": {total:.0}, \"p50_us\": {p50s:.0}, \"p99_us\": {p99s:.0}}}",
            a.clients
        );
    }
    if !a.keep {
        RedisStore::destroy(&location).unwrap();
    }
}

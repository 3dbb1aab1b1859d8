//! The Redis store against real Redis servers on loopback: the `Store` conformance suite on one server and
//! on a cluster, indexes that answer exactly as in memory, two processes writing and querying one index at
//! once, and a primary killed in the middle of a write load.

mod support;

use neardup_index::hamming::plan::recommend;
use neardup_index::lsh::Banding;
use neardup_index::persistent::{Edit, PersistentIndex};
use neardup_index::store::conformance::{Factory, run_all};
use neardup_index::store::{Kind, MemoryStore, Meta, Store};
use neardup_store_redis::{RedisLocation, RedisStore};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Cluster, Server, have_redis};

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fingerprint near one of 50 bases (so that ids have neighbours), from a seed.
fn fingerprint(seed: u64) -> u64 {
    let mut s = seed;
    let mut base_seed = splitmix(&mut s) % 50;
    let base = splitmix(&mut base_seed);
    let flips = splitmix(&mut s) % 5;
    (0..flips).fold(base, |fp, _| fp ^ (1 << (splitmix(&mut s) % 64)))
}

fn location(url: &str) -> RedisLocation {
    RedisLocation::parse(url).unwrap()
}

fn unique(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn conformance(url_for: impl Fn(&str) -> String) {
    run_all(&mut Factory {
        create: Box::new(|settings| {
            RedisStore::create(&location(&url_for(&unique("conf"))), settings, 1000).unwrap()
        }),
        reopen: Box::new(|store: RedisStore| {
            let location = store.redis_location().clone();
            drop(store);
            RedisStore::open(&location).unwrap()
        }),
    });
}

#[test]
fn conformance_on_one_redis() {
    if !have_redis() {
        return;
    }
    let server = Server::start(&[]);
    conformance(|name| server.url(name));
}

#[test]
fn conformance_on_a_cluster() {
    if !have_redis() {
        return;
    }
    let cluster = Cluster::start(3);
    conformance(|name| cluster.url(name));
}

fn hamming_meta() -> Meta {
    Meta {
        scheme: "simhash-doc-v1".into(),
        kind: Kind::Hamming(recommend(3, 1e4)),
    }
}

/// Every query of a Redis-held index answers as the same index in memory does, through inserts,
/// replacements and deletions, for both kinds; a second handle sees the first one's writes at once.
#[test]
fn indexes_in_a_cluster_answer_as_in_memory() {
    if !have_redis() {
        return;
    }
    let cluster = Cluster::start(3);
    let meta = hamming_meta();
    let loc = location(&cluster.url(&unique("hamming")));
    let mut redis =
        PersistentIndex::open(RedisStore::create(&loc, &meta.to_settings(), 2000).unwrap())
            .unwrap();
    let other = PersistentIndex::open(RedisStore::open(&loc).unwrap()).unwrap();
    let mut memory = PersistentIndex::open(MemoryStore::new(meta.to_settings()).unwrap()).unwrap();
    let mut seed = 1u64;
    for round in 0..6 {
        let mut batch = Vec::new();
        for _ in 0..300 {
            let r = splitmix(&mut seed);
            let id = format!("doc-{}", r % 1000);
            batch.push(if round > 2 && r.is_multiple_of(7) {
                Edit::Delete(id)
            } else {
                Edit::Put(id, fingerprint(r))
            });
        }
        redis.apply(&batch).unwrap();
        memory.apply(&batch).unwrap();
        assert_eq!(other.len(), memory.len(), "round {round}: the count");
        for q in 0..40u64 {
            let probe = fingerprint(q * 7919 + round);
            for k in [0, 2, 3] {
                assert_eq!(
                    other.query_fingerprint(probe, k).unwrap(),
                    memory.hamming().unwrap().query(probe, k).unwrap(),
                    "round {round}, probe {probe:x}, k {k}"
                );
            }
        }
    }
    assert_eq!(other.fingerprint("doc-1"), memory.fingerprint("doc-1"));

    let banding = Banding::fixed(8, 4, 32).unwrap();
    let meta = Meta {
        scheme: "minhash-oph-v1".into(),
        kind: Kind::Lsh {
            banding,
            threshold: 0.5,
        },
    };
    let loc = location(&cluster.url(&unique("lsh")));
    let mut redis =
        PersistentIndex::open(RedisStore::create(&loc, &meta.to_settings(), 500).unwrap()).unwrap();
    let mut memory = PersistentIndex::open(MemoryStore::new(meta.to_settings()).unwrap()).unwrap();
    let signature = |seed: u64| -> Vec<u32> {
        let mut base = seed % 20;
        let mut s = seed;
        (0..32)
            .map(|_| {
                let v = splitmix(&mut base) as u32;
                if splitmix(&mut s).is_multiple_of(4) {
                    splitmix(&mut s) as u32
                } else {
                    v
                }
            })
            .collect()
    };
    let batch: Vec<Edit> = (0..400u64)
        .map(|i| Edit::PutSignature(format!("sig-{}", i % 300), signature(i)))
        .chain((0..30).map(|i| Edit::Delete(format!("sig-{i}"))))
        .collect();
    redis.apply(&batch).unwrap();
    memory.apply(&batch).unwrap();
    for q in 0..60u64 {
        let probe = signature(q * 31 + 5);
        assert_eq!(
            redis.query_signature(&probe).unwrap(),
            memory.query_signature(&probe).unwrap(),
            "signature probe {q}"
        );
    }
    assert_eq!(redis.len(), memory.len());
}

/// Not a test on its own: the body of each process that `two_processes_write_and_query_one_index` starts.
#[test]
fn child_process_entry() {
    let (Ok(url), Ok(role)) = (
        std::env::var("NEARDUP_REDIS_TEST_URL"),
        std::env::var("NEARDUP_REDIS_TEST_ROLE"),
    ) else {
        return;
    };
    let mut index = PersistentIndex::open(RedisStore::open(&location(&url)).unwrap()).unwrap();
    // This process's acknowledged entries: id → fingerprint.
    let mut mine: BTreeMap<String, u64> = BTreeMap::new();
    let mut seed = if role == "a" { 11 } else { 22 };
    for round in 0..40u64 {
        let mut batch = Vec::new();
        for i in 0..25u64 {
            let fp = fingerprint(splitmix(&mut seed));
            batch.push((format!("{role}-{}", round * 25 + i), fp));
        }
        // Both processes write the same contended ids, with different values.
        let shared = (
            format!("shared-{}", round % 10),
            fingerprint(splitmix(&mut seed)),
        );
        let edits: Vec<Edit> = batch
            .iter()
            .chain(std::iter::once(&shared))
            .map(|(id, fp)| Edit::Put(id.clone(), *fp))
            .collect();
        index.apply(&edits).unwrap();
        mine.extend(batch);
        for probe in mine.values().rev().take(5).copied().collect::<Vec<_>>() {
            let found = index.query_fingerprint(probe, 3).unwrap();
            // Each of this process's entries within 3 is found, at its distance.
            for (id, fp) in &mine {
                let d = (fp ^ probe).count_ones();
                if d <= 3 {
                    assert!(
                        found.iter().any(|m| &m.id == id && m.distance == d),
                        "{role}: {id} at {d} of {probe:x} was not found"
                    );
                }
            }
            assert!(found.iter().all(|m| m.distance <= 3));
        }
    }
    println!("{role}: {} entries acknowledged", mine.len());
}

/// Two processes insert and query one index in a cluster at once: each finds all its own entries while the
/// other writes; afterwards every answer equals brute force over the entries, and the ids both wrote are
/// one entry each.
#[test]
fn two_processes_write_and_query_one_index() {
    if !have_redis() {
        return;
    }
    let cluster = Cluster::start(3);
    let url = cluster.url(&unique("shared"));
    let meta = hamming_meta();
    RedisStore::create(&location(&url), &meta.to_settings(), 2000).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|role| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "child_process_entry",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("NEARDUP_REDIS_TEST_URL", &url)
                .env("NEARDUP_REDIS_TEST_ROLE", role)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Both run at once: each was started before either is waited for.
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a child failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let index = PersistentIndex::open(RedisStore::open(&location(&url)).unwrap()).unwrap();
    let mut all: BTreeMap<String, u64> = BTreeMap::new();
    index
        .store()
        .for_each(&mut |id, value| {
            assert!(
                all.insert(id.to_owned(), u64::from_le_bytes(value.try_into().unwrap()))
                    .is_none()
            );
            Ok(())
        })
        .unwrap();
    assert_eq!(all.len(), 2 * 40 * 25 + 10, "every id once");
    assert_eq!(index.len(), all.len(), "the count");
    let mut seed = 99;
    for _ in 0..200 {
        let probe = fingerprint(splitmix(&mut seed));
        let mut expected: Vec<(u32, String)> = all
            .iter()
            .map(|(id, fp)| ((fp ^ probe).count_ones(), id.clone()))
            .filter(|(d, _)| *d <= 3)
            .collect();
        expected.sort();
        let found: Vec<(u32, String)> = index
            .query_fingerprint(probe, 3)
            .unwrap()
            .into_iter()
            .map(|m| (m.distance, m.id))
            .collect();
        assert_eq!(found, expected, "probe {probe:x}");
    }
}

/// A primary killed with SIGKILL in the middle of a write load that waits for a replica (`?wait=1`): after
/// the failover, every acknowledged write is there and queries answer; once the killed node is back (as a
/// replica), writes are acknowledged again.
#[test]
fn acknowledged_writes_survive_a_primary_failover() {
    if !have_redis() {
        return;
    }
    let mut cluster = Cluster::start(3);
    let url = format!("{}?wait=1&wait_ms=2000", cluster.url(&unique("failover")));
    let meta = hamming_meta();
    RedisStore::create(&location(&url), &meta.to_settings(), 5000).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, u64)>::new()));
    let failures = std::sync::Arc::new(AtomicUsize::new(0));
    let writer = {
        let (url, stop, acknowledged, failures) = (
            url.clone(),
            stop.clone(),
            acknowledged.clone(),
            failures.clone(),
        );
        std::thread::spawn(move || {
            let mut index =
                PersistentIndex::open(RedisStore::open(&location(&url)).unwrap()).unwrap();
            let mut seed = 5u64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let batch: Vec<(String, u64)> = (0..20)
                    .map(|_| {
                        n += 1;
                        (format!("w-{n}"), fingerprint(splitmix(&mut seed)))
                    })
                    .collect();
                let edits: Vec<Edit> = batch
                    .iter()
                    .map(|(id, fp)| Edit::Put(id.clone(), *fp))
                    .collect();
                match index.apply(&edits) {
                    Ok(_) => acknowledged.lock().unwrap().extend(batch),
                    Err(e) => {
                        if failures.fetch_add(1, Ordering::Relaxed) < 3 {
                            eprintln!("refused: {e}");
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        })
    };
    let acked = || acknowledged.lock().unwrap().len();
    let wait_for = |n: usize, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked() < n {
            assert!(
                Instant::now() < deadline,
                "{what}: only {} acknowledged",
                acked()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(400, "before the kill");
    let victim = cluster.primaries()[0];
    cluster.nodes[victim].kill();
    let at_kill = acked();
    cluster.wait_for_failover(victim, 3);
    cluster.nodes[victim].restart();
    cluster.wait_until_ok(None);
    cluster.wait_for_replicas();
    wait_for(at_kill + 400, "after the failover");
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();

    let index = PersistentIndex::open(RedisStore::open(&location(&url)).unwrap()).unwrap();
    let acknowledged = acknowledged.lock().unwrap();
    for (id, fp) in acknowledged.iter() {
        assert_eq!(
            index.fingerprint(id),
            Some(*fp),
            "{id} was acknowledged but is lost"
        );
    }
    for (id, fp) in acknowledged.iter().step_by(25) {
        let found = index.query_fingerprint(*fp, 0).unwrap();
        assert!(
            found.iter().any(|m| &m.id == id),
            "{id} is not found by its fingerprint"
        );
    }
    eprintln!(
        "failover: {} writes acknowledged, {} batches refused during the failover",
        acknowledged.len(),
        failures.load(Ordering::Relaxed)
    );
}

/// What an entry costs in Redis stays small: bucket members are integers and every group keeps Redis's
/// compact encoding (listpack), so a SimHash entry costs about 8 bytes per table, not the id again in each.
#[test]
fn entries_stay_compact_in_redis() {
    if !have_redis() {
        return;
    }
    let server = Server::start(&[]);
    let n = 40_000u64;
    let meta = Meta {
        scheme: "simhash-doc-v1".into(),
        kind: Kind::Hamming(recommend(3, n as f64)),
    };
    let Kind::Hamming(design) = &meta.kind else {
        unreachable!()
    };
    let tables = design.tables();
    let name = unique("compact");
    let mut index = PersistentIndex::open(
        RedisStore::create(&location(&server.url(&name)), &meta.to_settings(), n).unwrap(),
    )
    .unwrap();
    let mut seed = 7u64;
    let edits: Vec<Edit> = (0..n)
        .map(|i| Edit::Put(format!("doc-{i:09}"), splitmix(&mut seed)))
        .collect();
    for chunk in edits.chunks(10_000) {
        index.apply(chunk).unwrap();
    }
    // The entry groups' and the tables' keys (not the change log, whose length is its retention's).
    let mut con = redis::Client::open(server.url(""))
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("nd:{{{name}/*"))
        .query(&mut con)
        .unwrap();
    let groups = 1 << neardup_store_redis::layout::group_bits(n);
    assert_eq!(
        keys.len() as u64,
        groups * (2 + tables),
        "every group's keys"
    );
    let mut encodings = redis::pipe();
    let mut usage = redis::pipe();
    for key in &keys {
        encodings.cmd("OBJECT").arg("ENCODING").arg(key);
        usage.cmd("MEMORY").arg("USAGE").arg(key);
    }
    let encodings: Vec<String> = encodings.query(&mut con).unwrap();
    for (key, encoding) in keys.iter().zip(&encodings) {
        assert_eq!(encoding, "listpack", "{key}");
    }
    let bytes: u64 = usage.query::<Vec<u64>>(&mut con).unwrap().iter().sum();
    let table = keys.iter().find(|k| k.contains("/t0/")).unwrap();
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(table)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert!(
        members.iter().all(|m| m.parse::<u64>().is_ok()),
        "members are integers: {members:?}"
    );
    // Measured with Redis 7.0: about 51 bytes per entry for the entry groups and 8 per table.
    let per_entry = bytes / n;
    assert!(
        per_entry <= 60 + 12 * tables,
        "{per_entry} bytes per entry with {tables} tables"
    );
    eprintln!("{per_entry} bytes per entry with {tables} tables");
}

//! The persistent index at scale:
//! `cargo run --release -p neardup-index --example persist_bench -- N [K] [--batch B] [--dir DIR] [--open-only]`.
//!
//! Creates an index in DIR (default: a fresh directory under the system's temporary directory, removed at the
//! end unless `--dir` is given) with the planner's design for N and K (default 3), adds N synthetic
//! fingerprints (`common/synthetic.rs`) under URL-like ids in transactions of B entries (default 10,000), each
//! committed durably, and prints the insert rate. Then it reopens the index and prints the open time, split
//! into reading the entries from the store and building the in-memory index. `--open-only` skips the inserts
//! and opens an existing DIR.

use neardup_index::hamming::plan::recommend;
use neardup_index::persistent::{Edit, PersistentIndex};
use neardup_index::store::{Kind, Meta, RedbStore, Store};
use std::path::PathBuf;
use std::time::Instant;

#[path = "common/synthetic.rs"]
mod synthetic;

fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.replace('_', "").parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, k) = synthetic::n_and_k(&args);
    let batch: usize = flag(&args, "--batch").unwrap_or(10_000);
    let given: Option<PathBuf> = flag(&args, "--dir");
    let dir = given.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("neardup-persist-bench-{}", std::process::id()))
    });
    if !args.iter().any(|a| a == "--open-only") {
        let fps = synthetic::fingerprints(n, k, &mut synthetic::XorShift::new());
        let meta = Meta {
            scheme: "simhash-doc-v1".into(),
            kind: Kind::Hamming(recommend(k, n as f64)),
        };
        let mut index =
            PersistentIndex::open(RedbStore::create(&dir, &meta.to_settings()).expect("create"))
                .expect("open the new index");
        let (start, cpu) = (Instant::now(), synthetic::cpu_seconds());
        let mut changes = Vec::with_capacity(batch);
        for (i, &fp) in fps.iter().enumerate() {
            changes.push(Edit::Put(format!("https://example.org/doc/{i}"), fp));
            if changes.len() == batch {
                index.apply(&changes).expect("apply");
                changes.clear();
            }
        }
        index.apply(&changes).expect("apply");
        let secs = start.elapsed().as_secs_f64();
        let cpu = synthetic::cpu_seconds() - cpu;
        let file = std::fs::metadata(index.store().path()).map_or(0, |m| m.len());
        println!(
            "n = {n}, k = {k}, batch = {batch}: inserted in {secs:.2} s, {cpu:.2} CPU-s ({:.0} inserts/s), file {:.0} MB",
            n as f64 / secs,
            file as f64 / 1e6
        );
    }
    let start = Instant::now();
    let store = RedbStore::open(&dir).expect("open the store");
    let mut entries = Vec::new();
    store
        .for_each(&mut |id, value| {
            entries.push((id.to_owned(), value.to_vec()));
            Ok(())
        })
        .expect("read the entries");
    let read = start.elapsed().as_secs_f64();
    drop((entries, store));
    let (start, cpu) = (Instant::now(), synthetic::cpu_seconds());
    let index =
        PersistentIndex::open(RedbStore::open(&dir).expect("open the store")).expect("open");
    let open = start.elapsed().as_secs_f64();
    let cpu = synthetic::cpu_seconds() - cpu;
    println!(
        "open {} entries: {open:.2} s, {cpu:.2} CPU-s (reading the entries into Strings and byte vectors alone: {read:.2} s)",
        index.len()
    );
    drop(index);
    if given.is_none() {
        std::fs::remove_dir_all(&dir).expect("remove the temporary index");
    }
}

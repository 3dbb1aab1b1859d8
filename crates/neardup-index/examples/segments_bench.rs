//! The index on disk at scale, segments against redb in one run:
//! `cargo run --release -p neardup-index --example segments_bench -- N [K] [--store segments|redb|both]
//! [--queries Q] [--dir DIR] [--cold]`.
//!
//! For each store (default: both), in a fresh directory under DIR (default: the system's temporary directory;
//! removed at the end): creates an index with the planner's design for N and K (default 3) and adds N synthetic
//! fingerprints (`common/synthetic.rs`) under URL-like ids in durable batches of 10,000 (the segment writer
//! merging by itself as it goes), then
//!
//! * **merge**: one full merge of everything (segments only), its time and entries/s;
//! * **durable inserts**: 200,000 more in batches of 10,000 (flushes and tiered merges included), and 1,000
//!   one by one (an fsync each);
//! * **open**: the median of 5 opens of the index (a new handle each time);
//! * **queries, warm**: Q queries (default 10^6; half near a stored fingerprint, half random), latency median
//!   and p99 of single queries, and the resident memory of the process afterwards;
//! * **queries, cold** (`--cold`, needs root): the page cache is dropped (`/proc/sys/vm/drop_caches`), the
//!   index opened anew, and 2,000 queries timed one by one;
//! * **bytes on disk** per fingerprint.
//!
//! `--keep` keeps the indexes; `--query-only DIR` (with the same N and K) then opens one in a fresh process and
//! times Q queries, with the heap and the mapped pages they cost; `--insert-only DIR` opens one for writing in a
//! fresh process and times 200,000 (`--more N`: N) more durable inserts in batches of 10,000 (new ids each run);
//! `--mixed DIR` does the same with 200 queries timed after each batch (a writer that answers queries too).
//! With `--copy`, both write into a copy of DIR (segments hard-linked) removed afterwards, so that every run
//! starts from the same index.

/// The allocator of the `neardup` binary, so that the figures are those of `neardup index add` (with glibc's,
/// the large buffers of flushes and merges go back to the kernel and are faulted in again: 3.8 million page
/// faults in a load of 10^7, against 0.7 million).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use neardup_index::disk::{Backend, DiskStore};
use neardup_index::hamming::plan::recommend;
use neardup_index::persistent::{Edit, PersistentIndex};
use neardup_index::store::{Kind, Meta};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "common/synthetic.rs"]
mod synthetic;

fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.replace('_', "").parse().ok()
}

fn id(i: usize) -> String {
    format!("https://example.org/doc/{i}")
}

/// This process's resident memory in MB, one field of `/proc/self/status` (`VmRSS`; `RssAnon`: the heap;
/// `RssFile`: mapped file pages, the segments read so far). Linux; 0 elsewhere.
fn resident_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentiles(mut micros: Vec<f64>) -> (f64, f64) {
    micros.sort_by(f64::total_cmp);
    (
        micros[micros.len() / 2],
        micros[(micros.len() * 99 / 100).min(micros.len() - 1)],
    )
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn queries(fps: &[u64], count: usize, k: u32, rng: &mut synthetic::XorShift) -> Vec<u64> {
    (0..count)
        .map(|q| {
            if q % 2 == 0 {
                let mut fp = fps[(rng.next() % fps.len() as u64) as usize];
                for _ in 0..(rng.next() % (u64::from(k) + 1)) {
                    fp ^= 1 << (rng.next() % 64);
                }
                fp
            } else {
                rng.next()
            }
        })
        .collect()
}

fn timed_queries(index: &PersistentIndex<DiskStore>, qs: &[u64], k: u32) -> (Vec<f64>, usize) {
    let mut found = 0;
    let micros = qs
        .iter()
        .map(|&q| {
            let t = Instant::now();
            found += index.query_fingerprint(q, k).expect("query").len();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    (micros, found)
}

/// How many inserts [`more_inserts`] times.
const MORE: usize = 200_000;

/// Inserts [`MORE`] random fingerprints under ids from `from` on, durably, in batches of 10,000; their rate
/// per second.
fn more_inserts(
    index: &mut PersistentIndex<DiskStore>,
    from: usize,
    count: usize,
    rng: &mut synthetic::XorShift,
) -> f64 {
    let t = Instant::now();
    for chunk in 0..count / 10_000 {
        let batch: Vec<Edit> = (0..10_000)
            .map(|i| Edit::Put(id(from + chunk * 10_000 + i), rng.next()))
            .collect();
        index.apply(&batch).expect("apply");
    }
    (count / 10_000 * 10_000) as f64 / t.elapsed().as_secs_f64()
}

/// The index a run writes into: the kept one itself, or (`--copy`) a copy beside it, removed afterwards, so
/// that every run starts from the same index. A copy hard-links the segments (never modified; a merge writes
/// new files) and copies the manifest and logs, so it costs little even at 10^8.
struct RunDir(PathBuf, bool);

impl RunDir {
    fn of(kept: &Path, copy: bool) -> RunDir {
        if !copy {
            return RunDir(kept.to_path_buf(), false);
        }
        let mut name = kept.file_name().expect("a directory").to_os_string();
        name.push(format!("-copy-{}", std::process::id()));
        let dir = kept.with_file_name(name);
        std::fs::create_dir(&dir).expect("create the copy");
        for entry in std::fs::read_dir(kept).expect("read the kept index") {
            let from = entry.expect("an entry").path();
            let to = dir.join(from.file_name().expect("a name"));
            if from.extension().is_some_and(|e| e == "nds") {
                std::fs::hard_link(&from, &to).expect("link a segment");
            } else {
                std::fs::copy(&from, &to).expect("copy a file");
            }
        }
        RunDir(dir, true)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Queries after each batch of [`mixed`].
const QUERIES_PER_BATCH: usize = 200;

/// A writer that answers queries too, as `neardup serve` does: `count` durable inserts in batches of 10,000
/// into the index in `dir`, each batch followed by [`QUERIES_PER_BATCH`] queries timed one by one (half near
/// a fingerprint of the batch, half random), so that the queries run across every flush and merge.
fn mixed(dir: &Path, k: u32, count: usize) {
    let mut index = PersistentIndex::open(DiskStore::open(dir).expect("open")).expect("open");
    let from = index.len() + 1_000_000;
    let mut rng = synthetic::XorShift::new();
    let (mut micros, mut inserting) = (Vec::new(), 0.0);
    for chunk in 0..count / 10_000 {
        let fps: Vec<u64> = (0..10_000).map(|_| rng.next()).collect();
        let batch: Vec<Edit> = fps
            .iter()
            .enumerate()
            .map(|(i, &fp)| Edit::Put(id(from + chunk * 10_000 + i), fp))
            .collect();
        let t = Instant::now();
        index.apply(&batch).expect("apply");
        inserting += t.elapsed().as_secs_f64();
        let qs = queries(&fps, QUERIES_PER_BATCH, k, &mut rng);
        micros.extend(timed_queries(&index, &qs, k).0);
    }
    let (p50, p99) = percentiles(micros.clone());
    micros.sort_by(f64::total_cmp);
    let p999 = micros[(micros.len() * 999 / 1000).min(micros.len() - 1)];
    println!(
        "fresh process over {}: {} durable inserts in batches of 10,000 ({:.0}/s of insert time), {} queries between the batches: p50 {p50:.2} µs, p99 {p99:.2} µs, p99.9 {p999:.2} µs",
        dir.display(),
        count / 10_000 * 10_000,
        (count / 10_000 * 10_000) as f64 / inserting,
        micros.len()
    );
}

fn run(backend: Backend, dir: &Path, fps: &[u64], k: u32, query_count: usize, cold: bool) {
    let n = fps.len();
    let _ = std::fs::remove_dir_all(dir);
    let meta = Meta {
        scheme: "simhash-doc-v1".into(),
        kind: Kind::Hamming(recommend(k, n as f64)),
    };
    let store = DiskStore::create(dir, &meta.to_settings(), backend).expect("create");
    let mut index = PersistentIndex::open(store).expect("open the new index");
    let name = backend.name();
    let (start, cpu) = (Instant::now(), synthetic::cpu_seconds());
    for (chunk_no, chunk) in fps.chunks(10_000).enumerate() {
        let base = chunk_no * 10_000;
        let batch: Vec<Edit> = chunk
            .iter()
            .enumerate()
            .map(|(i, &fp)| Edit::Put(id(base + i), fp))
            .collect();
        index.apply(&batch).expect("apply");
    }
    let build = start.elapsed().as_secs_f64();
    println!(
        "{name}: n = {n}, k = {k}, design {} ({} tables): {n} durable inserts in batches of 10,000 in {build:.1} s, {:.1} CPU-s ({:.0}/s, merges included)",
        recommend(k, n as f64),
        recommend(k, n as f64).tables(),
        synthetic::cpu_seconds() - cpu,
        n as f64 / build
    );
    if let Some(segments) = index.store().as_segments().cloned() {
        let t = Instant::now();
        segments.merge().expect("merge");
        let secs = t.elapsed().as_secs_f64();
        index.refresh().expect("refresh");
        println!(
            "{name}: one full merge of {n} entries in {secs:.2} s ({:.0} entries/s)",
            n as f64 / secs
        );
    }
    let mut rng = synthetic::XorShift::new();
    let batched = more_inserts(&mut index, n, MORE, &mut rng);
    let t = Instant::now();
    for i in 0..1000 {
        index
            .apply(&[Edit::Put(id(n + MORE + i), rng.next())])
            .expect("apply");
    }
    let single = 1000.0 / t.elapsed().as_secs_f64();
    println!(
        "{name}: durable inserts: {batched:.0}/s in batches of 10,000, {single:.0}/s one by one (an fsync each)"
    );
    drop(index);
    let mut opens = Vec::new();
    let mut index = None;
    for _ in 0..5 {
        drop(index.take());
        let t = Instant::now();
        let opened = PersistentIndex::open(DiskStore::open(dir).expect("open")).expect("open");
        opens.push(t.elapsed().as_secs_f64() * 1e3);
        index = Some(opened);
    }
    let index = index.expect("opened");
    opens.sort_by(f64::total_cmp);
    let disk = dir_bytes(dir);
    let entries = index.len() as f64;
    println!(
        "{name}: open {:.2} ms (median of 5); {disk} bytes on disk, {:.1} B per fingerprint",
        opens[2],
        disk as f64 / entries
    );
    if let Some(set) = index.segments() {
        // Where the bytes go: the fingerprints and their tables, or the ids.
        let (mut tables, mut ids) = (0usize, 0usize);
        for segment in &set.segments {
            for (section, bytes) in segment.sections() {
                if section.starts_with("hamming.") || section == "values" {
                    tables += bytes;
                } else {
                    ids += bytes;
                }
            }
        }
        println!(
            "{name}: {} segments ({} rows); per fingerprint: {:.1} B of fingerprints and tables, {:.1} B of ids (their text, ends and hash table)",
            set.segments.len(),
            set.rows(),
            tables as f64 / entries,
            ids as f64 / entries
        );
    }
    let qs = queries(fps, query_count, k, &mut rng);
    let (micros, found) = timed_queries(&index, &qs, k);
    let (p50, p99) = percentiles(micros);
    println!(
        "{name}: {query_count} warm queries: p50 {p50:.2} µs, p99 {p99:.2} µs ({found} matches); resident memory after them {:.0} MB ({:.0} MB heap, {:.0} MB of mapped files)",
        resident_mb("VmRSS"),
        resident_mb("RssAnon"),
        resident_mb("RssFile")
    );
    drop(index);
    if cold {
        match std::fs::write("/proc/sys/vm/drop_caches", "3") {
            Ok(()) => {
                let t = Instant::now();
                let index =
                    PersistentIndex::open(DiskStore::open(dir).expect("open")).expect("open");
                let open = t.elapsed().as_secs_f64() * 1e3;
                let (micros, _) = timed_queries(&index, &qs[..2000.min(qs.len())], k);
                let (p50, p99) = percentiles(micros);
                println!(
                    "{name}: cold page cache: open {open:.1} ms, 2,000 queries p50 {p50:.1} µs, p99 {p99:.1} µs"
                );
            }
            Err(e) => println!("{name}: cold page cache: not measured ({e}; needs root)"),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, k) = synthetic::n_and_k(&args);
    let query_count: usize = flag(&args, "--queries").unwrap_or(1_000_000);
    let root: PathBuf = flag(&args, "--dir").unwrap_or_else(std::env::temp_dir);
    let stores: Vec<Backend> = match flag::<String>(&args, "--store").as_deref() {
        Some("segments") => vec![Backend::Segments],
        Some("redb") => vec![Backend::Redb],
        _ => vec![Backend::Segments, Backend::Redb],
    };
    let cold = args.iter().any(|a| a == "--cold");
    if let Some(kept) = flag::<PathBuf>(&args, "--mixed") {
        let dir = RunDir::of(&kept, args.iter().any(|a| a == "--copy"));
        mixed(&dir.0, k, flag(&args, "--more").unwrap_or(MORE));
        return;
    }
    if let Some(kept) = flag::<PathBuf>(&args, "--insert-only") {
        // A fresh process writing into an index kept by `--keep` (ids past those it holds): durable inserts
        // away from the load and merge that made the index (whose writes the disk may still be flushing).
        let dir = RunDir::of(&kept, args.iter().any(|a| a == "--copy"));
        let mut index =
            PersistentIndex::open(DiskStore::open(&dir.0).expect("open")).expect("open");
        let from = index.len() + 1_000_000;
        let count = flag(&args, "--more").unwrap_or(MORE);
        let rate = more_inserts(&mut index, from, count, &mut synthetic::XorShift::new());
        println!(
            "fresh process over {}: {count} durable inserts in batches of 10,000: {rate:.0}/s",
            kept.display()
        );
        return;
    }
    let fps = synthetic::fingerprints(n, k, &mut synthetic::XorShift::new());
    if let Some(dir) = flag::<PathBuf>(&args, "--query-only") {
        // A fresh process over an index kept by `--keep`: open, query, and the memory that costs.
        let t = Instant::now();
        let index =
            PersistentIndex::open(DiskStore::open_reader(&dir).expect("open")).expect("open");
        let open = t.elapsed().as_secs_f64() * 1e3;
        let qs = queries(&fps, query_count, k, &mut synthetic::XorShift::new());
        drop(fps);
        let before = (resident_mb("RssAnon"), resident_mb("RssFile"));
        let (micros, found) = timed_queries(&index, &qs, k);
        let (p50, p99) = percentiles(micros);
        println!(
            "fresh process over {}: open {open:.2} ms, {} entries; heap {:.0} MB and mapped {:.0} MB before queries; {query_count} queries p50 {p50:.2} µs, p99 {p99:.2} µs ({found} matches); then heap {:.0} MB, mapped {:.0} MB",
            dir.display(),
            index.len(),
            before.0,
            before.1,
            resident_mb("RssAnon"),
            resident_mb("RssFile")
        );
        return;
    }
    let keep = args.iter().any(|a| a == "--keep");
    for backend in stores {
        let dir = root.join(format!(
            "neardup-segments-bench-{}-{}",
            std::process::id(),
            backend.name()
        ));
        run(backend, &dir, &fps, k, query_count, cold);
        if !keep {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            println!("{}: kept in {}", backend.name(), dir.display());
        }
    }
}

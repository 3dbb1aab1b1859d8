//! Prints the cross-media tables of `docs/crossmedia.md` from `../shared/eval`:
//! `cargo run --release -p neardup --example crossmedia [THREADS]`.
//!
//! 1. crossmedia: per media pair, the Hamming distances of same-document and different-document pairs;
//! 2. versions: distances of same-path page pairs across releases, by their `jaccard3_main` similarity.

#[path = "../tests/crossmedia_eval/mod.rs"]
mod eval;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

fn parallel<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let n = items.len();
    let queue = Mutex::new(items.into_iter().enumerate().collect::<Vec<_>>());
    let results = Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let Some((i, item)) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let r = f(item);
                    results.lock().unwrap().push((i, r));
                }
            });
        }
    });
    let mut r = results.into_inner().unwrap();
    r.sort_by_key(|(i, _)| *i);
    r.into_iter().map(|(_, r)| r).collect()
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let Some(dir) = eval::data_dir() else {
        eprintln!(
            "../shared/eval/crossmedia is not there (unpack it with ../shared/eval/unpack.sh)"
        );
        std::process::exit(2);
    };
    let renditions = eval::rendition_files(&dir);
    let started = std::time::Instant::now();
    let names: Vec<(String, Vec<String>)> = renditions.into_iter().collect();
    let fps: HashMap<String, Result<(u64, String), String>> =
        parallel(names, threads, |(name, files)| {
            let r = eval::fingerprint(&dir, &files);
            (name, r)
        })
        .into_iter()
        .collect();
    eprintln!(
        "{} renditions in {:.1} s",
        fps.len(),
        started.elapsed().as_secs_f64()
    );
    for (name, r) in &fps {
        if let Err(e) = r {
            println!("no fingerprint: {name}: {e}");
        }
    }
    let pairs = eval::pairs(&dir);
    let table = eval::distances(&pairs, &fps);
    println!(
        "\n| media pair | same-doc pairs | within k=3 | English same-doc | English within k=3 | same-doc distance min/q1/median/q3/max | different-doc pairs | different within k=3 | different-doc min/q1/median/q3/max | no fingerprint |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (media, d) in &table {
        let pct = |n: usize, of: usize| {
            if of == 0 {
                "–".to_owned()
            } else {
                format!("{} ({:.0} %)", n, 100.0 * n as f64 / of as f64)
            }
        };
        println!(
            "| {media} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            d.same.len(),
            pct(eval::within(&d.same, 3), d.same.len()),
            d.same_english.len(),
            pct(eval::within(&d.same_english, 3), d.same_english.len()),
            eval::quantiles(&d.same),
            d.different.len(),
            eval::within(&d.different, 3),
            eval::quantiles(&d.different),
            d.failed
        );
    }
    // Same-document pairs beyond k = 3, for the notes.
    println!("\nsame-document pairs beyond k = 3:");
    for p in pairs.iter().filter(|p| p.same_doc) {
        if let (Some(Ok((a, _))), Some(Ok((b, _)))) = (fps.get(&p.a), fps.get(&p.b)) {
            let d = (a ^ b).count_ones();
            if d > 3 {
                println!("{d}\t{}\t{}\t{}", p.media, p.a, p.b);
            }
        }
    }
    println!("\ndifferent-document pairs within k = 3:");
    for p in pairs.iter().filter(|p| !p.same_doc) {
        if let (Some(Ok((a, _))), Some(Ok((b, _)))) = (fps.get(&p.a), fps.get(&p.b)) {
            let d = (a ^ b).count_ones();
            if d <= 3 {
                println!("{d}\t{}\t{}\t{}", p.media, p.a, p.b);
            }
        }
    }
    versions(threads);
}

fn versions(threads: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/versions");
    if !dir.join("groundtruth/pairs.tsv").is_file() {
        eprintln!("no ../shared/eval/versions");
        return;
    }
    let rows: Vec<_> = eval::read_tsv(&dir.join("groundtruth/pairs.tsv"))
        .into_iter()
        .filter(|r| r["pair_type"] == "same_path")
        .collect();
    let fp = |path: &str| -> Option<u64> {
        let bytes = std::fs::read(dir.join("docs").join(path)).ok()?;
        let name = path.rsplit('/').next().unwrap_or(path);
        neardup::Scheme::SimhashDocV1
            .fingerprint(&bytes, neardup::media::MediaHint::FileName(name))
            .ok()
            .map(|f| f.bits())
    };
    let results: Vec<Option<(f64, f64, u32, bool)>> = parallel(rows, threads, |r| {
        let a = fp(&r["doc_a"])?;
        let b = fp(&r["doc_b"])?;
        let html = r["doc_a"].ends_with(".html");
        Some((
            r["jaccard3_main"].parse().ok()?,
            r["jaccard3"].parse().ok()?,
            (a ^ b).count_ones(),
            html,
        ))
    });
    let skipped = results.iter().filter(|r| r.is_none()).count();
    let results: Vec<_> = results.into_iter().flatten().collect();
    println!(
        "\nversions: {} same-path pairs ({} without a fingerprint on one side)",
        results.len(),
        skipped
    );
    println!(
        "\n| pages | jaccard3_main | pairs | mean jaccard3 (full page) | distance min/q1/median/q3/max | within k=3 |"
    );
    println!("|---|---|---|---|---|---|");
    for html in [true, false] {
        for (lo, hi) in [
            (0.9, 1.01),
            (0.8, 0.9),
            (0.6, 0.8),
            (0.4, 0.6),
            (0.2, 0.4),
            (0.0, 0.2),
        ] {
            let sel: Vec<_> = results
                .iter()
                .filter(|r| r.3 == html && r.0 >= lo && r.0 < hi)
                .collect();
            if sel.is_empty() {
                continue;
            }
            let d: Vec<u32> = sel.iter().map(|r| r.2).collect();
            let full = sel.iter().map(|r| r.1).sum::<f64>() / sel.len() as f64;
            println!(
                "| {} | [{lo:.1}, {:.1}) | {} | {full:.2} | {} | {} ({:.0} %) |",
                if html {
                    "HTML (kernel)"
                } else {
                    "text (Django reST)"
                },
                hi.min(1.0),
                sel.len(),
                eval::quantiles(&d),
                eval::within(&d, 3),
                100.0 * eval::within(&d, 3) as f64 / sel.len() as f64
            );
        }
    }
}

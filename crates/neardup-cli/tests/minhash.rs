//! MinHash schemes through the real binary: hash, compare, dedup with LSH, and LSH indexes.

mod common;
use common::{neardup, neardup_stdin, temp_dir, text};
use std::path::Path;

/// A deterministic "document" of `n` words drawn from a vocabulary by a seed.
fn words(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{}", x % 5000)
        })
        .collect()
}

/// Writes a corpus: `base` and a near-copy of it (5 of 400 words changed), and two unrelated documents.
fn corpus(dir: &Path) {
    let base = words(1, 400);
    let mut near = base.clone();
    for i in [50, 150, 250, 300, 350] {
        near[i] = format!("changed{i}");
    }
    std::fs::write(dir.join("a.txt"), base.join(" ")).unwrap();
    std::fs::write(dir.join("b.html"), format!("<p>{}</p>", near.join(" "))).unwrap();
    std::fs::write(dir.join("c.txt"), words(2, 400).join(" ")).unwrap();
    std::fs::write(dir.join("d.txt"), words(3, 400).join(" ")).unwrap();
}

#[test]
fn hash_and_compare_signatures() {
    let dir = temp_dir("mh-hash");
    corpus(&dir);
    let a = dir.join("a.txt").display().to_string();
    let b = dir.join("b.html").display().to_string();
    let out = neardup(&["hash", "--scheme", "minhash", "--num-perm", "64", &a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let sigs: Vec<&str> = stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert!(
        sigs[0].starts_with("minhash-oph-v1:k=64,seed=0,f=w5:"),
        "{}",
        sigs[0]
    );

    let out = neardup(&["compare", "--scheme", "minhash", "--shingle", "3", &a, &b]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value = |key: &str| -> f64 {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    // 5 changed words of 400 break 15 of 398 3-grams (each in 3 shingles): exact J = 383 / 413.
    let exact = value("exact jaccard\t");
    assert!((exact - 383.0 / 413.0).abs() < 1e-6, "{report}");
    assert!(
        (value("estimated jaccard\t") - exact).abs() < 0.1,
        "{report}"
    );

    // Signature strings compare with each other, not with another K or with a fingerprint.
    let out = neardup(&["compare", sigs[0], sigs[1]]);
    assert!(
        text(&out.stdout).contains("estimated jaccard"),
        "{}",
        text(&out.stderr)
    );
    let other = neardup(&["hash", "--scheme", "minhash", &a]);
    let other_sig = text(&other.stdout).split('\t').next().unwrap().to_owned();
    let out = neardup(&["compare", sigs[0], &other_sig]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("k=64"), "{}", text(&out.stderr));
    let fp = neardup(&["hash", &a]);
    let fp = text(&fp.stdout).split('\t').next().unwrap().to_owned();
    let out = neardup(&["compare", sigs[0], &fp]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("different methods"),
        "{}",
        text(&out.stderr)
    );

    // MinHash flags on the SimHash scheme are a mistake, said so.
    let out = neardup(&["hash", "--num-perm", "64", &a]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--scheme minhash"));
}

#[test]
fn dedup_finds_the_near_copy_whatever_the_order_and_threads() {
    let dir = temp_dir("mh-dedup");
    corpus(&dir);
    let d = dir.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["dedup", "--scheme", "minhash", "--pairs"];
        args.extend_from_slice(extra);
        let out = neardup(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let pairs = run(&["--threshold", "0.8", &d]);
    let lines: Vec<&str> = pairs.lines().collect();
    assert_eq!(lines.len(), 1, "{pairs}");
    let cols: Vec<&str> = lines[0].split('\t').collect();
    assert!(
        cols[0].ends_with("a.txt") && cols[1].ends_with("b.html"),
        "{pairs}"
    );
    // Word 5-grams: 5 changes break 25 of 396 shingles, exact J = 371 / 421.
    let j: f64 = cols[2].parse().unwrap();
    assert!((j - 371.0 / 421.0).abs() < 1e-4, "{pairs}");
    assert_eq!(run(&["-j", "1", "--threshold", "0.8", &d]), pairs);
    assert_eq!(run(&["-j", "2", "--threshold", "0.8", &d]), pairs);
    // Above the pair's similarity, nothing; with the estimate, the same pair.
    assert_eq!(run(&["--threshold", "0.95", &d]), "");
    let estimated = run(&["--verify", "estimate", "--threshold", "0.8", &d]);
    assert!(
        estimated.starts_with(&format!("{}\t{}\t", cols[0], cols[1])),
        "{estimated}"
    );

    // JSONL in two orders gives the same clusters.
    let docs: Vec<String> = ["a.txt", "b.html", "c.txt", "d.txt"]
        .iter()
        .map(|f| {
            let body = std::fs::read_to_string(dir.join(f)).unwrap();
            let body = body.trim_start_matches("<p>").trim_end_matches("</p>");
            serde_json::json!({"id": f, "text": body}).to_string()
        })
        .collect();
    let forward = docs.join("\n");
    let backward: Vec<String> = docs.iter().rev().cloned().collect();
    let args = ["dedup", "--jsonl", "--scheme", "minhash", "-"];
    let one = neardup_stdin(&args, forward.as_bytes());
    let two = neardup_stdin(&args, backward.join("\n").as_bytes());
    assert_eq!(text(&one.stdout), text(&two.stdout));
    assert!(
        text(&one.stdout).starts_with("1\ta.txt\t1.0000\n1\tb.html\t0."),
        "{}",
        text(&one.stdout)
    );
    assert!(
        text(&one.stderr).contains("1 duplicates in 1 clusters"),
        "{}",
        text(&one.stderr)
    );
}

#[test]
fn lsh_index_create_add_query_and_refuse_other_schemes() {
    let dir = temp_dir("mh-index");
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    corpus(&docs);
    let idx = dir.join("idx").display().to_string();
    let out = neardup(&[
        "index",
        "create",
        &idx,
        "--scheme",
        "minhash",
        "--threshold",
        "0.7",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let a = docs.join("a.txt").display().to_string();
    let out = neardup(&[
        "index",
        "add",
        &idx,
        &a,
        &docs.join("c.txt").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The near copy finds a.txt (and not c.txt), with the similarity.
    let b = docs.join("b.html").display().to_string();
    let out = neardup(&["index", "query", &idx, &b]);
    let found = text(&out.stdout);
    assert_eq!(found.lines().count(), 1, "{found}");
    assert!(found.starts_with(&format!("{b}\t{a}\t0.")), "{found}");
    // Below the index's threshold its bands would miss most matches: refused, but 0 lists every candidate.
    let out = neardup(&["index", "query", &idx, "--threshold", "0.3", &b]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("below the index's threshold = 0.7"),
        "{}",
        text(&out.stderr)
    );
    let out = neardup(&["index", "query", &idx, "--threshold", "0", &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with(&format!("{b}\t{a}\t0.")));

    // Signatures from `hash` go in with add-fingerprints; other parameters are refused per line.
    let sigs = neardup(&["hash", "--scheme", "minhash", &b]);
    let out = neardup_stdin(&["index", "add-fingerprints", &idx, "-"], &sigs.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let wrong = neardup(&["hash", "--scheme", "minhash", "--seed", "9", &b]);
    let out = neardup_stdin(&["index", "add-fingerprints", &idx, "-"], &wrong.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("seed=9"),
        "{}",
        text(&out.stderr)
    );
    // Documents are sketched with the index's scheme; asking for another is refused.
    let out = neardup(&[
        "index",
        "query",
        &idx,
        "--scheme",
        "minhash",
        "--num-perm",
        "64",
        &b,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("never mixed"),
        "{}",
        text(&out.stderr)
    );

    let stats = neardup(&["index", "stats", &idx]);
    let stats = text(&stats.stdout);
    assert!(
        stats.contains("entries\t3") && stats.contains("kind\tlsh"),
        "{stats}"
    );
    assert!(stats.contains("threshold\t0.7"), "{stats}");

    // dedup against the index: d.txt is new and alone, b.html is stored (replaced) and matches a.txt.
    let out = neardup(&[
        "dedup",
        "--index",
        &idx,
        "--pairs",
        &b,
        &docs.join("d.txt").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!("{a}\t{b}\t0.")),
        "{}",
        text(&out.stdout)
    );
    let stats = text(&neardup(&["index", "stats", &idx]).stdout);
    assert!(stats.contains("entries\t4"), "{stats}");
}

#[test]
fn plan_prints_the_banding_and_its_s_curve() {
    let out = neardup(&["plan", "--scheme", "minhash", "--threshold", "0.8"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(report.contains("all 128 values used"), "{report}");
    assert!(
        report.contains(
            "datasketch's optimizer would choose 9 bands × 13 rows, 11 of 128 values unused"
        ),
        "{report}"
    );
    let fineweb = text(&neardup(&["plan", "--scheme", "minhash", "--preset", "fineweb"]).stdout);
    assert!(
        fineweb.contains("14 bands × 8 rows") && fineweb.contains("0.80           0.9235"),
        "{fineweb}"
    );
    let out = neardup(&["plan", "--scheme", "minhash", "--threshold", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("between 0 and 1"));
}

#[test]
fn bottom_k_samples_give_containment_and_are_not_indexed() {
    let dir = temp_dir("bottomk");
    let page: Vec<String> = words(7, 60);
    let mut long = words(8, 300);
    long.splice(100..100, page.iter().cloned());
    std::fs::write(dir.join("page.txt"), page.join(" ")).unwrap();
    std::fs::write(dir.join("report.txt"), long.join(" ")).unwrap();
    let (p, r) = (
        dir.join("page.txt").display().to_string(),
        dir.join("report.txt").display().to_string(),
    );
    let out = neardup(&[
        "compare",
        "--json",
        "--scheme",
        "bottomk",
        "--num-perm",
        "512",
        &p,
        &r,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The page is wholly inside the report: containment 1, from a sample of the page's 56 shingles.
    assert_eq!(report["exact"]["containment_a_in_b"], 1.0);
    assert_eq!(report["containment_a_in_b"]["value"], 1.0);
    let b_in_a = report["containment_b_in_a"]["value"].as_f64().unwrap();
    let exact_b_in_a = report["exact"]["containment_b_in_a"].as_f64().unwrap();
    assert!((b_in_a - exact_b_in_a).abs() < 0.1, "{report}");
    let out = neardup(&["dedup", "--scheme", "bottomk", &p, &r]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("pair by pair"),
        "{}",
        text(&out.stderr)
    );
}

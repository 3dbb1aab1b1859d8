//! The real binary on real files: output format, order, errors and exit codes.

mod common;
use common::{neardup, neardup_stdin, repo, temp_dir, text};
use std::io::Write;
use std::process::{Command, Stdio};

fn inputs_dir() -> String {
    repo()
        .join("testdata/vectors/simhash-doc-v1/inputs")
        .display()
        .to_string()
}

#[test]
fn hash_a_directory_reports_failures_and_keeps_going() {
    let out = neardup(&["hash", &inputs_dir()]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "empty, numbers-only, malformed and scanned PDF inputs fail: {stderr}"
    );
    assert!(stderr.contains("empty.txt: no tokens"), "{stderr}");
    assert!(stderr.contains("numbers-only.txt: no tokens"), "{stderr}");
    assert!(
        stderr.contains("pdf-malformed.pdf: cannot open PDF"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pdf-no-text-layer.pdf: the PDF has no text layer"),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        49,
        "52 files (one a WARC with 2 documents), 4 without a fingerprint"
    );
    // WARC records are named by URI, in archive order, where the archive sorts.
    let paths: Vec<&str> = lines
        .iter()
        .map(|l| l.split('\t').nth(1).unwrap())
        .filter(|p| !p.starts_with("http://"))
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "directory entries come in sorted order");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("simhash-doc-v1:") && l.split('\t').next().unwrap().len() == 28)
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let one = neardup(&["hash", "-j", "1", &inputs_dir()]);
    let two = neardup(&["hash", "-j", "2", &inputs_dir()]);
    let four = neardup(&["hash", "--threads", "4", &inputs_dir()]);
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stdout, four.stdout);
}

#[test]
fn json_lines_carry_media_encoding_and_tokens() {
    let file = repo().join("testdata/vectors/simhash-doc-v1/inputs/html-meta-charset.html");
    let out = neardup(&["hash", "--json", &file.display().to_string()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["media"], "html");
    assert_eq!(v["encoding"], "windows-1251");
    assert_eq!(v["encoding_source"], "declared");
    assert_eq!(v["tokens"], 7); // привет мир это страница в кодировке windows
    assert!(
        v["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("simhash-doc-v1:")
    );
}

#[test]
fn stdin_and_media_override() {
    let html = b"<p>Hello <b>W</b>orld</p>";
    let auto = neardup_stdin(&["hash", "-"], html);
    let as_text = neardup_stdin(&["hash", "--media", "text", "-"], html);
    let plain = neardup_stdin(&["hash", "-"], b"hello world");
    assert_eq!(
        text(&auto.stdout),
        text(&plain.stdout),
        "HTML is detected and extracted"
    );
    assert_ne!(
        text(&auto.stdout),
        text(&as_text.stdout),
        "forced text keeps the tags' letters"
    );
    assert!(text(&auto.stdout).ends_with("\t-\n"));
    let bad = neardup(&["hash", "--media", "pdfx", "-"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("unknown medium 'pdfx'"));
}

#[test]
fn missing_paths_are_reported_by_name() {
    let out = neardup(&["hash", "/nonexistent/neardup-file.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/neardup-file.txt: no such file or directory"));
}

#[test]
fn oversized_documents_are_refused_with_the_limit() {
    let dir = temp_dir("big");
    let file = dir.join("big.txt");
    std::fs::write(&file, "word ".repeat(1000)).unwrap();
    let out = neardup(&["hash", "--max-bytes", "100", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("over the --max-bytes limit of 100"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_same_text_in_html_utf16_and_latin1_gives_one_fingerprint() {
    let dir = temp_dir("media");
    let body = "Déjà vu: la façade du château, naïveté et crème brûlée à côté du garçon.";
    std::fs::write(
        dir.join("a.html"),
        format!("<html><head><title>x</title></head><body><p>{body}</p></body></html>"),
    )
    .unwrap();
    let (latin1, _, _) = encoding_rs_free_latin1(body);
    std::fs::write(dir.join("b.txt"), latin1).unwrap();
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(body.encode_utf16().flat_map(|u| u.to_le_bytes()))
        .collect();
    std::fs::write(dir.join("c.txt"), utf16).unwrap();
    let out = neardup(&["hash", &dir.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fps: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect();
    assert_eq!(fps.len(), 3);
    assert!(fps.iter().all(|f| f == &fps[0]), "{fps:?}");
    let cmp = neardup(&[
        "compare",
        &dir.join("a.html").display().to_string(),
        &dir.join("c.txt").display().to_string(),
    ]);
    assert!(text(&cmp.stdout).contains("distance\t0\n"));
    assert!(text(&cmp.stdout).contains("verdict\tclose\n"));
}

/// windows-1252 bytes of a Latin-1 string (every char here is below U+0100).
fn encoding_rs_free_latin1(s: &str) -> (Vec<u8>, (), ()) {
    (
        s.chars()
            .map(|c| u8::try_from(c as u32).expect("Latin-1"))
            .collect(),
        (),
        (),
    )
}

#[test]
fn compare_fingerprints_and_refusals() {
    let a = "simhash-doc-v1:aaaaaaaaaaaaa";
    let out = neardup(&["compare", "--json", a, "SIMHASH-DOC-V1:AAAAAAAAAAAAQ==="]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["distance"], 1);
    assert_eq!(v["verdict"], "close");
    let unknown = neardup(&["compare", a, "minhash-v9:abc"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("unknown fingerprint scheme 'minhash-v9'"),
        "{}",
        text(&unknown.stderr)
    );
    let bad = neardup(&["compare", a, "simhash-doc-v1:abc"]);
    assert!(text(&bad.stderr).contains("expected 13 base32 characters"));
    let neither = neardup(&["compare", a, "no-such-file.txt"]);
    assert!(
        text(&neither.stderr).contains("no-such-file.txt: no such file, and not a fingerprint")
    );
}

#[test]
fn jsonl_corpora() {
    let input = "{\"id\":\"a\",\"text\":\"The quick brown fox\"}\n{\"id\":7,\"text\":\"2019\"}\nnot json\n{\"text\":\"the QUICK brown fox\"}\n";
    let out = neardup_stdin(&["hash", "--jsonl", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].ends_with("\ta"));
    assert!(
        lines[1].ends_with("\t-:4"),
        "the id falls back to FILE:LINE"
    );
    assert_eq!(lines[0].split('\t').next(), lines[1].split('\t').next());
    let stderr = text(&out.stderr);
    // A document without words is a warning, named by its line and id.
    assert!(stderr.contains("warning: -:2 (7): no tokens"), "{stderr}");
    assert!(stderr.contains("-:3: not a JSON object"), "{stderr}");
}

#[test]
fn help_teaches_the_scheme() {
    let out = neardup(&["hash", "--help"]);
    let help = text(&out.stdout);
    assert!(help.contains("simhash-doc-v1"));
    assert!(help.contains("Examples:"));
    let out = neardup(&["compare", "--help"]);
    assert!(text(&out.stdout).contains("close (similarity >= 0.98"));
}

/// The evaluation documents (3,836 real HTML and reST pages): every one fingerprints, nothing panics.
#[test]
fn hashes_the_evaluation_versions_without_errors() {
    let docs = repo().join("../shared/eval/versions/docs");
    if !docs.is_dir() {
        eprintln!(
            "skipped: {} is absent (run ../shared/eval/unpack.sh)",
            docs.display()
        );
        return;
    }
    let out = neardup(&["hash", &docs.display().to_string()]);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
    assert!(text(&out.stdout).lines().count() > 3000);
}

#[test]
fn dedup_clusters_are_deterministic_and_ordered() {
    let dir = inputs_dir();
    let out = neardup(&["dedup", &dir]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "three inputs cannot be fingerprinted"
    );
    let stdout = text(&out.stdout);
    let lines: Vec<Vec<&str>> = stdout.lines().map(|l| l.split('\t').collect()).collect();
    // NFC and NFD Latin are one cluster at distance 0; so are UTF-16LE and UTF-16BE.
    let cluster_of = |suffix: &str| {
        lines
            .iter()
            .find(|l| l[1].ends_with(suffix))
            .map(|l| l[0].to_owned())
    };
    assert!(cluster_of("latin-decomposed.txt").is_some());
    assert_eq!(
        cluster_of("latin-decomposed.txt"),
        cluster_of("latin-precomposed.txt")
    );
    assert_eq!(cluster_of("utf16be-bom.txt"), cluster_of("utf16le-bom.txt"));
    // The representative (first member, distance 0) has the smallest id of its cluster.
    let mut by_cluster: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for l in &lines {
        by_cluster.entry(l[0]).or_default().push(l[1]);
    }
    for members in by_cluster.values() {
        assert_eq!(members.iter().min(), members.first());
    }
    assert!(
        text(&out.stderr).contains("duplicates in"),
        "{}",
        text(&out.stderr)
    );
    let two = neardup(&["dedup", "-j", "2", &dir]);
    let one = neardup(&["dedup", "-j", "1", &dir]);
    assert_eq!(two.stdout, one.stdout);
}

#[test]
fn dedup_pairs_do_not_depend_on_input_order() {
    let input = |order: &[usize]| {
        let docs = [
            "{\"id\":\"c\",\"text\":\"the cat sat on the mat and looked at the dog\"}",
            "{\"id\":\"a\",\"text\":\"the cat sat on the mat and looked at the dog today\"}",
            "{\"id\":\"b\",\"text\":\"completely different words about compilers and parsers\"}",
        ];
        order
            .iter()
            .map(|&i| docs[i])
            .collect::<Vec<_>>()
            .join("\n")
    };
    let x = neardup_stdin(
        &["dedup", "--jsonl", "--pairs", "-k", "7", "-"],
        input(&[0, 1, 2]).as_bytes(),
    );
    let y = neardup_stdin(
        &["dedup", "--jsonl", "--pairs", "-k", "7", "-"],
        input(&[2, 1, 0]).as_bytes(),
    );
    assert!(x.status.success(), "{}", text(&x.stderr));
    assert_eq!(x.stdout, y.stdout);
    let first = text(&x.stdout);
    let fields: Vec<&str> = first.lines().next().expect("a pair").split('\t').collect();
    assert_eq!(&fields[..2], ["a", "c"], "ids in byte order within a pair");
}

#[test]
fn plan_recommends_and_refuses_clearly() {
    let out = neardup(&["plan", "--n", "1e9", "--k", "3"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(s.contains("recommended:"), "{s}");
    assert!(
        s.contains("6 blocks, choose 3"),
        "the 20-table design is listed: {s}"
    );
    let json = neardup(&["plan", "--n", "1e7", "--k", "7", "--json", "--top", "2"]);
    let first: serde_json::Value =
        serde_json::from_str(text(&json.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["rank"], 1);
    assert!(first["tables"].as_u64().unwrap() > 0);
    let bad = neardup(&["plan", "--n", "1e9", "--k", "9"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("out of range"));
    let tiny = neardup(&["plan", "--n", "1e9", "--memory", "1M"]);
    assert!(
        text(&tiny.stderr).contains("raise --memory"),
        "{}",
        text(&tiny.stderr)
    );
}

/// A fingerprint string for test entry `i` (spread bits, deterministic).
fn fp_string(i: u64) -> String {
    let bits = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ i;
    neardup::Fingerprint::new(neardup::Scheme::SimhashDocV1, bits).to_string()
}

/// `index add-fingerprints --ack --batch BATCH` on IDX, reading stdin, acknowledging on stdout.
fn acknowledging_writer(idx: &str, batch: usize) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["index", "add-fingerprints", idx, "--ack", "--batch"])
        .arg(batch.to_string())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

/// Many readers, one writer: while a writer process holds an index in segments (and flushes and merges it),
/// `index query` and `index stats` in other processes open it, and see every batch acknowledged before they
/// started; a second writer is refused by name.
#[test]
fn readers_see_a_running_writers_commits() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("readers");
    let idx = dir.join("idx").display().to_string();
    assert!(neardup(&["index", "create", &idx]).status.success());
    let mut child = acknowledging_writer(&idx, 5000);
    let mut stdin = child.stdin.take().unwrap();
    let mut acks = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut sent = 0u64;
    for round in 0..8u64 {
        // 5,000 more (a flush every 16,384), acknowledged before the readers look.
        for i in sent..sent + 5000 {
            writeln!(stdin, "doc{i}\t{}", fp_string(i)).unwrap();
        }
        sent += 5000;
        stdin.flush().unwrap();
        let ack = acks.next().unwrap().unwrap();
        assert_eq!(ack, format!("ok {sent}"), "round {round}");
        let stats = neardup(&["index", "stats", "--json", &idx]);
        assert!(stats.status.success(), "{}", text(&stats.stderr));
        let v: serde_json::Value = serde_json::from_str(text(&stats.stdout).trim()).unwrap();
        assert_eq!(
            v["entries"], sent,
            "round {round}: the reader sees every acknowledged entry"
        );
        let probe = sent - 1 - round * 577;
        let found = neardup(&["index", "query", "-k", "0", &idx, &fp_string(probe)]);
        assert!(
            text(&found.stdout).contains(&format!("\tdoc{probe}\t0")),
            "round {round}: {} {}",
            text(&found.stdout),
            text(&found.stderr)
        );
        let second = neardup(&["index", "remove", &idx, "doc0"]);
        assert_eq!(second.status.code(), Some(2));
        assert!(
            text(&second.stderr).contains("already open for writing"),
            "{}",
            text(&second.stderr)
        );
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let verified = neardup(&["index", "verify", &idx]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
}

/// The persistence guarantee: every insert acknowledged by `add-fingerprints --ack` is still there after the
/// process is killed with SIGKILL at an arbitrary moment, many times over.
#[test]
fn acknowledged_inserts_survive_kill_9() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("crash");
    let idx = dir.join("idx").display().to_string();
    assert!(
        neardup(&["index", "create", &idx, "--n", "1e5"])
            .status
            .success()
    );
    let mut acked_per_round = Vec::new();
    for round in 0..10u64 {
        let mut child = acknowledging_writer(&idx, 37);
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            for i in 0..20_000u64 {
                let id = round * 1_000_000 + i;
                if writeln!(stdin, "r{round}-{i}\t{}", fp_string(id)).is_err() {
                    break; // killed
                }
            }
        });
        let mut acked = 0u64;
        let wanted_acks = 1 + (round * 7) % 13;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..wanted_acks {
            match lines.next() {
                Some(Ok(l)) => acked = l.strip_prefix("ok ").unwrap().parse().unwrap(),
                _ => break,
            }
        }
        // Kill at different moments after the last acknowledgment: at once, or a little later mid-batch.
        std::thread::sleep(std::time::Duration::from_micros(round * 300));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let _ = writer.join();
        acked_per_round.push(acked);

        // Every acknowledged entry of every round so far is present.
        let stats = neardup(&["index", "stats", "--json", &idx]);
        assert!(
            stats.status.success(),
            "reopen after kill: {}",
            text(&stats.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(text(&stats.stdout).trim()).unwrap();
        let total: u64 = acked_per_round.iter().sum();
        assert!(
            v["entries"].as_u64().unwrap() >= total,
            "entries {} < acknowledged {total}",
            v["entries"]
        );
        let probes: Vec<String> = (0..acked)
            .step_by(((acked / 40).max(1)) as usize)
            .chain(acked.checked_sub(1))
            .map(|i| fp_string(round * 1_000_000 + i))
            .collect();
        if probes.is_empty() {
            continue;
        }
        let mut args = vec!["index", "query", "-k", "0", &idx];
        args.extend(probes.iter().map(String::as_str));
        let q = neardup(&args);
        let found = text(&q.stdout);
        for (n, p) in probes.iter().enumerate() {
            assert!(
                found.lines().any(|l| l.starts_with(p.as_str())),
                "round {round}: acknowledged probe {n} ({p}) lost"
            );
        }
    }
    assert!(
        acked_per_round.iter().sum::<u64>() > 100,
        "the test acknowledged too little to mean anything"
    );
}

#[test]
fn index_commands_round_trip_and_refuse_clearly() {
    let dir = temp_dir("index");
    let idx = dir.join("idx").display().to_string();
    assert!(
        neardup(&["index", "create", &idx, "--k", "3"])
            .status
            .success()
    );
    let again = neardup(&["index", "create", &idx]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("already exists"));
    // A mistyped parent, or a URL that is not Redis, is refused and makes no directory.
    let nested = dir.join("no/such/idx").display().to_string();
    let refused = neardup(&["index", "create", &nested]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("does not exist (create it first)"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.join("no").exists());
    let refused = neardup(&["index", "create", "http://example.org/idx"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("an index is a directory or a Redis URL"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!std::path::Path::new("http:").exists());
    let add = neardup(&["index", "add", &idx, &inputs_dir()]);
    assert_eq!(add.status.code(), Some(1), "three inputs fail");
    let q = neardup(&[
        "index",
        "query",
        &idx,
        &format!("{}/latin-precomposed.txt", inputs_dir()),
    ]);
    let out = text(&q.stdout);
    assert!(out.contains("latin-decomposed.txt\t0"), "{out}");
    let rm = neardup(&[
        "index",
        "remove",
        &idx,
        &format!("{}/latin-decomposed.txt", inputs_dir()),
    ]);
    assert!(rm.status.success(), "{}", text(&rm.stderr));
    let q = neardup(&[
        "index",
        "query",
        &idx,
        &format!("{}/latin-precomposed.txt", inputs_dir()),
    ]);
    assert!(!text(&q.stdout).contains("latin-decomposed.txt"));
    let too_far = neardup(&[
        "index",
        "query",
        "-k",
        "5",
        &idx,
        "simhash-doc-v1:aaaaaaaaaaaaa",
    ]);
    assert!(
        text(&too_far.stderr).contains("larger than the index's k = 3"),
        "{}",
        text(&too_far.stderr)
    );
    let bad = neardup_stdin(
        &["index", "add-fingerprints", &idx, "-"],
        b"x\tnot-a-fingerprint\n",
    );
    assert_eq!(bad.status.code(), Some(1));
    let foreign = temp_dir("foreign");
    std::fs::write(foreign.join("index.redb"), b"some text, not a database").unwrap();
    let foreign_segments = temp_dir("foreign-segments");
    std::fs::write(
        foreign_segments.join("MANIFEST"),
        b"some text, not a manifest",
    )
    .unwrap();
    let err = neardup(&["index", "stats", &foreign_segments.display().to_string()]);
    assert_eq!(err.status.code(), Some(2));
    assert!(
        text(&err.stderr).contains("MANIFEST is not a neardup index or is damaged"),
        "{}",
        text(&err.stderr)
    );
    let err = neardup(&["index", "stats", &foreign.display().to_string()]);
    assert_eq!(err.status.code(), Some(2));
    assert!(
        text(&err.stderr).contains("is not a neardup index or is damaged"),
        "{}",
        text(&err.stderr)
    );
}

#[test]
fn a_damaged_redb_index_is_one_clean_error() {
    let dir = temp_dir("damaged-index");
    let idx = dir.join("idx");
    let idx_s = idx.display().to_string();
    assert!(
        neardup(&["index", "create", "--store", "redb", &idx_s])
            .status
            .success()
    );
    let lines: String = (0..5000u64)
        .map(|i| format!("doc{i}\t{}\n", fp_string(i)))
        .collect();
    let add = neardup_stdin(
        // One transaction: the file is then nearly all live pages (damage to free pages harms nothing).
        &[
            "index",
            "add-fingerprints",
            "--batch",
            "100000",
            &idx_s,
            "-",
        ],
        lines.as_bytes(),
    );
    assert!(add.status.success(), "{}", text(&add.stderr));
    let file = idx.join("index.redb");
    let original = std::fs::read(&file).unwrap();
    let len = original.len();
    let mut middle = original.clone();
    for (i, b) in middle[len / 2..len / 2 + 8192].iter_mut().enumerate() {
        *b = (i * 131 % 251) as u8;
    }
    let mut header = original.clone();
    header[9..400].fill(0xee);
    let mut flips = original.clone();
    for i in (4096..len).step_by(997) {
        flips[i] ^= 0x20;
    }
    for (how, bytes) in [
        ("noise in the middle", middle),
        ("a damaged header", header),
        ("a bit flipped every 997 bytes", flips),
        ("truncated", original[..len / 2].to_vec()),
        (
            "not a database",
            b"random words, not a database at all".to_vec(),
        ),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        for args in [
            vec!["index", "stats", idx_s.as_str()],
            vec![
                "index",
                "query",
                idx_s.as_str(),
                "simhash-doc-v1:aaaaaaaaaaaaa",
            ],
        ] {
            let out = neardup(&args);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{how}: {stderr}");
            assert!(!stderr.contains("panicked"), "{how}: {stderr}");
            assert!(
                stderr.contains(&file.display().to_string()) && stderr.contains("damaged"),
                "{how}: {stderr}"
            );
            assert_eq!(stderr.lines().count(), 1, "{how}: one line: {stderr}");
        }
    }
    let missing = neardup(&["index", "stats", &dir.join("none").display().to_string()]);
    let stderr = text(&missing.stderr);
    assert!(
        stderr.contains("no index at") && stderr.contains("neardup index create"),
        "the CLI adds its hint: {stderr}"
    );
}

#[test]
fn a_damaged_segmented_index_is_named() {
    let dir = temp_dir("damaged-segments");
    let idx = dir.join("idx");
    let idx_s = idx.display().to_string();
    assert!(neardup(&["index", "create", &idx_s]).status.success());
    let lines = |range: std::ops::Range<u64>| -> String {
        range
            .map(|i| format!("doc{i}\t{}\n", fp_string(i)))
            .collect()
    };
    let add = |range| {
        let out = neardup_stdin(
            &["index", "add-fingerprints", "--batch", "500", &idx_s, "-"],
            lines(range).as_bytes(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    add(0..5000);
    let merged = neardup(&["index", "merge", &idx_s]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    add(5000..7000);
    let verified = neardup(&["index", "verify", &idx_s]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
    // The newest file of a kind (the active log, when older logs are kept for the change log).
    let file_named = |prefix: &str| {
        let mut files: Vec<_> = std::fs::read_dir(&idx)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .collect();
        files.sort();
        files.pop().unwrap()
    };
    let (segment, log, manifest) = (file_named("seg-"), file_named("wal-"), idx.join("MANIFEST"));
    let damaged = |bytes: &[u8], at: usize, len: usize| {
        let mut out = bytes.to_vec();
        for (i, b) in out[at..at + len].iter_mut().enumerate() {
            *b ^= 1 + (i % 7) as u8;
        }
        out
    };
    let seg_bytes = std::fs::read(&segment).unwrap();
    let log_bytes = std::fs::read(&log).unwrap();
    let manifest_bytes = std::fs::read(&manifest).unwrap();
    let n = seg_bytes.len();
    // (what, file, its damaged bytes, whether opening finds it: else only `verify` reads the data).
    let cases: Vec<(&str, &std::path::Path, Vec<u8>, bool)> = vec![
        (
            "a damaged manifest",
            &manifest,
            damaged(&manifest_bytes, 30, 1),
            true,
        ),
        (
            "a truncated segment",
            &segment,
            seg_bytes[..n / 2].to_vec(),
            true,
        ),
        (
            "a damaged segment header",
            &segment,
            damaged(&seg_bytes, 20, 4),
            true,
        ),
        (
            "a damaged segment footer",
            &segment,
            damaged(&seg_bytes, n - 20, 4),
            true,
        ),
        (
            "noise in a segment's data",
            &segment,
            damaged(&seg_bytes, n / 3, 4096),
            false,
        ),
        (
            "a damaged log record",
            &log,
            damaged(&log_bytes, 40, 2),
            true,
        ),
    ];
    for (how, path, bytes, at_open) in cases {
        std::fs::write(path, &bytes).unwrap();
        let mut commands = vec![vec!["index", "verify", idx_s.as_str()]];
        if at_open {
            commands.push(vec!["index", "stats", idx_s.as_str()]);
            commands.push(vec![
                "index",
                "query",
                idx_s.as_str(),
                "simhash-doc-v1:aaaaaaaaaaaaa",
            ]);
        } else {
            // Queries read what they touch, unverified, but never panic.
            let out = neardup(&["index", "query", &idx_s, &fp_string(3)]);
            assert!(
                !text(&out.stderr).contains("panicked"),
                "{how}: {}",
                text(&out.stderr)
            );
        }
        for args in commands {
            let out = neardup(&args);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{how}, {args:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{how}: {stderr}");
            assert!(
                stderr.contains(&path.display().to_string())
                    && (stderr.contains("damaged") || stderr.contains("truncated")),
                "{how}, {args:?}: {stderr}"
            );
        }
        std::fs::write(
            path,
            if *path == *segment {
                &seg_bytes
            } else if *path == *log {
                &log_bytes
            } else {
                &manifest_bytes
            },
        )
        .unwrap();
    }
    let stats = neardup(&["index", "stats", "--json", &idx_s]);
    assert!(
        text(&stats.stdout).contains("\"entries\":7000"),
        "{}",
        text(&stats.stdout)
    );
}

#[test]
fn dedup_against_a_persistent_index_across_runs() {
    let dir = temp_dir("dedup-index");
    let idx = dir.join("idx").display().to_string();
    let day1 = dir.join("day1");
    let day2 = dir.join("day2");
    std::fs::create_dir_all(&day1).unwrap();
    std::fs::create_dir_all(&day2).unwrap();
    let page =
        "The quick brown fox jumps over the lazy dog while the band plays on the old pier tonight";
    std::fs::write(day1.join("page.html"), format!("<p>{page}</p>")).unwrap();
    std::fs::write(
        day1.join("other.txt"),
        "compilers parse tokens into syntax trees and emit machine code",
    )
    .unwrap();
    std::fs::write(day2.join("page.txt"), page).unwrap();
    assert!(neardup(&["index", "create", &idx]).status.success());
    let first = neardup(&["dedup", "--index", &idx, &day1.display().to_string()]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(text(&first.stdout), "", "no duplicates on day one");
    let second = neardup(&[
        "dedup",
        "--index",
        &idx,
        "--pairs",
        &day2.display().to_string(),
    ]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    let out = text(&second.stdout);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("day1/page.html") && out.contains("day2/page.txt") && out.ends_with("\t0\n"),
        "{out}"
    );
    let stats = neardup(&["index", "stats", "--json", &idx]);
    let v: serde_json::Value = serde_json::from_str(text(&stats.stdout).trim()).unwrap();
    assert_eq!(v["entries"], 3, "both days are stored");
    let too_far = neardup(&[
        "dedup",
        "--index",
        &idx,
        "-k",
        "5",
        &day2.display().to_string(),
    ]);
    assert!(text(&too_far.stderr).contains("larger than the index's k = 3"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["plan", "--n", "1e9", "--top", "40"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away at once
    let out = child.wait_with_output().unwrap();
    assert!(
        !text(&out.stderr).contains("error"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn warc_records_are_documents_named_by_uri() {
    let warc = repo().join("testdata/vectors/simhash-doc-v1/inputs/crawl.warc.gz");
    let warc = warc.display().to_string();
    let out = neardup(&["hash", "--json", &warc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The request, warcinfo, 404 and image records are not documents.
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["path"], "http://example.org/a");
    assert_eq!(lines[0]["media"], "html");
    assert_eq!(lines[0]["encoding"], "windows-1251");
    assert_eq!(lines[0]["encoding_source"], "external");
    assert_eq!(lines[1]["path"], "http://example.org/b.txt");
    assert_eq!(lines[1]["media"], "text");

    // dedup lists records by URI too: a copy of the archive pairs each record with its copy, the two
    // named by their archives (ids are unique in a run).
    let dir = temp_dir("warc-dedup");
    std::fs::copy(&warc, dir.join("copy.warc.gz")).unwrap();
    let out = neardup(&["dedup", "--pairs", &warc, &dir.display().to_string()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let copy = dir.join("copy.warc.gz").display().to_string();
    assert!(
        stdout.contains(&format!(
            "http://example.org/a (in {copy})\thttp://example.org/a (in {warc})\t0"
        )) || stdout.contains(&format!(
            "http://example.org/a (in {warc})\thttp://example.org/a (in {copy})\t0"
        )),
        "{stdout}"
    );

    // A damaged archive: the records before the damage, then an error naming the file.
    let bad = repo().join("testdata/malformed/warc-truncated.warc");
    let out = neardup(&["hash", &bad.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("\thttp://example.org/a\n"));
    assert!(text(&out.stderr).contains("warc-truncated.warc: malformed WARC at byte"));
}

#[test]
fn media_are_detected_by_content_and_reported() {
    let inputs = repo().join("testdata/vectors/simhash-doc-v1/inputs");
    let mut expect = vec![
        ("pdf-text.pdf", "pdf"),
        ("jats-article.xml", "xml"),
        ("book.epub", "epub"),
        ("html-main-content.html", "html"),
    ];
    // Content decides, not the name: the same bytes under a misleading name.
    let dir = temp_dir("media");
    std::fs::copy(inputs.join("pdf-text.pdf"), dir.join("paper.txt")).unwrap();
    std::fs::copy(inputs.join("jats-article.xml"), dir.join("article.html")).unwrap();
    expect.push(("paper.txt", "pdf"));
    expect.push(("article.html", "xml"));
    for (name, media) in expect {
        let path = if inputs.join(name).exists() {
            inputs.join(name)
        } else {
            dir.join(name)
        };
        let out = neardup(&["hash", "--json", &path.display().to_string()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
        assert_eq!(v["media"], media, "{name}");
    }
    // --media overrides detection.
    let out = neardup(&[
        "hash",
        "--json",
        "--media",
        "text",
        &inputs.join("jats-article.xml").display().to_string(),
    ]);
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["media"], "text");
    // A scanned PDF is a clear error.
    let out = neardup(&[
        "hash",
        &inputs.join("pdf-no-text-layer.pdf").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("pdf-no-text-layer.pdf: the PDF has no text layer"),
        "{}",
        text(&out.stderr)
    );
}

/// The same short paper as PDF, HTML and JATS XML (README's example): three fingerprints within k = 3.
#[test]
fn one_paper_in_three_media() {
    let inputs = repo().join("testdata/vectors/simhash-doc-v1/inputs");
    let paths: Vec<String> = ["paper.pdf", "paper.html", "paper.xml"]
        .iter()
        .map(|n| inputs.join(n).display().to_string())
        .collect();
    let out = neardup(&["hash", &paths[0], &paths[1], &paths[2]]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fps: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect();
    assert_eq!(fps.len(), 3);
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        let out = neardup(&["compare", &fps[a], &fps[b]]);
        let distance: u32 = text(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("distance\t"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            distance <= 3,
            "{} vs {}: distance {distance}",
            paths[a],
            paths[b]
        );
    }
}

#[path = "../../neardup-store-redis/tests/support/mod.rs"]
mod redis_support;

/// An index in a real Redis through every `index` command, as with a directory: the same answers as a
/// directory index of the same documents; a name taken, a Redis that is not there and a wrong password are
/// errors that name the location, and never show the password.
#[test]
fn an_index_in_redis_works_like_a_directory() {
    if !redis_support::have_redis() {
        return;
    }
    let redis = redis_support::Server::start(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}/docs", redis.port);
    let scratch = temp_dir("redis-twin");
    let dir = scratch.join("idx");
    let docs = inputs_dir();
    for index in [url.as_str(), dir.to_str().unwrap()] {
        let out = neardup(&["index", "create", index]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = neardup(&["index", "add", index, &docs]);
        assert!(
            out.status.success() || out.status.code() == Some(1),
            "{}",
            text(&out.stderr)
        );
    }
    let query = |index: &str| {
        let out = neardup(&["index", "query", index, &docs]);
        assert!(
            out.status.success() || out.status.code() == Some(1),
            "{}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    assert!(!query(&url).is_empty());
    assert_eq!(
        query(&url),
        query(dir.to_str().unwrap()),
        "Redis answers as the directory does"
    );
    let export = |index: &str| {
        let out = neardup(&["index", "export", index]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        out.stdout
    };
    assert!(!export(&url).is_empty());
    assert_eq!(
        export(&url),
        export(dir.to_str().unwrap()),
        "Redis exports what the directory exports"
    );
    let out = neardup(&["index", "verify", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("s3cret"),
        "{}",
        text(&out.stderr)
    );
    let out = neardup(&["index", "remove", &url, "nope"]);
    assert!(!text(&out.stderr).contains("s3cret"));

    for (args, says) in [
        (vec!["index", "create", url.as_str()], "already exists"),
        (
            vec!["index", "stats", "redis://127.0.0.1:1/docs"],
            "redis://127.0.0.1:1/docs",
        ),
        (vec!["index", "stats", "redis://127.0.0.1:1"], "/NAME"),
    ] {
        let out = neardup(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let wrong = format!("redis://:wrong-pw@127.0.0.1:{}/docs", redis.port);
    let out = neardup(&["index", "stats", &wrong]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(":***@"), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("wrong-pw"),
        "{}",
        text(&out.stderr)
    );
}

/// `index export` prints every entry sorted by id, in the lines `index add-fingerprints` reads: an index
/// exported, added into another store and exported again gives the same bytes; `--store-order` streams the
/// same lines; `--json` carries ids that TSV cannot, which TSV refuses by name.
#[test]
fn an_exported_index_adds_back_into_another_store_byte_for_byte() {
    let dir = temp_dir("export");
    let (a, b, c) = (
        dir.join("a").display().to_string(),
        dir.join("b").display().to_string(),
        dir.join("c").display().to_string(),
    );
    for (idx, store) in [(&a, "segments"), (&b, "redb"), (&c, "segments")] {
        let made = neardup(&[
            "index", "create", idx, "--scheme", "minhash", "--store", store,
        ]);
        assert!(made.status.success(), "{}", text(&made.stderr));
    }
    let add = neardup(&["index", "add", &a, &inputs_dir()]);
    assert!(
        add.status.code().is_some_and(|c| c <= 1),
        "{}",
        text(&add.stderr)
    );
    let exported = neardup(&["index", "export", &a]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let lines = text(&exported.stdout);
    let ids: Vec<&str> = lines
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert!(ids.len() > 5 && ids.is_sorted(), "{lines}");
    assert!(
        lines.lines().all(|l| l.contains("\tminhash-oph-v1:")),
        "{lines}"
    );

    let tsv = dir.join("a.tsv");
    std::fs::write(&tsv, &exported.stdout).unwrap();
    let back = neardup(&["index", "add-fingerprints", &b, &tsv.display().to_string()]);
    assert!(back.status.success(), "{}", text(&back.stderr));
    assert_eq!(neardup(&["index", "export", &b]).stdout, exported.stdout);
    let mut streamed: Vec<String> =
        text(&neardup(&["index", "export", "--store-order", &b]).stdout)
            .lines()
            .map(str::to_owned)
            .collect();
    streamed.sort();
    assert_eq!(streamed.join("\n") + "\n", lines);

    // An id with a tab: refused in TSV, carried by JSON lines.
    let sketch = lines.lines().next().unwrap().split('\t').nth(1).unwrap();
    let odd = format!("{{\"id\": \"odd\\tid\", \"fingerprint\": \"{sketch}\"}}\n");
    let added = neardup_stdin(&["index", "add-fingerprints", &c, "-"], odd.as_bytes());
    assert!(added.status.success(), "{}", text(&added.stderr));
    let refused = neardup(&["index", "export", &c]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("export with --json"),
        "{}",
        text(&refused.stderr)
    );
    let json = neardup(&["index", "export", "--json", &c]);
    assert_eq!(
        text(&json.stdout),
        format!("{{\"fingerprint\":\"{sketch}\",\"id\":\"odd\\tid\"}}\n")
    );
}

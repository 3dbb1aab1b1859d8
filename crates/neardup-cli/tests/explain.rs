//! `neardup explain`, `neardup calibrate`, `neardup plan --plot` and SimHash `dedup --verify exact`, run
//! as the real binary on small inputs: the charts are valid (the PNG decodes, the SVG parses), the HTML pages
//! reference only what they embed, and the numbers in them are the numbers printed.

mod common;

use common::{neardup, neardup_stdin, temp_dir, text};
use serde_json::Value;
use std::path::Path;

const A: &str = "Release notes\nFixed a crash when opening empty files.\nThe parser is faster now.\nThanks to all contributors.\n";
const B: &str = "Release notes\nFixed a crash when opening empty folders.\nThe parser is faster now.\nThanks to all contributors.\nNew: dark mode.\n";

fn write_docs(dir: &Path, docs: &[(&str, &str)]) {
    for (name, body) in docs {
        std::fs::write(dir.join(name), body).unwrap();
    }
}

/// Parses XML to its end; panics on the first error.
fn assert_xml(doc: &str, what: &str) -> usize {
    let mut reader = quick_xml::Reader::from_str(doc);
    let mut elements = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => return elements,
            Ok(quick_xml::events::Event::Start(_) | quick_xml::events::Event::Empty(_)) => {
                elements += 1
            }
            Ok(_) => {}
            Err(e) => panic!(
                "{what} is not well-formed XML at {}: {e}",
                reader.buffer_position()
            ),
        }
    }
}

/// Decodes a PNG; returns (width, height, distinct colours seen).
fn decode_png(bytes: &[u8]) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(3).collect();
    (info.width, info.height, colours.len())
}

/// The page loads nothing: no scripts, stylesheets, frames or remote URLs; images are data URIs.
fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for needle in [
        "<script", "<link", "<iframe", "http://", "https://", "url(", "@import",
    ] {
        // The SVG namespace is a name, not a reference.
        let count = lower.matches(needle).count();
        let namespaces = lower
            .matches("xmlns=\"http://www.w3.org/2000/svg\"")
            .count();
        let allowed = if needle == "http://" { namespaces } else { 0 };
        assert_eq!(count, allowed, "the page references '{needle}'");
    }
    for src in lower.split(" src=\"").skip(1) {
        assert!(
            src.starts_with("data:"),
            "an image that is not embedded: {}",
            &src[..40.min(src.len())]
        );
    }
    assert!(!lower.contains("href="), "a link in the page");
}

#[test]
fn explain_shows_features_bits_and_the_diff() {
    let dir = temp_dir("explain");
    write_docs(&dir, &[("a.txt", A), ("b.txt", B)]);
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let json = neardup(&["explain", "--json", a, b]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let distance = v["estimate"]["distance"].as_u64().unwrap();
    assert_eq!(v["bits"].as_array().unwrap().len() as u64, distance);
    for bit in v["bits"].as_array().unwrap() {
        // The counter decides the bit.
        assert_eq!(bit["counter_a"].as_i64().unwrap() > 0, bit["a"] == 1);
        assert_eq!(bit["counter_b"].as_i64().unwrap() > 0, bit["b"] == 1);
    }
    assert_eq!(v["features"]["only_a"][0]["text"], "files");
    assert_eq!(v["verdict"]["near_duplicate"], distance <= 3);
    let rows: Vec<&Value> = v["diff"]["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| h.as_array().unwrap())
        .collect();
    assert!(
        rows.iter().any(|r| r["tag"] == "changed"
            && r["b"]["text"] == "Fixed a crash when opening empty folders.")
    );
    assert!(
        rows.iter()
            .any(|r| r["tag"] == "inserted" && r["b"]["text"] == "New: dark mode.")
    );

    // The terminal shows the same numbers.
    let plain = neardup(&["explain", a, b]);
    let out = text(&plain.stdout);
    assert!(out.contains(&format!("distance {distance},")), "{out}");
    let cosine = v["exact"]["cosine"].as_f64().unwrap();
    assert!(
        out.contains(&format!("cosine of term frequencies {cosine:.6}")),
        "{out}"
    );
    assert!(
        out.contains("- Fixed a crash when opening empty files."),
        "{out}"
    );
    assert!(out.contains("+ New: dark mode."), "{out}");

    // The page: well-formed enough to parse, self-contained, same numbers.
    let html = neardup(&["explain", "--html", a, b]);
    let page = text(&html.stdout);
    assert_self_contained(&page);
    assert!(page.contains(&format!("cosine of term frequencies {cosine:.6}")));
    assert!(page.contains("New: dark mode."));

    // Stdin as one operand, MinHash, and the errors.
    let stdin = neardup_stdin(
        &[
            "explain",
            "--json",
            "--scheme",
            "minhash",
            "--shingle",
            "2",
            "-",
            b,
        ],
        A.as_bytes(),
    );
    assert!(stdin.status.success(), "{}", text(&stdin.stderr));
    let v: Value = serde_json::from_slice(&stdin.stdout).unwrap();
    assert_eq!(v["exact"]["scheme_measure"], "jaccard");
    assert_eq!(v["features"]["kind"], "shingle");
    let missing = neardup(&["explain", a, "no/such/file"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such/file"));
    std::fs::write(dir.join("empty.txt"), "123 456").unwrap();
    let empty = neardup(&["explain", a, dir.join("empty.txt").to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(
        text(&empty.stderr).contains("empty.txt"),
        "{}",
        text(&empty.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_reads_ids_from_an_index() {
    let dir = temp_dir("explain-index");
    write_docs(&dir, &[("a.txt", A), ("b.txt", B)]);
    let idx = dir.join("idx");
    let idx = idx.to_str().unwrap();
    let in_dir = |args: &[&str], cwd: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_neardup"))
            .current_dir(cwd)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(neardup(&["index", "create", idx]).status.success());
    // Stored as a.txt and b.txt (paths relative to dir).
    let add = in_dir(&["index", "add", idx, "a.txt", "b.txt"], &dir);
    assert!(add.status.success(), "{}", text(&add.stderr));
    // Elsewhere those names are not files: they are ids.
    let elsewhere = temp_dir("explain-index-cwd");
    let stored = in_dir(
        &["explain", "--json", "--index", idx, "a.txt", "b.txt"],
        &elsewhere,
    );
    assert!(stored.status.success(), "{}", text(&stored.stderr));
    let v: Value = serde_json::from_slice(&stored.stdout).unwrap();
    let files = neardup(&[
        "explain",
        "--json",
        dir.join("a.txt").to_str().unwrap(),
        dir.join("b.txt").to_str().unwrap(),
    ]);
    let f: Value = serde_json::from_slice(&files.stdout).unwrap();
    // The same sketches, so the same estimate and bits; no text, so no features, counters or diff.
    assert_eq!(v["estimate"], f["estimate"]);
    assert_eq!(
        v["bits"].as_array().unwrap().len(),
        f["bits"].as_array().unwrap().len()
    );
    assert!(v["features"].is_null() && v["diff"].is_null());
    assert!(
        v["bits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["counter_a"].is_null())
    );
    let unknown = in_dir(
        &["explain", "--index", idx, "a.txt", "not-a-stored-id"],
        &elsewhere,
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("not-a-stored-id"),
        "{}",
        text(&unknown.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn simhash_verification_drops_reordered_candidates() {
    let dir = temp_dir("verify");
    write_docs(
        &dir,
        &[
            (
                "a.txt",
                "the cat sat on the mat while the dog slept by the door",
            ),
            (
                "b.txt",
                "the dog sat on the door while the cat slept by the mat",
            ),
            (
                "c.txt",
                "the cat sat on the mat while the dog slept by the door today",
            ),
        ],
    );
    let d = dir.to_str().unwrap();
    let plain = neardup(&["dedup", "--pairs", d]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(text(&plain.stdout).lines().count(), 3);
    let verified = neardup(&[
        "dedup",
        "--pairs",
        "--verify",
        "exact",
        "--threshold",
        "0.7",
        d,
    ]);
    assert!(verified.status.success(), "{}", text(&verified.stderr));
    let pairs = text(&verified.stdout);
    assert_eq!(pairs.lines().count(), 1, "{pairs}");
    assert!(pairs.contains("a.txt") && pairs.contains("c.txt"));
    assert!(text(&verified.stderr).contains("jaccard of word 3-grams ≥ 0.7"));
    let cosine = neardup(&[
        "dedup",
        "--pairs",
        "--verify",
        "exact",
        "--measure",
        "cosine",
        "--threshold",
        "0.7",
        d,
    ]);
    assert_eq!(text(&cosine.stdout).lines().count(), 3);
    let refused = neardup(&["dedup", "--pairs", "--threshold", "0.7", d]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--verify exact"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small corpus: three families of near-duplicates and unrelated pages.
fn corpus(dir: &Path) -> String {
    let base = [
        "the parser reads every file in the directory and reports each error with its line number and column",
        "release notes: a crash when opening empty files is fixed and the installer is smaller than before",
        "to configure the server, copy the example file, set the port and the data directory, then restart it",
    ];
    let mut truth = String::from("id_a\tid_b\tsimilarity\n");
    let mut names = Vec::new();
    for (f, text) in base.iter().enumerate() {
        for v in 0..3 {
            let name = format!("f{f}v{v}.txt");
            let body = match v {
                0 => text.to_string(),
                1 => format!("{text} today"),
                _ => text.replace("the", "a"),
            };
            std::fs::write(dir.join(&name), body).unwrap();
            names.push((f, name));
        }
    }
    for (i, unrelated) in [
        "gardening with tomatoes in spring soil",
        "a history of the printing press in europe",
        "how to bake bread at home with yeast",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(dir.join(format!("u{i}.txt")), unrelated).unwrap();
    }
    for (i, (fa, a)) in names.iter().enumerate() {
        for (fb, b) in &names[i + 1..] {
            if fa == fb {
                truth.push_str(&format!("d/{a}\t{b}\t0.9\n").replace("\tf", "\td/f"));
            }
        }
    }
    truth
}

#[test]
fn calibrate_writes_valid_charts_with_the_printed_numbers() {
    let dir = temp_dir("calibrate");
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("d")).unwrap();
    // Ids are paths as given: d/f0v0.txt, ...
    let truth = corpus(&docs.join("d"));
    std::fs::write(dir.join("truth.tsv"), truth).unwrap();
    for scheme in ["simhash", "minhash"] {
        let out = dir.join(format!("out-{scheme}"));
        let mut args = vec![
            "calibrate",
            "--truth",
            "../truth.tsv",
            "--out",
            out.to_str().unwrap(),
            "--scheme",
            scheme,
        ];
        if scheme == "minhash" {
            args.extend(["--shingle", "2", "--num-perm", "64"]);
        }
        args.push("d");
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_neardup"))
            .current_dir(&docs)
            .args(&args)
            .output()
            .unwrap();
        assert!(run.status.success(), "{scheme}: {}", text(&run.stderr));
        let printed = text(&run.stdout);
        let json: Value =
            serde_json::from_slice(&std::fs::read(out.join("calibration.json")).unwrap()).unwrap();
        assert_eq!(json["documents"], 12);
        assert_eq!(json["positives"], 9);
        // Each printed sweep row is the JSON's, and the report's table holds the same cells.
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert_self_contained(&html);
        let sweep = json["sweep"].as_array().unwrap();
        let rows: Vec<&str> = printed
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(rows.len(), sweep.len(), "{printed}");
        for (line, row) in rows.iter().zip(sweep) {
            let cells: Vec<&str> = line.split('\t').collect();
            assert_eq!(cells[1], row["detected"].to_string());
            assert_eq!(cells[2], row["true_positives"].to_string());
            assert_eq!(
                cells[3],
                format!("{:.4}", row["precision"].as_f64().unwrap())
            );
            assert_eq!(cells[4], format!("{:.4}", row["recall"].as_f64().unwrap()));
            let html_row: String = cells.iter().map(|c| format!("<td>{c}</td>")).collect();
            assert!(html.contains(&html_row), "the report lacks the row {line}");
        }
        let rec = json["recommendation"]["setting"].as_f64().unwrap();
        assert!(printed.contains("recommended"), "{printed}");
        let best_f1 = sweep
            .iter()
            .map(|r| r["f1"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert_eq!(
            json["recommendation"]["row"]["f1"].as_f64().unwrap(),
            best_f1
        );
        assert!(sweep.iter().any(|r| r["setting"].as_f64().unwrap() == rec));

        let mut names = vec!["distances", "precision-recall"];
        if scheme == "minhash" {
            names.push("s-curve");
        }
        for name in names {
            let svg = std::fs::read_to_string(out.join(format!("{name}.svg"))).unwrap();
            assert!(assert_xml(&svg, name) > 10);
            let png = std::fs::read(out.join(format!("{name}.png"))).unwrap();
            let (w, h, colours) = decode_png(&png);
            assert_eq!((w, h), (800, 500));
            assert!(colours > 3, "{name}.png is blank");
            // The page embeds this PNG byte for byte.
            let embedded = format!(
                "data:image/png;base64,{}",
                data_encoding::BASE64.encode(&png)
            );
            assert!(html.contains(&embedded), "{name}.png is not embedded");
            if name == "precision-recall" {
                // One point per setting for precision, recall and F1.
                assert_eq!(svg.matches("<circle").count(), 3 * sweep.len());
            }
            if name == "s-curve" {
                let observed = json["s_curve"]["observed"].as_array().unwrap().len();
                assert_eq!(svg.matches("<circle").count(), observed);
            }
        }
    }
    let bad = neardup(&[
        "calibrate",
        "--truth",
        dir.join("missing.tsv").to_str().unwrap(),
        "--out",
        dir.join("x").to_str().unwrap(),
        docs.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("missing.tsv"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plan_plots_its_s_curve_and_designs() {
    let dir = temp_dir("plan-plot");
    let svg = dir.join("s.svg");
    let run = neardup(&[
        "plan",
        "--scheme",
        "minhash",
        "--threshold",
        "0.7",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let printed = text(&run.stdout);
    let rows = printed.lines().filter(|l| l.starts_with("0.")).count();
    let doc = std::fs::read_to_string(&svg).unwrap();
    assert!(assert_xml(&doc, "s.svg") > 10);
    // One point per printed row of the table, and the banding printed is the chart's.
    assert_eq!(doc.matches("<circle").count(), rows);
    let banding = printed
        .lines()
        .find_map(|l| l.strip_prefix("banding: "))
        .unwrap();
    assert!(doc.contains(&format!("S-curve of {banding}")), "{banding}");
    let png = dir.join("designs.png");
    let run = neardup(&[
        "plan",
        "-n",
        "1e8",
        "-k",
        "3",
        "--top",
        "5",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (w, h, colours) = decode_png(&std::fs::read(&png).unwrap());
    assert_eq!((w, h), (800, 500));
    assert!(colours > 3);
    let bad = neardup(&[
        "plan",
        "-n",
        "1e8",
        "--plot",
        dir.join("x.gif").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains(".svg or .png"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_reads_records_as_it_reads_files() {
    let dir = temp_dir("calibrate-records");
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("d")).unwrap();
    std::fs::write(docs.join("truth.tsv"), corpus(&docs.join("d"))).unwrap();
    // The same documents as records, each with its file's path as id, in another order.
    let mut names: Vec<String> = std::fs::read_dir(docs.join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    let records: String = names
        .iter()
        .map(|name| {
            let body = std::fs::read_to_string(docs.join("d").join(name)).unwrap();
            serde_json::json!({"id": format!("d/{name}"), "text": body}).to_string() + "\n"
        })
        .collect();
    std::fs::write(docs.join("records.jsonl"), records).unwrap();
    for scheme in ["simhash", "minhash"] {
        let run = |input: &str, out: &str| {
            let run = std::process::Command::new(env!("CARGO_BIN_EXE_neardup"))
                .current_dir(&docs)
                .args([
                    "calibrate",
                    "--truth",
                    "truth.tsv",
                    "--sample",
                    "10",
                    "--scheme",
                    scheme,
                    "--out",
                    out,
                    input,
                ])
                .output()
                .unwrap();
            assert!(run.status.success(), "{input}: {}", text(&run.stderr));
            let json = std::fs::read(docs.join(out).join("calibration.json")).unwrap();
            (text(&run.stdout), json)
        };
        let (files, records) = (run("d", "../files"), run("records.jsonl", "../records"));
        assert_eq!(files, records, "{scheme}");
        assert!(files.0.contains("10 scored of 12 read"), "{}", files.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_refuses_an_out_directory_inside_an_input_directory() {
    let dir = temp_dir("calibrate-out-inside");
    write_docs(
        &dir,
        &[
            (
                "a.txt",
                "the cat sat on the mat while the dog slept by the door",
            ),
            (
                "b.txt",
                "the cat sat on the mat while the dog slept by the gate",
            ),
        ],
    );
    let docs = dir.to_str().unwrap();
    for out in [
        dir.join("cal"),
        dir.join("x").join("..").join("cal").join("deeper"),
    ] {
        let run = neardup(&["calibrate", "--out", out.to_str().unwrap(), docs]);
        let stderr = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("lies inside the input directory"),
            "{stderr}"
        );
    }
    // Nothing was made inside the inputs.
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "b.txt"]);
    let _ = std::fs::remove_dir_all(&dir);
}

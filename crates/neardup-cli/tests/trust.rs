//! Regression tests for the CLI's trust bugs: each failed before its fix (a hang, lost writes, a file that
//! was its own duplicate, silently wrong results), running the real binary on real files.

mod common;

use common::{neardup, neardup_stdin, neardup_within, temp_dir, text};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const PAGE: &str =
    "The quick brown fox jumps over the lazy dog near the river bank every single morning";

#[test]
fn jsonl_on_a_directory_reports_once_and_ends() {
    let dir = temp_dir("jsonl-dir");
    let out = neardup_within(
        &["dedup", "--jsonl", dir.to_str().unwrap()],
        Duration::from_secs(20),
    );
    let stderr = text(&out.stderr);
    assert!(stderr.lines().count() < 5, "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

#[test]
fn a_file_reached_twice_is_read_once_and_links_are_not_followed() {
    let dir = temp_dir("identity");
    std::fs::create_dir_all(dir.join("site/v2.0")).unwrap();
    std::fs::write(dir.join("site/v2.0/page.txt"), PAGE).unwrap();
    std::fs::write(dir.join("site/other.txt"), PAGE).unwrap();
    std::os::unix::fs::symlink("other.txt", dir.join("site/a-link.txt")).unwrap();
    let site = dir.join("site");
    let inner = dir.join("site/v2.0");
    let out = neardup(&["dedup", site.to_str().unwrap(), inner.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(!stdout.contains("a-link"), "{stdout}");
    // With --follow, the link is read instead of its target (it comes first), never both.
    let out = neardup(&["dedup", "--follow", site.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout.contains("a-link.txt") && !stdout.contains("other.txt"),
        "{stdout}"
    );
}

#[test]
fn duplicate_jsonl_ids_are_refused_with_both_lines() {
    let input = format!(
        "{{\"id\":\"a\",\"text\":\"{PAGE}\"}}\n{{\"id\":\"b\",\"text\":\"{PAGE}\"}}\n{{\"id\":\"a\",\"text\":\"other words entirely here\"}}\n"
    );
    let out = neardup_stdin(&["dedup", "--jsonl", "-"], input.as_bytes());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("-:3") && stderr.contains("duplicate id 'a'") && stderr.contains("-:1"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout).matches("\ta\t").count(), 1);
}

#[test]
fn jsonl_html_is_extracted_when_asked() {
    let html = "<html><body><nav>menu home about contact</nav><main><p>The same article text, with enough words to be a document of its own.</p></main></body></html>";
    let plain = "The same article text, with enough words to be a document of its own.";
    let input = format!(
        "{}\n{}\n",
        serde_json::json!({"id": "html", "text": html}),
        serde_json::json!({"id": "plain", "text": plain})
    );
    let out = neardup_stdin(
        &["hash", "--jsonl", "--media", "html", "-"],
        input.as_bytes(),
    );
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    let fp = |l: &String| l.split('\t').next().unwrap().to_owned();
    let plain_fp = text(&neardup_stdin(&["hash", "-"], plain.as_bytes()).stdout);
    assert_eq!(fp(&lines[0]), plain_fp.split('\t').next().unwrap());
}

#[test]
fn flags_of_the_other_method_are_errors() {
    let dir = temp_dir("flags");
    std::fs::write(dir.join("a.txt"), PAGE).unwrap();
    let path = dir.to_str().unwrap();
    for args in [
        vec!["dedup", "--threshold", "0.8", path],
        vec!["dedup", "--verify", "estimate", path],
        vec!["dedup", "--scheme", "minhash", "-k", "3", path],
    ] {
        let out = neardup(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("applies to") || text(&out.stderr).contains("Hamming"));
    }
}

#[test]
fn plan_shows_the_bands_dedup_uses() {
    let dir = temp_dir("plan-bands");
    std::fs::write(dir.join("a.txt"), PAGE).unwrap();
    let plan = text(&neardup(&["plan", "--scheme", "minhash", "--threshold", "0.8"]).stdout);
    let banding = plan
        .lines()
        .find_map(|l| l.strip_prefix("banding: "))
        .expect("a banding line")
        .to_owned();
    let dedup = neardup(&[
        "dedup",
        "--scheme",
        "minhash",
        "--threshold",
        "0.8",
        dir.to_str().unwrap(),
    ]);
    assert!(
        text(&dedup.stderr).contains(&banding),
        "{banding} / {}",
        text(&dedup.stderr)
    );
}

#[test]
fn empty_documents_are_warnings_unless_strict() {
    let dir = temp_dir("empty");
    std::fs::write(dir.join("a.txt"), PAGE).unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    std::fs::write(dir.join("numbers.html"), "<p>1 2 3</p>").unwrap();
    let out = neardup(&["hash", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("warning"));
    let strict = neardup(&["hash", "--strict", dir.to_str().unwrap()]);
    assert_eq!(strict.status.code(), Some(1));
    let dedup = neardup(&["dedup", dir.to_str().unwrap()]);
    assert_eq!(dedup.status.code(), Some(0));
    assert!(
        text(&dedup.stderr).contains("2 empty"),
        "{}",
        text(&dedup.stderr)
    );
}

/// A WARC response record of an HTML page holding `PAGE`.
fn warc_record(uuid: &str, date: &str, uri: &str) -> String {
    let body = format!("<html><body><p>{PAGE}</p></body></html>");
    let http = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid}>\r\nWARC-Date: {date}\r\nWARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    )
}

#[test]
fn dedup_json_names_each_warc_record() {
    let dir = temp_dir("warc-dedup");
    let path = dir.join("crawl.warc");
    let records = warc_record("1", "2026-01-02T03:04:05Z", "http://example.org/a")
        + &warc_record("2", "2026-02-03T04:05:06Z", "http://example.org/b");
    std::fs::write(&path, records).unwrap();
    let out = neardup(&["dedup", "--json", path.to_str().unwrap()]);
    let line: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let members = line["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{line}");
    assert_eq!(members[0]["id"], "http://example.org/a");
    assert_eq!(members[0]["warc_record_id"], "<urn:uuid:1>");
    assert_eq!(members[1]["warc_record_id"], "<urn:uuid:2>");
    assert_eq!(members[1]["warc_date"], "2026-02-03T04:05:06Z");
    assert_eq!(members[1]["duplicate_of"], "http://example.org/a");
}

#[test]
fn null_terminated_output_keeps_names_whole() {
    let input = format!(
        "{}\n{}\n",
        serde_json::json!({"id": "a\tb", "text": PAGE}),
        serde_json::json!({"id": "c\nd", "text": PAGE})
    );
    let pairs = neardup_stdin(
        &["dedup", "--jsonl", "--pairs", "-0", "-"],
        input.as_bytes(),
    );
    assert_eq!(pairs.stdout, b"a\tb\tc\nd\t0\0");
    let dir = temp_dir("null-hash");
    let odd = dir.join("two\nlines.txt");
    std::fs::write(&odd, PAGE).unwrap();
    let hashed = neardup(&["hash", "--null", odd.to_str().unwrap()]);
    let line = text(&hashed.stdout);
    assert!(line.ends_with("two\nlines.txt\0"), "{line:?}");
    assert_eq!(line.matches('\0').count(), 1);
}

#[test]
fn hash_json_reports_each_warc_record_size() {
    let body = format!("<html><body><p>{PAGE}</p></body></html>");
    let record = warc_record("1234", "2026-01-02T03:04:05Z", "http://example.org/a");
    let dir = temp_dir("warc-bytes");
    let path = dir.join("crawl.warc");
    std::fs::write(&path, record).unwrap();
    let out = neardup(&["hash", "--json", path.to_str().unwrap()]);
    let line: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(line["bytes"], body.len());
    assert_eq!(line["warc_record_id"], "<urn:uuid:1234>");
    assert_eq!(line["warc_date"], "2026-01-02T03:04:05Z");
}

#[test]
fn compare_exit_code_says_the_verdict() {
    let dir = temp_dir("exit-code");
    std::fs::write(dir.join("a.txt"), PAGE).unwrap();
    std::fs::write(dir.join("b.txt"), format!("{PAGE}!")).unwrap();
    std::fs::write(
        dir.join("c.txt"),
        "a different document about other things entirely today",
    )
    .unwrap();
    let f = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    let same = neardup(&["compare", "--exit-code", &f("a.txt"), &f("b.txt")]);
    assert_eq!(same.status.code(), Some(0));
    let different = neardup(&["compare", "--exit-code", &f("a.txt"), &f("c.txt")]);
    assert_eq!(different.status.code(), Some(1));
    let plain = neardup(&["compare", &f("a.txt"), &f("c.txt")]);
    assert_eq!(plain.status.code(), Some(0));
}

fn fingerprints(n: usize) -> String {
    (0..n)
        .map(|i| {
            let fp = neardup::Fingerprint::new(
                neardup::Scheme::SimhashDocV1,
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            format!("id{i}\t{fp}\n")
        })
        .collect()
}

#[test]
fn a_closed_ack_pipe_loses_no_write() {
    let dir = temp_dir("ack-pipe");
    let idx = dir.join("idx");
    assert!(
        neardup(&["index", "create", idx.to_str().unwrap()])
            .status
            .success()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "index",
            "add-fingerprints",
            "--ack",
            "--batch",
            "100",
            idx.to_str().unwrap(),
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let input = fingerprints(5000);
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    // Read one acknowledgement, then close the pipe (as `| head -1` does).
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    assert!(first.starts_with("ok "), "{first}");
    writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("committed"),
        "{}",
        text(&out.stderr)
    );
    let stats = text(&neardup(&["index", "stats", idx.to_str().unwrap()]).stdout);
    assert!(stats.contains("entries\t5000"), "{stats}");
}

#[test]
fn dedup_updates_its_index_even_when_the_output_closes() {
    let dir = temp_dir("dedup-pipe");
    let idx = dir.join("idx");
    let docs = dir.join("day2");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..300 {
        std::fs::write(docs.join(format!("{i:04}.txt")), format!("{PAGE} {i}")).unwrap();
    }
    assert!(
        neardup(&["index", "create", idx.to_str().unwrap()])
            .status
            .success()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "dedup",
            "--index",
            idx.to_str().unwrap(),
            docs.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is written
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stats = text(&neardup(&["index", "stats", idx.to_str().unwrap()]).stdout);
    assert!(stats.contains("entries\t300"), "{stats}");
}

#[test]
fn index_query_and_remove_read_stdin_lines() {
    let dir = temp_dir("query-stdin");
    let idx = dir.join("idx");
    let i = idx.to_str().unwrap();
    assert!(neardup(&["index", "create", i]).status.success());
    let input = fingerprints(10);
    assert!(
        neardup_stdin(&["index", "add-fingerprints", i, "-"], input.as_bytes())
            .status
            .success()
    );
    // The `hash` form: sketch<TAB>label.
    let lines: String = input
        .lines()
        .take(3)
        .map(|l| {
            let (id, fp) = l.split_once('\t').unwrap();
            format!("{fp}\tq-{id}\n")
        })
        .collect();
    let out = neardup_stdin(&["index", "query", i, "-"], lines.as_bytes());
    let stdout = text(&out.stdout);
    for n in 0..3 {
        assert!(stdout.contains(&format!("q-id{n}\tid{n}\t0")), "{stdout}");
    }
    let out = neardup_stdin(&["index", "remove", i, "-"], b"id0\nid1\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stats = text(&neardup(&["index", "stats", i]).stdout);
    assert!(stats.contains("entries\t8"), "{stats}");
}

#[test]
fn ids_with_tabs_and_newlines_are_escaped_in_tsv() {
    let input = format!(
        "{}\n{}\n",
        serde_json::json!({"id": "a\tb", "text": PAGE}),
        serde_json::json!({"id": "c\nd", "text": PAGE})
    );
    let out = neardup_stdin(&["dedup", "--jsonl", "--pairs", "-"], input.as_bytes());
    assert_eq!(text(&out.stdout), "a\\tb\tc\\nd\t0\n");
}

#[test]
fn report_lines_show_control_characters_escaped() {
    // Record ids and file names reach the report (the largest clusters, warnings, errors); an escape
    // sequence in one must not drive the terminal, nor a line break forge a report line.
    let clear = "\u{1b}[2J";
    let mut input = String::new();
    for i in 0..3 {
        input += &serde_json::json!({"id": format!("{clear}copy{i}"), "text": PAGE}).to_string();
        input.push('\n');
    }
    input += &serde_json::json!({"id": format!("{clear}empty\nneardup: forged"), "text": ""})
        .to_string();
    input.push('\n');
    let dir = temp_dir("terminal");
    let missing = dir.join(format!("{clear}gone.txt"));
    let runs = [
        neardup_stdin(
            &["dedup", "--jsonl", "--warn-cluster-size", "2", "-"],
            input.as_bytes(),
        ),
        neardup(&["hash", missing.to_str().unwrap()]),
    ];
    for out in runs {
        let stderr = text(&out.stderr);
        assert!(stderr.contains("\\u{1b}[2J"), "{stderr}");
        assert!(
            !stderr.chars().any(|c| c.is_control() && c != '\n'),
            "{stderr:?}"
        );
        assert!(!stderr.contains("\nneardup: forged"), "{stderr}");
    }
}

#[test]
fn globs_types_excludes_and_file_lists_select_files() {
    let dir = temp_dir("select");
    std::fs::create_dir_all(dir.join("site/sub")).unwrap();
    for name in ["a.html", "b.txt", "sub/c.html", "sub/d.pdf.txt"] {
        std::fs::write(dir.join("site").join(name), format!("{PAGE} {name}")).unwrap();
    }
    let site = dir.join("site");
    let s = site.to_str().unwrap();
    let listed = |args: &[&str]| -> Vec<String> {
        let out = neardup(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let mut names: Vec<String> = text(&out.stdout)
            .lines()
            .map(|l| l.rsplit('/').next().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listed(&["hash", "-g", "*.html", s]), ["a.html", "c.html"]);
    assert_eq!(
        listed(&["hash", "--type", "text", s]),
        ["b.txt", "d.pdf.txt"]
    );
    assert_eq!(listed(&["hash", "-g", "!sub/*", s]), ["a.html", "b.txt"]);
    assert_eq!(
        listed(&["hash", "--exclude", "*.html", s]),
        ["b.txt", "d.pdf.txt"]
    );
    let list = dir.join("list");
    std::fs::write(&list, format!("{s}/a.html\0{s}/b.txt\0")).unwrap();
    assert_eq!(
        listed(&["hash", "--files-from", list.to_str().unwrap()]),
        ["a.html", "b.txt"]
    );
    assert_eq!(
        neardup(&["hash", "--type", "nope", s]).status.code(),
        Some(2)
    );
}

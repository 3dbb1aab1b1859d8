//! Hostile inputs through the real binary: each of these hung, panicked, crashed the process, lost lines or
//! named two files as one before its fix. Every run has a time limit, so a hang fails its test, not the suite.

mod common;

use common::{neardup_within, temp_dir, text};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

const PAGE: &str =
    "The quick brown fox jumps over the lazy dog near the river bank every single morning";

/// Runs neardup (no standard input) and fails the test if it runs past `LIMIT`.
fn run(args: &[&str]) -> Output {
    neardup_within(args, LIMIT)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Neither a panic (101) nor an abort or a signal.
fn assert_no_crash(out: &Output) {
    let stderr = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "{:?}: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_fifo_is_read_without_blocking() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("pipe", dir.join("link-to-pipe")).unwrap();
    std::fs::write(dir.join("page.txt"), PAGE).unwrap();
    // Named: no writer, so it reads as empty (a warning), through a link too.
    for name in ["pipe", "link-to-pipe"] {
        let out = run(&["hash", s(&dir.join(name))]);
        assert_no_crash(&out);
        assert!(text(&out.stderr).contains(name), "{}", text(&out.stderr));
    }
    // Inside a directory: skipped, and said, with the links that were not followed.
    let out = run(&["hash", s(&dir)]);
    assert_no_crash(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("pipe: skipped: a FIFO"), "{stderr}");
    assert!(stderr.contains("skipped 1 symbolic link"), "{stderr}");
    assert_eq!(text(&out.stdout).lines().count(), 1);
}

#[test]
fn names_that_are_not_utf8_stay_two_documents() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("names");
    for name in [&b"doc-\xff.txt"[..], b"doc-\xfe.txt"] {
        let path = dir.join(std::ffi::OsStr::from_bytes(name));
        std::fs::write(path, PAGE).unwrap();
    }
    std::fs::write(dir.join("line\nbreak.txt"), PAGE).unwrap();
    let out = run(&["hash", s(&dir)]);
    assert_no_crash(&out);
    let stdout = text(&out.stdout);
    // Each invalid byte is `\xNN` in the id, and TSV output escapes its backslash.
    assert!(stdout.contains("doc-\\\\xff.txt"), "{stdout}");
    assert!(stdout.contains("doc-\\\\xfe.txt"), "{stdout}");
    // Named on the command line, each is read under its own name.
    let named = dir.join(std::ffi::OsStr::from_bytes(b"doc-\xff.txt"));
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .arg("hash")
        .arg(&named)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("doc-\\\\xff.txt"));
    // An index keeps both, under their escaped names.
    let index = dir.join("index");
    assert!(run(&["index", "create", s(&index)]).status.success());
    let out = run(&["index", "add", s(&index), s(&dir)]);
    assert_no_crash(&out);
    assert!(
        text(&out.stderr).contains("(3 entries)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_bad_line_of_fingerprints_is_refused_alone() {
    let dir = temp_dir("add-fingerprints");
    let index = dir.join("index");
    assert!(run(&["index", "create", s(&index)]).status.success());
    // 1,000 fingerprints from the binary itself (id TAB fingerprint), then a line of invalid UTF-8 in the middle.
    let records: String = (0..1000)
        .map(|i| format!("{{\"id\": \"id-{i}\", \"text\": \"{PAGE} {i} words number {i}\"}}\n"))
        .collect();
    let jsonl = dir.join("records.jsonl");
    std::fs::write(&jsonl, records).unwrap();
    let hashed = run(&["hash", "--jsonl", s(&jsonl)]);
    assert!(hashed.status.success(), "{}", text(&hashed.stderr));
    let mut lines = Vec::new();
    for (i, line) in text(&hashed.stdout).lines().enumerate() {
        if i == 500 {
            lines.extend_from_slice(b"bad\xff\xfeline\n");
        }
        lines.extend_from_slice(line.as_bytes());
        lines.push(b'\n');
    }
    let input = dir.join("lines.tsv");
    std::fs::write(&input, lines).unwrap();
    let out = run(&["index", "add-fingerprints", s(&index), s(&input)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("lines.tsv:501: not UTF-8"), "{stderr}");
    assert!(stderr.contains("(1000 entries)"), "{stderr}");
}

#[test]
fn parameters_out_of_range_are_refused_at_once() {
    let dir = temp_dir("params");
    for args in [
        vec![
            "dedup",
            "--scheme",
            "minhash",
            "--threshold",
            "NaN",
            s(&dir),
        ],
        vec![
            "dedup",
            "--scheme",
            "minhash",
            "--threshold",
            "1.5",
            s(&dir),
        ],
        vec!["plan", "--scheme", "minhash", "--threshold", "inf"],
        vec!["plan", "--scheme", "minhash", "--num-perm", "100000000"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("is not a"), "{args:?}");
    }
    let index = dir.join("big");
    let out = run(&[
        "index",
        "create",
        "--scheme",
        "minhash",
        "--num-perm",
        "100000000",
        s(&index),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!index.exists());
}

#[test]
fn jsonl_ids_keep_their_digits_and_a_bom_is_read() {
    let dir = temp_dir("jsonl");
    let input = dir.join("records.jsonl");
    std::fs::write(
        &input,
        format!(
            "\u{feff}{{\"id\": 123456789012345678, \"text\": \"{PAGE}\"}}\n\
             {{\"id\": 123456789012345678901234567890, \"text\": \"{PAGE}\"}}\n\
             {{\"id\": 5}}\n"
        ),
    )
    .unwrap();
    let out = run(&["hash", "--jsonl", s(&input)]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("\t123456789012345678\n"), "{stdout}");
    assert!(
        stderr.contains("records.jsonl:2") && stderr.contains("as strings"),
        "{stderr}"
    );
    assert!(
        stderr.contains("records.jsonl:3 (5)") && stderr.contains("no \"text\" field"),
        "{stderr}"
    );
}

#[test]
fn hostile_html_is_bounded() {
    let dir = temp_dir("html");
    let cases: [(&str, String); 4] = [
        ("self-closing.html", "<div/>".repeat(1_000_000)),
        ("stray-end.html", "<div></x>".repeat(1_000_000)),
        (
            "attributes.html",
            format!("<html><p {}>x</p>", "a ".repeat(2_000_000)),
        ),
        ("no-gt.html", "<a".repeat(1_000_000)),
    ];
    for (name, body) in &cases {
        std::fs::write(dir.join(name), body).unwrap();
    }
    let out = run(&["hash", s(&dir)]);
    assert_no_crash(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("self-closing.html: HTML elements nest deeper"),
        "{stderr}"
    );
    assert!(
        stderr.contains("stray-end.html: HTML elements nest deeper"),
        "{stderr}"
    );
    assert!(
        stderr.contains("attributes.html: HTML has more attributes"),
        "{stderr}"
    );
}

#[test]
fn a_text_of_a_byte_order_mark_alone_is_empty() {
    let dir = temp_dir("bom");
    std::fs::write(dir.join("utf16be.txt"), b"\xfe\xff").unwrap();
    let out = run(&["hash", s(&dir.join("utf16be.txt"))]);
    assert_no_crash(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn warc_responses_that_cannot_be_read_are_named() {
    let dir = temp_dir("warc");
    let record = |uri: Option<&str>, block: &str| {
        let uri = uri.map_or(String::new(), |u| format!("WARC-Target-URI: {u}\n"));
        format!(
            "WARC/1.0\nWARC-Type: response\n{uri}WARC-Record-ID: <urn:uuid:r>\nContent-Type: application/http\nContent-Length: {}\n\n{block}\n\n",
            block.len()
        )
    };
    let good = format!("HTTP/1.1 200 OK\nContent-Type: text/plain\n\n{PAGE}");
    let mut warc = String::new();
    // Bare line feeds, many records: read in one pass.
    for _ in 0..20_000 {
        warc.push_str(&record(Some("http://a/"), &good));
    }
    warc.push_str(&record(None, &good));
    warc.push_str(&record(Some("http://garbage/"), "garbage\n\nbody"));
    std::fs::write(dir.join("crawl.warc"), warc).unwrap();
    let out = run(&["hash", s(&dir.join("crawl.warc"))]);
    assert_no_crash(&out);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no WARC-Target-URI"), "{stderr}");
    assert!(stderr.contains("http://garbage/"), "{stderr}");
    assert_eq!(text(&out.stdout).lines().count(), 20_000);
}

/// A minimal one-page PDF whose page dictionary carries `extra` and whose content stream is `content`.
fn pdf(content: &[u8], extra: &[u8]) -> Vec<u8> {
    let mut page =
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R ".to_vec();
    page.extend_from_slice(extra);
    page.extend_from_slice(b">>");
    let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
    stream.extend_from_slice(content);
    stream.extend_from_slice(b"\nendstream");
    let objects: [&[u8]; 4] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        &page,
        &stream,
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(b"xref\n0 5\n0000000000 65535 f \n");
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

/// A million nested arrays overflowed the extractor's stack and aborted the whole process: PDFs are now read
/// by a worker process, and its crash is this file's error.
#[test]
fn a_pdf_that_crashes_the_extractor_costs_only_its_worker() {
    let dir = temp_dir("pdf");
    let mut nested = b"/Foo ".to_vec();
    nested.extend(std::iter::repeat_n(b'[', 1_000_000));
    nested.extend(std::iter::repeat_n(b']', 1_000_000));
    nested.push(b' ');
    std::fs::write(
        dir.join("nested.pdf"),
        pdf(b"BT /F1 12 Tf 72 712 Td (Hello) Tj ET", &nested),
    )
    .unwrap();
    std::fs::write(dir.join("page.txt"), PAGE).unwrap();
    let out = run(&["hash", s(&dir)]);
    assert_no_crash(&out);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nested.pdf: the PDF extractor crashed"),
        "{stderr}"
    );
    // The run went on: the text file was read.
    assert!(text(&out.stdout).contains("page.txt"));
}

/// A worker kept between PDFs exits by itself once it has waited its idle time for the next one (30 s unless
/// `NEARDUP_PDF_WORKER_IDLE_SECS` says otherwise), though its caller keeps its pipes open.
#[test]
fn an_idle_pdf_worker_exits_by_itself() {
    let mut worker = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .arg("pdf-worker")
        .env("NEARDUP_PDF_WORKER_IDLE_SECS", "0.3")
        .env("MIMALLOC_ARENA_RESERVE", "64MiB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = worker.kill();
            panic!("the idle worker was still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    drop(worker.stdin.take());
}

/// Unmounts a scratch tmpfs when the test ends, however it ends.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A full disk: the write that cannot finish fails with the device's error and a non-zero status, every
/// batch committed before it stays readable, and a create that cannot finish leaves nothing behind. Needs a
/// small tmpfs, so root (as in CI); skipped elsewhere.
#[test]
fn a_full_disk_fails_cleanly_and_keeps_what_was_committed() {
    let dir = temp_dir("disk-full");
    let mount = dir.join("small");
    std::fs::create_dir_all(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(&mount)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    }
    let _unmount = Mounted(mount.clone());
    // 40,000 fingerprints from the binary itself.
    let records: String = (0..40_000)
        .map(|i| {
            format!(
                "{{\"id\": \"document-{i:06}-with-a-long-id\", \"text\": \"w{i} alpha beta gamma {} delta\"}}\n",
                i * 7
            )
        })
        .collect();
    std::fs::write(dir.join("records.jsonl"), records).unwrap();
    let hashed = run(&["hash", "--jsonl", s(&dir.join("records.jsonl"))]);
    assert!(hashed.status.success());
    std::fs::write(dir.join("fps.tsv"), &hashed.stdout).unwrap();
    let index = mount.join("index");
    assert!(run(&["index", "create", s(&index)]).status.success());
    let out = run(&[
        "index",
        "add-fingerprints",
        "--ack",
        "--batch",
        "1000",
        s(&index),
        s(&dir.join("fps.tsv")),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    // Every acknowledged batch is there, and the index opens.
    let acknowledged: usize = text(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("ok ")?.parse().ok())
        .max()
        .unwrap_or(0);
    assert!(acknowledged > 0, "nothing was acknowledged: {stderr}");
    let stats = run(&["index", "stats", s(&index)]);
    assert!(stats.status.success(), "{}", text(&stats.stderr));
    let entries: usize = text(&stats.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("entries\t")?.parse().ok())
        .unwrap();
    assert!(entries >= acknowledged, "{entries} < {acknowledged}");
    // A new index on the full disk: an error, and no stub that later commands would trip over.
    let second = mount.join("second");
    let out = run(&["index", "create", s(&second)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !second.exists(),
        "{:?}",
        std::fs::read_dir(&mount).unwrap().collect::<Vec<_>>()
    );
}

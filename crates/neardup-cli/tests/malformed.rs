//! The real binary over `testdata/malformed/`: every broken or hostile file gives a clear error that names it,
//! a non-zero exit status (with --strict, so that a file left without words by a refused entity or bomb counts
//! too), and neither a panic nor a hang.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: the slowest file (a 64 MiB zip bomb refused at 16 MiB) takes well under a second in a debug build.
const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn every_malformed_file_gives_a_clear_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/malformed");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata/malformed")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.ends_with(".py") && !name.ends_with(".md")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 20, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(["hash", "--strict", &file.display().to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn neardup");
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break Some(status);
            }
            if started.elapsed() > LIMIT {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match status {
            None => problems.push(format!("{name}: still running after {LIMIT:?}")),
            Some(s) if s.success() => problems.push(format!("{name}: exit status 0")),
            Some(s) if s.code() != Some(1) => {
                problems.push(format!("{name}: exit status {s} (a crash?): {stderr}"))
            }
            Some(_) => {}
        }
        if stderr.contains("panicked") {
            problems.push(format!("{name}: panicked: {stderr}"));
        }
        let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains(&name)).collect();
        if error_lines.is_empty() {
            problems.push(format!("{name}: no error line names the file: {stderr:?}"));
        }
        eprintln!(
            "{name}: {:.2} s: {}",
            started.elapsed().as_secs_f64(),
            error_lines.first().unwrap_or(&"")
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

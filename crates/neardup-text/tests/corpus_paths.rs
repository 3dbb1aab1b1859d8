//! The tokenizer's 64-byte block path against its chunk-at-a-time path, and both against the spec's steps
//! taken literally, on real multilingual text: the first documents of
//! `../shared/eval/corpus/corpus-00.jsonl.zst` (skipped when the data or `zstd` is absent).

use neardup_text::profile::doc_v1::{
    tokens, tokens_by_definition, tokens_keeping_numbers, tokens_without_blocks,
};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn block_path_equals_chunk_path_on_the_corpus() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval/corpus/corpus-00.jsonl.zst");
    if !file.exists() {
        eprintln!("skipped: {} is absent", file.display());
        return;
    }
    let Ok(mut child) = Command::new("zstd")
        .arg("-dc")
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
    else {
        eprintln!("skipped: zstd is not installed");
        return;
    };
    let mut raw = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .take(6 << 20)
        .read_to_string(&mut raw)
        .ok();
    let _ = child.kill();
    let _ = child.wait();
    let mut checked = 0;
    for line in raw.lines() {
        let Some(text) = text_field(line) else {
            continue;
        };
        let fast = tokens(&text);
        assert_eq!(
            fast,
            tokens_without_blocks(&text),
            "document {checked} differs"
        );
        assert_eq!(
            fast,
            tokens_by_definition(&text, false),
            "document {checked} differs from the definition"
        );
        assert_eq!(
            tokens_keeping_numbers(&text),
            tokens_by_definition(&text, true),
            "document {checked} (numbers kept) differs from the definition"
        );
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} documents read");
}

/// The "text" field of a corpus line.
fn text_field(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v.get("text")?.as_str().map(str::to_owned)
}

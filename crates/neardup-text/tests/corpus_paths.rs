//! The tokenizer's 64-byte block path against its chunk-at-a-time path on real multilingual text: the first
//! documents of `../shared/eval/corpus/corpus-00.jsonl.zst` (skipped when the data or `zstd` is absent).

use neardup_text::profile::doc_v1::{tokens, tokens_without_blocks};
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
        assert_eq!(
            tokens(&text),
            tokens_without_blocks(&text),
            "document {checked} differs"
        );
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} documents read");
}

/// The "text" field of a corpus line (a flat JSON object whose values are strings).
fn text_field(line: &str) -> Option<String> {
    let start = line.find("\"text\": \"")? + 9;
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let unit = u32::from_str_radix(&hex, 16).ok()?;
                    // Surrogate pairs: decode the pair, or mark a lone surrogate.
                    if (0xD800..0xDC00).contains(&unit) {
                        let rest: String = chars.by_ref().take(6).collect();
                        let low = u32::from_str_radix(rest.get(2..)?, 16).ok()?;
                        out.push(
                            char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                                .unwrap_or('\u{fffd}'),
                        );
                    } else {
                        out.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

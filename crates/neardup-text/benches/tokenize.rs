//! Tokenizer benchmark: `cargo bench -p neardup-text`.
//!
//! Uses the first few MB of `../shared/eval/corpus` when it is there (English documents and the multilingual
//! mix separately), else a built-in sample. Throughput is bytes of UTF-8 text per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neardup_text::profile::doc_v1;
use std::hint::black_box;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// Up to `limit` bytes of texts from the evaluation corpus, filtered by language ("" = all).
fn corpus(lang: &str, limit: usize) -> Option<Vec<String>> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval/corpus/corpus-00.jsonl.zst");
    if !file.exists() {
        return None;
    }
    let mut child = Command::new("zstd")
        .arg("-dc")
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut raw = String::new();
    child
        .stdout
        .take()?
        .take(200 << 20)
        .read_to_string(&mut raw)
        .ok()?;
    let _ = child.kill();
    let mut texts = Vec::new();
    let mut total = 0;
    for line in raw.lines() {
        let Some(text) = field(line, "text") else {
            continue;
        };
        if !lang.is_empty() && field(line, "lang").as_deref() != Some(lang) {
            continue;
        }
        total += text.len();
        texts.push(text);
        if total >= limit {
            break;
        }
    }
    Some(texts)
}

/// A string field of a corpus line.
fn field(line: &str, key: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v.get(key)?.as_str().map(str::to_owned)
}

fn bench(c: &mut Criterion) {
    let builtin = vec![
        "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times. ".repeat(2000),
        "Москва — столица России. 東京タワーは日本の電波塔です。ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรค ".repeat(500),
    ];
    let sets = [
        (
            "english",
            corpus("en", 8 << 20).unwrap_or_else(|| vec![builtin[0].clone()]),
        ),
        (
            "multilingual",
            corpus("", 8 << 20).unwrap_or_else(|| builtin.clone()),
        ),
    ];
    let mut g = c.benchmark_group("doc_v1_tokenize");
    g.sample_size(10);
    for (name, texts) in &sets {
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                let mut n = 0usize;
                for t in texts {
                    doc_v1::tokenize(black_box(t), |tok| n += tok.as_str().len());
                }
                n
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

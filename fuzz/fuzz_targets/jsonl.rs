//! Arbitrary bytes as a JSON Lines file through neardup-io: every record is read (ids, texts, duplicate ids, bad
//! lines), then the split writes kept and removed lines (the removed objects get fields added). An error or a
//! record that is not a document is fine; a panic, a hang or unbounded memory is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_io::{Compression, Dataset, DatasetOptions, Decision, Format};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, data).unwrap();
    let options = DatasetOptions {
        format: Some(Format::Jsonl(Compression::None)),
        ..DatasetOptions::default()
    };
    let (dataset, _) = Dataset::open(&[input.display().to_string()], options);
    let _ = dataset.for_each_batch(7, &mut |_| {}, &mut |_| Ok::<(), ()>(()));
    let decide = |n: u64| if n % 2 == 0 { Decision::Keep } else { Decision::Remove { duplicate_of: "x\"\n".into(), score: 0.5 } };
    let _ = dataset.write_split(&decide, Some(&dir.path().join("k.jsonl")), Some(&dir.path().join("r.jsonl")));
});

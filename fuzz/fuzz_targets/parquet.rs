//! Arbitrary bytes as a Parquet file through neardup-io: every row is read (footer, schema, projection, pages,
//! codecs, id and text columns), then the split writes kept and removed rows. An error or a row that is not a
//! document is fine; a panic, a hang or unbounded memory is not.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use neardup_io::{Dataset, DatasetOptions, Decision, Format};

fuzz_target!(
    init: common::abort_on_uncaught_panics(),
    |data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    std::fs::write(&input, data).unwrap();
    let options = DatasetOptions {
        format: Some(Format::Parquet),
        ..DatasetOptions::default()
    };
    let (dataset, _) = Dataset::open(&[input.display().to_string()], options);
    let _ = dataset.for_each_batch(7, &mut |_| {}, &mut |_| Ok::<(), ()>(()));
    let decide = |n: u64| if n % 2 == 0 { Decision::Keep } else { Decision::Remove { duplicate_of: "x".into(), score: 0.5 } };
    let _ = dataset.write_split(&decide, Some(&dir.path().join("k.parquet")), Some(&dir.path().join("r.parquet")));
    }
);

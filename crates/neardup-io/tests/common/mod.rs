//! Helpers shared by the integration tests: real files in a temporary directory.

#![allow(dead_code)]

use neardup_io::{Dataset, DatasetOptions, InputError, ReadSummary, Record};
use std::io::Write;
use std::path::Path;

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, 3).unwrap()
}

pub fn open(paths: &[&Path], options: DatasetOptions) -> (Dataset, Vec<InputError>) {
    let operands: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    Dataset::open(&operands, options)
}

/// A JSON Lines file `name` in `dir` of one record per text, its id the text's place (0, 1, …), opened as a
/// dataset.
pub fn texts_dataset(dir: &Path, name: &str, texts: impl Iterator<Item = String>) -> Dataset {
    let path = dir.join(name);
    let lines: String = texts
        .enumerate()
        .map(|(i, text)| format!("{{\"id\":\"{i}\",\"text\":\"{text}\"}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    open(&[&path], DatasetOptions::default()).0
}

/// Every record, with the summary and the progress reports.
pub fn read_all(dataset: &Dataset, batch_rows: usize) -> (Vec<Record>, ReadSummary, Vec<u64>) {
    let mut records = Vec::new();
    let mut progress = Vec::new();
    let summary = dataset
        .for_each_batch(batch_rows, &mut |b| progress.push(b), &mut |batch| {
            assert!(!batch.is_empty() && batch.len() <= batch_rows);
            records.extend(batch);
            Ok::<(), ()>(())
        })
        .unwrap();
    (records, summary, progress)
}

pub fn ids(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

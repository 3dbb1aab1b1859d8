//! Indexes written by earlier versions (`testdata/formats/`) open with today's code, their segments are
//! queried where they lie (mapped, not loaded), and every answer is the one a scan of the fingerprints gives.

use neardup_index::disk::DiskStore;
use neardup_index::persistent::{Edit, PersistentIndex};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fingerprints the indexes of `testdata/formats/` were made of (its README).
fn fingerprints() -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut out: Vec<u64> = Vec::new();
    for i in 0..620u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Every tenth a near copy (1 to 3 bits away) of an earlier one.
        out.push(if i % 10 == 9 {
            out[(x % i) as usize] ^ ((x >> 61) | 1) << (x % 61)
        } else {
            x
        });
    }
    out
}

/// A copy of a fixture in a fresh temporary directory (opening an index may write into it).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/formats")
        .join(name);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let to = tmp.path().join(name);
    std::fs::create_dir(&to).expect("create");
    for entry in std::fs::read_dir(&from).expect("the fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
    (tmp, to)
}

/// Every query near `fps` (each one, and each with bits flipped) against a scan of `expected`.
fn check_answers(
    index: &PersistentIndex<DiskStore>,
    expected: &BTreeMap<String, u64>,
    fps: &[u64],
) {
    for (i, &fp) in fps.iter().enumerate() {
        for q in [fp, fp ^ 0b11, fp ^ (1 << 63) ^ (1 << 40) ^ 1, fp ^ 0xF0] {
            let mut want: Vec<(u32, String)> = expected
                .iter()
                .map(|(id, &f)| ((f ^ q).count_ones(), id.clone()))
                .filter(|&(d, _)| d <= 3)
                .collect();
            want.sort();
            let mut got: Vec<(u32, String)> = index
                .query_fingerprint(q, 3)
                .expect("query")
                .into_iter()
                .map(|m| (m.distance, m.id))
                .collect();
            got.sort();
            assert_eq!(got, want, "query {i}: {q:#018x}");
        }
    }
}

#[test]
fn a_hamming_index_with_split_table_columns_is_mapped_and_answers_exactly() {
    mapped_and_answers_exactly("segments-1-hamming");
}

#[test]
fn a_hamming_index_with_packed_table_rows_is_mapped_and_answers_exactly() {
    mapped_and_answers_exactly("segments-2-hamming");
}

/// Opens a copy of the fixture `name` (both hold the same entries: see the README), checks that its segment is
/// mapped and every answer exact, then writes into it and merges it (today's layout) and checks again.
fn mapped_and_answers_exactly(name: &str) {
    let fps = fingerprints();
    let mut expected: BTreeMap<String, u64> = fps
        .iter()
        .enumerate()
        .map(|(i, &fp)| (format!("doc-{i}"), fp))
        .collect();
    for i in (0..600).step_by(40) {
        expected.remove(&format!("doc-{i}"));
    }
    let (_tmp, dir) = copy_of(name);

    let reader = PersistentIndex::open(DiskStore::open_reader(&dir).expect("open")).expect("open");
    assert_eq!(reader.len(), expected.len());
    let segments = reader
        .segments()
        .expect("the segment is mapped, not loaded");
    assert_eq!(segments.rows(), 585);
    check_answers(&reader, &expected, &fps);
    drop(reader);

    // A writer adds to it and merges it, which writes today's layout: the answers stay exact.
    let mut writer = PersistentIndex::open(DiskStore::open(&dir).expect("open")).expect("open");
    let more: Vec<u64> = fps
        .iter()
        .map(|fp| fp.rotate_left(17) ^ 1)
        .take(300)
        .collect();
    let batch: Vec<Edit> = more
        .iter()
        .enumerate()
        .map(|(i, &fp)| Edit::Put(format!("more-{i}"), fp))
        .collect();
    writer.apply(&batch).expect("apply");
    for (i, &fp) in more.iter().enumerate() {
        expected.insert(format!("more-{i}"), fp);
    }
    check_answers(&writer, &expected, &fps);
    writer
        .store()
        .as_segments()
        .expect("segments")
        .merge()
        .expect("merge");
    writer.refresh().expect("refresh");
    assert_eq!(writer.segments().expect("mapped").rows(), expected.len());
    check_answers(&writer, &expected, &fps);
    check_answers(&writer, &expected, &more);
}

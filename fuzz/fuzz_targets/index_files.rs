//! An index in segments with one of its files replaced by the fuzzer's bytes: the manifest, a segment or a
//! log. The first byte chooses the file; the rest is its new content (seeds: the real files). The index is
//! opened as a reader and as a writer, queried, counted and verified: an error is a right answer, a panic or a
//! hang is not, and an index that `verify` finds whole must answer queries without error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup::index::{Index, IndexSettings, Radius};
use neardup::{Fingerprint, Method, Scheme, Sketch};
use std::sync::OnceLock;

/// The files of a small real index: 300 fingerprints merged into a segment, then 40 more in the log.
fn template() -> &'static [(String, Vec<u8>)] {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("index");
        let method = Method::SimHash(Scheme::SimhashDocV1);
        // The design for 10^7 (5 blocks choose 2): its segment holds packed and nested tables.
        let settings = IndexSettings {
            expected: 1e7,
            ..IndexSettings::default()
        };
        let mut index = Index::create(&path, method, &settings).expect("create");
        let sketch = |i: u64| {
            Sketch::Fingerprint(Fingerprint::new(
                Scheme::SimhashDocV1,
                i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ))
        };
        for i in 0..300 {
            index.insert(&format!("doc{i}"), &sketch(i)).expect("insert");
        }
        index.merge().expect("merge");
        for i in 300..340 {
            index.insert(&format!("doc{i}"), &sketch(i)).expect("insert");
        }
        index.remove(["doc7"]).expect("remove");
        drop(index);
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&path)
            .expect("the index")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.file_name().is_some_and(|n| n != "LOCK"))
            .map(|p| {
                let name = p.file_name().expect("a name").to_string_lossy().into_owned();
                (name, std::fs::read(&p).expect("a file"))
            })
            .collect();
        files.sort();
        files
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, content)) = data.split_first() else {
        return;
    };
    let files = template();
    let replaced = usize::from(choice) % files.len();
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (i, (name, bytes)) in files.iter().enumerate() {
        let body = if i == replaced { content } else { bytes };
        std::fs::write(dir.path().join(name), body).expect("write");
    }
    // Two fingerprints: one stored (doc3's), one far from everything.
    let probes = [3u64.wrapping_mul(0x9e37_79b9_7f4a_7c15), u64::MAX]
        .map(|bits| Fingerprint::new(Scheme::SimhashDocV1, bits).to_string());
    if let Ok(index) = Index::open_reader(dir.path()) {
        let _ = index.len();
        let whole = index.verify().is_ok();
        for probe in &probes {
            let answer = index.query_str(probe, Radius::Default);
            assert!(!whole || answer.is_ok(), "a whole index failed a query: {answer:?}");
        }
    }
    if let Ok(mut index) = Index::open(dir.path()) {
        let _ = index.query_str(&probes[0], Radius::Default);
        let _ = index.insert("new", &probes[1].parse::<Sketch>().expect("a sketch"));
        let _ = index.merge();
    }
});

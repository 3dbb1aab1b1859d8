//! `Index::entries` and `Index::for_each_entry`: every stored sketch under its id, sorted by id whatever the
//! order of insertion, from memory and from segments on disk, for SimHash and MinHash.

use neardup::index::{Index, IndexSettings};
use neardup::{Method, Sketch};

const TEXTS: [&str; 5] = [
    "release notes: fixed a crash when opening empty files in the editor",
    "the quick brown fox jumps over the lazy dog near the river bank",
    "an index keeps the sketches of documents under their ids for years",
    "queries ask which stored ids are within a few bits of a document",
    "a second copy of the release notes: fixed a crash when opening files",
];

/// (id, sketch) pairs in an order that is not the ids' order.
fn sketched(method: Method) -> Vec<(String, Sketch)> {
    TEXTS
        .iter()
        .enumerate()
        .map(|(i, text)| {
            (
                format!("doc-{}", (i * 3) % 5),
                method.sketch_text(text).unwrap(),
            )
        })
        .collect()
}

fn check<S: neardup::index::Store>(index: &mut Index<S>, method: Method) {
    let added = sketched(method);
    for (id, sketch) in &added {
        index.insert(id, sketch).unwrap();
    }
    index.remove(["doc-3"]).unwrap();
    let mut expected: Vec<(String, Sketch)> =
        added.into_iter().filter(|(id, _)| id != "doc-3").collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(index.entries().unwrap(), expected);
    for (id, sketch) in &expected {
        assert_eq!(index.get(id).as_ref(), Some(sketch));
    }
    // Streaming sees the same entries, and stops at the visitor's first error.
    let mut seen = 0;
    index
        .for_each_entry(|_, _| {
            seen += 1;
            Ok::<_, neardup::Error>(())
        })
        .unwrap();
    assert_eq!(seen, expected.len());
    let stopped = index.for_each_entry(|id, _| {
        Err(neardup::Error::Output {
            reason: format!("stopped at {id}"),
        })
    });
    assert!(stopped.unwrap_err().to_string().contains("stopped at doc-"));
}

#[test]
fn entries_are_every_stored_sketch_sorted_by_id() {
    for scheme in ["simhash-doc-v1", "minhash-oph-v1"] {
        let method = neardup::schemes::lookup(scheme)
            .unwrap()
            .method(&neardup::schemes::Params::default())
            .unwrap();
        check(
            &mut Index::in_memory(method, &IndexSettings::default()).unwrap(),
            method,
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        check(
            &mut Index::create(&path, method, &IndexSettings::default()).unwrap(),
            method,
        );
        // Reopened from its files, the index lists the same entries.
        let reopened = Index::open(&path).unwrap();
        assert_eq!(reopened.entries().unwrap().len(), TEXTS.len() - 1);
    }
}

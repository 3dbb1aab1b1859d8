//! Every golden vector of simhash-doc-v1 is recomputed from its input and must match byte for byte.
//! Nothing is regenerated here: a mismatch means the implementation (or a pinned dependency) changed output.

use std::path::{Path, PathBuf};

fn vector_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/vectors/simhash-doc-v1")
}

fn field<'a>(v: &'a serde_json::Value, key: &str, file: &Path) -> &'a str {
    v.get(key)
        .and_then(|s| s.as_str())
        .unwrap_or_else(|| panic!("{}: no string field {key}", file.display()))
}

#[test]
fn every_vector_matches_byte_for_byte() {
    let dir = vector_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("vector folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 30,
        "expected at least 30 vectors, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let expected = std::fs::read_to_string(file).expect("read vector");
        let v: serde_json::Value = serde_json::from_str(&expected).expect("vector is JSON");
        let input = field(&v, "input", file);
        let bytes =
            std::fs::read(dir.join(input.split('#').next().unwrap_or(input))).expect("read input");
        let actual = neardup::vectors::render_simhash_doc_v1(
            field(&v, "name", file),
            field(&v, "description", file),
            input,
            &bytes,
        );
        if actual != expected {
            let first_diff = actual.lines().zip(expected.lines()).find(|(a, e)| a != e);
            failures.push(format!(
                "{}: first differing line:\n  got:      {:.300}\n  expected: {:.300}",
                file.display(),
                first_diff.map_or("(length differs)", |d| d.0),
                first_diff.map_or("", |d| d.1)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn every_case_listed_has_a_vector() {
    let dir = vector_dir();
    let manifest = std::fs::read_to_string(dir.join("cases.tsv")).expect("cases.tsv");
    for line in manifest.lines().skip(1) {
        let name = line.split('\t').next().expect("name");
        assert!(
            dir.join(format!("{name}.json")).exists(),
            "case {name} has no vector"
        );
    }
}

/// The fingerprint strings in the vectors parse back to themselves, and equal what the library API gives.
#[test]
fn fingerprints_round_trip_through_the_public_api() {
    let dir = vector_dir();
    for name in [
        "english-spec-example",
        "html-basic",
        "japanese",
        "large-html",
    ] {
        let file = dir.join(format!("{name}.json"));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let fp: neardup::Fingerprint = field(&v, "fingerprint", &file).parse().unwrap();
        assert_eq!(fp.to_string(), field(&v, "fingerprint", &file));
        let input = field(&v, "input", &file);
        let file_name = input.rsplit('/').next().unwrap();
        let bytes = std::fs::read(dir.join(input)).unwrap();
        let api = neardup::Scheme::SimhashDocV1
            .fingerprint(&bytes, neardup::media::MediaHint::FileName(file_name));
        assert_eq!(api.unwrap(), fp, "{name}");
    }
}

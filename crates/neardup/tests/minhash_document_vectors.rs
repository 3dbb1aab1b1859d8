//! The MinHash family from a document's text to its sketch, against `testdata/vectors/minhash-v1/documents.json`.
//! Nothing is regenerated here: a mismatch means the tokens, the shingles or a scheme changed output.

#[path = "minhash_documents/cases.rs"]
mod cases;

fn stored() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/vectors/minhash-v1/documents.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).expect("json")
}

#[test]
fn document_vectors_are_reproduced() {
    let stored = stored();
    let computed = cases::compute();
    let cases = stored["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), cases::inputs().len());
    for (want, got) in cases.iter().zip(computed["cases"].as_array().unwrap()) {
        for (field, value) in want.as_object().unwrap() {
            assert_eq!(&got[field], value, "case {}, field {field}", want["name"]);
        }
    }
    assert_eq!(stored, computed);
}

/// The cases cover what the spec promises: numbers kept, short documents, and no sketch without tokens.
#[test]
fn document_vectors_cover_the_edge_cases() {
    let stored = stored();
    let case = |name: &str| {
        stored["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("case {name}"))
            .clone()
    };
    let numbers = case("numbers-only");
    assert!(numbers["tokens"].as_array().unwrap().len() >= 3);
    assert!(
        neardup::Scheme::SimhashDocV1
            .fingerprint_text(numbers["text"].as_str().unwrap())
            .is_err()
    );
    let identifiers = case("all-identifiers");
    assert_eq!(identifiers["error"], "no-tokens");
    assert!(identifiers["tokens"].as_array().unwrap().is_empty());
    for method in cases::METHODS {
        assert!(identifiers["sketches"][method].is_null(), "{method}");
        assert!(
            case("two-tokens")["sketches"][method].is_string(),
            "{method}"
        );
    }
    assert_eq!(case("two-tokens")["tokens"].as_array().unwrap().len(), 2);
    assert_eq!(case("one-short-token")["tokens"], serde_json::json!(["ab"]));
}

//! Every sketch scheme against its golden vectors (`testdata/vectors/minhash-v1/vectors.json`).

mod common;

#[test]
fn golden_vectors_are_reproduced() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/vectors/minhash-v1/vectors.json"
    );
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).expect("json");
    let computed = common::vectors::compute();
    let cases = stored["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 9);
    for (want, got) in cases.iter().zip(computed["cases"].as_array().unwrap()) {
        for (field, value) in want.as_object().unwrap() {
            assert_eq!(&got[field], value, "case {}, field {field}", want["name"]);
        }
    }
    assert_eq!(
        stored["weighted_fractional"],
        computed["weighted_fractional"]
    );
    assert_eq!(stored, computed);
}

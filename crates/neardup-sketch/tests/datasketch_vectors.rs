//! The datasketch-compatible schemes against vectors made by the real datasketch 2.0.0 and NumPy
//! (`tools/vectors/make_datasketch_vectors.py`).

use neardup_sketch::datasketch::{
    DatasketchMinHasher, Variant, from_lean_bytes, permutations, sha1_hash32, to_lean_bytes,
};
use neardup_sketch::shingle::Features;
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/vectors/minhash-datasketch/datasketch-2.0.0.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).expect("json")
}

fn variant(name: &str) -> Variant {
    match name {
        "affine32" => Variant::Affine32,
        "legacy" => Variant::Legacy,
        other => panic!("unknown scheme {other}"),
    }
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn sha1_hash32_matches() {
    let v = vectors();
    let table = v["sha1_hash32"].as_object().unwrap();
    assert!(!table.is_empty());
    for (text, want) in table {
        assert_eq!(
            sha1_hash32(text.as_bytes()) as u64,
            want.as_u64().unwrap(),
            "{text:?}"
        );
    }
}

#[test]
fn permutations_match_numpy_random_state() {
    let v = vectors();
    let cases = v["permutations"].as_array().unwrap();
    assert_eq!(cases.len(), 10);
    for case in cases {
        let (a, b) = permutations(
            variant(case["scheme"].as_str().unwrap()),
            case["num_perm"].as_u64().unwrap() as usize,
            case["seed"].as_u64().unwrap() as u32,
        );
        assert_eq!(a, u64s(&case["a"]), "a of {case:?}");
        assert_eq!(b, u64s(&case["b"]), "b of {case:?}");
    }
}

#[test]
fn hashvalues_and_lean_bytes_match() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    let mut checked = 0;
    for case in cases {
        let var = variant(case["scheme"].as_str().unwrap());
        let mut m = DatasketchMinHasher::new(
            var,
            case["num_perm"].as_u64().unwrap() as usize,
            case["seed"].as_u64().unwrap() as u32,
            Features::Hashes,
        );
        for token in case["tokens"].as_array().unwrap() {
            m.update(token.as_str().unwrap().as_bytes());
        }
        let want: Vec<u64> = u64s(&case["hashvalues"]);
        let got: Vec<u64> = m.hashvalues().iter().map(|&x| x as u64).collect();
        assert_eq!(got, want, "{} {:?}", var.datasketch_name(), case["tokens"]);
        let lean_hex = case["lean_le_hex"].as_str().unwrap();
        let lean: Vec<u8> = (0..lean_hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&lean_hex[i..i + 2], 16).unwrap())
            .collect();
        let sig = m.signature();
        assert_eq!(to_lean_bytes(&sig).unwrap(), lean);
        assert_eq!(from_lean_bytes(&lean, Features::Hashes).unwrap(), sig);
        checked += 1;
    }
    assert_eq!(checked, 20);
}

//! The document-level golden vectors of the MinHash family (`testdata/vectors/minhash-v1/documents.json`):
//! extracted text → doc-v1 tokens with numbers kept → shingles → signature, through the engine's own path
//! (`Method::sketch_text`, what `neardup hash --scheme …` runs after extraction). The example
//! `make-minhash-document-vectors` writes the file with [`compute`]; the test `minhash_document_vectors`
//! recomputes it and compares, so any change of output fails a test.

use neardup::text::profile::doc_v1;
use neardup::{Error, Method};
use serde_json::{Map, Value, json};

/// The methods every case is sketched with, by [`Method::name`]: every MinHash-family scheme made from
/// documents, word and character shingles, n above and below the short cases' token counts.
pub const METHODS: &[&str] = &[
    "minhash-oph-v1(k=16,seed=0,f=w5)",
    "minhash-oph-v1(k=16,seed=7,f=c4)",
    "minhash-datasketch-affine32(k=16,seed=1,f=w5)",
    "minhash-datasketch-affine32(k=16,seed=1,f=c4)",
    "minhash-datasketch-legacy(k=16,seed=1,f=w3)",
    "wminhash-v1(k=16,seed=0,f=w1)",
    "pminhash-v1(k=16,seed=3,f=w2)",
    "bottomk-v1(k=8,seed=0,f=w3)",
];

/// Named texts (extracted text, the input of the token profile).
pub fn inputs() -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "numbers-only",
            "only numbers: no simhash-doc-v1 token, but MinHash keeps tokens without a letter",
            "2019 1.11.20 — 3 × 42, 007".to_string(),
        ),
        (
            "two-tokens",
            "fewer tokens than n for w3 and w5: one shingle of both tokens joined by a space",
            "Hello, WORLD!".to_string(),
        ),
        (
            "one-short-token",
            "one token shorter than 4 characters: one c4 shingle, the whole joined string",
            "Ab.".to_string(),
        ),
        (
            "all-identifiers",
            "only a URL, a www. host, an e-mail address and a DOI: no tokens, no sketch",
            "https://example.org/a WWW.Example.com/x mail@example.org doi:10.1000/182".to_string(),
        ),
        (
            "mixed-scripts",
            "Latin with ß, accents and İ, Han and katakana letters, Cyrillic, Arabic, Thai, a ligature, a soft hyphen, digits",
            "Straße café naïve İstanbul 東京タワー 2019 Привет мир مرحبا بالعالم กำ x_1 ﬁnd co\u{00AD}operate".to_string(),
        ),
        (
            "paragraph",
            "an English paragraph with repeated words and n-grams (term frequencies above 1)",
            "The quick brown fox jumps over the lazy dog. The quick brown fox jumps again, and the lazy dog \
             sleeps; the quick brown fox jumps over the lazy dog once more in 2024."
                .to_string(),
        ),
    ]
}

/// Every output, computed from [`inputs`] by the engine.
pub fn compute() -> Value {
    let methods: Vec<Method> = METHODS
        .iter()
        .map(|m| m.parse().expect("a method the engine makes from documents"))
        .collect();
    let mut cases = Vec::new();
    for (name, description, text) in inputs() {
        let tokens = doc_v1::tokens_keeping_numbers(&text);
        let mut sketches = Map::new();
        let mut error = Value::Null;
        for method in &methods {
            let sketch = match method.sketch_text(&text) {
                Ok(s) => json!(s.to_string()),
                Err(Error::NoTokens { .. }) => {
                    error = json!("no-tokens");
                    Value::Null
                }
                Err(e) => panic!("{name}, {method}: {e}"),
            };
            sketches.insert(method.name(), sketch);
        }
        cases.push(json!({
            "name": name,
            "description": description,
            "text": text,
            "tokens": tokens,
            "sketches": sketches,
            "error": error,
        }));
    }
    json!({
        "generator": "cargo run -p neardup --example make-minhash-document-vectors",
        "methods": METHODS,
        "cases": cases,
    })
}

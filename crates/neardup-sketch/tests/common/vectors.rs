//! The golden vectors of the sketch schemes (`testdata/vectors/minhash-v1/vectors.json`): the inputs, and the
//! one function that computes every output from them. The example `make_vectors` writes the file with it; the
//! test `vectors` recomputes it and compares, so any change of output shows up as a failing test.

use neardup_sketch::bbit::BBitSignature;
use neardup_sketch::bottomk::BottomKBuilder;
use neardup_sketch::oph::OphMinHasher;
use neardup_sketch::shingle::{Features, char_shingles, token_hash, word_shingles};
use neardup_sketch::weighted::{Similarity, WeightedMinHasher, term_frequencies};
use serde_json::{Value, json};

/// Named token lists (already tokenized: these vectors start after the text profile).
pub fn inputs() -> Vec<(&'static str, Vec<String>)> {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut long = Vec::new();
    let vocabulary =
        words("near duplicate detection finds documents that share most of their shingles");
    for i in 0..300usize {
        long.push(vocabulary[(i * 7 + i / 13) % vocabulary.len()].clone());
    }
    vec![
        ("empty", vec![]),
        ("one-token", words("hello")),
        ("short", words("just three words")),
        ("exactly-five", words("the quick brown fox jumps")),
        (
            "pangram",
            words("the quick brown fox jumps over the lazy dog"),
        ),
        (
            "pangram-edited",
            words("the quick brown cat jumps over the lazy dog"),
        ),
        (
            "repeated",
            words("to be or not to be that is the question to be or not to be"),
        ),
        (
            "multilingual",
            words("straße café naïve 東 京 タ ワ ー مرحبا привет"),
        ),
        ("long-300", long),
    ]
}

fn hex64(h: u64) -> String {
    format!("{h:016x}")
}

/// Every output, computed from [`inputs`].
pub fn compute() -> Value {
    let mut cases = Vec::new();
    for (name, tokens) in inputs() {
        let t: Vec<&str> = tokens.iter().map(String::as_str).collect();
        let shingles = |n: usize| word_shingles(t.iter().copied(), n).collect::<Vec<u64>>();
        let oph = |k: usize, seed: u64, n: usize| {
            let mut h = OphMinHasher::new(k, seed, Features::Words(n as u32));
            shingles(n).into_iter().for_each(|s| h.update(s));
            h.finish()
        };
        let weighted = |similarity: Similarity| {
            let mut hs: Vec<u64> = t.iter().map(|x| token_hash(x.as_bytes())).collect();
            // The features are the token hashes themselves (f=t), not word 1-grams (f=w1, mix64 of them).
            let mut w = WeightedMinHasher::new(similarity, 32, 0, Features::Tokens);
            for (f, tf) in term_frequencies(&mut hs) {
                w.update(f, tf);
            }
            w.finish().map(|s| s.encode())
        };
        let bottomk = {
            let mut b = BottomKBuilder::new(16, 0, Features::Words(3));
            shingles(3).into_iter().for_each(|s| b.add(s));
            b.finish().encode()
        };
        let oph128 = oph(128, 0, 5);
        let text = t.join(" ");
        cases.push(json!({
            "name": name,
            "tokens": tokens,
            "token_hashes": t.iter().map(|x| hex64(token_hash(x.as_bytes()))).collect::<Vec<_>>(),
            "word_shingles_n1": shingles(1).into_iter().map(hex64).collect::<Vec<_>>(),
            "word_shingles_n3": shingles(3).into_iter().map(hex64).collect::<Vec<_>>(),
            "word_shingles_n5": shingles(5).into_iter().map(hex64).collect::<Vec<_>>(),
            "char_shingles_n4_of_joined_tokens": char_shingles(&text, 4).map(hex64).collect::<Vec<_>>(),
            "minhash-oph-v1 k=128 seed=0 w5": oph128.as_ref().map(|s| s.encode()),
            "minhash-oph-v1 k=16 seed=42 w3": oph(16, 42, 3).map(|s| s.encode()),
            "minhash-oph-v1 k=128 seed=0 w5 b=1": oph128.as_ref().map(|s| BBitSignature::compact(s, 1).encode()),
            "minhash-oph-v1 k=128 seed=0 w5 b=2": oph128.as_ref().map(|s| BBitSignature::compact(s, 2).encode()),
            "wminhash-v1 k=32 seed=0 tf": weighted(Similarity::Weighted),
            "pminhash-v1 k=32 seed=0 tf": weighted(Similarity::Probability),
            "bottomk-v1 k=16 seed=0 w3": bottomk,
        }));
    }
    // Fractional weights (TF-IDF-like), given directly as (feature hash, weight).
    let features: Vec<(u64, f64)> = (0..12u64)
        .map(|i| {
            (
                token_hash(format!("feature{i}").as_bytes()),
                0.25 + 0.5 * i as f64,
            )
        })
        .collect();
    let weighted = |similarity: Similarity| {
        let mut w = WeightedMinHasher::new(similarity, 32, 7, Features::Hashes);
        features.iter().for_each(|&(f, x)| w.update(f, x));
        w.finish().map(|s| s.encode())
    };
    json!({
        "generator": "cargo run -p neardup-sketch --example make_vectors",
        "cases": cases,
        "weighted_fractional": {
            "features": features.iter().map(|&(f, w)| json!([hex64(f), w])).collect::<Vec<_>>(),
            "wminhash-v1 k=32 seed=7": weighted(Similarity::Weighted),
            "pminhash-v1 k=32 seed=7": weighted(Similarity::Probability),
        },
    })
}

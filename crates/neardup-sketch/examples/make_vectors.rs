//! Writes the golden vectors of the sketch schemes:
//! `cargo run -p neardup-sketch --example make_vectors > testdata/vectors/minhash-v1/vectors.json`.

#[path = "../tests/common/vectors.rs"]
mod vectors;

fn main() {
    let json = serde_json::to_string_pretty(&vectors::compute()).expect("serializable");
    println!("{json}");
}

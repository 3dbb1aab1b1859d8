//! Writes the document-level golden vectors of the MinHash family:
//! `cargo run -p neardup --example make-minhash-document-vectors > testdata/vectors/minhash-v1/documents.json`.
//! Run it only when a case is added: the test `minhash_document_vectors` never writes.

#[path = "../tests/minhash_documents/cases.rs"]
mod cases;

fn main() {
    let json = serde_json::to_string_pretty(&cases::compute()).expect("serializable");
    println!("{json}");
}

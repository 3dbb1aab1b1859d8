//! Arbitrary text tokenized by the doc-v1 profile's fast paths (64-byte blocks, chunks read once, simple
//! folding) must give exactly the tokens of the spec's steps taken literally, with and without the letterless
//! tokens; and the chunk-at-a-time path must agree with the block path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_text::profile::doc_v1::{
    tokenize_keeping_numbers, tokens, tokens_by_definition, tokens_without_blocks,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let fast = tokens(&text);
    assert_eq!(fast, tokens_by_definition(&text, false), "{text:?}");
    assert_eq!(fast, tokens_without_blocks(&text), "{text:?}");
    let mut keeping = Vec::new();
    tokenize_keeping_numbers(&text, |t| keeping.push(t.as_str().to_owned()));
    assert_eq!(keeping, tokens_by_definition(&text, true), "{text:?}");
});

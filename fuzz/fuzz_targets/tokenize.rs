//! Arbitrary text tokenized by the doc-v1 profile's fast paths (64-byte blocks, chunks read once, simple
//! folding) must give exactly the tokens of the spec's steps taken literally, with and without the letterless
//! tokens; and the chunk-at-a-time path must agree with the block path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_text::profile::doc_v1::{
    tokens, tokens_by_definition, tokens_keeping_numbers, tokens_without_blocks,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let fast = tokens(&text);
    assert_eq!(fast, tokens_by_definition(&text, false), "{text:?}");
    assert_eq!(fast, tokens_without_blocks(&text), "{text:?}");
    assert_eq!(
        tokens_keeping_numbers(&text),
        tokens_by_definition(&text, true),
        "{text:?}"
    );
});

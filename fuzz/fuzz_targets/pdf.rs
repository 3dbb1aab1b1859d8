//! Arbitrary bytes read as Pdf: an error is fine, a panic, a hang or unbounded memory is not.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use neardup_text::media::{Media, MediaHint};

fuzz_target!(
    init: common::abort_on_uncaught_panics(),
    |data: &[u8]| {
        // Documents are read as they are asked for: read every one.
        neardup_text::extract_documents(data, MediaHint::Force(Media::Pdf)).for_each(drop);
    }
);

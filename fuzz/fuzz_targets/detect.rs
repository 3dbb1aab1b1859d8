//! Arbitrary bytes with media detection: whatever medium the content looks like is read as such.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use neardup_text::media::MediaHint;

fuzz_target!(
    init: common::abort_on_uncaught_panics(),
    |data: &[u8]| {
        // Documents are read as they are asked for: read every one.
        neardup_text::extract_documents(data, MediaHint::Auto).for_each(drop);
    }
);

//! Arbitrary bytes with media detection: whatever medium the content looks like is read as such.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_text::media::MediaHint;

fuzz_target!(|data: &[u8]| {
    // Documents are read as they are asked for: read every one.
    neardup_text::extract_documents(data, MediaHint::Auto).for_each(drop);
});

//! Arbitrary gzip members holding a WARC archive: the inflater, its budget and the record reader behind it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_text::media::{Media, MediaHint};

fuzz_target!(|data: &[u8]| {
    // The gzip header is given, so that the fuzzer spends its time inside the deflate stream.
    let mut bytes = vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff];
    bytes.extend_from_slice(data);
    // Documents are read as they are asked for: read every one.
    neardup_text::extract_documents(&bytes, MediaHint::Force(Media::Warc)).for_each(drop);
});

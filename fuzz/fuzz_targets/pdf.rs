//! Arbitrary bytes read as Pdf: an error is fine, a panic, a hang or unbounded memory is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup_text::media::{Media, MediaHint};

fuzz_target!(
    init: {
        // pdf_oxide's own panics happen on neardup's extractor thread ("neardup-pdf"), under `catch_unwind`: the file
        // is reported as unreadable (the known one is testdata/malformed/pdf-extractor-panic.pdf). libFuzzer's hook
        // would abort on them all the same; any other panic still aborts.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some("neardup-pdf") {
                abort(info);
            }
        }));
    },
    |data: &[u8]| {
        // Documents are read as they are asked for: read every one.
        neardup_text::extract_documents(data, MediaHint::Force(Media::Pdf)).for_each(drop);
    }
);

//! What the targets share (a module of each target that needs it, not a target).

/// Installs a panic hook that aborts, as libFuzzer's does, on every panic but those neardup catches and
/// reports as a file's error: pdf_oxide's on neardup's extractor thread (the known one is
/// testdata/malformed/pdf-extractor-panic.pdf), and the parquet and arrow crates' inside neardup-io's guarded
/// decoding. Without it libFuzzer would stop at the first of them.
pub fn abort_on_uncaught_panics() {
    let abort = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let caught = std::thread::current().name() == Some(neardup_text::PDF_THREAD_NAME)
            || neardup_io::decoding_parquet();
        if !caught {
            abort(info);
        }
    }));
}

//! Recomputes a sample of the cross-media table of `docs/crossmedia.md` from `../shared/eval/crossmedia`
//! (skipped with a message when the evaluation data is not beside the repository).
//!
//! The sample: for every media pair, its first 4 same-document and first 4 different-document pairs in the
//! ground truth's order. The whole table: `cargo run -p neardup --example crossmedia`.

mod crossmedia_eval;

use crossmedia_eval as eval;
use std::collections::{BTreeMap, HashMap};

#[test]
fn cross_media_sample() {
    let Some(dir) = eval::data_dir() else {
        eprintln!("skipped: ../shared/eval/crossmedia is not there");
        return;
    };
    let all = eval::pairs(&dir);
    let mut taken: BTreeMap<(String, bool), usize> = BTreeMap::new();
    let sample: Vec<eval::Pair> = all
        .into_iter()
        .filter(|p| {
            let n = taken.entry((p.media.clone(), p.same_doc)).or_default();
            *n += 1;
            *n <= 4
        })
        .collect();
    let files = eval::rendition_files(&dir);
    let mut fps = HashMap::new();
    for p in &sample {
        for r in [&p.a, &p.b] {
            if !fps.contains_key(r) {
                let f = files.get(r).unwrap_or_else(|| panic!("{r}: not in renditions.tsv"));
                fps.insert(r.clone(), eval::fingerprint(&dir, f));
            }
        }
    }
    let failed: Vec<_> = fps
        .iter()
        .filter_map(|(r, f)| f.as_ref().err().map(|e| format!("{r}: {e}")))
        .collect();
    let table = eval::distances(&sample, &fps);
    let (mut same_en, mut same_en_close, mut different, mut different_close) = (0, 0, 0, 0);
    for (media, d) in &table {
        eprintln!(
            "{media}: same {:?} (English {:?}), different {:?}, no fingerprint {}",
            d.same, d.same_english, d.different, d.failed
        );
        same_en += d.same_english.len();
        same_en_close += eval::within(&d.same_english, 3);
        different += d.different.len();
        different_close += eval::within(&d.different, 3);
    }
    eprintln!(
        "English same-document pairs within k=3: {same_en_close} of {same_en}; different-document pairs within k=3: {different_close} of {different}"
    );
    // Placeholder PDFs of non-English manuals are their own documents and do fingerprint; every rendition of
    // the sample must.
    assert!(failed.is_empty(), "renditions without a fingerprint: {failed:?}");
    assert!(same_en >= 20 && different >= 40, "sample too small");
    assert_eq!(
        different_close, 0,
        "different documents must not be within k = 3"
    );
    assert!(
        same_en_close * 100 >= same_en * 75,
        "only {same_en_close} of {same_en} English same-document pairs within k = 3"
    );
}

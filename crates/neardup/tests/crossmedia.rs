//! Recomputes a sample of the cross-media table of `docs/crossmedia.md` from `../shared/eval/crossmedia`
//! (skipped with a message when the evaluation data is not beside the repository).
//!
//! The sample: for every media pair, its first 4 same-document and first 4 different-document pairs in the
//! ground truth's order. The whole table: `cargo run -p neardup --example crossmedia`.

mod crossmedia_eval;

use crossmedia_eval as eval;
use std::collections::{BTreeMap, HashMap};

/// The different-document pairs within k = 3 in the whole table (docs/crossmedia.md): long manuals whose
/// term-frequency SimHash is dominated by the same frequent words. Any other one is a regression.
const KNOWN_CLOSE_DIFFERENT: &[(&str, &str)] = &[
    (
        "native/debian-policy/policy/policy.epub",
        "native/r-manuals/R-intro/R-intro.html",
    ),
    (
        "native/debian-policy/policy/policy.epub",
        "native/debian-faq/en/debian-faq.en.txt",
    ),
    (
        "native/maint-guide/ja/html/",
        "native/debian-reference/ja/debian-reference.ja.txt",
    ),
];

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
                let f = files
                    .get(r)
                    .unwrap_or_else(|| panic!("{r}: not in renditions.tsv"));
                fps.insert(r.clone(), eval::fingerprint(&dir, f));
            }
        }
    }
    let failed: Vec<_> = fps
        .iter()
        .filter_map(|(r, f)| f.as_ref().err().map(|e| format!("{r}: {e}")))
        .collect();
    let table = eval::distances(&sample, &fps);
    let unexpected: Vec<String> = sample
        .iter()
        .filter(|p| !p.same_doc)
        .filter(|p| !KNOWN_CLOSE_DIFFERENT.contains(&(p.a.as_str(), p.b.as_str())))
        .filter_map(|p| match (&fps[&p.a], &fps[&p.b]) {
            (Ok((a, _)), Ok((b, _))) if (a ^ b).count_ones() <= 3 => Some(format!(
                "{} {} at distance {}",
                p.a,
                p.b,
                (a ^ b).count_ones()
            )),
            _ => None,
        })
        .collect();
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
    assert!(
        failed.is_empty(),
        "renditions without a fingerprint: {failed:?}"
    );
    assert!(same_en >= 20 && different >= 40, "sample too small");
    assert!(
        unexpected.is_empty(),
        "different documents within k = 3 ({different_close} of {different} with the known ones): {unexpected:?}"
    );
    assert!(
        same_en_close * 100 >= same_en * 75,
        "only {same_en_close} of {same_en} English same-document pairs within k = 3"
    );
}

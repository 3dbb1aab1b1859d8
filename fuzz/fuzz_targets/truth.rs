//! Arbitrary UTF-8 parsed as a ground-truth file (`neardup calibrate --truth`, `neardup.calibrate(truth=PATH)`):
//! an error (naming the line) is fine; a panic is not, and every pair read has a similarity in 0..=1 that the
//! pair gives in either order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup::calibrate::Truth;

fuzz_target!(|text: &str| {
    match Truth::parse(text, "truth.tsv") {
        Ok(truth) => {
            for line in text.lines() {
                let fields: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
                if let [a, b, ..] = fields[..]
                    && let Some(similarity) = truth.get(a, b)
                {
                    assert!((0.0..=1.0).contains(&similarity), "{similarity}");
                    assert_eq!(truth.get(b, a), Some(similarity));
                }
            }
        }
        Err(e) => assert!(e.to_string().contains("truth.tsv, line "), "{e}"),
    }
});

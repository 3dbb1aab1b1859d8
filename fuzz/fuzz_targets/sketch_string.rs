//! Arbitrary UTF-8 parsed as a fingerprint or signature string (`neardup::Sketch`), as a method name
//! (`neardup::Method`) and as a b-bit signature: an error is fine; a panic is not, and whatever parses prints
//! to a string that parses back to the same value and prints the same. A sketch compared with itself is similar.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup::{Method, Sketch};
use neardup_sketch::bbit::BBitSignature;

fuzz_target!(|s: &str| {
    if let Ok(sketch) = s.parse::<Sketch>() {
        let printed = sketch.to_string();
        let again: Sketch = printed.parse().expect("a printed sketch parses");
        assert_eq!(again, sketch);
        assert_eq!(again.to_string(), printed);
        if let Ok(similarity) = sketch.similarity(&sketch) {
            assert!((0.0..=1.0).contains(&similarity), "{similarity}");
        }
    }
    if let Ok(method) = s.parse::<Method>() {
        let printed = method.to_string();
        assert_eq!(printed.parse::<Method>().expect("a printed method parses"), method);
    }
    if let Ok(signature) = s.parse::<BBitSignature>() {
        let printed = signature.to_string();
        assert_eq!(printed.parse::<BBitSignature>().expect("a printed signature parses"), signature);
    }
});

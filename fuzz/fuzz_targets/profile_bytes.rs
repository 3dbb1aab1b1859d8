//! Arbitrary bytes read as two exact profiles (`neardup::profile::Profile::from_bytes`), the form in which the
//! distributed stages (Python, Spark) receive them in a column anyone can write: the first byte says where the
//! first ends. An error is fine; a panic is not. Whatever parses prints back to the same bytes, and every
//! measure of two profiles lies in 0..=1 and reaches a threshold exactly when its value does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neardup::{Measure, Profile};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let split = (usize::from(split) * 8 + 1).min(rest.len());
    let (first, second) = rest.split_at(split);
    let parsed: Vec<Profile> = [first, second]
        .into_iter()
        .filter_map(|bytes| {
            let profile = Profile::from_bytes(bytes).ok()?;
            assert_eq!(profile.to_bytes(), bytes, "a profile prints back to its bytes");
            Some(profile)
        })
        .collect();
    for a in &parsed {
        for b in &parsed {
            for measure in [
                Measure::Jaccard,
                Measure::WeightedJaccard,
                Measure::ProbabilityJaccard,
                Measure::Cosine,
            ] {
                let similarity = a.similarity(b, measure);
                assert!((0.0..=1.0).contains(&similarity), "{measure}: {similarity}");
                for threshold in [0.0, 0.5, 0.8, similarity, 1.0] {
                    let reached = a.similarity_reaching(b, measure, threshold);
                    assert_eq!(
                        reached,
                        Some(similarity).filter(|&s| s >= threshold),
                        "{measure} at {threshold}"
                    );
                }
            }
        }
    }
});

//! b-bit compaction of MinHash signatures (Li & König, WWW 2010), with the collision-corrected estimator.
//!
//! Keeping only the lowest b bits of each value shrinks a 128-value signature from 512 bytes to
//! `16·b` bytes. Two values that came from *different* features now agree by chance with probability `2^-b`,
//! so the raw agreement rate P is corrected:
//!
//! `Ĵ = (P − 2^-b) / (1 − 2^-b)`, `Var(Ĵ) ≈ P(1 − P) / (K (1 − 2^-b)²)`.
//!
//! This is Li & König's estimator in the limit where the values are uniform hashes of the features (their
//! general form corrects for the set sizes relative to the permutation range D; here the values are 32-bit
//! hashes, so the low bits of two distinct features' values are independent and uniform, which is the
//! `r1, r2 → 0` case of their Theorem 1). The estimate is unbiased and may fall slightly below 0 or above
//! 1; it is not clamped.
//!
//! Values are packed little-endian: value i occupies bits `i·b … i·b + b − 1` of the bit string, bit j of the
//! string being bit `j mod 64` of word `j / 64`.

use crate::signature::{
    MinHashSignature, ParseSketchError, SketchMismatch, SketchParams, format_text, parse_text,
};
use std::fmt;
use std::str::FromStr;

/// A MinHash signature reduced to the lowest b bits of each value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BBitSignature {
    params: SketchParams,
    words: Vec<u64>,
}

impl BBitSignature {
    /// Keeps the lowest `b` bits (1 ≤ b ≤ 32) of every value of `signature`.
    pub fn compact(signature: &MinHashSignature, b: u8) -> Self {
        assert!((1..=32).contains(&b), "b must be in 1..=32");
        let values = signature.values();
        let mut words = vec![0u64; (values.len() * b as usize).div_ceil(64)];
        let mask = if b == 32 { u32::MAX } else { (1u32 << b) - 1 };
        for (i, &v) in values.iter().enumerate() {
            let bit = i * b as usize;
            let low = (v & mask) as u64;
            words[bit / 64] |= low << (bit % 64);
            if bit % 64 + b as usize > 64 {
                words[bit / 64 + 1] |= low >> (64 - bit % 64);
            }
        }
        let mut params = *signature.params();
        params.b_bits = Some(b);
        BBitSignature { params, words }
    }

    /// The parameters (with `b_bits = Some(b)`).
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// b.
    pub fn bits(&self) -> u8 {
        self.params.b_bits.expect("b-bit parameters")
    }

    /// The number of values K.
    pub fn len(&self) -> usize {
        self.params.k as usize
    }

    /// Whether K is 0 (never, for a signature made by this crate).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value i (its lowest b bits).
    pub fn value(&self, i: usize) -> u32 {
        assert!(i < self.len());
        let b = self.bits() as usize;
        let bit = i * b;
        let mut v = self.words[bit / 64] >> (bit % 64);
        if bit % 64 + b > 64 {
            v |= self.words[bit / 64 + 1] << (64 - bit % 64);
        }
        (v & ((1u64 << b) - 1)) as u32
    }

    /// The packed words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Positions where the b-bit values agree.
    pub fn matches(&self, other: &BBitSignature) -> Result<usize, SketchMismatch> {
        self.params.check_comparable(&other.params)?;
        Ok((0..self.len())
            .filter(|&i| self.value(i) == other.value(i))
            .count())
    }

    /// The corrected, unbiased Jaccard estimate `(P − 2^-b) / (1 − 2^-b)`.
    pub fn jaccard(&self, other: &BBitSignature) -> Result<f64, SketchMismatch> {
        let p = self.matches(other)? as f64 / self.len() as f64;
        let chance = 0.5f64.powi(self.bits() as i32);
        Ok((p - chance) / (1.0 - chance))
    }

    /// The text form `scheme:params,b=…:base32` of the packed bit string (⌈K·b/8⌉ bytes, little-endian).
    pub fn encode(&self) -> String {
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        format_text(
            &self.params,
            &bytes[..(self.len() * self.bits() as usize).div_ceil(8)],
        )
    }
}

impl fmt::Display for BBitSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl FromStr for BBitSignature {
    type Err = ParseSketchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (params, bytes) = parse_text(s)?;
        let b = params.b_bits.ok_or_else(|| ParseSketchError::BadParams {
            params: params.param_string(),
            reason: "a b-bit signature needs b=".to_string(),
        })? as usize;
        let bits = params.k as usize * b;
        if bytes.len() != bits.div_ceil(8) {
            return Err(ParseSketchError::BadValue {
                reason: format!(
                    "expected {} bytes for k={} b={b}, got {}",
                    bits.div_ceil(8),
                    params.k,
                    bytes.len()
                ),
            });
        }
        let mut words = vec![0u64; bits.div_ceil(64)];
        for (i, &byte) in bytes.iter().enumerate() {
            words[i / 8] |= (byte as u64) << (8 * (i % 8));
        }
        if !bits.is_multiple_of(64) && words[bits / 64] >> (bits % 64) != 0 {
            return Err(ParseSketchError::BadValue {
                reason: "bits beyond the last value are set".to_string(),
            });
        }
        Ok(BBitSignature { params, words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oph::OphMinHasher;
    use crate::shingle::Features;
    use crate::signature::Scheme;
    use crate::test_stats::{Pair, Summary};

    fn sig(values: Vec<u32>) -> MinHashSignature {
        let params =
            SketchParams::new(Scheme::MinHashOph, values.len() as u32, 0, Features::Hashes);
        MinHashSignature::from_values(params, values)
    }

    #[test]
    fn packing_round_trips_for_every_b() {
        let values: Vec<u32> = (0..37u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        for b in 1..=32u8 {
            let c = BBitSignature::compact(&sig(values.clone()), b);
            let mask = if b == 32 { u32::MAX } else { (1 << b) - 1 };
            for (i, v) in values.iter().enumerate() {
                assert_eq!(c.value(i), v & mask, "b={b} i={i}");
            }
            assert_eq!(c.encode().parse::<BBitSignature>().unwrap(), c, "b={b}");
        }
    }

    #[test]
    fn different_b_refuse_to_compare() {
        let s = sig(vec![1, 2, 3]);
        let (one, two) = (BBitSignature::compact(&s, 1), BBitSignature::compact(&s, 2));
        let err = one.jaccard(&two).unwrap_err();
        assert!(
            err.to_string().contains("b=1") && err.to_string().contains("b=2"),
            "{err}"
        );
        assert_eq!(one.jaccard(&one.clone()).unwrap(), 1.0);
    }

    /// The corrected estimator is unbiased, and its variance is at most the b-bit formula with classic
    /// MinHash's collision rate (OPH's variance is at most classic's, see `oph`).
    #[test]
    fn corrected_estimator_is_unbiased() {
        const K: usize = 128;
        for b in [1u8, 2, 4, 8] {
            for j in [0.2, 0.5, 0.8, 0.95] {
                let mut summary = Summary::default();
                let mut raw_mean = 0.0;
                for trial in 0..2000u64 {
                    let pair = Pair::new(500, j, 0xBB17 ^ (trial << 16) ^ ((b as u64) << 8));
                    let make = |set: &[u64]| {
                        let mut h = OphMinHasher::new(K, trial, Features::Hashes);
                        h.extend(set);
                        BBitSignature::compact(&h.finish().unwrap(), b)
                    };
                    let (a, c) = (make(&pair.a), make(&pair.b));
                    let estimate = a.jaccard(&c).unwrap();
                    raw_mean += a.matches(&c).unwrap() as f64 / K as f64 / 2000.0;
                    summary.add(estimate, pair.jaccard);
                }
                let chance = 0.5f64.powi(b as i32);
                let p = chance + (1.0 - chance) * j;
                let bbit_variance = p * (1.0 - p) / (K as f64 * (1.0 - chance).powi(2));
                let t = 2000f64;
                let what = format!("b={b} J={j}");
                assert!(
                    summary.mean_error().abs() <= 4.5 * (bbit_variance / t).sqrt(),
                    "{what}: mean error {} (biased)",
                    summary.mean_error()
                );
                assert!(
                    summary.mse() <= 1.15 * bbit_variance,
                    "{what}: variance {} vs {bbit_variance}",
                    summary.mse()
                );
                // Without the correction the raw agreement overestimates J by (1 − J)·2^-b.
                if b <= 2 {
                    assert!(
                        raw_mean - j > 0.5 * (1.0 - j) * chance,
                        "{what}: raw {raw_mean}"
                    );
                }
            }
        }
    }
}

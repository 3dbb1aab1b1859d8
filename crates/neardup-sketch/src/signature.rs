//! Scheme names and parameters, the MinHash signature value, the mismatch error and the text/byte encodings.
//!
//! Every sketch carries the [`SketchParams`] that made it. Comparing two sketches whose parameters differ in
//! anything (scheme, K, seed, features, b) is refused with [`SketchMismatch`]: such values are not samples of
//! the same random permutations, and their agreement rate means nothing.

use crate::shingle::Features;
use data_encoding::BASE32_NOPAD;
use std::fmt;
use std::str::FromStr;

/// The algorithm that made a sketch. [`name`](Self::name) is the stable, versioned scheme name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// One permutation hashing, empty bins filled by further rounds ([`crate::oph`]): `minhash-oph-v1`.
    MinHashOph,
    /// `datasketch.MinHash(scheme="affine32")`, datasketch ≥ 2.0's default ([`crate::datasketch`]).
    DatasketchAffine32,
    /// `datasketch.MinHash(scheme="legacy")`, the only scheme of datasketch < 2.0 ([`crate::datasketch`]).
    DatasketchLegacy,
    /// Weighted MinHash for the weighted Jaccard similarity ([`crate::weighted`]): `wminhash-v1`.
    WeightedJaccard,
    /// Weighted MinHash for the probability Jaccard similarity ([`crate::weighted`]): `pminhash-v1`.
    ProbabilityJaccard,
    /// Bottom-k sample of feature hashes ([`crate::bottomk`]).
    BottomK,
}

impl Scheme {
    /// Every scheme, in a fixed order.
    pub const ALL: [Scheme; 6] = [
        Scheme::MinHashOph,
        Scheme::DatasketchAffine32,
        Scheme::DatasketchLegacy,
        Scheme::WeightedJaccard,
        Scheme::ProbabilityJaccard,
        Scheme::BottomK,
    ];

    /// The stable scheme name.
    pub const fn name(self) -> &'static str {
        match self {
            Scheme::MinHashOph => "minhash-oph-v1",
            Scheme::DatasketchAffine32 => "minhash-datasketch-affine32",
            Scheme::DatasketchLegacy => "minhash-datasketch-legacy",
            Scheme::WeightedJaccard => "wminhash-v1",
            Scheme::ProbabilityJaccard => "pminhash-v1",
            Scheme::BottomK => "bottomk-v1",
        }
    }

    /// The scheme with this name (any case).
    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that decides a sketch's values: two sketches are comparable iff their parameters are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SketchParams {
    /// The algorithm.
    pub scheme: Scheme,
    /// The number of values (K bins, `num_perm`, or the k of bottom-k).
    pub k: u32,
    /// The seed of the random permutations (datasketch's `seed`; 0 for bottom-k, which has none).
    pub seed: u64,
    /// The features the sketch was made from.
    pub features: Features,
    /// `Some(b)` when only the lowest b bits of each value are kept ([`crate::bbit`]).
    pub b_bits: Option<u8>,
}

impl SketchParams {
    /// Parameters without b-bit compaction.
    pub const fn new(scheme: Scheme, k: u32, seed: u64, features: Features) -> Self {
        SketchParams {
            scheme,
            k,
            seed,
            features,
            b_bits: None,
        }
    }

    /// Fails with [`SketchMismatch`] unless `self == other`.
    pub fn check_comparable(&self, other: &SketchParams) -> Result<(), SketchMismatch> {
        if self == other {
            Ok(())
        } else {
            Err(SketchMismatch {
                left: *self,
                right: *other,
            })
        }
    }

    /// The parameter list of the text form: `k=128,seed=1,f=w5` (and `,b=2` for b-bit signatures).
    pub fn param_string(&self) -> String {
        let mut s = format!("k={},seed={},f={}", self.k, self.seed, self.features.code());
        if let Some(b) = self.b_bits {
            s.push_str(&format!(",b={b}"));
        }
        s
    }

    fn parse(scheme: &str, params: &str) -> Result<SketchParams, ParseSketchError> {
        let bad = |reason: String| ParseSketchError::BadParams {
            params: params.to_string(),
            reason,
        };
        let scheme = Scheme::from_name(scheme).ok_or_else(|| ParseSketchError::UnknownScheme {
            scheme: scheme.to_string(),
        })?;
        let (mut k, mut seed, mut features, mut b_bits) = (None, None, None, None);
        for item in params.split(',') {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("'{item}' is not key=value")))?;
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("'{v}' is not a number")))
            };
            match key {
                "k" => {
                    let v = number(value)?;
                    k = Some(u32::try_from(v).map_err(|_| bad(format!("k={v} is too large")))?);
                }
                "seed" => seed = Some(number(value)?),
                "f" => {
                    features = Some(
                        Features::from_code(value)
                            .ok_or_else(|| bad(format!("unknown features '{value}'")))?,
                    )
                }
                "b" => {
                    let v = number(value)?;
                    if !(1..=32).contains(&v) {
                        return Err(bad(format!("b={v} is not in 1..=32")));
                    }
                    b_bits = Some(v as u8);
                }
                _ => return Err(bad(format!("unknown parameter '{key}'"))),
            }
        }
        let missing = |what: &str| bad(format!("missing {what}="));
        if matches!(
            scheme,
            Scheme::DatasketchAffine32 | Scheme::DatasketchLegacy
        ) && seed.is_some_and(|seed| seed > u64::from(u32::MAX))
        {
            // datasketch seeds NumPy's MT19937 with 32 bits: a larger seed names no signature.
            return Err(bad(format!(
                "seed={} is above 4294967295, the largest datasketch seed",
                seed.unwrap_or_default()
            )));
        }
        Ok(SketchParams {
            scheme,
            k: k.filter(|&k| k > 0).ok_or_else(|| missing("k"))?,
            seed: seed.ok_or_else(|| missing("seed"))?,
            features: features.ok_or_else(|| missing("f"))?,
            b_bits,
        })
    }
}

impl fmt::Display for SketchParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.scheme, self.param_string())
    }
}

impl FromStr for SketchParams {
    type Err = ParseSketchError;

    /// Parses the [`Display`](fmt::Display) form, `minhash-oph-v1(k=128,seed=0,f=w5)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let malformed = || ParseSketchError::Malformed {
            input: s.chars().take(80).collect(),
        };
        let (scheme, rest) = s.trim().split_once('(').ok_or_else(malformed)?;
        let params = rest.strip_suffix(')').ok_or_else(malformed)?;
        SketchParams::parse(scheme, params)
    }
}

/// Two sketches made by different schemes or parameters were compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SketchMismatch {
    /// The parameters of the first sketch.
    pub left: SketchParams,
    /// The parameters of the second sketch.
    pub right: SketchParams,
}

impl fmt::Display for SketchMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot compare a {} sketch with a {} sketch: only sketches made with the same scheme and \
             parameters estimate a similarity; re-sketch one side with the other's parameters",
            self.left, self.right
        )
    }
}

impl std::error::Error for SketchMismatch {}

/// Why a string or byte buffer is not a sketch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseSketchError {
    /// Not of the form `scheme:params:value`.
    Malformed {
        /// The input, shortened.
        input: String,
    },
    /// The scheme name is unknown.
    UnknownScheme {
        /// The name found.
        scheme: String,
    },
    /// The parameter list is wrong.
    BadParams {
        /// The parameter list found.
        params: String,
        /// What is wrong.
        reason: String,
    },
    /// The value is not base32 of the right length.
    BadValue {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for ParseSketchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseSketchError::Malformed { input } => write!(
                f,
                "'{input}' is not a sketch: expected SCHEME:PARAMS:BASE32, e.g. minhash-oph-v1:k=128,seed=0,f=w5:..."
            ),
            ParseSketchError::UnknownScheme { scheme } => {
                let known: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
                write!(
                    f,
                    "unknown sketch scheme '{scheme}' (known: {})",
                    known.join(", ")
                )
            }
            ParseSketchError::BadParams { params, reason } => {
                write!(f, "bad sketch parameters '{params}': {reason}")
            }
            ParseSketchError::BadValue { reason } => write!(f, "bad sketch value: {reason}"),
        }
    }
}

impl std::error::Error for ParseSketchError {}

/// Splits `scheme:params:base32` and decodes the base32 (any case, optional padding).
pub(crate) fn parse_text(text: &str) -> Result<(SketchParams, Vec<u8>), ParseSketchError> {
    let malformed = || ParseSketchError::Malformed {
        input: text.chars().take(80).collect(),
    };
    let mut parts = text.trim().splitn(3, ':');
    let (scheme, params, value) = match (parts.next(), parts.next(), parts.next()) {
        (Some(s), Some(p), Some(v)) => (s, p, v),
        _ => return Err(malformed()),
    };
    let params = SketchParams::parse(scheme, params)?;
    let value = value.trim_end_matches('=').to_ascii_uppercase();
    let bytes = BASE32_NOPAD
        .decode(value.as_bytes())
        .map_err(|e| ParseSketchError::BadValue {
            reason: e.to_string(),
        })?;
    Ok((params, bytes))
}

/// `scheme:params:base32`, lowercase, unpadded.
pub(crate) fn format_text(params: &SketchParams, bytes: &[u8]) -> String {
    format!(
        "{}:{}:{}",
        params.scheme,
        params.param_string(),
        BASE32_NOPAD.encode(bytes).to_ascii_lowercase()
    )
}

/// A MinHash-family signature: K 32-bit values, position i of one signature comparable with position i of
/// another made with the same [`SketchParams`]. Made by [`crate::oph`], [`crate::datasketch`] and
/// [`crate::weighted`]; [`values`](Self::values) is what LSH bands hash.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MinHashSignature {
    params: SketchParams,
    values: Vec<u32>,
}

impl MinHashSignature {
    /// A signature from its values. Panics if `values.len() != params.k` or if `params.b_bits` is set (b-bit
    /// signatures are [`crate::bbit::BBitSignature`]).
    pub fn from_values(params: SketchParams, values: Vec<u32>) -> Self {
        assert_eq!(values.len(), params.k as usize, "a signature has K values");
        assert!(
            params.b_bits.is_none(),
            "b-bit signatures are BBitSignature"
        );
        MinHashSignature { params, values }
    }

    /// The parameters that made it.
    pub fn params(&self) -> &SketchParams {
        &self.params
    }

    /// The K values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// The number of positions where both signatures agree.
    pub fn matches(&self, other: &MinHashSignature) -> Result<usize, SketchMismatch> {
        self.params.check_comparable(&other.params)?;
        Ok(self
            .values
            .iter()
            .zip(&other.values)
            .filter(|(a, b)| a == b)
            .count())
    }

    /// The similarity estimate: the fraction of agreeing positions (unbiased for the Jaccard similarity of the
    /// feature sets; for the weighted schemes, of their weighted or probability Jaccard similarity).
    pub fn jaccard(&self, other: &MinHashSignature) -> Result<f64, SketchMismatch> {
        Ok(self.matches(other)? as f64 / self.values.len() as f64)
    }

    /// The values as little-endian bytes (4·K bytes).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = vec![0; 4 * self.values.len()];
        write_le_values(&self.values, &mut out);
        out
    }

    /// The text form `scheme:params:base32` of the little-endian values, e.g.
    /// `minhash-oph-v1:k=128,seed=0,f=w5:…`.
    pub fn encode(&self) -> String {
        format_text(&self.params, &self.to_le_bytes())
    }
}

/// Writes signature values into `out` as [`MinHashSignature::to_le_bytes`] lays them out, 4 little-endian bytes
/// each, without allocating (a batch writes each row into one output buffer). Panics if `out` does not hold
/// 4 bytes per value.
pub fn write_le_values(values: &[u32], out: &mut [u8]) {
    assert_eq!(
        out.len(),
        4 * values.len(),
        "out must hold 4 bytes per value"
    );
    for (value, out) in values.iter().zip(out.chunks_exact_mut(4)) {
        out.copy_from_slice(&value.to_le_bytes());
    }
}

impl fmt::Display for MinHashSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl FromStr for MinHashSignature {
    type Err = ParseSketchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (params, bytes) = parse_text(s)?;
        if params.b_bits.is_some() || params.scheme == Scheme::BottomK {
            return Err(ParseSketchError::BadParams {
                params: params.param_string(),
                reason: format!(
                    "{} is not a K-value MinHash signature (use its own parser)",
                    params
                ),
            });
        }
        if bytes.len() != 4 * params.k as usize {
            return Err(ParseSketchError::BadValue {
                reason: format!(
                    "expected {} bytes for k={}, got {}",
                    4 * params.k,
                    params.k,
                    bytes.len()
                ),
            });
        }
        let values = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(MinHashSignature { params, values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(k: u32, seed: u64) -> SketchParams {
        SketchParams::new(Scheme::MinHashOph, k, seed, Features::Words(5))
    }

    #[test]
    fn text_round_trip_and_case() {
        let sig = MinHashSignature::from_values(params(3, 7), vec![1, u32::MAX, 0xDEAD_BEEF]);
        let text = sig.encode();
        assert!(
            text.starts_with("minhash-oph-v1:k=3,seed=7,f=w5:"),
            "{text}"
        );
        assert_eq!(text.parse::<MinHashSignature>().unwrap(), sig);
        assert_eq!(
            text.to_uppercase()
                .replace("K=", "k=")
                .replace("SEED=", "seed=")
                .replace("F=W", "f=w")
                .parse::<MinHashSignature>()
                .unwrap(),
            sig
        );
    }

    #[test]
    fn parse_errors_say_what_is_wrong() {
        let e = "nonsense".parse::<MinHashSignature>().unwrap_err();
        assert!(matches!(e, ParseSketchError::Malformed { .. }));
        let e = "minhash-x:k=1,seed=0,f=w5:aaaaaaa"
            .parse::<MinHashSignature>()
            .unwrap_err();
        assert!(e.to_string().contains("known: minhash-oph-v1"), "{e}");
        let e = "minhash-oph-v1:k=2,seed=0,f=w5:aaaaaaa"
            .parse::<MinHashSignature>()
            .unwrap_err();
        assert!(e.to_string().contains("expected 8 bytes"), "{e}");
        let e = "minhash-datasketch-affine32:k=1,seed=4294967296,f=w5:aaaaaaa"
            .parse::<MinHashSignature>()
            .unwrap_err();
        assert!(e.to_string().contains("largest datasketch seed"), "{e}");
        assert!(
            "minhash-datasketch-affine32:k=1,seed=4294967295,f=w5:aaaaaaa"
                .parse::<MinHashSignature>()
                .is_ok()
        );
        let e = "minhash-oph-v1:k=2,seed=0:aaaaaaa"
            .parse::<MinHashSignature>()
            .unwrap_err();
        assert!(e.to_string().contains("missing f="), "{e}");
    }

    #[test]
    fn mismatch_is_refused() {
        let a = MinHashSignature::from_values(params(2, 0), vec![1, 2]);
        let b = MinHashSignature::from_values(params(2, 1), vec![1, 2]);
        let err = a.jaccard(&b).unwrap_err();
        assert_eq!(err.left.seed, 0);
        assert_eq!(err.right.seed, 1);
        assert!(err.to_string().contains("seed=0") && err.to_string().contains("seed=1"));
        assert_eq!(a.jaccard(&a.clone()).unwrap(), 1.0);
    }
}

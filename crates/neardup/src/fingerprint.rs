//! The fingerprint value and its self-describing text form `scheme:base32`.

use crate::error::{Error, ParseError};
use crate::scheme::Scheme;
use data_encoding::BASE32_NOPAD;
use std::fmt;
use std::str::FromStr;

/// A 64-bit fingerprint made by a scheme.
///
/// Its text form is the scheme name, a colon, and RFC 4648 base32 of the 8 octets (big-endian), lowercase,
/// unpadded: `simhash-doc-v1:qikqezyce3ajc`. Parsing accepts any case and the optional `===` padding, and
/// refuses anything else with a message that says what is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint {
    scheme: Scheme,
    bits: u64,
}

/// How similar two documents are, by the scheme's thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Similarity ≥ the close threshold (0.98 for simhash-doc-v1).
    Close,
    /// Similarity ≥ the loose threshold (0.90) but below close.
    Loose,
    /// Below the loose threshold.
    Different,
}

impl Verdict {
    /// The lowercase name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Close => "close",
            Verdict::Loose => "loose",
            Verdict::Different => "different",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Fingerprint {
    /// A fingerprint from its scheme and value (bit 0 of the spec is the value's most significant bit).
    pub const fn new(scheme: Scheme, bits: u64) -> Self {
        Fingerprint { scheme, bits }
    }

    /// The scheme that made it.
    pub const fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The value as a big-endian integer.
    pub const fn bits(&self) -> u64 {
        self.bits
    }

    /// The value's 8 octets.
    pub const fn to_bytes(&self) -> [u8; 8] {
        self.bits.to_be_bytes()
    }

    fn same_scheme(&self, other: &Fingerprint) -> Result<(), Error> {
        if self.scheme == other.scheme {
            Ok(())
        } else {
            Err(Error::SchemeMismatch {
                left: self.scheme.name(),
                right: other.scheme.name(),
            })
        }
    }

    /// Hamming distance: the number of differing bits. Refuses fingerprints of different schemes.
    pub fn distance(&self, other: &Fingerprint) -> Result<u32, Error> {
        self.same_scheme(other)?;
        Ok(neardup_sketch::hamming(self.bits, other.bits))
    }

    /// `1 − d/64` for Hamming distance d.
    pub fn similarity(&self, other: &Fingerprint) -> Result<f64, Error> {
        let d = self.distance(other)?;
        Ok(1.0 - d as f64 / self.scheme.bits() as f64)
    }

    /// Close, loose or different, by the scheme's thresholds.
    pub fn verdict(&self, other: &Fingerprint) -> Result<Verdict, Error> {
        let s = self.similarity(other)?;
        Ok(if s >= self.scheme.close_threshold() {
            Verdict::Close
        } else if s >= self.scheme.loose_threshold() {
            Verdict::Loose
        } else {
            Verdict::Different
        })
    }

    /// Whether the text looks like a fingerprint (`name:value` with a scheme-like name), as opposed to a path.
    pub fn looks_like_fingerprint(s: &str) -> bool {
        match s.split_once(':') {
            Some((name, value)) => {
                !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && name.bytes().any(|b| b == b'-')
                    && !value.is_empty()
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'=')
            }
            None => false,
        }
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut value = BASE32_NOPAD.encode(&self.to_bytes());
        value.make_ascii_lowercase();
        write!(f, "{}:{}", self.scheme.name(), value)
    }
}

impl FromStr for Fingerprint {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let Some((name, value)) = input.split_once(':') else {
            let shown: String = input.chars().take(40).collect();
            return Err(ParseError::MissingScheme { input: shown });
        };
        let scheme: Scheme = name.parse()?;
        let bad = |reason: &str| ParseError::BadValue {
            scheme: scheme.name(),
            value: value.chars().take(40).collect(),
            reason: reason.to_owned(),
        };
        let unpadded = match value.len() {
            13 => value,
            16 if value.ends_with("===") => &value[..13],
            _ => {
                return Err(bad(
                    "expected 13 base32 characters (optionally followed by '===')",
                ));
            }
        };
        let upper = unpadded.to_ascii_uppercase();
        let bytes = BASE32_NOPAD
            .decode(upper.as_bytes())
            .map_err(|e| match e.kind {
                data_encoding::DecodeKind::Trailing => bad(
                    "the last character has bits set beyond the 64 encoded (not canonical base32)",
                ),
                _ => bad(&format!(
                    "not RFC 4648 base32 (a-z, 2-7) at position {}",
                    e.position + 1
                )),
            })?;
        let octets: [u8; 8] = bytes
            .try_into()
            .map_err(|_| bad("does not decode to 8 octets"))?;
        Ok(Fingerprint::new(scheme, u64::from_be_bytes(octets)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_forms() {
        let fp = Fingerprint::new(Scheme::SimhashDocV1, 0x0123_4567_89ab_cdef);
        let s = fp.to_string();
        assert_eq!(s, "simhash-doc-v1:aerukz4jvpg66");
        assert_eq!(s.parse::<Fingerprint>().unwrap(), fp);
        assert_eq!(
            "SIMHASH-DOC-V1:AERUKZ4JVPG66"
                .parse::<Fingerprint>()
                .unwrap(),
            fp
        );
        assert_eq!(
            "simhash-doc-v1:aerukz4jvpg66==="
                .parse::<Fingerprint>()
                .unwrap(),
            fp
        );
    }

    #[test]
    fn refusals() {
        let err = |s: &str| s.parse::<Fingerprint>().unwrap_err().to_string();
        assert!(err("aerukz4jvpg66").contains("expected SCHEME:VALUE"));
        assert!(
            err("simhash-doc-v2:aerukz4jvpg66")
                .contains("unknown fingerprint scheme 'simhash-doc-v2'")
        );
        assert!(err("simhash-doc-v1:aerukz4jvpg6").contains("13 base32"));
        assert!(err("simhash-doc-v1:aerukz4jvpg66==").contains("13 base32"));
        assert!(err("simhash-doc-v1:aerukz4jvpg61").contains("position 13"));
        assert!(err("simhash-doc-v1:aerukz4jvpg67").contains("not canonical"));
        assert!(err("simhash-doc-v1: erukz4jvpg66").contains("position 1"));
    }

    #[test]
    fn distance_similarity_verdict_edges() {
        let a = Fingerprint::new(Scheme::SimhashDocV1, 0);
        let at = |d: u32| {
            Fingerprint::new(
                Scheme::SimhashDocV1,
                if d == 0 { 0 } else { u64::MAX >> (64 - d) },
            )
        };
        assert_eq!(a.distance(&at(3)).unwrap(), 3);
        assert_eq!(a.similarity(&at(64)).unwrap(), 0.0);
        assert_eq!(a.verdict(&at(0)).unwrap(), Verdict::Close);
        assert_eq!(a.verdict(&at(1)).unwrap(), Verdict::Close); // 0.984
        assert_eq!(a.verdict(&at(2)).unwrap(), Verdict::Loose); // 0.969
        assert_eq!(a.verdict(&at(6)).unwrap(), Verdict::Loose); // 0.906
        assert_eq!(a.verdict(&at(7)).unwrap(), Verdict::Different); // 0.891
    }

    #[test]
    fn looks_like() {
        assert!(Fingerprint::looks_like_fingerprint(
            "simhash-doc-v1:aerukz4jvpg66"
        ));
        assert!(Fingerprint::looks_like_fingerprint("other-v9:abc"));
        assert!(!Fingerprint::looks_like_fingerprint("docs/a.html"));
        assert!(!Fingerprint::looks_like_fingerprint("C:\\x"));
        assert!(!Fingerprint::looks_like_fingerprint("./a:b.txt"));
    }
}

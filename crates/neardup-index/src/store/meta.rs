//! The settings codec, written once: [`Meta`] (a scheme and an index kind with its layout) ⇄ a map of strings.
//!
//! Backends persist only the map ([`Settings`]); what its keys mean, and whether a combination is valid,
//! is decided here, so a new backend cannot read an index differently from the others. The keys:
//!
//! | key | kind | value |
//! |---|---|---|
//! | `scheme` | both | the scheme of every entry (`simhash-doc-v1`, a MinHash scheme with its parameters) |
//! | `kind` | both | `hamming` or `lsh` (absent in indexes made before LSH existed: `hamming`) |
//! | `k`, `levels` | hamming | the table design: k, and the blocks per level, comma-separated |
//! | `threshold` | lsh | the estimated Jaccard similarity the banding was chosen for, 0 to 1 |
//! | `values`, `bands`, `rows`, `wide` | lsh | the banding (see [`Banding`]) |
//!
//! Keys the codec does not know are ignored, so a later version may add some. Every error names the setting.

use crate::hamming::plan::Design;
use crate::lsh::Banding;
use std::collections::BTreeMap;

/// A store's settings: key → value.
pub type Settings = BTreeMap<String, String>;

/// An index's settings, fixed at creation.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The scheme of every entry; others are refused by the callers.
    pub scheme: String,
    /// What kind of index, with its layout.
    pub kind: Kind,
}

/// The kind of an index and its layout.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Permuted tables over 64-bit fingerprints (its k is the largest distance queries can ask for).
    Hamming(Design),
    /// LSH bands over MinHash signatures, and the estimated Jaccard similarity matches must reach.
    Lsh {
        /// The bands.
        banding: Banding,
        /// The similarity threshold the banding was chosen for.
        threshold: f64,
    },
}

impl Kind {
    /// `hamming` or `lsh`.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Hamming(_) => "hamming",
            Kind::Lsh { .. } => "lsh",
        }
    }
}

/// Settings that do not make a [`Meta`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    /// A setting the kind needs is absent.
    #[error("the setting '{0}' is missing")]
    Missing(String),
    /// A setting's value is not valid.
    #[error("the setting '{key}' = '{value}' is invalid: {reason}")]
    Invalid {
        /// The setting.
        key: String,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
}

impl Meta {
    /// The settings that store this meta.
    pub fn to_settings(&self) -> Settings {
        let mut s = Settings::new();
        let mut set = |k: &str, v: String| s.insert(k.to_owned(), v);
        set("scheme", self.scheme.clone());
        set("kind", self.kind.name().to_owned());
        match &self.kind {
            Kind::Hamming(design) => {
                let levels: Vec<String> = design.levels.iter().map(|b| b.to_string()).collect();
                set("k", design.k.to_string());
                set("levels", levels.join(","));
            }
            Kind::Lsh { banding, threshold } => {
                set("threshold", threshold.to_string());
                set("values", banding.values.to_string());
                set("bands", banding.bands.to_string());
                set("rows", banding.rows.to_string());
                set("wide", banding.wide.to_string());
            }
        }
        s
    }

    /// Reads and validates settings.
    pub fn from_settings(settings: &Settings) -> Result<Meta, MetaError> {
        let get = |key: &str| -> Result<&str, MetaError> {
            settings
                .get(key)
                .map(String::as_str)
                .ok_or_else(|| MetaError::Missing(key.to_owned()))
        };
        let invalid = |key: &str, reason: &str| MetaError::Invalid {
            key: key.to_owned(),
            value: settings.get(key).cloned().unwrap_or_default(),
            reason: reason.to_owned(),
        };
        let number = |key: &str| -> Result<u32, MetaError> {
            get(key)?
                .parse()
                .map_err(|_| invalid(key, "not a whole number"))
        };
        let scheme = get("scheme")?.to_owned();
        // Indexes made before LSH existed have no kind: they are Hamming indexes.
        let kind = match settings.get("kind").map_or("hamming", String::as_str) {
            "hamming" => {
                let levels: Vec<u32> = get("levels")?
                    .split(',')
                    .map(|b| b.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|_| invalid("levels", "not a comma-separated list of block counts"))?;
                let k = number("k")?;
                Kind::Hamming(Design::new(k, levels).ok_or_else(|| {
                    invalid("levels", &format!("not a valid table design for k = {k}"))
                })?)
            }
            "lsh" => {
                let (values, bands, rows, wide) = (
                    number("values")?,
                    number("bands")?,
                    number("rows")?,
                    number("wide")?,
                );
                if values == 0 {
                    return Err(invalid("values", "a signature needs at least one value"));
                }
                if bands == 0 {
                    return Err(invalid("bands", "at least one band is needed"));
                }
                if rows == 0 {
                    return Err(invalid("rows", "a band needs at least one row"));
                }
                if wide >= bands {
                    return Err(invalid("wide", "must be fewer than the bands"));
                }
                if u64::from(bands) * u64::from(rows) + u64::from(wide) > u64::from(values) {
                    return Err(invalid(
                        "bands",
                        &format!(
                            "{bands} bands of {rows} rows (+{wide}) need more than {values} values"
                        ),
                    ));
                }
                let threshold: f64 = get("threshold")?
                    .parse()
                    .map_err(|_| invalid("threshold", "not a number"))?;
                if !(0.0..=1.0).contains(&threshold) {
                    return Err(invalid("threshold", "not between 0 and 1"));
                }
                Kind::Lsh {
                    banding: Banding {
                        values,
                        bands,
                        rows,
                        wide,
                    },
                    threshold,
                }
            }
            _ => return Err(invalid("kind", "unknown index kind (hamming or lsh)")),
        };
        Ok(Meta { scheme, kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsh() -> Meta {
        Meta {
            scheme: "minhash-v1:k=128".into(),
            kind: Kind::Lsh {
                banding: Banding::even(4, 8).unwrap(),
                threshold: 0.8,
            },
        }
    }

    #[test]
    fn round_trips_both_kinds() {
        let hamming = Meta {
            scheme: "simhash-doc-v1".into(),
            kind: Kind::Hamming(Design::new(3, vec![4, 4]).unwrap()),
        };
        for meta in [hamming, lsh()] {
            assert_eq!(Meta::from_settings(&meta.to_settings()).unwrap(), meta);
        }
    }

    #[test]
    fn a_missing_kind_is_hamming_and_unknown_keys_are_ignored() {
        let mut s = Settings::new();
        for (k, v) in [("scheme", "simhash-doc-v1"), ("k", "3"), ("levels", "6")] {
            s.insert(k.into(), v.into());
        }
        s.insert("from-the-future".into(), "x".into());
        let meta = Meta::from_settings(&s).unwrap();
        assert_eq!(meta.kind, Kind::Hamming(Design::new(3, vec![6]).unwrap()));
    }

    #[test]
    fn errors_name_the_setting() {
        let cases: [(&str, &str, &str); 7] = [
            ("kind", "btree", "'kind'"),
            ("bands", "40", "'bands'"),
            ("rows", "0", "'rows'"),
            ("wide", "4", "'wide'"),
            ("threshold", "1.5", "'threshold'"),
            ("values", "many", "'values'"),
            ("scheme", "", ""),
        ];
        for (key, value, named) in cases {
            let mut s = lsh().to_settings();
            if key == "scheme" {
                s.remove("scheme");
            } else {
                s.insert(key.into(), value.into());
            }
            let err = Meta::from_settings(&s).unwrap_err().to_string();
            let named = if named.is_empty() { "'scheme'" } else { named };
            assert!(err.contains(named), "{key}={value}: {err}");
        }
        let mut s = Meta {
            scheme: "simhash-doc-v1".into(),
            kind: Kind::Hamming(Design::new(3, vec![6]).unwrap()),
        }
        .to_settings();
        s.insert("levels".into(), "6,x".into());
        assert!(
            Meta::from_settings(&s)
                .unwrap_err()
                .to_string()
                .contains("'levels'")
        );
        s.insert("levels".into(), "2".into()); // 2 blocks cannot hold k = 3
        assert!(
            Meta::from_settings(&s)
                .unwrap_err()
                .to_string()
                .contains("'levels'")
        );
    }
}

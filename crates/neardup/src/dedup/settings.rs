//! A run's settings as a user gives them, checked against the run's method in one place: which settings
//! apply to SimHash and which to MinHash, and what a SimHash run verifies. Every front door (the command's
//! flags, Python's and Spark's keyword arguments) fills a [`Settings`] and calls [`Settings::options`], so
//! the same settings mean the same run everywhere and are refused for the same reasons; a [`SettingsError`]
//! is worded in each front door's own spelling of the settings ([`Spelling`]).

use super::{Clustering, Options, Representative, SimHashCheck, Verification};
use crate::Method;

/// The settings of a run, each `None` where the user gave none (its default then depends on the method).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// SimHash: the largest Hamming distance of a pair (default 3).
    pub k: Option<u32>,
    /// MinHash: the similarity a pair must reach (default 0.8); SimHash with [`Verification::Exact`]: the
    /// similarity the exact measure must reach besides the distance.
    pub threshold: Option<f64>,
    /// How candidates are checked (default: exactly for MinHash; by the distance alone for SimHash).
    pub verify: Option<Verification>,
    /// SimHash with [`Verification::Exact`]: the exact measure (default Jaccard).
    pub measure: Option<ExactMeasure>,
    /// SimHash with the Jaccard measure: its word n-grams (default 3).
    pub verify_ngram: Option<u32>,
    /// MinHash: the weights of false positives and negatives for choosing the bands.
    pub weights: Option<(f64, f64)>,
    /// Centres (safe) or connected components.
    pub clustering: Clustering,
    /// Which member is kept.
    pub representative: Representative,
    /// Clusters larger than this are named in the run's warnings.
    pub large_cluster: usize,
}

impl Default for Settings {
    fn default() -> Self {
        let options = Options::default();
        Settings {
            k: None,
            threshold: None,
            verify: None,
            measure: None,
            verify_ngram: None,
            weights: None,
            clustering: options.clustering,
            representative: options.representative,
            large_cluster: options.large_cluster,
        }
    }
}

/// The exact measures a SimHash pair within k bits can be checked by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExactMeasure {
    /// The Jaccard similarity of the documents' word n-grams ([`Settings::verify_ngram`]).
    Jaccard,
    /// The cosine of their term-frequency vectors.
    Cosine,
}

/// The word n-grams of [`ExactMeasure::Jaccard`] unless told otherwise.
const DEFAULT_VERIFY_NGRAM: u32 = 3;

/// A setting that does not apply to the run's method, or a combination that means nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsError {
    /// [`Settings::weights`] for a SimHash scheme.
    WeightsForSimHash {
        /// The scheme.
        scheme: String,
    },
    /// [`Verification::Estimate`] for a SimHash scheme.
    EstimateForSimHash {
        /// The scheme.
        scheme: String,
    },
    /// A threshold, measure or n-gram size for a SimHash scheme without [`Verification::Exact`], which alone
    /// checks its pairs by an exact measure.
    CheckWithoutExact {
        /// The scheme.
        scheme: String,
        /// Which of the three were given: the threshold, the measure, the n-gram size.
        given: [bool; 3],
    },
    /// An n-gram size with the cosine, which has none.
    NgramOfCosine,
    /// An n-gram size of 0.
    NoNgram,
    /// `k` for a method other than SimHash.
    KForMinHash {
        /// The method.
        method: String,
    },
    /// A measure or n-gram size for a method other than SimHash, whose pairs are verified by its scheme's
    /// own measure.
    MeasureForMinHash {
        /// The method.
        method: String,
    },
    /// A threshold for a SimHash verdict, which is a distance in bits (`neardup explain`).
    ThresholdForSimHash,
    /// A `k` past [`MAX_K`](crate::schemes::MAX_K).
    KOutOfRange {
        /// The `k` given.
        k: u32,
    },
}

/// How a front door names the settings in its messages: `--verify exact` on the command line,
/// `verify="exact"` in Python.
#[derive(Clone, Copy, Debug)]
pub struct Spelling {
    /// [`Settings::k`].
    pub k: &'static str,
    /// [`Settings::threshold`].
    pub threshold: &'static str,
    /// [`Settings::verify`] set to [`Verification::Exact`].
    pub verify_exact: &'static str,
    /// [`Settings::verify`] set to [`Verification::Estimate`].
    pub verify_estimate: &'static str,
    /// [`Settings::measure`].
    pub measure: &'static str,
    /// [`Settings::measure`] set to [`ExactMeasure::Jaccard`].
    pub measure_jaccard: &'static str,
    /// [`Settings::verify_ngram`].
    pub verify_ngram: &'static str,
    /// [`Settings::weights`].
    pub weights: &'static str,
    /// How to ask for a MinHash scheme instead.
    pub minhash_scheme: &'static str,
    /// How to ask for a SimHash scheme instead.
    pub simhash_scheme: &'static str,
}

impl Spelling {
    /// Python's keyword arguments (and the names of [`Settings`]' fields).
    pub const ARGUMENTS: Spelling = Spelling {
        k: "k",
        threshold: "threshold",
        verify_exact: "verify=\"exact\"",
        verify_estimate: "verify=\"estimate\"",
        measure: "measure",
        measure_jaccard: "measure=\"jaccard\"",
        verify_ngram: "verify_ngram",
        weights: "weights",
        minhash_scheme: "pass scheme=\"minhash\"",
        simhash_scheme: "pass scheme=\"simhash\"",
    };

    /// The command line's flags.
    pub const FLAGS: Spelling = Spelling {
        k: "-k/--k",
        threshold: "--threshold",
        verify_exact: "--verify exact",
        verify_estimate: "--verify estimate",
        measure: "--measure",
        measure_jaccard: "--measure jaccard",
        verify_ngram: "--verify-ngram",
        weights: "--weights",
        minhash_scheme: "add --scheme minhash",
        simhash_scheme: "add --scheme simhash",
    };
}

impl SettingsError {
    /// The message, naming the settings as `spelling` does.
    pub fn message(&self, spelling: &Spelling) -> String {
        let s = spelling;
        match self {
            SettingsError::WeightsForSimHash { scheme } => format!(
                "{} applies to MinHash schemes, not {scheme} ({})",
                s.weights, s.minhash_scheme
            ),
            SettingsError::EstimateForSimHash { scheme } => format!(
                "{} applies to MinHash schemes, not {scheme}: its pairs are within k bits, checked by an \
                 exact measure with {}",
                s.verify_estimate, s.verify_exact
            ),
            SettingsError::CheckWithoutExact { scheme, given } => {
                let names: Vec<&str> = [s.threshold, s.measure, s.verify_ngram]
                    .into_iter()
                    .zip(given)
                    .filter_map(|(name, given)| given.then_some(name))
                    .collect();
                let (named, verb) = match names.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        (format!("{} and {last}", rest.join(", ")), "apply")
                    }
                    _ => (names.concat(), "applies"),
                };
                format!(
                    "{named} {verb} to {scheme} only with {}, which checks the pairs within k bits by an \
                     exact measure",
                    s.verify_exact
                )
            }
            SettingsError::NgramOfCosine => format!(
                "{} sets the n-grams of {}, not of the cosine",
                s.verify_ngram, s.measure_jaccard
            ),
            SettingsError::NoNgram => format!("{} must be at least 1", s.verify_ngram),
            SettingsError::KForMinHash { method } => format!(
                "{} is a Hamming distance for SimHash; {method} documents are matched at a {} (or {})",
                s.k, s.threshold, s.simhash_scheme
            ),
            SettingsError::ThresholdForSimHash => format!(
                "{} applies to MinHash schemes; SimHash near-duplicates are within k bits",
                s.threshold
            ),
            SettingsError::KOutOfRange { k } => format!(
                "{} = {k} is out of range (0 to {})",
                s.k,
                crate::schemes::MAX_K
            ),
            SettingsError::MeasureForMinHash { method } => format!(
                "{} and {} choose how SimHash pairs are checked; {method} pairs are verified by the \
                 scheme's own measure",
                s.measure, s.verify_ngram
            ),
        }
    }
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(&Spelling::ARGUMENTS))
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The engine's options for a run of `method`: MinHash verifies exactly unless told otherwise and takes
    /// no `k`, measure or n-gram size; SimHash pairs are within `k` bits, and with [`Verification::Exact`]
    /// must also reach the threshold by an exact measure (Jaccard of word 3-grams unless told otherwise),
    /// the only way a threshold applies to them. Ranges (`k` up to 7, a threshold in 0..=1) are the
    /// engine's to check, when the run is made.
    pub fn options(&self, method: Method) -> Result<Options, SettingsError> {
        let mut simhash_check = None;
        let verification = match method {
            Method::SimHash(scheme) => {
                let scheme = scheme.to_string();
                if self.weights.is_some() {
                    return Err(SettingsError::WeightsForSimHash { scheme });
                }
                match self.verify.unwrap_or(Verification::None) {
                    Verification::Estimate => {
                        return Err(SettingsError::EstimateForSimHash { scheme });
                    }
                    Verification::Exact => {
                        simhash_check = Some(match self.measure.unwrap_or(ExactMeasure::Jaccard) {
                            ExactMeasure::Jaccard => {
                                match self.verify_ngram.unwrap_or(DEFAULT_VERIFY_NGRAM) {
                                    0 => return Err(SettingsError::NoNgram),
                                    n => SimHashCheck::Jaccard(n),
                                }
                            }
                            ExactMeasure::Cosine if self.verify_ngram.is_some() => {
                                return Err(SettingsError::NgramOfCosine);
                            }
                            ExactMeasure::Cosine => SimHashCheck::Cosine,
                        });
                        Verification::Exact
                    }
                    // The distance alone decides: no profiles to keep.
                    Verification::None => {
                        let given = [
                            self.threshold.is_some(),
                            self.measure.is_some(),
                            self.verify_ngram.is_some(),
                        ];
                        if given.contains(&true) {
                            return Err(SettingsError::CheckWithoutExact { scheme, given });
                        }
                        Verification::None
                    }
                }
            }
            _ => {
                let method = method.to_string();
                if self.k.is_some() {
                    return Err(SettingsError::KForMinHash { method });
                }
                if self.measure.is_some() || self.verify_ngram.is_some() {
                    return Err(SettingsError::MeasureForMinHash { method });
                }
                self.verify.unwrap_or(Verification::Exact)
            }
        };
        Ok(Options {
            k: self.k.unwrap_or(Options::default().k),
            threshold: self.threshold,
            banding: None,
            weights: self.weights,
            verification,
            simhash_check,
            clustering: self.clustering,
            representative: self.representative,
            large_cluster: self.large_cluster,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MinHashScheme, Scheme};

    const SIMHASH: Method = Method::SimHash(Scheme::SimhashDocV1);

    fn minhash() -> Method {
        Method::MinHash(MinHashScheme::default_oph())
    }

    #[test]
    fn defaults_depend_on_the_method() {
        let simhash = Settings::default().options(SIMHASH).unwrap();
        assert_eq!((simhash.k, simhash.verification), (3, Verification::None));
        assert_eq!(simhash.simhash_check, None);
        let minhash = Settings::default().options(minhash()).unwrap();
        assert_eq!(minhash.verification, Verification::Exact);
        assert_eq!(minhash.threshold, None);
    }

    #[test]
    fn simhash_checks_exactly_only_when_asked() {
        let exact = Settings {
            verify: Some(Verification::Exact),
            threshold: Some(0.9),
            ..Settings::default()
        };
        let options = exact.options(SIMHASH).unwrap();
        assert_eq!(options.simhash_check, Some(SimHashCheck::Jaccard(3)));
        assert_eq!(options.threshold, Some(0.9));
        let cosine = Settings {
            measure: Some(ExactMeasure::Cosine),
            ..exact.clone()
        };
        assert_eq!(
            cosine.options(SIMHASH).unwrap().simhash_check,
            Some(SimHashCheck::Cosine)
        );
        let five = Settings {
            verify_ngram: Some(5),
            ..exact.clone()
        };
        assert_eq!(
            five.options(SIMHASH).unwrap().simhash_check,
            Some(SimHashCheck::Jaccard(5))
        );
        for refused in [
            Settings {
                verify_ngram: Some(2),
                ..cosine
            },
            Settings {
                verify_ngram: Some(0),
                ..exact
            },
        ] {
            assert!(refused.options(SIMHASH).is_err());
        }
    }

    #[test]
    fn settings_of_the_other_method_are_refused_in_each_spelling() {
        let check = |settings: Settings, method: Method, flags: &str, arguments: &str| {
            let error = settings.options(method).unwrap_err();
            assert!(error.message(&Spelling::FLAGS).contains(flags), "{error:?}");
            assert!(error.to_string().contains(arguments), "{error}");
        };
        let threshold = Settings {
            threshold: Some(0.9),
            ..Settings::default()
        };
        check(
            threshold.clone(),
            SIMHASH,
            "--threshold applies to simhash-doc-v1 only with --verify exact",
            "threshold applies to simhash-doc-v1 only with verify=\"exact\"",
        );
        let measure_too = Settings {
            measure: Some(ExactMeasure::Cosine),
            verify: Some(Verification::None),
            ..threshold.clone()
        };
        check(
            measure_too,
            SIMHASH,
            "--threshold and --measure apply to simhash-doc-v1 only with --verify exact",
            "threshold and measure apply",
        );
        let all = Settings {
            measure: Some(ExactMeasure::Cosine),
            verify_ngram: Some(2),
            ..threshold
        };
        check(
            all,
            SIMHASH,
            "--threshold, --measure and --verify-ngram apply",
            "threshold, measure and verify_ngram apply",
        );
        let estimate = Settings {
            verify: Some(Verification::Estimate),
            ..Settings::default()
        };
        check(
            estimate,
            SIMHASH,
            "--verify estimate applies to MinHash schemes",
            "verify=\"estimate\" applies to MinHash schemes",
        );
        let weights = Settings {
            weights: Some((0.5, 0.5)),
            ..Settings::default()
        };
        check(
            weights,
            SIMHASH,
            "(add --scheme minhash)",
            "weights applies",
        );
        let k = Settings {
            k: Some(3),
            ..Settings::default()
        };
        check(
            k,
            minhash(),
            "-k/--k is a Hamming distance for SimHash",
            "(or pass scheme=\"simhash\")",
        );
        let measure = Settings {
            measure: Some(ExactMeasure::Jaccard),
            ..Settings::default()
        };
        check(
            measure,
            minhash(),
            "--measure and --verify-ngram choose",
            "measure and verify_ngram choose how SimHash pairs are checked",
        );
    }

    #[test]
    fn a_verdict_is_judged_at_k_or_at_a_threshold() {
        use crate::explain::Options as Explain;
        assert_eq!(Explain::judged(SIMHASH, None, None).unwrap().k, 3);
        assert_eq!(Explain::judged(SIMHASH, Some(7), None).unwrap().k, 7);
        let minhash_at = Explain::judged(minhash(), None, Some(0.6)).unwrap();
        assert_eq!(minhash_at.threshold, 0.6);
        let refused = |k, threshold, method| Explain::judged(method, k, threshold).unwrap_err();
        assert_eq!(
            refused(Some(8), None, SIMHASH).message(&Spelling::FLAGS),
            "-k/--k = 8 is out of range (0 to 7)"
        );
        assert!(
            refused(None, Some(0.5), SIMHASH)
                .to_string()
                .starts_with("threshold applies to MinHash schemes")
        );
        assert!(matches!(
            refused(Some(3), None, minhash()),
            SettingsError::KForMinHash { .. }
        ));
    }
}

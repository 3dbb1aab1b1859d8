//! The scheme registry: every scheme this version sketches documents with, by its canonical name and its
//! aliases, with its parameters (defaults and ranges), the similarity it measures and what it can do. Every
//! front door resolves a user's scheme name and parameters here, so `minhash` means the same everywhere.
//!
//! The canonical names are the schemes' own (their string codecs in `neardup-sketch` and [`crate::Scheme`]
//! parse them); the registry adds the aliases and the facts a front door needs.
//!
//! ```
//! use neardup::schemes::{self, Family, Params};
//! let info = schemes::lookup("MinHash")?;
//! assert_eq!(info.name, "minhash-oph-v1");
//! assert_eq!(info.family, Family::MinHash);
//! let method = info.method(&Params { num_perm: Some(64), ..Params::default() })?;
//! assert_eq!(method.name(), "minhash-oph-v1(k=64,seed=0,f=w5)");
//! # Ok::<(), neardup::Error>(())
//! ```

use crate::error::Error;
use crate::minhash::MinHashScheme;
use crate::profile::Measure;
use crate::scheme::Scheme;
use crate::sketch::Method;
use neardup_sketch::shingle::Features;
use neardup_sketch::signature::{Scheme as SketchScheme, SketchParams};

/// What kind of sketch a scheme makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// A 64-bit SimHash fingerprint: near-duplicates are within k bits.
    SimHash,
    /// A MinHash-family signature of K values: near-duplicates reach a similarity threshold.
    MinHash,
    /// A bottom-k sample of shingles: compared pair by pair (resemblance and containment).
    BottomK,
}

/// One scheme's entry.
#[derive(Clone, Copy, Debug)]
pub struct SchemeInfo {
    /// The canonical, versioned name (the prefix of its sketch strings).
    pub name: &'static str,
    /// Other names users may give.
    pub aliases: &'static [&'static str],
    /// What it makes.
    pub family: Family,
    /// The similarity it measures (exactly, when candidates are verified).
    pub measure: Measure,
    /// Whether a persistent index can hold it.
    pub indexable: bool,
    /// SimHash: the largest distance an index or a run may ask for.
    pub max_k: Option<u32>,
    /// MinHash: the default seed (datasketch's default is 1).
    pub default_seed: u64,
    /// MinHash: the largest seed.
    pub max_seed: u64,
    /// One line for help texts.
    pub about: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    SimHash(Scheme),
    Sketch(SketchScheme),
}

const fn minhash(
    scheme: SketchScheme,
    aliases: &'static [&'static str],
    measure: Measure,
    default_seed: u64,
    max_seed: u64,
    about: &'static str,
) -> SchemeInfo {
    SchemeInfo {
        name: scheme.name(),
        aliases,
        family: Family::MinHash,
        measure,
        indexable: true,
        max_k: None,
        default_seed,
        max_seed,
        about,
        kind: Kind::Sketch(scheme),
    }
}

/// Every scheme, the default first.
pub const REGISTRY: &[SchemeInfo] = &[
    SchemeInfo {
        name: Scheme::SimhashDocV1.name(),
        aliases: &["simhash"],
        family: Family::SimHash,
        measure: Measure::Hamming,
        indexable: true,
        max_k: Some(MAX_K),
        default_seed: 0,
        max_seed: 0,
        about: "64-bit SimHash of the document's words (docs/spec/simhash-doc-v1.md)",
        kind: Kind::SimHash(Scheme::SimhashDocV1),
    },
    minhash(
        SketchScheme::MinHashOph,
        &["minhash"],
        Measure::Jaccard,
        0,
        u64::MAX,
        "fast MinHash of word n-grams (one permutation hashing)",
    ),
    minhash(
        SketchScheme::DatasketchAffine32,
        &["datasketch"],
        Measure::Jaccard,
        1,
        u32::MAX as u64,
        "bit-exact with datasketch.MinHash (2.0)",
    ),
    minhash(
        SketchScheme::DatasketchLegacy,
        &[],
        Measure::Jaccard,
        1,
        u32::MAX as u64,
        "bit-exact with datasketch.MinHash before 2.0",
    ),
    minhash(
        SketchScheme::WeightedJaccard,
        &["wminhash"],
        Measure::WeightedJaccard,
        0,
        u64::MAX,
        "weighted Jaccard of shingle counts",
    ),
    minhash(
        SketchScheme::ProbabilityJaccard,
        &["pminhash"],
        Measure::ProbabilityJaccard,
        0,
        u64::MAX,
        "probability Jaccard of shingle counts",
    ),
    SchemeInfo {
        name: SketchScheme::BottomK.name(),
        aliases: &["bottomk"],
        family: Family::BottomK,
        measure: Measure::Jaccard,
        indexable: false,
        max_k: None,
        default_seed: 0,
        max_seed: u64::MAX,
        about: "a sample of shingles, for resemblance and containment (compare only)",
        kind: Kind::Sketch(SketchScheme::BottomK),
    },
];

/// The defaults of the MinHash parameters: K = 128 values, word 5-grams.
pub const DEFAULT_NUM_PERM: u32 = 128;

/// The most values a signature (or a bottom-k sample) may have here: a bound on the work and memory one
/// document and one index may cost, far above any use (datasketch's examples use 128 to 512). Not a rule of
/// the schemes: another implementation may sketch with more.
pub const MAX_NUM_PERM: u32 = 8_192;

/// The longest shingle (word or character n-gram) accepted here, for the same reason: a shingle of n words
/// keeps n hashes in a window.
pub const MAX_SHINGLE: u32 = 1_024;
/// The default word n-gram length.
pub const DEFAULT_SHINGLE: u32 = 5;

/// A scheme's parameters as a user gives them; `None` takes the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// MinHash: values per signature (K), or the k of a bottom-k sample.
    pub num_perm: Option<u32>,
    /// MinHash: the permutations' seed.
    pub seed: Option<u64>,
    /// MinHash: word n-gram length.
    pub shingle: Option<u32>,
    /// MinHash: character n-gram length (instead of words).
    pub char_shingle: Option<u32>,
}

impl Params {
    /// The names of the parameters that are set.
    pub fn given(&self) -> Vec<&'static str> {
        [
            self.num_perm.map(|_| "num_perm"),
            self.seed.map(|_| "seed"),
            self.shingle.map(|_| "shingle"),
            self.char_shingle.map(|_| "char_shingle"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The largest SimHash distance a run or an index may ask for (the registry's `max_k`): k bits of 64, with
/// similarity 1 − k/64 below 0.89 no longer a near-duplicate.
pub const MAX_K: u32 = 7;

/// Refuses a SimHash distance above [`MAX_K`].
pub(crate) fn check_k(k: u32) -> Result<(), Error> {
    if k > MAX_K {
        return Err(Error::Unsupported {
            what: format!(
                "k = {k} is out of range (0 to {MAX_K}); similarity 1 - k/64 below 0.89 is not a near-duplicate"
            ),
        });
    }
    Ok(())
}

/// Why a bottom-k method cannot be `done` ("deduplicated", "indexed"): its samples are compared pair by pair.
pub(crate) fn pair_by_pair(params: &SketchParams, done: &str) -> Error {
    Error::Unsupported {
        what: format!(
            "{params} samples are compared pair by pair, not {done}: use a SimHash or MinHash scheme"
        ),
    }
}

/// The scheme with this canonical name or alias (any case).
pub fn lookup(name: &str) -> Result<&'static SchemeInfo, Error> {
    REGISTRY
        .iter()
        .find(|s| {
            s.name.eq_ignore_ascii_case(name)
                || s.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        })
        .ok_or_else(|| Error::UnknownScheme {
            name: name.to_owned(),
            known: known(),
        })
}

/// The method a scheme's name and parameters make: a name or alias (any case) with `params`, or a method's
/// full name as [`Method::name`] prints it (`minhash-oph-v1(k=128,seed=0,f=w5)`, what a sketch or an index
/// reports as its scheme), which names its parameters itself and so takes none besides.
pub fn method_named(name: &str, params: &Params) -> Result<Method, Error> {
    if !name.contains('(') {
        return lookup(name)?.method(params);
    }
    if let Some(param) = params.given().first() {
        return Err(Error::Unsupported {
            what: format!(
                "{param} with {name}, which names its parameters: give {param} with the scheme's bare name"
            ),
        });
    }
    name.parse()
}

/// Every scheme's name with its aliases: `simhash-doc-v1 (simhash), minhash-oph-v1 (minhash), …`.
pub fn known() -> String {
    REGISTRY
        .iter()
        .map(|s| match s.aliases {
            [] => s.name.to_owned(),
            aliases => format!("{} ({})", s.name, aliases.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl SchemeInfo {
    /// The method for these parameters; refuses parameters the scheme does not take and values out of range.
    pub fn method(&self, params: &Params) -> Result<Method, Error> {
        self.method_with_defaults(params, DEFAULT_NUM_PERM, DEFAULT_SHINGLE)
    }

    /// [`SchemeInfo::method`] with other defaults for K and the word n-gram (a preset's).
    pub fn method_with_defaults(
        &self,
        params: &Params,
        num_perm: u32,
        shingle: u32,
    ) -> Result<Method, Error> {
        match self.kind {
            Kind::SimHash(scheme) => match params.given().first() {
                Some(param) => Err(Error::Unsupported {
                    what: format!("{param} applies to MinHash schemes, not {scheme}"),
                }),
                None => Ok(Method::SimHash(scheme)),
            },
            Kind::Sketch(scheme) => {
                let seed = params.seed.unwrap_or(self.default_seed);
                if seed > self.max_seed {
                    return Err(Error::Unsupported {
                        what: format!("{}: the seed is at most {}", self.name, self.max_seed),
                    });
                }
                let features = match (params.char_shingle, params.shingle) {
                    (Some(_), Some(_)) => {
                        return Err(Error::Unsupported {
                            what: "shingles are word or character n-grams, not both".to_owned(),
                        });
                    }
                    (Some(n), None) => Features::Chars(n),
                    (None, n) => Features::Words(n.unwrap_or(shingle)),
                };
                let sketch =
                    SketchParams::new(scheme, params.num_perm.unwrap_or(num_perm), seed, features);
                if scheme == SketchScheme::BottomK {
                    Ok(Method::BottomK(crate::minhash::check_bottom_k(sketch)?))
                } else {
                    Ok(Method::MinHash(MinHashScheme::new(sketch)?))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_resolve_to_their_schemes() {
        for info in REGISTRY {
            assert_eq!(lookup(info.name).unwrap().name, info.name);
            for alias in info.aliases {
                assert_eq!(lookup(&alias.to_uppercase()).unwrap().name, info.name);
            }
            let method = info.method(&Params::default()).unwrap();
            assert_eq!(method.measure(), info.measure, "{}", info.name);
            assert!(method.name().starts_with(info.name));
        }
        let unknown = lookup("nohash").unwrap_err().to_string();
        assert!(unknown.contains("minhash-oph-v1 (minhash)"), "{unknown}");
    }

    #[test]
    fn parameters_are_checked() {
        let simhash = lookup("simhash").unwrap();
        let with_k = Params {
            num_perm: Some(64),
            ..Params::default()
        };
        assert!(simhash.method(&with_k).is_err());
        let datasketch = lookup("datasketch").unwrap();
        let method = datasketch.method(&Params::default()).unwrap();
        assert_eq!(
            method.name(),
            "minhash-datasketch-affine32(k=128,seed=1,f=w5)"
        );
        let big_seed = Params {
            seed: Some(1 << 33),
            ..Params::default()
        };
        assert!(datasketch.method(&big_seed).is_err());
        assert!(lookup("minhash").unwrap().method(&big_seed).is_ok());
    }

    #[test]
    fn a_methods_full_name_makes_the_same_method() {
        let params = Params {
            num_perm: Some(64),
            shingle: Some(3),
            ..Params::default()
        };
        for info in REGISTRY {
            let Ok(method) = info
                .method(&params)
                .or_else(|_| info.method(&Params::default()))
            else {
                continue;
            };
            assert_eq!(
                method_named(&method.name(), &Params::default()).unwrap(),
                method
            );
        }
        let refused = method_named("minhash-oph-v1(k=128,seed=0,f=w5)", &params)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("num_perm with minhash-oph-v1(k=128,seed=0,f=w5), which names"),
            "{refused}"
        );
        assert!(method_named("minhash-oph-v1(k=0,seed=0,f=w5)", &Params::default()).is_err());
    }
}

//! # neardup-sketch: token hashes and sketches
//!
//! The hashing half of neardup's pipeline (`text → tokens → features → sketch`): this crate turns features
//! into fixed-size sketches and estimates similarities from them. It knows nothing of text, media or storage:
//! callers feed it tokens (`&str`) or 64-bit feature hashes.
//!
//! | module | what | scheme names |
//! |---|---|---|
//! | [`lookup3`] | Bob Jenkins' `hashlittle2`, the token hash of `simhash-doc-v1` | |
//! | [`simhash`] | Charikar's SimHash, bit-sliced accumulator | `simhash-doc-v1` (with the facade) |
//! | [`shingle`] | pinned xxh3 token hash, word n-grams (rolling, no allocation), character n-grams | |
//! | [`oph`] | fast MinHash: one permutation hashing, empty bins filled by further rounds | `minhash-oph-v1` |
//! | [`datasketch`] | bit-exact `datasketch.MinHash` (SHA-1, NumPy's MT19937 `randint`), `LeanMinHash` bytes | `minhash-datasketch-affine32`, `minhash-datasketch-legacy` |
//! | [`weighted`] | weighted MinHash over sparse (feature, weight) streams | `wminhash-v1` (weighted Jaccard), `pminhash-v1` (probability Jaccard) |
//! | [`bottomk`] | bottom-k samples with resemblance and containment | `bottomk-v1` |
//! | [`bbit`] | b-bit compaction with the chance-corrected estimator | any K × u32 scheme with `b=` |
//! | [`signature`] | [`SketchParams`](signature::SketchParams), [`MinHashSignature`](signature::MinHashSignature), [`SketchMismatch`](signature::SketchMismatch), text form | |
//!
//! ## Design
//!
//! * **Every sketch carries its parameters** (scheme, K, seed, features, b) and refuses to be compared with a
//!   sketch made with other parameters ([`signature::SketchMismatch`]): values made by different
//!   permutations agree at random, and a number computed from them would look like a similarity.
//! * **Pinned and specified**: each scheme is defined in `docs/spec/minhash-v1.md` down to the bit, has golden
//!   vectors in `testdata/vectors/`, and an independent Python implementation reproduces them. Anything that
//!   changes an output is a new scheme name; the one dependency that could (xxh3) is pinned with `=`.
//!   Floating-point work (the weighted schemes) uses only IEEE basic operations, not the platform's `libm`.
//! * **One hash per feature** on the hot path: word shingles roll a polynomial over per-token xxh3 hashes, and
//!   `minhash-oph-v1` updates one bin per shingle. Empty bins (short documents) are filled by re-hashing
//!   rounds whose cost is bounded by about K·ln K evaluations, not by K per feature.
//! * **Estimators are tested as estimators**: every unbiasedness and variance claim is a deterministic test
//!   over thousands of seeded trials with tolerances derived from standard errors, and each test was checked
//!   to fail on a plausible bug (copying densification, a missing round check, a wrong sampling limit).
//!
//! ## From tokens to a signature
//!
//! ```
//! use neardup_sketch::oph::OphMinHasher;
//! use neardup_sketch::shingle::{DEFAULT_SHINGLE_N, Features, WordShingler};
//!
//! let mut shingler = WordShingler::new(DEFAULT_SHINGLE_N);
//! let mut hasher = OphMinHasher::new(128, 0, Features::Words(DEFAULT_SHINGLE_N as u32));
//! let sign = |text: &str, shingler: &mut WordShingler, hasher: &mut OphMinHasher| {
//!     hasher.reset();
//!     for token in text.split(' ') {
//!         if let Some(shingle) = shingler.push_token(token) {
//!             hasher.update(shingle);
//!         }
//!     }
//!     if let Some(shingle) = shingler.finish() {
//!         hasher.update(shingle); // a document shorter than n tokens is one shingle
//!     }
//!     hasher.finish() // None for a document without tokens
//! };
//! let a = sign("a b c d e f g h i j k l m n o p", &mut shingler, &mut hasher).unwrap();
//! let b = sign("a b c d e f g h i j k l m n o q", &mut shingler, &mut hasher).unwrap();
//! let values: &[u32] = a.values(); // what LSH bands hash
//! assert_eq!(values.len(), 128);
//! let estimate = a.jaccard(&b).unwrap(); // exact Jaccard of the 5-gram sets: 11/13
//! assert!((estimate - 11.0 / 13.0).abs() < 0.2);
//! assert!(a.encode().starts_with("minhash-oph-v1:k=128,seed=0,f=w5:"));
//! ```
//!
//! SimHash (for `simhash-doc-v1`):
//!
//! ```
//! use neardup_sketch::{lookup3::jenkins64, simhash::SimHash64};
//! let mut acc = SimHash64::new();
//! for token in ["hello", "world"] {
//!     acc.add(jenkins64(token.as_bytes()));
//! }
//! let fingerprint: u64 = acc.finish();
//! # let _ = fingerprint;
//! ```
//!
//! Every function here is a pure function of its input. SimHash bit order is the big-endian integer reading
//! of the hash octets (octet 0's most significant bit is the integer's bit 63).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bbit;
pub mod bottomk;
pub mod datasketch;
pub mod lookup3;
pub mod oph;
pub mod shingle;
pub mod signature;
pub mod simhash;
pub mod weighted;

pub use simhash::hamming;

#[cfg(test)]
mod test_stats;

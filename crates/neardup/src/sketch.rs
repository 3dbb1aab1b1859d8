//! One type for what a document becomes under any method: a SimHash [`Fingerprint`] or a MinHash-family
//! signature, with one text form, one similarity, and one refusal to compare across schemes.

use crate::dedup::SimHashCheck;
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::minhash::MinHashScheme;
use crate::profile::{Measure, Profile};
use crate::scheme::{Analysis, Scheme};
use neardup_sketch::bottomk::BottomKSketch;
use neardup_sketch::signature::{
    MinHashSignature, Scheme as SketchScheme, SketchParams, write_le_values,
};
use neardup_text::media::MediaHint;
use std::fmt;
use std::str::FromStr;

/// How documents are sketched and compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// A 64-bit SimHash fingerprint scheme: near-duplicates are within k bits.
    SimHash(Scheme),
    /// A MinHash-family scheme: near-duplicates have an estimated Jaccard similarity of at least a threshold.
    MinHash(MinHashScheme),
    /// A bottom-k sample of shingle hashes (`bottomk-v1`): compared pair by pair, for resemblance and for
    /// containment ("this page is part of that document"); not indexed.
    BottomK(SketchParams),
}

impl Method {
    /// Sketches a document given as bytes in any supported medium and encoding.
    ///
    /// ```
    /// use neardup::{Method, MinHashScheme, media::MediaHint};
    /// let method = Method::MinHash(MinHashScheme::default_oph());
    /// let a = method.analyze(b"<p>The quick brown fox jumps over the lazy dog</p>", MediaHint::Auto)?;
    /// let b = method.analyze(b"the QUICK brown fox jumps over the lazy dog", MediaHint::Auto)?;
    /// assert_eq!(a.sketch.similarity(&b.sketch)?, 1.0);
    /// assert!(a.sketch.to_string().starts_with("minhash-oph-v1:k=128,seed=0,f=w5:"));
    /// # Ok::<(), neardup::Error>(())
    /// ```
    pub fn analyze(&self, bytes: &[u8], hint: MediaHint<'_>) -> Result<Analysis, Error> {
        self.analyze_extracted(&neardup_text::extract(bytes, hint)?)
    }

    /// Sketches every document of a file: one for most media, one per response record of a WARC archive
    /// (`id` is `None` for the file itself, and for an error that ends a damaged archive). With
    /// `keep_profiles`, a MinHash method also returns each document's exact [`Profile`].
    pub fn analyze_documents(
        &self,
        bytes: &[u8],
        hint: MediaHint<'_>,
        keep_profiles: bool,
    ) -> Vec<DocumentAnalysis> {
        self.analyze_documents_checked(bytes, hint, keep_profiles, None)
    }

    /// [`analyze_documents`](Self::analyze_documents); with `keep_profiles` and a SimHash method, each
    /// document's profile is the one `check` verifies candidates with (`dedup --verify exact`).
    pub fn analyze_documents_checked(
        &self,
        bytes: &[u8],
        hint: MediaHint<'_>,
        keep_profiles: bool,
        check: Option<SimHashCheck>,
    ) -> Vec<DocumentAnalysis> {
        neardup_text::extract_documents(bytes, hint)
            .map(|doc| {
                let result = doc.result.map_err(Error::from).and_then(|d| {
                    let (sketch, tokens, profile) =
                        self.analyze_text_checked(&d.text, keep_profiles, check)?;
                    Ok((Analysis::of(sketch, &d, tokens), profile))
                });
                DocumentAnalysis {
                    id: doc.id,
                    bytes: doc.bytes,
                    record: doc.record,
                    result,
                }
            })
            .collect()
    }

    /// Sketches a document whose text is already extracted (with [`neardup_text::extract`]).
    pub fn analyze_extracted(&self, doc: &neardup_text::Extracted) -> Result<Analysis, Error> {
        let (sketch, tokens, _) = self.analyze_text(&doc.text, false)?;
        Ok(Analysis::of(sketch, doc, tokens))
    }

    /// Like [`analyze_extracted`](Self::analyze_extracted), also returning the document's exact [`Profile`]
    /// for a MinHash method, made in the same pass over the text (for exact verification).
    pub fn analyze_with_profile(
        &self,
        doc: &neardup_text::Extracted,
    ) -> Result<(Analysis, Option<Profile>), Error> {
        let (sketch, tokens, profile) = self.analyze_text(&doc.text, true)?;
        Ok((Analysis::of(sketch, doc, tokens), profile))
    }

    /// Sketches text as it is, with no detection or extraction (a record's text field, a Python `str`):
    /// the sketch, how many features it summarizes (as [`Analysis::tokens`]) and, with `keep_profile`, a
    /// MinHash method's exact [`Profile`], made in the same pass.
    pub fn analyze_text(
        &self,
        text: &str,
        keep_profile: bool,
    ) -> Result<(Sketch, u64, Option<Profile>), Error> {
        self.analyze_text_checked(text, keep_profile, None)
    }

    /// The sketch of text as it is (as [`analyze_text`](Self::analyze_text) makes it, with the same errors)
    /// written into `out` without allocating: a fingerprint as 8 little-endian bytes, a MinHash signature
    /// as 4 little-endian bytes per value ([`sketch_bytes`](Self::sketch_bytes) long). Returns how many
    /// features it summarizes; on an error `out` is left as it was. Bottom-k samples, which vary in length,
    /// are refused.
    pub fn sketch_text_into(&self, text: &str, out: &mut [u8]) -> Result<u64, Error> {
        neardup_text::limits::check_runs(text)?;
        match self {
            Method::SimHash(scheme) => {
                let (fingerprint, tokens) = scheme.fingerprint_text_counted(text)?;
                Sketch::Fingerprint(fingerprint).write_le_bytes(out);
                Ok(tokens)
            }
            Method::MinHash(scheme) => scheme.signature_text_into(text, out),
            Method::BottomK(_) => Err(Error::Unsupported {
                what: "bottom-k samples vary in length: they are not written into a fixed-size row"
                    .to_owned(),
            }),
        }
    }

    /// The bytes [`sketch_text_into`](Self::sketch_text_into) writes: 8 for a fingerprint, 4·K for a MinHash
    /// signature; `None` for bottom-k samples.
    pub fn sketch_bytes(&self) -> Option<usize> {
        match self {
            Method::SimHash(_) => Some(8),
            Method::MinHash(scheme) => Some(4 * scheme.values() as usize),
            Method::BottomK(_) => None,
        }
    }

    /// [`analyze_text`](Self::analyze_text); with `keep_profile` and a SimHash method, the profile is the
    /// one `check` verifies candidates with.
    pub fn analyze_text_checked(
        &self,
        text: &str,
        keep_profile: bool,
        check: Option<SimHashCheck>,
    ) -> Result<(Sketch, u64, Option<Profile>), Error> {
        neardup_text::limits::check_runs(text)?;
        match self {
            Method::SimHash(scheme) => {
                let (fingerprint, tokens) = scheme.fingerprint_text_counted(text)?;
                let profile = check.filter(|_| keep_profile).map(|c| c.profile(text));
                Ok((Sketch::Fingerprint(fingerprint), tokens, profile))
            }
            Method::MinHash(scheme) if keep_profile => {
                let (signature, profile) = scheme.signature_and_profile(text)?;
                let shingles = profile.len() as u64;
                Ok((Sketch::Signature(signature), shingles, Some(profile)))
            }
            Method::MinHash(scheme) => {
                let (signature, tokens) = scheme.signature_text(text)?;
                Ok((Sketch::Signature(signature), tokens, None))
            }
            Method::BottomK(params) => {
                let (sample, shingles) = crate::minhash::bottom_k(text, *params)?;
                Ok((Sketch::BottomK(sample), shingles, None))
            }
        }
    }

    /// Like [`sketch_text`](Self::sketch_text), also returning the exact [`Profile`] for a MinHash method.
    pub fn sketch_text_with_profile(&self, text: &str) -> Result<(Sketch, Option<Profile>), Error> {
        let (sketch, _, profile) = self.analyze_text(text, true)?;
        Ok((sketch, profile))
    }

    /// The exact measure candidates are verified with: the Hamming distance for SimHash, the Jaccard
    /// similarity of shingle sets (or its weighted or probability form, for the weighted schemes) otherwise.
    pub fn measure(&self) -> Measure {
        match self {
            Method::SimHash(_) => Measure::Hamming,
            Method::MinHash(scheme) => scheme.measure(),
            Method::BottomK(_) => Measure::Jaccard,
        }
    }

    /// Sketches text that is already extracted.
    pub fn sketch_text(&self, text: &str) -> Result<Sketch, Error> {
        match self {
            Method::SimHash(scheme) => scheme.fingerprint_text(text).map(Sketch::Fingerprint),
            Method::MinHash(scheme) => scheme.sketch_text(text),
            Method::BottomK(params) => {
                crate::minhash::bottom_k(text, *params).map(|(s, _)| Sketch::BottomK(s))
            }
        }
    }

    /// The scheme's name with its parameters, as stored in an index: `simhash-doc-v1`,
    /// `minhash-oph-v1(k=128,seed=0,f=w5)`.
    pub fn name(&self) -> String {
        match self {
            Method::SimHash(scheme) => scheme.name().to_owned(),
            Method::MinHash(scheme) => scheme.to_string(),
            Method::BottomK(params) => params.to_string(),
        }
    }
}

impl FromStr for Method {
    type Err = Error;

    /// Parses [`Method::name`]'s form: `simhash-doc-v1`, or `minhash-oph-v1(k=128,seed=0,f=w5)`.
    fn from_str(s: &str) -> Result<Self, Error> {
        if s.contains('(') {
            let params: SketchParams = s.parse()?;
            if params.scheme == SketchScheme::BottomK {
                return Ok(Method::BottomK(crate::minhash::check_bottom_k(params)?));
            }
            Ok(Method::MinHash(MinHashScheme::new(params)?))
        } else {
            Ok(Method::SimHash(s.parse()?))
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// One document of a file, sketched: see [`Method::analyze_documents`].
#[derive(Clone, Debug)]
pub struct DocumentAnalysis {
    /// Its id inside the file (a WARC record's target URI), or `None` for the file itself.
    pub id: Option<String>,
    /// Its size in bytes (the file's, or the record's payload).
    pub bytes: u64,
    /// A WARC record's id and date.
    pub record: Option<neardup_text::warc::RecordMeta>,
    /// Its analysis and (when asked) its exact profile, or why it has none.
    pub result: Result<(Analysis, Option<Profile>), Error>,
}

/// A document's sketch under some method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sketch {
    /// A SimHash fingerprint.
    Fingerprint(Fingerprint),
    /// A MinHash-family signature.
    Signature(MinHashSignature),
    /// A bottom-k sample of shingle hashes.
    BottomK(BottomKSketch),
}

impl Sketch {
    /// Writes the sketch as [`Method::sketch_text_into`] does: a fingerprint as 8 little-endian bytes, a
    /// signature as 4 little-endian bytes per value. Panics for a bottom-k sample (its length varies) or an
    /// `out` of another length.
    pub fn write_le_bytes(&self, out: &mut [u8]) {
        match self {
            Sketch::Fingerprint(f) => out.copy_from_slice(&f.bits().to_le_bytes()),
            Sketch::Signature(s) => write_le_values(s.values(), out),
            Sketch::BottomK(_) => panic!("bottom-k samples vary in length"),
        }
    }

    /// The method that made it.
    pub fn method(&self) -> Result<Method, Error> {
        match self {
            Sketch::Fingerprint(fp) => Ok(Method::SimHash(fp.scheme())),
            Sketch::Signature(sig) => MinHashScheme::new(*sig.params()).map(Method::MinHash),
            Sketch::BottomK(sample) => Ok(Method::BottomK(*sample.params())),
        }
    }

    /// The fingerprint, if this is one.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        match self {
            Sketch::Fingerprint(fp) => Some(*fp),
            _ => None,
        }
    }

    /// The signature, if this is one.
    pub fn signature(&self) -> Option<&MinHashSignature> {
        match self {
            Sketch::Signature(sig) => Some(sig),
            _ => None,
        }
    }

    /// Similarity in 0..1: 1 − d/64 for fingerprints, the estimated Jaccard similarity (resemblance) for
    /// signatures and bottom-k samples. Refuses sketches of different schemes or parameters.
    pub fn similarity(&self, other: &Sketch) -> Result<f64, Error> {
        match (self, other) {
            (Sketch::Fingerprint(a), Sketch::Fingerprint(b)) => a.similarity(b),
            (Sketch::Signature(a), Sketch::Signature(b)) => Ok(a.jaccard(b)?),
            (Sketch::BottomK(a), Sketch::BottomK(b)) => Ok(a.resemblance(b)?.value),
            _ => Err(Error::MethodMismatch {
                left: self.kind(),
                right: other.kind(),
            }),
        }
    }

    fn kind(&self) -> String {
        match self {
            Sketch::Fingerprint(fp) => fp.scheme().name().to_owned(),
            Sketch::Signature(sig) => sig.params().to_string(),
            Sketch::BottomK(sample) => sample.params().to_string(),
        }
    }
}

impl fmt::Display for Sketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sketch::Fingerprint(fp) => fp.fmt(f),
            Sketch::Signature(sig) => sig.fmt(f),
            Sketch::BottomK(sample) => sample.fmt(f),
        }
    }
}

impl FromStr for Sketch {
    type Err = Error;

    /// Parses a fingerprint (`simhash-doc-v1:…`) or a signature (`minhash-oph-v1:k=128,seed=0,f=w5:…`).
    fn from_str(s: &str) -> Result<Self, Error> {
        let scheme = s.trim().split(':').next().unwrap_or("");
        if scheme.parse::<Scheme>().is_ok() {
            Ok(Sketch::Fingerprint(s.parse()?))
        } else if SketchScheme::from_name(scheme) == Some(SketchScheme::BottomK) {
            Ok(Sketch::BottomK(s.parse()?))
        } else if SketchScheme::from_name(scheme).is_some() {
            Ok(Sketch::Signature(s.parse()?))
        } else {
            // Neither family knows the prefix: the fingerprint parser's message lists the schemes.
            Ok(Sketch::Fingerprint(s.parse()?))
        }
    }
}

impl Sketch {
    /// Whether a string looks like a sketch (a known scheme name, a colon, more), as opposed to a path.
    pub fn looks_like_sketch(s: &str) -> bool {
        Fingerprint::looks_like_fingerprint(s)
            || s.split_once(':').is_some_and(|(scheme, rest)| {
                !rest.is_empty() && neardup_sketch::signature::Scheme::from_name(scheme).is_some()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sketches_written_into_bytes_are_the_sketches() {
        let names = [
            "simhash-doc-v1",
            "minhash-oph-v1",
            "minhash-datasketch-affine32",
            "wminhash-v1",
        ];
        let texts = [
            "The cat sat on the mat, and the dog sat too.",
            "one",
            "",
            "2019 42",
        ];
        for name in names {
            let method = crate::schemes::lookup(name)
                .unwrap()
                .method(&Default::default())
                .unwrap();
            let width = method.sketch_bytes().unwrap();
            for text in texts {
                let mut out = vec![7u8; width];
                let written = method.sketch_text_into(text, &mut out);
                match method.analyze_text(text, false) {
                    Ok((Sketch::Fingerprint(f), tokens, _)) => {
                        assert_eq!(written.unwrap(), tokens);
                        assert_eq!(out, f.bits().to_le_bytes());
                    }
                    Ok((Sketch::Signature(s), tokens, _)) => {
                        assert_eq!(written.unwrap(), tokens, "{name} {text:?}");
                        let values: Vec<u32> = out
                            .chunks_exact(4)
                            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                            .collect();
                        assert_eq!(values, s.values(), "{name} {text:?}");
                    }
                    Ok((Sketch::BottomK(_), ..)) => unreachable!(),
                    Err(e) => {
                        assert_eq!(written.unwrap_err().to_string(), e.to_string());
                        assert_eq!(out, vec![7u8; width], "left as it was");
                    }
                }
            }
        }
    }

    #[test]
    fn text_forms_round_trip_and_methods_do_not_mix() {
        let simhash = Method::SimHash(Scheme::SimhashDocV1)
            .sketch_text("hello world again")
            .unwrap();
        let minhash = Method::MinHash(MinHashScheme::default_oph())
            .sketch_text("hello world again")
            .unwrap();
        for sketch in [&simhash, &minhash] {
            let parsed: Sketch = sketch.to_string().parse().unwrap();
            assert_eq!(&parsed, sketch);
            assert!(Sketch::looks_like_sketch(&sketch.to_string()));
        }
        assert!(matches!(
            simhash.similarity(&minhash),
            Err(Error::MethodMismatch { .. })
        ));
        let other = Method::MinHash(MinHashScheme::oph(128, 1, 5).unwrap())
            .sketch_text("hello world again")
            .unwrap();
        let err = minhash.similarity(&other).unwrap_err();
        assert!(err.to_string().contains("seed=1"), "{err}");
        assert!("nohash-v9:abc".parse::<Sketch>().is_err());
        for method in [
            Method::SimHash(Scheme::SimhashDocV1),
            Method::MinHash(MinHashScheme::oph(64, 3, 2).unwrap()),
        ] {
            assert_eq!(method.name().parse::<Method>().unwrap(), method);
        }
        assert!("minhash-oph-v1(k=0,seed=0,f=w5)".parse::<Method>().is_err());
        assert!(!Sketch::looks_like_sketch("docs/a.html"));
    }
}

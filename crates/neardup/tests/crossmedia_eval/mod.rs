//! Cross-media evaluation over `../shared/eval/crossmedia` (shared by the `crossmedia` test, which checks a
//! sample, and the `crossmedia` example, which prints the whole table of `docs/crossmedia.md`).
//!
//! A rendition is one file (a PDF, a text file, an EPUB, a DocBook XML page) or a folder of HTML or reST parts;
//! a folder's text is its parts' texts in part order, joined by line breaks. Every rendition is fingerprinted
//! with simhash-doc-v1 from its bytes, media detected as `neardup hash` does.

#![allow(dead_code)]

use neardup::Scheme;
use neardup::media::MediaHint;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The evaluation folder beside the repository, if it is there and unpacked.
pub fn data_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/crossmedia");
    (dir.join("groundtruth/pairs.tsv").is_file() && dir.join("files").is_dir()).then_some(dir)
}

/// Rows of a TSV file with a header, as maps from column name to value.
pub fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// One labelled pair.
#[derive(Clone, Debug)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub same_doc: bool,
    /// `html-pdf`, in the order of the ground truth.
    pub media: String,
    /// Whether both documents are in English.
    pub english: bool,
}

pub fn pairs(dir: &Path) -> Vec<Pair> {
    read_tsv(&dir.join("groundtruth/pairs.tsv"))
        .into_iter()
        .map(|r| Pair {
            english: is_english(&r["doc_a"]) && is_english(&r["doc_b"]),
            a: r["rendition_a"].clone(),
            b: r["rendition_b"].clone(),
            same_doc: r["same_doc"] == "1",
            media: format!("{}-{}", r["media_a"], r["media_b"]),
        })
        .collect()
}

/// Document ids end in a language code (`native/debian-faq/ja`) except for English-only sources (Python docs,
/// R manuals, Debian policy documents) and placeholders named by language (`debian-faq-ja`).
pub fn is_english(doc_id: &str) -> bool {
    let last = doc_id.rsplit('/').next().unwrap_or(doc_id);
    if doc_id.contains("placeholder-pdf") {
        return false;
    }
    let is_code = |s: &str| {
        let (lang, region) = s.split_once('-').unwrap_or((s, ""));
        lang.len() == 2
            && lang.chars().all(|c| c.is_ascii_lowercase())
            && (region.is_empty() || region.len() == 2)
    };
    !is_code(last) || last == "en"
}

/// The files of each rendition, in part order.
pub fn rendition_files(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let files = read_tsv(&dir.join("groundtruth/files.tsv"));
    let renditions = read_tsv(&dir.join("groundtruth/renditions.tsv"));
    let mut out = BTreeMap::new();
    for r in &renditions {
        let name = &r["rendition"];
        let mut parts: Vec<(u64, String)> = files
            .iter()
            .filter(|f| {
                if name.ends_with('/') {
                    f["file"].starts_with(name.as_str())
                } else {
                    &f["file"] == name
                }
            })
            .map(|f| (f["part"].parse().unwrap_or(0), f["file"].clone()))
            .collect();
        parts.sort();
        out.insert(name.clone(), parts.into_iter().map(|(_, f)| f).collect());
    }
    out
}

/// The fingerprint of one rendition (or why it has none), and its media as detected.
pub fn fingerprint(dir: &Path, files: &[String]) -> Result<(u64, String), String> {
    let mut text = String::new();
    let mut media = String::new();
    for f in files {
        let bytes = std::fs::read(dir.join("files").join(f)).map_err(|e| format!("{f}: {e}"))?;
        let name = f.rsplit('/').next().unwrap_or(f);
        let doc = neardup::text::extract(&bytes, MediaHint::FileName(name))
            .map_err(|e| format!("{f}: {e}"))?;
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&doc.text);
        media = doc.media.name().to_owned();
    }
    let fp = Scheme::SimhashDocV1
        .fingerprint_text(&text)
        .map_err(|e| e.to_string())?;
    Ok((fp.bits(), media))
}

/// Distances per media pair: same-document and different-document lists.
#[derive(Default, Debug)]
pub struct Distances {
    pub same: Vec<u32>,
    pub same_english: Vec<u32>,
    pub different: Vec<u32>,
    /// Pairs with a rendition that has no fingerprint.
    pub failed: usize,
}

pub fn distances(
    pairs: &[Pair],
    fps: &HashMap<String, Result<(u64, String), String>>,
) -> BTreeMap<String, Distances> {
    let mut out: BTreeMap<String, Distances> = BTreeMap::new();
    for p in pairs {
        let d = out.entry(p.media.clone()).or_default();
        match (fps.get(&p.a), fps.get(&p.b)) {
            (Some(Ok((a, _))), Some(Ok((b, _)))) => {
                let dist = (a ^ b).count_ones();
                if p.same_doc {
                    d.same.push(dist);
                    if p.english {
                        d.same_english.push(dist);
                    }
                } else {
                    d.different.push(dist);
                }
            }
            _ => d.failed += 1,
        }
    }
    out
}

pub fn within(v: &[u32], k: u32) -> usize {
    v.iter().filter(|&&d| d <= k).count()
}

pub fn quantiles(v: &[u32]) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let mut s = v.to_vec();
    s.sort();
    let q = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
    format!(
        "{}/{}/{}/{}/{}",
        s[0],
        q(0.25),
        q(0.5),
        q(0.75),
        s[s.len() - 1]
    )
}

//! The golden-vector format of a scheme (`testdata/vectors/<scheme>/*.json`).
//!
//! One JSON object per case, one field per line, each value compact: any language reads it with its JSON
//! parser, and a diff shows which field changed. Fields, in this order:
//!
//! | field | meaning |
//! |---|---|
//! | `name`, `description` | what the case covers |
//! | `input` | the input file, relative to the vector's folder; `FILE#ID` names the document `ID` of a file that holds many (a WARC record by its `WARC-Target-URI`) |
//! | `media`, `encoding`, `encoding_source` | how the input was read (`null` if extraction failed) |
//! | `text` | the extracted text (canonical white-space form) |
//! | `tokens` | the tokens in order, after normalization |
//! | `token_hashes` | each distinct token → its 64-bit lookup3 hash, 16 lowercase hex digits |
//! | `fingerprint` | the fingerprint string, or `null` |
//! | `error` | `null`, or `no-tokens` / `unsupported-media` / `binary` / `no-text-layer` / `encrypted` / `malformed` / `limit` |
//!
//! The golden-vector test renders every case again from its input and compares the text byte for byte.

use crate::{Error, Scheme};
use neardup_sketch::lookup3::jenkins64;
use neardup_text::media::MediaHint;
use neardup_text::profile::doc_v1;
use serde_json::json;
use std::collections::BTreeMap;

/// Renders the vector of one case of `simhash-doc-v1` from its input bytes. `input` is the input's path
/// relative to the vector folder; its file name is the media hint.
pub fn render_simhash_doc_v1(name: &str, description: &str, input: &str, bytes: &[u8]) -> String {
    let scheme = Scheme::SimhashDocV1;
    let (path, id) = match input.split_once('#') {
        Some((path, id)) => (path, Some(id)),
        None => (input, None),
    };
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let hint = MediaHint::FileName(file_name);
    let mut fields: Vec<(&str, serde_json::Value)> = vec![
        ("name", json!(name)),
        ("description", json!(description)),
        ("input", json!(input)),
    ];
    let extracted = match id {
        None => neardup_text::extract(bytes, hint),
        Some(id) => neardup_text::extract_documents(bytes, hint)
            .find(|d| d.id.as_deref() == Some(id))
            .map_or(Err(neardup_text::ExtractError::ManyDocuments), |d| d.result),
    };
    match extracted {
        Ok(doc) => {
            let tokens = doc_v1::tokens(&doc.text);
            let hashes: BTreeMap<&str, String> = tokens
                .iter()
                .map(|t| (t.as_str(), format!("{:016x}", jenkins64(t.as_bytes()))))
                .collect();
            let (fingerprint, error) = match scheme.fingerprint_text(&doc.text) {
                Ok(fp) => (json!(fp.to_string()), json!(null)),
                Err(Error::NoTokens { .. }) => (json!(null), json!("no-tokens")),
                Err(e) => (json!(null), json!(e.to_string())),
            };
            fields.extend([
                ("media", json!(doc.media.name())),
                ("encoding", json!(doc.encoding)),
                ("encoding_source", json!(doc.encoding_source.name())),
                ("text", json!(doc.text)),
                ("tokens", json!(tokens)),
                ("token_hashes", json!(hashes)),
                ("fingerprint", fingerprint),
                ("error", error),
            ]);
        }
        Err(e) => {
            let kind = error_kind(&e);
            for f in [
                "media",
                "encoding",
                "encoding_source",
                "text",
                "tokens",
                "token_hashes",
                "fingerprint",
            ] {
                fields.push((f, json!(null)));
            }
            fields.push(("error", json!(kind)));
        }
    }
    let mut out = String::from("{\n");
    for (i, (key, value)) in fields.iter().enumerate() {
        let sep = if i + 1 == fields.len() { "" } else { "," };
        out.push_str(&format!("  {}: {}{sep}\n", json!(key), value));
    }
    out.push_str("}\n");
    out
}

/// The `error` field of a vector whose extraction failed.
fn error_kind(e: &neardup_text::ExtractError) -> &'static str {
    use neardup_text::{
        ExtractError as E, PdfError, epub::EpubError, warc::WarcError, xml::XmlError,
    };
    match e {
        E::UnsupportedMedia(_) => "unsupported-media",
        E::Binary { .. } => "binary",
        E::Pdf(PdfError::NoTextLayer { .. }) => "no-text-layer",
        E::Pdf(PdfError::Encrypted) => "encrypted",
        E::Pdf(PdfError::Unavailable) => "unsupported-media",
        E::Pdf(PdfError::TimedOut(_))
        | E::Xml(XmlError::TooDeep { .. } | XmlError::EntityBomb { .. })
        | E::Epub(EpubError::TooLarge(_))
        | E::Warc(WarcError::TooLarge(_))
        | E::TooDeep { .. }
        | E::HtmlBudget { .. }
        | E::LongRun { .. }
        | E::TimedOut { .. } => "limit",
        E::Pdf(_) | E::Xml(_) | E::Epub(_) | E::Warc(_) => "malformed",
        E::ManyDocuments => "many-documents",
    }
}

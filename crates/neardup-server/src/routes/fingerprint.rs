//! `POST /v1/fingerprint?scheme=S&media=M`: a document's fingerprint (or signature), without any index.

use super::{analyze, body, media_hint, params};
use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use neardup::schemes::Params;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FingerprintParams {
    scheme: Option<String>,
    media: Option<String>,
    num_perm: Option<u32>,
    seed: Option<u64>,
    shingle: Option<u32>,
    char_shingle: Option<u32>,
}

/// `{"fingerprint", "scheme", "media", "tokens"}`.
pub async fn fingerprint(
    State(state): State<Arc<AppState>>,
    query: Result<Query<FingerprintParams>, QueryRejection>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let p = params(query)?;
    let bytes = body(bytes)?;
    let scheme = p
        .scheme
        .as_deref()
        .unwrap_or(neardup::schemes::REGISTRY[0].name);
    let method = neardup::schemes::lookup(scheme)?.method(&Params {
        num_perm: p.num_perm,
        seed: p.seed,
        shingle: p.shingle,
        char_shingle: p.char_shingle,
    })?;
    let hint = media_hint(p.media.as_deref(), &headers)?;
    let analysis = analyze(&state, method, bytes, hint).await?;
    Ok(axum::Json(json!({
        "fingerprint": analysis.sketch.to_string(),
        "scheme": method.name(),
        "media": analysis.media.name(),
        "tokens": analysis.tokens,
    })))
}

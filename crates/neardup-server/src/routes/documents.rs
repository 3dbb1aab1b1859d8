//! The documents of an index: add one (answering its matches first), add fingerprints in batches, look one
//! up, remove one, and query by document or fingerprint, one or a batch. Ids are any UTF-8 string, so they
//! travel in the query string (`?id=`), never as path segments.

use super::{
    IndexName, analyze, body, field, matches_json, media_hint, ndjson_lines, params, radius,
};
use crate::error::ApiError;
use crate::state::{AppState, SharedIndex};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use neardup::Sketch;
use neardup::index::{Write, Written};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentParams {
    id: Option<String>,
    media: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryParams {
    fingerprint: Option<String>,
    media: Option<String>,
    k: Option<u32>,
    threshold: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchParams {
    k: Option<u32>,
    threshold: Option<f64>,
}

fn required_id(id: Option<String>) -> Result<String, ApiError> {
    match id {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(ApiError::bad_request(
            "missing_id",
            "give the document's id as ?id=... (any string, URL-encoded)",
        )),
    }
}

/// Queues a write on the index's writer and waits until it is durable.
async fn write(index: &SharedIndex, write: Write) -> Result<Written, ApiError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    index.submit(
        write,
        Box::new(move |outcome| {
            let _ = sender.send(outcome);
        }),
    );
    receiver
        .await
        .map_err(|_| ApiError::internal("the index writer stopped before answering"))?
        .map_err(ApiError::from)
}

/// A fingerprint string of the index's method, or a 400 naming it.
fn parse_sketch(index: &SharedIndex, text: &str, line: Option<usize>) -> Result<Sketch, ApiError> {
    let at = line.map_or_else(String::new, |n| format!("line {n}: "));
    let sketch: Sketch = text.trim().parse().map_err(|e: neardup::Error| {
        ApiError::bad_request("bad_fingerprint", format!("{at}{e}"))
    })?;
    index
        .read(|i| i.check(&sketch))
        .map_err(|e| ApiError::bad_request("scheme_mismatch", format!("{at}{e}")))?;
    Ok(sketch)
}

/// `POST /v1/indexes/{name}/documents?id=ID`: the stored documents near it, then it is stored (replacing
/// the same id); durable before the answer.
pub async fn add(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    query: Result<Query<DocumentParams>, QueryRejection>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let p = params(query)?;
    let id = required_id(p.id)?;
    let bytes = body(bytes)?;
    let index = state.index(&name)?;
    let hint = media_hint(p.media.as_deref(), &headers)?;
    let analysis = analyze(&state, index.method(), bytes, hint).await?;
    let fingerprint = analysis.sketch.to_string();
    let Written::Put { matches } = write(
        &index,
        Write::Put {
            id: id.clone(),
            sketch: analysis.sketch,
            query: Some(neardup::index::Radius::Default),
        },
    )
    .await?
    else {
        return Err(ApiError::internal("the writer answered another write"));
    };
    Ok(axum::Json(json!({
        "id": id,
        "fingerprint": fingerprint,
        "media": analysis.media.name(),
        "matches": matches_json(&matches),
    })))
}

/// `GET /v1/indexes/{name}/documents?id=ID`: the stored fingerprint of an id.
pub async fn show(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    query: Result<Query<DocumentParams>, QueryRejection>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let id = required_id(params(query)?.id)?;
    let index = state.index(&name)?;
    match index.read(|i| i.get(&id)) {
        Some(sketch) => Ok(axum::Json(
            json!({"id": id, "fingerprint": sketch.to_string()}),
        )),
        None => Err(no_such_document(&name, &id)),
    }
}

fn no_such_document(index: &str, id: &str) -> ApiError {
    ApiError::not_found(
        "no_such_document",
        format!("index '{index}' has no document with id '{id}'"),
    )
}

/// `DELETE /v1/indexes/{name}/documents?id=ID`: 204, or 404 if it was not stored.
pub async fn remove(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    query: Result<Query<DocumentParams>, QueryRejection>,
) -> Result<StatusCode, ApiError> {
    let id = required_id(params(query)?.id)?;
    let index = state.index(&name)?;
    match write(&index, Write::Remove { id: id.clone() }).await? {
        Written::Removed { existed: true } => Ok(StatusCode::NO_CONTENT),
        _ => Err(no_such_document(&name, &id)),
    }
}

/// `POST /v1/indexes/{name}/fingerprints`: NDJSON lines `{"id", "fingerprint"}`, stored as one durable
/// batch (all or nothing: a bad line stores none and is named).
pub async fn add_fingerprints(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let bytes = body(bytes)?;
    let index = state.index(&name)?;
    let lines = ndjson_lines(&bytes, state.limits.max_batch)?;
    let mut entries = Vec::with_capacity(lines.len());
    for (n, value) in &lines {
        let id = field(*n, value, "id")?;
        if id.is_empty() {
            return Err(ApiError::bad_request(
                "bad_line",
                format!("line {n}: the id is empty"),
            ));
        }
        let sketch = parse_sketch(&index, field(*n, value, "fingerprint")?, Some(*n))?;
        entries.push((id.to_owned(), sketch));
    }
    let stored = match write(&index, Write::PutMany(entries)).await? {
        Written::PutMany { stored } => stored,
        _ => return Err(ApiError::internal("the writer answered another write")),
    };
    Ok(axum::Json(
        json!({"stored": stored, "entries": index.read(|i| i.len())}),
    ))
}

/// `POST /v1/indexes/{name}/query`: the document in the body, or `?fingerprint=`; every stored id within
/// the index's threshold (or `?k=` / `?threshold=`), closest first.
pub async fn query(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    query: Result<Query<QueryParams>, QueryRejection>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let p = params(query)?;
    let bytes = body(bytes)?;
    let index = state.index(&name)?;
    let radius = radius(index.method(), p.k, p.threshold)?;
    let sketch = match (&p.fingerprint, bytes.is_empty()) {
        (Some(f), true) => parse_sketch(&index, f, None)?,
        (Some(_), false) => {
            return Err(ApiError::bad_request(
                "bad_parameter",
                "give a document in the body or ?fingerprint=, not both",
            ));
        }
        (None, _) => {
            let hint = media_hint(p.media.as_deref(), &headers)?;
            analyze(&state, index.method(), bytes, hint).await?.sketch
        }
    };
    let matches = index.query(&sketch, radius)?;
    Ok(axum::Json(json!({
        "fingerprint": sketch.to_string(),
        "matches": matches_json(&matches),
    })))
}

/// `POST /v1/indexes/{name}/query-batch`: NDJSON lines `{"fingerprint"}` in, NDJSON lines
/// `{"matches": [...]}` out, in the same order.
pub async fn query_batch(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    query: Result<Query<BatchParams>, QueryRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let p = params(query)?;
    let bytes = body(bytes)?;
    let index = state.index(&name)?;
    let radius = radius(index.method(), p.k, p.threshold)?;
    let lines = ndjson_lines(&bytes, state.limits.max_batch)?;
    let sketches = lines
        .iter()
        .map(|(n, value)| parse_sketch(&index, field(*n, value, "fingerprint")?, Some(*n)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = String::new();
    index.read(|i| -> Result<(), ApiError> {
        for sketch in &sketches {
            let matches = i.query(sketch, radius)?;
            out.push_str(&json!({"matches": matches_json(&matches)}).to_string());
            out.push('\n');
        }
        Ok(())
    })?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], out).into_response())
}

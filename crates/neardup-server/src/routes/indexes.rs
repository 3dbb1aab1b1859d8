//! `PUT`, `GET`, `DELETE /v1/indexes/{name}` and `GET /v1/indexes`: the named indexes of the data directory.

use super::IndexName;
use crate::error::ApiError;
use crate::state::{AppState, IndexSpec, describe};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// 201 with the description; 409 if the name is taken.
pub async fn create(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // JSON whatever the Content-Type says (`curl -d` sends a form type).
    let spec: IndexSpec = serde_json::from_slice(&super::body(bytes)?).map_err(|e| {
        ApiError::bad_request(
            "bad_index_settings",
            format!(
                "the body is not an index's settings ({{\"scheme\": \"simhash\", \"k\": 3}}): {e}"
            ),
        )
    })?;
    let created = {
        let state = Arc::clone(&state);
        let name = name.clone();
        tokio::task::spawn_blocking(move || state.create(&name, &spec))
            .await
            .map_err(|e| ApiError::internal(format!("creating the index failed: {e}")))??
    };
    Ok((StatusCode::CREATED, axum::Json(describe(&name, &created))).into_response())
}

/// Every index's description.
pub async fn list(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let all: Vec<_> = state.all().iter().map(|(n, i)| describe(n, i)).collect();
    axum::Json(json!({"indexes": all}))
}

/// One index's description.
pub async fn show(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
) -> Result<impl IntoResponse, ApiError> {
    let index = state.index(&name)?;
    Ok(axum::Json(describe(&name, &index)))
}

/// 204; 404 if there is no such index.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
) -> Result<StatusCode, ApiError> {
    tokio::task::spawn_blocking(move || state.delete(&name))
        .await
        .map_err(|e| ApiError::internal(format!("deleting the index failed: {e}")))??;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/indexes/{name}/merge`: starts writing every segment of the index into one, in the background,
/// and answers at once: 202 with the description (`segments`, `merging`), or 200 when there is one segment
/// or none. Writes and queries go on meanwhile; queries take the merged segment when it is in place. After a
/// bulk load this makes a query probe one segment's tables instead of several. 409 for an index not kept in
/// segments (a redb file, Redis).
pub async fn merge(
    State(state): State<Arc<AppState>>,
    IndexName(name): IndexName,
) -> Result<Response, ApiError> {
    let index = state.index(&name)?;
    if index.read(|i| i.segments()).is_none() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_segmented",
            format!("index '{name}' is not kept in segments: there is nothing to merge"),
        ));
    }
    let started = {
        let index = Arc::clone(&index);
        tokio::task::spawn_blocking(move || index.read(|i| i.merge_in_background()))
            .await
            .map_err(|e| ApiError::internal(format!("starting the merge failed: {e}")))??
    };
    let status = if started {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(describe(&name, &index))).into_response())
}

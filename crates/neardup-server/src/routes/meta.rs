//! `GET /healthz`, `GET /openapi.json`, `GET /metrics`: open to all (no token).

use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;

/// 200 once the indexes are open (the socket is bound only then).
pub async fn healthz(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    axum::Json(serde_json::json!({"status": "ok", "indexes": state.all().len()}))
}

/// The OpenAPI 3.1 document.
pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], crate::OPENAPI)
}

/// Prometheus text.
pub async fn metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let text = state.metrics.render(&state);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}

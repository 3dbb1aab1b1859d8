//! The routes: the API's paths, each a translation of one engine call, and the middleware around them.
//!
//! | path | module |
//! |---|---|
//! | `GET /healthz`, `GET /openapi.json`, `GET /metrics` | [`meta`] |
//! | `POST /v1/fingerprint` | [`fingerprint`] |
//! | `PUT`, `GET`, `DELETE /v1/indexes/{name}`, `GET /v1/indexes`, `POST /v1/indexes/{name}/merge` | [`indexes`] |
//! | `/v1/indexes/{name}/documents`, `/fingerprints`, `/query`, `/query-batch` | [`documents`] |

pub mod documents;
pub mod fingerprint;
pub mod indexes;
pub mod meta;

use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::body::Bytes;
use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use neardup::index::{Match, Radius};
use neardup::media::{Media, MediaHint};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceBuilder;

/// The whole service: routes, auth, metrics and limits.
pub fn router(state: Arc<AppState>) -> Router {
    let limits = state.limits;
    let routes = Router::new()
        .route("/healthz", get(meta::healthz))
        .route("/openapi.json", get(meta::openapi))
        .route("/metrics", get(meta::metrics))
        .route("/v1/fingerprint", post(fingerprint::fingerprint))
        .route("/v1/indexes", get(indexes::list))
        .route(
            "/v1/indexes/{name}",
            put(indexes::create)
                .get(indexes::show)
                .delete(indexes::delete),
        )
        .route(
            "/v1/indexes/{name}/documents",
            post(documents::add)
                .get(documents::show)
                .delete(documents::remove),
        )
        .route(
            "/v1/indexes/{name}/fingerprints",
            post(documents::add_fingerprints),
        )
        .route("/v1/indexes/{name}/merge", post(indexes::merge))
        .route("/v1/indexes/{name}/query", post(documents::query))
        .route(
            "/v1/indexes/{name}/query-batch",
            post(documents::query_batch),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::metrics::record,
        ))
        .fallback(|| async {
            ApiError::not_found("no_such_route", "no such path: see GET /openapi.json")
        })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::auth::require_token,
        ))
        .with_state(state);
    routes.layer(
        ServiceBuilder::new()
            // Outermost: a panic in a handler is a 500 for that request only.
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
            .layer(HandleErrorLayer::new(overloaded))
            .load_shed()
            .concurrency_limit(limits.concurrency.max(1))
            .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                limits.request_timeout,
            ))
            .layer(DefaultBodyLimit::max(limits.max_body)),
    )
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal("the request failed inside the server (a bug); the service goes on")
        .into_response()
}

async fn overloaded(_: tower::BoxError) -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "too many requests in flight; try again later",
    )
    .into_response()
}

/// A request body, or the error that says why it could not be read (too large: 413).
pub(crate) fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, r.body_text())
    })
}

/// An index's name from the path (`/v1/indexes/{name}…`), or a 400 in the API's JSON form: axum's own
/// rejection (a name whose percent-encoding is not UTF-8, found by fuzzing) is plain text.
pub struct IndexName(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IndexName {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(name)| IndexName(name))
            .map_err(|r| ApiError::bad_request("bad_path", r.body_text()))
    }
}

/// Query-string parameters, or a 400 that names the bad one.
pub(crate) fn params<T>(
    query: Result<axum::extract::Query<T>, QueryRejection>,
) -> Result<T, ApiError> {
    query
        .map(|q| q.0)
        .map_err(|r| ApiError::bad_request("bad_parameter", r.body_text()))
}

/// The medium of a document: `?media=`, else the `Content-Type`, else detected from the bytes.
pub(crate) fn media_hint(
    media: Option<&str>,
    headers: &HeaderMap,
) -> Result<MediaHint<'static>, ApiError> {
    if let Some(name) = media {
        if name.eq_ignore_ascii_case("auto") {
            return Ok(MediaHint::Auto);
        }
        return Media::from_name(name).map(MediaHint::Force).ok_or_else(|| {
            ApiError::bad_request(
                "bad_parameter",
                format!(
                    "unknown media '{name}' (expected auto, text, html, xml, pdf, epub or warc)"
                ),
            )
        });
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    let media = match content_type.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Some(Media::Html),
        Some("application/pdf") => Some(Media::Pdf),
        Some("application/epub+zip") => Some(Media::Epub),
        Some("text/xml" | "application/xml" | "application/jats+xml" | "application/tei+xml") => {
            Some(Media::Xml)
        }
        Some("text/plain") => Some(Media::Text),
        _ => None,
    };
    Ok(media.map_or(MediaHint::Auto, MediaHint::Force))
}

/// Documents up to this many bytes whose extraction cannot be costly (plain text, or HTML with at most
/// [`INLINE_MAX_TAGS`] tags) are sketched on the request's own task: that work (about 50 µs for 10 KB of
/// HTML, at most about a millisecond) costs less than the blocking pool's two thread hand-offs did (a third of
/// the service's CPU per 10 KB page).
pub const INLINE_MAX_BYTES: usize = 32 << 10;

/// HTML with at most this many `<` is sketched on the request's task: the HTML5 tree builder's quadratic
/// shapes (formatting elements re-opened in every paragraph) need many tags, and with 64 the worst shape
/// found takes about 1 ms at 32 KiB (with 256, 11 ms; the hostile corpus has 10 KB pages that take 0.4 s).
pub const INLINE_MAX_TAGS: usize = 64;

/// Whether a document is sketched on the request's task rather than on the blocking pool: plain text, or
/// HTML with few tags, of at most [`INLINE_MAX_BYTES`]. XML (whose internal entities may expand a small
/// document a hundredfold), PDF, EPUB and WARC always go to the pool, so that lookups never wait behind them.
fn sketch_inline(bytes: &[u8], hint: MediaHint<'_>) -> bool {
    bytes.len() <= INLINE_MAX_BYTES
        && match neardup::media::detect(bytes, hint) {
            Ok(Media::Text) => true,
            Ok(Media::Html) => bytes.iter().filter(|&&b| b == b'<').count() <= INLINE_MAX_TAGS,
            _ => false,
        }
}

/// Extracts and sketches a document, at most `workers` at a time: on the request's task when that is cheap
/// ([`sketch_inline`]), else on the blocking pool.
pub(crate) async fn analyze(
    state: &AppState,
    method: neardup::Method,
    bytes: Bytes,
    hint: MediaHint<'static>,
) -> Result<neardup::Analysis, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "empty_body",
            "the request has no document: send its bytes as the body",
        ));
    }
    // The permit goes with the work: a request cut at its time limit stops waiting, but its document is
    // still being sketched, and still counts against the limit until it is done.
    let permit = Arc::clone(&state.workers)
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the service is stopping"))?;
    if sketch_inline(&bytes, hint) {
        let _permit = permit;
        return method.analyze(&bytes, hint).map_err(ApiError::from);
    }
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        method.analyze(&bytes, hint)
    })
    .await
    .map_err(|e| ApiError::internal(format!("sketching the document failed: {e}")))?
    .map_err(ApiError::from)
}

/// `?k=` or `?threshold=`: how far a query looks in an index of `method`.
pub(crate) fn radius(
    method: neardup::Method,
    k: Option<u32>,
    threshold: Option<f64>,
) -> Result<Radius, ApiError> {
    Ok(Radius::asked(method, k, threshold)?)
}

/// Matches as JSON: `{"id", "distance"}` or `{"id", "similarity"}`.
pub(crate) fn matches_json(matches: &[Match]) -> Value {
    Value::Array(
        matches
            .iter()
            .map(|m| match m.score {
                neardup::dedup::Score::Distance(d) => json!({"id": m.id, "distance": d}),
                neardup::dedup::Score::Similarity(s) => json!({"id": m.id, "similarity": s}),
            })
            .collect(),
    )
}

/// The non-blank lines of an NDJSON body, numbered from 1, at most `max` of them.
pub(crate) fn ndjson_lines(body: &[u8], max: usize) -> Result<Vec<(usize, Value)>, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request("bad_body", format!("the body is not UTF-8: {e}")))?;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if lines.len() == max {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "batch_too_large",
                format!("a batch holds at most {max} lines; split it"),
            ));
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            ApiError::bad_request(
                "bad_line",
                format!("line {}: not a JSON object: {e}", n + 1),
            )
        })?;
        lines.push((n + 1, value));
    }
    Ok(lines)
}

/// A string field of an NDJSON line.
pub(crate) fn field<'a>(line: usize, value: &'a Value, name: &str) -> Result<&'a str, ApiError> {
    value.get(name).and_then(Value::as_str).ok_or_else(|| {
        ApiError::bad_request(
            "bad_line",
            format!("line {line}: no string field \"{name}\""),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cheap_documents_are_sketched_inline() {
        let html =
            |tags: usize| format!("<p>{}{}", "<i>x</i>".repeat(tags / 2), "words ".repeat(100));
        assert!(sketch_inline(b"plain words", MediaHint::Auto));
        assert!(sketch_inline(html(62).as_bytes(), MediaHint::Auto));
        assert!(!sketch_inline(html(64).as_bytes(), MediaHint::Auto));
        assert!(!sketch_inline(
            &vec![b'a'; INLINE_MAX_BYTES + 1],
            MediaHint::Auto
        ));
        assert!(sketch_inline(
            &vec![b'a'; INLINE_MAX_BYTES],
            MediaHint::Auto
        ));
        assert!(!sketch_inline(
            b"<?xml version='1.0'?><a>x</a>",
            MediaHint::Auto
        ));
        assert!(!sketch_inline(b"%PDF-1.4 tiny", MediaHint::Auto));
        assert!(!sketch_inline(b"plain words", MediaHint::Force(Media::Pdf)));
        assert!(sketch_inline(b"<p>forced", MediaHint::Force(Media::Text)));
    }
}

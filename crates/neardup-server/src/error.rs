//! Errors as answers: a status and a JSON body `{"error": {"code": "...", "message": "..."}}` whose message
//! names the problem (the field, the line, the index) in words a client's developer can act on.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable code (`no_such_index`, `bad_fingerprint`, …).
    pub code: &'static str,
    /// What is wrong, in words.
    pub message: String,
}

impl ApiError {
    /// An error with this status.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 409.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

impl From<neardup::Error> for ApiError {
    fn from(e: neardup::Error) -> Self {
        use neardup::Error as E;
        let message = e.to_string();
        match e {
            E::NoTokens { .. } => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "no_text", message),
            E::Extract(_) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unreadable_document",
                message,
            ),
            E::Parse(_) | E::ParseSketch(_) => Self::bad_request("bad_fingerprint", message),
            E::MethodMismatch { .. } | E::SchemeMismatch { .. } | E::SketchMismatch(_) => {
                Self::bad_request("scheme_mismatch", message)
            }
            E::UnknownScheme { .. } => Self::bad_request("unknown_scheme", message),
            E::Unsupported { .. } => Self::bad_request("unsupported", message),
            E::BadRadius { .. } => Self::bad_request("bad_parameter", message),
            E::Busy { .. } => Self::new(StatusCode::SERVICE_UNAVAILABLE, "busy", message),
            _ => Self::internal(message),
        }
    }
}

//! Bearer tokens: every write needs one (and every read, with `--auth-reads`). Tokens are compared in
//! constant time against every configured token, and never logged or echoed.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The configured tokens.
pub struct Tokens(Vec<Vec<u8>>);

impl Tokens {
    /// Tokens as given (surrounding whitespace removed).
    pub fn new(tokens: Vec<String>) -> Self {
        Tokens(
            tokens
                .into_iter()
                .map(|t| t.trim().as_bytes().to_vec())
                .collect(),
        )
    }

    /// Whether `given` is one of them; takes the same time whichever matches, if any.
    pub fn accepts(&self, given: &[u8]) -> bool {
        let mut found = subtle::Choice::from(0);
        for token in &self.0 {
            found |= token.as_slice().ct_eq(given);
        }
        found.into()
    }

    /// Whether there are none (writes are open: `--no-auth`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether a request changes state: everything but GET and the query endpoints (which POST a body).
pub fn is_write(method: &Method, path: &str) -> bool {
    let read_only_post =
        path.ends_with("/query") || path.ends_with("/query-batch") || path == "/v1/fingerprint";
    !(method == Method::GET || method == Method::HEAD || (method == Method::POST && read_only_post))
}

/// Reads the token files and the `NEARDUP_TOKENS` variable: one token per line (or comma-separated in the
/// variable); blank lines and lines starting with `#` are skipped.
pub fn load_tokens(
    files: &[std::path::PathBuf],
    variable: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    if let Some(v) = variable {
        tokens.extend(
            v.split([',', '\n'])
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
        );
    }
    Ok(tokens)
}

/// The middleware: 401 without a valid token where one is needed.
pub async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let open_path = matches!(path, "/healthz" | "/openapi.json" | "/metrics");
    let needed = !open_path
        && !state.tokens.is_empty()
        && (state.auth_reads || is_write(request.method(), path));
    if needed {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let ok = given.is_some_and(|t| state.tokens.accepts(t.as_bytes()));
        if !ok {
            let message = if given.is_none() {
                "this request needs an 'Authorization: Bearer TOKEN' header"
            } else {
                "the bearer token is not valid"
            };
            let mut response =
                ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_whole() {
        let tokens = Tokens::new(vec!["alpha".into(), " beta ".into()]);
        assert!(tokens.accepts(b"alpha"));
        assert!(tokens.accepts(b"beta"));
        assert!(!tokens.accepts(b"alph"));
        assert!(!tokens.accepts(b"alphaa"));
        assert!(!tokens.accepts(b""));
    }

    #[test]
    fn writes_are_what_changes_state() {
        assert!(!is_write(&Method::GET, "/v1/indexes"));
        assert!(!is_write(&Method::POST, "/v1/indexes/a/query"));
        assert!(!is_write(&Method::POST, "/v1/indexes/a/query-batch"));
        assert!(!is_write(&Method::POST, "/v1/fingerprint"));
        assert!(is_write(&Method::POST, "/v1/indexes/a/documents"));
        assert!(is_write(&Method::PUT, "/v1/indexes/a"));
        assert!(is_write(&Method::DELETE, "/v1/indexes/a/documents"));
    }
}

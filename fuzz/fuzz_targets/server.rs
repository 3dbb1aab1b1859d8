//! The HTTP service's request handling: arbitrary requests through the whole router (auth, limits, routes,
//! query strings, paths, headers, JSON and NDJSON bodies, documents of any medium), in process, against a data
//! directory holding a SimHash index `fp` and a MinHash index `mh` that writes really change.
//!
//! The input is a request written plainly: its first byte chooses the method, the rest up to the first
//! newline is the URI, then `Name: value` header lines up to an empty line, then the body. Every answer must be
//! well formed: a status that is not 500 (a 500 is a handler that failed or panicked), and for 4xx a JSON
//! body `{"error": {"code", "message"}}`. After each request the data directory is put back to its two
//! indexes, so that inputs do not pile up indexes on disk.
#![no_main]

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use neardup_server::{AppState, Config, IndexSpec, Limits};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tower::ServiceExt;

/// The token the seeds send (`Authorization: Bearer fuzz`).
const TOKEN: &str = "fuzz";

struct Service {
    runtime: tokio::runtime::Runtime,
    state: Arc<AppState>,
    _data: tempfile::TempDir,
}

fn spec(scheme: &str) -> IndexSpec {
    serde_json::from_value(serde_json::json!({"scheme": scheme})).expect("a valid spec")
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(|| {
        common::abort_on_uncaught_panics();
        let data = tempfile::tempdir().expect("a temporary directory");
        let mut config = Config::new(data.path().to_owned(), "127.0.0.1:0".parse().unwrap())
            .with_tokens(vec![TOKEN.to_owned()]);
        config.limits = Limits {
            max_body: 1 << 20,
            max_batch: 1_000,
            request_timeout: Duration::from_secs(10),
            concurrency: 4,
            workers: 1,
        };
        let state = Arc::new(AppState::open(config).expect("the service's state"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let service = Service {
            runtime,
            state,
            _data: data,
        };
        restore(&service.state);
        service
    })
}

/// The data directory back to its two indexes.
fn restore(state: &AppState) {
    for (name, _) in state.all() {
        if name != "fp" && name != "mh" {
            state
                .delete(&name)
                .expect("an index the fuzzer made can be deleted");
        }
    }
    for (name, scheme) in [("fp", "simhash"), ("mh", "minhash")] {
        if state.index(name).is_err() {
            state
                .create(name, &spec(scheme))
                .expect("the index can be made");
        }
    }
}

const METHODS: [Method; 6] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::HEAD,
    Method::PATCH,
];

/// The request the bytes write, or None where the `http` crate itself refuses the URI or a header (that
/// parsing happens in hyper before the service sees anything).
fn request(data: &[u8]) -> Option<Request<Body>> {
    let (&first, rest) = data.split_first()?;
    let method = METHODS[usize::from(first) % METHODS.len()].clone();
    let (uri, mut rest) = split_line(rest);
    let mut builder = Request::builder()
        .method(method)
        .uri(std::str::from_utf8(uri).ok()?);
    loop {
        let (line, after) = split_line(rest);
        rest = after;
        if line.is_empty() {
            break;
        }
        let colon = line.iter().position(|&b| b == b':')?;
        let value = line[colon + 1..].trim_ascii_start();
        builder = builder.header(&line[..colon], value);
    }
    builder.body(Body::from(rest.to_vec())).ok()
}

fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &[]),
    }
}

fuzz_target!(|data: &[u8]| {
    let service = service();
    let Some(request) = request(data) else {
        return;
    };
    let described = format!("{} {}", request.method(), request.uri());
    let router = neardup_server::routes::router(Arc::clone(&service.state));
    service.runtime.block_on(async {
        let response = router
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 64 << 20)
            .await
            .expect("a body that can be read");
        assert_ne!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{described}: {}",
            String::from_utf8_lossy(&body)
        );
        if status.is_client_error() && !body.is_empty() {
            let error: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!("{described}: {status} with a body that is not JSON: {e}")
            });
            assert!(
                error["error"]["code"].is_string() && error["error"]["message"].is_string(),
                "{described}: {status} with {error}"
            );
        }
    });
    restore(&service.state);
});

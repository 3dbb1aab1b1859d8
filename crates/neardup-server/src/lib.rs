//! neardup's HTTP service: "have we seen something within k bits of this?" answered exactly, online, for
//! many processes and languages.
//!
//! The service is a translation of the engine's [`neardup::index::Shared`] index and of
//! [`neardup::Method::analyze`]: nothing here knows how a fingerprint is made or how an index finds
//! matches. What lives here is HTTP: routes ([`routes`]), bearer-token auth ([`auth`]), limits on bodies,
//! batches, time and concurrency ([`Limits`]), Prometheus metrics ([`metrics`]), JSON errors that name the
//! problem ([`error`]), and the OpenAPI 3.1 document of the API ([`OPENAPI`], committed as
//! `crates/neardup-server/openapi.json`).
//!
//! # Design
//!
//! - **Indexes** are the directories under the data directory, one per name, the same files `neardup index`
//!   writes. Each is opened once, as a [`Shared`](neardup::index::Shared) index: queries read its memory
//!   under a read lock that no durable write holds; writes go to its writer thread, which groups every
//!   write waiting into one durable commit (group commit) and answers each only once it is durable.
//! - **CPU work** (extracting and sketching a document), at most [`Limits::workers`] documents at a time,
//!   runs on tokio's blocking pool, so that lookups by fingerprint never queue behind a large PDF; only
//!   small plain text and HTML with few tags ([`routes::INLINE_MAX_BYTES`], [`routes::INLINE_MAX_TAGS`])
//!   are sketched on the request's own task, where they cost less than the hand-off to the pool.
//! - **Shutdown** (SIGTERM, SIGINT): requests in flight finish, every queued write is committed, and the
//!   process exits 0. `kill -9` loses no acknowledged write: acknowledged means committed.
//!
//! # Example
//!
//! ```no_run
//! # async fn run() -> Result<(), neardup_server::ServeError> {
//! let config = neardup_server::Config::new("indexes".into(), "127.0.0.1:8080".parse().unwrap());
//! let server = neardup_server::Server::bind(config.with_tokens(vec!["s3cret".into()])).await?;
//! server.run(neardup_server::shutdown_signal()).await
//! # }
//! ```

pub mod auth;
pub mod error;
pub mod metrics;
pub mod routes;
mod state;

pub use error::ApiError;
pub use state::{AppState, IndexSpec};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The OpenAPI 3.1 document of the API, as served at `GET /openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// Limits on what one request may ask, each configurable (`neardup serve --help`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest request body, in bytes (a document, or an NDJSON batch).
    pub max_body: usize,
    /// The most lines in one NDJSON batch.
    pub max_batch: usize,
    /// How long a request may take before it is answered 408 (a write already queued still commits).
    pub request_timeout: Duration,
    /// Requests handled at once; more are answered 503 at once.
    pub concurrency: usize,
    /// Documents extracted and sketched at once (CPU work).
    pub workers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 16 << 20,
            max_batch: 100_000,
            request_timeout: Duration::from_secs(30),
            concurrency: 1024,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// Everything the service needs to start.
#[derive(Clone, Debug)]
pub struct Config {
    /// The directory holding one index directory per name (created if missing).
    pub data: PathBuf,
    /// Indexes kept elsewhere (a Redis URL, another directory), served under a name: (name, location).
    /// Several services may mount one index in Redis, and each sees what the others write.
    pub mounts: Vec<(String, PathBuf)>,
    /// The address to listen on.
    pub listen: SocketAddr,
    /// Bearer tokens that may write (and read, with `auth_reads`). Empty: see `open_writes`.
    pub tokens: Vec<String>,
    /// Reads need a token too.
    pub auth_reads: bool,
    /// Without tokens, let anyone write (a deliberate choice: `--no-auth`).
    pub open_writes: bool,
    /// Request limits.
    pub limits: Limits,
}

impl Config {
    /// A configuration with default limits, no tokens and closed writes.
    pub fn new(data: PathBuf, listen: SocketAddr) -> Self {
        Config {
            data,
            mounts: Vec::new(),
            listen,
            tokens: Vec::new(),
            auth_reads: false,
            open_writes: false,
            limits: Limits::default(),
        }
    }

    /// With these bearer tokens.
    pub fn with_tokens(mut self, tokens: Vec<String>) -> Self {
        self.tokens = tokens;
        self
    }
}

/// Why the service could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration cannot work.
    #[error("{0}")]
    Config(String),
    /// The data directory or one of its indexes could not be opened.
    #[error("{0}")]
    Data(String),
    /// The socket could not be bound or served.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A bound service, ready to run.
pub struct Server {
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
}

impl Server {
    /// Opens every index under the data directory and binds the socket.
    pub async fn bind(config: Config) -> Result<Server, ServeError> {
        if config.tokens.is_empty() && !config.open_writes {
            return Err(ServeError::Config(
                "no tokens: give --token-file FILE (or NEARDUP_TOKENS), or --no-auth to let anyone write"
                    .to_owned(),
            ));
        }
        if config.tokens.iter().any(|t| t.trim().is_empty()) {
            return Err(ServeError::Config("a token is empty".to_owned()));
        }
        let listen = config.listen;
        let state = tokio::task::spawn_blocking(move || AppState::open(config))
            .await
            .map_err(|e| ServeError::Data(format!("opening the indexes failed: {e}")))??;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| ServeError::Config(format!("cannot listen on {listen}: {e}")))?;
        Ok(Server {
            listener,
            state: Arc::new(state),
        })
    }

    /// The address it listens on (the port chosen when the configuration asked for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish and commits every queued
    /// write.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let app = routes::router(Arc::clone(&self.state));
        let served = axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || state.close())
            .await
            .map_err(|e| ServeError::Data(format!("closing the indexes failed: {e}")))?;
        served.map_err(ServeError::Io)
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

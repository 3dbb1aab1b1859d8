//! `neardup serve`: wiring for the HTTP service of the `neardup-server` crate (flags in, a tokio runtime,
//! the service until SIGTERM or SIGINT).

use anyhow::{Context, Result, bail};
use clap::Args;
use neardup_server::{Config, Limits, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const AFTER_HELP: &str = "\
Serves the persistent indexes in DIR (one directory per index, the same files `neardup index`
writes) over HTTP: JSON, NDJSON for batches. GET /openapi.json describes every endpoint.

    GET    /healthz                                200 when ready
    GET    /metrics                                Prometheus text
    POST   /v1/fingerprint?scheme=S&media=M        a document's fingerprint
    PUT    /v1/indexes/NAME                        create: {\"scheme\": \"simhash\", \"k\": 3}
    GET    /v1/indexes[/NAME]                      describe
    DELETE /v1/indexes/NAME                        delete
    POST   /v1/indexes/NAME/documents?id=ID        its matches, then store it (durable)
    DELETE /v1/indexes/NAME/documents?id=ID        remove
    POST   /v1/indexes/NAME/fingerprints           NDJSON {\"id\", \"fingerprint\"} lines (durable)
    POST   /v1/indexes/NAME/query[?fingerprint=F]  matches of a document or fingerprint
    POST   /v1/indexes/NAME/query-batch            NDJSON {\"fingerprint\"} in, match lists out
    POST   /v1/indexes/NAME/merge                  write its segments into one (after a bulk load)

--index NAME=LOCATION serves an index kept elsewhere under NAME: a Redis URL (see `neardup index
--help`) lets several services, on one machine or many, share one index: a document written
through any of them is found through all of them. Mounted indexes are never deleted by the service.

Writes need 'Authorization: Bearer TOKEN'; tokens come from --token-file (one per line) or the
NEARDUP_TOKENS variable (comma-separated), and are never logged. --auth-reads asks a token of
reads too. Without tokens the service refuses to start unless --no-auth is given.

A write is answered once it is durable: it survives kill -9. Concurrent writes are grouped into
one commit; queries never wait for a commit. SIGTERM or SIGINT: requests in flight finish, every
queued write is committed, and the service exits 0.

Examples:
    echo \"$(openssl rand -hex 16)\" > tokens; neardup serve --data indexes --token-file tokens
    curl -X PUT -H \"Authorization: Bearer $T\" -d '{\"scheme\": \"simhash\", \"k\": 3}' \\
        localhost:8080/v1/indexes/web
    curl -H \"Authorization: Bearer $T\" --data-binary @page.html \\
        'localhost:8080/v1/indexes/web/documents?id=https%3A%2F%2Fexample.org%2F'";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct ServeArgs {
    /// The directory of the indexes (created if missing).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// Also serve the index at LOCATION (a Redis URL, or a directory elsewhere) as NAME; may be repeated.
    /// Services that mount one index in Redis share it: each finds what the others add.
    #[arg(long = "index", value_name = "NAME=LOCATION", value_parser = parse_mount)]
    mounts: Vec<(String, PathBuf)>,
    /// The address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    listen: SocketAddr,
    /// A file of bearer tokens, one per line ('#' comments); may be repeated.
    #[arg(long, value_name = "FILE")]
    token_file: Vec<PathBuf>,
    /// Reads (queries, fingerprints, descriptions) need a token too.
    #[arg(long)]
    auth_reads: bool,
    /// Start without tokens: anyone who reaches the socket may write.
    #[arg(long, conflicts_with_all = ["token_file", "auth_reads"])]
    no_auth: bool,
    /// The largest request body (bytes, or with a K/M/G suffix).
    #[arg(long, default_value = "16M", value_parser = crate::plan::parse_bytes, value_name = "SIZE")]
    max_body: f64,
    /// The most lines in one NDJSON batch.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    max_batch: usize,
    /// Seconds a request may take before it is answered 408.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    request_timeout: f64,
    /// Requests handled at once; more are answered 503.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    concurrency: usize,
    /// Documents extracted and sketched at once [default: one per core].
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
}

fn parse_mount(text: &str) -> Result<(String, PathBuf), String> {
    let (name, location) = text
        .split_once('=')
        .ok_or("expected NAME=LOCATION, e.g. web=redis://127.0.0.1:6379/web")?;
    if name.is_empty() || location.is_empty() {
        return Err("expected NAME=LOCATION, e.g. web=redis://127.0.0.1:6379/web".into());
    }
    Ok((name.to_owned(), PathBuf::from(location)))
}

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let variable = std::env::var("NEARDUP_TOKENS").ok();
    let tokens = neardup_server::auth::load_tokens(&args.token_file, variable.as_deref())
        .map_err(anyhow::Error::msg)?;
    if !args.token_file.is_empty() && tokens.is_empty() {
        bail!("the token files hold no token");
    }
    if !(args.request_timeout > 0.0 && args.request_timeout.is_finite()) {
        bail!("--request-timeout must be a positive number of seconds");
    }
    let defaults = Limits::default();
    let config = Config {
        data: args.data.clone(),
        mounts: args.mounts.clone(),
        listen: args.listen,
        tokens,
        auth_reads: args.auth_reads,
        open_writes: args.no_auth,
        limits: Limits {
            max_body: args.max_body as usize,
            max_batch: args.max_batch.max(1),
            request_timeout: Duration::from_secs_f64(args.request_timeout),
            concurrency: args.concurrency.max(1),
            workers: args.workers.unwrap_or(defaults.workers).max(1),
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("neardup-serve")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let server = Server::bind(config).await?;
        let addr = server.local_addr()?;
        if args.no_auth {
            say!("warning: --no-auth: anyone who reaches {addr} may write");
        }
        say!(
            "listening on http://{addr} (indexes in {})",
            args.data.display()
        );
        server.run(neardup_server::shutdown_signal()).await?;
        say!("stopped; every acknowledged write is committed");
        Ok(ExitCode::SUCCESS)
    })
}

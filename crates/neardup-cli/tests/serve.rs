//! `neardup serve`, started for real on a free loopback port and driven with a real HTTP client: every
//! endpoint, the error paths, auth, the limits, readers during writes, SIGTERM, and `kill -9` during a
//! write load followed by a restart that finds every acknowledged id. Every server is killed when its test
//! ends, and every request has a timeout.

mod common;

use common::temp_dir;
use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-7f3a";
const PAGE: &str =
    "The quick brown fox jumps over the lazy dog near the river bank every single morning";

/// A running server, killed when dropped.
struct Server {
    child: Child,
    base: String,
    client: Client,
}

impl Server {
    fn start(data: &Path, extra: &[&str]) -> Server {
        let tokens = data.with_extension("tokens");
        std::fs::write(&tokens, format!("# test\n{TOKEN}\n")).unwrap();
        let mut args = vec![
            "serve".to_owned(),
            "--data".to_owned(),
            data.display().to_string(),
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
        ];
        if !extra.contains(&"--no-auth") {
            args.extend(["--token-file".to_owned(), tokens.display().to_string()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start neardup serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let started = Instant::now();
        let base = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.kill();
                panic!("neardup serve ended before listening");
            }
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no address");
        };
        // Keep draining stderr so that the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in stderr.lines() {});
        let client = Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Server {
            child,
            base,
            client,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().unwrap()
    }

    fn post(&self, path: &str, body: impl Into<reqwest::blocking::Body>) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(TOKEN)
            .body(body)
            .send()
            .unwrap()
    }

    fn put_index(&self, name: &str, settings: Value) -> Response {
        self.client
            .put(self.url(&format!("/v1/indexes/{name}")))
            .bearer_auth(TOKEN)
            .json(&settings)
            .send()
            .unwrap()
    }

    fn delete(&self, path: &str) -> Response {
        self.client
            .delete(self.url(path))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
    }

    /// SIGTERM, and the exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_of(r: Response) -> Value {
    let status = r.status();
    let text = r.text().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text}"))
}

/// Asserts the status and a JSON error with this code.
fn assert_error(r: Response, status: StatusCode, code: &str) {
    assert_eq!(r.status(), status);
    let body = json_of(r);
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
}

fn ids(matches: &Value) -> Vec<&str> {
    matches
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

/// A data directory for a server to create, inside a scratch directory that goes when the test ends.
struct DataDir {
    _scratch: common::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for DataDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

fn fresh(name: &str) -> DataDir {
    let scratch = temp_dir(&format!("serve-{name}"));
    let path = scratch.join("data");
    DataDir {
        _scratch: scratch,
        path,
    }
}

#[test]
fn every_endpoint_answers_and_every_error_is_named() {
    let data = fresh("endpoints");
    let server = Server::start(&data, &[]);
    let health = server.get("/healthz");
    assert_eq!(health.status(), 200);
    assert_eq!(json_of(health)["status"], "ok");

    // The served document is the committed one, and names every path of the contract.
    let openapi = json_of(server.get("/openapi.json"));
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("crates/neardup-server/openapi.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(openapi, committed);
    assert_eq!(openapi["openapi"], "3.1.0");
    for path in [
        "/healthz",
        "/openapi.json",
        "/metrics",
        "/v1/fingerprint",
        "/v1/indexes",
        "/v1/indexes/{name}",
        "/v1/indexes/{name}/documents",
        "/v1/indexes/{name}/fingerprints",
        "/v1/indexes/{name}/merge",
        "/v1/indexes/{name}/query",
        "/v1/indexes/{name}/query-batch",
    ] {
        assert!(openapi["paths"].get(path).is_some(), "{path}");
    }

    // Fingerprints: the same text from HTML and text, and the medium from the Content-Type.
    let html = format!("<html><body><nav>menu</nav><p>{PAGE}</p></body></html>");
    let from_html = json_of(
        server
            .client
            .post(server.url("/v1/fingerprint"))
            .header("Content-Type", "text/html")
            .body(html.clone())
            .send()
            .unwrap(),
    );
    assert_eq!(from_html["media"], "html");
    let from_text = json_of(server.post("/v1/fingerprint?media=text", PAGE));
    assert_eq!(from_html["fingerprint"], from_text["fingerprint"]);
    assert_eq!(from_text["tokens"], 16);
    // A page with few tags is sketched on the request's task, one with many on the blocking pool: the same.
    let many_tags = format!(
        "<html><body>{}<p>{PAGE}</p></body></html>",
        "<span></span>".repeat(100)
    );
    let from_pool = json_of(
        server
            .client
            .post(server.url("/v1/fingerprint"))
            .header("Content-Type", "text/html")
            .body(many_tags)
            .send()
            .unwrap(),
    );
    assert_eq!(from_pool["fingerprint"], from_text["fingerprint"]);
    let minhash = json_of(server.post("/v1/fingerprint?scheme=minhash&num_perm=64", PAGE));
    assert!(
        minhash["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("minhash-oph-v1:k=64")
    );
    assert_error(
        server.post("/v1/fingerprint?scheme=nope", PAGE),
        StatusCode::BAD_REQUEST,
        "unknown_scheme",
    );
    assert_error(
        server.post("/v1/fingerprint", "!!! ??? ..."),
        StatusCode::UNPROCESSABLE_ENTITY,
        "no_text",
    );
    assert_error(
        server.post("/v1/fingerprint", ""),
        StatusCode::BAD_REQUEST,
        "empty_body",
    );
    assert_error(
        server.post("/v1/fingerprint?media=pdf", "not a pdf"),
        StatusCode::UNPROCESSABLE_ENTITY,
        "unreadable_document",
    );

    // Indexes.
    let created = server.put_index("web", json!({"scheme": "simhash", "k": 3}));
    assert_eq!(created.status(), StatusCode::CREATED);
    let created = json_of(created);
    assert_eq!(created["scheme"], "simhash-doc-v1");
    assert_eq!(created["k"], 3);
    assert_error(
        server.put_index("web", json!({"scheme": "simhash"})),
        StatusCode::CONFLICT,
        "index_exists",
    );
    assert_error(
        server.put_index(".hidden", json!({"scheme": "simhash"})),
        StatusCode::BAD_REQUEST,
        "bad_index_name",
    );
    assert_error(
        server.put_index("x", json!({"scheme": "minhash", "k": 3})),
        StatusCode::BAD_REQUEST,
        "bad_index_settings",
    );
    assert_error(
        server.put_index("x", json!({"scheme": "simhash", "colour": 3})),
        StatusCode::BAD_REQUEST,
        "bad_index_settings",
    );
    assert_error(
        server.put_index("x", json!({"scheme": "simhash", "k": 9})),
        StatusCode::BAD_REQUEST,
        "unsupported",
    );
    let lsh = json_of(server.put_index("mh", json!({"scheme": "minhash", "threshold": 0.7})));
    assert_eq!(lsh["kind"], "lsh");
    assert_eq!(lsh["threshold"], 0.7);
    let listed = json_of(server.get("/v1/indexes"));
    let names: Vec<&str> = listed["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mh", "web"]);
    assert_error(
        server.get("/v1/indexes/nope"),
        StatusCode::NOT_FOUND,
        "no_such_index",
    );
    // A name whose percent-encoding is not UTF-8 (found by fuzzing: axum answered in plain text).
    for path in ["/v1/indexes/d%b2", "/v1/indexes/d%b2/documents?id=x"] {
        assert_error(server.get(path), StatusCode::BAD_REQUEST, "bad_path");
    }

    // Documents: matches stored before, then stored. Ids are any string (a URL with a query here).
    let url = "https://example.org/a?b=c&d=e f";
    let first = json_of(
        server
            .client
            .post(server.url("/v1/indexes/web/documents"))
            .query(&[("id", url)])
            .bearer_auth(TOKEN)
            .header("Content-Type", "text/html")
            .body(html)
            .send()
            .unwrap(),
    );
    assert_eq!(first["id"], url);
    assert_eq!(first["matches"], json!([]));
    let second = json_of(server.post("/v1/indexes/web/documents?id=b", format!("{PAGE}!")));
    assert_eq!(ids(&second["matches"]), [url]);
    assert_eq!(second["matches"][0]["distance"], 0);
    assert_error(
        server.post("/v1/indexes/web/documents", PAGE),
        StatusCode::BAD_REQUEST,
        "missing_id",
    );
    assert_error(
        server.post("/v1/indexes/nope/documents?id=a", PAGE),
        StatusCode::NOT_FOUND,
        "no_such_index",
    );
    let stored = json_of(server.get("/v1/indexes/web/documents?id=b"));
    assert_eq!(stored["fingerprint"], from_text["fingerprint"]);

    // Queries by document and by fingerprint.
    let by_doc = json_of(server.post("/v1/indexes/web/query", PAGE));
    assert_eq!(ids(&by_doc["matches"]), ["b", url]);
    let fp = from_text["fingerprint"].as_str().unwrap();
    let by_fp = json_of(
        server
            .client
            .post(server.url("/v1/indexes/web/query"))
            .query(&[("fingerprint", fp), ("k", "0")])
            .send()
            .unwrap(),
    );
    assert_eq!(by_fp["matches"], by_doc["matches"]);
    assert_error(
        server.post("/v1/indexes/web/query?k=5", PAGE),
        StatusCode::BAD_REQUEST,
        "unsupported",
    );
    assert_error(
        server.post("/v1/indexes/web/query?threshold=0.5", PAGE),
        StatusCode::BAD_REQUEST,
        "bad_parameter",
    );
    assert_error(
        server.post("/v1/indexes/web/query?fingerprint=nonsense", ""),
        StatusCode::BAD_REQUEST,
        "bad_fingerprint",
    );
    assert_error(
        server.post(
            &format!("/v1/indexes/web/query?fingerprint={}", minhash_fp(&minhash)),
            "",
        ),
        StatusCode::BAD_REQUEST,
        "scheme_mismatch",
    );
    assert_error(
        server.post("/v1/indexes/web/query?colour=red", PAGE),
        StatusCode::BAD_REQUEST,
        "bad_parameter",
    );

    // NDJSON: a batch of fingerprints, then a batch of queries answered in order.
    let far = "simhash-doc-v1:aaaaaaaaaaaaa";
    let batch = format!(
        "{}\n\n{}\n",
        json!({"id": "c", "fingerprint": fp}),
        json!({"id": "far", "fingerprint": far})
    );
    let added = json_of(server.post("/v1/indexes/web/fingerprints", batch));
    assert_eq!(added["stored"], 2);
    assert_eq!(added["entries"], 4);
    let bad = format!(
        "{}\n{}\n",
        json!({"id": "d", "fingerprint": fp}),
        json!({"id": "e"})
    );
    let refused = server.post("/v1/indexes/web/fingerprints", bad);
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(
        json_of(refused)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 2")
    );
    assert_eq!(
        json_of(server.get("/v1/indexes/web"))["entries"],
        4,
        "a bad batch stores nothing"
    );
    let answers = server
        .client
        .post(server.url("/v1/indexes/web/query-batch"))
        .body(format!(
            "{}\n{}\n{}\n",
            json!({"fingerprint": far}),
            json!({"fingerprint": fp}),
            json!({"fingerprint": neardup::Fingerprint::new(
                neardup::Scheme::SimhashDocV1,
                0x5555_5555_5555_5555
            )
            .to_string()})
        ))
        .send()
        .unwrap();
    assert_eq!(answers.status(), 200);
    let lines: Vec<Value> = answers
        .text()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(ids(&lines[0]["matches"]), ["far"]);
    assert_eq!(ids(&lines[1]["matches"]), ["b", "c", url]);
    assert_eq!(lines[2]["matches"], json!([]));

    // MinHash documents answer with similarities.
    server.post("/v1/indexes/mh/documents?id=m1", PAGE);
    let near = json_of(server.post(
        "/v1/indexes/mh/documents?id=m2",
        format!("{PAGE} and again the next day"),
    ));
    assert_eq!(ids(&near["matches"]), ["m1"]);
    assert!(near["matches"][0]["similarity"].as_f64().unwrap() >= 0.7);

    // Removal.
    assert_eq!(
        server.delete("/v1/indexes/web/documents?id=c").status(),
        StatusCode::NO_CONTENT
    );
    assert_error(
        server.delete("/v1/indexes/web/documents?id=c"),
        StatusCode::NOT_FOUND,
        "no_such_document",
    );
    assert_eq!(
        server.delete("/v1/indexes/mh").status(),
        StatusCode::NO_CONTENT
    );
    assert_error(
        server.delete("/v1/indexes/mh"),
        StatusCode::NOT_FOUND,
        "no_such_index",
    );
    assert_error(
        server.get("/v1/nowhere"),
        StatusCode::NOT_FOUND,
        "no_such_route",
    );

    // Metrics count what happened, by route pattern, and index sizes.
    let metrics = server.get("/metrics").text().unwrap();
    assert!(
        metrics.contains(r#"neardup_http_requests_total{method="POST",route="/v1/indexes/{name}/documents",status="200"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"neardup_index_entries{index="web"} 3"#),
        "{metrics}"
    );
    assert!(metrics.contains("neardup_http_request_duration_seconds_bucket"));
    assert!(metrics.contains("neardup_http_errors_total"));
    assert!(!metrics.contains(TOKEN));
}

fn minhash_fp(answer: &Value) -> String {
    let fp = answer["fingerprint"].as_str().unwrap();
    fp.replace(':', "%3A")
        .replace(',', "%2C")
        .replace('=', "%3D")
}

#[test]
fn writes_need_a_token_and_reads_too_when_asked() {
    let data = fresh("auth");
    let server = Server::start(&data, &[]);
    let put = |token: Option<&str>| {
        let mut request = server
            .client
            .put(server.url("/v1/indexes/a"))
            .body(r#"{"scheme": "simhash"}"#);
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        request.send().unwrap()
    };
    assert_error(put(None), StatusCode::UNAUTHORIZED, "unauthorized");
    let wrong = put(Some("test-token-7f3b"));
    assert_eq!(wrong.headers().get("www-authenticate").unwrap(), "Bearer");
    assert_error(wrong, StatusCode::UNAUTHORIZED, "unauthorized");
    assert_error(put(Some("")), StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(put(Some(TOKEN)).status(), StatusCode::CREATED);
    let anonymous = |path: &str| {
        server
            .client
            .post(server.url(path))
            .body(PAGE)
            .send()
            .unwrap()
    };
    assert_error(
        anonymous("/v1/indexes/a/documents?id=x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_eq!(anonymous("/v1/indexes/a/query").status(), 200);
    assert_eq!(server.get("/v1/indexes").status(), 200);
    drop(server);

    let guarded = Server::start(&data, &["--auth-reads"]);
    assert_error(
        guarded.get("/v1/indexes"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_eq!(guarded.get("/healthz").status(), 200);
    assert_eq!(guarded.get("/metrics").status(), 200);
    let read = guarded
        .client
        .get(guarded.url("/v1/indexes/a"))
        .bearer_auth(TOKEN)
        .send()
        .unwrap();
    assert_eq!(read.status(), 200);
    drop(guarded);

    // No tokens and no --no-auth: refuses to start, saying why.
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "serve",
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-auth"));
}

#[test]
fn limits_are_enforced_with_named_errors() {
    use std::io::{Read, Write};
    let data = fresh("limits");
    let server = Server::start(&data, &["--request-timeout", "0.3"]);
    // A client that promises 1,000 bytes and sends 10 is answered 408 at the time limit, not waited for.
    let address = server.base.trim_start_matches("http://");
    let mut slow = std::net::TcpStream::connect(address).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let started = Instant::now();
    write!(
        slow,
        "POST /v1/fingerprint HTTP/1.1\r\nHost: {address}\r\nContent-Length: 1000\r\n\r\n0123456789"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(server);

    let data = fresh("limits2");
    let server = Server::start(&data, &["--max-body", "1K", "--max-batch", "2"]);
    assert_error(
        server.post("/v1/fingerprint", PAGE.repeat(20)),
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
    );
    server.put_index("a", json!({"scheme": "simhash"}));
    let fp = "simhash-doc-v1:aaaaaaaaaaaaa";
    let three: String = (0..3)
        .map(|n| format!("{}\n", json!({"id": n.to_string(), "fingerprint": fp})))
        .collect();
    assert_error(
        server.post("/v1/indexes/a/fingerprints", three),
        StatusCode::PAYLOAD_TOO_LARGE,
        "batch_too_large",
    );
}

#[test]
fn readers_go_on_during_writes() {
    let data = fresh("concurrent");
    let server = Server::start(&data, &[]);
    server.put_index("a", json!({"scheme": "simhash", "k": 3}));
    let probe = "simhash-doc-v1:aaaaaaaaaaaaa";
    server.post(
        "/v1/indexes/a/fingerprints",
        format!("{}\n", json!({"id": "probe", "fingerprint": probe})),
    );
    let writers = 4;
    let per_writer = 25;
    let batch = 200;
    std::thread::scope(|scope| {
        for w in 0..writers {
            let server = &server;
            scope.spawn(move || {
                for b in 0..per_writer {
                    let lines: String = (0..batch)
                        .map(|i| {
                            let bits = (((w * per_writer + b) * batch + i + 1) as u64)
                                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
                            let fp = neardup::Fingerprint::new(neardup::Scheme::SimhashDocV1, bits)
                                .to_string();
                            format!(
                                "{}\n",
                                json!({"id": format!("{w}-{b}-{i}"), "fingerprint": fp})
                            )
                        })
                        .collect();
                    let r = server.post("/v1/indexes/a/fingerprints", lines);
                    assert_eq!(r.status(), 200);
                }
            });
        }
        for _ in 0..4 {
            let server = &server;
            scope.spawn(move || {
                for _ in 0..100 {
                    let r = server
                        .client
                        .post(server.url("/v1/indexes/a/query"))
                        .query(&[("fingerprint", probe)])
                        .send()
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    assert!(ids(&json_of(r)["matches"]).contains(&"probe"));
                }
            });
        }
    });
    let entries = json_of(server.get("/v1/indexes/a"))["entries"]
        .as_u64()
        .unwrap();
    assert_eq!(entries, (writers * per_writer * batch + 1) as u64);
}

/// NDJSON lines of `n` fingerprints, ids `{prefix}{i}`, bits spread by a multiplicative hash.
fn fingerprint_lines(prefix: &str, range: std::ops::Range<u64>) -> String {
    range
        .map(|i| {
            let bits = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let fp = neardup::Fingerprint::new(neardup::Scheme::SimhashDocV1, bits).to_string();
            format!(
                "{}\n",
                json!({"id": format!("{prefix}{i}"), "fingerprint": fp})
            )
        })
        .collect()
}

#[test]
fn merge_writes_the_segments_into_one_while_writes_and_queries_go_on() {
    let data = fresh("merge");
    let server = Server::start(&data, &[]);
    server.put_index("m", json!({"scheme": "simhash", "k": 3}));
    // A batch of 100,000 flushes into one segment; 20,000 more into a second, too small for the tiered
    // policy to merge with the first.
    for range in [0..100_000, 100_000..120_000] {
        let r = server.post(
            "/v1/indexes/m/fingerprints",
            fingerprint_lines("doc-", range),
        );
        assert_eq!(r.status(), 200);
    }
    let before = json_of(server.get("/v1/indexes/m"));
    assert_eq!(before["segments"], 2, "{before}");
    assert_eq!(before["merging"], false);
    let probes: Vec<String> = [7u64, 99_999, 100_000, 119_999]
        .iter()
        .map(|&i| {
            neardup::Fingerprint::new(
                neardup::Scheme::SimhashDocV1,
                (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0b101,
            )
            .to_string()
        })
        .collect();
    let query = |fp: &str| {
        json_of(
            server
                .client
                .post(server.url("/v1/indexes/m/query"))
                .query(&[("fingerprint", fp)])
                .send()
                .unwrap(),
        )["matches"]
            .clone()
    };
    let answers: Vec<Value> = probes.iter().map(|p| query(p)).collect();
    for (answer, id) in answers
        .iter()
        .zip(["doc-7", "doc-99999", "doc-100000", "doc-119999"])
    {
        assert!(ids(answer).contains(&id), "{answer}");
    }

    let started = server.post("/v1/indexes/m/merge", "");
    assert_eq!(started.status(), 202);
    assert_eq!(json_of(started)["merging"], true);
    // Writes and queries go on while it runs.
    let r = server.post(
        "/v1/indexes/m/fingerprints",
        fingerprint_lines("during-", 1_000_000..1_000_001),
    );
    assert_eq!(r.status(), 200);
    assert_eq!(query(&probes[0]), answers[0]);
    let merged = || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let now = json_of(server.get("/v1/indexes/m"));
            if now["merging"] == false {
                break now;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the merge did not end: {now}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let after = merged();
    // The write made during the merge stays in the log (the merge took the log's changes before it).
    assert_eq!(after["segments"], 1, "{after}");
    assert_eq!(after["entries"], 120_001);
    // The same answers from the one segment (taken by the idle writer, with no write after the merge).
    std::thread::sleep(std::time::Duration::from_millis(500));
    for (probe, answer) in probes.iter().zip(&answers) {
        assert_eq!(&query(probe), answer);
    }
    let during = neardup::Fingerprint::new(
        neardup::Scheme::SimhashDocV1,
        1_000_001u64.wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    assert_eq!(ids(&query(&during.to_string())), ["during-1000000"]);
    // Merging again writes that write in too; then the merged segments' files are gone and nothing is left
    // to merge.
    assert_eq!(server.post("/v1/indexes/m/merge", "").status(), 202);
    assert_eq!(merged()["segments"], 1);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(ids(&query(&during.to_string())), ["during-1000000"]);
    let segment_files = std::fs::read_dir(data.join("m"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".nds")
        })
        .count();
    assert_eq!(segment_files, 1);
    let again = server.post("/v1/indexes/m/merge", "");
    assert_eq!(again.status(), 200);
    assert_eq!(json_of(again)["segments"], 1);
    assert_error(
        server.post("/v1/indexes/nope/merge", ""),
        StatusCode::NOT_FOUND,
        "no_such_index",
    );
}

#[test]
fn sigterm_commits_and_exits_zero() {
    let data = fresh("sigterm");
    let server = Server::start(&data, &[]);
    server.put_index("a", json!({"scheme": "simhash"}));
    assert_eq!(
        server
            .post("/v1/indexes/a/documents?id=kept", PAGE)
            .status(),
        200
    );
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    let again = Server::start(&data, &[]);
    assert_eq!(
        json_of(again.get("/v1/indexes/a/documents?id=kept"))["id"],
        "kept"
    );
}

#[test]
fn kill_9_during_writes_loses_no_acknowledged_id() {
    let data = fresh("kill9");
    for round in 0..3 {
        let server = Server::start(&data, &[]);
        if round == 0 {
            server.put_index("a", json!({"scheme": "simhash"}));
        }
        let acknowledged = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for w in 0..4 {
                let (server, acknowledged) = (&server, &acknowledged);
                scope.spawn(move || {
                    for n in 0.. {
                        let id = format!("r{round}-w{w}-{n}");
                        let body = format!("{PAGE} {id} {}", "word ".repeat(n % 7));
                        match server
                            .client
                            .post(server.url("/v1/indexes/a/documents"))
                            .query(&[("id", &id)])
                            .bearer_auth(TOKEN)
                            .body(body)
                            .send()
                        {
                            Ok(r) if r.status() == 200 => acknowledged.lock().unwrap().push(id),
                            _ => break,
                        }
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(400 + 150 * round as u64));
            Command::new("kill")
                .args(["-KILL", &server.child.id().to_string()])
                .status()
                .unwrap();
        });
        drop(server);
        let acknowledged = acknowledged.into_inner().unwrap();
        assert!(
            !acknowledged.is_empty(),
            "round {round}: nothing was written"
        );
        let again = Server::start(&data, &[]);
        for id in &acknowledged {
            let r = again
                .client
                .get(again.url("/v1/indexes/a/documents"))
                .query(&[("id", id)])
                .send()
                .unwrap();
            assert_eq!(r.status(), 200, "round {round}: acknowledged {id} is lost");
        }
    }
}

#[path = "../../neardup-store-redis/tests/support/mod.rs"]
mod redis_support;

/// Two services mount one index in a real Redis: a document written through one is found through the other,
/// at once; neither may delete it; the CLI sees the same entries.
#[test]
fn two_services_share_one_index_in_redis() {
    if !redis_support::have_redis() {
        return;
    }
    let redis = redis_support::Server::start(&[]);
    let url = redis.url("shared-web");
    let created = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["index", "create", &url])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let mount = format!("web={url}");
    let data_a = fresh("redis-a");
    let a = Server::start(&data_a, &["--index", &mount]);
    let data_b = fresh("redis-b");
    let b = Server::start(&data_b, &["--index", &mount]);
    let first = json_of(a.post("/v1/indexes/web/documents?id=page-1", PAGE));
    assert_eq!(ids(&first["matches"]), Vec::<&str>::new());
    let found = json_of(b.post("/v1/indexes/web/query", format!("{PAGE}!")));
    assert_eq!(ids(&found["matches"]), ["page-1"], "b finds what a wrote");
    let second = json_of(b.post("/v1/indexes/web/documents?id=page-2", format!("{PAGE}.")));
    assert_eq!(ids(&second["matches"]), ["page-1"]);
    let again = json_of(a.post("/v1/indexes/web/query", PAGE));
    assert_eq!(
        ids(&again["matches"]),
        ["page-1", "page-2"],
        "a finds what b wrote"
    );
    assert_eq!(json_of(a.get("/v1/indexes/web"))["entries"], 2);
    assert_error(
        a.delete("/v1/indexes/web"),
        StatusCode::CONFLICT,
        "index_mounted",
    );
    let stats = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["index", "stats", &url, "--json"])
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(
        (stats["entries"].as_u64(), stats["store"].as_str()),
        (Some(2), Some("redis"))
    );
}

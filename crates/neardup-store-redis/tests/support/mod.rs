//! Real Redis servers for the tests: one server, or a cluster of primaries with a replica each, on loopback
//! ports, in a temporary directory; every process is killed when its guard drops.
//!
//! Without `redis-server` on the PATH the tests skip (with a message), unless `NEARDUP_REQUIRE_REDIS=1`
//! (as in CI), where that is a failure.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Whether Redis is here; panics if it is required and missing.
pub fn have_redis() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("NEARDUP_REQUIRE_REDIS").is_none(),
            "redis-server is not installed, and NEARDUP_REQUIRE_REDIS is set"
        );
        eprintln!("skipped: redis-server is not installed");
    }
    found
}

/// A free loopback port whose cluster bus port (+10000) is free too.
fn free_port() -> u16 {
    // Processes start at different places in 20000..29000, and each moves on from there.
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let start = (std::process::id() % 9_000) as u16;
    loop {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + (start + offset) % 9_000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok()
            && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
        {
            return port;
        }
    }
}

/// One `redis-server`.
pub struct Server {
    pub port: u16,
    child: Option<Child>,
    dir: PathBuf,
    extra: Vec<String>,
}

impl Server {
    /// Starts a server (with `extra` arguments) and waits until it answers.
    pub fn start(extra: &[&str]) -> Server {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("neardup-redis-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = Server {
            port,
            child: None,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.restart();
        server
    }

    /// Starts the server again (after [`kill`](Self::kill)), with its directory (and cluster config).
    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server on {} did not answer",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `redis-cli` against this server; its trimmed output, or `None` if it failed.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let password = self
            .extra
            .iter()
            .position(|a| a == "--requirepass")
            .and_then(|i| self.extra.get(i + 1));
        let mut command = Command::new("redis-cli");
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(password) = password {
            command.args(["-a", password, "--no-auth-warning"]);
        }
        let out = command.args(args).stderr(Stdio::null()).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// `redis://127.0.0.1:PORT/NAME`.
    pub fn url(&self, name: &str) -> String {
        format!("redis://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster: `primaries` primaries with one replica each, created with `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(primaries: usize) -> Cluster {
        let nodes: Vec<Server> = (0..2 * primaries)
            .map(|_| {
                Server::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-replica-validity-factor",
                    "0",
                ])
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let status = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = Cluster { nodes };
        cluster.wait_until_ok(None);
        cluster.wait_for_replicas();
        cluster
    }

    /// Waits until every replica has synchronised with its primary.
    pub fn wait_for_replicas(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let linked = self
                .nodes
                .iter()
                .filter_map(|n| n.cli(&["INFO", "replication"]))
                .filter(|info| info.contains("role:slave"))
                .filter(|info| info.contains("master_link_status:up"))
                .count();
            if linked == self.nodes.len() / 2 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the replicas did not synchronise"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// After killing primary `victim`: waits until one of its replicas has taken its place (a primary
    /// restarted before that would come back empty and take its slots back: Redis's own warning about
    /// primaries without persistence).
    pub fn wait_for_failover(&self, victim: usize, primaries: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .primaries()
            .into_iter()
            .filter(|&i| i != victim)
            .count()
            < primaries
        {
            assert!(Instant::now() < deadline, "no replica took over");
            std::thread::sleep(Duration::from_millis(100));
        }
        self.wait_until_ok(Some(victim));
    }

    /// Waits until every live node (but `skip`) says the cluster is ok and sees every slot served.
    pub fn wait_until_ok(&self, skip: Option<usize>) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self.nodes.iter().enumerate().all(|(i, n)| {
                Some(i) == skip
                    || n.cli(&["CLUSTER", "INFO"]).is_some_and(|info| {
                        info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                    })
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Indexes (in `nodes`) of the primaries.
    pub fn primaries(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                self.nodes[i]
                    .cli(&["ROLE"])
                    .is_some_and(|r| r.starts_with("master"))
            })
            .collect()
    }

    /// `redis+cluster://` with every node, then `/NAME` and `suffix`.
    pub fn url(&self, name: &str) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}/{name}", nodes.join(","))
    }
}

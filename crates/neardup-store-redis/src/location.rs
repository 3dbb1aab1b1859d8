//! Where an index lives in Redis: `redis://[USER:PASSWORD@]HOST:PORT/NAME` (one Redis) or
//! `redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]/NAME` (a Redis Cluster: any of its nodes), with
//! optional parameters `?wait=N&wait_ms=T` (see [`Wait`]).
//!
//! Credentials come from the URL or, when it has none, from `NEARDUP_REDIS_USERNAME` and
//! `NEARDUP_REDIS_PASSWORD`. They never appear in messages: [`RedisLocation`]'s `Display` shows the URL
//! without its password.

use std::fmt;

/// The URL schemes this crate opens.
pub const SCHEMES: [&str; 2] = ["redis://", "redis+cluster://"];

/// Whether a location string names a Redis index (rather than a directory).
pub fn is_redis_url(location: &str) -> bool {
    SCHEMES.iter().any(|s| location.starts_with(s))
}

/// How many replicas must confirm each batch (Redis's `WAIT`) before it is acknowledged, and how long to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Replicas (of every primary written to) that must have the batch.
    pub replicas: u32,
    /// How long to wait for them, in milliseconds; a batch they did not all confirm in time is an error.
    pub timeout_ms: u64,
}

/// A parsed Redis index location.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    /// A cluster (`redis+cluster://`) or one server.
    pub cluster: bool,
    /// `host:port` of each node given.
    pub nodes: Vec<String>,
    /// The index's name: every key of the index starts with `nd:{NAME`.
    pub name: String,
    /// The user (ACL), from the URL or the environment.
    pub username: Option<String>,
    /// The password, from the URL or the environment (never shown).
    pub password: Option<String>,
    /// Replicas to wait for, if any.
    pub wait: Option<Wait>,
}

impl fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for RedisLocation {
    /// The URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.cluster {
            "redis+cluster"
        } else {
            "redis"
        };
        write!(f, "{scheme}://")?;
        match (&self.username, &self.password) {
            (Some(user), Some(_)) => write!(f, "{user}:***@")?,
            (Some(user), None) => write!(f, "{user}@")?,
            (None, Some(_)) => write!(f, ":***@")?,
            (None, None) => {}
        }
        write!(f, "{}/{}", self.nodes.join(","), self.name)
    }
}

/// The longest index name.
pub const MAX_NAME: usize = 128;

impl RedisLocation {
    /// Parses a location; credentials missing from the URL are read from the environment.
    pub fn parse(url: &str) -> Result<Self, String> {
        Self::parse_with(url, |name| std::env::var(name).ok())
    }

    /// Parses a location, reading missing credentials through `env`.
    pub fn parse_with(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let bad = |what: &str| {
            format!(
                "'{}' is not a Redis index location ({what}): use redis://HOST:PORT/NAME or \
                 redis+cluster://HOST:PORT,HOST:PORT/NAME",
                redact(url)
            )
        };
        let (cluster, rest) = if let Some(rest) = url.strip_prefix("redis+cluster://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("redis://") {
            (false, rest)
        } else {
            return Err(bad("an unknown scheme"));
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (authority, name) = rest
            .split_once('/')
            .ok_or_else(|| bad("no /NAME after the address"))?;
        let (credentials, hosts) = match authority.rsplit_once('@') {
            Some((credentials, hosts)) => (Some(credentials), hosts),
            None => (None, authority),
        };
        let (mut username, mut password) = match credentials {
            Some(c) => match c.split_once(':') {
                Some((user, pass)) => (nonempty(user), nonempty(pass)),
                None => (nonempty(c), None),
            },
            None => (None, None),
        };
        if username.is_none() {
            username = env("NEARDUP_REDIS_USERNAME").and_then(|u| nonempty(&u));
        }
        if password.is_none() {
            password = env("NEARDUP_REDIS_PASSWORD").and_then(|p| nonempty(&p));
        }
        let nodes: Vec<String> = hosts.split(',').map(str::to_owned).collect();
        for node in &nodes {
            let (host, port) = node
                .rsplit_once(':')
                .ok_or_else(|| bad(&format!("'{node}' has no :PORT")))?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad(&format!("'{node}' is not HOST:PORT")));
            }
        }
        if !cluster && nodes.len() != 1 {
            return Err(bad(
                "several nodes for one server: use redis+cluster:// for a cluster",
            ));
        }
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(bad(&format!(
                "the name '{name}' must be 1 to {MAX_NAME} letters, digits, '.', '_' or '-'"
            )));
        }
        let mut wait = None;
        if let Some(query) = query {
            let mut replicas = None;
            let mut timeout_ms = 1000;
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some(("wait", n)) => {
                        replicas = Some(n.parse::<u32>().map_err(|_| bad("wait=N needs a number"))?)
                    }
                    Some(("wait_ms", t)) => {
                        timeout_ms = t
                            .parse::<u64>()
                            .ok()
                            .filter(|&t| t > 0)
                            .ok_or_else(|| bad("wait_ms=T needs a positive number"))?
                    }
                    _ => {
                        return Err(bad(&format!(
                            "unknown parameter '{pair}' (known: wait, wait_ms)"
                        )));
                    }
                }
            }
            wait = replicas.filter(|&n| n > 0).map(|replicas| Wait {
                replicas,
                timeout_ms,
            });
        }
        Ok(RedisLocation {
            cluster,
            nodes,
            name: name.to_owned(),
            username,
            password,
            wait,
        })
    }

    /// The URL of one node, with credentials, for the client library (never for messages).
    pub(crate) fn node_url(&self, node: &str) -> String {
        let mut url = String::from("redis://");
        if let Some(user) = &self.username {
            url.push_str(&percent(user));
        }
        if let Some(password) = &self.password {
            url.push(':');
            url.push_str(&percent(password));
        }
        if self.username.is_some() || self.password.is_some() {
            url.push('@');
        }
        url.push_str(node);
        url
    }
}

fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// Escapes what a URL's user-info cannot hold.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A URL with any password hidden, for messages about a URL that did not parse.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(start), Some(at)) if at > start => {
            let credentials = &url[start + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..start + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn parses_single_and_cluster_urls() {
        let single = RedisLocation::parse_with("redis://127.0.0.1:6379/docs", no_env).unwrap();
        assert!(!single.cluster);
        assert_eq!(single.nodes, ["127.0.0.1:6379"]);
        assert_eq!(single.name, "docs");
        assert_eq!(single.wait, None);
        let cluster = RedisLocation::parse_with(
            "redis+cluster://u:s3cret@h1:7000,h2:7001/web.v1?wait=1&wait_ms=500",
            no_env,
        )
        .unwrap();
        assert!(cluster.cluster);
        assert_eq!(cluster.nodes, ["h1:7000", "h2:7001"]);
        assert_eq!(cluster.username.as_deref(), Some("u"));
        assert_eq!(cluster.password.as_deref(), Some("s3cret"));
        assert_eq!(
            cluster.wait,
            Some(Wait {
                replicas: 1,
                timeout_ms: 500
            })
        );
        assert_eq!(cluster.node_url("h1:7000"), "redis://u:s3cret@h1:7000");
    }

    #[test]
    fn passwords_never_show() {
        let loc = RedisLocation::parse_with("redis://u:s3cret@h:1/x", no_env).unwrap();
        assert_eq!(loc.to_string(), "redis://u:***@h:1/x");
        assert!(!format!("{loc:?}").contains("s3cret"));
        let env = |name: &str| (name == "NEARDUP_REDIS_PASSWORD").then(|| "envpw".to_owned());
        let loc = RedisLocation::parse_with("redis://h:1/x", env).unwrap();
        assert_eq!(loc.password.as_deref(), Some("envpw"));
        assert_eq!(loc.to_string(), "redis://:***@h:1/x");
        let err = RedisLocation::parse_with("redis://u:s3cret@h/x", no_env).unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn bad_urls_are_named() {
        for (url, says) in [
            ("http://h:1/x", "scheme"),
            ("redis://h:1", "/NAME"),
            ("redis://h/x", ":PORT"),
            ("redis://h:99999/x", "HOST:PORT"),
            ("redis://h:1,g:2/x", "redis+cluster"),
            ("redis://h:1/a b", "name"),
            ("redis://h:1/", "name"),
            ("redis://h:1/x?wait=two", "wait"),
            ("redis://h:1/x?fsync=1", "unknown parameter"),
        ] {
            let err = RedisLocation::parse_with(url, no_env).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
        assert!(is_redis_url("redis+cluster://a:1/x"));
        assert!(!is_redis_url("/var/index"));
    }
}

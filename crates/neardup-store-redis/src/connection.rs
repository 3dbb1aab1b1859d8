//! Connections to one Redis or to a Redis Cluster, pooled: each caller takes a connection of its own, so that
//! queries from many threads (a server's) run side by side.
//!
//! Every connection has connect, read and write timeouts, so a Redis that stops answering is an error, never
//! a hang. A connection that failed is dropped rather than returned to the pool (the next caller dials
//! again); the cluster client itself follows `MOVED` redirections and refreshes its map of slots after a
//! failover.

use crate::location::RedisLocation;
use neardup_index::parallel;
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Cmd, RedisResult, Value};
use std::sync::Mutex;
use std::time::Duration;

/// How long to wait for a connection, and for each reply.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections kept for reuse.
const MAX_IDLE: usize = 64;

/// One connection.
pub(crate) enum Conn {
    Single(redis::Connection),
    Cluster(Box<ClusterConnection>),
}

impl Conn {
    /// Sends the commands in one pipeline (one round trip per node involved) and returns their replies, in
    /// order. An error reply of any command is an error of the whole call.
    pub(crate) fn pipeline(&mut self, commands: Vec<Cmd>) -> RedisResult<Vec<Value>> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Conn::Single(con) => {
                let mut pipe = redis::pipe();
                for c in commands {
                    pipe.add_command(c);
                }
                pipe.query(con)
            }
            Conn::Cluster(con) => {
                let mut pipe = redis::cluster::cluster_pipe();
                for c in commands {
                    pipe.add_command(c);
                }
                pipe.query(con)
            }
        }
    }

    /// Runs commands in pipelines of at most `chunk` commands.
    pub(crate) fn pipelines(
        &mut self,
        commands: Vec<Cmd>,
        chunk: usize,
    ) -> RedisResult<Vec<Value>> {
        let mut replies = Vec::with_capacity(commands.len());
        let mut commands = commands.into_iter().peekable();
        while commands.peek().is_some() {
            let part: Vec<Cmd> = commands.by_ref().take(chunk).collect();
            replies.extend(self.pipeline(part)?);
        }
        Ok(replies)
    }

    /// One command (routed by the cluster client's rules: `WAIT` goes to every primary, on the connections
    /// that wrote, and answers the fewest replicas that confirmed).
    pub(crate) fn query(&mut self, command: Cmd) -> RedisResult<Value> {
        match self {
            Conn::Single(con) => command.query(con),
            Conn::Cluster(con) => command.query(con.as_mut()),
        }
    }
}

/// Dials connections and keeps the idle ones.
pub(crate) struct Pool {
    dial: Dialer,
    idle: Mutex<Idle>,
}

/// Idle connections, and the process they were dialed in: a forked child must not use its parent's
/// sockets (both would read each other's replies), so it dials its own.
struct Idle {
    /// [`parallel::generation`] when these were dialed.
    generation: u64,
    connections: Vec<Conn>,
}

enum Dialer {
    Single(redis::Client),
    Cluster(ClusterClient),
}

impl Pool {
    /// A pool for a location; checks that a first connection can be made.
    pub(crate) fn new(location: &RedisLocation) -> RedisResult<Self> {
        let dial = if location.cluster {
            let nodes: Vec<String> = location
                .nodes
                .iter()
                .map(|n| location.node_url(n))
                .collect();
            let mut builder = ClusterClient::builder(nodes)
                .connection_timeout(CONNECT_TIMEOUT)
                .response_timeout(IO_TIMEOUT);
            if let Some(user) = &location.username {
                builder = builder.username(user.clone());
            }
            if let Some(password) = &location.password {
                builder = builder.password(password.clone());
            }
            Dialer::Cluster(builder.build()?)
        } else {
            Dialer::Single(redis::Client::open(location.node_url(&location.nodes[0]))?)
        };
        let pool = Pool {
            dial,
            idle: Mutex::new(Idle {
                generation: parallel::generation(),
                connections: Vec::new(),
            }),
        };
        let first = pool.dial()?;
        pool.idle().connections.push(first);
        Ok(pool)
    }

    fn dial(&self) -> RedisResult<Conn> {
        match &self.dial {
            Dialer::Single(client) => {
                let con = client.get_connection_with_timeout(CONNECT_TIMEOUT)?;
                con.set_read_timeout(Some(IO_TIMEOUT))?;
                con.set_write_timeout(Some(IO_TIMEOUT))?;
                Ok(Conn::Single(con))
            }
            Dialer::Cluster(client) => {
                let con = client.get_connection()?;
                con.set_read_timeout(Some(IO_TIMEOUT))?;
                con.set_write_timeout(Some(IO_TIMEOUT))?;
                Ok(Conn::Cluster(Box::new(con)))
            }
        }
    }

    /// Runs `f` with a connection of its own.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Conn) -> RedisResult<R>) -> RedisResult<R> {
        self.with_mapped(|e| e, f)
    }

    /// Runs `f` with a connection of its own; a failure to dial becomes the caller's error through `dial_error`.
    pub(crate) fn with_mapped<R, E>(
        &self,
        dial_error: impl FnOnce(redis::RedisError) -> E,
        f: impl FnOnce(&mut Conn) -> Result<R, E>,
    ) -> Result<R, E> {
        let taken = self.idle().connections.pop();
        let mut con = match taken {
            Some(con) => con,
            None => self.dial().map_err(dial_error)?,
        };
        let dialed_in = parallel::generation();
        let result = f(&mut con);
        if result.is_ok() {
            let mut idle = self.idle();
            if idle.generation == dialed_in && idle.connections.len() < MAX_IDLE {
                idle.connections.push(con);
            }
        }
        result
    }

    /// The idle connections of this process (a forked child's inherited ones are let go, unused).
    fn idle(&self) -> std::sync::MutexGuard<'_, Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let now = parallel::generation();
        if idle.generation != now {
            // Forgotten, not dropped: dropping may shut the socket down, which the parent still uses.
            for inherited in idle.connections.drain(..) {
                std::mem::forget(inherited);
            }
            idle.generation = now;
        }
        idle
    }
}

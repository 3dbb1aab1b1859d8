//! # neardup-store-redis: one index, shared by many processes, in Redis or a Redis Cluster
//!
//! [`RedisStore`] is a [`Store`] that keeps a whole index in Redis: its entries and its tables (a Hamming
//! index's permuted keys, an LSH index's band keys), spread over the cluster's slots, so an index is bounded by
//! the cluster's memory and not by one process's. It is a *served* store ([`Served`]): an index over it keeps
//! nothing in memory, and every query asks Redis, so every process sees every acknowledged write at once.
//!
//! ```text
//! neardup index create redis+cluster://10.0.0.1:7000,10.0.0.2:7000/web --method simhash-doc-v1
//! neardup index add redis+cluster://10.0.0.1:7000/web pages/
//! neardup serve --index web=redis+cluster://10.0.0.1:7000/web      # on as many machines as needed
//! ```
//!
//! ## Layout
//!
//! See [`layout`] for the keys. Entries are grouped by their id's hash into two hashes each (id → version,
//! version → record); each table's buckets are grouped into sorted sets by their top bits and scored by the
//! next ones, so a query reads one range of one sorted set per table. A bucket member is one small integer
//! (the entry's version within its group, and the group), which Redis keeps compactly: what an index costs
//! in Redis is mostly its table memberships, and each is about 8 bytes.
//!
//! ## Queries: two round trips, exact
//!
//! A query computes its bucket in every table and reads them all in one pipeline (one round trip, to every
//! node involved at once); then it reads the records of the versions found, one `HMGET` per entry group in a
//! second pipeline, and keeps a record only if it is still there (a swap deletes the record of the version
//! it replaces) and lies in the probe's bucket. So an entry stored before the query is found, and an entry
//! replaced or removed meanwhile is reported with its current value or not at all.
//!
//! ## Writes: last writer wins, acknowledged when in Redis
//!
//! A batch takes a version for each put (one `HINCRBY` per entry group), then, in three pipelines: files the
//! new versions in their buckets; swaps each entry (one script per entry group, which sets the id's version
//! and record and returns the version and record it replaced); and takes the replaced versions out of their
//! buckets. Then one script on the index's own slot numbers the batch,
//! counts the entries and logs it. Every entry's final value is the one whose swap came last, and its buckets
//! hold it: bucket members are removed only by the writer that swapped their version out, so two processes
//! writing one id converge to one entry (the last swap wins) with its buckets right.
//!
//! A batch is acknowledged once all of that is in Redis, and, with `?wait=N` in the location, once `N`
//! replicas of every primary confirmed it (Redis's `WAIT`): such a batch survives the failover of a primary.
//! Durability across a restart of Redis itself is Redis's own (`appendonly yes`, `appendfsync always`).
//!
//! What Redis cannot give across slots: a batch is not atomic as a whole. Each change is; a batch that fails
//! half-way (a node unreachable) is an error, may have applied some of its changes, and may be applied again
//! whole. A writer that dies half-way leaves bucket members that no entry has (filtered out by the version
//! check, and counted by nothing), and the entry count can drift by the changes of its unfinished batch.
//! The log numbers batches in the order they were committed, which for two writers racing on one id need
//! not be the order of their swaps: it is a feed of what happened, not a replay of the state (readers do not
//! replay it: they ask Redis).

#![warn(missing_docs)]

mod connection;
pub mod layout;
mod location;

pub use location::{MAX_NAME, RedisLocation, SCHEMES, Wait, is_redis_url};

use connection::{Conn, Pool};
use layout::Keys;
use neardup_index::buckets::buckets_for;
use neardup_index::store::served::{Buckets, Served};
use neardup_index::store::{
    Change, ChangesSince, Retention, Settings, Store, StoreError, Visit, check_batch,
    check_settings,
};
use redis::{Cmd, Value, cmd};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Commands per pipeline: big batches go in several.
const PIPELINE: usize = 20_000;
/// Entry groups read per round trip when walking every entry.
const WALK: usize = 256;

/// An index's store in Redis (see the crate documentation). Handles are clones sharing one pool of
/// connections; each may set its own retention.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
    retention: Retention,
    /// Whether this handle refuses writes ([`RedisStore::open_reader`]).
    reader: bool,
}

struct Inner {
    location: RedisLocation,
    /// The location as messages show it (no password).
    shown: PathBuf,
    keys: Keys,
    pool: Pool,
    settings: Settings,
    buckets: Option<Arc<dyn Buckets>>,
    entry_bits: u32,
    table_bits: u32,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisStore({})", self.inner.location)
    }
}

impl RedisStore {
    /// Creates an index in Redis, laid out for about `expected` entries (the group sizes; any number fits).
    /// Refuses a name that is taken.
    pub fn create(
        location: &RedisLocation,
        settings: &Settings,
        expected: u64,
    ) -> Result<Self, StoreError> {
        let shown = PathBuf::from(location.to_string());
        check_settings(&shown, settings)?;
        let pool = Pool::new(location).map_err(|e| io(&shown, e))?;
        let keys = Keys::new(&location.name);
        let bits = layout::group_bits(expected).to_string();
        let mut fields: Vec<(String, String)> = vec![
            ("format".into(), layout::FORMAT.into()),
            ("entry_bits".into(), bits.clone()),
            ("table_bits".into(), bits),
            ("seq".into(), "0".into()),
            ("entries".into(), "0".into()),
            ("logged".into(), "0".into()),
        ];
        fields.extend(settings.iter().map(|(k, v)| (format!("s:{k}"), v.clone())));
        let mut create = cmd("EVAL");
        create.arg(layout::CREATE).arg(1).arg(&keys.meta);
        for (k, v) in &fields {
            create.arg(k).arg(v);
        }
        let created: i64 = pool
            .with(|con| con.query(create))
            .map_err(|e| io(&shown, e))
            .and_then(|v| decode(&shown, v))?;
        if created == 0 {
            return Err(StoreError::Exists(shown));
        }
        Self::from_pool(location, pool)
    }

    /// Opens an index in Redis.
    pub fn open(location: &RedisLocation) -> Result<Self, StoreError> {
        let shown = PathBuf::from(location.to_string());
        let pool = Pool::new(location).map_err(|e| io(&shown, e))?;
        Self::from_pool(location, pool)
    }

    /// Opens an index in Redis for reading only: this handle refuses every write (other processes may write).
    pub fn open_reader(location: &RedisLocation) -> Result<Self, StoreError> {
        let mut store = Self::open(location)?;
        store.reader = true;
        Ok(store)
    }

    fn from_pool(location: &RedisLocation, pool: Pool) -> Result<Self, StoreError> {
        let shown = PathBuf::from(location.to_string());
        let keys = Keys::new(&location.name);
        let fields: Vec<(String, Vec<u8>)> = pool
            .with(|con| con.query(cmd("HGETALL").arg(&keys.meta).clone()))
            .map_err(|e| io(&shown, e))
            .and_then(|v| decode(&shown, v))?;
        if fields.is_empty() {
            return Err(StoreError::Missing(shown));
        }
        let foreign = |reason: String| StoreError::Foreign {
            path: shown.clone(),
            reason,
        };
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| text(v));
        match field("format") {
            Some(f) if f == layout::FORMAT => {}
            Some(f) if f == "neardup-redis-1" => {
                return Err(foreign(format!(
                    "format {f}, an earlier layout (members carried ids); this neardup reads {}: \
                     create the index again under a new name, or after deleting its keys (nd:{{NAME…)",
                    layout::FORMAT
                )));
            }
            other => {
                return Err(foreign(format!(
                    "format {other:?}, not {} (a key of another program under this name?)",
                    layout::FORMAT
                )));
            }
        }
        let bits = |name: &str| -> Result<u32, StoreError> {
            field(name)
                .and_then(|v| v.parse().ok())
                .filter(|&b| b <= layout::MAX_GROUP_BITS)
                .ok_or_else(|| foreign(format!("no valid '{name}'")))
        };
        let settings: Settings = fields
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("s:")?.to_owned(), text(v))))
            .collect();
        let buckets = buckets_for(&settings);
        Ok(RedisStore {
            inner: Arc::new(Inner {
                location: location.clone(),
                keys,
                pool,
                entry_bits: bits("entry_bits")?,
                table_bits: bits("table_bits")?,
                settings,
                buckets,
                shown,
            }),
            retention: Retention::default(),
            reader: false,
        })
    }

    /// Deletes an index from Redis: every key it has. Refuses nothing: an absent index is deleted already.
    pub fn destroy(location: &RedisLocation) -> Result<(), StoreError> {
        let store = match Self::open(location) {
            Ok(store) => store,
            Err(StoreError::Missing(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let inner = &store.inner;
        let mut keys: Vec<String> = (0..1u64 << inner.entry_bits)
            .flat_map(|g| [inner.keys.entries(g), inner.keys.records(g)])
            .collect();
        if let Some(buckets) = &inner.buckets {
            for t in 0..buckets.tables() {
                let g = inner.table_bits.min(buckets.bits(t));
                keys.extend((0..1u64 << g).map(|group| inner.keys.table(t, group)));
            }
        }
        keys.extend([inner.keys.log.clone(), inner.keys.meta.clone()]);
        for chunk in keys.chunks(PIPELINE) {
            let commands = chunk.iter().map(|k| cmd("DEL").arg(k).clone()).collect();
            inner.run(commands)?;
        }
        Ok(())
    }

    /// The location (its `Display` hides the password).
    pub fn redis_location(&self) -> &RedisLocation {
        &self.inner.location
    }

    /// The bytes Redis uses, summed over the primaries (`INFO memory`'s `used_memory`), for benchmarks and
    /// `stats`: the whole server's, not this index's alone.
    pub fn used_memory(&self) -> Result<u64, StoreError> {
        let inner = &self.inner;
        let info = inner
            .pool
            .with(|con| match con {
                Conn::Single(c) => cmd("INFO")
                    .arg("memory")
                    .query::<String>(c)
                    .map(|s| vec![s]),
                Conn::Cluster(c) => {
                    let routed = c.route_command(
                        cmd("INFO").arg("memory"),
                        redis::cluster_routing::RoutingInfo::MultiNode((
                            redis::cluster_routing::MultipleNodeRoutingInfo::AllMasters,
                            None,
                        )),
                    )?;
                    let per_node: HashMap<String, String> =
                        redis::from_redis_value(routed).map_err(redis::RedisError::from)?;
                    Ok(per_node.into_values().collect())
                }
            })
            .map_err(|e| io(&inner.shown, e))?;
        Ok(info
            .iter()
            .flat_map(|s| s.lines())
            .filter_map(|l| l.strip_prefix("used_memory:"))
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .sum())
    }

    fn try_sequence(&self) -> Result<u64, StoreError> {
        let inner = &self.inner;
        let seq: Option<u64> = inner.one(cmd("HGET").arg(&inner.keys.meta).arg("seq").clone())?;
        Ok(seq.unwrap_or(0))
    }
}

impl Inner {
    /// Runs commands in pipelines of at most [`PIPELINE`], on one connection.
    fn run(&self, commands: Vec<Cmd>) -> Result<Vec<Value>, StoreError> {
        self.pool
            .with(|con| con.pipelines(commands, PIPELINE))
            .map_err(|e| io(&self.shown, e))
    }

    /// One command, its reply decoded.
    fn one<T: redis::FromRedisValue>(&self, command: Cmd) -> Result<T, StoreError> {
        let reply = self
            .pool
            .with(|con| con.query(command))
            .map_err(|e| io(&self.shown, e))?;
        decode(&self.shown, reply)
    }

    /// The key and score of a value's bucket in table `t`.
    fn bucket(&self, buckets: &dyn Buckets, t: usize, bucket: u64) -> (String, u64) {
        let (group, score) = layout::place(bucket, buckets.bits(t), self.table_bits);
        (self.keys.table(t, group), score)
    }

    /// The buckets of a value, or a refusal naming the id.
    fn buckets_of(&self, id: &str, value: &[u8]) -> Result<Option<Vec<u64>>, StoreError> {
        let Some(buckets) = &self.buckets else {
            return Ok(None);
        };
        buckets.buckets(value).map(Some).ok_or_else(|| {
            let shown: String = id.chars().take(64).collect();
            StoreError::Refused {
                path: self.shown.clone(),
                reason: format!(
                    "the value of '{shown}' ({} bytes) is not an entry of this index",
                    value.len()
                ),
            }
        })
    }

    fn foreign(&self, reason: String) -> StoreError {
        StoreError::Foreign {
            path: self.shown.clone(),
            reason,
        }
    }
}

/// A reply as a Rust value, or an error naming the store.
fn decode<T: redis::FromRedisValue>(path: &Path, value: Value) -> Result<T, StoreError> {
    redis::from_redis_value(value).map_err(|e| StoreError::Io {
        path: path.to_path_buf(),
        reason: format!("an unexpected reply: {e}"),
    })
}

fn io(path: &Path, e: redis::RedisError) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

impl RedisStore {
    /// [`Store::apply`] on one connection (see the crate documentation for the steps).
    fn apply_on(&self, con: &mut Conn, batch: &[Change]) -> Result<u64, StoreError> {
        let inner = &self.inner;
        let run = |con: &mut Conn, commands: Vec<Cmd>| {
            con.pipelines(commands, PIPELINE)
                .map_err(|e| io(&inner.shown, e))
        };
        // Every put's buckets, before anything is written: a value that is not an entry is refused whole.
        let mut put_buckets = Vec::with_capacity(batch.len());
        for change in batch {
            put_buckets.push(match change {
                Change::Put { id, value } => inner.buckets_of(id, value)?,
                Change::Delete(_) => None,
            });
        }
        // Each change's entry group, and the changes of each group in the batch's order.
        let group_of: Vec<u64> = batch
            .iter()
            .map(|c| Keys::entry_group(c.id(), inner.entry_bits))
            .collect();
        let mut by_group: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, &g) in group_of.iter().enumerate() {
            by_group.entry(g).or_default().push(i);
        }
        let mut groups: Vec<(u64, Vec<usize>)> = by_group.into_iter().collect();
        groups.sort_unstable();
        // 0. Versions for the puts, numbered within each entry group (one HINCRBY per group with puts).
        let puts_of = |members: &[usize]| -> Vec<usize> {
            members
                .iter()
                .copied()
                .filter(|&i| matches!(batch[i], Change::Put { .. }))
                .collect()
        };
        let reserving: Vec<(u64, Vec<usize>)> = groups
            .iter()
            .map(|(g, members)| (*g, puts_of(members)))
            .filter(|(_, puts)| !puts.is_empty())
            .collect();
        let reserve = reserving
            .iter()
            .map(|(g, puts)| {
                cmd("HINCRBY")
                    .arg(inner.keys.records(*g))
                    .arg(layout::LAST_VERSION)
                    .arg(puts.len())
                    .clone()
            })
            .collect();
        let mut versions = vec![0u64; batch.len()];
        for ((_, puts), reply) in reserving.iter().zip(run(con, reserve)?) {
            let last: u64 = decode(&inner.shown, reply)?;
            let first = (last + 1).saturating_sub(puts.len() as u64);
            for (&i, version) in puts.iter().zip(first..) {
                versions[i] = version;
            }
        }
        // 1. File the new versions in their buckets.
        let mut filing = Vec::new();
        if let Some(buckets) = &inner.buckets {
            for (i, found) in put_buckets.iter().enumerate() {
                if let Some(found) = found {
                    let member = layout::member(versions[i], group_of[i], inner.entry_bits);
                    for (t, &b) in found.iter().enumerate() {
                        let (key, score) = inner.bucket(buckets.as_ref(), t, b);
                        filing.push(cmd("ZADD").arg(key).arg(score).arg(&member).clone());
                    }
                }
            }
        }
        run(con, filing)?;
        // 2. Swap the entries, one script per entry group, in the batch's order within each group.
        let swaps = groups
            .iter()
            .map(|(g, members)| {
                let mut swap = cmd("EVAL");
                swap.arg(layout::SWAP)
                    .arg(2)
                    .arg(inner.keys.entries(*g))
                    .arg(inner.keys.records(*g));
                for &i in members {
                    match &batch[i] {
                        Change::Put { id, value } => swap
                            .arg("p")
                            .arg(id)
                            .arg(versions[i])
                            .arg(layout::record(id, value)),
                        Change::Delete(id) => swap.arg("d").arg(id),
                    };
                }
                swap
            })
            .collect();
        // Per change: the version and the record it replaced.
        let mut replaced: Vec<Option<(u64, Vec<u8>)>> = vec![None; batch.len()];
        for ((_, members), reply) in groups.iter().zip(run(con, swaps)?) {
            let olds: Vec<Option<Vec<u8>>> = decode(&inner.shown, reply)?;
            for (&i, old) in members.iter().zip(olds.chunks(2)) {
                let [version, record] = old else {
                    return Err(inner.foreign("a swap answered an odd number of values".into()));
                };
                let version = version
                    .as_deref()
                    .map(|v| {
                        layout::parse_version(v).ok_or_else(|| {
                            inner.foreign("an entry's version is not a number".into())
                        })
                    })
                    .transpose()?;
                replaced[i] = version.map(|v| (v, record.clone().unwrap_or_default()));
            }
        }
        // 3. Take the replaced versions out of their buckets; count the entries gained and lost.
        let mut unfiling = Vec::new();
        let mut delta: i64 = 0;
        for (i, (change, old)) in batch.iter().zip(&replaced).enumerate() {
            delta += match (change, old) {
                (Change::Put { .. }, None) => 1,
                (Change::Delete(_), Some(_)) => -1,
                _ => 0,
            };
            let (Some(buckets), Some((version, record))) = (&inner.buckets, old) else {
                continue;
            };
            let Some((_, value)) = layout::parse_record(record) else {
                continue; // a record lost to a writer killed half-way: its members are filtered out
            };
            if let Some(found) = buckets.buckets(value) {
                let member = layout::member(*version, group_of[i], inner.entry_bits);
                for (t, &b) in found.iter().enumerate() {
                    let (key, _) = inner.bucket(buckets.as_ref(), t, b);
                    unfiling.push(cmd("ZREM").arg(key).arg(&member).clone());
                }
            }
        }
        run(con, unfiling)?;
        // 4. Number, count and log the batch.
        let commit = cmd("EVAL")
            .arg(layout::COMMIT)
            .arg(2)
            .arg(&inner.keys.meta)
            .arg(&inner.keys.log)
            .arg(layout::encode_changes(batch))
            .arg(batch.len())
            .arg(delta)
            .arg(self.retention.min_changes)
            .arg(self.retention.per_entry)
            .clone();
        let reply = con.query(commit).map_err(|e| io(&inner.shown, e))?;
        let sequence: u64 = decode(&inner.shown, reply)?;
        if let Some(wait) = inner.location.wait {
            // Not in a pipeline: a cluster sends it to every primary, on the connections this batch used.
            let reply = con
                .query(cmd("WAIT").arg(wait.replicas).arg(wait.timeout_ms).clone())
                .map_err(|e| io(&inner.shown, e))?;
            let confirmed: u64 = decode(&inner.shown, reply)?;
            if confirmed < wait.replicas as u64 {
                return Err(StoreError::Io {
                    path: inner.shown.clone(),
                    reason: format!(
                        "batch {sequence} is in Redis but only {confirmed} of {} replicas confirmed it \
                         within {} ms: it is not acknowledged",
                        wait.replicas, wait.timeout_ms
                    ),
                });
            }
        }
        Ok(sequence)
    }
}

impl Store for RedisStore {
    fn location(&self) -> &Path {
        &self.inner.shown
    }

    fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        let inner = &self.inner;
        let groups: Vec<u64> = (0..1u64 << inner.entry_bits).collect();
        for chunk in groups.chunks(WALK) {
            let commands = chunk
                .iter()
                .map(|&g| cmd("HGETALL").arg(inner.keys.records(g)).clone())
                .collect();
            for reply in inner.run(commands)? {
                let flat: Vec<Vec<u8>> = decode(&inner.shown, reply)?;
                for pair in flat.chunks_exact(2) {
                    if pair[0] == layout::LAST_VERSION.as_bytes() {
                        continue;
                    }
                    let (id, value) = layout::parse_record(&pair[1])
                        .ok_or_else(|| inner.foreign("a record that is not one".into()))?;
                    f(id, value)?;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError> {
        check_batch(&self.inner.shown, batch)?;
        if batch.is_empty() {
            return self.try_sequence();
        }
        if self.reader {
            return Err(StoreError::Refused {
                path: self.inner.shown.clone(),
                reason: "this handle was opened as a reader: it writes nothing".into(),
            });
        }
        // One connection for the whole batch: `WAIT` counts the replicas that have this connection's writes.
        let inner = self.inner.clone();
        inner
            .pool
            .with_mapped(|e| io(&inner.shown, e), |con| self.apply_on(con, batch))
    }

    fn sequence(&self) -> u64 {
        // A store that cannot be read reports no batch; its reads and writes report the error.
        self.try_sequence().unwrap_or(0)
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        let inner = &self.inner;
        let replies = inner.run(vec![
            cmd("HGET").arg(&inner.keys.meta).arg("seq").clone(),
            cmd("LRANGE").arg(&inner.keys.log).arg(0).arg(-1).clone(),
        ])?;
        let mut replies = replies.into_iter();
        let sequence: Option<u64> = decode(&inner.shown, replies.next().unwrap_or(Value::Nil))?;
        let sequence = sequence.unwrap_or(0);
        let log: Vec<Vec<u8>> = decode(&inner.shown, replies.next().unwrap_or(Value::Nil))?;
        if since > sequence {
            return Err(StoreError::Ahead {
                path: inner.shown.clone(),
                asked: since,
                sequence,
            });
        }
        let mut batches = Vec::with_capacity(log.len());
        for element in &log {
            batches.push(layout::decode_batch(element).map_err(|e| inner.foreign(e))?);
        }
        let oldest = batches.first().map_or(sequence + 1, |b| b.sequence);
        if since + 1 < oldest && since < sequence {
            return Ok(ChangesSince::TooOld { oldest });
        }
        Ok(ChangesSince::Changes(
            batches.into_iter().filter(|b| b.sequence > since).collect(),
        ))
    }

    fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
    }

    fn served(&self) -> Option<&dyn Served> {
        self.inner.buckets.is_some().then_some(self as &dyn Served)
    }
}

impl Served for RedisStore {
    fn count(&self) -> Result<u64, StoreError> {
        let inner = &self.inner;
        let n: Option<i64> = inner.one(cmd("HGET").arg(&inner.keys.meta).arg("entries").clone())?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }

    fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let inner = &self.inner;
        let group = Keys::entry_group(id, inner.entry_bits);
        let stored: Option<Vec<u8>> = inner.one(
            cmd("EVAL")
                .arg(layout::GET)
                .arg(2)
                .arg(inner.keys.entries(group))
                .arg(inner.keys.records(group))
                .arg(id)
                .clone(),
        )?;
        match stored {
            None => Ok(None),
            Some(bytes) => layout::parse_record(&bytes)
                .map(|(_, value)| Some(value.to_vec()))
                .ok_or_else(|| inner.foreign(format!("the record of '{id}' is not one"))),
        }
    }

    fn neighbours(&self, probe: &[u8]) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let inner = &self.inner;
        let Some(buckets) = &inner.buckets else {
            return Ok(Vec::new());
        };
        let Some(probe_buckets) = buckets.buckets(probe) else {
            return Err(StoreError::Refused {
                path: inner.shown.clone(),
                reason: format!(
                    "a probe of {} bytes is not an entry of this index",
                    probe.len()
                ),
            });
        };
        // Round trip 1: every table's bucket.
        let reads = probe_buckets
            .iter()
            .enumerate()
            .map(|(t, &b)| {
                let (key, score) = inner.bucket(buckets.as_ref(), t, b);
                cmd("ZRANGEBYSCORE").arg(key).arg(score).arg(score).clone()
            })
            .collect();
        // (entry group, version) → the tables that filed it.
        let mut filed: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        for (t, reply) in inner.run(reads)?.into_iter().enumerate() {
            let members: Vec<Vec<u8>> = decode(&inner.shown, reply)?;
            for m in &members {
                let (version, group) = layout::parse_member(m, inner.entry_bits)
                    .ok_or_else(|| inner.foreign("a bucket member that is not one".into()))?;
                filed.entry((group, version)).or_default().push(t);
            }
        }
        if filed.is_empty() {
            return Ok(Vec::new());
        }
        // Round trip 2: the records of the versions found, one HMGET per entry group. A version replaced or
        // removed since has no record.
        let mut candidates: Vec<((u64, u64), Vec<usize>)> = filed.into_iter().collect();
        candidates.sort_unstable();
        let per_group = candidates.chunk_by(|a, b| a.0.0 == b.0.0);
        let reads = per_group
            .clone()
            .map(|run| {
                let mut read = cmd("HMGET");
                read.arg(inner.keys.records(run[0].0.0));
                for ((_, version), _) in run {
                    read.arg(version);
                }
                read
            })
            .collect();
        let mut found: Vec<(String, Vec<u8>)> = Vec::new();
        for (run, reply) in per_group.zip(inner.run(reads)?) {
            let records: Vec<Option<Vec<u8>>> = decode(&inner.shown, reply)?;
            for ((_, tables), record) in run.iter().zip(&records) {
                let Some(record) = record else {
                    continue; // replaced or removed since (its current version is filed too, if a neighbour)
                };
                let (id, value) = layout::parse_record(record)
                    .ok_or_else(|| inner.foreign("a record that is not one".into()))?;
                // The score holds at most 52 of a bucket's bits: check the whole bucket.
                let Some(own) = buckets.buckets(value) else {
                    continue;
                };
                if tables.iter().any(|&t| own[t] == probe_buckets[t]) {
                    found.push((id.to_owned(), value.to_vec()));
                }
            }
        }
        found.sort();
        found.dedup_by(|a, b| a.0 == b.0);
        Ok(found)
    }
}

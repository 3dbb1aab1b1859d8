//! An index shared by many threads, for servers: queries never wait for a durable write, and concurrent
//! writes are grouped into one durable commit.
//!
//! Queries read the index's memory under a read lock. Writes are queued to one writer thread, which takes
//! every write waiting (up to [`GroupCommit::max_changes`]) and, in queue order:
//!
//! 1. answers the queries that come with writes ([`Write::Put`] with `query`) against the memory *and* the
//!    earlier writes of its group, so that two near-duplicates posted at the same instant see each other
//!    exactly as if they had been posted one after the other;
//! 2. commits the group's changes as one durable transaction through its own handle of the store (no lock
//!    held: queries go on meanwhile);
//! 3. applies them to memory under a short write lock;
//! 4. answers each caller, only now that its write survives a crash.
//!
//! ```
//! use neardup::index::{Index, IndexSettings, MemoryStore, Radius, Shared, Write, Written};
//! use neardup::{Method, Scheme};
//!
//! let dir = std::env::temp_dir().join(format!("neardup-doc-shared-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let method = Method::SimHash(Scheme::SimhashDocV1);
//! let shared = Shared::new(Index::create(&dir, method, &IndexSettings::default())?, Default::default());
//! let page = method.sketch_text("the quick brown fox jumps over the lazy dog")?;
//! let put = |id: &str| Write::Put { id: id.into(), sketch: page.clone(), query: Some(Radius::Default) };
//! assert!(matches!(shared.write(put("a"))?, Written::Put { matches } if matches.is_empty()));
//! let Written::Put { matches } = shared.write(put("b"))? else { unreachable!() };
//! assert_eq!(matches[0].id, "a");
//! assert_eq!(shared.query(&page, Radius::Default)?.len(), 2);
//! shared.close();
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), neardup::Error>(())
//! ```

use super::{Change, Index, Match, Radius, Store, sort_matches};
use crate::error::Error;
use crate::sketch::{Method, Sketch};
use neardup_index::store::Kind;
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;

/// A write to a [`Shared`] index.
#[derive(Clone, Debug)]
pub enum Write {
    /// Stores a sketch under an id (replacing the id's previous one). With `query`, first finds the
    /// entries near it: those stored before it (the id's previous sketch included) and those written
    /// earlier in its group.
    Put {
        /// The id (any string: a URL, a path).
        id: String,
        /// Its sketch, of the index's method.
        sketch: Sketch,
        /// Whether to find, and how far, the entries near it first.
        query: Option<Radius>,
    },
    /// Stores many sketches, in order (a later one replaces an earlier one of the same id).
    PutMany(Vec<(String, Sketch)>),
    /// Removes an id.
    Remove {
        /// The id.
        id: String,
    },
}

impl Write {
    /// How many changes it makes at most.
    fn size(&self) -> usize {
        match self {
            Write::PutMany(entries) => entries.len(),
            _ => 1,
        }
    }
}

/// What a durable write did.
#[derive(Clone, Debug, PartialEq)]
pub enum Written {
    /// Stored, with the matches asked for (empty when none were asked).
    Put {
        /// The matches, closest first.
        matches: Vec<Match>,
    },
    /// Stored this many.
    PutMany {
        /// How many.
        stored: usize,
    },
    /// Removed, or the id was not stored.
    Removed {
        /// Whether the id was stored.
        existed: bool,
    },
}

/// How writes are grouped.
#[derive(Clone, Copy, Debug)]
pub struct GroupCommit {
    /// The most changes in one durable commit (a bigger group waits for the next).
    pub max_changes: usize,
    /// Writes that may wait in the queue; a full queue makes [`Shared::submit`] refuse at once.
    pub queue: usize,
}

impl Default for GroupCommit {
    fn default() -> Self {
        GroupCommit {
            max_changes: 100_000,
            queue: 65_536,
        }
    }
}

/// Called once with the outcome of a write, on the writer thread: keep it short (send it on a channel).
pub type Reply = Box<dyn FnOnce(Result<Written, Error>) + Send>;

struct Job {
    write: Write,
    reply: Reply,
}

/// An [`Index`] shared by many threads; see the [module documentation](self).
pub struct Shared<S: Store + Clone + Send + Sync + 'static> {
    index: Arc<RwLock<Index<S>>>,
    queue: Mutex<Option<SyncSender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    method: Method,
    kind: Kind,
    location: String,
}

impl<S: Store + Clone + Send + Sync + 'static> Shared<S> {
    /// Shares an index, starting its writer thread.
    pub fn new(index: Index<S>, options: GroupCommit) -> Self {
        let (method, kind, location) =
            (index.method(), index.kind().clone(), index.location.clone());
        let store = index.store().clone();
        let index = Arc::new(RwLock::new(index));
        let (sender, receiver) = std::sync::mpsc::sync_channel(options.queue.max(1));
        let writer = {
            let index = Arc::clone(&index);
            std::thread::Builder::new()
                .name("neardup-index-writer".to_owned())
                .spawn(move || write_groups(&index, store, &receiver, options.max_changes.max(1)))
                .expect("a thread for the index writer")
        };
        Shared {
            index,
            queue: Mutex::new(Some(sender)),
            writer: Mutex::new(Some(writer)),
            method,
            kind,
            location,
        }
    }

    /// The method of every entry.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Hamming tables or LSH bands, and their parameters.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Where the index lives, for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Reads the index's memory (a consistent state: every write is applied whole or not at all).
    pub fn read<R>(&self, f: impl FnOnce(&Index<S>) -> R) -> R {
        f(&read(&self.index))
    }

    /// The stored ids near a sketch ([`Index::query`]).
    pub fn query(&self, sketch: &Sketch, radius: Radius) -> Result<Vec<Match>, Error> {
        self.read(|index| index.query(sketch, radius))
    }

    /// Queues a write; `reply` is called once it is durable (or failed). Refuses at once, calling `reply`
    /// with the error, when the queue is full or the index is closed.
    pub fn submit(&self, write: Write, reply: Reply) {
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let Some(sender) = queue.as_ref() else {
            return reply(Err(self.closed("the index is closed")));
        };
        match sender.try_send(Job { write, reply }) {
            Ok(()) => {}
            Err(TrySendError::Full(job)) => (job.reply)(Err(Error::Busy {
                location: self.location.clone(),
            })),
            Err(TrySendError::Disconnected(job)) => {
                (job.reply)(Err(self.closed("the index writer stopped")))
            }
        }
    }

    /// Queues a write and waits until it is durable.
    pub fn write(&self, write: Write) -> Result<Written, Error> {
        let (sender, receiver) = std::sync::mpsc::channel();
        self.submit(
            write,
            Box::new(move |outcome| {
                let _ = sender.send(outcome);
            }),
        );
        receiver
            .recv()
            .unwrap_or_else(|_| Err(self.closed("the index writer stopped")))
    }

    /// Stops taking writes, commits every queued one, and stops the writer thread. Queries still work.
    pub fn close(&self) {
        drop(self.queue.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = writer.join();
        }
    }

    fn closed(&self, reason: &str) -> Error {
        Error::Index {
            location: self.location.clone(),
            reason: format!("{}: {reason}", self.location),
        }
    }
}

impl<S: Store + Clone + Send + Sync + 'static> Drop for Shared<S> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Readers and the writer never poison each other: the lock's data is valid whatever a panicking holder did
/// (memory is updated only after a durable commit, whole batches at a time).
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// The writer thread: a group at a time until every sender is gone and the queue is empty.
fn write_groups<S: Store>(
    index: &RwLock<Index<S>>,
    mut store: S,
    queue: &Receiver<Job>,
    max_changes: usize,
) {
    loop {
        let first = match queue.recv_timeout(IDLE_CHECK) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                take_merged_segments(index);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut size = first.write.size();
        let mut group = vec![first];
        while size < max_changes {
            match queue.try_recv() {
                Ok(job) => {
                    size += job.write.size();
                    group.push(job);
                }
                Err(_) => break,
            }
        }
        commit_group(index, &mut store, group);
    }
}

/// How long the writer waits for a write before it looks for a finished background merge.
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_millis(200);

/// With no write coming, a merge that finished in the background would stay unused (queries reading the
/// old segments, whose files keep their disk space while mapped) until the next write: the idle writer
/// takes the new segments itself. The check is a read; only a change takes the write lock.
fn take_merged_segments<S: Store>(index: &RwLock<Index<S>>) {
    if read(index).segments_changed() {
        // A failed reload leaves the old segments in use; the next write tries again and reports it.
        let _ = write(index).refresh();
    }
}

/// Answers, commits and applies one group (see the module documentation).
fn commit_group<S: Store>(index: &RwLock<Index<S>>, store: &mut S, group: Vec<Job>) {
    let mut edits: Vec<Change> = Vec::new();
    // Each job's outcome if its changes commit; `Err` jobs are answered whatever happens.
    let mut outcomes: Vec<(Reply, Result<Written, Error>)> = Vec::with_capacity(group.len());
    let changes = {
        let index = read(index);
        // The ids this group has written so far: their sketch, or `None` once removed.
        let mut pending: HashMap<String, Option<Sketch>> = HashMap::new();
        for Job { write, reply } in group {
            let outcome = plan(&index, write, &mut pending, &mut edits);
            outcomes.push((reply, outcome));
        }
        index.inner.prepare(&edits).map_err(|e| Error::Index {
            location: index.location.clone(),
            reason: e.to_string(),
        })
    };
    let committed = changes.and_then(|changes| {
        if changes.is_empty() {
            return Ok(());
        }
        let location = store.location().display().to_string();
        let failed = |e: &dyn std::fmt::Display| Error::Index {
            location: location.clone(),
            reason: e.to_string(),
        };
        let sequence = store.apply(&changes).map_err(|e| failed(&e))?;
        let mut index = write(index);
        index
            .inner
            .applied(&edits, sequence)
            .map_err(|e| failed(&e))
    });
    for (reply, outcome) in outcomes {
        reply(match (&committed, outcome) {
            (_, Err(e)) => Err(e),
            (Ok(()), ok) => ok,
            (Err(e), Ok(_)) => Err(e.clone()),
        });
    }
}

/// One job's changes and answer, against the memory and the group's earlier writes.
fn plan<S: Store>(
    index: &Index<S>,
    write: Write,
    pending: &mut HashMap<String, Option<Sketch>>,
    edits: &mut Vec<Change>,
) -> Result<Written, Error> {
    match write {
        Write::Put { id, sketch, query } => {
            let change = index.change(&id, &sketch)?;
            let matches = match query {
                None => Vec::new(),
                Some(radius) => {
                    let mut matches = index.query(&sketch, radius)?;
                    // What this group changed is answered from the group, not from memory.
                    matches.retain(|m| !pending.contains_key(&m.id));
                    for (other, stored) in pending.iter() {
                        if let Some(score) = stored
                            .as_ref()
                            .and_then(|s| index.score_within(&sketch, s, radius))
                        {
                            matches.push(Match {
                                id: other.clone(),
                                score,
                            });
                        }
                    }
                    sort_matches(&mut matches);
                    matches
                }
            };
            edits.push(change);
            pending.insert(id, Some(sketch));
            Ok(Written::Put { matches })
        }
        Write::PutMany(entries) => {
            // Checked whole first: a batch with one bad sketch stores nothing.
            let changes = entries
                .iter()
                .map(|(id, sketch)| index.change(id, sketch))
                .collect::<Result<Vec<_>, _>>()?;
            let stored = changes.len();
            edits.extend(changes);
            for (id, sketch) in entries {
                pending.insert(id, Some(sketch));
            }
            Ok(Written::PutMany { stored })
        }
        Write::Remove { id } => {
            let existed = match pending.get(&id) {
                Some(sketch) => sketch.is_some(),
                None => index.contains(&id),
            };
            if existed {
                edits.push(index.removal(&id));
                pending.insert(id, None);
            }
            Ok(Written::Removed { existed })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scheme;
    use crate::index::MemoryStore;
    use crate::index::{IndexSettings, Kind};
    use crate::{Fingerprint, dedup::Score};
    use neardup_index::hamming::plan::recommend;
    use neardup_index::store::Meta;

    fn shared() -> Shared<MemoryStore> {
        let meta = Meta {
            scheme: "simhash-doc-v1".into(),
            kind: Kind::Hamming(recommend(IndexSettings::default().k, 1e4)),
        };
        let store = MemoryStore::new(meta.to_settings()).unwrap();
        Shared::new(
            Index::from_store(store, "memory".into()).unwrap(),
            GroupCommit::default(),
        )
    }

    fn fp(bits: u64) -> Sketch {
        Sketch::Fingerprint(Fingerprint::new(Scheme::SimhashDocV1, bits))
    }

    fn put(id: &str, bits: u64) -> Write {
        Write::Put {
            id: id.into(),
            sketch: fp(bits),
            query: Some(Radius::Default),
        }
    }

    #[test]
    fn a_group_sees_its_own_earlier_writes() {
        let shared = shared();
        // Queued together before the writer runs: one group, answered in order.
        let (sender, receiver) = std::sync::mpsc::channel();
        let writes = [
            put("a", 0),
            put("b", 0b1),
            Write::Remove { id: "a".into() },
            put("c", 0b11),
            Write::Remove { id: "zz".into() },
        ];
        for (n, w) in writes.into_iter().enumerate() {
            let sender = sender.clone();
            shared.submit(w, Box::new(move |o| sender.send((n, o)).unwrap()));
        }
        drop(sender);
        let mut answers: Vec<_> = receiver.iter().collect();
        answers.sort_by_key(|(n, _)| *n);
        let ids = |o: &Result<Written, Error>| match o {
            Ok(Written::Put { matches }) => matches
                .iter()
                .map(|m| m.id.clone())
                .collect::<Vec<String>>(),
            other => panic!("{other:?}"),
        };
        assert!(ids(&answers[0].1).is_empty());
        assert_eq!(ids(&answers[1].1), ["a"]);
        assert_eq!(answers[2].1, Ok(Written::Removed { existed: true }));
        // "a" is gone; "b" is 1 bit away.
        assert_eq!(ids(&answers[3].1), ["b"]);
        assert_eq!(answers[4].1, Ok(Written::Removed { existed: false }));
        let all = shared.query(&fp(0), Radius::Default).unwrap();
        let found: Vec<(&str, Score)> = all.iter().map(|m| (m.id.as_str(), m.score)).collect();
        assert_eq!(
            found,
            [("b", Score::Distance(1)), ("c", Score::Distance(2))]
        );
    }

    #[test]
    fn bad_writes_fail_alone_and_closed_indexes_refuse() {
        let shared = shared();
        let other = crate::Method::MinHash(crate::MinHashScheme::default_oph())
            .sketch_text("one two three four five six seven")
            .unwrap();
        let refused = shared.write(Write::PutMany(vec![
            ("x".into(), fp(1)),
            ("y".into(), other),
        ]));
        assert!(
            matches!(refused, Err(Error::MethodMismatch { .. })),
            "{refused:?}"
        );
        assert_eq!(
            shared.write(Write::PutMany(vec![("x".into(), fp(1))])),
            Ok(Written::PutMany { stored: 1 })
        );
        assert_eq!(shared.read(|i| i.len()), 1);
        shared.close();
        assert!(shared.write(put("z", 2)).is_err());
        assert_eq!(shared.query(&fp(1), Radius::Default).unwrap()[0].id, "x");
    }
}

//! The in-memory backend: entries in a sorted map, the change log in a queue, all behind one lock.
//!
//! A [`MemoryStore`] is a handle: its clones share one store, as two opens of one file would, so an index
//! (or a test) can follow another's writes through [`Store::changes_since`]. Batches are applied under the
//! lock after they are checked, so they are atomic; nothing survives the last handle. The store does not
//! police the one-writer rule (see [`crate::store`]): concurrent writers' batches are serialized by the lock.

use super::{
    Batch, Change, ChangesSince, Retention, Settings, Store, StoreError, Visit, check_batch,
    check_settings,
};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// A store in memory; clones are handles to the same store.
#[derive(Clone, Debug)]
pub struct MemoryStore {
    settings: Arc<Settings>,
    shared: Arc<Mutex<Shared>>,
    retention: Retention,
}

#[derive(Debug, Default)]
struct Shared {
    entries: BTreeMap<String, Vec<u8>>,
    sequence: u64,
    log: VecDeque<Batch>,
    /// Changes in `log`.
    logged: u64,
}

impl MemoryStore {
    /// An empty store with these settings (the setting `format` is the backends' own and is refused).
    pub fn new(settings: Settings) -> Result<Self, StoreError> {
        check_settings(Path::new("memory"), &settings)?;
        Ok(MemoryStore {
            settings: Arc::new(settings),
            shared: Arc::default(),
            retention: Retention::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while the lock was held happened before a batch was applied (see `apply`): the state is
        // whole, so a poisoned lock is taken as it is.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn location(&self) -> &Path {
        Path::new("memory")
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        let shared = self.lock();
        for (id, value) in &shared.entries {
            f(id, value)?;
        }
        Ok(())
    }

    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError> {
        check_batch(self.location(), batch)?;
        let mut shared = self.lock();
        if batch.is_empty() {
            return Ok(shared.sequence);
        }
        for change in batch {
            match change {
                Change::Put { id, value } => {
                    shared.entries.insert(id.clone(), value.clone());
                }
                Change::Delete(id) => {
                    shared.entries.remove(id);
                }
            }
        }
        shared.sequence += 1;
        let limit = self.retention.limit(shared.entries.len() as u64);
        let size = batch.len() as u64;
        if size > limit {
            shared.log.clear();
            shared.logged = 0;
        } else {
            let sequence = shared.sequence;
            shared.log.push_back(Batch {
                sequence,
                changes: batch.to_vec(),
            });
            shared.logged += size;
            while shared.logged > limit {
                let dropped = shared
                    .log
                    .pop_front()
                    .expect("a log over its limit has batches");
                shared.logged -= dropped.changes.len() as u64;
            }
        }
        Ok(shared.sequence)
    }

    fn sequence(&self) -> u64 {
        self.lock().sequence
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        let shared = self.lock();
        if since > shared.sequence {
            return Err(StoreError::Ahead {
                path: self.location().to_path_buf(),
                asked: since,
                sequence: shared.sequence,
            });
        }
        let oldest = shared
            .log
            .front()
            .map_or(shared.sequence + 1, |b| b.sequence);
        if since + 1 < oldest {
            return Ok(ChangesSince::TooOld { oldest });
        }
        Ok(ChangesSince::Changes(
            shared
                .log
                .iter()
                .filter(|b| b.sequence > since)
                .cloned()
                .collect(),
        ))
    }

    fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
    }
}

//! Where an index lives, and the store that holds it: a directory (mapped segments or a redb file, see
//! [`DiskStore`]) or a Redis URL (`redis://HOST:PORT/NAME`, `redis+cluster://HOST:PORT,…/NAME`; see
//! [`RedisStore`]). Every front door takes either wherever it takes an index, and the same calls work on
//! both: only [`IndexStore`] knows which it has.

use neardup_index::disk::{Backend, DiskStore};
use neardup_index::store::segments::{SegmentSet, Segmented};
use neardup_index::store::served::Served;
use neardup_index::store::{Change, ChangesSince, Retention, Settings, Store, StoreError, Visit};
pub use neardup_store_redis::{RedisLocation, RedisStore, is_redis_url};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A parsed index location.
#[derive(Clone, Debug)]
pub enum Location {
    /// A directory.
    Dir(PathBuf),
    /// An index in Redis.
    Redis(RedisLocation),
}

impl Location {
    /// A Redis URL (`redis://`, `redis+cluster://`) or else a directory. Another URL (`http://…`,
    /// `s3://…`) is refused: read as a path, it would become directories named after its parts.
    pub fn parse(location: &Path) -> Result<Location, String> {
        match location.to_str() {
            Some(text) if is_redis_url(text) => RedisLocation::parse(text).map(Location::Redis),
            Some(text) if url_scheme(text).is_some() => Err(format!(
                "{text}: an index is a directory or a Redis URL (redis://HOST:PORT/NAME, \
                 redis+cluster://HOST:PORT,…/NAME), not a {} URL",
                url_scheme(text).unwrap_or_default()
            )),
            _ => Ok(Location::Dir(location.to_path_buf())),
        }
    }

    /// The location for messages: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::Dir(dir) => dir.display().to_string(),
            Location::Redis(redis) => redis.to_string(),
        }
    }
}

/// The scheme of a URL (`http` of `http://host/x`): letters, then letters, digits, `+`, `-` or `.`, then
/// `://`. A path rarely starts so, and a file named so is still reachable as `./http://…`.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// The store of an index: on disk or in Redis.
#[derive(Clone, Debug)]
pub enum IndexStore {
    /// Segments or redb, in a directory.
    Disk(DiskStore),
    /// Redis or a Redis Cluster.
    Redis(RedisStore),
}

/// Where an index's entries are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// Mapped segments in a directory.
    Segments,
    /// One redb file in a directory.
    Redb,
    /// Redis (one server or a cluster).
    Redis,
}

impl StoreKind {
    /// `segments`, `redb` or `redis`.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Segments => "segments",
            StoreKind::Redb => "redb",
            StoreKind::Redis => "redis",
        }
    }
}

impl IndexStore {
    /// What kind of store it is.
    pub fn kind(&self) -> StoreKind {
        match self {
            IndexStore::Disk(d) => match d.backend() {
                Backend::Segments => StoreKind::Segments,
                Backend::Redb => StoreKind::Redb,
            },
            IndexStore::Redis(_) => StoreKind::Redis,
        }
    }

    /// The store on disk, if it is one.
    pub fn as_disk(&self) -> Option<&DiskStore> {
        match self {
            IndexStore::Disk(d) => Some(d),
            IndexStore::Redis(_) => None,
        }
    }

    /// The Redis store, if it is one.
    pub fn as_redis(&self) -> Option<&RedisStore> {
        match self {
            IndexStore::Redis(r) => Some(r),
            IndexStore::Disk(_) => None,
        }
    }
}

/// Delegates every call to the store inside.
macro_rules! both {
    ($self:expr, $s:ident => $call:expr) => {
        match $self {
            IndexStore::Disk($s) => $call,
            IndexStore::Redis($s) => $call,
        }
    };
}

impl Store for IndexStore {
    fn location(&self) -> &Path {
        both!(self, s => s.location())
    }

    fn settings(&self) -> &Settings {
        both!(self, s => s.settings())
    }

    fn for_each(&self, f: &mut Visit<'_>) -> Result<(), StoreError> {
        both!(self, s => s.for_each(f))
    }

    fn apply(&mut self, batch: &[Change]) -> Result<u64, StoreError> {
        both!(self, s => s.apply(batch))
    }

    fn sequence(&self) -> u64 {
        both!(self, s => s.sequence())
    }

    fn changes_since(&self, since: u64) -> Result<ChangesSince, StoreError> {
        both!(self, s => s.changes_since(since))
    }

    fn set_retention(&mut self, retention: Retention) {
        both!(self, s => s.set_retention(retention))
    }

    fn segments(&self) -> Option<Arc<SegmentSet>> {
        both!(self, s => s.segments())
    }

    fn segmented(&self) -> Result<Option<Segmented>, StoreError> {
        both!(self, s => s.segmented())
    }

    fn served(&self) -> Option<&dyn Served> {
        both!(self, s => s.served())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_redis_or_refused_and_anything_else_a_directory() {
        let parse = |s: &str| Location::parse(Path::new(s));
        assert!(matches!(
            parse("redis://127.0.0.1:6379/crawl"),
            Ok(Location::Redis(_))
        ));
        for url in [
            "http://x/y",
            "s3://bucket/idx",
            "file:///tmp/idx",
            "git+ssh://h/x",
        ] {
            let refused = parse(url).unwrap_err();
            assert!(refused.starts_with(url), "{refused}");
            assert!(
                refused.contains("an index is a directory or a Redis URL"),
                "{refused}"
            );
        }
        for dir in [
            "crawl.idx",
            "./http://x",
            "a/b:c",
            "/tmp/idx",
            "1a://x",
            "://x",
        ] {
            assert!(matches!(parse(dir), Ok(Location::Dir(_))), "{dir}");
        }
    }
}

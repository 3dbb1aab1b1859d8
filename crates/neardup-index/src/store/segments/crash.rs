//! Crash points for the kill tests. With `NEARDUP_CRASH_AT=POINT` (or `POINT@N`), the process aborts the
//! first (or the Nth) time it reaches `POINT`, as a `kill -9` at that instant would end it: the page cache
//! keeps what was written, nothing else runs. The moments around a manifest swap last microseconds, so
//! random kills rarely land in them; `tools/hostile/kill9.py --aimed` aims at each one.
//!
//! The points, in the order a flush (`flush-…`) or a background merge (`merge-…`) reaches them:
//!
//! * `flush-segment-renamed`, `merge-segment-renamed`: the new segment is in place under its name, the
//!   manifest does not name it yet;
//! * `manifest-synced` (either): the new manifest is written and synced as `MANIFEST.tmp`, not renamed yet;
//! * `manifest-renamed` (either): renamed over `MANIFEST`, the directory not synced yet;
//! * `flush-manifest-swapped`, `merge-manifest-swapped`: the swap is durable, the files it no longer names
//!   not removed yet;
//! * `flush-old-file-removed`, `merge-old-file-removed`: one of those files removed, perhaps not the others.
//!
//! Unset (always, outside these tests), a point costs a load of a cached value.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The point to abort at and the visit to abort on, read once from the environment.
fn target() -> Option<&'static (String, u64)> {
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    TARGET
        .get_or_init(|| {
            let spec = std::env::var("NEARDUP_CRASH_AT").ok()?;
            Some(match spec.split_once('@') {
                Some((point, n)) => (point.to_owned(), n.parse().ok()?),
                None => (spec, 1),
            })
        })
        .as_ref()
}

/// Aborts here if this is the point and the visit the environment names.
pub(crate) fn point(name: &str) {
    static VISITS: AtomicU64 = AtomicU64::new(0);
    if let Some((point, n)) = target()
        && point == name
        && VISITS.fetch_add(1, Ordering::SeqCst) + 1 == *n
    {
        std::process::abort();
    }
}

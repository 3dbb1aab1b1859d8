//! The conformance suite every [`Store`] backend must pass: plain functions over a [`Factory`], so that
//! backends in other crates (on-disk segments, Redis) run the same cases as [`MemoryStore`](super::MemoryStore)
//! and [`RedbStore`](super::RedbStore).
//!
//! Compiled for this crate's tests and, for other crates, behind the `conformance` cargo feature. Run every
//! case with [`run_all`], or generate one `#[test]` per case with
//! [`store_conformance_tests!`](crate::store_conformance_tests):
//!
//! ```text
//! use neardup_index::store::{MemoryStore, conformance::{Factory, run_all}};
//! run_all(&mut Factory {
//!     create: Box::new(|settings| MemoryStore::new(settings.clone()).unwrap()),
//!     reopen: Box::new(|store| store.clone()),
//! });
//! ```
//!
//! (This crate's own tests run exactly that, and the same over [`RedbStore`](super::RedbStore) with a fresh
//! directory per store, one `#[test]` per case.)
//!
//! Every case panics (with the case's name and what differed) on a violation of the contract in
//! [`crate::store`]; batch atomicity is tested with a batch that the contract makes every store refuse (a
//! value over [`MAX_VALUE_BYTES`], an id over [`MAX_ID_BYTES`]), after changes that it would otherwise apply.

use super::{
    Batch, Change, ChangesSince, MAX_ID_BYTES, MAX_VALUE_BYTES, Retention, Settings, Store,
    StoreError,
};
use std::collections::BTreeMap;

/// How the suite makes stores.
pub struct Factory<'a, S> {
    /// A new, empty store with these settings: a different store on every call.
    pub create: Box<dyn FnMut(&Settings) -> S + 'a>,
    /// The same store again, as another process would find it: a persistent backend closes the handle and
    /// opens its file (or connection) anew; a memory backend returns another handle.
    pub reopen: Box<dyn FnMut(S) -> S + 'a>,
}

/// Every case, in order.
pub fn run_all<S: Store + Clone>(factory: &mut Factory<'_, S>) {
    empty(factory);
    put_and_read(factory);
    replace_same_id(factory);
    delete_present_and_absent(factory);
    batch_atomicity(factory);
    settings_round_trip(factory);
    odd_ids(factory);
    sequence_and_changes_since(factory);
    bounded_retention(factory);
    reopen(factory);
    a_second_handle_follows(factory);
    for_each_stops_at_the_first_error(factory);
}

/// One `#[test]` per conformance case, for a backend: `store_conformance_tests!(factory_expression);`, the
/// expression making a fresh [`Factory`] for each test.
#[macro_export]
macro_rules! store_conformance_tests {
    ($factory:expr) => {
        $crate::store_conformance_tests!(@cases $factory;
            empty, put_and_read, replace_same_id, delete_present_and_absent, batch_atomicity,
            settings_round_trip, odd_ids, sequence_and_changes_since, bounded_retention, reopen,
            a_second_handle_follows, for_each_stops_at_the_first_error);
    };
    (@cases $factory:expr; $($case:ident),*) => {
        $(
            #[test]
            fn $case() {
                $crate::store::conformance::$case(&mut $factory);
            }
        )*
    };
}

fn settings() -> Settings {
    [
        ("scheme", "conformance-v1"),
        ("kind", "opaque to stores"),
        ("empty", ""),
        ("unicode ✓", "tab\tnewline\nü"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn put(id: &str, value: &[u8]) -> Change {
    Change::Put {
        id: id.to_owned(),
        value: value.to_vec(),
    }
}

fn delete(id: &str) -> Change {
    Change::Delete(id.to_owned())
}

/// Every entry, checking that no id comes twice.
fn contents<S: Store>(store: &S) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    store
        .for_each(&mut |id, value| {
            let previous = out.insert(id.to_owned(), value.to_vec());
            assert!(previous.is_none(), "for_each gave '{id}' twice");
            Ok(())
        })
        .expect("for_each");
    out
}

fn map(entries: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    entries
        .iter()
        .map(|(id, v)| (id.to_string(), v.to_vec()))
        .collect()
}

fn changes<S: Store>(store: &S, since: u64) -> Vec<Batch> {
    match store.changes_since(since).expect("changes_since") {
        ChangesSince::Changes(batches) => batches,
        other => panic!("changes since {since}: {other:?}"),
    }
}

/// A new store is empty, at sequence 0, with nothing to replay, and has its settings.
pub fn empty<S: Store>(factory: &mut Factory<'_, S>) {
    let store = (factory.create)(&settings());
    assert_eq!(contents(&store), BTreeMap::new(), "empty: entries");
    assert_eq!(store.sequence(), 0, "empty: sequence");
    assert_eq!(changes(&store, 0), vec![], "empty: changes since 0");
    assert_eq!(store.settings(), &settings(), "empty: settings");
}

/// Entries put are read back by `for_each`, values byte for byte (empty and large ones included).
pub fn put_and_read<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let seq = store
        .apply(&[put("a", &[1, 2, 3]), put("b", &[]), put("c", &big)])
        .expect("apply");
    assert_eq!(seq, 1, "put_and_read: the first batch is 1");
    assert_eq!(
        contents(&store),
        map(&[("a", &[1, 2, 3]), ("b", &[]), ("c", &big)]),
        "put_and_read"
    );
}

/// The last write of an id wins, across batches and within one.
pub fn replace_same_id<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    store.apply(&[put("a", &[1])]).expect("apply");
    store.apply(&[put("a", &[2, 2])]).expect("apply");
    assert_eq!(
        contents(&store),
        map(&[("a", &[2, 2])]),
        "replace across batches"
    );
    store
        .apply(&[put("b", &[1]), put("a", &[3]), put("b", &[4])])
        .expect("apply");
    assert_eq!(
        contents(&store),
        map(&[("a", &[3]), ("b", &[4])]),
        "replace within a batch"
    );
}

/// Deleting a present id removes it; deleting an absent one is no error and changes nothing.
pub fn delete_present_and_absent<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    store
        .apply(&[put("a", &[1]), put("b", &[2])])
        .expect("apply");
    store
        .apply(&[delete("a"), delete("never there")])
        .expect("deleting an absent id is no error");
    assert_eq!(contents(&store), map(&[("b", &[2])]), "delete");
    store
        .apply(&[put("c", &[3]), delete("c"), delete("b"), put("b", &[5])])
        .expect("apply");
    assert_eq!(
        contents(&store),
        map(&[("b", &[5])]),
        "delete within a batch"
    );
}

/// A refused batch leaves nothing: not its earlier changes, not a sequence number, not a log entry.
pub fn batch_atomicity<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    store.apply(&[put("keep", &[1])]).expect("apply");
    let too_long = vec![0u8; MAX_VALUE_BYTES + 1];
    let long_id = "x".repeat(MAX_ID_BYTES + 1);
    let refused: [Vec<Change>; 2] = [
        vec![
            put("new", &[1]),
            put("keep", &[9]),
            delete("keep"),
            put("too long", &too_long),
        ],
        vec![put("new", &[1]), delete("keep"), put(&long_id, &[1])],
    ];
    for batch in refused {
        let err = store
            .apply(&batch)
            .expect_err("a batch over the limits is refused");
        assert!(
            matches!(err, StoreError::Refused { .. }),
            "batch_atomicity: {err}"
        );
        assert_eq!(contents(&store), map(&[("keep", &[1])]), "batch_atomicity");
        assert_eq!(store.sequence(), 1, "batch_atomicity: sequence");
        assert_eq!(changes(&store, 1), vec![], "batch_atomicity: log");
    }
    // The limits themselves are accepted.
    let id = "y".repeat(MAX_ID_BYTES);
    store
        .apply(&[put(&id, &vec![7u8; MAX_VALUE_BYTES])])
        .expect("an id and a value at the limits");
    assert_eq!(contents(&store)[&id].len(), MAX_VALUE_BYTES);
}

/// Settings come back as written, after a reopen too.
pub fn settings_round_trip<S: Store>(factory: &mut Factory<'_, S>) {
    let store = (factory.create)(&settings());
    assert_eq!(store.settings(), &settings(), "settings");
    let store = (factory.reopen)(store);
    assert_eq!(store.settings(), &settings(), "settings after reopening");
}

/// Ids are any UTF-8: empty, tabs, newlines, NUL, non-ASCII, leading and trailing spaces.
pub fn odd_ids<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    let ids = [
        "",
        "\t",
        "a\tb",
        "line\nbreak\r\n",
        "nul\0byte",
        "ünïcødé 🙂 中文",
        "  spaces  ",
        "https://example.org/a?b=c#d",
    ];
    let batch: Vec<Change> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| put(id, &[i as u8]))
        .collect();
    store.apply(&batch).expect("apply");
    let expected: BTreeMap<String, Vec<u8>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.to_string(), vec![i as u8]))
        .collect();
    assert_eq!(contents(&store), expected, "odd ids");
    assert_eq!(changes(&store, 0)[0].changes, batch, "odd ids in the log");
    store.apply(&[delete("")]).expect("apply");
    let store = (factory.reopen)(store);
    assert_eq!(
        contents(&store).len(),
        ids.len() - 1,
        "odd ids after reopening"
    );
    assert!(
        !contents(&store).contains_key(""),
        "the empty id was deleted"
    );
}

/// Each committed batch gets the next number; `changes_since` returns exactly the batches after a number,
/// in order; an empty batch commits nothing; a number the store has not reached is an error.
pub fn sequence_and_changes_since<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    let batches = [
        vec![put("a", &[1]), put("b", &[2])],
        vec![delete("a"), put("c", &[])],
        vec![put("b", &[3]), delete("absent"), put("b", &[4])],
    ];
    for (n, batch) in batches.iter().enumerate() {
        assert_eq!(store.apply(batch).expect("apply"), n as u64 + 1, "sequence");
        assert_eq!(store.sequence(), n as u64 + 1, "sequence()");
    }
    assert_eq!(store.apply(&[]).expect("empty batch"), 3, "an empty batch");
    assert_eq!(store.sequence(), 3, "an empty batch commits nothing");
    let expected: Vec<Batch> = batches
        .iter()
        .enumerate()
        .map(|(n, changes)| Batch {
            sequence: n as u64 + 1,
            changes: changes.clone(),
        })
        .collect();
    for since in 0..=3 {
        assert_eq!(
            changes(&store, since),
            expected[since as usize..],
            "changes since {since}"
        );
    }
    assert!(
        matches!(store.changes_since(4), Err(StoreError::Ahead { .. })),
        "changes after a number not reached"
    );
}

/// The log keeps the newest batches within the retention limit; a reader further behind is told to reload;
/// a batch over the limit empties the log.
pub fn bounded_retention<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    store.set_retention(Retention {
        min_changes: 10,
        per_entry: 0.0,
    });
    for b in 0..4u8 {
        let batch: Vec<Change> = (0..4u8).map(|i| put(&format!("{b}-{i}"), &[b])).collect();
        store.apply(&batch).expect("apply");
    }
    // 16 changes were made; the newest batches within 10 are 3 and 4.
    assert_eq!(
        store.changes_since(0).expect("changes_since"),
        ChangesSince::TooOld { oldest: 3 },
        "retention"
    );
    assert_eq!(
        store.changes_since(1).expect("changes_since"),
        ChangesSince::TooOld { oldest: 3 },
        "retention"
    );
    let kept = changes(&store, 2);
    assert_eq!(
        kept.iter().map(|b| b.sequence).collect::<Vec<_>>(),
        [3, 4],
        "retention"
    );
    let big: Vec<Change> = (0..11u8).map(|i| put(&format!("big-{i}"), &[i])).collect();
    assert_eq!(store.apply(&big).expect("apply"), 5);
    assert_eq!(
        store.changes_since(4).expect("changes_since"),
        ChangesSince::TooOld { oldest: 6 },
        "a batch over the limit empties the log"
    );
    assert_eq!(changes(&store, 5), vec![], "nothing after the last batch");
    store.apply(&[delete("big-0")]).expect("apply");
    assert_eq!(changes(&store, 5).len(), 1, "logging resumes");
    assert_eq!(contents(&store).len(), 16 + 11 - 1, "entries are all kept");
}

/// Entries, settings, the sequence and the log survive reopening, and numbering continues.
pub fn reopen<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    store
        .apply(&[put("a", &[1]), put("b", &[2])])
        .expect("apply");
    store.apply(&[delete("a")]).expect("apply");
    let log = changes(&store, 0);
    let mut store = (factory.reopen)(store);
    assert_eq!(contents(&store), map(&[("b", &[2])]), "reopen: entries");
    assert_eq!(store.settings(), &settings(), "reopen: settings");
    assert_eq!(store.sequence(), 2, "reopen: sequence");
    assert_eq!(changes(&store, 0), log, "reopen: log");
    assert_eq!(
        store.apply(&[put("c", &[3])]).expect("apply"),
        3,
        "reopen: numbering"
    );
    let store = (factory.reopen)(store);
    assert_eq!(
        contents(&store),
        map(&[("b", &[2]), ("c", &[3])]),
        "reopen twice"
    );
}

/// A second handle of one store sees the first one's batches, and follows them through `changes_since`.
pub fn a_second_handle_follows<S: Store + Clone>(factory: &mut Factory<'_, S>) {
    let mut writer = (factory.create)(&settings());
    let reader = writer.clone();
    let seen = reader.sequence();
    writer.apply(&[put("a", &[1])]).expect("apply");
    writer.apply(&[put("b", &[2]), delete("a")]).expect("apply");
    assert_eq!(reader.sequence(), 2, "follow: sequence");
    let batches = changes(&reader, seen);
    assert_eq!(batches.len(), 2, "follow: batches");
    assert_eq!(batches[1].changes, vec![put("b", &[2]), delete("a")]);
    assert_eq!(contents(&reader), map(&[("b", &[2])]), "follow: entries");
}

/// `for_each` stops at the callback's first error and returns it.
pub fn for_each_stops_at_the_first_error<S: Store>(factory: &mut Factory<'_, S>) {
    let mut store = (factory.create)(&settings());
    let batch: Vec<Change> = (0..100u32)
        .map(|i| put(&format!("{i:03}"), &i.to_le_bytes()))
        .collect();
    store.apply(&batch).expect("apply");
    let mut calls = 0;
    let result = store.for_each(&mut |_, _| {
        calls += 1;
        if calls == 10 {
            Err(StoreError::Stopped("enough".into()))
        } else {
            Ok(())
        }
    });
    assert!(
        matches!(&result, Err(StoreError::Stopped(m)) if m == "enough"),
        "{result:?}"
    );
    assert_eq!(calls, 10, "no call after the error");
}

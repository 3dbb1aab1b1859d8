//! Record I/O for neardup: datasets of records in, deduplicated splits and cluster tables out. This crate
//! knows files and formats, nothing of fingerprints or indexes.
//!
//! # Design: two passes, joined by record ordinals
//!
//! Deduplicating a dataset takes two passes over it (after [`Dataset::check_outputs`], which refuses a split
//! that could not be written, an output that is one of the inputs above all, before any work):
//!
//! 1. **Read for sketches.** [`Dataset::for_each_batch`] streams every record in input order, in batches,
//!    each with its *ordinal* (0, 1, 2, … across all files), its id and its text. The caller sketches the
//!    texts, indexes them and decides, for each ordinal, whether the record is kept or removed as a
//!    duplicate of another.
//! 2. **Write the split.** [`Dataset::write_split`] reads the inputs again and routes each record, by its
//!    ordinal, to the kept or the removed output, with every original field.
//!
//! Re-reading beats holding rows in memory: a dataset is typically far larger than memory, and what the
//! first pass must keep is a few bytes per record (its sketch), not the record. Reading is sequential and
//! cheap next to sketching (the first pass reads on a thread of its own, ahead of the caller, so parsing
//! overlaps the sketching of the batch before), and the second pass copies the original bytes (JSON Lines)
//! or Arrow batches (Parquet) untouched, so nothing is lost in a round trip through a Rust value. Standard
//! input cannot be read twice, so `-` is spooled to a temporary file when the dataset is opened. Since the
//! passes are joined by ordinals, the second checks that every file gives as many records as on the first
//! ([`IoError::Changed`] otherwise).
//!
//! Records that are not documents (bad JSON, no text, no id, an id seen before) are yielded with
//! `text: Err(message)` so that they can be reported and counted, and the split keeps them: kept + removed
//! is always the whole input. A file that cannot be read to its end (I/O error, corrupt gzip, zstd or
//! Parquet) is reported once, and the next file is read.
//!
//! Parquet from untrusted sources is read row group by row group, each group's page headers checked first
//! (`pq/pages.rs`): the decoder allocates whatever a header claims, so a damaged header, or a page claiming
//! more than 256 MiB once decompressed, ends the file as damaged before any of its pages is decoded; reads
//! past the end of the file are errors (`StrictFile`), and the decoder's panics are caught (`guarded`).
//!
//! # Formats
//!
//! | in | out | how |
//! |---|---|---|
//! | JSON Lines (`.jsonl`, `.json`, `.ndjson`; plain, `.gz`, `.zst`) | JSON Lines, any of these compressions | kept lines byte for byte; removed objects with `duplicate_of` and `score` added |
//! | Parquet (any codec arrow-rs reads with `snap` and `zstd`: uncompressed, snappy, zstd) | Parquet (zstd) | kept rows with the input schema, nested columns included; removed rows with `duplicate_of: Utf8` and `score: Float64` columns added |
//!
//! JSON Lines → Parquet and Parquet → JSON Lines are refused with an error saying so: converting would
//! mean inferring a schema from JSON (or flattening Arrow types into JSON) and losing the byte-for-byte
//! guarantee; convert with a dedicated tool, then deduplicate. Ids are strings or numbers (JSON numbers,
//! Parquet integer columns of any width, as decimal text); texts are strings (a Parquet binary text column
//! is decoded as UTF-8, invalid sequences replaced by U+FFFD). Field names may be dotted paths into nested
//! JSON objects or Parquet struct columns (`meta.url`). Positions are 1-based lines for JSON Lines and
//! 0-based rows for Parquet.
//!
//! The cluster table ([`TableWriter`]) goes to Parquet, JSON Lines or TSV ([`escape_tsv`]).
//!
//! # Example
//!
//! ```
//! use neardup_io::{Dataset, DatasetOptions, Decision};
//! use std::collections::HashMap;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let input = dir.path().join("docs.jsonl");
//! std::fs::write(
//!     &input,
//!     "{\"id\":\"a\",\"text\":\"the cat sat\"}\n{\"id\":\"b\",\"text\":\"the cat sat\"}\nnot json\n",
//! )?;
//!
//! let (dataset, problems) = Dataset::open(&[input.display().to_string()], DatasetOptions::default());
//! assert!(problems.is_empty());
//!
//! // First pass: here, exact duplicates of the text stand in for sketches and an index.
//! let mut first_by_text: HashMap<String, String> = HashMap::new();
//! let mut decisions: HashMap<u64, Decision> = HashMap::new();
//! let summary = dataset.for_each_batch(1024, &mut |_bytes| {}, &mut |batch| {
//!     for record in batch {
//!         let Ok(text) = record.text else { continue }; // reported and kept
//!         match first_by_text.get(&text) {
//!             Some(kept) => {
//!                 let decision = Decision::Remove { duplicate_of: kept.clone(), score: 1.0 };
//!                 decisions.insert(record.ordinal, decision);
//!             }
//!             None => {
//!                 first_by_text.insert(text, record.id);
//!             }
//!         }
//!     }
//!     Ok::<(), std::convert::Infallible>(())
//! })?;
//! assert_eq!((summary.documents, summary.not_documents), (2, 1));
//!
//! // Second pass: the split.
//! let kept = dir.path().join("kept.jsonl");
//! let removed = dir.path().join("removed.jsonl");
//! let decide = |ordinal: u64| decisions.get(&ordinal).cloned().unwrap_or(Decision::Keep);
//! let split = dataset.write_split(&decide, Some(&kept), Some(&removed))?;
//! assert_eq!((split.kept, split.removed), (2, 1));
//! assert_eq!(
//!     std::fs::read_to_string(&removed)?,
//!     "{\"id\":\"b\",\"text\":\"the cat sat\",\"duplicate_of\":\"a\",\"score\":1.0}\n"
//! );
//! # Ok(())
//! # }
//! ```

mod dataset;
mod error;
mod format;
mod ids;
mod jsonl;
mod output;
mod pq;
mod record;
mod table;

pub use dataset::{
    BATCH_TEXT_BYTES, CheckedOutputs, Dataset, InputFile, Outputs, holds_only_shards, is_hidden,
    is_hidden_below, is_shard, resolved_output, spool,
};
pub use error::{InputError, IoError};
pub use format::{Compression, Format};
pub use pq::decoding_parquet;
pub use record::{
    DatasetOptions, Decision, FieldNotice, FieldPath, FieldPathError, FieldRole, Origin, Position,
    ReadSummary, Record, SplitSummary,
};
pub use table::{ClusterRow, TABLE_COLUMNS, TableWriter, escape_tsv};

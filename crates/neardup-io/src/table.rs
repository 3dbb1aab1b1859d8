//! The cluster table: one row per clustered record, to Parquet, JSON Lines or TSV.

use crate::error::IoError;
use crate::format::{Compression, Format};
use crate::output::{ParquetOutput, TextOutput};
use arrow_array::ArrayRef;
use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_schema::{DataType, Field, Schema};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// Escapes a TSV field: tab, newline, carriage return and backslash become `\t`, `\n`, `\r` and `\\`, so
/// that every value stays on its line and in its column. Borrows when there is nothing to escape.
pub fn escape_tsv(s: &str) -> Cow<'_, str> {
    if !s.contains(['\t', '\n', '\r', '\\']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// One row of the cluster table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterRow<'a> {
    /// The record's id.
    pub id: &'a str,
    /// Its cluster's number.
    pub cluster: u64,
    /// The id of the cluster's representative (the record kept).
    pub representative: &'a str,
    /// For a removed record, the kept record it duplicates; `None` for the representative.
    pub duplicate_of: Option<&'a str>,
    /// For a removed record, its similarity to `duplicate_of`.
    pub score: Option<f64>,
}

/// The table's columns, in order.
pub const TABLE_COLUMNS: [&str; 5] = ["id", "cluster", "representative", "duplicate_of", "score"];

/// Rows per Parquet batch handed to the writer.
const TABLE_BATCH: usize = 64 * 1024;

struct ParquetTable {
    out: ParquetOutput,
    id: StringBuilder,
    cluster: UInt64Builder,
    representative: StringBuilder,
    duplicate_of: StringBuilder,
    score: Float64Builder,
    buffered: usize,
}

impl ParquetTable {
    fn flush(&mut self) -> Result<(), IoError> {
        if self.buffered == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.cluster.finish()),
            Arc::new(self.representative.finish()),
            Arc::new(self.duplicate_of.finish()),
            Arc::new(self.score.finish()),
        ];
        self.buffered = 0;
        self.out.write(columns)
    }
}

enum Sink {
    Parquet(Box<ParquetTable>),
    Jsonl(TextOutput),
    Tsv(TextOutput),
}

/// Writes the cluster table (`id, cluster, representative, duplicate_of, score`) to `.parquet` (columns
/// `Utf8, UInt64, Utf8, Utf8 nullable, Float64 nullable`; zstd), `.jsonl` / `.json` / `.ndjson`
/// (optionally `.gz` / `.zst`; absent values are `null`) or `.tsv` (optionally `.gz` / `.zst`; values
/// escaped by [`escape_tsv`], absent ones empty). The file appears only when [`TableWriter::finish`]
/// succeeds; dropped before, it leaves nothing.
pub struct TableWriter {
    sink: Sink,
    rows: u64,
}

impl TableWriter {
    /// Creates the table at `path`, its format told by the extension; `tsv_header` writes the column names
    /// as a first line in TSV (other formats name their columns anyway).
    pub fn create(path: &Path, tsv_header: bool) -> Result<TableWriter, IoError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let tsv = [
            (".tsv", Compression::None),
            (".tsv.gz", Compression::Gzip),
            (".tsv.zst", Compression::Zstd),
        ]
        .into_iter()
        .find(|(ext, _)| name.ends_with(ext));
        let sink = match (tsv, Format::from_path(path)) {
            (Some((_, compression)), _) => {
                let mut out = TextOutput::create(path, compression)?;
                if tsv_header {
                    out.write_all(TABLE_COLUMNS.join("\t").as_bytes())?;
                    out.write_all(b"\n")?;
                }
                Sink::Tsv(out)
            }
            (None, Some(Format::Jsonl(compression))) => {
                Sink::Jsonl(TextOutput::create(path, compression)?)
            }
            (None, Some(Format::Parquet)) => {
                let schema = Arc::new(Schema::new(vec![
                    Field::new("id", DataType::Utf8, false),
                    Field::new("cluster", DataType::UInt64, false),
                    Field::new("representative", DataType::Utf8, false),
                    Field::new("duplicate_of", DataType::Utf8, true),
                    Field::new("score", DataType::Float64, true),
                ]));
                Sink::Parquet(Box::new(ParquetTable {
                    out: ParquetOutput::create(path, schema)?,
                    id: StringBuilder::new(),
                    cluster: UInt64Builder::new(),
                    representative: StringBuilder::new(),
                    duplicate_of: StringBuilder::new(),
                    score: Float64Builder::new(),
                    buffered: 0,
                }))
            }
            (None, None) => {
                return Err(IoError::Unsupported {
                    path: path.display().to_string(),
                    message: "cannot tell the table format from the name: use .parquet, .jsonl, .json or \
                              .ndjson (optionally .gz or .zst), or .tsv (optionally .gz or .zst)"
                        .to_owned(),
                });
            }
        };
        Ok(TableWriter { sink, rows: 0 })
    }

    /// Appends a row.
    pub fn write(&mut self, row: &ClusterRow<'_>) -> Result<(), IoError> {
        self.rows += 1;
        match &mut self.sink {
            Sink::Parquet(t) => {
                t.id.append_value(row.id);
                t.cluster.append_value(row.cluster);
                t.representative.append_value(row.representative);
                t.duplicate_of.append_option(row.duplicate_of);
                t.score.append_option(row.score);
                t.buffered += 1;
                if t.buffered >= TABLE_BATCH {
                    t.flush()?;
                }
                Ok(())
            }
            Sink::Jsonl(out) => {
                let json = |s: &str| serde_json::to_string(s).expect("a string serializes");
                let line = format!(
                    "{{\"id\":{},\"cluster\":{},\"representative\":{},\"duplicate_of\":{},\"score\":{}}}\n",
                    json(row.id),
                    row.cluster,
                    json(row.representative),
                    row.duplicate_of.map_or_else(|| "null".to_owned(), json),
                    serde_json::to_string(&row.score).expect("a number serializes"),
                );
                out.write_all(line.as_bytes())
            }
            Sink::Tsv(out) => {
                let line = format!(
                    "{}\t{}\t{}\t{}\t{}\n",
                    escape_tsv(row.id),
                    row.cluster,
                    escape_tsv(row.representative),
                    row.duplicate_of.map(escape_tsv).unwrap_or_default(),
                    row.score.map(|s| s.to_string()).unwrap_or_default(),
                );
                out.write_all(line.as_bytes())
            }
        }
    }

    /// Completes the file and renames it into place; returns the rows written.
    pub fn finish(self) -> Result<u64, IoError> {
        match self.sink {
            Sink::Parquet(t) => {
                let mut t = *t;
                t.flush()?;
                t.out.commit()?;
            }
            Sink::Jsonl(out) | Sink::Tsv(out) => out.commit()?,
        }
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_escaping() {
        assert!(matches!(escape_tsv("plain id"), Cow::Borrowed("plain id")));
        assert_eq!(escape_tsv("a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(escape_tsv("\\t"), "\\\\t");
        assert_eq!(escape_tsv("é\t"), "é\\t");
    }
}

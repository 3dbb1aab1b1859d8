//! Parquet: finding (nested) columns in Arrow batches, reading a row's id and text, projecting the first
//! pass onto the columns it needs, and the writer's settings.

use crate::record::{DatasetOptions, FieldPath};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::SchemaDescriptor;
use std::borrow::Cow;

mod pages;
pub(crate) use pages::check_row_group;

/// Rows per row group in written Parquet, at most.
pub(crate) const ROW_GROUP_ROWS: usize = 64 * 1024;
/// Encoded bytes per row group, at most (documents are large: bound the writer's memory).
pub(crate) const ROW_GROUP_BYTES: usize = 128 << 20;

/// zstd, bounded row groups.
pub(crate) fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("3 is a valid zstd level"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        .build()
}

/// The leaf columns the first pass needs: those at or under the id, text and media paths (a nested field
/// `meta.url` is the leaf `meta` → `url` of a struct column; its siblings are not read; a path naming a
/// list or struct column takes all of it, so that the row can say what type it has). If none exists, the
/// first leaf, so that rows are still counted (each then reports the missing column).
pub(crate) fn projection(schema: &SchemaDescriptor, options: &DatasetOptions) -> ProjectionMask {
    let paths: Vec<&FieldPath> = [Some(&options.id_field), Some(&options.text_field)]
        .into_iter()
        .chain([options.media_field.as_ref()])
        .flatten()
        .collect();
    let mut leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| {
            let column = schema.column(i);
            let parts = column.path().parts();
            paths.iter().any(|p| parts.starts_with(p.segments()))
        })
        .collect();
    if leaves.is_empty() && schema.num_columns() > 0 {
        leaves.push(0);
    }
    ProjectionMask::leaves(schema, leaves)
}

/// A column found by its path: the leaf array and its ancestors (a row is null if any of them is).
pub(crate) struct Column {
    ancestors: Vec<ArrayRef>,
    leaf: ArrayRef,
}

/// Why a path names no column of a batch.
enum Absent {
    /// The column (or a struct on its path) does not exist, or a part of the path is not a struct: the
    /// message says which.
    Missing(String),
    /// It exists but cannot be read.
    Unreadable(String),
}

impl Column {
    /// Finds `path` in `batch`; a dictionary-encoded leaf is decoded once for the batch.
    pub(crate) fn find(batch: &RecordBatch, path: &FieldPath) -> Result<Column, String> {
        Column::lookup(batch, path).map_err(|(Absent::Missing(e) | Absent::Unreadable(e))| e)
    }

    /// [`Column::find`] where a missing column is `Ok(None)`, as a missing field of a JSON object is.
    pub(crate) fn find_optional(
        batch: &RecordBatch,
        path: &FieldPath,
    ) -> Result<Option<Column>, String> {
        match Column::lookup(batch, path) {
            Ok(column) => Ok(Some(column)),
            Err(Absent::Missing(_)) => Ok(None),
            Err(Absent::Unreadable(e)) => Err(e),
        }
    }

    fn lookup(batch: &RecordBatch, path: &FieldPath) -> Result<Column, Absent> {
        let segments = path.segments();
        let missing = || Absent::Missing(format!("no column '{path}'"));
        let mut leaf = batch
            .column_by_name(&segments[0])
            .ok_or_else(missing)?
            .clone();
        let mut ancestors = Vec::new();
        for (depth, name) in segments.iter().enumerate().skip(1) {
            let child = match leaf.as_struct_opt() {
                Some(s) => s.column_by_name(name).ok_or_else(missing)?.clone(),
                None => {
                    return Err(Absent::Missing(format!(
                        "no column '{path}' ('{}' is {}, not a struct)",
                        segments[..depth].join("."),
                        leaf.data_type()
                    )));
                }
            };
            ancestors.push(std::mem::replace(&mut leaf, child));
        }
        if let Some(dict) = leaf.as_any_dictionary_opt() {
            leaf = arrow_select::take::take(dict.values().as_ref(), dict.keys(), None).map_err(
                |e| {
                    Absent::Unreadable(format!(
                        "cannot decode the dictionary of column '{path}': {e}"
                    ))
                },
            )?;
        }
        Ok(Column { ancestors, leaf })
    }

    fn is_null(&self, row: usize) -> bool {
        self.leaf.is_null(row) || self.ancestors.iter().any(|a| a.is_null(row))
    }

    fn str_at(&self, row: usize) -> Option<&str> {
        let a = self.leaf.as_ref();
        if let Some(s) = a.as_string_opt::<i32>() {
            Some(s.value(row))
        } else if let Some(s) = a.as_string_opt::<i64>() {
            Some(s.value(row))
        } else {
            a.as_string_view_opt().map(|s| s.value(row))
        }
    }

    fn bytes_at(&self, row: usize) -> Option<&[u8]> {
        let a = self.leaf.as_ref();
        if let Some(b) = a.as_binary_opt::<i32>() {
            Some(b.value(row))
        } else if let Some(b) = a.as_binary_opt::<i64>() {
            Some(b.value(row))
        } else if let Some(b) = a.as_binary_view_opt() {
            Some(b.value(row))
        } else {
            a.as_fixed_size_binary_opt().map(|b| b.value(row))
        }
    }

    fn int_at(&self, row: usize) -> Option<String> {
        let a = self.leaf.as_ref();
        Some(match a.data_type() {
            DataType::Int8 => a.as_primitive::<Int8Type>().value(row).to_string(),
            DataType::Int16 => a.as_primitive::<Int16Type>().value(row).to_string(),
            DataType::Int32 => a.as_primitive::<Int32Type>().value(row).to_string(),
            DataType::Int64 => a.as_primitive::<Int64Type>().value(row).to_string(),
            DataType::UInt8 => a.as_primitive::<UInt8Type>().value(row).to_string(),
            DataType::UInt16 => a.as_primitive::<UInt16Type>().value(row).to_string(),
            DataType::UInt32 => a.as_primitive::<UInt32Type>().value(row).to_string(),
            DataType::UInt64 => a.as_primitive::<UInt64Type>().value(row).to_string(),
            _ => return None,
        })
    }
}

/// The columns of one batch that make records.
pub(crate) struct RowReader<'o> {
    options: &'o DatasetOptions,
    id: Result<Option<Column>, String>,
    text: Result<Column, String>,
    media: Option<Column>,
}

impl<'o> RowReader<'o> {
    pub(crate) fn new(batch: &RecordBatch, options: &'o DatasetOptions) -> RowReader<'o> {
        RowReader {
            options,
            id: Column::find_optional(batch, &options.id_field),
            text: Column::find(batch, &options.text_field),
            media: options
                .media_field
                .as_ref()
                .and_then(|p| Column::find(batch, p).ok()),
        }
    }

    /// A row's id: a string, or an integer's decimal text; `None` where the column is missing or null (the
    /// row is then known by its place, as a JSON object without the field is).
    pub(crate) fn id(&self, row: usize) -> Result<Option<String>, String> {
        let Some(column) = self.id.as_ref().map_err(Clone::clone)? else {
            return Ok(None);
        };
        let name = &self.options.id_field;
        if column.is_null(row) {
            return Ok(None);
        }
        if let Some(s) = column.str_at(row) {
            return Ok(Some(s.to_owned()));
        }
        column.int_at(row).map(Some).ok_or_else(|| {
            format!(
                "the '{name}' column is {}, not a string or an integer",
                column.leaf.data_type()
            )
        })
    }

    /// A row's text (a binary column decoded as UTF-8, invalid sequences replaced); with `want_text`
    /// false, an empty string where there is text (the second pass only needs to know).
    pub(crate) fn text(&self, row: usize, want_text: bool) -> Result<String, String> {
        let column = self.text.as_ref().map_err(Clone::clone)?;
        let name = &self.options.text_field;
        if column.is_null(row) {
            return Err(format!("the '{name}' column is null"));
        }
        let text: Cow<'_, str> = if let Some(s) = column.str_at(row) {
            Cow::Borrowed(s)
        } else if let Some(b) = column.bytes_at(row) {
            if want_text {
                String::from_utf8_lossy(b)
            } else {
                Cow::Borrowed("")
            }
        } else {
            return Err(format!(
                "the '{name}' column is {}, not a string",
                column.leaf.data_type()
            ));
        };
        Ok(if want_text {
            text.into_owned()
        } else {
            String::new()
        })
    }

    /// A row's medium, when the column exists and holds a string there.
    pub(crate) fn media(&self, row: usize) -> Option<String> {
        let column = self.media.as_ref()?;
        if column.is_null(row) {
            return None;
        }
        column.str_at(row).map(str::to_owned)
    }
}

/// A Parquet file as the decoder reads it, where reading past the end is an error. The parquet crate skips
/// unknown thrift fields with `io::copy` of the length the file claims, and a read at the end of a `File`
/// is an empty read, not an error: a damaged page header claiming a list of 2^31 doubles made it issue a
/// read per element, for minutes (found by fuzzing). Here such a read fails at once, with the file's error.
pub(crate) struct StrictFile {
    file: std::fs::File,
    len: u64,
}

impl StrictFile {
    pub(crate) fn new(file: std::fs::File) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(StrictFile { file, len })
    }

    /// Reads at `offset` without moving any cursor (one `pread`), at most to the end of the file.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = self.len.saturating_sub(offset).min(buf.len() as u64) as usize;
        let buf = &mut buf[..room];
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(&self.file, buf, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek};
            let mut file = self.file.try_clone()?;
            file.seek(std::io::SeekFrom::Start(offset))?;
            file.read(buf)
        }
    }

    /// A second handle on the same file (each row group's reader owns one).
    pub(crate) fn try_clone(&self) -> std::io::Result<Self> {
        Ok(StrictFile {
            file: self.file.try_clone()?,
            len: self.len,
        })
    }
}

/// What `StrictFile` reads through: the rest of the file, then errors.
pub(crate) struct UntilTheEnd(std::io::Take<std::fs::File>);

impl std::io::Read for UntilTheEnd {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 if !buf.is_empty() => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a length in the file runs past its end",
            )),
            n => Ok(n),
        }
    }
}

impl parquet::file::reader::Length for StrictFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for StrictFile {
    type T = std::io::BufReader<UntilTheEnd>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use std::io::{Read, Seek};
        if start > self.len {
            return Err(past_the_end(start, 0, self.len));
        }
        let mut file = self.file.try_clone()?;
        file.seek(std::io::SeekFrom::Start(start))?;
        Ok(std::io::BufReader::new(UntilTheEnd(
            file.take(self.len - start),
        )))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        // A range past the end is refused before the file's own reader allocates room for it.
        if start
            .checked_add(length as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(past_the_end(start, length, self.len));
        }
        self.file.get_bytes(start, length)
    }
}

fn past_the_end(start: u64, length: usize, len: u64) -> parquet::errors::ParquetError {
    parquet::errors::ParquetError::EOF(format!(
        "{length} bytes at offset {start} run past the end of the file ({len} bytes)"
    ))
}

thread_local! {
    // Set while this thread decodes Parquet under `guarded`.
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is decoding Parquet under a guard: a panic there (the parquet and arrow crates panic on
/// some damaged files, found by fuzzing) is caught and reported as that file's error, so a program's panic hook
/// may stay quiet about it.
pub fn decoding_parquet() -> bool {
    DECODING.with(std::cell::Cell::get)
}

/// Runs a step of Parquet decoding: its error, or a panic of the decoder, becomes an error message.
pub(crate) fn guarded<T, E: std::fmt::Display>(
    step: impl FnOnce() -> Result<T, E>,
) -> Result<T, String> {
    DECODING.with(|d| d.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step));
    DECODING.with(|d| d.set(false));
    match result {
        Ok(done) => done.map_err(|e| e.to_string()),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".to_owned());
            Err(format!(
                "the Parquet decoder failed on damaged data ({message})"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray, StructArray};
    use arrow_schema::Field;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::sync::Arc;

    #[test]
    fn projection_keeps_only_the_named_leaves() {
        let meta = StructArray::from(vec![
            (
                Arc::new(Field::new("url", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["u"])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("body", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["big"])) as ArrayRef,
            ),
        ]);
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int64Array::from(vec![7])) as ArrayRef),
            ("text", Arc::new(StringArray::from(vec!["t"])) as ArrayRef),
            ("meta", Arc::new(meta) as ArrayRef),
        ])
        .unwrap();
        let file = tempfile::tempfile().unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(file.try_clone().unwrap(), batch.schema(), None)
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();

        let options = DatasetOptions {
            id_field: FieldPath::new("meta.url").unwrap(),
            ..DatasetOptions::default()
        };
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let mask = projection(builder.parquet_schema(), &options);
        let read = builder
            .with_projection(mask)
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let schema = read.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["text", "meta"]);
        let DataType::Struct(children) = schema.field(1).data_type() else {
            panic!("meta is a struct")
        };
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].name(), "url");
        let rows = RowReader::new(&read, &options);
        assert_eq!(rows.id(0), Ok(Some("u".to_owned())));
        assert_eq!(rows.text(0, true), Ok("t".to_owned()));
    }
}

//! Output files that appear whole or not at all: written under a temporary name in the destination's
//! directory, renamed into place when complete; dropped unfinished, the temporary file is deleted.

use crate::error::IoError;
use crate::format::Compression;
use crate::pq;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written under a temporary name, to be renamed to `path` by [`Pending::commit`].
pub(crate) struct Pending {
    path: PathBuf,
    temp: tempfile::TempPath,
}

impl Pending {
    /// Creates the temporary file beside `path`; the error names `path`.
    pub(crate) fn create(path: &Path) -> Result<(Pending, File), IoError> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Made as `File::create` makes a file (0666 less the umask): a temporary file's own 0600 stayed
        // with the finished output, which then only its owner could read.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let (file, temp) = builder
            .tempfile_in(dir)
            .map_err(|e| IoError::io(path.display(), e))?
            .into_parts();
        Ok((
            Pending {
                path: path.to_path_buf(),
                temp,
            },
            file,
        ))
    }

    /// The final path, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the finished file into place.
    pub(crate) fn commit(self) -> Result<(), IoError> {
        let path = self.path;
        self.temp
            .persist(&path)
            .map_err(|e| IoError::io(path.display(), e.error))
    }
}

/// A text output (JSON Lines or TSV), plain or compressed.
pub(crate) enum Encoder {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl Encoder {
    pub(crate) fn new(file: File, compression: Compression) -> std::io::Result<Encoder> {
        let buffered = BufWriter::with_capacity(1 << 20, file);
        Ok(match compression {
            Compression::None => Encoder::Plain(buffered),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                buffered,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(buffered, 3)?),
        })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Plain(w) => w.write_all(bytes),
            Encoder::Gzip(w) => w.write_all(bytes),
            Encoder::Zstd(w) => w.write_all(bytes),
        }
    }

    /// Ends the compressed stream and flushes everything to the file.
    pub(crate) fn finish(self) -> std::io::Result<()> {
        let mut buffered = match self {
            Encoder::Plain(w) => w,
            Encoder::Gzip(w) => w.finish()?,
            Encoder::Zstd(w) => w.finish()?,
        };
        buffered.flush()?;
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

/// A text output file: an encoder over a pending file.
pub(crate) struct TextOutput {
    pending: Pending,
    encoder: Encoder,
}

impl TextOutput {
    pub(crate) fn create(path: &Path, compression: Compression) -> Result<TextOutput, IoError> {
        let (pending, file) = Pending::create(path)?;
        let encoder =
            Encoder::new(file, compression).map_err(|e| IoError::io(path.display(), e))?;
        Ok(TextOutput { pending, encoder })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), IoError> {
        self.encoder
            .write_all(bytes)
            .map_err(|e| IoError::io(self.pending.path().display(), e))
    }

    pub(crate) fn commit(self) -> Result<(), IoError> {
        let path = self.pending.path().display().to_string();
        self.encoder.finish().map_err(|e| IoError::io(&path, e))?;
        self.pending.commit()
    }
}

/// A Parquet output being written (zstd, the crate's writer properties), renamed into place on commit.
pub(crate) struct ParquetOutput {
    pending: Pending,
    writer: ArrowWriter<File>,
    schema: SchemaRef,
}

impl ParquetOutput {
    pub(crate) fn create(path: &Path, schema: SchemaRef) -> Result<ParquetOutput, IoError> {
        let (pending, file) = Pending::create(path)?;
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(pq::writer_properties()))
            .map_err(|e| IoError::data(path.display(), e))?;
        Ok(ParquetOutput {
            pending,
            writer,
            schema,
        })
    }

    pub(crate) fn write(&mut self, columns: Vec<arrow_array::ArrayRef>) -> Result<(), IoError> {
        let path = self.pending.path();
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| IoError::data(path.display(), e))?;
        self.writer
            .write(&batch)
            .map_err(|e| IoError::data(path.display(), e))
    }

    pub(crate) fn commit(mut self) -> Result<(), IoError> {
        let path = self.pending.path().display().to_string();
        self.writer.finish().map_err(|e| IoError::data(&path, e))?;
        // `finish` wrote the footer and flushed its buffer to the file.
        self.writer
            .inner()
            .sync_all()
            .map_err(|e| IoError::io(&path, e))?;
        self.pending.commit()
    }
}

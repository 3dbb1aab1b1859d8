//! Errors: [`InputError`] for a problem with one input (reported, and the rest is read), [`IoError`] for a
//! failure that stops a write.

use crate::record::Position;
use std::fmt;

/// A problem with one operand or one input file: it could not be found, opened or read to its end. The
/// other inputs are still read; this one is reported once, naming the file (and the line or row where
/// reading stopped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The operand or file, as given or found (`-` for standard input).
    pub file: String,
    /// Where in the file reading stopped, when it stopped inside it.
    pub position: Option<Position>,
    /// What went wrong, in words a user can act on.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "{}:{}: {}", self.file, p, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// A failure that stops a write ([`Dataset::write_split`](crate::Dataset::write_split),
/// [`TableWriter`](crate::TableWriter)). No partial output file is left behind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// Creating, writing or renaming a file failed.
    #[error("{path}: {}", io_message(.source))]
    Io {
        /// The file (an output path for writes).
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Parquet or Arrow refused the data (a corrupt file, a schema the writer cannot take).
    #[error("{path}: {message}")]
    Data {
        /// The file concerned.
        path: String,
        /// What the Parquet or Arrow library said.
        message: String,
    },
    /// A removed record already has a field that the split adds (`duplicate_of` or `score`).
    #[error(
        "{origin}: the record already has a field '{field}', which the removed rows get; refusing to \
         overwrite it (rename that field in the input first)"
    )]
    FieldClash {
        /// The record or file with the field.
        origin: String,
        /// The field's name.
        field: String,
    },
    /// The request cannot be carried out as asked (an unknown output extension, an unsupported conversion).
    #[error("{path}: {message}")]
    Unsupported {
        /// The output (or input) concerned.
        path: String,
        /// Why, and what is supported.
        message: String,
    },
    /// An input gave a different number of records on the second pass than on the first: record ordinals
    /// would no longer match the decisions, so nothing was written.
    #[error(
        "{path}: changed between the two passes ({first} records on the first, {second} on the second); \
         nothing was written"
    )]
    Changed {
        /// The input file.
        path: String,
        /// Records on the first pass.
        first: u64,
        /// Records on the second pass.
        second: u64,
    },
}

impl IoError {
    pub(crate) fn io(path: impl fmt::Display, source: std::io::Error) -> Self {
        IoError::Io {
            path: path.to_string(),
            source,
        }
    }

    pub(crate) fn data(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        IoError::Data {
            path: path.to_string(),
            message: message.to_string(),
        }
    }
}

/// An I/O error in words a user can act on.
pub(crate) fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory, not a file".to_owned(),
        _ => e.to_string(),
    }
}

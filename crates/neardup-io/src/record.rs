//! Records and what describes them: field paths, origins, decisions, summaries.

use crate::error::InputError;
use crate::format::Format;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A field of a record: a top-level name (`"id"`) or a dotted path into nested objects (`"meta.url"`). In
/// JSON it walks nested objects; in Parquet, nested struct columns. A name that itself contains a dot
/// cannot be addressed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPath(Vec<String>);

/// A field path with an empty segment (`""`, `"a..b"`, `".a"`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path '{0}': expected NAME or NAME.NAME... with no empty names")]
pub struct FieldPathError(pub String);

impl FieldPath {
    /// Parses `"name"` or `"a.b.c"`.
    pub fn new(path: &str) -> Result<FieldPath, FieldPathError> {
        let segments: Vec<String> = path.split('.').map(str::to_owned).collect();
        if segments.iter().any(String::is_empty) {
            return Err(FieldPathError(path.to_owned()));
        }
        Ok(FieldPath(segments))
    }

    /// The names from the outermost in.
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// The field of a JSON value, if every step exists (and is an object).
    pub(crate) fn lookup<'v>(&self, value: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        self.0.iter().try_fold(value, |v, name| v.get(name))
    }
}

impl FromStr for FieldPath {
    type Err = FieldPathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldPath::new(s)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// How [`Dataset::open`](crate::Dataset::open) reads records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetOptions {
    /// The record's id (default `id`): a string, or a number taken as its decimal text (JSON numbers;
    /// Parquet integer columns of any width).
    pub id_field: FieldPath,
    /// The document's text (default `text`): a string (Parquet: string, large string or string view; a
    /// binary column is decoded as UTF-8, invalid sequences replaced by U+FFFD).
    pub text_field: FieldPath,
    /// A field naming the document's medium (`html`, `pdf`, …), passed through as [`Record::media`].
    pub media_field: Option<FieldPath>,
    /// Read every input as this format; `None` tells each file's format by its extension, then by its
    /// first bytes (standard input by its first bytes).
    pub format: Option<Format>,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            id_field: FieldPath(vec!["id".to_owned()]),
            text_field: FieldPath(vec!["text".to_owned()]),
            media_field: None,
            format: None,
        }
    }
}

/// Where in its file a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// A JSON Lines line number, 1-based (blank lines are counted, so it is the line an editor shows).
    Line(u64),
    /// A Parquet row number within the file, 0-based (the row's index in pyarrow or pandas).
    Row(u64),
}

impl Position {
    /// The line or row number.
    pub fn number(self) -> u64 {
        match self {
            Position::Line(n) | Position::Row(n) => n,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// A record's file and position; shown as `FILE:LINE` or `FILE:ROW`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The file as given or found (`-` for standard input); shared by the records of a file.
    pub file: Arc<str>,
    /// Its line or row.
    pub position: Position,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.position)
    }
}

/// One record of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// 0, 1, 2, … in input order across all files: the key of [`Dataset::write_split`](crate::Dataset::write_split)'s decisions.
    pub ordinal: u64,
    /// The record's id; `FILE:LINE` or `FILE:ROW` (see [`Origin`]) when it has none.
    pub id: String,
    /// The document's text, or why the record is not a document (not JSON, no text, no id, a duplicate
    /// id, …): the caller reports and counts it, and the split keeps it.
    pub text: Result<String, String>,
    /// The medium field's value, when [`DatasetOptions::media_field`] names one and it is a string.
    pub media: Option<String>,
    /// Where the record is.
    pub origin: Origin,
    /// The size of the text in bytes (0 when it is not a document).
    pub bytes: u64,
}

/// What becomes of a record in [`Dataset::write_split`](crate::Dataset::write_split).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// It goes to the kept output.
    Keep,
    /// It goes to the removed output, with the kept record it duplicates and their similarity.
    Remove {
        /// The id of the kept record it duplicates.
        duplicate_of: String,
        /// Their similarity score.
        score: f64,
    },
}

/// What a reading pass saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadSummary {
    /// Input files read (to their end or to an error).
    pub files: usize,
    /// Records yielded.
    pub records: u64,
    /// Of which documents (`text` is `Ok`).
    pub documents: u64,
    /// Of which not documents (`text` is `Err`), duplicate ids included.
    pub not_documents: u64,
    /// Of which duplicate ids.
    pub duplicate_ids: u64,
    /// Of which JSON Lines lines that are not JSON objects (not JSON at all, or an array, a string, …).
    pub not_objects: u64,
    /// Documents whose id came from the id field; the others are known by their place (`FILE:LINE`,
    /// `FILE:ROW`). None at all, with an id field other than the default, is most likely a misspelt name:
    /// see [`ReadSummary::field_notices`].
    pub ids_from_field: u64,
    /// Input bytes consumed (compressed bytes for .gz/.zst, file bytes for Parquet).
    pub bytes: u64,
    /// Files that could not be opened or read to their end, each reported once; reading went on with the
    /// next file.
    pub errors: Vec<InputError>,
}

impl ReadSummary {
    /// Warnings about a read that went through but most likely read the wrong fields, each a sentence
    /// for the front door to end with its own way of naming the option (`--id-field`, `id_field`):
    ///
    /// - records were read and not one was a line of JSON objects: not JSON Lines at all (most likely files
    ///   of documents, such as HTML or plain text, read as JSON Lines);
    /// - records were read and not one was a document (every text missing or not a string): likely a
    ///   misspelt text field;
    /// - documents were read, `options` names an id field other than the default `id`, and not one
    ///   document had it: likely a misspelt id field (every document is then known by its place).
    pub fn field_notices(&self, options: &DatasetOptions) -> Vec<FieldNotice> {
        let mut notices = Vec::new();
        if self.records > 0 && self.not_objects == self.records {
            notices.push(FieldNotice {
                field: FieldRole::Format,
                message: format!(
                    "not one of the {} lines read is a JSON object: the input is not JSON Lines",
                    self.records
                ),
            });
        } else if self.records > 0 && self.documents == 0 {
            notices.push(FieldNotice {
                field: FieldRole::Text,
                message: format!(
                    "not one of the {} records is a document with text in the field '{}'",
                    self.records, options.text_field
                ),
            });
        }
        if self.documents > 0
            && self.ids_from_field == 0
            && options.id_field != DatasetOptions::default().id_field
        {
            notices.push(FieldNotice {
                field: FieldRole::Id,
                message: format!(
                    "no record has an id in the field '{}': each document is known by its place \
                     (FILE:LINE or FILE:ROW)",
                    options.id_field
                ),
            });
        }
        notices
    }
}

/// Which option of [`DatasetOptions`] a [`FieldNotice`] is about, or (`Format`) the reading of the files
/// as records at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldRole {
    /// [`DatasetOptions::id_field`].
    Id,
    /// [`DatasetOptions::text_field`].
    Text,
    /// The format the files were read as: JSON Lines that held no JSON object.
    Format,
}

/// A warning from [`ReadSummary::field_notices`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldNotice {
    /// The option it is about.
    pub field: FieldRole,
    /// What was seen, in a sentence.
    pub message: String,
}

/// What [`Dataset::write_split`](crate::Dataset::write_split) wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SplitSummary {
    /// Records written (or, with no kept output, that would have been written) as kept: documents decided
    /// [`Decision::Keep`] and every record that is not a document.
    pub kept: u64,
    /// Records decided [`Decision::Remove`].
    pub removed: u64,
    /// Input files that could not be read to their end (as on the first pass), each reported once.
    pub errors: Vec<InputError>,
}

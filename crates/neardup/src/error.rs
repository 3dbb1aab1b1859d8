//! The errors of the facade: every one names its cause.

use neardup_text::ExtractError;

/// Why a fingerprint could not be made, parsed or compared.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The document's text could not be extracted.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The document has no token (empty, or only numbers, punctuation, URLs...): it has no fingerprint.
    #[error(
        "no tokens: the document has no words after extraction and normalization, so it has no {scheme} fingerprint"
    )]
    NoTokens {
        /// The scheme that was asked for.
        scheme: &'static str,
    },
    /// A fingerprint string could not be parsed.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Two fingerprints of different schemes cannot be compared.
    #[error(
        "cannot compare a {left} fingerprint with a {right} fingerprint: they are made by different schemes"
    )]
    SchemeMismatch {
        /// The first scheme.
        left: &'static str,
        /// The second scheme.
        right: &'static str,
    },
    /// Two sketches made by different methods (a fingerprint and a signature, or signatures of other
    /// parameters) cannot be compared.
    #[error(
        "cannot compare a {left} sketch with a {right} sketch: they are made by different methods or \
         parameters (only sketches of the same scheme and parameters compare)"
    )]
    MethodMismatch {
        /// The first sketch's scheme.
        left: String,
        /// The second sketch's scheme.
        right: String,
    },
    /// Two MinHash-family signatures of different schemes or parameters cannot be compared.
    #[error(transparent)]
    SketchMismatch(#[from] neardup_sketch::signature::SketchMismatch),
    /// A signature string could not be parsed.
    #[error(transparent)]
    ParseSketch(#[from] neardup_sketch::signature::ParseSketchError),
    /// Two documents of one run share an id: their pairs and clusters could not be told apart.
    #[error("the id '{id}' is used by two documents: ids must be unique")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// No scheme has this name or alias.
    #[error("unknown scheme '{name}' (known: {known})")]
    UnknownScheme {
        /// The name given.
        name: String,
        /// The known names, with their aliases.
        known: String,
    },
    /// There is no index at a location.
    #[error("no index at {location}")]
    NoIndex {
        /// The location.
        location: String,
    },
    /// An index could not be opened, read or written.
    #[error("{reason}")]
    Index {
        /// The index's location.
        location: String,
        /// What went wrong (naming the file).
        reason: String,
    },
    /// Results could not be written to their sink.
    #[error("cannot write the results: {reason}")]
    Output {
        /// Why.
        reason: String,
    },
    /// A query's distance or threshold does not fit the index (the other family's, both, out of range).
    #[error("{reason}")]
    BadRadius {
        /// What is wrong, in words.
        reason: String,
    },
    /// A shared index's write queue is full: try again later.
    #[error("{location}: too many writes are waiting; try again later")]
    Busy {
        /// The index's location.
        location: String,
    },
    /// A scheme or parameter that this version cannot make documents' sketches with.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What, and why.
        what: String,
    },
    /// The caller's progress observer asked a deduplication run to stop
    /// ([`Dedup::on_progress`](crate::dedup::Dedup::on_progress)); nothing more was written.
    #[error("the deduplication run was stopped before it finished")]
    Stopped,
}

/// Why a string is not a fingerprint.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// There is no `scheme:` prefix.
    #[error(
        "'{input}' is not a fingerprint: expected SCHEME:VALUE, e.g. simhash-doc-v1:4bq3pkeb6ge3q"
    )]
    MissingScheme {
        /// The input, shortened.
        input: String,
    },
    /// The prefix names no scheme this version knows.
    #[error("unknown fingerprint scheme '{scheme}' (known: {known})")]
    UnknownScheme {
        /// The prefix found.
        scheme: String,
        /// The known scheme names.
        known: String,
    },
    /// The value after the prefix is not valid base32 of the right length.
    #[error("bad {scheme} value '{value}': {reason}")]
    BadValue {
        /// The scheme.
        scheme: &'static str,
        /// The value found.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

//! Input and output formats, told by file extension or, failing that, by content.

use std::path::Path;

/// The compression of a JSON Lines file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (several concatenated members are read as one stream, like `zcat`).
    Gzip,
    /// Zstandard (several concatenated frames are read as one stream).
    Zstd,
}

/// The format of a dataset file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// JSON Lines: one JSON object per line, blank lines skipped.
    Jsonl(Compression),
    /// Apache Parquet: one record per row.
    Parquet,
}

impl Format {
    /// The format named by a file's extension (case-insensitive): `.jsonl`, `.json` or `.ndjson`, each
    /// optionally followed by `.gz` or `.zst`, or `.parquet`. `None` for any other name.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".parquet") {
            return Some(Format::Parquet);
        }
        let (stem, compression) = if let Some(s) = name.strip_suffix(".gz") {
            (s, Compression::Gzip)
        } else if let Some(s) = name.strip_suffix(".zst") {
            (s, Compression::Zstd)
        } else {
            (name.as_str(), Compression::None)
        };
        [".jsonl", ".json", ".ndjson"]
            .iter()
            .any(|ext| stem.ends_with(ext))
            .then_some(Format::Jsonl(compression))
    }

    /// The format told by a file's first bytes: gzip or Zstandard magic (compressed JSON Lines), `PAR1`
    /// (Parquet), anything else plain JSON Lines.
    pub fn sniff(head: &[u8]) -> Format {
        if head.starts_with(&[0x1f, 0x8b]) {
            Format::Jsonl(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Format::Jsonl(Compression::Zstd)
        } else if head.starts_with(b"PAR1") {
            Format::Parquet
        } else {
            Format::Jsonl(Compression::None)
        }
    }

    /// `"JSONL"` or `"Parquet"`, for messages.
    pub fn family(self) -> &'static str {
        match self {
            Format::Jsonl(_) => "JSONL",
            Format::Parquet => "Parquet",
        }
    }
}

/// Reads the first bytes of a file to sniff its format.
pub(crate) fn sniff_file(path: &Path) -> std::io::Result<Format> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Format::sniff(&head[..n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions() {
        let f = |s: &str| Format::from_path(Path::new(s));
        assert_eq!(f("a/b.jsonl"), Some(Format::Jsonl(Compression::None)));
        assert_eq!(f("b.JSON.GZ"), Some(Format::Jsonl(Compression::Gzip)));
        assert_eq!(f("b.jsonl.zst"), Some(Format::Jsonl(Compression::Zstd)));
        assert_eq!(f("b.parquet"), Some(Format::Parquet));
        assert_eq!(f("b.txt"), None);
        assert_eq!(f("b.gz"), None);
        assert_eq!(Format::sniff(b"PAR1xx"), Format::Parquet);
        assert_eq!(Format::sniff(b"{\"a\""), Format::Jsonl(Compression::None));
    }
}

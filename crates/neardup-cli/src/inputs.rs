//! Turning command-line operands into documents: files, directories walked recursively in a stable order,
//! and `-` for standard input.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One document to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file path (as given, or found under a given directory).
    File(PathBuf),
    /// Standard input.
    Stdin,
}

impl Source {
    /// How the document is named in output: the path as given or found, or `-`.
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Stdin => "-".to_owned(),
        }
    }

    /// The file name used as a media hint.
    pub fn name_hint(&self) -> Option<String> {
        match self {
            Source::File(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Source::Stdin => None,
        }
    }

    /// Reads the whole document, refusing anything larger than `max_bytes`.
    pub fn read(&self, max_bytes: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        match self {
            Source::File(p) => {
                let f = std::fs::File::open(p).with_context(|| "cannot open".to_string())?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                if len > max_bytes {
                    anyhow::bail!(
                        "file is {} bytes, over the --max-bytes limit of {max_bytes}",
                        len
                    );
                }
                f.take(max_bytes + 1)
                    .read_to_end(&mut buf)
                    .context("cannot read")?;
            }
            Source::Stdin => {
                std::io::stdin()
                    .lock()
                    .take(max_bytes + 1)
                    .read_to_end(&mut buf)
                    .context("cannot read stdin")?;
            }
        }
        if buf.len() as u64 > max_bytes {
            anyhow::bail!("input is over the --max-bytes limit of {max_bytes} bytes");
        }
        Ok(buf)
    }
}

/// A problem with an operand itself (missing path, unreadable directory entry), reported per operand.
pub struct OperandError {
    pub label: String,
    pub message: String,
}

/// Expands operands into documents. Directories are walked recursively; their files are listed in byte
/// order of their paths so that output never depends on the file system's order. Hidden files and
/// directories (names starting with '.') under a directory are skipped; a hidden file named explicitly is read.
pub fn expand(operands: &[String]) -> (Vec<Source>, Vec<OperandError>) {
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    for op in operands {
        if op == "-" {
            sources.push(Source::Stdin);
            continue;
        }
        let path = Path::new(op);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let walker = walkdir::WalkDir::new(path)
                    .sort_by(|a, b| a.file_name().cmp(b.file_name()))
                    .into_iter()
                    .filter_entry(|e| {
                        e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                    });
                for entry in walker {
                    match entry {
                        Ok(e) if e.file_type().is_file() => {
                            sources.push(Source::File(e.into_path()))
                        }
                        Ok(e) if e.file_type().is_symlink() => {
                            if e.path().is_file() {
                                sources.push(Source::File(e.into_path()));
                            }
                        }
                        Ok(_) => {}
                        Err(e) => errors.push(OperandError {
                            label: e
                                .path()
                                .map_or_else(|| op.clone(), |p| p.display().to_string()),
                            message: e.to_string(),
                        }),
                    }
                }
            }
            Ok(_) => sources.push(Source::File(path.to_path_buf())),
            Err(e) => errors.push(OperandError {
                label: op.clone(),
                message: io_message(&e),
            }),
        }
    }
    (sources, errors)
}

/// An I/O error in words a user can act on.
pub fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

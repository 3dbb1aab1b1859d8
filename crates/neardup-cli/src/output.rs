//! Writing results: TSV escaping, and an output that keeps its first write error instead of stopping the
//! command (a closed pipe must not stop a command that also writes an index).

use std::borrow::Cow;
use std::io::Write;

/// Escapes an id for a TSV field: tab, newline, carriage return and backslash become `\t`, `\n`, `\r`,
/// `\\`, so that every line has its columns.
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

/// A writer that stops writing at its first error and keeps it for the end of the command.
pub struct OutputGuard<W: Write> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: Write> OutputGuard<W> {
    pub fn new(out: W) -> Self {
        OutputGuard { out, error: None }
    }

    /// Writes one record with `write`, unless an earlier write failed.
    pub fn line(&mut self, write: impl FnOnce(&mut W) -> std::io::Result<()>) {
        if self.error.is_none()
            && let Err(e) = write(&mut self.out)
        {
            self.error = Some(e);
        }
    }

    /// Flushes, keeping the error.
    pub fn flush(&mut self) {
        self.line(|w| w.flush());
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// Ends the output: `Err` with the first write error (a closed pipe included).
    pub fn finish(mut self) -> std::io::Result<()> {
        self.flush();
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_fields_never_split() {
        assert_eq!(escape_tsv("plain/path.html"), "plain/path.html");
        assert_eq!(escape_tsv("a\tb\nc\\d\r"), "a\\tb\\nc\\\\d\\r");
    }
}

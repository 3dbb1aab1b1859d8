//! Writing results: TSV escaping, and an output that keeps its first write error instead of stopping the
//! command (a closed pipe must not stop a command that also writes an index).

use clap::Args;
use std::borrow::Cow;
use std::io::Write;

/// Escapes an id for a TSV field (tab, newline, carriage return and backslash as `\t`, `\n`, `\r`, `\\`).
pub use neardup_io::escape_tsv;

/// `-0/--null`: how the lines of TSV output end and how ids are written in them.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct Lines {
    /// End each output line with a NUL byte instead of a newline, and write ids as they are (not
    /// escaped), for `xargs -0` and names holding any character. Columns stay tab-separated. (Without it,
    /// ids are escaped: tab, newline, carriage return and backslash as \t, \n, \r, \\; on a terminal,
    /// other control characters as \u{1b}.)
    #[arg(short = '0', long = "null")]
    pub null: bool,
    /// Whether standard output is a terminal: there, an id's other control characters (an escape
    /// sequence in a record's id) are shown escaped too, so that no id drives the terminal.
    #[arg(skip = std::io::IsTerminal::is_terminal(&std::io::stdout()))]
    pub terminal: bool,
}

impl Lines {
    /// An id as a TSV field: escaped, or as it is with `--null`.
    pub fn id(self, id: &str) -> Cow<'_, str> {
        if self.null {
            Cow::Borrowed(id)
        } else if self.terminal {
            Cow::Owned(crate::inputs::terminal_safe(&escape_tsv(id)).into_owned())
        } else {
            escape_tsv(id)
        }
    }

    /// Ends a line.
    pub fn end(self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(if self.null { b"\0" } else { b"\n" })
    }
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

    #[test]
    fn null_lines_keep_ids_whole() {
        let lines = |null, terminal| Lines { null, terminal };
        let (plain, null) = (lines(false, false), lines(true, false));
        assert_eq!(plain.id("a\nb"), "a\\nb");
        assert_eq!(null.id("a\nb"), "a\nb");
        // On a terminal, the other control characters are escaped too; --null still writes ids whole.
        assert_eq!(plain.id("\u{1b}[2Ja\tb"), "\u{1b}[2Ja\\tb");
        assert_eq!(lines(false, true).id("\u{1b}[2Ja\tb"), "\\u{1b}[2Ja\\tb");
        assert_eq!(lines(true, true).id("a\nb"), "a\nb");
        let mut out = Vec::new();
        null.end(&mut out).unwrap();
        plain.end(&mut out).unwrap();
        assert_eq!(out, b"\0\n");
    }
}

//! The canonical white-space form of extracted text, shared by every medium's extractor.

/// Builds extracted text in canonical white-space form: no leading or trailing white space, and every run of
/// `White_Space` inside the text replaced by one `\n` if it holds a line or block break, else by one space.
///
/// This form never changes tokens (white space only separates chunks, and every `White_Space` character
/// normalizes to white space), so implementations may skip it; it makes extracted text readable and
/// comparable in golden vectors.
pub(crate) struct TextBuilder {
    out: String,
    pending: Pending,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Pending {
    None,
    Space,
    Break,
}

impl TextBuilder {
    pub(crate) fn with_capacity(n: usize) -> Self {
        TextBuilder {
            out: String::with_capacity(n),
            pending: Pending::None,
        }
    }

    pub(crate) fn block_break(&mut self) {
        self.pending = self.pending.max(Pending::Break);
    }

    /// Appends HTML text: all white space collapses to a space (line breaks come only from blocks).
    pub(crate) fn push_collapsing(&mut self, s: &str) {
        for c in s.chars() {
            if c.is_whitespace() {
                self.pending = self.pending.max(Pending::Space);
            } else {
                self.push_char(c);
            }
        }
    }

    /// Appends plain text: white space that holds a line break becomes a break.
    pub(crate) fn push_lines(&mut self, s: &str) {
        for c in s.chars() {
            if c.is_whitespace() {
                let level = if is_line_break(c) {
                    Pending::Break
                } else {
                    Pending::Space
                };
                self.pending = self.pending.max(level);
            } else {
                self.push_char(c);
            }
        }
    }

    #[inline]
    fn push_char(&mut self, c: char) {
        if !self.out.is_empty() {
            match self.pending {
                Pending::None => {}
                Pending::Space => self.out.push(' '),
                Pending::Break => self.out.push('\n'),
            }
        }
        self.pending = Pending::None;
        self.out.push(c);
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_white_space() {
        let mut b = TextBuilder::with_capacity(0);
        b.push_lines("  one\u{00A0} two\r\n\r\n three\t\n");
        assert_eq!(b.finish(), "one two\nthree");
    }
}

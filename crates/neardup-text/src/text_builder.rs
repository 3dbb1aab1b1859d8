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
        self.push_runs(s, |_| Pending::Space);
    }

    /// Appends plain text: white space that holds a line break becomes a break.
    pub(crate) fn push_lines(&mut self, s: &str) {
        self.push_runs(s, |c| {
            if is_line_break(c) {
                Pending::Break
            } else {
                Pending::Space
            }
        });
    }

    /// Appends `s` a run at a time (one copy per run, not one push per character: this was a fifth of the
    /// service's time on HTML pages), each white-space character raising the pending separator to `level(c)`.
    /// A run is non-white-space with single spaces inside it: the definition would write such a space back as
    /// it is, so ordinary prose is copied in one piece.
    #[inline]
    fn push_runs(&mut self, s: &str, level: impl Fn(char) -> Pending) {
        let bytes = s.as_bytes();
        let (mut run, mut i) = (0, 0);
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii() {
                if !is_ascii_white_space(b) {
                    i += 1;
                    continue;
                }
                if b == b' '
                    && run < i
                    && bytes
                        .get(i + 1)
                        .is_some_and(|&next| !starts_white_space(&s[i + 1..], next))
                {
                    i += 1;
                    continue;
                }
                self.push_word(&s[run..i]);
                self.pending = self.pending.max(level(char::from(b)));
                i += 1;
                run = i;
            } else {
                let c = s[i..].chars().next().unwrap_or(' ');
                if c.is_whitespace() {
                    self.push_word(&s[run..i]);
                    self.pending = self.pending.max(level(c));
                    run = i + c.len_utf8();
                }
                i += c.len_utf8();
            }
        }
        self.push_word(&s[run..]);
    }

    /// Appends a run of non-white-space, after the pending separator.
    #[inline]
    fn push_word(&mut self, word: &str) {
        if word.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            match self.pending {
                Pending::None => {}
                Pending::Space => self.out.push(' '),
                Pending::Break => self.out.push('\n'),
            }
        }
        self.pending = Pending::None;
        self.out.push_str(word);
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// `char::is_whitespace` for an ASCII byte (`u8::is_ascii_whitespace` leaves out U+000B).
#[inline]
fn is_ascii_white_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0B
}

/// Whether `rest` (whose first byte is `first`) opens with a `White_Space` character.
#[inline]
fn starts_white_space(rest: &str, first: u8) -> bool {
    if first.is_ascii() {
        is_ascii_white_space(first)
    } else {
        rest.chars().next().is_some_and(char::is_whitespace)
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

    /// The definition, a character at a time.
    fn per_char(parts: &[(bool, &str)]) -> String {
        let (mut out, mut pending) = (String::new(), Pending::None);
        for &(lines, s) in parts {
            for c in s.chars() {
                if c.is_whitespace() {
                    let level = if lines && is_line_break(c) {
                        Pending::Break
                    } else {
                        Pending::Space
                    };
                    pending = pending.max(level);
                } else {
                    if !out.is_empty() {
                        match pending {
                            Pending::None => {}
                            Pending::Space => out.push(' '),
                            Pending::Break => out.push('\n'),
                        }
                    }
                    pending = Pending::None;
                    out.push(c);
                }
            }
        }
        out
    }

    proptest::proptest! {
        /// Pushing runs equals the per-character definition, over every White_Space character, some that are
        /// not (U+1C, U+180E, U+200B, U+FEFF), ASCII and wider scripts, with pieces of both kinds in a row.
        #[test]
        fn runs_equal_the_per_character_definition(
            parts in proptest::collection::vec(
                (proptest::bool::ANY, "[ab \t\n\u{b}\u{c}\r\u{1c}\u{85}\u{a0}\u{1680}\u{2000}-\u{200b}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{180e}\u{feff}é日🙂]{0,16}"),
                1..4,
            )
        ) {
            let parts: Vec<(bool, &str)> = parts.iter().map(|(l, s)| (*l, s.as_str())).collect();
            let mut b = TextBuilder::with_capacity(0);
            for &(lines, s) in &parts {
                if lines {
                    b.push_lines(s);
                } else {
                    b.push_collapsing(s);
                }
            }
            proptest::prop_assert_eq!(b.finish(), per_char(&parts));
        }
    }
}

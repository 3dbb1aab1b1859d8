//! PDF pages to text (simhash-doc-v1 spec, "PDF"): the rules applied to the text layer that `neardup-pdf`
//! extracts, page by page.
//!
//! 1. Running headers and footers: when a document has at least 4 pages, a first (or last) non-empty line of
//!    a page is dropped if the same line, with its digits removed, is the first (or last) line of at least
//!    half of the pages and of at least 3, unless it is the page's only line. A first or last line that is only a page number (digits, or a
//!    roman numeral up to 8 letters) is dropped on every page.
//! 2. Pages are joined with a line break.
//! 3. De-hyphenation: a hyphen (`-`, U+2010 or a soft hyphen U+00AD) after a letter at the end of a line,
//!    followed by a line that starts (after spaces) with a lowercase letter, is removed together with the line
//!    break: `het-⏎erogeneous` → `heterogeneous`.
//! 4. Spacing diacritics: old TeX fonts draw `ü` as a spacing dieresis followed by `u`, which extractors give
//!    as `M¨uller`. A spacing diacritic (¨ ´ ˆ ˜ ¯ ˘ ˙ ˚ ˝ ˇ ¸ ˛) directly followed by a letter becomes that
//!    letter followed by the combining mark, and the text is put in NFC: `Müller`.

use crate::text_builder::TextBuilder;
use std::collections::HashMap;

/// The combining mark of each spacing diacritic.
const SPACING_TO_COMBINING: &[(char, char)] = &[
    ('\u{00A8}', '\u{0308}'),
    ('\u{00B4}', '\u{0301}'),
    ('\u{02C6}', '\u{0302}'),
    ('\u{02DC}', '\u{0303}'),
    ('\u{00AF}', '\u{0304}'),
    ('\u{02D8}', '\u{0306}'),
    ('\u{02D9}', '\u{0307}'),
    ('\u{02DA}', '\u{030A}'),
    ('\u{02DD}', '\u{030B}'),
    ('\u{02C7}', '\u{030C}'),
    ('\u{00B8}', '\u{0327}'),
    ('\u{02DB}', '\u{0328}'),
];

/// The text of a PDF from the raw text of its pages.
pub(crate) fn pages_to_text(pages: &[String]) -> String {
    let mut lines_per_page: Vec<Vec<&str>> = pages
        .iter()
        .map(|p| p.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .collect();
    drop_running_lines(&mut lines_per_page);
    let mut joined = String::with_capacity(pages.iter().map(String::len).sum());
    for (i, lines) in lines_per_page.iter().enumerate() {
        if i > 0 {
            joined.push('\n');
        }
        for (j, line) in lines.iter().enumerate() {
            if j > 0 {
                joined.push('\n');
            }
            joined.push_str(line);
        }
    }
    let repaired = repair_diacritics(&dehyphenate(&joined));
    let mut b = TextBuilder::with_capacity(repaired.len());
    b.push_lines(&repaired);
    b.finish()
}

fn is_page_number(line: &str) -> bool {
    let l = line.trim_matches(|c: char| c == '-' || c == '–' || c.is_whitespace());
    !l.is_empty()
        && (l.chars().all(|c| c.is_ascii_digit())
            || (l.len() <= 8
                && l.chars().all(|c| {
                    matches!(
                        c.to_ascii_lowercase(),
                        'i' | 'v' | 'x' | 'l' | 'c' | 'd' | 'm'
                    )
                })))
}

fn running_key(line: &str) -> String {
    line.chars()
        .filter(|c| !c.is_ascii_digit())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn drop_running_lines(pages: &mut [Vec<&str>]) {
    for page in pages.iter_mut() {
        if page.first().is_some_and(|l| is_page_number(l)) {
            page.remove(0);
        }
        if page.last().is_some_and(|l| is_page_number(l)) {
            page.pop();
        }
    }
    if pages.len() < 4 {
        return;
    }
    let threshold = (pages.len() / 2).max(3);
    for first in [true, false] {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for page in pages.iter() {
            let line = if first { page.first() } else { page.last() };
            if let Some(l) = line {
                *counts.entry(running_key(l)).or_default() += 1;
            }
        }
        for page in pages.iter_mut() {
            let line = if first { page.first() } else { page.last() };
            // A page keeps at least one line: a one-line page is body text, not a header.
            if page.len() > 1
                && let Some(l) = line
                && counts.get(&running_key(l)).is_some_and(|&n| n >= threshold)
            {
                if first {
                    page.remove(0);
                } else {
                    page.pop();
                }
            }
        }
    }
}

/// Joins words hyphenated at line ends.
fn dehyphenate(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '-' | '\u{2010}' | '\u{00AD}')
            && i > 0
            && chars[i - 1].is_alphabetic()
            && chars.get(i + 1) == Some(&'\n')
        {
            let mut j = i + 2;
            while chars.get(j).is_some_and(|c| *c == ' ' || *c == '\t') {
                j += 1;
            }
            if chars.get(j).is_some_and(|c| c.is_lowercase()) {
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `M¨uller` → `Müller`.
fn repair_diacritics(text: &str) -> String {
    if !text
        .chars()
        .any(|c| SPACING_TO_COMBINING.iter().any(|(s, _)| *s == c))
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some((_, combining)) = SPACING_TO_COMBINING.iter().find(|(s, _)| *s == c)
            && let Some(&next) = chars.peek()
            && next.is_alphabetic()
        {
            out.push(next);
            out.push(*combining);
            chars.next();
            continue;
        }
        out.push(c);
    }
    icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
        .normalize(&out)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(
            pages_to_text(&["A het-\nerogeneous mix, not X-\nRay; M¨uller and Angstr¨om".into()]),
            "A heterogeneous mix, not X-\nRay; Müller and Angström"
        );
        let pages: Vec<String> = (1..=5)
            .map(|i| format!("Journal of Tests, vol. {i}\nBody {i}\n{i}"))
            .collect();
        assert_eq!(
            pages_to_text(&pages),
            "Body 1\nBody 2\nBody 3\nBody 4\nBody 5"
        );
        // Three pages are too few to call a repeated line a running header.
        let pages: Vec<String> = (1..=3).map(|i| format!("Title\nBody {i}\nxii")).collect();
        assert_eq!(
            pages_to_text(&pages),
            "Title\nBody 1\nTitle\nBody 2\nTitle\nBody 3"
        );
    }
}

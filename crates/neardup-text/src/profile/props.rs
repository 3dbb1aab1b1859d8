//! One byte of Unicode properties per code point, built once from the pinned ICU4X data.
//!
//! The tokenizer asks several questions of every non-ASCII character (general category, script, White_Space,
//! "does normalization change it?"). Asking ICU4X each one costs a trie lookup apiece; this table answers all
//! of them with one byte load. It is built on first use from ICU4X's range iterators (about a millisecond) and
//! holds 1.1 MB. ASCII never reaches it: the tokenizer has its own byte classes.

use icu_properties::props::{
    ChangesWhenCasefolded, ChangesWhenNfkcCasefolded, GeneralCategory, GeneralCategoryGroup,
    Script, WhiteSpace,
};
use icu_properties::{CodePointMapData, CodePointSetData};
use std::sync::OnceLock;

/// General category L*, M*, Nd or Pc: the character belongs inside a token.
pub const TOKEN: u8 = 1;
/// General category L*.
pub const LETTER: u8 = 1 << 1;
/// General category M*.
pub const MARK: u8 = 1 << 2;
/// A letter of a script written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar): a token
/// on its own, with the marks that follow it.
pub const SINGLE: u8 = 1 << 3;
/// Unicode White_Space: separates chunks.
pub const SPACE: u8 = 1 << 4;
/// General category Cf: deleted before normalization.
pub const FORMAT: u8 = 1 << 5;
/// Neither Cf nor changed, on its own, by NFKC or by case folding (neither CWKCF nor CWCF). A chunk made of
/// such characters that is also NFKC-normalized as a whole is its own normalized form.
pub const STABLE: u8 = 1 << 6;

/// The scripts whose letters are tokens on their own (simhash-doc-v1 §3).
pub const SINGLE_SCRIPTS: [Script; 7] = [
    Script::Han,
    Script::Hiragana,
    Script::Katakana,
    Script::Thai,
    Script::Lao,
    Script::Khmer,
    Script::Myanmar,
];

static TABLE: OnceLock<Box<[u8]>> = OnceLock::new();

/// The property byte of a character.
#[inline(always)]
pub fn flags(c: char) -> u8 {
    let table = TABLE.get_or_init(build);
    // The table has one entry per code point up to U+10FFFF, so the index is always in bounds.
    table[c as usize]
}

fn fill(table: &mut [u8], range: std::ops::RangeInclusive<u32>, bit: u8) {
    for b in &mut table[*range.start() as usize..=*range.end() as usize] {
        *b |= bit;
    }
}

fn build() -> Box<[u8]> {
    let mut t = vec![0u8; 0x11_0000].into_boxed_slice();
    let gc = CodePointMapData::<GeneralCategory>::new();
    let group = |g: GeneralCategoryGroup| gc.iter_ranges_for_group(g);
    for r in group(GeneralCategoryGroup::Letter) {
        fill(&mut t, r, TOKEN | LETTER);
    }
    for r in group(GeneralCategoryGroup::Mark) {
        fill(&mut t, r, TOKEN | MARK);
    }
    for r in group(GeneralCategoryGroup::DecimalNumber) {
        fill(&mut t, r, TOKEN);
    }
    for r in group(GeneralCategoryGroup::ConnectorPunctuation) {
        fill(&mut t, r, TOKEN);
    }
    for r in group(GeneralCategoryGroup::Format) {
        fill(&mut t, r, FORMAT);
    }
    let script = CodePointMapData::<Script>::new();
    for s in SINGLE_SCRIPTS {
        for r in script.iter_ranges_for_value(s) {
            for b in &mut t[*r.start() as usize..=*r.end() as usize] {
                if *b & LETTER != 0 {
                    *b |= SINGLE;
                }
            }
        }
    }
    for r in CodePointSetData::new::<WhiteSpace>().iter_ranges() {
        fill(&mut t, r, SPACE);
    }
    // STABLE starts set everywhere and is cleared where a character changes.
    for b in t.iter_mut() {
        *b |= STABLE;
    }
    let unstable = CodePointSetData::new::<ChangesWhenNfkcCasefolded>()
        .iter_ranges()
        .chain(CodePointSetData::new::<ChangesWhenCasefolded>().iter_ranges());
    for r in unstable {
        for b in &mut t[*r.start() as usize..=*r.end() as usize] {
            *b &= !STABLE;
        }
    }
    for b in t.iter_mut() {
        if *b & FORMAT != 0 {
            *b &= !STABLE;
        }
    }
    // CWCF is defined on the NFD form, so it misses precomposed letters whose full folding decomposes
    // (U+01F0 ǰ → j + U+030C, U+1E96 ẖ, U+1F50 ὐ, ...). Those are cased or modifier letters or
    // nonspacing marks: check each of them directly (a few thousand characters).
    let fold = icu_casemap::CaseMapper::new();
    let mut buf = [0u8; 4];
    for g in [
        GeneralCategory::LowercaseLetter,
        GeneralCategory::UppercaseLetter,
        GeneralCategory::TitlecaseLetter,
        GeneralCategory::ModifierLetter,
        GeneralCategory::NonspacingMark,
    ] {
        for r in gc.iter_ranges_for_value(g) {
            for cp in r {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                if t[cp as usize] & STABLE != 0 {
                    let s: &str = c.encode_utf8(&mut buf);
                    if fold.fold_string(s) != s {
                        t[cp as usize] &= !STABLE;
                    }
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use icu_casemap::CaseMapper;
    use icu_normalizer::ComposingNormalizerBorrowed;

    #[test]
    fn samples() {
        assert_eq!(
            flags('a') & (TOKEN | LETTER | STABLE),
            TOKEN | LETTER | STABLE
        );
        assert_eq!(flags('A') & STABLE, 0);
        assert_eq!(flags('東') & SINGLE, SINGLE);
        assert_eq!(flags('ー') & SINGLE, 0, "U+30FC is Script=Common");
        assert_eq!(
            flags('\u{0E4D}') & (MARK | SINGLE),
            MARK,
            "Thai nikhahit is a mark, not a letter"
        );
        assert_eq!(flags('\u{00AD}') & (FORMAT | STABLE), FORMAT);
        assert_eq!(flags('\u{3000}') & SPACE, SPACE);
        assert_eq!(flags('\u{0085}') & SPACE, SPACE);
        assert_eq!(
            flags('\u{001C}') & SPACE,
            0,
            "information separators are not White_Space"
        );
        assert_eq!(flags('_') & TOKEN, TOKEN);
        assert_eq!(
            flags('٣') & (TOKEN | LETTER),
            TOKEN,
            "Arabic-Indic digit is Nd"
        );
        assert_eq!(flags('ﬁ') & STABLE, 0);
    }

    /// The fast path trusts STABLE: a STABLE character must be left alone by NFKC and by full case folding.
    #[test]
    fn stable_characters_are_fixed_points_of_the_pipeline() {
        let nfkc = ComposingNormalizerBorrowed::new_nfkc();
        let fold = CaseMapper::new();
        let mut checked = 0u32;
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if flags(c) & STABLE == 0 {
                continue;
            }
            let s = c.to_string();
            let n = nfkc.normalize(&s);
            assert_eq!(n, s, "NFKC changes stable U+{:04X}", c as u32);
            assert_eq!(
                fold.fold_string(&s),
                s,
                "case folding changes stable U+{:04X}",
                c as u32
            );
            checked += 1;
        }
        assert!(checked > 1_000_000);
    }
}

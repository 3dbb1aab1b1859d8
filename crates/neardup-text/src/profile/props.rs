//! Sixteen bits of Unicode properties per code point, built once from the pinned ICU4X data.
//!
//! The tokenizer asks several questions of every non-ASCII character (general category, script, White_Space,
//! "does normalization change it?"). Asking ICU4X each one costs a trie lookup apiece; this table answers all
//! of them with one load. It is built on first use from ICU4X's range iterators (5 to 10 ms) and
//! holds 2.2 MB. ASCII never reaches it: the tokenizer has its own byte classes.

use icu_normalizer::properties::{
    CanonicalCompositionBorrowed, CanonicalDecompositionBorrowed, Decomposed,
};
use icu_properties::props::{
    CanonicalCombiningClass, ChangesWhenCasefolded, ChangesWhenNfkcCasefolded, GeneralCategory,
    GeneralCategoryGroup, Script, WhiteSpace,
};
use icu_properties::{CodePointMapData, CodePointSetData};
use std::sync::OnceLock;

/// General category L*, M*, Nd or Pc: the character belongs inside a token.
pub const TOKEN: u16 = 1;
/// General category L*.
pub const LETTER: u16 = 1 << 1;
/// General category M*.
pub const MARK: u16 = 1 << 2;
/// A letter of a script written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar): a token
/// on its own, with the marks that follow it.
pub const SINGLE: u16 = 1 << 3;
/// Unicode White_Space: separates chunks.
pub const SPACE: u16 = 1 << 4;
/// General category Cf: deleted before normalization.
pub const FORMAT: u16 = 1 << 5;
/// Neither Cf nor changed, on its own, by NFKC or by case folding (neither CWKCF nor CWCF). A chunk made of
/// such characters that is also NFKC-normalized as a whole is its own normalized form.
pub const STABLE: u16 = 1 << 6;
/// STABLE, canonical combining class 0, and not the second character of any canonical composition: NFKC
/// quick check "Yes" with ccc = 0. A string made only of such characters is NFKC-normalized whatever their
/// order (no decomposition, reordering or composition can touch it), so it needs no quick-check pass.
pub const NFKC_SAFE: u16 = 1 << 7;
/// Not STABLE only because case folding changes it: NFKC quick check "Yes" with ccc = 0 (like NFKC_SAFE), and
/// its full case folding is one character, given by ICU4X's `simple_fold`, that is itself NFKC_SAFE
/// (`Д` → `д`, `É` → `é`; not `ß` → `ss`).
pub const SIMPLE_FOLD: u16 = 1 << 8;
/// NFKC maps the character to one ASCII character that only separates tokens: not a letter, digit, `_` or
/// White_Space, none of the characters the identifier rules read (`:` `@` `.` `/`), and the first character
/// of no canonical composition (FULLWIDTH COMMA → `,`, FULLWIDTH LEFT PARENTHESIS → `(`). The character is
/// itself a separator (not Cf, not a token character, canonical combining class 0, second in no
/// composition), so normalization changes no token and no identifier around it.
pub const ASCII_SEPARATOR: u16 = 1 << 10;
/// STABLE, canonical combining class other than 0, and not the second character of any canonical composition
/// (NFKC quick check "Yes"): a mark that normalization can only reorder. A string of STABLE characters that
/// are NFKC_SAFE or COMBINING is NFKC-normalized when no two COMBINING characters stand together: no mark is
/// then reordered (one that follows a precomposed letter may move into its decomposition, but composes with
/// nothing, blocks nothing that followed it and so changes nothing), and none composes (a test checks every
/// such pair against ICU4X).
pub const COMBINING: u16 = 1 << 11;
/// NFKC_SAFE, SIMPLE_FOLD or ASCII_SEPARATOR: a chunk of such characters has the tokens it has as it stands,
/// each folded character by character with `simple_fold` (its separators may normalize to other
/// separators, which changes no token).
pub const FOLD_FAST: u16 = 1 << 9;

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

/// One entry per code point, U+0000 to U+10FFFF: indexing it with a `char` needs no bounds check.
pub type Table = [u16; 0x11_0000];

static TABLE: OnceLock<Box<Table>> = OnceLock::new();

/// Whether a code point lies outside the blocks that hold no canonical pair decompositions: CJK ideographs
/// (U+3400..U+9FFF and planes 2 and up) and Hangul syllables (U+AC00..U+D7AF, composed algorithmically).
fn may_be_pair_composite(cp: u32) -> bool {
    !((0x3400..0xA000).contains(&cp) || (0xAC00..0xD7B0).contains(&cp) || cp >= 0x2_0000)
}

/// If `cp` is a primary composite (its canonical decomposition is a pair that composes back to it), the
/// pair's second character.
fn composite_second(cp: u32) -> Option<char> {
    let c = char::from_u32(cp)?;
    match CanonicalDecompositionBorrowed::new().decompose(c) {
        Decomposed::Expansion(first, second)
            if CanonicalCompositionBorrowed::new().compose(first, second) == Some(c) =>
        {
            Some(second)
        }
        _ => None,
    }
}

/// The property byte of a character.
#[inline(always)]
pub fn flags(c: char) -> u16 {
    table()[c as usize]
}

/// The table [`flags`] reads, built on first use. Loops over many characters take it once and index it
/// themselves, which saves the check of the lazy initialization on every character.
#[inline]
pub fn table() -> &'static Table {
    TABLE.get_or_init(build)
}

fn fill(table: &mut [u16], range: std::ops::RangeInclusive<u32>, bit: u16) {
    for b in &mut table[*range.start() as usize..=*range.end() as usize] {
        *b |= bit;
    }
}

fn build() -> Box<Table> {
    // STABLE starts set everywhere and is cleared where a character changes.
    let mut t = vec![STABLE; 0x11_0000].into_boxed_slice();
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
    let unstable = CodePointSetData::new::<ChangesWhenNfkcCasefolded>()
        .iter_ranges()
        .chain(CodePointSetData::new::<ChangesWhenCasefolded>().iter_ranges());
    for r in unstable {
        for b in &mut t[*r.start() as usize..=*r.end() as usize] {
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
    // NFKC_SAFE: STABLE and ccc = 0 ...
    // Cf characters are deleted, so never STABLE; NFKC_SAFE starts as STABLE and is narrowed below.
    for b in t.iter_mut() {
        if *b & FORMAT != 0 {
            *b &= !STABLE;
        }
        if *b & STABLE != 0 {
            *b |= NFKC_SAFE;
        }
    }
    let ccc = CodePointMapData::<CanonicalCombiningClass>::new();
    for r in ccc.iter_ranges_for_value_complemented(CanonicalCombiningClass::NotReordered) {
        for b in &mut t[*r.start() as usize..=*r.end() as usize] {
            *b &= !NFKC_SAFE;
        }
    }
    // ... and never the second character of a primary composite (those are NFKC_QC = Maybe). Every primary
    // composite is an assigned character whose canonical decomposition is a pair that composes back. Hangul
    // syllables compose algorithmically (their second characters are the vowel and trailing jamo), and the
    // ideograph blocks hold no pair decompositions, so the scan skips them (a test checks every character).
    for second in (0x1161..=0x1175).chain(0x11A8..=0x11C2) {
        t[second] &= !NFKC_SAFE;
    }
    let mut seconds: Vec<u32> = (0x1161..=0x1175).chain(0x11A8..=0x11C2).collect();
    for r in gc.iter_ranges_for_value_complemented(GeneralCategory::Unassigned) {
        for cp in r.filter(|&cp| may_be_pair_composite(cp)) {
            if let Some(second) = composite_second(cp) {
                t[second as usize] &= !NFKC_SAFE;
                seconds.push(second as u32);
            }
        }
    }
    seconds.sort_unstable();
    // COMBINING: the STABLE characters of a class other than 0 that no composition takes second.
    for r in ccc.iter_ranges_for_value_complemented(CanonicalCombiningClass::NotReordered) {
        for cp in r {
            if t[cp as usize] & STABLE != 0 && seconds.binary_search(&cp).is_err() {
                t[cp as usize] |= COMBINING;
            }
        }
    }
    // SIMPLE_FOLD, among the characters that case folding changes.
    let nfkc = icu_normalizer::ComposingNormalizerBorrowed::new_nfkc();
    let ccc_zero = |c: char| ccc.get(c) == CanonicalCombiningClass::NotReordered;
    for r in CodePointSetData::new::<ChangesWhenCasefolded>().iter_ranges() {
        for cp in r {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let s: &str = c.encode_utf8(&mut buf);
            let simple = fold.simple_fold(c);
            let mut one = [0u8; 4];
            let qualifies = t[cp as usize] & FORMAT == 0
                && ccc_zero(c)
                && seconds.binary_search(&cp).is_err()
                && nfkc.normalize(s) == s
                && fold.fold_string(s) == simple.encode_utf8(&mut one) as &str
                && t[simple as usize] & NFKC_SAFE != 0;
            if qualifies {
                t[cp as usize] |= SIMPLE_FOLD;
            }
        }
    }
    // ASCII_SEPARATOR, among the characters that NFKC changes. The ASCII characters they may normalize to:
    // separators (neither White_Space nor token characters), none that the identifier rules read, none that
    // starts a canonical composition.
    let composition = CanonicalCompositionBorrowed::new();
    let plain_separator: [bool; 128] = std::array::from_fn(|b| {
        let p = char::from(b as u8);
        t[b] & (SPACE | TOKEN) == 0
            && !matches!(p, ':' | '@' | '.' | '/')
            && seconds
                .iter()
                .filter_map(|&second| char::from_u32(second))
                .all(|second| composition.compose(p, second).is_none())
    });
    for r in CodePointSetData::new::<ChangesWhenNfkcCasefolded>().iter_ranges() {
        for cp in r.filter(|&cp| cp >= 0x80) {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            if t[cp as usize] & (FORMAT | SPACE | TOKEN) != 0
                || !ccc_zero(c)
                || seconds.binary_search(&cp).is_ok()
            {
                continue;
            }
            let normalized = nfkc.normalize(c.encode_utf8(&mut buf));
            let mut chars = normalized.chars();
            let (Some(p), None) = (chars.next(), chars.next()) else {
                continue;
            };
            if p.is_ascii() && plain_separator[p as usize] {
                t[cp as usize] |= ASCII_SEPARATOR;
            }
        }
    }
    for b in t.iter_mut() {
        if *b & (NFKC_SAFE | SIMPLE_FOLD | ASCII_SEPARATOR) != 0 {
            *b |= FOLD_FAST;
        }
    }
    t.try_into().expect("one entry per code point")
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
        assert_eq!(
            flags('é') & NFKC_SAFE,
            NFKC_SAFE,
            "precomposed é is NFKC quick-check Yes"
        );
        assert_eq!(
            flags('\u{0301}') & NFKC_SAFE,
            0,
            "combining acute has ccc 230"
        );
        assert_eq!(
            flags('\u{1161}') & NFKC_SAFE,
            0,
            "jamo vowels compose with a preceding leading jamo"
        );
        assert_eq!(
            flags('\u{0BBE}') & NFKC_SAFE,
            0,
            "Tamil AA (ccc 0) composes with a preceding vowel sign"
        );
        assert_eq!(flags('가') & NFKC_SAFE, NFKC_SAFE);
        assert_eq!(flags('東') & NFKC_SAFE, NFKC_SAFE);
        assert_eq!(
            flags('Д') & (SIMPLE_FOLD | FOLD_FAST),
            SIMPLE_FOLD | FOLD_FAST
        );
        assert_eq!(flags('É') & SIMPLE_FOLD, SIMPLE_FOLD);
        assert_eq!(flags('ß') & SIMPLE_FOLD, 0, "folds to two characters");
        assert_eq!(
            flags('\u{212A}') & SIMPLE_FOLD,
            0,
            "KELVIN SIGN is changed by NFKC"
        );
        assert_eq!(flags('д') & FOLD_FAST, FOLD_FAST);
        for c in ['，', '（', '）', '；', '？', '！'] {
            assert_eq!(
                flags(c) & (ASCII_SEPARATOR | FOLD_FAST),
                ASCII_SEPARATOR | FOLD_FAST,
                "U+{:04X}",
                c as u32
            );
        }
        for c in [
            '：', '＠', '．', '／', '＜', '＝', '＞', 'Ａ', '１', '＿', '\u{3000}', '…',
        ] {
            assert_eq!(
                flags(c) & ASCII_SEPARATOR,
                0,
                "U+{:04X} is read by identifier rules, composes, or is no single separator",
                c as u32
            );
        }
    }

    /// Every character that has `flag`.
    fn chars_with(flag: u16) -> impl Iterator<Item = char> {
        (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(move |&c| flags(c) & flag != 0)
    }

    /// ASCII_SEPARATOR characters: separators that NFKC maps to one ASCII separator which no identifier
    /// rule reads and which starts no composition, and which case folding then leaves alone.
    #[test]
    fn ascii_separators_normalize_to_plain_separators() {
        let fold = CaseMapper::new();
        let nfkc = ComposingNormalizerBorrowed::new_nfkc();
        let mut targets = std::collections::BTreeSet::new();
        let mut n = 0;
        for c in chars_with(ASCII_SEPARATOR).filter(|c| !c.is_ascii()) {
            let f = flags(c);
            assert_eq!(
                f & (TOKEN | SPACE | FORMAT | NFKC_SAFE),
                0,
                "U+{:04X}",
                c as u32
            );
            let normalized = nfkc.normalize(&c.to_string()).into_owned();
            let p = normalized.chars().next().expect("one character");
            assert_eq!(normalized.chars().count(), 1);
            assert!(p.is_ascii() && !p.is_ascii_alphanumeric() && p != '_');
            assert!(!p.is_ascii_whitespace() && !":@./".contains(p));
            assert_eq!(fold.fold_string(&normalized), normalized);
            targets.insert(p);
            n += 1;
        }
        assert!(n > 20, "{n}");
        // No primary composite starts with one of the characters they normalize to.
        let decomposition = CanonicalDecompositionBorrowed::new();
        let composition = CanonicalCompositionBorrowed::new();
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if let Decomposed::Expansion(first, second) = decomposition.decompose(c) {
                assert!(
                    !targets.contains(&first) || composition.compose(first, second) != Some(c),
                    "U+{:04X} composes from {first:?}",
                    c as u32
                );
            }
        }
    }

    /// SIMPLE_FOLD characters: NFKC leaves them alone and full folding is `simple_fold`. And what the
    /// tokenizer's chunk scan assumes in finding a chunk's tokens before folding it: the folding is a
    /// character of the same token kind, and never ASCII unless the character is (the identifier rules read
    /// ASCII only).
    #[test]
    fn simple_fold_characters_fold_simply() {
        let fold = CaseMapper::new();
        let nfkc = ComposingNormalizerBorrowed::new_nfkc();
        let kind = TOKEN | LETTER | MARK | SINGLE | SPACE | FORMAT;
        let mut n = 0;
        for c in chars_with(SIMPLE_FOLD) {
            let s = c.to_string();
            assert_eq!(nfkc.normalize(&s), s);
            let folded = fold.simple_fold(c);
            assert_eq!(fold.fold_string(&s), folded.to_string());
            if !c.is_ascii() {
                assert!(!folded.is_ascii(), "U+{:04X} folds to ASCII", c as u32);
                assert_eq!(
                    flags(folded) & kind,
                    flags(c) & kind,
                    "U+{:04X} and its folding U+{:04X} tokenize differently",
                    c as u32,
                    folded as u32
                );
            }
            n += 1;
        }
        assert!(n > 1000, "{n}");
    }

    /// The tokenizer's chunk scan gives ASCII characters flags from their byte classes: A-Z fold simply
    /// (to a-z), everything else is NFKC_SAFE.
    #[test]
    fn what_the_chunk_scan_assumes_of_ascii() {
        let fold = CaseMapper::new();
        for b in 0u8..128 {
            let f = flags(b as char);
            if b.is_ascii_uppercase() {
                assert_eq!(f & (STABLE | NFKC_SAFE), 0, "{b:#x}");
                assert_ne!(f & SIMPLE_FOLD, 0, "{b:#x}");
                assert_eq!(fold.simple_fold(b as char), b.to_ascii_lowercase() as char);
            } else {
                assert_eq!(
                    f & (STABLE | NFKC_SAFE | FOLD_FAST),
                    STABLE | NFKC_SAFE | FOLD_FAST,
                    "{b:#x}"
                );
            }
        }
    }

    /// The scan that builds NFKC_SAFE skips some blocks: check every code point, and that nothing skipped is
    /// a composite whose second character was left NFKC_SAFE.
    #[test]
    fn no_composite_second_is_nfkc_safe() {
        for cp in 0..=0x10FFFFu32 {
            if let Some(second) = composite_second(cp) {
                assert_eq!(
                    flags(second) & NFKC_SAFE,
                    0,
                    "U+{:04X} composes from U+{:04X}",
                    cp,
                    second as u32
                );
            }
        }
    }

    /// COMBINING's promise: a COMBINING mark after any NFKC_SAFE character is NFKC-normalized. Only a
    /// precomposed character (one with a canonical decomposition) could reorder with it: every such pair is
    /// checked against ICU4X, with every other COMBINING mark after a plain letter.
    #[test]
    fn a_combining_mark_after_a_safe_character_is_normalized() {
        let nfkc = ComposingNormalizerBorrowed::new_nfkc();
        let decompose = CanonicalDecompositionBorrowed::new();
        let ccc = CodePointMapData::<CanonicalCombiningClass>::new();
        let all = || (0..=0x10FFFFu32).filter_map(char::from_u32);
        let combining: Vec<char> = all().filter(|&c| flags(c) & COMBINING != 0).collect();
        let precomposed: Vec<char> = all()
            .filter(|&c| flags(c) & NFKC_SAFE != 0)
            .filter(|&c| !matches!(decompose.decompose(c), Decomposed::Default))
            // Hangul syllables decompose to jamo of class 0, which no mark passes: a few stand for all.
            .filter(|&c| !('\u{AC01}'..='\u{D7A3}').contains(&c) || (c as u32).is_multiple_of(997))
            .collect();
        assert!(combining.len() > 500 && precomposed.len() > 300);
        for &mark in &combining {
            assert!(flags(mark) & STABLE != 0);
            assert_ne!(ccc.get(mark), CanonicalCombiningClass::NotReordered);
        }
        let mut pair = String::new();
        for &first in precomposed.iter().chain(&['a', 'ก', 'ཀ', 'ក', 'क']) {
            for &mark in &combining {
                pair.clear();
                pair.push(first);
                pair.push(mark);
                assert!(
                    nfkc.is_normalized(&pair),
                    "U+{:04X} U+{:04X}",
                    first as u32,
                    mark as u32
                );
            }
        }
    }

    proptest::proptest! {
        /// Any string of NFKC_SAFE characters is its own NFKC form (sampled from the scripts that have
        /// compositions: Latin, Greek, Cyrillic, Indic, Hangul, Sinhala, Tibetan).
        #[test]
        fn nfkc_safe_strings_are_normalized(s in "[\u{0}-\u{24f}\u{370}-\u{4ff}\u{900}-\u{dff}\u{f00}-\u{fff}\u{1000}-\u{109f}\u{1100}-\u{11ff}\u{1e00}-\u{1fff}\u{ac00}-\u{ac40}\u{3040}-\u{30ff}]{0,12}") {
            let safe: String = s.chars().filter(|&c| flags(c) & NFKC_SAFE != 0).collect();
            let nfkc = ComposingNormalizerBorrowed::new_nfkc();
            proptest::prop_assert_eq!(nfkc.normalize(&safe), safe.as_str());
        }
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

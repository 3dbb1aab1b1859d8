//! Bitmask classification of 64-byte blocks, for the ASCII fast path of the tokenizer.
//!
//! A byte-at-a-time tokenizer loses most of its time to branch mispredictions: every token and every chunk
//! ends at a data-dependent place. Here 64 bytes are classified at once with 16-byte SIMD compares (`wide`:
//! SSE2 on x86-64, NEON on aarch64, portable fallback elsewhere, no `unsafe` and no runtime dispatch), giving
//! one bit per byte for each class; tokens and chunks are then found with bit operations. A block with
//! non-ASCII bytes also has its multi-byte characters' lead bytes marked ([`leads`]), for the tokenizer to read
//! those characters' property flags; in a block dense with them (Cyrillic, Greek), their [`classes`] are laid
//! out byte by byte and made into masks the same way ([`character_masks`]).

use wide::u8x16;

/// One bit per byte of a 64-byte block (bit j = byte j), for each class the tokenizer needs.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Masks {
    /// ASCII White_Space: U+0009..U+000D, U+0020.
    pub space: u64,
    /// `[A-Za-z0-9_]`.
    pub token: u64,
    /// `[A-Za-z]`.
    pub letter: u64,
    /// `[A-Z]`.
    pub upper: u64,
    /// Bytes that need the scalar path: ':' and '@' (identifier rules) and every non-ASCII byte (the tokenizer
    /// takes back those of the two- and three-byte characters it can read in the block).
    pub special: u64,
    /// Non-ASCII bytes.
    pub high: u64,
    /// Bytes that may start an identifier prefix: 'w', 'W' ("www.") and '1' ("10.").
    pub prefix: u64,
}

#[inline(always)]
fn in_range(v: u8x16, lo: u8, hi: u8) -> u8x16 {
    v.max(u8x16::splat(lo)).min(u8x16::splat(hi)).simd_eq(v)
}

#[inline(always)]
fn eq(v: u8x16, b: u8) -> u8x16 {
    v.simd_eq(u8x16::splat(b))
}

#[inline(always)]
fn bits(v: u8x16) -> u64 {
    v.to_bitmask() as u64
}

/// Classifies 64 bytes.
#[inline(always)]
pub(super) fn classify(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let v = u8x16::new(lane.try_into().expect("16 bytes"));
        let folded = v | u8x16::splat(0x20);
        let letter = in_range(folded, b'a', b'z');
        let upper = in_range(v, b'A', b'Z');
        let token = letter | in_range(v, b'0', b'9') | eq(v, b'_');
        let space = in_range(v, 0x09, 0x0d) | eq(v, b' ');
        let special = eq(v, b':') | eq(v, b'@') | v; // the high bit of v itself marks non-ASCII bytes
        let prefix = eq(folded, b'w') | eq(v, b'1');
        let shift = 16 * k;
        m.space |= bits(space) << shift;
        m.token |= bits(token) << shift;
        m.letter |= bits(letter) << shift;
        m.upper |= bits(upper) << shift;
        m.special |= bits(special) << shift;
        m.prefix |= bits(prefix) << shift;
        m.high |= bits(v) << shift;
    }
    m
}

/// The lead bytes of a block's multi-byte characters, one bit per byte.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Leads {
    /// The first bytes of two-byte UTF-8 sequences (0xC0..=0xDF).
    pub two: u64,
    /// The first bytes of three-byte UTF-8 sequences (0xE0..=0xEF).
    pub three: u64,
    /// The first bytes of characters U+3000..U+9FFF (0xE3..=0xE9): CJK punctuation, kana and ideographs.
    pub cjk: u64,
}

/// Marks the lead bytes of a block that has non-ASCII bytes ([`Masks::high`]); ASCII blocks, most of most
/// text, need none.
#[inline(always)]
pub(super) fn leads(block: &[u8; 64]) -> Leads {
    let mut l = Leads::default();
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let v = u8x16::new(lane.try_into().expect("16 bytes"));
        let shift = 16 * k;
        l.two |= bits(in_range(v, 0xc0, 0xdf)) << shift;
        l.three |= bits(in_range(v, 0xe0, 0xef)) << shift;
        l.cjk |= bits(in_range(v, 0xe3, 0xe9)) << shift;
    }
    l
}

/// What the block path needs of a character of the Basic Multilingual Plane, one bit each
/// ([`character_masks`] turns a block's worth into masks): White_Space; a token character; a letter; folds
/// simply; and "special", that the block cannot take it (normalization changes it otherwise than by a
/// simple fold, or it is a letter that is a token on its own).
pub(super) mod class {
    pub const SPACE: u8 = 1;
    pub const TOKEN: u8 = 1 << 1;
    pub const LETTER: u8 = 1 << 2;
    pub const FOLD: u8 = 1 << 3;
    pub const SPECIAL: u8 = 1 << 4;
}

/// The [`class`] byte of a character's property flags.
pub(super) fn class_of(flags: u16) -> u8 {
    use super::props::{FOLD_FAST, LETTER, SIMPLE_FOLD, SINGLE, SPACE, TOKEN};
    let has = |flag: u16, bit: u8| if flags & flag != 0 { bit } else { 0 };
    let taken = flags & SPACE != 0 || (flags & FOLD_FAST != 0 && flags & SINGLE == 0);
    has(SPACE, class::SPACE)
        | has(TOKEN, class::TOKEN)
        | has(LETTER, class::LETTER)
        | has(SIMPLE_FOLD, class::FOLD)
        | if taken { 0 } else { class::SPECIAL }
}

/// The [`class`] byte of every code point of the Basic Multilingual Plane (64 KiB), made on first use from
/// the property table.
pub(super) fn classes() -> &'static [u8; 0x1_0000] {
    static CLASSES: std::sync::OnceLock<Box<[u8; 0x1_0000]>> = std::sync::OnceLock::new();
    CLASSES.get_or_init(|| {
        let flags = super::props::table();
        let mut classes = Box::new([0u8; 0x1_0000]);
        for (class, &flags) in classes.iter_mut().zip(flags.iter()) {
            *class = class_of(flags);
        }
        classes
    })
}

/// The masks of a block whose byte j holds the [`class`] byte of the character it belongs to (0 for bytes
/// of no character read): one mask per class bit, in the order of [`class`].
#[inline(always)]
pub(super) fn character_masks(classes: &[u8; 64]) -> [u64; 5] {
    let mut masks = [0u64; 5];
    for (k, lane) in classes.chunks_exact(16).enumerate() {
        let v = u8x16::new(lane.try_into().expect("16 bytes"));
        for (bit, mask) in masks.iter_mut().enumerate() {
            let b = u8x16::splat(1 << bit);
            *mask |= bits((v & b).simd_eq(b)) << (16 * k);
        }
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn character_masks_have_a_bit_per_class_bit() {
        let mut at = [0u8; 64];
        for (j, b) in at.iter_mut().enumerate() {
            *b = (j as u8).wrapping_mul(37) & 0x1f;
        }
        let masks = character_masks(&at);
        for (bit, mask) in masks.iter().enumerate() {
            for (j, &b) in at.iter().enumerate() {
                assert_eq!(
                    (mask >> j) & 1 == 1,
                    b & (1 << bit) != 0,
                    "bit {bit} of byte {j}"
                );
            }
        }
    }

    #[test]
    fn the_class_table_is_class_of_the_flags() {
        let flags = super::super::props::table();
        let classes = classes();
        for c in [
            0x41, 0xe9, 0x3a3, 0x414, 0x2019, 0x3000, 0x4e00, 0xff0c, 0xfeff,
        ] {
            assert_eq!(classes[c], class_of(flags[c]), "U+{c:04X}");
        }
        assert_eq!(
            classes[0x414],
            class::TOKEN | class::LETTER | class::FOLD,
            "Д"
        );
        assert_eq!(classes[0x2009], class::SPACE, "THIN SPACE");
        assert_eq!(
            classes[0x4e00] & class::SPECIAL,
            class::SPECIAL,
            "a single letter"
        );
    }

    #[test]
    fn classes_match_a_scalar_definition() {
        let mut block = [0u8; 64];
        for start in (0..256).step_by(64) {
            for (j, b) in block.iter_mut().enumerate() {
                *b = (start + j) as u8;
            }
            let m = classify(&block);
            let l = leads(&block);
            for (j, &b) in block.iter().enumerate() {
                let bit = |mask: u64| (mask >> j) & 1 == 1;
                assert_eq!(bit(m.space), matches!(b, 9..=13 | b' '), "space {b:#x}");
                assert_eq!(
                    bit(m.token),
                    b.is_ascii_alphanumeric() || b == b'_',
                    "token {b:#x}"
                );
                assert_eq!(bit(m.letter), b.is_ascii_alphabetic(), "letter {b:#x}");
                assert_eq!(bit(m.upper), b.is_ascii_uppercase(), "upper {b:#x}");
                assert_eq!(
                    bit(m.special),
                    b >= 0x80 || b == b':' || b == b'@',
                    "special {b:#x}"
                );
                assert_eq!(bit(m.high), b >= 0x80, "high {b:#x}");
                assert_eq!(bit(l.two), (0xc0..=0xdf).contains(&b), "lead2 {b:#x}");
                assert_eq!(bit(l.three), (0xe0..=0xef).contains(&b), "lead3 {b:#x}");
                assert_eq!(bit(l.cjk), (0xe3..=0xe9).contains(&b), "cjk {b:#x}");
                assert_eq!(
                    bit(m.prefix),
                    matches!(b, b'w' | b'W' | b'1'),
                    "prefix {b:#x}"
                );
            }
        }
    }
}

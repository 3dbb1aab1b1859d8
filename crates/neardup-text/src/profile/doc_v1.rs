//! The `doc-v1` token profile: simhash-doc-v1 §1–3 (normalization, identifiers out, tokens).
//!
//! The normative definition is the spec (`docs/spec/simhash-doc-v1.md`); in short:
//!
//! 1. delete every `Cf` character, apply NFKC, then full case folding;
//! 2. split on `White_Space` into chunks and drop chunks that look like identifiers (URLs, `www.`, e-mail
//!    addresses, DOIs);
//! 3. a token is a maximal run of `L*`/`M*`/`Nd`/`Pc` characters, except that a letter of Han, Hiragana,
//!    Katakana, Thai, Lao, Khmer or Myanmar is a token on its own (with the marks that follow it); tokens
//!    without a letter are dropped.
//!
//! ## How it is made fast without changing the result
//!
//! Normalization and case folding are per-chunk operations: every `White_Space` character is a starter that
//! neither composes with its neighbours nor decomposes into anything but U+0020, so normalizing chunk by
//! chunk equals normalizing the whole text, and a chunk that normalization splits (U+00A8 → space + U+0308)
//! is simply split again afterwards. Each chunk takes the cheapest path that gives the exact result:
//!
//! * **64-byte blocks** (most chunks of most text): normalization of ASCII is just `A-Z → a-z`; a block is
//!   classified with SIMD compares and its tokens found with bit operations, taken straight from the input,
//!   or from one lowercased copy of the block when it holds a capital. Its two- and three-byte characters
//!   (accented Latin, Greek, Cyrillic, typographic punctuation, …) join the same masks by their property
//!   flags when normalization leaves them alone or folds them one for one (a token holding one that folds
//!   is folded character by character); a chunk with any other non-ASCII character goes to the next path.
//! * **Any other chunk is read once** (so is the end of a text, after its last whole block): one pass finds
//!   where it ends (non-ASCII White_Space included), the common property flags of its characters and its
//!   tokens as they stand. If every character is left alone
//!   by NFKC or folds to one character (`Д` → `д`, see `props`), or the chunk is STABLE and NFKC-normalized
//!   as a whole (its marks stand apart, `props::COMBINING`, or else ICU4X's quick check), those are its
//!   tokens: taken straight from the input, or folded one at a time into a scratch buffer when they hold a
//!   capital.
//! * **A chunk with `Cf` characters** (ZERO WIDTH SPACE between Khmer words, ZWJ in Indic text and emoji) is
//!   read once more with them deleted, and takes the previous path if it qualifies.
//! * **Everything else** goes through ICU4X: `Cf` removed, NFKC, full case folding, then split and tokenized.
//!
//! Every path is tested against the spec's steps taken literally ([`tokens_by_definition`]), by property
//! tests and on the multilingual corpus of the evaluation data.

use super::blocks;
use super::props::{
    self, COMBINING, FOLD_FAST, FORMAT, LETTER, MARK, NFKC_SAFE, SIMPLE_FOLD, SINGLE, SPACE,
    STABLE, TOKEN,
};
use icu_casemap::CaseMapperBorrowed;
use icu_normalizer::ComposingNormalizerBorrowed;

// ASCII byte classes.
const A_SPACE: u8 = 1; // U+0009..U+000D, U+0020
const A_LOWER: u8 = 2; // a-z
const A_UPPER: u8 = 4; // A-Z
const A_DIGIT_US: u8 = 8; // 0-9 and '_'
const A_HINT: u8 = 16; // ':' '@': the identifier rules need a closer look
const A_HIGH: u8 = 32; // not ASCII
const A_TOKEN: u8 = A_LOWER | A_UPPER | A_DIGIT_US;
const A_LETTER: u8 = A_LOWER | A_UPPER;

static ASCII_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = match b {
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => A_SPACE,
            b'a'..=b'z' => A_LOWER,
            b'A'..=b'Z' => A_UPPER,
            b'0'..=b'9' | b'_' => A_DIGIT_US,
            b':' | b'@' => A_HINT,
            0x80..=0xff => A_HIGH,
            _ => 0,
        };
        i += 1;
    }
    t
};

/// A token, and the bytes that follow it in memory.
///
/// Hash functions that read whole words (lookup3 reads 12 bytes at a time) can use [`window`](Self::window)
/// to load past the token's end and mask, instead of assembling its last bytes one by one. The bytes after the
/// token are not part of it.
///
/// It is the token's place in the text (or in a scratch buffer) it was read from: hashes read its
/// [`bytes`](Self::bytes), and only [`as_str`](Self::as_str) checks that its ends fall between characters
/// (they always do), a check that cost a few per cent of the tokenizer when made for every token.
#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    source: &'a str,
    start: usize,
    end: usize,
}

impl<'a> Token<'a> {
    #[inline(always)]
    fn new(source: &'a str, start: usize, end: usize) -> Self {
        debug_assert!(
            source.is_char_boundary(start) && source.is_char_boundary(end) && start < end
        );
        Token { source, start, end }
    }

    /// The token.
    #[inline(always)]
    pub fn as_str(&self) -> &'a str {
        &self.source[self.start..self.end]
    }

    /// The token's UTF-8 bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        &self.source.as_bytes()[self.start..self.end]
    }

    /// The token's length in bytes.
    #[inline(always)]
    #[allow(clippy::len_without_is_empty)] // a token is never empty
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// The token's UTF-8 bytes followed by up to 16 further bytes (as many as the buffer holds).
    #[inline(always)]
    pub fn window(&self) -> &'a [u8] {
        let bytes = self.source.as_bytes();
        &bytes[self.start..(self.end + WINDOW_EXTRA).min(bytes.len())]
    }
}

/// Above this many two- and three-byte characters in a block, their masks are made with SIMD compares from
/// a class byte per byte ([`blocks::character_masks`]); with fewer (an accent or a quote in Latin text), one
/// character at a time.
const DENSE_CHARACTERS: u32 = 4;

/// Bytes of look-ahead given to [`Token::window`].
const WINDOW_EXTRA: usize = 16;

/// What follows a token written into a scratch buffer, for the hash's look-ahead (NUL is valid UTF-8, and
/// not part of the token).
const PADDING: &str = "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";

/// Splits text into the tokens of the doc-v1 profile, calling `emit` with each token in order.
///
/// ```
/// let mut tokens = Vec::new();
/// neardup_text::profile::doc_v1::tokenize("Hello, WORLD! 2019 covid19 don't", |t| tokens.push(t.as_str().to_string()));
/// assert_eq!(tokens, ["hello", "world", "covid19", "don", "t"]);
/// ```
pub fn tokenize(text: &str, mut emit: impl FnMut(Token<'_>)) {
    Tokenizer::<false>::new().run(text, &mut emit);
}

/// Like [`tokenize`], but keeps the tokens that have no letter (`2019`, `1`, `_`), which step 3 drops.
/// Shingle-based schemes use it: for Jaccard similarity over word n-grams, "version 3.2" and "version 4.0"
/// differ.
///
/// ```
/// let mut tokens = Vec::new();
/// neardup_text::profile::doc_v1::tokenize_keeping_numbers("Hello, WORLD! 2019 covid19", |t| tokens.push(t.as_str().to_string()));
/// assert_eq!(tokens, ["hello", "world", "2019", "covid19"]);
/// ```
pub fn tokenize_keeping_numbers(text: &str, mut emit: impl FnMut(Token<'_>)) {
    Tokenizer::<true>::new().run(text, &mut emit);
}

/// Returns the tokens as owned strings (convenient for tests and golden vectors; use [`tokenize`] on hot paths).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize(text, |t| out.push(t.as_str().to_owned()));
    out
}

/// [`tokenize_keeping_numbers`]'s tokens as owned strings (as [`tokens`] is [`tokenize`]'s).
pub fn tokens_keeping_numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_keeping_numbers(text, |t| out.push(t.as_str().to_owned()));
    out
}

/// The tokens by the chunk-at-a-time path alone, without 64-byte blocks: the oracle that the block path is
/// tested against (here and in the corpus tests).
#[doc(hidden)]
pub fn tokens_without_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    Tokenizer::<false>::new().scalar(text, 0, text.len(), &mut |t: Token<'_>| {
        out.push(t.as_str().to_owned())
    });
    out
}

/// The tokens by the spec's steps taken literally on the whole text (normalize it, split it on
/// White_Space, drop identifiers, tokenize each chunk), with or without the letterless tokens: the
/// definition that every fast path is tested against (here and in the corpus tests).
#[doc(hidden)]
pub fn tokens_by_definition(text: &str, keep_numbers: bool) -> Vec<String> {
    let normalized = normalize(text);
    let mut out = Vec::new();
    let mut push = |t: Token<'_>| out.push(t.as_str().to_owned());
    for chunk in normalized.split(|c: char| props::flags(c) & SPACE != 0) {
        if chunk.is_empty() || is_identifier(chunk) {
            continue;
        }
        if keep_numbers {
            tokens_of_normalized_chunk::<true>(props::table(), chunk, 0, chunk.len(), &mut push);
        } else {
            tokens_of_normalized_chunk::<false>(props::table(), chunk, 0, chunk.len(), &mut push);
        }
    }
    out
}

/// Applies step 1 alone (delete `Cf`, NFKC, full case folding) to a whole text. The tokenizer never calls it
/// (it normalizes chunk by chunk); it exists to document and test the step.
pub fn normalize(text: &str) -> String {
    let without_format: String = text
        .chars()
        .filter(|&c| props::flags(c) & FORMAT == 0)
        .collect();
    let nfkc = ComposingNormalizerBorrowed::new_nfkc()
        .normalize(&without_format)
        .into_owned();
    CaseMapperBorrowed::new().fold_string(&nfkc).into_owned()
}

/// Step 2: whether a (normalized) chunk is an identifier to drop.
///
/// The prefix tests ignore ASCII case, so the ASCII fast path can ask before lowercasing; on normalized
/// (case-folded) chunks that is the same as the spec's exact test.
pub fn is_identifier(chunk: &str) -> bool {
    let b = chunk.as_bytes();
    if starts_with_ci(b, b"www.") || is_doi(b) {
        return true;
    }
    // "://" and "@…." both need a ':' or an '@': one pass finds whether either occurs.
    let Some(first) = b.iter().position(|&c| c == b':' || c == b'@') else {
        return false;
    };
    let rest = &b[first..];
    if let Some(at) = rest.iter().position(|&c| c == b'@')
        && rest[at + 1..].contains(&b'.')
    {
        return true;
    }
    rest.windows(3).any(|w| w == b"://")
}

/// `^(doi:)?10\.[0-9]{4,9}/`
fn is_doi(b: &[u8]) -> bool {
    let b = if starts_with_ci(b, b"doi:") {
        &b[4..]
    } else {
        b
    };
    let Some(rest) = b.strip_prefix(b"10.") else {
        return false;
    };
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    (4..=9).contains(&digits) && rest.get(digits) == Some(&b'/')
}

/// Whether a chunk opens the way the identifier rules that need no ':' or '@' begin ("www.", "10."). The fast
/// paths send only such chunks, and chunks holding ':' or '@', to [`is_identifier`].
fn may_open_identifier(b: &[u8]) -> bool {
    starts_with_ci(b, b"www.") || b.starts_with(b"10.")
}

/// Whether a chunk as it is (not changed by normalization), whose bytes' ASCII classes are `seen`, can be an
/// identifier: only one with ':' or '@', or that opens like "www." / "10.", can match [`is_identifier`].
fn may_be_identifier(seen: u8, b: &[u8]) -> bool {
    seen & A_HINT != 0 || may_open_identifier(b)
}

fn starts_with_ci(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The tokenizer; `KEEP_NUMBERS` keeps the tokens without a letter (see [`tokenize_keeping_numbers`]).
struct Tokenizer<const KEEP_NUMBERS: bool> {
    props: &'static props::Table,
    nfkc: ComposingNormalizerBorrowed<'static>,
    fold: CaseMapperBorrowed<'static>,
    buffers: Buffers,
}

/// The tokenizer's buffers, kept by each thread from one text to the next: made anew for every document,
/// their allocations and growth cost 2 % of `minhash-oph-v1`.
struct Buffers {
    /// A token folded into a scratch buffer ([`emit_folded`](Tokenizer::emit_folded)).
    lower: String,
    /// A block's bytes up to its last ASCII white space, lowercased (see [`block`](Tokenizer::block)).
    block_lower: String,
    /// A chunk without its `Cf` characters ([`general_chunk`](Tokenizer::general_chunk)).
    scratch: String,
    /// The tokens of the chunk being read ([`scan_chunk`](Tokenizer::scan_chunk)).
    spans: Vec<Span>,
}

impl Buffers {
    const EMPTY: Buffers = Buffers {
        lower: String::new(),
        block_lower: String::new(),
        scratch: String::new(),
        spans: Vec::new(),
    };

    /// The buffers worth keeping: those that grew past [`BUFFER_KEPT`] are dropped.
    fn trimmed(mut self) -> Buffers {
        for s in [&mut self.lower, &mut self.block_lower, &mut self.scratch] {
            if s.capacity() > BUFFER_KEPT {
                *s = String::new();
            }
        }
        if self.spans.capacity() * std::mem::size_of::<Span>() > BUFFER_KEPT {
            self.spans = Vec::new();
        }
        self
    }
}

/// Buffers that grew past this (a long run of text normalized whole) are not kept.
const BUFFER_KEPT: usize = 1 << 16;

thread_local! {
    // Taken, not borrowed: a tokenizer made inside another's `emit` simply starts with empty buffers.
    static BUFFERS: std::cell::Cell<Buffers> = const { std::cell::Cell::new(Buffers::EMPTY) };
}

impl<const KEEP_NUMBERS: bool> Tokenizer<KEEP_NUMBERS> {
    fn new() -> Self {
        Tokenizer {
            props: props::table(),
            nfkc: ComposingNormalizerBorrowed::new_nfkc(),
            fold: CaseMapperBorrowed::new(),
            buffers: BUFFERS
                .try_with(|kept| kept.replace(Buffers::EMPTY))
                .unwrap_or(Buffers::EMPTY),
        }
    }

    /// Tokenizes the whole text: 64-byte blocks through the bitmask path, the rest chunk by chunk.
    fn run(&mut self, text: &str, emit: &mut impl FnMut(Token<'_>)) {
        let bytes = text.as_bytes();
        let n = bytes.len();
        // Invariant: `pos` is at a chunk boundary (the start of the text, or just after white space).
        let mut pos = 0;
        while pos + 64 <= n {
            pos = self.block(text, pos, emit);
        }
        self.scalar(text, pos, n, emit);
    }

    /// One 64-byte block at `pos`: emits the tokens of every chunk that ends inside the block and returns
    /// the position after the block's last white space (ASCII, or a two- or three-byte character read by
    /// [`multibyte_characters`](Self::multibyte_characters)): the start of the first unfinished chunk.
    #[inline(always)]
    fn block(&mut self, text: &str, pos: usize, emit: &mut impl FnMut(Token<'_>)) -> usize {
        let bytes = text.as_bytes();
        let block: &[u8; 64] = bytes[pos..pos + 64].try_into().expect("64 bytes");
        let mut m = blocks::classify(block);
        let fold = if m.high != 0 {
            self.multibyte_characters(block, &mut m)
        } else {
            0
        };
        if m.space == 0 {
            // A chunk of more than 64 bytes: hand it to the scalar path up to the next ASCII white space.
            let end = bytes[pos..]
                .iter()
                .position(|&b| ASCII_CLASS[b as usize] & A_SPACE != 0)
                .map_or(bytes.len(), |e| pos + e);
            self.scalar(text, pos, end, emit);
            return end;
        }
        let last_space = 63 - m.space.leading_zeros() as usize;
        let region = u64::MAX >> (63 - last_space);
        let inside = !m.space & region; // bytes of chunks that end inside the block
        let chunk_starts = inside & !(inside << 1);
        // Chunks that need the scalar path: those holding a special byte (':', '@', or a non-ASCII character
        // that `multibyte_characters` did not take), and those that open with an identifier prefix ("www.",
        // "10.").
        let mut bad = 0u64;
        let mut special = m.special & inside;
        while special != 0 {
            let j = special.trailing_zeros() as usize;
            let (s, e) = chunk_around(chunk_starts, m.space, j);
            bad |= span(s, e);
            special &= !span(0, e);
        }
        let mut candidates = chunk_starts & m.prefix & !bad;
        while candidates != 0 {
            let j = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let b = &bytes[pos + j..];
            if may_open_identifier(b) {
                let (s, e) = chunk_around(chunk_starts, m.space, j);
                bad |= span(s, e);
            }
        }
        let good = m.token & inside & !bad;
        let mut token_starts = good & !(good << 1);
        // Tokens are read from the block as it is or, when one of its good tokens has a capital, from a
        // lowercased copy of it (lowercasing changes only A-Z): one decision per block instead of one
        // mispredicted branch per token.
        let region_end = pos + last_space + 1;
        let lowered = m.upper & good != 0;
        let fold = fold & good;
        if lowered {
            self.buffers.block_lower.clear();
            self.buffers.block_lower.push_str(&text[pos..region_end]);
            self.buffers.block_lower.make_ascii_lowercase();
            self.buffers.block_lower.push_str(PADDING);
        }
        let mut bad_starts = chunk_starts & bad;
        loop {
            // Good tokens before the next bad chunk, then that chunk: document order.
            let next_bad = if bad_starts == 0 {
                64
            } else {
                bad_starts.trailing_zeros() as usize
            };
            let before = if next_bad == 64 {
                u64::MAX
            } else {
                span(0, next_bad)
            };
            let mut starts = token_starts & before;
            token_starts &= !before;
            while starts != 0 {
                let j = starts.trailing_zeros() as usize;
                starts &= starts - 1;
                let len = (!(good >> j)).trailing_zeros() as usize;
                // The token ends before the block's last space, so `len` < 64.
                let this = ((1u64 << len) - 1) << j;
                if !KEEP_NUMBERS && m.letter & this == 0 {
                    continue; // digits and '_' only: dropped
                }
                if fold & this != 0 {
                    self.emit_folded(&text[pos + j..pos + j + len], emit);
                    continue;
                }
                let (source, offset) = if lowered {
                    (self.buffers.block_lower.as_str(), 0)
                } else {
                    (text, pos)
                };
                let (start, end) = (offset + j, offset + j + len);
                emit(Token::new(source, start, end));
            }
            if next_bad == 64 {
                break;
            }
            let (s, e) = chunk_around(chunk_starts, m.space, next_bad);
            self.scalar(text, pos + s, pos + e, emit);
            bad_starts &= bad_starts - 1;
        }
        region_end
    }

    /// Reads the block's two- and three-byte characters (Latin with diacritics, Greek, Cyrillic, Hebrew,
    /// Arabic, typographic quotes and dashes, …) into its masks, so that a chunk holding them stays on the
    /// block path when the scalar path would take its tokens as they stand (see
    /// [`finish_chunk`](Self::finish_chunk)): each character's bytes join the masks its class byte gives (a
    /// White_Space character separates chunks, a token character extends a token). Returns the bytes of the
    /// characters that fold simply, whose tokens go to [`emit_folded`](Self::emit_folded). Every other
    /// non-ASCII byte keeps its chunk
    /// special: a character that normalization changes otherwise, a letter of a script written without
    /// spaces (a token on its own), a four-byte character, and a character that runs past the block.
    ///
    /// A block with kana or ideographs (U+3000..U+9FFF) keeps all its three-byte characters special: its
    /// letters are tokens on their own, which the scalar path reads, and an ideographic space read here
    /// would end a chunk inside the block, so that the next block would start just after it and read most
    /// of this one again.
    #[inline(always)]
    fn multibyte_characters(&self, block: &[u8; 64], m: &mut blocks::Masks) -> u64 {
        let leads = blocks::leads(block);
        let leads2 = leads.two & !(1 << 63);
        let leads3 = if leads.cjk == 0 {
            leads.three & !(3 << 62)
        } else {
            0
        };
        let covered = leads2 | (leads2 << 1) | leads3 | (leads3 << 1) | (leads3 << 2);
        let special = (m.special & !m.high) | (m.high & !covered);
        let [space, token, letter, fold, not_taken] =
            if (leads2 | leads3).count_ones() > DENSE_CHARACTERS {
                // Each class byte goes to its character's bytes, and SIMD compares make the masks.
                let mut at = [0u8; 64];
                each_character(block, leads2, leads3, |j, len, class| {
                    at[j..j + len].fill(class)
                });
                blocks::character_masks(&at)
            } else {
                let mut masks = [0u64; 5];
                each_character(block, leads2, leads3, |j, len, class| {
                    let bytes = ((1u64 << len) - 1) << j;
                    for (bit, mask) in masks.iter_mut().enumerate() {
                        *mask |= if class & (1 << bit) != 0 { bytes } else { 0 };
                    }
                });
                masks
            };
        m.space |= space;
        m.token |= token;
        m.letter |= letter;
        m.special = special | not_taken;
        fold
    }

    /// Chunk by chunk over `text[from..to]`, where `from` and `to` are chunk boundaries.
    fn scalar(&mut self, text: &str, from: usize, to: usize, emit: &mut impl FnMut(Token<'_>)) {
        let bytes = text.as_bytes();
        let mut i = from;
        while i < to {
            // Skip ASCII white space quickly; a non-ASCII White_Space character is found by the chunk scan.
            if ASCII_CLASS[bytes[i] as usize] & A_SPACE != 0 {
                i += 1;
                continue;
            }
            let start = i;
            let scan = self.scan_chunk(text, start, to);
            i = scan.end;
            if start == i {
                // A non-ASCII White_Space character.
                i += decode_at(text, i).len_utf8();
                continue;
            }
            self.finish_chunk(text, start, scan, emit);
        }
    }

    /// One pass over the chunk that starts at `start` (it ends at White_Space or at `to`): where it ends,
    /// the ASCII classes and the common property flags of its characters, and its tokens as they would be
    /// if the chunk needed no normalization (in `self.buffers.spans`). Those tokens are the chunk's tokens when
    /// normalization leaves it alone or only folds characters one for one ([`finish_chunk`](Self::finish_chunk)
    /// decides), since such folding maps letters to letters of the same kind (a test checks every one).
    #[inline]
    fn scan_chunk(&mut self, text: &str, start: usize, to: usize) -> ChunkScan {
        let bytes = text.as_bytes();
        self.buffers.spans.clear();
        let mut seen = 0u8;
        let mut all = STABLE | NFKC_SAFE | FOLD_FAST;
        // The open token, if any (`NONE` when between tokens): where it starts, whether it is a single
        // letter (with the marks that follow it), whether it has a letter, whether folding changes it.
        const NONE: usize = usize::MAX;
        let mut token_start = NONE;
        let mut single = false;
        let mut letter = false;
        let mut fold = false;
        let mut i = start;
        while i < to {
            let class = ASCII_CLASS[bytes[i] as usize];
            let (f, changes, len) = if class & A_HIGH == 0 {
                if class & A_SPACE != 0 {
                    break;
                }
                seen |= class;
                if class & A_TOKEN != 0 && token_start != NONE && !single {
                    // The common case: an ASCII letter, digit or '_' inside a run.
                    letter |= class & A_LETTER != 0;
                    fold |= class & A_UPPER != 0;
                    i += 1;
                    continue;
                }
                (class_flags(class), class & A_UPPER != 0, 1)
            } else {
                let c = decode_at(text, i);
                let f = self.props[c as usize];
                if f & SPACE != 0 {
                    break;
                }
                seen |= A_HIGH;
                all &= f;
                (f, f & SIMPLE_FOLD != 0, c.len_utf8())
            };
            if token_start != NONE {
                let goes_on = if single {
                    f & MARK != 0 // marks attach to the single letter
                } else {
                    f & TOKEN != 0 && f & SINGLE == 0
                };
                if goes_on {
                    letter |= f & LETTER != 0;
                    fold |= changes;
                    i += len;
                    continue;
                }
                if letter || KEEP_NUMBERS {
                    self.buffers.spans.push(Span {
                        start: token_start,
                        end: i,
                        fold,
                    });
                }
                token_start = NONE;
            }
            if f & TOKEN != 0 {
                token_start = i;
                single = f & SINGLE != 0;
                letter = f & LETTER != 0;
                fold = changes;
            }
            i += len;
        }
        if token_start != NONE && (letter || KEEP_NUMBERS) {
            self.buffers.spans.push(Span {
                start: token_start,
                end: i,
                fold,
            });
        }
        ChunkScan { end: i, seen, all }
    }

    /// Emits the tokens of the chunk `text[start..scan.end]` that [`scan_chunk`](Self::scan_chunk) read,
    /// taking the cheapest path that gives the exact result.
    fn finish_chunk(
        &mut self,
        text: &str,
        start: usize,
        scan: ChunkScan,
        emit: &mut impl FnMut(Token<'_>),
    ) {
        let chunk = &text[start..scan.end];
        if self.normalized_as_scanned(chunk, scan) {
            self.emit_scanned(text, chunk, scan.seen, emit);
        } else {
            self.general_chunk(chunk, emit);
        }
    }

    /// Whether a chunk without `Cf` that [`scan_chunk`](Self::scan_chunk) read has the tokens it found:
    /// normalization leaves it alone but for folding characters one for one.
    fn normalized_as_scanned(&self, chunk: &str, scan: ChunkScan) -> bool {
        // The ASCII characters' flags follow from their classes: all are NFKC_SAFE but A-Z, which fold
        // simply (a test checks the table).
        let all = scan.all
            & if scan.seen & A_UPPER != 0 {
                FOLD_FAST
            } else {
                STABLE | NFKC_SAFE | FOLD_FAST
            };
        // FOLD_FAST: NFKC leaves the chunk alone (NFKC_SAFE characters, and SIMPLE_FOLD ones, which are
        // quick-check "Yes" with ccc 0 and second in no composition), and folding maps each character to one.
        // Otherwise a STABLE chunk may still be NFKC-normalized as a whole (marks in canonical order).
        all & FOLD_FAST != 0 || (all & STABLE != 0 && self.stable_chunk_is_normalized(chunk))
    }

    /// Whether a chunk of STABLE characters is NFKC-normalized: decided here when its characters are
    /// NFKC_SAFE or COMBINING and no two COMBINING ones stand together (Tibetan vowel signs, Khmer COENG,
    /// Indic viramas, Hebrew points, see [`props::COMBINING`]), by ICU4X's quick check otherwise.
    fn stable_chunk_is_normalized(&self, chunk: &str) -> bool {
        let mut after_mark = false;
        for c in chunk.chars() {
            let f = self.props[c as usize];
            if f & COMBINING != 0 && !after_mark {
                after_mark = true;
            } else if f & NFKC_SAFE != 0 {
                after_mark = false;
            } else {
                return self.nfkc.is_normalized(chunk);
            }
        }
        true
    }

    /// Emits the tokens that [`scan_chunk`](Self::scan_chunk) found in `chunk` (a slice of `text`) unless
    /// the chunk is an identifier; `seen` holds the ASCII classes of its bytes.
    fn emit_scanned(
        &mut self,
        text: &str,
        chunk: &str,
        seen: u8,
        emit: &mut impl FnMut(Token<'_>),
    ) {
        // The identifier rules read ASCII only and ignore its case, and no character that folds simply
        // folds to ASCII (a test checks), so they read the chunk as it is.
        if may_be_identifier(seen, chunk.as_bytes()) && is_identifier(chunk) {
            return;
        }
        let spans = std::mem::take(&mut self.buffers.spans);
        for span in &spans {
            if span.fold {
                self.emit_folded(&text[span.start..span.end], emit);
            } else {
                emit(Token::new(text, span.start, span.end));
            }
        }
        self.buffers.spans = spans;
    }

    /// Emits a token whose characters are NFKC_SAFE or fold simply, folded, from the padded scratch buffer.
    /// Not inlined: the block path's token loop stays small (inlined, the tokenizer ran 1–2 % slower).
    #[inline(never)]
    fn emit_folded(&mut self, token: &str, emit: &mut impl FnMut(Token<'_>)) {
        self.buffers.lower.clear();
        for c in token.chars() {
            self.buffers.lower.push(if c.is_ascii() {
                c.to_ascii_lowercase()
            } else if self.props[c as usize] & SIMPLE_FOLD != 0 {
                self.fold.simple_fold(c)
            } else {
                c
            });
        }
        self.emit_scratch(emit);
    }

    /// Emits the token written into the scratch buffer, padded for the hash's look-ahead (NUL is valid
    /// UTF-8, and not part of the token).
    #[inline(always)]
    fn emit_scratch(&mut self, emit: &mut impl FnMut(Token<'_>)) {
        let len = self.buffers.lower.len();
        self.buffers.lower.push_str(PADDING);
        emit(Token::new(&self.buffers.lower, 0, len));
    }

    /// The general path, for a chunk that normalization changes otherwise than by folding characters one
    /// for one: `Cf` removed, NFKC, full case folding through ICU4X, then split and tokenized.
    fn general_chunk(&mut self, chunk: &str, emit: &mut impl FnMut(Token<'_>)) {
        let mut without_format = std::mem::take(&mut self.buffers.scratch);
        without_format.clear();
        without_format.extend(
            chunk
                .chars()
                .filter(|&c| self.props[c as usize] & FORMAT == 0),
        );
        // With its `Cf` deleted (ZERO WIDTH SPACE between Khmer words, ZWJ in Indic text and emoji), a chunk
        // may need nothing more than the fast path: it is read again. Deleting creates no White_Space.
        if without_format.len() < chunk.len() {
            let scan = self.scan_chunk(&without_format, 0, without_format.len());
            if self.normalized_as_scanned(&without_format, scan) {
                self.emit_scanned(&without_format, &without_format, scan.seen, emit);
                self.buffers.scratch = without_format;
                return;
            }
        }
        let normalized = self.nfkc.normalize(&without_format);
        let folded = self.fold.fold_string(&normalized);
        // Normalization may have produced White_Space (U+00A8 → U+0020 U+0308): split again.
        let mut piece_start = 0;
        for (pos, c) in folded
            .char_indices()
            .chain(std::iter::once((folded.len(), ' ')))
        {
            if self.props[c as usize] & SPACE != 0 || pos == folded.len() {
                if pos > piece_start && !is_identifier(&folded[piece_start..pos]) {
                    tokens_of_normalized_chunk::<KEEP_NUMBERS>(
                        self.props,
                        &folded,
                        piece_start,
                        pos,
                        emit,
                    );
                }
                piece_start = pos + c.len_utf8();
            }
        }
        drop(folded);
        drop(normalized);
        self.buffers.scratch = without_format;
    }
}

impl<const KEEP_NUMBERS: bool> Drop for Tokenizer<KEEP_NUMBERS> {
    fn drop(&mut self) {
        let buffers = std::mem::replace(&mut self.buffers, Buffers::EMPTY).trimmed();
        // Gone only while the thread itself ends.
        let _ = BUFFERS.try_with(|kept| kept.set(buffers));
    }
}

/// Calls `f(j, len, class)` for each two-byte character of the block whose first byte is marked in
/// `leads2` and each three-byte one marked in `leads3`: where it starts, its length, its [`blocks::class`]
/// byte.
#[inline(always)]
fn each_character(block: &[u8; 64], leads2: u64, leads3: u64, mut f: impl FnMut(usize, usize, u8)) {
    let classes = blocks::classes();
    let mut rest = leads2;
    while rest != 0 {
        let j = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        let c = (usize::from(block[j] & 0x1f) << 6) | usize::from(block[j + 1] & 0x3f);
        f(j, 2, classes[c]);
    }
    let mut rest = leads3;
    while rest != 0 {
        let j = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        let c = (usize::from(block[j] & 0x0f) << 12)
            | (usize::from(block[j + 1] & 0x3f) << 6)
            | usize::from(block[j + 2] & 0x3f);
        f(j, 3, classes[c]);
    }
}

/// A token found by [`Tokenizer::scan_chunk`] in a chunk as it is: its bytes, and whether case folding
/// changes it (an ASCII capital, or a character that folds simply).
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
    fold: bool,
}

/// What [`Tokenizer::scan_chunk`] learnt of a chunk besides its tokens.
#[derive(Clone, Copy, Debug)]
struct ChunkScan {
    /// Where the chunk ends (at White_Space or at the end of the range scanned).
    end: usize,
    /// The ASCII classes of its bytes (`A_HIGH` when it has a non-ASCII character).
    seen: u8,
    /// The AND of its non-ASCII characters' property flags (STABLE, NFKC_SAFE, FOLD_FAST).
    all: u16,
}

/// Bits `s..e` (e ≤ 64).
#[inline(always)]
fn span(s: usize, e: usize) -> u64 {
    let upto = if e >= 64 { u64::MAX } else { (1u64 << e) - 1 };
    upto & !((1u64 << s) - 1)
}

/// The chunk around byte `j` of a block: from the last chunk start at or before `j` to the next space.
#[inline(always)]
fn chunk_around(chunk_starts: u64, space: u64, j: usize) -> (usize, usize) {
    let s = 63 - (chunk_starts & span(0, j + 1)).leading_zeros() as usize;
    let e = j + (space >> j).trailing_zeros() as usize;
    (s, e)
}

/// Step 3 on an already normalized chunk `text[from..to]` without White_Space.
fn tokens_of_normalized_chunk<const KEEP_NUMBERS: bool>(
    props: &props::Table,
    text: &str,
    from: usize,
    to: usize,
    emit: &mut impl FnMut(Token<'_>),
) {
    enum State {
        Between,
        Run { start: usize, has_letter: bool },
        Single { start: usize },
    }
    let mut token = |start: usize, end: usize| emit(Token::new(text, start, end));
    let mut state = State::Between;
    for (offset, c) in text[from..to].char_indices() {
        let pos = from + offset;
        let f = if c.is_ascii() {
            class_flags(ASCII_CLASS[c as usize])
        } else {
            props[c as usize]
        };
        match state {
            State::Single { .. } if f & MARK != 0 => continue, // marks attach to the single letter
            State::Single { start } => {
                token(start, pos);
                state = State::Between;
            }
            State::Run { start, has_letter } => {
                if f & TOKEN != 0 && f & SINGLE == 0 {
                    state = State::Run {
                        start,
                        has_letter: has_letter || f & LETTER != 0,
                    };
                    continue;
                }
                if has_letter || KEEP_NUMBERS {
                    token(start, pos);
                }
                state = State::Between;
            }
            State::Between => {}
        }
        if f & SINGLE != 0 {
            state = State::Single { start: pos };
        } else if f & TOKEN != 0 {
            state = State::Run {
                start: pos,
                has_letter: f & LETTER != 0,
            };
        }
    }
    match state {
        State::Single { start } => token(start, to),
        State::Run { start, has_letter } if has_letter || KEEP_NUMBERS => token(start, to),
        _ => {}
    }
}

/// The property flags of an ASCII character, from its byte class.
#[inline(always)]
fn class_flags(class: u8) -> u16 {
    let mut f = 0;
    if class & A_TOKEN != 0 {
        f |= TOKEN;
    }
    if class & A_LETTER != 0 {
        f |= LETTER;
    }
    f
}

#[inline(always)]
fn decode_at(text: &str, i: usize) -> char {
    // `i` is always a char boundary: the scan advances by whole ASCII bytes or whole characters.
    text[i..]
        .chars()
        .next()
        .expect("char boundary inside the text")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<String> {
        tokens(s)
    }

    #[test]
    fn examples_from_the_spec() {
        assert_eq!(
            t("Hello, WORLD! 2019 covid19 don't"),
            ["hello", "world", "covid19", "don", "t"]
        );
        assert_eq!(t("Straße co\u{00AD}operate"), ["strasse", "cooperate"]);
        assert_eq!(t("see https://x.org/a or a@b.c"), ["see", "or"]);
        assert_eq!(t("東京タワー"), ["東", "京", "タ", "ワ", "ー"]);
        assert_eq!(t("ﬁnd"), ["find"]);
        assert_eq!(t("กำ"), ["ก\u{0E4D}", "า"]);
    }

    #[test]
    fn identifiers() {
        assert_eq!(t("WWW.Example.com x"), ["x"]);
        assert_eq!(
            t("doi:10.1000/xyz123 DOI:10.1038/nature12373 10.123/no"),
            ["no"]
        );
        assert_eq!(t("10.12345678901/toolong"), ["toolong"]);
        assert_eq!(t("user@host no@dot"), ["user", "host", "no", "dot"]);
        assert_eq!(t("mailto:a@b.c ftp://x"), Vec::<String>::new());
        assert_eq!(
            t("ｗｗｗ.example.com"),
            Vec::<String>::new(),
            "fullwidth www. after NFKC"
        );
        // Fullwidth separators that NFKC maps to characters the identifier rules read make identifiers;
        // the others (ASCII_SEPARATOR) separate as they stand.
        for (text, expected) in [
            ("http：//x.org y", vec!["y"]),
            ("a＠b．c y", vec!["y"]),
            ("doi：10.1000／xyz y", vec!["y"]),
            ("see，https://x.org", vec![]),
            (
                "東京，大阪（日本）！ ok？ yes；no",
                vec!["東", "京", "大", "阪", "日", "本", "ok", "yes", "no"],
            ),
            ("a，b@c.d", vec![]),
        ] {
            assert_eq!(t(text), expected, "{text}");
            assert_eq!(t(text), tokens_by_definition(text, false), "{text}");
            let long = format!("{} {text}", "word ".repeat(13));
            assert_eq!(tokens(&long), tokens_by_definition(&long, false), "{long}");
        }
    }

    #[test]
    fn edges() {
        assert_eq!(t(""), Vec::<String>::new());
        assert_eq!(t("   \n\t "), Vec::<String>::new());
        assert_eq!(t("2019 42 _ __"), Vec::<String>::new());
        assert_eq!(
            t("snake_case CamelCase x_1"),
            ["snake_case", "camelcase", "x_1"]
        );
        assert_eq!(t("a\u{00A0}b\u{3000}c"), ["a", "b", "c"]);
        assert_eq!(t("e\u{0301}té"), ["été"]);
        assert_eq!(t("ΣΊΣΥΦΟΣ"), ["σίσυφοσ"]);
        assert_eq!(t("İstanbul"), ["i\u{0307}stanbul"]);
        assert_eq!(
            t("a¨b"),
            ["a", "\u{0308}b"],
            "U+00A8 decomposes to a space and a mark"
        );
        assert_eq!(t("東京1abc"), ["東", "京", "1abc"]);
        assert_eq!(
            t("zero\u{200B}width joi\u{200D}ner"),
            ["zerowidth", "joiner"]
        );
        assert_eq!(t("हिन्दी भाषा"), ["हिन्दी", "भाषा"]);
        assert_eq!(t("\u{0301}abc"), ["\u{0301}abc"]);
        assert_eq!(t("Ǆemal"), ["džemal"]);
    }

    /// A chunk whose `Cf` characters are deleted is read again by the fast path; what deleting joins or
    /// lets compose is what the spec's steps give.
    #[test]
    fn chunks_with_format_characters() {
        for (text, expected) in [
            (
                "ខ្ញុំ\u{200B}ស្រឡាញ់",
                vec![
                    "ខ\u{17D2}",
                    "ញ\u{17BB}\u{17C6}",
                    "ស\u{17D2}",
                    "រ",
                    "ឡា",
                    "ញ\u{17CB}",
                ],
            ),
            ("A\u{200D}B \u{200B} c\u{2060}", vec!["ab", "c"]),
            ("e\u{200B}\u{0301}", vec!["é"]),
            ("www.\u{200B}x.org next", vec!["next"]),
            ("Σ\u{FEFF}ς ΐ\u{200C}", vec!["σσ", "ι\u{308}\u{301}"]),
            ("١\u{200E}٢ x", vec!["x"]),
        ] {
            assert_eq!(tokens_by_definition(text, false), expected, "{text}");
            assert_eq!(t(text), expected, "{text}");
            assert_eq!(tokens_without_blocks(text), expected, "{text}");
        }
    }

    /// The buffers are kept per thread: a tokenizer run inside another's `emit` works with its own.
    #[test]
    fn a_tokenizer_inside_another_ones_emit() {
        let text = "Ünïcödé Straße ΣΊΣΥΦΟΣ zero\u{200B}width 東京 ".repeat(20);
        let mut outer = Vec::new();
        let mut nested = Vec::new();
        tokenize(&text, |token| {
            outer.push(token.as_str().to_owned());
            nested.extend(tokens(token.as_str()));
        });
        assert_eq!(outer, tokens(&text));
        assert_eq!(nested, outer, "a token is its own only token");
    }

    fn keeping_numbers_without_blocks(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Tokenizer::<true>::new().scalar(text, 0, text.len(), &mut |t: Token<'_>| {
            out.push(t.as_str().to_owned())
        });
        out
    }

    #[test]
    fn keeping_numbers_keeps_exactly_the_letterless_tokens() {
        let text = "Django 1.11.20 fixes x_1 in 2019 ( _ ) www.example.org 東京 ٣";
        assert_eq!(
            tokens_keeping_numbers(text),
            [
                "django", "1", "11", "20", "fixes", "x_1", "in", "2019", "_", "東", "京", "٣"
            ]
        );
        assert_eq!(t(text), ["django", "fixes", "x_1", "in", "東", "京"]);
    }

    proptest::proptest! {
        /// Long, mostly-ASCII texts reach the 64-byte block path: it must equal the chunk-at-a-time path.
        #[test]
        fn block_path_equals_chunk_path(s in "([a-zA-Z]{1,12}|[0-9_]{1,3}|[ \t\n]{1,3}|[.,;:@/'()-]|www\\.|10\\.12345/|https://|é|東京|\u{a0}|\u{3000}|\u{ad}){0,120}") {
            proptest::prop_assert_eq!(tokens(&s), tokens_without_blocks(&s));
            proptest::prop_assert_eq!(tokens_keeping_numbers(&s), keeping_numbers_without_blocks(&s));
        }

        /// Long texts of many scripts reach the block path's reading of two- and three-byte characters
        /// (letters that fold or not, marks, non-ASCII spaces, format characters, punctuation, characters
        /// that normalization changes, letters that are tokens on their own, four-byte characters): it must
        /// equal the chunk-at-a-time path and the spec's steps.
        #[test]
        fn multibyte_blocks_equal_the_chunk_path_and_the_definition(s in "(([a-zA-Z]{1,8}|[\u{85}\u{a0}-\u{24f}]{1,6}|[\u{370}-\u{52f}]{1,6}|[\u{2000}-\u{206f}]|[\u{590}-\u{6ff}]{1,4}|[\u{f00}-\u{fda}]{1,4}|[\u{300}-\u{36f}]|[\u{1e00}-\u{1fff}]{1,4}|[\u{2c60}-\u{2c7f}]|東京|ひらがな|\u{3000}|😀|[0-9]{1,3}|[.,:@'-]){1,3}[ \n]){0,60}") {
            let fast = tokens(&s);
            proptest::prop_assert_eq!(&fast, &tokens_without_blocks(&s));
            proptest::prop_assert_eq!(&fast, &tokens_by_definition(&s, false));
            let kept = tokens_keeping_numbers(&s);
            proptest::prop_assert_eq!(&kept, &keeping_numbers_without_blocks(&s));
            proptest::prop_assert_eq!(&kept, &tokens_by_definition(&s, true));
        }

        /// The fast paths must agree with the spec's steps run on the whole text.
        #[test]
        fn fast_paths_keeping_numbers_equal_the_general_path(s in "[ -~\u{a0}-\u{17f}\u{300}-\u{36f}\u{660}-\u{669}\u{4e00}-\u{4e20}\u{200b}-\u{200f}\u{ff01}-\u{ff5e}]{0,40}") {
            proptest::prop_assert_eq!(tokens_keeping_numbers(&s), tokens_by_definition(&s, true));
        }

        #[test]
        fn fast_paths_equal_the_general_path(s in "[ -~\u{a0}-\u{17f}\u{300}-\u{36f}\u{391}-\u{3c9}\u{400}-\u{44f}\u{e01}-\u{e5b}\u{3040}-\u{30ff}\u{4e00}-\u{4e20}\u{200b}-\u{200f}\u{2060}\u{feff}\u{1780}-\u{17dd}\u{2000}-\u{200a}\u{fb00}-\u{fb06}\u{ff01}-\u{ff5e}\u{ac00}-\u{ac10}\u{1100}-\u{1112}\u{1161}-\u{1175}]{0,40}") {
            proptest::prop_assert_eq!(tokens(&s), tokens_by_definition(&s, false));
        }

        /// Marks of every combining class after letters, alone, in pairs and in either order (Tibetan,
        /// Devanagari, Khmer, Hebrew, Latin): the chunk path's own normalization check must agree with the
        /// spec's steps.
        #[test]
        fn combining_marks_equal_the_general_path(s in "[\u{f40}-\u{f6c}\u{f71}-\u{f87}\u{f90}-\u{fbc}\u{900}-\u{97f}\u{1780}-\u{17dd}\u{591}-\u{5c7}\u{300}-\u{36f}\u{1dc0}-\u{1dff}aeséṩ ]{0,30}") {
            proptest::prop_assert_eq!(tokens(&s), tokens_by_definition(&s, false));
            proptest::prop_assert_eq!(tokens_keeping_numbers(&s), tokens_by_definition(&s, true));
        }

        #[test]
        fn long_texts_equal_the_general_path(s in "([a-zA-Z]{1,12}|[ \n]{1,2}|[.,:@/'-]|www\\.|Ünïcödé|東京|ﬁ|\u{a0}|\u{ad}|ß){0,100}") {
            proptest::prop_assert_eq!(tokens(&s), tokens_by_definition(&s, false));
        }
    }
}

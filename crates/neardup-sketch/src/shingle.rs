//! Shingles: word n-grams over a token stream and character n-grams over a string, hashed to 64 bits.
//!
//! The hashes are pinned (they are part of the `minhash-oph-v1` and `bottomk-v1` schemes, see
//! `docs/spec/minhash-v1.md`):
//!
//! * **Token hash**: `t = xxh3_64(token UTF-8 bytes)` (XXH3, 64-bit, seed 0, no secret).
//! * **Word shingle** of the tokens `t_0 … t_{m−1}` (m = n, or fewer for a short document): the polynomial
//!   `P = t_0·C^{m−1} + t_1·C^{m−2} + … + t_{m−1}` modulo 2^64 with the odd constant [`SHINGLE_MULTIPLIER`],
//!   then `mix64(P)` ([`mix64`], the SplitMix64 finalizer). Each token is hashed once, whatever n is, and the
//!   polynomial is rolled forward in O(1) per shingle, so a word shingle costs two multiplications plus the
//!   finalizer, with no copying and no allocation. (Hashing the joined bytes of 5 words instead costs a copy
//!   of ~30 bytes and an xxh3 of them per shingle, and the same words are hashed n times.)
//! * **Character shingle** of n consecutive Unicode scalar values: `xxh3_64` of their UTF-8 bytes, read in
//!   place from the string.
//!
//! A document with at least one but fewer than n tokens (characters) has exactly one shingle: all its tokens
//! (characters). An empty document has none.

use xxhash_rust::xxh3::xxh3_64;

/// The default shingle length (words): FineWeb, The Stack and Lee et al. use word 5-grams.
pub const DEFAULT_SHINGLE_N: usize = 5;

/// The multiplier of the word-shingle polynomial (odd, so every token position stays a bijection of its hash;
/// it is the 64-bit golden-ratio constant).
pub const SHINGLE_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// The pinned token hash: XXH3-64 of the bytes, seed 0.
#[inline(always)]
pub fn token_hash(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

/// The SplitMix64 finalizer (Stafford's "Mix13"): a bijection of `u64` with full avalanche.
#[inline(always)]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The word-shingle hash of a whole sequence of token hashes (the definition; [`WordShingler`] computes the
/// same values incrementally).
pub fn shingle_of_token_hashes(token_hashes: &[u64]) -> u64 {
    let p = token_hashes.iter().fold(0u64, |p, &t| {
        p.wrapping_mul(SHINGLE_MULTIPLIER).wrapping_add(t)
    });
    mix64(p)
}

/// What features a sketch was made from: part of every scheme's parameters, so that sketches of word
/// 5-grams and word 3-grams refuse to be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Features {
    /// Word n-grams over the token stream ([`WordShingler`]).
    Words(u32),
    /// Character n-grams ([`char_shingles`]).
    Chars(u32),
    /// The token hashes themselves, [`token_hash`] of each token, not shingled (a word 1-gram is
    /// `mix64` of it, [`Features::Words`]`(1)`): what weighting token hashes by [`crate::weighted::term_frequencies`]
    /// sketches. Code `t`.
    Tokens,
    /// 64-bit feature hashes chosen by the caller (no shingling by this crate).
    Hashes,
}

impl Features {
    /// The compact form used in scheme descriptions: `w5`, `c24`, `t`, `h`.
    pub fn code(&self) -> String {
        match self {
            Features::Words(n) => format!("w{n}"),
            Features::Chars(n) => format!("c{n}"),
            Features::Tokens => "t".to_string(),
            Features::Hashes => "h".to_string(),
        }
    }

    /// Parses [`code`](Self::code)'s form.
    pub fn from_code(code: &str) -> Option<Features> {
        let number = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
        if code == "h" {
            Some(Features::Hashes)
        } else if code == "t" {
            Some(Features::Tokens)
        } else if let Some(n) = code.strip_prefix('w') {
            number(n).map(Features::Words)
        } else if let Some(n) = code.strip_prefix('c') {
            number(n).map(Features::Chars)
        } else {
            None
        }
    }
}

/// Streaming word n-gram hasher: feed tokens (or token hashes) one at a time, get shingle hashes back.
///
/// ```
/// use neardup_sketch::shingle::WordShingler;
/// let mut shingler = WordShingler::new(2);
/// let mut out = Vec::new();
/// for token in ["a", "rose", "is", "a", "rose"] {
///     out.extend(shingler.push_token(token));
/// }
/// out.extend(shingler.finish()); // nothing: the document had at least 2 tokens
/// assert_eq!(out.len(), 4);
/// assert_eq!(out[0], out[3]); // "a rose" twice
/// ```
#[derive(Clone, Debug)]
pub struct WordShingler {
    n: usize,
    /// The last n token hashes; `ring[pos]` is the oldest, the one that leaves the window next.
    ring: Vec<u64>,
    pos: usize,
    seen: usize,
    poly: u64,
    /// `SHINGLE_MULTIPLIER^(n−1)`: the weight of the token leaving the window.
    lead_weight: u64,
}

impl WordShingler {
    /// A shingler of word `n`-grams. Panics if `n == 0`.
    pub fn new(n: usize) -> Self {
        assert!(n > 0, "shingle length must be at least 1");
        let lead_weight = (1..n).fold(1u64, |w, _| w.wrapping_mul(SHINGLE_MULTIPLIER));
        WordShingler {
            n,
            ring: vec![0; n],
            pos: 0,
            seen: 0,
            poly: 0,
            lead_weight,
        }
    }

    /// The shingle length n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Forgets every token, ready for the next document (keeps the buffer).
    pub fn reset(&mut self) {
        self.ring.fill(0);
        self.pos = 0;
        self.seen = 0;
        self.poly = 0;
    }

    /// Adds a token; returns the hash of the shingle it completes, if any.
    #[inline]
    pub fn push_token(&mut self, token: &str) -> Option<u64> {
        self.push_hash(token_hash(token.as_bytes()))
    }

    /// Adds a token by its [`token_hash`]; returns the hash of the shingle it completes, if any.
    #[inline]
    pub fn push_hash(&mut self, t: u64) -> Option<u64> {
        let n = self.n;
        // Before the window is full the slot holds 0, and subtracting 0·C^(n−1) changes nothing.
        let leaving = std::mem::replace(&mut self.ring[self.pos], t);
        self.poly = self
            .poly
            .wrapping_sub(leaving.wrapping_mul(self.lead_weight))
            .wrapping_mul(SHINGLE_MULTIPLIER)
            .wrapping_add(t);
        self.pos = if self.pos + 1 == n { 0 } else { self.pos + 1 };
        self.seen += 1;
        (self.seen >= n).then(|| mix64(self.poly))
    }

    /// How many tokens were added since the last [`reset`](Self::reset) or [`finish`](Self::finish).
    pub fn tokens(&self) -> usize {
        self.seen
    }

    /// Ends the document: returns the one shingle of a document that had at least one token but fewer than n
    /// (the hash of all its tokens), and resets the shingler.
    pub fn finish(&mut self) -> Option<u64> {
        let short = (self.seen > 0 && self.seen < self.n).then(|| mix64(self.poly));
        self.reset();
        short
    }
}

/// The word `n`-gram hashes of a token sequence, in order (repeated shingles repeat).
///
/// ```
/// use neardup_sketch::shingle::word_shingles;
/// assert_eq!(word_shingles(["one", "two", "three"], 5).count(), 1); // short document: one shingle
/// assert_eq!(word_shingles(["a", "b", "c", "d", "e", "f"], 5).count(), 2);
/// assert_eq!(word_shingles(Vec::<&str>::new(), 5).count(), 0);
/// ```
pub fn word_shingles<'a, I>(tokens: I, n: usize) -> WordShingles<I::IntoIter>
where
    I: IntoIterator<Item = &'a str>,
{
    WordShingles {
        tokens: tokens.into_iter(),
        shingler: WordShingler::new(n),
        done: false,
    }
}

/// Iterator returned by [`word_shingles`].
#[derive(Clone, Debug)]
pub struct WordShingles<I> {
    tokens: I,
    shingler: WordShingler,
    done: bool,
}

impl<'a, I: Iterator<Item = &'a str>> Iterator for WordShingles<I> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        for token in self.tokens.by_ref() {
            if let Some(h) = self.shingler.push_token(token) {
                return Some(h);
            }
        }
        self.done = true;
        self.shingler.finish()
    }
}

/// The character `n`-gram hashes of `text` (n Unicode scalar values, hashed in place with xxh3-64), in order.
/// A non-empty text shorter than n characters gives one shingle of the whole text. Panics if `n == 0`.
///
/// ```
/// use neardup_sketch::shingle::{char_shingles, token_hash};
/// let hashes: Vec<u64> = char_shingles("añob", 3).collect();
/// assert_eq!(hashes, [token_hash("año".as_bytes()), token_hash("ñob".as_bytes())]);
/// ```
pub fn char_shingles(text: &str, n: usize) -> impl Iterator<Item = u64> + '_ {
    assert!(n > 0, "shingle length must be at least 1");
    // Byte offsets of every character start, then the end: window i is starts[i]..starts[i + n].
    let mut starts = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let mut window: std::collections::VecDeque<usize> = starts.by_ref().take(n + 1).collect();
    let chars = window.len() - 1;
    let short = (chars > 0 && chars < n).then(|| token_hash(text.as_bytes()));
    let mut full = chars == n;
    let windows = std::iter::from_fn(move || {
        if !full {
            return None;
        }
        let h = token_hash(&text.as_bytes()[window[0]..window[n]]);
        match starts.next() {
            Some(next) => {
                window.pop_front();
                window.push_back(next);
            }
            None => full = false,
        }
        Some(h)
    });
    short.into_iter().chain(windows)
}

/// Fills `out` (cleared first) with the word n-gram hashes of `tokens`.
pub fn word_shingles_into<'a>(
    tokens: impl IntoIterator<Item = &'a str>,
    n: usize,
    out: &mut Vec<u64>,
) {
    out.clear();
    out.extend(word_shingles(tokens, n));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    #[test]
    fn rolling_equals_definition() {
        let tokens =
            toks("the quick brown fox jumps over the lazy dog and the quick brown fox sleeps");
        for n in 1..=7 {
            let got: Vec<u64> = word_shingles(tokens.iter().copied(), n).collect();
            let hashes: Vec<u64> = tokens.iter().map(|t| token_hash(t.as_bytes())).collect();
            let want: Vec<u64> = hashes.windows(n).map(shingle_of_token_hashes).collect();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn short_and_empty_documents() {
        let none: Vec<u64> = word_shingles(Vec::<&str>::new(), 5).collect();
        assert!(none.is_empty());
        let short: Vec<u64> = word_shingles(toks("just three words"), 5).collect();
        let hashes: Vec<u64> = toks("just three words")
            .iter()
            .map(|t| token_hash(t.as_bytes()))
            .collect();
        assert_eq!(short, [shingle_of_token_hashes(&hashes)]);
        // Exactly n tokens: one shingle, and finish() adds nothing.
        assert_eq!(word_shingles(toks("a b c d e"), 5).count(), 1);
    }

    #[test]
    fn order_and_boundaries_matter() {
        let a: Vec<u64> = word_shingles(toks("a b c"), 3).collect();
        let b: Vec<u64> = word_shingles(toks("c b a"), 3).collect();
        let c: Vec<u64> = word_shingles(toks("ab c"), 2).collect();
        let d: Vec<u64> = word_shingles(toks("a bc"), 2).collect();
        assert_ne!(a, b);
        assert_ne!(c, d);
        // A one-token document and a unigram shingle of the same token agree.
        assert_eq!(
            word_shingles(toks("x"), 5).next(),
            word_shingles(toks("x"), 1).next()
        );
    }

    #[test]
    fn shingler_resets_between_documents() {
        let mut s = WordShingler::new(3);
        let first: Vec<u64> = toks("p q r s")
            .iter()
            .filter_map(|t| s.push_token(t))
            .collect();
        assert_eq!(s.finish(), None);
        let second: Vec<u64> = toks("p q r s")
            .iter()
            .filter_map(|t| s.push_token(t))
            .collect();
        assert_eq!(s.finish(), None);
        assert_eq!(first, second);
        s.push_token("only");
        let short = s.finish();
        assert_eq!(short, word_shingles(toks("only"), 3).next());
    }

    #[test]
    fn char_shingles_cover_every_window() {
        let text = "héllo wörld";
        let chars: Vec<char> = text.chars().collect();
        for n in 1..=chars.len() + 2 {
            let got: Vec<u64> = char_shingles(text, n).collect();
            let want: Vec<u64> = if n > chars.len() {
                vec![token_hash(text.as_bytes())]
            } else {
                chars
                    .windows(n)
                    .map(|w| token_hash(w.iter().collect::<String>().as_bytes()))
                    .collect()
            };
            assert_eq!(got, want, "n = {n}");
        }
        assert_eq!(char_shingles("", 3).count(), 0);
    }

    #[test]
    fn features_codes_round_trip() {
        for f in [
            Features::Words(5),
            Features::Chars(24),
            Features::Tokens,
            Features::Hashes,
        ] {
            assert_eq!(Features::from_code(&f.code()), Some(f));
        }
        // Token hashes and word 1-grams are different features: different codes.
        assert_ne!(Features::Tokens.code(), Features::Words(1).code());
        assert_eq!(Features::from_code("t1"), None);
        assert_eq!(Features::from_code("w0"), None);
        assert_eq!(Features::from_code("x5"), None);
    }

    #[test]
    fn pinned_values() {
        // xxh3-64 of "" (seed 0) is the published check value; any other xxh3 changes every signature.
        assert_eq!(token_hash(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(mix64(0), 0);
    }
}

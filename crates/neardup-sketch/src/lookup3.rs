//! Bob Jenkins' lookup3 `hashlittle2` (public domain, May 2006), bit-exact with `lookup3.c`.
//!
//! The simhash-doc-v1 scheme pins this function as its token hash, so it is written here rather than taken
//! from a crate: the crates.io implementations checked on this project's machines either give wrong values
//! (`hashers` 1.0: empty input and lengths that are multiples of 12) or panic on overflow in debug builds
//! (`JenkHash` 0.3). All arithmetic wraps, as in C.
//!
//! lookup3 reads the key in 12-byte blocks. Every block but the last is mixed; the last 1 to 12 bytes are
//! added and passed through `final` (an empty key skips `final` and returns the initial values). Reading the
//! key as little-endian `u32` words is exactly what `hashlittle2`'s byte-by-byte branch computes, so the result
//! does not depend on the host's endianness or on the key's alignment.

#[inline(always)]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline(always)]
fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

#[inline(always)]
fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads up to 4 bytes as a little-endian word, zero-filled: lookup3's tail cases in one expression.
/// (A `copy_from_slice` of variable length here compiles to a `memcpy` call that costs more than the hash.)
#[inline(always)]
fn partial_word(bytes: &[u8]) -> u32 {
    match *bytes {
        [] => 0,
        [a] => a as u32,
        [a, b] => u16::from_le_bytes([a, b]) as u32,
        [a, b, c] => u16::from_le_bytes([a, b]) as u32 | (c as u32) << 16,
        [a, b, c, d, ..] => u32::from_le_bytes([a, b, c, d]),
    }
}

/// `hashlittle2(key, length, &pc, &pb)`: returns the two output words `(c, b)`, i.e. the new `*pc` and `*pb`.
///
/// ```
/// use neardup_sketch::lookup3::hashlittle2;
/// assert_eq!(hashlittle2(b"", 0, 0), (0xdeadbeef, 0xdeadbeef));
/// assert_eq!(hashlittle2(b"Four score and seven years ago", 0, 0), (0x17770551, 0xce7226e6));
/// ```
#[inline]
pub fn hashlittle2(key: &[u8], pc: u32, pb: u32) -> (u32, u32) {
    let init = 0xdead_beef_u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(pc);
    let (mut a, mut b, mut c) = (init, init, init.wrapping_add(pb));
    if key.is_empty() {
        return (c, b);
    }
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(word(rest, 4));
        c = c.wrapping_add(word(rest, 8));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    // 1..=12 bytes left: add them (missing bytes count as zero) and finish.
    let n = rest.len();
    if n > 8 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(word(rest, 4));
        c = c.wrapping_add(partial_word(&rest[8..]));
    } else if n > 4 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(partial_word(&rest[4..]));
    } else {
        a = a.wrapping_add(partial_word(rest));
    }
    final_mix(&mut a, &mut b, &mut c);
    (c, b)
}

/// The 64-bit token hash of simhash-doc-v1: `hashlittle2` with both initial values 0, as the 8 octets
/// `BE32(c) ‖ BE32(b)`, read here as the big-endian integer `(c << 32) | b` (seomoz simhash-cpp's `jenkins`).
#[inline]
pub fn jenkins64(key: &[u8]) -> u64 {
    let (c, b) = hashlittle2(key, 0, 0);
    ((c as u64) << 32) | b as u64
}

/// [`jenkins64`] of `window[..len]`, for keys that sit in a larger buffer.
///
/// Most tokens are at most 12 bytes: lookup3 then adds three little-endian words (missing bytes are zero)
/// and runs `final` once. When `window` holds at least 12 bytes, those words are loaded whole and the bytes
/// past `len` masked off, with no per-length branching. The value is always exactly `jenkins64(&window[..len])`.
///
/// ```
/// use neardup_sketch::lookup3::{jenkins64, jenkins64_window};
/// let text = b"hello world, this is text";
/// assert_eq!(jenkins64_window(text, 5), jenkins64(b"hello"));
/// ```
#[inline]
pub fn jenkins64_window(window: &[u8], len: usize) -> u64 {
    if len == 0 || len > 12 || window.len() < 12 {
        return jenkins64(&window[..len]);
    }
    let lo = u64::from_le_bytes(window[..8].try_into().expect("8 bytes"));
    let hi = u32::from_le_bytes(window[8..12].try_into().expect("4 bytes"));
    let lo_mask = u64::MAX >> (64 - 8 * len.min(8));
    let hi_mask = ((1u64 << (8 * len.saturating_sub(8))) - 1) as u32;
    let lo = lo & lo_mask;
    let init = 0xdead_beef_u32.wrapping_add(len as u32);
    let mut a = init.wrapping_add(lo as u32);
    let mut b = init.wrapping_add((lo >> 32) as u32);
    let mut c = init.wrapping_add(hi & hi_mask);
    final_mix(&mut a, &mut b, &mut c);
    ((c as u64) << 32) | b as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values printed by the driver of `lookup3.c` (driver5 and the comment above `hashlittle2`).
    #[test]
    fn matches_lookup3_c_driver_values() {
        let four = b"Four score and seven years ago";
        assert_eq!(hashlittle2(b"", 0, 0), (0xdeadbeef, 0xdeadbeef));
        assert_eq!(hashlittle2(b"", 0, 0xdeadbeef), (0xbd5b7dde, 0xdeadbeef));
        assert_eq!(
            hashlittle2(b"", 0xdeadbeef, 0xdeadbeef),
            (0x9c093ccd, 0xbd5b7dde)
        );
        assert_eq!(hashlittle2(four, 0, 0), (0x17770551, 0xce7226e6));
        assert_eq!(hashlittle2(four, 0, 1), (0xe3607cae, 0xbd371de4));
        assert_eq!(hashlittle2(four, 1, 0), (0xcd628161, 0x6cbea4b3));
        assert_eq!(jenkins64(four), 0x17770551_ce7226e6);
    }

    /// A plain transcription of lookup3.c's byte-at-a-time branch, switch and all, as an oracle.
    fn reference(key: &[u8], pc: u32, pb: u32) -> (u32, u32) {
        let mut a = 0xdeadbeef_u32
            .wrapping_add(key.len() as u32)
            .wrapping_add(pc);
        let mut b = a;
        let mut c = a.wrapping_add(pb);
        let mut k = key;
        while k.len() > 12 {
            for i in 0..4 {
                a = a.wrapping_add((k[i] as u32) << (8 * i));
                b = b.wrapping_add((k[4 + i] as u32) << (8 * i));
                c = c.wrapping_add((k[8 + i] as u32) << (8 * i));
            }
            mix(&mut a, &mut b, &mut c);
            k = &k[12..];
        }
        if k.is_empty() {
            return (c, b);
        }
        for (i, &byte) in k.iter().enumerate() {
            let v = (byte as u32) << (8 * (i % 4));
            match i / 4 {
                0 => a = a.wrapping_add(v),
                1 => b = b.wrapping_add(v),
                _ => c = c.wrapping_add(v),
            }
        }
        final_mix(&mut a, &mut b, &mut c);
        (c, b)
    }

    proptest::proptest! {
        #[test]
        fn equals_the_byte_at_a_time_reference(key in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
                                               pc: u32, pb: u32) {
            proptest::prop_assert_eq!(hashlittle2(&key, pc, pb), reference(&key, pc, pb));
        }
    }

    #[test]
    fn window_equals_plain_for_every_length() {
        let data: Vec<u8> = (0..40u8)
            .map(|i| i.wrapping_mul(91).wrapping_add(3))
            .collect();
        for len in 0..=20 {
            for extra in 0..16 {
                if len + extra <= data.len() {
                    let window = &data[..len + extra];
                    assert_eq!(
                        jenkins64_window(window, len),
                        jenkins64(&data[..len]),
                        "len {len} extra {extra}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_length_around_block_edges() {
        let data: Vec<u8> = (0..64u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        for len in 0..data.len() {
            assert_eq!(
                hashlittle2(&data[..len], 7, 9),
                reference(&data[..len], 7, 9),
                "len {len}"
            );
        }
    }
}

//! The one sort the index needs: stable LSD radix sort of rows by some bits of a 64-bit key.
//!
//! Table builds and all-pairs groups sort millions of rows whose keys are bit fields; a radix sort does it in
//! a few linear passes where a comparison sort takes log2 N, and it is stable, which keeps equal keys in slot
//! order and so makes every output order deterministic.

/// A row sorted by a 64-bit key: table builds sort packed `u64`s, all-pairs groups `(value, index)` pairs.
pub(crate) trait Keyed: Copy + Default {
    fn key(&self) -> u64;
}

impl Keyed for u64 {
    #[inline(always)]
    fn key(&self) -> u64 {
        *self
    }
}

impl Keyed for (u64, u32) {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
}

/// Stable LSD radix sort of `rows` by bits `shift .. shift + bits` of their key, 11 bits a pass. Rows
/// equal in those bits keep their order, so rows built in slot order stay in slot order among equals.
pub(crate) fn radix_sort_by_key<T: Keyed>(
    rows: &mut Vec<T>,
    scratch: &mut Vec<T>,
    shift: u32,
    bits: u32,
) {
    const DIGIT: u32 = 11;
    let mut done = 0;
    while done < bits {
        let width = DIGIT.min(bits - done);
        let lo = shift + done;
        let digit = |r: &T| ((r.key() >> lo) & ((1u64 << width) - 1)) as usize;
        let mut counts = [0usize; 1 << DIGIT];
        for r in rows.iter() {
            counts[digit(r)] += 1;
        }
        let mut sum = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        // Every slot is written below; only a scratch of the wrong length needs filling first.
        if scratch.len() != rows.len() {
            scratch.clear();
            scratch.resize(rows.len(), T::default());
        }
        for r in rows.iter() {
            let d = digit(r);
            scratch[counts[d]] = *r;
            counts[d] += 1;
        }
        std::mem::swap(rows, scratch);
        done += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sorts_like_a_stable_sort(values in proptest::collection::vec(any::<u64>(), 0..300), shift in 0u32..40, bits in 0u32..25) {
            let mut rows: Vec<(u64, u32)> = values.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
            let mut expected = rows.clone();
            let key = |v: u64| if bits == 0 { 0 } else { (v >> shift) & ((1u64 << bits) - 1) };
            expected.sort_by_key(|r| key(r.0)); // stable
            let mut scratch = Vec::new();
            radix_sort_by_key(&mut rows, &mut scratch, shift, bits);
            prop_assert_eq!(rows, expected);
        }
    }

    #[test]
    fn full_width_sort() {
        let mut rows: Vec<(u64, u32)> = vec![(u64::MAX, 0), (0, 1), (1 << 63, 2), (5, 3), (5, 4)];
        radix_sort_by_key(&mut rows, &mut Vec::new(), 0, 64);
        assert_eq!(
            rows,
            vec![(0, 1), (5, 3), (5, 4), (1 << 63, 2), (u64::MAX, 0)]
        );
    }
}

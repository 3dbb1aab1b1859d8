//! Charikar's SimHash over 64-bit feature hashes, with a bit-sliced accumulator.
//!
//! SimHash keeps one signed counter per bit: each feature adds +1 where its hash has a 1 and −1 where it has
//! a 0, and the fingerprint has a 1 exactly where the counter ends positive. With unit weights the counter of
//! bit j is `2·ones_j − n` (`ones_j` = how many of the n features have bit j set), so it is enough to count
//! ones per column.
//!
//! Counting 64 columns one bit at a time costs 64 branches or 64 adds per feature. Instead the accumulator
//! keeps the counts *vertically* (bit-sliced): word `planes[p]` holds bit p of all 64 column counts, and
//! adding a feature is a binary increment done with whole-word `xor`/`and`. Eight features are first
//! reduced by a carry-save adder tree (Harley–Seal) into the `ones`, `twos` and `fours` words, so the
//! ripple into the higher planes happens once per eight features. The kernel is branch-free per bit,
//! uses only portable 64-bit integer instructions, and needs no runtime dispatch (a portable build and a
//! `-C target-cpu=native` build run the same instructions; see `benches/kernels.rs`).

/// Carry-save adder: adds three words column-wise, returning (sum bits, carry bits).
#[inline(always)]
fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
    let u = a ^ b;
    (u ^ c, (a & b) | (u & c))
}

/// Accumulates unit-weight 64-bit feature hashes into a 64-bit SimHash.
///
/// ```
/// use neardup_sketch::simhash::SimHash64;
/// let mut acc = SimHash64::new();
/// for h in [0b1100u64, 0b1010, 0b1001] {
///     acc.add(h);
/// }
/// assert_eq!(acc.features(), 3);
/// assert_eq!(acc.finish(), 0b1000); // only bit 3 is set in more than half of the features
/// ```
#[derive(Clone, Debug)]
pub struct SimHash64 {
    pending: [u64; 8],
    pending_len: usize,
    ones: u64,
    twos: u64,
    fours: u64,
    /// `eights[p]` is bit p of (count of completed 8-feature groups' carries) per column: weight 8·2^p.
    eights: [u64; 58],
    eights_used: usize,
    features: u64,
}

impl Default for SimHash64 {
    fn default() -> Self {
        Self::new()
    }
}

impl SimHash64 {
    /// An empty accumulator.
    pub const fn new() -> Self {
        SimHash64 {
            pending: [0; 8],
            pending_len: 0,
            ones: 0,
            twos: 0,
            fours: 0,
            eights: [0; 58],
            eights_used: 0,
            features: 0,
        }
    }

    /// Adds one feature of weight 1.
    #[inline(always)]
    pub fn add(&mut self, hash: u64) {
        self.pending[self.pending_len] = hash;
        self.pending_len += 1;
        self.features += 1;
        if self.pending_len == 8 {
            self.pending_len = 0;
            self.reduce_eight();
        }
    }

    /// Adds every hash of a slice (same as calling [`add`](Self::add) for each).
    pub fn extend(&mut self, hashes: &[u64]) {
        for &h in hashes {
            self.add(h);
        }
    }

    #[inline(always)]
    fn reduce_eight(&mut self) {
        let h = self.pending;
        let (ones, a1) = csa(self.ones, h[0], h[1]);
        let (ones, a2) = csa(ones, h[2], h[3]);
        let (twos, b1) = csa(self.twos, a1, a2);
        let (ones, a1) = csa(ones, h[4], h[5]);
        let (ones, a2) = csa(ones, h[6], h[7]);
        let (twos, b2) = csa(twos, a1, a2);
        let (fours, mut carry) = csa(self.fours, b1, b2);
        self.ones = ones;
        self.twos = twos;
        self.fours = fours;
        // Ripple the weight-8 carries through every plane in use. The loop length changes only when the count
        // gains a bit, so the branch predictor learns it; stopping at the first zero carry would mispredict.
        for plane in &mut self.eights[..self.eights_used] {
            let old = *plane;
            *plane = old ^ carry;
            carry &= old;
        }
        if carry != 0 {
            self.eights[self.eights_used] = carry;
            self.eights_used += 1;
        }
    }

    /// How many features have been added.
    pub fn features(&self) -> u64 {
        self.features
    }

    /// The number of added features that have bit j (of the big-endian integer, j = 0 least significant) set.
    pub fn ones_per_bit(&self) -> [u64; 64] {
        let mut counts = [0u64; 64];
        for (j, count) in counts.iter_mut().enumerate() {
            let bit = |w: u64| (w >> j) & 1;
            let mut c = bit(self.ones) + 2 * bit(self.twos) + 4 * bit(self.fours);
            for (p, plane) in self.eights[..self.eights_used].iter().enumerate() {
                c += bit(*plane) << (p + 3);
            }
            for h in &self.pending[..self.pending_len] {
                c += bit(*h);
            }
            *count = c;
        }
        counts
    }

    /// The fingerprint: bit j is 1 iff more than half of the features have bit j set (counter > 0; a tie is 0).
    pub fn finish(&self) -> u64 {
        let n = self.features;
        let counts = self.ones_per_bit();
        let mut fp = 0u64;
        for (j, &c) in counts.iter().enumerate() {
            // counter_j = ones − (n − ones) = 2·ones − n > 0
            fp |= ((2 * c > n) as u64) << j;
        }
        fp
    }
}

/// The textbook SimHash loop (one signed counter per bit, a branch per bit): the oracle for tests and the
/// baseline of the kernel benchmark.
pub fn simhash64_naive(hashes: &[u64]) -> u64 {
    let mut counters = [0i64; 64];
    for &h in hashes {
        for (j, c) in counters.iter_mut().enumerate() {
            if (h >> j) & 1 == 1 {
                *c += 1;
            } else {
                *c -= 1;
            }
        }
    }
    counters
        .iter()
        .enumerate()
        .fold(0u64, |fp, (j, &c)| fp | (((c > 0) as u64) << j))
}

/// Hamming distance between two 64-bit fingerprints: the number of differing bits.
///
/// ```
/// assert_eq!(neardup_sketch::hamming(0b1011, 0b0110), 3);
/// ```
#[inline(always)]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bitsliced(hashes: &[u64]) -> u64 {
        let mut acc = SimHash64::new();
        acc.extend(hashes);
        acc.finish()
    }

    #[test]
    fn empty_and_single() {
        assert_eq!(bitsliced(&[]), 0);
        assert_eq!(bitsliced(&[0xdead_beef_0123_4567]), 0xdead_beef_0123_4567);
    }

    #[test]
    fn ties_give_zero() {
        assert_eq!(bitsliced(&[u64::MAX, 0]), 0);
        assert_eq!(bitsliced(&[u64::MAX, 0, u64::MAX]), u64::MAX);
    }

    #[test]
    fn many_identical_features_reach_high_planes() {
        let v = vec![0xf0f0_f0f0_0000_ffff_u64; 100_003];
        let mut acc = SimHash64::new();
        acc.extend(&v);
        assert_eq!(acc.finish(), 0xf0f0_f0f0_0000_ffff);
        let counts = acc.ones_per_bit();
        assert_eq!(counts[0], 100_003);
        assert_eq!(counts[16], 0);
    }

    proptest! {
        #[test]
        fn equals_naive(hashes in proptest::collection::vec(any::<u64>(), 0..300)) {
            prop_assert_eq!(bitsliced(&hashes), simhash64_naive(&hashes));
        }

        #[test]
        fn equals_naive_on_biased_bits(seed in any::<u64>(), n in 0usize..200) {
            // Features that share most bits exercise ties and long carry chains.
            let hashes: Vec<u64> = (0..n as u64).map(|i| seed ^ (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & 0x0101)).collect();
            prop_assert_eq!(bitsliced(&hashes), simhash64_naive(&hashes));
        }
    }
}

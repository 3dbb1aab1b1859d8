//! An index's buckets for a served store ([`crate::store::served`]): where a store that answers queries
//! itself files each entry, per table. This is where such a store meets the index kinds, as [`crate::disk`]
//! is for segments.
//!
//! * A Hamming index: table t's bucket of a fingerprint is the key of its permuted form (the top `key_bits`
//!   bits of [`TableLayout::permute`]). Two fingerprints within k share a bucket in some table (the design's
//!   promise), so the neighbours of a probe hold every entry within k.
//! * An LSH index: band b's bucket of a signature is its band key (`band_key` of the band's values, 64 bits),
//!   as in [`crate::lsh::LshIndex`].

use crate::hamming::plan::{Design, TableLayout};
use crate::lsh::Banding;
use crate::lsh::index::band_key;
use crate::lsh::mapped::signature_values;
use crate::store::served::Buckets;
use crate::store::{Kind, Meta, Settings};
use std::sync::Arc;

/// The buckets of an index with these settings, or `None` for settings that are not an index's.
pub fn buckets_for(settings: &Settings) -> Option<Arc<dyn Buckets>> {
    match Meta::from_settings(settings).ok()?.kind {
        Kind::Hamming(design) => Some(Arc::new(HammingBuckets::new(&design))),
        Kind::Lsh { banding, .. } => Some(Arc::new(LshBuckets { banding })),
    }
}

/// A Hamming design's tables: a fingerprint's permuted key in each.
#[derive(Debug)]
pub struct HammingBuckets {
    layouts: Vec<TableLayout>,
}

impl HammingBuckets {
    /// The buckets of `design`.
    pub fn new(design: &Design) -> Self {
        HammingBuckets {
            layouts: design.layouts(),
        }
    }
}

impl Buckets for HammingBuckets {
    fn tables(&self) -> usize {
        self.layouts.len()
    }

    fn bits(&self, table: usize) -> u32 {
        self.layouts[table].key_bits
    }

    fn buckets(&self, value: &[u8]) -> Option<Vec<u64>> {
        let fp = u64::from_le_bytes(value.try_into().ok()?);
        Some(
            self.layouts
                .iter()
                .map(|layout| {
                    let keep = layout.key_bits.min(64);
                    let permuted = layout.permute(fp);
                    if keep == 0 {
                        0
                    } else {
                        permuted & (u64::MAX << (64 - keep))
                    }
                })
                .collect(),
        )
    }
}

/// An LSH banding's bands: a signature's band key in each.
#[derive(Debug)]
pub struct LshBuckets {
    banding: Banding,
}

impl Buckets for LshBuckets {
    fn tables(&self) -> usize {
        self.banding.bands as usize
    }

    fn bits(&self, _table: usize) -> u32 {
        64
    }

    fn buckets(&self, value: &[u8]) -> Option<Vec<u64>> {
        if value.len() != 4 * self.banding.values as usize {
            return None;
        }
        let values: Vec<u32> = signature_values(value).collect();
        Some(
            (0..self.banding.bands)
                .map(|band| band_key(&values[self.banding.band_range(band)]))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hamming::plan::recommend;

    /// Two fingerprints within k share a bucket in some table; the buckets keep only the key's bits.
    #[test]
    fn fingerprints_within_k_share_a_bucket() {
        let design = recommend(3, 1e6);
        let buckets = HammingBuckets::new(&design);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let flips = [x % 64, (x >> 8) % 64, (x >> 16) % 64];
            let y = flips.iter().fold(x, |y, &b| y ^ (1 << b));
            let (bx, by) = (
                buckets.buckets(&x.to_le_bytes()).unwrap(),
                buckets.buckets(&y.to_le_bytes()).unwrap(),
            );
            assert!(bx.iter().zip(&by).any(|(a, b)| a == b), "{x:x} {y:x}");
            for (t, b) in bx.iter().enumerate() {
                assert_eq!(b << buckets.bits(t).min(63), 0, "only the key's bits");
            }
        }
        assert_eq!(buckets.buckets(&[1, 2, 3]), None, "a wrong length");
    }

    /// Signatures with an equal band share that band's bucket.
    #[test]
    fn equal_bands_share_a_bucket() {
        let banding = Banding::fixed(4, 2, 8).unwrap();
        let buckets = LshBuckets { banding };
        let a: Vec<u8> = (0..8u32).flat_map(|v| v.to_le_bytes()).collect();
        let mut b = a.clone();
        b[0] ^= 1; // band 0 differs
        let (ba, bb) = (buckets.buckets(&a).unwrap(), buckets.buckets(&b).unwrap());
        assert_ne!(ba[0], bb[0]);
        assert_eq!(ba[1..], bb[1..]);
        assert_eq!(buckets.buckets(&a[..4]), None);
    }
}

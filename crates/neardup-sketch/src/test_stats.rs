//! Shared helpers of the estimator tests: random set pairs with an exact Jaccard similarity, and a summary of
//! estimates with tolerances derived from their standard errors.
//!
//! Every test draws its sets from a fixed seed, so it is deterministic (it cannot flake); the tolerances are
//! still set from the standard errors, so that a correct estimator passes for (almost) every seed and a
//! biased or noisier one fails.

use crate::shingle::mix64;

/// Trials per case of the variance tests. The sample variance of T trials has a relative standard error of
/// about √(2/T) = 2.5 % at T = 3,200, so an estimator whose true variance is at most classic MinHash's passes
/// the "≤ 1.10 × classic" check with a margin of 4 standard errors, and one 20 % above classic fails it by 4.
pub const TRIALS: u64 = 3200;

/// A deterministic stream of 64-bit values (SplitMix64).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Two sets of distinct random features with |A ∪ B| = `union` and |A ∩ B| = round(j·union).
pub struct Pair {
    pub a: Vec<u64>,
    pub b: Vec<u64>,
    /// The exact Jaccard similarity.
    pub jaccard: f64,
}

impl Pair {
    pub fn new(union: usize, j: f64, seed: u64) -> Pair {
        let mut rng = SplitMix(seed);
        let common = (j * union as f64).round() as usize;
        let a_only = (union - common) / 2;
        let b_only = union - common - a_only;
        let mut fresh = || rng.next_u64();
        let shared: Vec<u64> = (0..common).map(|_| fresh()).collect();
        let mut a = shared.clone();
        a.extend((0..a_only).map(|_| fresh()));
        let mut b = shared;
        b.extend((0..b_only).map(|_| fresh()));
        Pair {
            a,
            b,
            jaccard: common as f64 / union as f64,
        }
    }
}

/// The fraction of positions where two signatures agree.
pub fn agreement<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
}

/// Errors (estimate − truth) of repeated trials at one true similarity.
#[derive(Default)]
pub struct Summary {
    errors: Vec<f64>,
    truth: f64,
}

impl Summary {
    pub fn add(&mut self, estimate: f64, truth: f64) {
        self.truth = truth;
        self.errors.push(estimate - truth);
    }

    pub fn mean_error(&self) -> f64 {
        self.errors.iter().sum::<f64>() / self.errors.len() as f64
    }

    /// Mean squared error around the truth (the variance, for an unbiased estimator).
    pub fn mse(&self) -> f64 {
        self.errors.iter().map(|e| e * e).sum::<f64>() / self.errors.len() as f64
    }

    /// Classic MinHash's variance with k independent permutations: J(1−J)/k.
    pub fn classic_variance(&self, k: usize) -> f64 {
        self.truth * (1.0 - self.truth) / k as f64
    }

    pub fn variance_ratio_to_classic(&self, k: usize) -> f64 {
        self.mse() / self.classic_variance(k)
    }

    /// |mean error| ≤ 4.5 standard errors of the mean (standard error from the larger of the observed and the
    /// classic variance, so that a lucky low-variance sample does not make the test stricter than intended).
    pub fn assert_unbiased(&self, k: usize, what: &str) {
        let t = self.errors.len() as f64;
        let se = (self.mse().max(self.classic_variance(k)) / t).sqrt();
        let mean = self.mean_error();
        assert!(
            mean.abs() <= 4.5 * se,
            "{what}: mean error {mean:.5} exceeds 4.5 standard errors ({se:.5}): biased"
        );
    }

    /// MSE / classic variance ≤ `limit`; returns the ratio.
    pub fn assert_variance_at_most_classic(&self, k: usize, limit: f64, what: &str) -> f64 {
        let ratio = self.variance_ratio_to_classic(k);
        assert!(
            ratio <= limit,
            "{what}: variance {:.3e} is {ratio:.3}× classic MinHash's {:.3e} (limit {limit})",
            self.mse(),
            self.classic_variance(k)
        );
        ratio
    }
}

//! How a signature of K values is cut into bands, the S-curve that follows, and the optimizer that picks the
//! cut for a Jaccard threshold.
//!
//! Two documents are candidates when all values of at least one band agree. With b bands of r rows, a pair of
//! Jaccard similarity s collides with probability P(s) = 1 − (1 − s^r)^b. When b does not divide K, the
//! datasketch optimizer leaves K − b·r values unused (up to 5.5 % at K = 128); here the remainder is spread
//! over the first bands instead (some bands get r + 1 rows), so every value is used and the S-curve is
//! P(s) = 1 − (1 − s^(r+1))^e · (1 − s^r)^(b−e). Presets from published pipelines keep their exact shape and
//! say how many values they leave unused.

use std::fmt;
use std::sync::{Mutex, PoisonError};

/// A cut of K signature values into bands: the first `wide` bands have `rows + 1` values, the rest `rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Banding {
    /// The number of values in a signature (K).
    pub values: u32,
    /// The number of bands (b).
    pub bands: u32,
    /// Values per band (r); the first `wide` bands have one more.
    pub rows: u32,
    /// How many bands have `rows + 1` values.
    pub wide: u32,
}

/// Why a banding cannot be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BandingError {
    /// Bands × rows needs more values than the signature has.
    #[error("{bands} bands × {rows} rows need {} values, but signatures have {values}", *bands as u64 * *rows as u64)]
    TooFewValues {
        /// Bands asked for.
        bands: u32,
        /// Rows asked for.
        rows: u32,
        /// Values per signature.
        values: u32,
    },
    /// Zero bands, rows or values.
    #[error("bands, rows and signature values must all be at least 1")]
    Empty,
    /// A threshold outside (0, 1).
    #[error("the Jaccard threshold must be between 0 and 1 (exclusive), not {0}")]
    Threshold(f64),
    /// No preset has this name.
    #[error("unknown preset '{0}' (known: {known})", known = PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))]
    UnknownPreset(String),
    /// A preset used with signatures of another length.
    #[error("the {preset} preset uses {needs} values per signature, not {values}")]
    PresetValues {
        /// The preset's name.
        preset: &'static str,
        /// The values it needs.
        needs: u32,
        /// The values the signatures have.
        values: u32,
    },
}

impl Banding {
    /// Exactly `bands` × `rows` over signatures of `values` values; values beyond bands × rows are unused.
    pub fn fixed(bands: u32, rows: u32, values: u32) -> Result<Self, BandingError> {
        if bands == 0 || rows == 0 || values == 0 {
            return Err(BandingError::Empty);
        }
        if bands as u64 * rows as u64 > values as u64 {
            return Err(BandingError::TooFewValues {
                bands,
                rows,
                values,
            });
        }
        Ok(Banding {
            values,
            bands,
            rows,
            wide: 0,
        })
    }

    /// `bands` bands over all `values` values, as even as possible (the first `values % bands` bands get one
    /// more row).
    pub fn even(bands: u32, values: u32) -> Result<Self, BandingError> {
        if bands == 0 || values == 0 {
            return Err(BandingError::Empty);
        }
        if bands > values {
            return Err(BandingError::TooFewValues {
                bands,
                rows: 1,
                values,
            });
        }
        Ok(Banding {
            values,
            bands,
            rows: values / bands,
            wide: values % bands,
        })
    }

    /// The range of signature positions of band `band`.
    pub fn band_range(&self, band: u32) -> std::ops::Range<usize> {
        let b = band as usize;
        let (rows, wide) = (self.rows as usize, self.wide as usize);
        let start = b * rows + b.min(wide);
        let len = rows + usize::from(b < wide);
        start..start + len
    }

    /// How many signature values the bands use.
    pub fn used(&self) -> u32 {
        self.bands * self.rows + self.wide
    }

    /// Signature values no band uses.
    pub fn unused(&self) -> u32 {
        self.values - self.used()
    }

    /// The probability that a pair of Jaccard similarity `s` shares at least one band (the S-curve).
    pub fn probability(&self, s: f64) -> f64 {
        let s = s.clamp(0.0, 1.0);
        let narrow = self.bands - self.wide;
        let miss_narrow = (1.0 - s.powi(self.rows as i32)).powi(narrow as i32);
        let miss_wide = (1.0 - s.powi(self.rows as i32 + 1)).powi(self.wide as i32);
        1.0 - miss_narrow * miss_wide
    }

    /// The similarity at which the S-curve crosses 1/2.
    pub fn midpoint(&self) -> f64 {
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if self.probability(mid) < 0.5 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    }

    /// Weighted false-positive and false-negative areas for a threshold: ∫₀ᵗ P(s) ds and ∫ₜ¹ 1 − P(s) ds.
    pub fn error_areas(&self, threshold: f64) -> (f64, f64) {
        let fp = simpson(|s| self.probability(s), 0.0, threshold);
        let fn_ = simpson(|s| 1.0 - self.probability(s), threshold, 1.0);
        (fp, fn_)
    }
}

impl fmt::Display for Banding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wide == 0 {
            write!(f, "{} bands × {} rows", self.bands, self.rows)?;
        } else {
            write!(
                f,
                "{} bands ({} × {} rows, {} × {} rows)",
                self.bands,
                self.wide,
                self.rows + 1,
                self.bands - self.wide,
                self.rows
            )?;
        }
        match self.unused() {
            0 => write!(f, ", all {} values used", self.values),
            n => write!(f, ", {n} of {} values unused", self.values),
        }
    }
}

/// Simpson's rule with 200 intervals: the S-curves are smooth, and this matches adaptive quadrature to 1e-9.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    const N: usize = 200;
    if b <= a {
        return 0.0;
    }
    let h = (b - a) / N as f64;
    let mut sum = f(a) + f(b);
    for i in 1..N {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(a + i as f64 * h);
    }
    sum * h / 3.0
}

/// The banding that minimizes `fp_weight`·FP + `fn_weight`·FN for `threshold`, where FP and FN are the areas of
/// [`Banding::error_areas`] (datasketch's criterion). The candidates are datasketch's grid (b bands × r rows,
/// b·r ≤ K) and, for every b, the even banding that uses all K values; on a tie the one that uses more values
/// wins. So the result is never worse than datasketch's by its own measure, and [`Banding::unused`] says
/// when it leaves values unused.
pub fn optimize(
    threshold: f64,
    values: u32,
    fp_weight: f64,
    fn_weight: f64,
) -> Result<Banding, BandingError> {
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(BandingError::Threshold(threshold));
    }
    if values == 0 {
        return Err(BandingError::Empty);
    }
    // Every new LSH index (each `neardup.dedup` call, each drop-in `MinHashLSH`) asks, and the search weighs
    // about K·ln K bandings by two 200-interval integrals each: 5 ms for K = 128. The answer depends on the
    // arguments alone, so the latest ones are remembered.
    type Asked = (u64, u32, u64, u64);
    static CHOSEN: Mutex<Vec<(Asked, Banding)>> = Mutex::new(Vec::new());
    const REMEMBERED: usize = 64;
    let asked = (
        threshold.to_bits(),
        values,
        fp_weight.to_bits(),
        fn_weight.to_bits(),
    );
    let chosen = || CHOSEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&(_, banding)) = chosen().iter().find(|(a, _)| *a == asked) {
        return Ok(banding);
    }
    let banding = search(threshold, values, fp_weight, fn_weight)?;
    let mut chosen = chosen();
    if chosen.len() == REMEMBERED {
        chosen.remove(0);
    }
    chosen.push((asked, banding));
    Ok(banding)
}

/// [`optimize`]'s search, every candidate weighed.
fn search(
    threshold: f64,
    values: u32,
    fp_weight: f64,
    fn_weight: f64,
) -> Result<Banding, BandingError> {
    let mut best: Option<(f64, Banding)> = None;
    let mut consider = |banding: Banding| {
        let (fp, fn_) = banding.error_areas(threshold);
        let cost = fp_weight * fp + fn_weight * fn_;
        let better = match best {
            None => true,
            Some((c, b)) => cost < c - 1e-12 || (cost <= c + 1e-12 && banding.used() > b.used()),
        };
        if better {
            best = Some((cost, banding));
        }
    };
    for bands in 1..=values {
        consider(Banding::even(bands, values)?);
        for rows in 1..=values / bands {
            consider(Banding::fixed(bands, rows, values)?);
        }
    }
    Ok(best.expect("at least one banding").1)
}

/// A published configuration: shingle size, signature size and banding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Preset {
    /// Its name on the command line.
    pub name: &'static str,
    /// Word n-gram size.
    pub shingle: u32,
    /// Signature values (K).
    pub values: u32,
    /// Bands and rows, or `None` where the pipeline used the optimizer at `threshold`.
    pub bands_rows: Option<(u32, u32)>,
    /// The Jaccard threshold the pipeline targeted.
    pub threshold: f64,
    /// Where it comes from.
    pub source: &'static str,
}

/// The published presets.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "fineweb",
        shingle: 5,
        values: 112,
        bands_rows: Some((14, 8)),
        threshold: 0.75,
        source: "FineWeb (2024), datatrove MinhashConfig: word 5-grams, 14 buckets × 8 hashes",
    },
    Preset {
        name: "refinedweb",
        shingle: 5,
        values: 9000,
        bands_rows: Some((450, 20)),
        threshold: 0.8,
        source: "Lee et al. (2022) and RefinedWeb (2023): 5-grams, 9,000 hashes, 450 bands × 20",
    },
    Preset {
        name: "gopher",
        shingle: 5,
        values: 9000,
        bands_rows: Some((450, 20)),
        threshold: 0.8,
        source: "an alias of refinedweb: 5-grams, 9,000 hashes, 450 bands × 20",
    },
    Preset {
        name: "the-stack",
        shingle: 5,
        values: 256,
        bands_rows: None,
        threshold: 0.7,
        source: "The Stack (BigCode): 5-grams, 256 permutations, threshold 0.7, optimizer's banding",
    },
];

impl Preset {
    /// Finds a preset by name (ASCII case ignored).
    pub fn named(name: &str) -> Result<&'static Preset, BandingError> {
        PRESETS
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| BandingError::UnknownPreset(name.to_owned()))
    }

    /// The preset's banding for signatures of `values` values, which must be the preset's.
    pub fn banding_for(&self, values: u32) -> Result<Banding, BandingError> {
        if values == self.values {
            Ok(self.banding())
        } else {
            Err(BandingError::PresetValues {
                preset: self.name,
                needs: self.values,
                values,
            })
        }
    }

    /// The preset's banding (the optimizer's, with equal weights, where the preset has none).
    pub fn banding(&self) -> Banding {
        match self.bands_rows {
            Some((b, r)) => Banding::fixed(b, r, self.values).expect("presets are valid"),
            None => optimize(self.threshold, self.values, 0.5, 0.5).expect("presets are valid"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_bandings_use_every_value_and_ranges_tile_the_signature() {
        for values in 1..=64 {
            for bands in 1..=values {
                let b = Banding::even(bands, values).unwrap();
                assert_eq!(b.unused(), 0);
                let mut next = 0;
                for band in 0..bands {
                    let r = b.band_range(band);
                    assert_eq!(r.start, next);
                    assert!(r.len() == b.rows as usize || r.len() == b.rows as usize + 1);
                    next = r.end;
                }
                assert_eq!(next, values as usize);
            }
        }
    }

    #[test]
    fn s_curve_matches_the_closed_form_and_the_fineweb_figures() {
        let fineweb = Preset::named("fineweb").unwrap().banding();
        assert_eq!((fineweb.bands, fineweb.rows, fineweb.unused()), (14, 8, 0));
        // Published FineWeb S-curve: 0.211 / 0.565 / 0.924 at s = 0.6 / 0.7 / 0.8.
        for (s, p) in [(0.6, 0.211), (0.7, 0.565), (0.8, 0.924)] {
            assert!((fineweb.probability(s) - p).abs() < 0.001, "{s}");
        }
        let b = Banding::even(3, 8).unwrap(); // rows 3, 3, 2
        let s: f64 = 0.7;
        let expected = 1.0 - (1.0 - s.powi(3)).powi(2) * (1.0 - s.powi(2));
        assert!((b.probability(s) - expected).abs() < 1e-12);
        assert_eq!(b.probability(0.0), 0.0);
        assert_eq!(b.probability(1.0), 1.0);
    }

    #[test]
    fn optimizer_agrees_with_datasketch_where_bands_divide_k() {
        // datasketch's documented choices: (b, r) = (25, 10) at K = 256, t = 0.7 and (9, 13) at K = 128, t = 0.8
        // (117 of 128 values). Ours may pick a neighbour that uses every value; its cost is never worse.
        for (t, k, b, r) in [(0.7, 256, 25, 10), (0.8, 128, 9, 13), (0.9, 128, 5, 25)] {
            let ours = optimize(t, k, 0.5, 0.5).unwrap();
            let theirs = Banding::fixed(b, r, k).unwrap();
            let cost = |x: &Banding| {
                let (fp, fn_) = x.error_areas(t);
                fp + fn_
            };
            assert!(cost(&ours) <= cost(&theirs) + 1e-9, "{t} {k}: {ours}");
            assert!((ours.bands as i64 - b as i64).abs() <= 2, "{t} {k}: {ours}");
        }
    }

    #[test]
    fn refuses_impossible_bandings() {
        assert!(matches!(
            Banding::fixed(20, 10, 128),
            Err(BandingError::TooFewValues { .. })
        ));
        assert_eq!(Banding::even(0, 8), Err(BandingError::Empty));
        assert!(
            Preset::named("nope")
                .unwrap_err()
                .to_string()
                .contains("known: fineweb")
        );
        assert!(matches!(
            Preset::named("fineweb").unwrap().banding_for(128),
            Err(BandingError::PresetValues { needs: 112, .. })
        ));
        assert!(matches!(
            optimize(1.5, 128, 0.5, 0.5),
            Err(BandingError::Threshold(_))
        ));
        let refined = Preset::named("RefinedWeb").unwrap().banding();
        assert_eq!(refined.unused(), 0);
        assert!((refined.probability(0.8) - 0.995).abs() < 0.001);
    }
}

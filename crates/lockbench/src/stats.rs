//! Small statistics helpers: median, percentiles, min/avg/max, fairness, spread, the
//! distinct values of a list.

use serde::{Deserialize, Serialize};

/// The distinct values of `v`, in order of first appearance.
///
/// ```
/// assert_eq!(lockbench::stats::first_seen([3, 1, 3, 2, 1]), vec![3, 1, 2]);
/// ```
pub fn first_seen<T: PartialEq>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut u = Vec::new();
    for x in v {
        if !u.contains(&x) {
            u.push(x);
        }
    }
    u
}

/// The distinct values of `v`, sorted.
pub fn sorted_distinct<T: Ord>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = v.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Median of `v` (mean of the two middle values for even lengths); `NaN` when empty.
///
/// ```
/// assert_eq!(lockbench::stats::median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(lockbench::stats::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
/// assert!(lockbench::stats::median(&[]).is_nan());
/// ```
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The smallest per-thread count as a share of the mean (1 when empty or
/// all zero): 0 means a thread did nothing while others worked.
///
/// ```
/// assert_eq!(lockbench::stats::min_share(&[5, 10, 15]), 0.5);
/// assert_eq!(lockbench::stats::min_share(&[0, 10]), 0.0);
/// ```
pub fn min_share(v: &[u64]) -> f64 {
    let sum: u64 = v.iter().sum();
    if v.is_empty() || sum == 0 {
        return 1.0;
    }
    let mean = sum as f64 / v.len() as f64;
    *v.iter().min().unwrap() as f64 / mean
}

/// Resamples of the verdict's bootstrap (fixed: the interval must be the same
/// each time a report is read).
const BOOTSTRAP_RESAMPLES: usize = 4000;

/// A 95 % bootstrap confidence interval of a ratio `a / b` of two lock's
/// results over interleaved runs: `(estimate, lo, hi)`.
///
/// With the same number of runs on both sides (interleaved runs: run `i` of
/// each lock ran in the same round), the runs are paired: the estimate is the
/// median of the per-round ratios `a[i] / b[i]` and the resampling draws
/// rounds, so drift of the machine between rounds cancels. Otherwise each side
/// is resampled alone and the estimate is the ratio of the medians. The
/// resampling is seeded from the data, so the interval is reproducible.
///
/// ```
/// // Every round 0.9: the interval is exactly 0.9 however noisy b is.
/// let b = [10.0, 14.0, 7.0, 12.0, 9.0];
/// let a: Vec<f64> = b.iter().map(|x| x * 0.9).collect();
/// let (r, lo, hi) = lockbench::stats::ratio_ci(&a, &b);
/// assert!((r - 0.9).abs() < 1e-12 && (lo - 0.9).abs() < 1e-12 && (hi - 0.9).abs() < 1e-12);
/// ```
pub fn ratio_ci(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let div = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::INFINITY };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for x in a.iter().chain(b) {
        seed = (seed ^ x.to_bits()).wrapping_mul(0x1000_0000_01b3);
    }
    let mut rng = seed | 1;
    let mut below = |n: usize| {
        // xorshift64*.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        (rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    };
    let draw = |v: &[f64], below: &mut dyn FnMut(usize) -> usize| -> Vec<f64> {
        (0..v.len()).map(|_| v[below(v.len())]).collect()
    };
    let paired = a.len() == b.len() && a.len() >= 2;
    let (estimate, mut boot): (f64, Vec<f64>) = if paired {
        let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| div(*x, *y)).collect();
        let boot = (0..BOOTSTRAP_RESAMPLES)
            .map(|_| median(&draw(&r, &mut below)))
            .collect();
        (median(&r), boot)
    } else if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    } else {
        let boot = (0..BOOTSTRAP_RESAMPLES)
            .map(|_| div(median(&draw(a, &mut below)), median(&draw(b, &mut below))))
            .collect();
        (div(median(a), median(b)), boot)
    };
    boot.sort_by(f64::total_cmp);
    let at = |q: f64| boot[((q * boot.len() as f64) as usize).min(boot.len() - 1)];
    (estimate, at(0.025), at(0.975))
}

/// Nearest-rank percentile `p` (0..=100) of an ascending-sorted slice; 0 when empty.
///
/// ```
/// use lockbench::stats::percentile_sorted;
/// let v: Vec<u64> = (1..=1000).collect();
/// let p = |q| percentile_sorted(&v, q);
/// assert_eq!([p(0.0), p(50.0), p(99.0), p(99.9), p(100.0)], [1, 500, 990, 999, 1000]);
/// assert_eq!((percentile_sorted(&[], 50.0), percentile_sorted(&[7], 99.9)), (0, 7));
/// ```
pub fn percentile_sorted(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len();
    // The small epsilon keeps float noise (99.9/100*1000 = 999.0000000001) from
    // bumping an exact rank up by one.
    let rank = ((p / 100.0) * n as f64 - 1e-9).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// Minimum, mean and maximum of per-thread op counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinAvgMax {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub avg: f64,
    /// Largest value.
    pub max: f64,
}

/// Min/avg/max of `v` (all zero when empty).
///
/// ```
/// let m = lockbench::stats::min_avg_max(&[1, 2, 6]);
/// assert_eq!((m.min, m.avg, m.max), (1.0, 3.0, 6.0));
/// assert_eq!(lockbench::stats::min_avg_max(&[]), Default::default());
/// ```
pub fn min_avg_max(v: &[u64]) -> MinAvgMax {
    if v.is_empty() {
        return MinAvgMax::default();
    }
    let min = *v.iter().min().unwrap() as f64;
    let max = *v.iter().max().unwrap() as f64;
    let avg = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    MinAvgMax { min, avg, max }
}

/// Fairness: max/min of per-thread op counts. `None` means infinite (some thread did no
/// op while another did); 1.0 for a single thread or all-zero counts.
///
/// ```
/// use lockbench::stats::fairness;
/// assert_eq!(fairness(&[10, 20]), Some(2.0));
/// assert_eq!(fairness(&[0, 5]), None, "a starved thread is infinite unfairness");
/// assert!([&[0, 0][..], &[], &[42]].iter().all(|v| fairness(v) == Some(1.0)));
/// ```
pub fn fairness(v: &[u64]) -> Option<f64> {
    let (Some(&min), Some(&max)) = (v.iter().min(), v.iter().max()) else {
        return Some(1.0);
    };
    if max == 0 {
        Some(1.0)
    } else if min == 0 {
        None
    } else {
        Some(max as f64 / min as f64)
    }
}

/// Relative spread of repeated measurements: (max − min) / median; 0 for fewer than 2.
///
/// ```
/// assert_eq!(lockbench::stats::spread(&[1.0, 2.0, 3.0]), 1.0);
/// assert_eq!(lockbench::stats::spread(&[3.0]), 0.0);
/// ```
pub fn spread(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    let min = v.iter().cloned().fold(f64::MAX, f64::min);
    let m = median(v);
    if m > 0.0 { (max - min) / m } else { 0.0 }
}

/// Median of optional values where `None` is +infinity (for fairness ratios).
///
/// ```
/// use lockbench::stats::median_opt;
/// assert_eq!(median_opt(&[Some(1.0), None, Some(3.0)]), Some(3.0));
/// assert_eq!(median_opt(&[None, None, Some(3.0)]), None);
/// assert_eq!(median_opt(&[Some(2.0), None, Some(1.0)]), Some(2.0));
/// ```
pub fn median_opt(v: &[Option<f64>]) -> Option<f64> {
    if v.is_empty() {
        return Some(1.0);
    }
    let mut s: Vec<f64> = v.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    s.sort_by(f64::total_cmp);
    let m = median(&s);
    if m.is_finite() { Some(m) } else { None }
}

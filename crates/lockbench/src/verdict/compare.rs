//! klock's sample against a peer's: the ratio with its 95 % bootstrap confidence
//! interval over the interleaved runs ([`crate::stats::ratio_ci`]), and the
//! [`Outcome`] the interval decides.

use super::sample::Sample;

/// Better, same, worse, or not yet decided by the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The confidence interval lies above 1 (and not all within ±5 %).
    Better,
    /// The confidence interval lies within ±[`SAME_MARGIN`].
    Same,
    /// The confidence interval lies below 1 (and not all within ±5 %), or
    /// klock starved a thread or had more than [`TAIL_MAX_X`] the tail.
    Worse,
    /// The interval straddles 1 and reaches past ±5 %: more runs needed.
    Inconclusive,
}

impl Outcome {
    /// `better`, `same`, `worse`, `inconclusive`.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Better => "better",
            Outcome::Same => "same",
            Outcome::Worse => "worse",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// "same" needs the whole confidence interval within 1 ± this.
pub const SAME_MARGIN: f64 = 0.05;

/// Compares a klock sample with a peer's: (ratio, lo, hi, outcome), the ratio
/// with its 95 % bootstrap interval over the runs (see the module docs).
///
/// ```
/// use lockbench::verdict::{Outcome, Sample, compare_samples};
/// let s = |runs: Vec<f64>| Sample {
///     scenario: "x".into(), point: "T=2".into(), order: 2, lock: "l".into(),
///     median: lockbench::stats::median(&runs), runs, higher_better: true,
///     unit: "Mops/s".into(), starves: None, tail_ns: None,
/// };
/// let (r, lo, hi, o) = compare_samples(&s(vec![1.9, 2.0, 2.1]), &s(vec![0.9, 1.0, 1.1]));
/// assert_eq!(o, Outcome::Better);
/// assert!((r - 2.0).abs() < 0.2 && lo > 1.7 && hi < 2.4);
/// // Within 2 % in every round: the same.
/// let (_, _, _, o) = compare_samples(&s(vec![1.01, 1.52, 0.99]), &s(vec![1.0, 1.5, 1.0]));
/// assert_eq!(o, Outcome::Same);
/// // 0.9x in every round, however noisy the peer: worse.
/// let (_, _, _, o) = compare_samples(&s(vec![0.9, 1.8, 0.45]), &s(vec![1.0, 2.0, 0.5]));
/// assert_eq!(o, Outcome::Worse);
/// ```
pub fn compare_samples(k: &Sample, p: &Sample) -> (f64, f64, f64, Outcome) {
    let (r, lo, hi, o, _) = compare_full(k, p);
    (r, lo, hi, o)
}

/// [`compare_samples`] plus, when inconclusive, about how many more runs per
/// lock would decide it (the interval's width shrinks as 1/sqrt(runs)).
pub fn compare_full(k: &Sample, p: &Sample) -> (f64, f64, f64, Outcome, Option<usize>) {
    let one = |s: &Sample| {
        if s.runs.is_empty() {
            vec![s.median]
        } else {
            s.runs.clone()
        }
    };
    let (kr, pr) = (one(k), one(p));
    let (r, lo, hi) = if k.higher_better {
        crate::stats::ratio_ci(&kr, &pr)
    } else {
        // Time per op: the peer's over klock's, so > 1 is still klock better.
        crate::stats::ratio_ci(&pr, &kr)
    };
    let n = kr.len().min(pr.len());
    let m = SAME_MARGIN;
    let outcome = if n < 2 || !(lo.is_finite() && hi.is_finite()) {
        Outcome::Inconclusive
    } else if lo >= 1.0 - m && hi <= 1.0 + m {
        Outcome::Same
    } else if lo > 1.0 {
        Outcome::Better
    } else if hi < 1.0 {
        Outcome::Worse
    } else {
        Outcome::Inconclusive
    };
    let more = (outcome == Outcome::Inconclusive).then(|| {
        // The half-width that would decide: inside ±m around 1 ("same"), or
        // clear of 1 ("better"/"worse"), whichever allows the wider interval.
        let need = (m - (r - 1.0).abs()).max((r - 1.0).abs());
        let half = (hi - lo) / 2.0;
        if n < 2 {
            5usize.saturating_sub(n).max(1)
        } else if need <= 0.0 || !half.is_finite() {
            usize::MAX
        } else {
            let total = (n as f64 * (half / need).powi(2)).ceil() as usize;
            total.saturating_sub(n).max(1)
        }
    });
    (r, lo, hi, outcome, more)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::{has, rec};
    use crate::table::outcome_text;
    use crate::verdict::summary::summarize;
    use crate::verdict::testing::cells_of;

    #[test]
    fn consistently_slower_reads_worse_however_noisy_the_peer() {
        // klock at exactly 0.9x the peer in every round; the peer's own runs
        // vary by 2x, so the runs' min-max ranges overlap (the old rule read
        // "same"). Paired by round, the interval is 0.9..0.9: worse.
        let peer = [4.0, 6.0, 3.0, 5.5, 4.5];
        let k: Vec<f64> = peer.iter().map(|x| x * 0.9).collect();
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &k),
            rec("mutex", "parking_lot", 8, &peer),
        ]);
        assert_eq!(cs[0].outcome, Outcome::Worse, "{:?}", cs[0]);
        assert!((cs[0].ratio - 0.9).abs() < 1e-9);
        // A 0.66x median with scattered rounds is not "same" either.
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &[2.0, 4.5, 2.6, 3.9, 2.2]),
            rec("mutex", "parking_lot", 8, &[4.0, 5.0, 3.5, 4.8, 3.9]),
        ]);
        assert_ne!(cs[0].outcome, Outcome::Same, "{:?}", cs[0]);
    }

    #[test]
    fn noisy_rounds_are_inconclusive_and_say_how_many_more_runs() {
        // Rounds scatter around 1.0 by +-15 %: neither within 5 % nor clear of 1.
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &[1.15, 0.85, 1.1, 0.9, 1.0]),
            rec("mutex", "parking_lot", 8, &[1.0, 1.0, 1.0, 1.0, 1.0]),
        ]);
        let c = &cs[0];
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
        let more = c.more_runs.expect("a number of runs");
        assert!((1..1000).contains(&more), "{more}");
        has(&outcome_text(c), "more runs");
        let sm = summarize(&cs).remove(0);
        assert_eq!(sm.inconclusive, 1);
        has(&sm.detail, "inconclusive");
    }
}

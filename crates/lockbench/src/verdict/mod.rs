//! The verdict: klock's default locks against the best peer measured in the same run.
//!
//! For every case (a workload at one thread count) in which a klock default lock
//! ([`FAMILIES`]) was measured, the verdict picks the best *eligible peer* (a lock
//! that is not klock's, of the same kind) by its median, and reports the ratio klock /
//! best peer (> 1: klock is better) with a 95 % bootstrap confidence interval over the
//! interleaved runs ([`crate::stats::ratio_ci`]) and the [`Outcome`] it decides.
//!
//! Fairness and tail latency are part of the verdict, not footnotes: a lock that
//! starved a thread ([`STARVED_MIN_AVG`]; glibc's default rwlock starves writers) or
//! whose p99.9 is over [`TAIL_MAX_X`] the best eligible peer's is never the pick; when
//! klock is such a lock its row reads **worse**, saying why ([`Cell::note`]).
//! [`summarize`] turns a family's cases into one sentence naming the lock to pick.

pub mod cells;
pub mod compare;
pub mod family;
pub mod sample;
pub mod summary;

pub use cells::{Cell, TAIL_MAX_X, cells};
pub use compare::{Outcome, SAME_MARGIN, compare_full, compare_samples};
pub use family::{
    FAMILIES, Family, SPINNING_PEERS, family_of_default, family_of_variant, is_klock,
    is_spinning_peer,
};
pub use sample::{STARVED_MIN_AVG, Sample, point_of, samples, scenario_of};
pub use summary::{MORE_RUNS_SHOWN, Summary, summarize};

/// How to read the verdict, one line.
pub const LEGEND: &str = "klock vs peer > 1 means klock is better (throughput ratio; for ns/op and times, peer / klock), \
     the median of the per-round ratios with its 95 % bootstrap confidence interval over the interleaved runs. \
     same: the interval lies within ±5 %; better / worse: it lies above / below 1; inconclusive: neither (more runs would decide). \
     A lock that starved a thread (under 10 % of the mean in a run) or whose p99.9 is over 2x the best peer's is never the pick; klock's row then reads worse.";

/// Records and samples the tests of the verdict's parts share.
#[cfg(test)]
mod testing {
    use super::*;
    use crate::record::Record;
    use crate::record::Report;
    use crate::record::testing::{rec, report, uncontended};

    pub fn cells_of(recs: Vec<Record>) -> Vec<Cell> {
        cells(&samples(&report(recs)))
    }

    /// A synthetic report: klock_mutex clearly ahead at T=8, tied at T=2, behind at
    /// T=1; klock_tas_park clearly ahead everywhere; an rwlock case; uncontended ns/op.
    pub fn synthetic() -> Report {
        let mut results = vec![
            rec("mutex", "klock_mutex", 1, &[3.0, 3.1, 3.2]),
            rec("mutex", "std", 1, &[3.5, 3.6, 3.7]),
            rec("mutex", "parking_lot", 1, &[3.3, 3.4, 3.5]),
            rec("mutex", "klock_tas_park", 1, &[4.0, 4.1, 4.2]),
            rec("mutex", "klock_pvqspin", 1, &[9.0, 9.0, 9.0]),
            rec("mutex", "klock_mutex", 2, &[2.0, 2.2, 2.4]),
            rec("mutex", "std", 2, &[2.1, 2.3, 2.5]),
            rec("mutex", "klock_tas_park", 2, &[3.0, 3.0, 3.0]),
            rec("mutex", "klock_mutex", 8, &[4.0, 4.2, 4.4]),
            rec("mutex", "std", 8, &[1.0, 1.1, 1.2]),
            rec("mutex", "parking_lot", 8, &[2.0, 2.1, 2.2]),
            rec("mutex", "std_rw", 8, &[50.0, 50.0, 50.0]),
            rec("mutex", "ticket", 8, &[2.5, 2.5, 2.5]),
            rec("mutex", "klock_tas_park", 8, &[3.0, 3.0, 3.1]),
            rec("rwlock", "klock_rwlock_batched", 4, &[5.0, 5.0, 5.0]),
            rec("rwlock", "std_rw", 4, &[1.0, 1.0, 1.0]),
            rec("rwlock", "std", 4, &[50.0, 50.0, 50.0]),
        ];
        for (lock, ns) in [("klock_mutex", 10.0), ("std", 20.0), ("parking_lot", 12.0)] {
            results.push(uncontended(lock, ns));
        }
        report(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::LockKind;

    /// The ruler (issue 31): these values decide every verdict row. Changing
    /// one is a ruler change, made only in a commit of its own that shows the
    /// verdict before and after on unchanged locks (docs/report.md, "The
    /// ruler is frozen"); this test makes such a change deliberate. Variants
    /// may be added to a family: they are never peers and never the klock
    /// side. The quick suite's settings are pinned by
    /// `exp::report::tests::quick_plan_covers_klocks_conditions`.
    #[test]
    fn the_ruler_is_frozen() {
        assert_eq!((SAME_MARGIN, STARVED_MIN_AVG, TAIL_MAX_X), (0.05, 0.1, 2.0));
        assert_eq!(SPINNING_PEERS, ["pthread_spin", "ttas", "ticket", "mcs"]);
        let fams: Vec<_> = (FAMILIES.iter())
            .map(|f| (f.name, f.default, f.kind, f.spinning_peers))
            .collect();
        assert_eq!(
            fams,
            [
                ("SpinLock", "klock_tas_park", Some(LockKind::Mutex), true),
                ("Mutex", "klock_mutex", Some(LockKind::Mutex), false),
                (
                    "RwLock",
                    "klock_rwlock_batched",
                    Some(LockKind::RwLock),
                    false
                ),
                ("preload", "klock_preload", None, true),
            ]
        );
    }
}

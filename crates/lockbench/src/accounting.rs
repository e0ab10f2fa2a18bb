//! Per-operation accounting of a record (context switches, CPU, futex and
//! `sched_yield` calls per op, klock's own event counters) and each thread's worst
//! gap. The runner measures ([`crate::runner`], [`crate::syscount`]); this module
//! turns a configuration's kept runs into the record's fields. The tables lay them
//! out ([`crate::table`]), `--explain` prints them ([`crate::explain`]). How to read
//! them: `docs/report.md`, "Per-operation accounting".

use std::collections::BTreeMap;

use crate::record::{PerOp, WorstWait};
use crate::runner::RunOutput;
use crate::stats::median;

/// The accounting of these kept runs: medians over runs of per-op figures, and
/// the first reason the syscall counters were unavailable, if any run lacked them.
pub fn per_op(kept: &[RunOutput]) -> (Option<PerOp>, Option<String>) {
    per_op_by(kept, |o| Counted {
        ops: o.total_ops_final,
        usage: o.usage,
        syscalls: o.syscalls,
        unavailable: o.syscalls_unavailable.as_deref(),
    })
}

/// What one run of any experiment counted, for [`per_op_by`].
pub struct Counted<'a> {
    /// Operations including the drain (the denominator).
    pub ops: u64,
    /// The workers' CPU time and context switches, summed.
    pub usage: crate::sys::Usage,
    /// The workers' syscall counts over the same span, if counted.
    pub syscalls: Option<crate::syscount::SysCounts>,
    /// Why they were not.
    pub unavailable: Option<&'a str>,
}

/// [`per_op`] of runs of any kind (the contended runner's, the condvar
/// hand-off's), each described by `f`.
pub fn per_op_by<T>(
    kept: &[T],
    f: impl for<'a> Fn(&'a T) -> Counted<'a>,
) -> (Option<PerOp>, Option<String>) {
    if kept.is_empty() {
        return (None, None);
    }
    let per = |g: &dyn Fn(&Counted) -> f64| {
        median(
            &(kept.iter())
                .map(|o| {
                    let c = f(o);
                    g(&c) / c.ops.max(1) as f64
                })
                .collect::<Vec<_>>(),
        )
    };
    let why = kept
        .iter()
        .find_map(|o| f(o).unavailable.map(str::to_string));
    let counted = why.is_none() && kept.iter().all(|o| f(o).syscalls.is_some());
    let sys = |g: fn(&crate::syscount::SysCounts) -> u64| {
        counted.then(|| per(&|c| c.syscalls.as_ref().map_or(0, g) as f64))
    };
    let p = PerOp {
        cpu_ns: per(&|c| c.usage.cpu_ns as f64),
        csw_voluntary: per(&|c| c.usage.nvcsw as f64),
        csw_involuntary: per(&|c| c.usage.nivcsw as f64),
        futex: sys(|c| c.futex),
        sched_yield: sys(|c| c.sched_yield),
    };
    (Some(p), why)
}

/// The worst thread's worst gap: median over runs of each run's, the largest over
/// all runs and that thread's index.
pub fn worst_wait(kept: &[RunOutput]) -> Option<WorstWait> {
    let per_run: Vec<(u64, usize)> = (kept.iter())
        .filter_map(|o| {
            let (i, ns) = o.worst_gap_ns.iter().enumerate().max_by_key(|p| *p.1)?;
            Some((*ns, i))
        })
        .collect();
    let &(max_ns, thread) = per_run.iter().max_by_key(|p| p.0)?;
    let ns = median(&per_run.iter().map(|p| p.0 as f64).collect::<Vec<_>>()) as u64;
    Some(WorstWait { ns, max_ns, thread })
}

/// klock's event counters per op, median over runs, for the events that occurred
/// (empty without `--features stats`). `events[i]` is the delta around `kept[i]`.
pub fn klock_events(kept: &[RunOutput], events: &[klock::stat::Snapshot]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if !klock::stat::ENABLED || events.len() != kept.len() {
        return out;
    }
    for &e in klock::stat::Event::ALL {
        let v: Vec<f64> = (kept.iter().zip(events))
            .map(|(o, s)| s.get(e) as f64 / o.total_ops_final.max(1) as f64)
            .collect();
        if v.iter().any(|&x| x > 0.0) {
            out.insert(e.name().to_string(), median(&v));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::syscount::SysCounts;

    /// A run with `ops` operations, `nvcsw` sleeps, syscall counts (or none) and
    /// per-thread worst gaps (shared with `explain`'s tests).
    pub(crate) fn run(ops: u64, nvcsw: u64, sys: Option<(u64, u64)>, gaps: &[u64]) -> RunOutput {
        let mut o = RunOutput {
            total_ops_final: ops,
            syscalls: sys.map(|(futex, sched_yield)| SysCounts { futex, sched_yield }),
            syscalls_unavailable: sys.is_none().then(|| "refused".to_string()),
            worst_gap_ns: gaps.to_vec(),
            ..RunOutput::default()
        };
        o.usage.nvcsw = nvcsw;
        o.usage.cpu_ns = ops * 300;
        o
    }

    #[test]
    fn per_op_divides_by_all_ops_and_takes_the_median_over_runs() {
        let kept = [
            run(1000, 10, Some((20, 0)), &[5, 9]),
            run(1000, 30, Some((40, 1)), &[7, 3]),
            run(1000, 50, Some((60, 2)), &[100, 8]),
        ];
        let (p, why) = per_op(&kept);
        let p = p.unwrap();
        assert_eq!(why, None);
        assert_eq!((p.cpu_ns, p.csw_voluntary), (300.0, 0.03));
        assert_eq!((p.futex, p.sched_yield), (Some(0.04), Some(0.001)));
        let w = worst_wait(&kept).unwrap();
        assert_eq!((w.ns, w.max_ns, w.thread), (9, 100, 0));
    }
}

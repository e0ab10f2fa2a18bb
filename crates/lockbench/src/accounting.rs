//! Per-operation accounting of a record (context switches, CPU, futex and
//! `sched_yield` calls per op, klock's own event counters), each thread's worst gap,
//! and `--explain`'s text. The runner measures ([`crate::runner`],
//! [`crate::syscount`]); this module turns a configuration's kept runs into the
//! record's fields and lays them out. How to read them: `docs/report.md`,
//! "Per-operation accounting".

use std::collections::BTreeMap;

use crate::record::{PerOp, Record, Report, WorstWait};
use crate::runner::RunOutput;
use crate::stats::median;
use crate::table::Table;

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

/// A per-op figure with two significant digits (`0` for none, `-` for unknown).
///
/// ```
/// use lockbench::accounting::fmt_per_op;
/// assert_eq!(fmt_per_op(Some(0.0)), "0");
/// assert_eq!(fmt_per_op(Some(0.0123)), "0.012");
/// assert_eq!(fmt_per_op(Some(2.345)), "2.35");
/// assert_eq!(fmt_per_op(Some(1234.5)), "1234");
/// assert_eq!(fmt_per_op(None), "-");
/// ```
pub fn fmt_per_op(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) if x.abs() >= 100.0 => format!("{}", x.trunc() as i64),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => {
            let d = ((-x.abs().log10()).floor() as usize + 2).min(9);
            format!("{x:.d$}")
        }
    }
}

/// The accounting cell of a record: `CPU ns / vol csw / invol csw / futex / yield`
/// per op (`-` for a record written before the accounting existed).
pub fn cell(r: &Record) -> String {
    let Some(p) = r.per_op else {
        return "-".into();
    };
    format!(
        "{} / {} / {} / {} / {}",
        fmt_per_op(Some(p.cpu_ns)),
        fmt_per_op(Some(p.csw_voluntary)),
        fmt_per_op(Some(p.csw_involuntary)),
        fmt_per_op(p.futex),
        fmt_per_op(p.sched_yield)
    )
}

/// The heading of the accounting cells.
pub const CELL_HEAD: &str =
    "per op: CPU ns / voluntary csw / involuntary csw / futex calls / sched_yield calls";

/// A worst-wait cell: `1.2 ms (thread 3)`, `-` when not recorded.
pub fn worst_cell(r: &Record) -> String {
    r.worst_wait.map_or_else(
        || "-".into(),
        |w| {
            format!(
                "{} (max {} t{})",
                crate::table::fmt_ns(w.ns),
                crate::table::fmt_ns(w.max_ns),
                w.thread
            )
        },
    )
}

/// The report's one line on unavailable syscall counters (empty when every record
/// has them): `futex/yield counts unavailable: <reason>`.
pub fn unavailable_note(report: &Report) -> String {
    match report
        .results
        .iter()
        .find_map(|r| r.syscalls_unavailable.as_ref())
    {
        Some(why) => format!("\nfutex/yield counts unavailable: {why}\n"),
        None => String::new(),
    }
}

/// `--explain`: one table per series with every record's accounting, the sampled
/// p99.9 beside the worst wait, klock's event counters where compiled in, and how
/// to read it.
pub fn explain(report: &Report) -> String {
    let mut s = String::from("\n## Explain: what one operation cost (per op, median over runs)\n");
    s.push_str(&unavailable_note(report));
    for se in crate::table::series(report) {
        if se.recs.iter().all(|r| r.per_op.is_none()) {
            continue;
        }
        s.push_str(&explain_table(&se).to_text());
    }
    s.push_str(EXPLAIN_LEGEND);
    if !klock::stat::ENABLED {
        s.push_str(
            "klock's own slow-path counters: build with --features stats to see them here.\n",
        );
    }
    s
}

fn explain_table(se: &crate::table::Series) -> Table {
    let mut t = Table::new(
        format!("{}: accounting", se.title),
        &[
            "lock",
            "T",
            "Mops/s",
            "CPU ns",
            "vol csw",
            "invol csw",
            "futex",
            "yield",
            "p99.9 (1/64)",
            "worst wait (median, max, thread)",
            "klock events",
        ],
    );
    let mut recs = se.recs.clone();
    recs.sort_by_key(|r| r.threads);
    for r in recs {
        let p = r.per_op.unwrap_or_default();
        let ok = r.per_op.is_some();
        let f = |v: Option<f64>| fmt_per_op(v.filter(|_| ok));
        t.rows.push(vec![
            r.lock.clone(),
            match (&r.readers, &r.writers) {
                (Some(rd), Some(wr)) => format!("{}+{}", rd.threads, wr.threads),
                _ => r.threads.to_string(),
            },
            crate::table::fmt_mops(r.throughput_mops),
            f(Some(p.cpu_ns)),
            f(Some(p.csw_voluntary)),
            f(Some(p.csw_involuntary)),
            f(p.futex),
            f(p.sched_yield),
            crate::table::fmt_ns(r.latency_ns.p999),
            worst_cell(r),
            events_cell(&r.klock_events_per_op),
        ]);
    }
    t
}

/// The slow-path events of a klock record, largest first (at most 6; `-` if none).
fn events_cell(ev: &BTreeMap<String, f64>) -> String {
    if ev.is_empty() {
        return "-".into();
    }
    // Slow-path events only: not the fast paths, not the nanosecond sums.
    let slow = |k: &str| !k.ends_with("_ns") && !k.contains("fast");
    let mut v: Vec<(&String, &f64)> = ev.iter().filter(|(k, _)| slow(k)).collect();
    v.sort_by(|a, b| b.1.total_cmp(a.1));
    let parts: Vec<String> = (v.iter().take(6))
        .map(|(k, x)| format!("{k} {}", fmt_per_op(Some(**x))))
        .collect();
    if parts.is_empty() {
        return "-".into();
    }
    parts.join(", ")
}

const EXPLAIN_LEGEND: &str = "
How to read it: every figure is per operation (one lock + critical section +
unlock), summed over the worker threads and divided by all their ops. CPU ns above
the op's own work means spinning or kernel time; voluntary csw = the thread
blocked (a futex wait that slept); involuntary csw = it was preempted; futex calls
count waits and wakes alike, sched_yield calls a lock's yielding. The p99.9 is
sampled (1 acquisition in 64); the worst wait covers every op: the longest a thread
went between finishing one op and finishing the next (see docs/lockbench.md).
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::{has, rec, report};
    use crate::syscount::SysCounts;

    fn run(ops: u64, nvcsw: u64, sys: Option<(u64, u64)>, gaps: &[u64]) -> RunOutput {
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

    #[test]
    fn one_run_without_counters_makes_the_counts_unknown_not_zero() {
        let kept = [
            run(1000, 10, Some((20, 0)), &[1]),
            run(1000, 10, None, &[1]),
        ];
        let (p, why) = per_op(&kept);
        let p = p.unwrap();
        assert_eq!((p.futex, p.sched_yield), (None, None));
        assert_eq!(why.as_deref(), Some("refused"));
        let mut r = rec("mutex", "std", 2, &[1.0]);
        r.per_op = Some(p);
        r.syscalls_unavailable = why;
        assert!(cell(&r).ends_with(" / - / -"), "{}", cell(&r));
        let rep = report(vec![r]);
        has(
            &unavailable_note(&rep),
            "futex/yield counts unavailable: refused",
        );
        let text = crate::table::render_with(&rep, &[], &[], false);
        assert_eq!(
            text.matches("futex/yield counts unavailable").count(),
            1,
            "{text}"
        );
        has(&explain(&rep), "| std  | 2 |");
    }

    #[test]
    fn records_without_accounting_show_no_accounting_tables() {
        let rep = report(vec![rec("mutex", "std", 2, &[1.0])]);
        let text = crate::table::render_with(&rep, &[], &[], false);
        assert!(!text.contains("futex calls"), "{text}");
        assert_eq!(unavailable_note(&rep), "");
    }
}

//! `lockbench mutex|rwlock --explain`: what one operation cost per lock (the
//! accounting of [`crate::accounting`], laid out by [`crate::table`]), the sampled
//! p99.9 beside the worst wait, klock's slow-path events where compiled in, and how
//! to read it.

use std::collections::BTreeMap;

use crate::record::Report;
use crate::table::{Table, fmt_per_op, unavailable_note, worst_cell};

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
    use crate::accounting::per_op;
    use crate::accounting::tests::run;
    use crate::record::testing::{has, rec, report};
    use crate::table::cell;

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

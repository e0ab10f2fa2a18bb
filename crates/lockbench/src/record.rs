//! The result record (one per experiment × lock × threads × parameters), the report
//! file format, and JSON/CSV writers.
//!
//! JSON has no infinity: a fairness ratio that is infinite (a thread did zero ops while
//! another did some) is encoded as `null`. `ceiling_fraction` is `null` when no
//! single-thread reference exists (e.g. the uncontended experiment).

use serde::{Deserialize, Serialize};

use crate::stats::MinAvgMax;
use crate::sys::Machine;

/// Sampled acquisition latency, nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
    /// Number of samples behind these figures (all runs).
    pub samples: u64,
}

/// What one operation cost besides its time, summed over the workers of a run and
/// divided by its ops (including the drain), median over runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerOp {
    /// Worker CPU time (user + system), ns.
    pub cpu_ns: f64,
    /// Voluntary context switches (the thread blocked: futex wait, sleep).
    pub csw_voluntary: f64,
    /// Involuntary context switches (the thread was preempted).
    pub csw_involuntary: f64,
    /// futex calls (futex(2) and futex2); `null` when the counters were unavailable.
    pub futex: Option<f64>,
    /// sched_yield calls; `null` when the counters were unavailable.
    pub sched_yield: Option<f64>,
}

/// Each thread's worst gap over every op (see docs/lockbench.md, "worst wait"), the
/// worst thread's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorstWait {
    /// Median over runs of the run's worst thread's worst gap, ns.
    pub ns: u64,
    /// The largest worst gap of any thread in any run, ns.
    pub max_ns: u64,
    /// Index of the thread that had `max_ns` (thread order, readers first).
    pub thread: usize,
}

/// Per-class metrics of a reader/writer run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassMetrics {
    /// Threads of this class.
    pub threads: usize,
    /// Median throughput of this class, Mops/s.
    pub throughput_mops: f64,
    /// Per-thread ops min/avg/max (the median run).
    pub ops_per_thread: MinAvgMax,
    /// Per-thread max/min ratio (median over runs); `null` = infinite.
    pub fairness_max_min: Option<f64>,
    /// Sampled acquisition latency.
    pub latency_ns: Latency,
    /// Share of all ops done by this class (median run), 0..1.
    pub share_of_ops: f64,
}

/// Workload parameters of a record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Preset name (`balanced`, `hot`, `long`, `sleep`, or `custom`).
    pub workload: String,
    /// Requested critical-section work, ns.
    pub cs_ns: f64,
    /// Requested work outside the critical section, ns.
    pub ncs_ns: f64,
    /// Sleep inside the critical section, µs (0 = none).
    pub cs_sleep_us: f64,
    /// Calibrated CS work actually configured, ns (iterations × ns/iter).
    pub cs_work_ns: f64,
    /// Measurement window per run, seconds.
    pub duration_s: f64,
    /// Noise (CPU hog) threads.
    pub noise: usize,
    /// The CPU quota (in CPUs) the run had under `--quota`; `null` without.
    pub quota_cpus: Option<f64>,
}

/// One result row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Experiment name (`mutex`, `rwlock`, `uncontended`, ...).
    pub experiment: String,
    /// Competitor name.
    pub lock: String,
    /// Total worker threads.
    pub threads: usize,
    /// Workload parameters.
    pub params: Params,
    /// A single-thread reference run added only to compute the ceiling.
    pub implicit: bool,
    /// Median total throughput, Mops/s.
    pub throughput_mops: f64,
    /// Throughput of every kept run, Mops/s.
    pub runs_mops: Vec<f64>,
    /// (max − min) / median of `runs_mops`.
    pub spread: f64,
    /// Per-thread ops min/avg/max (the median run).
    pub ops_per_thread: MinAvgMax,
    /// Per-thread ops of the median run, thread order (readers first).
    pub per_thread_ops: Vec<u64>,
    /// Per-thread max/min ratio (median over runs); `null` = infinite (a starved thread).
    pub fairness_max_min: Option<f64>,
    /// The smallest share of the mean over all threads that any one thread
    /// had in any run (its ops / the mean; 0 = a thread did nothing in a run).
    /// `null` in reports written before it was recorded.
    pub min_thread_share: Option<f64>,
    /// Throughput / ideal (see docs/lockbench.md); `null` if not applicable.
    pub ceiling_fraction: Option<f64>,
    /// Sampled acquisition latency (percentiles: median over runs; max: over all runs).
    pub latency_ns: Latency,
    /// Worker CPU time per op, ns (median over runs).
    pub cpu_ns_per_op: f64,
    /// Voluntary context switches of the workers per run (median).
    pub csw_voluntary: u64,
    /// Involuntary context switches of the workers per run (median).
    pub csw_involuntary: u64,
    /// Per-operation accounting; `null` in reports written before it was recorded.
    #[serde(default)]
    pub per_op: Option<PerOp>,
    /// Why `per_op.futex` and `per_op.sched_yield` are `null` (the syscall counters
    /// could not be opened); `null` when they were counted.
    #[serde(default)]
    pub syscalls_unavailable: Option<String>,
    /// Each thread's worst gap over every op, beside the sampled percentiles; `null`
    /// in reports written before it was recorded.
    #[serde(default)]
    pub worst_wait: Option<WorstWait>,
    /// klock's own event counters per op (`--features stats` builds only; events
    /// that occurred, median over runs; process-wide during the run).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub klock_events_per_op: std::collections::BTreeMap<String, f64>,
    /// Steal time during kept runs, ms (sum).
    pub steal_ms: u64,
    /// Mutual-exclusion violations summed over every executed run (also discarded
    /// ones): lost/extra updates plus torn reads. Anything but 0 is a bug in the lock.
    pub violations: u64,
    /// Whether any run collapsed (workers failed to drain within the timeout).
    pub collapsed: bool,
    /// Number of collapsed runs.
    pub collapsed_runs: usize,
    /// Longest drain after the stop flag, ms.
    pub drain_ms_max: f64,
    /// Kept runs.
    pub runs: usize,
    /// Runs discarded because of foreign CPU use (then retried).
    pub discarded_runs: usize,
    /// Kept runs during which the idle gate still saw foreign CPU use after all retries,
    /// or which started without reaching quiet.
    pub gate_flagged_runs: usize,
    /// Uncontended lock+unlock cost, ns/op (the `uncontended` experiment only).
    pub uncontended_ns_per_op: Option<f64>,
    /// Reader metrics (reader/writer experiments only).
    pub readers: Option<ClassMetrics>,
    /// Writer metrics (reader/writer experiments only).
    pub writers: Option<ClassMetrics>,
}

/// A whole report file: machine plus records.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Where it was measured.
    pub machine: Machine,
    /// The command line that produced it.
    pub command: String,
    /// Result rows.
    pub results: Vec<Record>,
}

impl Report {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }
    /// Parses JSON produced by [`Report::to_json`].
    pub fn from_json(s: &str) -> Result<Report, serde_json::Error> {
        serde_json::from_str(s)
    }
    /// Total violations over all records.
    pub fn violations(&self) -> u64 {
        self.results.iter().map(|r| r.violations).sum()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "inf".into())
}

/// CSV: one line per record, flat columns (`inf` for an infinite fairness ratio).
pub fn to_csv(records: &[Record]) -> String {
    let mut s = String::from(
        "experiment,lock,threads,readers,writers,workload,cs_ns,ncs_ns,cs_sleep_us,duration_s,noise,implicit,\
         throughput_mops,spread,ops_min,ops_avg,ops_max,fairness_max_min,ceiling_fraction,\
         lat_p50_ns,lat_p99_ns,lat_p999_ns,lat_max_ns,cpu_ns_per_op,csw_voluntary,csw_involuntary,\
         steal_ms,violations,collapsed,runs,discarded_runs,gate_flagged_runs,uncontended_ns_per_op,\
         reader_mops,writer_mops,csw_voluntary_per_op,csw_involuntary_per_op,\
         futex_per_op,sched_yield_per_op,worst_wait_ns,worst_wait_max_ns,worst_wait_thread\n",
    );
    for r in records {
        let p = &r.params;
        let cls = |c: &Option<ClassMetrics>| c.as_ref().map(|c| c.threads).unwrap_or(0);
        let mops = |c: &Option<ClassMetrics>| {
            c.as_ref()
                .map(|c| format!("{:.4}", c.throughput_mops))
                .unwrap_or_default()
        };
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{:.4},{},{:.1},{},{},{},{},{},{},{},{:.2},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.experiment,
            r.lock,
            r.threads,
            cls(&r.readers),
            r.writers.as_ref().map(|c| c.threads).unwrap_or(r.threads),
            p.workload,
            p.cs_ns,
            p.ncs_ns,
            p.cs_sleep_us,
            p.duration_s,
            p.noise,
            r.implicit,
            r.throughput_mops,
            r.spread,
            r.ops_per_thread.min,
            r.ops_per_thread.avg,
            r.ops_per_thread.max,
            opt(r.fairness_max_min),
            r.ceiling_fraction.map(|x| format!("{x:.4}")).unwrap_or_default(),
            r.latency_ns.p50,
            r.latency_ns.p99,
            r.latency_ns.p999,
            r.latency_ns.max,
            r.cpu_ns_per_op,
            r.csw_voluntary,
            r.csw_involuntary,
            r.steal_ms,
            r.violations,
            r.collapsed,
            r.runs,
            r.discarded_runs,
            r.gate_flagged_runs,
            r.uncontended_ns_per_op.map(|x| format!("{x:.3}")).unwrap_or_default(),
            mops(&r.readers),
            mops(&r.writers),
        ));
        s.pop();
        s.push_str(&accounting_csv(r));
        s.push('\n');
    }
    s
}

/// The accounting columns of a CSV line (leading comma; empty cells where unknown).
fn accounting_csv(r: &Record) -> String {
    let f = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
    let p = r.per_op;
    let w = r.worst_wait;
    let u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    format!(
        ",{},{},{},{},{},{},{}",
        f(p.map(|p| p.csw_voluntary)),
        f(p.map(|p| p.csw_involuntary)),
        f(p.and_then(|p| p.futex)),
        f(p.and_then(|p| p.sched_yield)),
        u(w.map(|w| w.ns)),
        u(w.map(|w| w.max_ns)),
        u(w.map(|w| w.thread as u64)),
    )
}

/// Records and checks the unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A `balanced` record of `exp` for `lock` at `t` threads: these runs, the
    /// middle one (the upper of the two for an even count) as the median.
    pub fn rec(exp: &str, lock: &str, t: usize, runs: &[f64]) -> Record {
        let mut v = runs.to_vec();
        v.sort_by(f64::total_cmp);
        Record {
            experiment: exp.into(),
            lock: lock.into(),
            threads: t,
            params: Params {
                workload: "balanced".into(),
                ..Params::default()
            },
            throughput_mops: v[v.len() / 2],
            runs_mops: runs.to_vec(),
            runs: runs.len(),
            ..Record::default()
        }
    }

    /// An `uncontended` record of `lock` at `ns` per op (runs within 1 %).
    pub fn uncontended(lock: &str, ns: f64) -> Record {
        let mops = 1e3 / ns;
        Record {
            experiment: "uncontended".into(),
            lock: lock.into(),
            threads: 1,
            params: Params {
                workload: "uncontended".into(),
                ..Params::default()
            },
            throughput_mops: mops,
            runs_mops: vec![mops * 0.99, mops, mops * 1.01],
            uncontended_ns_per_op: Some(ns),
            ..Record::default()
        }
    }

    /// A report of these records.
    pub fn report(results: Vec<Record>) -> Report {
        Report {
            results,
            ..Report::default()
        }
    }

    /// Asserts that `text` contains `part`, showing the text if not.
    pub fn has(text: &str, part: &str) {
        assert!(text.contains(part), "{part:?} not in:\n{text}");
    }
}

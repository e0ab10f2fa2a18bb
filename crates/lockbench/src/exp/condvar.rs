//! `lockbench condvar`: a producer/consumer hand-off through a bounded queue guarded
//! by a mutex, consumers waiting on a condition variable while it is empty
//! ([`super::handoff`]): klock's `Mutex` + `Condvar` against std's, parking_lot's
//! and glibc's pairs. Items per second, fairness over every thread, the sampled
//! hand-off latency (push call to pop return), CPU and context switches; every run
//! checks that each item produced was consumed exactly once.
//!
//! The records use the mutex names (`klock_mutex`, `std`, `parking_lot`,
//! `pthread`), so the verdict reads them as rows of the Mutex family
//! (`condvar handoff T=4`).

use std::time::Duration;

use super::handoff::{self, HandOutput, HandSpec};
use super::{CliError, RunArgs, Schedule, Step, ThreadList, interleave};
use crate::gate::GateConfig;
use crate::record::{Latency, Params, Record, Report};
use crate::stats::{fairness, median, median_opt, min_avg_max, percentile_sorted, spread};
use crate::sys::Machine;

/// One pair's run function.
pub type RunFn = fn(&HandSpec) -> HandOutput;

/// The competitors: lockbench name (the mutex's), run function.
pub const PAIRS: &[(&str, RunFn)] = &[
    ("klock_mutex", handoff::run::<handoff::KlockPair>),
    ("std", handoff::run::<handoff::StdPair>),
    ("parking_lot", handoff::run::<handoff::ParkingLotPair>),
    ("pthread", handoff::run::<handoff::PthreadPair>),
];

/// Arguments of `lockbench condvar`.
#[derive(clap::Args, Clone, Debug)]
pub struct CondvarArgs {
    /// Comma-separated pairs: klock_mutex (klock::Mutex + klock::Condvar), std,
    /// parking_lot, pthread (pthread_mutex_t + pthread_cond_t); default: all.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    /// Comma-separated N per configuration: N producers + N consumers (each 1..=512).
    #[arg(long, value_parser = parse_pairs, default_value = "1,2,8")]
    pub pairs: ThreadList,
    /// Queue capacity, items (1..=65536).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub capacity: u32,
    /// Work a producer spends making an item, outside the lock, ns (0..=1e6).
    #[arg(long, default_value_t = 200.0, value_parser = parse_work, allow_hyphen_values = true)]
    pub produce_ns: f64,
    /// Work a consumer spends on an item, outside the lock, ns (0..=1e6).
    #[arg(long, default_value_t = 100.0, value_parser = parse_work, allow_hyphen_values = true)]
    pub consume_ns: f64,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
}

/// Parses `--pairs`: comma-separated counts 1..=512.
///
/// ```
/// assert_eq!(lockbench::exp::condvar::parse_pairs("1,4").unwrap().0, vec![1, 4]);
/// assert!(lockbench::exp::condvar::parse_pairs("0").unwrap_err().contains("1..=512"));
/// ```
pub fn parse_pairs(s: &str) -> Result<ThreadList, String> {
    let allowed =
        "allowed are comma-separated integers 1..=512 (N producers + N consumers), e.g. 1,2,8";
    super::parse_counts(s, 512, "pair", allowed)
}

/// Parses `--produce-ns` / `--consume-ns`: a number of ns 0..=1e6.
pub fn parse_work(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e6).contains(&v) => Ok(v),
        _ => Err(format!(
            "bad work '{s}': allowed is a number of ns 0..=1000000, e.g. 200"
        )),
    }
}

/// The workload name: `handoff`, or `handoff+custom` when the work or the capacity
/// differ from the defaults.
fn workload(a: &CondvarArgs) -> String {
    let default = a.capacity == 16 && a.produce_ns == 200.0 && a.consume_ns == 100.0;
    if default {
        "handoff".into()
    } else {
        format!("handoff+custom q{}", a.capacity)
    }
}

/// One configuration: a pair at N producers + N consumers.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Lockbench name.
    pub name: &'static str,
    /// Its run function.
    pub run: RunFn,
    /// N.
    pub pairs: usize,
}

/// The configurations: `--locks` × `--pairs`.
pub fn points(a: &CondvarArgs) -> Result<Vec<Point>, CliError> {
    let names = if a.locks.is_empty() {
        PAIRS.iter().map(|p| p.0.to_string()).collect()
    } else {
        a.locks.clone()
    };
    let chosen = super::pick(&names, PAIRS, "condvar pair")?;
    Ok((a.pairs.0.iter())
        .flat_map(|&n| {
            chosen.iter().map(move |&(name, run)| Point {
                name,
                run,
                pairs: n,
            })
        })
        .collect())
}

fn spec(a: &CondvarArgs, n: usize) -> HandSpec {
    let cal = crate::work::calibration();
    HandSpec {
        producers: n,
        consumers: n,
        capacity: a.capacity as usize,
        produce_iters: cal.iters_for(a.produce_ns),
        consume_iters: cal.iters_for(a.consume_ns),
        duration: a.run.window(),
        drain_timeout: Duration::from_secs(3),
    }
}

/// Planned progress units.
pub fn planned_units(a: &CondvarArgs) -> u64 {
    let n = points(a).map_or(0, |p| p.len()) as u64;
    n * a.run.runs as u64 * crate::progress::run_units(a.run.window())
}

/// Runs every point `--runs` times, interleaved and behind `gate` (polluted runs
/// are retried like the mutex experiment's), and returns one record per point.
pub fn measure(
    a: &CondvarArgs,
    gate: GateConfig,
    machine: &mut Machine,
) -> Result<Vec<Record>, CliError> {
    let pts = points(a)?;
    let prog = a.run.progress(planned_units(a));
    let sched = Schedule {
        retry: true,
        ..Schedule::new(a.run.runs as usize, gate)
    };
    let mut violations = vec![0u64; pts.len()];
    let step = |p: &Point| Step {
        label: format!("condvar {} {}+{}", p.name, p.pairs, p.pairs),
        units: crate::progress::run_units(a.run.window()),
        noise: 0,
    };
    let done = interleave(&pts, &sched, &prog, step, |i, p| {
        let o = (p.run)(&spec(a, p.pairs));
        violations[i] += o.violations;
        o
    });
    prog.finish();
    let mut kept: Vec<Kept> = (0..pts.len()).map(|_| Kept::default()).collect();
    for d in done {
        let k = &mut kept[d.point];
        k.discarded += d.discarded;
        k.flagged += (sched.gate.enabled && (d.polluted || !d.quiet)) as usize;
        k.steal_ns += d.steal_ns;
        k.runs.push(d.out);
    }
    machine.steal_ms_during += kept.iter().map(|k| k.steal_ns).sum::<u64>() / 1_000_000;
    let w = workload(a);
    Ok((pts.iter().zip(kept).zip(violations))
        .map(|((p, k), v)| record(p, a, &w, &k, v))
        .collect())
}

#[derive(Default)]
struct Kept {
    runs: Vec<HandOutput>,
    discarded: usize,
    flagged: usize,
    steal_ns: u64,
}

fn latency(runs: &[HandOutput]) -> Latency {
    let with: Vec<&[u64]> = (runs.iter().map(|o| o.latencies.as_slice()))
        .filter(|l| !l.is_empty())
        .collect();
    let med = |p: f64| {
        median(
            &with
                .iter()
                .map(|l| percentile_sorted(l, p) as f64)
                .collect::<Vec<_>>(),
        ) as u64
    };
    if with.is_empty() {
        return Latency::default();
    }
    Latency {
        p50: med(50.0),
        p99: med(99.0),
        p999: med(99.9),
        max: with
            .iter()
            .filter_map(|l| l.last().copied())
            .max()
            .unwrap_or(0),
        samples: with.iter().map(|l| l.len() as u64).sum(),
    }
}

/// A point's record: items consumed per second (Mops/s), per-thread items (the
/// producers' pushes, then the consumers' pops), hand-off latency.
fn record(p: &Point, a: &CondvarArgs, workload: &str, k: &Kept, violations: u64) -> Record {
    let runs = &k.runs;
    let tputs: Vec<f64> = (runs.iter())
        .map(|o| o.consumed as f64 * 1e3 / o.elapsed_ns.max(1) as f64)
        .collect();
    let m = median(&tputs);
    let mi = (0..runs.len())
        .min_by(|&x, &y| (tputs[x] - m).abs().total_cmp(&(tputs[y] - m).abs()))
        .unwrap_or(0);
    let each = |f: &dyn Fn(&HandOutput) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let mid = runs.get(mi).cloned().unwrap_or_default();
    let (per_op, syscalls_unavailable) =
        crate::accounting::per_op_by(runs, |o| crate::accounting::Counted {
            ops: o.consumed_final,
            usage: o.usage,
            syscalls: o.syscalls,
            unavailable: o.syscalls_unavailable.as_deref(),
        });
    Record {
        per_op,
        syscalls_unavailable,
        experiment: "condvar".into(),
        lock: p.name.into(),
        threads: 2 * p.pairs,
        params: Params {
            workload: workload.into(),
            cs_ns: a.consume_ns,
            ncs_ns: a.produce_ns,
            duration_s: a.run.duration,
            quota_cpus: crate::quota::active(),
            ..Params::default()
        },
        throughput_mops: m,
        spread: spread(&tputs),
        runs_mops: tputs.clone(),
        ops_per_thread: min_avg_max(&mid.ops),
        per_thread_ops: mid.ops.clone(),
        fairness_max_min: median_opt(&runs.iter().map(|o| fairness(&o.ops)).collect::<Vec<_>>()),
        min_thread_share: runs
            .iter()
            .map(|o| crate::stats::min_share(&o.ops))
            .reduce(f64::min),
        latency_ns: latency(runs),
        cpu_ns_per_op: each(&|o| o.usage.cpu_ns as f64 / o.consumed_final.max(1) as f64),
        csw_voluntary: each(&|o| o.usage.nvcsw as f64) as u64,
        csw_involuntary: each(&|o| o.usage.nivcsw as f64) as u64,
        steal_ms: k.steal_ns / 1_000_000,
        violations,
        collapsed: runs.iter().any(|o| o.collapsed),
        collapsed_runs: runs.iter().filter(|o| o.collapsed).count(),
        drain_ms_max: runs
            .iter()
            .map(|o| o.drain_ns as f64 / 1e6)
            .fold(0.0, f64::max),
        runs: runs.len(),
        discarded_runs: k.discarded,
        gate_flagged_runs: k.flagged,
        ..Record::default()
    }
}

/// Runs `lockbench condvar`; returns the exit status.
pub fn run(a: &CondvarArgs) -> Result<i32, CliError> {
    points(a)?;
    let mut machine = Machine::probe();
    let results = measure(a, a.run.gate(), &mut machine)?;
    let report = Report {
        machine,
        command: super::command_line(),
        results,
    };
    super::finish(&report, a.run.json.as_ref(), a.csv.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny run of every pair: records with items, no hand-off error, the
    /// verdict reads them as Mutex-family rows.
    #[test]
    fn tiny_condvar_experiment_checks_the_handoff() {
        let a: CondvarArgs = super::super::parse_args(&[
            "--pairs",
            "1,2",
            "--duration",
            "0.02",
            "--runs",
            "2",
            "--quiet",
            "--no-idle-gate",
        ])
        .unwrap();
        let recs = measure(&a, a.run.gate(), &mut Machine::default()).unwrap();
        assert_eq!(recs.len(), 2 * PAIRS.len());
        for r in &recs {
            assert_eq!(r.violations, 0, "{} T={}", r.lock, r.threads);
            assert!(!r.collapsed, "{} T={}", r.lock, r.threads);
            assert!(r.throughput_mops > 0.0, "{}", r.lock);
            assert_eq!(r.per_thread_ops.len(), r.threads);
            assert!(r.latency_ns.samples > 0, "{}", r.lock);
        }
        let report = Report {
            results: recs,
            ..Report::default()
        };
        let cells = crate::verdict::cells(&crate::verdict::samples(&report));
        assert!(
            cells
                .iter()
                .any(|c| c.family.name == "Mutex" && c.klock.scenario == "condvar handoff"),
            "{cells:?}"
        );
    }

    #[test]
    fn flag_errors_say_what_is_allowed() {
        let e = super::super::parse_args::<CondvarArgs>(&["--pairs", "0"]).unwrap_err();
        assert!(e.contains("1..=512"), "{e}");
        let e = super::super::parse_args::<CondvarArgs>(&["--produce-ns", "-1"]).unwrap_err();
        assert!(e.contains("0..=1000000"), "{e}");
        let e = super::super::parse_args::<CondvarArgs>(&["--capacity", "0"]).unwrap_err();
        assert!(e.contains("1..=65536"), "{e}");
        let a: CondvarArgs = super::super::parse_args(&["--locks", "ttas"]).unwrap();
        let e = points(&a).unwrap_err();
        assert!(
            e.0.contains("allowed: klock_mutex, std, parking_lot, pthread"),
            "{}",
            e.0
        );
    }
}

//! Samples: one measured lock in one case (a workload at one point), from a report's
//! records or from a seed experiment's runs, and whom a record starved.

use crate::record::{Record, Report};

/// One measured lock in one case.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The workload or experiment, e.g. `mutex balanced`.
    pub scenario: String,
    /// The point within it, e.g. `T=8` or `8+8`.
    pub point: String,
    /// Sort key of the point (thread count).
    pub order: usize,
    /// Lock name.
    pub lock: String,
    /// Median over runs.
    pub median: f64,
    /// Every run's value (may be empty: then the median alone).
    pub runs: Vec<f64>,
    /// Larger is better (throughput) or smaller (time, ns/op).
    pub higher_better: bool,
    /// Unit of `median`, e.g. `Mops/s`.
    pub unit: String,
    /// Whom this lock starved in the run (a thread under [`STARVED_MIN_AVG`]
    /// of the mean over all threads in some run): `"writers"`, `"readers"` or
    /// `"a thread"`. Such a lock is not eligible: total throughput rewards
    /// starving a thread.
    pub starves: Option<&'static str>,
    /// p99.9 latency of one acquisition in ns, when the record measured it.
    pub tail_ns: Option<u64>,
}

/// A record in which some thread, in some run, did less than this fraction of
/// the mean over all threads starved that thread (zero-op classes included).
pub const STARVED_MIN_AVG: f64 = 0.1;

/// Whom a record starved, if anyone (see [`Sample::starves`]): the smallest
/// share of the mean over all threads that any thread had in any run
/// (`min_thread_share`; for reports written before it, the median run's
/// per-thread counts and the classes' minima).
fn starved_class(r: &Record) -> Option<&'static str> {
    let classes = || [&r.readers, &r.writers].into_iter().flatten();
    let share = r.min_thread_share.unwrap_or_else(|| {
        // Older records may carry only the classes' figures.
        let (min, mean) = if r.ops_per_thread.avg > 0.0 {
            (r.ops_per_thread.min, r.ops_per_thread.avg)
        } else {
            let (n, sum) = classes().fold((0usize, 0.0), |(n, s), c| {
                (n + c.threads, s + c.threads as f64 * c.ops_per_thread.avg)
            });
            (f64::INFINITY, if n > 0 { sum / n as f64 } else { 0.0 })
        };
        let min = classes().map(|c| c.ops_per_thread.min).fold(min, f64::min);
        if mean > 0.0 { min / mean } else { 1.0 }
    });
    if share >= STARVED_MIN_AVG {
        return None;
    }
    let low = |c: &Option<crate::record::ClassMetrics>| {
        c.as_ref().map_or(f64::INFINITY, |c| c.ops_per_thread.min)
    };
    Some(match (&r.readers, &r.writers) {
        (Some(_), Some(_)) if low(&r.writers) <= low(&r.readers) => "writers",
        (Some(_), Some(_)) => "readers",
        _ => "a thread",
    })
}

impl Sample {
    /// A sample of `runs` (their median; `point` is `T={order}`): what the seed
    /// experiments report per lock and thread count.
    pub fn of_runs(
        scenario: &str,
        order: usize,
        lock: &str,
        runs: Vec<f64>,
        higher_better: bool,
        unit: &str,
    ) -> Sample {
        Sample {
            scenario: scenario.into(),
            point: format!("T={order}"),
            order,
            lock: lock.into(),
            median: crate::stats::median(&runs),
            runs,
            higher_better,
            unit: unit.into(),
            starves: None,
            tail_ns: None,
        }
    }
    /// Samples per `lock` × `x` (`x` a thread count), from each cell's runs
    /// (`runs(lock, x)`; an empty cell is left out).
    pub fn grid(
        scenario: &str,
        unit: &str,
        higher_better: bool,
        locks: &[String],
        xs: &[usize],
        runs: impl Fn(&str, usize) -> Vec<f64>,
    ) -> Vec<Sample> {
        let cells = locks.iter().flat_map(|l| xs.iter().map(move |x| (l, *x)));
        cells
            .filter_map(|(l, x)| {
                let r = runs(l, x);
                (!r.is_empty()).then(|| Sample::of_runs(scenario, x, l, r, higher_better, unit))
            })
            .collect()
    }
    /// (median, min, max) over runs.
    pub fn range(&self) -> (f64, f64, f64) {
        let lo = self.runs.iter().copied().fold(self.median, f64::min);
        let hi = self.runs.iter().copied().fold(self.median, f64::max);
        (self.median, lo, hi)
    }
}

/// Short scenario name of a record: experiment, workload, noise.
pub fn scenario_of(r: &Record) -> String {
    let mut s = if r.experiment == "uncontended" {
        r.params.workload.clone()
    } else {
        format!("{} {}", r.experiment, r.params.workload)
    };
    if r.params.noise > 0 {
        s.push_str(&format!(" +{} noise", r.params.noise));
    }
    if let Some(q) = r.params.quota_cpus {
        s.push_str(&format!(" quota {q} CPU"));
    }
    s
}

/// Point label of a record: `T=8`, or `R+W` for reader/writer records.
pub fn point_of(r: &Record) -> String {
    match (&r.readers, &r.writers) {
        (Some(rd), Some(wr)) => format!("{}+{}", rd.threads, wr.threads),
        _ => format!("T={}", r.threads),
    }
}

/// Samples of a report's records (implicit references left out): throughput in
/// Mops/s, or ns/op for `uncontended`.
pub fn samples(report: &Report) -> Vec<Sample> {
    report
        .results
        .iter()
        .filter(|r| !r.implicit)
        .map(|r| {
            let (median, runs, higher, unit) = match r.uncontended_ns_per_op {
                Some(ns) => (
                    ns,
                    r.runs_mops.iter().map(|m| 1e3 / m.max(1e-12)).collect(),
                    false,
                    "ns/op",
                ),
                None if r.experiment == "preload" => (
                    r.throughput_mops,
                    r.runs_mops.clone(),
                    true,
                    "M/s (program's metric)",
                ),
                None => (r.throughput_mops, r.runs_mops.clone(), true, "Mops/s"),
            };
            Sample {
                scenario: scenario_of(r),
                point: point_of(r),
                order: r.threads,
                lock: r.lock.clone(),
                median,
                runs,
                higher_better: higher,
                unit: unit.into(),
                starves: starved_class(r),
                tail_ns: (r.latency_ns.samples > 0 && r.latency_ns.p999 > 0)
                    .then_some(r.latency_ns.p999),
            }
        })
        .collect()
}

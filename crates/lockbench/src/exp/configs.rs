//! The generic runner's configurations ([`Config`]: a lock, threads, a [`Workload`])
//! and their measurement: run through the interleaved loop ([`run_configs`]) and
//! aggregated into records (medians, spread, per-class metrics, latency, the ceiling
//! against the single-thread references).

use std::time::Duration;

use super::schedule::{Schedule, Step, interleave};
use crate::gate::GateConfig;
use crate::locks::LockEntry;
use crate::progress::Progress;
use crate::record::{ClassMetrics, Latency, Params, Record};
use crate::runner::{ClassOutput, RunOutput, RunSpec};
use crate::stats::{fairness, median, median_opt, min_avg_max, percentile_sorted, spread};
use crate::sys::Machine;

/// A named workload: critical-section work, outside work, optional sleep inside.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Preset name or `custom`.
    pub name: String,
    /// Busy work inside the critical section, ns.
    pub cs_ns: f64,
    /// Busy work outside, ns.
    pub ncs_ns: f64,
    /// Sleep inside the critical section, µs.
    pub cs_sleep_us: f64,
    /// `std::hint::spin_loop()` (pause) instructions inside the critical section, after
    /// the calibrated work (seed 003's critical-section loads; 0 for the presets).
    pub cs_pauses: u64,
}

/// Preset names, for help and errors.
pub const PRESETS: &str = "balanced, hot, long, sleep";

impl Workload {
    /// Looks up a preset: `balanced` (cs 100 ns, ncs 200 ns), `hot` (20 ns, 0),
    /// `long` (1 µs, 1 µs), `sleep` (1 µs sleep inside, ncs 200 ns).
    ///
    /// ```
    /// let w = lockbench::exp::Workload::preset("hot").unwrap();
    /// assert_eq!((w.cs_ns, w.ncs_ns), (20.0, 0.0));
    /// assert!(lockbench::exp::Workload::preset("nope").is_none());
    /// ```
    pub fn preset(name: &str) -> Option<Workload> {
        let (cs, ncs, sleep) = match name {
            "balanced" => (100.0, 200.0, 0.0),
            "hot" => (20.0, 0.0, 0.0),
            "long" => (1000.0, 1000.0, 0.0),
            "sleep" => (0.0, 200.0, 1.0),
            _ => return None,
        };
        Some(Workload {
            name: name.into(),
            cs_ns: cs,
            ncs_ns: ncs,
            cs_sleep_us: sleep,
            cs_pauses: 0,
        })
    }
    /// Critical-section time used for the serial bound: calibrated work + sleep, ns.
    pub fn cs_time_ns(&self) -> f64 {
        let cal = crate::work::calibration();
        cal.ns_for(cal.iters_for(self.cs_ns)) + self.cs_sleep_us * 1000.0
    }
}

/// One configuration to measure.
#[derive(Clone, Debug)]
pub struct Config {
    /// Experiment name, used in records.
    pub experiment: String,
    /// The competitor.
    pub entry: LockEntry,
    /// Total worker threads.
    pub threads: usize,
    /// Readers among them (0 = mutex experiment, no per-class split).
    pub readers: usize,
    /// Whether this is a reader/writer configuration (split metrics per class).
    pub rw: bool,
    /// Workload.
    pub workload: Workload,
    /// Window per run.
    pub duration: Duration,
    /// Noise threads.
    pub noise: usize,
    /// Added only as the single-thread reference for the ceiling.
    pub implicit: bool,
}

impl Config {
    fn spec(&self) -> RunSpec {
        let cal = crate::work::calibration();
        RunSpec {
            threads: self.threads,
            readers: self.readers,
            cs_iters: cal.iters_for(self.workload.cs_ns),
            cs_pauses: self.workload.cs_pauses,
            ncs_iters: cal.iters_for(self.workload.ncs_ns),
            cs_sleep: (self.workload.cs_sleep_us > 0.0)
                .then(|| Duration::from_secs_f64(self.workload.cs_sleep_us * 1e-6)),
            duration: self.duration,
            drain_timeout: Duration::from_secs(3),
            sample_shift: 6,
            worst_wait: crate::runner::worst_wait_on(),
        }
    }
    fn label(&self) -> String {
        if self.rw {
            format!(
                "{} {} R={} W={}",
                self.experiment,
                self.entry.name,
                self.readers,
                self.threads - self.readers
            )
        } else {
            format!("{} {} T={}", self.experiment, self.entry.name, self.threads)
        }
    }
}

/// How to run a batch of configurations.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Repetitions per configuration (interleaved).
    pub runs: usize,
    /// Idle gate settings.
    pub gate: GateConfig,
    /// Draw a progress bar with ETA on stderr (only when stderr is a terminal).
    pub progress: bool,
}

/// Configurations for `locks` × `(readers, writers)` pairs plus the implicit
/// single-thread references; `rw` splits the metrics per class.
pub fn pair_configs(
    experiment: &str,
    locks: &[LockEntry],
    pairs: &[(usize, usize)],
    rw: bool,
    workload: &Workload,
    duration: Duration,
    noise: usize,
) -> Vec<Config> {
    let mut v = Vec::new();
    for &(readers, writers) in pairs {
        for e in locks {
            v.push(Config {
                experiment: experiment.into(),
                entry: *e,
                threads: readers + writers,
                readers,
                rw,
                workload: workload.clone(),
                duration,
                noise,
                implicit: false,
            });
        }
    }
    add_single_thread_refs(&mut v);
    v
}

/// Adds, for every (experiment, lock, workload) without a T=1 configuration, an implicit
/// single-thread configuration (writer only) used as the ceiling reference.
pub fn add_single_thread_refs(configs: &mut Vec<Config>) {
    let mut extra: Vec<Config> = Vec::new();
    for c in configs.iter() {
        let has = configs
            .iter()
            .chain(extra.iter())
            .any(|o| o.threads == 1 && same_series(o, c));
        if !has {
            extra.push(Config {
                threads: 1,
                readers: 0,
                implicit: true,
                ..c.clone()
            });
        }
    }
    configs.extend(extra);
}

fn same_series(a: &Config, b: &Config) -> bool {
    a.experiment == b.experiment
        && a.entry.name == b.entry.name
        && a.workload == b.workload
        && a.duration == b.duration
        && a.noise == b.noise
}

/// Runs every configuration `opts.runs` times, interleaved, and returns one record per
/// configuration (ceiling fractions filled in from the single-thread configurations of
/// the same series; call [`add_single_thread_refs`] first to make sure they exist).
/// `machine.steal_ms_during` is increased by the steal seen during kept runs.
pub fn run_configs(configs: &[Config], opts: &RunOptions, machine: &mut Machine) -> Vec<Record> {
    run_configs_with_events(configs, opts, machine).0
}

/// [`run_configs`], also returning, per configuration, the klock event-counter delta of
/// every kept run. Used by `rwsem` for the slow-path counts.
pub fn run_configs_with_events(
    configs: &[Config],
    opts: &RunOptions,
    machine: &mut Machine,
) -> (Vec<Record>, Vec<Vec<klock::stat::Snapshot>>) {
    let total: u64 = configs
        .iter()
        .map(|c| crate::progress::run_units(c.duration))
        .sum::<u64>()
        * opts.runs.max(1) as u64;
    let prog = Progress::new(total, opts.progress);
    let sched = Schedule {
        retry: true,
        ..Schedule::new(opts.runs, opts.gate)
    };
    // Violations count in discarded runs too.
    let mut violations = vec![0u64; configs.len()];
    let done = interleave(
        configs,
        &sched,
        &prog,
        |c| Step {
            label: c.label(),
            units: crate::progress::run_units(c.duration),
            noise: c.noise,
        },
        |i, c| {
            let out = (c.entry.run)(&c.spec());
            violations[i] += out.violations;
            out
        },
    );
    prog.finish();
    let mut col: Vec<Collected> = violations
        .into_iter()
        .map(|violations| Collected {
            violations,
            ..Collected::default()
        })
        .collect();
    for d in done {
        let k = &mut col[d.point];
        k.discarded += d.discarded;
        k.flagged += (opts.gate.enabled && (d.polluted || !d.quiet)) as usize;
        k.steal_ns += d.steal_ns;
        k.events.push(d.events);
        k.kept.push(d.out);
    }
    let mut events = Vec::with_capacity(col.len());
    let mut recs: Vec<Record> = configs
        .iter()
        .zip(col)
        .map(|(c, k)| {
            machine.steal_ms_during += k.steal_ns / 1_000_000;
            events.push(k.events.clone());
            aggregate(c, k)
        })
        .collect();
    fill_ceiling(configs, &mut recs, machine.effective_cpus);
    (recs, events)
}

#[derive(Default)]
struct Collected {
    kept: Vec<RunOutput>,
    discarded: usize,
    flagged: usize,
    violations: u64,
    steal_ns: u64,
    events: Vec<klock::stat::Snapshot>,
}

/// `f` of every kept run.
fn each<'a, T>(kept: &'a [RunOutput], f: impl Fn(&'a RunOutput) -> T) -> Vec<T> {
    kept.iter().map(f).collect()
}

fn mops(ops: &[u64], elapsed_ns: u64) -> f64 {
    ops.iter().sum::<u64>() as f64 * 1e3 / elapsed_ns.max(1) as f64
}

fn latency(runs: &[&[u64]]) -> Latency {
    let with: Vec<&[u64]> = runs.iter().copied().filter(|l| !l.is_empty()).collect();
    if with.is_empty() {
        return Latency::default();
    }
    let med = |p: f64| {
        median(
            &with
                .iter()
                .map(|l| percentile_sorted(l, p) as f64)
                .collect::<Vec<_>>(),
        ) as u64
    };
    Latency {
        p50: med(50.0),
        p99: med(99.0),
        p999: med(99.9),
        max: with.iter().map(|l| *l.last().unwrap()).max().unwrap_or(0),
        samples: with.iter().map(|l| l.len() as u64).sum(),
    }
}

fn median_index(v: &[f64]) -> usize {
    let m = median(v);
    (0..v.len())
        .min_by(|&a, &b| (v[a] - m).abs().total_cmp(&(v[b] - m).abs()))
        .unwrap_or(0)
}

fn class_metrics(kept: &[RunOutput], pick: fn(&RunOutput) -> &ClassOutput) -> ClassMetrics {
    let tputs = each(kept, |o| mops(&pick(o).ops, o.elapsed_ns));
    let mi = median_index(&tputs);
    let m = &kept[mi];
    let all: u64 = m.ops.iter().sum();
    let mine: u64 = pick(m).ops.iter().sum();
    ClassMetrics {
        threads: pick(m).ops.len(),
        throughput_mops: median(&tputs),
        ops_per_thread: min_avg_max(&pick(m).ops),
        fairness_max_min: median_opt(&each(kept, |o| fairness(&pick(o).ops))),
        latency_ns: latency(&each(kept, |o| pick(o).latencies.as_slice())),
        share_of_ops: if all > 0 {
            mine as f64 / all as f64
        } else {
            0.0
        },
    }
}

fn aggregate(c: &Config, k: Collected) -> Record {
    let kept = &k.kept;
    let tputs = each(kept, |o| mops(&o.ops, o.elapsed_ns));
    let mi = median_index(&tputs);
    let m = &kept[mi];
    let lats = each(kept, |o| {
        let mut v = [&o.writers.latencies[..], &o.readers.latencies].concat();
        v.sort_unstable();
        v
    });
    let cal = crate::work::calibration();
    let (per_op, syscalls_unavailable) = crate::accounting::per_op(kept);
    Record {
        experiment: c.experiment.clone(),
        lock: c.entry.name.into(),
        threads: c.threads,
        params: Params {
            workload: c.workload.name.clone(),
            cs_ns: c.workload.cs_ns,
            ncs_ns: c.workload.ncs_ns,
            cs_sleep_us: c.workload.cs_sleep_us,
            cs_work_ns: cal.ns_for(cal.iters_for(c.workload.cs_ns)),
            duration_s: c.duration.as_secs_f64(),
            noise: c.noise,
            quota_cpus: crate::quota::active(),
        },
        implicit: c.implicit,
        throughput_mops: median(&tputs),
        spread: spread(&tputs),
        runs_mops: tputs.clone(),
        ops_per_thread: min_avg_max(&m.ops),
        per_thread_ops: m.ops.clone(),
        fairness_max_min: median_opt(&each(kept, |o| fairness(&o.ops))),
        min_thread_share: kept
            .iter()
            .map(|o| crate::stats::min_share(&o.ops))
            .reduce(f64::min),
        ceiling_fraction: None,
        latency_ns: latency(&lats.iter().map(Vec::as_slice).collect::<Vec<_>>()),
        cpu_ns_per_op: median(&each(kept, |o| {
            o.usage.cpu_ns as f64 / o.total_ops_final.max(1) as f64
        })),
        csw_voluntary: median(&each(kept, |o| o.usage.nvcsw as f64)) as u64,
        csw_involuntary: median(&each(kept, |o| o.usage.nivcsw as f64)) as u64,
        per_op,
        syscalls_unavailable,
        worst_wait: crate::accounting::worst_wait(kept),
        klock_events_per_op: crate::accounting::klock_events(kept, &k.events),
        steal_ms: k.steal_ns / 1_000_000,
        violations: k.violations,
        collapsed: kept.iter().any(|o| o.collapsed),
        collapsed_runs: kept.iter().filter(|o| o.collapsed).count(),
        drain_ms_max: kept
            .iter()
            .map(|o| o.drain_ns as f64 / 1e6)
            .fold(0.0, f64::max),
        runs: kept.len(),
        discarded_runs: k.discarded,
        gate_flagged_runs: k.flagged,
        uncontended_ns_per_op: None,
        readers: c.rw.then(|| class_metrics(kept, |o| &o.readers)),
        writers: c.rw.then(|| class_metrics(kept, |o| &o.writers)),
    }
}

/// Ceiling fraction = throughput / min(min(cpus, T) × single-thread throughput of the
/// same lock and series, serial bound). The serial bound (1 / critical-section time) only
/// applies when every thread is a writer; reader/writer configurations use the CPU term
/// alone.
pub fn fill_ceiling(configs: &[Config], recs: &mut [Record], cpus: usize) {
    for i in 0..configs.len() {
        let Some(j) = (0..configs.len())
            .find(|&j| configs[j].threads == 1 && same_series(&configs[j], &configs[i]))
        else {
            continue;
        };
        let st = recs[j].throughput_mops;
        if st <= 0.0 {
            continue;
        }
        let c = &configs[i];
        let mut ideal = c.threads.min(cpus.max(1)) as f64 * st;
        let cs = c.workload.cs_time_ns();
        if c.readers == 0 && cs > 0.0 {
            ideal = ideal.min(1e3 / cs);
        }
        recs[i].ceiling_fraction = Some(recs[i].throughput_mops / ideal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(lock: &str, threads: usize, readers: usize, cs_ns: f64) -> Config {
        Config {
            experiment: "mutex".into(),
            entry: crate::locks::find(lock).unwrap(),
            threads,
            readers,
            rw: readers > 0,
            workload: Workload {
                name: "t".into(),
                cs_ns,
                ncs_ns: 0.0,
                cs_sleep_us: 0.0,
                cs_pauses: 0,
            },
            duration: Duration::from_millis(1),
            noise: 0,
            implicit: false,
        }
    }

    fn rec(mops: f64) -> Record {
        Record {
            throughput_mops: mops,
            ..Record::default()
        }
    }

    #[test]
    fn ceiling_uses_cpus_times_single_thread_and_serial_bound() {
        // No CS work: only the CPU term. 2 CPUs, T=1 does 3 Mops/s.
        let cfgs = vec![
            cfg("std", 1, 0, 0.0),
            cfg("std", 4, 0, 0.0),
            cfg("std", 2, 0, 0.0),
        ];
        let mut recs = vec![rec(3.0), rec(3.0), rec(6.0)];
        fill_ceiling(&cfgs, &mut recs, 2);
        assert_eq!(recs[0].ceiling_fraction, Some(1.0));
        assert_eq!(recs[1].ceiling_fraction, Some(0.5));
        assert_eq!(recs[2].ceiling_fraction, Some(1.0));
        // A different lock has no T=1 reference: no ceiling.
        let cfgs = vec![cfg("std", 1, 0, 0.0), cfg("ttas", 2, 0, 0.0)];
        let mut recs = vec![rec(3.0), rec(3.0)];
        fill_ceiling(&cfgs, &mut recs, 2);
        assert_eq!(recs[1].ceiling_fraction, None);
    }

    #[test]
    fn serial_bound_caps_the_ideal() {
        // A 1-ms critical section allows at most 1000 ops/s = 0.001 Mops/s.
        let cfgs = vec![cfg("std", 1, 0, 1e6), cfg("std", 2, 0, 1e6)];
        let mut recs = vec![rec(0.001), rec(0.001)];
        fill_ceiling(&cfgs, &mut recs, 2);
        let c = recs[1].ceiling_fraction.unwrap();
        assert!((0.9..1.1).contains(&c), "{c}");
    }

    #[test]
    fn implicit_single_thread_references_are_added_once() {
        let mut v = vec![
            cfg("std", 2, 0, 0.0),
            cfg("std", 8, 0, 0.0),
            cfg("ttas", 1, 0, 0.0),
        ];
        add_single_thread_refs(&mut v);
        let implicit: Vec<_> = v.iter().filter(|c| c.implicit).collect();
        assert_eq!(implicit.len(), 1);
        assert_eq!(implicit[0].entry.name, "std");
        assert_eq!(implicit[0].threads, 1);
    }

    #[test]
    fn workload_presets_and_overrides() {
        for p in ["balanced", "hot", "long", "sleep"] {
            assert!(Workload::preset(p).is_some(), "{p}");
        }
        assert_eq!(Workload::preset("balanced").unwrap().cs_ns, 100.0);
        assert_eq!(Workload::preset("sleep").unwrap().cs_sleep_us, 1.0);
    }
}

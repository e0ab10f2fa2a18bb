//! Experiments and the path they share: flags ([`RunArgs`], flattened into each
//! experiment's `Args`, or [`CommonArgs`] for the lock experiments), the one
//! interleaved loop with the idle gate ([`interleave`]; [`run_configs`] for the generic
//! runner's [`Config`]s), and the common ending ([`finish`]). How to add an
//! experiment, piece by piece: `docs/lockbench.md`, "Adding an experiment".

pub mod condvar;
pub mod costs;
pub mod fio;
pub mod fserver;
pub mod handoff;
pub mod mutex;
pub mod preload;
pub mod preload_unc;
pub mod proc;
pub mod realcrate;
pub mod report;
pub mod rwlock;
pub mod rwsem;
pub mod spin;
pub mod uncontended;

use std::path::PathBuf;
use std::time::Duration;

use crate::gate::{GateConfig, Window, wait_idle};
use crate::locks::{LockEntry, LockKind};
use crate::noise::Noise;
use crate::progress::Progress;
use crate::record::{ClassMetrics, Latency, Params, Record, Report};
use crate::runner::{ClassOutput, RunOutput, RunSpec};
use crate::stats::{fairness, median, median_opt, min_avg_max, percentile_sorted, spread};
use crate::sys::Machine;
use crate::table::Table;

/// A usage error: printed as `error: ...` and exits with status 2.
#[derive(Debug, Clone, PartialEq)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

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

/// The flags every measuring experiment shares; `#[command(flatten)]` it into an
/// experiment's args.
#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// Measurement window per run, seconds (decimal, > 0, <= 3600).
    #[arg(long, value_parser = parse_duration, default_value = "1", allow_hyphen_values = true)]
    pub duration: f64,
    /// Repetitions per configuration, interleaved; the median is reported (1..=100).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// Disable the idle gate (same as LOCKBENCH_NO_IDLE_GATE=1).
    #[arg(long)]
    pub no_idle_gate: bool,
}

impl RunArgs {
    /// The measurement window.
    pub fn window(&self) -> Duration {
        Duration::from_secs_f64(self.duration)
    }
    /// The idle gate: from the environment, off with `--no-idle-gate`.
    pub fn gate(&self) -> GateConfig {
        let mut gate = GateConfig::from_env();
        if self.no_idle_gate {
            gate.enabled = false;
        }
        gate
    }
    /// Run options from these arguments.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            runs: self.runs as usize,
            gate: self.gate(),
            progress: !self.quiet,
        }
    }
    /// A progress bar for `units` planned units (hidden with `--quiet`).
    pub fn progress(&self, units: u64) -> Progress {
        Progress::new(units, !self.quiet)
    }
    /// The schedule of these arguments: `--runs` repetitions, the idle gate, no retry.
    pub fn schedule(&self) -> Schedule {
        Schedule::new(self.runs as usize, self.gate())
    }
}

/// The lock experiments' options (`mutex`, `rwlock`); `#[command(flatten)]` it.
#[derive(clap::Args, Clone, Debug)]
pub struct CommonArgs {
    /// Comma-separated lock names (see `lockbench list`); default: all of the right kind.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    /// Workload preset: balanced, hot, long, sleep.
    #[arg(long, default_value = "balanced")]
    pub workload: String,
    /// Comma-separated thread counts, each 1..=1024.
    #[arg(long, value_parser = parse_threads, default_value = "1,2,4,8,32")]
    pub threads: ThreadList,
    /// Busy work inside the critical section, ns (overrides the preset).
    #[arg(long, value_parser = parse_nonneg, allow_hyphen_values = true)]
    pub cs_ns: Option<f64>,
    /// Busy work outside the critical section, ns (overrides the preset).
    #[arg(long, value_parser = parse_nonneg, allow_hyphen_values = true)]
    pub ncs_ns: Option<f64>,
    /// Sleep inside the critical section, µs (overrides the preset).
    #[arg(long, value_parser = parse_nonneg, allow_hyphen_values = true)]
    pub cs_sleep_us: Option<f64>,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// CPU-hog threads running beside the workload (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: u32,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// After the tables, print what one operation cost per lock: CPU, context
    /// switches, futex and sched_yield calls per op, the worst wait beside the
    /// sampled p99.9, and klock's event counters (with --features stats).
    #[arg(long)]
    pub explain: bool,
}

/// A parsed `--threads` list.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadList(pub Vec<usize>);

/// Parses `1,2,4` into a thread list (each 1..=1024, at least one).
///
/// ```
/// assert_eq!(lockbench::exp::parse_threads("1,2,8").unwrap().0, vec![1, 2, 8]);
/// assert!(lockbench::exp::parse_threads("0").is_err());
/// assert!(lockbench::exp::parse_threads("x").is_err());
/// ```
pub fn parse_threads(s: &str) -> Result<ThreadList, String> {
    let allowed = "allowed are comma-separated integers 1..=1024, e.g. 1,2,4,8,32";
    parse_counts(s, 1024, "thread", allowed)
}

/// Parses a comma-separated list of counts in 1..=`max` (at least one; duplicates
/// dropped); errors name the `what` count and say what is `allowed`.
pub fn parse_counts(s: &str, max: usize, what: &str, allowed: &str) -> Result<ThreadList, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => v.push(n),
            _ => return Err(format!("bad {what} count '{part}': {allowed}")),
        }
    }
    if v.is_empty() {
        return Err(format!("empty {what} list: {allowed}"));
    }
    Ok(ThreadList(crate::stats::first_seen(v)))
}

/// Parses a duration in seconds: finite, > 0, <= 3600.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(d) if d.is_finite() && d > 0.0 && d <= 3600.0 => Ok(d),
        _ => Err(format!(
            "bad duration '{s}': allowed is a decimal number of seconds > 0 and <= 3600, e.g. 0.5"
        )),
    }
}

/// Parses a finite non-negative number (<= 1e9).
pub fn parse_nonneg(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(d) if d.is_finite() && (0.0..=1e9).contains(&d) => Ok(d),
        _ => Err(format!("bad value '{s}': allowed is a finite number >= 0")),
    }
}

impl CommonArgs {
    /// The workload: the preset with explicit `--cs-ns/--ncs-ns/--cs-sleep-us` applied.
    pub fn workload(&self) -> Result<Workload, CliError> {
        let mut w = Workload::preset(&self.workload).ok_or_else(|| {
            CliError(format!(
                "unknown workload '{}': allowed are {PRESETS}",
                self.workload
            ))
        })?;
        let custom = self.cs_ns.or(self.ncs_ns).or(self.cs_sleep_us).is_some();
        w.cs_ns = self.cs_ns.unwrap_or(w.cs_ns);
        w.ncs_ns = self.ncs_ns.unwrap_or(w.ncs_ns);
        w.cs_sleep_us = self.cs_sleep_us.unwrap_or(w.cs_sleep_us);
        if custom {
            w.name = format!("{}+custom", w.name);
        }
        Ok(w)
    }
}

/// Parses an experiment's arguments from `args` (without the program name), as its
/// subcommand would: for the `report` suite's own settings and for tests.
///
/// ```
/// let a: lockbench::exp::fio::FioArgs = lockbench::exp::parse_args(&["--runs", "2"]).unwrap();
/// assert_eq!((a.run.runs, a.read_pct), (2, 50));
/// ```
pub fn parse_args<A: clap::Args>(args: &[&str]) -> Result<A, String> {
    #[derive(clap::Parser)]
    struct Wrap<A: clap::Args> {
        #[command(flatten)]
        a: A,
    }
    let argv = std::iter::once("lockbench").chain(args.iter().copied());
    <Wrap<A> as clap::Parser>::try_parse_from(argv)
        .map(|w| w.a)
        .map_err(|e| e.to_string())
}

/// Resolves `--locks`: every name must be registered and allowed for `allowed` kinds;
/// empty means every lock whose kind is in `default_kinds`.
pub fn select_locks(
    names: &[String],
    allowed: &[LockKind],
    default_kinds: &[LockKind],
) -> Result<Vec<LockEntry>, CliError> {
    let reg = crate::locks::registry();
    if names.is_empty() {
        return Ok(reg
            .into_iter()
            .filter(|e| default_kinds.contains(&e.kind))
            .collect());
    }
    let allowed_names = || {
        reg.iter()
            .filter(|e| allowed.contains(&e.kind))
            .map(|e| e.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out: Vec<LockEntry> = Vec::new();
    for n in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match reg.iter().find(|e| e.name == n) {
            None => {
                return Err(CliError(format!(
                    "unknown lock '{n}'; known locks: {}",
                    allowed_names()
                )));
            }
            Some(e) if !allowed.contains(&e.kind) => {
                return Err(CliError(format!(
                    "lock '{n}' is a {} and cannot be used here; allowed: {}",
                    e.kind.as_str(),
                    allowed_names()
                )));
            }
            Some(e) => {
                if !out.iter().any(|o| o.name == e.name) {
                    out.push(*e)
                }
            }
        }
    }
    if out.is_empty() {
        return Err(CliError(format!(
            "empty --locks; known locks: {}",
            allowed_names()
        )));
    }
    Ok(out)
}

/// Resolves a list of names against `all` (name, value) pairs, in the given order,
/// duplicates dropped; `what` names the list in errors (`lock`, `workload`).
///
/// ```
/// let all = [("a", 1), ("b", 2)];
/// let v = lockbench::exp::pick(&[" b".into(), "a".into(), "b".into()], &all, "lock").unwrap();
/// assert_eq!(v, vec![("b", 2), ("a", 1)]);
/// assert!(lockbench::exp::pick(&["c".into()], &all, "lock").unwrap_err().0.contains("allowed: a, b"));
/// ```
pub fn pick<T: Copy>(
    names: &[String],
    all: &[(&'static str, T)],
    what: &str,
) -> Result<Vec<(&'static str, T)>, CliError> {
    let allowed = || all.iter().map(|x| x.0).collect::<Vec<_>>().join(", ");
    let mut v: Vec<(&'static str, T)> = Vec::new();
    for n in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match all.iter().find(|x| x.0 == n) {
            Some(x) if !v.iter().any(|y| y.0 == x.0) => v.push(*x),
            Some(_) => {}
            None => {
                return Err(CliError(format!(
                    "unknown {what} '{n}'; allowed: {}",
                    allowed()
                )));
            }
        }
    }
    if v.is_empty() {
        return Err(CliError(format!("no {what} given; allowed: {}", allowed())));
    }
    Ok(v)
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

/// How [`interleave`] repeats and gates runs.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Repetitions of the whole list of points.
    pub runs: usize,
    /// The idle gate: wait for quiet before each run.
    pub gate: GateConfig,
    /// Discard and retry a run the gate finds polluted (at most `gate.max_retries`
    /// times, within the gate's budget); without it such a run is only marked.
    pub retry: bool,
    /// On odd repetitions run each adjacent pair of points in reverse order (two sides
    /// of a comparison, so that neither always goes second).
    pub swap_pairs: bool,
}

impl Schedule {
    /// `runs` repetitions behind `gate`, no retry, in list order.
    pub fn new(runs: usize, gate: GateConfig) -> Schedule {
        Schedule {
            runs,
            gate,
            retry: false,
            swap_pairs: false,
        }
    }
}

/// What [`interleave`] needs to know about a point: its progress label, planned
/// progress units and noise threads.
pub struct Step {
    /// Progress label (`fio klock_rwsem T=8`).
    pub label: String,
    /// Planned progress units of one run ([`crate::progress::run_units`]).
    pub units: u64,
    /// CPU-hog threads running during the run.
    pub noise: usize,
}

/// One kept run, in the order the runs happened.
#[derive(Clone, Debug)]
pub struct Done<R> {
    /// Index of the point.
    pub point: usize,
    /// What the run returned.
    pub out: R,
    /// The idle gate reached quiet before the run.
    pub quiet: bool,
    /// Foreign CPU use during the run exceeded the gate's threshold (gate enabled).
    pub polluted: bool,
    /// Steal time during the run, ns.
    pub steal_ns: u64,
    /// Polluted runs of this point discarded (and retried) before this one.
    pub discarded: usize,
    /// klock's event-counter delta around the run (process-wide; all zero unless built
    /// with `--features stats`).
    pub events: klock::stat::Snapshot,
}

/// The one interleaved loop: `s.runs` repetitions over `points` (A B C A B C …), each
/// run behind the idle gate, with its noise threads, timed by a [`Window`] for foreign
/// CPU use and steal, between two snapshots of klock's counters; progress on `prog`.
/// Returns every kept run in the order they ran.
pub fn interleave<P, R>(
    points: &[P],
    s: &Schedule,
    prog: &Progress,
    step: impl Fn(&P) -> Step,
    mut run: impl FnMut(usize, &P) -> R,
) -> Vec<Done<R>> {
    let runs = s.runs.max(1);
    let mut done = Vec::with_capacity(points.len() * runs);
    for rep in 0..runs {
        for i in 0..points.len() {
            let i = if s.swap_pairs && rep % 2 == 1 && (i ^ 1) < points.len() {
                i ^ 1
            } else {
                i
            };
            let st = step(&points[i]);
            let msg = format!("{} run {}/{runs}", st.label, rep + 1);
            prog.message(&msg);
            let mut discarded = 0;
            loop {
                let quiet = wait_idle(&s.gate);
                let noise = Noise::start(st.noise);
                let w = Window::begin();
                let ev0 = klock::stat::snapshot();
                let out = run(i, &points[i]);
                let events = klock::stat::snapshot().delta(&ev0);
                let wr = w.end();
                noise.stop();
                let polluted = s.gate.enabled && wr.polluted(&s.gate);
                if polluted
                    && s.retry
                    && discarded < s.gate.max_retries as usize
                    && crate::gate::budget_left(&s.gate)
                {
                    crate::gate::charge(Duration::from_nanos(wr.elapsed_ns));
                    discarded += 1;
                    continue;
                }
                done.push(Done {
                    point: i,
                    out,
                    quiet,
                    polluted,
                    steal_ns: wr.steal_ns,
                    discarded,
                    events,
                });
                break;
            }
            let note = if discarded > 0 {
                format!(" ({discarded} discarded)")
            } else {
                String::new()
            };
            prog.inc(st.units, &format!("{msg} done{note}"));
        }
    }
    done
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

/// Runs `cfgs` with the common options (interleaved, idle-gated), then
/// [`finish`]es: the whole body of a plain `mutex`/`rwlock` experiment.
pub fn run_and_finish(cfgs: &[Config], c: &CommonArgs) -> Result<i32, CliError> {
    let mut machine = Machine::probe_with_costs();
    let results = run_configs(cfgs, &c.run.options(), &mut machine);
    let report = Report {
        machine,
        command: command_line(),
        results,
    };
    let status = finish(&report, c.run.json.as_ref(), c.csv.as_ref())?;
    if c.explain {
        out(&crate::explain::explain(&report));
    }
    Ok(status)
}

/// Common ending of an experiment: print tables (unless `quiet` and no terminal is
/// wanted), write `--json`/`--csv`, and return the exit status (1 if any violation).
pub fn finish(
    report: &Report,
    json: Option<&PathBuf>,
    csv: Option<&PathBuf>,
) -> Result<i32, CliError> {
    out(&crate::table::render(report));
    if let Some(p) = json {
        write_file(p, &report.to_json())?;
    }
    if let Some(p) = csv {
        write_file(p, &crate::record::to_csv(&report.results))?;
    }
    Ok(exit_status(report))
}

/// Tables as terminal text, one after the other.
pub fn text(tables: &[Table]) -> String {
    tables.iter().map(Table::to_text).collect()
}

/// Writes `s` to stdout, ignoring errors (a closed pipe such as `| head` must not
/// turn into a panic after the measurements are done).
pub fn out(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// 1 if the report holds any mutual-exclusion violation, else 0.
pub fn exit_status(report: &Report) -> i32 {
    if report.violations() > 0 {
        eprintln!(
            "error: mutual-exclusion violations detected ({} in total); see the `violations` column",
            report.violations()
        );
        1
    } else {
        0
    }
}

/// Writes `contents` to `path`, creating parent directories.
pub fn write_file(path: &PathBuf, contents: &str) -> Result<(), CliError> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)
            .map_err(|e| CliError(format!("cannot create {}: {e}", d.display())))?;
    }
    std::fs::write(path, contents)
        .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))
}

/// Writes `v` as pretty JSON to `path`, if given.
pub fn write_json<T: serde::Serialize>(path: Option<&PathBuf>, v: &T) -> Result<(), CliError> {
    let Some(p) = path else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
    write_file(p, &text)
}

/// The first line of a seed experiment's output: the machine and the settings.
pub fn header_line(name: &str, m: &Machine, runs: u32) -> String {
    format!(
        "\nlockbench {name}: {} | effective CPUs {} | kernel {}{} | {runs} runs per configuration, interleaved | KLOCK_RWSEM_READER={}\n",
        m.cpu_model,
        m.effective_cpus,
        m.kernel,
        if m.hypervisor { " (VM)" } else { "" },
        crate::locks::klock::rwsem_reader_mode(),
    )
}

/// The command line as one string, for reports.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

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

    #[test]
    fn select_locks_rejects_unknown_and_wrong_kind() {
        let e = select_locks(&["nope".into()], &[LockKind::Mutex], &[LockKind::Mutex]).unwrap_err();
        assert!(e.0.contains("known locks") && e.0.contains("ticket"));
        let e =
            select_locks(&["std".into()], &[LockKind::RwLock], &[LockKind::RwLock]).unwrap_err();
        assert!(e.0.contains("std_rw"));
        let all = select_locks(&[], &[LockKind::Mutex], &[LockKind::Mutex]).unwrap();
        assert!(all.iter().all(|e| e.kind == LockKind::Mutex));
        let two = select_locks(
            &["std".into(), "std".into(), "mcs".into()],
            &[LockKind::Mutex],
            &[],
        )
        .unwrap();
        assert_eq!(two.len(), 2);
    }
}

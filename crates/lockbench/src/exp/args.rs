//! The experiments' command line: the flags they share ([`RunArgs`], flattened into
//! each experiment's `Args`, and [`CommonArgs`] for the lock experiments), the
//! parsers of their values, the resolution of `--locks` and of other named lists,
//! and the usage error ([`CliError`]).

use std::path::PathBuf;
use std::time::Duration;

use super::configs::{PRESETS, RunOptions, Workload};
use super::schedule::Schedule;
use crate::gate::GateConfig;
use crate::locks::{LockEntry, LockKind};
use crate::progress::Progress;

/// A usage error: printed as `error: ...` and exits with status 2.
#[derive(Debug, Clone, PartialEq)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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

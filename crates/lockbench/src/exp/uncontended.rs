//! `lockbench uncontended`: one thread, lock + counter++ + unlock, ns per op.

use crate::gate::GateConfig;
use crate::locks::{LockEntry, LockKind};
use crate::progress::Progress;
use crate::record::{Params, Record, Report};
use crate::stats::{median, spread};

use super::{CliError, Schedule, Step, interleave};

/// Arguments of `lockbench uncontended`.
#[derive(clap::Args, Debug, Clone)]
pub struct UncontendedArgs {
    /// Comma-separated lock names; default: all.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    /// Lock+unlock operations per run (1000..=1e9).
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1000..=1_000_000_000))]
    pub ops: u64,
    /// Repetitions (interleaved), 1..=100; default 5 (with --preload: passes, 7..=100,
    /// default 7).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: Option<u32>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Disable the idle gate.
    #[arg(long)]
    pub no_idle_gate: bool,
    /// Measure the shared (read) side: reader/writer locks only.
    #[arg(long)]
    pub read: bool,
    /// Measure klock's LD_PRELOAD interposer's pthread pairs (mutex, trylock,
    /// recursive, rdlock, wrlock, spin) against glibc's in a C program, in a
    /// single-threaded and a threaded process (needs a C compiler).
    #[arg(long)]
    pub preload: bool,
    /// With --preload: the interposer (default: next to lockbench, or built).
    #[arg(long, value_name = "PATH", requires = "preload")]
    pub lib: Option<std::path::PathBuf>,
}

/// Measures every lock `runs` times (interleaved, each run behind a short idle gate),
/// `ops` operations per run; `read` takes the shared side (workload
/// `uncontended-read`).
pub fn measure(
    locks: &[LockEntry],
    ops: u64,
    runs: usize,
    read: bool,
    gate: &GateConfig,
) -> Vec<Record> {
    let short = GateConfig {
        max_wait: gate.max_wait.min(std::time::Duration::from_millis(300)),
        ..*gate
    };
    let step = |e: &LockEntry| Step {
        label: format!("uncontended {}", e.name),
        units: 0,
        noise: 0,
    };
    let done = interleave(
        locks,
        &Schedule::new(runs, short),
        &Progress::hidden(),
        step,
        |_, e| (e.uncontended)(ops, read),
    );
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); locks.len()];
    for d in done {
        ns[d.point].push(d.out);
    }
    let workload = if read {
        "uncontended-read"
    } else {
        "uncontended"
    };
    locks
        .iter()
        .zip(ns)
        .map(|(e, v)| {
            let m = median(&v);
            Record {
                experiment: "uncontended".into(),
                lock: e.name.into(),
                threads: 1,
                params: Params {
                    workload: workload.into(),
                    quota_cpus: crate::quota::active(),
                    ..Params::default()
                },
                throughput_mops: 1e3 / m.max(1e-9),
                spread: spread(&v),
                runs_mops: v.iter().map(|x| 1e3 / x.max(1e-9)).collect(),
                fairness_max_min: Some(1.0),
                runs: v.len(),
                uncontended_ns_per_op: Some(m),
                ..Record::default()
            }
        })
        .collect()
}

/// Runs `lockbench uncontended`; returns the exit status.
pub fn run(a: &UncontendedArgs) -> Result<i32, CliError> {
    if a.preload {
        if !a.locks.is_empty() || a.read {
            return Err(CliError(
                "--preload measures the interposer's pthread pairs: --locks and --read are not allowed with it".into(),
            ));
        }
        return super::preload_unc::run(&super::preload_unc::Settings {
            runs: a.runs,
            ops: a.ops,
            lib: a.lib.clone(),
            no_idle_gate: a.no_idle_gate,
            json: a.json.clone(),
        });
    }
    let all = [LockKind::Mutex, LockKind::RwLock];
    let kinds: &[LockKind] = if a.read { &all[1..] } else { &all };
    let locks = super::select_locks(&a.locks, kinds, kinds)?;
    let mut gate = GateConfig::from_env();
    gate.enabled &= !a.no_idle_gate;
    let report = Report {
        machine: crate::sys::Machine::probe(),
        command: super::command_line(),
        results: measure(&locks, a.ops, a.runs.unwrap_or(5) as usize, a.read, &gate),
    };
    super::finish(&report, a.json.as_ref(), a.csv.as_ref())
}

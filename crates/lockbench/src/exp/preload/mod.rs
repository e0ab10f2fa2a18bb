//! `lockbench preload`: unmodified programs with glibc's pthread locks against the
//! same programs under klock's interposer (`LD_PRELOAD=libklock_preload.so`).
//!
//! Workloads (`--workloads`; default [`DEFAULT_WORKLOADS`]: sysbench-threads,
//! sysbench-mutex, stress-mutex, memcached; `stress-pthread`, the Kyoto Cabinet ones
//! and `pigz` on request), each at every `--threads` T (default 2, 4, 8, 16: 1x to
//! 8x oversubscription on 2 CPUs):
//!
//! | name | command | metric |
//! |---|---|---|
//! | `sysbench-threads` | `sysbench threads --threads=T --thread-locks=1 --thread-yields=100 --time=D run` | events/s (each event: 100 × lock, `sched_yield`, unlock) |
//! | `sysbench-mutex` | `sysbench mutex --threads=T --mutex-num=1 --mutex-locks=N/T --mutex-loops=0 run` | lock ops/s = N / `total time` |
//! | `stress-mutex` | `stress-ng --mutex T -t D --metrics-brief` | bogo ops/s (real time); T = stressor instances |
//! | `stress-pthread` | `stress-ng --pthread T -t D --metrics-brief` | bogo ops/s (thread starts; condvar herd) |
//! | `memcached` | `memcached -t T` on a free loopback port, driven by `memcaslap -T 2 -c 64 -t Ds` (not preloaded) | TPS |
//! | `kc-stash` | `kcstashtest order -th T R/T` (Kyoto Cabinet; rwlock read and write sides, one mutex) | record ops/s = 3 R / Σ phase `time:` |
//! | `kc-cache` | `kccachetest wicked -th T R/T` (random mixed ops; mutexes and one rwlock) | record ops/s = R / `time:` |
//! | `kc-tree` | `kctreetest order -th T FILE R/T` (B+ tree file in a scratch dir; mutex-heavy plus rwlocks) | record ops/s = 3 R / Σ phase `time:` |
//! | `pigz` | `pigz -p T -b 32 -k -f FILE` on a generated 20 MiB text file (condvar handoffs) | input MB/s (wall time measured here) |
//!
//! R is `--kc-records` (default 10⁶), split evenly over the T threads.
//!
//! Every (workload, T) point runs `--runs` times with and without the interposer,
//! interleaved (the order alternates between repetitions); the table shows the
//! medians, their ratio (klock / glibc; > 1 means klock is faster) and each side's
//! spread ((max − min) / median). `KLOCK_MUTEX`, `KLOCK_RWLOCK`, `KLOCK_SPIN` in the
//! environment reach the preloaded runs.
//!
//! `--json` writes a lockbench report: one record per (workload, T, side) with
//! `experiment = "preload"`, `lock = "glibc"` or `"klock_preload"`,
//! `params.workload` = the workload name and `throughput_mops` = the workload's own
//! metric in millions (events/s, lock ops/s, bogo ops/s, TPS, record ops/s, MB/s). A
//! failed run (non-zero exit, crash, timeout, output without the metric, a Kyoto
//! Cabinet record count that does not match) is counted in `collapsed_runs`, and
//! makes the exit status 1.
//!
//! Example: `lockbench preload --threads 2,8 --runs 3 --duration 2 --json target/preload.json`.
//!
//! Here: the flags and the driver (every point on both sides, interleaved). The
//! workloads are data ([`workloads::ALL`], one row each), read by [`parsers`]; one
//! run is [`measure`]; the records, table and report section are [`results`]; the
//! subprocess harness is [`crate::exp::proc`].

pub mod measure;
pub mod parsers;
pub mod results;
pub mod workloads;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exp::proc::{check_loads, find_lib};
use crate::exp::{CliError, RunArgs, Schedule, Step, ThreadList, interleave, parse_threads};
use crate::progress::run_units;
use crate::record::Report;
use crate::sys::Machine;
use measure::{GLIBC, KLOCK, Side, measure};
use results::{RunResult, records, render};
use workloads::{DEFAULT_WORKLOADS, Settings, Workload, check_programs, select};

/// Arguments of `lockbench preload`.
#[derive(clap::Args, Clone, Debug)]
#[command(
    mut_arg("duration", |a| a.default_value("2").help(
        "Length of each timed run, seconds (decimal, > 0, <= 3600); sysbench-mutex, the \
         kc-* workloads and pigz do a fixed amount of work instead (--mutex-ops, \
         --kc-records, a 20 MiB input)"
    )),
    mut_arg("runs", |a| a.help(
        "Repetitions per point and side, interleaved; the median is reported (1..=100)"
    )),
    mut_arg("json", |a| a.help(
        "Write the records as a lockbench JSON report to FILE (`lockbench render` makes the HTML)"
    ))
)]
pub struct PreloadArgs {
    /// Comma-separated thread counts (stressor instances for stress-ng), each 1..=1024.
    #[arg(long, value_parser = parse_threads, default_value = "2,4,8,16")]
    pub threads: ThreadList,
    /// Comma-separated workloads: sysbench-threads, sysbench-mutex, stress-mutex,
    /// stress-pthread, memcached, kc-stash, kc-cache, kc-tree (Kyoto Cabinet; rwlocks),
    /// pigz (condvars).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_WORKLOADS)]
    pub workloads: Vec<String>,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// sysbench-mutex: lock operations per run, split evenly over the threads
    /// (1000..=1e10).
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u64).range(1000..=10_000_000_000))]
    pub mutex_ops: u64,
    /// kc-stash, kc-cache, kc-tree: records per run, split evenly over the threads
    /// (1000..=1e9).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1000..=1_000_000_000))]
    pub kc_records: u64,
    /// The interposer; default: $KLOCK_PRELOAD_LIB, else libklock_preload.so next to
    /// lockbench (or in its deps/, the newer), else built with
    /// `cargo build --release -p klock-preload`.
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// Write the records as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

impl PreloadArgs {
    /// The settings a run's work comes from.
    pub fn settings(&self) -> Settings {
        Settings {
            duration: self.run.duration,
            mutex_ops: self.mutex_ops,
            kc_records: self.kc_records,
        }
    }
}

/// A scratch directory for the workloads' files (`/dev/shm` when it is usable, so
/// the file-backed workloads do not wait on a disk), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, CliError> {
        let shm = Path::new("/dev/shm");
        let base =
            if shm.is_dir() && std::fs::metadata(shm).is_ok_and(|m| !m.permissions().readonly()) {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            };
        let dir = base.join(format!("lockbench-preload-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every (workload, T) point on both sides, `--runs` times, interleaved (the order of
/// the two sides alternates between repetitions); failures are reported as they happen.
fn run_points(a: &PreloadArgs, ws: &[&Workload], lib: &Path, scratch: &Path) -> Vec<RunResult> {
    let sides = [GLIBC, KLOCK].map(|name| Side {
        name,
        preload: (name == KLOCK).then_some(lib),
    });
    let mut gate = a.run.gate();
    // The gate only waits for quiet before a run (the workload's own processes are
    // foreign to it, so it cannot judge the run itself); bounded for busy machines.
    gate.max_wait = Duration::from_secs(1);
    gate.budget = Some(Duration::from_secs(60));
    let sched = Schedule {
        swap_pairs: true,
        ..Schedule::new(a.run.runs as usize, gate)
    };
    let mut points: Vec<(&Workload, usize, &Side)> = Vec::new();
    for &w in ws {
        for &t in &a.threads.0 {
            points.extend(sides.iter().map(|s| (w, t, s)));
        }
    }
    let units = run_units(a.run.window()) + 500;
    let prog = a
        .run
        .progress(units * points.len() as u64 * a.run.runs as u64);
    let step = |(w, t, side): &(&Workload, usize, &Side)| Step {
        label: format!("preload {} T={t} {}", w.name, side.name),
        units,
        noise: 0,
    };
    let settings = a.settings();
    let mut nth = vec![0; points.len()];
    let done = interleave(&points, &sched, &prog, step, |i, (w, t, side)| {
        nth[i] += 1;
        let r = measure(w, *t, side, &settings, scratch);
        if let Err(e) = &r {
            prog.println(&format!(
                "lockbench preload: {} T={t} {} run {} failed: {e}",
                w.name, side.name, nth[i]
            ));
        }
        r
    });
    prog.finish();
    (done.into_iter())
        .map(|d| {
            let (w, t, side) = points[d.point];
            RunResult {
                workload: w.name.into(),
                threads: t,
                side: side.name.into(),
                value: d.out.as_ref().ok().copied(),
                error: d.out.err().unwrap_or_default(),
                steal_ns: d.steal_ns,
                gate_flagged: gate.enabled && !d.quiet,
            }
        })
        .collect()
}

/// Runs `lockbench preload`; returns the exit status.
pub fn run(a: &PreloadArgs) -> Result<i32, CliError> {
    let ws = select(&a.workloads)?;
    check_programs(&ws)?;
    let lib = find_lib(a.lib.as_deref())?;
    check_loads(&lib)?;
    if lib.components().any(|c| c.as_os_str() == "debug") {
        eprintln!(
            "lockbench preload: warning: {} looks like a debug build; its numbers mean little",
            lib.display()
        );
    }
    let scratch = Scratch::new()?;
    let mut machine = Machine::probe();
    let results = run_points(a, &ws, &lib, &scratch.0);
    machine.steal_ms_during += results.iter().map(|r| r.steal_ns / 1_000_000).sum::<u64>();
    let recs = records(&results, &ws, &a.threads.0, a.run.duration);
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "(default)".into());
    super::out(&format!(
        "\nlockbench preload: {} | online CPUs {} | kernel {}{} | {} | KLOCK_MUTEX={} KLOCK_RWLOCK={} KLOCK_SPIN={} | steal during runs {} ms\n",
        machine.cpu_model,
        machine.online_cpus,
        machine.kernel,
        if machine.hypervisor { " (VM)" } else { "" },
        lib.display(),
        env("KLOCK_MUTEX"),
        env("KLOCK_RWLOCK"),
        env("KLOCK_SPIN"),
        machine.steal_ms_during,
    ));
    super::out(&render(&recs, &ws, &a.threads.0, a.run.runs));
    let failed: Vec<&RunResult> = results.iter().filter(|r| r.value.is_none()).collect();
    if let Some(f) = failed.first() {
        super::out(&format!(
            "\n{} run(s) failed; first: {} T={} {}: {}\n",
            failed.len(),
            f.workload,
            f.threads,
            f.side,
            f.error
        ));
    }
    let flagged = results.iter().filter(|r| r.gate_flagged).count();
    if flagged > 0 {
        super::out(&format!(
            "\nidle gate: {flagged} of {} runs started without reaching quiet (busy machine)\n",
            results.len()
        ));
    }
    let report = Report {
        machine,
        command: super::command_line(),
        results: recs,
    };
    if let Some(p) = &a.run.json {
        super::write_file(p, &report.to_json())?;
    }
    if let Some(p) = &a.csv {
        super::write_file(p, &crate::record::to_csv(&report.results))?;
    }
    Ok(if failed.is_empty() { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    fn parse(args: &str) -> Result<PreloadArgs, String> {
        crate::exp::parse_args(&args.split_whitespace().collect::<Vec<_>>())
    }
    fn names(ws: &[&Workload]) -> Vec<&'static str> {
        ws.iter().map(|w| w.name).collect()
    }

    #[test]
    fn defaults_and_bad_flags() {
        let a = parse("").unwrap();
        assert_eq!(a.threads.0, vec![2, 4, 8, 16]);
        assert_eq!((a.run.duration, a.run.runs), (2.0, 3));
        assert_eq!((a.mutex_ops, a.kc_records), (20_000_000, 1_000_000));
        let ws = select(&a.workloads).unwrap();
        assert_eq!(
            names(&ws),
            [
                "sysbench-threads",
                "sysbench-mutex",
                "stress-mutex",
                "memcached"
            ]
        );
        let a = parse("--workloads kc-stash,kc-cache,kc-tree,pigz").unwrap();
        assert_eq!(
            names(&select(&a.workloads).unwrap()),
            ["kc-stash", "kc-cache", "kc-tree", "pigz"]
        );
        for (args, allowed) in [
            ("--runs 0", "1..=100"),
            ("--threads 0", "1..=1024"),
            ("--duration -1", "> 0"),
            ("--mutex-ops 5", "1000.."),
            ("--kc-records 10", "1000.."),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(allowed), "{e}");
        }
        for (name, allowed) in [("sysbench", "stress-pthread"), ("kc", "pigz")] {
            let e = select(&[name.into()]).unwrap_err().0;
            assert!(e.contains(&format!("unknown workload '{name}'")) && e.contains(allowed));
        }
        assert!(select(&[]).is_err());
    }
}

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
//! | `nested` | lockbench's `nested T I/T` (C, built here): 64 mutexes, each thread takes 2..4 of them in increasing index order, I = `--nested-iters` | lock ops/s (timed inside the program) |
//! | `held-cost-0`, `-1`, `-3`, `-new1` (`held-cost` = all four) | lockbench's `held_cost` (C, built here): one thread, an uncontended lock+unlock of a fresh mutex with 0, 1, 3 others held; `new1`: N distinct fresh mutexes once each with 1 held | ns per pair (min of 9 loops); runs at T = 1 only |
//!
//! R is `--kc-records` (default 10⁶), split evenly over the T threads.
//!
//! `--lockdep` adds a third side, `klock_lockdep`: the interposer with
//! `KLOCK_LOCKDEP=1` (lock-order validation), interleaved with the others, and a
//! table of klock+lockdep against klock (their ratio, the slowdown, its target of
//! at most 1.5x on nested, sysbench-mutex and the kc-* workloads, and the
//! `possible deadlock` reports counted in the runs' stderr). For `nested` it also
//! adds two more sides, unless `--no-sanitizers`: the program built with
//! `cc -O2 -fsanitize=thread` under `TSAN_OPTIONS=detect_deadlocks=1` (1/10 of the
//! iterations), and under `valgrind --tool=helgrind` (1/1000); a side whose tool
//! is missing is skipped with a note. `KLOCK_LOCKDEP` and `KLOCK_LOCKDEP_FILE` are
//! then removed from the other sides' environment (without `--lockdep` they reach
//! the preloaded runs unchanged).
//!
//! Every (workload, T) point runs `--runs` times with and without the interposer,
//! interleaved (the order alternates between repetitions; with `--lockdep` each
//! repetition runs every klock, klock+lockdep pair first, the two alternating, then
//! the glibc and sanitizer runs); the table shows the
//! medians, their ratio (klock / glibc; > 1 means klock is faster) and each side's
//! spread ((max − min) / median). `KLOCK_MUTEX`, `KLOCK_RWLOCK`, `KLOCK_SPIN` in the
//! environment reach the preloaded runs.
//!
//! `--json` writes a lockbench report: one record per (workload, T, side) with
//! `experiment = "preload"`, `lock = "glibc"`, `"klock_preload"`, `"klock_lockdep"`,
//! `"tsan"` or `"helgrind"`,
//! `params.workload` = the workload name and `throughput_mops` = the workload's own
//! metric in millions (events/s, lock ops/s, bogo ops/s, TPS, record ops/s, MB/s;
//! held-cost: lock+unlock pairs/s, 1000 / ns per pair). A
//! failed run (non-zero exit, crash, timeout, output without the metric, a Kyoto
//! Cabinet record count that does not match) is counted in `collapsed_runs`, and
//! makes the exit status 1.
//!
//! Example: `lockbench preload --threads 2,8 --runs 3 --duration 2 --json target/preload.json`;
//! `lockbench preload --lockdep --workloads nested,held-cost,sysbench-mutex,kc-cache --threads 8 --runs 5`.
//!
//! Here: the flags and the driver (every point on both sides, interleaved). The
//! workloads are data ([`workloads::ALL`], one row each), read by [`parsers`]; one
//! run is [`measure`]; the records, table and report section are [`results`]; the
//! subprocess harness is [`crate::exp::proc`].

pub mod cprog;
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
use cprog::Built;
use measure::{GLIBC, HELGRIND, KLOCK, LOCKDEP, Side, TSAN, measure};
use results::{RunResult, records, render, render_lockdep};
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
    /// pigz (condvars), nested (lockbench's C program: nested mutexes in one order),
    /// held-cost-0, held-cost-1, held-cost-3, held-cost-new1 (lockbench's C program:
    /// ns per uncontended lock+unlock with 0, 1, 3 others held; single-threaded, T = 1
    /// only), held-cost (or held_cost: all four).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_WORKLOADS)]
    pub workloads: Vec<String>,
    /// Also run the interposer with KLOCK_LOCKDEP=1 (lock-order validation) as a third
    /// side, interleaved, and print klock+lockdep against klock; for nested also the
    /// ThreadSanitizer build (TSAN_OPTIONS=detect_deadlocks=1, 1/10 of the iterations)
    /// and helgrind (valgrind --tool=helgrind, 1/1000), each skipped with a note when
    /// its tool is missing.
    #[arg(long)]
    pub lockdep: bool,
    /// With --lockdep: leave out the ThreadSanitizer and helgrind sides.
    #[arg(long, requires = "lockdep")]
    pub no_sanitizers: bool,
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
    /// nested: iterations (each 2..4 nested locks) per run, split evenly over the
    /// threads (1000..=1e10).
    #[arg(long, default_value_t = 12_000_000, value_parser = clap::value_parser!(u64).range(1000..=10_000_000_000))]
    pub nested_iters: u64,
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
            nested_iters: self.nested_iters,
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

/// The sides a run measures and how the workloads' points are ordered.
struct Plan<'a> {
    /// `--lockdep`.
    lockdep: bool,
    /// The sanitizer sides that can run ([`TSAN`], [`HELGRIND`]).
    sanitizers: Vec<&'static str>,
    /// lockbench's C programs, when a workload needs them.
    built: Option<Built>,
    /// The interposer.
    lib: &'a Path,
}

impl Plan<'_> {
    fn side(&self, name: &'static str) -> Side<'_> {
        Side {
            name,
            preload: (name == KLOCK || name == LOCKDEP).then_some(self.lib),
            lockdep_run: self.lockdep,
        }
    }
    /// Every (workload, T, side) point in run order: without `--lockdep`, per
    /// (workload, T) glibc then klock; with it, every (klock, klock+lockdep) pair
    /// first (so the pair the table compares alternates its order between
    /// repetitions), then the glibc runs, then the sanitizer runs.
    fn points<'w>(
        &self,
        ws: &[&'w Workload],
        threads: &[usize],
    ) -> Vec<(&'w Workload, usize, &'static str)> {
        let wt =
            || (ws.iter()).flat_map(|&w| w.thread_counts(threads).into_iter().map(move |t| (w, t)));
        if !self.lockdep {
            return wt()
                .flat_map(|(w, t)| [GLIBC, KLOCK].map(|s| (w, t, s)))
                .collect();
        }
        let mut v: Vec<_> = wt()
            .flat_map(|(w, t)| [KLOCK, LOCKDEP].map(|s| (w, t, s)))
            .collect();
        v.extend(wt().map(|(w, t)| (w, t, GLIBC)));
        for (w, t) in wt().filter(|(w, _)| w.sanitize) {
            v.extend(self.sanitizers.iter().map(|&s| (w, t, s)));
        }
        v
    }
}

/// Every (workload, T) point on every side, `--runs` times, interleaved (see
/// [`Plan::points`]); failures are reported as they happen.
fn run_points(a: &PreloadArgs, ws: &[&Workload], plan: &Plan, scratch: &Path) -> Vec<RunResult> {
    let mut gate = a.run.gate();
    // The gate only waits for quiet before a run (the workload's own processes are
    // foreign to it, so it cannot judge the run itself); bounded for busy machines.
    gate.max_wait = Duration::from_secs(1);
    gate.budget = Some(Duration::from_secs(60));
    let sched = Schedule {
        swap_pairs: true,
        ..Schedule::new(a.run.runs as usize, gate)
    };
    let points: Vec<(&Workload, usize, Side)> = (plan.points(ws, &a.threads.0).into_iter())
        .map(|(w, t, s)| (w, t, plan.side(s)))
        .collect();
    let units = run_units(a.run.window()) + 500;
    let prog = a
        .run
        .progress(units * points.len() as u64 * a.run.runs as u64);
    let step = |(w, t, side): &(&Workload, usize, Side)| Step {
        label: format!("preload {} T={t} {}", w.name, side.name),
        units,
        noise: 0,
    };
    let settings = a.settings();
    let mut nth = vec![0; points.len()];
    let done = interleave(&points, &sched, &prog, step, |i, (w, t, side)| {
        nth[i] += 1;
        let r = measure(w, *t, side, &settings, scratch, plan.built.as_ref());
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
            let (w, t, side) = &points[d.point];
            RunResult {
                workload: w.name.into(),
                threads: *t,
                side: side.name.into(),
                value: d.out.as_ref().ok().map(|m| m.value),
                reports: d.out.as_ref().map_or(0, |m| m.reports),
                error: d.out.err().unwrap_or_default(),
                steal_ns: d.steal_ns,
                gate_flagged: gate.enabled && !d.quiet,
            }
        })
        .collect()
}

/// The plan of a run: its sides, lockbench's C programs built when a workload needs
/// them, and notes on the sanitizer sides that cannot run.
fn plan<'a>(
    a: &PreloadArgs,
    ws: &[&Workload],
    lib: &'a Path,
) -> Result<(Plan<'a>, Vec<String>), CliError> {
    let mut names: Vec<&str> = ws.iter().filter_map(|w| w.built()).collect();
    names.sort_unstable();
    names.dedup();
    let built = if names.is_empty() {
        None
    } else {
        Some(cprog::build(&crate::exp::preload_unc::build_dir(), &names)?)
    };
    let mut notes = Vec::new();
    let mut sanitizers = Vec::new();
    let sanitized: Vec<&str> = (ws.iter())
        .filter(|w| w.sanitize)
        .filter_map(|w| w.built())
        .collect();
    if a.lockdep && !a.no_sanitizers && !sanitized.is_empty() {
        let b = built.as_ref().expect("built with the sanitized workloads");
        match sanitized.iter().try_for_each(|n| cprog::build_tsan(b, n).map(drop)) {
            Ok(()) => sanitizers.push(TSAN),
            Err(e) => notes.push(format!(
                "ThreadSanitizer side skipped (install gcc's libtsan, Debian package libtsan2 or gcc): {e}"
            )),
        }
        if crate::exp::proc::in_path("valgrind", &std::env::var_os("PATH").unwrap_or_default()) {
            sanitizers.push(HELGRIND);
        } else {
            notes.push(
                "helgrind side skipped: valgrind not found in PATH (apt-get install valgrind)"
                    .into(),
            );
        }
    }
    Ok((
        Plan {
            lockdep: a.lockdep,
            sanitizers,
            built,
            lib,
        },
        notes,
    ))
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
    let (plan, notes) = plan(a, &ws, &lib)?;
    for n in &notes {
        eprintln!("lockbench preload: {n}");
    }
    let scratch = Scratch::new()?;
    let mut machine = Machine::probe();
    let results = run_points(a, &ws, &plan, &scratch.0);
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
    if a.lockdep {
        super::out("\n");
        super::out(&render_lockdep(
            &recs,
            &results,
            &ws,
            &a.threads.0,
            a.run.runs,
        ));
        for n in &notes {
            super::out(&format!("note: {n}\n"));
        }
    }
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

    #[test]
    fn lockdep_flags_and_points() {
        let a = parse("").unwrap();
        assert!(!a.lockdep && !a.no_sanitizers);
        assert_eq!(a.nested_iters, 12_000_000);
        let a = parse("--lockdep --no-sanitizers --nested-iters 5000").unwrap();
        assert!(a.lockdep && a.no_sanitizers);
        assert_eq!(a.settings().nested_iters, 5000);
        let e = parse("--no-sanitizers").unwrap_err();
        assert!(e.contains("--lockdep"), "{e}");
        let e = parse("--nested-iters 10").unwrap_err();
        assert!(e.contains("1000.."), "{e}");
        let ws = select(&["nested".into(), "held-cost-1".into(), "kc-cache".into()]).unwrap();
        let lib = Path::new("/x.so");
        let mut plan = Plan {
            lockdep: false,
            sanitizers: vec![TSAN, HELGRIND],
            built: None,
            lib,
        };
        let show = |plan: &Plan| -> Vec<String> {
            (plan.points(&ws, &[2, 8]).iter())
                .map(|(w, t, s)| format!("{} {t} {s}", w.name))
                .collect()
        };
        // Without --lockdep: glibc, klock per point, as before.
        assert_eq!(
            show(&plan),
            [
                "nested 2 glibc",
                "nested 2 klock_preload",
                "nested 8 glibc",
                "nested 8 klock_preload",
                "held-cost-1 1 glibc",
                "held-cost-1 1 klock_preload",
                "kc-cache 2 glibc",
                "kc-cache 2 klock_preload",
                "kc-cache 8 glibc",
                "kc-cache 8 klock_preload",
            ]
        );
        plan.lockdep = true;
        let p = show(&plan);
        assert_eq!(p.len(), 5 * 3 + 2 * 2);
        for (i, pair) in p[..10].chunks(2).enumerate() {
            assert!(pair[0].ends_with(" klock_preload"), "{i}: {pair:?}");
            assert_eq!(pair[1], pair[0].replace("klock_preload", "klock_lockdep"));
        }
        assert!(p[10..15].iter().all(|s| s.ends_with(" glibc")));
        assert_eq!(
            p[15..],
            [
                "nested 2 tsan",
                "nested 2 helgrind",
                "nested 8 tsan",
                "nested 8 helgrind"
            ]
        );
        assert_eq!(plan.side(LOCKDEP).preload, Some(lib));
        assert_eq!(plan.side(TSAN).preload, None);
    }
}

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

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::proc::{Finished, kill_group, run_captured, tail};
use super::{CliError, RunArgs, Schedule, Step, ThreadList, interleave, parse_threads};
use crate::progress::run_units;
use crate::record::{Params, Record, Report};
use crate::stats::{first_seen, median, sorted_distinct, spread};
use crate::sys::Machine;
use crate::table::{Section, Table};
use crate::verdict::Sample;

/// The preload library's file name.
pub const LIB: &str = "libklock_preload.so";

/// Record `lock` of the runs without the interposer.
pub const GLIBC: &str = "glibc";
/// Record `lock` of the runs with the interposer.
pub const KLOCK: &str = "klock_preload";

/// A workload: name, programs it needs (with their Debian package), metric unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `sysbench threads`, one lock, yield inside.
    SysbenchThreads,
    /// `sysbench mutex`, one mutex, no loops outside.
    SysbenchMutex,
    /// `stress-ng --mutex`.
    StressMutex,
    /// `stress-ng --pthread`.
    StressPthread,
    /// memcached + memcaslap.
    Memcached,
    /// Kyoto Cabinet `kcstashtest order`: set, get, remove; rwlock-heavy.
    KcStash,
    /// Kyoto Cabinet `kccachetest wicked`: random mixed operations.
    KcCache,
    /// Kyoto Cabinet `kctreetest order` on a file: set, get, remove.
    KcTree,
    /// pigz compressing a generated file.
    Pigz,
}

/// All workloads, in table order.
pub const ALL: [Workload; 9] = [
    Workload::SysbenchThreads,
    Workload::SysbenchMutex,
    Workload::StressMutex,
    Workload::StressPthread,
    Workload::Memcached,
    Workload::KcStash,
    Workload::KcCache,
    Workload::KcTree,
    Workload::Pigz,
];

/// Default `--workloads`.
pub const DEFAULT_WORKLOADS: &str = "sysbench-threads,sysbench-mutex,stress-mutex,memcached";

/// (program, Debian package) pairs.
type Programs = &'static [(&'static str, &'static str)];

/// A workload's `--workloads` name, metric unit, whether a run is a fixed amount of
/// work (`--kc-records`, `--mutex-ops`, a fixed input) rather than `--duration`
/// seconds, and the (program, Debian package) pairs it needs; in [`ALL`]'s order.
#[rustfmt::skip]
const SPECS: [(&str, &str, bool, Programs); 9] = [
    ("sysbench-threads", "events/s", false, &[("sysbench", "sysbench")]),
    ("sysbench-mutex", "lock ops/s", true, &[("sysbench", "sysbench")]),
    ("stress-mutex", "bogo ops/s", false, &[("stress-ng", "stress-ng")]),
    ("stress-pthread", "bogo ops/s", false, &[("stress-ng", "stress-ng")]),
    ("memcached", "TPS", false, &[("memcached", "memcached"), ("memcaslap", "libmemcached-tools")]),
    ("kc-stash", "record ops/s", true, &[("kcstashtest", "kyotocabinet-utils")]),
    ("kc-cache", "record ops/s", true, &[("kccachetest", "kyotocabinet-utils")]),
    ("kc-tree", "record ops/s", true, &[("kctreetest", "kyotocabinet-utils")]),
    ("pigz", "MB/s", true, &[("pigz", "pigz")]),
];

impl Workload {
    /// The `--workloads` name.
    pub fn name(self) -> &'static str {
        SPECS[self as usize].0
    }
    /// The metric's unit.
    pub fn unit(self) -> &'static str {
        SPECS[self as usize].1
    }
    /// Whether a run is a fixed amount of work rather than `--duration` seconds.
    pub fn fixed_work(self) -> bool {
        SPECS[self as usize].2
    }
    /// (program, Debian package) pairs it needs.
    pub fn programs(self) -> Programs {
        SPECS[self as usize].3
    }
    /// Parses a `--workloads` name.
    pub fn parse(s: &str) -> Option<Workload> {
        ALL.into_iter().find(|w| w.name() == s)
    }
}

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

/// Resolves `--workloads`.
pub fn select(names: &[String]) -> Result<Vec<Workload>, CliError> {
    let all = ALL.map(|w| (w.name(), w));
    Ok(super::pick(names, &all, "workload")?
        .into_iter()
        .map(|x| x.1)
        .collect())
}

/// Checks that every program the workloads need is installed.
pub fn check_programs(ws: &[Workload]) -> Result<(), CliError> {
    check_programs_in(ws, &std::env::var_os("PATH").unwrap_or_default())
}

/// [`check_programs`] against the `$PATH` value `path`.
pub fn check_programs_in(ws: &[Workload], path: &std::ffi::OsStr) -> Result<(), CliError> {
    let mut missing = Vec::new();
    for w in ws {
        for (prog, pkg) in w.programs() {
            let m = format!(
                "{prog} (for {}; Debian package {pkg}: apt-get install {pkg})",
                w.name()
            );
            let found = std::env::split_paths(path).any(|d| d.join(prog).is_file());
            if !found && !missing.contains(&m) {
                missing.push(m);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(CliError(format!(
        "not found in PATH: {}; or leave those workloads out with --workloads",
        missing.join(", ")
    )))
}

/// Finds (or builds) the interposer.
pub fn find_lib(explicit: Option<&Path>) -> Result<PathBuf, CliError> {
    let check = |p: PathBuf, what: &str| {
        if p.is_file() {
            Ok(std::fs::canonicalize(&p).unwrap_or(p))
        } else {
            Err(CliError(format!("{what} {} is not a file", p.display())))
        }
    };
    if let Some(p) = explicit {
        return check(p.to_path_buf(), "--lib");
    }
    if let Some(p) = std::env::var_os("KLOCK_PRELOAD_LIB").filter(|p| !p.is_empty()) {
        return check(PathBuf::from(p), "KLOCK_PRELOAD_LIB=");
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        // Next to lockbench, or in deps/ when cargo built the library only as a
        // dependency (then the copy next to lockbench may be stale): the newer.
        let newest = [dir.join(LIB), dir.join("deps").join(LIB)]
            .into_iter()
            .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
            .max_by_key(|(t, _)| *t);
        if let Some((_, p)) = newest {
            return Ok(p);
        }
    }
    // The workspace root, from this crate's manifest directory at build time.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let built = target.join("release").join(LIB);
    if root.join("crates/klock-preload/Cargo.toml").is_file() {
        eprintln!(
            "lockbench preload: {LIB} not found next to lockbench; building it (cargo build --release -p klock-preload)"
        );
        let st = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "-p", "klock-preload"])
            .current_dir(&root)
            .status();
        return match st {
            Ok(s) if s.success() && built.is_file() => Ok(built),
            Ok(s) => Err(CliError(format!(
                "`cargo build --release -p klock-preload` failed ({s}) or did not produce {}; \
                 give the library with --lib PATH",
                built.display()
            ))),
            Err(e) => Err(CliError(format!(
                "cannot run cargo to build {LIB} ({e}); build it with \
                 `cargo build --release -p klock-preload` or give --lib PATH"
            ))),
        };
    }
    Err(CliError(format!(
        "cannot find {LIB} (not next to lockbench, no workspace at {}); build it with \
         `cargo build --release -p klock-preload` or give --lib PATH / KLOCK_PRELOAD_LIB",
        root.display()
    )))
}

/// The value after `key` on its line (`key` then whitespace then a number, units
/// like `s` glued on are dropped).
fn value_after(text: &str, key: &str) -> Option<f64> {
    text.lines().rev().find_map(|l| {
        let i = l.find(key)?;
        let rest = l[i + key.len()..].trim_start();
        let num: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        num.parse().ok()
    })
}

/// sysbench threads: events per second (`total number of events` / `total time`).
pub fn parse_sysbench_threads(out: &str) -> Option<f64> {
    let ev = value_after(out, "total number of events:")?;
    let t = value_after(out, "total time:")?;
    (t > 0.0).then(|| ev / t)
}

/// sysbench mutex: lock operations per second (`ops` / `total time`).
pub fn parse_sysbench_mutex(out: &str, ops: u64) -> Option<f64> {
    let t = value_after(out, "total time:")?;
    (t > 0.0).then(|| ops as f64 / t)
}

/// stress-ng `--metrics-brief`: the stressor's bogo ops/s (real time).
pub fn parse_stress_ng(out: &str, stressor: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let rest = l.split_once("] ")?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        // stressor, bogo ops, real, usr, sys, bogo ops/s (real), bogo ops/s (usr+sys)
        if f.len() >= 6 && f[0] == stressor && f[1].parse::<u64>().is_ok() {
            f[5].parse().ok()
        } else {
            None
        }
    })
}

/// memcaslap: the final `TPS:` figure.
pub fn parse_memcaslap(out: &str) -> Option<f64> {
    value_after(out, "TPS:")
}

/// Kyoto Cabinet's `order` tests (`kcstashtest`, `kctreetest`): record operations
/// per second over the set, get and remove phases, `3 × records / Σ time:` (the
/// `time:` line of each phase), `records` being the total over all threads. `None`
/// unless the output ends with `ok`, all three phases report a time, and the record
/// count is `records` after setting and getting and 0 after removing (so a run that
/// lost or duplicated records never yields a number).
///
/// ```
/// let out = "setting records:\ncount: 4\ntime: 0.5\ngetting records:\ncount: 4\n\
///            time: 0.25\nremoving records:\ncount: 0 (0)\ntime: 0.25\n\
///            closing the database:\ntime: 0.001\nok\n";
/// assert_eq!(lockbench::exp::preload::parse_kc_order(out, 4), Some(12.0));
/// assert_eq!(lockbench::exp::preload::parse_kc_order(out, 5), None);
/// ```
pub fn parse_kc_order(out: &str, records: u64) -> Option<f64> {
    if out.lines().rev().find(|l| !l.trim().is_empty())?.trim() != "ok" {
        return None;
    }
    const PHASES: [&str; 3] = ["setting records:", "getting records:", "removing records:"];
    let mut phase: Option<usize> = None;
    let mut count: [Option<u64>; 3] = [None; 3];
    let mut time: [Option<f64>; 3] = [None; 3];
    let first_number = |rest: &str| -> Option<String> {
        let n: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!n.is_empty()).then_some(n)
    };
    for l in out.lines().map(str::trim) {
        if let Some(i) = PHASES.iter().position(|p| l == *p) {
            phase = Some(i);
        } else if l.ends_with(':') {
            // Another section ("opening the database:", "closing the database:").
            phase = None;
        } else if let Some(i) = phase {
            if let Some(rest) = l.strip_prefix("count:") {
                count[i] = count[i].or(first_number(rest).and_then(|n| n.parse().ok()));
            } else if let Some(rest) = l.strip_prefix("time:") {
                time[i] = first_number(rest).and_then(|n| n.parse().ok());
            }
        }
    }
    if count != [Some(records), Some(records), Some(0)] {
        return None;
    }
    let total: f64 = time.iter().map(|t| t.unwrap_or(f64::NAN)).sum();
    (total > 0.0).then(|| 3.0 * records as f64 / total)
}

/// Kyoto Cabinet's `wicked` test (`kccachetest`): `records / time:` (its one
/// `time:` line), `None` unless the output ends with `ok`.
///
/// ```
/// let out = "count: 9998 (9.998 thousand)\ntime: 0.5\nok\n";
/// assert_eq!(lockbench::exp::preload::parse_kc_wicked(out, 40000), Some(80000.0));
/// assert_eq!(lockbench::exp::preload::parse_kc_wicked("time: 0.5\nerror\n", 1), None);
/// ```
pub fn parse_kc_wicked(out: &str, records: u64) -> Option<f64> {
    if out.lines().rev().find(|l| !l.trim().is_empty())?.trim() != "ok" {
        return None;
    }
    let t = value_after(out, "time:")?;
    (t > 0.0).then(|| records as f64 / t)
}

/// One measured run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Workload name.
    pub workload: String,
    /// Threads.
    pub threads: usize,
    /// `glibc` or `klock_preload`.
    pub side: String,
    /// The metric (None: the run failed).
    pub value: Option<f64>,
    /// Why it failed (empty when it did not).
    pub error: String,
    /// Steal time during the run, ns.
    pub steal_ns: u64,
    /// Whether the idle gate gave up waiting for quiet before it.
    pub gate_flagged: bool,
}

/// How to run one side.
struct Side<'a> {
    name: &'static str,
    preload: Option<&'a Path>,
}

impl Side<'_> {
    fn command(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        if let Some(lib) = self.preload {
            let mut v = lib.as_os_str().to_os_string();
            if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
                v.push(":");
                v.push(old);
            }
            c.env("LD_PRELOAD", v);
        }
        c
    }
}

/// Runs one (workload, T, side) point once; `scratch` holds its files.
fn measure(
    w: Workload,
    t: usize,
    side: &Side,
    a: &PreloadArgs,
    scratch: &Path,
) -> Result<f64, String> {
    let d = a.run.duration;
    let secs = d.ceil().max(1.0) as u64;
    let timed = Some(Duration::from_secs_f64(d * 4.0 + 60.0));
    let per = (a.mutex_ops / t as u64).max(1);
    let stressor = w.name().trim_start_matches("stress-");
    // The program, its arguments and timeout, and its name in errors.
    let (prog, args, timeout, what) = match w {
        Workload::SysbenchThreads => (
            "sysbench",
            format!("threads --threads={t} --thread-locks=1 --thread-yields=100 --time={secs} run"),
            timed,
            "sysbench threads",
        ),
        Workload::SysbenchMutex => (
            "sysbench",
            format!("mutex --threads={t} --mutex-num=1 --mutex-locks={per} --mutex-loops=0 run"),
            Some(Duration::from_secs(300)),
            "sysbench mutex",
        ),
        Workload::StressMutex | Workload::StressPthread => (
            "stress-ng",
            format!("--{stressor} {t} -t {secs} --metrics-brief"),
            timed,
            "stress-ng",
        ),
        Workload::Memcached => return memcached(t, side, d),
        Workload::KcStash | Workload::KcCache | Workload::KcTree => {
            return kyoto(w, t, side, a.kc_records, scratch);
        }
        Workload::Pigz => return pigz(t, side, scratch),
    };
    let mut c = side.command(prog);
    c.args(args.split_whitespace());
    let f = run_captured(c, timeout);
    let v = match w {
        Workload::SysbenchThreads => parse_sysbench_threads(&f.stdout),
        Workload::SysbenchMutex => parse_sysbench_mutex(&f.stdout, per * t as u64),
        _ => parse_stress_ng(&format!("{}\n{}", f.stdout, f.stderr), stressor),
    };
    f.ok.then_some(v).flatten().ok_or_else(|| f.error(what))
}

/// A Kyoto Cabinet test driver with `--kc-records` split over `t` threads.
fn kyoto(w: Workload, t: usize, side: &Side, records: u64, scratch: &Path) -> Result<f64, String> {
    let per = (records / t as u64).max(1);
    let total = per * t as u64;
    let (prog, mode) = match w {
        Workload::KcStash => ("kcstashtest", "order"),
        Workload::KcCache => ("kccachetest", "wicked"),
        _ => ("kctreetest", "order"),
    };
    let mut c = side.command(prog);
    c.args([mode.to_string(), "-th".into(), t.to_string()]);
    // kctreetest works on a file; the others in memory.
    let file = (w == Workload::KcTree)
        .then(|| scratch.join(format!("kctree-{}-{}.kct", std::process::id(), side.name)));
    if let Some(f) = &file {
        let _ = std::fs::remove_file(f);
        c.arg(f);
    }
    c.arg(per.to_string());
    let f = run_captured(c, Some(Duration::from_secs(300)));
    if let Some(f) = &file {
        let _ = std::fs::remove_file(f);
    }
    let v = if mode == "order" {
        parse_kc_order(&f.stdout, total)
    } else {
        parse_kc_wicked(&f.stdout, total)
    };
    match f.ok.then_some(v).flatten() {
        Some(v) => Ok(v),
        None if f.ok => Err(format!(
            "{prog}: exit 0 but no metric, or a wrong record count (want {}): {}",
            if mode == "order" {
                format!("{total} after setting, 0 after removing")
            } else {
                "a final `ok`".to_string()
            },
            tail(&f.stdout)
        )),
        None => Err(f.error(prog)),
    }
}

/// Size of pigz's input file.
pub const PIGZ_INPUT_BYTES: usize = 20 << 20;

/// `PIGZ_INPUT_BYTES` of text-like data (words, numbers, punctuation from a fixed
/// xorshift sequence; it compresses about 3.5:1, so every block is real work), in
/// `scratch` (written once per lockbench run).
fn pigz_input(scratch: &Path) -> Result<PathBuf, String> {
    let path = scratch.join("pigz-input.txt");
    if path
        .metadata()
        .is_ok_and(|m| m.len() == PIGZ_INPUT_BYTES as u64)
    {
        return Ok(path);
    }
    const WORDS: [&str; 16] = [
        "lock", "mutex", "futex", "queue", "spin", "sleep", "wake", "owner", "waiter", "kernel",
        "thread", "reader", "writer", "the", "of", "and",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut data = String::with_capacity(PIGZ_INPUT_BYTES + 32);
    while data.len() < PIGZ_INPUT_BYTES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 16 {
            0 => data.push_str(&format!("{} ", x >> 44)),
            1 => data.push_str(".\n"),
            2 => data.push_str(", "),
            _ => {
                data.push_str(WORDS[(x >> 8) as usize % WORDS.len()]);
                data.push(' ');
            }
        }
    }
    data.truncate(PIGZ_INPUT_BYTES);
    std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// pigz with `t` threads and 32 KiB blocks (a condvar broadcast per block) on the
/// generated input; input MB/s over the wall time of the run (measured here, to the
/// 10 ms polling step of the run loop).
fn pigz(t: usize, side: &Side, scratch: &Path) -> Result<f64, String> {
    let input = pigz_input(scratch)?;
    let gz = input.with_extension("txt.gz");
    let _ = std::fs::remove_file(&gz);
    let mut c = side.command("pigz");
    c.args(["-p".to_string(), t.to_string(), "-b".into(), "32".into()])
        .args(["-k", "-f", "--"])
        .arg(&input);
    let t0 = Instant::now();
    let f = run_captured(c, Some(Duration::from_secs(300)));
    let secs = t0.elapsed().as_secs_f64();
    let gz_len = gz.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&gz);
    if !f.ok {
        return Err(f.error("pigz"));
    }
    if gz_len == 0 || gz_len as usize >= PIGZ_INPUT_BYTES / 2 {
        return Err(format!(
            "pigz: exit 0 but {} is {gz_len} bytes for {PIGZ_INPUT_BYTES} input bytes",
            gz.display()
        ));
    }
    Ok(PIGZ_INPUT_BYTES as f64 / 1e6 / secs)
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

/// A free loopback TCP port (bound and released; a race with another process
/// taking it is possible and then shows as a failed run).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// A memcached server of this run, stopped (its group TERMed, then KILLed) on drop.
struct Server(std::process::Child);

impl Server {
    /// Stops it; `Some(status)` if it had already exited on its own.
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let early = self.0.try_wait().ok().flatten();
        kill_group(self.0.id(), libc::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return early;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(self.0.id(), libc::SIGKILL);
        let _ = self.0.wait();
        early
    }
    /// The tail of its stderr.
    fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(mut e) = self.0.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        tail(&s)
    }
}

/// memcached with `t` threads on a free loopback port, driven by memcaslap (not
/// preloaded) for `d` seconds: its TPS.
fn memcached(t: usize, side: &Side, d: f64) -> Result<f64, String> {
    let port = free_port()?;
    let mut c = side.command("memcached");
    c.args(["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"])
        .args(["-t", &t.to_string(), "-m", "64"]);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        c.args(["-u", "root"]);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut server = Server(
        c.spawn()
            .map_err(|e| format!("cannot start memcached: {e}"))?,
    );
    // Ready when it accepts a connection (at most 5 s).
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(s)) = server.0.try_wait() {
            return Err(format!(
                "memcached exited at start ({s}): {}",
                server.stderr()
            ));
        }
        if t0.elapsed() > Duration::from_secs(5) {
            server.stop();
            return Err("memcached did not accept connections within 5 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut client = Command::new("memcaslap");
    client
        .args(["-s", &format!("127.0.0.1:{port}"), "-T", "2", "-c", "64"])
        .args(["-t", &format!("{}s", d.ceil().max(1.0) as u64)]);
    let f = run_captured(client, Some(Duration::from_secs_f64(d * 4.0 + 60.0)));
    if let Some(s) = server.stop() {
        return Err(format!(
            "memcached died during the run ({s}): {}",
            server.stderr()
        ));
    }
    f.ok.then(|| parse_memcaslap(&f.stdout))
        .flatten()
        .ok_or_else(|| f.error("memcaslap"))
}

/// Checks that the dynamic loader accepts the library (`LD_PRELOAD` errors are
/// otherwise only a warning on each child's stderr, and the "klock" side would
/// silently measure glibc).
pub fn check_loads(lib: &Path) -> Result<(), CliError> {
    let mut c = Command::new("sh");
    c.args(["-c", "exit 0"]).env("LD_PRELOAD", lib);
    let f: Finished = run_captured(c, Some(Duration::from_secs(30)));
    if !f.ok || f.stderr.contains("LD_PRELOAD") || f.stderr.contains("ld.so") {
        return Err(CliError(format!(
            "{} does not preload cleanly ({}): {}",
            lib.display(),
            f.status,
            tail(&f.stderr)
        )));
    }
    Ok(())
}

/// Per (workload, T, side): the records, in workload × T × side order.
pub fn records(runs: &[RunResult], ws: &[Workload], threads: &[usize], d: f64) -> Vec<Record> {
    let mut v = Vec::new();
    for w in ws {
        for &t in threads {
            for side in [GLIBC, KLOCK] {
                let mine: Vec<&RunResult> = runs
                    .iter()
                    .filter(|r| r.workload == w.name() && r.threads == t && r.side == side)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let vals: Vec<f64> = mine
                    .iter()
                    .filter_map(|r| r.value)
                    .map(|x| x / 1e6)
                    .collect();
                let failed = mine.iter().filter(|r| r.value.is_none()).count();
                v.push(Record {
                    experiment: "preload".into(),
                    lock: side.into(),
                    threads: t,
                    params: Params {
                        workload: w.name().into(),
                        duration_s: if w.fixed_work() { 0.0 } else { d },
                        quota_cpus: crate::quota::active(),
                        ..Params::default()
                    },
                    throughput_mops: if vals.is_empty() { 0.0 } else { median(&vals) },
                    spread: if vals.is_empty() { 0.0 } else { spread(&vals) },
                    runs_mops: vals.clone(),
                    runs: vals.len(),
                    collapsed: failed > 0,
                    collapsed_runs: failed,
                    steal_ms: mine.iter().map(|r| r.steal_ns).sum::<u64>() / 1_000_000,
                    gate_flagged_runs: mine.iter().filter(|r| r.gate_flagged).count(),
                    ..Record::default()
                });
            }
        }
    }
    v
}

fn fmt_metric(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The side-by-side table: one row per (workload, T).
pub fn render(recs: &[Record], ws: &[Workload], threads: &[usize], runs: u32) -> String {
    let mut t = Table::new(
        format!(
            "preload: glibc vs klock interposer, median of {runs} interleaved runs per side (ratio = klock / glibc; > 1: klock faster)"
        ),
        &[
            "workload",
            "metric",
            "T",
            "glibc",
            "klock preload",
            "ratio",
            "glibc spread",
            "klock spread",
            "failed g/k",
        ],
    );
    let get = |w: Workload, th: usize, side: &str| {
        recs.iter()
            .find(|r| r.params.workload == w.name() && r.threads == th && r.lock == side)
    };
    fn ran(r: Option<&Record>) -> Option<&Record> {
        r.filter(|r| r.runs > 0)
    }
    for &w in ws {
        for &th in threads {
            let (g, k) = (get(w, th, GLIBC), get(w, th, KLOCK));
            if g.is_none() && k.is_none() {
                continue;
            }
            let val = |r| ran(r).map_or("FAILED".into(), |r| fmt_metric(r.throughput_mops * 1e6));
            let sp = |r| ran(r).map_or("-".into(), |r| format!("{:.0}%", r.spread * 100.0));
            let ratio = match (ran(g), ran(k)) {
                (Some(g), Some(k)) if g.throughput_mops > 0.0 => {
                    format!("{:.2}", k.throughput_mops / g.throughput_mops)
                }
                _ => "-".into(),
            };
            let failed = |r: Option<&Record>| r.map_or(0, |r| r.collapsed_runs);
            t.rows.push(vec![
                w.name().into(),
                w.unit().into(),
                th.to_string(),
                val(g),
                val(k),
                ratio,
                sp(g),
                sp(k),
                format!("{}/{}", failed(g), failed(k)),
            ]);
        }
    }
    t.to_text()
}

/// Every (workload, T) point on both sides, `--runs` times, interleaved (the order of
/// the two sides alternates between repetitions); failures are reported as they happen.
fn run_points(a: &PreloadArgs, ws: &[Workload], lib: &Path, scratch: &Path) -> Vec<RunResult> {
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
    let mut points: Vec<(Workload, usize, &Side)> = Vec::new();
    for &w in ws {
        for &t in &a.threads.0 {
            points.extend(sides.iter().map(|s| (w, t, s)));
        }
    }
    let units = run_units(a.run.window()) + 500;
    let prog = a
        .run
        .progress(units * points.len() as u64 * a.run.runs as u64);
    let step = |(w, t, side): &(Workload, usize, &Side)| Step {
        label: format!("preload {} T={t} {}", w.name(), side.name),
        units,
        noise: 0,
    };
    let mut nth = vec![0; points.len()];
    let done = interleave(&points, &sched, &prog, step, |i, (w, t, side)| {
        nth[i] += 1;
        let r = measure(*w, *t, side, a, scratch);
        if let Err(e) = &r {
            prog.println(&format!(
                "lockbench preload: {} T={t} {} run {} failed: {e}",
                w.name(),
                side.name,
                nth[i]
            ));
        }
        r
    });
    prog.finish();
    (done.into_iter())
        .map(|d| {
            let (w, t, side) = points[d.point];
            RunResult {
                workload: w.name().into(),
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

/// The preload section from its records: per workload, glibc against the
/// interposer with their ratio and verdict, and a chart of the ratios.
pub fn section(recs: &[Record], note: &str) -> Section {
    let workloads = first_seen(recs.iter().map(|r| r.params.workload.as_str()));
    let ts = sorted_distinct(recs.iter().map(|r| r.threads));
    let (mut tables, mut series) = (Vec::new(), Vec::new());
    for (wi, w) in workloads.iter().enumerate() {
        let (table, points) = workload_table(recs, w, &ts);
        tables.push(table);
        if wi < crate::chart::MAX_SERIES {
            series.push(crate::chart::Series {
                name: w.to_string(),
                points,
                bold: false,
                style: wi,
            });
        }
    }
    let charts = vec![crate::chart::line(&crate::chart::LineChart {
        title: "preload: klock_preload / glibc per program (> 1: the interposer is faster)".into(),
        x_desc: "threads".into(),
        y_desc: "ratio (bars: run range)".into(),
        x_labels: ts.iter().map(|t| t.to_string()).collect(),
        series,
        scale: crate::chart::Scale::Auto,
        reference: Some(1.0),
    })];
    Section {
        title: "preload: unmodified programs, glibc's locks against klock's interposer".into(),
        notes: vec![format!(
            "Each program runs with and without LD_PRELOAD=libklock_preload.so, interleaved; the programs' own metrics (events/s, lock ops/s, bogo ops/s, TPS) in millions. {note}"
        )],
        tables,
        charts,
    }
}

/// One workload's table (per thread count: both sides, their ratio with its range
/// and verdict, spreads, failures) and the ratio's chart points.
fn workload_table(
    recs: &[Record],
    w: &str,
    ts: &[usize],
) -> (Table, Vec<(usize, crate::chart::Value)>) {
    let get = |t: usize, side: &str| {
        (recs.iter()).find(|r| r.params.workload == w && r.threads == t && r.lock == side)
    };
    let mut table = Table::new(
        format!("preload {w}: millions of the program's own metric per second, median"),
        &[
            "T",
            "glibc",
            "klock_preload",
            "klock / glibc (run range)",
            "verdict",
            "spread glibc / klock",
            "failed runs glibc / klock",
        ],
    );
    let mut points = Vec::new();
    for (ti, &t) in ts.iter().enumerate() {
        let (Some(g), Some(k)) = (get(t, GLIBC), get(t, KLOCK)) else {
            continue;
        };
        let side = |r: &Record| Sample {
            median: r.throughput_mops,
            ..Sample::of_runs("", t, &r.lock, r.runs_mops.clone(), true, "")
        };
        let (ratio, lo, hi, o) = crate::verdict::compare_samples(&side(k), &side(g));
        table.rows.push(vec![
            t.to_string(),
            format!("{:.4}", g.throughput_mops),
            format!("{:.4}", k.throughput_mops),
            format!("{ratio:.2}x ({lo:.2}-{hi:.2})"),
            o.word().to_string(),
            format!("{:.1}% / {:.1}%", g.spread * 100.0, k.spread * 100.0),
            format!("{} / {}", g.collapsed_runs, k.collapsed_runs),
        ]);
        let (lo, hi) = (lo.min(ratio), hi.max(ratio));
        points.push((ti, crate::chart::Value::Finite { y: ratio, lo, hi }));
    }
    (table, points)
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
        super::super::parse_args(&args.split_whitespace().collect::<Vec<_>>())
    }
    use Workload::*;

    #[test]
    fn defaults_and_bad_flags() {
        let a = parse("").unwrap();
        assert_eq!(a.threads.0, vec![2, 4, 8, 16]);
        assert_eq!((a.run.duration, a.run.runs), (2.0, 3));
        assert_eq!((a.mutex_ops, a.kc_records), (20_000_000, 1_000_000));
        let ws = select(&a.workloads).unwrap();
        assert_eq!(ws, [SysbenchThreads, SysbenchMutex, StressMutex, Memcached]);
        let a = parse("--workloads kc-stash,kc-cache,kc-tree,pigz").unwrap();
        assert_eq!(
            select(&a.workloads).unwrap(),
            [KcStash, KcCache, KcTree, Pigz]
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
        for w in ALL {
            assert_eq!(Workload::parse(w.name()), Some(w));
        }
        assert_eq!(ALL.iter().filter(|w| w.fixed_work()).count(), 5);
    }

    #[test]
    fn missing_programs_name_the_package() {
        let none = std::ffi::OsStr::new("/nonexistent-klock-test");
        let e = check_programs_in(&[Memcached, StressMutex, KcStash, KcTree, Pigz], none);
        let e = e.unwrap_err().0;
        for want in [
            "memcaslap (for memcached; Debian package libmemcached-tools",
            "apt-get install stress-ng",
            "kcstashtest (for kc-stash; Debian package kyotocabinet-utils",
            "kctreetest (for kc-tree",
            "apt-get install pigz",
            "--workloads",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    const SYSBENCH_THREADS: &str = "General statistics:
    total time:                          2.0002s
    total number of events:              6433

Latency (ms):
         min:                                    0.05
";
    const SYSBENCH_MUTEX: &str = "General statistics:
    total time:                          0.0394s
    total number of events:              2
";
    const STRESS: &str = "stress-ng: info:  [17880] dispatching hogs: 2 mutex
stress-ng: metrc: [17880] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [17880]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [17880] mutex            700654      2.00      0.33      3.47    350045.31      184315.60
stress-ng: metrc: [17880] miscellaneous metrics:
stress-ng: metrc: [17880] mutex               1317.56 nanosecs per mutex (geometic mean of 2 instances)
";
    const MEMCASLAP: &str = "cmd_get: 222837
Run time: 2.0s Ops: 247629 TPS: 123805 Net_rate: 138.5M/s
";

    // `kcstashtest order -th 2 5` (Kyoto Cabinet 1.2.79), times edited.
    const KC_ORDER: &str = "<In-order Test>
  seed=327010342  rnum=5  thnum=2  rnd=0  etc=0  tran=0  bnum=-1  lv=0

opening the database:
count: 0
size: 8388664
memory: 147456
time: 0.000
setting records:
count: 10
size: 8388944
memory: 286720
time: 0.500
getting records:
count: 10
size: 8388944
memory: 286720
time: 0.250
removing records:
type: StashDB (stash database) (type=0x18)
opaque: 0
buckets: 0 (used=0) (load=0.00)
count: 0 (0)
size: 8388664 (8.000 MiB)
memory: 290816
time: 0.250
closing the database:
time: 0.002
ok
";
    // `kccachetest wicked -th 2 5`.
    const KC_WICKED: &str = "<Wicked Test>
  seed=327010352  rnum=5  thnum=2  itnum=1  opts=0  bnum=-1  capcnt=-1  capsiz=-1  lv=0

buckets: 1048583 (used=3) (load=1.00)
count: 3 (3) (capcnt=-1)
size: 8390733 (8.002 MiB) (capsiz=-1)
memory: 507904
time: 0.004
ok
";

    #[test]
    fn kyoto_parsers() {
        assert_eq!(parse_kc_order(KC_ORDER, 10), Some(30.0));
        assert_eq!(parse_kc_wicked(KC_WICKED, 10), Some(2500.0));
        // A count that does not match, a missing phase, no final `ok`: no number.
        assert_eq!(parse_kc_order(KC_ORDER, 12), None);
        for (from, to) in [
            ("count: 0 (0)", "count: 1 (1)"),
            ("getting records:", "getting:"),
            ("ok\n", "error\n"),
            ("time: 0.500", "time: x"),
        ] {
            assert_eq!(
                parse_kc_order(&KC_ORDER.replace(from, to), 10),
                None,
                "{to}"
            );
        }
        for (from, to) in [("ok", "error"), ("0.004", "0.000")] {
            assert_eq!(
                parse_kc_wicked(&KC_WICKED.replace(from, to), 10),
                None,
                "{to}"
            );
        }
    }

    #[test]
    fn parsers() {
        let v = parse_sysbench_threads(SYSBENCH_THREADS).unwrap();
        assert!((v - 6433.0 / 2.0002).abs() < 1e-6, "{v}");
        let v = parse_sysbench_mutex(SYSBENCH_MUTEX, 2_000_000).unwrap();
        assert!((v - 2e6 / 0.0394).abs() < 1e-3, "{v}");
        assert_eq!(parse_stress_ng(STRESS, "mutex"), Some(350045.31));
        assert_eq!(parse_stress_ng(STRESS, "pthread"), None);
        assert_eq!(parse_memcaslap(MEMCASLAP), Some(123805.0));
        assert_eq!(parse_sysbench_threads("garbage"), None);
        assert_eq!(parse_memcaslap(""), None);
    }

    #[test]
    fn records_and_table() {
        let r = |w: Workload, side: &str, v: Option<f64>| RunResult {
            workload: w.name().into(),
            threads: 2,
            side: side.into(),
            value: v,
            error: if v.is_none() { "boom" } else { "" }.into(),
            ..RunResult::default()
        };
        let runs = vec![
            r(SysbenchThreads, GLIBC, Some(1000.0)),
            r(SysbenchThreads, GLIBC, Some(1200.0)),
            r(SysbenchThreads, KLOCK, Some(2000.0)),
            r(SysbenchThreads, KLOCK, None),
            r(Memcached, GLIBC, None),
        ];
        let ws = [SysbenchThreads, Memcached];
        let recs = records(&runs, &ws, &[2], 2.0);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].lock, GLIBC);
        assert!((recs[0].throughput_mops - 0.0011).abs() < 1e-12);
        assert!((recs[0].spread - 200.0 / 1100.0).abs() < 1e-9);
        assert_eq!((recs[1].runs, recs[1].collapsed_runs), (1, 1));
        assert_eq!(recs[2].runs, 0);
        let text = render(&recs, &ws, &[2], 2);
        let row = text
            .lines()
            .find(|l| l.contains("sysbench-threads"))
            .unwrap();
        assert!(
            row.contains("1100") && row.contains("2000") && row.contains("1.82"),
            "{row}"
        );
        assert!(row.contains("0/1"), "{row}");
        let row = text.lines().find(|l| l.contains("| memcached")).unwrap();
        assert!(row.contains("FAILED"), "{row}");
        // The records survive the JSON round trip and the generic renderers.
        let rep = Report {
            machine: Machine::default(),
            command: "t".into(),
            results: recs,
        };
        let back = Report::from_json(&rep.to_json()).unwrap();
        assert_eq!(back.results.len(), 3);
        for (b, r) in back.results.iter().zip(&rep.results) {
            assert_eq!(
                (&b.lock, &b.params.workload, b.runs),
                (&r.lock, &r.params.workload, r.runs)
            );
            assert!((b.throughput_mops - r.throughput_mops).abs() < 1e-12);
        }
        let html = crate::html::render(&back);
        assert!(html.contains("klock_preload") && html.contains("sysbench-threads"));
        assert!(crate::table::render(&back).contains("preload, workload sysbench-threads"));
    }

    #[test]
    fn the_klock_side_preloads_the_library() {
        let side = Side {
            name: KLOCK,
            preload: Some(Path::new("/x.so")),
        };
        let c = side.command("true");
        let env: Vec<_> = c.get_envs().collect();
        assert!(env.iter().any(|(k, v)| *k == "LD_PRELOAD"
            && v.is_some_and(|v| v.to_string_lossy().starts_with("/x.so"))));
    }
}

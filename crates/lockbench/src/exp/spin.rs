//! `lockbench spin`: seed 001's experiment in user space.
//!
//! The seed timed a kernel build (`make -j <vCPUs>`) in VM guests with more vCPUs
//! than physical CPUs, per spinlock variant. Here a *build-like job of fixed size*
//! plays the build: `--sections` critical sections in total, grouped into tasks
//! ("compilation units") that worker threads pull from a shared queue; each
//! section is `--work-ns` of computation followed by a short critical section
//! (`--cs-ns`) on one of `--shared-locks` locks (chosen pseudo-randomly, like the
//! few hot kernel locks a build hammers). The result is the **time to finish**
//! the job, per lock, at threads = 1x, 1.5x, 2x, 4x and 16x the effective CPUs
//! (the overcommitted guests), optionally again with `--noise N` CPU hogs (a
//! host stealing CPU), plus a pinned row: threads = effective CPUs, each pinned
//! to its own CPU (the seed's NUMA-pinned, no-overcommit guest).
//!
//! Tables are laid out like the seed's: one row per lock, one column per thread
//! count, cells are median times to finish. A job that does not finish within
//! `--timeout` seconds is stopped and shown as `>T (x%)` with the fraction done.
//! With `--features stats` the lock-event counters of each configuration (summed
//! over its runs) are printed too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{CliError, Schedule, Step, interleave, out};
use crate::adapter::{BenchLock, LockApiMutex};
use crate::chart::Value;
use crate::gate::GateConfig;
use crate::progress::Progress;
use crate::table::{Section, Table};
use crate::verdict::Sample;
use crate::work::{calibration, spin_work_from};
use klock::{Native, Pv, PvBase, RawQSpinLock, RawTasLock, RawTicketLock, Unfair};

/// Arguments of `lockbench spin`.
#[derive(clap::Args, Clone, Debug)]
pub struct SpinArgs {
    /// Comma-separated locks; default: the seed's rows (klock_pvticket,
    /// klock_pvqspin_base, klock_pvqspin, klock_tas, klock_unfair) plus
    /// klock_qspin, klock_ticket, std, parking_lot. `--locks help` lists them.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    /// Thread counts as multiples of the effective CPUs (each 0.5..=64).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1.0, 1.5, 2.0, 4.0, 16.0])]
    pub mults: Vec<f64>,
    /// Critical sections in the whole job (its fixed size), 1000..=1e9.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1000..=1_000_000_000))]
    pub sections: u64,
    /// Critical sections per task pulled from the queue, 1..=100000.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub per_task: u64,
    /// Number of shared locks the sections spread over, 1..=64.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub shared_locks: u32,
    /// Work inside each critical section, ns (0..=1e6).
    #[arg(long, default_value_t = 100.0)]
    pub cs_ns: f64,
    /// Computation before each critical section, ns (0..=1e7).
    #[arg(long, default_value_t = 2000.0)]
    pub work_ns: f64,
    /// Also run every configuration with N CPU-hog threads (0..=256).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: Option<u32>,
    /// Repetitions per configuration (interleaved), 1..=50; cells are medians.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// Stop a job after this many seconds (0.1..=3600).
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Skip the pinned no-overcommit row.
    #[arg(long)]
    pub no_pinned: bool,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

/// One job to run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Worker threads.
    pub threads: usize,
    /// Total critical sections.
    pub sections: u64,
    /// Sections per task.
    pub per_task: u64,
    /// Shared locks.
    pub shared_locks: usize,
    /// CS work iterations.
    pub cs_iters: u64,
    /// Work iterations before each CS.
    pub work_iters: u64,
    /// Pin worker i to the i-th CPU of the affinity mask.
    pub pinned: bool,
    /// Give up after this long.
    pub timeout: Duration,
}

/// Outcome of one job.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct JobResult {
    /// Wall time until the last worker finished, seconds.
    pub secs: f64,
    /// Sections completed (== spec.sections unless timed out).
    pub done: u64,
    /// Stopped by the timeout.
    pub timed_out: bool,
    /// Lost updates detected (a broken lock).
    pub violations: u64,
}

type JobFn = fn(&JobSpec) -> JobResult;

/// The locks this experiment can run: name, description, job runner.
pub fn lock_table() -> Vec<(&'static str, &'static str, JobFn)> {
    vec![
        (
            "klock_pvticket",
            "pvticketlock analogue",
            job::<LockApiMutex<RawTicketLock<Pv>>>,
        ),
        (
            "klock_pvqspin_base",
            "pvqspinlock (4.2-rc1)",
            job::<LockApiMutex<RawQSpinLock<PvBase>>>,
        ),
        (
            "klock_pvqspin",
            "patched pvqspinlock",
            job::<LockApiMutex<RawQSpinLock<Pv>>>,
        ),
        (
            "klock_tas",
            "unfair byte lock",
            job::<LockApiMutex<RawTasLock<Native>>>,
        ),
        (
            "klock_unfair",
            "unfair queued lock",
            job::<LockApiMutex<RawQSpinLock<Unfair>>>,
        ),
        (
            "klock_qspin",
            "native qspinlock",
            job::<LockApiMutex<RawQSpinLock<Native>>>,
        ),
        (
            "klock_ticket",
            "native ticket lock",
            job::<LockApiMutex<RawTicketLock<Native>>>,
        ),
        (
            "std",
            "std::sync::Mutex",
            job::<crate::locks::stdlib::StdMutex>,
        ),
        (
            "parking_lot",
            "parking_lot::Mutex",
            job::<LockApiMutex<parking_lot::RawMutex>>,
        ),
    ]
}

#[repr(align(128))]
struct Slot<L> {
    lock: L,
    /// Two counters updated non-atomically-in-spirit under the lock (relaxed
    /// load + store): a broken lock loses updates, never causes UB.
    a: AtomicU64,
    b: AtomicU64,
}

fn pin_to_nth_cpu(n: usize) {
    // SAFETY: `set` is a zeroed cpu_set_t owned by this frame; the calls only
    // read/write it and the calling thread's affinity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect();
        if cpus.is_empty() {
            return;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[n % cpus.len()], &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
    }
}

/// Runs one fixed-size job on lock type `L`.
pub fn job<L: BenchLock>(spec: &JobSpec) -> JobResult {
    let locks: Arc<Vec<Slot<L>>> = Arc::new(
        (0..spec.shared_locks.max(1))
            .map(|_| Slot {
                lock: L::new(),
                a: AtomicU64::new(0),
                b: AtomicU64::new(0),
            })
            .collect(),
    );
    let tasks = spec.sections.div_ceil(spec.per_task.max(1));
    let next_task = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..spec.threads.max(1))
        .map(|i| {
            let (locks, next_task, done, stop) =
                (locks.clone(), next_task.clone(), done.clone(), stop.clone());
            let spec = spec.clone();
            std::thread::spawn(move || {
                if spec.pinned {
                    pin_to_nth_cpu(i);
                }
                let ctx = L::Ctx::default();
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (i as u64).wrapping_mul(0x1234_5679);
                let mut mine = 0u64;
                // Relaxed: the stop flag publishes nothing.
                while !stop.load(Ordering::Relaxed) {
                    // Relaxed: a work counter; the task number carries no data.
                    let t = next_task.fetch_add(1, Ordering::Relaxed);
                    if t >= tasks {
                        break;
                    }
                    let first = t * spec.per_task;
                    let n = spec.per_task.min(spec.sections - first);
                    for _ in 0..n {
                        seed = spin_work_from(seed, spec.work_iters);
                        let slot = &locks[(seed >> 33) as usize % locks.len()];
                        seed = slot.lock.with_lock(&ctx, || {
                            // Relaxed load/store: the lock orders them; a
                            // broken lock shows as a lost update.
                            let a = slot.a.load(Ordering::Relaxed);
                            slot.a.store(a + 1, Ordering::Relaxed);
                            let s = spin_work_from(seed ^ a, spec.cs_iters);
                            let b = slot.b.load(Ordering::Relaxed);
                            slot.b.store(b + 1, Ordering::Relaxed);
                            s
                        });
                        mine += 1;
                    }
                }
                // Relaxed: summed after join, which synchronises.
                done.fetch_add(mine, Ordering::Relaxed);
            })
        })
        .collect();
    // Watch for the timeout without busy-waiting.
    let mut timed_out = false;
    while handles.iter().any(|h| !h.is_finished()) {
        if start.elapsed() > spec.timeout && !timed_out {
            timed_out = true;
            stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.join();
    }
    let done = done.load(Ordering::Relaxed);
    let counted: u64 = locks.iter().map(|s| s.a.load(Ordering::Relaxed)).sum();
    let counted_b: u64 = locks.iter().map(|s| s.b.load(Ordering::Relaxed)).sum();
    JobResult {
        secs,
        done,
        timed_out,
        violations: done.abs_diff(counted) + done.abs_diff(counted_b),
    }
}

fn fmt_secs(s: f64) -> String {
    if s >= 60.0 {
        format!("{}m{:05.2}s", (s / 60.0).floor() as u64, s % 60.0)
    } else {
        format!("{s:.3}s")
    }
}

/// One (group, lock, threads) cell: every run and the median.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// Lock name.
    pub lock: String,
    /// Title of the table the cell belongs to.
    pub table: String,
    /// Worker threads.
    pub threads: usize,
    /// Noise threads.
    pub noise: usize,
    /// Workers pinned one per CPU.
    pub pinned: bool,
    /// Every run.
    pub runs: Vec<JobResult>,
    /// Median time to finish, seconds.
    pub median_secs: f64,
    /// klock event counters summed over the runs (stats builds).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub events: Option<Vec<(String, u64)>>,
}

/// One table of the experiment: its title, noise, pinning and thread counts.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Group {
    /// Table title.
    pub title: String,
    /// Noise threads.
    pub noise: usize,
    /// Pinned row.
    pub pinned: bool,
    /// Thread counts (columns).
    pub threads: Vec<usize>,
}

/// Everything `spin` measured (what `--json` writes, plus the settings).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SpinData {
    /// Effective CPUs of the machine.
    pub effective_cpus: usize,
    /// Critical sections in the job.
    pub sections: u64,
    /// Sections per task.
    pub per_task: u64,
    /// Shared locks.
    pub shared_locks: u32,
    /// CS work, ns.
    pub cs_ns: f64,
    /// Work between sections, ns.
    pub work_ns: f64,
    /// Runs per cell.
    pub runs: u32,
    /// Timeout, seconds.
    pub timeout: f64,
    /// Locks, in row order.
    pub locks: Vec<String>,
    /// The tables.
    pub groups: Vec<Group>,
    /// The cells.
    pub cells: Vec<Cell>,
}

/// One seed 001 row: (our lock, seed row, Westmere-EX times, Haswell-EX times,
/// pinned time).
pub type SeedRow = (
    &'static str,
    &'static str,
    [&'static str; 3],
    [&'static str; 3],
    &'static str,
);

/// Seed 001's rows: (our lock, seed row, Westmere-EX 32/48/60 vCPUs, Haswell-EX
/// 32/48/60 vCPUs, Westmere-EX NUMA-pinned 32 vCPUs); 32 physical CPUs each.
#[rustfmt::skip]
pub const SEED: &[SeedRow] = &[
    ("klock_pvticket", "pvticketlock (4.1.1)", ["5m02.0s", "13m27.6s", "15m49.9s"], ["1m58.9s", "18m57.0s", "20m46.1s"], "2m47.1s"),
    ("klock_pvqspin_base", "pvqspinlock (4.2-rc1)", ["3m39.9s", "11m17.8s", "12m19.9s"], ["1m59.9s", "18m44.2s", "18m57.0s"], "2m45.9s"),
    ("klock_pvqspin", "patched pvqspinlock", ["3m38.5s", "9m27.8s", "9m39.4s"], ["2m01.7s", "8m03.7s", "8m29.5s"], "2m45.2s"),
    ("klock_tas", "unfair byte lock", ["4m23.8s", "7m14.7s", "8m50.4s"], ["2m04.5s", "2m46.7s", "3m15.6s"], "2m45.4s"),
    ("klock_unfair", "unfair queued lock", ["3m03.4s", "3m29.7s", "4m15.4s"], ["1m59.4s", "2m04.9s", "2m18.6s"], "2m44.9s"),
];

fn seed_of(lock: &str) -> Option<&'static SeedRow> {
    SEED.iter().find(|r| r.0 == lock)
}

type Lock = (&'static str, &'static str, JobFn);

/// Resolves `--locks` against [`lock_table`] (empty: all of them).
fn select(names: &[String]) -> Result<Vec<Lock>, CliError> {
    let table: Vec<(&str, Lock)> = lock_table().into_iter().map(|l| (l.0, l)).collect();
    if names.is_empty() {
        return Ok(table.into_iter().map(|x| x.1).collect());
    }
    Ok(super::pick(names, &table, "lock")?
        .into_iter()
        .map(|x| x.1)
        .collect())
}

/// Validates the arguments and measures every cell; progress on `prog`.
pub fn measure(a: &SpinArgs, prog: &Progress) -> Result<SpinData, CliError> {
    let locks = select(&a.locks)?;
    if let Some(m) = a.mults.iter().find(|m| !(0.5..=64.0).contains(*m)) {
        return Err(CliError(format!(
            "--mults: {m} is out of range; each multiple must be in 0.5..=64"
        )));
    }
    if !(0.0..=1e6).contains(&a.cs_ns) || !(0.0..=1e7).contains(&a.work_ns) {
        return Err(CliError(
            "--cs-ns must be in 0..=1000000 and --work-ns in 0..=10000000".into(),
        ));
    }
    if !(0.1..=3600.0).contains(&a.timeout) {
        return Err(CliError("--timeout must be in 0.1..=3600 seconds".into()));
    }
    let cpus = klock::internal::wait::effective_cpus();
    let groups = groups(a, cpus);
    let mut cells: Vec<Cell> = Vec::new();
    for g in &groups {
        for &t in &g.threads {
            cells.extend(measure_cell(a, g, t, &locks, prog));
        }
    }
    Ok(SpinData {
        effective_cpus: cpus,
        sections: a.sections,
        per_task: a.per_task,
        shared_locks: a.shared_locks,
        cs_ns: a.cs_ns,
        work_ns: a.work_ns,
        runs: a.runs,
        timeout: a.timeout,
        locks: locks.iter().map(|l| l.0.to_string()).collect(),
        groups,
        cells,
    })
}

/// One (group, thread count): every lock `--runs` times, interleaved (no idle gate: the
/// jobs are long and the seed ran none).
fn measure_cell(a: &SpinArgs, g: &Group, t: usize, locks: &[Lock], prog: &Progress) -> Vec<Cell> {
    let cal = calibration();
    let spec = JobSpec {
        threads: t,
        sections: a.sections,
        per_task: a.per_task,
        shared_locks: a.shared_locks as usize,
        cs_iters: cal.iters_for(a.cs_ns),
        work_iters: cal.iters_for(a.work_ns),
        pinned: g.pinned,
        timeout: Duration::from_secs_f64(a.timeout),
    };
    let sched = Schedule::new(a.runs as usize, GateConfig::disabled());
    let step = |l: &Lock| Step {
        label: format!("spin {} {t} threads", l.0),
        units: unit_of(a),
        noise: g.noise,
    };
    let done = interleave(locks, &sched, prog, step, |_, l| (l.2)(&spec));
    let mut runs = vec![Vec::new(); locks.len()];
    let mut acc = vec![vec![0u64; klock::stat::NUM_EVENTS]; locks.len()];
    for d in done {
        for (k, v) in d.events.values().iter().enumerate() {
            acc[d.point][k] += v;
        }
        runs[d.point].push(d.out);
    }
    (locks.iter().zip(runs).zip(acc))
        .map(|((l, runs), acc)| {
            let mut secs: Vec<f64> = runs.iter().map(|r: &JobResult| r.secs).collect();
            secs.sort_by(f64::total_cmp);
            Cell {
                lock: l.0.to_string(),
                table: g.title.clone(),
                threads: t,
                noise: g.noise,
                pinned: g.pinned,
                median_secs: secs[secs.len() / 2],
                runs,
                events: klock::stat::ENABLED.then(|| {
                    (klock::stat::Event::ALL.iter())
                        .map(|e| (e.name().to_string(), acc[*e as usize]))
                        .filter(|(_, v)| *v > 0)
                        .collect()
                }),
            }
        })
        .collect()
}

/// Planned progress units of one job: its work divided over the effective CPUs
/// (a collapsing lock takes longer; the ETA adapts).
fn unit_of(a: &SpinArgs) -> u64 {
    let cpus = klock::internal::wait::effective_cpus().max(1) as f64;
    let ns = a.sections as f64 * (a.work_ns + a.cs_ns) / cpus;
    (ns / 1e6) as u64 + crate::progress::RUN_OVERHEAD_MS
}

fn groups(a: &SpinArgs, cpus: usize) -> Vec<Group> {
    let threads: Vec<usize> = a
        .mults
        .iter()
        .map(|m| ((cpus as f64 * m).round() as usize).max(1))
        .collect();
    let mut groups = vec![Group {
        title: format!("time to finish, {cpus} effective CPUs, no noise"),
        noise: 0,
        pinned: false,
        threads: threads.clone(),
    }];
    if let Some(n) = a.noise.filter(|&n| n > 0) {
        groups.push(Group {
            title: format!("time to finish, {cpus} effective CPUs, --noise {n}"),
            noise: n as usize,
            pinned: false,
            threads,
        });
    }
    if !a.no_pinned {
        groups.push(Group {
            title: format!(
                "time to finish, pinned, threads = {cpus} effective CPUs (no overcommit)"
            ),
            noise: 0,
            pinned: true,
            threads: vec![cpus],
        });
    }
    groups
}

/// Planned progress units of a whole `spin` run.
pub fn planned_units(a: &SpinArgs) -> u64 {
    let cpus = klock::internal::wait::effective_cpus();
    let cells: usize = groups(a, cpus).iter().map(|g| g.threads.len()).sum();
    let locks = if a.locks.is_empty() {
        lock_table().len()
    } else {
        a.locks.len()
    };
    cells as u64 * locks as u64 * a.runs as u64 * unit_of(a)
}

impl SpinData {
    fn cell(&self, lock: &str, g: &Group, threads: usize) -> Option<&Cell> {
        (self.cells.iter()).find(|c| c.lock == lock && c.table == g.title && c.threads == threads)
    }
}

/// The tables, laid out like the seed's (one row per lock, one column per thread
/// count, median time to finish), with the seed's own times beside ours for the
/// locks it measured; then the lock-event tables (stats builds).
pub fn tables(d: &SpinData) -> Vec<Table> {
    let mut out = Vec::new();
    let cpus = d.effective_cpus as f64;
    for g in &d.groups {
        let head = |t: &usize| match g.pinned {
            true => format!("{t} threads"),
            false => format!("{t} threads ({:.1}x)", *t as f64 / cpus),
        };
        let mut table = Table::grid(&g.title, "lock", &d.locks, &g.threads, head, |l, &t| {
            d.cell(l, g, t)
                .map(|c| match c.runs.iter().find(|r| r.timed_out) {
                    Some(r) => format!(
                        ">{} ({:.0}%)",
                        fmt_secs(d.timeout),
                        100.0 * r.done as f64 / d.sections as f64
                    ),
                    None => fmt_secs(c.median_secs),
                })
        });
        // The seed's columns: its three overcommit times, or its pinned time.
        type Col = (&'static str, fn(&SeedRow) -> String);
        let cols: &[Col] = match (g.pinned, g.noise) {
            (false, 0) => &[
                ("seed Westmere-EX 32/48/60 vCPUs (1x/1.5x/1.9x)", |s| {
                    s.2.join(" / ")
                }),
                ("seed Haswell-EX 32/48/60 vCPUs", |s| s.3.join(" / ")),
            ],
            (true, _) => &[("seed pinned, Westmere-EX 32 vCPUs", |s| s.4.to_string())],
            _ => &[],
        };
        for (head, cell) in cols {
            table.header.push(head.to_string());
            for row in &mut table.rows {
                row.push(seed_of(&row[0]).map_or("-".into(), cell));
            }
        }
        out.push(table);
        let mut events = Table::new(
            format!("lock events per run (feature stats): {}", g.title),
            &["lock", "threads", "events"],
        );
        for l in &d.locks {
            for &t in &g.threads {
                if let Some(ev) = d.cell(l, g, t).and_then(|c| c.events.as_ref())
                    && !ev.is_empty()
                {
                    events
                        .rows
                        .push(vec![l.clone(), t.to_string(), events_text(ev, d.runs)]);
                }
            }
        }
        if !events.rows.is_empty() {
            out.push(events);
        }
    }
    out
}

/// A cell's events per run (`name=count ...`), with the mean PV wake latency.
fn events_text(ev: &[(String, u64)], runs: u32) -> String {
    let runs = runs.max(1) as u64;
    let get = |n: &str| ev.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let lat = match (get("pv_kick_wake"), get("pv_latency_wake")) {
        (Some(n), Some(ns)) if n > 0 => Some(ns / n),
        _ => None,
    };
    ev.iter()
        .filter(|(n, _)| n != "pv_latency_wake")
        .map(|(n, v)| format!("{n}={}", v / runs))
        .collect::<Vec<_>>()
        .join(" ")
        + &lat.map_or(String::new(), |l| format!(" wake_latency={l}ns"))
}

/// Verdict samples: time to finish per lock and thread count (smaller is better).
pub fn samples(d: &SpinData) -> Vec<Sample> {
    (d.cells.iter())
        .map(|c| {
            let scenario = if c.pinned {
                "spin job, pinned".into()
            } else if c.noise > 0 {
                format!("spin job +{} noise", c.noise)
            } else {
                "spin job".into()
            };
            let secs = c.runs.iter().map(|r| r.secs).collect();
            Sample {
                median: c.median_secs,
                ..Sample::of_runs(&scenario, c.threads, &c.lock, secs, false, "s")
            }
        })
        .collect()
}

/// The report section: notes, the seed-shaped tables, and a chart per table.
pub fn section(d: &SpinData) -> Section {
    let mut charts = Vec::new();
    for g in d.groups.iter().filter(|g| g.threads.len() > 1) {
        let x_labels: Vec<String> = g.threads.iter().map(|t| t.to_string()).collect();
        let title =
            |gr: &crate::html::Group| format!("{}: {} (lower is better)", g.title, gr.title);
        let axes = ("threads", "seconds to finish");
        charts.extend(crate::html::lines(
            title,
            axes,
            &x_labels,
            &d.locks,
            |l, i| {
                d.cell(l, g, g.threads[i]).map(|c| {
                    let secs: Vec<f64> = c.runs.iter().map(|r| r.secs).collect();
                    Value::with_runs(c.median_secs, &secs)
                })
            },
        ));
    }
    Section {
        title: "spin (seed 001): time to finish a fixed build-like job".into(),
        notes: vec![
            format!(
                "A job of {} critical sections ({} per task) on {} shared locks, cs {} ns, work {} ns between; threads = multiples of the {} effective CPUs; {} runs per cell, medians; a job that does not finish within {} s is shown as >T with the fraction done.",
                d.sections, d.per_task, d.shared_locks, d.cs_ns, d.work_ns, d.effective_cpus, d.runs, d.timeout
            ),
            "The seed's columns are kernel build times (make -j vCPUs) in KVM guests on 32 physical CPUs with 32, 48 and 60 vCPUs: compare shapes (how each lock degrades with overcommit, and the order of the locks), not absolute times.".into(),
        ],
        tables: tables(d),
        charts,
    }
}

/// Runs `lockbench spin`; returns the exit status.
pub fn run(a: &SpinArgs) -> Result<i32, CliError> {
    if a.locks.iter().any(|l| l == "help") {
        for (n, d, _) in &lock_table() {
            out(&format!("{n}\n    {d}\n"));
        }
        return Ok(0);
    }
    let prog = Progress::new(planned_units(a), !a.quiet);
    let d = measure(a, &prog)?;
    prog.finish();
    out(&format!(
        "lockbench spin: job of {} critical sections ({} per task) on {} shared locks, \
         cs {} ns, work {} ns between; {} runs per cell, medians\n",
        a.sections, a.per_task, a.shared_locks, a.cs_ns, a.work_ns, a.runs
    ));
    out(&super::text(&tables(&d)));
    if !klock::stat::ENABLED {
        out("\n(lock-event counters: build with `--features stats` to see them)\n");
    }
    if a.json.is_some() {
        let j = serde_json::json!({
            "experiment": "spin",
            "command": super::command_line(),
            "machine": crate::sys::Machine::probe(),
            "effective_cpus": d.effective_cpus,
            "cells": d.cells,
        });
        super::write_json(a.json.as_ref(), &j)?;
    }
    let violations: u64 = d
        .cells
        .iter()
        .flat_map(|c| &c.runs)
        .map(|r| r.violations)
        .sum();
    if violations > 0 {
        eprintln!("error: mutual-exclusion violations detected ({violations} lost updates)");
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(threads: usize) -> JobSpec {
        JobSpec {
            threads,
            sections: 2000,
            per_task: 7,
            shared_locks: 3,
            cs_iters: 5,
            work_iters: 5,
            pinned: false,
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn every_lock_finishes_the_job_exactly() {
        for (name, _, f) in lock_table() {
            let r = f(&spec(2));
            assert!(!r.timed_out, "{name}");
            assert_eq!(r.done, 2000, "{name}");
            assert_eq!(r.violations, 0, "{name}");
        }
        let r = job::<LockApiMutex<RawQSpinLock<Pv>>>(&JobSpec {
            pinned: true,
            ..spec(3)
        });
        assert_eq!((r.done, r.violations), (2000, 0));
    }

    #[test]
    fn formats_times_like_the_seed() {
        assert_eq!(fmt_secs(1.5), "1.500s");
        assert_eq!(fmt_secs(62.5), "1m02.50s");
    }
}

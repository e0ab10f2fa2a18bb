//! `lockbench fserver`: seed 004's experiment (AIM7 `fserver`) in user space.
//!
//! A file-server-like job mix on an in-memory directory tree: one reader/writer
//! lock over the tree (the kernel's dcache/rename locks), a mutex per directory
//! (`i_mutex`) and one per file. Each user thread runs jobs of
//! [`OPS_PER_JOB`] operations: lookups, reads, writes, creates/unlinks and
//! renames (a rename takes the tree lock exclusively, like the kernel's
//! `s_vfs_rename_mutex`, then both directories in index order). The result is
//! jobs per minute against the number of users, per mutex variant, and the
//! seed's ablation: `klock_mutex` (spinners queued in an OSQ) against
//! `klock_mutex_noqueue` (every spinner polls the owner).
//!
//! The tree lock is klock's rwsem (`klock::RwLock`, `RawRwLock<SpinOsq>`) for
//! every klock variant, so only the mutexes differ between the klock columns;
//! `parking_lot` keeps `parking_lot::RwLock` for its tree. `klock_mutex_pltree`
//! is `klock_mutex` with the old `parking_lot::RwLock` tree, so the tree
//! lock's own effect shows as `klock_mutex` vs `klock_mutex_pltree`.
//!
//! With `--features stats` the run also prints a **contention profile** laid
//! out like the seed's perf table: the share of all user-thread time spent
//! waiting for the tree lock (timed around its acquisitions), spinning on a
//! mutex owner (`mutex_spin_on_owner`), waiting in the OSQ (`mspin_lock`) and
//! in the rest of the mutex slow path (sleeping; `__mutex_lock_slowpath`),
//! from klock's counters. Only klock variants have counters.
//!
//! ```no_run
//! // lockbench fserver --users 1,2,8,32,128 --duration 1 --runs 3
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{CliError, ThreadList, parse_duration, parse_threads};
use crate::gate::{GateConfig, wait_idle};
use crate::noise::Noise;
use crate::stats::median;
use crate::table::Table;

/// Operations per job (jobs per minute = completed jobs / minute).
pub const OPS_PER_JOB: u64 = 16;

/// The mutex variants `fserver` can run, with their descriptions.
pub const VARIANTS: &[(&str, &str)] = &[
    (
        "klock_mutex",
        "klock mutex, spinners queued in an OSQ (seed 004's patch)",
    ),
    (
        "klock_mutex_noqueue",
        "klock mutex, every spinner polls the owner (without the patch)",
    ),
    ("klock_mutex_nospin", "klock mutex, no optimistic spinning"),
    (
        "klock_mutex_pltree",
        "klock_mutex with a parking_lot::RwLock tree lock instead of klock's rwsem",
    ),
    (
        "parking_lot",
        "parking_lot 0.13 Mutex (and parking_lot::RwLock tree)",
    ),
];

/// Arguments of `lockbench fserver`.
#[derive(clap::Args, Clone, Debug)]
pub struct FserverArgs {
    /// Comma-separated user (thread) counts, each 1..=1024.
    #[arg(long, value_parser = parse_threads, default_value = "1,2,8,32,128")]
    pub users: ThreadList,
    /// Comma-separated variants: klock_mutex, klock_mutex_noqueue,
    /// klock_mutex_nospin, klock_mutex_pltree, parking_lot (klock variants use
    /// klock's rwsem as the tree lock, except klock_mutex_pltree).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "klock_mutex,klock_mutex_noqueue,klock_mutex_nospin,klock_mutex_pltree,parking_lot"
    )]
    pub locks: Vec<String>,
    /// Measurement window per run, seconds (decimal, > 0, <= 3600).
    #[arg(long, value_parser = parse_duration, default_value = "1", allow_hyphen_values = true)]
    pub duration: f64,
    /// Repetitions per configuration, interleaved; the median is reported (1..=100).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Directories in the tree (1..=65536).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub dirs: u32,
    /// Files per directory at the start (1..=4096).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub files: u32,
    /// CPU-hog threads running beside the workload (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: u32,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Disable the idle gate (same as LOCKBENCH_NO_IDLE_GATE=1).
    #[arg(long)]
    pub no_idle_gate: bool,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

/// File contents: a block and a version; `busy` detects two holders.
struct FileData {
    block: [u64; 64],
    version: u64,
    busy: bool,
}

struct File<R: lock_api::RawMutex> {
    m: lock_api::Mutex<R, FileData>,
}

/// Directory entries (name, file); `busy` detects two holders.
struct DirD<R: lock_api::RawMutex> {
    entries: Vec<(u64, Arc<File<R>>)>,
    busy: bool,
}

struct Dir<R: lock_api::RawMutex> {
    m: lock_api::Mutex<R, DirD<R>>,
}

struct Tree<R: lock_api::RawMutex> {
    dirs: Vec<Arc<Dir<R>>>,
}

/// One run's result.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FsRun {
    /// Mutex variant.
    pub lock: String,
    /// User threads.
    pub users: usize,
    /// Jobs per minute.
    pub jpm: f64,
    /// Mutual-exclusion violations seen (must be 0).
    pub violations: u64,
    /// Share of user-thread time waiting for the tree rwlock, % (stats builds).
    pub tree_wait_pct: Option<f64>,
    /// Share of user-thread time spinning on a mutex owner, %.
    pub spin_owner_pct: Option<f64>,
    /// Share of user-thread time waiting in the OSQ, %.
    pub osq_wait_pct: Option<f64>,
    /// Share of user-thread time in the rest of the mutex slow path (sleeping), %.
    pub slowpath_pct: Option<f64>,
    /// klock events of this run (stats builds, klock variants): name -> count.
    pub events: Vec<(String, u64)>,
}

/// The JSON document `--json` writes.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FsReport {
    /// The command line.
    pub command: String,
    /// Operations per job.
    pub ops_per_job: u64,
    /// Every run (all repetitions).
    pub runs: Vec<FsRun>,
}

struct Rng(u64);
impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn new_file<R: lock_api::RawMutex>(seed: u64) -> Arc<File<R>> {
    Arc::new(File {
        m: lock_api::Mutex::new(FileData {
            block: [seed; 64],
            version: 0,
            busy: false,
        }),
    })
}

/// Time an acquisition of the tree lock when counters are compiled in.
#[inline]
fn timed<T>(acc: &mut u64, f: impl FnOnce() -> T) -> T {
    if cfg!(feature = "stats") {
        let t = Instant::now();
        let r = f();
        *acc += t.elapsed().as_nanos() as u64;
        r
    } else {
        f()
    }
}

/// Runs one configuration with mutex `R` and tree lock `T`; returns (jobs, elapsed,
/// violations, tree-wait ns).
fn run_one<R, T>(
    users: usize,
    dirs: u32,
    files: u32,
    duration: Duration,
) -> (u64, Duration, u64, u64)
where
    R: lock_api::RawMutex + Send + Sync + 'static,
    T: lock_api::RawRwLock + Send + Sync + 'static,
{
    let tree = Arc::new(lock_api::RwLock::<T, _>::new(Tree::<R> {
        dirs: (0..dirs)
            .map(|d| {
                Arc::new(Dir {
                    m: lock_api::Mutex::new(DirD {
                        entries: (0..files)
                            .map(|f| ((d as u64) << 32 | f as u64, new_file::<R>(f as u64)))
                            .collect(),
                        busy: false,
                    }),
                })
            })
            .collect(),
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let start_flag = Arc::new(std::sync::Barrier::new(users + 1));
    let violations = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..users)
        .map(|u| {
            let (tree, stop, start_flag) = (tree.clone(), stop.clone(), start_flag.clone());
            let cap = 2 * files as usize;
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((u as u64 + 1) << 17));
                let mut jobs = 0u64;
                let mut tree_ns = 0u64;
                let mut bad = 0u64;
                let mut next_name = (u as u64 + 1) << 48;
                start_flag.wait();
                // Relaxed: a plain stop flag; the join publishes the results.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..OPS_PER_JOB {
                        let r = rng.next();
                        let op = r % 100;
                        if op < 97 {
                            // Path walk under the shared tree lock, then the
                            // directory's own mutex (i_mutex).
                            let t = timed(&mut tree_ns, || tree.read());
                            let d = t.dirs[(r >> 8) as usize % t.dirs.len()].clone();
                            drop(t);
                            let mut dg = d.m.lock();
                            if dg.busy {
                                bad += 1;
                            }
                            dg.busy = true;
                            let n = dg.entries.len();
                            let file = if n == 0 {
                                None
                            } else {
                                // Lookup: a linear scan, like a small directory.
                                let want = dg.entries[(r >> 20) as usize % n].0;
                                dg.entries.iter().find(|e| e.0 == want).map(|e| e.1.clone())
                            };
                            if (35..50).contains(&op) {
                                // create or unlink
                                if n == 0 || (n < cap && (r >> 40).is_multiple_of(2)) {
                                    next_name += 1;
                                    dg.entries.push((next_name, new_file::<R>(next_name)));
                                } else {
                                    dg.entries.swap_remove((r >> 24) as usize % n);
                                }
                            }
                            dg.busy = false;
                            drop(dg);
                            if let Some(f) = file
                                && op >= 50
                            {
                                let mut fg = f.m.lock();
                                if fg.busy {
                                    bad += 1;
                                }
                                fg.busy = true;
                                if op < 75 {
                                    // read
                                    let s: u64 = fg.block.iter().fold(0, |a, &b| a ^ b);
                                    std::hint::black_box(s);
                                } else {
                                    // write
                                    fg.version += 1;
                                    let v = fg.version;
                                    for b in fg.block.iter_mut() {
                                        *b = b.wrapping_add(v);
                                    }
                                }
                                fg.busy = false;
                            }
                        } else {
                            // rename: tree exclusive, both dirs in index order
                            let t = timed(&mut tree_ns, || tree.write());
                            let nd = t.dirs.len();
                            let a = (r >> 8) as usize % nd;
                            let b = (r >> 24) as usize % nd;
                            if a == b {
                                let mut g = t.dirs[a].m.lock();
                                let n = g.entries.len();
                                if n > 0 {
                                    let i = (r >> 40) as usize % n;
                                    next_name += 1;
                                    g.entries[i].0 = next_name;
                                }
                            } else {
                                let (lo, hi) = (a.min(b), a.max(b));
                                let mut g1 = t.dirs[lo].m.lock();
                                let mut g2 = t.dirs[hi].m.lock();
                                if g1.busy || g2.busy {
                                    bad += 1;
                                }
                                let (src, dst) = if a < b {
                                    (&mut *g1, &mut *g2)
                                } else {
                                    (&mut *g2, &mut *g1)
                                };
                                if let Some(e) = src.entries.pop() {
                                    dst.entries.push(e);
                                }
                            }
                        }
                        // Work outside any lock (the job's own computation).
                        std::hint::black_box(crate::work::spin_work(20 + (r >> 56) % 40));
                    }
                    jobs += 1;
                }
                (jobs, tree_ns, bad)
            })
        })
        .collect();
    start_flag.wait();
    let t0 = Instant::now();
    std::thread::sleep(duration);
    // Relaxed: see the workers' loop.
    stop.store(true, Ordering::Relaxed);
    let mut jobs = 0;
    let mut tree_ns = 0;
    for h in hs {
        let (j, t, b) = h.join().expect("fserver worker panicked");
        jobs += j;
        tree_ns += t;
        violations.fetch_add(b, Ordering::Relaxed);
    }
    let elapsed = t0.elapsed();
    (jobs, elapsed, violations.load(Ordering::Relaxed), tree_ns)
}

fn run_variant(name: &str, users: usize, args: &FserverArgs) -> (u64, Duration, u64, u64) {
    use klock::mutex::{RawMutex, SpinNoQueue, SpinOff, SpinOsq};
    type KTree = klock::rwlock::RawRwLock<SpinOsq>;
    type PlTree = parking_lot::RawRwLock;
    let d = Duration::from_secs_f64(args.duration);
    let (u, di, f) = (users, args.dirs, args.files);
    match name {
        "klock_mutex" => run_one::<RawMutex<SpinOsq>, KTree>(u, di, f, d),
        "klock_mutex_noqueue" => run_one::<RawMutex<SpinNoQueue>, KTree>(u, di, f, d),
        "klock_mutex_nospin" => run_one::<RawMutex<SpinOff>, KTree>(u, di, f, d),
        "klock_mutex_pltree" => run_one::<RawMutex<SpinOsq>, PlTree>(u, di, f, d),
        _ => run_one::<parking_lot::RawMutex, PlTree>(u, di, f, d),
    }
}

fn pct(ns: u64, users: usize, elapsed: Duration) -> f64 {
    100.0 * ns as f64 / (users as f64 * elapsed.as_nanos().max(1) as f64)
}

/// Planned progress units of a whole `fserver` run.
pub fn planned_units(args: &FserverArgs) -> u64 {
    args.runs as u64
        * args.users.0.len() as u64
        * args.locks.len() as u64
        * crate::progress::run_units(Duration::from_secs_f64(args.duration))
}

/// Validates the arguments and runs every configuration; progress on `prog`.
pub fn measure(args: &FserverArgs, prog: &crate::progress::Progress) -> Result<FsReport, CliError> {
    let allowed: Vec<&str> = VARIANTS.iter().map(|v| v.0).collect();
    for l in &args.locks {
        if !allowed.contains(&l.as_str()) {
            return Err(CliError(format!(
                "unknown fserver lock '{l}': allowed are {}",
                allowed.join(", ")
            )));
        }
    }
    if args.locks.is_empty() {
        return Err(CliError(format!(
            "no locks given: allowed are {}",
            allowed.join(", ")
        )));
    }
    let mut gate = GateConfig::from_env();
    if args.no_idle_gate {
        gate.enabled = false;
    }
    let mut report = FsReport {
        command: super::command_line(),
        ops_per_job: OPS_PER_JOB,
        runs: Vec::new(),
    };
    let noise = (args.noise > 0).then(|| Noise::start(args.noise as usize));
    for rep in 0..args.runs {
        for &users in &args.users.0 {
            for lock in &args.locks {
                wait_idle(&gate);
                let before = klock::stat::snapshot();
                let (jobs, elapsed, violations, tree_ns) = run_variant(lock, users, args);
                let ev = klock::stat::snapshot().delta(&before);
                let jpm = jobs as f64 * 60.0 / elapsed.as_secs_f64().max(1e-9);
                let klock_variant = lock.starts_with("klock_");
                let stats = cfg!(feature = "stats");
                let g = |e: klock::stat::Event| ev.get(e);
                use klock::stat::Event as E;
                let spin = g(E::MutexSpinOwnerNs);
                let osq = g(E::OsqWaitNs);
                let slow = g(E::MutexWaitNs).saturating_sub(spin + osq);
                report.runs.push(FsRun {
                    lock: lock.clone(),
                    users,
                    jpm,
                    violations,
                    tree_wait_pct: stats.then(|| pct(tree_ns, users, elapsed)),
                    spin_owner_pct: (stats && klock_variant).then(|| pct(spin, users, elapsed)),
                    osq_wait_pct: (stats && klock_variant).then(|| pct(osq, users, elapsed)),
                    slowpath_pct: (stats && klock_variant).then(|| pct(slow, users, elapsed)),
                    events: if stats && klock_variant {
                        klock::stat::Event::ALL
                            .iter()
                            .filter(|e| ev.get(**e) > 0)
                            .map(|e| (e.name().to_string(), ev.get(*e)))
                            .collect()
                    } else {
                        Vec::new()
                    },
                });
                prog.inc(
                    crate::progress::run_units(Duration::from_secs_f64(args.duration)),
                    &format!("fserver {lock} users={users} run {}/{}", rep + 1, args.runs),
                );
            }
        }
    }
    if let Some(n) = noise {
        n.stop();
    }
    Ok(report)
}

/// Runs `lockbench fserver`; returns the exit status.
pub fn run(args: &FserverArgs) -> Result<i32, CliError> {
    let prog = crate::progress::Progress::new(planned_units(args), !args.quiet);
    let report = measure(args, &prog)?;
    prog.finish();
    super::out(&render(&report, &args.locks, &args.users.0));
    if let Some(p) = &args.json {
        let j = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
        super::write_file(p, &j)?;
    }
    let bad: u64 = report.runs.iter().map(|r| r.violations).sum();
    if bad > 0 {
        eprintln!("error: {bad} mutual-exclusion violations in fserver runs");
        return Ok(1);
    }
    Ok(0)
}

/// Seed 004's JPM table (8-node 80-core Westmere, 3.7.10): configuration, user
/// range, mean JPM without the patches, with patch 1 (MCS queue), with patches 1&2
/// (queued spinning), % change 1 -> 1&2.
pub const SEED_JPM: &[(&str, &str, u64, u64, u64, &str)] = &[
    (
        "8 nodes, HT off",
        "1100-2000",
        227_972,
        227_237,
        305_043,
        "+34.2%",
    ),
    (
        "4 nodes, HT off",
        "1100-2000",
        393_503,
        381_558,
        394_650,
        "+3.4%",
    ),
    (
        "2 nodes, HT off",
        "1100-2000",
        334_957,
        325_240,
        338_853,
        "+4.2%",
    ),
    (
        "1 node, HT off",
        "1100-2000",
        198_141,
        197_972,
        198_075,
        "+0.1%",
    ),
    (
        "8 nodes, HT off",
        "200-1000",
        282_325,
        312_870,
        332_185,
        "+6.2%",
    ),
    (
        "4 nodes, HT off",
        "200-1000",
        390_698,
        378_279,
        393_419,
        "+4.0%",
    ),
    (
        "2 nodes, HT off",
        "200-1000",
        336_986,
        326_543,
        340_260,
        "+4.2%",
    ),
    (
        "1 node, HT off",
        "200-1000",
        197_588,
        197_622,
        197_582,
        "0.0%",
    ),
];

/// Seed 004's perf profile at 1500 users, 8 nodes, patches 1&2: % time in the tree
/// rwlock (`__read_lock_failed` + `__write_lock_failed`), `mutex_spin_on_owner`,
/// `mspin_lock`, `__mutex_lock_slowpath`.
pub const SEED_PROFILE: [&str; 4] = ["36.65% (29.14 + 7.51)", "2.33%", "9.90%", "0.14%"];

fn med(
    report: &FsReport,
    lock: &str,
    users: usize,
    f: impl Fn(&FsRun) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = report
        .runs
        .iter()
        .filter(|r| r.lock == lock && r.users == users)
        .filter_map(f)
        .collect();
    (!v.is_empty()).then(|| median(&v))
}

/// Render the tables: JPM per users, the OSQ ablation, and the contention
/// profile at the largest user count (as terminal text).
pub fn render(report: &FsReport, locks: &[String], users: &[usize]) -> String {
    let mut s: String = tables(report, locks, users)
        .iter()
        .map(Table::to_text)
        .collect();
    if !cfg!(feature = "stats") {
        s.push_str(
            "\n(contention profile: build with `--features stats` to get the share of time in lock slow paths)\n",
        );
    }
    s
}

/// The tables: JPM per users, the OSQ ablation beside the seed's % change, the tree
/// lock's effect, the contention profile (stats builds) beside the seed's perf
/// profile, and the seed's own JPM table.
pub fn tables(report: &FsReport, locks: &[String], users: &[usize]) -> Vec<Table> {
    let mut out = Vec::new();
    let mut header = vec!["lock".to_string()];
    header.extend(users.iter().map(|u| format!("users={u}")));
    let mut t = Table {
        title: format!(
            "fserver: jobs per minute ({} ops/job, median of runs)",
            report.ops_per_job
        ),
        header: header.clone(),
        rows: Vec::new(),
    };
    for l in locks {
        let mut row = vec![l.clone()];
        for &u in users {
            row.push(
                med(report, l, u, |r| Some(r.jpm)).map_or("-".into(), |x| format!("{:.0}", x)),
            );
        }
        t.rows.push(row);
    }
    out.push(t);
    if locks.iter().any(|l| l == "klock_mutex") && locks.iter().any(|l| l == "klock_mutex_noqueue")
    {
        let mut a = Table {
            title: "seed 004 ablation: % change of klock_mutex (OSQ) over klock_mutex_noqueue"
                .into(),
            header: header.clone(),
            rows: Vec::new(),
        };
        a.header
            .push("seed 004: % change 1 -> 1&2, 8 nodes (1100-2000 / 200-1000 users)".into());
        let mut row = vec!["OSQ vs noqueue".to_string()];
        for &u in users {
            let x = med(report, "klock_mutex", u, |r| Some(r.jpm));
            let y = med(report, "klock_mutex_noqueue", u, |r| Some(r.jpm));
            row.push(match (x, y) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:+.1}%", 100.0 * (x - y) / y),
                _ => "-".into(),
            });
        }
        row.push("+34.2% / +6.2%".into());
        a.rows.push(row);
        out.push(a);
    }
    if locks.iter().any(|l| l == "klock_mutex") && locks.iter().any(|l| l == "klock_mutex_pltree") {
        let mut a = Table {
            title: "tree lock: % change of klock_mutex (klock rwsem tree) over klock_mutex_pltree (parking_lot::RwLock tree)"
                .into(),
            header: header.clone(),
            rows: Vec::new(),
        };
        let mut row = vec!["rwsem tree vs pl tree".to_string()];
        for &u in users {
            let x = med(report, "klock_mutex", u, |r| Some(r.jpm));
            let y = med(report, "klock_mutex_pltree", u, |r| Some(r.jpm));
            row.push(match (x, y) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:+.1}%", 100.0 * (x - y) / y),
                _ => "-".into(),
            });
        }
        a.rows.push(row);
        out.push(a);
    }
    let umax = users.iter().copied().max().unwrap_or(1);
    if cfg!(feature = "stats") {
        let mut p = Table {
            title: format!(
                "contention profile at users={umax}: % of all user-thread time (median of runs)"
            ),
            header: std::iter::once("where (kernel name in seed 004)".to_string())
                .chain(locks.iter().cloned())
                .chain(std::iter::once(
                    "seed 004, 1500 users, patches 1&2".to_string(),
                ))
                .collect(),
            rows: Vec::new(),
        };
        type Pick = fn(&FsRun) -> Option<f64>;
        let rows: [(&str, Pick); 4] = [
            ("tree rwlock wait (__read/__write_lock_failed)", |r| {
                r.tree_wait_pct
            }),
            ("spinning on the owner (mutex_spin_on_owner)", |r| {
                r.spin_owner_pct
            }),
            ("waiting in the OSQ (mspin_lock)", |r| r.osq_wait_pct),
            ("rest of slow path, sleeping (__mutex_lock_slowpath)", |r| {
                r.slowpath_pct
            }),
        ];
        for (k, (name, f)) in rows.into_iter().enumerate() {
            let mut row = vec![name.to_string()];
            for l in locks {
                row.push(med(report, l, umax, f).map_or("n/a".into(), |x| format!("{x:.2}%")));
            }
            row.push(SEED_PROFILE[k].to_string());
            p.rows.push(row);
        }
        out.push(p);
    }
    out.push(Table {
        title: "seed 004, 8-node 80-core Westmere, 3.7.10: mean JPM (quoted for shape, not measured here)".into(),
        header: [
            "configuration",
            "users",
            "w/o patch",
            "patch 1",
            "patches 1&2",
            "% change 1 -> 1&2",
        ]
        .map(String::from)
        .to_vec(),
        rows: SEED_JPM
            .iter()
            .map(|r| {
                vec![
                    r.0.to_string(),
                    r.1.to_string(),
                    crate::table::group_thousands(r.2 as f64),
                    crate::table::group_thousands(r.3 as f64),
                    crate::table::group_thousands(r.4 as f64),
                    r.5.to_string(),
                ]
            })
            .collect(),
    });
    out
}

/// Verdict samples: jobs per minute per variant and user count.
pub fn samples(
    report: &FsReport,
    locks: &[String],
    users: &[usize],
) -> Vec<crate::verdict::Sample> {
    let mut v = Vec::new();
    for l in locks {
        for &u in users {
            let runs: Vec<f64> = report
                .runs
                .iter()
                .filter(|r| &r.lock == l && r.users == u)
                .map(|r| r.jpm)
                .collect();
            if runs.is_empty() {
                continue;
            }
            v.push(crate::verdict::Sample {
                scenario: "fserver".into(),
                point: format!("T={u}"),
                order: u,
                lock: l.clone(),
                median: median(&runs),
                runs,
                higher_better: true,
                unit: "jobs/min".into(),
                starves: None,
                tail_ns: None,
            });
        }
    }
    v
}

/// The report section: tables and a JPM chart per lock group.
pub fn section(report: &FsReport, locks: &[String], users: &[usize]) -> crate::table::Section {
    let samples = samples(report, locks, users);
    let charts = crate::html::per_group_lines(
        "fserver",
        ("users (threads)", "jobs per minute"),
        users,
        locks,
        &samples,
    );
    crate::table::Section {
        title: "fserver (seed 004): file-server job mix, jobs per minute".into(),
        notes: vec![format!(
            "{} operations per job; the tree lock is klock's rwsem for the klock variants (parking_lot::RwLock for parking_lot and klock_mutex_pltree). Seed 004 measured AIM7 fserver on an 8-node 80-core machine at 200-2000 users: compare the sign and size of the OSQ ablation, not absolute JPM.",
            report.ops_per_job
        )],
        tables: tables(report, locks, users),
        charts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_run_counts_jobs_without_violations() {
        for name in [
            "klock_mutex",
            "klock_mutex_noqueue",
            "klock_mutex_nospin",
            "klock_mutex_pltree",
            "parking_lot",
        ] {
            let args = FserverArgs {
                users: ThreadList(vec![4]),
                locks: vec![name.into()],
                duration: 0.05,
                runs: 1,
                dirs: 4,
                files: 8,
                noise: 0,
                json: None,
                no_idle_gate: true,
                quiet: true,
            };
            let (jobs, _, bad, _) = run_variant(name, 4, &args);
            assert!(jobs > 0, "{name}: no job completed");
            assert_eq!(bad, 0, "{name}: mutual exclusion violated");
        }
    }

    #[test]
    fn render_has_tables() {
        let r = FsReport {
            command: "x".into(),
            ops_per_job: OPS_PER_JOB,
            runs: vec![
                FsRun {
                    lock: "klock_mutex".into(),
                    users: 2,
                    jpm: 110.0,
                    ..FsRun::default()
                },
                FsRun {
                    lock: "klock_mutex_noqueue".into(),
                    users: 2,
                    jpm: 100.0,
                    ..FsRun::default()
                },
            ],
        };
        let s = render(
            &r,
            &["klock_mutex".into(), "klock_mutex_noqueue".into()],
            &[2],
        );
        assert!(s.contains("jobs per minute"));
        assert!(s.contains("+10.0%"));
        let r = FsReport {
            runs: vec![
                FsRun {
                    lock: "klock_mutex".into(),
                    users: 2,
                    jpm: 90.0,
                    ..FsRun::default()
                },
                FsRun {
                    lock: "klock_mutex_pltree".into(),
                    users: 2,
                    jpm: 100.0,
                    ..FsRun::default()
                },
            ],
            ..r
        };
        let s = render(
            &r,
            &["klock_mutex".into(), "klock_mutex_pltree".into()],
            &[2],
        );
        assert!(s.contains("tree lock") && s.contains("-10.0%"), "{s}");
    }
}

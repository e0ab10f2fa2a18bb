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
//! The tree lock is klock's rwsem for the klock variants, so only their mutexes
//! differ; `klock_mutex_pltree` shows the tree lock's own effect (`docs/lockbench.md`,
//! "fserver tree lock").
//!
//! With `--features stats` the run also prints a **contention profile** laid
//! out like the seed's perf table: the share of all user-thread time spent
//! waiting for the tree lock (timed around its acquisitions), spinning on a
//! mutex owner (`mutex_spin_on_owner`), waiting in the OSQ (`mspin_lock`) and
//! in the rest of the mutex slow path (sleeping; `__mutex_lock_slowpath`),
//! from klock's counters. Only klock variants have counters.
//!
//! Example: `lockbench fserver --users 1,2,8,32,128 --duration 1 --runs 3`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lock_api::{Mutex, RawMutex, RawRwLock, RwLock};

use super::{CliError, RunArgs, Step, ThreadList, interleave, parse_threads};
use crate::noise::Noise;
use crate::progress::{Progress, run_units};
use crate::stats::median;
use crate::table::{Section, Table};
use crate::verdict::Sample;

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
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// Directories in the tree (1..=65536).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub dirs: u32,
    /// Files per directory at the start (1..=4096).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub files: u32,
    /// CPU-hog threads running beside the workload (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: u32,
}

/// File contents: a block and a version; `busy` detects two holders.
struct FileData {
    block: [u64; 64],
    version: u64,
    busy: bool,
}

type File<R> = Arc<Mutex<R, FileData>>;

/// Directory entries (name, file); `busy` detects two holders.
struct DirD<R: RawMutex> {
    entries: Vec<(u64, File<R>)>,
    busy: bool,
}

type Dir<R> = Arc<Mutex<R, DirD<R>>>;

struct Tree<R: RawMutex> {
    dirs: Vec<Dir<R>>,
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

fn new_file<R: RawMutex>(seed: u64) -> File<R> {
    Arc::new(Mutex::new(FileData {
        block: [seed; 64],
        version: 0,
        busy: false,
    }))
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

/// One user thread's state and counts.
struct User {
    rng: Rng,
    next_name: u64,
    /// Directory size cap (creates stop there).
    cap: usize,
    jobs: u64,
    tree_ns: u64,
    bad: u64,
}

impl User {
    /// One operation: 97 % a path walk (then a read, write, create or unlink), 3 % a
    /// rename; then work outside any lock (the job's own computation).
    fn op<R: RawMutex, T: RawRwLock>(&mut self, tree: &RwLock<T, Tree<R>>) {
        let r = self.rng.next();
        let op = r % 100;
        if op < 97 {
            self.walk(tree, r, op);
        } else {
            self.rename(tree, r);
        }
        std::hint::black_box(crate::work::spin_work(20 + (r >> 56) % 40));
    }

    /// Path walk under the shared tree lock, then the directory's own mutex
    /// (i_mutex): a lookup, maybe a create or unlink, then maybe the file's mutex.
    fn walk<R: RawMutex, T: RawRwLock>(&mut self, tree: &RwLock<T, Tree<R>>, r: u64, op: u64) {
        let t = timed(&mut self.tree_ns, || tree.read());
        let d = t.dirs[(r >> 8) as usize % t.dirs.len()].clone();
        drop(t);
        let mut dg = d.lock();
        self.bad += dg.busy as u64;
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
            if n == 0 || (n < self.cap && (r >> 40).is_multiple_of(2)) {
                self.next_name += 1;
                dg.entries
                    .push((self.next_name, new_file::<R>(self.next_name)));
            } else {
                dg.entries.swap_remove((r >> 24) as usize % n);
            }
        }
        dg.busy = false;
        drop(dg);
        if let Some(f) = file
            && op >= 50
        {
            let mut fg = f.lock();
            self.bad += fg.busy as u64;
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
    }

    /// Rename: the tree exclusive, both directories in index order.
    fn rename<R: RawMutex, T: RawRwLock>(&mut self, tree: &RwLock<T, Tree<R>>, r: u64) {
        let t = timed(&mut self.tree_ns, || tree.write());
        let nd = t.dirs.len();
        let a = (r >> 8) as usize % nd;
        let b = (r >> 24) as usize % nd;
        if a == b {
            let mut g = t.dirs[a].lock();
            let n = g.entries.len();
            if n > 0 {
                let i = (r >> 40) as usize % n;
                self.next_name += 1;
                g.entries[i].0 = self.next_name;
            }
        } else {
            let (lo, hi) = (a.min(b), a.max(b));
            let mut g1 = t.dirs[lo].lock();
            let mut g2 = t.dirs[hi].lock();
            if g1.busy || g2.busy {
                self.bad += 1;
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
}

/// What one configuration's run measured.
struct Measured {
    jobs: u64,
    elapsed: Duration,
    violations: u64,
    tree_ns: u64,
}

/// Runs one configuration with mutex `R` and tree lock `T`.
fn run_one<R, T>(users: usize, dirs: u32, files: u32, duration: Duration) -> Measured
where
    R: RawMutex + Send + Sync + 'static,
    T: RawRwLock + Send + Sync + 'static,
{
    let dir = |d: u32| {
        let entries = (0..files)
            .map(|f| ((d as u64) << 32 | f as u64, new_file::<R>(f as u64)))
            .collect();
        Arc::new(Mutex::new(DirD {
            entries,
            busy: false,
        }))
    };
    let tree = Arc::new(RwLock::<T, _>::new(Tree::<R> {
        dirs: (0..dirs).map(dir).collect(),
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(std::sync::Barrier::new(users + 1));
    let hs: Vec<_> = (0..users)
        .map(|u| {
            let (tree, stop, start) = (tree.clone(), stop.clone(), start.clone());
            let mut user = User {
                rng: Rng(0x9e37_79b9_7f4a_7c15 ^ ((u as u64 + 1) << 17)),
                next_name: (u as u64 + 1) << 48,
                cap: 2 * files as usize,
                jobs: 0,
                tree_ns: 0,
                bad: 0,
            };
            std::thread::spawn(move || {
                start.wait();
                // Relaxed: a plain stop flag; the join publishes the results.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..OPS_PER_JOB {
                        user.op(&tree);
                    }
                    user.jobs += 1;
                }
                user
            })
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(duration);
    // Relaxed: see the workers' loop.
    stop.store(true, Ordering::Relaxed);
    let mut m = Measured {
        jobs: 0,
        elapsed: Duration::ZERO,
        violations: 0,
        tree_ns: 0,
    };
    for h in hs {
        let u = h.join().expect("fserver worker panicked");
        m.jobs += u.jobs;
        m.tree_ns += u.tree_ns;
        m.violations += u.bad;
    }
    m.elapsed = t0.elapsed();
    m
}

fn run_variant(name: &str, users: usize, dirs: u32, files: u32, d: Duration) -> Measured {
    use klock::{RawMutex, SpinNoQueue, SpinOff, SpinOsq};
    type KTree = klock::RawRwLock<SpinOsq>;
    type PlTree = parking_lot::RawRwLock;
    match name {
        "klock_mutex" => run_one::<RawMutex<SpinOsq>, KTree>(users, dirs, files, d),
        "klock_mutex_noqueue" => run_one::<RawMutex<SpinNoQueue>, KTree>(users, dirs, files, d),
        "klock_mutex_nospin" => run_one::<RawMutex<SpinOff>, KTree>(users, dirs, files, d),
        "klock_mutex_pltree" => run_one::<RawMutex<SpinOsq>, PlTree>(users, dirs, files, d),
        _ => run_one::<parking_lot::RawMutex, PlTree>(users, dirs, files, d),
    }
}

/// A run's record: jobs per minute and, in stats builds, where the time went.
fn fs_run(lock: &str, users: usize, m: &Measured, ev: &klock::stat::Snapshot) -> FsRun {
    use klock::stat::Event as E;
    let pct = |ns: u64| 100.0 * ns as f64 / (users as f64 * m.elapsed.as_nanos().max(1) as f64);
    let stats = cfg!(feature = "stats");
    let klock = stats && lock.starts_with("klock_");
    let spin = ev.get(E::MutexSpinOwnerNs);
    let osq = ev.get(E::OsqWaitNs);
    let slow = ev.get(E::MutexWaitNs).saturating_sub(spin + osq);
    FsRun {
        lock: lock.into(),
        users,
        jpm: m.jobs as f64 * 60.0 / m.elapsed.as_secs_f64().max(1e-9),
        violations: m.violations,
        tree_wait_pct: stats.then(|| pct(m.tree_ns)),
        spin_owner_pct: klock.then(|| pct(spin)),
        osq_wait_pct: klock.then(|| pct(osq)),
        slowpath_pct: klock.then(|| pct(slow)),
        events: if klock {
            E::ALL
                .iter()
                .filter(|e| ev.get(**e) > 0)
                .map(|e| (e.name().to_string(), ev.get(*e)))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// Planned progress units of a whole `fserver` run.
pub fn planned_units(args: &FserverArgs) -> u64 {
    (args.run.runs as usize * args.users.0.len() * args.locks.len()) as u64
        * run_units(args.run.window())
}

/// Resolves `--locks` against [`VARIANTS`].
pub fn select(names: &[String]) -> Result<Vec<String>, CliError> {
    let v = super::pick(names, VARIANTS, "fserver lock")?;
    Ok(v.iter().map(|x| x.0.to_string()).collect())
}

/// Validates the arguments and runs every configuration; progress on `prog`.
pub fn measure(args: &FserverArgs, prog: &Progress) -> Result<FsReport, CliError> {
    let locks = select(&args.locks)?;
    let points: Vec<(usize, &str)> = (args.users.0.iter())
        .flat_map(|&u| locks.iter().map(move |l| (u, l.as_str())))
        .collect();
    let step = |(users, lock): &(usize, &str)| Step {
        label: format!("fserver {lock} users={users}"),
        units: run_units(args.run.window()),
        // The noise threads run through the whole experiment (below).
        noise: 0,
    };
    let noise = (args.noise > 0).then(|| Noise::start(args.noise as usize));
    let (dirs, files, d) = (args.dirs, args.files, args.run.window());
    let done = interleave(&points, &args.run.schedule(), prog, step, |_, (u, l)| {
        run_variant(l, *u, dirs, files, d)
    });
    drop(noise);
    Ok(FsReport {
        command: super::command_line(),
        ops_per_job: OPS_PER_JOB,
        runs: (done.iter())
            .map(|d| {
                let (users, lock) = points[d.point];
                fs_run(lock, users, &d.out, &d.events)
            })
            .collect(),
    })
}

/// Runs `lockbench fserver`; returns the exit status.
pub fn run(args: &FserverArgs) -> Result<i32, CliError> {
    let locks = select(&args.locks)?;
    let prog = args.run.progress(planned_units(args));
    let report = measure(args, &prog)?;
    prog.finish();
    super::out(&render(&report, &locks, &args.users.0));
    super::write_json(args.run.json.as_ref(), &report)?;
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
#[rustfmt::skip]
pub const SEED_JPM: &[(&str, &str, u64, u64, u64, &str)] = &[
    ("8 nodes, HT off", "1100-2000", 227_972, 227_237, 305_043, "+34.2%"),
    ("4 nodes, HT off", "1100-2000", 393_503, 381_558, 394_650, "+3.4%"),
    ("2 nodes, HT off", "1100-2000", 334_957, 325_240, 338_853, "+4.2%"),
    ("1 node, HT off", "1100-2000", 198_141, 197_972, 198_075, "+0.1%"),
    ("8 nodes, HT off", "200-1000", 282_325, 312_870, 332_185, "+6.2%"),
    ("4 nodes, HT off", "200-1000", 390_698, 378_279, 393_419, "+4.0%"),
    ("2 nodes, HT off", "200-1000", 336_986, 326_543, 340_260, "+4.2%"),
    ("1 node, HT off", "200-1000", 197_588, 197_622, 197_582, "0.0%"),
];

/// Seed 004's perf profile at 1500 users, 8 nodes, patches 1&2: % time in the tree
/// rwlock (`__read_lock_failed` + `__write_lock_failed`), `mutex_spin_on_owner`,
/// `mspin_lock`, `__mutex_lock_slowpath`.
pub const SEED_PROFILE: [&str; 4] = ["36.65% (29.14 + 7.51)", "2.33%", "9.90%", "0.14%"];

/// Every run's `f` for (lock, users).
fn runs_of(report: &FsReport, lock: &str, users: usize, f: fn(&FsRun) -> Option<f64>) -> Vec<f64> {
    (report.runs.iter())
        .filter(|r| r.lock == lock && r.users == users)
        .filter_map(f)
        .collect()
}

fn med(report: &FsReport, lock: &str, users: usize, f: fn(&FsRun) -> Option<f64>) -> Option<f64> {
    let v = runs_of(report, lock, users, f);
    (!v.is_empty()).then(|| median(&v))
}

/// Render the tables: JPM per users, the OSQ ablation, and the contention
/// profile at the largest user count (as terminal text).
pub fn render(report: &FsReport, locks: &[String], users: &[usize]) -> String {
    let mut s = super::text(&tables(report, locks, users));
    if !cfg!(feature = "stats") {
        s.push_str(
            "\n(contention profile: build with `--features stats` to get the share of time in lock slow paths)\n",
        );
    }
    s
}

/// A one-row table: the % change of `a`'s median JPM over `b`'s per user count.
fn change_table(
    report: &FsReport,
    users: &[usize],
    title: &str,
    row: &str,
    (a, b): (&str, &str),
) -> Table {
    let jpm = |l: &str, u: usize| med(report, l, u, |r| Some(r.jpm));
    Table::grid(
        title,
        "lock",
        &[row.to_string()],
        users,
        |u| format!("users={u}"),
        |_, &u| {
            Some(match (jpm(a, u), jpm(b, u)) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:+.1}%", 100.0 * (x - y) / y),
                _ => "-".into(),
            })
        },
    )
}

/// The contention profile at the largest user count beside the seed's perf profile.
fn profile_table(report: &FsReport, locks: &[String], umax: usize) -> Table {
    let mut header = vec!["where (kernel name in seed 004)"];
    header.extend(locks.iter().map(String::as_str));
    header.push("seed 004, 1500 users, patches 1&2");
    let mut p = Table::new(
        format!("contention profile at users={umax}: % of all user-thread time (median of runs)"),
        &header,
    );
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
    p
}

/// The tables: JPM per users, the OSQ ablation beside the seed's % change, the tree
/// lock's effect, the contention profile (stats builds) beside the seed's perf
/// profile, and the seed's own JPM table.
pub fn tables(report: &FsReport, locks: &[String], users: &[usize]) -> Vec<Table> {
    let has = |l: &str| locks.iter().any(|x| x == l);
    let title = format!(
        "fserver: jobs per minute ({} ops/job, median of runs)",
        report.ops_per_job
    );
    let mut out = vec![Table::grid(
        title,
        "lock",
        locks,
        users,
        |u| format!("users={u}"),
        |l, &u| med(report, l, u, |r| Some(r.jpm)).map(|x| format!("{x:.0}")),
    )];
    if has("klock_mutex") && has("klock_mutex_noqueue") {
        let mut a = change_table(
            report,
            users,
            "seed 004 ablation: % change of klock_mutex (OSQ) over klock_mutex_noqueue",
            "OSQ vs noqueue",
            ("klock_mutex", "klock_mutex_noqueue"),
        );
        a.header
            .push("seed 004: % change 1 -> 1&2, 8 nodes (1100-2000 / 200-1000 users)".into());
        a.rows[0].push("+34.2% / +6.2%".into());
        out.push(a);
    }
    if has("klock_mutex") && has("klock_mutex_pltree") {
        out.push(change_table(
            report,
            users,
            "tree lock: % change of klock_mutex (klock rwsem tree) over klock_mutex_pltree (parking_lot::RwLock tree)",
            "rwsem tree vs pl tree",
            ("klock_mutex", "klock_mutex_pltree"),
        ));
    }
    if cfg!(feature = "stats") {
        out.push(profile_table(
            report,
            locks,
            users.iter().copied().max().unwrap_or(1),
        ));
    }
    let mut seed = Table::new(
        "seed 004, 8-node 80-core Westmere, 3.7.10: mean JPM (quoted for shape, not measured here)",
        &[
            "configuration",
            "users",
            "w/o patch",
            "patch 1",
            "patches 1&2",
            "% change 1 -> 1&2",
        ],
    );
    let n = |x: u64| crate::table::group_thousands(x as f64);
    seed.rows = SEED_JPM
        .iter()
        .map(|r| vec![r.0.into(), r.1.into(), n(r.2), n(r.3), n(r.4), r.5.into()])
        .collect();
    out.push(seed);
    out
}

/// Verdict samples: jobs per minute per variant and user count.
pub fn samples(report: &FsReport, locks: &[String], users: &[usize]) -> Vec<Sample> {
    Sample::grid("fserver", "jobs/min", true, locks, users, |l, u| {
        runs_of(report, l, u, |r| Some(r.jpm))
    })
}

/// The report section: tables and a JPM chart per lock group.
pub fn section(report: &FsReport, locks: &[String], users: &[usize]) -> Section {
    let samples = samples(report, locks, users);
    let axes = ("users (threads)", "jobs per minute");
    Section {
        title: "fserver (seed 004): file-server job mix, jobs per minute".into(),
        notes: vec![format!(
            "{} operations per job; the tree lock is klock's rwsem for the klock variants (parking_lot::RwLock for parking_lot and klock_mutex_pltree). Seed 004 measured AIM7 fserver on an 8-node 80-core machine at 200-2000 users: compare the sign and size of the OSQ ablation, not absolute JPM.",
            report.ops_per_job
        )],
        tables: tables(report, locks, users),
        charts: crate::html::per_group_lines("fserver", axes, users, locks, &samples),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_run_counts_jobs_without_violations() {
        for (name, _) in VARIANTS {
            let m = run_variant(name, 4, 4, 8, Duration::from_millis(50));
            assert!(m.jobs > 0, "{name}: no job completed");
            assert_eq!(m.violations, 0, "{name}: mutual exclusion violated");
        }
    }

    #[test]
    fn render_has_tables() {
        // (the second lock, its JPM against klock_mutex's 100, what the table says)
        for (other, jpm, want) in [
            ("klock_mutex_noqueue", 100.0 / 1.1, "+10.0%"),
            ("klock_mutex_pltree", 100.0 / 0.9, "tree lock"),
            ("klock_mutex_pltree", 100.0 / 0.9, "-10.0%"),
        ] {
            let run = |lock: &str, jpm| FsRun {
                lock: lock.into(),
                users: 2,
                jpm,
                ..FsRun::default()
            };
            let r = FsReport {
                command: "x".into(),
                ops_per_job: OPS_PER_JOB,
                runs: vec![run("klock_mutex", 100.0), run(other, jpm)],
            };
            let s = render(&r, &["klock_mutex".into(), other.into()], &[2]);
            assert!(s.contains("jobs per minute") && s.contains(want), "{s}");
        }
    }
}

//! `lockbench fio`: seed 003's fio `randrw` test in user space. T threads do 4 KiB
//! reads (shared) and writes (exclusive) at random offsets of one in-memory file behind
//! one rw lock, as buffered I/O does under xfs's `i_rwsem`: the critical section is a
//! 4 KiB copy, long compared with the microbenchmark's. The file is relaxed atomics
//! (each block `stamp + i`), so a broken lock shows as a torn block, not undefined
//! behaviour. Aggregated MB/s per lock and T: `docs/lockbench.md`, "fio (seed 003)".

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{CliError, RunArgs, Step, ThreadList, interleave, out, parse_threads};
use crate::adapter::{BenchLock, LockApiRwLock};
use crate::locks::pthread::{PthreadRwLock, RW_DEFAULT, RW_PREFER_WRITER_NONRECURSIVE};
use crate::locks::stdlib::StdRwLock;
use crate::progress::{Progress, run_units};
use crate::stats::spread;
use crate::table::Table;
use crate::verdict::Sample;

/// Bytes per I/O.
pub const BLOCK: usize = 4096;
const WORDS: usize = BLOCK / 8;

/// Default `--locks`.
pub const DEFAULT_LOCKS: &str = "klock_rwlock_batched,klock_rwlock_floor,klock_rwsem,klock_rwsem_nospin,std_rw,parking_lot_rw,pthread_rw,pthread_rw_wpref";

/// Seed 003's fio result: (kernel, MB/s), 36 threads, xfs on a ramdisk.
pub const SEED: &[(&str, f64)] = &[("patched 4.14", 2787.0), ("unpatched 4.14", 297.0)];

/// Arguments of `lockbench fio`.
#[derive(clap::Args, Clone, Debug)]
#[command(mut_arg("json", |a| a.help("Write every run and the medians as JSON to FILE")))]
pub struct FioArgs {
    /// Comma-separated thread counts, each 1..=1024.
    #[arg(long, value_parser = parse_threads, default_value = "2,8,36")]
    pub threads: ThreadList,
    /// Comma-separated rwlock names: klock_rwlock_batched (klock::RwLock),
    /// klock_rwlock_floor, klock_rwlock_phased, klock_rwsem,
    /// klock_rwsem_nospin, std_rw, parking_lot_rw, pthread_rw, pthread_rw_wpref.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_LOCKS)]
    pub locks: Vec<String>,
    /// Share of I/Os that are reads, percent (0..=100).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub read_pct: u32,
    /// File size, MiB (1..=4096).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub file_mib: u32,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// CPU-hog threads running beside the workload (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: u32,
    /// Write every run as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// One run's parameters.
#[derive(Clone, Debug)]
pub struct FioSpec {
    /// Worker threads.
    pub threads: usize,
    /// Reads per 100 I/Os.
    pub read_pct: u32,
    /// Measurement window.
    pub duration: Duration,
}

/// One run's result.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FioRun {
    /// Lock name.
    pub lock: String,
    /// Threads.
    pub threads: usize,
    /// Reads completed in the window.
    pub reads: u64,
    /// Writes completed in the window.
    pub writes: u64,
    /// Window, seconds.
    pub secs: f64,
    /// Aggregated bandwidth, MB/s (10^6 bytes).
    pub mbps: f64,
    /// Torn blocks seen by readers (must be 0).
    pub violations: u64,
}

/// The in-memory file: `words` relaxed atomics, word `i` of a block = stamp + i.
pub struct FileBuf(Vec<AtomicU64>);

impl FileBuf {
    /// A file of `mib` MiB, every block consistent (stamp 0).
    pub fn new(mib: usize) -> FileBuf {
        FileBuf(
            (0..mib * (1 << 20) / 8)
                .map(|w| AtomicU64::new((w % WORDS) as u64))
                .collect(),
        )
    }
    fn blocks(&self) -> usize {
        self.0.len() / WORDS
    }
}

type FioFn = fn(&FioSpec, &Arc<FileBuf>) -> FioRun;

/// The locks `fio` runs: name and job runner (descriptions come from the registry).
pub fn lock_table() -> Vec<(&'static str, FioFn)> {
    use klock::internal::rwlock::{RawRwLockBatched, RawRwLockFloor, RawRwLockPhased};
    use klock::{RawRwLock, SpinOff, SpinOsq};
    vec![
        (
            "klock_rwlock_batched",
            job::<LockApiRwLock<RawRwLockBatched>>,
        ),
        ("klock_rwlock_floor", job::<LockApiRwLock<RawRwLockFloor>>),
        ("klock_rwlock_phased", job::<LockApiRwLock<RawRwLockPhased>>),
        ("klock_rwsem", job::<LockApiRwLock<RawRwLock<SpinOsq>>>),
        (
            "klock_rwsem_nospin",
            job::<LockApiRwLock<RawRwLock<SpinOff>>>,
        ),
        ("std_rw", job::<StdRwLock>),
        (
            "parking_lot_rw",
            job::<LockApiRwLock<parking_lot::RawRwLock>>,
        ),
        ("pthread_rw", job::<PthreadRwLock<RW_DEFAULT>>),
        (
            "pthread_rw_wpref",
            job::<PthreadRwLock<RW_PREFER_WRITER_NONRECURSIVE>>,
        ),
    ]
}

#[inline]
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// What the workers of one run share.
struct Shared<L> {
    lock: L,
    file: Arc<FileBuf>,
    /// Per worker: (reads, writes) so far, snapshotted at the stop instant.
    counts: Vec<Slot>,
    ready: AtomicUsize,
    go: AtomicBool,
    stop: AtomicBool,
}

#[repr(align(128))]
struct Slot(AtomicU64, AtomicU64);

/// One worker: random 4 KiB reads (shared) and writes (exclusive) until stopped;
/// returns the torn blocks it read.
fn worker<L: BenchLock>(i: usize, sh: &Shared<L>, read_pct: u64) -> u64 {
    let ctx = L::Ctx::default();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ ((i as u64 + 1) << 20);
    let mut buf = [0u64; WORDS];
    let nblocks = sh.file.blocks() as u64;
    let (mut reads, mut writes, mut torn) = (0u64, 0u64, 0u64);
    let mut stamp = (i as u64 + 1) << 40;
    // Relaxed: a count; `go` is the real gate.
    sh.ready.fetch_add(1, Ordering::Relaxed);
    // Acquire: pairs with the main thread's Release store of `go`.
    while !sh.go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // Relaxed: the stop flag publishes nothing; join does.
    while !sh.stop.load(Ordering::Relaxed) {
        let r = xorshift(&mut rng);
        let base = ((r >> 8) % nblocks) as usize * WORDS;
        let words = &sh.file.0[base..base + WORDS];
        if r % 100 < read_pct {
            sh.lock.with_read(&ctx, || {
                for (b, w) in buf.iter_mut().zip(words) {
                    // Relaxed: ordering comes from the lock under test.
                    *b = w.load(Ordering::Relaxed);
                }
            });
            // Check the copy outside the lock, like a reader using its data.
            let s0 = buf[0];
            torn += buf
                .iter()
                .enumerate()
                .any(|(k, &b)| b != s0.wrapping_add(k as u64)) as u64;
            reads += 1;
            // Relaxed: counters the main thread snapshots at stop.
            sh.counts[i].0.store(reads, Ordering::Relaxed);
        } else {
            stamp += WORDS as u64;
            for (k, b) in buf.iter_mut().enumerate() {
                *b = stamp.wrapping_add(k as u64);
            }
            sh.lock.with_lock(&ctx, || {
                for (b, w) in buf.iter().zip(words) {
                    // Relaxed: ordering comes from the lock under test.
                    w.store(*b, Ordering::Relaxed);
                }
            });
            writes += 1;
            // Relaxed: as above.
            sh.counts[i].1.store(writes, Ordering::Relaxed);
        }
    }
    std::hint::black_box(&buf);
    torn
}

/// Runs one randrw run of lock type `L` on `file`.
pub fn job<L: BenchLock>(spec: &FioSpec, file: &Arc<FileBuf>) -> FioRun {
    crate::sys::leave_single_threaded_mode();
    let t = spec.threads.max(1);
    let sh = Arc::new(Shared {
        lock: L::new(),
        file: file.clone(),
        counts: (0..t)
            .map(|_| Slot(AtomicU64::new(0), AtomicU64::new(0)))
            .collect(),
        ready: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let read_pct = spec.read_pct as u64;
    let hs: Vec<_> = (0..t)
        .map(|i| {
            let sh = sh.clone();
            std::thread::spawn(move || worker(i, &*sh, read_pct))
        })
        .collect();
    // Relaxed: only a count.
    while sh.ready.load(Ordering::Relaxed) < t {
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    // Release: pairs with the workers' Acquire loads.
    sh.go.store(true, Ordering::Release);
    std::thread::sleep(spec.duration);
    // Relaxed: see the workers' loop.
    sh.stop.store(true, Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    // Relaxed: a snapshot of per-thread counters at the stop instant.
    let reads: u64 = sh.counts.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    let writes: u64 = sh.counts.iter().map(|s| s.1.load(Ordering::Relaxed)).sum();
    let violations: u64 = hs
        .into_iter()
        .map(|h| h.join().expect("fio worker panicked"))
        .sum();
    FioRun {
        lock: String::new(),
        threads: t,
        reads,
        writes,
        secs,
        mbps: (reads + writes) as f64 * BLOCK as f64 / 1e6 / secs.max(1e-9),
        violations,
    }
}

/// Per (lock, threads): median MB/s and spread over runs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FioCell {
    /// Lock name.
    pub lock: String,
    /// Threads.
    pub threads: usize,
    /// Median MB/s.
    pub mbps: f64,
    /// (max − min) / median of the runs' MB/s.
    pub spread: f64,
    /// Runs behind the median.
    pub runs: usize,
}

fn mbps_of(runs: &[FioRun], lock: &str, threads: usize) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.lock == lock && r.threads == threads)
        .map(|r| r.mbps)
        .collect()
}

/// Medians of `runs` per (lock, threads), in `locks` × `threads` order.
pub fn cells(runs: &[FioRun], locks: &[String], threads: &[usize]) -> Vec<FioCell> {
    Sample::grid("", "", true, locks, threads, |l, t| mbps_of(runs, l, t))
        .into_iter()
        .map(|s| FioCell {
            spread: spread(&s.runs),
            runs: s.runs.len(),
            lock: s.lock,
            threads: s.order,
            mbps: s.median,
        })
        .collect()
}

/// The tables: MB/s (median) per lock × threads, the spread, and the seed's numbers.
pub fn tables(cells: &[FioCell], locks: &[String], threads: &[usize], a: &FioArgs) -> Vec<Table> {
    let get = |l: &str, t: &usize| cells.iter().find(|c| c.lock == l && c.threads == *t);
    let col = |t: &usize| format!("T={t}");
    let title = format!(
        "fio randrw (user space): aggregated MB/s, {} KiB I/Os, {}% reads, {} MiB file, median of {} runs",
        BLOCK / 1024,
        a.read_pct,
        a.file_mib,
        a.run.runs
    );
    let bw = Table::grid(title, "lock", locks, threads, col, |l, t| {
        get(l, t).map(|c| format!("{:.0}", c.mbps))
    });
    let sp = Table::grid(
        "fio randrw: spread of the runs, (max - min) / median",
        "lock",
        locks,
        threads,
        col,
        |l, t| get(l, t).map(|c| format!("{:.1}%", 100.0 * c.spread)),
    );
    let mut seed = Table::new(
        "seed 003, 2-socket 36-core, 4.14: fio randrw, 36 threads, xfs on a ramdisk (quoted for shape, not measured here)",
        &["kernel", "MB/s"],
    );
    seed.rows = SEED
        .iter()
        .map(|(k, m)| vec![k.to_string(), format!("{m:.0}")])
        .collect();
    seed.rows.push(vec![
        "patched / unpatched".into(),
        format!("{:.1}x", SEED[0].1 / SEED[1].1),
    ]);
    vec![bw, sp, seed]
}

fn to_csv(runs: &[FioRun]) -> String {
    let mut s = String::from("lock,threads,reads,writes,secs,mbps,violations\n");
    for r in runs {
        s.push_str(&format!(
            "{},{},{},{},{:.6},{:.3},{}\n",
            r.lock, r.threads, r.reads, r.writes, r.secs, r.mbps, r.violations
        ));
    }
    s
}

/// Resolves `--locks` against [`lock_table`].
pub fn select(names: &[String]) -> Result<Vec<(&'static str, FioFn)>, CliError> {
    super::pick(names, &lock_table(), "lock")
}

/// Planned progress units of a whole `fio` run.
pub fn planned_units(a: &FioArgs) -> u64 {
    (a.run.runs as usize * a.threads.0.len() * a.locks.len()) as u64 * run_units(a.run.window())
}

/// Runs every (lock, threads) `--runs` times, interleaved; progress on `prog`.
pub fn measure(a: &FioArgs, prog: &Progress) -> Result<Vec<FioRun>, CliError> {
    let locks = select(&a.locks)?;
    let file = Arc::new(FileBuf::new(a.file_mib as usize));
    let points: Vec<(usize, (&str, FioFn))> = (a.threads.0.iter())
        .flat_map(|&t| locks.iter().map(move |&l| (t, l)))
        .collect();
    let step = |(t, (name, _)): &(usize, (&str, FioFn))| Step {
        label: format!("fio {name} T={t}"),
        units: run_units(a.run.window()),
        noise: a.noise as usize,
    };
    let done = interleave(
        &points,
        &a.run.schedule(),
        prog,
        step,
        |_, (t, (name, f))| {
            let spec = FioSpec {
                threads: *t,
                read_pct: a.read_pct,
                duration: a.run.window(),
            };
            FioRun {
                lock: name.to_string(),
                ..f(&spec, &file)
            }
        },
    );
    Ok(done.into_iter().map(|d| d.out).collect())
}

/// Verdict samples: MB/s per lock and thread count.
pub fn samples(runs: &[FioRun], locks: &[String], threads: &[usize]) -> Vec<Sample> {
    Sample::grid("fio randrw", "MB/s", true, locks, threads, |l, t| {
        mbps_of(runs, l, t)
    })
}

/// The report section: the tables (with the seed's result) and MB/s against threads.
pub fn section(runs: &[FioRun], locks: &[String], a: &FioArgs) -> crate::table::Section {
    let threads = &a.threads.0;
    let axes = ("threads", "MB/s (median, bars: runs' min-max)");
    let ss = samples(runs, locks, threads);
    crate::table::Section {
        title: "fio (seed 003): randrw on an in-memory file behind one rw lock".into(),
        notes: vec![format!(
            "{} KiB I/Os at random offsets, {}% reads, {} MiB file, {} s windows. The seed's figure is a 36-thread fio job on xfs on a ramdisk: compare the ratio between locks, not MB/s.",
            BLOCK / 1024,
            a.read_pct,
            a.file_mib,
            a.run.duration
        )],
        tables: tables(&cells(runs, locks, threads), locks, threads, a),
        charts: crate::html::per_group_lines("fio randrw", axes, threads, locks, &ss),
    }
}

/// Runs `lockbench fio`; returns the exit status.
pub fn run(a: &FioArgs) -> Result<i32, CliError> {
    let names: Vec<String> = select(&a.locks)?.iter().map(|l| l.0.to_string()).collect();
    let prog = a.run.progress(planned_units(a));
    let runs = measure(a, &prog)?;
    prog.finish();
    let cs = cells(&runs, &names, &a.threads.0);
    let m = crate::sys::Machine::probe();
    out(&super::header_line("fio", &m, a.run.runs));
    out(&super::text(&tables(&cs, &names, &a.threads.0, a)));
    let bad: u64 = runs.iter().map(|r| r.violations).sum();
    out(&format!(
        "\nMutual exclusion: {}\n",
        if bad == 0 {
            "OK in every run (no torn block)".to_string()
        } else {
            format!("{bad} TORN BLOCKS")
        }
    ));
    let j = serde_json::json!({
        "experiment": "fio",
        "command": super::command_line(),
        "machine": m,
        "block_bytes": BLOCK,
        "file_mib": a.file_mib,
        "read_pct": a.read_pct,
        "seed_mbps": SEED,
        "cells": cs,
        "runs": runs,
    });
    super::write_json(a.run.json.as_ref(), &j)?;
    if let Some(p) = &a.csv {
        super::write_file(p, &to_csv(&runs))?;
    }
    if bad > 0 {
        eprintln!("error: mutual-exclusion violations detected ({bad} torn blocks)");
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    fn parse(args: &str) -> Result<FioArgs, String> {
        super::super::parse_args(&args.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_bad_flags() {
        let a = parse("").unwrap();
        assert_eq!(a.threads.0, vec![2, 8, 36]);
        assert_eq!(a.read_pct, 50);
        assert_eq!(select(&a.locks).unwrap().len(), 8);
        // Every fio lock is a registered rwlock (descriptions come from there).
        for (n, _) in lock_table() {
            let e = crate::locks::find(n).unwrap();
            assert_eq!(e.kind, crate::locks::LockKind::RwLock, "{n}");
        }
        for (args, allowed) in [
            ("--read-pct 101", "0..=100"),
            ("--threads 0", "1..=1024"),
            ("--file-mib 0", "1..=4096"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(allowed), "{e}");
        }
        let e = select(&["std".into()]).unwrap_err();
        assert!(
            e.0.contains("allowed") && e.0.contains("klock_rwsem_nospin"),
            "{e}"
        );
    }

    #[test]
    fn tiny_run_moves_blocks_without_tearing() {
        let file = Arc::new(FileBuf::new(1));
        let spec = FioSpec {
            threads: 3,
            read_pct: 50,
            duration: Duration::from_millis(50),
        };
        let mut runs = Vec::new();
        for (name, f) in lock_table() {
            let mut r = f(&spec, &file);
            assert!(r.reads > 0 && r.writes > 0, "{name}: {r:?}");
            assert_eq!(r.violations, 0, "{name}");
            assert!(r.mbps > 0.0, "{name}");
            r.lock = name.into();
            runs.push(r);
        }
        let names: Vec<String> = lock_table().iter().map(|t| t.0.to_string()).collect();
        let cs = cells(&runs, &names, &[3]);
        assert_eq!(cs.len(), names.len());
        let a = parse("--file-mib 1").unwrap();
        let text = super::super::text(&tables(&cs, &names, &[3], &a));
        assert!(
            text.contains("aggregated MB/s") && text.contains("T=3"),
            "{text}"
        );
        assert!(text.contains("2787") && text.contains("seed 003"), "{text}");
        assert!(to_csv(&runs).lines().count() == runs.len() + 1);
    }

    #[test]
    fn a_lock_without_exclusion_tears_blocks() {
        struct NoLock;
        impl BenchLock for NoLock {
            type Ctx = ();
            fn new() -> Self {
                NoLock
            }
            fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
                f()
            }
        }
        // A tiny file and all threads hammering it: overlapping copies tear.
        let file = Arc::new(FileBuf(
            (0..WORDS).map(|w| AtomicU64::new(w as u64)).collect(),
        ));
        let mut torn = 0;
        for _ in 0..20 {
            torn += job::<NoLock>(
                &FioSpec {
                    threads: 4,
                    read_pct: 50,
                    duration: Duration::from_millis(20),
                },
                &file,
            )
            .violations;
            if torn > 0 {
                break;
            }
        }
        assert!(torn > 0, "the torn-block check never fired");
    }
}

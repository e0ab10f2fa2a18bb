//! Torture test of the floor rwlock (a lock_api rwlock over
//! `klock::internal::rwlock::RawRwLockFloorOf<PHASED, B>`: a state word with
//! the reader count and two waiter bits, and a `writer_notify` word writers
//! sleep on; see `crates/klock/src/rwlock/floor.rs`), both variants, one
//! after the other: `torture_rwlock_floor` (`RawRwLockFloor`, std's futex
//! rwlock protocol) and `torture_rwlock_phased` (`RawRwLockPhased`, with
//! turns: the woken writer's reservation, the readers' turn at a write
//! release, a reader that slept entering past the waiter bits, a timed
//! writer that gives up after sleeping passing its wake-up on). The same
//! generic run (`torture::<PHASED, B>`), in the spirit of
//! `torture_floor.rs` and `torture_rwlock.rs`: at least 32 threads (16x
//! the effective CPUs if more; `KLOCK_TORTURE_MULT` changes the 16), a
//! quarter of them writers and the rest readers, each taking its side
//! plainly, with a try lock, or timed (`try_read_for` / `_until`,
//! `try_write_for` / `_until`, some with a 1 µs timeout), holding it for a
//! random time (mostly short, some yielding, a few sleeping 1 ms) and
//! thinking for a random time between acquisitions.
//!
//! Checks:
//! * **exclusion**: counters of the threads inside as readers and as
//!   writers, checked at every acquisition (a writer alone, no reader
//!   beside a writer), and the word seen from inside (write-locked for a
//!   writer, read-locked for a reader);
//! * **torn reads**: a writer updates the two protected fields one after
//!   the other with its hold time in between; every reader checks they are
//!   equal;
//! * **lost updates**: the writer's update is a slow read-modify-write, and
//!   the fields end equal to the exact number of write critical sections;
//! * **starvation / progress**: the run goes on past its time (default
//!   1 s, `KLOCK_TORTURE_SECS`) until every thread has acquired the lock at
//!   least once and some timed read and some timed write have timed out
//!   (events, not deadlines); per-class min/avg/max acquisitions and the
//!   timeouts are printed;
//! * **no hang**: a watchdog fails the test instead of hanging, naming
//!   what did not happen: a thread stuck in one operation for
//!   `KLOCK_TORTURE_STALL_SECS` (default 120; its operation and the state
//!   word are named), or a run not over after the run time plus that plus
//!   60 s (naming the threads without an acquisition and the timeout kinds
//!   not seen);
//! * the lock is free and its state word 0 at the end (no reader count or
//!   waiter bit left behind, also after timed waiters gave up).
//!
//! Nothing here asserts on timing or throughput. Also run under
//! `.ci/chaos --test torture_rwlock_floor` (random yields and sleeps at the
//! lock's `chaos::point` sites: before a sleep, after a wake-up, after a
//! release).
//!
//! Deliberate breaks of `floor.rs` (checked by hand, not kept; the stall
//! watchdog at `KLOCK_TORTURE_STALL_SECS=10`) and what fired in a plain
//! run of `torture_rwlock_floor` (the first two breaks also under chaos,
//! with the same result):
//! * `write_slow` claiming whenever the word is not write-locked (readers
//!   ignored; `claim_write`'s `debug_assert` removed): the exclusion check
//!   ("a writer got in beside 3 reader(s)") within 0.1 s, and the torn-read
//!   check ("torn read: a = 0, b = 1") in the same run;
//! * `wake_writer` without its `futex_wake`, or `write_slow` claiming with
//!   `others = 0`: the stall watchdog ("thread 3 (Writer) stuck in write");
//! * `wake_writer_or_readers` without the readers' `futex_wake`, or without
//!   the fallback to the readers when no writer woke, or `unlock_shared`
//!   without its wake-up: the stall watchdog ("thread 6 (Reader) stuck in
//!   read");
//! * a timed read that reports success at its deadline: "a reader inside,
//!   state word 0x40000000"; a timed write that does: `unlock_exclusive`'s
//!   `debug_assert` (the word was not write-locked).
//!
//! Not caught here (loom's models catch both, see `loom_rwlock_floor.rs`):
//! `write_slow` loading `writer_notify` after its re-check of `state` (a
//! window of two loads, with no chaos point in it), and `unlock_exclusive`
//! with a Relaxed `fetch_sub` (x86 keeps the stores in order anyway).
//!
//! Breaks of the turns, `torture_rwlock_phased` (plain and under chaos,
//! the same check fired in both):
//! * `writers_turn` returning without a wake-up when WRITERS_WAITING is
//!   set, or `readers_turn` without the writer's wake-up: the stall
//!   watchdog ("thread 3 (Writer) stuck in write", stuck within the first
//!   second);
//! * `readers_turn` without the readers' `futex_wake`: the stall watchdog
//!   ("thread 6 (Reader) stuck in read", likewise).
//!
//! Not caught here, in 10 s runs plain and under chaos (loom's models
//! catch both, see `loom_rwlock_floor.rs`): `unlock_shared` without its
//! second branch (model 10; the branch runs 0-3 times in a 3 s run here),
//! and `writers_turn` clearing READERS_WAITING without waking the readers
//! (models 3, 4, 7, 9 and 10; 30-40 times in a 3 s run): the readers left
//! asleep are woken by the next unlock that wakes readers (every waiter
//! on the word wakes), and under this load one always comes. (A former
//! `give_up_write`, which passed a wake-up on when a timed writer gave
//! up after sleeping, was found redundant here: as a no-op it lost
//! nothing in 1 000-1 500 give-ups per 3 s run, and a writer gives up only
//! after its last look found the lock held with WRITERS_WAITING set, so
//! the holder's unlock wakes the next waiter; it was removed.) The policy breaks (no reservation, no turn for a reader that
//! slept, the turn without having slept) lose no wake-up and were not
//! tried here; loom's models 8-10 observe them. Writer batches
//! (`RawRwLockBatched`) run here as `torture_rwlock_batched`; no break of
//! them was tried.
//!
//! # The mixed torture (`torture_rwlock_{floor,phased,batched}_mixed`)
//!
//! The same three variants under every way in of the lock_api traits the
//! floor family implements (`upgrade.rs`, `api.rs`), through the same
//! harness (watchdog, awaited events): 20 threads (`KLOCK_TORTURE_MULT` /
//! 2 x the effective CPUs if more; 10x overcommit on the 2-vCPU host), a
//! quarter in each role:
//! * **readers**: `read`, `try_read`, `try_read_for` / `_until`; inside,
//!   sometimes nested recursive reads; released plainly, by `unlock_fair`,
//!   or bumped (`bump`: a fair unlock and a new plain read);
//! * **recursive readers**: `read_recursive`, `read`, `try_read_recursive`,
//!   `try_read_recursive_for` / `_until`, then always nested recursive
//!   reads (`read_recursive`, `try_read_recursive`, `_for`, `_until`, up to
//!   three deep). A recursive read while this thread holds a read lock is
//!   never refused (no writer can hold the lock): a refusal fails the test,
//!   a wait behind a waiting writer hangs it (the watchdog names it);
//! * **writers**: `write`, `try_write`, `try_write_for` / `_until`, ending
//!   with a plain or fair unlock, a bump, a `downgrade` (the read lock must
//!   still see the value this writer wrote) or a `downgrade_to_upgradable`
//!   (likewise, then on as an upgradable reader);
//! * **upgradable readers**: `upgradable_read`, `try_upgradable_read`,
//!   `try_upgradable_read_for` / `_until`, then: a blocking `upgrade`,
//!   `try_upgrade`, `try_upgrade_for` / `_until` with short timeouts (1-300
//!   µs), `with_upgraded`, `try_with_upgraded(_for)`, `downgrade` to a plain
//!   read, or a plain / fair unlock or a bump. The value read under the
//!   upgradable lock must be the one found after the upgrade (no writer got
//!   in between) and after a failed or timed-out one (the upgradable lock
//!   was kept); an upgraded writer writes, and may downgrade again (up to
//!   three transitions per acquisition).
//!
//! Checks: the inside counters at every entry (a writer alone; no reader
//! beside a writer; at most one upgradable reader, with UPGRADABLE set in
//! the word; the word read- or write-locked as it should be), torn reads
//! (`a != b`), the values kept across each transition, lost updates (the
//! fields end equal to the write sections), and at the end a free lock
//! with a clean word (0: every waiter bit is cleared by the release that
//! leaves the lock free, also after timed reads, writes and upgrades gave
//! up). The run goes on until every thread has acquired the lock and each
//! awaited event has been seen: timed-out reads, writes, upgradable reads
//! and upgrades; refused `try_upgrade`s; an upgrade called while other
//! readers were inside; successful `try_upgrade`, `try_upgrade_for`,
//! downgrades of all three kinds and nested recursive reads.
//!
//! Deliberate breaks of `rwlock/floor/` (checked by hand, not kept; the
//! stall watchdog at `KLOCK_TORTURE_STALL_SECS=10`) and what fired, in all
//! three mixed runs, plain:
//! * `after_read_release` without its `wake_upgrader()`: the stall
//!   watchdog ("thread 6 (Upgrader) stuck in upgrade", state word
//!   0xe0000001: the upgrader alone, asleep), within the first second;
//!   under chaos too (a thread stuck behind it);
//! * `is_alone` true for any reader count (an upgrade past the other
//!   readers): "try_upgrade_for/until: a writer got in beside 4
//!   reader(s)" within 0.1 s (the broken word then aborts the process in a
//!   `with_upgraded`, after that message);
//! * recursive reads not passing waiting writers (`ReadKind::may_take`):
//!   "a recursive read refused to a thread holding a read lock (depth 1,
//!   state word 0xa0000002)";
//! * `downgrade` as an unlock and a new read: "downgrade (write -> read):
//!   the value was 22 and is now 29 (a writer got in while this thread
//!   held the lock)";
//! * `upgrade_slow` reporting success at its deadline: "try_upgrade_for/
//!   until: a writer got in beside 2 reader(s); ... a writer inside, state
//!   word 0xe0000005", or a value check.
//!
//! Found without a break (source at bbdf06d), `torture_rwlock_floor_mixed`
//! under chaos only, rarely (2 hangs in about 250 runs): every thread
//! asleep on the free lock, state word 0xc0000000 (both waiter bits). On
//! the floor without turns, `unlock_upgradable`'s `wake_readers_while_read`
//! (after its chaos point) can clear READERS_WAITING of a word that another
//! thread's read release has just left free with both bits; that release's
//! `wake_writer_or_readers` then fails its CAS and returns ("their turn"),
//! but nobody took the lock: the writer is never woken, and the woken
//! readers sleep again behind WRITERS_WAITING.
#![cfg(not(loom))]

mod torture_common;
use torture_common::{Rng, env_u64, work};

use klock::RwLockRecursiveExt;
use klock::internal::rwlock::{
    RW_FLOOR_MASK, RW_FLOOR_READERS_WAITING, RW_FLOOR_UPGRADABLE, RW_FLOOR_WRITE_LOCKED,
    RW_FLOOR_WRITERS_WAITING, RawRwLockFloorOf,
};
use lock_api::{RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// The protected data: two fields written one after the other (a torn
/// read shows as `a != b`).
#[derive(Default)]
struct Data {
    a: u64,
    b: u64,
}

/// The floor rwlock (`PHASED`: with turns; `B` > 0: writer batches of `B` µs) over the data.
type Rw<const PHASED: bool, const B: u32> = lock_api::RwLock<RawRwLockFloorOf<PHASED, B>, Data>;
type ReadGuard<'a, const PHASED: bool, const B: u32> =
    RwLockReadGuard<'a, RawRwLockFloorOf<PHASED, B>, Data>;
type WriteGuard<'a, const PHASED: bool, const B: u32> =
    RwLockWriteGuard<'a, RawRwLockFloorOf<PHASED, B>, Data>;
type UpgradableGuard<'a, const PHASED: bool, const B: u32> =
    RwLockUpgradableReadGuard<'a, RawRwLockFloorOf<PHASED, B>, Data>;

/// The test's name for the variant (in its messages).
fn name<const PHASED: bool, const B: u32>() -> &'static str {
    if PHASED && B > 0 {
        "torture_rwlock_batched"
    } else if PHASED {
        "torture_rwlock_phased"
    } else {
        "torture_rwlock_floor"
    }
}

// ---- the harness (both tortures) ---------------------------------------------

/// What a torture runs: its threads' operations, the events it waits for,
/// and its checks. Driven by [`watchdog`] and [`body`].
trait Workload: Send + Sync + 'static {
    /// The run's name (in its messages).
    fn name(&self) -> &'static str;
    /// Thread `i`'s class (in the reports).
    fn class(&self, i: usize) -> &'static str;
    /// What a thread may be doing (index = its `doing` value); the last
    /// is "finished", 0 "thinking".
    fn ops(&self) -> &'static [&'static str];
    /// One operation of thread `i`; returns whether it acquired the lock.
    /// A failed check panics after its guards were dropped (a panic that
    /// unwinds through a guard of a broken lock may panic again in its
    /// unlock and abort the run before the watchdog names the failure).
    fn op(&self, i: usize, rng: &mut Rng, doing: &AtomicUsize) -> bool;
    /// The awaited events (besides every thread's acquisition) not seen yet.
    fn missing_events(&self) -> Vec<String>;
    /// The state word (a snapshot).
    fn word(&self) -> u32;
    /// Set to stop the workers.
    fn stop(&self) -> &AtomicBool;
    /// Counts for the reports.
    fn counts(&self) -> String;
    /// The checks after the joins.
    fn final_checks(&self);
}

/// Shared between the workers, the run and the watchdog.
struct Progress<W: Workload> {
    shared: W,
    /// Acquisitions per thread.
    acq: Vec<AtomicU64>,
    /// Operations (successful or not) per thread: the watchdog's progress.
    ops: Vec<AtomicU64>,
    doing: Vec<AtomicUsize>,
    failure: StdMutex<Option<String>>,
}

impl<W: Workload> Progress<W> {
    /// The `doing` value of a thread that has left its loop.
    fn finished(&self) -> usize {
        self.shared.ops().len() - 1
    }

    /// Threads without an acquisition yet.
    fn starved(&self) -> Vec<usize> {
        // Relaxed: progress counters, polled.
        (0..self.acq.len())
            .filter(|&i| self.acq[i].load(Ordering::Relaxed) == 0)
            .collect()
    }

    /// The events the run waits for that have not happened yet.
    fn missing(&self) -> Vec<String> {
        let mut m = Vec::new();
        let starved = self.starved();
        if !starved.is_empty() {
            let names: Vec<String> = starved
                .iter()
                .map(|&i| format!("{i} ({})", self.shared.class(i)))
                .collect();
            m.push(format!(
                "threads {} of {} never acquired the lock (starved, or a lost wake-up)",
                names.join(", "),
                self.acq.len()
            ));
        }
        m.extend(self.shared.missing_events());
        m
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".to_string()
    }
}

/// The run: workers until `run` has passed and every awaited event has
/// happened (or a worker failed), then the checks. Returns each thread's
/// acquisitions.
fn body<W: Workload>(p: Arc<Progress<W>>, run: Duration) -> Vec<u64> {
    let n = p.acq.len();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let p = p.clone();
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let s = &p.shared;
                    let mut rng =
                        Rng(0x9e37_79b9_7f4a_7c15u64 ^ ((i as u64 + 1) * 0x1234_5678_9abc));
                    // Relaxed (the counters and the stop flag): polled; the
                    // joins order the rest.
                    while !s.stop().load(Ordering::Relaxed) {
                        if s.op(i, &mut rng, &p.doing[i]) {
                            p.acq[i].fetch_add(1, Ordering::Relaxed);
                        }
                        p.ops[i].fetch_add(1, Ordering::Relaxed);
                    }
                    p.doing[i].store(p.finished(), Ordering::Relaxed);
                }));
                if let Err(e) = r {
                    let mut f = p.failure.lock().unwrap_or_else(|e| e.into_inner());
                    f.get_or_insert_with(|| format!("worker {i} panicked: {}", panic_message(&*e)));
                    drop(f);
                    p.shared.stop().store(true, Ordering::Relaxed);
                    std::panic::resume_unwind(e);
                }
            })
        })
        .collect();
    // At least `run`, then until the awaited events (a thread that never
    // gets in keeps the run going until the watchdog names it).
    let start = Instant::now();
    let s = &p.shared;
    while (start.elapsed() < run || !p.missing().is_empty()) && !s.stop().load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
    s.stop().store(true, Ordering::Relaxed);
    for h in hs {
        h.join().expect("worker panicked");
    }
    s.final_checks();
    p.acq.iter().map(|a| a.load(Ordering::Relaxed)).collect()
}

/// Run `body` on a helper thread; fail (panic) on a worker panic, on a
/// thread stuck in one operation for `stall`, or after `limit` (naming
/// what did not happen), instead of hanging. Returns the per-thread
/// acquisitions and the progress (for the report).
fn watchdog<W: Workload>(
    shared: W,
    threads: usize,
    run: Duration,
    stall: Duration,
    limit: Duration,
) -> (Vec<u64>, Arc<Progress<W>>) {
    let p = Arc::new(Progress {
        shared,
        acq: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        ops: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        doing: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
        failure: StdMutex::new(None),
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let p2 = p.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(p2, run)));
        let _ = tx.send(r);
    });
    let start = Instant::now();
    let mut last: Vec<(u64, Instant)> = (0..threads).map(|_| (0, start)).collect();
    let op_name = |d: usize| p.shared.ops().get(d).copied().unwrap_or("?");
    let fail = |why: String| -> ! {
        // Relaxed: progress counters, read for the report.
        let mut report = String::new();
        for i in 0..threads {
            report += &format!(
                "\n  thread {i:3} ({}): {:8} ops, {:8} acquisitions, now: {}",
                p.shared.class(i),
                p.ops[i].load(Ordering::Relaxed),
                p.acq[i].load(Ordering::Relaxed),
                op_name(p.doing[i].load(Ordering::Relaxed))
            );
        }
        // Make the workers that can still stop do so (a hung one cannot).
        p.shared.stop().store(true, Ordering::Relaxed);
        panic!(
            "{}: {why}\n  elapsed: {:?}, state word {:#x}, {}\n  chaos: {} seed {} \
             (replay with KLOCK_CHAOS_SEED={}){report}",
            p.shared.name(),
            start.elapsed(),
            p.shared.word(),
            p.shared.counts(),
            if klock::internal::chaos::ENABLED {
                "on"
            } else {
                "off"
            },
            klock::internal::chaos::seed(),
            klock::internal::chaos::seed(),
        );
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(v)) => return (v, p),
            Ok(Err(e)) => {
                let f = p.failure.lock().unwrap_or_else(|e| e.into_inner()).take();
                fail(f.unwrap_or_else(|| format!("test body panicked: {}", panic_message(&*e))));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => fail("helper vanished".into()),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(f) = p.failure.lock().unwrap_or_else(|e| e.into_inner()).take() {
            fail(f);
        }
        let now = Instant::now();
        if now - start > limit {
            let missing = p.missing();
            fail(if missing.is_empty() {
                format!("did not finish within {limit:?} (a worker hung: lost wake-up?)")
            } else {
                format!("did not finish within {limit:?}: {}", missing.join("; "))
            });
        }
        for (i, l) in last.iter_mut().enumerate() {
            // Relaxed: progress counters, polled.
            let o = p.ops[i].load(Ordering::Relaxed);
            if o != l.0 || p.doing[i].load(Ordering::Relaxed) == p.finished() {
                *l = (o, now);
            } else if now - l.1 > stall {
                let d = p.doing[i].load(Ordering::Relaxed);
                fail(format!(
                    "thread {i} ({}) stuck in {} for {stall:?} (hang or lost wake-up)",
                    p.shared.class(i),
                    op_name(d)
                ));
            }
        }
    }
}

/// The two tortures' runs go one at a time (each wants the CPUs to itself:
/// its thread count is set from them, and its stall watchdog measures its
/// own threads' progress).
static SERIAL: StdMutex<()> = StdMutex::new(());

/// One run of `shared` with `threads` threads (`how`: how that count was
/// chosen), one at a time ([`SERIAL`]); prints the per-class
/// acquisitions and the counts.
fn run_torture<W: Workload>(shared: W, threads: usize, how: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = shared.name();
    let run = Duration::from_secs(env_u64("KLOCK_TORTURE_SECS", 1).max(1));
    // Watchdogs only (a normal run needs seconds).
    let stall = Duration::from_secs(env_u64("KLOCK_TORTURE_STALL_SECS", 120).max(1));
    let limit = run + stall + Duration::from_secs(60);
    eprintln!(
        "{name}: {threads} threads ({how}) for {run:?}; chaos {} (seed {})",
        if klock::internal::chaos::ENABLED {
            "on"
        } else {
            "off"
        },
        klock::internal::chaos::seed(),
    );
    let started = Instant::now();
    let (acq, p) = watchdog(shared, threads, run, stall, limit);
    let mut classes: Vec<&str> = (0..threads).map(|i| p.shared.class(i)).collect();
    classes.dedup();
    classes.sort_unstable();
    classes.dedup();
    for class in classes {
        let v: Vec<u64> = (0..threads)
            .filter(|&i| p.shared.class(i) == class)
            .map(|i| acq[i])
            .collect();
        let (min, max) = (v.iter().min().unwrap(), v.iter().max().unwrap());
        let avg = v.iter().sum::<u64>() as f64 / v.len() as f64;
        eprintln!(
            "{name}: {class}: {} threads, acquisitions min {min} avg {avg:.0} max {max}",
            v.len()
        );
    }
    eprintln!("{name}: {} (in {:?})", p.shared.counts(), started.elapsed());
    // The run went on until these held; checked again after the joins.
    assert!(p.missing().is_empty(), "{}", p.missing().join("; "));
}

// ---- the plain torture: reads and writes --------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Reader,
    Writer,
}

/// Thread `i` has class `CLASS_OF[i % 4]`: three readers to a writer.
const CLASS_OF: [Class; 4] = [Class::Reader, Class::Reader, Class::Reader, Class::Writer];

fn class_of(i: usize) -> Class {
    CLASS_OF[i % CLASS_OF.len()]
}

/// What a thread is doing (for the watchdog's report).
const OPS: &[&str] = &[
    "thinking",
    "read",
    "try_read",
    "try_read_for/until",
    "write",
    "try_write",
    "try_write_for/until",
    "finished",
];

struct Shared<const PHASED: bool, const B: u32> {
    l: Rw<PHASED, B>,
    /// Threads inside as readers.
    readers_in: AtomicUsize,
    /// Threads inside as writers.
    writers_in: AtomicUsize,
    /// Completed write critical sections (each adds 1 to both fields).
    writes: AtomicU64,
    /// Timed reads / writes that gave up.
    read_timeouts: AtomicU64,
    write_timeouts: AtomicU64,
    stop: AtomicBool,
}

/// A hold time: mostly short, often a yield (16x overcommit: waiters
/// queue and sleep), now and then 1 ms asleep (long enough for timed
/// waiters to give up).
fn hold(rng: &mut Rng) {
    match rng.below(1000) {
        0..=2 => std::thread::sleep(Duration::from_millis(1)),
        3..=80 => std::thread::yield_now(),
        81..=300 => work(rng.below(2000)),
        _ => {}
    }
}

/// A think time between acquisitions (gaps in which a writer-preferring
/// lock lets readers in).
fn think(rng: &mut Rng) {
    match rng.below(100) {
        0..=4 => std::thread::yield_now(),
        5..=50 => work(rng.below(500)),
        _ => {}
    }
}

/// A timed acquisition's timeout: one in four 1 µs (gives up at once if
/// the lock is busy), else up to 3 ms.
fn timeout(rng: &mut Rng) -> Duration {
    if rng.below(4) == 0 {
        Duration::from_micros(1)
    } else {
        Duration::from_micros(rng.below(3000))
    }
}

impl<const PHASED: bool, const B: u32> Shared<PHASED, B> {
    fn new() -> Self {
        Shared {
            l: Rw::new(Data::default()),
            readers_in: AtomicUsize::new(0),
            writers_in: AtomicUsize::new(0),
            writes: AtomicU64::new(0),
            read_timeouts: AtomicU64::new(0),
            write_timeouts: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// A read critical section: alone with other readers, fields equal.
    /// A failed check panics after the guard is dropped (see [`Workload::op`]).
    fn read_section(&self, g: ReadGuard<'_, PHASED, B>, rng: &mut Rng) {
        let mut bad = Vec::new();
        // SeqCst (both inside counters): a store-buffering pair with the
        // writer's (each increments its own counter, then reads the other's).
        self.readers_in.fetch_add(1, Ordering::SeqCst);
        let w = self.writers_in.load(Ordering::SeqCst);
        if w != 0 {
            bad.push(format!("a reader got in beside {w} writer(s)"));
        }
        let s = self.word();
        if self.l.is_locked_exclusive() || !self.l.is_locked() {
            bad.push(format!("a reader inside, state word {s:#x}"));
        }
        let a = g.a;
        hold(rng);
        let b = g.b;
        if a != b {
            bad.push(format!("torn read: a = {a}, b = {b}"));
        }
        self.readers_in.fetch_sub(1, Ordering::SeqCst);
        drop(g);
        assert!(bad.is_empty(), "{}", bad.join("; "));
    }

    /// A write critical section: alone; a slow read-modify-write of `a`,
    /// the hold time, then `b`. Fails as `read_section` does.
    fn write_section(&self, mut g: WriteGuard<'_, PHASED, B>, rng: &mut Rng) {
        let mut bad = Vec::new();
        let w = self.writers_in.fetch_add(1, Ordering::SeqCst);
        if w != 0 {
            bad.push(format!("two writers at once ({} inside)", w + 1));
        }
        let r = self.readers_in.load(Ordering::SeqCst);
        if r != 0 {
            bad.push(format!("a writer got in beside {r} reader(s)"));
        }
        if !self.l.is_locked_exclusive() {
            bad.push(format!("a writer inside, state word {:#x}", self.word()));
        }
        let v = g.a;
        g.a = v + 1;
        hold(rng);
        let v = g.b;
        g.b = v + 1;
        // Relaxed: a count read after the joins.
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.writers_in.fetch_sub(1, Ordering::SeqCst);
        drop(g);
        assert!(bad.is_empty(), "{}", bad.join("; "));
    }
}

impl<const PHASED: bool, const B: u32> Workload for Shared<PHASED, B> {
    fn name(&self) -> &'static str {
        name::<PHASED, B>()
    }

    fn class(&self, i: usize) -> &'static str {
        match class_of(i) {
            Class::Reader => "Reader",
            Class::Writer => "Writer",
        }
    }

    fn ops(&self) -> &'static [&'static str] {
        OPS
    }

    fn word(&self) -> u32 {
        // SAFETY: `raw` only reads the word; no guard is forged.
        unsafe { self.l.raw() }.state()
    }

    fn stop(&self) -> &AtomicBool {
        &self.stop
    }

    fn op(&self, i: usize, rng: &mut Rng, doing: &AtomicUsize) -> bool {
        // Relaxed: a status for the watchdog's report.
        let set = |k: usize| doing.store(k, Ordering::Relaxed);
        let r = rng.below(100);
        let got = match class_of(i) {
            Class::Reader => match r {
                0..=59 => {
                    set(1);
                    let g = self.l.read();
                    self.read_section(g, rng);
                    true
                }
                60..=69 => {
                    set(2);
                    self.l
                        .try_read()
                        .map(|g| self.read_section(g, rng))
                        .is_some()
                }
                _ => {
                    set(3);
                    let t = timeout(rng);
                    let g = if rng.below(2) == 0 {
                        self.l.try_read_for(t)
                    } else {
                        self.l.try_read_until(Instant::now() + t)
                    };
                    let got = g.map(|g| self.read_section(g, rng)).is_some();
                    if !got {
                        // Relaxed: a count, polled and read after the joins.
                        self.read_timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    got
                }
            },
            Class::Writer => match r {
                0..=59 => {
                    set(4);
                    let g = self.l.write();
                    self.write_section(g, rng);
                    true
                }
                60..=69 => {
                    set(5);
                    self.l
                        .try_write()
                        .map(|g| self.write_section(g, rng))
                        .is_some()
                }
                _ => {
                    set(6);
                    let t = timeout(rng);
                    let g = if rng.below(2) == 0 {
                        self.l.try_write_for(t)
                    } else {
                        self.l.try_write_until(Instant::now() + t)
                    };
                    let got = g.map(|g| self.write_section(g, rng)).is_some();
                    if !got {
                        // Relaxed: as above.
                        self.write_timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    got
                }
            },
        };
        set(0);
        think(rng);
        got
    }

    fn missing_events(&self) -> Vec<String> {
        let mut m = Vec::new();
        // Relaxed: counts, polled.
        if self.read_timeouts.load(Ordering::Relaxed) == 0 {
            m.push("no timed read timed out (the read timeout path was not exercised)".into());
        }
        if self.write_timeouts.load(Ordering::Relaxed) == 0 {
            m.push("no timed write timed out (the write timeout path was not exercised)".into());
        }
        m
    }

    fn counts(&self) -> String {
        // Relaxed: counts, for a report.
        format!(
            "{} write sections; timed out: {} reads, {} writes",
            self.writes.load(Ordering::Relaxed),
            self.read_timeouts.load(Ordering::Relaxed),
            self.write_timeouts.load(Ordering::Relaxed),
        )
    }

    fn final_checks(&self) {
        assert!(
            !self.l.is_locked(),
            "left locked (state word {:#x})",
            self.word()
        );
        let d = self.l.read();
        assert_eq!(d.a, d.b, "torn data at the end");
        assert_eq!(
            d.a,
            self.writes.load(Ordering::Relaxed),
            "lost update (fields vs write critical sections)"
        );
        drop(d);
        let w = self.word();
        assert_eq!(
            w, 0,
            "state word not clean at the end: {w:#x} (a reader count or waiter bit left behind)"
        );
    }
}

/// One run of the plain torture on the floor (`PHASED = false`) or with
/// turns (at least 32 threads: 16x the effective CPUs if more).
fn torture<const PHASED: bool, const B: u32>() {
    let mult = env_u64("KLOCK_TORTURE_MULT", 16).max(1) as usize;
    let cpus = klock::internal::wait::effective_cpus();
    let threads = (mult * cpus).max(32);
    run_torture(
        Shared::<PHASED, B>::new(),
        threads,
        &format!("{mult} x {cpus} effective CPUs, at least 32"),
    );
}

#[test]
fn torture_rwlock_floor() {
    torture::<false, 0>();
}

#[test]
fn torture_rwlock_phased() {
    torture::<true, 0>();
}

/// Writer batches (`B` = the batch bound, µs): the readers' turn keeps
/// WRITERS_WAITING set, so only readers that slept enter.
#[test]
fn torture_rwlock_batched() {
    torture::<true, { klock::internal::rwlock::WRITER_BATCH_US }>();
}

// ---- the mixed torture: recursive and upgradable reads, upgrades, downgrades ----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Reader,
    Recursive,
    Upgrader,
    Writer,
}

/// Thread `i` has role `ROLE_OF[i % 4]`.
const ROLE_OF: [Role; 4] = [Role::Reader, Role::Recursive, Role::Upgrader, Role::Writer];

fn role_of(i: usize) -> Role {
    ROLE_OF[i % ROLE_OF.len()]
}

/// What a thread of the mixed torture is doing (for the watchdog's
/// report): `Op as usize` indexes [`M_OPS`].
#[derive(Clone, Copy)]
enum Op {
    Thinking,
    Read,
    TryRead,
    TryReadFor,
    ReadRecursive,
    TryReadRecursive,
    TryReadRecursiveFor,
    Nested,
    Write,
    TryWrite,
    TryWriteFor,
    Upgradable,
    TryUpgradable,
    TryUpgradableFor,
    Upgrade,
    TryUpgrade,
    TryUpgradeFor,
    WithUpgraded,
    TryWithUpgraded,
    Downgrade,
    DowngradeToUpgradable,
    DowngradeUpgradable,
    Bump,
    UnlockFair,
    Finished,
}

const M_OPS: &[&str] = &[
    "thinking",
    "read",
    "try_read",
    "try_read_for/until",
    "read_recursive",
    "try_read_recursive",
    "try_read_recursive_for/until",
    "a nested recursive read (holding a read lock)",
    "write",
    "try_write",
    "try_write_for/until",
    "upgradable_read",
    "try_upgradable_read",
    "try_upgradable_read_for/until",
    "upgrade",
    "try_upgrade",
    "try_upgrade_for/until",
    "with_upgraded",
    "try_with_upgraded(_for)",
    "downgrade (write -> read)",
    "downgrade_to_upgradable",
    "downgrade (upgradable -> read)",
    "bump",
    "unlock_fair",
    "finished",
];
// One name per `Op`, "finished" last (the harness's convention).
const _: () = assert!(M_OPS.len() == Op::Finished as usize + 1);

/// The events the mixed torture counts: `Ev as usize` indexes [`EV_NAMES`].
#[derive(Clone, Copy)]
enum Ev {
    ReadTimeout,
    RecursiveTimeout,
    WriteTimeout,
    UpgradableTimeout,
    Upgrade,
    UpgradeWithOthers,
    TryUpgradeOk,
    TryUpgradeRefused,
    UpgradeForOk,
    UpgradeForTimeout,
    WithUpgraded,
    TryWithUpgradedOk,
    TryWithUpgradedRefused,
    Downgrade,
    DowngradeToUpgradable,
    DowngradeUpgradable,
    Nested,
    Bump,
    UnlockFair,
}

const EV_NAMES: &[&str] = &[
    "timed-out reads",
    "timed-out recursive reads",
    "timed-out writes",
    "timed-out upgradable reads",
    "upgrades",
    "upgrades called with other readers inside",
    "try_upgrades",
    "refused try_upgrades",
    "try_upgrade_for/untils",
    "timed-out try_upgrade_for/untils",
    "with_upgradeds",
    "try_with_upgradeds",
    "refused try_with_upgradeds",
    "downgrades (write -> read)",
    "downgrades (write -> upgradable)",
    "downgrades (upgradable -> read)",
    "nested recursive reads",
    "bumps",
    "fair unlocks",
];
const _: () = assert!(EV_NAMES.len() == Ev::UnlockFair as usize + 1);

/// The events a mixed run waits for (each path exercised at least once).
const AWAITED: &[Ev] = &[
    Ev::ReadTimeout,
    Ev::WriteTimeout,
    Ev::UpgradableTimeout,
    Ev::UpgradeWithOthers,
    Ev::TryUpgradeOk,
    Ev::TryUpgradeRefused,
    Ev::UpgradeForOk,
    Ev::UpgradeForTimeout,
    Ev::Downgrade,
    Ev::DowngradeToUpgradable,
    Ev::DowngradeUpgradable,
    Ev::Nested,
];

/// At most this many transitions (upgrade, downgrade) per acquisition.
const MAX_DEPTH: u32 = 3;

/// One operation's context: its random numbers, its failed checks (the
/// operation panics with them once its guards are dropped), and its
/// status for the watchdog.
struct Cx<'a> {
    rng: &'a mut Rng,
    bad: Vec<String>,
    doing: &'a AtomicUsize,
}

impl Cx<'_> {
    fn set(&self, op: Op) {
        // Relaxed: a status for the watchdog's report.
        self.doing.store(op as usize, Ordering::Relaxed);
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }
}

/// A short upgrade timeout: one in three 1 µs, else up to 300 µs.
fn upgrade_timeout(rng: &mut Rng) -> Duration {
    if rng.below(3) == 0 {
        Duration::from_micros(1)
    } else {
        Duration::from_micros(rng.below(300))
    }
}

struct Mixed<const PHASED: bool, const B: u32> {
    l: Rw<PHASED, B>,
    /// Read locks held (plain, recursive and upgradable), as their holders count them.
    readers_in: AtomicUsize,
    /// Upgradable read locks held.
    upgradables_in: AtomicUsize,
    /// Write locks held.
    writers_in: AtomicUsize,
    /// Completed write critical sections (each adds 1 to both fields).
    writes: AtomicU64,
    ev: Vec<AtomicU64>,
    stop: AtomicBool,
}

impl<const PHASED: bool, const B: u32> Mixed<PHASED, B> {
    fn new() -> Self {
        Mixed {
            l: Rw::new(Data::default()),
            readers_in: AtomicUsize::new(0),
            upgradables_in: AtomicUsize::new(0),
            writers_in: AtomicUsize::new(0),
            writes: AtomicU64::new(0),
            ev: EV_NAMES.iter().map(|_| AtomicU64::new(0)).collect(),
            stop: AtomicBool::new(false),
        }
    }

    fn count(&self, e: Ev) {
        // Relaxed: a count, polled and read after the joins.
        self.ev[e as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn seen(&self, e: Ev) -> u64 {
        // Relaxed: as above.
        self.ev[e as usize].load(Ordering::Relaxed)
    }

    // -- the inside counters: incremented after an acquisition, decremented
    //    before a release or a transition (so they never count a holder
    //    the lock does not have). SeqCst: store-buffering pairs, as in
    //    `Shared::read_section`.

    fn enter_read(&self, cx: &mut Cx<'_>, what: &str) {
        self.readers_in.fetch_add(1, Ordering::SeqCst);
        let w = self.writers_in.load(Ordering::SeqCst);
        if w != 0 {
            cx.bad
                .push(format!("{what}: a reader got in beside {w} writer(s)"));
        }
        let s = self.word();
        let n = s & RW_FLOOR_MASK;
        if n == 0 || n == RW_FLOOR_WRITE_LOCKED {
            cx.bad
                .push(format!("{what}: a reader inside, state word {s:#x}"));
        }
    }

    fn leave_read(&self) {
        self.readers_in.fetch_sub(1, Ordering::SeqCst);
    }

    fn enter_upgradable(&self, cx: &mut Cx<'_>, what: &str) {
        self.enter_read(cx, what);
        let u = self.upgradables_in.fetch_add(1, Ordering::SeqCst);
        if u != 0 {
            cx.bad.push(format!(
                "{what}: two upgradable readers at once ({} inside)",
                u + 1
            ));
        }
        let s = self.word();
        if s & RW_FLOOR_UPGRADABLE == 0 {
            cx.bad.push(format!(
                "{what}: an upgradable reader inside, UPGRADABLE clear in the state word {s:#x}"
            ));
        }
    }

    fn leave_upgradable(&self) {
        self.upgradables_in.fetch_sub(1, Ordering::SeqCst);
        self.leave_read();
    }

    fn enter_write(&self, cx: &mut Cx<'_>, what: &str) {
        let w = self.writers_in.fetch_add(1, Ordering::SeqCst);
        if w != 0 {
            cx.bad
                .push(format!("{what}: two writers at once ({} inside)", w + 1));
        }
        let r = self.readers_in.load(Ordering::SeqCst);
        if r != 0 {
            cx.bad
                .push(format!("{what}: a writer got in beside {r} reader(s)"));
        }
        let s = self.word();
        if s & RW_FLOOR_MASK != RW_FLOOR_WRITE_LOCKED || s & RW_FLOOR_UPGRADABLE != 0 {
            cx.bad
                .push(format!("{what}: a writer inside, state word {s:#x}"));
        }
    }

    fn leave_write(&self) {
        self.writers_in.fetch_sub(1, Ordering::SeqCst);
    }

    // -- the data

    /// Read both fields with the hold time between them; they must be
    /// equal, and equal to `expect` if given (a value that no writer may
    /// have changed since). Returns the value.
    fn read_data(&self, d: &Data, cx: &mut Cx<'_>, what: &str, expect: Option<u64>) -> u64 {
        let a = d.a;
        hold(cx.rng);
        let b = d.b;
        if a != b {
            cx.bad.push(format!("{what}: torn read: a = {a}, b = {b}"));
        }
        if let Some(e) = expect
            && a != e
        {
            cx.bad.push(format!(
                "{what}: the value was {e} and is now {a} (a writer got in while this thread held the lock)"
            ));
        }
        a
    }

    /// The writer's slow read-modify-write of `a`, the hold time, then `b`
    /// (checking `expect` first, as `read_data`). Returns the new value.
    fn write_data(&self, d: &mut Data, cx: &mut Cx<'_>, what: &str, expect: Option<u64>) -> u64 {
        let v = d.a;
        if let Some(e) = expect
            && v != e
        {
            cx.bad.push(format!(
                "{what}: the value was {e} and is now {v} (a writer got in during the transition)"
            ));
        }
        d.a = v + 1;
        hold(cx.rng);
        let w = d.b;
        if w != v {
            cx.bad.push(format!(
                "{what}: torn data found by a writer: a = {v}, b = {w}"
            ));
        }
        d.b = w + 1;
        // Relaxed: a count read after the joins.
        self.writes.fetch_add(1, Ordering::Relaxed);
        v + 1
    }

    // -- the sections

    /// A nested recursive read while this thread holds a read lock (of any
    /// kind), `depth` deep: never refused (no writer can hold the lock), and
    /// it must see `expect`.
    fn nested(&self, cx: &mut Cx<'_>, depth: u32, expect: u64) {
        cx.set(Op::Nested);
        let g = match cx.below(4) {
            0 => Some(self.l.read_recursive()),
            1 => self.l.try_read_recursive(),
            2 => self
                .l
                .try_read_recursive_for(Duration::from_micros(cx.below(50))),
            _ => self
                .l
                .try_read_recursive_until(Instant::now() + Duration::from_micros(cx.below(50))),
        };
        let Some(g) = g else {
            cx.bad.push(format!(
                "a recursive read refused to a thread holding a read lock (depth {depth}, state word {:#x})",
                self.word()
            ));
            return;
        };
        self.count(Ev::Nested);
        self.enter_read(cx, "nested recursive read");
        self.read_data(&g, cx, "nested recursive read", Some(expect));
        if depth < 3 && cx.below(3) == 0 {
            self.nested(cx, depth + 1, expect);
        }
        self.leave_read();
        drop(g);
    }

    /// A read section (after `what` took `g`): check, maybe nest recursive
    /// reads (`nest` percent), then release plainly, fairly, or by a bump.
    fn read_section(
        &self,
        mut g: ReadGuard<'_, PHASED, B>,
        cx: &mut Cx<'_>,
        what: &str,
        expect: Option<u64>,
        nest: u64,
    ) {
        self.enter_read(cx, what);
        let v = self.read_data(&g, cx, what, expect);
        if cx.below(100) < nest {
            self.nested(cx, 1, v);
        }
        self.leave_read();
        match cx.below(10) {
            0 => {
                cx.set(Op::UnlockFair);
                ReadGuard::unlock_fair(g);
                self.count(Ev::UnlockFair);
            }
            1 => {
                // A fair unlock and a plain read: this thread holds nothing else.
                cx.set(Op::Bump);
                ReadGuard::bump(&mut g);
                self.count(Ev::Bump);
                self.enter_read(cx, "read after a bump");
                self.read_data(&g, cx, "read after a bump", None);
                self.leave_read();
                drop(g);
            }
            _ => drop(g),
        }
    }

    /// A write section (after `what` took `g`; `expect`: the value before
    /// it, when the lock came by an upgrade): write, then release plainly,
    /// fairly, by a bump, or downgrade (to a read, or to an upgradable
    /// read: on as an upgradable reader) and check the value written is
    /// still there.
    fn write_section(
        &self,
        mut g: WriteGuard<'_, PHASED, B>,
        cx: &mut Cx<'_>,
        what: &str,
        expect: Option<u64>,
        depth: u32,
    ) {
        self.enter_write(cx, what);
        let v = self.write_data(&mut g, cx, what, expect);
        self.leave_write();
        match cx.below(100) {
            0..=34 => drop(g),
            35..=44 => {
                cx.set(Op::UnlockFair);
                WriteGuard::unlock_fair(g);
                self.count(Ev::UnlockFair);
            }
            45..=54 => {
                cx.set(Op::Bump);
                WriteGuard::bump(&mut g);
                self.count(Ev::Bump);
                self.enter_write(cx, "write after a bump");
                self.write_data(&mut g, cx, "write after a bump", None);
                self.leave_write();
                drop(g);
            }
            55..=74 => {
                cx.set(Op::Downgrade);
                let r = WriteGuard::downgrade(g);
                self.count(Ev::Downgrade);
                self.read_section(r, cx, "downgrade (write -> read)", Some(v), 30);
            }
            _ => {
                cx.set(Op::DowngradeToUpgradable);
                let u = WriteGuard::downgrade_to_upgradable(g);
                self.count(Ev::DowngradeToUpgradable);
                self.upgradable_section(u, cx, "downgrade_to_upgradable", Some(v), depth + 1);
            }
        }
    }

    /// An upgradable section (after `what` took `g`): check, maybe nest
    /// recursive reads, then upgrade (blocking, try, timed, with_upgraded,
    /// try_with_upgraded), downgrade to a read, or release. Every way that
    /// keeps or turns the lock checks the value read here is still there.
    fn upgradable_section(
        &self,
        mut g: UpgradableGuard<'_, PHASED, B>,
        cx: &mut Cx<'_>,
        what: &str,
        expect: Option<u64>,
        depth: u32,
    ) {
        self.enter_upgradable(cx, what);
        let v = self.read_data(&g, cx, what, expect);
        if cx.below(5) == 0 {
            self.nested(cx, 1, v);
        }
        let r = if depth >= MAX_DEPTH {
            90
        } else {
            cx.below(100)
        };
        self.leave_upgradable();
        match r {
            0..=24 => {
                // Other readers inside: the upgrade has to wait for them
                // (a snapshot; the count includes this thread's).
                if self.word() & RW_FLOOR_MASK > 1 {
                    self.count(Ev::UpgradeWithOthers);
                }
                cx.set(Op::Upgrade);
                let w = UpgradableGuard::upgrade(g);
                self.count(Ev::Upgrade);
                self.write_section(w, cx, "upgrade", Some(v), depth + 1);
            }
            25..=39 => {
                cx.set(Op::TryUpgrade);
                match UpgradableGuard::try_upgrade(g) {
                    Ok(w) => {
                        self.count(Ev::TryUpgradeOk);
                        self.write_section(w, cx, "try_upgrade", Some(v), depth + 1);
                    }
                    Err(g) => {
                        self.count(Ev::TryUpgradeRefused);
                        self.upgradable_kept(g, cx, "refused try_upgrade", v);
                    }
                }
            }
            40..=59 => {
                let t = upgrade_timeout(cx.rng);
                cx.set(Op::TryUpgradeFor);
                let r = if cx.below(2) == 0 {
                    UpgradableGuard::try_upgrade_for(g, t)
                } else {
                    UpgradableGuard::try_upgrade_until(g, Instant::now() + t)
                };
                match r {
                    Ok(w) => {
                        self.count(Ev::UpgradeForOk);
                        self.write_section(w, cx, "try_upgrade_for/until", Some(v), depth + 1);
                    }
                    Err(g) => {
                        self.count(Ev::UpgradeForTimeout);
                        self.upgradable_kept(g, cx, "timed-out try_upgrade_for/until", v);
                    }
                }
            }
            60..=67 => {
                cx.set(Op::WithUpgraded);
                let n = g.with_upgraded(|d| {
                    self.enter_write(cx, "with_upgraded");
                    let n = self.write_data(d, cx, "with_upgraded", Some(v));
                    self.leave_write();
                    n
                });
                self.count(Ev::WithUpgraded);
                self.upgradable_kept(g, cx, "after with_upgraded", n);
            }
            68..=75 => {
                let timed = (cx.below(2) == 0).then(|| upgrade_timeout(cx.rng));
                cx.set(Op::TryWithUpgraded);
                let f = |d: &mut Data| {
                    self.enter_write(cx, "try_with_upgraded");
                    let n = self.write_data(d, cx, "try_with_upgraded", Some(v));
                    self.leave_write();
                    n
                };
                let n = match timed {
                    None => g.try_with_upgraded(f),
                    Some(t) => g.try_with_upgraded_for(t, f),
                };
                self.count(if n.is_some() {
                    Ev::TryWithUpgradedOk
                } else {
                    Ev::TryWithUpgradedRefused
                });
                self.upgradable_kept(g, cx, "after try_with_upgraded", n.unwrap_or(v));
            }
            76..=87 => {
                cx.set(Op::DowngradeUpgradable);
                let r = UpgradableGuard::downgrade(g);
                self.count(Ev::DowngradeUpgradable);
                self.read_section(r, cx, "downgrade (upgradable -> read)", Some(v), 30);
            }
            _ => self.release_upgradable(g, cx),
        }
    }

    /// The upgradable lock is still held after `what`: the value must
    /// still be `v`; then release it.
    fn upgradable_kept(
        &self,
        g: UpgradableGuard<'_, PHASED, B>,
        cx: &mut Cx<'_>,
        what: &str,
        v: u64,
    ) {
        self.enter_upgradable(cx, what);
        self.read_data(&g, cx, what, Some(v));
        self.leave_upgradable();
        self.release_upgradable(g, cx);
    }

    /// Release an upgradable lock (this thread holds nothing else):
    /// plainly, fairly, or by a bump.
    fn release_upgradable(&self, mut g: UpgradableGuard<'_, PHASED, B>, cx: &mut Cx<'_>) {
        match cx.below(10) {
            0 => {
                cx.set(Op::UnlockFair);
                UpgradableGuard::unlock_fair(g);
                self.count(Ev::UnlockFair);
            }
            1 => {
                cx.set(Op::Bump);
                UpgradableGuard::bump(&mut g);
                self.count(Ev::Bump);
                self.enter_upgradable(cx, "upgradable after a bump");
                self.read_data(&g, cx, "upgradable after a bump", None);
                self.leave_upgradable();
                drop(g);
            }
            _ => drop(g),
        }
    }

    /// One operation of a `role` thread; returns whether it acquired the lock.
    fn role_op(&self, role: Role, cx: &mut Cx<'_>) -> bool {
        let r = cx.below(100);
        match role {
            Role::Reader => {
                let g = match r {
                    0..=59 => {
                        cx.set(Op::Read);
                        Some(self.l.read())
                    }
                    60..=69 => {
                        cx.set(Op::TryRead);
                        self.l.try_read()
                    }
                    _ => {
                        let t = timeout(cx.rng);
                        cx.set(Op::TryReadFor);
                        let g = if cx.below(2) == 0 {
                            self.l.try_read_for(t)
                        } else {
                            self.l.try_read_until(Instant::now() + t)
                        };
                        if g.is_none() {
                            self.count(Ev::ReadTimeout);
                        }
                        g
                    }
                };
                g.map(|g| self.read_section(g, cx, "read", None, 20))
                    .is_some()
            }
            Role::Recursive => {
                let g = match r {
                    0..=39 => {
                        cx.set(Op::ReadRecursive);
                        Some(self.l.read_recursive())
                    }
                    40..=59 => {
                        cx.set(Op::Read);
                        Some(self.l.read())
                    }
                    60..=69 => {
                        cx.set(Op::TryReadRecursive);
                        self.l.try_read_recursive()
                    }
                    _ => {
                        let t = timeout(cx.rng);
                        cx.set(Op::TryReadRecursiveFor);
                        let g = if cx.below(2) == 0 {
                            self.l.try_read_recursive_for(t)
                        } else {
                            self.l.try_read_recursive_until(Instant::now() + t)
                        };
                        if g.is_none() {
                            self.count(Ev::RecursiveTimeout);
                        }
                        g
                    }
                };
                g.map(|g| self.read_section(g, cx, "recursive reader's read", None, 100))
                    .is_some()
            }
            Role::Writer => {
                let g = match r {
                    0..=59 => {
                        cx.set(Op::Write);
                        Some(self.l.write())
                    }
                    60..=69 => {
                        cx.set(Op::TryWrite);
                        self.l.try_write()
                    }
                    _ => {
                        let t = timeout(cx.rng);
                        cx.set(Op::TryWriteFor);
                        let g = if cx.below(2) == 0 {
                            self.l.try_write_for(t)
                        } else {
                            self.l.try_write_until(Instant::now() + t)
                        };
                        if g.is_none() {
                            self.count(Ev::WriteTimeout);
                        }
                        g
                    }
                };
                g.map(|g| self.write_section(g, cx, "write", None, 0))
                    .is_some()
            }
            Role::Upgrader => {
                let g = match r {
                    0..=59 => {
                        cx.set(Op::Upgradable);
                        Some(self.l.upgradable_read())
                    }
                    60..=74 => {
                        cx.set(Op::TryUpgradable);
                        self.l.try_upgradable_read()
                    }
                    _ => {
                        let t = timeout(cx.rng);
                        cx.set(Op::TryUpgradableFor);
                        let g = if cx.below(2) == 0 {
                            self.l.try_upgradable_read_for(t)
                        } else {
                            self.l.try_upgradable_read_until(Instant::now() + t)
                        };
                        if g.is_none() {
                            self.count(Ev::UpgradableTimeout);
                        }
                        g
                    }
                };
                g.map(|g| self.upgradable_section(g, cx, "upgradable read", None, 0))
                    .is_some()
            }
        }
    }
}

impl<const PHASED: bool, const B: u32> Workload for Mixed<PHASED, B> {
    fn name(&self) -> &'static str {
        match name::<PHASED, B>() {
            "torture_rwlock_floor" => "torture_rwlock_floor_mixed",
            "torture_rwlock_phased" => "torture_rwlock_phased_mixed",
            _ => "torture_rwlock_batched_mixed",
        }
    }

    fn class(&self, i: usize) -> &'static str {
        match role_of(i) {
            Role::Reader => "Reader",
            Role::Recursive => "Recursive",
            Role::Upgrader => "Upgrader",
            Role::Writer => "Writer",
        }
    }

    fn ops(&self) -> &'static [&'static str] {
        M_OPS
    }

    fn word(&self) -> u32 {
        // SAFETY: `raw` only reads the word; no guard is forged.
        unsafe { self.l.raw() }.state()
    }

    fn stop(&self) -> &AtomicBool {
        &self.stop
    }

    fn op(&self, i: usize, rng: &mut Rng, doing: &AtomicUsize) -> bool {
        let mut cx = Cx {
            rng,
            bad: Vec::new(),
            doing,
        };
        let got = self.role_op(role_of(i), &mut cx);
        // Every guard of this operation is dropped.
        assert!(cx.bad.is_empty(), "{}", cx.bad.join("; "));
        cx.set(Op::Thinking);
        think(cx.rng);
        got
    }

    fn missing_events(&self) -> Vec<String> {
        AWAITED
            .iter()
            .filter(|&&e| self.seen(e) == 0)
            .map(|&e| format!("no {} (that path was not exercised)", EV_NAMES[e as usize]))
            .collect()
    }

    fn counts(&self) -> String {
        let ev: Vec<String> = EV_NAMES
            .iter()
            .enumerate()
            .map(|(k, n)| format!("{n} {}", self.ev[k].load(Ordering::Relaxed)))
            .collect();
        // Relaxed: counts, for a report.
        format!(
            "{} write sections; {}",
            self.writes.load(Ordering::Relaxed),
            ev.join(", ")
        )
    }

    fn final_checks(&self) {
        let s = self.word();
        assert!(!self.l.is_locked(), "left locked (state word {s:#x})");
        // SeqCst: as the inside counters' other accesses (the joins order them anyway).
        let inside = (
            self.readers_in.load(Ordering::SeqCst),
            self.upgradables_in.load(Ordering::SeqCst),
            self.writers_in.load(Ordering::SeqCst),
        );
        assert_eq!(
            inside,
            (0, 0, 0),
            "inside counters (readers, upgradable, writers) at the end"
        );
        assert_eq!(
            s, 0,
            "state word not clean at the end: {s:#x} (a reader count, UPGRADABLE or a waiter bit \
             left behind; READERS_WAITING {:#x}, WRITERS_WAITING {:#x})",
            RW_FLOOR_READERS_WAITING, RW_FLOOR_WRITERS_WAITING
        );
        // Every way in works on the final lock, at once.
        let u = self
            .l
            .try_upgradable_read()
            .expect("a free lock: try_upgradable_read");
        let r = self
            .l
            .try_read_recursive()
            .expect("beside it: try_read_recursive");
        drop(r);
        let w = UpgradableGuard::try_upgrade(u).unwrap_or_else(|_| panic!("alone: try_upgrade"));
        let d = WriteGuard::downgrade(w);
        assert_eq!(d.a, d.b, "torn data at the end");
        assert_eq!(
            d.a,
            self.writes.load(Ordering::Relaxed),
            "lost update (fields vs write critical sections)"
        );
        drop(d);
        assert_eq!(self.word(), 0, "state word after the final round");
    }
}

/// One run of the mixed torture (20 threads on the 2-vCPU host; see the
/// module docs).
fn torture_mixed<const PHASED: bool, const B: u32>() {
    let mult = env_u64("KLOCK_TORTURE_MULT", 16).max(1) as usize;
    let cpus = klock::internal::wait::effective_cpus();
    let threads = (mult * cpus / 2).max(20);
    run_torture(
        Mixed::<PHASED, B>::new(),
        threads,
        &format!("{mult} / 2 x {cpus} effective CPUs, at least 20"),
    );
}

#[test]
fn torture_rwlock_floor_mixed() {
    torture_mixed::<false, 0>();
}

#[test]
fn torture_rwlock_phased_mixed() {
    torture_mixed::<true, 0>();
}

#[test]
fn torture_rwlock_batched_mixed() {
    torture_mixed::<true, { klock::internal::rwlock::WRITER_BATCH_US }>();
}

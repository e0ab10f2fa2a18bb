//! Torture test of klock's reader-writer lock (`klock::RwLock`, the rwsem)
//! in the spirit of `locktorture`'s rwsem torture: readers, writers,
//! upgraders and downgraders at `KLOCK_TORTURE_MULT` (default 16) threads
//! per effective CPU, each class also using its try, timed and fair
//! variants, with random hold times (some past the hand-off threshold).
//! The lock_api extension traits too: recursive reads (plain, try, timed),
//! timed upgradable reads and timed upgrades, `with_upgraded`, the bump and
//! fair unlock of an upgradable read, and both downgrades to and from it.
//! Readers also take reader-preferring reads (`lock_shared_prefer_readers`
//! and its try form: glibc's default rwlock kind in the interposer), and
//! readers and writers release some locks through the uncontended fast path
//! (`try_unlock_uncontended`, the interposer's unlock), so the chaos run
//! covers what `loom_rwlock_pref.rs` and `loom_fastpath.rs` explore only at
//! preemption bound 1.
//!
//! Checks:
//! * **exclusion**: counters of threads inside as readers / writers,
//!   checked at every acquisition (a writer alone; no writer beside
//!   readers; one upgradable reader at most);
//! * **torn reads**: the protected data has two fields that writers update
//!   one after the other with a pause in between; every reader (and
//!   upgradable reader, and downgraded writer) checks they are equal;
//! * **lost updates**: the fields end equal to the number of write
//!   critical sections; a downgraded writer still sees its own value;
//! * **starvation**: every thread, of every class, makes at least one
//!   acquisition: the run goes on past its time until each has (an event,
//!   not a deadline); per-class min/avg/max are printed;
//! * **progress**: a watchdog fails the test, naming each thread's
//!   operation and counts, if a thread makes no progress for
//!   `KLOCK_TORTURE_STALL_SECS` (default 120), or if the run has not ended
//!   (naming the threads still without an acquisition) by the run time
//!   plus the stall time plus 60 s. Both only catch a hang: a normal run
//!   needs a few seconds;
//! * the count word is 0 at the end (no reader count or flag left behind).
//!
//! Knobs: `KLOCK_TORTURE_MULT`, `KLOCK_TORTURE_SECS` (run time per spin
//! policy, default 3; the no-spin lock runs half of it),
//! `KLOCK_TORTURE_STALL_SECS`, and the chaos feature's
//! `KLOCK_CHAOS_PERMILLE` / `KLOCK_CHAOS_SEED`:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_TARGET_DIR=target/chaos \
//!   cargo test -p klock --release --features chaos --test torture_rwlock -- --nocapture
//! ```
#![cfg(not(loom))]

mod torture_common;
use klock::internal::rwlock::RawRwLockInternals as _;
use torture_common::{Rng, env_u64, work};

use klock::{RawRwLock, RwLockRecursiveExt, SpinOff, SpinOsq, SpinPolicy, WriteToken};
use lock_api::GuardSend;
use lock_api::{RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// The protected data: two fields written together (a torn read shows as
/// `a != b`).
#[derive(Default)]
struct Data {
    a: u64,
    b: u64,
}

type Rw<S> = lock_api::RwLock<RawRwLock<S>, Data>;

/// Thread classes (thread `i` has class `i % 8` mapped through `CLASS_OF`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Reader,
    Writer,
    Upgrader,
    Downgrader,
}

const CLASSES: [Class; 4] = [
    Class::Reader,
    Class::Writer,
    Class::Upgrader,
    Class::Downgrader,
];

/// Half the threads read; a quarter write; an eighth each upgrade / downgrade.
const CLASS_OF: [Class; 8] = [
    Class::Reader,
    Class::Reader,
    Class::Reader,
    Class::Reader,
    Class::Writer,
    Class::Writer,
    Class::Upgrader,
    Class::Downgrader,
];

/// What a thread is doing (for the watchdog's report).
const OPS: &[&str] = &[
    "idle",
    "read",
    "try_read",
    "try_read_for/until",
    "write",
    "try_write",
    "try_write_for/until",
    "upgradable_read -> upgrade",
    "upgradable_read -> try_upgrade",
    "try_upgradable_read",
    "write -> downgrade",
    "read_prefer_readers (fast unlock)",
    "read (fast unlock)",
    "try_read_prefer_readers (fast unlock)",
    "write (fast unlock)",
    "read_recursive / try_read_recursive(_for/_until)",
    "try_upgradable_read_for/until",
    "upgradable_read -> try_upgrade_for/until",
    "write -> downgrade_to_upgradable",
    "upgradable_read -> with_upgraded -> bump / downgrade",
    "finished",
];
const FINISHED: usize = 20;

/// How an upgradable reader upgrades.
#[derive(Clone, Copy)]
enum Up {
    Block,
    Try,
    /// `try_upgrade_for` (or `_until`) with this timeout.
    Timed(Duration),
}

struct Shared<S: SpinPolicy> {
    l: Rw<S>,
    /// Threads inside as readers (plain and upgradable, downgraded writers).
    readers_in: AtomicUsize,
    /// Threads inside as writers.
    writers_in: AtomicUsize,
    /// Threads inside as upgradable readers.
    upgraders_in: AtomicUsize,
    /// Completed write critical sections (each adds 1 to both fields).
    writes: AtomicU64,
    stop: AtomicBool,
}

/// A hold time: mostly short, often a yield (8x+ overcommit: waiters queue
/// and sleep), rarely longer than the hand-off threshold (4 ms).
fn hold(rng: &mut Rng) {
    match rng.below(1000) {
        0..=2 => std::thread::sleep(Duration::from_millis(5)),
        3..=120 => std::thread::yield_now(),
        121..=400 => work(rng.below(2000)),
        _ => {}
    }
}

fn timeout(rng: &mut Rng) -> Duration {
    Duration::from_micros(rng.below(3000))
}

impl<S: SpinPolicy> Shared<S> {
    fn new() -> Self {
        Shared {
            l: Rw::new(Data::default()),
            readers_in: AtomicUsize::new(0),
            writers_in: AtomicUsize::new(0),
            upgraders_in: AtomicUsize::new(0),
            writes: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    fn enter_read(&self) {
        // SeqCst (all the inside counters): a store-buffering pair with the
        // writer's (each increments its own counter, then reads the other's).
        self.readers_in.fetch_add(1, Ordering::SeqCst);
        let w = self.writers_in.load(Ordering::SeqCst);
        assert_eq!(w, 0, "a reader got in beside {w} writer(s)");
    }

    fn leave_read(&self) {
        self.readers_in.fetch_sub(1, Ordering::SeqCst);
    }

    fn enter_write(&self) {
        let w = self.writers_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(w, 0, "two writers at once");
        let r = self.readers_in.load(Ordering::SeqCst);
        assert_eq!(r, 0, "a writer got in beside {r} reader(s)");
    }

    fn leave_write(&self) {
        self.writers_in.fetch_sub(1, Ordering::SeqCst);
    }

    /// A read critical section: the fields match; returns their value.
    fn read_section(&self, d: &Data, rng: &mut Rng) -> u64 {
        let a = d.a;
        hold(rng);
        let b = d.b;
        assert_eq!(a, b, "torn read: a = {a}, b = {b}");
        a
    }

    /// A write critical section: both fields + 1, a pause in between.
    fn write_section(&self, d: &mut Data, rng: &mut Rng) {
        assert_eq!(d.a, d.b, "torn data at a write: a = {}, b = {}", d.a, d.b);
        let v = d.a;
        d.a = v + 1;
        hold(rng);
        d.b = v + 1;
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    fn read_guard(&self, g: RwLockReadGuard<'_, RawRwLock<S>, Data>, rng: &mut Rng) {
        self.enter_read();
        self.read_section(&g, rng);
        self.leave_read();
        if rng.below(8) == 0 {
            RwLockReadGuard::unlock_fair(g);
        } else {
            drop(g);
        }
    }

    /// As [`read_guard`](Self::read_guard) or [`write_guard`](Self::write_guard)
    /// for a lock taken through the raw API, released through the
    /// uncontended fast path (`try_unlock_uncontended`, the interposer's
    /// unlock) and, when that declines, `unlock_any`.
    fn raw_section(&self, write: Option<WriteToken>, rng: &mut Rng) {
        // SAFETY: `raw` only locks and unlocks; the data is touched through
        // the guard views below, made while the lock is held.
        let raw = unsafe { self.l.raw() };
        let is_write = write.is_some();
        if let Some(t) = write {
            // SAFETY: we hold the write lock as `t` (taken by the caller).
            let mut g = unsafe { self.l.make_write_guard_unchecked(t) };
            self.enter_write();
            self.write_section(&mut g, rng);
            self.leave_write();
            std::mem::forget(g);
        } else {
            // SAFETY: we hold a read lock (taken by the caller).
            let g = unsafe { self.l.make_read_guard_unchecked(GuardSend::new()) };
            self.enter_read();
            self.read_section(&g, rng);
            self.leave_read();
            std::mem::forget(g);
        }
        // SAFETY: we hold the lock; the guards above were forgotten.
        match unsafe { raw.try_unlock_uncontended() } {
            Some(was_write) => assert_eq!(was_write, is_write, "fast unlock took the wrong side"),
            // SAFETY: as above; nothing was released.
            None => assert_eq!(unsafe { raw.unlock_any() }, is_write),
        }
    }

    fn write_guard(&self, mut g: RwLockWriteGuard<'_, RawRwLock<S>, Data>, rng: &mut Rng) {
        self.enter_write();
        self.write_section(&mut g, rng);
        self.leave_write();
        if rng.below(8) == 0 {
            RwLockWriteGuard::unlock_fair(g);
        } else {
            drop(g);
        }
    }

    /// Holding an upgradable read: check, then (maybe) upgrade and write.
    fn upgradable_guard(
        &self,
        g: RwLockUpgradableReadGuard<'_, RawRwLock<S>, Data>,
        rng: &mut Rng,
        up: Up,
    ) {
        let u = self.upgraders_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(u, 0, "two upgradable readers at once");
        self.enter_read();
        let v = self.read_section(&g, rng);
        if rng.below(4) == 0 {
            // Read only.
            self.leave_read();
            self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
            drop(g);
            return;
        }
        // Leave the reader count first: the upgrade waits for the others.
        self.leave_read();
        let tried = match up {
            Up::Block => Ok(RwLockUpgradableReadGuard::upgrade(g)),
            Up::Try => RwLockUpgradableReadGuard::try_upgrade(g),
            Up::Timed(t) if rng.below(2) == 0 => RwLockUpgradableReadGuard::try_upgrade_for(g, t),
            Up::Timed(t) => RwLockUpgradableReadGuard::try_upgrade_until(g, Instant::now() + t),
        };
        let w = match tried {
            Ok(w) => w,
            Err(g) => {
                // Still upgradable after a failed (or timed-out) upgrade.
                assert_eq!(g.a, v, "a writer got in under an upgradable read");
                self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
                if rng.below(2) == 0 {
                    RwLockUpgradableReadGuard::unlock_fair(g);
                } else {
                    drop(g);
                }
                return;
            }
        };
        self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
        assert_eq!(w.a, v, "a writer got in under an upgradable read");
        self.write_guard(w, rng);
    }

    /// Write, downgrade, read: still our own value.
    fn downgrade(&self, rng: &mut Rng) {
        let mut g = self.l.write();
        self.enter_write();
        self.write_section(&mut g, rng);
        let mine = g.a;
        self.leave_write();
        // Enter as a reader before the downgrade lets other readers in
        // (so the counters never show a writer and readers together).
        let g = RwLockWriteGuard::downgrade(g);
        self.enter_read();
        let v = self.read_section(&g, rng);
        assert_eq!(v, mine, "a writer got in under a downgraded lock");
        self.leave_read();
        drop(g);
    }

    /// Write, downgrade to an upgradable read (readers may join, no writer
    /// or upgrader), read our own value, then go on as an upgradable reader
    /// with a timed upgrade.
    fn downgrade_to_upgradable(&self, rng: &mut Rng) {
        let mut g = self.l.write();
        self.enter_write();
        self.write_section(&mut g, rng);
        let mine = g.a;
        self.leave_write();
        // Enter as the upgradable reader before the downgrade lets readers in.
        let u = self.upgraders_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(u, 0, "an upgradable reader beside a writer");
        self.enter_read();
        let g = RwLockWriteGuard::downgrade_to_upgradable(g);
        let v = self.read_section(&g, rng);
        assert_eq!(
            v, mine,
            "a writer got in under a lock downgraded to upgradable"
        );
        self.leave_read();
        // We still hold UPGRADE: no other upgrader can enter in between.
        self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
        let up = Up::Timed(timeout(rng));
        self.upgradable_guard(g, rng, up);
    }

    /// An upgradable read that writes through `with_upgraded` (upgrade, then
    /// downgrade to upgradable), checks its own value, then bumps, and
    /// finally releases fairly, plainly, or by downgrading to a read lock.
    fn with_upgraded(&self, rng: &mut Rng) {
        let mut g = self.l.upgradable_read();
        let u = self.upgraders_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(u, 0, "two upgradable readers at once");
        self.enter_read();
        self.read_section(&g, rng);
        self.leave_read();
        let mine = g.with_upgraded(|d| {
            self.enter_write();
            self.write_section(d, rng);
            self.leave_write();
            d.a
        });
        assert_eq!(g.a, mine, "a writer got in under with_upgraded's downgrade");
        // The bump may let others in: leave the counters while it does.
        self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
        RwLockUpgradableReadGuard::bump(&mut g);
        let u = self.upgraders_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(u, 0, "two upgradable readers after a bump");
        self.enter_read();
        self.read_section(&g, rng);
        match rng.below(3) {
            0 => {
                self.leave_read();
                self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
                RwLockUpgradableReadGuard::unlock_fair(g);
            }
            1 => {
                // Stay inside as a reader across the downgrade.
                self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
                let r = RwLockUpgradableReadGuard::downgrade(g);
                self.read_section(&r, rng);
                self.leave_read();
                drop(r);
            }
            _ => {
                self.leave_read();
                self.upgraders_in.fetch_sub(1, Ordering::SeqCst);
                drop(g);
            }
        }
    }

    /// One operation of `class`; returns whether it acquired the lock.
    fn op(&self, class: Class, rng: &mut Rng, doing: &AtomicUsize) -> bool {
        let set = |k: usize| doing.store(k, Ordering::Relaxed);
        let r = rng.below(100);
        match class {
            Class::Reader => match r {
                0..=59 => {
                    set(1);
                    let g = self.l.read();
                    self.read_guard(g, rng);
                    true
                }
                60..=64 => {
                    // A reader-preferring read (glibc's default rwlock kind
                    // in the interposer), released by the fast path.
                    set(11);
                    // SAFETY: only locks; released in raw_section.
                    unsafe { self.l.raw() }.lock_shared_prefer_readers();
                    self.raw_section(None, rng);
                    true
                }
                65..=69 => {
                    set(12);
                    // SAFETY: only locks; released in raw_section.
                    unsafe { self.l.raw() }.lock_shared();
                    self.raw_section(None, rng);
                    true
                }
                70..=79 => {
                    set(2);
                    self.l.try_read().map(|g| self.read_guard(g, rng)).is_some()
                }
                80..=84 => {
                    set(13);
                    // SAFETY: only locks; released in raw_section.
                    let got = unsafe { self.l.raw() }.try_lock_shared_prefer_readers();
                    if got {
                        self.raw_section(None, rng);
                    }
                    got
                }
                85..=91 => {
                    // Recursive reads (past waiting writers and upgrades).
                    set(15);
                    let g = match rng.below(4) {
                        0 => Some(self.l.read_recursive()),
                        1 => self.l.try_read_recursive(),
                        2 => self.l.try_read_recursive_for(timeout(rng)),
                        _ => self
                            .l
                            .try_read_recursive_until(Instant::now() + timeout(rng)),
                    };
                    g.map(|g| self.read_guard(g, rng)).is_some()
                }
                _ => {
                    set(3);
                    let t = timeout(rng);
                    let g = if rng.below(2) == 0 {
                        self.l.try_read_for(t)
                    } else {
                        self.l.try_read_until(Instant::now() + t)
                    };
                    g.map(|g| self.read_guard(g, rng)).is_some()
                }
            },
            Class::Writer => match r {
                0..=64 => {
                    set(4);
                    let g = self.l.write();
                    self.write_guard(g, rng);
                    true
                }
                65..=69 => {
                    set(14);
                    // SAFETY: only locks; released in raw_section.
                    let t = unsafe { self.l.raw() }.lock_exclusive();
                    self.raw_section(Some(t), rng);
                    true
                }
                70..=79 => {
                    set(5);
                    self.l
                        .try_write()
                        .map(|g| self.write_guard(g, rng))
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
                    g.map(|g| self.write_guard(g, rng)).is_some()
                }
            },
            Class::Upgrader => match r {
                0..=49 => {
                    set(7);
                    let g = self.l.upgradable_read();
                    self.upgradable_guard(g, rng, Up::Block);
                    true
                }
                50..=64 => {
                    set(8);
                    let g = self.l.upgradable_read();
                    self.upgradable_guard(g, rng, Up::Try);
                    true
                }
                65..=74 => {
                    set(17);
                    let g = self.l.upgradable_read();
                    let up = Up::Timed(timeout(rng));
                    self.upgradable_guard(g, rng, up);
                    true
                }
                75..=84 => {
                    set(16);
                    let t = timeout(rng);
                    let g = if rng.below(2) == 0 {
                        self.l.try_upgradable_read_for(t)
                    } else {
                        self.l.try_upgradable_read_until(Instant::now() + t)
                    };
                    g.map(|g| self.upgradable_guard(g, rng, Up::Block))
                        .is_some()
                }
                85..=92 => {
                    set(19);
                    self.with_upgraded(rng);
                    true
                }
                _ => {
                    set(9);
                    self.l
                        .try_upgradable_read()
                        .map(|g| self.upgradable_guard(g, rng, Up::Block))
                        .is_some()
                }
            },
            Class::Downgrader => {
                if r < 50 {
                    set(10);
                    self.downgrade(rng);
                } else {
                    set(18);
                    self.downgrade_to_upgradable(rng);
                }
                true
            }
        }
    }
}

/// Shared between the workers and the watchdog.
struct Progress {
    /// Acquisitions per thread.
    acq: Vec<AtomicU64>,
    /// Operations (successful or not) per thread: the watchdog's progress.
    ops: Vec<AtomicU64>,
    doing: Vec<AtomicUsize>,
    failure: StdMutex<Option<String>>,
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

/// Has every thread made at least one acquisition?
fn all_acquired(p: &Progress) -> bool {
    // Relaxed: progress counters, polled.
    p.acq.iter().all(|a| a.load(Ordering::Relaxed) > 0)
}

/// The run: workers until `run` has passed and every thread has made an
/// acquisition, then the checks. Returns each thread's acquisitions.
fn body<S: SpinPolicy>(p: Arc<Progress>, run: Duration) -> Vec<u64> {
    let s = Arc::new(Shared::<S>::new());
    let n = p.ops.len();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (s, p) = (s.clone(), p.clone());
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut rng =
                        Rng(0x9e37_79b9_7f4a_7c15u64 ^ ((i as u64 + 1) * 0x1234_5678_9abc));
                    let class = CLASS_OF[i % CLASS_OF.len()];
                    // The stop comes only once every thread has made an
                    // acquisition (or a worker failed).
                    while !s.stop.load(Ordering::Relaxed) {
                        if s.op(class, &mut rng, &p.doing[i]) {
                            p.acq[i].fetch_add(1, Ordering::Relaxed);
                        }
                        p.doing[i].store(0, Ordering::Relaxed);
                        p.ops[i].fetch_add(1, Ordering::Relaxed);
                    }
                    p.doing[i].store(FINISHED, Ordering::Relaxed);
                }));
                match r {
                    Ok(()) => {}
                    Err(e) => {
                        let mut f = p.failure.lock().unwrap_or_else(|e| e.into_inner());
                        f.get_or_insert_with(|| {
                            format!("worker {i} panicked: {}", panic_message(&*e))
                        });
                        drop(f);
                        s.stop.store(true, Ordering::Relaxed);
                        std::panic::resume_unwind(e);
                    }
                }
            })
        })
        .collect();
    // At least `run`, then until every thread has made an acquisition (the
    // starvation check's event): a starved thread keeps the run going until
    // the watchdog names it.
    let start = Instant::now();
    while (start.elapsed() < run || !all_acquired(&p)) && !s.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    s.stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().expect("worker panicked");
    }
    // Final checks.
    assert!(!s.l.is_locked(), "left locked");
    let d = s.l.read();
    assert_eq!(d.a, d.b, "torn data at the end");
    assert_eq!(
        d.a,
        s.writes.load(Ordering::Relaxed),
        "lost update (fields vs write critical sections)"
    );
    drop(d);
    // SAFETY: only reads the word.
    let c = unsafe { s.l.raw() }.count_word();
    assert_eq!(c, 0, "count word not clean at the end ({c:#x})");
    // Relaxed: the workers were joined.
    p.acq.iter().map(|a| a.load(Ordering::Relaxed)).collect()
}

/// Run `body` on a helper thread; fail (panic) on a worker panic, on a
/// thread without progress for `stall`, or after `limit` (naming the
/// threads without an acquisition), instead of hanging. Returns the
/// per-thread acquisitions.
fn watchdog<S: SpinPolicy>(
    name: &str,
    threads: usize,
    run: Duration,
    stall: Duration,
    limit: Duration,
) -> Vec<u64> {
    let p = Arc::new(Progress {
        acq: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        ops: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        doing: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
        failure: StdMutex::new(None),
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let p2 = p.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body::<S>(p2, run)));
        let _ = tx.send(r);
    });
    let start = Instant::now();
    let mut last: Vec<(u64, Instant)> = (0..threads).map(|_| (0, start)).collect();
    let fail = |why: String| -> ! {
        let mut report = String::new();
        for i in 0..threads {
            let d = p.doing[i].load(Ordering::Relaxed);
            report += &format!(
                "\n  thread {i:3} ({:?}): {:8} ops, {:8} acquisitions, now: {}",
                CLASS_OF[i % CLASS_OF.len()],
                p.ops[i].load(Ordering::Relaxed),
                p.acq[i].load(Ordering::Relaxed),
                OPS.get(d).unwrap_or(&"?")
            );
        }
        panic!(
            "{name}: {why}\n  elapsed: {:?}\n  chaos: {} seed {} (replay with \
             KLOCK_CHAOS_SEED={}){report}",
            start.elapsed(),
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
            Ok(Ok(v)) => return v,
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
            // Relaxed: progress counters, read for the report.
            let starved: Vec<String> = (0..threads)
                .filter(|&i| p.acq[i].load(Ordering::Relaxed) == 0)
                .map(|i| format!("thread {i} ({:?})", CLASS_OF[i % CLASS_OF.len()]))
                .collect();
            fail(if starved.is_empty() {
                format!("did not finish within {limit:?} (hang or lost wake-up)")
            } else {
                format!(
                    "did not finish within {limit:?}: no acquisition by {} (starvation, hang \
                     or lost wake-up)",
                    starved.join(", ")
                )
            });
        }
        for (i, l) in last.iter_mut().enumerate() {
            let o = p.ops[i].load(Ordering::Relaxed);
            if o != l.0 || p.doing[i].load(Ordering::Relaxed) == FINISHED {
                *l = (o, now);
            } else if now - l.1 > stall {
                fail(format!(
                    "thread {i} made no progress for {stall:?} (hang or lost wake-up)"
                ));
            }
        }
    }
}

fn torture<S: SpinPolicy>(name: &str, secs_scale: f64) {
    let mult = env_u64("KLOCK_TORTURE_MULT", 16).max(1) as usize;
    let secs = env_u64("KLOCK_TORTURE_SECS", 3);
    // Watchdogs only (a normal run needs seconds): a thread stuck in one
    // operation for `stall`, a run that has not ended by `run` + `stall` +
    // 60 s (a thread that never gets in keeps it going).
    let stall = env_u64("KLOCK_TORTURE_STALL_SECS", 120).max(1);
    // At least one thread of every class.
    let threads = (mult * klock::internal::wait::effective_cpus()).max(CLASS_OF.len());
    let run = Duration::from_secs_f64((secs as f64 * secs_scale).max(0.5));
    eprintln!(
        "{name}: {threads} threads ({mult} x {} effective CPUs) for {run:?}; chaos {} (seed {})",
        klock::internal::wait::effective_cpus(),
        if klock::internal::chaos::ENABLED {
            "on"
        } else {
            "off"
        },
        klock::internal::chaos::seed(),
    );
    let acq = watchdog::<S>(
        name,
        threads,
        run,
        Duration::from_secs(stall),
        run + Duration::from_secs(stall + 60),
    );
    // Starvation: every thread of every class got in (the run went on until
    // each had, so a starved thread failed in the watchdog, naming it).
    let mut starved = Vec::new();
    for class in CLASSES {
        let v: Vec<u64> = (0..threads)
            .filter(|i| CLASS_OF[i % CLASS_OF.len()] == class)
            .map(|i| acq[i])
            .collect();
        let (min, max) = (v.iter().min().unwrap(), v.iter().max().unwrap());
        let avg = v.iter().sum::<u64>() as f64 / v.len() as f64;
        eprintln!(
            "{name}: {class:?}: {} threads, acquisitions min {min} avg {avg:.0} max {max}",
            v.len()
        );
        starved.extend(
            (0..threads)
                .filter(|i| CLASS_OF[i % CLASS_OF.len()] == class && acq[*i] == 0)
                .map(|i| format!("thread {i} ({class:?})")),
        );
    }
    assert!(
        starved.is_empty(),
        "{name}: no acquisition: {}",
        starved.join(", ")
    );
}

#[test]
fn torture_rwlock() {
    torture::<SpinOsq>("torture_rwlock (RwLock)", 1.0);
    torture::<SpinOff>("torture_rwlock (RwLockNoSpin)", 0.5);
}

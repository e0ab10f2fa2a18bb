//! Mixed-primitive torture test in the spirit of `locktorture`: the SAME
//! threads use every sleeping spinlock variant, the mutex (lock, try_lock,
//! timed locks, fair unlock), the condvar (timed waits, notify_one,
//! notify_all) and the reader-writer lock (read, write, upgrade, downgrade,
//! try and timed, fair unlocks) in random order, nested in a fixed lock order, some of it at
//! deeper queue-node levels. All these primitives share one per-thread queue
//! node per nesting level, with different meanings of the node's `state`
//! word, so a stale store by one primitive into a node its thread has already
//! reused for another (e.g. a spinlock unlock's late kick landing on a node
//! that now waits on a mutex or condvar) shows up here as a lost update, two
//! holders, a spurious condvar wake-up, a corrupted queue, or a hang.
//!
//! The pattern that reaches such races fastest is weighted up: a thread
//! releases a contended queued spinlock and at once waits on a condvar (it
//! already holds the condvar's mutex) or blocks on a contended mutex, at the
//! same node level. Spinlock holds are often long (a yield), so queues form
//! and waiters go to sleep.
//!
//! Checks: a plain (non-atomic) counter in every lock, updated with a slow
//! read-modify-write and compared at the end with an atomic count of
//! acquisitions; an `inside` flag that detects two holders; the condvar
//! ticket queues' bookkeeping; for the RwLock, two fields written together
//! (a torn read), counters of readers and writers inside (overlap) and the
//! fields against the count of write sections (a lost update); for every condvar, the waiters its notifies
//! reported equal the waits that returned "notified" (klock's queued condvar
//! has no spurious wake-ups, so a waiter whose node state was changed under
//! it shows up here); no lock left held, no flags or waiters left behind.
//! (This assumes every waiter gets a queue node: do not run it with a tiny
//! `KLOCK_NODE_SLOTS`, whose no-node fallback wakes spuriously.)
//!
//! A watchdog runs the test on a helper thread and fails (with the chaos
//! seed, the phase, and per-thread op counts and current operation) if a
//! worker panics, if a thread makes no progress for
//! `KLOCK_TORTURE_STALL_SECS` (default 120), or if the whole test exceeds the
//! duration + the stall time + 60 s: watchdogs that only catch a hang (a
//! normal run needs a few seconds). Nothing here asserts on timing or
//! throughput.
//!
//! Knobs: `KLOCK_TORTURE_MULT` (threads per effective CPU, default 8),
//! `KLOCK_TORTURE_SECS` (run time, default 3), plus the chaos feature's
//! `KLOCK_CHAOS_PERMILLE` / `KLOCK_CHAOS_SEED`:
//!
//! ```text
//! cargo test -p klock --release --features chaos --test torture_mixed -- --nocapture
//! ```
#![cfg(not(loom))]

mod torture_common;
use klock::internal::mutex::RawMutexInternals as _;
use torture_common::{Rng, env_u64, work};

use klock::{Condvar, Mutex, RwLock};
use klock::{DynSpinLock, PvBaseQSpinLock, PvQSpinLock, PvTicketLock, SpinLock, UnfairQSpinLock};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// Capacity of the condvar ticket queue (small: both "full" and "empty"
/// waits happen often).
const CAP: u64 = 4;
/// Most timed condvar waits one produce/consume operation makes.
const MAX_WAITS: u32 = 6;

/// Data protected by each lock: a plain counter updated with a slow
/// read-modify-write, and a flag that detects two holders at once.
#[derive(Default)]
struct Data {
    counter: u64,
    inside: bool,
}

/// The critical section: a deliberately slow non-atomic increment.
fn critical(d: &mut Data, rng: &mut Rng, name: &str) {
    assert!(!d.inside, "{name}: two holders at once");
    d.inside = true;
    let v = d.counter;
    // Many holds are long (a yield gives the CPU away with 8x overcommit), so
    // that waiters queue up and sleep, and the unlocks kick sleepers.
    match rng.below(100) {
        0..=14 => std::thread::yield_now(),
        15..=40 => work(rng.below(1000)),
        _ => {}
    }
    d.counter = v + 1;
    d.inside = false;
}

/// A lock over [`Data`] and the number of completed critical sections.
struct Counted<R: lock_api::RawMutex> {
    name: &'static str,
    lock: lock_api::Mutex<R, Data>,
    acq: AtomicU64,
}

impl<R: lock_api::RawMutex> Counted<R> {
    fn new(name: &'static str) -> Self {
        Counted {
            name,
            lock: lock_api::Mutex::new(Data::default()),
            acq: AtomicU64::new(0),
        }
    }

    /// Lock, run the critical section, run `f` still holding the lock (for
    /// nesting), unlock.
    fn with<T>(&self, rng: &mut Rng, f: impl FnOnce(&mut Rng) -> T) -> T {
        let mut g = self.lock.lock();
        critical(&mut g, rng, self.name);
        self.acq.fetch_add(1, Ordering::Relaxed);
        let r = f(rng);
        drop(g);
        r
    }

    fn check(&self) {
        assert!(!self.lock.is_locked(), "{}: left locked", self.name);
        let g = self.lock.lock();
        assert!(!g.inside, "{}: inside flag left set", self.name);
        assert_eq!(
            g.counter,
            self.acq.load(Ordering::Relaxed),
            "{}: lost update (counter vs acquisitions)",
            self.name
        );
    }
}

impl<S: klock::SpinPolicy> Counted<klock::RawMutex<S>> {
    /// Critical section after a successful try/timed lock, fair or not.
    fn held(&self, mut g: lock_api::MutexGuard<'_, klock::RawMutex<S>, Data>, rng: &mut Rng) {
        critical(&mut g, rng, self.name);
        self.acq.fetch_add(1, Ordering::Relaxed);
        if rng.below(8) == 0 {
            lock_api::MutexGuard::unlock_fair(g);
        } else {
            drop(g);
        }
    }
}

/// A condvar ticket queue's shared state: a bounded ticket count.
#[derive(Default)]
struct Tickets {
    data: Data,
    avail: u64,
    produced: u64,
    consumed: u64,
}

/// A condvar that counts what its notifies reported (`notify_one` true: 1,
/// `notify_all`: its count) and how many waits returned without timing out.
/// klock's queued condvar has no spurious wake-ups and exact notify counts,
/// so the two must be equal at the end: a waiter that returns "notified"
/// without a notify (its node's state changed under it) breaks the equality.
struct Cv {
    name: &'static str,
    cv: Condvar,
    notified: AtomicU64,
    woken: AtomicU64,
}

impl Cv {
    fn new(name: &'static str) -> Cv {
        Cv {
            name,
            cv: Condvar::new(),
            notified: AtomicU64::new(0),
            woken: AtomicU64::new(0),
        }
    }

    fn wait_for(&self, g: &mut klock::MutexGuard<'_, Tickets>, t: Duration) {
        if !self.cv.wait_for(g, t).timed_out() {
            self.woken.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn notify_one(&self) {
        if self.cv.notify_one() {
            self.notified.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn notify_all(&self) -> usize {
        let n = self.cv.notify_all();
        self.notified.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    fn check(&self, i: usize) {
        assert_eq!(
            self.notify_all(),
            0,
            "queue {i} {}: waiters left",
            self.name
        );
        let (n, w) = (
            self.notified.load(Ordering::Relaxed),
            self.woken.load(Ordering::Relaxed),
        );
        assert_eq!(
            n, w,
            "queue {i} {}: {n} waiters notified but {w} waits returned notified \
             (spurious or lost condvar wake-ups)",
            self.name
        );
    }
}

/// The RwLock's data: two fields that every write section updates one
/// after the other (with a pause in between), so a reader beside a writer
/// sees them differ.
#[derive(Default)]
struct RwData {
    a: u64,
    b: u64,
}

/// A `klock::RwLock` with its checks: threads inside as readers / writers
/// (checked at every entry), and the number of write sections (the fields'
/// final value).
struct RwCounted {
    lock: RwLock<RwData>,
    readers_in: AtomicUsize,
    writers_in: AtomicUsize,
    writes: AtomicU64,
    reads: AtomicU64,
}

impl RwCounted {
    fn new() -> RwCounted {
        RwCounted {
            lock: RwLock::new(RwData::default()),
            readers_in: AtomicUsize::new(0),
            writers_in: AtomicUsize::new(0),
            writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    /// A read section (plain, upgradable or downgraded): no writer inside,
    /// the fields match. Returns their value.
    fn read_section(&self, d: &RwData, rng: &mut Rng) -> u64 {
        // SeqCst (the inside counters): a store-buffering pair with writers.
        self.readers_in.fetch_add(1, Ordering::SeqCst);
        let w = self.writers_in.load(Ordering::SeqCst);
        assert_eq!(w, 0, "RwLock: a reader beside {w} writer(s)");
        let a = d.a;
        if rng.below(8) == 0 {
            std::thread::yield_now();
        }
        let b = d.b;
        assert_eq!(a, b, "RwLock: torn read (a = {a}, b = {b})");
        self.readers_in.fetch_sub(1, Ordering::SeqCst);
        self.reads.fetch_add(1, Ordering::Relaxed);
        a
    }

    /// A write section: alone inside; both fields + 1, a pause in between.
    fn write_section(&self, d: &mut RwData, rng: &mut Rng) {
        let w = self.writers_in.fetch_add(1, Ordering::SeqCst);
        assert_eq!(w, 0, "RwLock: two writers at once");
        let r = self.readers_in.load(Ordering::SeqCst);
        assert_eq!(r, 0, "RwLock: a writer beside {r} reader(s)");
        assert_eq!(d.a, d.b, "RwLock: torn data at a write");
        let v = d.a;
        d.a = v + 1;
        match rng.below(100) {
            0..=14 => std::thread::yield_now(),
            15..=40 => work(rng.below(1000)),
            _ => {}
        }
        d.b = v + 1;
        self.writers_in.fetch_sub(1, Ordering::SeqCst);
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    fn read_guard(&self, g: klock::RwLockReadGuard<'_, RwData>, rng: &mut Rng) {
        self.read_section(&g, rng);
        if rng.below(8) == 0 {
            lock_api::RwLockReadGuard::unlock_fair(g);
        }
    }

    fn write_guard(&self, mut g: klock::RwLockWriteGuard<'_, RwData>, rng: &mut Rng) {
        self.write_section(&mut g, rng);
        if rng.below(8) == 0 {
            lock_api::RwLockWriteGuard::unlock_fair(g);
        }
    }

    /// One RwLock operation, running `f` while holding it (for nesting;
    /// whatever the operation holds: read, write, upgradable or downgraded;
    /// for try and timed operations, held or not).
    fn op<T>(&self, rng: &mut Rng, f: impl FnOnce(&mut Rng) -> T) -> T {
        let t = Duration::from_micros(rng.below(2000));
        match rng.below(10) {
            0..=2 => {
                let g = self.lock.read();
                let r = f(rng);
                self.read_guard(g, rng);
                r
            }
            3..=4 => {
                let g = self.lock.write();
                let r = f(rng);
                self.write_guard(g, rng);
                r
            }
            5 => {
                // Upgradable read, then upgrade (or try_upgrade) and write.
                let u = self.lock.upgradable_read();
                let v = self.read_section(&u, rng);
                let r = f(rng);
                let w = if rng.below(2) == 0 {
                    lock_api::RwLockUpgradableReadGuard::try_upgrade(u).ok()
                } else {
                    Some(lock_api::RwLockUpgradableReadGuard::upgrade(u))
                };
                if let Some(w) = w {
                    assert_eq!(w.a, v, "RwLock: a writer got in under an upgradable read");
                    self.write_guard(w, rng);
                }
                r
            }
            6 => {
                // Write, downgrade, read: still our own value.
                let mut g = self.lock.write();
                self.write_section(&mut g, rng);
                let mine = g.a;
                let g = lock_api::RwLockWriteGuard::downgrade(g);
                let r = f(rng);
                let v = self.read_section(&g, rng);
                assert_eq!(v, mine, "RwLock: a writer got in under a downgraded lock");
                drop(g);
                r
            }
            7 => {
                let g = if rng.below(2) == 0 {
                    self.lock.try_read_for(t)
                } else {
                    self.lock.try_read_until(Instant::now() + t)
                };
                let r = f(rng);
                if let Some(g) = g {
                    self.read_guard(g, rng);
                }
                r
            }
            8 => {
                let g = if rng.below(2) == 0 {
                    self.lock.try_write_for(t)
                } else {
                    self.lock.try_write_until(Instant::now() + t)
                };
                let r = f(rng);
                if let Some(g) = g {
                    self.write_guard(g, rng);
                }
                r
            }
            _ => {
                let r = f(rng);
                if rng.below(2) == 0 {
                    if let Some(g) = self.lock.try_read() {
                        self.read_guard(g, rng);
                    }
                } else if let Some(g) = self.lock.try_write() {
                    self.write_guard(g, rng);
                }
                r
            }
        }
    }

    fn check(&self) {
        assert!(!self.lock.is_locked(), "RwLock: left locked");
        let g = self.lock.read();
        assert_eq!(g.a, g.b, "RwLock: torn data at the end");
        assert_eq!(
            g.a,
            self.writes.load(Ordering::Relaxed),
            "RwLock: lost update (fields vs write sections)"
        );
        drop(g);
        // SAFETY: only reads the word. Waiter bits a timed-out waiter left
        // may remain (the floor's docs); no holder may.
        let c = unsafe { self.lock.raw() }.state();
        let held =
            klock::internal::rwlock::RW_FLOOR_MASK | klock::internal::rwlock::RW_FLOOR_UPGRADABLE;
        assert_eq!(c & held, 0, "RwLock: state word not clean ({c:#x})");
    }
}

/// A bounded ticket queue: a mutex, two condvars, and the number of
/// critical sections run under the mutex.
struct Queue {
    m: Mutex<Tickets>,
    acq: AtomicU64,
    not_empty: Cv,
    not_full: Cv,
}

fn timeout(rng: &mut Rng) -> Duration {
    Duration::from_micros(20 + rng.below(3000))
}

impl Queue {
    fn new() -> Queue {
        Queue {
            m: Mutex::new(Tickets::default()),
            acq: AtomicU64::new(0),
            not_empty: Cv::new("not_empty"),
            not_full: Cv::new("not_full"),
        }
    }

    /// Take a ticket, waiting (timed, bounded rounds) while there is none.
    fn consume(&self, stop: &AtomicBool, rng: &mut Rng) {
        let mut g = self.m.lock();
        let mut waits = 0;
        while g.avail == 0 && !stop.load(Ordering::Relaxed) && waits < MAX_WAITS {
            self.not_empty.wait_for(&mut g, timeout(rng));
            waits += 1;
        }
        self.take(g, rng);
    }

    /// Add a ticket, waiting (timed, bounded rounds) while the queue is full.
    fn produce(&self, stop: &AtomicBool, rng: &mut Rng) {
        let mut g = self.m.lock();
        let mut waits = 0;
        while g.avail >= CAP && !stop.load(Ordering::Relaxed) && waits < MAX_WAITS {
            self.not_full.wait_for(&mut g, timeout(rng));
            waits += 1;
        }
        self.critical(&mut g, rng);
        let put = g.avail < CAP;
        if put {
            g.avail += 1;
            g.produced += 1;
        }
        self.notify_after(g, put, &self.not_empty, rng);
    }

    /// Holding the queue's mutex, run `spin` (which takes and releases a
    /// spinlock), then wait on the condvar at once: the queue node the
    /// spinlock used is reused for the condvar wait with nothing in between.
    fn spin_then_wait(&self, stop: &AtomicBool, rng: &mut Rng, spin: impl FnOnce(&mut Rng)) {
        let mut g = self.m.lock();
        spin(rng);
        if !stop.load(Ordering::Relaxed) {
            self.not_empty.wait_for(&mut g, timeout(rng));
        }
        self.take(g, rng);
    }

    fn take(&self, mut g: klock::MutexGuard<'_, Tickets>, rng: &mut Rng) {
        self.critical(&mut g, rng);
        let took = g.avail > 0;
        if took {
            g.avail -= 1;
            g.consumed += 1;
        }
        self.notify_after(g, took, &self.not_full, rng);
    }

    fn critical(&self, t: &mut Tickets, rng: &mut Rng) {
        assert!(t.avail <= CAP, "ticket count {} above capacity", t.avail);
        assert_eq!(t.produced - t.consumed, t.avail, "ticket bookkeeping");
        critical(&mut t.data, rng, "Mutex(condvar)");
        self.acq.fetch_add(1, Ordering::Relaxed);
    }

    /// Notify (one or all; with the mutex held or not) after a change.
    fn notify_after(
        &self,
        g: klock::MutexGuard<'_, Tickets>,
        changed: bool,
        cv: &Cv,
        rng: &mut Rng,
    ) {
        let all = rng.below(8) == 0;
        let g = if rng.below(2) == 0 { Some(g) } else { None };
        if all {
            cv.notify_all();
        } else if changed {
            cv.notify_one();
        }
        drop(g);
    }

    fn check(&self, i: usize) {
        assert!(!self.m.is_locked(), "queue {i}: mutex left locked");
        let t = self.m.lock();
        assert!(!t.data.inside, "queue {i}: inside flag left set");
        assert_eq!(
            t.data.counter,
            self.acq.load(Ordering::Relaxed),
            "queue {i}: lost update"
        );
        assert_eq!(t.produced - t.consumed, t.avail, "queue {i}: bookkeeping");
        drop(t);
        // SAFETY: only reads the word.
        let w = unsafe { self.m.raw() }.owner_word();
        assert_eq!(w, 0, "queue {i}: mutex flags left behind ({w:#x})");
        // Nobody may be left on a condvar list.
        self.not_empty.check(i);
        self.not_full.check(i);
    }
}

/// Condvar queues (several, so that several threads can be in the
/// "spinlock, then condvar wait" pattern at once).
const NQUEUES: usize = 6;

struct Shared {
    // Lock order (no deadlock): outer mutex -> a queue's mutex -> the RwLock
    // -> spinlocks in index order -> inner mutex. (The outer mutex and a
    // queue's mutex are never held together, nor two queues' mutexes.)
    outer: Counted<klock::RawMutex>,
    rw: RwCounted,
    spin_unfair: Counted<klock::RawQSpinLock<klock::Unfair>>,
    spin_park: Counted<klock::RawTasParkLock<klock::Pv>>,
    spin_pv: Counted<klock::RawQSpinLock<klock::Pv>>,
    spin_pvbase: Counted<klock::RawQSpinLock<klock::PvBase>>,
    spin_dyn: Counted<klock::RawSpin>,
    spin_pvticket: Counted<klock::RawTicketLock<klock::Pv>>,
    inner: Counted<klock::RawMutex>,
    queues: [Queue; NQUEUES],
    stop: AtomicBool,
}

// The public aliases are the types under test: the raw types above are theirs.
fn _aliases(s: &Shared) {
    let _: &UnfairQSpinLock<Data> = &s.spin_unfair.lock;
    let _: &SpinLock<Data> = &s.spin_park.lock;
    let _: &PvQSpinLock<Data> = &s.spin_pv.lock;
    let _: &PvBaseQSpinLock<Data> = &s.spin_pvbase.lock;
    let _: &DynSpinLock<Data> = &s.spin_dyn.lock;
    let _: &PvTicketLock<Data> = &s.spin_pvticket.lock;
    let _: &Mutex<Data> = &s.outer.lock;
}

/// Spinlocks: indices below `NQSPIN` use the per-thread queue nodes (the
/// queued ones, and the parked default `SpinLock`); the last one is the PV
/// ticket lock.
const NSPIN: u64 = 6;
const NQSPIN: u64 = 5;

impl Shared {
    fn new() -> Shared {
        Shared {
            outer: Counted::new("Mutex(outer)"),
            rw: RwCounted::new(),
            spin_unfair: Counted::new("UnfairQSpinLock"),
            spin_park: Counted::new("SpinLock(park)"),
            spin_pv: Counted::new("PvQSpinLock"),
            spin_pvbase: Counted::new("PvBaseQSpinLock"),
            spin_dyn: Counted::new("DynSpinLock"),
            spin_pvticket: Counted::new("PvTicketLock"),
            inner: Counted::new("Mutex(inner)"),
            queues: std::array::from_fn(|_| Queue::new()),
            stop: AtomicBool::new(false),
        }
    }

    /// Spinlock `i` (index order = lock order), running `f` while held.
    fn spin<T>(&self, i: u64, rng: &mut Rng, f: impl FnOnce(&mut Rng) -> T) -> T {
        match i {
            0 => self.spin_unfair.with(rng, f),
            1 => self.spin_pv.with(rng, f),
            2 => self.spin_pvbase.with(rng, f),
            3 => self.spin_dyn.with(rng, f),
            4 => self.spin_park.with(rng, f),
            _ => self.spin_pvticket.with(rng, f),
        }
    }

    /// 1..=8 back-to-back acquisitions of spinlock `i` (keeps its queue long).
    fn spin_burst(&self, i: u64, rng: &mut Rng) {
        for _ in 0..1 + rng.below(8) {
            self.spin(i, rng, |_| ());
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn queue(&self, rng: &mut Rng) -> &Queue {
        &self.queues[rng.below(NQUEUES as u64) as usize]
    }

    fn check(&self) {
        self.outer.check();
        self.spin_unfair.check();
        self.spin_park.check();
        self.spin_pv.check();
        self.spin_pvbase.check();
        self.spin_dyn.check();
        self.spin_pvticket.check();
        self.inner.check();
        self.rw.check();
        for (name, m) in [("Mutex(outer)", &self.outer), ("Mutex(inner)", &self.inner)] {
            // SAFETY: only reads the word.
            let w = unsafe { m.lock.raw() }.owner_word();
            assert_eq!(w, 0, "{name}: flags left behind ({w:#x})");
        }
        for (i, q) in self.queues.iter().enumerate() {
            q.check(i);
        }
    }
}

/// What a thread is doing (for the watchdog's report).
const OPS: &[&str] = &[
    "idle",
    "spinlock",
    "spinlock -> condvar wait",
    "spinlock -> condvar queue op",
    "spinlock -> mutex",
    "mutex lock",
    "mutex try_lock",
    "mutex try_lock_for/until",
    "condvar consume",
    "condvar produce",
    "mutex -> spinlock -> mutex",
    "spinlock -> spinlock -> mutex",
    "rwlock",
    "spinlock -> rwlock",
    "rwlock -> spinlock -> mutex",
    "mutex -> rwlock",
    "finished",
];
const FINISHED: usize = 16;

/// Shared between the workers and the watchdog.
struct Progress {
    phase: AtomicUsize,
    ops: Vec<AtomicU64>,
    doing: Vec<AtomicUsize>,
    failure: StdMutex<Option<String>>,
}

const PHASES: &[&str] = &[
    "spawning workers",
    "running",
    "stopping (joining workers)",
    "final checks",
];

fn one_op(s: &Shared, rng: &mut Rng, doing: &AtomicUsize) {
    let set = |k: usize| doing.store(k, Ordering::Relaxed);
    let stop = &s.stop;
    match rng.below(120) {
        // The node-reuse pattern: release a contended queued spinlock, then
        // at once wait on a condvar (holding its mutex already, so nothing
        // comes in between) ...
        0..=29 => {
            set(2);
            let i = rng.below(NQSPIN);
            s.queue(rng)
                .spin_then_wait(stop, rng, |rng| s.spin(i, rng, |_| ()));
        }
        // ... or take a queue's mutex (likely contended) and maybe wait ...
        30..=39 => {
            set(3);
            let i = rng.below(NSPIN);
            s.spin_burst(i, rng);
            let q = s.queue(rng);
            if rng.below(2) == 0 {
                q.consume(stop, rng);
            } else {
                q.produce(stop, rng);
            }
        }
        // ... or block on a contended mutex.
        40..=49 => {
            set(4);
            let i = rng.below(NSPIN);
            s.spin_burst(i, rng);
            if rng.below(2) == 0 {
                s.outer.with(rng, |_| ());
            } else {
                s.inner.with(rng, |_| ());
            }
        }
        50..=61 => {
            set(1);
            let i = rng.below(NSPIN);
            s.spin_burst(i, rng);
        }
        62..=65 => {
            set(5);
            let m = if rng.below(2) == 0 {
                &s.outer
            } else {
                &s.inner
            };
            let g = m.lock.lock();
            m.held(g, rng);
        }
        66..=67 => {
            set(6);
            let m = if rng.below(2) == 0 {
                &s.outer
            } else {
                &s.inner
            };
            if let Some(g) = m.lock.try_lock() {
                m.held(g, rng);
            }
        }
        68..=71 => {
            set(7);
            let m = if rng.below(2) == 0 {
                &s.outer
            } else {
                &s.inner
            };
            let t = Duration::from_micros(rng.below(2000));
            let g = if rng.below(2) == 0 {
                m.lock.try_lock_for(t)
            } else {
                m.lock.try_lock_until(Instant::now() + t)
            };
            if let Some(g) = g {
                m.held(g, rng);
            }
        }
        72..=79 => {
            set(8);
            s.queue(rng).consume(stop, rng);
        }
        80..=89 => {
            set(9);
            s.queue(rng).produce(stop, rng);
        }
        90..=94 => {
            // Mutex held while a spinlock is taken (and maybe the inner
            // mutex inside it).
            set(10);
            let i = rng.below(NSPIN);
            let deep = rng.below(2) == 0;
            s.outer.with(rng, |rng| {
                s.spin(i, rng, |rng| {
                    if deep {
                        s.inner.with(rng, |_| ());
                    }
                })
            });
        }
        100..=107 => {
            set(12);
            s.rw.op(rng, |_| ());
        }
        // Node reuse: release a contended queued spinlock, then block on
        // the RwLock at once.
        108..=113 => {
            set(13);
            let i = rng.below(NSPIN);
            s.spin_burst(i, rng);
            s.rw.op(rng, |_| ());
        }
        // The RwLock held (read, write, upgradable or downgraded) while a
        // spinlock and maybe the inner mutex are taken.
        114..=117 => {
            set(14);
            let i = rng.below(NSPIN);
            let deep = rng.below(2) == 0;
            s.rw.op(rng, |rng| {
                s.spin(i, rng, |rng| {
                    if deep {
                        s.inner.with(rng, |_| ());
                    }
                })
            });
        }
        118..=119 => {
            set(15);
            s.outer.with(rng, |rng| s.rw.op(rng, |_| ()));
        }
        _ => {
            // Spinlock held while another spinlock and then a mutex are taken.
            set(11);
            let i = rng.below(NSPIN - 1);
            let j = i + 1 + rng.below(NSPIN - 1 - i);
            s.spin(i, rng, |rng| {
                s.spin(j, rng, |rng| {
                    if rng.below(2) == 0 {
                        s.inner.with(rng, |_| ());
                    }
                })
            });
        }
    }
}

fn worker(s: &Shared, p: &Progress, idx: usize, seed: u64) {
    let mut rng = Rng(seed | 1);
    let doing = &p.doing[idx];
    while !s.stopping() {
        // Holding a guard does not hold a queue node (nodes are leased only
        // while waiting), so plain nesting uses node level 0 throughout.
        // Running some operations inside `with_node` moves them to levels
        // 1 and 2.
        match rng.below(8) {
            0 => klock::internal::node::with_node(|_| one_op(s, &mut rng, doing)),
            1 => klock::internal::node::with_node(|_| {
                klock::internal::node::with_node(|_| one_op(s, &mut rng, doing))
            }),
            _ => one_op(s, &mut rng, doing),
        }
        doing.store(0, Ordering::Relaxed);
        p.ops[idx].fetch_add(1, Ordering::Relaxed);
        if rng.below(32) == 0 {
            std::thread::yield_now();
        }
    }
    doing.store(FINISHED, Ordering::Relaxed);
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

fn body(p: Arc<Progress>, run: Duration) {
    let s = Arc::new(Shared::new());
    let n = p.ops.len();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (s, p) = (s.clone(), p.clone());
            std::thread::spawn(move || {
                let seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((i as u64 + 1) * 0x1234_5678_9abc);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    worker(&s, &p, i, seed)
                }));
                if let Err(e) = r {
                    let phase = PHASES[p.phase.load(Ordering::Relaxed).min(PHASES.len() - 1)];
                    let mut f = p.failure.lock().unwrap_or_else(|e| e.into_inner());
                    f.get_or_insert_with(|| {
                        format!("worker {i} panicked ({phase}): {}", panic_message(&*e))
                    });
                    drop(f);
                    s.stop.store(true, Ordering::Relaxed);
                    std::panic::resume_unwind(e);
                }
            })
        })
        .collect();
    p.phase.store(1, Ordering::Relaxed);
    let start = Instant::now();
    while start.elapsed() < run && !s.stopping() {
        std::thread::sleep(Duration::from_millis(20));
    }
    p.phase.store(2, Ordering::Relaxed);
    s.stop.store(true, Ordering::Relaxed);
    // Shutdown: release every condvar waiter (they also time out).
    for q in &s.queues {
        q.not_empty.notify_all();
        q.not_full.notify_all();
    }
    for h in hs {
        h.join().expect("worker panicked");
    }
    p.phase.store(3, Ordering::Relaxed);
    s.check();
    let total: u64 = p.ops.iter().map(|o| o.load(Ordering::Relaxed)).sum();
    let min = p
        .ops
        .iter()
        .map(|o| o.load(Ordering::Relaxed))
        .min()
        .unwrap_or(0);
    eprintln!(
        "torture_mixed: {n} threads, {total} ops (min per thread {min}), acquisitions: \
         outer {} unfair {} park {} pv {} pvbase {} pvticket {} dyn {} inner {} rwlock {} reads {} \
         writes condvar {:?}",
        s.outer.acq.load(Ordering::Relaxed),
        s.spin_unfair.acq.load(Ordering::Relaxed),
        s.spin_park.acq.load(Ordering::Relaxed),
        s.spin_pv.acq.load(Ordering::Relaxed),
        s.spin_pvbase.acq.load(Ordering::Relaxed),
        s.spin_pvticket.acq.load(Ordering::Relaxed),
        s.spin_dyn.acq.load(Ordering::Relaxed),
        s.inner.acq.load(Ordering::Relaxed),
        s.rw.reads.load(Ordering::Relaxed),
        s.rw.writes.load(Ordering::Relaxed),
        s.queues
            .iter()
            .map(|q| q.acq.load(Ordering::Relaxed))
            .collect::<Vec<_>>(),
    );
}

/// Run the test on a helper thread; fail (panic) on a worker panic, on a
/// thread without progress for `stall`, or after `limit`, instead of hanging.
fn watchdog(threads: usize, run: Duration, stall: Duration, limit: Duration) {
    let p = Arc::new(Progress {
        phase: AtomicUsize::new(0),
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
    let fail = |why: String| -> ! {
        let mut report = String::new();
        for (i, (o, d)) in p.ops.iter().zip(&p.doing).enumerate() {
            let d = d.load(Ordering::Relaxed);
            report += &format!(
                "\n  thread {i:3}: {:8} ops, now: {}",
                o.load(Ordering::Relaxed),
                OPS.get(d).unwrap_or(&"?")
            );
        }
        panic!(
            "torture_mixed: {why}\n  phase: {}\n  elapsed: {:?}\n  chaos: {} seed {} \
             (replay with KLOCK_CHAOS_SEED={}){report}",
            PHASES[p.phase.load(Ordering::Relaxed).min(PHASES.len() - 1)],
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
            Ok(Ok(())) => return,
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
            fail(format!(
                "did not finish within {limit:?} (hang or lost wake-up)"
            ));
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

#[test]
fn torture_mixed() {
    let mult = env_u64("KLOCK_TORTURE_MULT", 8).max(1) as usize;
    let secs = env_u64("KLOCK_TORTURE_SECS", 3);
    let stall = env_u64("KLOCK_TORTURE_STALL_SECS", 120).max(1);
    let threads = (mult * klock::internal::wait::effective_cpus()).max(2);
    // Some failures abort the process (a panic inside a condvar wait cannot
    // restore the guard): print the seed next to every panic message.
    let seed = klock::internal::chaos::seed();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        prev(info);
        if klock::internal::chaos::ENABLED {
            eprintln!("torture_mixed: chaos seed {seed} (replay with KLOCK_CHAOS_SEED={seed})");
        }
    }));
    eprintln!(
        "torture_mixed: {threads} threads ({mult} x {} effective CPUs) for {secs} s; chaos {} \
         (seed {})",
        klock::internal::wait::effective_cpus(),
        if klock::internal::chaos::ENABLED {
            "on"
        } else {
            "off"
        },
        seed,
    );
    watchdog(
        threads,
        Duration::from_secs(secs),
        Duration::from_secs(stall),
        Duration::from_secs(secs + stall + 60),
    );
}

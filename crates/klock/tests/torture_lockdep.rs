//! Torture test for the lock-order validator's own shared state
//! (`klock::internal::lockdep`): its lock-free edge key set, the graph lock
//! and the cycle search under it, the identity tables and the report. The
//! validator must never deadlock, never corrupt a lock it watches, never
//! report an order that cannot deadlock, and report every cycle exactly once.
//!
//! `KLOCK_TORTURE_MULT` threads per effective CPU (default 8, at least 4
//! threads) share the work by role, and every one of them also closes one
//! deliberate cycle half-way through:
//!
//! * **pool** (half the threads): random chains of up to five locks from a
//!   pool of real `klock::Mutex` and `klock::RwLock` objects, always in the
//!   pool's index order, some by `try_lock`, some read-held; a plain counter
//!   in each lock (a slow read-modify-write, an `inside` flag for two
//!   holders; two words written together in the rwlocks, compared by the
//!   readers) checks the exclusion, and must equal its write sections at the
//!   end;
//! * **adders** (a quarter): new edges all the time, paced over the run (so
//!   they go on while the cycles below are searched): a fresh lock (a
//!   synthetic address never used before) taken first, then up to two older
//!   fresh locks of its block (newer first) and up to two pool locks (in
//!   index order). Every chain keeps one global order (newer fresh locks
//!   before older ones, all before the pool, the pool by index), so the
//!   graph stays acyclic however the threads interleave, while each new
//!   edge into older locks or the pool makes the search walk a real
//!   subgraph under the graph lock as other threads probe the key set;
//! * **churn** (a quarter): a private chain of heap `klock::Mutex`es, taken
//!   in order; every round one is dropped (`forget` first, as a lock's drop
//!   does) and a new one allocated, usually at the same address, which must
//!   then get a new identity (asserted). Paced and capped too;
//! * **the deliberate cycles**: half-way, each thread makes one private pair
//!   of fresh mutexes A, B (kept alive, so their addresses stay unique) and
//!   takes A then B and later B then A, holding nothing else: even threads
//!   on themselves, odd threads on two helper threads joined in turn. The
//!   reports (`lockdep::reports()` and the `possible deadlock` lines in
//!   `KLOCK_LOCKDEP_FILE`, a temp file kept only if the test fails, so
//!   stderr stays clean) must number exactly the threads, each must name
//!   exactly one pair (both of its locks, nothing else), and each pair must
//!   be named once.
//!
//! The validator is driven through its hooks by hand (`lock_at`,
//! `before_wait`, `taken`, `released`, `forget`) around the real locks,
//! by their raw lock's address, as klock's own locks do with the feature
//! `lockdep`; with that feature the test leaves the real locks' hooks to
//! klock and calls them only for the synthetic locks. The run's budgets
//! keep it well inside the validator's tables (edges, address slots,
//! identities): nothing may go untracked (asserted).
//!
//! A watchdog runs the body on a helper thread and fails (with the phase,
//! the chaos seed, and every thread's operation count and current
//! operation) if a worker panics, if a thread makes no progress for
//! `KLOCK_TORTURE_STALL_SECS` (default 120), or if the whole test exceeds
//! the run + the stall time + 60 s. Nothing here asserts on timing.
//!
//! A second test forks while threads add edges: each child (which inherits
//! the graph lock released by klock's atfork handlers, `Slot::Lockdep`)
//! records new edges, one of them into the parent's graph, and closes a
//! cycle of its own, whose report it must write; a child that hangs is
//! killed and fails the test.
//!
//! Knobs: `KLOCK_TORTURE_MULT`, `KLOCK_TORTURE_SECS` (run time, default 3),
//! `KLOCK_TORTURE_STALL_SECS`, `KLOCK_FORK_TEST_ROUNDS` (forks, default 20,
//! as for fork.rs), plus the chaos feature's `KLOCK_CHAOS_PERMILLE` /
//! `KLOCK_CHAOS_SEED`:
//!
//! ```text
//! cargo test -p klock --release --features chaos --test torture_lockdep -- --nocapture
//! ```
#![cfg(not(loom))]

mod torture_common;
use torture_common::{Rng, env_u64, work};

use klock::internal::chaos;
use klock::internal::lockdep::{self, Lock, Mode};
use klock::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Budgets (the validator's tables: 2^18 edges, 2^20 address slots, 2^22 ids)
// ---------------------------------------------------------------------------

/// Pool locks (every fourth an rwlock).
const POOL: usize = 32;
/// Fresh locks the adders make in one run (each op: one fresh lock and at
/// most four new edges).
const FRESH_CAP: u64 = 20_000;
/// Older fresh locks an adder may take come from the new one's block.
const BLOCK: u64 = 512;
/// Churned (dropped and reallocated) locks in one run (each: a new
/// identity and at most a few new edges).
const CHURN_CAP: u64 = 20_000;
/// Locks in a churn thread's chain.
const CHURN_CHAIN: usize = 5;
/// Fresh locks the fork test's adders make, and may make per fork.
const FORK_FRESH_CAP: u64 = 10_000;
const FORK_STEP: u64 = 64;

/// Synthetic lock addresses: never a real object (above the user address
/// space), so never in a report's symbol lookup nor reused by the heap.
const FRESH_BASE: usize = 0x5eed_0000_0000_0000;
const FORK_BASE: usize = 0x5eee_0000_0000_0000;
const CHILD_BASE: usize = 0x5eef_0000_0000_0000;

// ---------------------------------------------------------------------------
// Set-up shared by the tests
// ---------------------------------------------------------------------------

/// The tests count process-wide reports: one at a time.
static SERIAL: StdMutex<()> = StdMutex::new(());

/// Validation on, reports to a temp file (set once, before any report).
fn report_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let p =
            std::env::temp_dir().join(format!("klock-torture-lockdep-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&p);
        // SAFETY: set before validation is on and before this test's
        // threads exist; the other test waits on SERIAL, and nothing else
        // in this process reads the variable.
        unsafe { std::env::set_var("KLOCK_LOCKDEP_FILE", &p) };
        lockdep::set_enabled(true, false);
        p
    })
}

/// The report file's text from byte `from` on.
fn reports_since(from: usize) -> String {
    let b = std::fs::read(report_file()).unwrap_or_default();
    String::from_utf8_lossy(&b[from.min(b.len())..]).into_owned()
}

fn report_file_len() -> usize {
    std::fs::metadata(report_file()).map_or(0, |m| m.len() as usize)
}

/// One report parsed: its header line and the addresses of the locks it
/// names (its `  L<n>  0x...` lines).
struct Report {
    header: String,
    locks: Vec<usize>,
}

fn parse_reports(text: &str) -> Vec<Report> {
    let mut out: Vec<Report> = Vec::new();
    for line in text.lines() {
        if line.contains("possible deadlock") {
            out.push(Report {
                header: line.to_string(),
                locks: Vec::new(),
            });
            continue;
        }
        let mut w = line.split_whitespace();
        if let (Some(l), Some(a)) = (w.next(), w.next())
            && l.starts_with('L')
            && let Some(hex) = a.strip_prefix("0x")
            && let Some(r) = out.last_mut()
        {
            r.locks
                .push(usize::from_str_radix(hex, 16).expect("a lock line's address"));
        }
    }
    out
}

fn lock_at(addr: usize) -> Lock {
    lockdep::lock_at(addr).unwrap_or_else(|| {
        panic!(
            "lockdep::lock_at({addr:#x}): untracked (tables full? untracked = {})",
            lockdep::untracked()
        )
    })
}

/// A preemption window between the hooks and the lock (with the `chaos`
/// feature; the validator itself has no marks of its own).
fn window() {
    chaos::point(chaos::Site::ListEdit);
}

/// The hooks of a blocking acquisition of `l` in `mode` around `acquire`.
fn wait_for<R>(l: Lock, mode: Mode, acquire: impl FnOnce() -> R) -> R {
    let recursive = mode == Mode::ReadPassing;
    window();
    lockdep::before_wait(l, mode, recursive);
    window();
    let g = acquire();
    window();
    lockdep::taken(l, mode, recursive, false);
    g
}

/// The hook of a successful try.
fn tried(l: Lock, mode: Mode) {
    window();
    lockdep::taken(l, mode, mode == Mode::ReadPassing, true);
}

/// The hook of a release (after the unlock).
fn released(l: Lock) {
    window();
    lockdep::released(l);
}

/// With klock's feature `lockdep` its locks call the hooks themselves (a
/// lock's identity is its raw lock's address, as here); without it this
/// test calls them around the real locks.
const HOOKED: bool = cfg!(feature = "lockdep");

/// A blocking acquisition of the real lock at `addr`.
fn real_wait<R>(addr: usize, mode: Mode, acquire: impl FnOnce() -> R) -> R {
    if HOOKED {
        acquire()
    } else {
        wait_for(lock_at(addr), mode, acquire)
    }
}

/// A successful try of the real lock at `addr`.
fn real_tried(addr: usize, mode: Mode) {
    if !HOOKED {
        tried(lock_at(addr), mode);
    }
}

/// The real lock at `addr` is about to be released (as klock's hook, before
/// the unlock).
fn real_release(addr: usize) {
    if !HOOKED {
        released(lockdep::lock_at_known(addr).expect("a held lock has an identity"));
    }
}

/// The identity address of a klock mutex or rwlock: its raw lock's.
fn mutex_addr<T>(m: &Mutex<T>) -> usize {
    // SAFETY: only the address is used.
    addr_of(unsafe { m.raw() })
}

fn rwlock_addr<T>(r: &RwLock<T>) -> usize {
    // SAFETY: only the address is used.
    addr_of(unsafe { r.raw() })
}

/// The hook of a lock's end (before its memory is freed or reused).
fn forget(addr: usize) {
    window();
    lockdep::forget(addr);
    window();
}

fn addr_of<T>(r: &T) -> usize {
    r as *const T as usize
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".into())
}

/// How much of `cap` may be used `elapsed` into a run of `run`.
fn paced(cap: u64, elapsed: Duration, run: Duration) -> u64 {
    let run = run.max(Duration::from_millis(100));
    ((cap as u128 * elapsed.as_nanos() / run.as_nanos()) as u64).min(cap)
}

// ---------------------------------------------------------------------------
// The pool
// ---------------------------------------------------------------------------

/// Data in each pool mutex: a plain counter updated with a slow
/// read-modify-write, and a flag that detects two holders at once.
#[derive(Default)]
struct Data {
    counter: u64,
    inside: bool,
}

enum PoolLock {
    M(Mutex<Data>),
    /// Two words written together (a reader compares them).
    Rw(RwLock<(u64, u64)>),
}

struct Slot {
    lock: PoolLock,
    /// Write sections done (the counter must equal it at the end).
    writes: AtomicU64,
}

impl Slot {
    fn addr(&self) -> usize {
        match &self.lock {
            PoolLock::M(m) => mutex_addr(m),
            PoolLock::Rw(r) => rwlock_addr(r),
        }
    }
}

enum Guard<'a> {
    M(MutexGuard<'a, Data>),
    R(RwLockReadGuard<'a, (u64, u64)>),
    W(RwLockWriteGuard<'a, (u64, u64)>),
}

/// The critical section of a held pool lock.
fn critical(g: &mut Guard<'_>, slot: &Slot, rng: &mut Rng) {
    let hold = |rng: &mut Rng| match rng.below(100) {
        0..=4 => std::thread::yield_now(),
        5..=30 => work(rng.below(500)),
        _ => {}
    };
    match g {
        Guard::M(d) => {
            assert!(!d.inside, "pool mutex: two holders at once");
            d.inside = true;
            let v = d.counter;
            hold(rng);
            d.counter = v + 1;
            d.inside = false;
            slot.writes.fetch_add(1, Relaxed);
        }
        Guard::W(d) => {
            let v = d.0;
            d.0 = v + 1;
            hold(rng);
            d.1 = v + 1;
            slot.writes.fetch_add(1, Relaxed);
        }
        Guard::R(d) => {
            let (a, b) = (d.0, d.1);
            assert_eq!(a, b, "pool rwlock: a read saw a write half done");
            hold(rng);
        }
    }
}

/// Take the pool locks `idx` (ascending) with the hooks, run their critical
/// sections, and release them in random order. Pushes onto `held`, which
/// may already hold synthetic locks (the caller releases those).
fn pool_chain<'a>(pool: &'a [Slot], idx: &[usize], rng: &mut Rng, held: &mut Vec<Hold<'a>>) {
    for &i in idx {
        let slot = &pool[i];
        let l = slot.addr();
        let try_it = rng.below(8) == 0;
        let g = match &slot.lock {
            PoolLock::M(m) => {
                if try_it {
                    match m.try_lock() {
                        Some(g) => {
                            real_tried(l, Mode::Write);
                            Guard::M(g)
                        }
                        None => continue,
                    }
                } else {
                    Guard::M(real_wait(l, Mode::Write, || m.lock()))
                }
            }
            PoolLock::Rw(r) => {
                let read = rng.below(2) == 0;
                // klock's RwLock queues new readers behind a waiting writer:
                // Mode::Read (the mode decides cycles only, and there are none).
                match (read, try_it) {
                    (true, false) => Guard::R(real_wait(l, Mode::Read, || r.read())),
                    (false, false) => Guard::W(real_wait(l, Mode::Write, || r.write())),
                    (true, true) => match r.try_read() {
                        Some(g) => {
                            real_tried(l, Mode::Read);
                            Guard::R(g)
                        }
                        None => continue,
                    },
                    (false, true) => match r.try_write() {
                        Some(g) => {
                            real_tried(l, Mode::Write);
                            Guard::W(g)
                        }
                        None => continue,
                    },
                }
            }
        };
        let mut g = g;
        critical(&mut g, slot, rng);
        held.push(Hold::Real(l, g));
    }
}

/// Release everything in `held`, in random order: the lock (if real), then
/// the hook.
fn release_all(held: &mut Vec<Hold<'_>>, rng: &mut Rng) {
    while !held.is_empty() {
        match held.swap_remove(rng.below(held.len() as u64) as usize) {
            Hold::Fresh(l) => released(l),
            Hold::Real(addr, g) => {
                real_release(addr);
                drop(g);
            }
        }
    }
}

/// A lock held by a chain: a synthetic one (hooks only) or a real one (its
/// identity address and guard).
enum Hold<'a> {
    Fresh(Lock),
    Real(usize, Guard<'a>),
}

/// `k` distinct pool indices, ascending.
fn pick_pool(rng: &mut Rng, k: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..k).map(|_| rng.below(POOL as u64) as usize).collect();
    v.sort_unstable();
    v.dedup();
    v
}

// ---------------------------------------------------------------------------
// The torture run
// ---------------------------------------------------------------------------

const PHASES: [&str; 5] = [
    "warm-up (all roles)",
    "deliberate cycles (with all roles going on)",
    "after the cycles (all roles)",
    "stopping (joining workers)",
    "final checks",
];
const DOING: [&str; 6] = [
    "pool chain",
    "adding new edges",
    "churn (forget and reuse)",
    "deliberate cycle",
    "finished",
    "starting",
];
const D_POOL: usize = 0;
const D_ADD: usize = 1;
const D_CHURN: usize = 2;
const D_CYCLE: usize = 3;
const FINISHED: usize = 4;
const STARTING: usize = 5;

/// What the watchdog reads.
struct Progress {
    phase: AtomicUsize,
    ops: Vec<AtomicU64>,
    doing: Vec<AtomicUsize>,
    failure: StdMutex<Option<String>>,
}

struct Shared {
    pool: Vec<Slot>,
    stop: AtomicBool,
    start: Instant,
    run: Duration,
    /// Fresh locks handed out (sequence numbers).
    fresh: AtomicU64,
    /// Churned locks so far, and how many came back at the same address.
    churned: AtomicU64,
    reused: AtomicU64,
    /// Churned locks taken over from another churn thread.
    handed: AtomicU64,
    /// Dropped (forgotten) churn locks waiting to be made again in place:
    /// the lock, its identity before, the churn thread that dropped it.
    graveyard: StdMutex<Vec<Grave>>,
    cycles_done: AtomicUsize,
    /// The deliberate pairs' addresses.
    pairs: StdMutex<Vec<(usize, usize)>>,
}

type Grave = (Box<Mutex<u64>>, Option<Lock>, usize);

fn fresh_addr(seq: u64) -> usize {
    FRESH_BASE + seq as usize * 64
}

/// An adder's operation: a new fresh lock, older fresh locks of its block
/// (newer first), pool locks (ascending). False if the pacing or the cap
/// said no (the caller does a pool chain instead).
fn add_edges(s: &Shared, rng: &mut Rng) -> bool {
    let allowed = paced(FRESH_CAP, s.start.elapsed(), s.run);
    if s.fresh.load(Relaxed) >= allowed {
        return false;
    }
    let seq = s.fresh.fetch_add(1, Relaxed);
    if seq >= FRESH_CAP {
        return false;
    }
    let mut chain = vec![seq];
    let block = seq & !(BLOCK - 1);
    if seq > block {
        let mut older: Vec<u64> = (0..rng.below(3))
            .map(|_| block + rng.below(seq - block))
            .collect();
        older.sort_unstable_by(|a, b| b.cmp(a));
        older.dedup();
        chain.extend(older);
    }
    let mut held: Vec<Hold<'_>> = Vec::new();
    for q in chain {
        let l = lock_at(fresh_addr(q));
        let mode = match rng.below(4) {
            0 => Mode::Read,
            1 => Mode::ReadPassing,
            _ => Mode::Write,
        };
        if rng.below(6) == 0 {
            tried(l, mode);
        } else {
            wait_for(l, mode, || ());
        }
        held.push(Hold::Fresh(l));
    }
    let k = rng.below(3) as usize;
    let idx = pick_pool(rng, k);
    pool_chain(&s.pool, &idx, rng, &mut held);
    release_all(&mut held, rng);
    true
}

/// A churn thread's private chain.
// Boxed: each lock is its own heap object, freed and reallocated alone.
#[allow(clippy::vec_box)]
struct Churn {
    me: usize,
    locks: Vec<Box<Mutex<u64>>>,
    /// Increments done under each (the lock's value must match).
    counts: Vec<u64>,
}

impl Churn {
    fn new(me: usize) -> Churn {
        Churn {
            me,
            locks: (0..CHURN_CHAIN).map(|_| Box::new(Mutex::new(0))).collect(),
            counts: vec![0; CHURN_CHAIN],
        }
    }

    fn round(&mut self, s: &Shared, rng: &mut Rng) {
        let mut held = Vec::new();
        for (m, c) in self.locks.iter().zip(&mut self.counts) {
            let l = mutex_addr(m);
            let mut g = if rng.below(6) == 0 {
                let Some(g) = m.try_lock() else { continue };
                real_tried(l, Mode::Write);
                g
            } else {
                real_wait(l, Mode::Write, || m.lock())
            };
            *g += 1;
            *c += 1;
            assert_eq!(*g, *c, "churn mutex: lost update");
            held.push((l, g));
        }
        for (l, g) in held.into_iter().rev() {
            real_release(l);
            drop(g);
        }
        let allowed = paced(CHURN_CAP, s.start.elapsed(), s.run);
        if s.churned.load(Relaxed) >= allowed || s.churned.fetch_add(1, Relaxed) >= CHURN_CAP {
            // Ahead of the pace: give the CPU to the pool's lock holders
            // (private chains never wait, and would hog it).
            std::thread::yield_now();
            return;
        }
        // Drop one (forget first, as a lock's drop does) and make another:
        // a new allocation (usually at the same address), or a lock another
        // churn thread dropped, made again in place (its address a new lock
        // on this thread, as after a free and a malloc elsewhere). Either
        // way an address seen before must be a new lock now.
        let i = rng.below(CHURN_CHAIN as u64) as usize;
        let old = self.locks.remove(i);
        let old_addr = mutex_addr(&old);
        let old_id = lockdep::lock_at_known(old_addr);
        assert!(old_id.is_some(), "churn: a lock taken had no identity");
        forget(old_addr);
        assert_eq!(
            lockdep::lock_at_known(old_addr),
            None,
            "churn: forget kept the identity"
        );
        let (new, before) = if rng.below(2) == 0 {
            // A stock of dropped locks, so that most come from another
            // thread.
            let mut grave = s.graveyard.lock().unwrap();
            grave.push((old, old_id, self.me));
            if grave.len() <= 16 {
                drop(grave);
                (Box::new(Mutex::new(0)), None)
            } else {
                let k = rng.below(grave.len() as u64) as usize;
                let (mut b, id, owner) = grave.swap_remove(k);
                drop(grave);
                *b = Mutex::new(0);
                if owner != self.me {
                    s.handed.fetch_add(1, Relaxed);
                }
                (b, id)
            }
        } else {
            drop(old);
            let b = Box::new(Mutex::new(0));
            let id = (mutex_addr(&b) == old_addr).then_some(old_id).flatten();
            (b, id)
        };
        let new_id = lock_at(mutex_addr(&new));
        if before.is_some() {
            s.reused.fetch_add(1, Relaxed);
            assert_ne!(
                Some(new_id),
                before,
                "churn: a reused address kept its identity"
            );
        }
        self.locks.insert(i, new);
        self.counts[i] = 0;
    }

    /// Drop the chain as locks do: forget, then free.
    fn end(self) {
        for m in self.locks {
            forget(mutex_addr(&m));
            drop(m);
        }
    }
}

/// A private pair, A then B and later B then A, holding nothing else: on
/// this thread (`own`) or on two helper threads joined in turn. Exactly one
/// report.
fn deliberate_cycle(s: &Shared, own: bool) {
    // Leaked: their addresses stay theirs for the life of the process.
    let a: &'static Mutex<u64> = Box::leak(Box::new(Mutex::new(0)));
    let b: &'static Mutex<u64> = Box::leak(Box::new(Mutex::new(0)));
    s.pairs.lock().unwrap().push((mutex_addr(a), mutex_addr(b)));
    let order = move |x: &'static Mutex<u64>, y: &'static Mutex<u64>| {
        move || {
            let (lx, ly) = (mutex_addr(x), mutex_addr(y));
            let mut gx = real_wait(lx, Mode::Write, || x.lock());
            let mut gy = real_wait(ly, Mode::Write, || y.lock());
            *gx += 1;
            *gy += 1;
            real_release(ly);
            drop(gy);
            real_release(lx);
            drop(gx);
        }
    };
    if own {
        order(a, b)();
        order(b, a)();
    } else {
        std::thread::spawn(order(a, b)).join().unwrap();
        std::thread::spawn(order(b, a)).join().unwrap();
    }
    assert_eq!((*a.lock(), *b.lock()), (2, 2));
}

/// A pool worker's operation: a chain of one to five pool locks.
fn pool_op(s: &Shared, rng: &mut Rng) {
    let mut held = Vec::new();
    let k = 1 + rng.below(5) as usize;
    let idx = pick_pool(rng, k);
    pool_chain(&s.pool, &idx, rng, &mut held);
    release_all(&mut held, rng);
}

fn worker(i: usize, s: &Shared, p: &Progress) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((i as u64 + 1) * 0x1234_5678_9abc));
    let role = match i % 4 {
        0 | 1 => D_POOL,
        2 => D_ADD,
        _ => D_CHURN,
    };
    let mut churn = (role == D_CHURN).then(|| Churn::new(i));
    let mut cycled = false;
    while !s.stop.load(Relaxed) {
        if !cycled && p.phase.load(Relaxed) >= 1 {
            p.doing[i].store(D_CYCLE, Relaxed);
            deliberate_cycle(s, i.is_multiple_of(2));
            cycled = true;
            s.cycles_done.fetch_add(1, Relaxed);
        }
        p.doing[i].store(role, Relaxed);
        match role {
            D_ADD => {
                if !add_edges(s, &mut rng) {
                    p.doing[i].store(D_POOL, Relaxed);
                    pool_op(s, &mut rng);
                }
            }
            D_CHURN => churn.as_mut().unwrap().round(s, &mut rng),
            _ => pool_op(s, &mut rng),
        }
        p.ops[i].fetch_add(1, Relaxed);
    }
    if let Some(c) = churn {
        c.end();
    }
    p.doing[i].store(FINISHED, Relaxed);
}

fn body(p: Arc<Progress>, run: Duration) {
    let n = p.ops.len();
    report_file();
    let file_from = report_file_len();
    let reports_before = lockdep::reports();
    let untracked_before = lockdep::untracked();
    let s = Arc::new(Shared {
        pool: (0..POOL)
            .map(|i| Slot {
                lock: if i % 4 == 3 {
                    PoolLock::Rw(RwLock::new((0, 0)))
                } else {
                    PoolLock::M(Mutex::new(Data::default()))
                },
                writes: AtomicU64::new(0),
            })
            .collect(),
        stop: AtomicBool::new(false),
        start: Instant::now(),
        run,
        fresh: AtomicU64::new(0),
        churned: AtomicU64::new(0),
        reused: AtomicU64::new(0),
        handed: AtomicU64::new(0),
        graveyard: StdMutex::new(Vec::new()),
        cycles_done: AtomicUsize::new(0),
        pairs: StdMutex::new(Vec::new()),
    });
    // New locks at these addresses (a lock's init).
    for slot in &s.pool {
        forget(slot.addr());
    }
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (s, p) = (s.clone(), p.clone());
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| worker(i, &s, &p)));
                if let Err(e) = r {
                    let mut f = p.failure.lock().unwrap_or_else(|e| e.into_inner());
                    f.get_or_insert_with(|| format!("thread {i} panicked: {}", panic_message(&*e)));
                    s.stop.store(true, Relaxed);
                }
            })
        })
        .collect();
    let stopping = || s.stop.load(Relaxed);
    while s.start.elapsed() < run / 2 && !stopping() {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Every thread closes its cycle while the others go on; wait for the
    // event (the watchdog catches a thread that never gets there).
    p.phase.store(1, Relaxed);
    while s.cycles_done.load(Relaxed) < n && !stopping() {
        std::thread::sleep(Duration::from_millis(5));
    }
    p.phase.store(2, Relaxed);
    while s.start.elapsed() < run && !stopping() {
        std::thread::sleep(Duration::from_millis(10));
    }
    p.phase.store(3, Relaxed);
    s.stop.store(true, Relaxed);
    for h in hs {
        h.join().expect("worker thread");
    }
    if let Some(f) = p.failure.lock().unwrap().take() {
        panic!("{f}");
    }
    p.phase.store(4, Relaxed);

    // The locks the validator watched: exclusion held, nothing lost.
    for (i, slot) in s.pool.iter().enumerate() {
        let w = slot.writes.load(Relaxed);
        match &slot.lock {
            PoolLock::M(m) => {
                assert!(!m.is_locked(), "pool mutex {i} left locked");
                let d = m.lock();
                assert!(!d.inside, "pool mutex {i}: inside flag left set");
                assert_eq!(d.counter, w, "pool mutex {i}: lost update");
            }
            PoolLock::Rw(r) => {
                let d = r.write();
                assert_eq!(*d, (w, w), "pool rwlock {i}: lost or torn update");
            }
        }
    }
    for slot in &s.pool {
        forget(slot.addr());
    }
    assert_eq!(
        lockdep::untracked(),
        untracked_before,
        "locks went untracked (the run's budgets should keep inside the tables)"
    );

    // The deliberate cycles, each reported once, and nothing else.
    let cycles = s.cycles_done.load(Relaxed);
    assert_eq!(cycles, n, "every thread closes one cycle");
    let made = lockdep::reports() - reports_before;
    let text = reports_since(file_from);
    let lines = text
        .lines()
        .filter(|l| l.contains("possible deadlock"))
        .count();
    let reports = parse_reports(&text);
    let pairs = s.pairs.lock().unwrap().clone();
    let mut named = vec![0usize; pairs.len()];
    let mut stray = Vec::new();
    for r in &reports {
        let mut locks = r.locks.clone();
        locks.sort_unstable();
        match pairs.iter().position(|&(a, b)| {
            let mut ab = [a, b];
            ab.sort_unstable();
            locks == ab
        }) {
            Some(k) if r.header.contains("cycle of 2 locks") => named[k] += 1,
            _ => stray.push(format!("{} {:x?}", r.header, r.locks)),
        }
    }
    let unnamed: Vec<_> = (0..pairs.len()).filter(|&k| named[k] != 1).collect();
    assert!(
        made == n as u64 && lines == n && stray.is_empty() && unnamed.is_empty(),
        "{n} deliberate cycles: reports() counted {made}, the file has {lines} \
         report lines; reports naming anything but one pair: {stray:#?}; pairs not \
         named exactly once: {unnamed:?} (counts {named:?})\n--- report file ---\n{text}"
    );
    let _ = std::fs::remove_file(report_file());
    let fresh = s.fresh.load(Relaxed).min(FRESH_CAP);
    let churned = s.churned.load(Relaxed).min(CHURN_CAP);
    let ops = |r: &[usize]| -> u64 {
        (0..n)
            .filter(|i| r.contains(&(i % 4)))
            .map(|i| p.ops[i].load(Relaxed))
            .sum()
    };
    let (pool, adds, churns) = (ops(&[0, 1]), ops(&[2]), ops(&[3]));
    let writes: u64 = s.pool.iter().map(|x| x.writes.load(Relaxed)).sum();
    eprintln!(
        "torture_lockdep: {n} threads; ops: pool {pool} ({writes} write sections), adders \
         {adds}, churn {churns}; {fresh} fresh locks added, {churned} \
         locks churned ({} at an address seen before, {} taken over from another thread), \
         {made} reports for {n} cycles",
        s.reused.load(Relaxed),
        s.handed.load(Relaxed)
    );
}

/// Run the body on a helper thread; fail (panic) on a worker panic, on a
/// thread without progress for `stall`, or after `limit`, instead of hanging.
fn watchdog(threads: usize, run: Duration, stall: Duration, limit: Duration) {
    let p = Arc::new(Progress {
        phase: AtomicUsize::new(0),
        ops: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        doing: (0..threads).map(|_| AtomicUsize::new(STARTING)).collect(),
        failure: StdMutex::new(None),
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let p2 = p.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| body(p2, run)));
        let _ = tx.send(r);
    });
    let start = Instant::now();
    let mut last: Vec<(u64, Instant)> = (0..threads).map(|_| (0, start)).collect();
    let fail = |why: String| -> ! {
        let mut report = String::new();
        for (i, (o, d)) in p.ops.iter().zip(&p.doing).enumerate() {
            report += &format!(
                "\n  thread {i:3}: {:8} ops, now: {}",
                o.load(Relaxed),
                DOING.get(d.load(Relaxed)).unwrap_or(&"?")
            );
        }
        panic!(
            "torture_lockdep: {why}\n  phase: {}\n  elapsed: {:?}\n  reports so far: {}\n  \
             chaos: {} seed {} (replay with KLOCK_CHAOS_SEED={}){report}",
            PHASES[p.phase.load(Relaxed).min(PHASES.len() - 1)],
            start.elapsed(),
            lockdep::reports(),
            if chaos::ENABLED { "on" } else { "off" },
            chaos::seed(),
            chaos::seed(),
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
        let now = Instant::now();
        if now - start > limit {
            fail(format!("did not finish within {limit:?} (hang)"));
        }
        for (i, l) in last.iter_mut().enumerate() {
            let o = p.ops[i].load(Relaxed);
            if o != l.0 || p.doing[i].load(Relaxed) == FINISHED {
                *l = (o, now);
            } else if now - l.1 > stall {
                fail(format!(
                    "thread {i} made no progress for {stall:?} (a hang in the validator or a lock)"
                ));
            }
        }
    }
}

#[test]
fn torture_lockdep() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mult = env_u64("KLOCK_TORTURE_MULT", 8).max(1) as usize;
    let secs = env_u64("KLOCK_TORTURE_SECS", 3);
    let stall = env_u64("KLOCK_TORTURE_STALL_SECS", 120).max(1);
    let threads = (mult * klock::internal::wait::effective_cpus()).max(4);
    let seed = chaos::seed();
    eprintln!(
        "torture_lockdep: {threads} threads ({mult} x {} effective CPUs) for {secs} s; chaos {} \
         (seed {seed}); reports to {}",
        klock::internal::wait::effective_cpus(),
        if chaos::ENABLED { "on" } else { "off" },
        report_file().display(),
    );
    watchdog(
        threads,
        Duration::from_secs(secs),
        Duration::from_secs(stall),
        Duration::from_secs(secs + stall + 60),
    );
}

// ---------------------------------------------------------------------------
// Fork
// ---------------------------------------------------------------------------

/// Wait for `pid`, killing it after `limit`; its wait status or a failure.
fn wait_child(pid: libc::pid_t, limit: Duration) -> Result<i32, String> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: plain syscall on our own child; `status` is a live i32.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Ok(status);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("waitpid({pid}): {e}"));
            }
        }
        if start.elapsed() > limit {
            // SAFETY: kill and reap our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!(
                "child {pid} did not exit within {limit:?} (hung on the validator's state \
                 inherited from the parent?)"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The child's work: a new edge between two new locks, one from a new lock
/// into the parent's graph (`into`, a fresh lock the adders made), and a
/// cycle of its own (one report, written to the report file). Exit code: 0
/// good, 2 wrong report count.
fn child_body(round: usize, into: usize) -> i32 {
    let base = CHILD_BASE + round * 0x1000;
    let (a, b) = (lock_at(base), lock_at(base + 64));
    let old = lock_at(into);
    let before = lockdep::reports();
    let take = |x: Lock, y: Lock| {
        wait_for(x, Mode::Write, || ());
        wait_for(y, Mode::Write, || ());
        released(y);
        released(x);
    };
    take(a, b);
    take(b, old);
    if lockdep::reports() != before {
        return 2;
    }
    take(b, a);
    if lockdep::reports() != before + 1 {
        return 2;
    }
    0
}

/// Write with one `write(2)` (no Rust stderr lock, which a thread of the
/// parent may have held at the fork).
fn child_say(msg: &str) {
    // SAFETY: writes `msg.len()` bytes from a live buffer to fd 2.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

#[test]
fn fork_while_threads_add_edges() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rounds = env_u64("KLOCK_FORK_TEST_ROUNDS", 20) as usize;
    let limit = Duration::from_secs(env_u64("KLOCK_TORTURE_STALL_SECS", 120).max(1));
    report_file();
    let file_from = report_file_len();
    let reports_before = lockdep::reports();
    let stop = Arc::new(AtomicBool::new(false));
    let fresh = Arc::new(AtomicU64::new(0));
    // Fresh locks the adders may make so far: raised by the parent before
    // each fork, so that every fork lands while edges are being added.
    let allowed = Arc::new(AtomicU64::new(0));
    let addr = |seq: u64| FORK_BASE + seq as usize * 64;
    // Adders: a new lock, then up to two older ones of its block (newer
    // first): new edges, an acyclic order, searches over the block.
    let adders: Vec<_> = (0..4)
        .map(|t| {
            let (stop, fresh, allowed) = (stop.clone(), fresh.clone(), allowed.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x5151_7e57 ^ ((t + 1) * 0x9e37_79b9));
                while !stop.load(Relaxed) {
                    let seq = fresh.load(Relaxed);
                    if seq >= allowed.load(Relaxed)
                        || fresh
                            .compare_exchange(seq, seq + 1, Relaxed, Relaxed)
                            .is_err()
                    {
                        std::thread::yield_now();
                        continue;
                    }
                    let block = seq & !(BLOCK - 1);
                    let mut chain = vec![seq];
                    if seq > block {
                        let mut older: Vec<u64> = (0..1 + rng.below(2))
                            .map(|_| block + rng.below(seq - block))
                            .collect();
                        older.sort_unstable_by(|a, b| b.cmp(a));
                        older.dedup();
                        chain.extend(older);
                    }
                    let ls: Vec<Lock> = chain.iter().map(|&q| lock_at(addr(q))).collect();
                    for &l in &ls {
                        wait_for(l, Mode::Write, || ());
                    }
                    for &l in ls.iter().rev() {
                        released(l);
                    }
                }
            })
        })
        .collect();
    let mut failures = Vec::new();
    for round in 0..rounds {
        // Let the adders go on (and be mid-edge) at the fork.
        let at = fresh.load(Relaxed);
        allowed.store((at + FORK_STEP).min(FORK_FRESH_CAP), Relaxed);
        while fresh.load(Relaxed) < (at + 8).min(FORK_FRESH_CAP) {
            std::thread::yield_now();
        }
        let into = addr(fresh.load(Relaxed).saturating_sub(1));
        // SAFETY: fork() in a multithreaded process. The child uses only the
        // validator's hooks (no allocation), the report file and _exit; every
        // path ends in `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let code = match std::panic::catch_unwind(AssertUnwindSafe(|| child_body(round, into)))
            {
                Ok(c) => c,
                Err(p) => {
                    child_say(&format!(
                        "fork child (round {round}) panicked: {}\n",
                        panic_message(&*p)
                    ));
                    1
                }
            };
            // SAFETY: leave the child at once, without the parent's atexit
            // handlers or unwinding into the harness.
            unsafe { libc::_exit(code) };
        }
        match wait_child(pid, limit) {
            Ok(st) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 => {}
            Ok(st) => failures.push(format!("round {round}: child {pid} status {st:#x}")),
            Err(e) => failures.push(format!("round {round}: {e}")),
        }
        if !failures.is_empty() {
            break;
        }
    }
    stop.store(true, Relaxed);
    for a in adders {
        a.join().unwrap();
    }
    assert!(failures.is_empty(), "fork children failed: {failures:#?}");
    // The children's reports (one each, from their pids); none in the parent.
    assert_eq!(lockdep::reports(), reports_before, "a report in the parent");
    let text = reports_since(file_from);
    let reports = parse_reports(&text);
    assert_eq!(
        reports.len(),
        rounds,
        "one report per child\n--- report file ---\n{text}"
    );
    let me = format!("in pid {} ", std::process::id());
    for r in &reports {
        assert!(
            !r.header.contains(&me) && r.header.contains("cycle of 2 locks") && r.locks.len() == 2,
            "a child's report: {} {:x?}",
            r.header,
            r.locks
        );
        assert!(
            r.locks.iter().all(|&a| a >= CHILD_BASE),
            "a child's report names a lock not its own: {:x?}",
            r.locks
        );
    }
    let _ = std::fs::remove_file(report_file());
    eprintln!(
        "torture_lockdep: {rounds} forks while {} fresh locks were added; every child recorded \
         its edges and reported its cycle",
        fresh.load(Relaxed)
    );
}

//! Loom models of the uncontended paths the C layer and the interposer take
//! before any dispatch: `RawRwLock::try_unlock_uncontended` (the rwlock's one
//! unlock: the writer's `(0,X) -> (0,0)` or a reader's plain `(n,..) ->
//! (n-1,..)`, else `None` and the full `unlock_any`, as
//! `klock_c::core::rwlock::KRwLock::unlock_fast` / `unlock` do), and
//! `RawMutex::try_lock_uncontended` / `try_unlock_uncontended` (one CAS
//! each, else the full `lock` / `unlock`, as `KMutex::lock_fast` /
//! `unlock_fast`).
//!
//! Models (each checks exclusion, no lost wake-up and a clean word; see
//! below):
//! 1. `writer_fast_unlock_vs_{lock_shared,try_lock_shared,pref_reader}`: a
//!    writer (C `wrlock`: `try_lock_exclusive`, else `lock_exclusive`)
//!    releasing through the fast unlock races a reader of each kind, which
//!    also releases through it. The reader's optimistic add
//!    (`lock_shared`'s `fetch_add`, the reader-preferring slow entry's) may
//!    sit on `(0,X)` when the writer unlocks: not the writer's to take.
//! 2. `writer_fast_unlock_two_writers_reader`: main holds the write lock
//!    while a fair reader and a second writer (the blocking write lock: its
//!    `wrlock_fast` would fail) arrive; all three release through the fast
//!    unlock (queued writers, hand-off, the reader's grant).
//! 3. `reader_fast_unlock_wakes_writer`: main read-holds, a writer queues,
//!    main releases through the fast unlock: as the last reader with
//!    WAITERS it must not take the plain CAS (INV-WAKE-ADDR), else the
//!    writer sleeps forever.
//! 4. `two_readers_fast_unlock_wake_writer`: two readers hold at once (the
//!    second is reader-preferring, admitted past the waiting writer), a
//!    writer queues; both release through the fast unlock in either order:
//!    the first may take the plain CAS (`readers > 1`), the last may not.
//! 5. `mutex_fast_two_lockers`: two threads lock through
//!    `try_lock_uncontended` (else `lock`) and unlock through
//!    `try_unlock_uncontended` (else `unlock`).
//! 6. `mutex_fast_vs_sleeper`: a fast locker (twice: it may steal the lock
//!    from the woken waiter, which then asks for the hand-off) beside a
//!    plain blocking `lock` that sleeps (no spinning): the fast unlock meets
//!    WAITERS / WAKING / HANDOFF and must leave the release to `unlock`.
//! 7. `mutex_fast_beside_sleeper`: two fast lockers beside a sleeping plain
//!    locker.
//!
//! Run: `.ci/loom --test loom_fastpath` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! Preemption bounds: the two-thread models (1, 3, 5, 6) run at
//! `LOOM_MAX_PREEMPTIONS` (2 by default, as CI sets it). The three-thread
//! models (2, 4, 7) run at 1, as `loom_rwlock.rs`'s three-thread models do.
//! At 1, model 2 is the slow one (about 150 000 executions, 20 s in release
//! on two CPUs; the fast paths' extra Relaxed loads multiply the
//! interleavings); at 2, model 4 takes 285 000 executions (35 s) and model 7
//! passes loom's branch limit (1000). No chaos torture test covers these
//! fast paths beyond bound 1: `.ci/run`'s chaos step runs `klock`'s
//! `tests/torture_*.rs`, which lock through the `lock_api` guards (never
//! `try_unlock_uncontended` or `try_lock_uncontended`) and take no
//! reader-preferring read.
//!
//! Each model also names the lock events of the slow-path branches its
//! fast paths are claimed to meet (a reader queued and granted, a writer
//! asleep, a mutex hand-off asked for and made) and fails unless some
//! execution counted each (`--features stats`, as CI builds the loom tests).
//!
//! What each model checks: the futex is modelled exactly (see
//! `klock::internal::wait`), so a waiter nobody wakes blocks forever and loom reports
//! a deadlock (no lost wake-up); loom's `UnsafeCell` reports a write
//! overlapping another access, or one not ordered before a later access
//! (exclusion, and the Acquire/Release of the fast CASes); the rwlock's
//! fast unlock must report the side the caller holds (a writer's
//! `Some(false)` would also skew the C layer's read-locks-held count); and
//! the lock word is 0 at the end (no reader count, WRITER or flag left
//! behind).
//!
//! Each model fails when the code under test is broken (checked by hand,
//! not kept), at these bounds:
//! - the writer's branch letting a count other than exactly `(0,X)` fall
//!   through to the read CAS (the code before 1cd3cb5): models 1
//!   (`lock_shared`, `pref_reader`) and 2, "writer released a read lock"
//!   (without that assertion, loom's deadlock); `try_lock_shared` never
//!   leaves an optimistic count, so its model 1 passes. Dropping only the
//!   `c != WRITER` guard (any WRITER count goes to `unlock_exclusive`,
//!   whose failing CAS takes the full release) is harmless and passes;
//! - the read branch ignoring `is_plain_read_release`: models 1 to 4,
//!   deadlock (the queued writer never woken);
//! - the read branch's CAS Relaxed instead of Release: models 1 to 4,
//!   causality violation;
//! - the mutex fast unlock clearing flags it does not own (`(me,F) ->
//!   (0,0)`): models 5 to 7, deadlock; either mutex fast CAS Relaxed:
//!   models 5 to 7, causality violation.
//!
//! Tunables (one process, so one set for the whole file): those of
//! `loom_rwlock.rs` (`rwsem_handoff_ns = 0`: a woken first writer that fails
//! its re-try asks for the hand-off at once, so HANDOFF is reachable;
//! `rwsem_rspin_ns = 0`) and of `loom_mutex.rs` (`mutex_handoff_ns = 0`: a
//! woken mutex waiter that fails asks for the hand-off, which the fast
//! unlock must leave to `unlock`). Threads lease their node slot when they
//! start ([`SlotGate`]).
#![cfg(loom)]

use klock::internal::mutex::RawMutexInternals as _;
use klock::internal::rwlock::RawRwLockInternals as _;
use klock::{RawMutex, internal::mutex::SpinOff as MutexSpinOff};
use klock::{RawRwLock, SpinOff};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

mod loom_common;
use klock::stat::Event;
use loom_common::{Branch, SlotGate, lease, loom_tunables, run_model_reaching, spawn, until};

/// Runs a model at `LOOM_MAX_PREEMPTIONS` (default 2), capped at
/// `max_bound`, with this file's tunables, and fails unless every event in
/// `reach` was counted in some execution (the slow-path branches the model
/// claims its fast paths meet; `--features stats`). The model spawns its
/// threads with [`spawn`] through the [`SlotGate`] it is given; the calling
/// (main) thread has leased its node slot and id first.
fn model(max_bound: usize, reach: &[Event], f: impl Fn(&Arc<SlotGate>) + Sync + Send + 'static) {
    let mut t = loom_tunables();
    // rwlock: loom's clock is 0, a first writer that fails a re-try asks for
    // the hand-off at once; writers spinning on readers: no iterations.
    t.rwsem_handoff_ns = 0;
    t.rwsem_rspin_ns = 0;
    // mutex: hand off after the first failed wake-up.
    t.mutex_handoff_ns = 0;
    run_model_reaching(t, max_bound, reach, move || {
        lease();
        f(&Arc::new(SlotGate(AtomicUsize::new(0))))
    });
}

// ---------------------------------------------------------------------------
// rwlock
// ---------------------------------------------------------------------------

/// A rwlock over two fields written together (a torn read shows as
/// `a != b`; loom's `UnsafeCell` reports any write overlapping another
/// access).
struct Rw {
    l: RawRwLock<SpinOff>,
    a: UnsafeCell<usize>,
    b: UnsafeCell<usize>,
}

// SAFETY: `a` and `b` are written only under the write lock and read only
// under a read (or the write) lock; loom checks it.
unsafe impl Sync for Rw {}

/// How a reader takes its read lock (the C layer's `rdlock` paths).
#[derive(Clone, Copy, Debug)]
enum ReadKind {
    /// `lock_shared` (fair read: fetch_add fast path, may queue).
    Plain,
    /// `try_lock_shared` (may fail: then nothing is held).
    Try,
    /// `lock_shared_prefer_readers` (glibc's default kinds).
    Pref,
}

impl Rw {
    fn new() -> Self {
        Rw {
            l: RawRwLock::new(),
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
        }
    }

    /// Read both fields and check they match.
    ///
    /// # Safety
    ///
    /// The caller holds the lock (read or write).
    unsafe fn get(&self) -> usize {
        // SAFETY: the lock is held (caller's contract).
        let a = self.a.with(|p| unsafe { *p });
        // SAFETY: as above.
        let b = self.b.with(|p| unsafe { *p });
        assert_eq!(a, b, "torn read");
        a
    }

    /// Increment both fields (with a scheduling point in between).
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    unsafe fn bump(&self) {
        // SAFETY: the write lock is held (caller's contract).
        self.a.with_mut(|p| unsafe { *p += 1 });
        thread::yield_now();
        // SAFETY: as above.
        self.b.with_mut(|p| unsafe { *p += 1 });
    }

    /// The C layer's one unlock (`KRwLock::unlock_fast`, else `unlock`):
    /// returns `true` if it released the write side.
    ///
    /// # Safety
    ///
    /// The caller holds the lock (read or write).
    unsafe fn c_unlock(&self) -> bool {
        // SAFETY: forwarded (caller's contract).
        match unsafe { self.l.try_unlock_uncontended() } {
            Some(w) => w,
            None => {
                // `KRwLock::unlock`: EPERM on a free lock; we hold it.
                assert!(self.l.is_locked(), "held lock reads free");
                // SAFETY: forwarded.
                unsafe { self.l.unlock_any() }
            }
        }
    }

    /// C `wrlock` (`wrlock_fast`, else the blocking write lock), increment,
    /// C `unlock`; returns the value before.
    fn incr(&self) -> usize {
        let t = self
            .l
            .try_lock_exclusive()
            .unwrap_or_else(|| self.l.lock_exclusive());
        // The C layer keeps no token (`unlock_any` rebuilds it): dropping
        // it releases nothing.
        let _ = t;
        // SAFETY: we hold the write lock.
        unsafe { self.write_and_unlock() }
    }

    /// The blocking write lock alone (C `wrlock` after its `wrlock_fast`
    /// failed), increment, C `unlock`; returns the value before.
    fn incr_blocking(&self) -> usize {
        // The token is dropped (releases nothing): see `incr`.
        let _ = self.l.lock_exclusive();
        // SAFETY: we hold the write lock.
        unsafe { self.write_and_unlock() }
    }

    /// Increment, C `unlock`; returns the value before.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    unsafe fn write_and_unlock(&self) -> usize {
        // SAFETY: write lock held.
        let v = unsafe { self.get() };
        // SAFETY: as above.
        unsafe { self.bump() };
        // SAFETY: we hold the write lock, released once.
        assert!(unsafe { self.c_unlock() }, "writer released a read lock");
        v
    }

    /// Take a read lock of kind `k`: `false` if a try failed (nothing held).
    fn rdlock(&self, k: ReadKind) -> bool {
        match k {
            ReadKind::Plain => {
                self.l.lock_shared();
                true
            }
            ReadKind::Try => self.l.try_lock_shared(),
            ReadKind::Pref => {
                self.l.lock_shared_prefer_readers();
                true
            }
        }
    }

    /// Read-unlock through the C layer's one unlock.
    ///
    /// # Safety
    ///
    /// The caller holds a read lock.
    unsafe fn rdunlock(&self) {
        // SAFETY: forwarded (caller's contract).
        assert!(
            !unsafe { self.c_unlock() },
            "reader released the write lock"
        );
    }

    /// Read lock of kind `k`, read, C unlock: `Some(value)` if it got in.
    fn read(&self, k: ReadKind) -> Option<usize> {
        self.rdlock(k).then(|| {
            // SAFETY: read lock held.
            let v = unsafe { self.get() };
            // SAFETY: taken above, released once.
            unsafe { self.rdunlock() };
            v
        })
    }

    /// The final checks: value `n`, count word 0.
    fn check(&self, n: usize) {
        assert_eq!(self.read(ReadKind::Plain), Some(n));
        assert_eq!(self.l.count_word(), 0, "count word not clean");
    }
}

/// Model 1: a writer releasing through the fast unlock races a reader of
/// kind `k`. Main spawns the reader, then writes (it may find the reader in,
/// queue behind it, or hold the lock while the reader's add sits on
/// `(0,X)`); the reader sees 0 or 1, untorn. Reached: the blocking readers
/// queue and are granted by the writer's unlock; the writer queues behind a
/// reader; a try both succeeds and fails. `got`: the try's outcomes.
fn writer_fast_unlock_vs(k: ReadKind, got: &'static [Branch; 2]) {
    let reach: &[Event] = match k {
        ReadKind::Plain | ReadKind::Pref => &[
            Event::RwSleepReader,
            Event::RwReadGranted,
            Event::RwSleepWriter,
        ],
        ReadKind::Try => &[Event::RwSleepWriter],
    };
    model(2, reach, move |g| {
        let s = Arc::new(Rw::new());
        let s2 = s.clone();
        let h = spawn(g, move || s2.read(k));
        assert_eq!(s.incr(), 0);
        let r = h.join().unwrap();
        got[usize::from(r.is_some())].hit();
        match r {
            // 0 or 1 (the only values written), untorn (`get`).
            Some(_) => {}
            None => assert!(matches!(k, ReadKind::Try), "a blocking read failed"),
        }
        s.check(1);
    });
    if matches!(k, ReadKind::Try) {
        got[0].assert_reached("try_lock_shared failed");
    }
    got[1].assert_reached("the reader got in");
}

#[test]
fn writer_fast_unlock_vs_lock_shared() {
    static GOT: [Branch; 2] = [Branch::new(), Branch::new()];
    writer_fast_unlock_vs(ReadKind::Plain, &GOT);
}

#[test]
fn writer_fast_unlock_vs_try_lock_shared() {
    static GOT: [Branch; 2] = [Branch::new(), Branch::new()];
    writer_fast_unlock_vs(ReadKind::Try, &GOT);
}

#[test]
fn writer_fast_unlock_vs_pref_reader() {
    static GOT: [Branch; 2] = [Branch::new(), Branch::new()];
    writer_fast_unlock_vs(ReadKind::Pref, &GOT);
}

/// Model 2: two writers and a fair reader, everyone releasing through the
/// fast unlock. Main holds the write lock while both arrive (they may
/// queue; the second writer, taking the blocking write lock at once to keep
/// the model small, may fail its re-try and be handed the lock).
/// Exclusion, no lost wake-up, the reader sees 1 or 2, count 0.
#[test]
fn writer_fast_unlock_two_writers_reader() {
    let reach = [
        Event::RwSleepReader,
        Event::RwReadGranted,
        Event::RwHandedOff,
    ];
    model(1, &reach, |g| {
        let s = Arc::new(Rw::new());
        // The token is dropped (releases nothing): see `Rw::incr`.
        let _ = s.l.lock_exclusive();
        let s1 = s.clone();
        let r = spawn(g, move || s1.read(ReadKind::Plain));
        let s2 = s.clone();
        let w = spawn(g, move || s2.incr_blocking());
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: we hold the write lock, released once.
        assert!(unsafe { s.c_unlock() }, "writer released a read lock");
        let v = r.join().unwrap().unwrap();
        assert_eq!(w.join().unwrap(), 1);
        assert!(v == 1 || v == 2, "reader saw {v}");
        s.check(2);
    });
}

/// Model 3: the last reader's fast unlock with a writer queued. Main
/// read-holds; a writer arrives (queues, sets WAITERS, maybe HANDOFF);
/// main yields and releases through the fast unlock. If the release took
/// the plain CAS as the last reader with WAITERS, nobody would wake the
/// writer: loom's deadlock.
#[test]
fn reader_fast_unlock_wakes_writer() {
    model(2, &[Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::new());
        assert!(s.rdlock(ReadKind::Plain));
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        thread::yield_now();
        // SAFETY: read lock held.
        assert_eq!(unsafe { s.get() }, 0);
        // SAFETY: taken above, released once.
        unsafe { s.rdunlock() };
        assert_eq!(w.join().unwrap(), 0);
        s.check(1);
    });
}

/// Model 4: two readers hold at once while a writer queues; both release
/// through the fast unlock, in either order. Main read-holds; a
/// reader-preferring reader gets in beside it (admitted past the waiting
/// writer) and says so; main waits for that, so both hold together; then
/// both release. The first release may be plain (`readers > 1`), the last
/// must wake the writer.
#[test]
fn two_readers_fast_unlock_wake_writer() {
    model(1, &[Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::new());
        let inside = Arc::new(AtomicUsize::new(0));
        assert!(s.rdlock(ReadKind::Plain));
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let (s2, in2) = (s.clone(), inside.clone());
        let r = spawn(g, move || {
            assert!(s2.rdlock(ReadKind::Pref));
            // SAFETY: read lock held.
            let v = unsafe { s2.get() };
            in2.fetch_add(1, Ordering::SeqCst);
            // SAFETY: taken above, released once.
            unsafe { s2.rdunlock() };
            v
        });
        until(&inside, 1);
        // SAFETY: read lock held.
        assert_eq!(unsafe { s.get() }, 0);
        // SAFETY: taken above, released once.
        unsafe { s.rdunlock() };
        assert_eq!(r.join().unwrap(), 0, "the reader got in after the writer");
        assert_eq!(w.join().unwrap(), 0);
        s.check(1);
    });
}

// ---------------------------------------------------------------------------
// mutex
// ---------------------------------------------------------------------------

/// A counter under a mutex, taken the C layer's way or the plain way.
struct M {
    m: RawMutex<MutexSpinOff>,
    data: UnsafeCell<usize>,
}

// SAFETY: `data` is only accessed while `m` is held; loom checks it.
unsafe impl Sync for M {}

impl M {
    fn new() -> Self {
        M {
            m: RawMutex::new(),
            data: UnsafeCell::new(0),
        }
    }

    /// The critical section: increment (with a scheduling point inside).
    ///
    /// # Safety
    ///
    /// The caller holds `m`.
    unsafe fn bump(&self) -> usize {
        // SAFETY: `m` is held (caller's contract).
        let v = self.data.with(|p| unsafe { *p });
        thread::yield_now();
        // SAFETY: as above.
        self.data.with_mut(|p| unsafe { *p = v + 1 });
        v
    }

    /// Lock through `try_lock_uncontended` (else `lock`), increment, unlock
    /// through `try_unlock_uncontended` (else `unlock`).
    fn fast_incr(&self) -> usize {
        let t = self
            .m
            .try_lock_uncontended()
            .unwrap_or_else(|| self.m.lock());
        // SAFETY: held.
        let v = unsafe { self.bump() };
        // SAFETY: we hold it and release it once (by the fast CAS, or else
        // `unlock` with the token).
        if unsafe { self.m.try_unlock_uncontended() } {
            // Released: the token is spent (dropping it releases nothing).
            let _ = t;
        } else {
            // SAFETY: as above.
            unsafe { self.m.unlock(t) };
        }
        v
    }

    /// Plain blocking `lock`, increment, `unlock`.
    fn incr(&self) -> usize {
        let t = self.m.lock();
        // SAFETY: held.
        let v = unsafe { self.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.m.unlock(t) };
        v
    }

    /// The final checks: value `n`, word 0.
    fn check(&self, n: usize) {
        assert_eq!(self.fast_incr(), n);
        assert_eq!(self.m.owner_word(), 0, "mutex word not clean");
    }
}

/// Model 5: two threads locking and unlocking through the fast paths (with
/// their fallbacks, so one may sleep in `lock`).
#[test]
fn mutex_fast_two_lockers() {
    model(2, &[Event::MutexSleep, Event::MutexWake], |g| {
        let s = Arc::new(M::new());
        let s1 = s.clone();
        let h = spawn(g, move || s1.fast_incr());
        let v = s.fast_incr();
        let v1 = h.join().unwrap();
        assert_eq!(v.min(v1), 0);
        assert_eq!(v.max(v1), 1);
        s.check(2);
    });
}

/// Model 6: a fast locker beside a plain blocking locker that sleeps (no
/// spinning). Main takes the lock twice through the fast paths (the second
/// time perhaps stealing it from the woken sleeper, who then asks for the
/// hand-off); its fast unlock meets WAITERS, WAKING or HANDOFF and must
/// leave the release (the wake-up, the hand-off) to `unlock`.
#[test]
fn mutex_fast_vs_sleeper() {
    let reach = [
        Event::MutexSleep,
        Event::MutexHandoffRequest,
        Event::MutexHandoff,
    ];
    model(2, &reach, |g| {
        let s = Arc::new(M::new());
        let s1 = s.clone();
        let h = spawn(g, move || s1.incr());
        let a = s.fast_incr();
        let b = s.fast_incr();
        let v = h.join().unwrap();
        assert!(a < b && v != a && v != b && a + b + v == 3);
        s.check(3);
    });
}

/// Model 7: two fast lockers beside a plain blocking locker that sleeps
/// (no spinning): the fast unlocks meet its WAITERS (and WAKING, HANDOFF)
/// and must leave the release to `unlock`; a fast lock may also find the
/// word free with flags (`try_lock_uncontended` refuses, `lock` takes it).
#[test]
fn mutex_fast_beside_sleeper() {
    let reach = [
        Event::MutexSleep,
        Event::MutexHandoffRequest,
        Event::MutexHandoff,
    ];
    model(1, &reach, |g| {
        let s = Arc::new(M::new());
        let s1 = s.clone();
        let sleeper = spawn(g, move || s1.incr());
        let s2 = s.clone();
        let h = spawn(g, move || s2.fast_incr());
        let v = s.fast_incr();
        let mut seen = [v, h.join().unwrap(), sleeper.join().unwrap()];
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2]);
        s.check(3);
    });
}

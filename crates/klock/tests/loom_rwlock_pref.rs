//! Loom models of the rwsem's reader-preferring reads (glibc's default
//! rwlock kinds; INV-PREFQ in `klock::internal::rwlock`) with **no hand-off**: a
//! woken writer that fails its re-try sleeps again without HANDOFF.
//!
//! `tests/loom_rwlock.rs` runs with `rwsem_handoff_ns = 0`, where the first
//! writer claims HANDOFF at its first failed re-try, so the lock is never
//! free with a writer at the head and a reader-preferring reader queued
//! behind it: the path where a reader-preferring reader joins a free lock
//! and must pass the turn to the queued ones is unreachable there. Here the
//! threshold is the default (loom's clock stays at 0, so it never passes;
//! the INV-HANDOFF-TIMER timer is off under loom): that path is reached.
//! Tunables are per process, hence a file of its own.
//!
//! Run: `.ci/loom --test loom_rwlock_pref` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//! (as CI does; `--features stats`: each model fails unless the lock events
//! of the branches it claims were counted, and if any execution set
//! HANDOFF).
//!
//! Preemption bounds: `pref_reader_races_woken_writer` (two threads) runs
//! at `LOOM_MAX_PREEMPTIONS` (CI: 2); `pref_reader_granted_behind_woken_writer`
//! (three threads) at 1: at 2 it did not finish in two minutes (at 1: 25 000
//! executions, 4 s). Its interleavings beyond bound 1 have no chaos torture
//! coverage: neither `tests/torture_rwlock.rs` nor `tests/torture_mixed.rs`
//! takes a reader-preferring read.
#![cfg(loom)]

use klock::internal::rwlock::RawRwLockInternals as _;
use klock::stat::Event;
use klock::{RawRwLock, SpinOff};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};

mod loom_common;
use loom_common::{
    Branch, SlotGate, assert_reached, check_counted, lease, loom_tunables, require_stats, spawn,
    until,
};

/// Runs a model at `LOOM_MAX_PREEMPTIONS` (default 2) capped at
/// `max_bound`, with loom's small budgets and the default hand-off
/// threshold (never reached: loom's clock is 0), printing the number of
/// executions and the lock events they counted. Fails unless every event
/// in `reach` was counted in some execution (the branches the model claims
/// to cover), and if any execution set HANDOFF (this file's premise; both
/// need `--features stats`, as CI builds the loom tests).
fn model(max_bound: usize, reach: &[Event], f: impl Fn(&Arc<SlotGate>) + Sync + Send + 'static) {
    require_stats(&[Event::RwHandoff]);
    let mut t = loom_tunables();
    t.rwsem_rspin_ns = 0;
    assert!(t.rwsem_handoff_ns > 0);
    let _ = klock::tune::set(t);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(2).min(max_bound));
    b.max_branches = b.max_branches.max(5_000);
    let counts = check_counted(b, "loom", move || {
        lease();
        f(&Arc::new(SlotGate(AtomicUsize::new(0))))
    });
    assert_reached(&counts, reach);
    assert_eq!(
        counts.get(Event::RwHandoff),
        0,
        "a writer set HANDOFF: this file's models assume none does"
    );
}

/// A value under the rwsem (loom's `UnsafeCell` reports a write
/// overlapping another access: exclusion).
struct Rw {
    l: RawRwLock<SpinOff>,
    v: UnsafeCell<usize>,
}

// SAFETY: `v` is written only under the write lock and read only under a
// read lock; loom checks it.
unsafe impl Sync for Rw {}

impl Rw {
    fn new() -> Self {
        Rw {
            l: RawRwLock::new(),
            v: UnsafeCell::new(0),
        }
    }

    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn get(&self) -> usize {
        // SAFETY: the lock is held (caller's contract).
        self.v.with(|p| unsafe { *p })
    }

    /// Write lock, increment, unlock.
    fn incr(&self) {
        let t = self.l.lock_exclusive();
        // SAFETY: write lock held.
        self.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.l.unlock_exclusive(t) };
    }

    /// Reader-preferring read lock held until `inside` reaches 2 (the other
    /// reader is in too); returns the value read.
    fn read_pref_together(&self, inside: &AtomicUsize) -> usize {
        self.l.lock_shared_prefer_readers();
        // SAFETY: read lock held.
        let v = unsafe { self.get() };
        inside.fetch_add(1, Ordering::SeqCst);
        until(inside, 2);
        // SAFETY: taken above, released once.
        unsafe { self.l.unlock_shared() };
        v
    }
}

/// A reader-preferring reader R queued behind a writer at the head is
/// granted the lock once another reader-preferring reader makes it
/// read-owned. Main holds the write lock; a writer W and R arrive (both may
/// queue, W first); main unlocks (W is woken, the lock is free) and reads
/// the reader-preferring way: it joins the free lock and must pass the turn
/// to R (INV-PREFQ). Main and R each hold their read lock until both are
/// in: R left queued behind W is a deadlock, which loom reports. W fails
/// its re-try while they read and sleeps without HANDOFF: the last reader's
/// unlock must wake it (no lost wake-up). Reached: main's pass of the turn
/// to R behind W (`rwsem_rlock_granted_pref`), W asleep.
#[test]
fn pref_reader_granted_behind_woken_writer() {
    model(1, &[Event::RwReadGrantedPref, Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let (s2, in2) = (s.clone(), inside.clone());
        let r = spawn(g, move || s2.read_pref_together(&in2));
        loom::thread::yield_now(); // let W and R queue
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        let mine = s.read_pref_together(&inside);
        let v = r.join().unwrap();
        w.join().unwrap();
        assert_eq!(mine, v, "the readers overlapped a write");
        let t = s.l.lock_exclusive();
        // SAFETY: write lock held.
        assert_eq!(unsafe { s.get() }, 1);
        // SAFETY: as above.
        unsafe { s.l.unlock_exclusive(t) };
        assert_eq!(s.l.count_word(), 0, "count word not clean");
    });
}

/// A reader-preferring reader races a woken writer for a free lock.
/// Main holds a read lock; W queues; main unlocks (waking W) while a
/// reader-preferring reader arrives: either may win; the reader never
/// joins the lock W owns (exclusion), and W, if it lost, is woken again by
/// the reader's unlock. Both winners are reached, and W asleep.
#[test]
fn pref_reader_races_woken_writer() {
    static SAW: [Branch; 2] = [Branch::new(), Branch::new()];
    model(2, &[Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::new());
        s.l.lock_shared();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        // SAFETY: main's read lock, taken above, released once.
        unsafe { s.l.unlock_shared() };
        s.l.lock_shared_prefer_readers();
        // SAFETY: read lock held.
        let v = unsafe { s.get() };
        // SAFETY: taken above, released once.
        unsafe { s.l.unlock_shared() };
        w.join().unwrap();
        // Only 0 and 1 are ever written: the value tells who won.
        SAW[v].hit();
        assert_eq!(s.l.count_word(), 0, "count word not clean");
    });
    SAW[0].assert_reached("the reader got in before the writer");
    SAW[1].assert_reached("the writer got in before the reader");
}

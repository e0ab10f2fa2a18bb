//! Loom models of the floor mutex (`klock::internal::mutex::RawMutexFloor`,
//! std's futex protocol: 0 unlocked, 1 locked, 2 locked with possible
//! sleepers; see `crates/klock/src/mutex/floor.rs`).
//!
//! Run: `.ci/loom --test loom_floor` (CI's settings: `--cfg loom`, release
//! with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! Models:
//! 1. `two_lockers`: two threads lock, increment, unlock, twice each.
//! 2. `three_lockers`: three threads lock, increment, unlock once each
//!    (at bound 2: about 1 000 executions, well under a second).
//! 3. `timed_beside_locker`: a timed locker (`lock_until_ns`) beside a
//!    plain one: a waiter that times out leaves 2 behind, which only costs
//!    a wake-up.
//!
//! What each model checks: the futex is modelled exactly (see
//! `klock::internal::wait`), so a sleeper nobody wakes blocks forever and
//! loom reports a deadlock (no lost wake-up); loom's `UnsafeCell` reports
//! two holders at once or a critical section not ordered before the next
//! (mutual exclusion, the Acquire/Release pairs); the count is exact and
//! the word is 0 at the end. Each model asserts that some execution saw the
//! word at 2 inside the critical section (the sleeper path was taken;
//! model 3: that the timed locker gave up).
//!
//! Each model fails on a deliberate break (checked by hand, not kept):
//! `unlock` as `store(0)` with no `futex_wake`: loom reports a deadlock
//! (a sleeper on 2 never woken) in models 1 and 2.
#![cfg(loom)]

mod loom_common;
use loom_common::{Branch, loom_tunables, run_model};

use klock::internal::mutex::{FLOOR_CONTENDED, RawMutexFloor};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// A counter protected by a floor mutex.
struct Shared {
    m: RawMutexFloor,
    n: UnsafeCell<usize>,
}

// SAFETY: `n` is accessed only under `m`.
unsafe impl Sync for Shared {}

impl Shared {
    fn new() -> Self {
        Shared {
            m: RawMutexFloor::new(),
            n: UnsafeCell::new(0),
        }
    }

    /// Lock, increment, unlock; note whether the word read 2 while held.
    fn incr(&self, contended: &Branch) {
        let t = self.m.lock();
        if self.m.state() == FLOOR_CONTENDED {
            contended.hit();
        }
        // SAFETY: held under `m`.
        self.n.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: `t` is this mutex's live acquisition.
        unsafe { self.m.unlock(t) };
    }

    fn check(&self, n: usize) {
        // SAFETY: every other thread has been joined.
        assert_eq!(self.n.with(|p| unsafe { *p }), n);
        assert_eq!(self.m.state(), 0, "word not clean");
    }
}

/// Model 1: two threads, two critical sections each.
#[test]
fn two_lockers() {
    static CONTENDED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            s1.incr(&CONTENDED);
            s1.incr(&CONTENDED);
        });
        s.incr(&CONTENDED);
        s.incr(&CONTENDED);
        h.join().unwrap();
        s.check(4);
    });
    CONTENDED.assert_reached("a holder saw the word at 2");
}

/// Model 2: three threads, one critical section each.
#[test]
fn three_lockers() {
    static CONTENDED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.incr(&CONTENDED))
            })
            .collect();
        s.incr(&CONTENDED);
        for h in hs {
            h.join().unwrap();
        }
        s.check(3);
    });
    CONTENDED.assert_reached("a holder saw the word at 2");
}

/// Model 3: a timed locker beside a plain locker. The timed one may give
/// up (leaving 2: the next unlock wakes nobody, harmlessly) or acquire.
#[test]
fn timed_beside_locker() {
    static CONTENDED: Branch = Branch::new();
    static TIMED_OUT: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            // A deadline in the past: at most one try of each kind.
            match s1.m.lock_until_ns(0) {
                Some(t) => {
                    // SAFETY: held under `m`.
                    s1.n.with_mut(|p| unsafe { *p += 1 });
                    // SAFETY: `t` is this mutex's live acquisition.
                    unsafe { s1.m.unlock(t) };
                    1
                }
                None => {
                    TIMED_OUT.hit();
                    0
                }
            }
        });
        s.incr(&CONTENDED);
        let got = h.join().unwrap();
        s.check(1 + got);
    });
    TIMED_OUT.assert_reached("the timed locker gave up");
}

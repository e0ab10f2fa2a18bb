//! Loom models of issue 32's one-word mutexes with a hand-off to a running
//! waiter: the barging mutex (`klock::internal::mutex::RawMutexBarge`,
//! design C: LOCKED, WOKEN, HANDOFF, GRANTED and an exact sleeper count;
//! `crates/klock/src/mutex/barge.rs`) and the granting floor
//! (`RawMutexGrant`, design D: std's 0/1/2 word plus HANDOFF and GRANTED;
//! `crates/klock/src/mutex/grant.rs`). Every model runs on both.
//!
//! Run: `.ci/loom --test loom_word` (CI's settings: `--cfg loom`, release
//! with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! Under loom the bypass bound is 0 (every woken waiter may ask for a
//! hand-off) and the running wait for a grant is two iterations, so the
//! models reach the ask, grant, pick-up and withdraw transitions as well
//! as the release, wake and re-arm ones.
//!
//! Models:
//! 1. `*_two_lockers`: two threads lock, increment, unlock, twice each.
//! 2. `*_three_lockers`: three threads lock, increment, unlock once each.
//! 3. `*_timed_beside_locker`: a timed locker (deadline already passed)
//!    beside a plain one: a waiter that gives up leaves the count and
//!    never leaves a free lock behind.
//!
//! What each model checks: the futex is modelled exactly (a sleeper nobody
//! wakes blocks forever and loom reports a deadlock: no lost wake-up);
//! loom's `UnsafeCell` reports two holders at once or a critical section
//! not ordered before the next (mutual exclusion, the Acquire/Release
//! pairs, including the grant's); the count is exact and the word is 0 at
//! the end (no sleeper left in the count, no stale WOKEN). Models 1 and 2
//! assert that some execution saw a sleeper inside the critical section;
//! model 2 (at a fixed preemption bound of 3) that some unlock found a
//! hand-off request, which it then grants; model 3 that the timed locker
//! gave up.
//!
//! Each model fails on a deliberate break (checked by hand, not kept): an
//! `unlock_slow` that never calls `futex_wake` makes loom report a
//! deadlock in models 1 and 2 (either mutex); a barging `pick_up` that
//! keeps WOKEN leaves the word non-zero at the end of model 2.
#![cfg(loom)]

mod loom_common;
use loom_common::{Branch, check_counted, loom_tunables, run_model};

use klock::MutexToken;
use klock::internal::mutex::{GRANT_HANDOFF, HANDOFF_ASKED, RawMutexBarge, RawMutexGrant, SLEEPER};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// Model 2's preemption bound, fixed (not capped by CI's
/// LOOM_MAX_PREEMPTIONS=2): a hand-off request needs a waiter woken while
/// a barger holds the lock and preempted into the holder's critical
/// section, beyond the preemptions that make it sleep (the futex is a loom
/// mutex and condvar). Bound 2 reaches no request; 3 does, in about 2 000
/// executions.
const REQUEST_BOUND: usize = 3;

/// What the models need of a one-word mutex.
trait WordMutex: Send + Sync + 'static {
    fn new() -> Self;
    fn lock(&self) -> MutexToken;
    fn lock_until_ns(&self, deadline: u64) -> Option<MutexToken>;
    /// # Safety
    /// `t` is this mutex's live acquisition.
    unsafe fn unlock(&self, t: MutexToken);
    fn word(&self) -> u32;
    /// Does this word value hold a sleeper (barge: the count; grant: C)?
    fn shows_sleeper(w: u32) -> bool;
    /// Does this word value hold a hand-off request?
    fn shows_request(w: u32) -> bool;
}

impl WordMutex for RawMutexBarge {
    fn new() -> Self {
        RawMutexBarge::new()
    }
    fn lock(&self) -> MutexToken {
        RawMutexBarge::lock(self)
    }
    fn lock_until_ns(&self, d: u64) -> Option<MutexToken> {
        RawMutexBarge::lock_until_ns(self, d)
    }
    unsafe fn unlock(&self, t: MutexToken) {
        // SAFETY: forwarded contract.
        unsafe { RawMutexBarge::unlock(self, t) }
    }
    fn word(&self) -> u32 {
        RawMutexBarge::word(self)
    }
    fn shows_sleeper(w: u32) -> bool {
        w >= SLEEPER
    }
    fn shows_request(w: u32) -> bool {
        w & HANDOFF_ASKED != 0
    }
}

impl WordMutex for RawMutexGrant {
    fn new() -> Self {
        RawMutexGrant::new()
    }
    fn lock(&self) -> MutexToken {
        RawMutexGrant::lock(self)
    }
    fn lock_until_ns(&self, d: u64) -> Option<MutexToken> {
        RawMutexGrant::lock_until_ns(self, d)
    }
    unsafe fn unlock(&self, t: MutexToken) {
        // SAFETY: forwarded contract.
        unsafe { RawMutexGrant::unlock(self, t) }
    }
    fn word(&self) -> u32 {
        RawMutexGrant::word(self)
    }
    fn shows_sleeper(w: u32) -> bool {
        w & klock::internal::mutex::GRANT_CONTENDED != 0
    }
    fn shows_request(w: u32) -> bool {
        w & GRANT_HANDOFF != 0
    }
}

/// A counter protected by a one-word mutex.
struct Shared<M> {
    m: M,
    n: UnsafeCell<usize>,
}

// SAFETY: `n` is accessed only under `m`.
unsafe impl<M: Sync> Sync for Shared<M> {}

/// Hits of the model's branches.
struct Seen {
    sleeper: Branch,
    asked: Branch,
}

impl Seen {
    const fn new() -> Self {
        Seen {
            sleeper: Branch::new(),
            asked: Branch::new(),
        }
    }
}

impl<M: WordMutex> Shared<M> {
    fn new() -> Self {
        Shared {
            m: M::new(),
            n: UnsafeCell::new(0),
        }
    }

    /// Lock, increment, unlock; note what the word showed while held.
    fn incr(&self, seen: &Seen) {
        let t = self.m.lock();
        if M::shows_sleeper(self.m.word()) {
            seen.sleeper.hit();
        }
        // SAFETY: held under `m`.
        self.n.with_mut(|p| unsafe { *p += 1 });
        if M::shows_request(self.m.word()) {
            seen.asked.hit();
        }
        // SAFETY: `t` is this mutex's live acquisition.
        unsafe { self.m.unlock(t) };
    }

    /// The count is exact and the word is 0 (barge: no sleeper left in the
    /// count, no stale WOKEN; grant: the last release wrote 0).
    fn check(&self, n: usize) {
        // SAFETY: every other thread has been joined.
        assert_eq!(self.n.with(|p| unsafe { *p }), n);
        assert_eq!(self.m.word(), 0, "word not clean");
    }
}

/// Model 1: two threads, two critical sections each.
fn two_lockers<M: WordMutex>(seen: &'static Seen) {
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<M>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            s1.incr(seen);
            s1.incr(seen);
        });
        s.incr(seen);
        s.incr(seen);
        h.join().unwrap();
        s.check(4);
    });
    seen.sleeper.assert_reached("a holder saw a sleeper");
}

/// Model 2: three threads, one critical section each.
fn three_lockers<M: WordMutex>(seen: &'static Seen) {
    let _ = klock::tune::set(loom_tunables());
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(REQUEST_BOUND);
    check_counted(b, "loom", move || {
        let s = Arc::new(Shared::<M>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.incr(seen))
            })
            .collect();
        s.incr(seen);
        for h in hs {
            h.join().unwrap();
        }
        s.check(3);
    });
    seen.sleeper.assert_reached("a holder saw a sleeper");
    seen.asked
        .assert_reached("an unlock found a hand-off request");
}

/// Model 3: a timed locker beside a plain locker. The timed one gives up
/// (barge: leaving the count) or acquires.
fn timed_beside_locker<M: WordMutex>(seen: &'static Seen, timed_out: &'static Branch) {
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<M>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            // A deadline in the past: the waiter leaves at its first look.
            match s1.m.lock_until_ns(0) {
                Some(t) => {
                    // SAFETY: held under `m`.
                    s1.n.with_mut(|p| unsafe { *p += 1 });
                    // SAFETY: `t` is this mutex's live acquisition.
                    unsafe { s1.m.unlock(t) };
                    1
                }
                None => {
                    timed_out.hit();
                    0
                }
            }
        });
        s.incr(seen);
        let got = h.join().unwrap();
        s.check(1 + got);
    });
    timed_out.assert_reached("the timed locker gave up");
}

#[test]
fn barge_two_lockers() {
    static SEEN: Seen = Seen::new();
    two_lockers::<RawMutexBarge>(&SEEN);
}

#[test]
fn barge_three_lockers() {
    static SEEN: Seen = Seen::new();
    three_lockers::<RawMutexBarge>(&SEEN);
}

#[test]
fn barge_timed_beside_locker() {
    static SEEN: Seen = Seen::new();
    static TIMED_OUT: Branch = Branch::new();
    timed_beside_locker::<RawMutexBarge>(&SEEN, &TIMED_OUT);
}

#[test]
fn grant_two_lockers() {
    static SEEN: Seen = Seen::new();
    two_lockers::<RawMutexGrant>(&SEEN);
}

#[test]
fn grant_three_lockers() {
    static SEEN: Seen = Seen::new();
    three_lockers::<RawMutexGrant>(&SEEN);
}

#[test]
fn grant_timed_beside_locker() {
    static SEEN: Seen = Seen::new();
    static TIMED_OUT: Branch = Branch::new();
    timed_beside_locker::<RawMutexGrant>(&SEEN, &TIMED_OUT);
}

//! Loom models of the TTAS lock with announced sleepers
//! (`klock::RawTasSleepLock`, `crates/klock/src/spin/tassleep.rs`, and the
//! mechanism in `crates/klock/src/asym.rs`).
//!
//! Run: `.ci/loom --test loom_tas_sleep`.
//!
//! Loom cannot model `membarrier`. Under loom the barrier is a SeqCst fence
//! on the waiter's side and the unlock has one between its store and its
//! table load (Dekker's argument). So these models check the rest of the
//! protocol: the count, the sleep loop, the waker taking a woken waiter out
//! of the table, and mutual exclusion. The real barrier's argument is tested
//! by `torture_spin`'s `asym_*` tests under `.ci/chaos`.
//!
//! Models (the waiters do not spin, so every contended acquisition goes
//! through announce + sleep; each model asserts that some execution slept):
//! 1. `two_lockers`: two threads lock, increment, unlock, twice each.
//! 2. `three_lockers`: three threads, once each.
//!
//! A deliberate break, checked by hand and not kept: `wake_one` replaced by
//! nothing in `unlock` makes loom report a deadlock (a sleeper never woken)
//! in both models.
#![cfg(loom)]

mod loom_common;
use loom_common::{loom_tunables, run_model_reaching};

use klock::RawTasSleepLock;
use klock::stat::Event;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// No spin: a contended waiter announces itself and sleeps at once.
struct NoSpin;
impl klock::WaitPolicy for NoSpin {
    const NAME: &'static str = "no_spin";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
    fn spin_ns() -> u64 {
        0
    }
    fn tas_backoff_ns() -> (u64, u64) {
        (1, 1)
    }
}

struct Shared {
    l: RawTasSleepLock<NoSpin>,
    n: UnsafeCell<usize>,
}

// SAFETY: `n` is accessed only under `l`.
unsafe impl Sync for Shared {}

impl Shared {
    fn new() -> Self {
        Shared {
            l: RawTasSleepLock::new(),
            n: UnsafeCell::new(0),
        }
    }

    fn incr(&self) {
        self.l.lock();
        // SAFETY: held under `l`.
        self.n.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: locked above.
        unsafe { self.l.unlock() };
    }

    fn check(&self, n: usize) {
        // SAFETY: every other thread has been joined.
        assert_eq!(self.n.with(|p| unsafe { *p }), n);
        assert!(!self.l.is_locked(), "word not clean");
    }
}

/// Model 1: two threads, two critical sections each.
#[test]
fn two_lockers() {
    run_model_reaching(loom_tunables(), 2, &[Event::TasSleep], || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            s1.incr();
            s1.incr();
        });
        s.incr();
        s.incr();
        h.join().unwrap();
        s.check(4);
    });
}

/// Model 2: three threads, one critical section each.
#[test]
fn three_lockers() {
    run_model_reaching(loom_tunables(), 2, &[Event::TasSleep], || {
        let s = Arc::new(Shared::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        s.check(3);
    });
}

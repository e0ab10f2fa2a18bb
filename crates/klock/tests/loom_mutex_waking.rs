//! Loom models of the mutex's WAKING rule (an unlock does not wake another
//! waiter while a woken one has not re-armed or left), with handoff disabled
//! so that woken waiters fail, re-arm and sleep again instead of being handed
//! the lock (cfg(loom) only; its own process, so its own tunables).
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p klock --release --test loom_mutex_waking`
//!
//! The futex is modelled exactly: a waiter nobody wakes blocks forever and
//! loom reports a deadlock, so a completed model shows no lost wake-up; loom's
//! `UnsafeCell` checks mutual exclusion.
#![cfg(loom)]

use klock::mutex::{SpinOff, SpinOsq};
use loom::sync::Arc;

mod loom_common;
use loom_common::{Shared, loom_tunables, run_model};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut t = loom_tunables();
    // Never hand off: woken waiters must re-arm and sleep again.
    t.mutex_handoff_ns = 1_000_000_000;
    run_model(t, 2, f);
}

/// Two sleepers and an owner that re-takes the lock: the unlock after a
/// wake-up releases without waking (WAKING set) and the woken waiter, failing,
/// clears WAKING when it re-arms, so the next unlock wakes again.
#[test]
fn waking_two_sleepers_owner_relocks() {
    model(|| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || s.incr())
            })
            .collect();
        s.incr();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.get(), 4);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// The same with spinning (OSQ, woken-waiter spinning): a woken waiter may
/// take the lock while spinning, leaving the list and clearing WAKING.
#[test]
fn waking_spinning_owner_relocks() {
    model(|| {
        let s = Arc::new(Shared::<SpinOsq>::new());
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.incr());
        s.incr();
        s.incr();
        h.join().unwrap();
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

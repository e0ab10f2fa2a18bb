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

use klock::mutex::{RawMutex, SpinOff, SpinOsq, SpinPolicy};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut t = klock::tune::Tunables::DEFAULT;
    t.mutex_spin_ns = 2;
    t.mutex_spin_max_ns = 3;
    t.waitlock_spin_ns = 1;
    t.mutex_yields = 1;
    t.osq_stale_ns = 0;
    // Never hand off: woken waiters must re-arm and sleep again.
    t.mutex_handoff_ns = 1_000_000_000;
    let _ = klock::tune::set(t);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(2).min(2));
    b.check(f);
    if klock::stat::ENABLED {
        eprint!("{}", klock::stat::snapshot().report());
        klock::stat::reset();
    }
}

struct Shared<S: SpinPolicy> {
    m: RawMutex<S>,
    data: UnsafeCell<usize>,
}

// SAFETY: `data` is only accessed while `m` is held.
unsafe impl<S: SpinPolicy> Sync for Shared<S> {}

impl<S: SpinPolicy> Shared<S> {
    fn new() -> Self {
        Shared {
            m: RawMutex::new(),
            data: UnsafeCell::new(0),
        }
    }
    fn incr(&self) {
        let t = self.m.lock();
        // SAFETY: the lock is held (loom checks that no other access overlaps).
        self.data.with_mut(|p| unsafe { *p += 1 });
        unsafe { self.m.unlock(t) };
    }
    fn get(&self) -> usize {
        let t = self.m.lock();
        // SAFETY: the lock is held.
        let v = self.data.with(|p| unsafe { *p });
        unsafe { self.m.unlock(t) };
        v
    }
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

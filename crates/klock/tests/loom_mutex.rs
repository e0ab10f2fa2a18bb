//! Loom models of the mutex, the OSQ and the condvar (cfg(loom) only).
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p klock --release --test loom_mutex`
//!
//! The futex is modelled exactly (see `klock::wait`): a waiter nobody wakes
//! blocks forever and loom reports a deadlock, so every model that completes
//! checks the absence of lost wake-ups; loom's `UnsafeCell` checks mutual
//! exclusion. Budgets are loom iterations (tiny tunables below).
#![cfg(loom)]

use klock::condvar::RawCondvar;
use klock::mutex::{RawMutex, SpinOff, SpinOsq};
use klock::osq::Osq;
use klock::wait::SpinBudget;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod loom_common;
use loom_common::{Shared, loom_tunables, run_model};

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(2, f)
}

/// Run a model at `LOOM_MAX_PREEMPTIONS` (default 2), capped at `max_bound`.
fn model_bounded(max_bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut t = loom_tunables();
    // Hand off after the first failed wake-up.
    t.mutex_handoff_ns = 0;
    run_model(t, max_bound, f);
}

/// Fast path and sleep/wake: two lockers, no spinning.
#[test]
fn mutex_two_lockers_nospin() {
    model(|| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.incr());
        s.incr();
        h.join().unwrap();
        assert_eq!(s.get(), 2);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// Three lockers, no spinning: wait list with two sleepers, wake one at a
/// time, handoff after a failed wake-up (threshold 0 in this model).
#[test]
fn mutex_three_lockers_nospin_handoff() {
    model(|| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// Handoff: the main thread unlocks and immediately re-locks (stealing), so
/// the woken waiter fails, requests HANDOFF, and gets the lock handed over.
#[test]
fn mutex_handoff_steal() {
    model(|| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let t = s.m.lock();
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.incr());
        unsafe { s.m.unlock(t) };
        s.incr();
        h.join().unwrap();
        assert_eq!(s.get(), 2);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// Spinning with the OSQ: two lockers spin (tiny budgets) and may sleep.
#[test]
fn mutex_two_lockers_osq() {
    model(|| {
        let s = Arc::new(Shared::<SpinOsq>::new());
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.incr());
        s.incr();
        h.join().unwrap();
        assert_eq!(s.get(), 2);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// The adaptive spinning hint's skip path beside a spinner: the main thread
/// starts with a score of 0, so its slow path skips spinning and the yield
/// rounds and queues at once (`mutex::adapt`), while the other thread spins
/// through the OSQ and takes the lock from it or wakes it. No lost wake-up,
/// no overlap.
#[test]
fn mutex_adapt_skip_beside_spinner() {
    model(|| {
        let s = Arc::new(Shared::<SpinOsq>::new());
        let s2 = s.clone();
        let h = loom::thread::spawn(move || {
            s2.incr();
            s2.incr();
        });
        klock::mutex::set_adapt_score(0);
        s.incr();
        h.join().unwrap();
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

fn osq_model(threads: u64, preemption_bound: usize) {
    model_bounded(preemption_bound, move || {
        let q = Arc::new(Osq::new());
        let inside = Arc::new(AtomicBool::new(false));
        let heads = Arc::new(AtomicUsize::new(0));
        let run = |q: &Osq, inside: &AtomicBool, heads: &AtomicUsize, budget: u64| {
            klock::node::with_node(|n| {
                let n = n.unwrap();
                if q.lock(n, &mut SpinBudget::new(budget), 8) {
                    assert!(!inside.swap(true, Ordering::SeqCst), "two OSQ heads");
                    heads.fetch_add(1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    q.unlock(n);
                }
            })
        };
        let hs: Vec<_> = (1..threads)
            .map(|i| {
                let (q, inside, heads) = (q.clone(), inside.clone(), heads.clone());
                loom::thread::spawn(move || run(&q, &inside, &heads, i - 1))
            })
            .collect();
        run(&q, &inside, &heads, 1);
        for h in hs {
            h.join().unwrap();
        }
        assert!(q.is_empty());
        assert!(heads.load(Ordering::SeqCst) >= 1);
    });
}

/// OSQ unqueue: a head and a spinner whose budget (0 iterations) runs out,
/// so it unqueues (steps A-B-C) while the head may be unlocking.
#[test]
fn osq_unqueue_two() {
    osq_model(2, 2);
}

/// OSQ unqueue with three spinners (budgets 0, 1, 1): unqueue in the middle
/// of the queue, racing with the head's unlock; one head at a time; the queue
/// is empty at the end.
#[test]
fn osq_unqueue_three() {
    osq_model(3, 2);
}

/// Condvar: a notify after the waiter's check is never lost (the waiter
/// enqueues before unlocking), and the requeue wakes it through the mutex.
#[test]
fn mutex_three_lockers_osq() {
    model(|| {
        let s = Arc::new(Shared::<SpinOsq>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

#[test]
fn condvar_no_lost_wakeup() {
    model(|| {
        let s = Arc::new((
            RawMutex::<SpinOff>::new(),
            RawCondvar::<SpinOff>::new(),
            AtomicBool::new(false),
        ));
        let s2 = s.clone();
        let h = loom::thread::spawn(move || {
            let (m, cv, flag) = &*s2;
            let mut t = m.lock();
            while !flag.load(Ordering::Relaxed) {
                unsafe { cv.wait(m, &mut t) };
            }
            unsafe { m.unlock(t) };
        });
        let (m, cv, flag) = &*s;
        let t = m.lock();
        flag.store(true, Ordering::Relaxed);
        cv.notify_one();
        unsafe { m.unlock(t) };
        h.join().unwrap();
        assert_eq!(m.owner_word(), 0);
    });
}

/// A foreign wait (the caller's own mutex, here a RawMutex unlocked and
/// re-locked by hand, as the interposer does with glibc's): `waiters` wait
/// for the flag, a notifier sets it under the mutex and calls notify_one
/// once. The fallback word wakes every registered waiter: all finish, none
/// is lost, and none stays counted. `timed`: the waiters' futex waits may
/// time out and give up (end_wait_foreign(.., true)), racing the notify.
fn foreign_model(waiters: usize, timed: bool) {
    model(move || {
        let s = Arc::new((
            RawMutex::<SpinOff>::new(),
            RawCondvar::<SpinOff>::new(),
            AtomicBool::new(false),
        ));
        let hs: Vec<_> = (0..waiters)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || {
                    let (m, cv, flag) = &*s;
                    let mut t = m.lock();
                    while !flag.load(Ordering::Relaxed) {
                        let ticket = cv.begin_wait_foreign();
                        unsafe { m.unlock(t) };
                        let mut give_up = false;
                        while let Some((w, v)) = cv.sleep_word(&ticket) {
                            let timeout = timed.then(|| std::time::Duration::from_nanos(1));
                            if klock::wait::futex_wait(w, v, timeout)
                                == klock::wait::WaitOutcome::TimedOut
                            {
                                give_up = true;
                                break;
                            }
                        }
                        cv.end_wait_foreign(ticket, give_up);
                        t = m.lock();
                    }
                    unsafe { m.unlock(t) };
                })
            })
            .collect();
        let (m, cv, flag) = &*s;
        let t = m.lock();
        flag.store(true, Ordering::Relaxed);
        cv.notify_one();
        unsafe { m.unlock(t) };
        for h in hs {
            h.join().unwrap();
        }
        assert!(!cv.has_waiters());
        assert_eq!(m.owner_word(), 0);
    });
}

#[test]
fn condvar_foreign_no_lost_wakeup() {
    foreign_model(1, false);
}

#[test]
fn condvar_foreign_notify_one_wakes_both() {
    foreign_model(2, false);
}

#[test]
fn condvar_foreign_timeout_races_notify() {
    foreign_model(1, true);
}

/// Condvar notify_all outside the mutex: the requeue finds the mutex free and
/// must wake the head itself.
#[test]
fn condvar_notify_all_unlocked() {
    model(|| {
        let s = Arc::new((
            RawMutex::<SpinOff>::new(),
            RawCondvar::<SpinOff>::new(),
            AtomicBool::new(false),
        ));
        let s2 = s.clone();
        let h = loom::thread::spawn(move || {
            let (m, cv, flag) = &*s2;
            let mut t = m.lock();
            while !flag.load(Ordering::Relaxed) {
                unsafe { cv.wait(m, &mut t) };
            }
            unsafe { m.unlock(t) };
        });
        let (m, cv, flag) = &*s;
        let t = m.lock();
        flag.store(true, Ordering::Relaxed);
        unsafe { m.unlock(t) };
        cv.notify_all();
        h.join().unwrap();
        assert_eq!(m.owner_word(), 0);
    });
}

/// Condvar with two waiters and notify_all under the mutex: both are moved to
/// the mutex's wait list and released one at a time by unlocks.
#[test]
fn condvar_notify_all_two_waiters() {
    model(|| {
        let s = Arc::new((
            RawMutex::<SpinOff>::new(),
            RawCondvar::<SpinOff>::new(),
            AtomicBool::new(false),
        ));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s2 = s.clone();
                loom::thread::spawn(move || {
                    let (m, cv, flag) = &*s2;
                    let mut t = m.lock();
                    while !flag.load(Ordering::Relaxed) {
                        unsafe { cv.wait(m, &mut t) };
                    }
                    unsafe { m.unlock(t) };
                })
            })
            .collect();
        let (m, cv, flag) = &*s;
        let t = m.lock();
        flag.store(true, Ordering::Relaxed);
        cv.notify_all();
        unsafe { m.unlock(t) };
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(m.owner_word(), 0);
    });
}

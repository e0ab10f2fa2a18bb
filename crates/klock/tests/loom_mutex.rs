//! Loom models of the mutex, the OSQ and the condvar (cfg(loom) only).
//!
//! `.ci/loom --test loom_mutex` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! The futex is modelled exactly (see `klock::internal::wait`): a waiter nobody wakes
//! blocks forever and loom reports a deadlock, so every model that completes
//! checks the absence of lost wake-ups; loom's `UnsafeCell` checks mutual
//! exclusion. Budgets are loom iterations (tiny tunables below).
//!
//! Built with `--features stats` (as CI does), each model also asserts that
//! the branches it names were taken in at least one execution
//! (`run_model_reaching`), and the hand-off models check per execution that
//! the hand-off happened where it was asked for (see [`Log`]).
//!
//! Limits: the OSQ's give-up on a stale heartbeat is off here
//! (`osq_stale_ns` = 0, tunables are per process); `loom_osq_stale.rs`
//! models it. Under loom a spinner's every poll yields, so the owner runs
//! and an optimistic spin never outlasts it: spinning models here never
//! sleep unless the spinner's adaptive score sends it to the wait list at
//! once (`mutex_adapt_skip_beside_spinner`; the chaos torture tests cover
//! spins that fail on a slow owner).
#![cfg(loom)]

use klock::RawCondvar;
use klock::internal::condvar::RawCondvarInternals as _;
use klock::internal::mutex::RawMutexInternals as _;
use klock::internal::osq::Osq;
use klock::stat::{Event, Snapshot, thread_snapshot};
use klock::{RawMutex, SpinOff, SpinOsq, internal::mutex::HANDOFF};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod loom_common;
use loom_common::{Branch, Shared, loom_tunables, osq_take_once, run_model_reaching, spawn_incrs};

fn tunables() -> klock::tune::Tunables {
    let mut t = loom_tunables();
    // Hand off after the first failed wake-up.
    t.mutex_handoff_ns = 0;
    t
}

/// Run a model at `LOOM_MAX_PREEMPTIONS` (default 2) and fail unless every
/// event in `reach` was counted in some execution.
fn model(reach: &[Event], f: impl Fn() + Sync + Send + 'static) {
    model_bounded(2, reach, f)
}

/// As [`model`], with the preemption bound capped at `max_bound`.
fn model_bounded(max_bound: usize, reach: &[Event], f: impl Fn() + Sync + Send + 'static) {
    run_model_reaching(tunables(), max_bound, reach, f);
}

/// Who entered a critical section of a [`Log`].
const MAIN: u8 = 0;

/// A mutex whose critical sections append to a log they protect: who entered,
/// and whether the owner word showed HANDOFF during the section (a waiter
/// asked for the lock while this owner held it).
struct Log {
    m: RawMutex<SpinOff>,
    entries: UnsafeCell<Vec<(u8, bool)>>,
}

// SAFETY: `entries` is only accessed while `m` is held (or after every thread
// has been joined).
unsafe impl Sync for Log {}

impl Log {
    fn new() -> Self {
        Log {
            m: RawMutex::new(),
            entries: UnsafeCell::new(Vec::new()),
        }
    }

    /// One critical section of `who`; with `long`, one long enough for a
    /// woken waiter to run: it yields after the lock. (Without the yield
    /// loom never lets the waiter ask for the hand-off between this lock and
    /// the load below: no owner would see HANDOFF.)
    fn enter(&self, who: u8, long: bool) {
        let t = self.m.lock();
        if long {
            loom::thread::yield_now();
        }
        // Relaxed (owner_word): HANDOFF is set by an RMW that the owner's
        // unlock CAS follows in the word's modification order once this load
        // has seen it (coherence), so that unlock must hand the lock over.
        let asked = self.m.owner_word() & HANDOFF != 0;
        // SAFETY: the lock is held (loom checks that no other access overlaps).
        self.entries
            .with_mut(|p| unsafe { (*p).push((who, asked)) });
        // SAFETY: `t` comes from the `lock` above and is released once.
        unsafe { self.m.unlock(t) };
    }

    /// The log, once every thread has been joined.
    fn entries(&self) -> Vec<(u8, bool)> {
        // SAFETY: every other thread has been joined.
        self.entries.with(|p| unsafe { (*p).clone() })
    }
}

/// The hand-off property, per execution: once an owner saw HANDOFF in its
/// critical section, its unlock hands the lock to the waiter that asked, so
/// the next critical section is `waiter`'s, never the owner's own re-lock.
/// `saw` counts the executions in which some owner saw HANDOFF (so that the
/// check is shown not to be vacuous).
fn check_handoff(log: &[(u8, bool)], waiter: u8, saw: &Branch) {
    for (i, &(who, asked)) in log.iter().enumerate() {
        if asked {
            saw.hit();
            let next = log.get(i + 1).map(|e| e.0);
            assert!(
                next == Some(waiter),
                "thread {who} saw HANDOFF, yet the next critical section was {next:?} \
                 (the lock was not handed to the waiter that asked): {log:?}"
            );
        }
    }
}

/// Per execution (counts since `start`, taken at the start of the model
/// closure: every model thread runs on this OS thread): every hand-off
/// request was honoured by exactly one hand-off.
fn check_handoff_counts(start: &Snapshot) {
    let d = thread_snapshot().delta(start);
    assert_eq!(
        d.get(Event::MutexHandoffRequest),
        d.get(Event::MutexHandoff),
        "a HANDOFF request was not honoured by a hand-off (or a hand-off was not asked for)"
    );
}

/// Fast path and sleep/wake: two lockers, no spinning.
#[test]
fn mutex_two_lockers_nospin() {
    model(
        &[Event::MutexFastpath, Event::MutexSleep, Event::MutexWake],
        || {
            let s = Arc::new(Shared::<SpinOff>::new());
            let s2 = s.clone();
            let h = loom::thread::spawn(move || s2.incr());
            s.incr();
            h.join().unwrap();
            assert_eq!(s.get(), 2);
            assert_eq!(s.m.owner_word(), 0);
        },
    );
}

/// Three lockers, no spinning: wait list with two sleepers, wake one at a
/// time, handoff after a failed wake-up (threshold 0 in this model). Per
/// execution, every hand-off request is honoured by one hand-off
/// ([`check_handoff_counts`]); some execution hands off. (Which thread runs
/// next after a request is checked by `mutex_handoff_steal`: here no owner
/// re-locks, and a yield in an owner's critical section, which that check
/// needs, makes this three-thread model run for many minutes.)
#[test]
fn mutex_three_lockers_nospin_handoff() {
    model(
        &[
            Event::MutexSleep,
            Event::MutexWake,
            Event::MutexHandoffRequest,
            Event::MutexHandoff,
        ],
        || {
            let start = thread_snapshot();
            let s = Arc::new(Shared::<SpinOff>::new());
            let hs = spawn_incrs(&s, 2);
            s.incr();
            for h in hs {
                h.join().unwrap();
            }
            check_handoff_counts(&start);
            assert_eq!(s.get(), 3);
            assert_eq!(s.m.owner_word(), 0);
        },
    );
}

/// Handoff: the main thread unlocks and at once re-locks (stealing), so the
/// woken waiter fails, requests HANDOFF, and gets the lock handed over. Per
/// execution: once main saw HANDOFF in a critical section, the waiter's
/// critical section comes next, before main's following one (main re-locks
/// twice, so a steal would show); every request is honoured by one hand-off.
/// Some execution hands off, and in some main saw the request.
#[test]
fn mutex_handoff_steal() {
    static SAW: Branch = Branch::new();
    const WAITER: u8 = 1;
    model(&[Event::MutexHandoffRequest, Event::MutexHandoff], || {
        let start = thread_snapshot();
        let s = Arc::new(Log::new());
        let t = s.m.lock();
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.enter(WAITER, false));
        // SAFETY: `t` comes from the `lock` above and is released once.
        unsafe { s.m.unlock(t) };
        s.enter(MAIN, true);
        s.enter(MAIN, true);
        h.join().unwrap();
        let log = s.entries();
        assert_eq!(log.len(), 3);
        check_handoff(&log, WAITER, &SAW);
        check_handoff_counts(&start);
        assert_eq!(s.m.owner_word(), 0);
    });
    SAW.assert_reached("main saw HANDOFF in its critical section");
}

/// Spinning with the OSQ: the contender spins (tiny budgets) through the
/// OSQ and takes the lock from the owner. (It never sleeps under loom: see
/// the header.)
#[test]
fn mutex_two_lockers_osq() {
    model(&[Event::MutexSpinSuccess], || {
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
    model(
        &[
            Event::MutexSpinAdaptSkip,
            Event::MutexSpinSuccess,
            Event::MutexSleep,
            Event::MutexWake,
        ],
        || {
            let s = Arc::new(Shared::<SpinOsq>::new());
            let s2 = s.clone();
            let h = loom::thread::spawn(move || {
                s2.incr();
                s2.incr();
            });
            klock::internal::mutex::set_adapt_score(0);
            s.incr();
            h.join().unwrap();
            assert_eq!(s.get(), 3);
            assert_eq!(s.m.owner_word(), 0);
        },
    );
}

/// `threads` spinners (budgets 1 for main, then 0, 1, ...) take the OSQ once
/// each: one head at a time (`inside`), each spinner either head or unqueued,
/// the queue empty at the end, and every event in `reach` counted in some
/// execution.
fn osq_model(threads: u64, preemption_bound: usize, reach: &[Event]) {
    model_bounded(preemption_bound, reach, move || {
        let start = thread_snapshot();
        let q = Arc::new(Osq::new());
        let inside = Arc::new(AtomicBool::new(false));
        let heads = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (1..threads)
            .map(|i| {
                let (q, inside, heads) = (q.clone(), inside.clone(), heads.clone());
                loom::thread::spawn(move || {
                    osq_take_once(&q, i - 1, &inside, &heads);
                })
            })
            .collect();
        osq_take_once(&q, 1, &inside, &heads);
        for h in hs {
            h.join().unwrap();
        }
        assert!(q.is_empty());
        // Every spinner either became head or unqueued (counted once).
        let unqueued = thread_snapshot().delta(&start).get(Event::OsqUnqueue);
        assert_eq!(heads.load(Ordering::SeqCst) as u64 + unqueued, threads);
    });
}

/// OSQ unqueue: a head and a spinner whose budget (0 iterations) runs out,
/// so it unqueues (steps A-B: it is the last, so the tail moves back to the
/// head) while the head may be unlocking (the head's unlock then waits for
/// that step). Reached: `osq_unqueue`.
#[test]
fn osq_unqueue_two() {
    osq_model(2, 2, &[Event::OsqUnqueue]);
}

/// OSQ unqueue with three spinners (budgets 1, 0, 1): unqueue in the middle
/// of the queue (step C relinks the successor to the predecessor), racing
/// with the head's unlock; one head at a time; the queue is empty at the
/// end. Reached: `osq_unqueue`, `osq_unqueue_relink`.
#[test]
fn osq_unqueue_three() {
    osq_model(3, 2, &[Event::OsqUnqueue, Event::OsqUnqueueRelink]);
}

/// Three lockers spinning through the OSQ (tiny budgets): mutual exclusion,
/// the count, a clean word; some spin takes the lock.
#[test]
fn mutex_three_lockers_osq() {
    model(&[Event::MutexSpinSuccess], || {
        let s = Arc::new(Shared::<SpinOsq>::new());
        let hs = spawn_incrs(&s, 2);
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// Condvar: a notify after the waiter's check is never lost (the waiter
/// enqueues before unlocking), and notify_one's wake (`Waiting ->
/// Notified`, then futex_wake) lets it re-lock the mutex. Removing that wake
/// deadlocks the model.
#[test]
fn condvar_no_lost_wakeup() {
    model(&[Event::CondWait, Event::CondWakeOne], || {
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
    let reach: &[Event] = if timed {
        &[Event::CondWait, Event::CondTimeout]
    } else {
        &[Event::CondWait]
    };
    model(reach, move || {
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
                            if klock::internal::wait::futex_wait(w, v, timeout)
                                == klock::internal::wait::WaitOutcome::TimedOut
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

/// Condvar: a timed wait whose deadline races notify_one. Either the notify
/// wins (the waiter returns not timed out, notify_one reports one woken) or
/// the timeout does (the waiter left the list under CV_LOCK, notify_one finds
/// nobody); never both, never neither, and the mutex ends free.
#[test]
fn condvar_timeout_races_notify_one() {
    model(
        &[Event::CondWait, Event::CondWakeOne, Event::CondTimeout],
        || {
            let s = Arc::new((RawMutex::<SpinOff>::new(), RawCondvar::<SpinOff>::new()));
            let s2 = s.clone();
            let h = loom::thread::spawn(move || {
                let (m, cv) = &*s2;
                let mut t = m.lock();
                // Under loom the deadline is reached only through a futex wait
                // that loom lets time out.
                let d = klock::internal::wait::now_ns() + 1;
                let timed_out = unsafe { cv.wait_until_ns(m, &mut t, Some(d)) };
                unsafe { m.unlock(t) };
                timed_out
            });
            let (m, cv) = &*s;
            let t = m.lock();
            unsafe { m.unlock(t) };
            let woke = cv.notify_one();
            let timed_out = h.join().unwrap();
            assert_ne!(woke, timed_out, "exactly one of notify and timeout wins");
            assert!(!cv.has_waiters());
            assert_eq!(m.owner_word(), 0);
        },
    );
}

/// Condvar notify_all outside the mutex: the requeue finds the mutex free and
/// must wake the head itself.
#[test]
fn condvar_notify_all_unlocked() {
    model(&[Event::CondWait, Event::CondRequeue], || {
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
    model(&[Event::CondWait, Event::CondRequeue], || {
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

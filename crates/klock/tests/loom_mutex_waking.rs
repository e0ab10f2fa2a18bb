//! Loom models of the mutex's WAKING rule (INV-WAKING: an unlock does not wake
//! another waiter while a woken one has not re-armed or left), with handoff disabled
//! so that woken waiters fail, re-arm and sleep again instead of being handed
//! the lock (cfg(loom) only; its own process, so its own tunables).
//!
//! `.ci/loom --test loom_mutex_waking` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! The futex is modelled exactly: a waiter nobody wakes blocks forever and
//! loom reports a deadlock, so a completed model shows no lost wake-up; loom's
//! `UnsafeCell` checks mutual exclusion. The rule itself is checked per
//! execution on the lock's event counts (`--features stats`, as CI builds
//! it; every model thread runs on the test's OS thread, so this thread's
//! counters are the execution's): a waiter is armed (`mutex_arm`: SLEEPING,
//! under WLOCK) when it joins the list and each time it re-arms after a
//! wake-up, and every wake (`mutex_wake`) turns an armed waiter WOKEN, so
//! `mutex_wake <= mutex_arm` unless some unlock woke a waiter that was
//! already woken and had not re-armed. Each model also shows that some
//! execution took the WAKING branch of unlock (`mutex_wake_pending`: an
//! unlock with waiters released without a wake-up).
#![cfg(loom)]

use klock::internal::mutex::RawMutexInternals as _;
use klock::stat::{Event, Snapshot, thread_snapshot};
use klock::{SpinOff, SpinOsq};
use loom::sync::Arc;

mod loom_common;
use loom_common::{Branch, Shared, loom_tunables, run_model_reaching, spawn_incrs};

fn model(reach: &[Event], f: impl Fn() + Sync + Send + 'static) {
    let mut t = loom_tunables();
    // Never hand off: woken waiters must re-arm and sleep again.
    t.mutex_handoff_ns = 1_000_000_000;
    run_model_reaching(t, 2, reach, f);
}

/// The WAKING rule, per execution (counts since `start`, taken at the start
/// of the model closure): no wake without an arm it consumes. Returns the
/// execution's counts.
fn check_waking_rule(start: &Snapshot) -> Snapshot {
    let d = thread_snapshot().delta(start);
    let (wakes, arms) = (d.get(Event::MutexWake), d.get(Event::MutexArm));
    assert!(
        wakes <= arms,
        "{wakes} wake-ups for {arms} arms: an unlock woke a waiter that was \
         already woken and had not re-armed (the WAKING rule)"
    );
    d
}

/// Two sleepers and an owner that re-takes the lock: the unlock after a
/// wake-up releases without waking (WAKING set) and the woken waiter, failing,
/// clears WAKING when it re-arms, so the next unlock wakes again. Per
/// execution: the WAKING rule. Reached: an execution with a skipped wake-up
/// (`mutex_wake_pending`) and two wake-ups.
#[test]
fn waking_two_sleepers_owner_relocks() {
    static AGAIN: Branch = Branch::new();
    model(
        &[Event::MutexSleep, Event::MutexWake, Event::MutexWakePending],
        || {
            let start = thread_snapshot();
            let s = Arc::new(Shared::<SpinOff>::new());
            let hs = spawn_incrs(&s, 2);
            s.incr();
            s.incr();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(s.get(), 4);
            assert_eq!(s.m.owner_word(), 0);
            let d = check_waking_rule(&start);
            if d.get(Event::MutexWakePending) > 0 && d.get(Event::MutexWake) >= 2 {
                AGAIN.hit();
            }
        },
    );
    AGAIN.assert_reached("an unlock skipped the wake-up (WAKING), and a later one woke again");
}

/// The same with spinning (OSQ, woken-waiter spinning): the other thread's
/// adaptive score sends it to the wait list at once (without it, loom's
/// spinner never outlasts the owner and never sleeps); main's unlock wakes
/// it, main re-takes the lock, and its next unlock, WAKING set, releases
/// without a wake-up: the woken waiter, spinning on the owner, takes the
/// lock and leaves the list, clearing WAKING. Per execution: the WAKING
/// rule. Reached: an execution where the waiter slept, was woken once, and
/// got the lock after main's unlock skipped the wake-up.
#[test]
fn waking_spinning_owner_relocks() {
    static RUNNING: Branch = Branch::new();
    model(
        &[Event::MutexSleep, Event::MutexWake, Event::MutexWakePending],
        || {
            let start = thread_snapshot();
            let s = Arc::new(Shared::<SpinOsq>::new());
            let s2 = s.clone();
            let h = loom::thread::spawn(move || {
                klock::internal::mutex::set_adapt_score(0);
                s2.incr();
            });
            s.incr();
            s.incr();
            h.join().unwrap();
            assert_eq!(s.get(), 3);
            assert_eq!(s.m.owner_word(), 0);
            let d = check_waking_rule(&start);
            if d.get(Event::MutexWakePending) > 0 && d.get(Event::MutexWake) == 1 {
                RUNNING.hit();
            }
        },
    );
    RUNNING
        .assert_reached("the woken waiter took the lock after an unlock that skipped the wake-up");
}

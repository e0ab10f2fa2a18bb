//! INV-RT-NOSPIN: a thread under `SCHED_FIFO` never spins or yields for a
//! klock mutex or rwsem; it queues and sleeps at once. Checked with the
//! event counters (feature `stats`), in its own test process so that no
//! other test moves them: the same contended scenario is run by a
//! `SCHED_OTHER` thread (which must spin, or the check could not fail) and
//! by a `SCHED_FIFO` thread (which must not).
//!
//! Every round is contended by construction: the holder keeps the lock
//! until the measured thread has gone to sleep waiting for it (the sleep
//! counter moved), not for a fixed time, so a loaded machine that runs the
//! measured thread late cannot turn a round into an uncontended fast path.
//! A watchdog (`HANG_SECS`) only catches a waiter that never sleeps, and
//! names it.
//!
//! Setting `SCHED_FIFO` needs root or `CAP_SYS_NICE`: without it the test
//! prints why it did not run, and fails if `KLOCK_CI=1` (set by `.ci/run`).
//!
//! The floor rwlock family (`klock::internal::rwlock::RawRwLockFloorOf`;
//! `klock::RwLock` is its `RawRwLockBatched`) has one spin, `spin_while`
//! (about 2 µs of read-only looks at the word before each sleep, in the
//! read, write and upgrade slow paths), counted as `rwlock_spin`.
//! `floor_realtime_waiters_never_spin` calls each slow path on a lock the
//! calling thread holds itself (the floor has no owner) with a deadline
//! already past, so each call goes through the spin to the point of
//! sleeping (the waiter bit announced, checked) and returns there: a
//! `SCHED_OTHER` thread must enter the spin in every call, a `SCHED_FIFO`
//! one never.
#![cfg(all(feature = "stats", not(loom)))]

use klock::internal::rwlock::{
    RW_FLOOR_READERS_WAITING, RW_FLOOR_UPGRADABLE, RW_FLOOR_WRITE_LOCKED, RW_FLOOR_WRITERS_WAITING,
    RawRwLockBatched,
};
use klock::stat::{self, Event};
use std::sync::{Barrier, Mutex as StdMutex};
use std::time::Duration;

/// The tests of this file run one at a time (the counters are process-wide).
static SERIAL: StdMutex<()> = StdMutex::new(());

/// The watchdog: far beyond a normal run (well under a second).
const HANG_SECS: u64 = 120;

/// What the test is waiting for now (the watchdog's message).
static WAITING_FOR: StdMutex<String> = StdMutex::new(String::new());

fn waiting_for(what: String) {
    *WAITING_FOR.lock().unwrap_or_else(|e| e.into_inner()) = what;
}

/// Put the calling thread under `policy` (priority 1 for FIFO); the errno on failure.
fn set_policy(policy: libc::c_int) -> Result<(), i32> {
    let prio = if policy == libc::SCHED_FIFO { 1 } else { 0 };
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `p` is a valid sched_param on this frame; 0 = calling thread.
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &p) };
    if r == 0 {
        klock::internal::wait::sched_changed();
        Ok(())
    } else {
        Err(r)
    }
}

const ROUNDS: usize = 8;

/// The measured thread's sleeps so far: the event each round waits for.
fn sleeps(rw: bool) -> u64 {
    stat::snapshot().get(if rw {
        Event::RwSleepWriter
    } else {
        Event::MutexSleep
    })
}

/// Hold on (the caller holds the lock) until the measured thread has gone
/// to sleep waiting for it: the sleep counter has moved past `base`.
fn until_asleep(rw: bool, base: u64, what: String) {
    waiting_for(what);
    while sleeps(rw) == base {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Each round a holder takes the lock and keeps it until the measured
/// thread (running under `policy`) has locked it and gone to sleep; then
/// releases it. Returns the counter deltas.
fn contend(policy: libc::c_int, rw: bool) -> stat::Snapshot {
    let m = klock::Mutex::new(0u64);
    let l = klock::RwLockRwsem::new(0u64);
    let go = Barrier::new(2);
    let name = format!(
        "the {} {}",
        if policy == libc::SCHED_FIFO {
            "SCHED_FIFO"
        } else {
            "SCHED_OTHER"
        },
        if rw { "RwLock writer" } else { "Mutex waiter" }
    );
    let before = stat::snapshot();
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..ROUNDS {
                let what = format!("round {round}: {name} to go to sleep on the held lock");
                // The measured thread's sleeps of the earlier rounds all
                // happened before the last barrier.
                let base = sleeps(rw);
                if rw {
                    let mut g = l.write();
                    go.wait();
                    until_asleep(rw, base, what);
                    *g += 1;
                } else {
                    let mut g = m.lock();
                    go.wait();
                    until_asleep(rw, base, what);
                    *g += 1;
                }
                go.wait();
            }
        });
        s.spawn(|| {
            set_policy(policy).expect("set the measured thread's policy");
            assert_eq!(
                klock::internal::wait::realtime(),
                policy == libc::SCHED_FIFO,
                "wait::realtime() reports the policy"
            );
            for _ in 0..ROUNDS {
                go.wait();
                if rw {
                    *l.write() += 1;
                } else {
                    *m.lock() += 1;
                }
                go.wait();
            }
            set_policy(libc::SCHED_OTHER).unwrap();
        });
    });
    assert_eq!(*m.lock() + *l.read(), 2 * ROUNDS as u64);
    stat::snapshot().delta(&before)
}

#[test]
fn realtime_waiters_never_spin() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // On a helper thread, so that a waiter that never sleeps (the holder
    // would wait for it forever) fails the test, naming it, instead of
    // hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(check);
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(HANG_SECS)) {
        Ok(Ok(())) => {}
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => {
            let s = stat::snapshot();
            let counted: Vec<String> = Event::ALL
                .iter()
                .filter(|&&e| s.get(e) > 0)
                .map(|&e| format!("{}={}", e.name(), s.get(e)))
                .collect();
            panic!(
                "watchdog: after {HANG_SECS} s still waiting for {}; events counted since the \
                 start: {}",
                WAITING_FOR.lock().unwrap_or_else(|e| e.into_inner()),
                counted.join(" ")
            )
        }
    }
}

/// Can this thread go `SCHED_FIFO`? If not, say why `test` did not run
/// (a failure under `.ci/run` or a CI service) and return `false`.
fn fifo_allowed(test: &str) -> bool {
    if let Err(e) = set_policy(libc::SCHED_FIFO) {
        let why =
            format!("{test} NOT RUN: SCHED_FIFO refused (errno {e}; needs root or CAP_SYS_NICE)");
        // Under .ci/run (KLOCK_CI=1) or a CI service this is a failure.
        assert!(
            ["KLOCK_CI", "CI"]
                .iter()
                .all(|v| std::env::var_os(v).is_none_or(|v| v.is_empty())),
            "{why}"
        );
        eprintln!("{why}");
        return false;
    }
    set_policy(libc::SCHED_OTHER).unwrap();
    true
}

fn check() {
    if !fifo_allowed("realtime_waiters_never_spin") {
        return;
    }

    // Mutex: a SCHED_OTHER waiter spins on the owner (the check can fail) ...
    // (Every round is contended: the holder waits for the waiter's sleep.)
    let other = contend(libc::SCHED_OTHER, false);
    assert!(
        other.get(Event::MutexSlowpath) >= ROUNDS as u64,
        "every round contended: {other:?}"
    );
    assert!(
        other.get(Event::MutexSpinSuccess) + other.get(Event::MutexSpinFail) > 0,
        "control: a SCHED_OTHER waiter spins: {other:?}"
    );
    // ... a SCHED_FIFO one queues and sleeps at once.
    let fifo = contend(libc::SCHED_FIFO, false);
    assert!(
        fifo.get(Event::MutexSlowpath) >= ROUNDS as u64,
        "every round contended: {fifo:?}"
    );
    assert!(fifo.get(Event::MutexSleep) >= ROUNDS as u64, "{fifo:?}");
    for e in [
        Event::MutexSpinSuccess,
        Event::MutexSpinFail,
        Event::MutexSpinOwnerNs,
        Event::OsqWaitNs,
    ] {
        assert_eq!(fifo.get(e), 0, "{e:?} for a SCHED_FIFO waiter: {fifo:?}");
    }

    // RwLock writers: the same.
    let other = contend(libc::SCHED_OTHER, true);
    assert!(
        other.get(Event::RwSpinSuccess) + other.get(Event::RwSpinFail) > 0,
        "control: a SCHED_OTHER writer spins: {other:?}"
    );
    let fifo = contend(libc::SCHED_FIFO, true);
    assert!(fifo.get(Event::RwSleepWriter) >= ROUNDS as u64, "{fifo:?}");
    for e in [Event::RwSpinSuccess, Event::RwSpinFail, Event::OsqWaitNs] {
        assert_eq!(fifo.get(e), 0, "{e:?} for a SCHED_FIFO writer: {fifo:?}");
    }
}

// ---- the floor rwlock family (klock::RwLock) ---------------------------------

/// Calls per slow path and policy.
const FLOOR_CALLS: u64 = 50;

/// The floor slow paths a waiter spins in, each called with a past deadline.
const FLOOR_PATHS: [&str; 3] = [
    "write (behind a read lock)",
    "read (behind the write lock)",
    "upgrade (beside another reader)",
];

/// `rwlock_spin` now (the floor's spins entered, process-wide; the tests of
/// this file run one at a time and only the measured thread uses a floor lock).
fn floor_spins_now() -> u64 {
    stat::snapshot().get(Event::RwFloorSpin)
}

/// On a thread running under `policy`: each of [`FLOOR_PATHS`]
/// [`FLOOR_CALLS`] times, returning how many spins each path entered. A
/// call goes through the spin to the point of sleeping (checked by the
/// waiter bit it announced) and returns `false` there (its deadline, 0,
/// has passed): every call of a thread that may spin enters the spin.
fn floor_spins(policy: libc::c_int) -> [u64; 3] {
    const W: u32 = RW_FLOOR_WRITERS_WAITING;
    const R: u32 = RW_FLOOR_READERS_WAITING;
    const U: u32 = RW_FLOOR_UPGRADABLE;
    std::thread::scope(|s| {
        s.spawn(|| {
            set_policy(policy).expect("set the measured thread's policy");
            assert_eq!(
                klock::internal::wait::realtime(),
                policy == libc::SCHED_FIFO,
                "wait::realtime() reports the policy"
            );
            let l = RawRwLockBatched::new();
            let mut spins = [0; 3];
            // The write slow path, behind this thread's own read lock.
            l.lock_shared();
            let before = floor_spins_now();
            for _ in 0..FLOOR_CALLS {
                assert!(
                    !l.lock_exclusive_until_ns(0),
                    "a write lock beside a read lock"
                );
                assert_eq!(l.state(), 1 | W, "the writer announced itself");
            }
            spins[0] = floor_spins_now() - before;
            // SAFETY: the read lock taken above.
            unsafe { l.unlock_shared() };
            assert_eq!(l.state(), 0, "the last reader out cleared the bit");
            // The read slow path, behind this thread's own write lock.
            l.lock_exclusive();
            let before = floor_spins_now();
            for _ in 0..FLOOR_CALLS {
                assert!(
                    !l.lock_shared_until_ns(0),
                    "a read lock beside the write lock"
                );
                assert_eq!(
                    l.state(),
                    RW_FLOOR_WRITE_LOCKED | R,
                    "the reader announced itself"
                );
            }
            spins[1] = floor_spins_now() - before;
            // SAFETY: the write lock taken above.
            unsafe { l.unlock_exclusive() };
            assert_eq!(l.state(), 0);
            // The upgrade slow path, beside this thread's own other read
            // lock (a timed-out upgrade takes its bit back).
            l.lock_upgradable();
            l.lock_shared();
            let before = floor_spins_now();
            for _ in 0..FLOOR_CALLS {
                // SAFETY: this thread holds the upgradable read lock.
                assert!(
                    !unsafe { l.upgrade_until_ns(0) },
                    "an upgrade beside another reader"
                );
                assert_eq!(l.state(), 2 | U, "the timed-out upgrade took its bit back");
            }
            spins[2] = floor_spins_now() - before;
            // SAFETY: the plain and the upgradable read lock taken above.
            unsafe { l.unlock_shared() };
            // SAFETY: as above.
            unsafe { l.unlock_upgradable() };
            assert_eq!(l.state(), 0);
            set_policy(libc::SCHED_OTHER).unwrap();
            spins
        })
        .join()
        .unwrap()
    })
}

#[test]
fn floor_realtime_waiters_never_spin() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !fifo_allowed("floor_realtime_waiters_never_spin") {
        return;
    }
    // The control: a SCHED_OTHER waiter enters the spin in every call of
    // every path, so the check could fail ...
    let other = floor_spins(libc::SCHED_OTHER);
    // ... a SCHED_FIFO one never does.
    let fifo = floor_spins(libc::SCHED_FIFO);
    for (k, path) in FLOOR_PATHS.iter().enumerate() {
        assert!(
            other[k] >= FLOOR_CALLS,
            "control: a SCHED_OTHER waiter entered the spin {} times in {FLOOR_CALLS} calls \
             of the floor's {path} path",
            other[k]
        );
        assert_eq!(
            fifo[k], 0,
            "INV-RT-NOSPIN: a SCHED_FIFO waiter entered the spin in the floor's {path} path"
        );
    }
}

//! Torture test for the one-word mutexes of issue 32: the floor
//! (`klock::internal::mutex::MutexFloor`, std's futex protocol) and the
//! barging mutex (`MutexBarge`: exact sleeper count, one wake-up in flight,
//! hand-off to a running waiter) and the granting floor (`MutexGrant`:
//! std's protocol plus a hand-off to a running waiter), in the spirit of `torture_mutex.rs`: at least 32
//! threads (16x the CPUs if more), random hold times (some sleeping, some
//! yielding), a lost-update counter, an "inside" flag, timed lockers mixed
//! in, and a starvation check (the run goes on until every thread has
//! acquired the mutex and some timed lock has timed out). Nothing here
//! asserts on timing or throughput: the watchdog only catches a hang, and
//! when it fires it names what did not happen. Also run under
//! `.ci/chaos --test torture_floor`. The barging mutex's run also checks
//! that its word is 0 at the end (every sleeper left the count).
#![cfg(not(loom))]

mod torture_common;
use torture_common::Rng;

use klock::internal::mutex::{RawMutexBarge, RawMutexFloor, RawMutexGrant};
use lock_api::{Mutex, RawMutex, RawMutexTimed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the run may take before the watchdog calls it a hang: far more
/// than it needs (seconds), so that only a hang trips it.
const HANG_SECS: u64 = 120;

/// The outer watchdog: beyond the run's own event watchdog, for a worker
/// that hangs after its first acquisition (the join would wait forever).
const TORTURE_HANG_SECS: u64 = HANG_SECS + 60;

/// Run `f` on a helper thread; fail (panic) if it does not finish within
/// `secs` instead of hanging the test run.
fn watchdog<R: Send + 'static>(name: &str, secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("watchdog: {name} did not finish within {secs} s (hang or lost wake-up)"),
    }
}

fn threads() -> usize {
    (16 * klock::internal::wait::effective_cpus()).max(32)
}

/// Data protected by the mutex: a plain counter updated with a slow
/// read-modify-write, and a flag that detects two holders at once.
struct Data {
    counter: u64,
    inside: bool,
}

/// The run, for any of the one-word mutexes; returns the mutex for the
/// caller's own end-of-run checks.
fn torture<R>(run: Duration) -> Arc<Mutex<R, Data>>
where
    R: RawMutex + RawMutexTimed<Duration = Duration> + Send + Sync + 'static,
{
    let n = threads();
    let m = Arc::new(Mutex::<R, Data>::new(Data {
        counter: 0,
        inside: false,
    }));
    let stop = Arc::new(AtomicBool::new(false));
    // Per worker: has it acquired the mutex yet?
    let acquired: Arc<Vec<AtomicBool>> = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    // Timed lock attempts that gave up, all workers together.
    let timeouts = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (m, stop) = (m.clone(), stop.clone());
            let (acquired, timeouts) = (acquired.clone(), timeouts.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((i as u64 + 1) * 0x1234_5678));
                let mut ops = 0u64;
                // Relaxed: a stop flag; join orders the rest.
                while !stop.load(Ordering::Relaxed) {
                    let r = rng.next();
                    let mut g = if i % 4 == 3 && r.is_multiple_of(2) {
                        // Timed lockers; one attempt in eight allows 1 µs.
                        let d = if r.is_multiple_of(16) {
                            Duration::from_micros(1)
                        } else {
                            Duration::from_micros(200 + r % 3000)
                        };
                        match m.try_lock_for(d) {
                            Some(g) => g,
                            None => {
                                // Relaxed: a count read after join (and as a
                                // progress hint before).
                                timeouts.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                        }
                    } else {
                        m.lock()
                    };
                    assert!(!g.inside, "two holders at once");
                    g.inside = true;
                    let v = g.counter;
                    match r % 1000 {
                        0..=2 => std::thread::sleep(Duration::from_millis(1)),
                        3..=40 => std::thread::yield_now(),
                        41..=200 => {
                            for _ in 0..(r % 200) {
                                std::hint::spin_loop();
                            }
                        }
                        _ => {}
                    }
                    g.counter = v + 1;
                    g.inside = false;
                    drop(g);
                    ops += 1;
                    if ops == 1 {
                        // Relaxed: a progress flag, polled by the main thread.
                        acquired[i].store(true, Ordering::Relaxed);
                    }
                }
                ops
            })
        })
        .collect();
    std::thread::sleep(run);
    // Wait for the events, not for a time; the watchdog only catches a hang.
    loop {
        let starved: Vec<usize> = (0..n)
            .filter(|&i| !acquired[i].load(Ordering::Relaxed))
            .collect();
        let timed_out = timeouts.load(Ordering::Relaxed) > 0;
        if starved.is_empty() && timed_out {
            break;
        }
        if start.elapsed() > Duration::from_secs(HANG_SECS) {
            stop.store(true, Ordering::Relaxed);
            let mut missing = Vec::new();
            if !starved.is_empty() {
                missing.push(format!(
                    "threads {starved:?} of {n} never acquired the mutex (starved, or a lost wake-up)"
                ));
            }
            if !timed_out {
                missing.push("no timed lock timed out (the timeout path was not exercised)".into());
            }
            panic!("watchdog: after {HANG_SECS} s: {}", missing.join("; "));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let g = m.lock();
    assert_eq!(g.counter, total, "lost update");
    drop(g);
    assert!(!m.is_locked(), "word not clean after the run");
    m
}

#[test]
fn torture_floor() {
    watchdog("torture_floor", TORTURE_HANG_SECS, || {
        let m = torture::<RawMutexFloor>(Duration::from_millis(1000));
        // SAFETY: only reads the word; no acquisition is live.
        assert_eq!(unsafe { m.raw() }.state(), 0, "word not clean");
    });
}

#[test]
fn torture_barge() {
    watchdog("torture_barge", TORTURE_HANG_SECS, || {
        let m = torture::<RawMutexBarge>(Duration::from_millis(1000));
        // SAFETY: only reads the word; no acquisition is live.
        let w = unsafe { m.raw() }.word();
        assert_eq!(
            w, 0,
            "word not clean: {w:#x} (a sleeper still counted, or a flag left)"
        );
    });
}

#[test]
fn torture_grant() {
    watchdog("torture_grant", TORTURE_HANG_SECS, || {
        let m = torture::<RawMutexGrant>(Duration::from_millis(1000));
        // SAFETY: only reads the word; no acquisition is live.
        let w = unsafe { m.raw() }.word();
        assert_eq!(
            w, 0,
            "word not clean: {w:#x} (a request or grant left behind)"
        );
    });
}

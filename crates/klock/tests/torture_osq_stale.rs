//! Torture of the mutex whose OSQ spinners give up often (its own process,
//! so its own tunables): `KLOCK_OSQ_MAX_SPINNERS` 8 lets several spinners
//! queue in the OSQ even on a 2-CPU machine (by default at most CPUs - 1
//! do, i.e. one there, so the OSQ never holds a second node and never
//! unqueues), and `KLOCK_OSQ_STALE_NS` 1 makes a spinner give up whenever
//! its predecessor's heartbeat is a microsecond old. The spinners that give
//! up, and the heads they leave behind, go on to the wait list with the
//! same nodes: a lost update, two holders, a corrupted wait-list link
//! ("corrupted queue tail"), a flag left in the word or a hang (watchdog)
//! fails the test. With `--features stats` it also fails unless OSQ
//! give-ups (`osq_stale`, `osq_unqueue`) happened: the run goes on until
//! both kinds were counted, however long a busy machine takes to run
//! several spinners at once, and only a watchdog far beyond that
//! (`HANG_SECS`) fails it, naming the kind that never happened.
//!
//! The loom model of this mix is `loom_osq_stale.rs`'s
//! `mutex_osq_stale_three_lockers`; the ordering defect it found (the OSQ
//! unlock's tail CAS lacked Acquire) is not observable on x86, where every
//! CAS is a full barrier, so this test is coverage of the path, not a
//! reproducer of that defect.
#![cfg(not(loom))]

mod torture_common;
use klock::internal::mutex::RawMutexInternals as _;
use torture_common::{Rng, work};

use klock::stat::Event;
use klock::{RawMutex, SpinOsq};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The run's watchdog: far beyond a normal run (1.5 s natively, seconds
/// under chaos on a busy machine), so that it only catches a hang or
/// give-ups that never happen.
const HANG_SECS: u64 = 120;

type M<T> = lock_api::Mutex<RawMutex<SpinOsq>, T>;

struct Data {
    counter: u64,
    inside: bool,
}

#[test]
fn torture_osq_give_ups() {
    let mut t = klock::tune::Tunables::DEFAULT;
    t.osq_max_spinners = 8;
    t.osq_stale_ns = 1;
    assert!(
        klock::tune::set(t),
        "tunables already fixed in this process"
    );
    let before = klock::stat::snapshot();
    let start = before.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(move || run(before));
        let _ = tx.send(r);
    });
    // The run fails by itself after HANG_SECS without give-ups; this one
    // also catches a worker that hangs (the join would wait forever).
    let limit = HANG_SECS + 60;
    match rx.recv_timeout(Duration::from_secs(limit)) {
        Ok(Ok(())) => {}
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!(
            "watchdog: torture_osq_give_ups did not finish within {limit} s (hang or lost \
             wake-up)"
        ),
    }
    if klock::stat::ENABLED {
        let d = klock::stat::snapshot().delta(&start);
        eprint!("{}", d.report());
        for e in [Event::OsqStale, Event::OsqUnqueue] {
            assert!(d.get(e) > 0, "no OSQ give-up counted as {}", e.name());
        }
    }
}

/// The kinds of OSQ give-up not counted since `before` (empty: both were).
fn missing_give_ups(before: &klock::stat::Snapshot) -> Vec<&'static str> {
    let d = klock::stat::snapshot().delta(before);
    [Event::OsqStale, Event::OsqUnqueue]
        .into_iter()
        .filter(|&e| d.get(e) == 0)
        .map(|e| e.name())
        .collect()
}

fn run(before: klock::stat::Snapshot) {
    let n = 8 * klock::internal::wait::effective_cpus();
    let m = Arc::new(M::new(Data {
        counter: 0,
        inside: false,
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (m, stop) = (m.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((i as u64 + 1) * 0x2545_f491));
                let mut ops = 0u64;
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    let mut g = m.lock();
                    assert!(!g.inside, "two holders");
                    g.inside = true;
                    // A slow read-modify-write, held long enough (now and
                    // then) for spinners to queue behind the OSQ head.
                    let c = g.counter;
                    let hold = if rng.below(8) == 0 { 20_000 } else { 200 };
                    work(rng.below(hold));
                    g.counter = c + 1;
                    g.inside = false;
                    drop(g);
                    ops += 1;
                    work(rng.below(500));
                }
                ops
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    if klock::stat::ENABLED {
        // Give-ups need several spinners running at once, which a busy
        // machine (CI beside other jobs) may not grant within 1.5 s: run on
        // until both kinds were counted (the caller asserts that they
        // were). Only if they never come does the watchdog end the run.
        loop {
            let missing = missing_give_ups(&before);
            if missing.is_empty() {
                break;
            }
            if start.elapsed() > Duration::from_secs(HANG_SECS) {
                // Relaxed: a stop flag.
                stop.store(true, Ordering::Relaxed);
                panic!(
                    "watchdog: no OSQ give-up counted as {} after {HANG_SECS} s of {n} \
                     contending threads",
                    missing.join(" or ")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Relaxed: a stop flag; join orders the rest (a thread that does not
    // stop is the caller's watchdog's).
    stop.store(true, Ordering::Relaxed);
    let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let g = m.lock();
    assert_eq!(g.counter, total, "lost update");
    drop(g);
    // SAFETY: only reads the word.
    assert_eq!(unsafe { m.raw() }.owner_word(), 0, "flags left behind");
}

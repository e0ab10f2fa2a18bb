//! Torture tests for klock's mutex and condvar in the spirit of `locktorture`:
//! 16x more threads than CPUs, random hold times (some longer than the handoff
//! threshold), a lost-update counter, timed lockers mixed in, a starvation
//! check (every thread acquires the mutex at least once: the run goes on
//! until each has) and watchdogs that fail the test instead of hanging CI.
//! Nothing here asserts on timing or throughput: a watchdog only catches a
//! hang, and when it fires it names what did not happen.
#![cfg(not(loom))]

mod torture_common;
use klock::internal::mutex::RawMutexInternals as _;
use torture_common::Rng;

use klock::{Condvar, RawCondvar};
use klock::{RawMutex, SpinNoQueue, SpinOff, SpinOsq, SpinPolicy};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

type M<S, T> = lock_api::Mutex<RawMutex<S>, T>;
type C<S> = lock_api::Condvar<RawCondvar<S>>;

/// How long a test may take before its watchdog calls it a hang: far more
/// than any of them needs (seconds), so that only a hang trips it.
const HANG_SECS: u64 = 120;

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
    16 * klock::internal::wait::effective_cpus()
}

/// Data protected by the mutex: a plain (non-atomic) counter updated with a
/// deliberately slow read-modify-write, and an "inside" flag that detects two
/// holders at once.
struct Data {
    counter: u64,
    inside: bool,
}

/// The torture run: `threads()` workers lock (plain and timed) for at least
/// `run`, and then on until every worker has acquired the mutex at least
/// once and some timed lock has timed out: the events this test checks, at
/// whatever pace the machine allows. Only a hang keeps them from happening:
/// after `HANG_SECS` the test fails and names the threads that never got the
/// mutex, or the timeout path that never ran.
fn torture<S: SpinPolicy>(run: Duration) {
    let n = threads();
    let m = Arc::new(M::<S, Data>::new(Data {
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
                        // Timed lockers: leave the wait list on timeout. One
                        // attempt in eight allows only 1 µs, so that with 16
                        // threads a CPU some time out (the run goes on until
                        // one has, and the timeout path is asserted below).
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
                        // Rare holds longer than the handoff threshold (2 ms).
                        0..=2 => std::thread::sleep(Duration::from_millis(3)),
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
                    let fair = r.is_multiple_of(97);
                    if fair {
                        lock_api::MutexGuard::unlock_fair(g);
                    } else if r.is_multiple_of(7) {
                        // The interposer's unlock: the uncontended fast path,
                        // and the full unlock when a flag is set.
                        std::mem::forget(g);
                        // SAFETY: we hold the mutex; its guard was forgotten.
                        let raw = unsafe { m.raw() };
                        // SAFETY: as above.
                        if !unsafe { raw.try_unlock_uncontended() } {
                            // SAFETY: as above; the fast path released nothing.
                            unsafe { raw.unlock_any() };
                        }
                    } else {
                        drop(g);
                    }
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
    // Starvation check and timeout path: wait for the events, not for a
    // time. Every worker must acquire the mutex at least once, and some
    // timed lock must time out; a watchdog far beyond any normal run turns
    // a thread that never gets in (or a timeout path that never runs) into
    // a failure naming it.
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
    // The events the run waited for (they hold here by construction; a
    // run without them failed above).
    assert!(
        acquired.iter().all(|a| a.load(Ordering::Relaxed)),
        "a thread never acquired the mutex"
    );
    // The timed lockers' give-up path ran (and the clean word below shows
    // that every one of them left the wait list).
    assert!(
        timeouts.load(Ordering::Relaxed) > 0,
        "no timed lock timed out: the timeout path was not exercised"
    );
    let g = m.lock();
    assert_eq!(g.counter, total, "lost update");
    drop(g);
    // SAFETY: only reads the word.
    assert_eq!(unsafe { m.raw() }.owner_word(), 0, "flags left behind");
}

/// The outer watchdog of a torture run: beyond the run's own event
/// watchdog (`HANG_SECS`), for a worker that hangs after its first
/// acquisition (the join would wait for it forever).
const TORTURE_HANG_SECS: u64 = HANG_SECS + 60;

#[test]
fn torture_osq() {
    watchdog("torture_osq", TORTURE_HANG_SECS, || {
        torture::<SpinOsq>(Duration::from_millis(1500))
    });
}

#[test]
fn torture_nospin() {
    watchdog("torture_nospin", TORTURE_HANG_SECS, || {
        torture::<SpinOff>(Duration::from_millis(1000))
    });
}

#[test]
fn torture_noqueue() {
    watchdog("torture_noqueue", TORTURE_HANG_SECS, || {
        torture::<SpinNoQueue>(Duration::from_millis(1000))
    });
}

/// Bounded producer/consumer queue with two condvars; consumers use timed
/// waits (their timeouts race with notifies). Every item is consumed once.
fn producer_consumer<S: SpinPolicy>() {
    const CAP: usize = 8;
    const PER_PRODUCER: u64 = 3000;
    let producers = 4;
    let consumers = 2 * klock::internal::wait::effective_cpus() + 3;
    struct Q {
        items: std::collections::VecDeque<u64>,
        done: usize,
    }
    let state = Arc::new((
        M::<S, Q>::new(Q {
            items: Default::default(),
            done: 0,
        }),
        C::<S>::new(),
        C::<S>::new(),
    ));
    let sum = Arc::new(AtomicU64::new(0));
    let count = Arc::new(AtomicU64::new(0));
    let mut hs = Vec::new();
    for p in 0..producers {
        let st = state.clone();
        hs.push(std::thread::spawn(move || {
            let (m, not_empty, not_full) = &*st;
            for k in 0..PER_PRODUCER {
                let mut g = m.lock();
                not_full.wait_while(&mut g, |q| q.items.len() >= CAP);
                g.items.push_back(p * PER_PRODUCER + k + 1);
                drop(g);
                not_empty.notify_one();
            }
            m.lock().done += 1;
            not_empty.notify_all();
        }));
    }
    for c in 0..consumers {
        let (st, sum, count) = (state.clone(), sum.clone(), count.clone());
        hs.push(std::thread::spawn(move || {
            let (m, not_empty, not_full) = &*st;
            let mut g = m.lock();
            loop {
                if let Some(v) = g.items.pop_front() {
                    sum.fetch_add(v, Ordering::Relaxed);
                    count.fetch_add(1, Ordering::Relaxed);
                    not_full.notify_one();
                    continue;
                }
                if g.done == producers as usize {
                    break;
                }
                if c.is_multiple_of(2) {
                    not_empty.wait_for(&mut g, Duration::from_micros(500));
                } else {
                    not_empty.wait(&mut g);
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let n = producers * PER_PRODUCER;
    assert_eq!(count.load(Ordering::Relaxed), n);
    assert_eq!(sum.load(Ordering::Relaxed), n * (n + 1) / 2);
}

#[test]
fn condvar_producer_consumer() {
    watchdog(
        "producer_consumer osq",
        HANG_SECS,
        producer_consumer::<SpinOsq>,
    );
    watchdog(
        "producer_consumer nospin",
        HANG_SECS,
        producer_consumer::<SpinOff>,
    );
}

/// Hundreds of waiters: notify_one counts exactly, nobody else wakes, then
/// notify_all moves the rest (returning the exact count) and all finish.
#[test]
fn condvar_hundreds_of_waiters() {
    watchdog("hundreds of waiters", HANG_SECS, || {
        const N: usize = 300;
        const K: usize = 40;
        let st = Arc::new((klock::Mutex::new(0usize), Condvar::new()));
        let woke = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..N)
            .map(|_| {
                let (st, woke) = (st.clone(), woke.clone());
                std::thread::spawn(move || {
                    let mut g = st.0.lock();
                    *g += 1;
                    // One plain wait: the queued path has no spurious wake-ups.
                    st.1.wait(&mut g);
                    woke.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Once we hold the mutex and see N registrations, all N are enqueued
        // (each enqueues before unlocking).
        loop {
            let g = st.0.lock();
            if *g == N {
                break;
            }
            drop(g);
            std::thread::sleep(Duration::from_millis(1));
        }
        let g = st.0.lock();
        for _ in 0..K {
            assert!(st.1.notify_one(), "a waiter to notify");
        }
        drop(g);
        while woke.load(Ordering::SeqCst) < K {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Correctness, not timing: no one else may have been released.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            woke.load(Ordering::SeqCst),
            K,
            "a waiter returned without a notify"
        );
        let g = st.0.lock();
        assert_eq!(st.1.notify_all(), N - K);
        assert_eq!(st.1.notify_all(), 0);
        drop(g);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(woke.load(Ordering::SeqCst), N);
        // SAFETY: only reads the word.
        assert_eq!(unsafe { st.0.raw() }.owner_word(), 0);
    });
}

/// notify_all with the mutex *not* held: the requeue must wake the head
/// itself (nobody will unlock).
#[test]
fn condvar_notify_all_unlocked() {
    watchdog("notify_all unlocked", HANG_SECS, || {
        for _ in 0..50 {
            let st = Arc::new((klock::Mutex::new(false), Condvar::new()));
            let hs: Vec<_> = (0..6)
                .map(|_| {
                    let st = st.clone();
                    std::thread::spawn(move || {
                        let mut g = st.0.lock();
                        st.1.wait_while(&mut g, |f| !*f);
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_micros(200));
            *st.0.lock() = true;
            st.1.notify_all();
            for h in hs {
                h.join().unwrap();
            }
        }
    });
}

/// The no-node fallback path of mutex and condvar stays correct.
#[test]
fn no_node_fallback() {
    watchdog("no node", HANG_SECS, || {
        let m = Arc::new(klock::Mutex::new(0u64));
        let hs: Vec<_> = (0..8)
            .map(|i| {
                let m = m.clone();
                std::thread::spawn(move || {
                    klock::internal::node::simulate_no_node(i % 2 == 0);
                    for _ in 0..2000 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 16000);
    });
}

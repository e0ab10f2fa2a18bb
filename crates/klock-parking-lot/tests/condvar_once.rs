//! Condvar, WaitTimeoutResult, Once and OnceState.

use parking_lot::{Condvar, Mutex, Once, OnceState, WaitTimeoutResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn notify_counts_are_exact() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let n = 6;
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let p = pair.clone();
            std::thread::spawn(move || {
                let mut g = p.0.lock();
                *g += 1;
                p.1.wait(&mut g);
            })
        })
        .collect();
    // Every thread is waiting once it has counted itself and released the
    // mutex (it queues on the condvar before it unlocks).
    loop {
        if *pair.0.lock() == n {
            break;
        }
        std::thread::yield_now();
    }
    assert!(pair.1.notify_one());
    assert_eq!(pair.1.notify_all(), n as usize - 1);
    assert!(!pair.1.notify_one());
    assert_eq!(pair.1.notify_all(), 0);
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn timed_waits() {
    let m = Mutex::new(0);
    let cv = Condvar::new();
    let mut g = m.lock();
    let t0 = Instant::now();
    let r: WaitTimeoutResult = cv.wait_for(&mut g, Duration::from_millis(20));
    assert!(r.timed_out());
    // The contract, not a speed: a wait that reports a timeout must not return
    // before its deadline (a loaded machine can only make it later).
    assert!(t0.elapsed() >= Duration::from_millis(20));
    assert!(
        cv.wait_until(&mut g, Instant::now() + Duration::from_millis(5))
            .timed_out()
    );
    // A huge timeout does not overflow (it waits without a deadline): wake it.
    std::thread::scope(|s| {
        s.spawn(|| {
            let _g = m.lock(); // the waiter has released the mutex
            cv.notify_one();
        });
        let r = cv.wait_for(&mut g, Duration::MAX);
        assert!(!r.timed_out());
    });
    assert!(
        cv.wait_while_for(&mut g, |v| *v == 0, Duration::from_millis(5))
            .timed_out()
    );
    assert!(
        cv.wait_while_until(
            &mut g,
            |v| *v == 0,
            Instant::now() + Duration::from_millis(5)
        )
        .timed_out()
    );
    *g = 1;
    assert!(
        !cv.wait_while_for(&mut g, |v| *v == 0, Duration::from_millis(5))
            .timed_out()
    );
    assert_eq!(format!("{cv:?}"), "Condvar { .. }");
    let _d: Condvar = Default::default();
}

#[test]
fn wait_while_and_notified_timed_waits() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p = pair.clone();
    let h = std::thread::spawn(move || {
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(1));
            *p.0.lock() += 1;
            p.1.notify_all();
        }
    });
    let mut g = pair.0.lock();
    // A timeout far beyond the five notifies (milliseconds): only a lost
    // wake-up times out.
    let r = pair
        .1
        .wait_while_for(&mut g, |v| *v < 5, Duration::from_secs(120));
    assert!(!r.timed_out() && *g >= 5);
    pair.1.wait_while(&mut g, |v| *v < 10);
    assert_eq!(*g, 10);
    drop(g);
    h.join().unwrap();
}

#[test]
fn condvar_with_two_mutexes_panics() {
    let cv = Arc::new(Condvar::new());
    let m1 = Arc::new(Mutex::new(()));
    let b = Arc::new(Barrier::new(2));
    let (cv2, m12, b2) = (cv.clone(), m1.clone(), b.clone());
    let h = std::thread::spawn(move || {
        let mut g = m12.lock();
        b2.wait();
        cv2.wait_for(&mut g, Duration::from_secs(30));
    });
    // Once we get m1, the other thread is queued on the condvar (it
    // queues before it releases m1).
    b.wait();
    drop(m1.lock());
    let m2 = Mutex::new(());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = m2.lock();
        cv.wait_for(&mut g, Duration::from_millis(1));
    }));
    assert!(r.is_err(), "waiting with a second mutex must panic");
    assert!(!m2.is_locked());
    cv.notify_all();
    h.join().unwrap();
}

#[test]
fn producer_consumer() {
    let q = Arc::new((Mutex::new(Vec::<u32>::new()), Condvar::new()));
    let total = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let (q, total) = (q.clone(), total.clone());
            std::thread::spawn(move || {
                loop {
                    let mut g = q.0.lock();
                    q.1.wait_while(&mut g, |v| v.is_empty());
                    let x = g.pop().unwrap();
                    drop(g);
                    if x == u32::MAX {
                        return;
                    }
                    total.fetch_add(x as usize, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for i in 1..=1000 {
        q.0.lock().push(i);
        q.1.notify_one();
    }
    for _ in 0..3 {
        q.0.lock().insert(0, u32::MAX);
        q.1.notify_all();
    }
    for c in consumers {
        c.join().unwrap();
    }
    assert_eq!(total.load(Ordering::Relaxed), 500_500);
}

#[test]
fn once_runs_once_across_threads() {
    static O: Once = Once::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let b = Arc::new(Barrier::new(8));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                b.wait();
                O.call_once(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    RUNS.fetch_add(1, Ordering::Relaxed);
                });
                // Every caller returns after the closure completed.
                assert_eq!(RUNS.load(Ordering::Relaxed), 1);
                assert_eq!(O.state(), OnceState::Done);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    O.call_once_force(|_| unreachable!());
}

#[test]
fn once_poisoning() {
    let o = Once::new();
    assert_eq!(o.state(), OnceState::New);
    assert!(!o.state().done() && !o.state().poisoned());
    let r = std::panic::catch_unwind(|| o.call_once(|| panic!("first")));
    assert!(r.is_err());
    assert_eq!(o.state(), OnceState::Poisoned);
    assert!(o.state().poisoned());
    let r = std::panic::catch_unwind(|| o.call_once(|| unreachable!()));
    assert!(r.is_err(), "call_once on a poisoned Once panics");
    let r = std::panic::catch_unwind(|| {
        o.call_once_force(|s| {
            assert_eq!(s, OnceState::Poisoned);
            panic!("again")
        })
    });
    assert!(r.is_err());
    assert!(o.state().poisoned());
    let mut ran = false;
    o.call_once_force(|s| {
        assert!(s.poisoned());
        ran = true;
    });
    assert!(ran && o.state().done());
    o.call_once(|| unreachable!());
    assert_eq!(format!("{o:?}"), "Once { state: Done }");
    let fresh: Once = Default::default();
    fresh.call_once_force(|s| assert_eq!(s, OnceState::New));
}

#[test]
fn once_in_progress_is_visible_and_waiters_wait() {
    let o = Arc::new(Once::new());
    let started = Arc::new(Barrier::new(2));
    let (o2, s2) = (o.clone(), started.clone());
    let h = std::thread::spawn(move || {
        o2.call_once(|| {
            s2.wait();
            std::thread::sleep(Duration::from_millis(30));
        })
    });
    started.wait();
    assert_eq!(o.state(), OnceState::InProgress);
    o.call_once(|| unreachable!()); // waits for the running closure
    assert_eq!(o.state(), OnceState::Done);
    h.join().unwrap();
}

#[test]
fn once_is_one_byte() {
    assert_eq!(std::mem::size_of::<Once>(), 1);
    assert_eq!(std::mem::size_of::<Condvar>(), 16);
}

#[test]
fn nested_onces_do_not_deadlock() {
    let a = Once::new();
    let b = Once::new();
    let mut n = 0;
    a.call_once(|| b.call_once(|| n += 1));
    assert_eq!(n, 1);
}

//! Unit tests of `condvar`.

use super::*;
use crate::mutex::Mutex;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn size() {
    assert_eq!(std::mem::size_of::<RawCondvar>(), 16);
    assert_eq!(std::mem::size_of::<Condvar>(), 16);
}

#[test]
fn notify_counts_are_exact() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let n = 20;
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
    // Wait until every thread is waiting (each increments before waiting).
    while *pair.0.lock() < n {
        std::thread::yield_now();
    }
    let g = pair.0.lock();
    assert!(pair.1.notify_one());
    assert_eq!(pair.1.notify_all(), n as usize - 1);
    assert_eq!(pair.1.notify_all(), 0);
    assert!(!pair.1.notify_one());
    drop(g);
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn timed_wait_times_out_and_relocks() {
    let m = Mutex::new(1);
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(2)).timed_out());
    assert_eq!(*g, 1);
    assert!(m.is_locked());
    drop(g);
    assert!(!m.is_locked());
    // SAFETY: only reads the word.
    assert_eq!(unsafe { m.raw() }.owner_word(), 0);
}

#[test]
fn no_node_fallback_relocks() {
    // Without a node the wait is "unlock, yield, re-lock": it returns with
    // the mutex held, and wait_while still waits for its condition.
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = pair.clone();
    let h = std::thread::spawn(move || {
        crate::node::simulate_no_node(true);
        let mut g = p.0.lock();
        p.1.wait_while(&mut g, |f| !*f);
        assert!(*g);
        crate::node::simulate_no_node(false);
    });
    std::thread::sleep(Duration::from_millis(5));
    *pair.0.lock() = true;
    pair.1.notify_all();
    h.join().unwrap();
    // SAFETY: only reads the word.
    assert_eq!(unsafe { pair.0.raw() }.owner_word(), 0);
}

#[test]
fn foreign_wait_is_woken_and_times_out() {
    use std::sync::atomic::AtomicBool;
    // A "foreign" mutex: a std Mutex<bool> the waiter unlocks and
    // re-locks itself around the sleep.
    let m = std::sync::Mutex::new(false);
    let cv = RawCondvar::<SpinOsq>::new();
    let asleep = AtomicBool::new(false);
    std::thread::scope(|s| {
        let g = m.lock().unwrap();
        let t = cv.begin_wait_foreign();
        drop(g);
        s.spawn(|| {
            while !asleep.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(2));
            *m.lock().unwrap() = true;
            // Fallback waiters make the count 0 (spurious wake-ups).
            assert!(!cv.notify_one());
        });
        asleep.store(true, Ordering::Release);
        while let Some((w, v)) = cv.sleep_word(&t) {
            wait::futex_wait(w, v, None);
        }
        assert!(!cv.end_wait_foreign(t, false));
        assert!(*m.lock().unwrap());
    });
    assert!(!cv.has_waiters());
    // Nobody notifies: giving up is a timeout, and leaves no waiter.
    let t = cv.begin_wait_foreign();
    assert!(cv.sleep_word(&t).is_some());
    assert!(cv.end_wait_foreign(t, true));
    assert!(!cv.has_waiters());
    assert!(!cv.notify_one());
}

#[test]
fn no_node_timed_wait_times_out_and_is_counted_out() {
    let m = Mutex::new(());
    let cv = Condvar::new();
    crate::node::simulate_no_node(true);
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(2)).timed_out());
    crate::node::simulate_no_node(false);
    assert!(!cv.raw().has_waiters());
    drop(g);
}

#[test]
fn try_wait_with_a_second_mutex_is_refused_without_a_panic() {
    let pair = Arc::new((Mutex::new(()), Condvar::new()));
    let p = pair.clone();
    let waiter = std::thread::spawn(move || {
        let mut g = p.0.lock();
        p.1.wait_for(&mut g, Duration::from_secs(120)).timed_out()
    });
    while pair.1.raw().list.head() == 0 {
        std::thread::yield_now();
    }
    let other = RawMutex::<SpinOsq>::new();
    let mut t = other.lock();
    let id = t.id();
    // SAFETY: `other` is held with `t`.
    assert_eq!(
        unsafe { pair.1.raw().try_wait_until_ns(&other, &mut t, None) },
        None
    );
    // SAFETY: as above.
    let back = unsafe { pair.1.raw().try_begin_wait(&other, t) }.unwrap_err();
    assert_eq!(back.id(), id, "the caller's own token comes back");
    assert!(other.is_locked(), "refused before unlocking");
    // SAFETY: still held with `back`.
    unsafe { other.unlock(back) };
    pair.1.notify_all();
    assert!(
        !waiter.join().unwrap(),
        "the first mutex's waiter was unaffected"
    );
}

#[test]
#[should_panic(expected = "two different mutexes")]
fn two_mutexes_panic() {
    let pair = Arc::new((Mutex::new(()), Condvar::new()));
    let p = pair.clone();
    let _h = std::thread::spawn(move || {
        let mut g = p.0.lock();
        p.1.wait_for(&mut g, Duration::from_secs(5));
    });
    while pair.1.raw().list.head() == 0 {
        std::thread::yield_now();
    }
    let other = Mutex::new(());
    let mut g = other.lock();
    pair.1.wait(&mut g);
}

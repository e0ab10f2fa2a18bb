//! Eventual fairness (`KLOCK_MUTEX_FAIR_HANDOFF_NS`): an unlock hands the
//! lock to a first waiter that has been first for the interval, even while
//! it sleeps. Its own process, so that it can set its own tunables.

use klock::internal::mutex::RawMutexInternals as _;
use klock::{
    RawMutex, SpinOff,
    internal::mutex::{ID_SHIFT, WAITERS, current_id},
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

#[test]
fn overdue_head_is_handed_the_lock_while_asleep() {
    let mut t = klock::tune::Tunables::DEFAULT;
    t.mutex_fair_handoff_ns = 1_000_000;
    assert!(
        klock::tune::set(t),
        "tunables were read before the test set them"
    );

    // The waiter (SpinOff: it queues and sleeps at once) publishes its id,
    // and once it owns the lock holds it until told to release.
    let m = Arc::new(RawMutex::<SpinOff>::new());
    let tok = m.lock();
    let waiter_id = Arc::new(AtomicU32::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let (m2, id2, rel2) = (m.clone(), waiter_id.clone(), release.clone());
    let h = std::thread::spawn(move || {
        // Release: pairs with the Acquire load below.
        id2.store(current_id(), Ordering::Release);
        let t = m2.lock();
        // Acquire: pairs with the Release store after the checks.
        while !rel2.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // SAFETY: this thread holds the lock with this token.
        unsafe { m2.unlock(t) };
    });
    while m.owner_word() & WAITERS == 0 {
        std::thread::yield_now();
    }
    // The waiter is first (the only waiter) for well over the interval.
    std::thread::sleep(Duration::from_millis(5));

    // SAFETY: we hold the lock with this token.
    unsafe { m.unlock(tok) };
    // A greedy owner re-takes at once: an ordinary unlock would let it (the
    // woken waiter needs microseconds to run); the fair hand-off must not.
    let again = m.try_lock();
    let w = m.owner_word();
    let re_took = again.is_some();
    if let Some(t2) = again {
        // SAFETY: we hold it again; release so the waiter can finish.
        unsafe { m.unlock(t2) };
    }
    // Acquire: pairs with the waiter's Release store of its id.
    let id = waiter_id.load(Ordering::Acquire);
    // Release: pairs with the waiter's Acquire load.
    release.store(true, Ordering::Release);
    h.join().unwrap();

    assert!(
        !re_took,
        "the owner re-took the lock from a head first for 5 ms: {w:#x}"
    );
    assert_eq!(
        w >> ID_SHIFT,
        id,
        "the lock was not handed to the head: {w:#x}"
    );
    assert_eq!(m.owner_word(), 0, "the waiter left a flag behind");
}

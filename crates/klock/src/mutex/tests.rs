//! Unit tests of the kernel mutex (`RawMutex`): its word transitions, wait
//! list and hand-off, through the private API.

use super::word::{handoff_requested, has_waiters, owner_id};
use super::*;
use crate::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[test]
fn a_spinner_that_gives_up_names_the_owner_until_it_unlocks() {
    // Needs a spinner beside the holder (2+ CPUs, no quota).
    if crate::osq::max_spinners() == 0 || crate::wait::quota_limited() {
        return;
    }
    let m = Arc::new(RawMutex::<SpinOsq>::new());
    let t = m.lock();
    let holder = owner_id(m.owner.load(Ordering::Relaxed));
    assert_eq!(m.list.hint(), 0);
    // A contender spins KLOCK_MUTEX_SPIN_NS on us, gives up and queues.
    let m2 = m.clone();
    let c = std::thread::spawn(move || {
        let t = m2.lock();
        // SAFETY: our own acquisition.
        unsafe { m2.unlock(t) };
    });
    while !has_waiters(m.owner.load(Ordering::Relaxed)) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(m.list.hint(), crate::waitlist::owner_tag(holder));
    assert!(m.owner_known_slow(), "a newcomer would skip its spin");
    // The hold ends: the slow unlock clears the hint.
    // SAFETY: our own acquisition.
    unsafe { m.unlock(t) };
    assert_eq!(m.list.hint(), 0);
    c.join().unwrap();
    assert!(!m.owner_known_slow());
}

#[test]
fn sizes() {
    assert_eq!(std::mem::size_of::<RawMutex<SpinOsq>>(), 12);
    assert_eq!(std::mem::size_of::<RawMutex<SpinOff>>(), 12);
    assert_eq!(std::mem::size_of::<RawMutex<SpinNoQueue>>(), 12);
    assert_eq!(std::mem::size_of::<MutexToken>(), 4);
    assert_eq!(std::mem::size_of::<Mutex<()>>(), 12);
    assert_eq!(std::mem::size_of::<Mutex<u64>>(), 24);
    assert_eq!(std::mem::size_of::<MutexGuard<'_, u64>>(), 16);
    assert_eq!(std::mem::size_of::<SpinOsq>(), 0);
    assert_eq!(std::mem::size_of::<crate::osq::Osq>(), 4);
}

#[test]
fn fast_path_word_values() {
    let m = RawMutex::<SpinOsq>::new();
    let t = m.lock();
    assert_eq!(m.owner_word(), current_id() << ID_SHIFT);
    unsafe { m.unlock(t) };
    assert_eq!(m.owner_word(), 0);
}

#[test]
fn ids_unique_among_live_threads() {
    let b = std::sync::Barrier::new(8);
    let ids: Vec<u32> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let id = current_id();
                    b.wait();
                    id
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let set: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(set.len(), 8);
}

fn contend<S: SpinPolicy>(threads: usize, iters: u64) {
    let m = Arc::new(lock_api::Mutex::<RawMutex<S>, u64>::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..iters {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*m.lock(), threads as u64 * iters);
    // SAFETY: only reads the word; the raw mutex is not locked/unlocked here.
    assert_eq!(unsafe { m.raw() }.owner_word() & !WLOCK, 0);
}

#[test]
fn contended_all_policies() {
    contend::<SpinOsq>(8, 5_000);
    contend::<SpinNoQueue>(8, 5_000);
    contend::<SpinOff>(8, 5_000);
}

#[test]
fn timed_lock_times_out_and_leaves_clean() {
    let m = Arc::new(RawMutex::<SpinOff>::new());
    let t = m.lock();
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                lock_api::RawMutexTimed::try_lock_for(&*m, Duration::from_millis(20)).is_none()
            })
        })
        .collect();
    for h in hs {
        assert!(h.join().unwrap());
    }
    // Every waiter left: no flags besides the owner.
    assert_eq!(m.owner_word(), current_id() << ID_SHIFT);
    unsafe { m.unlock(t) };
    assert_eq!(m.owner_word(), 0);
}

#[test]
fn unlock_fair_hands_off() {
    // The waiter publishes its id, queues, and once it owns the lock
    // holds it until told to release: so right after `unlock_fair` the
    // word must already name it (a hand-off), where a plain unlock would
    // leave the word free or owned by nobody until the woken waiter ran.
    let m = Arc::new(RawMutex::<SpinOff>::new());
    let t = m.lock();
    let waiter_id = Arc::new(AtomicU32::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let (m2, id2, rel2) = (m.clone(), waiter_id.clone(), release.clone());
    let h = std::thread::spawn(move || {
        // Release: pairs with the Acquire load below.
        id2.store(current_id(), Ordering::Release);
        let t = m2.lock();
        // Acquire: pairs with the Release store after the check.
        while !rel2.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        unsafe { m2.unlock(t) };
    });
    // Wait until the other thread is queued.
    while !has_waiters(m.owner_word()) {
        std::thread::yield_now();
    }
    unsafe { m.unlock_fair(t) };
    let w = m.owner_word();
    // Acquire: pairs with the waiter's Release store of its id.
    let id = waiter_id.load(Ordering::Acquire);
    // Release: pairs with the waiter's Acquire load.
    release.store(true, Ordering::Release);
    h.join().unwrap();
    assert_eq!(owner_id(w), id, "unlock_fair did not hand off: {w:#x}");
    assert_eq!(m.owner_word(), 0);
}

#[test]
fn stealing_owner_cannot_starve_a_waiter() {
    // The owner releases and immediately re-takes the lock (a steal) every
    // 3 ms, longer than the default 2 ms handoff threshold. The woken
    // first waiter must get the lock: either it wins a race, or it sets
    // HANDOFF and the next unlock hands the lock to it (PICKUP).
    let m = Arc::new(RawMutex::<SpinOff>::new());
    let t = m.lock();
    let m2 = m.clone();
    let h = std::thread::spawn(move || {
        let t = m2.lock();
        unsafe { m2.unlock(t) };
    });
    while !has_waiters(m.owner_word()) {
        std::thread::yield_now();
    }
    // The waiter must get in (the event); the watchdog, far beyond the
    // few hand-off thresholds that takes, only catches starvation.
    let hang = Duration::from_secs(120);
    let deadline = std::time::Instant::now() + hang;
    let mut t = Some(t);
    while !h.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "watchdog: after {hang:?} the waiter has not got the lock (starved)"
        );
        std::thread::sleep(Duration::from_millis(3));
        let Some(tok) = t.take() else {
            t = m.try_lock();
            continue;
        };
        let handoff = handoff_requested(m.owner_word());
        unsafe { m.unlock(tok) };
        if handoff {
            // Handed over: the word names the waiter (or it already
            // released), never us.
            assert_ne!(owner_id(m.owner_word()), current_id());
        }
        t = m.try_lock();
    }
    if let Some(tok) = t {
        unsafe { m.unlock(tok) };
    }
    h.join().unwrap();
    assert_eq!(m.owner_word(), 0);
}

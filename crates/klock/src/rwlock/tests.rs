//! Unit tests of the rwsem as a whole lock (`RawRwLock`): exclusion,
//! hand-off and the lock_api surface; the read, upgrade and word tests sit
//! beside their code.

use super::word::*;
use super::*;
use crate::sync::atomic::Ordering;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

#[test]
fn try_unlock_uncontended_leaves_a_transient_reader_count_alone() {
    // `(0,X)` plus a reader's optimistic add (about to be taken back):
    // the writer's fast unlock must not take that count as its own.
    let l = RawRwLock::<SpinOff>::new();
    let _held = l.try_lock_exclusive().unwrap();
    l.count.fetch_add(READER_BIAS, Ordering::Relaxed);
    assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
    assert_eq!(l.count.load(Ordering::Relaxed), WRITER | READER_BIAS);
    l.count.fetch_sub(READER_BIAS, Ordering::Relaxed);
    assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(true));
    assert!(!l.is_locked());
    // A free lock is nobody's to release.
    assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
    // Two readers: each release is one plain CAS.
    assert!(l.try_lock_shared() && l.try_lock_shared());
    assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
    assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
    assert!(!l.is_locked());
}

#[test]
fn sizes_and_zero_init() {
    assert_eq!(std::mem::size_of::<RawRwLock>(), 16);
    assert_eq!(std::mem::size_of::<RawRwLock<SpinOff>>(), 16);
    assert_eq!(std::mem::size_of::<WriteToken>(), 4);
    let l: RawRwLock = RawRwLock::new();
    assert_eq!(l.count_word(), 0);
}

#[test]
fn fast_path_words() {
    let l: RawRwLock = RawRwLock::new();
    l.lock_shared();
    l.lock_shared();
    assert_eq!(l.count_word(), 2 * READER_BIAS);
    unsafe { l.unlock_shared() };
    unsafe { l.unlock_shared() };
    assert_eq!(l.count_word(), 0);
    let t = l.lock_exclusive();
    assert_eq!(l.count_word(), WRITER);
    assert_eq!(owner_id(l.owner.load(Ordering::Relaxed)), t.id());
    unsafe { l.unlock_exclusive(t) };
    assert_eq!(l.count_word(), 0);
    l.lock_upgradable();
    assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
    let t = unsafe { l.upgrade() };
    assert_eq!(l.count_word(), WRITER);
    unsafe { l.downgrade(t) };
    assert_eq!(l.count_word(), READER_BIAS);
    unsafe { l.unlock_shared() };
    assert_eq!(l.count_word(), 0);
}

#[test]
fn predicates() {
    assert!(is_read_lockable(0));
    assert!(!is_read_lockable(WRITER));
    assert!(!is_read_lockable(UPGRADING));
    assert!(is_read_lockable(UPGRADE | READER_BIAS));
    assert!(is_lockable_by(WAITERS, Class::Writer, false));
    assert!(!is_lockable_by(WAITERS | HANDOFF, Class::Writer, false));
    assert!(is_lockable_by(WAITERS | HANDOFF, Class::Writer, true));
    assert!(is_lockable_by(READER_BIAS, Class::Upgrader, false));
    assert!(!is_lockable_by(
        READER_BIAS | UPGRADE,
        Class::Upgrader,
        false
    ));
    assert_eq!(readers(READFAIL), 1 << 23);
}

#[test]
fn reader_count_overflow_panics_and_leaves_count_intact() {
    let l: RawRwLock<SpinOff> = RawRwLock::new();
    // Simulate 2^23 - 1 leaked read guards.
    l.count.store(READFAIL - READER_BIAS, Ordering::Relaxed);
    l.lock_shared(); // the 2^23-th reader: count reaches READFAIL
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.lock_shared()));
    assert!(r.is_err());
    assert_eq!(l.count_word(), READFAIL);
    assert!(!l.try_lock_shared());
}

#[test]
fn timed_write_times_out_and_leaves_clean() {
    use lock_api::RawRwLockTimed;
    let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
    l.lock_shared();
    let l2 = l.clone();
    let h = std::thread::spawn(move || {
        l2.try_lock_exclusive_for(std::time::Duration::from_millis(20))
            .is_some()
    });
    assert!(!h.join().unwrap());
    unsafe { l.unlock_shared() };
    assert_eq!(l.count_word(), 0);
    let l3 = l.clone();
    let t = l.lock_exclusive();
    let h =
        std::thread::spawn(move || l3.try_lock_shared_for(std::time::Duration::from_millis(20)));
    assert!(h.join().unwrap().is_none());
    unsafe { l.unlock_exclusive(t) };
    assert_eq!(l.count_word(), 0);
}

fn hammer<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
    hammer_mode::<S>(readers, writers, iters, None)
}

fn hammer_mode<S: SpinPolicy>(
    readers: usize,
    writers: usize,
    iters: u64,
    mode: Option<crate::tune::ReaderMode>,
) {
    let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
        Arc::new(lock_api::RwLock::new((0, 0)));
    let reads = Arc::new(AtomicU64::new(0));
    let mut hs = Vec::new();
    for i in 0..readers + writers {
        let l = l.clone();
        let reads = reads.clone();
        hs.push(std::thread::spawn(move || {
            super::read::MODE.with(|c| c.set(mode));
            for k in 0..iters {
                if i < readers {
                    let g = l.read();
                    assert_eq!(g.0, g.1, "torn read");
                    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                } else if k % 7 == 0 {
                    let u = l.upgradable_read();
                    let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(u);
                    w.0 += 1;
                    w.1 += 1;
                } else {
                    let mut g = l.write();
                    g.0 += 1;
                    g.1 += 1;
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let g = l.read();
    assert_eq!(g.0, writers as u64 * iters);
    assert_eq!(
        reads.load(std::sync::atomic::Ordering::Relaxed),
        readers as u64 * iters
    );
    drop(g);
    assert_eq!(unsafe { l.raw() }.count_word(), 0);
}

/// Wait until `f` holds (the event a test waits for: a thread queued, let
/// in, ...). The watchdog (120 s, far beyond the microseconds these events
/// take) only turns a hang into a failure naming the event.
pub(super) fn eventually(what: &str, f: impl Fn() -> bool) {
    const HANG: std::time::Duration = std::time::Duration::from_secs(120);
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < HANG,
            "watchdog: after {HANG:?} still waiting: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Code written for parking_lot's RwLock compiles and behaves against
/// klock's: the lock_api methods these traits enable, on the guards.
#[test]
fn parking_lot_style_api() {
    parking_lot_style_api_on::<RawRwLock>();
}

/// The same on the default ([`crate::RwLock`], the floor with batches).
#[test]
fn parking_lot_style_api_on_the_default() {
    parking_lot_style_api_on::<super::RawRwLockBatched>();
}

fn parking_lot_style_api_on<R>()
where
    R: lock_api::RawRwLockUpgradeTimed<
            Duration = std::time::Duration,
            Instant = std::time::Instant,
        > + lock_api::RawRwLockUpgradeDowngrade
        + lock_api::RawRwLockUpgradeFair
        + super::RawRwLockRecursive,
{
    use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
    use std::time::Duration;
    let l = lock_api::RwLock::<R, u32>::new(0u32);
    let mut u = l.upgradable_read();
    u.with_upgraded(|v| *v += 1);
    assert_eq!(*u, 1);
    let r = l.read();
    assert!(
        u.try_with_upgraded_for(Duration::from_millis(5), |v| *v += 1)
            .is_none()
    );
    let u = match U::try_upgrade_for(u, Duration::from_millis(5)) {
        Ok(_) => panic!("upgraded past a reader"),
        Err(u) => u,
    };
    drop(r);
    let mut w = U::try_upgrade_until(u, std::time::Instant::now() + Duration::from_secs(1))
        .ok()
        .unwrap();
    *w += 1;
    let u = W::downgrade_to_upgradable(w);
    assert!(
        l.try_upgradable_read_for(Duration::from_millis(5))
            .is_none()
    );
    let r = U::downgrade(u);
    let u2 = l
        .try_upgradable_read_until(std::time::Instant::now() + Duration::from_secs(1))
        .unwrap();
    let mut u2 = u2;
    U::bump(&mut u2);
    U::unlock_fair(u2);
    assert_eq!(*r, 2);
    let rr = l.read_recursive();
    assert_eq!(*rr, 2);
    assert!(l.try_read_recursive_for(Duration::from_millis(1)).is_some());
    assert!(l.try_read_recursive().is_some());
    drop((r, rr));
    assert!(!l.is_locked());
}

/// Every new transition under contention: recursive and timed reads,
/// timed upgradable reads and upgrades, both downgrades, fair unlocks
/// and bumps against writers: no torn read, no lost update, clean word.
#[test]
fn upgrade_api_contended() {
    hammer_upgrade_api::<SpinOff>(3, 3, 3_000);
    hammer_upgrade_api::<SpinOsq>(3, 3, 3_000);
}

fn hammer_upgrade_api<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
    use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
    use std::time::Duration;
    let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
        Arc::new(lock_api::RwLock::new((0, 0)));
    let wrote = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..readers + writers)
        .map(|i| {
            let (l, wrote) = (l.clone(), wrote.clone());
            std::thread::spawn(move || {
                let short = Duration::from_micros(200);
                for k in 0..iters {
                    if i < readers {
                        let g = match k % 3 {
                            0 => Some(l.read_recursive()),
                            1 => l.try_read_recursive_for(short),
                            _ => l.try_read_recursive(),
                        };
                        if let Some(g) = g {
                            assert_eq!(g.0, g.1, "torn read");
                        }
                        continue;
                    }
                    let mut n = 0;
                    match k % 4 {
                        0 => {
                            if let Some(mut u) = l.try_upgradable_read_for(short) {
                                assert_eq!(u.0, u.1, "torn read");
                                u.with_upgraded(|v| {
                                    v.0 += 1;
                                    v.1 += 1;
                                });
                                n += 1;
                                U::bump(&mut u);
                                if k % 8 == 0 {
                                    U::unlock_fair(u);
                                } else {
                                    let r = U::downgrade(u);
                                    assert_eq!(r.0, r.1, "torn read");
                                }
                            }
                        }
                        1 => {
                            let u = l.upgradable_read();
                            if let Ok(mut w) = U::try_upgrade_for(u, short) {
                                w.0 += 1;
                                w.1 += 1;
                                n += 1;
                            }
                        }
                        _ => {
                            let mut w = l.write();
                            w.0 += 1;
                            w.1 += 1;
                            n += 1;
                            let u = W::downgrade_to_upgradable(w);
                            if let Ok(mut w) = U::try_upgrade(u) {
                                w.0 += 1;
                                w.1 += 1;
                                n += 1;
                            }
                        }
                    }
                    wrote.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(l.read().0, wrote.load(Ordering::Relaxed));
    assert_eq!(unsafe { l.raw() }.count_word(), 0);
}

#[test]
fn contended_both_policies() {
    hammer::<SpinOsq>(4, 4, 20_000);
    hammer::<SpinOff>(4, 4, 20_000);
}

#[test]
fn every_reader_mode() {
    for mode in crate::tune::ReaderMode::ALL {
        hammer_mode::<SpinOsq>(3, 3, 10_000, Some(mode));
    }
}

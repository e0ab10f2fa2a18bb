//! RwLock, its guards (read, write, upgradable, mapped), `const_rwlock`,
//! and RawRwLock's lock_api 0.4 traits.

use parking_lot::lock_api::{
    RawRwLock as _, RawRwLockDowngrade as _, RawRwLockFair as _, RawRwLockRecursive as _,
    RawRwLockRecursiveTimed as _, RawRwLockTimed as _, RawRwLockUpgrade as _,
    RawRwLockUpgradeDowngrade as _, RawRwLockUpgradeFair as _, RawRwLockUpgradeTimed as _,
};
use parking_lot::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RawRwLock, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard, const_rwlock,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(5);

#[test]
fn readers_share_writers_exclude() {
    let l = RwLock::new(0);
    let r1: RwLockReadGuard<'_, i32> = l.read();
    let r2 = l.try_read().unwrap();
    assert!(l.try_write().is_none());
    assert!(l.try_write_for(MS).is_none());
    assert!(l.try_write_until(Instant::now() + MS).is_none());
    assert!(l.is_locked() && !l.is_locked_exclusive());
    drop((r1, r2));
    let mut w: RwLockWriteGuard<'_, i32> = l.write();
    *w = 1;
    assert!(l.is_locked_exclusive());
    assert!(l.try_read().is_none());
    assert!(l.try_read_for(MS).is_none());
    assert!(l.try_read_until(Instant::now() + MS).is_none());
    assert!(l.try_read_recursive().is_none());
    assert!(l.try_read_recursive_for(MS).is_none());
    assert!(l.try_read_recursive_until(Instant::now() + MS).is_none());
    assert!(l.try_upgradable_read().is_none());
    assert!(l.try_upgradable_read_for(MS).is_none());
    assert!(l.try_upgradable_read_until(Instant::now() + MS).is_none());
    RwLockWriteGuard::unlock_fair(w);
    assert!(!l.is_locked());
    assert!(l.try_write_for(MS).is_some());
    assert!(l.try_read_for(MS).is_some());
    assert_eq!(*l.try_read_until(Instant::now() + MS).unwrap(), 1);
}

#[test]
fn recursive_reads_pass_a_waiting_writer() {
    let l = Arc::new(RwLock::new(0));
    let r = l.read();
    let l2 = l.clone();
    let w = std::thread::spawn(move || *l2.write() += 1);
    // Let the writer queue (and ask for its hand-off).
    std::thread::sleep(Duration::from_millis(30));
    let r2 = l.read_recursive();
    let r3 = l.try_read_recursive().unwrap();
    let r4 = l.try_read_recursive_for(MS).unwrap();
    let r5 = l.try_read_recursive_until(Instant::now() + MS).unwrap();
    assert_eq!(*r2 + *r3 + *r4 + *r5, 0);
    drop((r, r2, r3, r4, r5));
    w.join().unwrap();
    assert_eq!(*l.read(), 1);
}

#[test]
fn upgradable_reads() {
    let l = RwLock::new(1);
    let u: RwLockUpgradableReadGuard<'_, i32> = l.upgradable_read();
    assert!(l.try_upgradable_read().is_none());
    let r = l.read(); // readers still get in
    let u = RwLockUpgradableReadGuard::try_upgrade(u).unwrap_err(); // a reader holds it
    let u = RwLockUpgradableReadGuard::try_upgrade_for(u, MS).unwrap_err();
    let u = RwLockUpgradableReadGuard::try_upgrade_until(u, Instant::now() + MS).unwrap_err();
    drop(r);
    let mut w = RwLockUpgradableReadGuard::upgrade(u);
    *w = 2;
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    assert!(l.try_write().is_none());
    let mut w = RwLockUpgradableReadGuard::try_upgrade(u).ok().unwrap();
    *w = 3;
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 3);
    drop(r);
    let u = l.try_upgradable_read_for(MS).unwrap();
    let r = RwLockUpgradableReadGuard::downgrade(u);
    assert!(l.try_write().is_none());
    drop(r);
    let mut u = l.try_upgradable_read_until(Instant::now() + MS).unwrap();
    RwLockUpgradableReadGuard::bump(&mut u);
    RwLockUpgradableReadGuard::unlocked(&mut u, || assert!(l.try_write().is_some()));
    let w = RwLockUpgradableReadGuard::try_upgrade_for(u, MS)
        .ok()
        .unwrap();
    drop(w);
    let u = l.upgradable_read();
    let w = RwLockUpgradableReadGuard::try_upgrade_until(u, Instant::now() + MS)
        .ok()
        .unwrap();
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    RwLockUpgradableReadGuard::unlock_fair(u);
    assert!(!l.is_locked());
}

#[test]
fn upgrade_waits_for_readers() {
    let l = Arc::new(RwLock::new(0));
    let r = l.read();
    let l2 = l.clone();
    let h = std::thread::spawn(move || {
        let u = l2.upgradable_read();
        let mut w = RwLockUpgradableReadGuard::upgrade(u);
        *w += 1;
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(*r, 0);
    drop(r);
    h.join().unwrap();
    assert_eq!(*l.read(), 1);
}

#[test]
fn guard_api_map_unlocked_bump() {
    let l = RwLock::new((1, 2));
    let mut w = l.write();
    RwLockWriteGuard::bump(&mut w);
    RwLockWriteGuard::unlocked(&mut w, || assert!(l.try_read().is_some()));
    RwLockWriteGuard::unlocked_fair(&mut w, || assert!(l.try_write().is_some()));
    assert!(std::ptr::eq(RwLockWriteGuard::rwlock(&w), &l));
    let mut mw: MappedRwLockWriteGuard<'_, i32> = RwLockWriteGuard::map(w, |p| &mut p.0);
    *mw = 5;
    MappedRwLockWriteGuard::unlock_fair(mw);
    let mut r = l.read();
    RwLockReadGuard::bump(&mut r);
    RwLockReadGuard::unlocked(&mut r, || assert!(l.try_write().is_some()));
    let mr: MappedRwLockReadGuard<'_, i32> = RwLockReadGuard::map(r, |p| &p.1);
    assert_eq!(*mr, 2);
    MappedRwLockReadGuard::unlock_fair(mr);
    let r = l.read();
    let r = RwLockReadGuard::try_map(r, |_| None::<&i32>).unwrap_err();
    RwLockReadGuard::unlock_fair(r);
    let w = RwLockWriteGuard::try_map(l.write(), |p| Some(&mut p.1))
        .ok()
        .unwrap();
    drop(w);
    assert_eq!(*l.read(), (5, 2));
}

#[test]
fn force_unlocks_and_misc() {
    let mut l = RwLock::new(vec![0]);
    std::mem::forget(l.write());
    unsafe { l.force_unlock_write() };
    std::mem::forget(l.write());
    unsafe { l.force_unlock_write_fair() };
    std::mem::forget(l.read());
    unsafe { l.force_unlock_read() };
    std::mem::forget(l.read());
    unsafe { l.force_unlock_read_fair() };
    assert!(!l.is_locked());
    l.get_mut().push(1);
    assert_eq!(unsafe { &*l.data_ptr() }.len(), 2);
    assert_eq!(format!("{l:?}"), "RwLock { data: [0, 1] }");
    assert_eq!(l.into_inner(), [0, 1]);
    static S: RwLock<u32> = const_rwlock(3);
    static T: RwLock<u32> = RwLock::new(4);
    assert_eq!(*S.read() + *T.read(), 7);
    let d: RwLock<u8> = Default::default();
    assert_eq!(*RwLock::from(1u8).read() + *d.read(), 1);
}

#[test]
fn readers_and_writers_under_contention() {
    // Writers keep two counters equal; readers must never see them differ.
    let l = Arc::new(RwLock::new((0u64, 0u64)));
    let bad = Arc::new(AtomicU64::new(0));
    let mut hs = Vec::new();
    for i in 0..4 {
        let (l, bad) = (l.clone(), bad.clone());
        hs.push(std::thread::spawn(move || {
            for k in 0..5_000u64 {
                match (i + k) % 5 {
                    0 => {
                        let mut w = l.write();
                        w.0 += 1;
                        w.1 += 1;
                    }
                    1 => {
                        let u = l.upgradable_read();
                        if u.0 != u.1 {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                        let mut w = RwLockUpgradableReadGuard::upgrade(u);
                        w.0 += 1;
                        w.1 += 1;
                        let r = RwLockWriteGuard::downgrade(w);
                        if r.0 != r.1 {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    2 => {
                        let r = l.read_recursive();
                        if r.0 != r.1 {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    _ => {
                        let r = l.read();
                        if r.0 != r.1 {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(bad.load(Ordering::Relaxed), 0);
    let v = *l.read();
    assert_eq!(v.0, v.1);
    assert_eq!(v.0, 8_000); // 2 of every 5 operations write, 20 000 in all
    assert!(!l.is_locked());
}

#[test]
fn raw_rwlock_traits() {
    let l = RawRwLock::INIT;
    l.lock_shared();
    l.lock_shared_recursive();
    assert!(l.try_lock_shared_recursive());
    assert!(l.try_lock_shared_recursive_for(MS));
    assert!(l.try_lock_shared_recursive_until(Instant::now() + MS));
    assert!(l.try_lock_shared_for(MS));
    assert!(l.try_lock_shared_until(Instant::now() + MS));
    assert!(!l.try_lock_exclusive_for(MS));
    assert!(!l.try_lock_exclusive_until(Instant::now() + MS));
    for _ in 0..6 {
        unsafe { l.unlock_shared() };
    }
    unsafe {
        l.bump_shared();
        l.unlock_shared_fair();
    }
    assert!(!l.is_locked());
    l.lock_exclusive();
    assert!(!l.try_lock_shared() && !l.try_lock_upgradable());
    unsafe { l.bump_exclusive() };
    unsafe { l.unlock_exclusive_fair() };
    assert!(l.try_lock_exclusive_for(MS));
    unsafe { l.downgrade() };
    assert!(l.is_locked() && !l.is_locked_exclusive());
    unsafe { l.unlock_shared() };
    assert!(l.try_lock_exclusive_until(Instant::now() + MS));
    unsafe { l.downgrade_to_upgradable() };
    unsafe { l.bump_upgradable() };
    assert!(unsafe { l.try_upgrade_for(MS) });
    unsafe { l.downgrade_to_upgradable() };
    assert!(unsafe { l.try_upgrade_until(Instant::now() + MS) });
    unsafe { l.downgrade_to_upgradable() };
    unsafe { l.downgrade_upgradable() };
    unsafe { l.unlock_shared() };
    assert!(l.try_lock_upgradable_for(MS));
    assert!(!l.try_lock_upgradable_until(Instant::now() + MS));
    unsafe { l.unlock_upgradable_fair() };
    assert!(l.try_lock_upgradable_until(Instant::now() + MS));
    unsafe { l.upgrade() };
    unsafe { l.unlock_exclusive() };
    assert!(!l.is_locked());
    assert_eq!(std::mem::size_of::<RawRwLock>(), 20);
}

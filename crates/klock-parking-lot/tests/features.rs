//! The optional features: `arc_lock`, `send_guard`, `serde` (each test
//! runs when its feature is on; `.ci/run` turns them on). `owning_ref` is
//! lock_api 0.4's own impl, checked by building with the feature.

#[cfg(feature = "arc_lock")]
#[test]
fn arc_lock_guards() {
    use parking_lot::{
        ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
        ArcRwLockWriteGuard, Mutex, RawMutex, RawRwLock, RawThreadId, ReentrantMutex, RwLock,
    };
    use std::sync::Arc;
    let m = Arc::new(Mutex::new(1));
    let mut g: ArcMutexGuard<RawMutex, i32> = m.lock_arc();
    *g += 1;
    drop(g);
    assert_eq!(*m.try_lock_arc().unwrap(), 2);
    let r = Arc::new(ReentrantMutex::new(3));
    let g: ArcReentrantMutexGuard<RawMutex, RawThreadId, i32> = r.lock_arc();
    assert_eq!(*g, 3);
    let l = Arc::new(RwLock::new(4));
    let rg: ArcRwLockReadGuard<RawRwLock, i32> = l.read_arc();
    assert_eq!(*rg, 4);
    drop(rg);
    let u: ArcRwLockUpgradableReadGuard<RawRwLock, i32> = l.upgradable_read_arc();
    let mut w: ArcRwLockWriteGuard<RawRwLock, i32> = ArcRwLockUpgradableReadGuard::upgrade(u);
    *w = 5;
    drop(w);
    assert_eq!(*l.read(), 5);
}

#[cfg(feature = "send_guard")]
#[test]
fn send_guard_unlocks_on_another_thread() {
    let m = parking_lot::Mutex::new(0);
    let g = m.lock();
    std::thread::scope(|s| s.spawn(move || drop(g)).join().unwrap());
    assert!(!m.is_locked());
    let l = parking_lot::RwLock::new(0);
    let w = l.write();
    std::thread::scope(|s| s.spawn(move || drop(w)).join().unwrap());
    assert!(!l.is_locked());
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trip() {
    let m = parking_lot::Mutex::new(vec![1, 2]);
    let s = serde_json::to_string(&m).unwrap();
    assert_eq!(s, "[1,2]");
    let back: parking_lot::RwLock<Vec<i32>> = serde_json::from_str(&s).unwrap();
    assert_eq!(*back.read(), [1, 2]);
    let fm: parking_lot::FairMutex<u8> = serde_json::from_str("7").unwrap();
    assert_eq!(*fm.lock(), 7);
}

#[test]
fn lock_types_are_send() {
    // (Guards are !Send without send_guard: a compile_fail doctest in lib.rs.)
    fn is_send<T: Send>(_: &T) -> bool {
        true
    }
    assert!(is_send(&parking_lot::Mutex::new(0u8)));
    assert!(is_send(&parking_lot::RwLock::new(0u8)));
    assert!(is_send(&parking_lot::Condvar::new()));
    assert!(is_send(&parking_lot::Once::new()));
}

#[test]
fn auto_traits_match_parking_lots() {
    // parking_lot 0.12.5's raw types, Condvar and Once are Send, Sync,
    // UnwindSafe and RefUnwindSafe (checked against the real crate once).
    use std::panic::{RefUnwindSafe, UnwindSafe};
    fn all<T: Send + Sync + UnwindSafe + RefUnwindSafe>() {}
    all::<parking_lot::RawMutex>();
    all::<parking_lot::RawFairMutex>();
    all::<parking_lot::RawRwLock>();
    all::<parking_lot::RawThreadId>();
    all::<parking_lot::Condvar>();
    all::<parking_lot::Once>();
    all::<parking_lot::OnceState>();
    all::<parking_lot::WaitTimeoutResult>();
    fn lock<T: Send + Sync + UnwindSafe>() {}
    lock::<parking_lot::Mutex<u8>>();
    lock::<parking_lot::FairMutex<u8>>();
    lock::<parking_lot::RwLock<u8>>();
    lock::<parking_lot::ReentrantMutex<u8>>();
    fn guard<T: Sync>() {}
    guard::<parking_lot::MutexGuard<'static, u8>>();
    guard::<parking_lot::RwLockWriteGuard<'static, u8>>();
    guard::<parking_lot::RwLockUpgradableReadGuard<'static, u8>>();
}

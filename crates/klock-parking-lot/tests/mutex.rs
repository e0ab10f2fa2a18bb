//! Mutex, FairMutex, ReentrantMutex, their guards, `const_*`, the raw types
//! through `parking_lot::lock_api`, and RawThreadId.

use parking_lot::lock_api::{GetThreadId, RawMutex as _, RawMutexFair as _, RawMutexTimed as _};
use parking_lot::{
    FairMutex, FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard, MappedReentrantMutexGuard,
    Mutex, MutexGuard, RawFairMutex, RawMutex, RawThreadId, ReentrantMutex, ReentrantMutexGuard,
    const_fair_mutex, const_mutex, const_reentrant_mutex,
};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `threads` threads each add `iters` under `lock`; the total must be exact.
fn hammer<L: Send + Sync + 'static>(lock: Arc<L>, threads: usize, iters: u64, add: fn(&L)) {
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let l = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..iters {
                    add(&l);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn mutex_excludes_under_contention() {
    let m = Arc::new(Mutex::new(0u64));
    hammer(m.clone(), 4, 20_000, |m| *m.lock() += 1);
    assert_eq!(*m.lock(), 80_000);
    assert!(!m.is_locked());
}

#[test]
fn fair_mutex_excludes_under_contention() {
    let m = Arc::new(FairMutex::new(0u64));
    hammer(m.clone(), 4, 5_000, |m| *m.lock() += 1);
    assert_eq!(*m.lock(), 20_000);
}

#[test]
fn mutex_guard_api() {
    let m = Mutex::new(vec![1, 2, 3]);
    let g: MutexGuard<'_, Vec<i32>> = m.lock();
    assert!(m.is_locked());
    assert!(m.try_lock().is_none());
    assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
    assert!(
        m.try_lock_until(Instant::now() + Duration::from_millis(5))
            .is_none()
    );
    assert!(std::ptr::eq(MutexGuard::mutex(&g), &m));
    // unlocked: released while the closure runs.
    let mut g = g;
    MutexGuard::unlocked(&mut g, || assert!(!m.is_locked()));
    MutexGuard::unlocked_fair(&mut g, || assert!(m.try_lock().is_some()));
    MutexGuard::bump(&mut g);
    let mut mapped: MappedMutexGuard<'_, i32> = MutexGuard::map(g, |v| &mut v[1]);
    *mapped = 20;
    drop(mapped);
    let g = m.lock();
    let r = MutexGuard::try_map(g, |v| v.get_mut(10));
    let g = r.unwrap_err();
    let g = MutexGuard::try_map(g, |v| v.get_mut(0)).ok().unwrap();
    MappedMutexGuard::unlock_fair(g);
    assert_eq!(*m.lock(), [1, 20, 3]);
    let g = m.try_lock_for(Duration::from_millis(5)).unwrap();
    MutexGuard::unlock_fair(g);
    // leak + force_unlock.
    let leaked = MutexGuard::leak(m.lock());
    leaked.push(4);
    assert!(m.is_locked());
    unsafe { m.force_unlock() };
    assert!(!m.is_locked());
    std::mem::forget(m.lock());
    unsafe { m.force_unlock_fair() };
    let mut m = m;
    m.get_mut().push(5);
    assert_eq!(unsafe { &*m.data_ptr() }.len(), 5);
    assert_eq!(format!("{m:?}"), "Mutex { data: [1, 20, 3, 4, 5] }");
    assert_eq!(m.into_inner(), [1, 20, 3, 4, 5]);
    let d: Mutex<u8> = Default::default();
    let f: Mutex<u8> = Mutex::from(3);
    assert_eq!((*d.lock(), *f.lock()), (0, 3));
}

#[test]
fn mutex_timed_lock_succeeds_when_released_in_time() {
    let m = Arc::new(Mutex::new(()));
    let g = m.lock();
    let m2 = m.clone();
    // A timeout far beyond the release (20 ms): only a lock that is never
    // handed over times out.
    let h = std::thread::spawn(move || m2.try_lock_for(Duration::from_secs(120)).is_some());
    std::thread::sleep(Duration::from_millis(20));
    drop(g);
    assert!(h.join().unwrap());
}

#[test]
fn mutex_guard_can_cross_threads_for_unlock_only_with_send_guard() {
    // Without send_guard the guard is !Send (checked at compile time by the
    // marker); force_unlock from another thread is still allowed.
    let m = Arc::new(Mutex::new(0));
    std::mem::forget(m.lock());
    let m2 = m.clone();
    std::thread::spawn(move || unsafe { m2.force_unlock() })
        .join()
        .unwrap();
    assert!(!m.is_locked());
    *m.lock() += 1;
}

#[test]
fn const_constructors_and_statics() {
    static M: Mutex<u32> = const_mutex(1);
    static F: FairMutex<u32> = const_fair_mutex(2);
    static R: ReentrantMutex<u32> = const_reentrant_mutex(3);
    static N: Mutex<u32> = Mutex::new(4);
    assert_eq!(*M.lock() + *F.lock() + *R.lock() + *N.lock(), 10);
}

#[test]
fn fair_mutex_guard_api() {
    let m = FairMutex::new((1, 2));
    let g: FairMutexGuard<'_, (i32, i32)> = m.lock();
    assert!(m.try_lock().is_none());
    let mut mg: MappedFairMutexGuard<'_, i32> = FairMutexGuard::map(g, |p| &mut p.1);
    *mg = 7;
    drop(mg);
    let g = m.try_lock_for(Duration::from_millis(1)).unwrap();
    FairMutexGuard::unlock_fair(g);
    assert_eq!(*m.lock(), (1, 7));
}

#[test]
fn fair_mutex_hands_over_to_a_waiter() {
    // The releasing thread re-locks at once; with every unlock fair the
    // waiter must still get in (it gets the lock in the releasing CAS).
    let m = Arc::new(FairMutex::new(0u32));
    let stop = Arc::new(AtomicBool::new(false));
    let g = m.lock();
    let (m2, stop2) = (m.clone(), stop.clone());
    let h = std::thread::spawn(move || {
        *m2.lock() += 1;
        stop2.store(true, Ordering::Release);
    });
    std::thread::sleep(Duration::from_millis(20));
    drop(g);
    // Until the waiter got in (the event); the watchdog only catches
    // starvation.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stop.load(Ordering::Acquire) {
        assert!(
            Instant::now() < deadline,
            "watchdog: after 120 s the waiter has not got the lock (starved)"
        );
        let _g = m.lock();
    }
    h.join().unwrap();
    assert_eq!(*m.lock(), 1);
}

#[test]
fn raw_mutex_traits() {
    for fair in [false, true] {
        let m = RawMutex::INIT;
        assert!(!m.is_locked());
        m.lock();
        assert!(m.is_locked() && !m.try_lock());
        assert!(!m.try_lock_for(Duration::from_millis(1)));
        assert!(!m.try_lock_until(Instant::now()));
        unsafe {
            m.bump();
            if fair { m.unlock_fair() } else { m.unlock() }
        }
        assert!(m.try_lock_until(Instant::now() + Duration::from_millis(1)));
        unsafe { m.unlock() };
        let f = RawFairMutex::INIT;
        f.lock();
        assert!(f.is_locked() && !f.try_lock() && !f.try_lock_for(Duration::from_millis(1)));
        unsafe {
            f.bump();
            if fair { f.unlock_fair() } else { f.unlock() }
        }
        assert!(f.try_lock_until(Instant::now() + Duration::from_millis(1)));
        unsafe { f.unlock() };
        assert!(!f.is_locked());
    }
    // The sizes this crate documents.
    assert_eq!(std::mem::size_of::<RawMutex>(), 16);
    assert_eq!(std::mem::size_of::<RawFairMutex>(), 16);
}

#[test]
fn reentrant_mutex() {
    let m = Arc::new(ReentrantMutex::new(RefCell::new(0)));
    {
        let a: ReentrantMutexGuard<'_, RefCell<i32>> = m.lock();
        let b = m.try_lock().unwrap();
        let c = m.try_lock_for(Duration::from_millis(1)).unwrap();
        *c.borrow_mut() += 1;
        assert!(m.is_owned_by_current_thread());
        let m2 = m.clone();
        let other = std::thread::spawn(move || {
            (
                m2.try_lock().is_none(),
                m2.try_lock_until(Instant::now() + Duration::from_millis(5))
                    .is_none(),
                m2.is_owned_by_current_thread(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(other, (true, true, false));
        let mut b = b;
        ReentrantMutexGuard::bump(&mut b);
        drop((a, b, c));
    }
    assert!(!m.is_locked());
    let g = m.lock();
    let mapped: MappedReentrantMutexGuard<'_, RefCell<i32>> = ReentrantMutexGuard::map(g, |c| c);
    assert_eq!(*mapped.borrow(), 1);
    MappedReentrantMutexGuard::unlock_fair(mapped);
    hammer(m.clone(), 4, 5_000, |m| {
        let g = m.lock();
        let g2 = m.lock();
        *g2.borrow_mut() += 1;
        drop(g);
    });
    assert_eq!(*m.lock().borrow(), 20_001);
}

#[test]
fn raw_thread_id_unique_among_live_threads() {
    let here = RawThreadId::INIT.nonzero_thread_id();
    assert_eq!(here, RawThreadId::INIT.nonzero_thread_id());
    let b = Arc::new(std::sync::Barrier::new(4));
    let ids: Vec<_> = (0..4)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                let id = RawThreadId::INIT.nonzero_thread_id();
                b.wait(); // all alive at once
                id
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let mut set: std::collections::HashSet<_> = ids.into_iter().collect();
    set.insert(here);
    assert_eq!(set.len(), 5);
}

#[test]
fn lock_api_is_reexported_and_types_are_lock_api_04s() {
    // Code that names the lock_api types through parking_lot.
    fn takes<R: parking_lot::lock_api::RawMutex, T>(
        m: &parking_lot::lock_api::Mutex<R, T>,
    ) -> bool {
        m.is_locked()
    }
    let m: parking_lot::lock_api::Mutex<RawMutex, u8> = Mutex::new(0);
    assert!(!takes(&m));
    let r: &parking_lot::lock_api::RwLock<parking_lot::RawRwLock, u8> =
        &parking_lot::RwLock::new(0);
    assert!(!r.is_locked());
}

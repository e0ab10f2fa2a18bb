//! Lock-order validation through the parking_lot crate (feature `lockdep`,
//! klock's `lockdep`): its mutexes and rwlock report order cycles, and a
//! reentrant relock is no order. Threads run one after another (nothing
//! really deadlocks); one test at a time (the report counter is global).
#![cfg(feature = "lockdep")]

use klock::internal::lockdep;
use parking_lot::{FairMutex, Mutex, ReentrantMutex, RwLock};
use std::thread;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static INIT: std::sync::Once = std::sync::Once::new();
    let g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    INIT.call_once(|| {
        let file =
            std::env::temp_dir().join(format!("klock-pl-lockdep-{}.txt", std::process::id()));
        // SAFETY: set once, before any report reads it, while the other
        // tests wait here.
        unsafe { std::env::set_var("KLOCK_LOCKDEP_FILE", file) };
        lockdep::set_enabled(true, false);
    });
    g
}

fn on_thread<F: FnOnce() + Send>(f: F) {
    thread::scope(|s| s.spawn(f).join().unwrap());
}

fn reports_of(f: impl FnOnce()) -> u64 {
    let before = lockdep::reports();
    f();
    lockdep::reports() - before
}

#[test]
fn mutex_ab_then_ba_is_reported() {
    let _s = serial();
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| drop((a.lock(), b.lock())));
        on_thread(|| {
            let gb = b.lock();
            let ga = a.lock();
            drop((ga, gb));
        });
    });
    assert_eq!(n, 1);
}

#[test]
fn fair_mutex_ab_then_ba_is_reported() {
    let _s = serial();
    let (a, b) = (FairMutex::new(0), FairMutex::new(0));
    let n = reports_of(|| {
        on_thread(|| drop((a.lock(), b.lock())));
        on_thread(|| {
            let gb = b.lock();
            let ga = a.lock();
            drop((ga, gb));
        });
    });
    assert_eq!(n, 1);
}

#[test]
fn reentrant_relock_is_no_order() {
    let _s = serial();
    let (r, m) = (ReentrantMutex::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| {
            let g1 = r.lock();
            let gm = m.lock();
            // Held already by this thread: no wait, no `m -> r` order.
            let g2 = r.lock();
            drop((g2, gm, g1));
        });
        on_thread(|| {
            let g1 = r.lock();
            let g2 = r.lock();
            drop((g2, g1));
        });
    });
    assert_eq!(n, 0);
    // A first lock of `r` under `m` is an order, against `r -> m` above.
    let n = reports_of(|| {
        on_thread(|| {
            let gm = m.lock();
            let g = r.lock();
            drop((g, gm));
        })
    });
    assert_eq!(n, 1);
}

#[test]
fn rwlock_orders_are_reported_and_recursive_reads_pass() {
    let _s = serial();
    let (l, m) = (RwLock::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| drop((l.read(), m.lock())));
        on_thread(|| {
            let g = m.lock();
            let w = l.write();
            drop((w, g));
        });
    });
    assert_eq!(n, 1);
    let (l2, m2) = (RwLock::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| drop((l2.read_recursive(), m2.lock())));
        on_thread(|| {
            let g = m2.lock();
            let r = l2.read_recursive();
            drop((r, g));
        });
    });
    assert_eq!(n, 0);
}

#[test]
fn try_lock_then_timed_lock() {
    let _s = serial();
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| drop((a.lock(), b.lock())));
        on_thread(|| {
            let gb = b.lock();
            let ga = a.try_lock().expect("free");
            drop((ga, gb));
        });
    });
    assert_eq!(n, 0);
    // A timed lock is a blocking acquisition.
    let n = reports_of(|| {
        on_thread(|| {
            let gb = b.lock();
            let ga = a
                .try_lock_for(std::time::Duration::from_millis(10))
                .expect("free");
            drop((ga, gb));
        })
    });
    assert_eq!(n, 1);
}

//! Lock-order validation of klock's Rust locks (feature `lockdep`): each
//! scenario takes its locks on threads joined one after another, so nothing
//! really deadlocks, and counts the reports it caused. The report counter is
//! process-wide: the tests run one at a time (`serial`).
#![cfg(feature = "lockdep")]

use klock::internal::lockdep;
use klock::{Mutex, RwLock, RwLockRecursiveExt, SpinLock};
use std::sync::{Mutex as StdMutex, MutexGuard as StdGuard, Once};
use std::thread;

/// The report file, set once before any report (all reports of this process
/// are appended to it).
fn report_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("klock-lockdep-test-{}.txt", std::process::id()))
}

/// One test at a time (the counter is global), with validation on and the
/// reports going to `report_file`.
fn serial() -> StdGuard<'static, ()> {
    static ONE: StdMutex<()> = StdMutex::new(());
    static INIT: Once = Once::new();
    let g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    INIT.call_once(|| {
        let _ = std::fs::remove_file(report_file());
        // SAFETY: set once, before any report reads it, while the other
        // tests wait in `serial` (no klock call reads the environment then).
        unsafe { std::env::set_var("KLOCK_LOCKDEP_FILE", report_file()) };
        lockdep::set_enabled(true, false);
    });
    g
}

/// Runs `f` on a thread of its own and waits for it.
fn on_thread<F: FnOnce() + Send>(f: F) {
    thread::scope(|s| s.spawn(f).join().unwrap());
}

/// The reports `f` caused.
fn reports_of(f: impl FnOnce()) -> u64 {
    let before = lockdep::reports();
    f();
    lockdep::reports() - before
}

#[inline(never)]
fn mutex_take_in_order(first: &Mutex<u32>, second: &Mutex<u32>) {
    let a = first.lock();
    let b = second.lock();
    drop((b, a));
}

#[test]
fn mutex_ab_then_ba_is_reported_once() {
    let _s = serial();
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| mutex_take_in_order(&a, &b));
        on_thread(|| mutex_take_in_order(&b, &a));
    });
    assert_eq!(n, 1);
    // The same orders again: that cycle was reported already.
    let again = reports_of(|| {
        on_thread(|| mutex_take_in_order(&a, &b));
        on_thread(|| mutex_take_in_order(&b, &a));
    });
    assert_eq!(again, 0);
    let text = std::fs::read_to_string(report_file()).expect("the report file");
    assert!(text.contains("possible deadlock"), "{text}");
    assert!(text.contains("klock lockdep: end of report"), "{text}");
}

/// The report's stacks name the program's frames: with klock linked into the
/// program, its own frames are told apart by their symbols, not by their
/// object (which is the program itself), and a lock's "first taken nested
/// at" is the first frame past them.
#[test]
fn the_report_names_the_frame_that_took_the_lock() {
    let _s = serial();
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| mutex_take_in_order(&a, &b));
        on_thread(|| mutex_take_in_order(&b, &a));
    });
    assert_eq!(n, 1);
    let text = std::fs::read_to_string(report_file()).expect("the report file");
    assert!(text.contains("mutex_take_in_order"), "{text}");
    assert!(!text.contains("nested at _ZN5klock7lockdep"), "{text}");
}

#[test]
fn one_order_on_eight_threads_is_no_report() {
    let _s = serial();
    let (a, b, c) = (Mutex::new(0u32), Mutex::new(0u32), Mutex::new(0u32));
    let n = reports_of(|| {
        thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let ga = a.lock();
                        let mut gb = b.lock();
                        *gb += 1;
                        let gc = c.lock();
                        drop((gc, gb, ga));
                        // A part of the order, also consistent.
                        let gb = b.lock();
                        let gc = c.lock();
                        drop((gc, gb));
                    }
                });
            }
        });
    });
    assert_eq!(n, 0);
    assert_eq!(*b.lock(), 8 * 200);
}

#[test]
fn try_lock_back_off_is_no_report_but_blocking_is() {
    let _s = serial();
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let tried = reports_of(|| {
        on_thread(|| mutex_take_in_order(&a, &b));
        on_thread(|| {
            let gb = b.lock();
            // The try succeeds here (nobody holds `a`); had it failed, the
            // thread would back off: no wait, no order.
            if let Some(ga) = a.try_lock() {
                drop(ga);
            }
            drop(gb);
        });
    });
    assert_eq!(tried, 0);
    let blocking = reports_of(|| on_thread(|| mutex_take_in_order(&b, &a)));
    assert_eq!(blocking, 1);
}

#[test]
fn rwlock_read_then_mutex_and_mutex_then_write_is_reported() {
    let _s = serial();
    let (l, m) = (RwLock::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| {
            let r = l.read();
            let g = m.lock();
            drop((g, r));
        });
        on_thread(|| {
            let g = m.lock();
            let w = l.write();
            drop((w, g));
        });
    });
    assert_eq!(n, 1);
}

#[test]
fn rwsem_read_then_mutex_and_mutex_then_write_is_reported() {
    let _s = serial();
    let (l, m) = (klock::RwLockRwsem::new(0), Mutex::new(0));
    let n = reports_of(|| {
        on_thread(|| {
            let r = l.read();
            let g = m.lock();
            drop((g, r));
        });
        on_thread(|| {
            let g = m.lock();
            let w = l.write();
            drop((w, g));
        });
    });
    assert_eq!(n, 1);
}

#[test]
fn recursive_reads_are_no_edge_and_upgradable_reads_are_writes() {
    let _s = serial();
    let (l, m) = (RwLock::new(0), Mutex::new(0));
    // A recursive read relock, and a read held across a mutex both ways
    // round with recursive reads: reads that pass waiting writers cannot
    // wait for each other.
    let reads = reports_of(|| {
        on_thread(|| {
            let r1 = l.read_recursive();
            let r2 = l.read_recursive();
            let g = m.lock();
            drop((g, r2, r1));
        });
        on_thread(|| {
            let g = m.lock();
            let r = l.read_recursive();
            drop((r, g));
        });
    });
    assert_eq!(reads, 0);
    // Plain reads queue behind a waiting writer: the same orders with
    // `read` can deadlock (with a writer waiting on `l2`).
    let (l2, m2) = (RwLock::new(0), Mutex::new(0));
    let plain = reports_of(|| {
        on_thread(|| {
            let r = l2.read();
            let g = m2.lock();
            drop((g, r));
        });
        on_thread(|| {
            let g = m2.lock();
            let r = l2.read();
            drop((r, g));
        });
    });
    assert_eq!(plain, 1);
    // An upgradable read excludes writers: mutex then upgradable read
    // against upgradable read then mutex is a cycle.
    let (u, n) = (RwLock::new(0), Mutex::new(0));
    let upgradable = reports_of(|| {
        on_thread(|| {
            let g = u.upgradable_read();
            let h = n.lock();
            drop((h, g));
        });
        on_thread(|| {
            let h = n.lock();
            let g = u.upgradable_read();
            let w = klock::RwLockUpgradableReadGuard::upgrade(g);
            drop((w, h));
        });
    });
    assert_eq!(upgradable, 1);
}

#[test]
fn spinlock_pair_is_reported() {
    let _s = serial();
    let (a, b) = (SpinLock::new(0), SpinLock::new(0));
    let n = reports_of(|| {
        on_thread(|| {
            let ga = a.lock();
            let gb = b.lock();
            drop((gb, ga));
        });
        on_thread(|| {
            let gb = b.lock();
            let ga = a.lock();
            drop((ga, gb));
        });
    });
    assert_eq!(n, 1);
}

#[test]
fn condvar_wait_retakes_its_mutex() {
    let _s = serial();
    // Holding `a`, a wait on `m` releases and retakes `m`: the retake is
    // an `a -> m` order like the first acquisition; `m -> a` elsewhere
    // closes the cycle.
    let (a, m, cv) = (Mutex::new(0), Mutex::new(0), klock::Condvar::new());
    let n = reports_of(|| {
        on_thread(|| {
            let ga = a.lock();
            let mut gm = m.lock();
            let _ = cv.wait_for(&mut gm, std::time::Duration::from_millis(1));
            drop((gm, ga));
        });
        on_thread(|| mutex_take_in_order(&m, &a));
    });
    assert_eq!(n, 1);
    // A wait with nothing else held adds nothing.
    let (m2, cv2) = (Mutex::new(0), klock::Condvar::new());
    let alone = reports_of(|| {
        on_thread(|| {
            let mut g = m2.lock();
            let _ = cv2.wait_for(&mut g, std::time::Duration::from_millis(1));
        })
    });
    assert_eq!(alone, 0);
}

#[test]
fn a_new_mutex_at_a_dropped_ones_place_is_a_new_lock() {
    let _s = serial();
    let mut v = [Mutex::new(0), Mutex::new(0)];
    let (p0, p1) = (&v[0] as *const _, &v[1] as *const _);
    let n = reports_of(|| {
        on_thread(|| mutex_take_in_order(&v[0], &v[1]));
        // Overwrite both slots: each old mutex is dropped in place.
        v[0] = Mutex::new(0);
        v[1] = Mutex::new(0);
        assert_eq!((&v[0] as *const _, &v[1] as *const _), (p0, p1));
        on_thread(|| mutex_take_in_order(&v[1], &v[0]));
    });
    assert_eq!(n, 0);

    // A Box freed and its memory reused for a new mutex.
    let a = Box::new(Mutex::new(0));
    let b = Box::new(Mutex::new(0));
    on_thread(|| mutex_take_in_order(&a, &b));
    let (pa, pb) = (
        &*a as *const Mutex<u32> as usize,
        &*b as *const Mutex<u32> as usize,
    );
    drop((a, b));
    let c = Box::new(Mutex::new(0));
    let d = Box::new(Mutex::new(0));
    let (pc, pd) = (
        &*c as *const Mutex<u32> as usize,
        &*d as *const Mutex<u32> as usize,
    );
    let n = reports_of(|| on_thread(|| mutex_take_in_order(&d, &c)));
    assert_eq!(n, 0, "reused addresses {pa:x} {pb:x} -> {pc:x} {pd:x}");

    // Overwritten without a drop (`ptr::write`, as a move out of the slot
    // would leave it): the address keeps the old lock's identity, so the
    // new mutexes inherit its order. (Why the raw types forget on drop.)
    let mut w = [Mutex::new(0), Mutex::new(0)];
    on_thread(|| mutex_take_in_order(&w[0], &w[1]));
    // SAFETY: the old mutexes are unlocked and own nothing that needs a drop
    // beyond the identity this test wants to keep.
    unsafe {
        std::ptr::write(&mut w[0], Mutex::new(0));
        std::ptr::write(&mut w[1], Mutex::new(0));
    }
    let n = reports_of(|| on_thread(|| mutex_take_in_order(&w[1], &w[0])));
    assert_eq!(n, 1);
}

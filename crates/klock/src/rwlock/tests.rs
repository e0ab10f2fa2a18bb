use super::*;
use crate::wait;
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

thread_local! {
    pub(super) static MODE: std::cell::Cell<Option<crate::tune::ReaderMode>> =
        const { std::cell::Cell::new(None) };
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
            MODE.with(|c| c.set(mode));
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
fn eventually(what: &str, f: impl Fn() -> bool) {
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

#[test]
fn pref_reads_pass_a_waiting_writer() {
    let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
    l.lock_shared();
    let l2 = l.clone();
    let w = std::thread::spawn(move || {
        let t = l2.lock_exclusive();
        unsafe { l2.unlock_exclusive(t) };
    });
    eventually("writer queued", || l.count_word() & WAITERS != 0);
    let l3 = l.clone();
    std::thread::spawn(move || {
        // The fair read queues behind the writer; the reader-preferring
        // ones get in (the lock is read-held).
        assert!(!l3.try_lock_shared());
        assert!(l3.try_lock_shared_prefer_readers());
        assert!(l3.lock_shared_prefer_readers_until_ns(wait::now_ns() + 1_000_000));
        l3.lock_shared_prefer_readers();
        assert_eq!(readers(l3.count_word()), 4);
        for _ in 0..3 {
            unsafe { l3.unlock_shared() };
        }
    })
    .join()
    .unwrap();
    assert!(!w.is_finished());
    unsafe { l.unlock_shared() };
    w.join().unwrap();
    assert_eq!(l.count_word(), 0);
}

#[test]
fn pref_reads_never_join_a_writer() {
    let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
    let t = l.lock_exclusive();
    assert!(!l.try_lock_shared_prefer_readers());
    assert!(!l.lock_shared_prefer_readers_until_ns(wait::now_ns() + 2_000_000));
    assert_eq!(l.count_word(), WRITER);
    // Free, but a hand-off is owed to a waiter: no.
    assert!(!is_pref_read_lockable(WAITERS | HANDOFF));
    let l2 = l.clone();
    let r = std::thread::spawn(move || {
        l2.lock_shared_prefer_readers();
        unsafe { l2.unlock_shared() };
    });
    eventually("reader queued", || l.count_word() & PREFQ != 0);
    unsafe { l.unlock_exclusive(t) };
    r.join().unwrap();
    assert_eq!(l.count_word(), 0, "PREFQ and WAITERS cleared");
}

/// INV-PREFQ: a reader-preferring reader queued behind a writer at the
/// head gets in once another reader holds the lock.
#[test]
fn pref_reader_queued_behind_writer_is_granted_when_read_owned() {
    let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
    let t = l.lock_exclusive();
    let l2 = l.clone();
    let w = std::thread::spawn(move || {
        let t = l2.lock_exclusive();
        unsafe { l2.unlock_exclusive(t) };
    });
    eventually("writer queued", || l.count_word() & WAITERS != 0);
    let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (l3, in3) = (l.clone(), inside.clone());
    let r = std::thread::spawn(move || {
        l3.lock_shared_prefer_readers();
        in3.store(true, Ordering::SeqCst);
        unsafe { l3.unlock_shared() };
    });
    eventually("reader queued", || l.count_word() & PREFQ != 0);
    unsafe { l.unlock_exclusive(t) };
    // The writer may win first; either way, once we read-hold the lock
    // the queued reader must get in beside us.
    l.lock_shared_prefer_readers();
    eventually("queued reader admitted beside a reader", || {
        inside.load(Ordering::SeqCst)
    });
    unsafe { l.unlock_shared() };
    r.join().unwrap();
    w.join().unwrap();
    assert_eq!(l.count_word(), 0);
}

/// Reader-preferring readers (blocking, try, timed) against writers:
/// no torn read, no lost update, a clean word at the end.
#[test]
fn pref_readers_and_writers_contended() {
    for spin in [false, true] {
        if spin {
            hammer_pref::<SpinOsq>(4, 3, 5_000);
        } else {
            hammer_pref::<SpinOff>(4, 3, 5_000);
        }
    }
}

fn hammer_pref<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
    let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
        Arc::new(lock_api::RwLock::new((0, 0)));
    let hs: Vec<_> = (0..readers + writers)
        .map(|i| {
            let l = l.clone();
            std::thread::spawn(move || {
                let raw = unsafe { l.raw() };
                for k in 0..iters {
                    if i < readers {
                        let got = match k % 3 {
                            0 => {
                                raw.lock_shared_prefer_readers();
                                true
                            }
                            1 => raw.try_lock_shared_prefer_readers(),
                            _ => raw.lock_shared_prefer_readers_until_ns(wait::now_ns() + 100_000),
                        };
                        if got {
                            let g = unsafe { &*l.data_ptr() };
                            assert_eq!(g.0, g.1, "torn read");
                            unsafe { raw.unlock_shared() };
                        }
                    } else {
                        let mut g = l.write();
                        g.0 += 1;
                        g.1 += 1;
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(l.read().0, writers as u64 * iters);
    assert_eq!(unsafe { l.raw() }.count_word(), 0);
}

// ---- the lock_api extension traits (issue 20) --------------------------

/// A recursive read gets in while a writer waits, where a plain read
/// (fast path or try) would queue; it does not get in while a writer
/// holds the lock.
#[test]
fn recursive_read_passes_waiting_writer() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_shared();
    let l2 = l.clone();
    let w = std::thread::spawn(move || {
        let t = l2.lock_exclusive();
        unsafe { l2.unlock_exclusive(t) };
    });
    eventually("writer queued", || l.count_word() & WAITERS != 0);
    assert!(
        !l.try_lock_shared(),
        "a plain read must queue behind the writer"
    );
    assert!(l.try_lock_shared_recursive());
    l.lock_shared_recursive();
    assert!(l.lock_shared_recursive_until_ns(wait::now_ns() + 1_000_000));
    assert_eq!(readers(l.count_word()), 4);
    for _ in 0..4 {
        assert!(!w.is_finished());
        unsafe { l.unlock_shared() };
    }
    w.join().unwrap();
    assert_eq!(l.count_word(), 0);
    // A writer holds it: the recursive reads fail or time out, cleanly.
    let t = l.lock_exclusive();
    assert!(!l.try_lock_shared_recursive());
    let l3 = l.clone();
    let timed =
        std::thread::spawn(move || l3.lock_shared_recursive_until_ns(wait::now_ns() + 20_000_000));
    assert!(!timed.join().unwrap());
    assert_eq!(l.count_word(), WRITER);
    unsafe { l.unlock_exclusive(t) };
    assert_eq!(l.count_word(), 0);
}

/// A reader that holds the lock and reads again while an upgrade waits
/// for the readers to leave: a plain read would queue behind UPGRADING
/// (deadlock: the upgrader waits for us); the recursive read gets in.
#[test]
fn recursive_read_passes_an_upgrade_under_way() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_shared();
    let l2 = l.clone();
    let u = std::thread::spawn(move || {
        l2.lock_upgradable();
        let t = unsafe { l2.upgrade() };
        unsafe { l2.unlock_exclusive(t) };
    });
    eventually("upgrade under way", || l.count_word() & UPGRADING != 0);
    assert!(
        !l.try_lock_shared(),
        "a plain read must wait for the upgrade"
    );
    assert!(l.try_lock_shared_recursive());
    l.lock_shared_recursive();
    unsafe { l.unlock_shared() };
    unsafe { l.unlock_shared() };
    assert!(!u.is_finished());
    unsafe { l.unlock_shared() };
    u.join().unwrap();
    assert_eq!(l.count_word(), 0);
}

/// `downgrade_to_upgradable`: `(0,X) -> (1,U)`; readers get in (a
/// queued one is granted), another upgrader or a writer does not.
#[test]
fn downgrade_to_upgradable_lets_readers_in_only() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    let t = l.lock_exclusive();
    let l2 = l.clone();
    let r = std::thread::spawn(move || {
        l2.lock_shared();
        unsafe { l2.unlock_shared() };
    });
    eventually("reader queued", || l.count_word() & WAITERS != 0);
    unsafe { l.downgrade_to_upgradable(t) };
    // The queued reader is granted while we hold the upgradable lock.
    r.join().unwrap();
    assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
    assert!(l.try_lock_shared());
    assert!(!l.try_lock_upgradable());
    assert!(l.try_lock_exclusive().is_none());
    let l3 = l.clone();
    let timed = std::thread::spawn(move || {
        let up = l3.lock_upgradable_until_ns(wait::now_ns() + 10_000_000);
        let wr = l3.lock_exclusive_until_ns(wait::now_ns() + 10_000_000);
        (up, wr.is_some())
    });
    assert_eq!(timed.join().unwrap(), (false, false));
    assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
    unsafe { l.unlock_shared() };
    // Still upgradable: the upgrade needs no wait now.
    let t = unsafe { l.try_upgrade() }.expect("alone: upgrade at once");
    unsafe { l.unlock_exclusive(t) };
    assert_eq!(l.count_word(), 0);
}

/// `downgrade_upgradable`: `(n,U) -> (n,-)`; a queued upgrader gets in
/// beside our read lock, a writer still does not.
#[test]
fn downgrade_upgradable_lets_an_upgrader_in() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_upgradable();
    let l2 = l.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let u = std::thread::spawn(move || {
        l2.lock_upgradable();
        rx.recv().unwrap();
        unsafe { l2.unlock_upgradable() };
    });
    eventually("upgrader queued", || l.count_word() & WAITERS != 0);
    unsafe { l.downgrade_upgradable() };
    eventually("upgrader admitted", || {
        l.count_word() == (2 * READER_BIAS) | UPGRADE
    });
    assert!(l.try_lock_exclusive().is_none());
    tx.send(()).unwrap();
    u.join().unwrap();
    assert_eq!(l.count_word(), READER_BIAS);
    unsafe { l.unlock_shared() };
    assert_eq!(l.count_word(), 0);
}

/// A timed upgrade times out while a reader holds the lock; a reader
/// that queued because of UPGRADING meanwhile is granted when it gives
/// up; the lock is then fully usable (upgrade, write, read).
#[test]
fn timed_upgrade_times_out_while_a_reader_holds() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_upgradable();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let l1 = l.clone();
    let held = std::thread::spawn(move || {
        l1.lock_shared();
        rx.recv().unwrap();
        unsafe { l1.unlock_shared() };
    });
    eventually("reader inside", || readers(l.count_word()) == 2);
    let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (l2, in2) = (l.clone(), inside.clone());
    let late = std::thread::spawn(move || {
        eventually("upgrade under way", || l2.count_word() & UPGRADING != 0);
        l2.lock_shared();
        in2.store(true, Ordering::SeqCst);
        unsafe { l2.unlock_shared() };
    });
    assert!(unsafe { l.upgrade_until_ns(wait::now_ns() + 200_000_000) }.is_none());
    // As if we had never tried: no UPGRADING, still upgradable.
    assert_eq!(l.count_word() & (UPGRADING | WRITER | UPGRADE), UPGRADE);
    eventually("the reader queued behind UPGRADING got in", || {
        inside.load(Ordering::SeqCst)
    });
    late.join().unwrap();
    assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
    assert!(
        unsafe { l.upgrade_until_ns(0) }.is_none(),
        "deadline passed"
    );
    assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
    tx.send(()).unwrap();
    held.join().unwrap();
    let t = unsafe { l.upgrade_until_ns(wait::now_ns() + 1_000_000_000) }.unwrap();
    assert_eq!(l.count_word(), WRITER);
    unsafe { l.unlock_exclusive(t) };
    l.lock_shared();
    unsafe { l.unlock_shared() };
    assert_eq!(l.count_word(), 0);
}

/// A timed upgradable read queues behind another upgradable reader, gives
/// up, and leaves the word clean (no WAITERS, WAKING or HANDOFF left);
/// one that is let in before its deadline gets the lock.
#[test]
fn timed_upgradable_read_times_out_and_leaves_clean() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_upgradable();
    let l2 = l.clone();
    let h = std::thread::spawn(move || l2.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
    assert!(!h.join().unwrap());
    assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
    let l3 = l.clone();
    let h = std::thread::spawn(move || {
        let got = l3.lock_upgradable_until_ns(wait::now_ns() + 5_000_000_000);
        if got {
            unsafe { l3.unlock_upgradable() };
        }
        got
    });
    eventually("upgrader queued", || l.count_word() & WAITERS != 0);
    unsafe { l.unlock_upgradable() };
    assert!(h.join().unwrap());
    assert_eq!(l.count_word(), 0);
    // Behind a writer too.
    let t = l.lock_exclusive();
    let l4 = l.clone();
    let h = std::thread::spawn(move || l4.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
    assert!(!h.join().unwrap());
    assert_eq!(l.count_word(), WRITER);
    unsafe { l.unlock_exclusive(t) };
    assert_eq!(l.count_word(), 0);
}

/// `unlock_upgradable_fair` passes the lock to a queued writer in the
/// releasing CAS (WRITER is set before the writer even runs);
/// `bump_upgradable` lets it in and returns holding the upgradable lock
/// again, and without waiters changes nothing.
#[test]
fn fair_upgradable_unlock_and_bump() {
    let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
    l.lock_upgradable();
    let l2 = l.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let w = std::thread::spawn(move || {
        let t = l2.lock_exclusive();
        rx.recv().unwrap();
        unsafe { l2.unlock_exclusive(t) };
    });
    eventually("writer queued", || l.count_word() & WAITERS != 0);
    unsafe { l.unlock_upgradable_fair() };
    assert_eq!(
        l.count_word() & (WRITER | READER_MASK),
        WRITER,
        "handed over"
    );
    assert!(!l.try_lock_upgradable());
    tx.send(()).unwrap();
    w.join().unwrap();
    assert_eq!(l.count_word(), 0);

    l.lock_upgradable();
    unsafe { l.bump_upgradable() };
    assert_eq!(
        l.count_word(),
        READER_BIAS | UPGRADE,
        "no waiter: unchanged"
    );
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (l3, d3) = (l.clone(), done.clone());
    let w = std::thread::spawn(move || {
        let t = l3.lock_exclusive();
        d3.store(true, Ordering::SeqCst);
        unsafe { l3.unlock_exclusive(t) };
    });
    eventually("writer queued", || l.count_word() & WAITERS != 0);
    unsafe { l.bump_upgradable() };
    assert!(
        done.load(Ordering::SeqCst),
        "the bump let the writer in first"
    );
    assert_eq!(l.count_word() & !WAITERS, READER_BIAS | UPGRADE);
    w.join().unwrap();
    unsafe { l.unlock_upgradable() };
    assert_eq!(l.count_word(), 0);
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

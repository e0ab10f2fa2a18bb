//! `deadlock::check_deadlock` (feature `deadlock_detection`): real cycles
//! are reported once, with the right threads; contention, timed waits and
//! condvar waits are not deadlocks.
//!
//! The deadlocked threads of each test stay blocked until the process
//! exits. The detector is global, so the tests run one at a time.
#![cfg(feature = "deadlock_detection")]

use parking_lot::{Condvar, Mutex, ReentrantMutex, RwLock, RwLockUpgradableReadGuard, deadlock};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One thread's part: take the first lock, pass the barrier, take the second.
type Part = Box<dyn FnOnce(&Barrier) + Send>;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawn one thread per closure; each gets the barrier to pass between
/// taking its first lock and its second. Returns their ids.
fn spawn_all(fs: Vec<Part>) -> HashSet<ThreadId> {
    let b = Arc::new(Barrier::new(fs.len()));
    fs.into_iter()
        .map(|f| {
            let b = b.clone();
            std::thread::spawn(move || f(&b)).thread().id()
        })
        .collect()
}

/// Poll until a reported cycle has exactly the threads `want`. The watchdog
/// (120 s, far beyond the moment the threads block) only ends a wait for a
/// cycle that is never reported.
fn expect_cycle(want: &HashSet<ThreadId>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for cycle in deadlock::check_deadlock() {
            let got: HashSet<ThreadId> = cycle.iter().map(|t| t.thread_id()).collect();
            for t in &cycle {
                let _ = format!("{:?}", t.backtrace());
            }
            if &got == want {
                // Reported once only.
                assert!(
                    deadlock::check_deadlock()
                        .iter()
                        .all(|c| c.iter().all(|t| !want.contains(&t.thread_id())))
                );
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "watchdog: after 120 s no cycle reported for {want:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn mutex_abba() {
    let _s = serial();
    let (a, b) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
    let (a2, b2) = (a.clone(), b.clone());
    let ids = spawn_all(vec![
        Box::new(move |bar| {
            let _x = a.lock();
            bar.wait();
            let _y = b.lock();
        }),
        Box::new(move |bar| {
            let _x = b2.lock();
            bar.wait();
            let _y = a2.lock();
        }),
    ]);
    expect_cycle(&ids);
}

#[test]
fn three_thread_ring_with_a_bystander() {
    let _s = serial();
    let locks: Vec<_> = (0..3).map(|_| Arc::new(Mutex::new(()))).collect();
    let mut fs: Vec<Part> = Vec::new();
    for i in 0..3 {
        let (mine, next) = (locks[i].clone(), locks[(i + 1) % 3].clone());
        fs.push(Box::new(move |bar| {
            let _x = mine.lock();
            bar.wait();
            let _y = next.lock();
        }));
    }
    let ids = spawn_all(fs);
    // A thread that waits on the ring without being in it.
    let l0 = locks[0].clone();
    std::thread::spawn(move || drop(l0.lock()));
    expect_cycle(&ids);
}

#[test]
fn relocking_a_held_mutex() {
    let _s = serial();
    let m = Arc::new(Mutex::new(()));
    let ids = spawn_all(vec![Box::new(move |_| {
        let _x = m.lock();
        let _y = m.lock();
    })]);
    expect_cycle(&ids);
}

#[test]
fn reentrant_mutex_abba() {
    let _s = serial();
    let (a, b) = (
        Arc::new(ReentrantMutex::new(())),
        Arc::new(ReentrantMutex::new(())),
    );
    let (a2, b2) = (a.clone(), b.clone());
    let ids = spawn_all(vec![
        Box::new(move |bar| {
            let _x = a.lock();
            let _x2 = a.lock(); // reentrancy is not a wait
            bar.wait();
            let _y = b.lock();
        }),
        Box::new(move |bar| {
            let _x = b2.lock();
            bar.wait();
            let _y = a2.lock();
        }),
    ]);
    expect_cycle(&ids);
}

#[test]
fn rwlock_write_and_upgradable() {
    let _s = serial();
    let (a, b) = (Arc::new(RwLock::new(())), Arc::new(RwLock::new(())));
    let (a2, b2) = (a.clone(), b.clone());
    let ids = spawn_all(vec![
        Box::new(move |bar| {
            let _x = a.write();
            bar.wait();
            let _y = b.write();
        }),
        Box::new(move |bar| {
            let _x = b2.read();
            bar.wait();
            let _y = a2.upgradable_read();
        }),
    ]);
    expect_cycle(&ids);
}

#[test]
fn upgrade_waiting_for_a_reader_that_waits() {
    let _s = serial();
    let (l, m) = (Arc::new(RwLock::new(())), Arc::new(Mutex::new(())));
    let (l2, m2) = (l.clone(), m.clone());
    let ids = spawn_all(vec![
        Box::new(move |bar| {
            let _r = l.read();
            bar.wait();
            let _y = m.lock();
        }),
        Box::new(move |bar| {
            let _x = m2.lock();
            let u = l2.upgradable_read();
            bar.wait();
            let _w = RwLockUpgradableReadGuard::upgrade(u);
        }),
    ]);
    expect_cycle(&ids);
}

#[test]
fn contention_timed_waits_and_condvars_are_not_deadlocks() {
    let _s = serial();
    // Report (and so forget) anything left by another test.
    let _ = deadlock::check_deadlock();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (a, b) = (Arc::new(Mutex::new(())), Arc::new(RwLock::new(0u64)));
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let mut hs = Vec::new();
    for i in 0..4 {
        let i = i % 3;
        let (a, b, stop) = (a.clone(), b.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // One lock order (a before b): contention, never a cycle.
                let _x = a.lock();
                match i {
                    0 => *b.write() += 1,
                    1 => drop((b.read(), b.read_recursive())),
                    _ => {
                        let u = b.upgradable_read();
                        *RwLockUpgradableReadGuard::upgrade(u) += 1;
                    }
                }
                drop(_x);
                // And b alone: readers, writers and upgraders on one lock.
                match i {
                    0 => *b.write() += 1,
                    1 => drop(b.read()),
                    _ => {
                        let u = b.upgradable_read();
                        *RwLockUpgradableReadGuard::upgrade(u) += 1;
                    }
                }
            }
        }));
    }
    // ABBA with timeouts: both give up, neither is a deadlock.
    let (x, y) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
    let bar = Arc::new(Barrier::new(2));
    for (p, q) in [(x.clone(), y.clone()), (y.clone(), x.clone())] {
        let bar = bar.clone();
        hs.push(std::thread::spawn(move || {
            let _g = p.lock();
            bar.wait();
            drop(q.try_lock_for(Duration::from_millis(300)));
        }));
    }
    // A condvar wait holds nothing and waits for no lock.
    let p2 = pair.clone();
    hs.push(std::thread::spawn(move || {
        let mut g = p2.0.lock();
        p2.1.wait_while(&mut g, |ready| !*ready);
    }));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(250) {
        assert!(deadlock::check_deadlock().is_empty());
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    *pair.0.lock() = true;
    pair.1.notify_all();
    for h in hs {
        h.join().unwrap();
    }
    assert!(deadlock::check_deadlock().is_empty());
}

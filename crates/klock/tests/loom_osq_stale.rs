//! Loom models of the OSQ's give-up on a stale heartbeat (cfg(loom) only;
//! its own process, so its own tunables: `osq_stale_ns` != 0 here, 0 in the
//! other loom files).
//!
//! `.ci/loom --test loom_osq_stale` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//!
//! Natively a spinner gives up when its predecessor's heartbeat (a time
//! stamp) is older than `KLOCK_OSQ_STALE_NS`. Loom has no clock, so under
//! loom a heartbeat is a count and a spinner checks it at every iteration:
//! the predecessor looks descheduled when its count has not moved since the
//! spinner's previous check (`klock::internal::osq`, `looks_descheduled`). Loom then
//! explores the give-up wherever the predecessor may not have run in between
//! (a head never beats while it holds the OSQ in these models; a spinning
//! predecessor beats at each iteration). Budgets here are large enough that
//! the stale check, not the budget, ends the first spin.
//!
//! Checked: one OSQ head at a time, every spinner either became head or
//! unqueued (counted once), the queue empty at the end, no lost grant (a
//! spinner waiting for a grant nobody sends makes loom report a livelock or
//! exceed its branch limit); reached: `osq_stale` and the unqueue it leads
//! to, in the middle of the queue too (`osq_unqueue_relink`). The mutex
//! model runs a give-up inside the mutex: the unqueued spinner and the OSQ
//! head it left both go on to the wait list with the same nodes.
#![cfg(loom)]

use klock::SpinOsq;
use klock::internal::mutex::RawMutexInternals as _;
use klock::internal::osq::Osq;
use klock::stat::{Event, thread_snapshot};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod loom_common;
use loom_common::{
    Shared, SlotGate, lease, loom_tunables, osq_take_once, run_model_reaching, spawn,
};

fn model(reach: &[Event], f: impl Fn() + Sync + Send + 'static) {
    let mut t = loom_tunables();
    t.osq_stale_ns = 50_000;
    run_model_reaching(t, 2, reach, f);
}

/// `threads` spinners, each with a budget of `budget` iterations, take the
/// OSQ once each.
fn osq_model(threads: u64, budget: u64, reach: &[Event]) {
    model(reach, move || {
        let start = thread_snapshot();
        let q = Arc::new(Osq::new());
        let inside = Arc::new(AtomicBool::new(false));
        let heads = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (1..threads)
            .map(|_| {
                let (q, inside, heads) = (q.clone(), inside.clone(), heads.clone());
                loom::thread::spawn(move || {
                    osq_take_once(&q, budget, &inside, &heads);
                })
            })
            .collect();
        osq_take_once(&q, budget, &inside, &heads);
        for h in hs {
            h.join().unwrap();
        }
        assert!(q.is_empty());
        let d = thread_snapshot().delta(&start);
        assert_eq!(
            heads.load(Ordering::SeqCst) as u64 + d.get(Event::OsqUnqueue),
            threads
        );
    });
}

/// A head and a spinner (budget 3): the spinner gives up on the head's
/// stale heartbeat (or is granted the head first) and unqueues.
#[test]
fn osq_stale_two() {
    osq_model(2, 3, &[Event::OsqStale, Event::OsqUnqueue]);
}

/// Three spinners (budget 3 each): a spinner behind a spinning predecessor
/// gives up or not depending on whether that predecessor beat in between;
/// the one in the middle may give up with a successor behind it (step C).
#[test]
fn osq_stale_three() {
    osq_model(
        3,
        3,
        &[Event::OsqStale, Event::OsqUnqueue, Event::OsqUnqueueRelink],
    );
}

/// The mutex with OSQ spinning while spinners give up on a stale OSQ head:
/// two spinners queue behind the first (the OSQ head spinning on the owner
/// does not beat under loom's tiny budgets), one gives up and moves on to
/// the yield round and the wait list. Mutual exclusion, the count, a clean
/// word, no lost wake-up, and intact wait-list links (a link that reads 0
/// panics in `node::decode`: "corrupted queue tail"). Reached: `osq_stale`
/// and a spin that takes the lock.
///
/// It catches a missing Acquire that it found (issue 18): the successor's
/// step A stores 0 into the OSQ head's `next` and its step B moves the tail
/// back to the head (a Release CAS); the head then leaves through the
/// fast-path tail CAS in `Osq::unlock`, which was Release only. Nothing then
/// ordered the successor's 0 before the head's thread reused its node as a
/// wait-list node, and the memory model lets that 0 land after the wait
/// list's `next` link: `WaitList::remove` read `next` = 0 (loom: "klock:
/// corrupted queue tail 0x00000000: no such node" from `wait_queued`).
/// With the CAS AcqRel it passes. (Not observable natively on x86, where
/// every CAS is a full barrier; the wait list's own links are under WLOCK.)
///
/// Not reached here at bound 2 (CI's): step C (`osq_unqueue_relink`). It
/// needs three nodes in the OSQ, and `max_spinners()` is 2 under loom (a
/// third locker skips spinning on `depth_hint`, or joins at position 3 and
/// gives up at once as too deep, being last); `osq_stale_three` covers
/// step C in the bare OSQ, `torture_osq_stale.rs` natively (with chaos).
#[test]
fn mutex_osq_stale_three_lockers() {
    model(&[Event::OsqStale, Event::MutexSpinSuccess], || {
        // Threads lease their node slots through the gate (`SlotGate`: a
        // thread that exits returns its slot, and loom does not see the
        // registry's lock that orders the next lessee after it).
        lease();
        let g = Arc::new(SlotGate(AtomicUsize::new(0)));
        let s = Arc::new(Shared::<SpinOsq>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                spawn(&g, move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

//! Loom models of the OSQ's give-up on a stale heartbeat (cfg(loom) only;
//! its own process, so its own tunables: `osq_stale_ns` != 0 here, 0 in the
//! other loom files).
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p klock --release --features stats --test loom_osq_stale`
//!
//! Natively a spinner gives up when its predecessor's heartbeat (a time
//! stamp) is older than `KLOCK_OSQ_STALE_NS`. Loom has no clock, so under
//! loom a heartbeat is a count and a spinner checks it at every iteration:
//! the predecessor looks descheduled when its count has not moved since the
//! spinner's previous check (`klock::osq`, `looks_descheduled`). Loom then
//! explores the give-up wherever the predecessor may not have run in between
//! (a head never beats while it holds the OSQ in these models; a spinning
//! predecessor beats at each iteration). Budgets here are large enough that
//! the stale check, not the budget, ends the first spin.
//!
//! Checked: one OSQ head at a time, every spinner either became head or
//! unqueued (counted once), the queue empty at the end, no lost grant (a
//! spinner waiting for a grant nobody sends makes loom report a livelock or
//! exceed its branch limit); reached: `osq_stale` and the unqueue it leads
//! to, in the middle of the queue too (`osq_unqueue_relink`). The model of
//! the mutex whose spinners give up that way is ignored for now (see it).
#![cfg(loom)]

use klock::mutex::SpinOsq;
use klock::osq::Osq;
use klock::stat::{Event, thread_snapshot};
use klock::wait::SpinBudget;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod loom_common;
use loom_common::{Shared, SlotGate, lease, loom_tunables, run_model_reaching, spawn};

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
        let run = move |q: &Osq, inside: &AtomicBool, heads: &AtomicUsize| {
            klock::node::with_node(|n| {
                let n = n.unwrap();
                if q.lock(n, &mut SpinBudget::new(budget), 8) {
                    assert!(!inside.swap(true, Ordering::SeqCst), "two OSQ heads");
                    heads.fetch_add(1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    q.unlock(n);
                }
            })
        };
        let hs: Vec<_> = (1..threads)
            .map(|_| {
                let (q, inside, heads) = (q.clone(), inside.clone(), heads.clone());
                loom::thread::spawn(move || run(&q, &inside, &heads))
            })
            .collect();
        run(&q, &inside, &heads);
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
/// word, no lost wake-up.
///
/// Ignored: at preemption bound 2 it fails ("klock: corrupted queue tail
/// 0x00000000" from `WaitList::remove` in `wait_queued`: a waiter's `prev`
/// link reads 0), and it is not yet known whether that is a real defect of
/// the OSQ give-up followed by the wait list (the same node carries the OSQ
/// and the wait-list links) or a loom artifact like the one `SlotGate`
/// works around. The slots are leased through the gate here. Run it with
/// `--ignored`.
#[test]
#[ignore = "fails: corrupted wait-list link after an OSQ give-up (under investigation)"]
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

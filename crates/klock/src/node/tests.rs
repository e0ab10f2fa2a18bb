//! Unit tests of `node`.

use super::*;

#[test]
fn tail_round_trip_and_bounds() {
    for slot in [0, 1, 2, 100, 8191, MAX_SLOTS - 1] {
        for level in 0..LEVELS {
            let t = encode_tail(slot, level).unwrap();
            assert_ne!(t, 0);
            assert_eq!(t & !TAIL_MASK, 0, "low 16 bits free");
            assert_eq!(decode_tail(t), Some((slot, level)));
            assert_eq!(decode_tail(t | 0x1ff), Some((slot, level)));
        }
    }
    assert_eq!(encode_tail(MAX_SLOTS, 0), None);
    assert_eq!(encode_tail(0, LEVELS), None);
    assert_eq!(decode_tail(0), None);
    assert_eq!(decode_tail(0xffff), None);
    assert_eq!(MAX_SLOTS, 16383);
    // Distinct (slot, level) pairs give distinct tails.
    let mut seen = std::collections::HashSet::new();
    for slot in 0..64 {
        for level in 0..LEVELS {
            assert!(seen.insert(encode_tail(slot, level).unwrap()));
        }
    }
}

#[test]
fn registry_rejects_bad_tails() {
    let r = Registry::new(2);
    assert!(
        r.node(encode_tail(5, 0).unwrap()).is_none(),
        "beyond capacity"
    );
    let _l = r.acquire().unwrap();
    assert!(r.node(encode_tail(0, 3).unwrap()).is_some());
}

#[test]
fn slots_recycled_when_threads_exit() {
    let r = Registry::new(3);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..10 {
        let r2 = r.clone();
        let slot = std::thread::spawn(move || {
            let l = r2.acquire().expect("slot free");
            l.slot()
        })
        .join()
        .unwrap();
        seen.insert(slot);
    }
    // Each thread exited before the next started: the same slot came back.
    assert_eq!(seen.len(), 1);
    assert_eq!(r.in_use(), 0);
}

#[test]
fn exhaustion_then_recovery() {
    let r = Registry::new(2);
    let a = r.acquire().unwrap();
    let b = r.acquire().unwrap();
    assert_ne!(a.slot(), b.slot());
    let r2 = r.clone();
    assert!(
        std::thread::spawn(move || r2.acquire().is_none())
            .join()
            .unwrap(),
        "third thread gets no slot"
    );
    let freed = b.slot();
    drop(b);
    let c = r.acquire().expect("recycled");
    assert_eq!(c.slot(), freed);
    // Node memory of a recycled slot is the same (type-stable).
    assert!(std::ptr::eq(
        c.node(0).unwrap(),
        r.node(encode_tail(freed, 0).unwrap()).unwrap()
    ));
    drop(a);
}

#[test]
fn global_slot_released_at_thread_exit() {
    let reg = global_registry();
    let before = reg.in_use();
    let h = std::thread::spawn(move || {
        with_node(|q| q.unwrap().tail());
        global_registry().in_use()
    });
    let during = h.join().unwrap();
    assert!(during >= 1);
    // Other tests run concurrently and take slots too, so only check that
    // many sequential threads do not leak slots.
    for _ in 0..50 {
        std::thread::spawn(|| with_node(|q| assert!(q.is_some())))
            .join()
            .unwrap();
    }
    assert!(reg.in_use() < before + 40, "slots leaked");
}

#[test]
fn nesting_levels_and_overflow() {
    with_node(|a| {
        let a = a.unwrap();
        with_node(|b| {
            let b = b.unwrap();
            with_node(|c| {
                let c = c.unwrap();
                with_node(|d| {
                    let d = d.unwrap();
                    assert_eq!([a.level(), b.level(), c.level(), d.level()], [0, 1, 2, 3]);
                    with_node(|e| assert!(e.is_none(), "5th level has no node"));
                });
            });
        });
    });
    with_node(|a| assert_eq!(a.unwrap().level(), 0, "levels released"));
}

/// Every protocol's node values carry its own tag and no value is shared
/// between protocols (`docs/design.md`, principle P14).
#[test]
fn protocol_values_are_tagged_and_disjoint() {
    use crate::condvar::CondState;
    use crate::osq::OsqGrant;
    use crate::spin::QsState;
    use crate::waitlist::WaiterState;
    let groups: [(u32, Vec<u32>); 4] = [
        (
            tag::QSPIN,
            [
                QsState::Running,
                QsState::Halted,
                QsState::HeadHalted,
                QsState::HeadSleeping,
                QsState::Kicked,
            ]
            .map(|s| s as u32)
            .to_vec(),
        ),
        (
            tag::OSQ,
            [OsqGrant::Waiting, OsqGrant::Head]
                .map(|s| s as u32)
                .to_vec(),
        ),
        (
            tag::WAITER,
            [
                WaiterState::Sleeping,
                WaiterState::Woken,
                WaiterState::Granted,
                WaiterState::Granting,
            ]
            .map(|s| s as u32)
            .to_vec(),
        ),
        (tag::CONDVAR, vec![CondState::Waiting as u32]),
    ];
    let mut seen = std::collections::HashSet::new();
    for (t, vals) in &groups {
        for &v in vals {
            assert_eq!(v & tag::MASK, *t, "{v:#x}");
            assert!(v & !tag::MASK != 0, "a value is never just the tag");
            assert!(seen.insert(v), "{v:#x} used twice");
            for (t2, _) in &groups {
                assert_eq!(is_own(v, *t2), t == t2);
            }
        }
    }
    for s in [QsState::Running, QsState::Kicked] {
        assert_eq!(QsState::from_u32(s as u32), Some(s));
    }
    assert_eq!(QsState::from_u32(WaiterState::Sleeping as u32), None);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn foreign_tag_is_caught_in_debug_builds() {
    check_tag("state", tag::QSPIN | 1, tag::WAITER);
}

/// A stale store of another protocol into a node, then `read` (a
/// protocol's read of its own node, which must check the tag). Returns
/// only if the check is missing.
#[cfg(debug_assertions)]
fn stale_store_then(word: &AtomicU32, stale: u32, node: &Node, read: impl Fn(&Node)) {
    word.store(stale, Ordering::Relaxed);
    read(node);
}

// The reads that check the tag (the `check_tag` call sites), each given a
// node holding another protocol's value: the qspinlock's `Running`, the
// value of the e31284a bug (a kick at unlock stored it into a node whose
// thread had gone on to wait for a mutex or condvar). Making `check_tag`
// a no-op, or dropping the call from one of these reads, fails these
// tests (debug builds: the check is a `debug_assert!`).

/// A mutex waiter's `is_woken` (waitlist.rs).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn stale_qspin_store_caught_by_mutex_waiter() {
    use crate::spin::QsState;
    use crate::waitlist::{Waiter, WaiterState};
    let n = Node::new();
    Waiter::of(&n).set_state(WaiterState::Sleeping);
    stale_store_then(&n.state, QsState::Running as u32, &n, |n| {
        let _ = Waiter::of(n).is_woken();
    });
}

/// A rwsem grantee's `is_granted` (waitlist.rs).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn stale_qspin_store_caught_by_rwsem_grantee() {
    use crate::spin::QsState;
    use crate::waitlist::{Waiter, WaiterState};
    let n = Node::new();
    Waiter::of(&n).set_state(WaiterState::Granting);
    stale_store_then(&n.state, QsState::Running as u32, &n, |n| {
        let _ = Waiter::of(n).is_granted();
    });
}

/// A condvar waiter's `is_requeued` (waitlist.rs).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn stale_qspin_store_caught_by_condvar_requeue_check() {
    use crate::spin::QsState;
    use crate::waitlist::Waiter;
    let n = Node::new();
    Waiter::of(&n).set_raw_state(crate::condvar::CondState::Waiting as u32);
    stale_store_then(&n.state, QsState::Running as u32, &n, |n| {
        let _ = Waiter::of(n).is_requeued();
    });
}

/// A condvar waiter's `state_is` (waitlist.rs).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn stale_qspin_store_caught_by_condvar_state_check() {
    use crate::spin::QsState;
    use crate::waitlist::Waiter;
    let waiting = crate::condvar::CondState::Waiting as u32;
    let n = Node::new();
    Waiter::of(&n).set_raw_state(waiting);
    stale_store_then(&n.state, QsState::Running as u32, &n, |n| {
        let _ = Waiter::of(n).state_is(waiting);
    });
}

/// A qspinlock waiter's `granted` (spin/mod.rs), its grant word holding
/// an OSQ value.
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale write into a node")]
fn stale_osq_store_caught_by_qspin_grant_check() {
    use crate::osq::OsqGrant;
    use crate::spin::QsNode;
    let n = Node::new();
    QsNode::of(&n).init();
    stale_store_then(&n.grant, OsqGrant::Head as u32, &n, |n| {
        let _ = QsNode::of(n).granted();
    });
}

/// The reads above, on nodes holding their own protocol's values, do not
/// panic (the tests above fail for the stale value, not for the read).
#[test]
fn own_values_pass_the_tag_checks() {
    use crate::spin::QsNode;
    use crate::waitlist::{Waiter, WaiterState};
    let n = Node::new();
    Waiter::of(&n).set_state(WaiterState::Sleeping);
    assert!(!Waiter::of(&n).is_woken());
    Waiter::of(&n).set_state(WaiterState::Granting);
    assert!(!Waiter::of(&n).is_granted());
    let waiting = crate::condvar::CondState::Waiting as u32;
    Waiter::of(&n).set_raw_state(waiting);
    assert!(!Waiter::of(&n).is_requeued());
    assert!(Waiter::of(&n).state_is(waiting));
    QsNode::of(&n).init();
    assert!(!QsNode::of(&n).granted());
}

#[test]
fn simulate_no_node_hook() {
    simulate_no_node(true);
    with_node(|q| assert!(q.is_none()));
    simulate_no_node(false);
    with_node(|q| assert!(q.is_some()));
}

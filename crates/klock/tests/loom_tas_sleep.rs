//! Loom models of the TTAS lock with announced sleepers
//! (`klock::RawTasSleepLock`, `crates/klock/src/spin/tassleep.rs`, and the
//! mechanisms in `crates/klock/src/asym/`): design 1 (`Counted`) and design
//! 3 (`Parked`, the parking lot `asym/lot.rs`).
//!
//! Run: `.ci/loom --test loom_tas_sleep`.
//!
//! Loom cannot model `membarrier`. Under loom the barrier is a SeqCst fence
//! on the waiter's side and the unlock has one between its store and its
//! table load (Dekker's argument). So these models check the rest of the
//! protocol: the count, the sleep loop, the waker taking a woken waiter out
//! of the table, and mutual exclusion. The real barrier's argument is tested
//! by `torture_spin`'s `asym_*` tests under `.ci/chaos`.
//!
//! Models (the waiters do not spin, so every contended acquisition goes
//! through announce + sleep; each model asserts that some execution slept):
//! 1. `two_lockers`: two threads lock, increment, unlock, twice each.
//! 2. `three_lockers`: three threads, once each.
//! 3. `parked_two_lockers`, `parked_three_lockers`: the same with `Parked`
//!    (one wake in flight, re-arm in place), no grant.
//! 4. The grant models are in `loom_tas_grant.rs`: tunables are set once
//!    per test binary, and every model here runs with no grant
//!    (`KLOCK_SPIN_HANDOFF_NS` = 0).
//!
//! Deliberate breaks, checked by hand and not kept: `wake_one` replaced by
//! nothing in `Counted::unlock` makes loom report a deadlock (a sleeper
//! never woken) in models 1-2; `lot::wake` returning before it marks the
//! node Woken deadlocks models 3.
#![cfg(loom)]

mod loom_common;
use loom_common::loom_tunables;
use loom_common::tas::{three, two};

use klock::stat::Event;
use klock::{Counted, Parked};

/// Tunables of every model in this binary: no grant (`Counted` ignores it).
fn no_grant() -> klock::tune::Tunables {
    let mut t = loom_tunables();
    t.spin_handoff_ns = 0;
    t
}

/// Model 1: two threads, two critical sections each.
#[test]
fn two_lockers() {
    two::<Counted>(no_grant(), &[Event::TasSleep]);
}

/// Model 2: three threads, one critical section each.
#[test]
fn three_lockers() {
    three::<Counted>(no_grant(), &[Event::TasSleep]);
}

/// Model 3a: `Parked`, two threads, no grant.
#[test]
fn parked_two_lockers() {
    two::<Parked>(no_grant(), &[Event::TasSleep]);
}

/// Model 3b: `Parked`, three threads, no grant.
#[test]
fn parked_three_lockers() {
    three::<Parked>(no_grant(), &[Event::TasSleep]);
}

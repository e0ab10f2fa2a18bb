//! Loom models of the parked TAS lock's grant (`klock::RawTasParkLock`:
//! `crates/klock/src/spin/tassleep.rs` with `asym/lot.rs`), in their own
//! binary because tunables are set once per process: here
//! `KLOCK_SPIN_HANDOFF_NS` = 1, so every unlock that finds a parked waiter
//! takes the word again and grants it (`TasGrant` must be reached). The
//! grant's CAS, unlink and `Granted` store race the waiter's own try, its
//! re-arm and its leave.
//!
//! Run: `.ci/loom --test loom_tas_grant`.
//!
//! Models (no spinning; see `loom_tas_sleep.rs` for the barrier's stand-in):
//! 1. `grant_two_lockers`: two threads, two critical sections each.
//! 2. `grant_three_lockers`: three threads, one each.
//!
//! A deliberate break, checked by hand and not kept: the waiter's re-arm
//! skipping its `is_granted` check (a granted waiter goes back to sleep
//! owning the word) makes loom report a deadlock in model 2.
#![cfg(loom)]

mod loom_common;
use loom_common::loom_tunables;
use loom_common::tas::{three, two};

use klock::Parked;
use klock::stat::Event;

/// Every slow unlock grants.
fn always_grant() -> klock::tune::Tunables {
    let mut t = loom_tunables();
    t.spin_handoff_ns = 1;
    t
}

/// Model 1: two threads, two critical sections each.
#[test]
fn grant_two_lockers() {
    two::<Parked>(always_grant(), &[Event::TasSleep, Event::TasGrant]);
}

/// Model 2: three threads, one critical section each.
#[test]
fn grant_three_lockers() {
    three::<Parked>(always_grant(), &[Event::TasSleep, Event::TasGrant]);
}

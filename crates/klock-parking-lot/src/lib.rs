//! parking_lot 0.12's public API over klock's locks.
//!
//! This crate is named `parking_lot` and versioned 0.12.5 so that a program
//! (and every crate in its dependency graph that asks for `parking_lot =
//! "0.12"`) runs on klock after two lines in its `Cargo.toml`:
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "…/crates/klock-parking-lot" }
//! ```
//!
//! The lock types are the same `lock_api` **0.4** types parking_lot 0.12
//! exports (`Mutex<T>` is `lock_api::Mutex<RawMutex, T>`, and so on), over
//! this crate's own raw locks, which delegate to klock's:
//!
//! | parking_lot 0.12 | here, over klock |
//! |---|---|
//! | [`RawMutex`], [`Mutex`], [`MutexGuard`], [`MappedMutexGuard`], [`const_mutex`] | klock's `RawMutex` (OSQ spinning, FIFO sleepers, hand-off) |
//! | [`RawFairMutex`], [`FairMutex`], [`FairMutexGuard`], [`MappedFairMutexGuard`], [`const_fair_mutex`] | the same mutex, every unlock a fair (hand-off) unlock |
//! | [`RawThreadId`], [`ReentrantMutex`], [`ReentrantMutexGuard`], [`MappedReentrantMutexGuard`], [`const_reentrant_mutex`] | lock_api's reentrant mutex over [`RawMutex`] |
//! | [`RawRwLock`], [`RwLock`], its read, write, upgradable and mapped guards, [`const_rwlock`] | klock's `RawRwLock` (the rwsem) |
//! | [`Condvar`], [`WaitTimeoutResult`] | klock's `RawCondvar` (wait morphing) |
//! | [`Once`], [`OnceState`] | written here (1 byte, waits on a klock mutex and condvar) |
//! | `deadlock` (feature `deadlock_detection`) | a wait-for graph kept by the raw locks |
//! | [`lock_api`] | lock_api 0.4, re-exported |
//!
//! Where klock behaves differently from parking_lot (fairness, recursive
//! reads, the condvar's notify counts and wake-ups, `Once`) each item's
//! documentation says so under "Differences from parking_lot"; the
//! repository's `docs/parking-lot.md` has the whole table.
//!
//! ```
//! use parking_lot::{Condvar, Mutex, RwLock, RwLockUpgradableReadGuard};
//! use std::sync::Arc;
//!
//! let m = Mutex::new(1);
//! *m.lock() += 1;
//! assert_eq!(*m.lock(), 2);
//!
//! let l = RwLock::new(vec![1]);
//! let u = l.upgradable_read();
//! let mut w = RwLockUpgradableReadGuard::upgrade(u);
//! w.push(2);
//! drop(w);
//! assert_eq!(l.read().len(), 2);
//!
//! let pair = Arc::new((Mutex::new(false), Condvar::new()));
//! let p2 = pair.clone();
//! let t = std::thread::spawn(move || {
//!     *p2.0.lock() = true;
//!     p2.1.notify_one();
//! });
//! let mut ready = pair.0.lock();
//! pair.1.wait_while(&mut ready, |r| !*r);
//! assert!(*ready);
//! drop(ready);
//! t.join().unwrap();
//! ```
//!
//! # Features
//!
//! * `arc_lock`, `serde`, `owning_ref`: forwarded to lock_api 0.4's features
//!   of the same names (the `Arc*Guard` types are re-exported at the root).
//! * `send_guard`: the guards are `Send` (the raw locks' `GuardMarker` is
//!   `GuardSend`); klock's locks may be released by another thread.
//!   Incompatible with `deadlock_detection`, as in parking_lot.
//! * `deadlock_detection`: `deadlock::check_deadlock` reports cycles of
//!   threads blocked on this crate's locks (see the `deadlock` module).
//! * `hardware-lock-elision`: accepted and ignored: klock's locks never
//!   elide (parking_lot elides only the rwlock's reads, on x86 with TSX,
//!   which most current x86 CPUs ship disabled or lack); a lock word
//!   that is really written keeps klock's spinning and hand-off decisions
//!   exact.
//! * `nightly`: accepted; forwarded to lock_api 0.4's `nightly`, which
//!   changes nothing in 0.4.14. klock needs no nightly-only code.
//!
//! Without `send_guard` a guard cannot leave its thread (as in parking_lot):
#![cfg_attr(
    not(feature = "send_guard"),
    doc = "```compile_fail\nlet m = parking_lot::Mutex::new(0);\nlet g = m.lock();\nstd::thread::scope(|s| { s.spawn(move || drop(g)); });\n```"
)]
//!
//! Without `deadlock_detection` there is no `deadlock` module (as in
//! parking_lot), so a program that calls `check_deadlock` does not compile
//! rather than get an empty answer:
#![cfg_attr(
    not(feature = "deadlock_detection"),
    doc = "```compile_fail\nlet _ = parking_lot::deadlock::check_deadlock();\n```"
)]
#![warn(missing_docs)]

#[cfg(all(feature = "send_guard", feature = "deadlock_detection"))]
compile_error!("the `send_guard` and `deadlock_detection` features cannot be used together");

mod condvar;
mod k;
mod mutex;
mod once;
mod raw_mutex;
mod raw_rwlock;
mod remutex;
mod rwlock;

#[cfg(feature = "deadlock_detection")]
pub mod deadlock;
#[cfg(not(feature = "deadlock_detection"))]
mod deadlock;

/// The guards' `Send` marker: `GuardNoSend` unless the `send_guard` feature
/// is on (as in parking_lot).
#[cfg(feature = "send_guard")]
type GuardMarker = lock_api::GuardSend;
#[cfg(not(feature = "send_guard"))]
type GuardMarker = lock_api::GuardNoSend;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{
    FairMutex, FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard, Mutex, MutexGuard,
    const_fair_mutex, const_mutex,
};
pub use once::{Once, OnceState};
pub use raw_mutex::{RawFairMutex, RawMutex};
pub use raw_rwlock::RawRwLock;
pub use remutex::{
    MappedReentrantMutexGuard, RawThreadId, ReentrantMutex, ReentrantMutexGuard,
    const_reentrant_mutex,
};
pub use rwlock::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard, const_rwlock,
};

/// lock_api 0.4, the crate whose types parking_lot 0.12's are (programs
/// name `parking_lot::lock_api::RawMutex` and the other traits).
pub use ::lock_api;

#[cfg(feature = "arc_lock")]
pub use lock_api::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

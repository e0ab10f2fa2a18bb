//! klock: the Linux kernel's lock designs in user space.
//!
//! The user-facing API is at the crate root:
//!
//! * the general-purpose sleeping lock [`Mutex`] (OSQ-queued spinning, FIFO
//!   sleepers, hand-off) with its guard [`MutexGuard`] and its condition
//!   variable [`Condvar`]; variants [`MutexNoSpin`] / [`CondvarNoSpin`]
//!   (never spin) and [`MutexNoQueue`] (an ablation);
//! * the reader-writer lock [`RwLock`] (the kernel's rwsem: reader grants,
//!   hand-off, spinning, upgradable reads) with [`RwLockReadGuard`],
//!   [`RwLockWriteGuard`], [`RwLockUpgradableReadGuard`], the variant
//!   [`RwLockNoSpin`] and recursive reads through [`RwLockRecursiveExt`];
//! * the spinlock [`SpinLock`] (a TTAS lock with a plain-store unlock and
//!   parked waiters, [`TasParkLock`]) with [`SpinLockGuard`], and its
//!   variants: [`TasLock`], [`TasSleepLock`], [`TicketLock`],
//!   [`PvTicketLock`], [`QSpinLock`], [`PvBaseQSpinLock`], [`PvQSpinLock`],
//!   [`UnfairQSpinLock`] and [`DynSpinLock`] (chosen by `KLOCK_SPIN`);
//! * the raw types behind them for `lock_api` users: [`RawMutex`] (over a
//!   [`SpinPolicy`]: [`SpinOsq`], [`SpinNoQueue`], [`SpinOff`]),
//!   [`RawRwLock`], [`RawCondvar`], [`RawTasLock`], [`RawTicketLock`],
//!   [`RawQSpinLock`] (over a [`WaitPolicy`]: [`Native`], [`Pv`],
//!   [`PvBase`], [`Unfair`]) and [`RawSpin`], and the per-acquisition
//!   tokens their `lock_api` impls hand back at unlock ([`MutexToken`],
//!   [`WriteToken`], [`SpinToken`]);
//! * the tunables, [`tune`] (every `KLOCK_*` variable), and the lock
//!   statistics, [`stat`] (feature `stats`).
//!
//! The mechanisms the locks are built from (futex waiting, queue nodes, the
//! OSQ, the wait list, thread ids, fork safety, preemption injection) and
//! the locks' internals are not part of this API: the C library, the
//! interposer, lockbench and klock's own tests reach them through the hidden
//! module `klock::internal`, which is not stable. The repository's
//! `docs/design.md` describes the layers and the principles every lock
//! follows; `docs/invariants.md` defines the rules the code cites as
//! `INV-...` tags.
//!
//! ```
//! let lock = klock::SpinLock::new(0u64);
//! *lock.lock() += 1;
//! assert_eq!(*lock.lock(), 1);
//!
//! // The general-purpose sleeping lock and its condition variable.
//! let m = klock::Mutex::new(false);
//! let cv = klock::Condvar::new();
//! *m.lock() = true;
//! cv.notify_all();
//! let mut ready = m.lock();
//! cv.wait_while(&mut ready, |r| !*r);
//! assert!(*ready);
//!
//! // The reader-writer lock.
//! let l = klock::RwLock::new(1);
//! assert_eq!(*l.read() + *l.read(), 2);
//! *l.write() += 1;
//! assert_eq!(*l.read(), 2);
//! ```
#![warn(missing_docs)]

pub(crate) mod sync;

mod asym;

mod chaos;
mod condvar;
mod fork;
mod ldhook;
mod lockdep;
mod mutex;
mod node;
mod osq;
mod owner_spin;
mod reglock;
mod rwlock;
mod spin;
mod spin_policy;
pub mod stat;
mod symbolize;
mod textout;
mod tid;
mod tls;
pub mod tune;
mod wait;
mod waitlist;

#[doc(hidden)]
pub mod internal;

pub use condvar::RawCondvar;
#[cfg(not(loom))]
pub use condvar::{Condvar, CondvarNoSpin};
#[cfg(not(loom))]
pub use mutex::{Mutex, MutexGuard, MutexNoQueue, MutexNoSpin};
pub use mutex::{MutexToken, RawMutex, SpinNoQueue, SpinOff, SpinOsq, SpinPlain, SpinPolicy};
pub use rwlock::{RawRwLock, RawRwLockBatched, WriteToken};
#[cfg(not(loom))]
pub use rwlock::{
    RawRwLockRecursive, RwLock, RwLockNoSpin, RwLockReadGuard, RwLockRecursiveExt, RwLockRwsem,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};
pub use spin::Token as SpinToken;
pub use spin::{
    Counted, Native, Parked, Pv, PvBase, RawQSpinLock, RawSpin, RawTasLock, RawTasParkLock,
    RawTasSleepLock, RawTicketLock, TasSleeper, Unfair, WaitPolicy,
};
#[cfg(not(loom))]
pub use spin::{
    DynSpinLock, DynSpinLockGuard, PvBaseQSpinLock, PvBaseQSpinLockGuard, PvQSpinLock,
    PvQSpinLockGuard, PvTicketLock, PvTicketLockGuard, QSpinLock, QSpinLockGuard, SpinLock,
    SpinLockGuard, TasLock, TasLockGuard, TasParkLock, TasParkLockGuard, TasSleepLock,
    TasSleepLockGuard, TicketLock, TicketLockGuard, UnfairQSpinLock, UnfairQSpinLockGuard,
};

/// Register klock's `pthread_atfork` handlers now and build all of klock's
/// process-wide state (tunables, CPU count and quota test, chaos seed, node
/// registry, this thread's id and counter block, the parking lot's fork
/// hook). klock does each of these itself before first use; a program that
/// may `fork()` while its threads first use klock calls this early (before
/// it starts threads) so that no first use can race a fork (the
/// repository's `docs/fork.md`). Cheap after the first call.
///
/// ```
/// klock::register_fork_handlers();
/// klock::register_fork_handlers(); // built once
/// assert!(klock::internal::fork::registered());
/// ```
pub fn register_fork_handlers() {
    fork::register();
    let _ = tune::get();
    let _ = wait::effective_cpus();
    let _ = wait::quota_limited();
    let _ = chaos::seed();
    let _ = node::global_registry();
    let _ = tid::current_id();
    let _ = stat::thread_snapshot();
    #[cfg(not(loom))]
    asym::lot::install_fork_hook();
}

/// The README's Rust examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// `docs/mutex.md`'s Rust examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/mutex.md")]
pub struct MutexGuideDoctests;

/// `docs/rwsem.md`'s Rust examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/rwsem.md")]
pub struct RwsemGuideDoctests;

/// `docs/spinlocks.md`'s Rust examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/spinlocks.md")]
pub struct SpinlocksGuideDoctests;

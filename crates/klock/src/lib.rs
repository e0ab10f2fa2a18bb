//! klock: the Linux kernel's lock designs in user space.
//!
//! Layers (the repository's `docs/design.md` describes them and the
//! principles every lock follows; `docs/invariants.md` defines the rules
//! the code cites as `INV-...` tags):
//!
//! * mechanisms, written once and used by every lock:
//!   [`wait`] (futex wait/wake, time-based spin budgets, effective CPUs),
//!   [`node`] (per-thread queue nodes and the 32-bit tail encoding),
//!   [`osq`] (the cancellable MCS queue of spinners),
//!   [`waitlist`] (the FIFO of sleeping waiters),
//!   [`tid`] (per-thread ids, the owner identity in lock words),
//!   [`fork`] (fork safety of that global state: atfork handlers),
//!   [`tune`] (every tunable, `KLOCK_*` overrides),
//!   [`stat`] (lock-event counters, feature `stats`) and
//!   [`chaos`] (preemption injection, feature `chaos`);
//! * locks: [`spin`] (test-and-set, ticket, queued spinlock: native, PV, unfair),
//!   [`mutex`] (owner word, OSQ-queued spinning, wait list, handoff),
//!   [`condvar`] (wait morphing onto the mutex's wait list) and
//!   [`rwlock`] (the rwsem: reader grants, hand-off, spinning, upgradable reads).
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
//! ```
#![warn(missing_docs)]

pub(crate) mod sync;

pub mod chaos;
pub mod condvar;
pub mod fork;
pub mod mutex;
pub mod node;
pub mod osq;
pub(crate) mod owner_spin;
pub(crate) mod reglock;
pub mod rwlock;
pub mod spin;
pub mod stat;
pub mod tid;
pub mod tls;
pub mod tune;
pub mod wait;
pub mod waitlist;

#[cfg(not(loom))]
pub use condvar::Condvar;
#[cfg(not(loom))]
pub use mutex::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub use rwlock::{RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
#[cfg(not(loom))]
pub use spin::{SpinLock, SpinLockGuard};

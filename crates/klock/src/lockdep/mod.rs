//! Lock-order validation ("lockdep"): the kernel's idea for user space. Each
//! thread's held locks are known ([`held`]); taking lock `L` while holding `H`
//! records the edge `H -> L` the first time it is seen ([`graph`]), and an
//! edge that closes a cycle is reported ([`report`]) as a `possible
//! deadlock`, long before the unlucky interleaving happens.
//!
//! Layers: `hooks` (what a lock calls) sits on `settings` (`KLOCK_LOCKDEP*`,
//! the fork hooks), `held` (each thread's held locks), `ids` (lock
//! identity), `graph` (edges and the cycle search) and `report` (text and
//! output), none of which calls back up; `types` names [`Mode`] and
//! [`Lock`]; `region` maps the tables. This file only declares and
//! re-exports.
//!
//! **The rules** (docs/lockdep.md):
//! * a try that can fail creates no wait edge, but the lock counts as held;
//! * a recursive relock (a recursive mutex, a second read hold) is no edge;
//! * read-then-write and write-then-read orders can deadlock; read-read orders
//!   cannot on a reader-preferring lock ([`Mode::ReadPassing`]) but can on one
//!   whose readers queue behind a waiting writer ([`Mode::Read`]);
//! * a condvar wait releases and retakes its mutex (the caller calls
//!   [`released`], then [`acquire`]).
//!
//! **Cost**: with validation off, every hook is one relaxed load
//! ([`enabled`]); on, an acquisition reads the thread's held entries and
//! probes the edge set once per held lock it checks (the top one, and those
//! below it down to the first one that was waited for); only an edge never
//! seen takes the graph lock.
//!
//! ```
//! use klock::internal::lockdep::{self, Mode};
//! // The interposer's and klock's own locks call these; shown here by hand.
//! if lockdep::enabled() {
//!     let (a, b) = (0x1000usize, 0x2000usize);
//!     let (la, lb) = (lockdep::lock_at(a).unwrap(), lockdep::lock_at(b).unwrap());
//!     let lock = |l| lockdep::acquire(l, Mode::Write, false, false, || 0, |r| *r == 0);
//!     lock(la);
//!     lock(lb);
//!     lockdep::released(lb);
//!     lockdep::released(la);
//! }
//! ```
mod edges;
mod graph;
mod held;
mod hooks;
mod ids;
mod order;
mod region;
mod report;
mod settings;
mod types;

pub use hooks::{
    acquire, before_wait, forget, holds, lock_at, lock_at_known, lock_stamped, lock_stamped_known,
    order_holds, released, renew_stamped, reports, retire, taken, untracked,
};
pub use settings::{enabled, set_enabled};
pub use types::{Lock, Mode};

#[cfg(test)]
mod tests;

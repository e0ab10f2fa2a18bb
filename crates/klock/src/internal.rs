//! **Not a stable API.** klock's mechanisms and the locks' internals, for
//! klock's own crates only: the C library (`klock-c`), the interposer
//! (`klock-preload`), `lockbench` and klock's tests. Anything here may
//! change or go away in any release; programs use the crate root (the
//! lock types, their raw types, [`tune`](crate::tune) and
//! [`stat`](crate::stat)).
//!
//! Each module re-exports the public items of the crate-private module of
//! the same name (`src/<name>.rs` or `src/<name>/`), whose docs describe
//! it; the repository's `docs/design.md` describes the layers.
//!
//! ```
//! // A queue node of the calling thread, as the C library leases one.
//! klock::internal::node::with_node(|n| assert!(n.is_some()));
//! ```

/// Preemption injection at marked windows (feature `chaos`).
pub mod chaos {
    pub use crate::chaos::*;
}

/// The condvar's internals: its waiter states, the wait ticket of the C
/// library's split wait.
pub mod condvar {
    pub use crate::condvar::*;
}

/// Fork safety of klock's global state: the atfork handlers.
pub mod fork {
    pub use crate::fork::*;
}

/// The mutex's internals: the owner word's bits, thread ids, the adaptive
/// spinning score.
pub mod mutex {
    pub use crate::mutex::*;
}

/// Per-thread queue nodes, the slot registry and the 32-bit tail encoding.
pub mod node {
    pub use crate::node::*;
}

/// The cancellable MCS queue of spinners (mutex, rwsem).
pub mod osq {
    pub use crate::osq::*;
}

/// The rwsem's internals: the count word's bits and predicates.
pub mod rwlock {
    pub use crate::rwlock::*;
}

/// The spinlocks' internals: the queued spinlock's node states.
pub mod spin {
    /// The seal of [`WaitPolicy`](crate::WaitPolicy): klock's own tests
    /// implement it for their small-budget policies.
    pub use crate::spin::WaitPolicySeal as Seal;
    pub use crate::spin::*;
}

/// Per-thread ids (the owner identity in lock words).
pub mod tid {
    pub use crate::tid::*;
}

/// Per-thread words in the initial-exec TLS model.
pub mod tls {
    pub use crate::__klock_thread_word as thread_word;
}

/// Asymmetric sleeper announcement: plain-store unlocks, barrier-paying sleepers.
pub mod asym {
    pub use crate::asym::*;
}

/// Futex wait/wake, time-based spin budgets, the spin loop, effective CPUs.
pub mod wait {
    pub use crate::wait::*;
}

/// The FIFO wait list of sleeping waiters and its waiter states.
pub mod waitlist {
    pub use crate::waitlist::*;
}

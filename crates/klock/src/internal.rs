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
    use crate::mutex::{MutexToken, RawMutex};
    use crate::sync::atomic::AtomicU32;

    /// klock's own front ends' access to what the public type does not
    /// offer: the C library's split condvar wait (begin, sleep on a word, end) and deadline waits on a [`RawCondvar`](crate::RawCondvar). Implemented only by klock; not stable.
    pub trait RawCondvarInternals<S: crate::spin_policy::SpinPolicy> {
        /// Atomically unlock `mutex` and wait for a notify (or `deadline_ns`, a
        /// `wait::now_ns` time), then re-lock it; `token` is replaced by the new
        /// acquisition. Returns `true` if the wait timed out. It is the three
        /// steps `begin_wait`, sleeping on
        /// `sleep_word`, `end_wait`.
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn wait_until_ns(
            &self,
            mutex: &RawMutex<S>,
            token: &mut MutexToken,
            deadline_ns: Option<u64>,
        ) -> bool;
        /// `wait_until_ns`, but `None` instead of a
        /// panic when other threads wait on this condvar with a different mutex
        /// (see `try_begin_wait`): nothing changed, the
        /// caller still holds `mutex` with `token`. `Some(timed_out)` otherwise.
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn try_wait_until_ns(
            &self,
            mutex: &RawMutex<S>,
            token: &mut MutexToken,
            deadline_ns: Option<u64>,
        ) -> Option<bool>;
        /// Step 1 of a wait: queue on the condvar, then unlock `mutex` (a notify
        /// that follows the unlock finds us: no lost wake-up). The ticket must
        /// go to `end_wait` on this thread, which re-locks. For
        /// callers that sleep outside Rust between the steps (the C layer's
        /// cancellable `pthread_cond_wait`); `wait_until_ns`
        /// is the Rust composition.
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn begin_wait(&self, mutex: &RawMutex<S>, token: MutexToken) -> WaitTicket;
        /// `begin_wait`, but `Err(token)` instead of a panic
        /// when other threads wait on this condvar with a different mutex (one
        /// condvar serves one mutex at a time): nothing was queued or unlocked,
        /// and the caller still holds `mutex` with the returned token. For
        /// callers that report the misuse as an error code (the C library's
        /// EINVAL, as POSIX allows).
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn try_begin_wait(
            &self,
            mutex: &RawMutex<S>,
            token: MutexToken,
        ) -> Result<WaitTicket, MutexToken>;
        /// Step 1 of a **foreign** wait, for a mutex that is not a klock
        /// `RawMutex` (the interposer's glibc-served mutexes): register on the
        /// fallback word (see the module docs). The caller holds its mutex now
        /// and unlocks it right after (a notify that follows that unlock finds
        /// this waiter), sleeps on `sleep_word` while it
        /// returns a word, then calls `end_wait_foreign`
        /// and re-locks its mutex. If its unlock fails, it calls
        /// `end_wait_foreign(ticket, true)` at once. Wake-ups may be spurious.
        fn begin_wait_foreign(&self) -> WaitTicket;
        /// Step 3 of a foreign wait: leave the condvar (the caller then re-locks
        /// its own mutex). Returns whether the wait timed out: `give_up` (the
        /// deadline passed, cancellation, or a failed unlock) took the waiter
        /// off the condvar before a notify reached it. Without `give_up` it
        /// first sleeps until a notify (callers call it once `sleep_word`
        /// answered `None`).
        fn end_wait_foreign(&self, ticket: WaitTicket, give_up: bool) -> bool;
        /// Step 2 of a wait: the futex word and value to sleep on while no
        /// notify has reached us, or `None` once one has (or for a no-node
        /// fallback ticket): then call `end_wait`. Spurious
        /// futex returns are fine: ask again.
        fn sleep_word(&self, ticket: &WaitTicket) -> Option<(&AtomicU32, u32)>;
        /// Step 3 of a wait: re-lock `mutex` and return the new token, and
        /// whether the wait timed out. `give_up` (the deadline passed, or the
        /// thread is being cancelled): leave the condvar if no notify has
        /// reached us yet and re-lock normally (timed out); otherwise (or if a
        /// notify won the race) wait on the mutex's list, where the notify put us
        /// (a fallback waiter, never on that list, re-locks normally).
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn end_wait(
            &self,
            mutex: &RawMutex<S>,
            ticket: WaitTicket,
            give_up: bool,
        ) -> (MutexToken, bool);
    }

    impl<S: crate::spin_policy::SpinPolicy> RawCondvarInternals<S> for crate::condvar::RawCondvar<S> {
        #[inline(always)]
        unsafe fn wait_until_ns(
            &self,
            mutex: &RawMutex<S>,
            token: &mut MutexToken,
            deadline_ns: Option<u64>,
        ) -> bool {
            // SAFETY: forwarded contract.
            unsafe { RawCondvar::wait_until_ns(self, mutex, token, deadline_ns) }
        }
        #[inline(always)]
        unsafe fn try_wait_until_ns(
            &self,
            mutex: &RawMutex<S>,
            token: &mut MutexToken,
            deadline_ns: Option<u64>,
        ) -> Option<bool> {
            // SAFETY: forwarded contract.
            unsafe { RawCondvar::try_wait_until_ns(self, mutex, token, deadline_ns) }
        }
        #[inline(always)]
        unsafe fn begin_wait(&self, mutex: &RawMutex<S>, token: MutexToken) -> WaitTicket {
            // SAFETY: forwarded contract.
            unsafe { RawCondvar::begin_wait(self, mutex, token) }
        }
        #[inline(always)]
        unsafe fn try_begin_wait(
            &self,
            mutex: &RawMutex<S>,
            token: MutexToken,
        ) -> Result<WaitTicket, MutexToken> {
            // SAFETY: forwarded contract.
            unsafe { RawCondvar::try_begin_wait(self, mutex, token) }
        }
        #[inline(always)]
        fn begin_wait_foreign(&self) -> WaitTicket {
            RawCondvar::begin_wait_foreign(self)
        }
        #[inline(always)]
        fn end_wait_foreign(&self, ticket: WaitTicket, give_up: bool) -> bool {
            RawCondvar::end_wait_foreign(self, ticket, give_up)
        }
        #[inline(always)]
        fn sleep_word(&self, ticket: &WaitTicket) -> Option<(&AtomicU32, u32)> {
            RawCondvar::sleep_word(self, ticket)
        }
        #[inline(always)]
        unsafe fn end_wait(
            &self,
            mutex: &RawMutex<S>,
            ticket: WaitTicket,
            give_up: bool,
        ) -> (MutexToken, bool) {
            // SAFETY: forwarded contract.
            unsafe { RawCondvar::end_wait(self, mutex, ticket, give_up) }
        }
    }
    pub use crate::condvar::*;
}

/// Fork safety of klock's global state: the atfork handlers.
pub mod fork {
    pub use crate::fork::*;
}

/// The mutex's internals: the owner word's bits, thread ids, the adaptive
/// spinning score.
pub mod mutex {
    /// The C layer's token of an acquisition whose token was not kept
    /// (pthread's API has no guard). Implemented only by klock; not stable.
    pub trait MutexTokenInternals {
        /// The token of an acquisition made under `id`.
        ///
        /// # Safety
        ///
        /// The mutex this token will be passed to is held with owner id `id`.
        unsafe fn for_holder(id: u32) -> Self;
    }

    impl MutexTokenInternals for crate::mutex::MutexToken {
        #[inline(always)]
        unsafe fn for_holder(id: u32) -> Self {
            // SAFETY: forwarded contract.
            unsafe { crate::mutex::MutexToken::for_holder(id) }
        }
    }

    /// klock's own front ends' access to what the public type does not
    /// offer: the C library's and the interposer's raw access to a [`RawMutex`](crate::RawMutex): the owner word, the uncontended tries, deadline locks, unlocks without a token. Implemented only by klock; not stable.
    pub trait RawMutexInternals {
        fn owner_word(&self) -> u32;

        fn try_lock_uncontended(&self) -> Option<MutexToken>;

        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn try_unlock_uncontended(&self) -> bool;
        /// Acquire, giving up at `deadline_ns` (a `wait::now_ns` time).
        fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken>;

        fn holder(&self) -> u32;

        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn unlock_any(&self);
    }

    impl<S: crate::spin_policy::SpinPolicy> RawMutexInternals for crate::mutex::RawMutex<S> {
        #[inline(always)]
        fn owner_word(&self) -> u32 {
            RawMutex::owner_word(self)
        }
        #[inline(always)]
        fn try_lock_uncontended(&self) -> Option<MutexToken> {
            RawMutex::try_lock_uncontended(self)
        }
        #[inline(always)]
        unsafe fn try_unlock_uncontended(&self) -> bool {
            // SAFETY: forwarded contract.
            unsafe { RawMutex::try_unlock_uncontended(self) }
        }
        #[inline(always)]
        fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
            RawMutex::lock_until_ns(self, deadline_ns)
        }
        #[inline(always)]
        fn holder(&self) -> u32 {
            RawMutex::holder(self)
        }
        #[inline(always)]
        unsafe fn unlock_any(&self) {
            // SAFETY: forwarded contract.
            unsafe { RawMutex::unlock_any(self) }
        }
    }
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

    /// klock's own front ends' access to what the public type does not
    /// offer: the C library's and the interposer's raw access to a [`RawRwLock`](crate::RawRwLock): the words, deadline and reader-preferring acquisitions, unlocks without a token. Implemented only by klock; not stable.
    pub trait RawRwLockInternals {
        /// The count word (diagnostics and tests).
        fn count_word(&self) -> u32;

        fn writer(&self) -> u32;

        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn unlock_any(&self) -> bool;

        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn try_unlock_uncontended(&self) -> Option<bool>;
        /// `lock_shared_recursive` with a
        /// deadline in `wait::now_ns` time, as
        /// `lock_shared_until_ns`: `true` if it
        /// was taken, `false` if the deadline passed first (nothing held; a
        /// queued reader that gives up leaves the list as the timed read does).
        /// Only waits while a writer holds the lock (or it is free with a
        /// hand-off owed).
        fn lock_shared_recursive_until_ns(&self, deadline: u64) -> bool;

        fn lock_shared_prefer_readers(&self);

        fn try_lock_shared_prefer_readers(&self) -> bool;
        /// `lock_shared_prefer_readers` with
        /// a deadline in `wait::now_ns` time, as
        /// `lock_shared_until_ns`: `true` if it
        /// was taken, `false` if the deadline passed first (nothing held).
        fn lock_shared_prefer_readers_until_ns(&self, deadline: u64) -> bool;
        /// Read lock with a deadline in `wait::now_ns` time: `true` if it was
        /// taken (then release it with `unlock_shared`),
        /// `false` if the deadline passed first (nothing is held). The
        /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
        /// models (under loom `now_ns()` is 0, so a deadline of 1 lets every
        /// futex wait time out or not).
        fn lock_shared_until_ns(&self, deadline: u64) -> bool;
        /// Write lock with a deadline in `wait::now_ns` time: the token if it
        /// was taken (release it with `unlock_exclusive`),
        /// `None` if the deadline passed first (nothing is held). The
        /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
        /// models (see `lock_shared_until_ns`).
        fn lock_exclusive_until_ns(&self, deadline: u64) -> Option<WriteToken>;
        /// `lock_upgradable` with a deadline in
        /// `wait::now_ns` time: `true` if it was taken (release it with
        /// `unlock_upgradable`), `false` if the
        /// deadline passed first (nothing held). A queued upgrader that gives up
        /// leaves the list as a timed writer does (`leave`: it clears WAKING,
        /// which may stand for a wake-up it consumed, and passes the turn on).
        /// The `lock_api::RawRwLockUpgradeTimed` acquisitions go through it;
        /// public for the loom models (see
        /// `lock_shared_until_ns`).
        fn lock_upgradable_until_ns(&self, deadline: u64) -> bool;
        /// `upgrade` with a deadline in `wait::now_ns` time
        /// (lock_api's `try_upgrade_for`/`_until`): the write token if the other
        /// readers left in time; `None` if the deadline passed first, and then
        /// the caller still holds its upgradable read lock and the word is as if
        /// it had never tried (`cancel_upgrade`: UPGRADING cleared, and readers
        /// that queued because of it given their turn). Public for the loom
        /// models (see `lock_shared_until_ns`).
        ///
        /// # Safety
        ///
        /// As the inherent method's.
        unsafe fn upgrade_until_ns(&self, deadline: u64) -> Option<WriteToken>;
    }

    impl<S: crate::spin_policy::SpinPolicy> RawRwLockInternals for crate::rwlock::RawRwLock<S> {
        #[inline(always)]
        fn count_word(&self) -> u32 {
            RawRwLock::count_word(self)
        }
        #[inline(always)]
        fn writer(&self) -> u32 {
            RawRwLock::writer(self)
        }
        #[inline(always)]
        unsafe fn unlock_any(&self) -> bool {
            // SAFETY: forwarded contract.
            unsafe { RawRwLock::unlock_any(self) }
        }
        #[inline(always)]
        unsafe fn try_unlock_uncontended(&self) -> Option<bool> {
            // SAFETY: forwarded contract.
            unsafe { RawRwLock::try_unlock_uncontended(self) }
        }
        #[inline(always)]
        fn lock_shared_recursive_until_ns(&self, deadline: u64) -> bool {
            RawRwLock::lock_shared_recursive_until_ns(self, deadline)
        }
        #[inline(always)]
        fn lock_shared_prefer_readers(&self) {
            RawRwLock::lock_shared_prefer_readers(self)
        }
        #[inline(always)]
        fn try_lock_shared_prefer_readers(&self) -> bool {
            RawRwLock::try_lock_shared_prefer_readers(self)
        }
        #[inline(always)]
        fn lock_shared_prefer_readers_until_ns(&self, deadline: u64) -> bool {
            RawRwLock::lock_shared_prefer_readers_until_ns(self, deadline)
        }
        #[inline(always)]
        fn lock_shared_until_ns(&self, deadline: u64) -> bool {
            RawRwLock::lock_shared_until_ns(self, deadline)
        }
        #[inline(always)]
        fn lock_exclusive_until_ns(&self, deadline: u64) -> Option<WriteToken> {
            RawRwLock::lock_exclusive_until_ns(self, deadline)
        }
        #[inline(always)]
        fn lock_upgradable_until_ns(&self, deadline: u64) -> bool {
            RawRwLock::lock_upgradable_until_ns(self, deadline)
        }
        #[inline(always)]
        unsafe fn upgrade_until_ns(&self, deadline: u64) -> Option<WriteToken> {
            // SAFETY: forwarded contract.
            unsafe { RawRwLock::upgrade_until_ns(self, deadline) }
        }
    }
    pub use crate::rwlock::*;
}

/// The spinlocks' internals: the queued spinlock's node states.
pub mod spin {

    /// klock's own front ends' access to what the public type does not
    /// offer: the queued spinlock's word, for tests and tools. Implemented only by klock; not stable.
    pub trait RawQSpinLockInternals {
        /// The raw lock word (for diagnostics and tests).
        fn word(&self) -> u32;
    }

    impl<P: crate::spin::WaitPolicy> RawQSpinLockInternals for crate::spin::RawQSpinLock<P> {
        #[inline(always)]
        fn word(&self) -> u32 {
            RawQSpinLock::word(self)
        }
    }
    /// The seal of `WaitPolicy`: klock's own tests
    /// implement it for their small-budget policies.
    pub use crate::spin::WaitPolicySeal as Seal;
    pub use crate::spin::*;
}

/// The lockdep hooks of klock's Rust lock types, for front ends over them
/// (the parking_lot crate).
pub mod ldhook {
    pub use crate::ldhook::*;
}

/// Lock-order validation: the hooks the locks call (docs/lockdep.md).
pub mod lockdep {
    pub use crate::lockdep::*;
}

/// Naming code and data addresses of the running process, for reports.
pub mod symbolize {
    pub use crate::symbolize::*;
}

/// Report output without allocating: `%p` paths, report files, `write(2)`.
pub mod textout {
    pub use crate::textout::*;
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

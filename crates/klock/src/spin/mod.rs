//! Spinlocks: test-and-set, ticket and the queued spinlock family (seed 001).
//!
//! Every lock is one algorithm, generic over how it waits: a [`WaitPolicy`]
//! type parameter ([`Native`]: pure spinning; [`Pv`] / [`PvBase`]: spin within
//! a time budget, then sleep on a futex; [`Unfair`]: the queued unfair lock's
//! stealing waiters). The policy's constants are resolved at compile time, so
//! a variant pays nothing for the paths it does not use. The runtime selector
//! [`RawSpin`] (`KLOCK_SPIN=...`) picks among the monomorphised variants with
//! one branch per operation, for the C library and the interposer.
//!
//! | alias | raw lock | waits by | fair? |
//! |---|---|---|---|
//! | [`TasLock`] | [`RawTasLock<Native>`] | TTAS + backoff | no |
//! | [`TasSleepLock`] | [`RawTasSleepLock<Pv>`] | TTAS, then futex (announced sleepers; plain-store unlock) | no |
//! | [`TasParkLock`] = [`SpinLock`] | [`RawTasParkLock<Pv>`] | TTAS, then parked in `asym::lot` (plain-store unlock; one wake in flight) | bounded (`KLOCK_SPIN_HANDOFF_NS`) |
//! | [`TicketLock`] | [`RawTicketLock<Native>`] | spinning | FIFO |
//! | [`PvTicketLock`] | [`RawTicketLock<Pv>`] | spin, then futex | FIFO |
//! | [`QSpinLock`] | [`RawQSpinLock<Native>`] | spinning | FIFO (+1 pending) |
//! | [`PvBaseQSpinLock`] | [`RawQSpinLock<PvBase>`] | spin, then futex; kick at unlock | FIFO |
//! | [`PvQSpinLock`] | [`RawQSpinLock<Pv>`] | + kick-ahead, wait-early | FIFO |
//! | [`UnfairQSpinLock`] | [`RawQSpinLock<Unfair>`] | steal, queue, bounded | bounded |
//! | [`DynSpinLock`] | [`RawSpin`] | chosen by `KLOCK_SPIN` | depends |
//!
//! See `docs/spinlocks.md` for which to pick when.
//!
//! ```
//! let lock = klock::SpinLock::new(0u32);
//! *lock.lock() += 1;
//! assert_eq!(*lock.lock(), 1);
//! ```

mod dynamic;
mod policy;
mod qsnode;
mod qspinlock;
mod tas;
mod tassleep;
mod ticket;
mod token;

pub use dynamic::RawSpin;
pub use policy::seal::Seal as WaitPolicySeal;
pub use policy::{Native, Pv, PvBase, Unfair, WaitPolicy};
#[cfg(all(test, not(loom)))]
pub(crate) use qsnode::QsNode; // node.rs tests a tagged view on it
pub use qsnode::QsState;
pub use qspinlock::RawQSpinLock;
pub use tas::RawTasLock;
pub use tassleep::{Counted, Parked, RawTasParkLock, RawTasSleepLock, TasSleeper};
pub use ticket::RawTicketLock;
pub use token::Token;

#[cfg(not(loom))]
mod aliases {
    use super::dynamic::RawSpin;
    use super::policy::{Native, Pv, PvBase, Unfair};
    use super::qspinlock::RawQSpinLock;
    use super::tas::RawTasLock;
    use super::tassleep::{RawTasParkLock, RawTasSleepLock};
    use super::ticket::RawTicketLock;

    /// Test-and-test-and-set lock with backoff (the kernel's `virt_spin_lock`).
    ///
    /// ```
    /// let l = klock::TasLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TasLock<T> = lock_api::Mutex<RawTasLock<Native>, T>;
    /// Guard of [`TasLock`].
    ///
    /// ```
    /// let l = klock::TasLock::new(1);
    /// let g: klock::TasLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TasLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTasLock<Native>, T>;

    /// The floor's TTAS lock (plain-store unlock) with bounded spinning,
    /// then sleeping announced through a process-wide barrier (issue 33).
    ///
    /// ```
    /// let l = klock::TasSleepLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TasSleepLock<T> = lock_api::Mutex<RawTasSleepLock<Pv>, T>;
    /// Guard of [`TasSleepLock`].
    ///
    /// ```
    /// let l = klock::TasSleepLock::new(1);
    /// let g: klock::TasSleepLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TasSleepLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTasSleepLock<Pv>, T>;

    /// The floor's TTAS lock (plain-store unlock) with bounded spinning,
    /// then parked waiters behind the barrier and a bound on bypass
    /// (issue 33, design 3).
    ///
    /// ```
    /// let l = klock::TasParkLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TasParkLock<T> = lock_api::Mutex<RawTasParkLock<Pv>, T>;
    /// Guard of [`TasParkLock`].
    ///
    /// ```
    /// let l = klock::TasParkLock::new(1);
    /// let g: klock::TasParkLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TasParkLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTasParkLock<Pv>, T>;

    /// Native ticket lock (FIFO, pure spinning).
    ///
    /// ```
    /// let l = klock::TicketLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TicketLock<T> = lock_api::Mutex<RawTicketLock<Native>, T>;
    /// Guard of [`TicketLock`].
    ///
    /// ```
    /// let l = klock::TicketLock::new(1);
    /// let g: klock::TicketLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TicketLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTicketLock<Native>, T>;

    /// PV ticket lock (spin within the budget, then sleep; unlock wakes the
    /// next ticket).
    ///
    /// ```
    /// let l = klock::PvTicketLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvTicketLock<T> = lock_api::Mutex<RawTicketLock<Pv>, T>;
    /// Guard of [`PvTicketLock`].
    ///
    /// ```
    /// let l = klock::PvTicketLock::new(1);
    /// let g: klock::PvTicketLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvTicketLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTicketLock<Pv>, T>;

    /// Native queued spinlock (4 bytes; pure spinning).
    ///
    /// ```
    /// let l = klock::QSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type QSpinLock<T> = lock_api::Mutex<RawQSpinLock<Native>, T>;
    /// Guard of [`QSpinLock`].
    ///
    /// ```
    /// let l = klock::QSpinLock::new(1);
    /// let g: klock::QSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type QSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Native>, T>;

    /// PV queued spinlock without kick-ahead and wait-early.
    ///
    /// ```
    /// let l = klock::PvBaseQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvBaseQSpinLock<T> = lock_api::Mutex<RawQSpinLock<PvBase>, T>;
    /// Guard of [`PvBaseQSpinLock`].
    ///
    /// ```
    /// let l = klock::PvBaseQSpinLock::new(1);
    /// let g: klock::PvBaseQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvBaseQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<PvBase>, T>;

    /// PV queued spinlock with kick-ahead and wait-early.
    ///
    /// ```
    /// let l = klock::PvQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvQSpinLock<T> = lock_api::Mutex<RawQSpinLock<Pv>, T>;
    /// Guard of [`PvQSpinLock`].
    ///
    /// ```
    /// let l = klock::PvQSpinLock::new(1);
    /// let g: klock::PvQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Pv>, T>;

    /// Queued unfair lock.
    ///
    /// ```
    /// let l = klock::UnfairQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type UnfairQSpinLock<T> = lock_api::Mutex<RawQSpinLock<Unfair>, T>;
    /// Guard of [`UnfairQSpinLock`].
    ///
    /// ```
    /// let l = klock::UnfairQSpinLock::new(1);
    /// let g: klock::UnfairQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type UnfairQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Unfair>, T>;

    /// Spinlock whose variant is chosen at start-up by `KLOCK_SPIN`.
    ///
    /// ```
    /// let l = klock::DynSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type DynSpinLock<T> = lock_api::Mutex<RawSpin, T>;
    /// Guard of [`DynSpinLock`].
    ///
    /// ```
    /// let l = klock::DynSpinLock::new(1);
    /// let g: klock::DynSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type DynSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawSpin, T>;

    /// The default spinlock (issue 33): the floor's TTAS lock, whose unlock
    /// is a plain release store, with a bounded spin, then waiters parked
    /// behind a membarrier ([`TasParkLock`], `asym::lot`) and a bound on
    /// bypass (`KLOCK_SPIN_HANDOFF_NS`). The default because it is the
    /// only variant that starves no thread at T=128, at the uncontended cost
    /// of the fastest (`docs/results/2026-11-28-spin-floor.md`). 4 bytes.
    /// [`UnfairQSpinLock`] and the seed's PV locks stay as named variants.
    ///
    /// ```
    /// static COUNTER: klock::SpinLock<u64> = klock::SpinLock::new(0);
    /// *COUNTER.lock() += 1;
    /// assert!(COUNTER.try_lock().is_some());
    /// ```
    pub type SpinLock<T> = TasParkLock<T>;
    /// Guard of [`SpinLock`].
    ///
    /// ```
    /// let l = klock::SpinLock::new(1);
    /// let g: klock::SpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type SpinLockGuard<'a, T> = TasParkLockGuard<'a, T>;
}

#[cfg(not(loom))]
pub use aliases::*;

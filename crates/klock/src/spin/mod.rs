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
//! | [`TicketLock`] | [`RawTicketLock<Native>`] | spinning | FIFO |
//! | [`PvTicketLock`] | [`RawTicketLock<Pv>`] | spin, then futex | FIFO |
//! | [`QSpinLock`] | [`RawQSpinLock<Native>`] | spinning | FIFO (+1 pending) |
//! | [`PvBaseQSpinLock`] | [`RawQSpinLock<PvBase>`] | spin, then futex; kick at unlock | FIFO |
//! | [`PvQSpinLock`] | [`RawQSpinLock<Pv>`] | + kick-ahead, wait-early | FIFO |
//! | [`UnfairQSpinLock`] = [`SpinLock`] | [`RawQSpinLock<Unfair>`] | steal, queue, bounded | bounded |
//! | [`DynSpinLock`] | [`RawSpin`] | chosen by `KLOCK_SPIN` | depends |
//!
//! See `docs/spinlocks.md` for which to pick when.
//!
//! ```
//! let lock = klock::spin::SpinLock::new(0u32);
//! *lock.lock() += 1;
//! assert_eq!(*lock.lock(), 1);
//! ```

mod dynamic;
mod qspinlock;
mod tas;
mod ticket;

pub use dynamic::RawSpin;
pub use qspinlock::RawQSpinLock;
pub use tas::RawTasLock;
pub use ticket::RawTicketLock;

use crate::node::Node;
use crate::sync::atomic::Ordering;
use crate::tune;

/// How a lock's waiters wait. Implemented by the marker types [`Native`],
/// [`Pv`], [`PvBase`] and [`Unfair`]; tests (loom models) implement it with
/// small budgets. All `const`s are compile-time switches: no runtime branch.
///
/// ```
/// use klock::spin::{WaitPolicy, Pv};
/// assert!(Pv::SLEEP && Pv::PATCHED && !Pv::UNFAIR);
/// ```
pub trait WaitPolicy: Send + Sync + 'static {
    /// Short name (used by benchmarks and reports).
    const NAME: &'static str;
    /// Waiters may sleep on a futex after their spin budget (PV).
    const SLEEP: bool;
    /// Kick-ahead and wait-early (seed 001 patches 2-3).
    const PATCHED: bool;
    /// Queued unfair lock (seed 001 patch 6): newcomers may steal.
    const UNFAIR: bool;
    /// Use the pending path (second contender waits without queueing). On by
    /// default; models turn it off to reach the queue with fewer threads.
    const PENDING_PATH: bool = true;
    /// Spin budget (ns) of queued-spinlock waiters before sleeping.
    ///
    /// ```
    /// use klock::spin::{Pv, WaitPolicy};
    /// assert_eq!(Pv::spin_ns(), klock::tune::get().spin_ns);
    /// ```
    fn spin_ns() -> u64 {
        tune::get().spin_ns
    }
    /// How long (ns) a contender waits for an in-flight pending hand-over.
    ///
    /// ```
    /// use klock::spin::{Native, WaitPolicy};
    /// assert_eq!(Native::pending_ns(), klock::tune::get().pending_wait_ns);
    /// ```
    fn pending_ns() -> u64 {
        tune::get().pending_wait_ns
    }
    /// Spin budget (ns) of ticket-lock waiters before sleeping.
    ///
    /// ```
    /// use klock::spin::{Pv, WaitPolicy};
    /// assert_eq!(Pv::ticket_spin_ns(), klock::tune::get().ticket_spin_ns);
    /// ```
    fn ticket_spin_ns() -> u64 {
        tune::get().ticket_spin_ns
    }
    /// Kick-ahead depth (only used when `PATCHED`).
    ///
    /// ```
    /// use klock::spin::{Pv, WaitPolicy};
    /// assert!(Pv::kick_ahead() <= 64);
    /// ```
    fn kick_ahead() -> u32 {
        tune::get().kick_ahead
    }
    /// Unfair lock: queue-head wait (ns) after which stealing stops.
    ///
    /// ```
    /// use klock::spin::{Unfair, WaitPolicy};
    /// let _ = Unfair::steal_threshold_ns();
    /// ```
    fn steal_threshold_ns() -> u64 {
        tune::get().steal_threshold_ns
    }
    /// TAS backoff bounds (ns).
    ///
    /// ```
    /// use klock::spin::{Native, WaitPolicy};
    /// let (lo, hi) = Native::tas_backoff_ns();
    /// assert!(lo <= 1_000_000 && hi <= 1_000_000);
    /// ```
    fn tas_backoff_ns() -> (u64, u64) {
        let t = tune::get();
        (t.tas_backoff_min_ns, t.tas_backoff_max_ns)
    }
}

/// Pure spinning (dedicated CPUs only; collapses under overcommit).
///
/// ```
/// use klock::spin::{Native, WaitPolicy};
/// assert!(!Native::SLEEP);
/// ```
#[derive(Debug)]
pub struct Native;
impl WaitPolicy for Native {
    const NAME: &'static str = "native";
    const SLEEP: bool = false;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
}

/// PV waiting with kick-ahead and wait-early ("patched pvqspinlock").
///
/// ```
/// use klock::spin::{Pv, WaitPolicy};
/// assert_eq!(Pv::NAME, "pv");
/// ```
#[derive(Debug)]
pub struct Pv;
impl WaitPolicy for Pv {
    const NAME: &'static str = "pv";
    const SLEEP: bool = true;
    const PATCHED: bool = true;
    const UNFAIR: bool = false;
}

/// PV waiting without kick-ahead and wait-early ("pvqspinlock (4.2-rc1)").
///
/// ```
/// use klock::spin::{PvBase, WaitPolicy};
/// assert!(PvBase::SLEEP && !PvBase::PATCHED);
/// ```
#[derive(Debug)]
pub struct PvBase;
impl WaitPolicy for PvBase {
    const NAME: &'static str = "pvbase";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
}

/// Queued unfair lock: newcomers steal while the queue head is not claiming;
/// queued waiters spin then sleep; the head claims after the steal threshold.
///
/// ```
/// use klock::spin::{Unfair, WaitPolicy};
/// assert!(Unfair::UNFAIR && Unfair::SLEEP);
/// ```
#[derive(Debug)]
pub struct Unfair;
impl WaitPolicy for Unfair {
    const NAME: &'static str = "unfair";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = true;
}

/// Per-acquisition state of the queued spinlocks, carried by the lock_api guard
/// and handed back at unlock: the tail code of a successor that was made queue
/// head while asleep and must be woken when the lock is released ("kick at
/// unlock"), or none. Unlocking from another thread is fine (node memory is
/// type-stable), so the token is `Send`.
///
/// ```
/// let l = klock::spin::RawQSpinLock::<klock::spin::Pv>::new();
/// let t = l.lock();
/// assert!(t.is_none()); // uncontended: nothing to kick
/// unsafe { l.unlock(t) };
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use = "pass the token back to unlock"]
pub struct Token(pub(crate) u32);

impl Token {
    /// No deferred kick.
    ///
    /// ```
    /// assert!(klock::spin::Token::NONE.is_none());
    /// ```
    pub const NONE: Token = Token(0);

    /// `true` if there is no deferred kick.
    ///
    /// ```
    /// assert!(klock::spin::Token::NONE.is_none());
    /// ```
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// Wake `node` (sleeping, or about to sleep, on its `state` word): set its state
/// to `new_state`, then wake the word. Changing the word first makes a sleeper
/// that has not yet entered the kernel return at once (futex value check), so
/// the wake cannot be lost. A stale node (its thread moved on) only gets a
/// spurious wake, which every waiter tolerates.
#[inline]
pub(crate) fn kick_node(node: &Node, new_state: u32) {
    #[cfg(feature = "stats")]
    node.kick_ns
        .store(crate::wait::now_ns(), std::sync::atomic::Ordering::Relaxed);
    // Release pairs with the waiter's Acquire re-load of its state/locked after
    // waking; the futex's own serialisation orders the wake after this store.
    node.state.store(new_state, Ordering::Release);
    crate::chaos::point(crate::chaos::Site::AfterRelease);
    crate::wait::futex_wake(&node.state, 1);
}

/// After a sleep on a node word: account the kick-to-wake latency if a kick was
/// recorded (feature `stats`).
#[inline]
pub(crate) fn note_node_wake(_node: &Node) {
    #[cfg(feature = "stats")]
    {
        let k = _node.kick_ns.swap(0, std::sync::atomic::Ordering::Relaxed);
        if k != 0 {
            crate::stat::inc(crate::stat::Event::PvKickWake);
            crate::stat::add(
                crate::stat::Event::PvLatencyWakeNs,
                crate::wait::now_ns().saturating_sub(k),
            );
        }
    }
}

#[cfg(not(loom))]
mod aliases {
    use super::*;

    /// Test-and-test-and-set lock with backoff (the kernel's `virt_spin_lock`).
    ///
    /// ```
    /// let l = klock::spin::TasLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TasLock<T> = lock_api::Mutex<RawTasLock<Native>, T>;
    /// Guard of [`TasLock`].
    ///
    /// ```
    /// let l = klock::spin::TasLock::new(1);
    /// let g: klock::spin::TasLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TasLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTasLock<Native>, T>;

    /// Native ticket lock (FIFO, pure spinning).
    ///
    /// ```
    /// let l = klock::spin::TicketLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type TicketLock<T> = lock_api::Mutex<RawTicketLock<Native>, T>;
    /// Guard of [`TicketLock`].
    ///
    /// ```
    /// let l = klock::spin::TicketLock::new(1);
    /// let g: klock::spin::TicketLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type TicketLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTicketLock<Native>, T>;

    /// PV ticket lock (spin within the budget, then sleep; unlock wakes the
    /// next ticket).
    ///
    /// ```
    /// let l = klock::spin::PvTicketLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvTicketLock<T> = lock_api::Mutex<RawTicketLock<Pv>, T>;
    /// Guard of [`PvTicketLock`].
    ///
    /// ```
    /// let l = klock::spin::PvTicketLock::new(1);
    /// let g: klock::spin::PvTicketLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvTicketLockGuard<'a, T> = lock_api::MutexGuard<'a, RawTicketLock<Pv>, T>;

    /// Native queued spinlock (4 bytes; pure spinning).
    ///
    /// ```
    /// let l = klock::spin::QSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type QSpinLock<T> = lock_api::Mutex<RawQSpinLock<Native>, T>;
    /// Guard of [`QSpinLock`].
    ///
    /// ```
    /// let l = klock::spin::QSpinLock::new(1);
    /// let g: klock::spin::QSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type QSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Native>, T>;

    /// PV queued spinlock without kick-ahead and wait-early.
    ///
    /// ```
    /// let l = klock::spin::PvBaseQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvBaseQSpinLock<T> = lock_api::Mutex<RawQSpinLock<PvBase>, T>;
    /// Guard of [`PvBaseQSpinLock`].
    ///
    /// ```
    /// let l = klock::spin::PvBaseQSpinLock::new(1);
    /// let g: klock::spin::PvBaseQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvBaseQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<PvBase>, T>;

    /// PV queued spinlock with kick-ahead and wait-early.
    ///
    /// ```
    /// let l = klock::spin::PvQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type PvQSpinLock<T> = lock_api::Mutex<RawQSpinLock<Pv>, T>;
    /// Guard of [`PvQSpinLock`].
    ///
    /// ```
    /// let l = klock::spin::PvQSpinLock::new(1);
    /// let g: klock::spin::PvQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type PvQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Pv>, T>;

    /// Queued unfair lock.
    ///
    /// ```
    /// let l = klock::spin::UnfairQSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type UnfairQSpinLock<T> = lock_api::Mutex<RawQSpinLock<Unfair>, T>;
    /// Guard of [`UnfairQSpinLock`].
    ///
    /// ```
    /// let l = klock::spin::UnfairQSpinLock::new(1);
    /// let g: klock::spin::UnfairQSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type UnfairQSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawQSpinLock<Unfair>, T>;

    /// Spinlock whose variant is chosen at start-up by `KLOCK_SPIN`.
    ///
    /// ```
    /// let l = klock::spin::DynSpinLock::new(1);
    /// assert_eq!(*l.lock(), 1);
    /// ```
    pub type DynSpinLock<T> = lock_api::Mutex<RawSpin, T>;
    /// Guard of [`DynSpinLock`].
    ///
    /// ```
    /// let l = klock::spin::DynSpinLock::new(1);
    /// let g: klock::spin::DynSpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type DynSpinLockGuard<'a, T> = lock_api::MutexGuard<'a, RawSpin, T>;

    /// The default spinlock: the queued unfair lock, chosen by measurement
    /// (lockbench `balanced`, 2 vCPUs): uncontended it costs the same as the PV
    /// lock (~12 ns, like std), at T=2 all qspinlock variants match std, and
    /// once threads outnumber CPUs (T=4..32) it keeps std's throughput
    /// (~3.2-3.4 Mops/s) while the FIFO PV lock drops to 0.1-0.6 Mops/s: a
    /// strict hand-over to a sleeping waiter leaves the lock idle for a whole
    /// wake-up (DESIGN principle 6). Its unfairness is bounded by
    /// `KLOCK_STEAL_NS`. Use [`PvQSpinLock`] for FIFO order.
    ///
    /// ```
    /// static COUNTER: klock::SpinLock<u64> = klock::SpinLock::new(0);
    /// *COUNTER.lock() += 1;
    /// assert!(COUNTER.try_lock().is_some());
    /// ```
    pub type SpinLock<T> = UnfairQSpinLock<T>;
    /// Guard of [`SpinLock`].
    ///
    /// ```
    /// let l = klock::spin::SpinLock::new(1);
    /// let g: klock::spin::SpinLockGuard<'_, i32> = l.lock();
    /// assert_eq!(*g, 1);
    /// ```
    pub type SpinLockGuard<'a, T> = UnfairQSpinLockGuard<'a, T>;
}

#[cfg(not(loom))]
pub use aliases::*;

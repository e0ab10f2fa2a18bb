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
mod qspinlock;
mod tas;
mod tassleep;
mod ticket;

pub use dynamic::RawSpin;
pub use qspinlock::RawQSpinLock;
pub use tas::RawTasLock;
pub use tassleep::{Counted, Parked, RawTasParkLock, RawTasSleepLock, TasSleeper};
pub use ticket::RawTicketLock;

use crate::node::{Node, check_tag, tag};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::tune;

/// How a lock's waiters wait. Implemented by the marker types [`Native`],
/// [`Pv`], [`PvBase`] and [`Unfair`]; tests (loom models) implement it with
/// small budgets. All `const`s are compile-time switches: no runtime branch.
///
/// ```
/// use klock::{WaitPolicy, Pv};
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
    /// use klock::{Pv, WaitPolicy};
    /// assert_eq!(Pv::spin_ns(), klock::tune::get().spin_ns);
    /// ```
    fn spin_ns() -> u64 {
        tune::get().spin_ns
    }
    /// How long (ns) a contender waits for an in-flight pending hand-over.
    ///
    /// ```
    /// use klock::{Native, WaitPolicy};
    /// assert_eq!(Native::pending_ns(), klock::tune::get().pending_wait_ns);
    /// ```
    fn pending_ns() -> u64 {
        tune::get().pending_wait_ns
    }
    /// Spin budget (ns) of ticket-lock waiters before sleeping.
    ///
    /// ```
    /// use klock::{Pv, WaitPolicy};
    /// assert_eq!(Pv::ticket_spin_ns(), klock::tune::get().ticket_spin_ns);
    /// ```
    fn ticket_spin_ns() -> u64 {
        tune::get().ticket_spin_ns
    }
    /// Kick-ahead depth (only used when `PATCHED`).
    ///
    /// ```
    /// use klock::{Pv, WaitPolicy};
    /// assert!(Pv::kick_ahead() <= 64);
    /// ```
    fn kick_ahead() -> u32 {
        tune::get().kick_ahead
    }
    /// Unfair lock: queue-head wait (ns) after which stealing stops.
    ///
    /// ```
    /// use klock::{Unfair, WaitPolicy};
    /// let _ = Unfair::steal_threshold_ns();
    /// ```
    fn steal_threshold_ns() -> u64 {
        tune::get().steal_threshold_ns
    }
    /// Unfair lock: waiters' poll backoff (grace, first delay, cap) in ns,
    /// see [`crate::wait::PollBackoff`].
    ///
    /// ```
    /// use klock::{Unfair, WaitPolicy};
    /// let (grace, min, cap) = Unfair::poll_backoff_ns();
    /// assert!(grace <= 100_000 && min <= 100_000 && cap <= 100_000);
    /// ```
    fn poll_backoff_ns() -> (u64, u64, u64) {
        let t = tune::get();
        (
            tune::fixed::POLL_GRACE_NS,
            t.spin_poll_min_ns,
            t.spin_poll_max_ns,
        )
    }
    /// TAS backoff bounds (ns).
    ///
    /// ```
    /// use klock::{Native, WaitPolicy};
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
/// use klock::{Native, WaitPolicy};
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
/// use klock::{Pv, WaitPolicy};
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
/// use klock::{PvBase, WaitPolicy};
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
/// use klock::{Unfair, WaitPolicy};
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
/// unlock"), or none. The unlock sets that node's state **before** its release
/// and only wakes the address after it (INV-WAKE-ADDR, see `crate::node`).
/// Unlocking from another thread is fine (node memory is type-stable), so the
/// token is `Send`.
///
/// ```
/// let l = klock::RawQSpinLock::<klock::Pv>::new();
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
    /// assert!(klock::SpinToken::NONE.is_none());
    /// ```
    pub const NONE: Token = Token(0);

    /// `true` if there is no deferred kick.
    ///
    /// ```
    /// assert!(klock::SpinToken::NONE.is_none());
    /// ```
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// States of a queued-spinlock node's `state` word (also the futex word a
/// queued PV waiter sleeps on). Tagged [`crate::node::tag::QSPIN`].
///
/// ```text
///  Running --spin budget spent--> Halted --predecessor grants while asleep--> HeadHalted
///     ^                             |  \--kick-ahead--> Kicked --wakes, spins--> Running
///     +---------woken / granted-----+   HeadHalted --unlock kicks (before its release)--> Running
///  head: Running <--> HeadSleeping (sleeps on the lock word; informational)
/// ```
///
/// ```
/// use klock::internal::spin::QsState;
/// assert_eq!(QsState::from_u32(QsState::Halted as u32), Some(QsState::Halted));
/// assert_eq!(QsState::from_u32(0), None);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QsState {
    /// The waiter is running (spinning or working).
    Running = tag::QSPIN | 1,
    /// The waiter sleeps (or is about to) on its own `state` word, waiting to
    /// become queue head.
    Halted = tag::QSPIN | 2,
    /// Made queue head while asleep; the lock owner wakes it when it unlocks
    /// (kick at unlock), storing `Running` **before** its release.
    HeadHalted = tag::QSPIN | 3,
    /// Queue head sleeping on the lock word (informational: successors'
    /// wait-early sees that the head sleeps).
    HeadSleeping = tag::QSPIN | 4,
    /// Woken ahead of its turn by kick-ahead: spins its whole budget before it
    /// sleeps again.
    Kicked = tag::QSPIN | 5,
}

impl QsState {
    /// Decode a `state` value (`None` for another protocol's value or 0).
    ///
    /// ```
    /// assert!(klock::internal::spin::QsState::from_u32(klock::internal::node::tag::WAITER | 1).is_none());
    /// ```
    pub fn from_u32(v: u32) -> Option<QsState> {
        use QsState::*;
        [Running, Halted, HeadHalted, HeadSleeping, Kicked]
            .into_iter()
            .find(|s| *s as u32 == v)
    }
}

/// MCS grant values of a queued-spinlock node (`grant` word).
const QS_WAITING: u32 = tag::QSPIN | 0x100;
const QS_GRANTED: u32 = tag::QSPIN | 0x101;

/// The queued spinlock's typed view of a [`Node`]: names its words and stores
/// only [`QsState`] values and tagged grants.
#[derive(Clone, Copy)]
pub(crate) struct QsNode<'a>(&'a Node);

impl<'a> QsNode<'a> {
    #[inline]
    pub(crate) fn of(n: &'a Node) -> Self {
        QsNode(n)
    }

    /// Initialise our own node before publishing it (the tail exchange's
    /// Release orders these Relaxed stores).
    #[inline]
    pub(crate) fn init(self) {
        self.0.grant.store(QS_WAITING, Ordering::Relaxed);
        self.0.next.store(0, Ordering::Relaxed);
        self.0
            .state
            .store(QsState::Running as u32, Ordering::Relaxed);
    }

    /// Our own node: has the predecessor made us queue head? Acquire pairs
    /// with the Release in [`grant`](Self::grant) (ordering pair QS-3).
    #[inline]
    pub(crate) fn granted(self) -> bool {
        let g = self.0.grant.load(Ordering::Acquire);
        check_tag("grant", g, tag::QSPIN);
        g == QS_GRANTED
    }

    /// Make this (successor's, still queued) node queue head. Release pairs
    /// with [`granted`](Self::granted).
    #[inline]
    pub(crate) fn grant(self) {
        self.0.grant.store(QS_GRANTED, Ordering::Release);
    }

    /// A predecessor's state, read as a hint (wait-early): the predecessor may
    /// have moved on, so any value is possible and none is checked.
    #[inline]
    pub(crate) fn state_hint(self) -> Option<QsState> {
        // Relaxed: a hint.
        QsState::from_u32(self.0.state.load(Ordering::Relaxed))
    }

    /// Store our own node's state.
    #[inline]
    pub(crate) fn set_state(self, s: QsState) {
        // Relaxed: the Dekker pairs that need ordering add their own fences.
        self.0.state.store(s as u32, Ordering::Relaxed);
    }

    /// CAS a (possibly another thread's) state from `from` to `to`; fails
    /// harmlessly on a node that left this protocol (INV-WAKE-ADDR: tagged
    /// expected value). Relaxed: every user pairs it with a fence or a grant.
    #[inline]
    pub(crate) fn cas_state(self, from: QsState, to: QsState) -> Result<(), u32> {
        self.0
            .state
            .compare_exchange(from as u32, to as u32, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| ())
    }

    /// Successor's tail code (0 = none yet). Acquire pairs with the
    /// successor's Release [`link`](Self::link) (ordering pair QS-2).
    #[inline]
    pub(crate) fn next(self) -> u32 {
        self.0.next.load(Ordering::Acquire)
    }

    /// Link `tail` behind this (predecessor's) node. The predecessor cannot
    /// leave the queue before it has seen this link (it waits for it in
    /// hand_over), so the store is into a node still queued here.
    #[inline]
    pub(crate) fn link(self, tail: u32) {
        self.0.next.store(tail, Ordering::Release);
    }

    /// The futex word the waiter sleeps on.
    #[inline]
    pub(crate) fn futex(self) -> &'a AtomicU32 {
        &self.0.state
    }

    /// Set the state of a node whose thread sleeps (or is about to) on its
    /// state word, as a wake-up: the futex value check then fails, so the wake
    /// cannot be lost. The caller must still own the protocol step that keeps
    /// the node queued (it holds the lock, or has not released it yet):
    /// INV-WAKE-ADDR. Wake the word with [`wake`](Self::wake) afterwards, which
    /// may happen after the release.
    #[inline]
    pub(crate) fn set_for_wake(self, s: QsState) {
        #[cfg(feature = "stats")]
        self.0
            .kick_ns
            .store(crate::wait::now_ns(), std::sync::atomic::Ordering::Relaxed);
        // Release pairs with the waiter's Acquire re-load of its grant after
        // waking; the futex's own serialisation orders the wake after this store.
        self.0.state.store(s as u32, Ordering::Release);
    }

    /// Wake the node's futex word: only an address (INV-WAKE-ADDR), so it may
    /// follow the release.
    #[inline]
    pub(crate) fn wake(self) {
        crate::wait::futex_wake(&self.0.state, 1);
    }

    /// After a sleep on our own state word: account the kick-to-wake latency
    /// if a kick was recorded (feature `stats`).
    #[inline]
    pub(crate) fn note_wake(self) {
        #[cfg(feature = "stats")]
        {
            let k = self.0.kick_ns.swap(0, std::sync::atomic::Ordering::Relaxed);
            if k != 0 {
                crate::stat::inc(crate::stat::Event::PvKickWake);
                crate::stat::add(
                    crate::stat::Event::PvLatencyWakeNs,
                    crate::wait::now_ns().saturating_sub(k),
                );
            }
        }
    }
}

#[cfg(not(loom))]
mod aliases {
    use super::*;

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
    /// bypass (`KLOCK_SPIN_HANDOFF_NS`). Chosen by measurement (lockbench,
    /// 2-vCPU AMD EPYC KVM, 2026-11-28, `docs/results/2026-11-28-spin-floor.md`):
    /// an uncontended pair costs what the fastest spinlock's does (2.8 ns,
    /// ticket 2.8; the queued unfair lock 5.8), and it is the only variant
    /// that starves no thread at T=128 (max/min 5-7, parking_lot 11; the
    /// unfair lock over 50 000). It pays for that at T=8-128, 0.6-0.8x the
    /// best peer, where the queued unfair lock made 0.75-1.0x. 4 bytes.
    /// [`UnfairQSpinLock`] (the previous default) and the seed's PV locks
    /// stay as named variants.
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

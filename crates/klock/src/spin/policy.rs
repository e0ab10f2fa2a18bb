//! How a spinlock's waiters wait: the [`WaitPolicy`] type parameter and its
//! marker types ([`Native`], [`Pv`], [`PvBase`], [`Unfair`]). A leaf: each
//! lock reads the policy's constants at compile time.

use crate::tune;

/// The seal of [`WaitPolicy`]: a public trait in a private module, so only
/// klock (and its tests, through `klock::internal::spin::Seal`) can name it.
pub(super) mod seal {
    /// Implemented by every [`WaitPolicy`](super::WaitPolicy).
    pub trait Seal {}
    impl Seal for super::Native {}
    impl Seal for super::Pv {}
    impl Seal for super::PvBase {}
    impl Seal for super::Unfair {}
}

// The defaults of two waits that only non-default variants take (the
// policies' `pending_ns` and `ticket_spin_ns`; loom models override them).
/// How long (ns) a contender waits for an in-flight pending -> locked
/// hand-over (a few stores) before it queues; only the fair variants take
/// the pending path, none of them a default, and it was never measured.
const PENDING_WAIT_NS: u64 = 1_000;
/// PV ticket lock: ns a waiter spins before it sleeps, as the PV
/// qspinlock's default `KLOCK_SPIN_NS` (a non-default variant, not measured).
const TICKET_SPIN_NS: u64 = 10_000;

/// How a lock's waiters wait. Sealed: implemented by the marker types
/// [`Native`], [`Pv`], [`PvBase`] and [`Unfair`] (klock's own tests add
/// small-budget policies through the hidden `klock::internal::spin::Seal`).
/// All `const`s are compile-time switches: no runtime branch.
///
/// ```
/// use klock::{WaitPolicy, Pv};
/// assert!(Pv::SLEEP && Pv::PATCHED && !Pv::UNFAIR);
/// ```
pub trait WaitPolicy: seal::Seal + Send + Sync + 'static {
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
    /// assert_eq!(Native::pending_ns(), 1_000);
    /// ```
    fn pending_ns() -> u64 {
        PENDING_WAIT_NS
    }
    /// Spin budget (ns) of ticket-lock waiters before sleeping.
    ///
    /// ```
    /// use klock::{Pv, WaitPolicy};
    /// assert_eq!(Pv::ticket_spin_ns(), 10_000);
    /// ```
    fn ticket_spin_ns() -> u64 {
        TICKET_SPIN_NS
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
    /// Unfair lock: waiters' poll backoff (first delay, cap) in ns, see
    /// [`crate::wait::PollBackoff`].
    ///
    /// ```
    /// use klock::{Unfair, WaitPolicy};
    /// let (min, cap) = Unfair::poll_backoff_ns();
    /// assert!(min <= 100_000 && cap <= 100_000);
    /// ```
    fn poll_backoff_ns() -> (u64, u64) {
        let t = tune::get();
        (t.spin_poll_min_ns, t.spin_poll_max_ns)
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

//! How a thread waits and is woken: the one place with a spin loop and a
//! futex call, in four leaves re-exported here:
//!
//! * `futex.rs`: [`futex_wait`] / [`futex_wake`] (and the `_bitset` forms),
//!   private futexes on an `AtomicU32`, with the loom model of the futex;
//! * `budget.rs`: [`now_ns`], deadlines, [`cpu_relax`], [`SpinBudget`] and
//!   [`spin_until`] (every lock spins through it), [`Backoff`],
//!   [`PollBackoff`];
//! * `sched.rs`: [`yield_now`], [`relinquish`], [`realtime`]
//!   (INV-RT-NOSPIN);
//! * `cpus.rs`: [`effective_cpus`] and the cgroup quota.
//!
//! ```
//! use klock::internal::wait::{futex_wait, futex_wake, WaitOutcome};
//! use std::sync::atomic::AtomicU32;
//! let w = AtomicU32::new(1);
//! // The value is not 0, so the wait returns at once.
//! assert_eq!(futex_wait(&w, 0, None), WaitOutcome::Mismatch);
//! assert_eq!(futex_wake(&w, 1), 0);
//! ```

mod budget;
mod clock;
mod cpus;
mod futex;
mod sched;

pub use budget::*;
pub(crate) use clock::now_us;
pub use clock::*;
pub use cpus::*;
pub use futex::*;
pub use sched::*;

/// Helpers the leaves' tests share.
#[cfg(test)]
#[cfg(not(loom))]
mod test_support {
    use std::time::Duration;

    /// The watchdog of the tests that wait for an event (a sleeper
    /// asleep, woken, a poll that misses): far beyond the microseconds the
    /// event takes, so that only a hang (a lost wake-up) trips it.
    pub(crate) const HANG: Duration = Duration::from_secs(120);

    /// Join `t`, failing with `what` (what did not happen) if it has not
    /// finished within [`HANG`] instead of hanging the test run.
    pub(crate) fn join_or_fail(t: std::thread::JoinHandle<()>, what: &str) {
        let deadline = std::time::Instant::now() + HANG;
        while !t.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "watchdog: after {HANG:?}: {what}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        t.join().unwrap();
    }
}

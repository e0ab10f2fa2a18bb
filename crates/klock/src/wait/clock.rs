//! Time: the monotonic clock ([`now_ns`], [`now_us`]), deadlines in its
//! nanoseconds ([`remaining`], [`instant_to_ns`], [`deadline_after`]) and
//! the one spin hint ([`cpu_relax`]). A leaf of `wait`: the budgets and the
//! scheduling helpers read it.

use std::time::Duration;

/// Monotonic microseconds truncated to 32 bits (wraps every 71 minutes:
/// compare two of them with `wrapping_sub`), for time stamps kept in a
/// 32-bit node word. 0 under loom.
#[inline]
pub(crate) fn now_us() -> u32 {
    (now_ns() / 1000) as u32
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC` via the vDSO, about 20 ns). Under
/// loom it returns 0: there is no time in a model.
///
/// ```
/// let a = klock::internal::wait::now_ns();
/// let b = klock::internal::wait::now_ns();
/// assert!(b >= a);
/// ```
#[inline]
pub fn now_ns() -> u64 {
    #[cfg(not(loom))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(loom)]
    {
        0
    }
}

/// The spin-wait hint (PAUSE). Under loom, a scheduling point.
///
/// ```
/// klock::internal::wait::cpu_relax();
/// ```
#[inline(always)]
pub fn cpu_relax() {
    crate::sync::spin_loop();
}

/// Time left until `deadline` (in [`now_ns`] time) for a futex wait:
/// `Some(None)` = no deadline (wait without timeout), `Some(Some(d))` = `d`
/// left, `None` = the deadline has passed. Shared by every timed lock.
///
/// ```
/// assert_eq!(klock::internal::wait::remaining(None), Some(None));
/// assert_eq!(klock::internal::wait::remaining(Some(0)), None);
/// ```
#[inline]
pub fn remaining(deadline: Option<u64>) -> Option<Option<Duration>> {
    match deadline {
        None => Some(None),
        Some(d) => {
            let now = now_ns();
            (now < d).then(|| Some(Duration::from_nanos(d - now)))
        }
    }
}

/// A `std::time::Instant` as a deadline in [`now_ns`] time (a past instant
/// maps to now). For the lock_api `*_until` methods.
///
/// ```
/// let d = klock::internal::wait::instant_to_ns(std::time::Instant::now());
/// assert!(d <= klock::internal::wait::now_ns());
/// ```
pub fn instant_to_ns(i: std::time::Instant) -> u64 {
    let now = std::time::Instant::now();
    let base = now_ns();
    match i.checked_duration_since(now) {
        Some(d) => base.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        None => base,
    }
}

/// A timeout as a deadline in [`now_ns`] time (saturating).
///
/// ```
/// let d = klock::internal::wait::deadline_after(std::time::Duration::from_millis(1));
/// assert!(d > klock::internal::wait::now_ns());
/// ```
pub fn deadline_after(t: Duration) -> u64 {
    now_ns().saturating_add(t.as_nanos().min(u64::MAX as u128) as u64)
}

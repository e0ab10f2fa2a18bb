//! Absolute `timespec` deadlines (pthread's `abstime`) on CLOCK_REALTIME or
//! CLOCK_MONOTONIC, converted once to klock's deadline clock
//! ([`klock::internal::wait::now_ns`], CLOCK_MONOTONIC). A realtime clock step after
//! the conversion does not move the deadline (glibc's futex waits on
//! CLOCK_REALTIME would follow it; documented in `klock.h`).

use libc::{CLOCK_MONOTONIC, CLOCK_REALTIME, EINVAL, c_int, clockid_t, timespec};

/// Nanoseconds in a second: the bound of a valid `tv_nsec`.
const NS_PER_S: i64 = 1_000_000_000;

/// The klock deadline (in [`klock::internal::wait::now_ns`] time) for `abstime` on
/// `clock`, or EINVAL for a null pointer, a `tv_nsec` outside
/// `0..1_000_000_000`, or a clock other than CLOCK_REALTIME and
/// CLOCK_MONOTONIC. A time in the past (a negative `tv_sec` too, as glibc
/// treats it) gives a deadline already passed.
///
/// # Safety
///
/// `abstime` is null or points to a readable `timespec`.
///
/// ```
/// use klock_c::core::time::deadline;
/// let ts = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000_000 };
/// assert_eq!(unsafe { deadline(libc::CLOCK_REALTIME, &ts) }, Err(libc::EINVAL));
/// let ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
/// assert!(unsafe { deadline(libc::CLOCK_MONOTONIC, &ts) }.unwrap() <= klock::internal::wait::now_ns());
/// assert_eq!(unsafe { deadline(libc::CLOCK_MONOTONIC, std::ptr::null()) }, Err(libc::EINVAL));
/// let ts = libc::timespec { tv_sec: -1, tv_nsec: 0 };
/// assert!(unsafe { deadline(libc::CLOCK_REALTIME, &ts) }.unwrap() <= klock::internal::wait::now_ns());
/// ```
pub unsafe fn deadline(clock: clockid_t, abstime: *const timespec) -> Result<u64, c_int> {
    // SAFETY: caller's contract.
    let Some(ts) = (unsafe { abstime.as_ref() }) else {
        return Err(EINVAL);
    };
    // A negative tv_sec is a time in the past (ETIMEDOUT), as in glibc.
    if !(0..NS_PER_S).contains(&ts.tv_nsec) {
        return Err(EINVAL);
    }
    if clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC {
        return Err(EINVAL);
    }
    let target = (ts.tv_sec as i128) * NS_PER_S as i128 + ts.tv_nsec as i128;
    let now_clock = clock_ns(clock) as i128;
    let left = (target - now_clock).max(0);
    let now = klock::internal::wait::now_ns() as i128;
    Ok((now + left).min(u64::MAX as i128) as u64)
}

/// `clock`'s current time in nanoseconds.
fn clock_ns(clock: clockid_t) -> u64 {
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; `clock` was checked.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64) * NS_PER_S as u64 + ts.tv_nsec as u64
}

/// Is `clock` one a timed wait accepts (CLOCK_REALTIME, CLOCK_MONOTONIC)?
///
/// ```
/// assert!(klock_c::core::time::valid_clock(libc::CLOCK_MONOTONIC));
/// assert!(!klock_c::core::time::valid_clock(libc::CLOCK_PROCESS_CPUTIME_ID));
/// ```
pub fn valid_clock(clock: clockid_t) -> bool {
    clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC
}

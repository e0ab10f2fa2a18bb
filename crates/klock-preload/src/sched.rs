//! Scheduling-policy changes: `pthread_setschedparam`, `pthread_setschedprio`,
//! `sched_setscheduler` and `sched_setparam` run glibc's function, then tell
//! klock ([`klock::wait::sched_changed`]) so that every thread re-reads its
//! own policy at its next lock slow path.
//!
//! A thread under `SCHED_FIFO` or `SCHED_RR` never spins or yields for a
//! lock (INV-RT-NOSPIN, `klock::wait::realtime`): a real-time waiter that
//! spins or yields can keep a lower-priority holder off the CPU (stress-ng's
//! mutex stressor raises its threads to random FIFO priorities, takes the
//! lock, drops to the lowest priority and yields while holding it). Without
//! these wrappers a change would still be seen, within klock's re-check
//! interval (50 ms); with them it is seen at once.

use crate::real;
use libc::{c_int, pid_t, pthread_t, sched_param};

/// Set errno for a `sched_*` failure that never reached glibc.
fn fail_errno(e: c_int) -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
    -1
}

/// `pthread_setschedparam`: glibc's, then announce the change.
///
/// # Safety
///
/// As `pthread_setschedparam`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_setschedparam(
    thread: pthread_t,
    policy: c_int,
    param: *const sched_param,
) -> c_int {
    let r = match real::setschedparam() {
        // SAFETY: glibc's function with the caller's arguments.
        Ok(f) => unsafe { f(thread, policy, param) },
        Err(why) => real::unavailable(why, false),
    };
    klock::wait::sched_changed();
    r
}

/// `pthread_setschedprio`: glibc's, then announce the change.
///
/// # Safety
///
/// As `pthread_setschedprio`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_setschedprio(thread: pthread_t, prio: c_int) -> c_int {
    let r = match real::setschedprio() {
        // SAFETY: glibc's function with the caller's arguments.
        Ok(f) => unsafe { f(thread, prio) },
        Err(why) => real::unavailable(why, false),
    };
    klock::wait::sched_changed();
    r
}

/// `sched_setscheduler`: glibc's, then announce the change.
///
/// # Safety
///
/// As `sched_setscheduler`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_setscheduler(
    pid: pid_t,
    policy: c_int,
    param: *const sched_param,
) -> c_int {
    let r = match real::sched_setscheduler() {
        // SAFETY: glibc's function with the caller's arguments.
        Ok(f) => unsafe { f(pid, policy, param) },
        Err(why) => fail_errno(real::unavailable(why, false)),
    };
    klock::wait::sched_changed();
    r
}

/// `sched_setparam`: glibc's, then announce the change.
///
/// # Safety
///
/// As `sched_setparam`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_setparam(pid: pid_t, param: *const sched_param) -> c_int {
    let r = match real::sched_setparam() {
        // SAFETY: glibc's function with the caller's arguments.
        Ok(f) => unsafe { f(pid, param) },
        Err(why) => fail_errno(real::unavailable(why, false)),
    };
    klock::wait::sched_changed();
    r
}

//! Scheduling-policy changes: `pthread_setschedparam`, `pthread_setschedprio`,
//! `sched_setscheduler` and `sched_setparam` run glibc's function, then tell
//! klock: a thread that changed its own policy records it
//! ([`klock::internal::wait::note_own_policy`]); a change to another thread makes
//! every thread re-read its own at its next lock slow path
//! ([`klock::internal::wait::sched_changed`]).
//!
//! A thread under `SCHED_FIFO` or `SCHED_RR` never spins or yields for a
//! lock (INV-RT-NOSPIN, `klock::internal::wait::realtime`): a real-time waiter that
//! spins or yields can keep a lower-priority holder off the CPU (stress-ng's
//! mutex stressor raises its threads to random FIFO priorities, takes the
//! lock, drops to the lowest priority and yields while holding it). Without
//! these wrappers a change would still be seen, within klock's re-check
//! interval (50 ms); with them it is seen at once.

use crate::real;
use libc::{c_int, pid_t, pthread_t, sched_param};

/// Is `policy` (without `SCHED_RESET_ON_FORK`) a real-time one?
fn is_rt(policy: c_int) -> bool {
    let p = policy & !libc::SCHED_RESET_ON_FORK;
    p == libc::SCHED_FIFO || p == libc::SCHED_RR
}

/// After a successful change of `policy` on a thread that may be the
/// caller (`own`): record it, or make every thread re-read its own.
fn changed(own: bool, policy: Option<c_int>) {
    match policy {
        Some(p) if own => klock::internal::wait::note_own_policy(is_rt(p)),
        // The priority alone changed on our own thread: the policy stands.
        None if own => {}
        _ => klock::internal::wait::sched_changed(),
    }
}

/// Does `pid` (a `sched_*` argument) name the calling thread?
fn own_tid(pid: pid_t) -> bool {
    // SAFETY: gettid has no preconditions.
    pid == 0 || pid == unsafe { libc::gettid() }
}

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
    if r == 0 {
        // SAFETY: pthread_self and pthread_equal have no preconditions.
        let own = unsafe { libc::pthread_equal(thread, libc::pthread_self()) } != 0;
        changed(own, Some(policy));
    }
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
    if r == 0 {
        // SAFETY: as in pthread_setschedparam.
        let own = unsafe { libc::pthread_equal(thread, libc::pthread_self()) } != 0;
        changed(own, None);
    }
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
    if r != -1 {
        changed(own_tid(pid), Some(policy));
    }
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
    if r != -1 {
        changed(own_tid(pid), None);
    }
    r
}

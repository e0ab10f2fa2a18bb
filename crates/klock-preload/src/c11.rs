//! C11 `<threads.h>` mutexes and condvars. glibc implements `mtx_*` and
//! `cnd_*` by calling its pthread internals directly (not through the PLT),
//! so left alone they would run glibc's code on klock's objects. They are
//! interposed and mapped onto the same in-place logic: `mtx_t` is the
//! 40-byte `pthread_mutex_t` union and `cnd_t` the 48-byte
//! `pthread_cond_t` one. Results use C11's codes (glibc: `thrd_success` 0,
//! `thrd_busy` 1, `thrd_error` 2, `thrd_nomem` 3, `thrd_timedout` 4).

use crate::cond::{self, Timeout};
use crate::mutex;
use klock_c::core::mutex::Kind;
use libc::{EBUSY, ENOMEM, ETIMEDOUT, c_int, pthread_cond_t, pthread_mutex_t, timespec};

/// `thrd_success`.
pub const THRD_SUCCESS: c_int = 0;
/// `thrd_busy`.
pub const THRD_BUSY: c_int = 1;
/// `thrd_error`.
pub const THRD_ERROR: c_int = 2;
/// `thrd_nomem`.
pub const THRD_NOMEM: c_int = 3;
/// `thrd_timedout`.
pub const THRD_TIMEDOUT: c_int = 4;

/// `mtx_plain`.
pub const MTX_PLAIN: c_int = 0;
/// `mtx_recursive`.
pub const MTX_RECURSIVE: c_int = 1;
/// `mtx_timed`.
pub const MTX_TIMED: c_int = 2;

/// glibc's errno -> C11 mapping.
fn thrd(e: c_int) -> c_int {
    match e {
        0 => THRD_SUCCESS,
        EBUSY => THRD_BUSY,
        ETIMEDOUT => THRD_TIMEDOUT,
        ENOMEM => THRD_NOMEM,
        _ => THRD_ERROR,
    }
}

/// `mtx_t` (glibc: a 40-byte union, the same as `pthread_mutex_t`).
pub type MtxT = pthread_mutex_t;
/// `cnd_t` (glibc: a 48-byte union, the same as `pthread_cond_t`).
pub type CndT = pthread_cond_t;

/// `mtx_init`: `mtx_plain`/`mtx_timed` (normal), either `| mtx_recursive`
/// (recursive); any other type is `thrd_error`, as in glibc.
///
/// # Safety
///
/// C11's contract: `m` is null or points to storage for a `mtx_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_init(m: *mut MtxT, ty: c_int) -> c_int {
    let kind = match ty {
        MTX_PLAIN | MTX_TIMED => Kind::Normal,
        t if t == MTX_PLAIN | MTX_RECURSIVE || t == MTX_TIMED | MTX_RECURSIVE => Kind::Recursive,
        _ => return THRD_ERROR,
    };
    if m.is_null() {
        return THRD_ERROR;
    }
    // SAFETY: non-null storage from the program.
    unsafe { mutex::init_kind(m, kind) };
    THRD_SUCCESS
}

/// `mtx_lock`.
///
/// # Safety
///
/// C11's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_lock(m: *mut MtxT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { mutex::pthread_mutex_lock(m) })
}

/// `mtx_trylock`: `thrd_busy` if held.
///
/// # Safety
///
/// C11's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_trylock(m: *mut MtxT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { mutex::pthread_mutex_trylock(m) })
}

/// `mtx_timedlock`: until `ts` on `TIME_UTC` (CLOCK_REALTIME);
/// `thrd_timedout`.
///
/// # Safety
///
/// C11's contract: `m` is null or points to a mutex, `ts` null or a timespec.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_timedlock(m: *mut MtxT, ts: *const timespec) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { mutex::pthread_mutex_timedlock(m, ts) })
}

/// `mtx_unlock`.
///
/// # Safety
///
/// C11's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_unlock(m: *mut MtxT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { mutex::pthread_mutex_unlock(m) })
}

/// `mtx_destroy` (no result, as in C11).
///
/// # Safety
///
/// C11's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mtx_destroy(m: *mut MtxT) {
    // SAFETY: forwarded contract.
    let _ = unsafe { mutex::pthread_mutex_destroy(m) };
}

/// `cnd_init`.
///
/// # Safety
///
/// C11's contract: `c` is null or points to storage for a `cnd_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cnd_init(c: *mut CndT) -> c_int {
    if c.is_null() {
        return THRD_ERROR;
    }
    // SAFETY: non-null storage from the program.
    thrd(unsafe { cond::init_default(c) })
}

/// `cnd_signal`.
///
/// # Safety
///
/// C11's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cnd_signal(c: *mut CndT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { cond::pthread_cond_signal(c) })
}

/// `cnd_broadcast`.
///
/// # Safety
///
/// C11's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cnd_broadcast(c: *mut CndT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { cond::pthread_cond_broadcast(c) })
}

/// `cnd_wait` (a cancellation point, like `pthread_cond_wait`).
///
/// # Safety
///
/// C11's contract: `c` and `m` are null or point to a condvar and a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn cnd_wait(c: *mut CndT, m: *mut MtxT) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { cond::wait(c, m, Timeout::None) })
}

/// `cnd_timedwait`: until `ts` on the condvar's clock (`cnd_init` makes it
/// CLOCK_REALTIME = `TIME_UTC`); `thrd_timedout`.
///
/// # Safety
///
/// As for [`cnd_wait`]; `ts` is null or points to a timespec.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn cnd_timedwait(
    c: *mut CndT,
    m: *mut MtxT,
    ts: *const timespec,
) -> c_int {
    // SAFETY: forwarded contract.
    thrd(unsafe { cond::wait(c, m, Timeout::CondClock(ts)) })
}

/// `cnd_destroy` (no result, as in C11).
///
/// # Safety
///
/// C11's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cnd_destroy(c: *mut CndT) {
    // SAFETY: forwarded contract.
    let _ = unsafe { cond::pthread_cond_destroy(c) };
}

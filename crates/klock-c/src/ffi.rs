//! The `klock_*` functions of `include/klock.h`: thin `extern "C"` wrappers
//! over [`crate::core`] (mutex, rwlock, condvar) and [`crate::spin`]. The
//! semantics, and their documentation, live there and in `docs/c.md`; this
//! file only checks pointers and picks the clock.
//!
//! # Safety (every function)
//!
//! The C caller's contract, the same for all functions, stated once here:
//! every object pointer is null, or points to an object of its C type
//! (`klock_mutex_t` = [`KMutex`], `klock_rwlock_t` = [`KRwLock`],
//! `klock_spinlock_t` = [`KSpin`], `klock_cond_t` = [`KCond`]) that stays
//! valid for the call and was set up by its `init` function or its static
//! initialiser (`init` itself only needs writable memory); `abstime` is
//! null or points to a readable `struct timespec`. A null or misaligned
//! object pointer, or a null `abstime`, returns EINVAL.
//!
//! # Panics
//!
//! None: the core returns error codes for every bad input (EAGAIN past the
//! rwlock's reader limit, EINVAL for a mutex of an invalid kind or a
//! condvar waited on with two mutexes), without going through a panic. A
//! corrupted lock word that klock detects (an object that was neither
//! initialised nor zeroed, or was overwritten) aborts the process after one
//! line on stderr, also without a panic.
#![allow(clippy::missing_safety_doc)] // one contract for all: see above

use crate::core::cond::KCond;
use crate::core::how::How;
use crate::core::mutex::{KMutex, Kind};
use crate::core::rwlock::{KRwLock, ReadPolicy};
use crate::core::time;
use crate::spin::KSpin;
use libc::{CLOCK_REALTIME, EINVAL, c_char, c_int, clockid_t, timespec};
use std::mem::{align_of, size_of};

// The sizes and alignments `klock.h` documents and its opaque types have.
const _: () = assert!(size_of::<KMutex>() == 20 && align_of::<KMutex>() == 4);
const _: () = assert!(size_of::<KRwLock>() == 20 && align_of::<KRwLock>() == 4);
const _: () = assert!(size_of::<KSpin>() == 16 && align_of::<KSpin>() == 4);
const _: () = assert!(size_of::<KCond>() == 24 && align_of::<KCond>() == 8);

/// `KLOCK_MUTEX_NORMAL`.
pub const KLOCK_MUTEX_NORMAL: c_int = Kind::Normal as c_int;
/// `KLOCK_MUTEX_RECURSIVE`.
pub const KLOCK_MUTEX_RECURSIVE: c_int = Kind::Recursive as c_int;
/// `KLOCK_MUTEX_ERRORCHECK`.
pub const KLOCK_MUTEX_ERRORCHECK: c_int = Kind::ErrorCheck as c_int;

/// Run `f` on the object behind `p`, or return EINVAL for a null or
/// misaligned `p`.
///
/// # Safety
///
/// `p` is null, misaligned, or points to a `T` valid for the call.
#[inline(always)]
unsafe fn with<T>(p: *const T, f: impl FnOnce(&T) -> c_int) -> c_int {
    if p.is_null() || !p.is_aligned() {
        return EINVAL;
    }
    // SAFETY: non-null and aligned (checked), and by the caller's contract
    // a live `T`. Every `T` here keeps its state in atomics (or a cell its
    // protocol guards), so a shared reference may coexist with other
    // threads' calls on the same object.
    f(unsafe { &*p })
}

/// Write `v` into `*p` (an `init`); EINVAL for a null or misaligned `p` or
/// an `Err`.
///
/// # Safety
///
/// `p` is null, misaligned, or valid for writing a `T`.
#[inline(always)]
unsafe fn init<T>(p: *mut T, v: Result<T, c_int>) -> c_int {
    if p.is_null() || !p.is_aligned() {
        return EINVAL;
    }
    match v {
        // SAFETY: non-null, aligned, writable (caller's contract). The old
        // contents are plain data (atomics): nothing to drop.
        Ok(v) => unsafe { p.write(v) },
        Err(e) => return e,
    }
    0
}

/// EINVAL unless `clock` is one timed calls accept and `abstime` is non-null
/// (checked before the call: glibc checks the clock up front too; the
/// time's fields are checked by the core only when the call would block).
#[inline(always)]
fn timed_args(clock: clockid_t, abstime: *const timespec) -> Result<(), c_int> {
    if abstime.is_null() || !time::valid_clock(clock) {
        Err(EINVAL)
    } else {
        Ok(())
    }
}

/// Run a timed call after [`timed_args`].
macro_rules! timed {
    ($clock:expr, $abstime:expr, $call:expr) => {
        match timed_args($clock, $abstime) {
            Ok(()) => $call,
            Err(e) => e,
        }
    };
}

/// The library's version, `"MAJOR.MINOR.PATCH"` (static storage).
#[unsafe(no_mangle)]
pub extern "C" fn klock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ---- mutex -----------------------------------------------------------------

/// `klock_mutex_init(m, kind)`: an unlocked mutex of `kind`
/// (`KLOCK_MUTEX_NORMAL`, `_RECURSIVE`, `_ERRORCHECK`), else EINVAL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_init(m: *mut KMutex, kind: c_int) -> c_int {
    let k = match kind {
        KLOCK_MUTEX_NORMAL => Ok(Kind::Normal),
        KLOCK_MUTEX_RECURSIVE => Ok(Kind::Recursive),
        KLOCK_MUTEX_ERRORCHECK => Ok(Kind::ErrorCheck),
        _ => Err(EINVAL),
    };
    // SAFETY: the module's contract.
    unsafe { init(m, k.map(KMutex::new)) }
}

/// `klock_mutex_lock(m)`: [`KMutex::lock_then`], blocking.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_lock(m: *mut KMutex) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(m, |m| m.lock_then(|| How::Block)) }
}

/// `klock_mutex_trylock(m)`: [`KMutex::lock_then`], a try.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_trylock(m: *mut KMutex) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(m, |m| m.lock_then(|| How::Try)) }
}

/// `klock_mutex_timedlock(m, abstime)`: [`klock_mutex_clocklock`] on
/// CLOCK_REALTIME.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_timedlock(m: *mut KMutex, abstime: *const timespec) -> c_int {
    // SAFETY: the module's contract.
    unsafe { klock_mutex_clocklock(m, CLOCK_REALTIME, abstime) }
}

/// `klock_mutex_clocklock(m, clock, abstime)`: [`KMutex::acquire`] until
/// `abstime` on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC); no separate
/// uncontended try: the acquisition's own try comes first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_clocklock(
    m: *mut KMutex,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY (both): the module's contract; `abstime` is non-null (checked)
    // and readable.
    timed!(clock, abstime, unsafe {
        with(m, |m| m.acquire(How::until(clock, abstime)))
    })
}

/// `klock_mutex_unlock(m)`: [`KMutex::unlock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_unlock(m: *mut KMutex) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(m, KMutex::unlock) }
}

/// `klock_mutex_destroy(m)`: [`KMutex::destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_mutex_destroy(m: *mut KMutex) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(m, KMutex::destroy) }
}

// ---- rwlock ----------------------------------------------------------------

/// `klock_rwlock_init(l)`: an unlocked rwlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_init(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { init(l, Ok(KRwLock::new())) }
}

/// `klock_rwlock_rdlock(l)`: [`KRwLock::rdlock`], blocking, fair.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_rdlock(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, |l| l.rdlock(How::Block, ReadPolicy::Fair)) }
}

/// `klock_rwlock_tryrdlock(l)`: [`KRwLock::rdlock`], a try, fair.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_tryrdlock(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, |l| l.rdlock(How::Try, ReadPolicy::Fair)) }
}

/// `klock_rwlock_timedrdlock(l, abstime)`: [`klock_rwlock_clockrdlock`] on
/// CLOCK_REALTIME.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_timedrdlock(
    l: *mut KRwLock,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the module's contract.
    unsafe { klock_rwlock_clockrdlock(l, CLOCK_REALTIME, abstime) }
}

/// `klock_rwlock_clockrdlock(l, clock, abstime)`: [`KRwLock::rdlock`]
/// until `abstime` on `clock`, fair.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_clockrdlock(
    l: *mut KRwLock,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY (both): the module's contract; `abstime` is non-null (checked)
    // and readable.
    timed!(clock, abstime, unsafe {
        with(l, |l| {
            l.rdlock(How::until(clock, abstime), ReadPolicy::Fair)
        })
    })
}

/// `klock_rwlock_wrlock(l)`: [`KRwLock::wrlock`], blocking.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_wrlock(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, |l| l.wrlock(How::Block)) }
}

/// `klock_rwlock_trywrlock(l)`: [`KRwLock::wrlock`], a try.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_trywrlock(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, |l| l.wrlock(How::Try)) }
}

/// `klock_rwlock_timedwrlock(l, abstime)`: [`klock_rwlock_clockwrlock`] on
/// CLOCK_REALTIME.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_timedwrlock(
    l: *mut KRwLock,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the module's contract.
    unsafe { klock_rwlock_clockwrlock(l, CLOCK_REALTIME, abstime) }
}

/// `klock_rwlock_clockwrlock(l, clock, abstime)`: [`KRwLock::wrlock`]
/// until `abstime` on `clock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_clockwrlock(
    l: *mut KRwLock,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY (both): the module's contract; `abstime` is non-null (checked)
    // and readable.
    timed!(clock, abstime, unsafe {
        with(l, |l| l.wrlock(How::until(clock, abstime)))
    })
}

/// `klock_rwlock_unlock(l)`: [`KRwLock::unlock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_unlock(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, KRwLock::unlock) }
}

/// `klock_rwlock_destroy(l)`: [`KRwLock::destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_rwlock_destroy(l: *mut KRwLock) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(l, KRwLock::destroy) }
}

// ---- spinlock --------------------------------------------------------------

/// `klock_spinlock_init(s)`: an unlocked spinlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_spinlock_init(s: *mut KSpin) -> c_int {
    // SAFETY: the module's contract.
    unsafe { init(s, Ok(KSpin::new())) }
}

/// `klock_spinlock_lock(s)`: [`KSpin::lock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_spinlock_lock(s: *mut KSpin) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(s, KSpin::lock) }
}

/// `klock_spinlock_trylock(s)`: [`KSpin::trylock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_spinlock_trylock(s: *mut KSpin) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(s, KSpin::trylock) }
}

/// `klock_spinlock_unlock(s)`: [`KSpin::unlock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_spinlock_unlock(s: *mut KSpin) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(s, KSpin::unlock) }
}

/// `klock_spinlock_destroy(s)`: [`KSpin::destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_spinlock_destroy(s: *mut KSpin) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(s, KSpin::destroy) }
}

/// `klock_spinlock_variant()`: the `KLOCK_SPIN` variant this process's
/// spinlocks use (`"unfair"`, `"pv"`, `"pvbase"`, `"native"`, `"ticket"`,
/// `"pvticket"` or `"tas"`; static storage). Fixed at the first use.
#[unsafe(no_mangle)]
pub extern "C" fn klock_spinlock_variant() -> *const c_char {
    static NAME: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        // A kind's name has no NUL byte.
        std::ffi::CString::new(klock::RawSpin::kind().name()).unwrap_or_default()
    })
    .as_ptr()
}

// ---- condvar ---------------------------------------------------------------

/// `klock_cond_init(c, clock)`: a condvar whose timed waits use `clock`
/// (CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_init(c: *mut KCond, clock: clockid_t) -> c_int {
    // SAFETY: the module's contract.
    unsafe { init(c, KCond::with_clock(clock)) }
}

/// `klock_cond_wait(c, m)`: [`KCond::wait`] without a deadline.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_wait(c: *mut KCond, m: *mut KMutex) -> c_int {
    // SAFETY (both): the module's contract.
    unsafe { with(c, |c| with(m, |m| c.wait(m, None))) }
}

/// `klock_cond_timedwait(c, m, abstime)`: [`KCond::timedwait`], on the
/// condvar's clock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_timedwait(
    c: *mut KCond,
    m: *mut KMutex,
    abstime: *const timespec,
) -> c_int {
    if abstime.is_null() {
        return EINVAL;
    }
    // SAFETY (all): the module's contract; `abstime` is non-null and readable.
    unsafe { with(c, |c| with(m, |m| c.timedwait(m, abstime))) }
}

/// `klock_cond_clockwait(c, m, clock, abstime)`: [`KCond::clockwait`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_clockwait(
    c: *mut KCond,
    m: *mut KMutex,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY (all): the module's contract; `abstime` is non-null (checked)
    // and readable.
    timed!(clock, abstime, unsafe {
        with(c, |c| with(m, |m| c.clockwait(m, clock, abstime)))
    })
}

/// `klock_cond_signal(c)`: [`KCond::signal`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_signal(c: *mut KCond) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(c, KCond::signal) }
}

/// `klock_cond_broadcast(c)`: [`KCond::broadcast`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_broadcast(c: *mut KCond) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(c, KCond::broadcast) }
}

/// `klock_cond_destroy(c)`: [`KCond::destroy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn klock_cond_destroy(c: *mut KCond) -> c_int {
    // SAFETY: the module's contract.
    unsafe { with(c, KCond::destroy) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::{CLOCK_MONOTONIC, EBUSY, EPERM, ETIMEDOUT};
    use std::ffi::CStr;
    use std::mem::MaybeUninit;
    use std::ptr::null_mut;

    #[test]
    fn version_matches_the_header() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(klock_version()) }.to_str().unwrap();
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
        let h = include_str!("../include/klock.h");
        assert!(
            h.contains(&format!("#define KLOCK_VERSION \"{v}\"")),
            "include/klock.h's KLOCK_VERSION must be {v}"
        );
    }

    #[test]
    fn null_and_misaligned_pointers_are_einval() {
        unsafe {
            assert_eq!(klock_mutex_lock(null_mut()), EINVAL);
            assert_eq!(klock_cond_signal(null_mut()), EINVAL);
            let mut buf = [0u64; 4];
            let odd = (buf.as_mut_ptr() as *mut u8).add(1);
            assert_eq!(klock_spinlock_init(odd.cast()), EINVAL);
            assert_eq!(klock_rwlock_rdlock(odd.cast()), EINVAL);
        }
    }

    #[test]
    fn zeroed_objects_work_and_timed_args_are_checked_first() {
        let mut m = MaybeUninit::<KMutex>::zeroed();
        let mut c = MaybeUninit::<KCond>::zeroed();
        let (m, c) = (m.as_mut_ptr(), c.as_mut_ptr());
        let past = timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        unsafe {
            assert_eq!(klock_mutex_clocklock(m, 42, &past), EINVAL);
            assert_eq!(klock_mutex_timedlock(m, std::ptr::null()), EINVAL);
            assert_eq!(klock_mutex_lock(m), 0);
            assert_eq!(
                klock_cond_clockwait(c, m, CLOCK_MONOTONIC, &past),
                ETIMEDOUT
            );
            assert_eq!(klock_cond_destroy(c), 0);
            assert_eq!(klock_mutex_destroy(m), EBUSY);
            assert_eq!(klock_mutex_unlock(m), 0);
            assert_eq!(klock_mutex_unlock(m), EPERM);
            assert_eq!(klock_cond_init(c, 42), EINVAL);
            assert_eq!(klock_mutex_init(m, 3), EINVAL);
        }
    }
}

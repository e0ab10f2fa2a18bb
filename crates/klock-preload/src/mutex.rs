//! `pthread_mutex_*`: a [`KMutex`] in place in the 40-byte `pthread_mutex_t`.
//!
//! ```text
//! offset  0  KMutex: klock RawMutex (owner word, wait list, OSQ tail)  12 bytes
//! offset 12  KMutex: recursion depth                                    4 bytes
//! offset 16  KMutex: kind = glibc's __kind (0 normal, 1 recursive,      4 bytes
//!            2 errorcheck, 3 adaptive, -1 destroyed)
//! offset 20  unused (zeroed by init)                                    20 bytes
//! ```
//!
//! The all-zero `PTHREAD_MUTEX_INITIALIZER` and glibc's `_NP` initialisers
//! (1/2/3 in `__kind`) are valid KMutexes as they stand: no init call is
//! needed, and none of the side table LiTL keeps.
//!
//! **Passed to glibc:** robust, priority-inherit, priority-protect and
//! process-shared mutexes. Their `pthread_mutex_init` goes to the real one,
//! which records the protocol in `__kind`'s flag bits
//! ([`sys::MUTEX_KIND_GLIBC_FLAGS`]); every later operation on an object
//! with such a `__kind` goes to glibc too (the kernel interprets their lock
//! word: robust list, PI futexes; other processes use them without klock).

use crate::config;
use crate::lockdep;
use crate::real;
use crate::stats::{self, Family};
use crate::sys;
use klock::internal::lockdep::Mode;
use klock::{SpinOff, SpinOsq, SpinPolicy};
use klock_c::core::how::How;
use klock_c::core::mutex::{KMutex, Kind};
use libc::{
    CLOCK_REALTIME, EBUSY, EINVAL, c_int, clockid_t, pthread_mutex_t, pthread_mutexattr_t, timespec,
};
use std::sync::atomic::{AtomicI32, Ordering};

const _: () = assert!(std::mem::size_of::<KMutex<SpinOsq>>() <= 40);
const _: () = assert!(std::mem::size_of::<KMutex<SpinOff>>() == std::mem::size_of::<KMutex>());
const _: () = assert!(std::mem::align_of::<KMutex<SpinOff>>() <= 8);

/// Calls `$f::<S>(args)` with `S` the configured mutex variant.
macro_rules! by_mutex_variant {
    ($f:ident ( $($a:expr),* )) => {
        $crate::config::by_variant!($crate::config::get().mutex, $f($($a),*))
    };
}
pub(crate) use by_mutex_variant;

/// glibc's `__kind` word of `m`.
///
/// # Safety
///
/// `m` points to a live `pthread_mutex_t` (or `mtx_t`, the same union).
#[inline]
unsafe fn kind_word<'a>(m: *const pthread_mutex_t) -> &'a AtomicI32 {
    // SAFETY: offset 16 of a 40-byte, 8-aligned object is an aligned i32
    // inside it; glibc and KMutex both access it atomically except at
    // init/destroy, which the program does not run concurrently with use.
    unsafe {
        &*m.cast::<u8>()
            .add(sys::MUTEX_KIND_OFFSET)
            .cast::<AtomicI32>()
    }
}

/// Is `m` one of the mutexes glibc serves (robust, PI, PP, pshared)?
///
/// # Safety
///
/// As for [`kind_word`].
#[inline]
pub(crate) unsafe fn is_glibc(m: *const pthread_mutex_t) -> bool {
    // Relaxed: written by init before the mutex is shared (the program's
    // publication of the mutex orders it).
    // SAFETY: forwarded.
    let k = unsafe { kind_word(m) }.load(Ordering::Relaxed);
    k > 0 && k & sys::MUTEX_KIND_GLIBC_FLAGS != 0
}

/// `m` as a klock mutex.
///
/// # Safety
///
/// `m` points to a live `pthread_mutex_t` that is not one of glibc's
/// ([`is_glibc`]), valid for `'a`.
#[inline]
pub(crate) unsafe fn km<'a, S: SpinPolicy>(m: *mut pthread_mutex_t) -> &'a KMutex<S> {
    // SAFETY: KMutex (20 bytes, align 4, all atomics) fits the 40-byte,
    // 8-aligned object; every thread reaches it through shared references
    // to atomics, which is how klock's locks are meant to be shared.
    unsafe { &*m.cast::<KMutex<S>>() }
}

/// One acquisition of a klock mutex past the entry's uncontended try:
/// core's [`KMutex::acquire`], or with statistics or lock-order validation
/// on [`acquire_watched`]. The gate decides, as at the entry
/// (`config::locks_fast`): it only closes, so an open gate here means the
/// entry asked the try.
#[inline(always)]
fn acquire<S: SpinPolicy>(m: *mut pthread_mutex_t, how: How) -> c_int {
    // SAFETY: the caller (an entry point) checked `m` is non-null and not
    // glibc's; pthread's contract makes it a live mutex.
    let k = unsafe { km::<S>(m) };
    if config::locks_fast() {
        return k.acquire(how);
    }
    acquire_watched(m, k, how)
}

/// [`acquire`] with the gate closed (the entry asked no uncontended try):
/// the whole call, counted ([`acquire_counted`]) with statistics on, and
/// validated ([`lockdep::acquire`]) with lock-order validation on.
#[cold]
#[inline(never)]
fn acquire_watched<S: SpinPolicy>(m: *mut pthread_mutex_t, k: &KMutex<S>, how: How) -> c_int {
    let tried = how.is_try();
    let run = move || {
        if stats::enabled() {
            acquire_counted(m, k, how)
        } else {
            k.lock(how)
        }
    };
    if !lockdep::on() {
        return run();
    }
    let recursive = k.kind() == Ok(Kind::Recursive);
    lockdep::acquire(
        m as usize,
        lockdep::MUTEX,
        Mode::Write,
        recursive,
        tried,
        run,
    )
}

/// Is the glibc-served mutex `m` of the recursive type (its `__kind`'s low
/// bits, under the robust/PI/PP/pshared flags)?
///
/// # Safety
///
/// `m` is a live glibc-served mutex.
#[inline]
pub(crate) unsafe fn glibc_is_recursive(m: *const pthread_mutex_t) -> bool {
    // Relaxed: as in `is_glibc`.
    // SAFETY: caller's contract.
    unsafe { kind_word(m) }.load(Ordering::Relaxed) & 3 == libc::PTHREAD_MUTEX_RECURSIVE
}

/// A glibc-served mutex's acquisition `take` (the real function), validated
/// when lock-order validation is on (kept by address: glibc owns every
/// byte of the object).
///
/// # Safety
///
/// `m` is a live glibc-served mutex.
#[inline(always)]
unsafe fn glibc_acquire(
    m: *mut pthread_mutex_t,
    tried: bool,
    take: impl FnOnce() -> c_int,
) -> c_int {
    if !lockdep::on() {
        return take();
    }
    // SAFETY: caller's contract.
    let recursive = unsafe { glibc_is_recursive(m) };
    lockdep::acquire(
        m as usize,
        lockdep::Ident::Addr,
        Mode::Write,
        recursive,
        tried,
        take,
    )
}

/// [`acquire`] with statistics on (the entry asked no uncontended try): a
/// first try, the whole call ([`KMutex::lock`]), tells contended from not,
/// and the wait is timed.
#[inline(always)]
fn acquire_counted<S: SpinPolicy>(m: *mut pthread_mutex_t, k: &KMutex<S>, how: How) -> c_int {
    let first = k.lock(How::Try);
    if first != EBUSY || how.is_try() {
        if first == 0 {
            stats::acquired(m as usize, Family::Mutex, false, 0);
        }
        return first;
    }
    let t0 = klock::internal::wait::now_ns();
    let r = k.acquire(how);
    if r == 0 {
        stats::acquired(
            m as usize,
            Family::Mutex,
            true,
            klock::internal::wait::now_ns().saturating_sub(t0),
        );
    }
    r
}

#[inline(always)]
fn unlock<S: SpinPolicy>(m: *mut pthread_mutex_t) -> c_int {
    if stats::enabled() {
        stats::released(m as usize, Family::Mutex);
    }
    // SAFETY: as in `acquire`.
    let k = unsafe { km::<S>(m) };
    if lockdep::on() {
        return lockdep::release(m as usize, lockdep::MUTEX, || k.unlock());
    }
    k.unlock()
}

fn destroy<S: SpinPolicy>(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: as in `acquire`.
    unsafe { km::<S>(m) }.destroy()
}

/// Write a fresh klock mutex of `kind` over the whole object.
fn init_klock<S: SpinPolicy>(m: *mut pthread_mutex_t, kind: Kind) {
    // SAFETY: `m` is non-null (checked by the entry point) and, by
    // pthread_mutex_init's contract, points to writable storage for a
    // pthread_mutex_t that no other thread uses during init.
    unsafe {
        std::ptr::write_bytes(m.cast::<u8>(), 0, std::mem::size_of::<pthread_mutex_t>());
        std::ptr::write(m.cast::<KMutex<S>>(), KMutex::new(kind));
    }
}

/// Initialise `m` as a klock mutex of `kind` (for `mtx_init`).
///
/// # Safety
///
/// `m` is non-null and points to writable storage for a mutex.
pub(crate) unsafe fn init_kind(m: *mut pthread_mutex_t, kind: Kind) {
    by_mutex_variant!(init_klock(m, kind))
}

/// What an attribute object asks for.
enum AttrKind {
    Klock(Kind),
    Glibc,
}

/// Read `attr` with glibc's own (not interposed) attribute getters.
///
/// # Safety
///
/// `attr` is non-null and points to an initialised attribute object.
unsafe fn read_attr(attr: *const pthread_mutexattr_t) -> Result<AttrKind, c_int> {
    let (mut ty, mut proto, mut robust, mut pshared) = (0, 0, 0, 0);
    // SAFETY: caller's contract; the out-pointers are locals.
    let bad = unsafe {
        sys::pthread_mutexattr_gettype(attr, &mut ty) != 0
            || sys::pthread_mutexattr_getprotocol(attr, &mut proto) != 0
            || sys::pthread_mutexattr_getrobust(attr, &mut robust) != 0
            || sys::pthread_mutexattr_getpshared(attr, &mut pshared) != 0
    };
    if bad {
        return Err(EINVAL);
    }
    if proto != libc::PTHREAD_PRIO_NONE
        || robust != libc::PTHREAD_MUTEX_STALLED
        || pshared != libc::PTHREAD_PROCESS_PRIVATE
    {
        return Ok(AttrKind::Glibc);
    }
    Kind::from_raw(ty).map(AttrKind::Klock).ok_or(EINVAL)
}

/// Calls the real function, or answers for an unavailable one.
macro_rules! call_real {
    ($get:ident ( $($a:expr),* ), trivially_ok = $ok:expr) => {
        match real::$get() {
            // SAFETY: the real glibc function, called with the program's
            // own arguments.
            Ok(f) => unsafe { f($($a),*) },
            Err(why) => real::unavailable(why, $ok),
        }
    };
}
pub(crate) use call_real;

/// `pthread_mutex_init`: a klock mutex of the attribute's type, or glibc's
/// for robust, PI, PP and process-shared attributes. EINVAL for a null
/// mutex or a bad attribute.
///
/// # Safety
///
/// pthread's contract: `m` points to storage for a `pthread_mutex_t`,
/// `attr` is null or an initialised attribute object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    let kind = if attr.is_null() {
        Kind::Normal
    } else {
        // SAFETY: non-null attribute from the program.
        match unsafe { read_attr(attr) } {
            Ok(AttrKind::Klock(k)) => k,
            Ok(AttrKind::Glibc) => {
                lockdep::forget(m as usize);
                return call_real!(mutex_init(m, attr), trivially_ok = true);
            }
            Err(e) => return e,
        }
    };
    by_mutex_variant!(init_klock(m, kind));
    0
}

/// `pthread_mutex_destroy`: EBUSY while locked; afterwards every operation
/// is EINVAL until the next init (glibc's `__kind = -1`).
///
/// # Safety
///
/// pthread's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { is_glibc(m) } {
        lockdep::forget(m as usize);
        return call_real!(mutex_destroy(m), trivially_ok = true);
    }
    by_mutex_variant!(destroy(m))
}

/// The uncontended lock, before any dispatch: with statistics off, a free
/// klock mutex of any kind is taken in one CAS ([`KMutex::lock_fast`],
/// which reads only `__kind` before deciding, so glibc's objects are left
/// alone). The CAS is the same for both variants (they differ only in how
/// they wait), so the fast path views the object as either.
///
/// # Safety
///
/// `m` is non-null and points to a live `pthread_mutex_t`.
#[inline(always)]
unsafe fn lock_fast(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: caller's contract; `lock_fast` reads the kind before touching
    // the klock word (a glibc-served kind is refused without a write).
    config::locks_fast() && unsafe { km::<SpinOsq>(m) }.lock_fast()
}

/// The uncontended unlock, before any dispatch ([`KMutex::unlock_fast`]);
/// as [`lock_fast`].
///
/// # Safety
///
/// As for [`lock_fast`].
#[inline(always)]
unsafe fn unlock_fast(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: as in `lock_fast`.
    config::locks_fast() && unsafe { km::<SpinOsq>(m) }.unlock_fast()
}

/// The dispatch shared by the acquisition entry points.
///
/// # Safety
///
/// `m` is non-null and points to a mutex.
#[inline(always)]
unsafe fn acquire_entry(m: *mut pthread_mutex_t, how: How) -> c_int {
    by_mutex_variant!(acquire(m, how))
}

/// `pthread_mutex_lock`. Normal: relocking by the holder deadlocks (as in
/// glibc); recursive: counts; errorcheck: EDEADLK.
///
/// # Safety
///
/// pthread's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { lock_fast(m) } {
        return 0;
    }
    // SAFETY: as above.
    unsafe { lock_full(m) }
}

/// `pthread_mutex_lock` after the fast path: out of line, so that the
/// entry point stays a leaf on the fast path (no register saves).
///
/// # Safety
///
/// `m` is non-null and points to a mutex.
#[inline(never)]
unsafe extern "C" fn lock_full(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    if unsafe { is_glibc(m) } {
        let take = || call_real!(mutex_lock(m), trivially_ok = true);
        // SAFETY: checked above.
        return unsafe { glibc_acquire(m, false, take) };
    }
    // SAFETY: checked above.
    unsafe { acquire_entry(m, How::Block) }
}

/// `pthread_mutex_trylock`: EBUSY if held (a recursive holder relocks).
///
/// # Safety
///
/// pthread's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { lock_fast(m) } {
        return 0;
    }
    // SAFETY: as above.
    unsafe { trylock_full(m) }
}

/// `pthread_mutex_trylock` after the fast path (see [`lock_full`]).
///
/// # Safety
///
/// `m` is non-null and points to a mutex.
#[inline(never)]
unsafe extern "C" fn trylock_full(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    if unsafe { is_glibc(m) } {
        let take = || call_real!(mutex_trylock(m), trivially_ok = true);
        // SAFETY: checked above.
        return unsafe { glibc_acquire(m, true, take) };
    }
    // SAFETY: checked above.
    unsafe { acquire_entry(m, How::Try) }
}

/// `pthread_mutex_timedlock`: until `abstime` on CLOCK_REALTIME
/// (ETIMEDOUT; EINVAL for a bad `abstime` when the call would block).
///
/// # Safety
///
/// pthread's contract: `m` is null or points to a mutex; `abstime` is null
/// or points to a timespec.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { is_glibc(m) } {
        let take = || call_real!(mutex_timedlock(m, abstime), trivially_ok = true);
        // SAFETY: checked above.
        return unsafe { glibc_acquire(m, false, take) };
    }
    // SAFETY: checked above; `abstime` is the program's, null or a
    // timespec readable for the call (the core checks null).
    unsafe { acquire_entry(m, How::until(CLOCK_REALTIME, abstime)) }
}

/// `pthread_mutex_clocklock`: as timedlock, on `clock` (CLOCK_REALTIME or
/// CLOCK_MONOTONIC; EINVAL for any other).
///
/// # Safety
///
/// As for [`pthread_mutex_timedlock`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { is_glibc(m) } {
        let take = || call_real!(mutex_clocklock(m, clock, abstime), trivially_ok = true);
        // SAFETY: checked above.
        return unsafe { glibc_acquire(m, false, take) };
    }
    if !klock_c::core::time::valid_clock(clock) {
        // glibc checks the clock before anything else.
        return EINVAL;
    }
    // SAFETY: as in `pthread_mutex_timedlock`.
    unsafe { acquire_entry(m, How::until(clock, abstime)) }
}

/// `pthread_mutex_unlock`: EPERM if unlocked, or (recursive, errorcheck)
/// not held by the caller. A normal mutex may be unlocked by any thread.
///
/// # Safety
///
/// pthread's contract: `m` is null or points to a mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null mutex from the program.
    if unsafe { unlock_fast(m) } {
        return 0;
    }
    // SAFETY: as above.
    unsafe { unlock_full(m) }
}

/// `pthread_mutex_unlock` after the fast path (see [`lock_full`]).
///
/// # Safety
///
/// `m` is non-null and points to a mutex.
#[inline(never)]
unsafe extern "C" fn unlock_full(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    if unsafe { is_glibc(m) } {
        if lockdep::on() {
            return lockdep::release(m as usize, lockdep::Ident::Addr, || {
                call_real!(mutex_unlock(m), trivially_ok = true)
            });
        }
        return call_real!(mutex_unlock(m), trivially_ok = true);
    }
    by_mutex_variant!(unlock(m))
}

/// `pthread_mutex_consistent`: glibc's (EINVAL unless a robust mutex whose
/// owner died, which only glibc's mutexes can be).
///
/// # Safety
///
/// pthread's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_consistent(m: *mut pthread_mutex_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    call_real!(mutex_consistent(m), trivially_ok = false)
}

/// `pthread_mutex_getprioceiling`: glibc's (EINVAL unless a
/// priority-protect mutex, which only glibc's mutexes can be).
///
/// # Safety
///
/// pthread's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_getprioceiling(
    m: *const pthread_mutex_t,
    prioceiling: *mut c_int,
) -> c_int {
    if m.is_null() || prioceiling.is_null() {
        return EINVAL;
    }
    call_real!(mutex_getprioceiling(m, prioceiling), trivially_ok = false)
}

/// `pthread_mutex_setprioceiling`: glibc's (see getprioceiling).
///
/// # Safety
///
/// pthread's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_setprioceiling(
    m: *mut pthread_mutex_t,
    prioceiling: c_int,
    old: *mut c_int,
) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    call_real!(
        mutex_setprioceiling(m, prioceiling, old),
        trivially_ok = false
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_sits_at_glibc_kind_offset_for_both_variants() {
        let mut m: pthread_mutex_t = unsafe { std::mem::zeroed() };
        init_klock::<SpinOff>(&mut m, Kind::Recursive);
        assert_eq!(unsafe { kind_word(&m) }.load(Ordering::Relaxed), 1);
        init_klock::<SpinOsq>(&mut m, Kind::ErrorCheck);
        assert_eq!(unsafe { kind_word(&m) }.load(Ordering::Relaxed), 2);
        assert!(!unsafe { is_glibc(&m) });
        unsafe { kind_word(&m) }.store(0x90, Ordering::Relaxed);
        assert!(unsafe { is_glibc(&m) });
        unsafe { kind_word(&m) }.store(-1, Ordering::Relaxed);
        assert!(!unsafe { is_glibc(&m) });
    }
}

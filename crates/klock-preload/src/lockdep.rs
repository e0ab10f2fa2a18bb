//! Lock-order validation for unmodified programs (`KLOCK_LOCKDEP=1`, or
//! `klockrun --lockdep`): every mutex, rwlock, spinlock and `mtx_t`
//! acquisition and release is told to klock's validator
//! (`klock::internal::lockdep`), which reports a lock-order cycle as a
//! `possible deadlock` the first time its closing edge is seen. See
//! docs/lockdep.md.
//!
//! With validation on, the fast-path gate is closed (as for statistics), so
//! every call reaches its family's full path, which wraps the acquisition in
//! [`acquire`] and the release in [`release`]. With it off, the full paths
//! pay one load ([`on`]).
//!
//! **Identity** ([`Ident`]): a klock mutex (and `mtx_t`) keeps its lockdep id
//! in four spare bytes at offset 24, a klock rwlock at offset 20: bytes that
//! `init` zeroes, as do the static initialisers, C++'s `std::mutex()` and
//! `calloc`, so a re-initialised or reused object is a new lock without a
//! `destroy`. Spinlocks (4 bytes, no room) and the objects glibc serves
//! (robust, PI, PP, process-shared: glibc owns every byte) are kept by
//! address, forgotten at `init` and `destroy`.

use core::sync::atomic::AtomicU32;

use klock::internal::lockdep::{self as ld, Lock, Mode};
use libc::{EOWNERDEAD, c_int};

/// Where a lock's identity lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ident {
    /// In the object, four spare bytes at this offset (zero after init).
    Stamp(usize),
    /// In the validator's table, by address.
    Addr,
}

/// A klock mutex's (and `mtx_t`'s) identity: offset 24 of `pthread_mutex_t`
/// (past the 20 bytes of the `KMutex`; glibc's `__list`, unused by klock).
pub(crate) const MUTEX: Ident = Ident::Stamp(24);
/// A klock rwlock's: offset 20 of `pthread_rwlock_t` (past the `KRwLock`).
pub(crate) const RWLOCK: Ident = Ident::Stamp(20);

const _: () = assert!(size_of::<klock_c::core::mutex::KMutex<klock::SpinOsq>>() <= 24);
const _: () = assert!(size_of::<klock_c::core::mutex::KMutex<klock::SpinOff>>() <= 24);
const _: () = assert!(size_of::<klock_c::core::rwlock::KRwLock<klock::SpinOsq>>() <= 20);
const _: () = assert!(size_of::<klock_c::core::rwlock::KRwLock<klock::SpinOff>>() <= 20);

/// Is validation on? One relaxed load.
#[inline(always)]
pub(crate) fn on() -> bool {
    ld::enabled()
}

/// The identity of the lock at `addr` (made if `make` and it has none).
#[inline]
fn lock(addr: usize, ident: Ident, make: bool) -> Option<Lock> {
    match ident {
        Ident::Stamp(off) => {
            // SAFETY: the caller's object is a live lock of at least off + 4
            // bytes, 4-aligned there (`MUTEX`, `RWLOCK`), whose spare bytes
            // only this module touches, atomically.
            let stamp = unsafe { &*((addr + off) as *const AtomicU32) };
            if make {
                ld::lock_stamped(stamp, addr)
            } else {
                ld::lock_stamped_known(stamp)
            }
        }
        Ident::Addr if make => ld::lock_at(addr),
        Ident::Addr => ld::lock_at_known(addr),
    }
}

/// One acquisition `take` of the lock at `addr` under validation: a blocking
/// or timed one (`tried` false) is checked against the locks held before it
/// waits; a successful one (0, or a robust mutex's EOWNERDEAD, which
/// returns it held) is recorded as held. `recursive`: a relock by the holder
/// is allowed (a recursive mutex, a read lock).
///
/// The caller makes sure `addr` is a live lock of its family while this
/// runs (pthread's contract for the call it serves).
#[inline(always)]
pub(crate) fn acquire(
    addr: usize,
    ident: Ident,
    mode: Mode,
    recursive: bool,
    tried: bool,
    take: impl FnOnce() -> c_int,
) -> c_int {
    let Some(l) = lock(addr, ident, true) else {
        return take();
    };
    ld::acquire(l, mode, recursive, tried, take, |&r| {
        r == 0 || r == EOWNERDEAD
    })
}

/// One release `give` of the lock at `addr` under validation. The identity
/// is read, and a semaphore-style release's new identity written, before
/// the release (afterwards another thread may destroy the object); after
/// it, only this thread's own held stack is touched.
#[inline(always)]
pub(crate) fn release(addr: usize, ident: Ident, give: impl FnOnce() -> c_int) -> c_int {
    let l = lock(addr, ident, false);
    let theirs = l.filter(|&l| !ld::holds(l));
    if let Some(l) = theirs {
        // A release by a thread that did not take it (a normal mutex or a
        // spinlock used as a semaphore): a new identity, and the old one
        // retired, so the taker drops its stale entry. Done before the
        // release, while the object is surely live (after it, another thread
        // may take, release and free it: INV-WAKE-ADDR).
        renew(addr, ident);
        ld::retire(l);
    }
    let r = give();
    if r == 0
        && theirs.is_none()
        && let Some(l) = l
    {
        let _ = ld::released(l);
    }
    r
}

/// The lock at `addr` gets a new identity at its next acquisition.
fn renew(addr: usize, ident: Ident) {
    match ident {
        Ident::Stamp(off) => {
            // SAFETY: as in `lock`.
            ld::renew_stamped(unsafe { &*((addr + off) as *const AtomicU32) })
        }
        Ident::Addr => ld::forget(addr),
    }
}

/// A condvar wait released the mutex at `addr` (its retake is an
/// [`acquire`]: a blocking one, checked against what the thread holds then).
pub(crate) fn wait_released(addr: usize, ident: Ident) {
    if let Some(l) = lock(addr, ident, false) {
        let _ = ld::released(l);
    }
}

/// A condvar wait retakes the mutex at `addr` (`retake`, whose result it
/// returns): a blocking acquisition, checked against what the thread holds
/// now. The wait's result is the mutex's state too: it is held after 0,
/// ETIMEDOUT and EOWNERDEAD, not after an error of the lock itself.
#[cold]
#[inline(never)]
pub(crate) fn wait_retaken(
    addr: usize,
    ident: Ident,
    recursive: bool,
    retake: impl FnOnce() -> c_int,
) -> c_int {
    let Some(l) = lock(addr, ident, true) else {
        return retake();
    };
    let held = |&r: &c_int| !matches!(r, libc::ENOTRECOVERABLE | libc::EINVAL | libc::EPERM);
    ld::acquire(l, Mode::Write, recursive, false, retake, held)
}

/// The lock kept by address at `addr` ends or starts over (init, destroy).
#[inline]
pub(crate) fn forget(addr: usize) {
    if on() {
        ld::forget(addr);
    }
}

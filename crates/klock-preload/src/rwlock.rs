//! `pthread_rwlock_*`: a [`KRwLock`] in place in the 56-byte
//! `pthread_rwlock_t`.
//!
//! ```text
//! offset  0  KRwLock: klock RawRwLock (count word, owner hint, wait list, OSQ)  16 bytes
//! offset 16  KRwLock: state (0 usable, -1 destroyed)                             4 bytes
//! offset 20  unused (zeroed by init)                                             8 bytes
//! offset 28  glibc's __shared: nonzero = process-shared (glibc's)                4 bytes
//! offset 32  unused (zeroed by init)                                            16 bytes
//! offset 48  glibc's __flags: the kind (0 default/prefer-reader, 1 prefer-writer,
//!            2 prefer-writer-nonrecursive), written by init as glibc does      4 bytes
//! offset 52  unused (zeroed by init)                                             4 bytes
//! ```
//!
//! `PTHREAD_RWLOCK_INITIALIZER` (all zero: the default kind) and
//! `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP` (which stores 2 in
//! `__flags` at offset 48) are valid as they stand.
//!
//! * Readers share; one unlock for both sides; EDEADLK when the
//!   write-holder asks again. All from core's [`KRwLock`].
//! * **Kinds** (`pthread_rwlockattr_setkind_np`), with
//!   `KLOCK_RWLOCK_POLICY=glibc` (default), as glibc: the default kind,
//!   `PREFER_READER_NP` and `PREFER_WRITER_NP` (which glibc treats alike)
//!   never make a reader wait while the lock is read-held, even while
//!   writers wait ([`ReadPolicy::PreferReaders`]); writers may wait
//!   indefinitely. `PREFER_WRITER_NONRECURSIVE_NP` queues new readers
//!   behind a waiting writer ([`ReadPolicy::Fair`], klock's rwsem, whose
//!   waiting writer gets the lock handed to it past the hand-off
//!   threshold). With `KLOCK_RWLOCK_POLICY=fair`, every kind is served the
//!   fair way; a thread already holding a read lock still passes a waiting
//!   writer, but a reader that holds the lock while it waits for another
//!   thread's reader can deadlock (see docs/preload.md).
//! * **Process-shared** rwlocks (attribute) go to glibc: real init, and
//!   every later call for an object whose `__shared` (offset 28, written by
//!   glibc's init only) is nonzero.

use crate::config::{self, RwPolicy};
use crate::lockdep;
use crate::mutex::call_real;
use crate::real;
use crate::stats::{self, Family};
use crate::sys;
use klock::internal::lockdep::Mode;
use klock::internal::rwlock::RawRwLockInternals as _;
use klock::{SpinOff, SpinOsq, SpinPolicy};
use klock_c::core::how::How;
use klock_c::core::rwlock::{KRwLock, ReadPolicy};
use libc::{
    CLOCK_REALTIME, EBUSY, EINVAL, c_int, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t,
    timespec,
};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

const _: () = assert!(std::mem::size_of::<KRwLock<SpinOsq>>() <= sys::RWLOCK_SHARED_OFFSET);
const _: () = assert!(std::mem::size_of::<KRwLock<SpinOff>>() == std::mem::size_of::<KRwLock>());
const _: () = assert!(std::mem::align_of::<KRwLock<SpinOff>>() <= 8);

/// Is `l` a process-shared rwlock (glibc's)?
///
/// # Safety
///
/// `l` points to a live `pthread_rwlock_t`.
#[inline]
unsafe fn is_glibc(l: *const pthread_rwlock_t) -> bool {
    // SAFETY: offset 28 of a 56-byte, 8-aligned object: an aligned i32.
    let w = unsafe {
        &*l.cast::<u8>()
            .add(sys::RWLOCK_SHARED_OFFSET)
            .cast::<AtomicI32>()
    };
    // Relaxed: written by init, before the lock is shared.
    w.load(Ordering::Relaxed) != 0
}

/// glibc's kind word (`__flags`, offset 48) of `l`.
///
/// # Safety
///
/// `l` points to a live `pthread_rwlock_t`, valid for `'a`.
#[inline]
unsafe fn kind_word<'a>(l: *const pthread_rwlock_t) -> &'a AtomicU32 {
    // SAFETY: offset 48 of a 56-byte, 8-aligned object: an aligned u32,
    // outside klock's 20 bytes.
    unsafe {
        &*l.cast::<u8>()
            .add(sys::RWLOCK_FLAGS_OFFSET)
            .cast::<AtomicU32>()
    }
}

/// The read policy of `l` under `policy` (the configuration's): its kind
/// (offset 48) under `KLOCK_RWLOCK_POLICY=glibc`, fair for every kind
/// under `fair`.
///
/// # Safety
///
/// `l` points to a live `pthread_rwlock_t`.
#[inline]
unsafe fn read_policy(policy: RwPolicy, l: *const pthread_rwlock_t) -> ReadPolicy {
    if policy == RwPolicy::Fair {
        return ReadPolicy::Fair;
    }
    // SAFETY: forwarded. Relaxed: written by init or a static initialiser,
    // before the lock is shared.
    let kind = unsafe { kind_word(l) }.load(Ordering::Relaxed);
    if kind == sys::PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP as u32 {
        ReadPolicy::Fair
    } else {
        ReadPolicy::PreferReaders
    }
}

/// `l` as a klock rwlock.
///
/// # Safety
///
/// `l` points to a live `pthread_rwlock_t` that is not glibc's, valid for `'a`.
#[inline]
unsafe fn kr<'a, S: SpinPolicy>(l: *mut pthread_rwlock_t) -> &'a KRwLock<S> {
    // SAFETY: KRwLock (20 bytes, align 4, atomics only) fits the 56-byte,
    // 8-aligned object; shared by reference as klock's rwlock is.
    unsafe { &*l.cast::<KRwLock<S>>() }
}

/// The fast paths before any dispatch: with statistics off, on a
/// klock-served lock, the core's uncontended operation
/// ([`KRwLock::rdlock_fast`], `wrlock_fast`, `unlock_fast`). They are the
/// same for both variants (which differ only in how they wait), so the lock
/// is viewed as either. `None`: take the full path.
///
/// # Safety
///
/// `l` is non-null and points to a live `pthread_rwlock_t`.
#[inline(always)]
unsafe fn fast(l: *mut pthread_rwlock_t, f: impl FnOnce(&KRwLock<SpinOsq>) -> bool) -> bool {
    // SAFETY: caller's contract; `kr` needs a klock-served lock (checked
    // first).
    config::locks_fast() && !unsafe { is_glibc(l) } && f(unsafe { kr::<SpinOsq>(l) })
}

/// Which side an acquisition takes: the read side, the policy's way, or
/// the write side. The `How` travels beside it unchanged.
#[derive(Clone, Copy)]
enum Side {
    Read(ReadPolicy),
    Write,
}

impl Side {
    /// How lock-order validation sees this side: a reader-preferring read
    /// never waits while the lock is only read-held.
    fn mode(self) -> Mode {
        match self {
            Side::Read(ReadPolicy::PreferReaders) => Mode::ReadPassing,
            Side::Read(_) => Mode::Read,
            Side::Write => Mode::Write,
        }
    }

    /// The statistics family.
    fn family(self) -> Family {
        match self {
            Side::Read(_) => Family::RwRead,
            Side::Write => Family::RwWrite,
        }
    }

    /// Past the entry's uncontended try: core's [`KRwLock::read`] or
    /// [`KRwLock::write`].
    #[inline(always)]
    fn acquire<S: SpinPolicy>(self, k: &KRwLock<S>, how: How) -> c_int {
        match self {
            Side::Read(p) => k.read(how, p),
            Side::Write => k.write(how),
        }
    }

    /// The whole call, uncontended try first: core's [`KRwLock::rdlock`]
    /// or [`KRwLock::wrlock`] (for an entry that asked no try, and for
    /// [`acquire_counted`]).
    #[inline(always)]
    fn lock<S: SpinPolicy>(self, k: &KRwLock<S>, how: How) -> c_int {
        match self {
            Side::Read(p) => k.rdlock(how, p),
            Side::Write => k.wrlock(how),
        }
    }
}

/// One acquisition: core's entry point for `side` (the contended one if
/// the entry `asked` the uncontended try, else the whole call, try first),
/// or with statistics on [`acquire_counted`]. The gate decides, as at the
/// entry (`config::locks_fast`): it only closes, so an open gate here
/// means an entry that has a try asked it.
#[inline(always)]
fn acquire<S: SpinPolicy>(l: *mut pthread_rwlock_t, side: Side, how: How, asked: bool) -> c_int {
    // SAFETY: the entry point checked `l` non-null and klock's.
    let k = unsafe { kr::<S>(l) };
    if !config::locks_fast() {
        return acquire_watched(l, k, side, how);
    }
    if asked {
        side.acquire(k, how)
    } else {
        side.lock(k, how)
    }
}

/// [`acquire`] with the gate closed (the entry asked no uncontended try):
/// the whole call, counted ([`acquire_counted`]) with statistics on, and
/// validated ([`lockdep::acquire`]) with lock-order validation on. A read
/// relock by a reader is recursive.
#[cold]
#[inline(never)]
fn acquire_watched<S: SpinPolicy>(
    l: *mut pthread_rwlock_t,
    k: &KRwLock<S>,
    side: Side,
    how: How,
) -> c_int {
    let tried = how.is_try();
    let run = move || {
        if stats::enabled() {
            acquire_counted(l, k, side, how)
        } else {
            side.lock(k, how)
        }
    };
    if !lockdep::on() {
        return run();
    }
    let mode = side.mode();
    lockdep::acquire(
        l as usize,
        lockdep::RWLOCK,
        mode,
        mode.is_read(),
        tried,
        run,
    )
}

/// [`acquire`] with statistics on (the entry asked no uncontended try): a
/// first try, the whole call, tells contended from not, and the wait is
/// timed.
#[inline(always)]
fn acquire_counted<S: SpinPolicy>(
    l: *mut pthread_rwlock_t,
    k: &KRwLock<S>,
    side: Side,
    how: How,
) -> c_int {
    let first = side.lock(k, How::Try);
    if first != EBUSY || how.is_try() {
        if first == 0 {
            stats::acquired(l as usize, side.family(), false, 0);
        }
        return first;
    }
    let t0 = klock::internal::wait::now_ns();
    let r = side.acquire(k, how);
    if r == 0 {
        let waited = klock::internal::wait::now_ns().saturating_sub(t0);
        stats::acquired(l as usize, side.family(), true, waited);
    }
    r
}

#[inline(always)]
fn unlock<S: SpinPolicy>(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: as in `acquire`.
    let k = unsafe { kr::<S>(l) };
    if stats::enabled() {
        let fam = if k.raw().writer() == klock::internal::tid::current_id() {
            Family::RwWrite
        } else {
            Family::RwRead
        };
        stats::released(l as usize, fam);
    }
    if lockdep::on() {
        return lockdep::release(l as usize, lockdep::RWLOCK, || k.unlock());
    }
    k.unlock()
}

fn destroy<S: SpinPolicy>(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: as in `acquire`.
    unsafe { kr::<S>(l) }.destroy()
}

/// Zero the object, put a klock rwlock in it and store the kind where
/// glibc's init does (`__flags`, offset 48).
fn init_klock<S: SpinPolicy>(l: *mut pthread_rwlock_t, kind: c_int) {
    // SAFETY: `l` is non-null (entry point) and, by pthread_rwlock_init's
    // contract, writable storage nobody else uses now.
    unsafe {
        std::ptr::write_bytes(l.cast::<u8>(), 0, std::mem::size_of::<pthread_rwlock_t>());
        std::ptr::write(l.cast::<KRwLock<S>>(), KRwLock::new());
        // Relaxed: published with the object by the program.
        kind_word(l).store(kind as u32, Ordering::Relaxed);
    }
}

/// `pthread_rwlock_init`: a klock rwlock of the attribute's kind (read with
/// glibc's `pthread_rwlockattr_getkind_np`; see the module docs), or
/// glibc's for a process-shared attribute.
///
/// # Safety
///
/// pthread's contract: `l` points to storage for an rwlock, `attr` is null
/// or an initialised attribute object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    let mut kind = 0;
    if !attr.is_null() {
        let mut pshared = 0;
        // SAFETY: non-null attribute from the program; local out-pointers.
        if unsafe { sys::pthread_rwlockattr_getpshared(attr, &mut pshared) } != 0
            || unsafe { sys::pthread_rwlockattr_getkind_np(attr, &mut kind) } != 0
        {
            return EINVAL;
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE {
            lockdep::forget(l as usize);
            return call_real!(rwlock_init(l, attr), trivially_ok = false);
        }
    }
    config::by_variant!(config::get().rwlock, init_klock(l, kind));
    0
}

/// `pthread_rwlock_destroy`: EBUSY while held; afterwards EINVAL until the
/// next init.
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an rwlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null rwlock from the program.
    if unsafe { is_glibc(l) } {
        lockdep::forget(l as usize);
        return call_real!(rwlock_destroy(l), trivially_ok = false);
    }
    config::by_variant!(config::get().rwlock, destroy(l))
}

/// `pthread_rwlock_unlock`: whichever side the caller holds (EPERM if the
/// lock is not held).
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an rwlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null rwlock from the program.
    if unsafe { fast(l, |k| k.unlock_fast()) } {
        return 0;
    }
    // SAFETY: as above.
    unsafe { unlock_full(l) }
}

/// `pthread_rwlock_unlock` after the fast path: out of line (an
/// `extern "C"` function, so that the entry can tail-call it).
///
/// # Safety
///
/// `l` is non-null and points to an rwlock.
#[inline(never)]
unsafe extern "C" fn unlock_full(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: caller's contract.
    if unsafe { is_glibc(l) } {
        if lockdep::on() {
            return lockdep::release(l as usize, lockdep::Ident::Addr, || {
                call_real!(rwlock_unlock(l), trivially_ok = false)
            });
        }
        return call_real!(rwlock_unlock(l), trivially_ok = false);
    }
    config::by_variant!(config::get().rwlock, unlock(l))
}

/// Defines an acquisition entry point: null check, the uncontended try
/// ([`fast`]) if it has one (the timed entries have none: they are a tail
/// call), then out of line: glibc route, the configuration read once
/// (`c`: variant, read policy), the side (`|l, c| side`) and the `How`,
/// and [`acquire`] (told whether the entry asked the try).
macro_rules! rw_entry {
    (@asked) => { false };
    (@asked $fast:expr) => { true };
    ($(#[$doc:meta])* $name:ident ( $($p:ident : $t:ty),* ) => $real:ident,
     $how:expr, |$l:ident, $c:ident| $side:expr $(, fast: $fast:expr)?) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// pthread's contract: `l` is null or points to an rwlock; a
        /// timespec argument is null or points to a timespec.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(l: *mut pthread_rwlock_t $(, $p: $t)*) -> c_int {
            if l.is_null() {
                return EINVAL;
            }
            $(
                // SAFETY: non-null rwlock from the program.
                if unsafe { fast(l, $fast) } {
                    return 0;
                }
            )?
            /// The entry after the fast path, out of line (`extern "C"`, so
            /// the entry can tail-call it).
            #[inline(never)]
            unsafe extern "C" fn full(l: *mut pthread_rwlock_t $(, $p: $t)*) -> c_int {
                let ($l, $c) = (l, config::get());
                // SAFETY: `l` is a non-null rwlock (a read's side reads its
                // kind word, `__flags`, glibc's and klock's alike); a
                // timespec is the program's, null or readable for the call.
                #[allow(unused_unsafe)]
                let (side, how) = unsafe { ($side, $how) };
                // SAFETY: non-null rwlock from the program.
                if unsafe { is_glibc(l) } {
                    let take = || call_real!($real(l $(, $p)*), trivially_ok = false);
                    if lockdep::on() {
                        let mode = side.mode();
                        let (ident, tried) = (lockdep::Ident::Addr, how.is_try());
                        return lockdep::acquire(l as usize, ident, mode, mode.is_read(), tried, take);
                    }
                    return take();
                }
                let asked = rw_entry!(@asked $($fast)?);
                config::by_variant!($c.rwlock, acquire(l, side, how, asked))
            }
            // SAFETY: non-null rwlock from the program.
            unsafe { full(l $(, $p)*) }
        }
    };
}

rw_entry!(
    /// `pthread_rwlock_rdlock`: EDEADLK if the caller holds the write lock;
    /// the kind's read policy (module docs).
    pthread_rwlock_rdlock() => rwlock_rdlock, How::Block,
    |l, c| Side::Read(read_policy(c.rwlock_policy, l)), fast: |k| k.rdlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_tryrdlock`: EBUSY instead of waiting (a
    /// reader-preferring kind succeeds while the lock is read-held).
    pthread_rwlock_tryrdlock() => rwlock_tryrdlock, How::Try,
    |l, c| Side::Read(read_policy(c.rwlock_policy, l)), fast: |k| k.rdlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_timedrdlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedrdlock(abstime: *const timespec) => rwlock_timedrdlock,
    How::until(CLOCK_REALTIME, abstime),
    |l, c| Side::Read(read_policy(c.rwlock_policy, l))
);
rw_entry!(
    /// `pthread_rwlock_clockrdlock`: until `abstime` on `clock`.
    pthread_rwlock_clockrdlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockrdlock,
    How::until(clock, abstime),
    |l, c| Side::Read(read_policy(c.rwlock_policy, l))
);
rw_entry!(
    /// `pthread_rwlock_wrlock`: EDEADLK if the caller holds the write lock.
    pthread_rwlock_wrlock() => rwlock_wrlock, How::Block,
    |_l, _c| Side::Write, fast: |k| k.wrlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_trywrlock`: EBUSY instead of waiting.
    pthread_rwlock_trywrlock() => rwlock_trywrlock, How::Try,
    |_l, _c| Side::Write, fast: |k| k.wrlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_timedwrlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedwrlock(abstime: *const timespec) => rwlock_timedwrlock,
    How::until(CLOCK_REALTIME, abstime), |_l, _c| Side::Write
);
rw_entry!(
    /// `pthread_rwlock_clockwrlock`: until `abstime` on `clock`.
    pthread_rwlock_clockwrlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockwrlock,
    How::until(clock, abstime), |_l, _c| Side::Write
);

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

use crate::config::{self, RwPolicy, SleepVariant};
use crate::mutex::call_real;
use crate::real;
use crate::stats::{self, Family};
use crate::sys;
use klock::{SpinOff, SpinOsq, SpinPolicy};
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

/// The read policy of `l`: its kind (offset 48) under
/// `KLOCK_RWLOCK_POLICY=glibc`, fair for every kind under `fair`.
///
/// # Safety
///
/// `l` points to a live `pthread_rwlock_t`.
#[inline]
unsafe fn read_policy(l: *const pthread_rwlock_t) -> ReadPolicy {
    if config::get().rwlock_policy == RwPolicy::Fair {
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

/// Which side and how an acquisition waits.
#[derive(Clone, Copy)]
enum Op {
    Read(How, ReadPolicy),
    Write(How),
}

#[derive(Clone, Copy)]
enum How {
    Block,
    Try,
    Until(clockid_t, *const timespec),
}

#[inline(always)]
fn acquire<S: SpinPolicy>(l: *mut pthread_rwlock_t, op: Op) -> c_int {
    // SAFETY: the entry point checked `l` non-null and klock's.
    let k = unsafe { kr::<S>(l) };
    if !stats::enabled() {
        return run(k, op);
    }
    acquire_counted(l, k, op)
}

/// One klock operation.
#[inline(always)]
fn run<S: SpinPolicy>(k: &KRwLock<S>, op: Op) -> c_int {
    match op {
        Op::Read(How::Block, p) => k.rdlock_with(p),
        Op::Read(How::Try, p) => k.tryrdlock_with(p),
        // SAFETY: `abstime` from the program, null or a timespec.
        Op::Read(How::Until(c, t), p) => unsafe { k.timedrdlock_with(p, c, t) },
        Op::Write(How::Block) => k.wrlock(),
        Op::Write(How::Try) => k.trywrlock(),
        // SAFETY: as above.
        Op::Write(How::Until(c, t)) => unsafe { k.timedwrlock(c, t) },
    }
}

/// [`acquire`] with statistics on: a first try tells contended from not,
/// and the wait is timed.
#[cold]
#[inline(never)]
fn acquire_counted<S: SpinPolicy>(l: *mut pthread_rwlock_t, k: &KRwLock<S>, op: Op) -> c_int {
    let (fam, try_op, is_try) = match op {
        Op::Read(h, p) => (Family::RwRead, Op::Read(How::Try, p), matches!(h, How::Try)),
        Op::Write(h) => (Family::RwWrite, Op::Write(How::Try), matches!(h, How::Try)),
    };
    let first = run(k, try_op);
    if first != EBUSY || is_try {
        if first == 0 {
            stats::acquired(l as usize, fam, false, 0);
        }
        return first;
    }
    let t0 = klock::internal::wait::now_ns();
    let r = run(k, op);
    if r == 0 {
        let waited = klock::internal::wait::now_ns().saturating_sub(t0);
        stats::acquired(l as usize, fam, true, waited);
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

/// Dispatch on the configured rwlock variant.
macro_rules! by_rwlock_variant {
    ($f:ident ( $($a:expr),* )) => {
        match config::get().rwlock {
            SleepVariant::Osq => $f::<SpinOsq>($($a),*),
            SleepVariant::NoSpin => $f::<SpinOff>($($a),*),
        }
    };
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
            return call_real!(rwlock_init(l, attr), trivially_ok = false);
        }
    }
    by_rwlock_variant!(init_klock(l, kind));
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
        return call_real!(rwlock_destroy(l), trivially_ok = false);
    }
    by_rwlock_variant!(destroy(l))
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
        return call_real!(rwlock_unlock(l), trivially_ok = false);
    }
    by_rwlock_variant!(unlock(l))
}

/// Defines an acquisition entry point: null check, glibc route, klock op
/// (`|l| op`: the operation, computed from the klock-served object).
macro_rules! rw_entry {
    ($(#[$doc:meta])* $name:ident ( $($p:ident : $t:ty),* ) => $real:ident,
     |$l:ident| $op:expr $(, fast: $fast:expr)?) => {
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
                // SAFETY: non-null rwlock from the program.
                if unsafe { is_glibc(l) } {
                    return call_real!($real(l $(, $p)*), trivially_ok = false);
                }
                let $l = l;
                // SAFETY: `l` is a non-null, klock-served rwlock (checked
                // above); the read entries' op reads its kind word.
                #[allow(unused_unsafe)]
                let op = unsafe { $op };
                by_rwlock_variant!(acquire(l, op))
            }
            // SAFETY: non-null rwlock from the program.
            unsafe { full(l $(, $p)*) }
        }
    };
}

rw_entry!(
    /// `pthread_rwlock_rdlock`: EDEADLK if the caller holds the write lock;
    /// the kind's read policy (module docs).
    pthread_rwlock_rdlock() => rwlock_rdlock, |l| Op::Read(How::Block, read_policy(l)),
    fast: |k| k.rdlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_tryrdlock`: EBUSY instead of waiting (a
    /// reader-preferring kind succeeds while the lock is read-held).
    pthread_rwlock_tryrdlock() => rwlock_tryrdlock, |l| Op::Read(How::Try, read_policy(l)),
    fast: |k| k.rdlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_timedrdlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedrdlock(abstime: *const timespec) => rwlock_timedrdlock,
    |l| Op::Read(How::Until(CLOCK_REALTIME, abstime), read_policy(l))
);
rw_entry!(
    /// `pthread_rwlock_clockrdlock`: until `abstime` on `clock`.
    pthread_rwlock_clockrdlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockrdlock,
    |l| Op::Read(How::Until(clock, abstime), read_policy(l))
);
rw_entry!(
    /// `pthread_rwlock_wrlock`: EDEADLK if the caller holds the write lock.
    pthread_rwlock_wrlock() => rwlock_wrlock, |_l| Op::Write(How::Block),
    fast: |k| k.wrlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_trywrlock`: EBUSY instead of waiting.
    pthread_rwlock_trywrlock() => rwlock_trywrlock, |_l| Op::Write(How::Try),
    fast: |k| k.wrlock_fast()
);
rw_entry!(
    /// `pthread_rwlock_timedwrlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedwrlock(abstime: *const timespec) => rwlock_timedwrlock,
    |_l| Op::Write(How::Until(CLOCK_REALTIME, abstime))
);
rw_entry!(
    /// `pthread_rwlock_clockwrlock`: until `abstime` on `clock`.
    pthread_rwlock_clockwrlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockwrlock,
    |_l| Op::Write(How::Until(clock, abstime))
);

//! `pthread_rwlock_*`: a [`KRwLock`] in place in the 56-byte
//! `pthread_rwlock_t`.
//!
//! ```text
//! offset  0  KRwLock: klock RawRwLock (count word, owner hint, wait list, OSQ)  16 bytes
//! offset 16  KRwLock: state (0 usable, -1 destroyed)                             4 bytes
//! offset 20  unused (zeroed by init)                                             8 bytes
//! offset 28  glibc's __shared: nonzero = process-shared (glibc's)                4 bytes
//! offset 32  unused (zeroed by init)                                            24 bytes
//! ```
//!
//! `PTHREAD_RWLOCK_INITIALIZER` and the `_NP` writer-preferring static
//! initialiser (which sets glibc's `__flags` at offset 48, ignored here)
//! are valid as they stand.
//!
//! * Readers share; one unlock for both sides; a thread holding a read lock
//!   may take another even while a writer waits (glibc's default kind
//!   allows it, and programs rely on it); EDEADLK when the write-holder asks
//!   again. All from core's [`KRwLock`].
//! * **Kinds** (`pthread_rwlockattr_setkind_np`): klock's rwsem has one
//!   policy for all of them: readers queue behind a waiting writer, and a
//!   writer that waited past the handoff threshold gets the lock handed to
//!   it. Writers therefore never starve, whichever kind was asked for.
//! * **Process-shared** rwlocks (attribute) go to glibc: real init, and
//!   every later call for an object whose `__shared` (offset 28, written by
//!   glibc's init only) is nonzero.

use crate::config::{self, SleepVariant};
use crate::mutex::call_real;
use crate::real;
use crate::stats::{self, Family};
use crate::sys;
use klock::mutex::{SpinOff, SpinOsq, SpinPolicy};
use klock_c::core::rwlock::KRwLock;
use libc::{
    CLOCK_REALTIME, EBUSY, EINVAL, c_int, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t,
    timespec,
};
use std::sync::atomic::{AtomicI32, Ordering};

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

/// Which side and how an acquisition waits.
#[derive(Clone, Copy)]
enum Op {
    Read(How),
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
        Op::Read(How::Block) => k.rdlock(),
        Op::Read(How::Try) => k.tryrdlock(),
        // SAFETY: `abstime` from the program, null or a timespec.
        Op::Read(How::Until(c, t)) => unsafe { k.timedrdlock(c, t) },
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
        Op::Read(h) => (Family::RwRead, Op::Read(How::Try), matches!(h, How::Try)),
        Op::Write(h) => (Family::RwWrite, Op::Write(How::Try), matches!(h, How::Try)),
    };
    let first = run(k, try_op);
    if first != EBUSY || is_try {
        if first == 0 {
            stats::acquired(l as usize, fam, false, 0);
        }
        return first;
    }
    let t0 = klock::wait::now_ns();
    let r = run(k, op);
    if r == 0 {
        let waited = klock::wait::now_ns().saturating_sub(t0);
        stats::acquired(l as usize, fam, true, waited);
    }
    r
}

#[inline(always)]
fn unlock<S: SpinPolicy>(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: as in `acquire`.
    let k = unsafe { kr::<S>(l) };
    if stats::enabled() {
        let fam = if k.raw().writer() == klock::tid::current_id() {
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

fn init_klock<S: SpinPolicy>(l: *mut pthread_rwlock_t) {
    // SAFETY: `l` is non-null (entry point) and, by pthread_rwlock_init's
    // contract, writable storage nobody else uses now.
    unsafe {
        std::ptr::write_bytes(l.cast::<u8>(), 0, std::mem::size_of::<pthread_rwlock_t>());
        std::ptr::write(l.cast::<KRwLock<S>>(), KRwLock::new());
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

/// `pthread_rwlock_init`: a klock rwlock (any kind; see the module docs),
/// or glibc's for a process-shared attribute.
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
    if !attr.is_null() {
        let mut pshared = 0;
        // SAFETY: non-null attribute from the program; a local out-pointer.
        if unsafe { sys::pthread_rwlockattr_getpshared(attr, &mut pshared) } != 0 {
            return EINVAL;
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE {
            return call_real!(rwlock_init(l, attr), trivially_ok = false);
        }
    }
    by_rwlock_variant!(init_klock(l));
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
    if unsafe { is_glibc(l) } {
        return call_real!(rwlock_unlock(l), trivially_ok = false);
    }
    by_rwlock_variant!(unlock(l))
}

/// Defines an acquisition entry point: null check, glibc route, klock op.
macro_rules! rw_entry {
    ($(#[$doc:meta])* $name:ident ( $($p:ident : $t:ty),* ) => $real:ident, $op:expr) => {
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
            // SAFETY: non-null rwlock from the program.
            if unsafe { is_glibc(l) } {
                return call_real!($real(l $(, $p)*), trivially_ok = false);
            }
            by_rwlock_variant!(acquire(l, $op))
        }
    };
}

rw_entry!(
    /// `pthread_rwlock_rdlock`: EDEADLK if the caller holds the write lock.
    pthread_rwlock_rdlock() => rwlock_rdlock, Op::Read(How::Block)
);
rw_entry!(
    /// `pthread_rwlock_tryrdlock`: EBUSY instead of waiting.
    pthread_rwlock_tryrdlock() => rwlock_tryrdlock, Op::Read(How::Try)
);
rw_entry!(
    /// `pthread_rwlock_timedrdlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedrdlock(abstime: *const timespec) => rwlock_timedrdlock,
    Op::Read(How::Until(CLOCK_REALTIME, abstime))
);
rw_entry!(
    /// `pthread_rwlock_clockrdlock`: until `abstime` on `clock`.
    pthread_rwlock_clockrdlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockrdlock,
    Op::Read(How::Until(clock, abstime))
);
rw_entry!(
    /// `pthread_rwlock_wrlock`: EDEADLK if the caller holds the write lock.
    pthread_rwlock_wrlock() => rwlock_wrlock, Op::Write(How::Block)
);
rw_entry!(
    /// `pthread_rwlock_trywrlock`: EBUSY instead of waiting.
    pthread_rwlock_trywrlock() => rwlock_trywrlock, Op::Write(How::Try)
);
rw_entry!(
    /// `pthread_rwlock_timedwrlock`: until `abstime` on CLOCK_REALTIME.
    pthread_rwlock_timedwrlock(abstime: *const timespec) => rwlock_timedwrlock,
    Op::Write(How::Until(CLOCK_REALTIME, abstime))
);
rw_entry!(
    /// `pthread_rwlock_clockwrlock`: until `abstime` on `clock`.
    pthread_rwlock_clockwrlock(clock: clockid_t, abstime: *const timespec) => rwlock_clockwrlock,
    Op::Write(How::Until(clock, abstime))
);

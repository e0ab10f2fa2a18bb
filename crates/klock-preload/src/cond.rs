//! `pthread_cond_*`: a [`KCond`] in place in the 48-byte `pthread_cond_t`.
//!
//! ```text
//! offset  0  KCond: klock RawCondvar (wait list, mutex address, fallback count)  16 bytes
//! offset 16  KCond: clock of timed waits (0 CLOCK_REALTIME, 1 CLOCK_MONOTONIC)     4 bytes
//! offset 20  unused (zeroed by init)                                              16 bytes
//! offset 36  glibc's __wrefs: bit 0 = process-shared marker (see below)            4 bytes
//! offset 40  unused (zeroed by init)                                               8 bytes
//! ```
//!
//! `PTHREAD_COND_INITIALIZER` (all zero) is a valid KCond on CLOCK_REALTIME.
//!
//! **Process-shared condvars** go to glibc. The marker is glibc's own: its
//! init sets bit 0 of `__wrefs` (offset 36) for a process-shared condvar,
//! and glibc's operations only move `__wrefs` in steps of 8, so the bit
//! stays put for the object's life, also while other (not preloaded)
//! processes use it. A klock condvar never writes offset 36 (KCond ends at
//! 24; init zeroes the rest). A marker of our own at offset 40 would not
//! survive: that is glibc's `__g_signals`, which its waits rewrite.
//!
//! **Mixed pairs.** glibc's condvar cannot be handed a klock mutex (its
//! wait unlocks and re-locks the mutex with glibc's internal calls), nor can
//! klock's wait morphing move a waiter onto a glibc mutex's queue. Both
//! pairs work, as they do with glibc:
//!
//! * a klock condvar with a glibc-served mutex (robust, PI, PP, pshared):
//!   the waiter registers on the condvar's fallback word (klock's
//!   `RawCondvar::begin_wait_foreign`) *before* it unlocks the mutex with
//!   the real `pthread_mutex_unlock`, sleeps in the same C sleep as every
//!   klock wait, and re-locks with the real `pthread_mutex_lock`, whose
//!   EOWNERDEAD / ENOTRECOVERABLE it returns. A signal or broadcast wakes
//!   every such waiter (spurious wake-ups, allowed by POSIX);
//! * a process-shared condvar with a klock mutex: glibc's wait on a private
//!   glibc mutex of the waiter's frame, in bounded slices; see
//!   `c/condwait.c` for the gap this closes and the 10 ms bound.
//!
//! **The wait** is klock's three-step wait, wait morphing included (a
//! notify moves waiters to the mutex's wait list; a broadcast wakes one
//! thread, and the condvar may be destroyed right after it: woken waiters
//! never touch it again). Its sleep runs in C (`c/condwait.c`) so that
//! cancellation re-locks the mutex before the program's cleanup handlers
//! run; see that file. The exported wait functions are `extern "C-unwind"`
//! and hold nothing with a destructor, so a cancellation unwinding out of
//! the C sleep (after its cleanup has re-locked the mutex), or out of
//! glibc's own wait for a process-shared condvar, passes through them.
//!
//! Timed waits convert `abstime` to a CLOCK_MONOTONIC deadline once (core's
//! [`klock_c::core::time`]); a CLOCK_REALTIME step during the wait does not
//! move it.

use crate::lockdep;
use crate::mutex::{self, call_real};
use crate::real;
use crate::stats::{self, Family};
use crate::sys;
use klock::{SpinOff, SpinOsq, SpinPolicy};
use klock_c::core::cond::{KCond, Wait};
use klock_c::core::mutex::Kind;
use klock_c::core::time;
use libc::{
    CLOCK_REALTIME, EINVAL, ETIMEDOUT, c_int, c_void, clockid_t, pthread_cond_t,
    pthread_condattr_t, pthread_mutex_t, timespec,
};
use std::sync::atomic::{AtomicU32, Ordering};

const _: () = assert!(std::mem::size_of::<KCond<SpinOsq>>() <= sys::COND_WREFS_OFFSET);
const _: () = assert!(std::mem::size_of::<KCond<SpinOff>>() == std::mem::size_of::<KCond>());
const _: () = assert!(std::mem::align_of::<KCond<SpinOff>>() <= 8);

/// glibc's `__wrefs` word of `c`, with the bits its init writes.
///
/// # Safety
///
/// `c` points to a live `pthread_cond_t` (or `cnd_t`).
#[inline]
unsafe fn wrefs(c: *const pthread_cond_t) -> u32 {
    // SAFETY: offset 36 of a 48-byte, 8-aligned object: an aligned u32.
    let w = unsafe {
        &*c.cast::<u8>()
            .add(sys::COND_WREFS_OFFSET)
            .cast::<AtomicU32>()
    };
    // Relaxed: the bits read are written by init, before the condvar is
    // shared.
    w.load(Ordering::Relaxed)
}

/// Is `c` a process-shared condvar (glibc's)?
///
/// # Safety
///
/// `c` points to a live `pthread_cond_t` (or `cnd_t`).
#[inline]
pub(crate) unsafe fn is_glibc(c: *const pthread_cond_t) -> bool {
    // SAFETY: forwarded.
    let w = unsafe { wrefs(c) };
    w & sys::COND_WREFS_PSHARED != 0
}

/// The clock of a glibc condvar's `pthread_cond_timedwait`.
///
/// # Safety
///
/// As for [`is_glibc`].
unsafe fn glibc_clock(c: *const pthread_cond_t) -> clockid_t {
    // SAFETY: forwarded.
    let w = unsafe { wrefs(c) };
    if w & sys::COND_WREFS_MONOTONIC != 0 {
        libc::CLOCK_MONOTONIC
    } else {
        CLOCK_REALTIME
    }
}

/// Signals and broadcasts sent in this process on process-shared condvars,
/// counted per address (a few addresses share a counter): the lost-signal
/// check of a process-shared condvar's wait with a klock mutex (see
/// `c/condwait.c`, "A process-shared condvar (glibc's) with a klock mutex").
static GLIBC_COND_SIGNALS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];

/// The counter of `c` in [`GLIBC_COND_SIGNALS`].
fn signal_counter(c: *const c_void) -> &'static AtomicU32 {
    let a = c as usize;
    &GLIBC_COND_SIGNALS[((a >> 4) ^ (a >> 10)) % GLIBC_COND_SIGNALS.len()]
}

/// Count a signal or broadcast on the process-shared `c` (before passing
/// it to glibc).
fn count_glibc_signal(c: *mut pthread_cond_t) {
    // Release pairs with the Acquire load in `glibc_signals`. (What the
    // waiter relies on: a signaller that could be lost took the waiter's
    // mutex after the waiter's snapshot; the waiter reads again only after
    // a bounded wait, long after this increment.)
    signal_counter(c.cast()).fetch_add(1, Ordering::Release);
}

/// `kp_glibc_cond_ops.signals`: the count of `c`'s counter.
extern "C" fn glibc_signals(c: *const c_void) -> u32 {
    // Acquire pairs with the Release increment in `count_glibc_signal`.
    signal_counter(c).load(Ordering::Acquire)
}

/// `c` as a klock condvar.
///
/// # Safety
///
/// `c` points to a live `pthread_cond_t` that is not glibc's, valid for `'a`.
#[inline]
unsafe fn kc<'a, S: SpinPolicy>(c: *mut pthread_cond_t) -> &'a KCond<S> {
    // SAFETY: KCond (24 bytes, align 8, atomics only) fits the 48-byte,
    // 8-aligned object; shared by reference as klock's condvar is.
    unsafe { &*c.cast::<KCond<S>>() }
}

fn init_klock<S: SpinPolicy>(c: *mut pthread_cond_t, clock: clockid_t) -> c_int {
    let Ok(k) = KCond::<S>::with_clock(clock) else {
        return EINVAL;
    };
    // SAFETY: `c` is non-null (checked by the entry point) and, by
    // pthread_cond_init's contract, writable storage nobody else uses now.
    unsafe {
        std::ptr::write_bytes(c.cast::<u8>(), 0, std::mem::size_of::<pthread_cond_t>());
        std::ptr::write(c.cast::<KCond<S>>(), k);
    }
    0
}

/// Initialise `c` as a klock condvar on CLOCK_REALTIME (for `cnd_init`).
///
/// # Safety
///
/// `c` is non-null and points to writable storage for a condvar.
pub(crate) unsafe fn init_default(c: *mut pthread_cond_t) -> c_int {
    mutex::by_mutex_variant!(init_klock(c, CLOCK_REALTIME))
}

/// `pthread_cond_init`: a klock condvar on the attribute's clock, or
/// glibc's for a process-shared attribute.
///
/// # Safety
///
/// pthread's contract: `c` points to storage for a condvar, `attr` is null
/// or an initialised attribute object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    let mut clock = CLOCK_REALTIME;
    if !attr.is_null() {
        let mut pshared = 0;
        // SAFETY: non-null attribute from the program; locals as out-pointers.
        let bad = unsafe {
            sys::pthread_condattr_getclock(attr, &mut clock) != 0
                || sys::pthread_condattr_getpshared(attr, &mut pshared) != 0
        };
        if bad {
            return EINVAL;
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE {
            return call_real!(cond_init(c, attr), trivially_ok = false);
        }
    }
    mutex::by_mutex_variant!(init_klock(c, clock))
}

fn destroy<S: SpinPolicy>(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: checked non-null and klock's by the entry point.
    unsafe { kc::<S>(c) }.destroy()
}

fn signal<S: SpinPolicy>(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: as in `destroy`.
    unsafe { kc::<S>(c) }.signal()
}

fn broadcast<S: SpinPolicy>(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: as in `destroy`.
    unsafe { kc::<S>(c) }.broadcast()
}

/// `pthread_cond_destroy`: EBUSY while threads wait on it (a broadcast
/// leaves none: destroying right after one is fine).
///
/// # Safety
///
/// pthread's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null condvar from the program.
    if unsafe { is_glibc(c) } {
        return call_real!(cond_destroy(c), trivially_ok = false);
    }
    mutex::by_mutex_variant!(destroy(c))
}

/// `pthread_cond_signal`: wake one waiter (it runs once the mutex is
/// released to it).
///
/// # Safety
///
/// pthread's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null condvar from the program.
    if unsafe { is_glibc(c) } {
        count_glibc_signal(c);
        return call_real!(cond_signal(c), trivially_ok = false);
    }
    mutex::by_mutex_variant!(signal(c))
}

/// `pthread_cond_broadcast`: wake every waiter (moved to the mutex's wait
/// list, released one at a time by its unlocks: no herd).
///
/// # Safety
///
/// pthread's contract: `c` is null or points to a condvar.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null condvar from the program.
    if unsafe { is_glibc(c) } {
        count_glibc_signal(c);
        return call_real!(cond_broadcast(c), trivially_ok = false);
    }
    mutex::by_mutex_variant!(broadcast(c))
}

// ---------------------------------------------------------------------------
// The wait: Rust steps called from the C sleep (c/condwait.c)
// ---------------------------------------------------------------------------

/// The Rust steps the C sleep calls (`struct kp_wait_ops` in
/// `c/condwait.c`: same order and types).
#[repr(C)]
struct WaitOps {
    begin: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> c_int,
    sleep_word: unsafe extern "C" fn(*mut c_void, *const c_void, *mut u32) -> *const u32,
    end: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, c_int) -> c_int,
    now_ns: extern "C" fn() -> u64,
}

/// The C ticket storage (`kp_ticket`): 32 bytes, 8-aligned.
const TICKET_SIZE: usize = 32;
const _: () = assert!(std::mem::size_of::<Wait>() <= TICKET_SIZE);
const _: () = assert!(std::mem::align_of::<Wait>() <= 8);

unsafe extern "C-unwind" {
    /// `c/condwait.c`. Unwinds when the thread is cancelled (after its
    /// cleanup re-locked the mutex).
    fn klock_preload_cond_wait(
        ops: *const WaitOps,
        cond: *mut c_void,
        mutex: *mut c_void,
        timed: c_int,
        deadline_ns: u64,
    ) -> c_int;
}

/// Step 1: queue on the condvar and unlock the mutex; the ticket goes into
/// the C frame's storage. EPERM (caller does not hold the mutex), EINVAL
/// (destroyed mutex, or the condvar is in use with another mutex).
///
/// # Safety
///
/// `c` and `m` are a klock condvar and mutex (checked by the entry point),
/// `ticket` points to [`TICKET_SIZE`] writable bytes aligned to 8.
unsafe extern "C" fn wait_begin<S: SpinPolicy>(
    c: *mut c_void,
    m: *mut c_void,
    ticket: *mut c_void,
) -> c_int {
    // SAFETY: caller's contract.
    let (cv, mx) = unsafe { (kc::<S>(c.cast()), mutex::km::<S>(m.cast())) };
    // Core answers EINVAL when the condvar is in use with another mutex at
    // the same time (undefined in POSIX), before unlocking anything.
    match cv.begin(mx) {
        Ok(w) => {
            // SAFETY: caller's contract: room and alignment for a Wait
            // (asserted above), uninitialised before.
            unsafe { std::ptr::write(ticket.cast::<Wait>(), w) };
            if stats::enabled() {
                stats::released(m as usize, Family::Mutex);
            }
            if lockdep::on() {
                lockdep::wait_released(m as usize, lockdep::MUTEX);
            }
            0
        }
        Err(e) => e,
    }
}

/// Step 2: the futex word to sleep on (its expected value in `*value`), or
/// null once a notify has reached us.
///
/// # Safety
///
/// `ticket` holds the Wait written by [`wait_begin`] for this condvar.
unsafe extern "C" fn wait_sleep_word<S: SpinPolicy>(
    c: *mut c_void,
    ticket: *const c_void,
    value: *mut u32,
) -> *const u32 {
    // SAFETY: caller's contract.
    let (cv, w) = unsafe { (kc::<S>(c.cast()), &*ticket.cast::<Wait>()) };
    match cv.sleep_word(w) {
        Some((word, v)) => {
            // SAFETY: `value` points to the C caller's local.
            unsafe { *value = v };
            word.as_ptr().cast_const()
        }
        None => std::ptr::null(),
    }
}

/// Step 3: re-lock the mutex (0, or ETIMEDOUT if `give_up` took us off the
/// condvar before a notify). Also the cancellation handler's step.
///
/// # Safety
///
/// `ticket` holds the Wait written by [`wait_begin`] on this thread for
/// this condvar and mutex, not yet ended; only the futex sleep ran since.
unsafe extern "C" fn wait_end<S: SpinPolicy>(
    c: *mut c_void,
    m: *mut c_void,
    ticket: *mut c_void,
    give_up: c_int,
) -> c_int {
    // SAFETY: caller's contract; the C side ends each ticket once, so the
    // Wait is moved out exactly once.
    let (cv, mx, w) = unsafe {
        (
            kc::<S>(c.cast()),
            mutex::km::<S>(m.cast()),
            std::ptr::read(ticket.cast::<Wait>()),
        )
    };
    let retake = || {
        // SAFETY: the ticket's contract, as above.
        unsafe { cv.end(mx, w, give_up != 0) }
    };
    let r = if lockdep::on() {
        let recursive = mx.kind() == Ok(Kind::Recursive);
        lockdep::wait_retaken(m as usize, lockdep::MUTEX, recursive, retake)
    } else {
        retake()
    };
    if stats::enabled() {
        stats::acquired(m as usize, Family::Mutex, false, 0);
    }
    r
}

extern "C" fn now_ns() -> u64 {
    klock::internal::wait::now_ns()
}

/// Step 1 with a glibc-served mutex (robust, PI, PP, pshared): register on
/// the condvar, then unlock the mutex with the real
/// `pthread_mutex_unlock` (its error, e.g. EPERM for an errorcheck or
/// robust mutex the caller does not hold, is returned before sleeping,
/// with nothing changed).
///
/// # Safety
///
/// `c` is a klock condvar, `m` a glibc-served mutex, `ticket` as for
/// [`wait_begin`].
unsafe extern "C" fn foreign_begin<S: SpinPolicy>(
    c: *mut c_void,
    m: *mut c_void,
    ticket: *mut c_void,
) -> c_int {
    // SAFETY: caller's contract.
    let cv = unsafe { kc::<S>(c.cast()) };
    // Registered before the unlock: a signal sent by a thread that takes
    // the mutex after it finds us.
    let w = cv.begin_foreign();
    let m: *mut pthread_mutex_t = m.cast();
    let r = call_real!(mutex_unlock(m), trivially_ok = false);
    if r != 0 {
        let _ = cv.end_foreign(w, true);
        return r;
    }
    if lockdep::on() {
        lockdep::wait_released(m as usize, lockdep::Ident::Addr);
    }
    // SAFETY: as in `wait_begin`.
    unsafe { std::ptr::write(ticket.cast::<Wait>(), w) };
    0
}

/// Step 3 with a glibc-served mutex: leave the condvar, re-lock the mutex
/// with the real `pthread_mutex_lock` (a plain lock after a timeout too, as
/// glibc's wait does). The lock's error wins: EOWNERDEAD (the mutex is held;
/// its previous owner died) or ENOTRECOVERABLE; else 0 or ETIMEDOUT.
///
/// # Safety
///
/// As for [`wait_end`], the ticket from [`foreign_begin`].
unsafe extern "C" fn foreign_end<S: SpinPolicy>(
    c: *mut c_void,
    m: *mut c_void,
    ticket: *mut c_void,
    give_up: c_int,
) -> c_int {
    // SAFETY: caller's contract; each ticket is ended once.
    let (cv, w) = unsafe { (kc::<S>(c.cast()), std::ptr::read(ticket.cast::<Wait>())) };
    let timed_out = cv.end_foreign(w, give_up != 0);
    let m: *mut pthread_mutex_t = m.cast();
    let retake = || match call_real!(mutex_lock(m), trivially_ok = false) {
        0 => timed_out,
        e => e,
    };
    if lockdep::on() {
        // A glibc-served kind keeps its type in `__kind`'s low bits.
        // SAFETY: a live glibc-served mutex (the caller's contract).
        let recursive = unsafe { mutex::glibc_is_recursive(m) };
        return lockdep::wait_retaken(m as usize, lockdep::Ident::Addr, recursive, retake);
    }
    retake()
}

static OPS_FOREIGN_OSQ: WaitOps = WaitOps {
    begin: foreign_begin::<SpinOsq>,
    sleep_word: wait_sleep_word::<SpinOsq>,
    end: foreign_end::<SpinOsq>,
    now_ns,
};

static OPS_FOREIGN_NOSPIN: WaitOps = WaitOps {
    begin: foreign_begin::<SpinOff>,
    sleep_word: wait_sleep_word::<SpinOff>,
    end: foreign_end::<SpinOff>,
    now_ns,
};

// ---------------------------------------------------------------------------
// A process-shared (glibc) condvar with a klock mutex: c/condwait.c
// ---------------------------------------------------------------------------

type MutexFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;

/// What `klock_preload_cond_wait_glibc` calls (`struct kp_glibc_cond_ops`
/// in `c/condwait.c`: same order and types): the klock mutex's release and
/// re-lock, the signal count, the clock, and the real glibc functions.
#[repr(C)]
#[derive(Clone, Copy)]
struct GlibcCondOps {
    release: unsafe extern "C" fn(*mut c_void, *mut u32) -> c_int,
    reacquire: unsafe extern "C" fn(*mut c_void, u32),
    signals: extern "C" fn(*const c_void) -> u32,
    now_ns: extern "C" fn() -> u64,
    mutex_init:
        unsafe extern "C" fn(*mut pthread_mutex_t, *const libc::pthread_mutexattr_t) -> c_int,
    mutex_lock: MutexFn,
    mutex_unlock: MutexFn,
    mutex_destroy: MutexFn,
    cond_timedwait: unsafe extern "C-unwind" fn(
        *mut pthread_cond_t,
        *mut pthread_mutex_t,
        *const timespec,
    ) -> c_int,
    cond_clockwait: unsafe extern "C-unwind" fn(
        *mut pthread_cond_t,
        *mut pthread_mutex_t,
        clockid_t,
        *const timespec,
    ) -> c_int,
}

unsafe extern "C-unwind" {
    /// `c/condwait.c`. Unwinds when the thread is cancelled (after its
    /// cleanup re-locked the klock mutex).
    fn klock_preload_cond_wait_glibc(
        ops: *const GlibcCondOps,
        cond: *mut pthread_cond_t,
        mutex: *mut c_void,
        tkind: c_int,
        clock: clockid_t,
        abstime: *const timespec,
        deadline_ns: u64,
    ) -> c_int;
}

/// `kp_glibc_cond_ops.release`: release the klock mutex whole (EPERM if
/// the caller does not hold it, EINVAL if destroyed).
///
/// # Safety
///
/// `m` is a klock mutex (checked by the entry point), `depth` writable.
unsafe extern "C" fn klock_release<S: SpinPolicy>(m: *mut c_void, depth: *mut u32) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { mutex::km::<S>(m.cast()) }.unlock_for_wait() {
        Ok(d) => {
            // SAFETY: caller's contract.
            unsafe { *depth = d };
            if stats::enabled() {
                stats::released(m as usize, Family::Mutex);
            }
            if lockdep::on() {
                lockdep::wait_released(m as usize, lockdep::MUTEX);
            }
            0
        }
        Err(e) => e,
    }
}

/// `kp_glibc_cond_ops.reacquire`: re-lock the klock mutex, restore its
/// depth.
///
/// # Safety
///
/// `m` is the klock mutex `klock_release` released on this thread.
unsafe extern "C" fn klock_reacquire<S: SpinPolicy>(m: *mut c_void, depth: u32) {
    // SAFETY: caller's contract.
    let mx = unsafe { mutex::km::<S>(m.cast()) };
    if lockdep::on() {
        let recursive = mx.kind() == Ok(Kind::Recursive);
        let retake = || {
            mx.relock_after_wait(depth);
            0
        };
        let _ = lockdep::wait_retaken(m as usize, lockdep::MUTEX, recursive, retake);
    } else {
        mx.relock_after_wait(depth);
    }
    if stats::enabled() {
        stats::acquired(m as usize, Family::Mutex, false, 0);
    }
}

/// The ops for the configured mutex variant, or the errno value of a real
/// function that is missing. `extern "C"`: see [`plan`].
extern "C" fn glibc_cond_ops(route: c_int, out: *mut GlibcCondOps) -> c_int {
    let osq = route == ROUTE_GLIBC_COND_OSQ;
    let get = || -> Result<GlibcCondOps, real::Lookup> {
        Ok(GlibcCondOps {
            release: if osq {
                klock_release::<SpinOsq>
            } else {
                klock_release::<SpinOff>
            },
            reacquire: if osq {
                klock_reacquire::<SpinOsq>
            } else {
                klock_reacquire::<SpinOff>
            },
            signals: glibc_signals,
            now_ns,
            mutex_init: real::mutex_init()?,
            mutex_lock: real::mutex_lock()?,
            mutex_unlock: real::mutex_unlock()?,
            mutex_destroy: real::mutex_destroy()?,
            cond_timedwait: real::cond_timedwait()?,
            cond_clockwait: real::cond_clockwait()?,
        })
    };
    match get() {
        Ok(ops) => {
            // SAFETY: `out` points to the caller's local.
            unsafe { out.write(ops) };
            0
        }
        Err(why) => real::unavailable(why, false),
    }
}

static OPS_OSQ: WaitOps = WaitOps {
    begin: wait_begin::<SpinOsq>,
    sleep_word: wait_sleep_word::<SpinOsq>,
    end: wait_end::<SpinOsq>,
    now_ns,
};

static OPS_NOSPIN: WaitOps = WaitOps {
    begin: wait_begin::<SpinOff>,
    sleep_word: wait_sleep_word::<SpinOff>,
    end: wait_end::<SpinOff>,
    now_ns,
};

/// The timeout of a wait.
#[derive(Clone, Copy)]
pub(crate) enum Timeout {
    /// `pthread_cond_wait`.
    None,
    /// `pthread_cond_timedwait`: on the condvar's clock.
    CondClock(*const timespec),
    /// `pthread_cond_clockwait`: on the given clock.
    Clock(clockid_t, *const timespec),
}

/// Where a wait goes, decided by [`plan`].
#[repr(C)]
#[derive(Clone, Copy)]
struct Plan {
    /// One of the `ROUTE_*` values.
    route: c_int,
    /// `ROUTE_ERROR`: the errno value.
    err: c_int,
    /// Klock routes: 1 if `deadline` applies.
    timed: c_int,
    /// Klock routes: the deadline in klock time.
    deadline: u64,
    /// Statistics on: the wait's start time, else 0.
    t0: u64,
}

const ROUTE_OSQ: c_int = 0;
const ROUTE_NOSPIN: c_int = 1;
const ROUTE_GLIBC: c_int = 2;
const ROUTE_ERROR: c_int = 3;
/// A klock condvar with a glibc-served mutex.
const ROUTE_FOREIGN_OSQ: c_int = 4;
const ROUTE_FOREIGN_NOSPIN: c_int = 5;
/// A process-shared (glibc) condvar with a klock mutex.
const ROUTE_GLIBC_COND_OSQ: c_int = 6;
const ROUTE_GLIBC_COND_NOSPIN: c_int = 7;

/// Timeout kinds as plain integers for [`plan`].
const T_NONE: c_int = 0;
const T_COND_CLOCK: c_int = 1;
const T_CLOCK: c_int = 2;

/// Everything a wait decides before it sleeps: validation, routing,
/// deadline. `extern "C"`: the exported waits are `C-unwind` (cancellation
/// unwinds through them), so the Rust work they do lives in non-unwinding
/// functions, where a panic aborts instead of unwinding into C.
///
/// # Safety
///
/// pthread's contract for the wait functions (`c`, `m`, `abstime` null or
/// valid).
unsafe extern "C" fn plan(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    tkind: c_int,
    clock: clockid_t,
    abstime: *const timespec,
) -> Plan {
    let mut p = Plan {
        route: ROUTE_ERROR,
        err: EINVAL,
        timed: 0,
        deadline: 0,
        t0: 0,
    };
    if c.is_null() || m.is_null() {
        return p;
    }
    // SAFETY: non-null objects from the program.
    let (cg, mg) = unsafe { (is_glibc(c), mutex::is_glibc(m)) };
    if cg && mg {
        p.route = ROUTE_GLIBC;
        return p;
    }
    let osq = matches!(crate::config::get().mutex, crate::config::SleepVariant::Osq);
    // glibc's condvar cannot be given klock's mutex, nor klock's condvar
    // glibc's: the mixed pairs have routes of their own.
    let route = match (cg, mg, osq) {
        (false, false, true) => ROUTE_OSQ,
        (false, false, false) => ROUTE_NOSPIN,
        (false, true, true) => ROUTE_FOREIGN_OSQ,
        (false, true, false) => ROUTE_FOREIGN_NOSPIN,
        (true, _, true) => ROUTE_GLIBC_COND_OSQ,
        (true, _, false) => ROUTE_GLIBC_COND_NOSPIN,
    };
    let clock = match tkind {
        T_NONE => None,
        T_COND_CLOCK => Some(if cg {
            // SAFETY: a glibc condvar (checked above).
            unsafe { glibc_clock(c) }
        } else {
            // SAFETY: a klock condvar (checked above); the clock field is
            // the same for both variants.
            unsafe { kc::<SpinOsq>(c) }.clock()
        }),
        _ => Some(clock),
    };
    if let Some(clock) = clock {
        // SAFETY: `abstime` from the program, null or a timespec (checked
        // for null by core).
        match unsafe { time::deadline(clock, abstime) } {
            Ok(d) => {
                p.timed = 1;
                p.deadline = d;
            }
            Err(e) => {
                p.err = e;
                return p;
            }
        }
    }
    if stats::enabled() {
        p.t0 = klock::internal::wait::now_ns().max(1);
    }
    p.route = route;
    p
}

/// After a klock wait returned normally: the condvar statistics.
extern "C" fn finish(c: *mut pthread_cond_t, r: c_int, t0: u64) {
    if t0 != 0 {
        let waited = klock::internal::wait::now_ns().saturating_sub(t0);
        stats::acquired(c as usize, Family::Cond, r == ETIMEDOUT, waited);
    }
}

/// The common wait. Nothing with a destructor is live here and every Rust
/// step runs in an `extern "C"` helper: a cancellation may unwind through
/// this frame (out of the C sleep, after its cleanup re-locked the mutex,
/// or out of glibc's own wait).
///
/// # Safety
///
/// pthread's contract for the wait functions.
#[inline(always)]
pub(crate) unsafe fn wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, t: Timeout) -> c_int {
    let (tkind, clock, abstime) = match t {
        Timeout::None => (T_NONE, CLOCK_REALTIME, std::ptr::null()),
        Timeout::CondClock(a) => (T_COND_CLOCK, CLOCK_REALTIME, a),
        Timeout::Clock(k, a) => (T_CLOCK, k, a),
    };
    // SAFETY: forwarded contract.
    let p = unsafe { plan(c, m, tkind, clock, abstime) };
    let ops: &'static WaitOps = match p.route {
        ROUTE_OSQ => &OPS_OSQ,
        ROUTE_NOSPIN => &OPS_NOSPIN,
        ROUTE_FOREIGN_OSQ => &OPS_FOREIGN_OSQ,
        ROUTE_FOREIGN_NOSPIN => &OPS_FOREIGN_NOSPIN,
        ROUTE_GLIBC_COND_OSQ | ROUTE_GLIBC_COND_NOSPIN => {
            let mut gops = std::mem::MaybeUninit::<GlibcCondOps>::uninit();
            let e = glibc_cond_ops(p.route, gops.as_mut_ptr());
            if e != 0 {
                return e;
            }
            // SAFETY: glibc_cond_ops wrote it (returned 0); plan checked `m`
            // is a klock mutex of the configured variant (the ops') and `c`
            // glibc's, and validated the deadline; the C side re-locks the
            // mutex before a cancellation unwinds on.
            return unsafe {
                klock_preload_cond_wait_glibc(
                    gops.as_ptr(),
                    c,
                    m.cast(),
                    tkind,
                    clock,
                    abstime,
                    p.deadline,
                )
            };
        }
        ROUTE_GLIBC => {
            return match t {
                Timeout::None => call_real!(cond_wait(c, m), trivially_ok = false),
                Timeout::CondClock(a) => call_real!(cond_timedwait(c, m, a), trivially_ok = false),
                Timeout::Clock(k, a) => {
                    call_real!(cond_clockwait(c, m, k, a), trivially_ok = false)
                }
            };
        }
        _ => return p.err,
    };
    // SAFETY: `plan` checked both objects are klock's and chose `ops` for
    // their variant; the C side follows the begin/sleep_word/end protocol
    // (see c/condwait.c).
    let r = unsafe { klock_preload_cond_wait(ops, c.cast(), m.cast(), p.timed, p.deadline) };
    finish(c, r, p.t0);
    r
}

/// `pthread_cond_wait`: unlock `m`, wait for a signal, re-lock. EPERM if
/// the caller does not hold `m` (any kind: klock knows the holder).
/// A cancellation point: the mutex is re-locked before cleanup handlers run.
///
/// # Safety
///
/// pthread's contract: `c` and `m` are null or point to a condvar and a
/// mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { wait(c, m, Timeout::None) }
}

/// `pthread_cond_timedwait`: as wait, until `abstime` on the condvar's
/// clock (ETIMEDOUT, mutex re-locked; EINVAL for a bad `abstime`, before
/// anything is released).
///
/// # Safety
///
/// As for [`pthread_cond_wait`]; `abstime` is null or points to a timespec.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { wait(c, m, Timeout::CondClock(abstime)) }
}

/// `pthread_cond_clockwait`: as timedwait, on `clock` (CLOCK_REALTIME or
/// CLOCK_MONOTONIC; EINVAL for others).
///
/// # Safety
///
/// As for [`pthread_cond_timedwait`].
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { wait(c, m, Timeout::Clock(clock, abstime)) }
}

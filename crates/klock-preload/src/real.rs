//! The real glibc functions behind the interposed ones, for the objects
//! passed through (robust, PI, PP, process-shared) and for `_exit`.
//!
//! Each is resolved lazily, the first time any entry point needs it (other
//! libraries' constructors may call in before ours; our constructor also
//! resolves them all early), with `dlsym(RTLD_NEXT, ...)`, or `dlvsym` with
//! `GLIBC_2.3.2` for `pthread_cond_*` (the current condvar, not the 2.2.5
//! compatibility one). The address is cached in an atomic.
//!
//! **Reentrancy.** `dlsym` may allocate and take loader locks, and a
//! malloc or a loader hook may call back into a `pthread_mutex_*` function.
//! While a resolution is in progress on a thread (a thread-local flag), a
//! nested lookup on that thread answers [`Lookup::Busy`] without calling
//! `dlsym`, and the mutex entry points then succeed trivially (mutrace's
//! approach): nothing else runs on that thread until `dlsym` returns.

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// This thread is inside `dlsym`/`dlvsym` for us. Const-initialised, no
    /// destructor: access is a plain TLS load, never an allocation.
    static RESOLVING: Cell<bool> = const { Cell::new(false) };
}

/// `slot` value: looked up, not found.
const MISSING: usize = 1;

/// A lazily resolved real function.
#[derive(Debug)]
pub struct Real {
    /// 0 = not looked up, [`MISSING`], or the address.
    slot: AtomicUsize,
    name: &'static CStr,
    version: Option<&'static CStr>,
}

/// The answer of [`Real::get`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The function's address.
    Found(usize),
    /// This thread is resolving a symbol right now (a reentrant call).
    Busy,
    /// The symbol does not exist in the libraries after us.
    Missing,
}

impl Real {
    /// The real `name` (default version), or `name@version`.
    pub const fn new(name: &'static CStr, version: Option<&'static CStr>) -> Self {
        Real {
            slot: AtomicUsize::new(0),
            name,
            version,
        }
    }

    /// The function's address (resolving it on first use).
    #[inline]
    pub fn get(&self) -> Lookup {
        // Acquire pairs with the Release store in `resolve`. (The function's
        // code was mapped before dlsym returned; the pairing keeps the
        // reasoning simple.)
        match self.slot.load(Ordering::Acquire) {
            0 => self.resolve(),
            MISSING => Lookup::Missing,
            a => Lookup::Found(a),
        }
    }

    #[cold]
    fn resolve(&self) -> Lookup {
        let busy = RESOLVING.try_with(|r| r.replace(true)).unwrap_or(true);
        if busy {
            return Lookup::Busy;
        }
        // SAFETY: NUL-terminated names; RTLD_NEXT is valid from a shared
        // object. dlsym/dlvsym are thread-safe.
        let p = unsafe {
            match self.version {
                Some(v) => libc::dlvsym(libc::RTLD_NEXT, self.name.as_ptr(), v.as_ptr()),
                None => libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()),
            }
        };
        let _ = RESOLVING.try_with(|r| r.set(false));
        let a = if p.is_null() { MISSING } else { p as usize };
        // Release pairs with the Acquire load in `get`. Racing resolvers
        // store the same value.
        self.slot.store(a, Ordering::Release);
        if a == MISSING {
            Lookup::Missing
        } else {
            Lookup::Found(a)
        }
    }
}

/// Declares the real functions: `name: fn type = symbol[, version];` gives a
/// static `Real` and a typed getter `name() -> Result<fn, Lookup>`.
macro_rules! reals {
    ($($get:ident / $slot:ident : $ty:ty = $sym:literal $(, $ver:literal)?;)*) => {
        $(
            #[doc = concat!("The real `", $sym, "`.")]
            pub static $slot: Real = Real::new(cstr(concat!($sym, "\0")), reals!(@ver $($ver)?));

            #[doc = concat!("The real `", $sym, "`, or why not.")]
            #[inline]
            pub fn $get() -> Result<$ty, Lookup> {
                match $slot.get() {
                    // SAFETY: the address dlsym returned for this symbol,
                    // whose C prototype `$ty` transcribes.
                    Lookup::Found(a) => Ok(unsafe { std::mem::transmute::<usize, $ty>(a) }),
                    other => Err(other),
                }
            }
        )*

        /// Resolve every real function now (from the constructor).
        pub fn resolve_all() {
            $( let _ = $slot.get(); )*
        }
    };
    (@ver) => { None };
    (@ver $v:literal) => { Some(cstr(concat!($v, "\0"))) };
}

/// A NUL-terminated literal as a `CStr` (at compile time).
const fn cstr(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("symbol names are NUL-terminated literals"),
    }
}

use libc::{
    c_int, clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, pthread_mutexattr_t,
    pthread_rwlock_t, pthread_rwlockattr_t, timespec,
};

type MutexFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;
type MutexInitFn = unsafe extern "C" fn(*mut pthread_mutex_t, *const pthread_mutexattr_t) -> c_int;
type MutexTimedFn = unsafe extern "C" fn(*mut pthread_mutex_t, *const timespec) -> c_int;
type MutexClockFn = unsafe extern "C" fn(*mut pthread_mutex_t, clockid_t, *const timespec) -> c_int;
type PrioGetFn = unsafe extern "C" fn(*const pthread_mutex_t, *mut c_int) -> c_int;
type PrioSetFn = unsafe extern "C" fn(*mut pthread_mutex_t, c_int, *mut c_int) -> c_int;
type CondFn = unsafe extern "C" fn(*mut pthread_cond_t) -> c_int;
type CondInitFn = unsafe extern "C" fn(*mut pthread_cond_t, *const pthread_condattr_t) -> c_int;
/// Cancellation points: a cancellation unwinds out of them.
type CondWaitFn = unsafe extern "C-unwind" fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int;
type CondTimedFn = unsafe extern "C-unwind" fn(
    *mut pthread_cond_t,
    *mut pthread_mutex_t,
    *const timespec,
) -> c_int;
type CondClockFn = unsafe extern "C-unwind" fn(
    *mut pthread_cond_t,
    *mut pthread_mutex_t,
    clockid_t,
    *const timespec,
) -> c_int;
type RwFn = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;
type RwInitFn = unsafe extern "C" fn(*mut pthread_rwlock_t, *const pthread_rwlockattr_t) -> c_int;
type RwTimedFn = unsafe extern "C" fn(*mut pthread_rwlock_t, *const timespec) -> c_int;
type RwClockFn = unsafe extern "C" fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int;
type ExitFn = unsafe extern "C" fn(c_int) -> !;
type SetSchedParamFn =
    unsafe extern "C" fn(libc::pthread_t, c_int, *const libc::sched_param) -> c_int;
type SetSchedPrioFn = unsafe extern "C" fn(libc::pthread_t, c_int) -> c_int;
type SchedSetSchedulerFn =
    unsafe extern "C" fn(libc::pid_t, c_int, *const libc::sched_param) -> c_int;
type SchedSetParamFn = unsafe extern "C" fn(libc::pid_t, *const libc::sched_param) -> c_int;

reals! {
    mutex_init / MUTEX_INIT: MutexInitFn = "pthread_mutex_init";
    mutex_destroy / MUTEX_DESTROY: MutexFn = "pthread_mutex_destroy";
    mutex_lock / MUTEX_LOCK: MutexFn = "pthread_mutex_lock";
    mutex_trylock / MUTEX_TRYLOCK: MutexFn = "pthread_mutex_trylock";
    mutex_timedlock / MUTEX_TIMEDLOCK: MutexTimedFn = "pthread_mutex_timedlock";
    mutex_clocklock / MUTEX_CLOCKLOCK: MutexClockFn = "pthread_mutex_clocklock";
    mutex_unlock / MUTEX_UNLOCK: MutexFn = "pthread_mutex_unlock";
    mutex_consistent / MUTEX_CONSISTENT: MutexFn = "pthread_mutex_consistent";
    mutex_getprioceiling / MUTEX_GETPRIOCEILING: PrioGetFn = "pthread_mutex_getprioceiling";
    mutex_setprioceiling / MUTEX_SETPRIOCEILING: PrioSetFn = "pthread_mutex_setprioceiling";
    cond_init / COND_INIT: CondInitFn = "pthread_cond_init", "GLIBC_2.3.2";
    cond_destroy / COND_DESTROY: CondFn = "pthread_cond_destroy", "GLIBC_2.3.2";
    cond_signal / COND_SIGNAL: CondFn = "pthread_cond_signal", "GLIBC_2.3.2";
    cond_broadcast / COND_BROADCAST: CondFn = "pthread_cond_broadcast", "GLIBC_2.3.2";
    cond_wait / COND_WAIT: CondWaitFn = "pthread_cond_wait", "GLIBC_2.3.2";
    cond_timedwait / COND_TIMEDWAIT: CondTimedFn = "pthread_cond_timedwait", "GLIBC_2.3.2";
    cond_clockwait / COND_CLOCKWAIT: CondClockFn = "pthread_cond_clockwait";
    rwlock_init / RWLOCK_INIT: RwInitFn = "pthread_rwlock_init";
    rwlock_destroy / RWLOCK_DESTROY: RwFn = "pthread_rwlock_destroy";
    rwlock_rdlock / RWLOCK_RDLOCK: RwFn = "pthread_rwlock_rdlock";
    rwlock_tryrdlock / RWLOCK_TRYRDLOCK: RwFn = "pthread_rwlock_tryrdlock";
    rwlock_timedrdlock / RWLOCK_TIMEDRDLOCK: RwTimedFn = "pthread_rwlock_timedrdlock";
    rwlock_clockrdlock / RWLOCK_CLOCKRDLOCK: RwClockFn = "pthread_rwlock_clockrdlock";
    rwlock_wrlock / RWLOCK_WRLOCK: RwFn = "pthread_rwlock_wrlock";
    rwlock_trywrlock / RWLOCK_TRYWRLOCK: RwFn = "pthread_rwlock_trywrlock";
    rwlock_timedwrlock / RWLOCK_TIMEDWRLOCK: RwTimedFn = "pthread_rwlock_timedwrlock";
    rwlock_clockwrlock / RWLOCK_CLOCKWRLOCK: RwClockFn = "pthread_rwlock_clockwrlock";
    rwlock_unlock / RWLOCK_UNLOCK: RwFn = "pthread_rwlock_unlock";
    exit / EXIT: ExitFn = "_exit";
    exit_upper / EXIT_UPPER: ExitFn = "_Exit";
    setschedparam / SETSCHEDPARAM: SetSchedParamFn = "pthread_setschedparam";
    setschedprio / SETSCHEDPRIO: SetSchedPrioFn = "pthread_setschedprio";
    sched_setscheduler / SCHED_SETSCHEDULER: SchedSetSchedulerFn = "sched_setscheduler";
    sched_setparam / SCHED_SETPARAM: SchedSetParamFn = "sched_setparam";
}

/// The errno value for a real function that is not available: inside a
/// nested resolution (mutex calls succeed trivially there, see the module
/// docs) 0 if `trivially_ok`, else ENOSYS.
#[inline]
pub fn unavailable(why: Lookup, trivially_ok: bool) -> c_int {
    if why == Lookup::Busy && trivially_ok {
        0
    } else {
        libc::ENOSYS
    }
}

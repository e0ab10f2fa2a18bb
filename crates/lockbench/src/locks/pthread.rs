//! glibc competitors: `pthread`, `pthread_adaptive`, `pthread_spin`, `pthread_rw`,
//! `pthread_rw_wpref`.
//!
//! pthread objects must not move after initialisation, so each lives in a `Box` whose
//! address is fixed for the lock's life. Every call's return code is checked in debug
//! builds; a failure in release would show up as a mutual-exclusion violation.

use std::cell::UnsafeCell;

use super::entry::LockEntry;
use crate::adapter::BenchLock;

/// Registry lines for glibc's locks.
pub fn entries() -> Vec<LockEntry> {
    vec![
        LockEntry::mutex::<PthreadMutex<DEFAULT>>(
            "pthread",
            "glibc pthread_mutex_t, default (PTHREAD_MUTEX_NORMAL): futex, no spinning",
        ),
        LockEntry::mutex::<PthreadMutex<ADAPTIVE>>(
            "pthread_adaptive",
            "glibc pthread_mutex_t, PTHREAD_MUTEX_ADAPTIVE_NP: bounded spin, then futex",
        ),
        LockEntry::mutex::<PthreadSpin>(
            "pthread_spin",
            "glibc pthread_spinlock_t: pure spinning, never sleeps",
        ),
        LockEntry::rwlock::<PthreadRwLock<RW_DEFAULT>>(
            "pthread_rw",
            "glibc pthread_rwlock_t, default (PREFER_READER_NP)",
        ),
        LockEntry::rwlock::<PthreadRwLock<RW_PREFER_WRITER_NONRECURSIVE>>(
            "pthread_rw_wpref",
            "glibc pthread_rwlock_t, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP",
        ),
    ]
}

/// Mutex type value meaning "leave the attribute at its default".
const DEFAULT: i32 = -1;
/// glibc's `PTHREAD_MUTEX_ADAPTIVE_NP`.
const ADAPTIVE: i32 = 3;
/// Rwlock kind value meaning "leave the attribute at its default".
pub const RW_DEFAULT: i32 = -1;
/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
pub const RW_PREFER_WRITER_NONRECURSIVE: i32 = 2;

unsafe extern "C" {
    fn pthread_spin_init(lock: *mut libc::pthread_spinlock_t, pshared: libc::c_int) -> libc::c_int;
    fn pthread_spin_lock(lock: *mut libc::pthread_spinlock_t) -> libc::c_int;
    fn pthread_spin_unlock(lock: *mut libc::pthread_spinlock_t) -> libc::c_int;
    fn pthread_spin_destroy(lock: *mut libc::pthread_spinlock_t) -> libc::c_int;
}

/// A `pthread_mutex_t` of type `TYPE` (or the default attributes for `DEFAULT`).
pub struct PthreadMutex<const TYPE: i32>(Box<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: a pthread mutex is designed to be shared between threads; it is only accessed
// through the pthread API via a pointer that never changes (boxed).
unsafe impl<const TYPE: i32> Send for PthreadMutex<TYPE> {}
// SAFETY: as above.
unsafe impl<const TYPE: i32> Sync for PthreadMutex<TYPE> {}

impl<const TYPE: i32> BenchLock for PthreadMutex<TYPE> {
    type Ctx = ();
    fn new() -> Self {
        let m = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        // SAFETY: `m` is a valid, boxed (never moving) mutex object; the attr object is
        // initialised before use and destroyed after.
        unsafe {
            if TYPE == DEFAULT {
                let rc = libc::pthread_mutex_init(m.get(), std::ptr::null());
                assert_eq!(rc, 0, "pthread_mutex_init");
            } else {
                let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
                assert_eq!(libc::pthread_mutexattr_init(&mut attr), 0);
                assert_eq!(
                    libc::pthread_mutexattr_settype(&mut attr, TYPE),
                    0,
                    "settype"
                );
                assert_eq!(
                    libc::pthread_mutex_init(m.get(), &attr),
                    0,
                    "pthread_mutex_init"
                );
                libc::pthread_mutexattr_destroy(&mut attr);
            }
        }
        PthreadMutex(m)
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // SAFETY: the mutex was initialised in `new` and never moves; this thread
        // unlocks exactly the acquisition it made.
        unsafe {
            let rc = libc::pthread_mutex_lock(self.0.get());
            debug_assert_eq!(rc, 0);
            let r = f();
            let rc = libc::pthread_mutex_unlock(self.0.get());
            debug_assert_eq!(rc, 0);
            r
        }
    }
}

impl<const TYPE: i32> Drop for PthreadMutex<TYPE> {
    fn drop(&mut self) {
        // SAFETY: no thread holds a reference any more (we have `&mut self`).
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// A `pthread_spinlock_t` (process-private).
pub struct PthreadSpin(Box<UnsafeCell<libc::pthread_spinlock_t>>);

// SAFETY: a pthread spinlock is designed to be shared between threads; accessed only via
// the pthread API through a fixed (boxed) address.
unsafe impl Send for PthreadSpin {}
// SAFETY: as above.
unsafe impl Sync for PthreadSpin {}

impl BenchLock for PthreadSpin {
    type Ctx = ();
    fn new() -> Self {
        let s = Box::new(UnsafeCell::new(0));
        // SAFETY: `s` is a valid, boxed spinlock object.
        let rc = unsafe { pthread_spin_init(s.get(), libc::PTHREAD_PROCESS_PRIVATE) };
        assert_eq!(rc, 0, "pthread_spin_init");
        PthreadSpin(s)
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // SAFETY: initialised in `new`, never moves; we unlock our own acquisition.
        unsafe {
            pthread_spin_lock(self.0.get());
            let r = f();
            pthread_spin_unlock(self.0.get());
            r
        }
    }
}

impl Drop for PthreadSpin {
    fn drop(&mut self) {
        // SAFETY: exclusive access; nobody holds the lock.
        unsafe { pthread_spin_destroy(self.0.get()) };
    }
}

/// A `pthread_rwlock_t` of kind `KIND` (or default attributes for [`RW_DEFAULT`]).
pub struct PthreadRwLock<const KIND: i32>(Box<UnsafeCell<libc::pthread_rwlock_t>>);

// SAFETY: a pthread rwlock is designed to be shared between threads; accessed only via
// the pthread API through a fixed (boxed) address.
unsafe impl<const KIND: i32> Send for PthreadRwLock<KIND> {}
// SAFETY: as above.
unsafe impl<const KIND: i32> Sync for PthreadRwLock<KIND> {}

impl<const KIND: i32> BenchLock for PthreadRwLock<KIND> {
    type Ctx = ();
    fn new() -> Self {
        let l = Box::new(UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER));
        // SAFETY: valid boxed rwlock object; attr initialised before use, destroyed after.
        unsafe {
            if KIND == RW_DEFAULT {
                assert_eq!(libc::pthread_rwlock_init(l.get(), std::ptr::null()), 0);
            } else {
                let mut attr: libc::pthread_rwlockattr_t = std::mem::zeroed();
                assert_eq!(libc::pthread_rwlockattr_init(&mut attr), 0);
                assert_eq!(
                    libc::pthread_rwlockattr_setkind_np(&mut attr, KIND),
                    0,
                    "setkind_np"
                );
                assert_eq!(libc::pthread_rwlock_init(l.get(), &attr), 0);
                libc::pthread_rwlockattr_destroy(&mut attr);
            }
        }
        PthreadRwLock(l)
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // SAFETY: initialised, never moves; we unlock our own write acquisition.
        unsafe {
            let rc = libc::pthread_rwlock_wrlock(self.0.get());
            debug_assert_eq!(rc, 0);
            let r = f();
            libc::pthread_rwlock_unlock(self.0.get());
            r
        }
    }
    #[inline]
    fn with_read<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // SAFETY: initialised, never moves; we unlock our own read acquisition.
        unsafe {
            let rc = libc::pthread_rwlock_rdlock(self.0.get());
            debug_assert_eq!(rc, 0);
            let r = f();
            libc::pthread_rwlock_unlock(self.0.get());
            r
        }
    }
}

impl<const KIND: i32> Drop for PthreadRwLock<KIND> {
    fn drop(&mut self) {
        // SAFETY: exclusive access; nobody holds the lock.
        unsafe { libc::pthread_rwlock_destroy(self.0.get()) };
    }
}

//! [`KMutex`]: a klock mutex with pthread's kinds.
//!
//! # Layout (20 bytes, align 4; all zero = an unlocked normal mutex)
//!
//! ```text
//! offset  0  klock RawMutex (owner word, wait list, OSQ): 12 bytes
//! offset 12  depth: extra recursive acquisitions (written by the holder only)
//! offset 16  kind:  0 normal, 1 recursive, 2 error-checking, 3 adaptive (= normal),
//!                   -1 destroyed; glibc's `__kind` sits at the same offset, so the
//!                   interposer reads glibc's static initialisers and flags in place
//! ```
//!
//! # Kinds
//!
//! * **normal** (and adaptive): relocking by the holder deadlocks, as in
//!   glibc; any thread may unlock a locked mutex (glibc allows it; programs
//!   use mutexes as binary semaphores).
//! * **recursive**: the holder may relock; `depth` counts the extra levels
//!   (EAGAIN past `u32::MAX`); unlock by a non-holder is EPERM.
//! * **error-checking**: relock by the holder is EDEADLK; unlock by a
//!   non-holder (or of an unlocked mutex) is EPERM.
//!
//! ```
//! use klock_c::core::{how::How, mutex::{KMutex, Kind}, EBUSY, EDEADLK, EPERM};
//! let m: KMutex = KMutex::new(Kind::ErrorCheck);
//! assert_eq!(m.lock(How::Block), 0);
//! assert_eq!(m.lock(How::Block), EDEADLK);
//! assert_eq!(m.destroy(), EBUSY);
//! assert_eq!(m.unlock(), 0);
//! assert_eq!(m.unlock(), EPERM);
//! assert_eq!(m.destroy(), 0);
//! ```

use super::how::How;
use klock::internal::mutex::MutexTokenInternals as _;
use klock::internal::mutex::RawMutexInternals;
use klock::{MutexToken, RawMutex, SpinOsq, SpinPolicy, internal::mutex::current_id};
use libc::{EAGAIN, EBUSY, EINVAL, EPERM, c_int};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// A mutex kind (pthread's `PTHREAD_MUTEX_*`; glibc's `__kind` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    /// `PTHREAD_MUTEX_NORMAL` / `DEFAULT` (0; glibc's adaptive kind 3 reads as this).
    Normal = 0,
    /// `PTHREAD_MUTEX_RECURSIVE` (1).
    Recursive = 1,
    /// `PTHREAD_MUTEX_ERRORCHECK` (2).
    ErrorCheck = 2,
}

/// The kind value of a destroyed mutex (every operation: EINVAL).
pub const DESTROYED: i32 = -1;
/// glibc's adaptive kind, served as normal.
const ADAPTIVE: i32 = 3;

impl Kind {
    /// The kind for a `__kind`/`type` value, or `None` (destroyed, or flags
    /// klock does not serve: robust, priority-inheritance, priority-protect,
    /// process-shared).
    ///
    /// ```
    /// use klock_c::core::mutex::Kind;
    /// assert_eq!(Kind::from_raw(3), Some(Kind::Normal));
    /// assert_eq!(Kind::from_raw(0x20), None);
    /// ```
    pub fn from_raw(k: i32) -> Option<Kind> {
        match k {
            0 | ADAPTIVE => Some(Kind::Normal),
            1 => Some(Kind::Recursive),
            2 => Some(Kind::ErrorCheck),
            _ => None,
        }
    }
}

/// A klock mutex with a pthread kind (see the module docs for the layout).
#[repr(C)]
#[derive(Debug)]
pub struct KMutex<S: SpinPolicy = SpinOsq> {
    raw: RawMutex<S>,
    depth: AtomicU32,
    kind: AtomicI32,
}

const _: () = assert!(std::mem::size_of::<KMutex>() == 20);
const _: () = assert!(std::mem::align_of::<KMutex>() == 4);
const _: () = assert!(std::mem::offset_of!(KMutex, kind) == 16);

impl<S: SpinPolicy> KMutex<S> {
    /// An unlocked mutex of `kind`.
    pub const fn new(kind: Kind) -> Self {
        KMutex {
            raw: RawMutex::new(),
            depth: AtomicU32::new(0),
            kind: AtomicI32::new(kind as i32),
        }
    }

    /// The klock mutex inside (the condvar waits on it).
    pub fn raw(&self) -> &RawMutex<S> {
        &self.raw
    }

    /// The kind, or EINVAL (destroyed, or not a kind klock serves).
    pub fn kind(&self) -> Result<Kind, c_int> {
        // Relaxed: set by init before the mutex is shared (the program's own
        // publication orders it); destroy races only with misuse.
        Kind::from_raw(self.kind.load(Ordering::Relaxed)).ok_or(EINVAL)
    }

    /// Lock `how`, the whole call: the uncontended try ([`lock_fast`](Self::lock_fast)),
    /// then [`acquire`](Self::acquire). A try gets EBUSY if the mutex is
    /// held (a recursive holder relocks instead; an error-checking holder
    /// gets EBUSY, as in glibc).
    #[inline]
    pub fn lock(&self, how: How) -> c_int {
        self.lock_then(|| how)
    }

    /// [`lock`](Self::lock) with the `How` built only past the uncontended
    /// try (`how()`): the `klock_mutex_*` fast paths store no `How` (one
    /// built before the try is stored before it, even if never used).
    ///
    /// ```
    /// use klock_c::core::{how::How, mutex::{KMutex, Kind}, EBUSY};
    /// let m: KMutex = KMutex::new(Kind::Normal);
    /// assert_eq!(m.lock_then(|| How::Try), 0);
    /// assert_eq!(m.lock_then(|| How::Try), EBUSY);
    /// # assert_eq!(m.unlock(), 0);
    /// ```
    #[inline(always)]
    pub fn lock_then(&self, how: impl FnOnce() -> How) -> c_int {
        if self.lock_fast() {
            return 0;
        }
        self.acquire(how())
    }

    /// The uncontended lock of every kind: a mutex klock serves that is
    /// free with no flags is taken in one CAS, `(0,0) -> (me,0)` (a free
    /// mutex has depth 0, so the kinds do not differ here). `false` changes
    /// nothing: destroyed, not a klock kind (glibc's flags), or not free;
    /// the caller takes the full path. Reads nothing but the kind before
    /// deciding, so the interposer may call it on any `pthread_mutex_t`.
    ///
    /// ```
    /// use klock_c::core::mutex::{KMutex, Kind};
    /// let m: KMutex = KMutex::new(Kind::Recursive);
    /// assert!(m.lock_fast());
    /// assert!(!m.lock_fast()); // held: the full path relocks a recursive mutex
    /// assert!(m.unlock_fast());
    /// ```
    #[inline(always)]
    pub fn lock_fast(&self) -> bool {
        // Relaxed: as in `kind`.
        Kind::from_raw(self.kind.load(Ordering::Relaxed)).is_some()
            && self.raw.try_lock_uncontended().is_some()
    }

    /// The uncontended unlock of every kind: the caller holds the mutex at
    /// depth 0 with no flags set: `(me,0) -> (0,0)` in one CAS. `false`
    /// changes nothing (the caller takes the full [`unlock`](Self::unlock)).
    ///
    /// ```
    /// use klock_c::core::{how::How, mutex::{KMutex, Kind}};
    /// let m: KMutex = KMutex::new(Kind::Normal);
    /// assert!(!m.unlock_fast());
    /// assert_eq!(m.lock(How::Block), 0);
    /// assert!(m.unlock_fast());
    /// ```
    #[inline(always)]
    pub fn unlock_fast(&self) -> bool {
        // Relaxed: `kind` as in `kind`; `depth` is written by the holder
        // only, and the CAS below succeeds only for the holder.
        Kind::from_raw(self.kind.load(Ordering::Relaxed)).is_some()
            && self.depth.load(Ordering::Relaxed) == 0
            // SAFETY: pthread's contract: a holder's unlock releases its
            // acquisition; the CAS succeeds only for the holder.
            && unsafe { self.raw.try_unlock_uncontended() }
    }

    /// Acquire `how`, past the uncontended try (a caller that asked
    /// [`lock_fast`](Self::lock_fast) before, or, for a timed lock, none:
    /// klock's try comes first here anyway). Reads the kind once: a holder
    /// relocks a recursive mutex (EAGAIN past `u32::MAX` levels) and gets
    /// [`How::own_lock_error`] from an error-checking one; everyone else
    /// takes klock's mutex as `how` says ([`How::take`]: EBUSY, ETIMEDOUT,
    /// EINVAL for a bad time only when it would block, as glibc).
    #[inline(never)]
    pub fn acquire(&self, how: How) -> c_int {
        let kind = match self.kind() {
            Ok(k) => k,
            Err(e) => return e,
        };
        if kind != Kind::Normal && self.raw.holder() == current_id() {
            return if kind == Kind::Recursive {
                self.relock()
            } else {
                how.own_lock_error()
            };
        }
        match how.take(
            &self.raw,
            RawMutex::try_lock,
            RawMutex::lock,
            RawMutexInternals::lock_until_ns,
        ) {
            // The token is the holder's id, recorded in the word.
            Ok(_token) => 0,
            Err(e) => e,
        }
    }

    /// A recursive holder's relock.
    fn relock(&self) -> c_int {
        // Relaxed: only the holder touches `depth`.
        let d = self.depth.load(Ordering::Relaxed);
        if d == u32::MAX {
            return EAGAIN;
        }
        self.depth.store(d + 1, Ordering::Relaxed);
        0
    }

    /// Unlock: EPERM if the mutex is not locked, or (recursive,
    /// error-checking) not held by the caller.
    #[inline]
    pub fn unlock(&self) -> c_int {
        if self.unlock_fast() {
            return 0;
        }
        self.unlock_full()
    }

    #[inline(never)]
    fn unlock_full(&self) -> c_int {
        let kind = match self.kind() {
            Ok(k) => k,
            Err(e) => return e,
        };
        let holder = self.raw.holder();
        if holder == 0 || (kind != Kind::Normal && holder != current_id()) {
            return EPERM;
        }
        // Relaxed: only the holder touches `depth`.
        let d = self.depth.load(Ordering::Relaxed);
        if d > 0 {
            self.depth.store(d - 1, Ordering::Relaxed);
            return 0;
        }
        // SAFETY: the mutex is held (holder != 0); a normal mutex may be
        // released by any thread, the others only by the holder (checked).
        unsafe { self.raw.unlock_any() };
        0
    }

    /// Destroy: EBUSY while locked; afterwards every call is EINVAL until
    /// the mutex is initialised again.
    pub fn destroy(&self) -> c_int {
        if let Err(e) = self.kind() {
            return e;
        }
        if self.raw.is_locked() {
            return EBUSY;
        }
        // Relaxed: see `kind`.
        self.kind.store(DESTROYED, Ordering::Relaxed);
        0
    }

    /// For a condvar wait: check the caller holds the mutex (EPERM
    /// otherwise) and take its whole recursion depth out, leaving one
    /// acquisition for the condvar to release. Returns the token and the
    /// depth for [`KMutex::restore_after_wait`].
    pub(crate) fn take_for_wait(&self) -> Result<(MutexToken, u32), c_int> {
        self.kind()?;
        let me = current_id();
        if self.raw.holder() != me {
            return Err(EPERM);
        }
        // Relaxed: only the holder touches `depth`.
        let d = self.depth.swap(0, Ordering::Relaxed);
        // SAFETY: we hold the mutex under our id (checked above).
        Ok((unsafe { MutexToken::for_holder(me) }, d))
    }

    /// For a wait on a condvar that does not know klock's mutexes (the
    /// interposer's process-shared condvars, served by glibc): release the
    /// mutex whole, whatever its recursion depth; EPERM if the caller does
    /// not hold it, EINVAL if it is destroyed (nothing changes then).
    /// Returns the depth for [`relock_after_wait`](Self::relock_after_wait).
    ///
    /// ```
    /// use klock_c::core::{how::How, mutex::{KMutex, Kind}};
    /// let m: KMutex = KMutex::new(Kind::Recursive);
    /// assert_eq!(m.unlock_for_wait(), Err(libc::EPERM));
    /// assert_eq!((m.lock(How::Block), m.lock(How::Block)), (0, 0));
    /// let depth = m.unlock_for_wait().unwrap();
    /// assert!(!m.raw().is_locked());
    /// m.relock_after_wait(depth);
    /// assert_eq!((m.unlock(), m.unlock(), m.unlock()), (0, 0, libc::EPERM));
    /// ```
    pub fn unlock_for_wait(&self) -> Result<u32, c_int> {
        let (token, depth) = self.take_for_wait()?;
        // SAFETY: take_for_wait checked that we hold the mutex under `token`.
        unsafe { self.raw.unlock(token) };
        Ok(depth)
    }

    /// Re-lock after [`unlock_for_wait`](Self::unlock_for_wait) and put
    /// the recursion depth back.
    pub fn relock_after_wait(&self, depth: u32) {
        let token = self.raw.lock();
        self.restore_after_wait(token, depth);
    }

    /// After a condvar wait re-locked the mutex: put the depth back.
    pub(crate) fn restore_after_wait(&self, token: MutexToken, depth: u32) {
        // The mutex stays held under the token's id (the caller's).
        let _ = token;
        // Relaxed: only the holder touches `depth`.
        self.depth.store(depth, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::{ETIMEDOUT, timespec};

    #[test]
    fn recursive_counts_levels_and_rejects_strangers() {
        let m: KMutex = KMutex::new(Kind::Recursive);
        assert_eq!(m.lock(How::Block), 0);
        assert_eq!(m.lock(How::Block), 0);
        assert_eq!(m.lock(How::Try), 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(m.lock(How::Try), EBUSY);
                assert_eq!(m.unlock(), EPERM);
            });
        });
        assert_eq!(m.unlock(), 0);
        assert_eq!(m.unlock(), 0);
        assert!(m.raw().is_locked());
        assert_eq!(m.unlock(), 0);
        assert!(!m.raw().is_locked());
        assert_eq!(m.unlock(), EPERM);
    }

    #[test]
    fn normal_allows_non_owner_unlock() {
        let m: KMutex = KMutex::new(Kind::Normal);
        assert_eq!(m.lock(How::Block), 0);
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(m.unlock(), 0));
        });
        assert_eq!(m.lock(How::Try), 0);
        assert_eq!(m.unlock(), 0);
        assert_eq!(m.unlock(), EPERM);
    }

    #[test]
    fn timed_lock_validates_only_when_it_would_block() {
        let m: KMutex = KMutex::new(Kind::Normal);
        let bad = timespec {
            tv_sec: 0,
            tv_nsec: -1,
        };
        assert_eq!(
            m.acquire(unsafe { How::until(libc::CLOCK_REALTIME, &bad) }),
            0
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(
                    m.acquire(unsafe { How::until(libc::CLOCK_REALTIME, &bad) }),
                    EINVAL
                );
                let past = timespec {
                    tv_sec: 1,
                    tv_nsec: 0,
                };
                assert_eq!(
                    m.acquire(unsafe { How::until(libc::CLOCK_MONOTONIC, &past) }),
                    ETIMEDOUT
                );
            });
        });
        assert_eq!(m.unlock(), 0);
    }

    #[test]
    fn destroyed_and_foreign_kinds_are_einval() {
        let m: KMutex = KMutex::new(Kind::Normal);
        assert_eq!(m.destroy(), 0);
        assert_eq!(m.lock(How::Block), EINVAL);
        assert_eq!(m.unlock(), EINVAL);
        assert_eq!(m.destroy(), EINVAL);
        // SAFETY: a test poking the kind field as glibc's initialisers do.
        m.kind.store(0x20, Ordering::Relaxed);
        assert_eq!(m.lock(How::Try), EINVAL);
    }
}

//! Recursive reads for every klock raw rwlock: the [`RawRwLockRecursive`]
//! trait (the rwsem and the floor family implement it) and the
//! [`RwLockRecursiveExt`] methods it gives `lock_api::RwLock`.

use super::raw::RawRwLock;
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::spin_policy::SpinPolicy;
use crate::wait;

/// The recursive reads of a klock raw rwlock: a read admitted past waiting
/// writers (never past a write-holder), for a thread that may already hold
/// a read lock. Implemented by [`RawRwLock`] (the rwsem) and the floor
/// family (`klock::internal::rwlock::RawRwLockFloorOf`); used through
/// [`RwLockRecursiveExt`].
#[cfg(not(loom))]
pub trait RawRwLockRecursive: lock_api::RawRwLock<SharedGuard = lock_api::GuardSend> {
    /// Take a read lock past waiting writers, waiting only while a writer
    /// holds the lock.
    fn lock_shared_recursive(&self);
    /// [`lock_shared_recursive`](Self::lock_shared_recursive) without waiting.
    fn try_lock_shared_recursive(&self) -> bool;
    /// [`lock_shared_recursive`](Self::lock_shared_recursive) until
    /// `deadline_ns` ([`wait::now_ns`] time). `false`: it passed.
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool;
}

#[cfg(not(loom))]
impl<S: SpinPolicy> RawRwLockRecursive for RawRwLock<S> {
    // Lockdep: a recursive read passes waiting writers (it waits only for
    // a write-holder), and a relock by a reader adds no edge.
    fn lock_shared_recursive(&self) {
        let a = ldhook::addr(self);
        ldhook::wait(
            a,
            Mode::ReadPassing,
            true,
            || RawRwLock::lock_shared_recursive(self),
            |_| true,
        )
    }
    fn try_lock_shared_recursive(&self) -> bool {
        let got = RawRwLock::try_lock_shared_recursive(self);
        ldhook::tried(ldhook::addr(self), Mode::ReadPassing, true, got);
        got
    }
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        let (a, d) = (ldhook::addr(self), deadline_ns);
        ldhook::wait(
            a,
            Mode::ReadPassing,
            true,
            || RawRwLock::lock_shared_recursive_until_ns(self, d),
            |&ok| ok,
        )
    }
}

/// Recursive reads on a [`RwLock`](crate::RwLock) (or any `lock_api::RwLock` over
/// a [`RawRwLockRecursive`]): parking_lot's `read_recursive`, `try_read_recursive`,
/// `try_read_recursive_for` and `try_read_recursive_until`. lock_api 0.5
/// dropped its `RawRwLockRecursive` and `RawRwLockRecursiveTimed` traits
/// (parking_lot 0.13 offers a separate `RecursiveRwLock` type instead), so
/// klock provides the methods through this extension trait: code written
/// for the older parking_lot API compiles with `use
/// klock::RwLockRecursiveExt;`. A recursive read is admitted past
/// waiting writers and past an upgrade under way, whenever no writer holds
/// the lock.
///
/// ```
/// use klock::RwLockRecursiveExt;
/// let l = klock::RwLock::new(1);
/// let a = l.read();
/// let b = l.read_recursive();
/// assert_eq!(*a + *b, 2);
/// drop((a, b));
/// let w = l.write();
/// assert!(l.try_read_recursive().is_none());
/// assert!(l.try_read_recursive_for(std::time::Duration::from_millis(1)).is_none());
/// drop(w);
/// ```
#[cfg(not(loom))]
pub trait RwLockRecursiveExt<R: RawRwLockRecursive, T: ?Sized> {
    /// A read lock past waiting writers (blocks only while a writer holds
    /// it). See [`RawRwLockRecursive::lock_shared_recursive`].
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, R, T>;
    /// [`read_recursive`](Self::read_recursive) without waiting.
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
    /// [`read_recursive`](Self::read_recursive) for at most `timeout`.
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
    /// [`read_recursive`](Self::read_recursive) until `deadline`.
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
}

#[cfg(not(loom))]
impl<R: RawRwLockRecursive, T: ?Sized> RwLockRecursiveExt<R, T> for lock_api::RwLock<R, T> {
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, R, T> {
        // SAFETY: `raw` is only used to take a read lock, which no live
        // guard or reference conflicts with; the guard made below releases it.
        unsafe { self.raw() }.lock_shared_recursive();
        // SAFETY: we hold a read lock on this lock; the guard state is a
        // marker.
        unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) }
    }
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got = unsafe { self.raw() }.try_lock_shared_recursive();
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::deadline_after(timeout));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::instant_to_ns(deadline));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
}

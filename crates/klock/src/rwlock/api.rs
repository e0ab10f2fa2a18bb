//! `lock_api`: the `RawRwLock*` trait impls of [`RawRwLock`] (plain, fair,
//! downgrade, timed, upgradable with its fair, downgrade and timed
//! variants), each forwarding to the inherent methods, and
//! [`RwLockRecursiveExt`], the recursive reads lock_api 0.5 has no trait
//! for. The type aliases ([`RwLock`](super::RwLock), ...) are in `mod.rs`.

#[cfg(not(loom))]
use super::word::{READER_BIAS, WRITER};
#[cfg(not(loom))]
use super::{RawRwLock, SpinPolicy, WriteToken};
#[cfg(not(loom))]
use crate::sync::atomic::Ordering;
#[cfg(not(loom))]
use crate::wait;

#[cfg(not(loom))]
// SAFETY: a writer holds WRITER, set only by a CAS from a free count (or
// passed to it in the releasing CAS of a hand-off); readers hold a count
// added only while no WRITER is set (the fast path keeps its add only if
// the old value allowed it); Acquire on every acquisition, Release on every
// release.
unsafe impl<S: SpinPolicy> lock_api::RawRwLock for RawRwLock<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type SharedGuard = lock_api::GuardSend;
    type ExclusiveGuard = WriteToken;

    #[inline]
    fn lock_shared(&self) -> lock_api::GuardSend {
        RawRwLock::lock_shared(self);
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
        RawRwLock::try_lock_shared(self).then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_shared(self) }
    }
    #[inline]
    fn lock_exclusive(&self) -> WriteToken {
        RawRwLock::lock_exclusive(self)
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<WriteToken> {
        RawRwLock::try_lock_exclusive(self)
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, t: WriteToken) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_exclusive(self, t) }
    }
    fn is_locked(&self) -> bool {
        RawRwLock::is_locked(self)
    }
    fn is_locked_exclusive(&self) -> bool {
        RawRwLock::is_locked_exclusive(self)
    }
}

#[cfg(not(loom))]
// SAFETY: a fair unlock releases exactly like a plain one, except that a
// writer at the head is granted the lock in the releasing CAS.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockFair for RawRwLock<S> {
    unsafe fn unlock_shared_fair(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS, 0, true) }
    }
    unsafe fn unlock_exclusive_fair(&self, t: WriteToken) {
        let _ = t;
        // Relaxed: a hint, cleared before the release.
        self.owner.store(0, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { self.release_share(WRITER, 0, true) }
    }
}

#[cfg(not(loom))]
// SAFETY: see `RawRwLock::downgrade`: WRITER becomes one reader count in one RMW.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockDowngrade for RawRwLock<S> {
    unsafe fn downgrade(&self, t: WriteToken) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade(self, t) };
        lock_api::GuardSend::new()
    }
}

#[cfg(not(loom))]
// SAFETY: timed acquisitions return a guard only when the lock was taken.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockTimed for RawRwLock<S> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        self.lock_shared_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_shared_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_shared_until_ns(wait::instant_to_ns(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_for(&self, t: Self::Duration) -> Option<WriteToken> {
        self.lock_exclusive_until_ns(wait::deadline_after(t))
    }
    fn try_lock_exclusive_until(&self, t: Self::Instant) -> Option<WriteToken> {
        self.lock_exclusive_until_ns(wait::instant_to_ns(t))
    }
}

#[cfg(not(loom))]
// SAFETY: UPGRADE is held with one reader count and excludes writers and
// other upgraders; upgrade turns it into WRITER only when it is the last
// reader (one CAS).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgrade for RawRwLock<S> {
    type UpgradableGuard = lock_api::GuardSend;

    fn lock_upgradable(&self) -> lock_api::GuardSend {
        RawRwLock::lock_upgradable(self);
        lock_api::GuardSend::new()
    }
    fn try_lock_upgradable(&self) -> Option<lock_api::GuardSend> {
        RawRwLock::try_lock_upgradable(self).then(lock_api::GuardSend::new)
    }
    unsafe fn unlock_upgradable(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_upgradable(self) }
    }
    unsafe fn upgrade(&self, _: lock_api::GuardSend) -> WriteToken {
        // SAFETY: forwarded.
        unsafe { RawRwLock::upgrade(self) }
    }
    unsafe fn try_upgrade(
        &self,
        g: lock_api::GuardSend,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { RawRwLock::try_upgrade(self) }.ok_or(g)
    }
}

#[cfg(not(loom))]
// SAFETY: a fair upgradable unlock releases exactly like a plain one (one
// reader count and UPGRADE), except that a writer at the head is granted the
// lock in the releasing CAS; the bump holds the lock again on return (or
// aborts).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeFair for RawRwLock<S> {
    unsafe fn unlock_upgradable_fair(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_upgradable_fair(self) }
    }
    unsafe fn bump_upgradable(&self, _: &mut lock_api::GuardSend) {
        // SAFETY: forwarded; the guard state (a marker) stays valid.
        unsafe { RawRwLock::bump_upgradable(self) }
    }
}

#[cfg(not(loom))]
// SAFETY: both downgrades change the mode in one RMW on the count word that
// keeps a reader count throughout (no writer can get in between):
// `(n,U) -> (n,-)` and `(0,X) -> (1,U)`; the second releases (Release) the
// writer's critical section to later acquisitions.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeDowngrade for RawRwLock<S> {
    unsafe fn downgrade_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade_upgradable(self) };
        lock_api::GuardSend::new()
    }
    unsafe fn downgrade_to_upgradable(&self, t: WriteToken) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade_to_upgradable(self, t) };
        lock_api::GuardSend::new()
    }
}

#[cfg(not(loom))]
// SAFETY: a timed upgradable read returns a guard only when the lock was
// taken; a timed upgrade returns the write token only when it holds WRITER,
// and otherwise hands back the upgradable guard still held (the give-up
// keeps the reader count and UPGRADE).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeTimed for RawRwLock<S> {
    fn try_lock_upgradable_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        self.lock_upgradable_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_upgradable_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_upgradable_until_ns(wait::instant_to_ns(t))
            .then(lock_api::GuardSend::new)
    }
    unsafe fn try_upgrade_for(
        &self,
        g: lock_api::GuardSend,
        t: Self::Duration,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_until_ns(wait::deadline_after(t)) }.ok_or(g)
    }
    unsafe fn try_upgrade_until(
        &self,
        g: lock_api::GuardSend,
        t: Self::Instant,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_until_ns(wait::instant_to_ns(t)) }.ok_or(g)
    }
}

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
    fn lock_shared_recursive(&self) {
        RawRwLock::lock_shared_recursive(self)
    }
    fn try_lock_shared_recursive(&self) -> bool {
        RawRwLock::try_lock_shared_recursive(self)
    }
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        RawRwLock::lock_shared_recursive_until_ns(self, deadline_ns)
    }
}

/// Recursive reads on a [`RwLock`](super::RwLock) (or any `lock_api::RwLock` over
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

//! [`RwLock`]: lock_api 0.4's reader-writer lock over [`RawRwLock`], its
//! guards and `const_rwlock`.

use crate::raw_rwlock::RawRwLock;

/// A reader-writer lock (lock_api 0.4's `RwLock` over klock's rwsem,
/// [`RawRwLock`]): `read`, `write`, `upgradable_read`, `read_recursive`,
/// their `try_` and timed forms, downgrades and upgrades on the guards,
/// fair unlocks and bumps, mapped guards, and `*_arc` with the feature
/// `arc_lock`. No poisoning.
///
/// Differences from parking_lot: see [`RawRwLock`] (fairness, the fair
/// upgradable unlock, size: 20 bytes + `T` instead of 8 + `T`).
///
/// ```
/// use parking_lot::{RwLock, RwLockUpgradableReadGuard, RwLockWriteGuard};
/// let l = RwLock::new(1);
/// {
///     let r1 = l.read();
///     let r2 = l.read_recursive();
///     assert_eq!(*r1 + *r2, 2);
/// }
/// let u = l.upgradable_read();
/// let mut w = RwLockUpgradableReadGuard::upgrade(u);
/// *w = 3;
/// let r = RwLockWriteGuard::downgrade(w);
/// assert_eq!(*r, 3);
/// ```
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// Creates a new reader-writer lock in an unlocked state (a `const fn`).
///
/// ```
/// static L: parking_lot::RwLock<u32> = parking_lot::const_rwlock(5);
/// assert_eq!(*L.read(), 5);
/// ```
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::const_new(<RawRwLock as lock_api::RawRwLock>::INIT, val)
}

/// An RAII guard of a read lock on a [`RwLock`].
///
/// ```
/// let l = parking_lot::RwLock::new(1);
/// let g: parking_lot::RwLockReadGuard<'_, i32> = l.read();
/// assert_eq!(*g, 1);
/// ```
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;

/// An RAII guard of the write lock on a [`RwLock`].
///
/// ```
/// let l = parking_lot::RwLock::new(1);
/// let mut g: parking_lot::RwLockWriteGuard<'_, i32> = l.write();
/// *g = 2;
/// ```
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;

/// A read guard mapped to a part of the protected data.
///
/// ```
/// let l = parking_lot::RwLock::new((1, 2));
/// let g: parking_lot::MappedRwLockReadGuard<'_, i32> =
///     parking_lot::RwLockReadGuard::map(l.read(), |p| &p.1);
/// assert_eq!(*g, 2);
/// ```
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;

/// A write guard mapped to a part of the protected data.
///
/// ```
/// let l = parking_lot::RwLock::new((1, 2));
/// let mut g: parking_lot::MappedRwLockWriteGuard<'_, i32> =
///     parking_lot::RwLockWriteGuard::map(l.write(), |p| &mut p.0);
/// *g = 7;
/// drop(g);
/// assert_eq!(*l.read(), (7, 2));
/// ```
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;

/// An RAII guard of an upgradable read lock on a [`RwLock`]: shares the
/// lock with readers, excludes writers and other upgradable reads, and can
/// be upgraded to the write lock.
///
/// ```
/// let l = parking_lot::RwLock::new(1);
/// let u: parking_lot::RwLockUpgradableReadGuard<'_, i32> = l.upgradable_read();
/// assert!(l.try_read().is_some());
/// assert!(l.try_write().is_none());
/// drop(u);
/// ```
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;

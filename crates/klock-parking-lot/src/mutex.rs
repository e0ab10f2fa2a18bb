//! [`Mutex`] and [`FairMutex`]: lock_api 0.4's mutex over [`RawMutex`] and
//! [`RawFairMutex`], with their guards and `const` constructors.

use crate::raw_mutex::{RawFairMutex, RawMutex};

/// A mutual exclusion primitive (lock_api 0.4's `Mutex` over klock's mutex,
/// [`RawMutex`]). No poisoning; `const fn new`; `lock`, `try_lock`,
/// `try_lock_for`/`until`, `unlock_fair` and `bump` on the guard,
/// `map`/`try_map` to a [`MappedMutexGuard`], `force_unlock`, `data_ptr`,
/// `get_mut`, `into_inner`, and `lock_arc` with the feature `arc_lock`.
///
/// Differences from parking_lot: see [`RawMutex`] (fairness, spinning,
/// size: 16 bytes + `T` instead of 1 byte + `T`).
///
/// ```
/// use parking_lot::Mutex;
/// use std::time::Duration;
/// static M: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// M.lock().push(1);
/// let g = M.try_lock_for(Duration::from_millis(1)).unwrap();
/// assert_eq!(*g, [1]);
/// parking_lot::MutexGuard::unlock_fair(g);
/// ```
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;

/// Creates a new mutex in an unlocked state ready for use (a `const fn`).
///
/// ```
/// static M: parking_lot::Mutex<u32> = parking_lot::const_mutex(5);
/// assert_eq!(*M.lock(), 5);
/// ```
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(<RawMutex as lock_api::RawMutex>::INIT, val)
}

/// An RAII guard of a [`Mutex`]: the lock is released when it is dropped.
///
/// ```
/// let m = parking_lot::Mutex::new(1);
/// let mut g: parking_lot::MutexGuard<'_, i32> = m.lock();
/// *g += 1;
/// drop(g);
/// assert_eq!(*m.lock(), 2);
/// ```
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;

/// A [`MutexGuard`] mapped to a part of the protected data
/// (`MutexGuard::map`); it cannot be used with a [`Condvar`](crate::Condvar).
///
/// ```
/// let m = parking_lot::Mutex::new((1, 2));
/// let mut g: parking_lot::MappedMutexGuard<'_, i32> =
///     parking_lot::MutexGuard::map(m.lock(), |p| &mut p.1);
/// *g = 5;
/// drop(g);
/// assert_eq!(*m.lock(), (1, 5));
/// ```
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// A mutex whose every unlock is fair (lock_api 0.4's `Mutex` over
/// [`RawFairMutex`]): a waiter gets the lock before the releasing thread
/// can take it again.
///
/// ```
/// let m = parking_lot::FairMutex::new(0);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;

/// Creates a new fair mutex in an unlocked state ready for use (a `const fn`).
///
/// ```
/// static M: parking_lot::FairMutex<u32> = parking_lot::const_fair_mutex(5);
/// assert_eq!(*M.lock(), 5);
/// ```
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::const_new(<RawFairMutex as lock_api::RawMutex>::INIT, val)
}

/// An RAII guard of a [`FairMutex`].
///
/// ```
/// let m = parking_lot::FairMutex::new(1);
/// let g: parking_lot::FairMutexGuard<'_, i32> = m.lock();
/// assert_eq!(*g, 1);
/// ```
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;

/// A [`FairMutexGuard`] mapped to a part of the protected data.
///
/// ```
/// let m = parking_lot::FairMutex::new((1, 2));
/// let g: parking_lot::MappedFairMutexGuard<'_, i32> =
///     parking_lot::FairMutexGuard::map(m.lock(), |p| &mut p.0);
/// assert_eq!(*g, 1);
/// ```
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

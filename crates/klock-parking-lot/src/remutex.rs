//! [`ReentrantMutex`]: lock_api 0.4's reentrant mutex over [`RawMutex`] and
//! [`RawThreadId`].

use crate::raw_mutex::RawMutex;
use std::num::NonZeroUsize;

/// The current thread's id for [`ReentrantMutex`] (lock_api 0.4's
/// [`GetThreadId`](lock_api::GetThreadId)): the address of a thread-local,
/// unique among live threads and never 0.
///
/// Differences from parking_lot: none visible (parking_lot also uses the
/// address of a thread-local).
///
/// ```
/// use parking_lot::lock_api::GetThreadId;
/// let here = parking_lot::RawThreadId::INIT.nonzero_thread_id();
/// let there = std::thread::spawn(|| parking_lot::RawThreadId::INIT.nonzero_thread_id())
///     .join()
///     .unwrap();
/// assert_eq!(here, parking_lot::RawThreadId::INIT.nonzero_thread_id());
/// assert_ne!(here, there); // (both threads were alive: here still is)
/// ```
#[derive(Debug)]
pub struct RawThreadId;

// SAFETY: a thread-local's address differs between threads that are alive
// at the same time and stays the same for the life of a thread.
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        thread_local!(static MARK: u8 = const { 0 });
        MARK.with(|m| {
            NonZeroUsize::new(m as *const u8 as usize).expect("a reference is never null")
        })
    }
}

/// A mutex that the thread holding it may lock again (lock_api 0.4's
/// `ReentrantMutex` over [`RawMutex`] and [`RawThreadId`]); it gives shared
/// access (`&T`) only.
///
/// Differences from parking_lot: those of [`RawMutex`].
///
/// ```
/// let m = parking_lot::ReentrantMutex::new(std::cell::Cell::new(1));
/// let a = m.lock();
/// let b = m.lock(); // same thread: no deadlock
/// b.set(a.get() + 1);
/// drop((a, b));
/// assert_eq!(m.lock().get(), 2);
/// ```
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

/// Creates a new reentrant mutex in an unlocked state (a `const fn`).
///
/// ```
/// static M: parking_lot::ReentrantMutex<u32> = parking_lot::const_reentrant_mutex(5);
/// assert_eq!(*M.lock(), 5);
/// ```
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(
        <RawMutex as lock_api::RawMutex>::INIT,
        <RawThreadId as lock_api::GetThreadId>::INIT,
        val,
    )
}

/// An RAII guard of a [`ReentrantMutex`].
///
/// ```
/// let m = parking_lot::ReentrantMutex::new(3);
/// let g: parking_lot::ReentrantMutexGuard<'_, i32> = m.lock();
/// assert_eq!(*g, 3);
/// ```
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A [`ReentrantMutexGuard`] mapped to a part of the protected data.
///
/// ```
/// let m = parking_lot::ReentrantMutex::new((3, 4));
/// let g: parking_lot::MappedReentrantMutexGuard<'_, i32> =
///     parking_lot::ReentrantMutexGuard::map(m.lock(), |p| &p.1);
/// assert_eq!(*g, 4);
/// ```
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

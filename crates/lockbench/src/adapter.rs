//! The one adapter trait every competitor implements, [`BenchLock`], and the generic
//! adapters for `lock_api` locks ([`LockApiMutex`], [`LockApiRwLock`]), so any
//! `lock_api` lock registers without writing one.
//!
//! This module is a leaf: the runner ([`crate::runner`]) is generic over
//! [`BenchLock`], and the registry ([`crate::locks`]) instantiates the runner per type.

/// A lock as the benchmark sees it: a critical section run under exclusive (or shared)
/// ownership.
///
/// The closure style lets guard-based locks (`std::sync::Mutex`) and raw locks share one
/// trait. Everything is generic and `#[inline]`-able; the runner is monomorphized per type.
pub trait BenchLock: Send + Sync + 'static {
    /// Per-thread context handed to every acquisition (for example an MCS queue node).
    /// It lives on the worker thread's stack and never moves while borrowed. Use `()`
    /// when the lock needs none.
    type Ctx: Default;
    /// Creates an unlocked lock. The runner places it inside an `Arc` and never moves it
    /// afterwards (pthread objects are additionally boxed by their adapters).
    fn new() -> Self;
    /// Runs `f` while holding the lock exclusively.
    fn with_lock<R>(&self, ctx: &Self::Ctx, f: impl FnOnce() -> R) -> R;
    /// Runs `f` while holding the lock shared. Mutex-like locks keep the default
    /// (exclusive); reader/writer locks override it.
    #[inline]
    fn with_read<R>(&self, ctx: &Self::Ctx, f: impl FnOnce() -> R) -> R {
        self.with_lock(ctx, f)
    }
}

/// Generic adapter for any [`lock_api::RawMutex`] (parking_lot, klock, ...).
pub struct LockApiMutex<R: lock_api::RawMutex>(R);

impl<R> BenchLock for LockApiMutex<R>
where
    R: lock_api::RawMutex + Send + Sync + 'static,
{
    type Ctx = ();
    fn new() -> Self {
        LockApiMutex(R::INIT)
    }
    #[inline]
    fn with_lock<T>(&self, _: &(), f: impl FnOnce() -> T) -> T {
        let g = self.0.lock();
        let r = f();
        // SAFETY: `g` is the guard of the acquisition made just above on this thread.
        unsafe { self.0.unlock(g) };
        r
    }
}

/// Generic adapter for any [`lock_api::RawRwLock`]: writers take it exclusive,
/// readers shared.
pub struct LockApiRwLock<R: lock_api::RawRwLock>(R);

impl<R> BenchLock for LockApiRwLock<R>
where
    R: lock_api::RawRwLock + Send + Sync + 'static,
{
    type Ctx = ();
    fn new() -> Self {
        LockApiRwLock(R::INIT)
    }
    #[inline]
    fn with_lock<T>(&self, _: &(), f: impl FnOnce() -> T) -> T {
        let g = self.0.lock_exclusive();
        let r = f();
        // SAFETY: `g` is the exclusive guard acquired just above on this thread.
        unsafe { self.0.unlock_exclusive(g) };
        r
    }
    #[inline]
    fn with_read<T>(&self, _: &(), f: impl FnOnce() -> T) -> T {
        let g = self.0.lock_shared();
        let r = f();
        // SAFETY: `g` is the shared guard acquired just above on this thread.
        unsafe { self.0.unlock_shared(g) };
        r
    }
}

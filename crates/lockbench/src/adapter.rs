//! The one adapter trait every competitor implements, and the registry entry type.
//!
//! A competitor is a type implementing [`BenchLock`]. Registering it is one line that
//! builds a [`LockEntry`] with [`LockEntry::mutex`] or [`LockEntry::rwlock`]; those
//! constructors instantiate the generic runner for that type (`fn` pointers to
//! monomorphized code), so the hot loop never makes a `dyn` call per operation.
//!
//! Any `lock_api` lock registers without writing an adapter, through the generic
//! [`LockApiMutex`] and [`LockApiRwLock`]:
//!
//! ```
//! use lockbench::adapter::{LockApiMutex, LockApiRwLock, LockEntry};
//! let m = LockEntry::mutex::<LockApiMutex<parking_lot::RawMutex>>("pl_demo", "parking_lot::Mutex");
//! let rw = LockEntry::rwlock::<LockApiRwLock<parking_lot::RawRwLock>>("pl_rw_demo", "parking_lot::RwLock");
//! assert_eq!(m.name, "pl_demo");
//! assert_eq!(rw.kind, lockbench::adapter::LockKind::RwLock);
//! ```

use crate::runner::{self, RunOutput, RunSpec};

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

/// Whether a competitor is a mutex or a reader/writer lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// Exclusive lock only; usable in the `mutex` experiment.
    Mutex,
    /// Shared/exclusive lock; usable in both `rwlock` and `mutex` (writers only) experiments.
    RwLock,
}

impl LockKind {
    /// `"mutex"` or `"rwlock"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::RwLock => "rwlock",
        }
    }
}

/// One registered competitor: name, description, kind and monomorphized entry points.
#[derive(Clone, Copy, Debug)]
pub struct LockEntry {
    /// Name used on the command line and in reports (klock's start with `klock_`).
    pub name: &'static str,
    /// One-line description shown by `lockbench list`.
    pub desc: &'static str,
    /// Mutex or reader/writer lock.
    pub kind: LockKind,
    /// The contended runner instantiated for this lock type.
    pub run: fn(&RunSpec) -> RunOutput,
    /// Uncontended single-thread lock+unlock loop: `ops` iterations, returns ns/op;
    /// `true` takes the shared (read) side.
    pub uncontended: fn(u64, bool) -> f64,
}

impl LockEntry {
    /// Registers a mutex-like lock type.
    pub fn mutex<L: BenchLock>(name: &'static str, desc: &'static str) -> Self {
        LockEntry {
            name,
            desc,
            kind: LockKind::Mutex,
            run: runner::run::<L>,
            uncontended: runner::uncontended::<L>,
        }
    }
    /// Registers a reader/writer lock type (its `with_read` must be shared).
    pub fn rwlock<L: BenchLock>(name: &'static str, desc: &'static str) -> Self {
        LockEntry {
            kind: LockKind::RwLock,
            ..Self::mutex::<L>(name, desc)
        }
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

/// Generic adapter for a [`lock_api::RawMutexFair`] that always unlocks fairly
/// (hand-off to the next waiter), as `parking_lot::FairMutex` does.
pub struct LockApiFairMutex<R: lock_api::RawMutexFair>(R);

impl<R> BenchLock for LockApiFairMutex<R>
where
    R: lock_api::RawMutexFair + Send + Sync + 'static,
{
    type Ctx = ();
    fn new() -> Self {
        LockApiFairMutex(R::INIT)
    }
    #[inline]
    fn with_lock<T>(&self, _: &(), f: impl FnOnce() -> T) -> T {
        let g = self.0.lock();
        let r = f();
        // SAFETY: `g` is the guard of the acquisition made just above on this thread.
        unsafe { self.0.unlock_fair(g) };
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

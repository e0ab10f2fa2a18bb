//! The lock-order validation hooks of klock's Rust lock types (feature
//! `lockdep`; the engine is [`crate::lockdep`], docs/lockdep.md).
//!
//! The hooks sit in the `lock_api` trait impls of the public raw types
//! (`RawMutex`, `RawRwLock`, the floor rwlocks behind `RwLock`, the
//! spinlocks, `RawCondvar`'s waits) and in the recursive-read trait: the
//! calls a Rust program's `Mutex`, `RwLock`, `SpinLock` and `Condvar` make.
//! The inherent methods of the raw types (what the C library and the
//! interposer call, and the condvar's own relock) carry none, so the
//! interposer, which validates its pthread objects itself, is never
//! validated twice.
//!
//! A lock's identity is its raw type's address (`lock_at`); the raw types
//! call [`forget`] when dropped, so a lock made later at the same address is
//! a new lock. Without the feature every hook is empty ([`on`] is a
//! constant `false`); with it, each is one relaxed load while validation
//! is off (`KLOCK_LOCKDEP=0`).
//!
//! ```
//! use klock::internal::ldhook;
//! use klock::internal::lockdep::Mode;
//! let m = klock::RawMutex::<klock::SpinOsq>::new();
//! let addr = &m as *const _ as usize;
//! let t = ldhook::wait(addr, Mode::Write, false, || m.lock(), |_| true);
//! ldhook::release(addr);
//! unsafe { m.unlock(t) };
//! ```

use crate::lockdep::{self, Mode};

/// Validate this acquisition? `false` at compile time without the feature.
#[inline(always)]
pub fn on() -> bool {
    cfg!(feature = "lockdep") && lockdep::enabled()
}

/// A blocking or timed acquisition of the lock at `addr` in `mode`: `f`
/// acquires, `ok` says whether it did (a timed one may give up).
/// `recursive`: a relock by a holder is allowed (a recursive read).
#[inline(always)]
pub fn wait<T>(
    addr: usize,
    mode: Mode,
    recursive: bool,
    f: impl FnOnce() -> T,
    ok: impl FnOnce(&T) -> bool,
) -> T {
    if !on() {
        return f();
    }
    let l = lockdep::lock_at(addr);
    if let Some(l) = l {
        lockdep::before_wait(l, mode, recursive);
    }
    let t = f();
    if let Some(l) = l
        && ok(&t)
    {
        lockdep::taken(l, mode, recursive, false);
    }
    t
}

/// A try of the lock at `addr` in `mode` that returned `got` (it waited
/// for nothing: no edge, but the lock counts as held).
#[inline(always)]
pub fn tried(addr: usize, mode: Mode, recursive: bool, got: bool) {
    if got
        && on()
        && let Some(l) = lockdep::lock_at(addr)
    {
        lockdep::taken(l, mode, recursive, true);
    }
}

/// One hold of the lock at `addr` is about to be released (called before
/// the release, while the address still is this lock's).
#[inline(always)]
pub fn release(addr: usize) {
    if on()
        && let Some(l) = lockdep::lock_at_known(addr)
        && !lockdep::released(l)
    {
        // Released by a thread that did not take it (`force_unlock`): a new
        // identity, and the taker drops its stale entry.
        lockdep::forget(addr);
        lockdep::retire(l);
    }
}

/// A held lock changes mode without waiting (a downgrade to a read).
#[inline(always)]
pub fn changed(addr: usize, mode: Mode) {
    if on()
        && let Some(l) = lockdep::lock_at_known(addr)
    {
        let _ = lockdep::released(l);
        lockdep::taken(l, mode, false, true);
    }
}

/// The lock at `addr` ends (its raw type is dropped).
#[inline(always)]
pub fn forget(addr: usize) {
    if cfg!(feature = "lockdep") {
        lockdep::forget(addr);
    }
}

/// The address of a lock, its identity.
#[inline(always)]
pub fn addr<T>(lock: &T) -> usize {
    lock as *const T as usize
}

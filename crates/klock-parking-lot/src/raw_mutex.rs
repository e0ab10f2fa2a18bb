//! [`RawMutex`] and [`RawFairMutex`]: lock_api 0.4's raw mutex traits over
//! klock's mutex.
//!
//! lock_api 0.4 keeps no per-acquisition token; klock's mutex (lock_api 0.5)
//! hands one back from every acquisition and wants it at unlock. The token
//! is the owner id the acquisition wrote into the mutex word, so an unlock
//! rebuilds it from the word (`unlock_any`, `MutexToken::for_holder`): one
//! relaxed load of the word the unlock's CAS then uses. That also makes an
//! unlock by another thread (feature `send_guard`, `force_unlock`) correct.

use crate::deadlock::{self, Hold, Want};
use klock::mutex::{MutexToken, RawMutex as KMutex};
use lock_api05::RawMutexTimed as _;
use std::time::{Duration, Instant};

/// The raw mutex behind [`Mutex`](crate::Mutex): klock's mutex (12 bytes;
/// parking_lot's is 1 byte).
///
/// lock_api 0.4's [`RawMutex`](lock_api::RawMutex),
/// [`RawMutexFair`](lock_api::RawMutexFair) and
/// [`RawMutexTimed`](lock_api::RawMutexTimed) (with `std::time` durations
/// and instants, as in parking_lot).
///
/// # Differences from parking_lot
///
/// * **Fairness.** klock's mutex lets a running thread take a free lock
///   before a sleeping waiter (as parking_lot's does), with its own bounds:
///   the first waiter asks for a hand-off after `KLOCK_MUTEX_HANDOFF_NS`
///   (2 ms) of failed retries, and an unlock hands the lock to a first waiter
///   that has been first for `KLOCK_MUTEX_FAIR_HANDOFF_NS` (1 ms), asleep or
///   not. parking_lot instead forces a fair unlock about every 0.5 ms on
///   average (its "eventual fairness" timer). Both bound a waiter's wait;
///   the numbers differ.
/// * **Spinning.** klock spins on the owner while it runs (queued through
///   an MCS queue, as the kernel mutex) and sleeps when the owner does not
///   run; parking_lot spins a fixed number of times before it parks.
/// * `unlock_fair` hands the lock to the first waiter, as parking_lot's
///   does; `bump` is lock_api's default (a fair unlock, then a lock).
///
/// ```
/// use parking_lot::lock_api::{RawMutex as _, RawMutexFair as _, RawMutexTimed as _};
/// let m = parking_lot::RawMutex::INIT;
/// m.lock();
/// assert!(m.is_locked());
/// assert!(!m.try_lock());
/// assert!(!m.try_lock_for(std::time::Duration::from_millis(1)));
/// unsafe { m.unlock_fair() };
/// assert!(m.try_lock());
/// unsafe { m.unlock() };
/// ```
#[derive(Debug)]
pub struct RawMutex {
    pub(crate) inner: KMutex,
}

impl RawMutex {
    /// The deadlock detector's name for this lock: its address.
    #[inline]
    pub(crate) fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// The token of the current acquisition, rebuilt from the word.
    ///
    /// # Safety
    ///
    /// The mutex is held (by any thread; the token names the holder).
    #[inline]
    pub(crate) unsafe fn token(&self) -> MutexToken {
        // SAFETY: the mutex is held with the owner id `holder()` reads.
        unsafe { MutexToken::for_holder(self.inner.holder()) }
    }
}

// SAFETY: every method forwards to klock's mutex, which provides mutual
// exclusion (its lock_api 0.5 impl's contract): `lock`/`try_lock` return
// only once this thread owns the word, with Acquire; `unlock` releases
// with Release, given the token of the current holder.
unsafe impl lock_api::RawMutex for RawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawMutex = RawMutex {
        inner: KMutex::new(),
    };

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock(&self) {
        let t = deadlock::acquire(
            self.key(),
            Want::Exclusive,
            (None, Hold::Exclusive),
            || self.inner.try_lock(),
            || self.inner.lock(),
        );
        // lock_api 0.4 keeps no token: the unlock rebuilds it.
        let _ = t;
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let got = self.inner.try_lock().is_some();
        if got {
            deadlock::acquired(self.key(), None, Hold::Exclusive);
        }
        got
    }

    #[inline]
    unsafe fn unlock(&self) {
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the mutex (lock_api's contract); the
        // token is rebuilt from the word.
        unsafe { self.inner.unlock_any() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

// SAFETY: a fair unlock releases like `unlock`, handing ownership to the
// first waiter in the releasing CAS.
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the mutex; `token` names the holder.
        unsafe { self.inner.unlock_fair(self.token()) }
    }
}

// SAFETY: a timed acquisition returns true only when it holds the lock.
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        let got = self.inner.try_lock_for(timeout).is_some();
        if got {
            deadlock::acquired(self.key(), None, Hold::Exclusive);
        }
        got
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        let got = self.inner.try_lock_until(timeout).is_some();
        if got {
            deadlock::acquired(self.key(), None, Hold::Exclusive);
        }
        got
    }
}

/// The raw mutex behind [`FairMutex`](crate::FairMutex): [`RawMutex`] whose
/// every unlock is a fair unlock (the lock goes to the first waiter, if
/// any, in the releasing CAS).
///
/// # Differences from parking_lot
///
/// None beyond [`RawMutex`]'s: parking_lot's `RawFairMutex` is also its
/// raw mutex with every unlock fair. Newcomers may still take the lock
/// while no thread waits (a fair unlock with no waiter frees it).
///
/// ```
/// use parking_lot::lock_api::RawMutex as _;
/// let m = parking_lot::RawFairMutex::INIT;
/// m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock() };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawFairMutex(RawMutex);

// SAFETY: forwards to RawMutex; unlock is RawMutex's fair unlock.
unsafe impl lock_api::RawMutex for RawFairMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawFairMutex = RawFairMutex(<RawMutex as lock_api::RawMutex>::INIT);

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock(&self) {
        lock_api::RawMutex::lock(&self.0)
    }

    #[inline]
    fn try_lock(&self) -> bool {
        lock_api::RawMutex::try_lock(&self.0)
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: forwarded contract.
        unsafe { lock_api::RawMutexFair::unlock_fair(&self.0) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        lock_api::RawMutex::is_locked(&self.0)
    }
}

// SAFETY: forwarded to RawMutex.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: forwarded contract.
        unsafe { lock_api::RawMutexFair::unlock_fair(&self.0) }
    }
}

// SAFETY: forwarded to RawMutex.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        lock_api::RawMutexTimed::try_lock_for(&self.0, timeout)
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        lock_api::RawMutexTimed::try_lock_until(&self.0, timeout)
    }
}

//! [`RawMutex`] and [`RawFairMutex`]: lock_api 0.4's raw mutex traits over
//! klock's mutex.
//!
//! lock_api 0.4 keeps no per-acquisition token; klock's mutex (lock_api 0.5)
//! hands one back from every acquisition (the owner id it wrote into the
//! mutex word) and wants it at unlock. The holder therefore parks its token
//! in the raw mutex itself (`token`, 4 bytes, next to the word), written
//! after an acquisition and read by the release, which also makes a
//! release by another thread (feature `send_guard`, `force_unlock`)
//! correct: the token names the acquisition, not the releasing thread.

use crate::deadlock::{self, Hold, Want};
use crate::k::{MutexToken, RawMutex as KMutex, ldhook};
use klock::internal::lockdep::Mode;
use lock_api05::RawMutexTimed as _;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

/// The raw mutex behind [`Mutex`](crate::Mutex): klock's mutex (12 bytes)
/// and the holder's token (4 bytes); parking_lot's is 1 byte.
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
pub struct RawMutex {
    pub(crate) inner: KMutex,
    /// The current acquisition's token while the mutex is held; written
    /// after an acquisition, read before the release, only by the holder.
    token: UnsafeCell<MaybeUninit<MutexToken>>,
}

// SAFETY: `token` is accessed only by the holder of the mutex, between its
// acquisition (Acquire) and its release (Release), so the mutex itself
// orders the accesses; klock's mutex is Send + Sync.
unsafe impl Sync for RawMutex {}
// SAFETY: as above; a MutexToken is a plain id.
unsafe impl Send for RawMutex {}
// parking_lot's RawMutex (an atomic byte) is RefUnwindSafe; so is this one:
// a panic cannot leave the token cell half-written (a 4-byte store).
impl std::panic::RefUnwindSafe for RawMutex {}

impl std::fmt::Debug for RawMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMutex")
            .field("mutex", &self.inner)
            .finish()
    }
}

impl RawMutex {
    /// The deadlock detector's name for this lock: its address.
    #[inline]
    pub(crate) fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// Lockdep's name for this lock: klock's mutex's address (klock's
    /// `lockdep` hooks; its drop forgets it).
    #[inline]
    fn ld(&self) -> usize {
        ldhook::addr(&self.inner)
    }

    /// Park the token of an acquisition.
    ///
    /// # Safety
    ///
    /// The calling thread has just acquired the mutex (`t`).
    #[inline]
    pub(crate) unsafe fn park_token(&self, t: MutexToken) {
        // SAFETY: only the holder touches `token` (see the Sync impl).
        unsafe { (*self.token.get()).write(t) };
    }

    /// The parked token of the current acquisition. The cell keeps its
    /// bits (a token is a plain id), so a release that does not happen
    /// (a panic in between) leaves it valid.
    ///
    /// # Safety
    ///
    /// The mutex is held (so `park_token` ran for this acquisition) and the
    /// caller releases it with the token or parks a new one.
    #[inline]
    pub(crate) unsafe fn take_token(&self) -> MutexToken {
        // SAFETY: as for `park_token`; initialised by the acquisition.
        unsafe { (*self.token.get()).assume_init_read() }
    }

    /// An acquisition that did not block (`t`): park it, tell the detector.
    #[inline]
    fn got(&self, t: Option<MutexToken>) -> bool {
        match t {
            Some(t) => {
                // SAFETY: `t` is the acquisition we just made.
                unsafe { self.park_token(t) };
                deadlock::acquired(self.key(), None, Hold::Exclusive);
                true
            }
            None => false,
        }
    }
}

// SAFETY: every method forwards to klock's mutex, which provides mutual
// exclusion (its lock_api 0.5 impl's contract): `lock`/`try_lock` return
// only once this thread owns the word, with Acquire; `unlock` releases
// with Release, given the token parked by the current acquisition.
unsafe impl lock_api::RawMutex for RawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawMutex = RawMutex {
        inner: KMutex::new(),
        token: UnsafeCell::new(MaybeUninit::uninit()),
    };

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock(&self) {
        let t = ldhook::wait(
            self.ld(),
            Mode::Write,
            false,
            || {
                deadlock::acquire(
                    self.key(),
                    Want::Exclusive,
                    (None, Hold::Exclusive),
                    || self.inner.try_lock(),
                    || self.inner.lock(),
                )
            },
            |_| true,
        );
        // SAFETY: `t` is the acquisition we just made.
        unsafe { self.park_token(t) };
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let got = self.got(self.inner.try_lock());
        ldhook::tried(self.ld(), Mode::Write, false, got);
        got
    }

    #[inline]
    unsafe fn unlock(&self) {
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the mutex (lock_api's contract), whose
        // token is parked.
        unsafe { self.inner.unlock(self.take_token()) }
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
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the mutex, whose token is parked.
        unsafe { self.inner.unlock_fair(self.take_token()) }
    }
}

// SAFETY: a timed acquisition returns true only when it holds the lock.
// (Lockdep: klock's timed lock_api 0.5 methods carry the hooks.)
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.got(self.inner.try_lock_for(timeout))
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.got(self.inner.try_lock_until(timeout))
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

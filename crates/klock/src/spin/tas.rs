//! Test-and-test-and-set byte lock with bounded exponential backoff: the
//! kernel's `virt_spin_lock` analogue (the "unfair byte lock" of seed 001).
//!
//! # Word layout (one `AtomicU32`)
//!
//! ```text
//! 0  unlocked
//! 1  locked
//! 2  locked, and (PV policy only) a waiter may sleep on the word
//! ```
//!
//! # State diagram
//!
//! ```text
//! native:  0 --CAS--> 1 --store 0--> 0        waiters: wait (backoff) for 0, CAS again
//! PV:      0 --CAS--> 1 --swap 0--> 0
//!          after the spin budget: swap(2); if it was 0 we own it (as 2),
//!          else futex_wait(word, 2); unlock: swap(0) == 2 -> futex_wake(1)
//! ```
//!
//! Fully unfair: whoever runs when the word reads 0 wins; starvation is
//! possible. Ordering: Acquire CAS/swap pairs with the Release unlock.

use super::policy::WaitPolicy;
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{Backoff, SpinBudget, futex_wait, futex_wake, spin_until};
use std::marker::PhantomData;

/// Raw TTAS lock, generic over its [`WaitPolicy`] (only `SLEEP` matters).
///
/// ```
/// use klock::{RawTasLock, Native};
/// let l = RawTasLock::<Native>::new();
/// l.lock();
/// assert!(!l.try_lock());
/// unsafe { l.unlock() };
/// ```
#[repr(transparent)]
pub struct RawTasLock<P> {
    word: AtomicU32,
    _p: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for RawTasLock<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTasLock")
            .field("word", &self.word.load(Ordering::Relaxed))
            .finish()
    }
}

impl<P: WaitPolicy> Default for RawTasLock<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: WaitPolicy> RawTasLock<P> {
    /// An unlocked lock.
    ///
    /// ```
    /// const L: klock::RawTasLock<klock::Native> = klock::RawTasLock::new();
    /// # let _ = L;
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTasLock {
            word: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// An unlocked lock (loom: not `const`; under loom only).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTasLock {
            word: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// Acquire the lock.
    ///
    /// ```
    /// let l = klock::RawTasLock::<klock::Native>::new();
    /// l.lock();
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub fn lock(&self) {
        if !self.try_lock() {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        let budget = if P::SLEEP {
            SpinBudget::new(P::spin_ns())
        } else {
            SpinBudget::unbounded()
        };
        if ttas_spin::<P>(&self.word, budget, || self.try_lock()) {
            return;
        }
        // PV: sleep. Acquire swap pairs with the Release unlock.
        stat::inc(Event::TasSleep);
        while self.word.swap(2, Ordering::Acquire) != 0 {
            crate::chaos::point(crate::chaos::Site::BeforeSleep);
            futex_wait(&self.word, 2, None);
            // Spin a little after waking before sleeping again.
            let _ = spin_after_wake::<P>(&self.word);
        }
    }

    /// Acquire the lock if it is free.
    ///
    /// ```
    /// let l = klock::RawTasLock::<klock::Pv>::new();
    /// assert!(l.try_lock());
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire pairs with the Release unlock.
        self.word.load(Ordering::Relaxed) == 0
            && self
                .word
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Is the lock held?
    ///
    /// ```
    /// assert!(!klock::RawTasLock::<klock::Native>::new().is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }

    /// Release the lock.
    ///
    /// # Safety
    ///
    /// The lock must be held by the caller.
    ///
    /// ```
    /// let l = klock::RawTasLock::<klock::Native>::new();
    /// l.lock();
    /// // SAFETY: held.
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self) {
        if !P::SLEEP {
            // Release pairs with the acquirers' Acquire CAS.
            self.word.store(0, Ordering::Release);
            return;
        }
        // Release as above; the swap shows whether someone may sleep.
        if self.word.swap(0, Ordering::Release) == 2 {
            crate::chaos::point(crate::chaos::Site::AfterRelease);
            futex_wake(&self.word, 1);
        }
    }
}

/// The TTAS spin shared by the TAS locks ([`RawTasLock`],
/// [`RawTasSleepLock`](super::RawTasSleepLock)): test the word (a Relaxed
/// load) until it reads 0, then `try_lock`, with bounded exponential
/// backoff (`P::tas_backoff_ns`) between attempts, until `budget` runs
/// out. Returns whether `try_lock` took the lock.
pub(super) fn ttas_spin<P: WaitPolicy>(
    word: &AtomicU32,
    mut budget: SpinBudget,
    try_lock: impl Fn() -> bool,
) -> bool {
    let (min, max) = P::tas_backoff_ns();
    let mut backoff = Backoff::new(min, max);
    while !budget.expired() {
        // Relaxed: a hint; `try_lock`'s CAS is the Acquire.
        if backoff.wait_until(|| word.load(Ordering::Relaxed) == 0) && try_lock() {
            return true;
        }
    }
    false
}

/// A woken TAS waiter's short look at the word (the first backoff step):
/// `true` if it read 0 (free) within it.
pub(super) fn spin_after_wake<P: WaitPolicy>(word: &AtomicU32) -> bool {
    let (min, _) = P::tas_backoff_ns();
    // Relaxed: a hint; the caller's CAS or swap is the Acquire.
    spin_until(&mut SpinBudget::new(min), || {
        word.load(Ordering::Relaxed) == 0
    })
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion as documented on `lock`/`unlock`; stateless guard.
unsafe impl<P: WaitPolicy> lock_api::RawMutex for RawTasLock<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = lock_api::GuardSend;

    #[inline]
    fn lock(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawTasLock::lock(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<lock_api::GuardSend> {
        let got = RawTasLock::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract: held by the caller.
        unsafe { RawTasLock::unlock(self) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawTasLock::is_locked(self)
    }
}

/// Lockdep: the lock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<P> Drop for RawTasLock<P> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

//! The spinlock built up from its floor (issue 33): a test-and-test-and-set
//! lock whose unlock stays a plain release store (the floor,
//! [`RawTasLock<Native>`](super::RawTasLock)), plus bounded spinning and
//! then sleeping for overcommit. Waiters that sleep announce themselves
//! through [`crate::asym`] and pay a process-wide barrier. The unlocker
//! therefore needs no RMW and no fence to notice them (INV-ASYM-BARRIER).
//!
//! # Word layout (one `AtomicU32`, 4 bytes: fits `pthread_spinlock_t`)
//!
//! ```text
//! 0  unlocked
//! 1  locked
//! ```
//!
//! Sleepers are not in the word. They are counted in `asym`'s table,
//! hashed by the word's address.
//!
//! # State diagram
//!
//! ```text
//!  0 --try_lock: load 0, CAS 0 -> 1 (Acquire)--> 1
//!  1 --unlock: store 0 (Release); sleepers announced in the bucket? futex_wake(word, 1)--> 0
//!  waiter: TTAS with backoff for KLOCK_SPIN_NS (not for a real-time thread: INV-RT-NOSPIN),
//!          then { announce + barrier; try_lock; futex_wait(word, 1); leave the table } until it holds the lock
//! ```
//!
//! Unfair: whoever runs when the word reads 0 wins. A woken sleeper
//! competes with spinners and newcomers.
//!
//! ```
//! let l = klock::TasSleepLock::new(1u32);
//! *l.lock() += 1;
//! assert_eq!(*l.lock(), 2);
//! ```

use super::WaitPolicy;
use crate::asym;
use crate::chaos::{self, Site};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget};
use std::marker::PhantomData;

/// Unlocked.
const FREE: u32 = 0;
/// Locked.
const HELD: u32 = 1;

/// Raw TTAS lock with a plain-store unlock and announced sleepers (see the
/// module docs). `P` gives the spin budget (`spin_ns`) and the backoff.
///
/// ```
/// use klock::{RawTasSleepLock, Pv};
/// let l = RawTasSleepLock::<Pv>::new();
/// l.lock();
/// assert!(!l.try_lock());
/// unsafe { l.unlock() };
/// assert!(!l.is_locked());
/// ```
#[repr(transparent)]
pub struct RawTasSleepLock<P> {
    word: AtomicU32,
    _p: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for RawTasSleepLock<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTasSleepLock")
            .field("word", &self.word.load(Ordering::Relaxed))
            .finish()
    }
}

impl<P: WaitPolicy> Default for RawTasSleepLock<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: WaitPolicy> RawTasSleepLock<P> {
    /// An unlocked lock.
    ///
    /// ```
    /// const L: klock::RawTasSleepLock<klock::Pv> = klock::RawTasSleepLock::new();
    /// # let _ = L;
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTasSleepLock {
            word: AtomicU32::new(FREE),
            _p: PhantomData,
        }
    }

    /// An unlocked lock (loom: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTasSleepLock {
            word: AtomicU32::new(FREE),
            _p: PhantomData,
        }
    }

    /// Acquire the lock.
    #[inline]
    pub fn lock(&self) {
        if !self.try_lock() {
            self.lock_slow();
        }
    }

    /// `0 -> 1` if the word reads 0 (test, then test-and-set).
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Relaxed load: a hint. Acquire CAS pairs with the Release store
        // of `unlock` (asym::release_and_check).
        self.word.load(Ordering::Relaxed) == FREE
            && self
                .word
                .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Is the lock held? A snapshot.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != FREE
    }

    /// The slow path, three steps.
    #[cold]
    fn lock_slow(&self) {
        // 1. Spin: TTAS with backoff, bounded in time; a real-time thread
        //    does not spin (INV-RT-NOSPIN).
        if !wait::realtime() && self.spin() {
            return;
        }
        // 2. Sleep until the lock is ours. Each sleep is announced and
        //    paid for with the barrier (INV-ASYM-BARRIER); the waiter
        //    leaves the table as soon as it wakes, so unlocks wake only
        //    while someone may really sleep.
        stat::inc(Event::TasSleep);
        loop {
            let announced = asym::announce(&self.word);
            // 3. Re-check after the barrier, then sleep on HELD.
            if self.try_lock() {
                return;
            }
            chaos::point(Site::BeforeSleep);
            announced.sleep(&self.word, HELD);
            chaos::point(Site::AfterWake);
            // A little spin after waking: the word may be free again soon.
            if super::tas::spin_after_wake::<P>(&self.word) && self.try_lock() {
                return;
            }
        }
    }

    /// Step 1 of the slow path: the TAS locks' TTAS spin for the policy's
    /// budget; `true` if it took the lock.
    fn spin(&self) -> bool {
        super::tas::ttas_spin::<P>(&self.word, SpinBudget::new(P::spin_ns()), || {
            self.try_lock()
        })
    }

    /// Release the lock: a plain release store, then a wake only if a
    /// waiter of this bucket is announced (after the release, only the
    /// word's address is touched: INV-WAKE-ADDR).
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    #[inline]
    pub unsafe fn unlock(&self) {
        if asym::release_and_check(&self.word) {
            chaos::point(Site::AfterRelease);
            asym::wake_one(&self.word);
        }
    }
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion as documented on `lock`/`unlock`; stateless guard.
unsafe impl<P: WaitPolicy> lock_api::RawMutex for RawTasSleepLock<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = lock_api::GuardSend;

    #[inline]
    fn lock(&self) -> lock_api::GuardSend {
        RawTasSleepLock::lock(self);
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<lock_api::GuardSend> {
        RawTasSleepLock::try_lock(self).then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: lock_api::GuardSend) {
        // SAFETY: forwarded contract: held by the caller.
        unsafe { RawTasSleepLock::unlock(self) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawTasSleepLock::is_locked(self)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::spin::Pv;

    #[test]
    fn encoding_and_size() {
        assert_eq!(std::mem::size_of::<RawTasSleepLock<Pv>>(), 4);
        let l = RawTasSleepLock::<Pv>::new();
        assert_eq!(l.word.load(Ordering::Relaxed), FREE);
        assert!(l.try_lock());
        assert_eq!(l.word.load(Ordering::Relaxed), HELD);
        assert!(!l.try_lock());
        unsafe { l.unlock() };
        assert_eq!(l.word.load(Ordering::Relaxed), FREE);
    }

    #[test]
    fn a_sleeper_is_woken() {
        let l = std::sync::Arc::new(RawTasSleepLock::<Pv>::new());
        l.lock();
        let l2 = l.clone();
        let t = std::thread::spawn(move || {
            l2.lock();
            unsafe { l2.unlock() };
        });
        // Long enough for the waiter's 10 µs spin to end and it to sleep.
        std::thread::sleep(std::time::Duration::from_millis(20));
        unsafe { l.unlock() };
        t.join().unwrap();
        assert!(!l.is_locked());
    }
}

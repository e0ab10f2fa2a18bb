//! The spinlock built up from its floor (issue 33): a test-and-test-and-set
//! lock whose unlock stays a plain release store (the floor,
//! [`RawTasLock<Native>`](super::RawTasLock)), plus bounded spinning and
//! then sleeping for overcommit. Waiters that sleep announce themselves
//! through [`crate::asym`] and pay a process-wide barrier. The unlocker
//! therefore needs no RMW and no fence to notice them (INV-ASYM-BARRIER).
//!
//! The word's state machine is written here once; how waiters sleep and how
//! the unlocker finds them is the type parameter `S` ([`TasSleeper`]):
//!
//! | `S` | waiters | unlocker after the store | bound on bypass |
//! |---|---|---|---|
//! | [`Counted`] (design 1) | counted in `asym`'s table, sleep on the word | wakes the word if its bucket counts anyone | none |
//! | [`Parked`] (design 3) | nodes queued in `asym::lot`, sleep on their node | wakes the word's first waiter (one in flight), or grants it the word past `KLOCK_SPIN_HANDOFF_NS` | the hand-off bound |
//!
//! # Word layout (one `AtomicU32`, 4 bytes: fits `pthread_spinlock_t`)
//!
//! ```text
//! 0  unlocked
//! 1  locked
//! ```
//!
//! Sleepers are not in the word. They are counted in `asym`'s table
//! (`Counted`) or queued in `asym::lot` (`Parked`), hashed by the word's
//! address.
//!
//! # State diagram
//!
//! ```text
//!  0 --try_lock: load 0, CAS 0 -> 1 (Acquire)--> 1
//!  1 --unlock: store 0 (Release); a sleeper in the bucket? S::wake--> 0
//!  0 --S::wake (Parked, first waiter past the bound): CAS 0 -> 1 for it--> 1 (granted)
//!  waiter: TTAS with backoff for KLOCK_SPIN_NS (not for a real-time thread: INV-RT-NOSPIN),
//!          then S::wait: { announce/queue + barrier; try_lock; sleep } until it holds the lock
//! ```
//!
//! Unfair: whoever runs when the word reads 0 wins. A woken sleeper
//! competes with spinners and newcomers; `Parked` bounds how long.
//!
//! ```
//! let l = klock::TasSleepLock::new(1u32);
//! *l.lock() += 1;
//! assert_eq!(*l.lock(), 2);
//! ```

use super::policy::WaitPolicy;
use crate::asym::{self, lot};
use crate::chaos::{self, Site};
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget};
use std::marker::PhantomData;

/// How a [`RawTasSleepLock`]'s waiters sleep and how its unlocker finds
/// them. The word's transitions stay in the lock; the lock hands the
/// sleeper closures for them (`try_lock`, the woken waiter's look, and the
/// grant's `0 -> 1`).
pub trait TasSleeper: 'static {
    /// After the spin: wait until `try_lock` (or a grant) gives this thread
    /// the word. `after_wake` is a woken waiter's short look and attempt.
    fn wait(word: &AtomicU32, try_lock: impl Fn() -> bool, after_wake: impl Fn() -> bool);
    /// Release the word with a plain store and wake what needs waking;
    /// `take` is the word's `0 -> 1` CAS, for a grant.
    fn unlock(word: &AtomicU32, take: impl FnOnce() -> bool);
}

/// Design 1: sleepers counted in `asym`'s table, asleep on the word; the
/// unlocker wakes the word while its bucket counts anyone.
#[derive(Debug)]
pub struct Counted;

impl TasSleeper for Counted {
    fn wait(word: &AtomicU32, try_lock: impl Fn() -> bool, after_wake: impl Fn() -> bool) {
        loop {
            // Announce, pay the barrier (INV-ASYM-BARRIER), re-check, then
            // sleep on HELD; the waiter leaves the table as soon as it
            // wakes, so unlocks wake only while someone may really sleep.
            let announced = asym::announce(word);
            if try_lock() {
                return;
            }
            chaos::point(Site::BeforeSleep);
            announced.sleep(word, HELD);
            chaos::point(Site::AfterWake);
            if after_wake() {
                return;
            }
        }
    }

    #[inline]
    fn unlock(word: &AtomicU32, _take: impl FnOnce() -> bool) {
        if asym::release_and_check(word) {
            chaos::point(Site::AfterRelease);
            asym::wake_one(word);
        }
    }
}

/// `KLOCK_SPIN_HANDOFF_NS` in the lot's terms: `None` for 0 (never), else
/// whole µs (below 1 µs: every slow unlock grants).
#[inline]
fn handoff_us() -> Option<u32> {
    match crate::tune::get().spin_handoff_ns {
        0 => None,
        ns => Some((ns / 1000).min(u64::from(u32::MAX / 2)) as u32),
    }
}

/// Design 3: waiters queued in `asym::lot`, asleep on their node; the
/// unlocker wakes the word's first waiter (one wake in flight per word) or
/// grants it the word once it has waited `KLOCK_SPIN_HANDOFF_NS`.
#[derive(Debug)]
pub struct Parked;

impl TasSleeper for Parked {
    fn wait(word: &AtomicU32, try_lock: impl Fn() -> bool, after_wake: impl Fn() -> bool) {
        lot::wait(word, try_lock, after_wake);
    }

    #[inline]
    fn unlock(word: &AtomicU32, take: impl FnOnce() -> bool) {
        if lot::release_and_check(word) {
            chaos::point(Site::AfterRelease);
            lot::wake(word, handoff_us(), take);
        }
    }
}

/// Unlocked.
const FREE: u32 = 0;
/// Locked.
const HELD: u32 = 1;

/// Raw TTAS lock with a plain-store unlock and announced sleepers (see the
/// module docs). `P` gives the spin budget (`spin_ns`) and the backoff;
/// `S` how waiters sleep ([`Counted`] by default, [`Parked`]).
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
pub struct RawTasSleepLock<P, S = Counted> {
    word: AtomicU32,
    _p: PhantomData<fn() -> (P, S)>,
}

/// Design 3: [`RawTasSleepLock`] with parked waiters and a bound on bypass.
///
/// ```
/// use klock::{RawTasParkLock, Pv};
/// let l = RawTasParkLock::<Pv>::new();
/// l.lock();
/// assert!(!l.try_lock());
/// unsafe { l.unlock() };
/// assert!(!l.is_locked());
/// ```
pub type RawTasParkLock<P> = RawTasSleepLock<P, Parked>;

impl<P, S> std::fmt::Debug for RawTasSleepLock<P, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTasSleepLock")
            .field("word", &self.word.load(Ordering::Relaxed))
            .finish()
    }
}

impl<P: WaitPolicy, S: TasSleeper> Default for RawTasSleepLock<P, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: WaitPolicy, S: TasSleeper> RawTasSleepLock<P, S> {
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

    /// The slow path, two steps.
    #[cold]
    fn lock_slow(&self) {
        // 1. Spin: TTAS with backoff, bounded in time; a real-time thread
        //    does not spin (INV-RT-NOSPIN).
        if !wait::realtime() && self.spin() {
            return;
        }
        // 2. Sleep until the lock is ours, as `S` sleeps (each sleep paid
        //    for with the barrier: INV-ASYM-BARRIER). A woken waiter looks
        //    a little: the word may be free again soon.
        stat::inc(Event::TasSleep);
        S::wait(
            &self.word,
            || self.try_lock(),
            || super::tas::spin_after_wake::<P>(&self.word) && self.try_lock(),
        );
    }

    /// Step 1 of the slow path: the TAS locks' TTAS spin for the policy's
    /// budget; `true` if it took the lock.
    fn spin(&self) -> bool {
        super::tas::ttas_spin::<P>(&self.word, SpinBudget::new(P::spin_ns()), || {
            self.try_lock()
        })
    }

    /// Release the lock: a plain release store, then a wake only if a
    /// waiter of this bucket is announced or queued (INV-WAKE-ADDR: after
    /// the release only an address is woken; `Parked` edits its list under
    /// the list lock first).
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    #[inline]
    pub unsafe fn unlock(&self) {
        S::unlock(&self.word, || {
            // Acquire: the grant's CAS takes the word as any locker does
            // (pairs with the Release store of the previous unlock).
            self.word
                .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
    }
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion as documented on `lock`/`unlock`; stateless guard.
unsafe impl<P: WaitPolicy, S: TasSleeper> lock_api::RawMutex for RawTasSleepLock<P, S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = lock_api::GuardSend;

    #[inline]
    fn lock(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawTasSleepLock::lock(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<lock_api::GuardSend> {
        let got = RawTasSleepLock::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
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

/// Lockdep: the lock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<P, S> Drop for RawTasSleepLock<P, S> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

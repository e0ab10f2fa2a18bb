//! The kernel mutex's lock type, [`RawMutex`]: its three words, the fast
//! paths, the slow path's top level and its `lock_api` impls. The layout and
//! the state diagram are in the module docs (`mutex/mod.rs`); the waiter and
//! the waker sides are `sleep.rs` and `unlock.rs`, the spinning `spin.rs`.

use super::token::MutexToken;
use super::word::{
    claim, handed_to, is_free, locked_by, owed_to_waiter, owner_id, pick_up, unlock_list,
};
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::node;
use crate::osq::Osq;
use crate::spin_policy::{SpinOsq, SpinPolicy};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::tid::{ANON_ID, current_id};
use crate::wait;
use crate::waitlist::WaitList;
use std::marker::PhantomData;

/// The raw mutex (12 bytes: owner word, wait-list head, OSQ tail), generic over
/// its [`SpinPolicy`]. Use it through [`Mutex`](crate::Mutex) / [`MutexNoSpin`](crate::MutexNoSpin)
/// (`lock_api`), or directly with [`lock`](Self::lock) / [`unlock`](Self::unlock).
///
/// ```
/// use klock::RawMutex;
/// let m: RawMutex = RawMutex::new();
/// let t = m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock(t) };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawMutex<S: SpinPolicy = SpinOsq> {
    /// See the layout in the module docs.
    pub(super) owner: AtomicU32,
    /// FIFO of sleeping waiters, protected by WLOCK.
    pub(crate) list: WaitList,
    /// Spinners' queue.
    pub(super) osq: Osq,
    pub(super) _policy: PhantomData<S>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawMutex>() <= 16);
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawMutex>() == 12);

impl<S: SpinPolicy> Default for RawMutex<S> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn record_wait(t0: u64) {
    if stat::ENABLED {
        let ns = wait::now_ns().saturating_sub(t0);
        stat::add(Event::MutexWaitNs, ns);
        stat::inc(match ns {
            0..10_000 => Event::MutexWaitLt10us,
            10_000..100_000 => Event::MutexWaitLt100us,
            100_000..1_000_000 => Event::MutexWaitLt1ms,
            1_000_000..10_000_000 => Event::MutexWaitLt10ms,
            _ => Event::MutexWaitGe10ms,
        });
    }
}

impl<S: SpinPolicy> RawMutex<S> {
    /// An unlocked mutex (all zero).
    ///
    /// ```
    /// static M: klock::RawMutex = klock::RawMutex::new();
    /// assert!(!M.is_locked());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawMutex {
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked mutex (all zero).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawMutex {
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }

    /// The raw owner word (for tests and diagnostics).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// assert_eq!(klock::RawMutex::<klock::SpinOsq>::new().owner_word(), 0);
    /// ```
    #[inline]
    pub(crate) fn owner_word(&self) -> u32 {
        // Relaxed: a diagnostic snapshot.
        self.owner.load(Ordering::Relaxed)
    }

    /// Is the mutex held (or handed to a waiter)?
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot (lock_api's is_locked gives no ordering).
        !is_free(self.owner.load(Ordering::Relaxed))
    }

    /// Acquire: one CAS when free, else the slow path (spin, then sleep).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub fn lock(&self) -> MutexToken {
        let id = current_id();
        // Acquire pairs with the Release of the previous owner's unlock (fast
        // CAS, slow-path CAS or hand-off CAS).
        if self
            .owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            stat::inc(Event::MutexFastpath);
            return MutexToken::from_id(id);
        }
        let ok = self.lock_slow(id, None);
        debug_assert!(ok);
        MutexToken::from_id(id)
    }

    /// The uncontended acquisition alone: `(0,0) -> (me,0)` in one CAS, and
    /// nothing else (no flags may be set; the word is left unchanged on
    /// failure). For front ends that check their own conditions first and
    /// fall back to [`lock`](Self::lock) or [`try_lock`](Self::try_lock).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.try_lock_uncontended().unwrap();
    /// assert!(m.try_lock_uncontended().is_none());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline(always)]
    pub(crate) fn try_lock_uncontended(&self) -> Option<MutexToken> {
        let id = current_id();
        // Acquire pairs with the Release of the previous owner's unlock (as
        // in `lock`).
        self.owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(MutexToken::from_id(id))
    }

    /// The uncontended release alone: `(me,0) -> (0,0)` in one CAS when the
    /// calling thread holds the mutex and no flag is set; otherwise nothing
    /// changes and it returns `false` (the caller then takes its full unlock
    /// path, which wakes waiters or reports a non-holder).
    ///
    /// # Safety
    ///
    /// If the calling thread holds the mutex, the caller's protocol allows
    /// it to release it now (no guard or token of this acquisition is used
    /// afterwards).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// std::mem::forget(t);
    /// assert!(unsafe { m.try_unlock_uncontended() });
    /// assert!(!m.is_locked());
    /// assert!(!unsafe { m.try_unlock_uncontended() });
    /// ```
    #[inline(always)]
    pub(crate) unsafe fn try_unlock_uncontended(&self) -> bool {
        // Release pairs with the Acquire of the next owner's CAS (as in
        // `release`).
        self.owner
            .compare_exchange(
                locked_by(current_id()),
                0,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Acquire if free (also when only flags are set); never waits.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<MutexToken> {
        let id = current_id();
        self.try_acquire(id, false)
            .then_some(MutexToken::from_id(id))
    }

    /// Acquire, giving up at `deadline_ns` (a [`wait::now_ns`] time).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// let d = klock::internal::wait::now_ns() + 1_000_000;
    /// assert!(std::thread::scope(|s| s.spawn(|| m.lock_until_ns(d).is_none()).join().unwrap()));
    /// unsafe { m.unlock(t) };
    /// ```
    pub(crate) fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
        let id = current_id();
        if self
            .owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            stat::inc(Event::MutexFastpath);
            return Some(MutexToken::from_id(id));
        }
        self.lock_slow(id, Some(deadline_ns))
            .then_some(MutexToken::from_id(id))
    }

    /// Release.
    ///
    /// # Safety
    ///
    /// `token` must come from an acquisition of this mutex that has not been
    /// released yet.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self, token: MutexToken) {
        // SAFETY: forwarded.
        unsafe { self.release(token, false) }
    }

    /// The unlock fast path, `(me,-) -> (0,-)` in one CAS; any flag sends
    /// it to the slow path (`fair`: hand the lock to the first waiter).
    ///
    /// # Safety
    ///
    /// As for [`unlock`](Self::unlock).
    #[inline]
    pub(super) unsafe fn release(&self, token: MutexToken, fair: bool) {
        // Release pairs with the Acquire of the next owner's CAS.
        if self
            .owner
            .compare_exchange(
                locked_by(token.id()),
                0,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            self.unlock_slow(fair);
        }
    }

    /// Release and hand the lock to the first waiter, if any (fair unlock).
    ///
    /// # Safety
    ///
    /// As for [`unlock`](Self::unlock).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock_fair(t) };
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub unsafe fn unlock_fair(&self, token: MutexToken) {
        // SAFETY: forwarded.
        unsafe { self.release(token, true) }
    }

    /// The kernel's `trylock_common` without the handoff request: take the lock
    /// if the id field is 0 (keeping WAITERS/WLOCK), or, for a `waiter`, pick
    /// up a hand-off addressed to `id`.
    #[inline]
    pub(super) fn try_acquire(&self, id: u32, waiter: bool) -> bool {
        let mut o = self.owner.load(Ordering::Relaxed);
        loop {
            let new = if is_free(o) {
                if owed_to_waiter(o) {
                    return false;
                }
                claim(o, id)
            } else if waiter && handed_to(o, id) {
                pick_up(o)
            } else {
                return false;
            };
            // Acquire pairs with the Release of the unlock / hand-off CAS.
            match self
                .owner
                .compare_exchange_weak(o, new, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => o = x,
            }
        }
    }

    /// Slow path of lock; `deadline` in `now_ns` time. Returns whether the lock
    /// was acquired (always `true` without a deadline).
    #[cold]
    pub(super) fn lock_slow(&self, id: u32, deadline: Option<u64>) -> bool {
        stat::inc(Event::MutexSlowpath);
        let t0 = if stat::ENABLED { wait::now_ns() } else { 0 };
        let ok = self.try_acquire(id, false)
            || self.spin_phase(id)
            || node::with_node(|q| match q {
                Some(q) if id != ANON_ID => self.wait_queued(q, id, deadline, false),
                _ => self.wait_unqueued(id, deadline),
            });
        if ok {
            record_wait(t0);
        } else {
            stat::inc(Event::MutexTimeout);
        }
        ok
    }

    /// Release WLOCK, setting `set` and clearing `clear` in the same RMW
    /// ([`unlock_list`]: `(x,f|L) -> (x,(f|set)&!clear)`); used by the waiters
    /// (`sleep`) and the condvar requeue (`unlock`).
    /// Release pairs with the Acquire of the next `lock_bit(WLOCK)`.
    #[inline]
    pub(super) fn wunlock(&self, set: u32, clear: u32) -> u32 {
        let mut o = self.owner.load(Ordering::Relaxed);
        loop {
            let new = unlock_list(o, set, clear);
            match self
                .owner
                .compare_exchange_weak(o, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return o,
                Err(x) => o = x,
            }
        }
    }

    /// The id of the thread holding the mutex (0 if free; the recipient of a
    /// pending hand-off while PICKUP is set). Error-checking and recursive
    /// mutexes in the C layer compare it with [`current_id`].
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// assert_eq!(m.holder(), 0);
    /// let t = m.lock();
    /// assert_eq!(m.holder(), klock::internal::mutex::current_id());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub(crate) fn holder(&self) -> u32 {
        // Relaxed: the caller either is the holder (its own store) or only
        // compares with its own id, which no other thread can store.
        owner_id(self.owner.load(Ordering::Relaxed))
    }

    /// Release the mutex on behalf of whichever thread holds it: glibc's
    /// default mutex lets a non-owner unlock (programs use it as a binary
    /// semaphore), and the C layer's normal kind keeps that.
    ///
    /// # Safety
    ///
    /// The mutex is held, and the caller's protocol guarantees that no other
    /// thread releases this acquisition.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// std::mem::forget(t);
    /// std::thread::scope(|s| { s.spawn(|| unsafe { m.unlock_any() }); });
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub(crate) unsafe fn unlock_any(&self) {
        // SAFETY: forwarded; the token names the holder recorded in the word.
        unsafe { self.unlock(MutexToken::from_id(self.holder())) }
    }
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion: the id field is set only by a CAS from id 0 (or a
// PICKUP addressed to one waiter) and cleared only by the owner's unlock;
// Acquire on every successful acquisition, Release on every release.
// The lockdep hooks (`crate::ldhook`) only record; they do not touch the word.
unsafe impl<S: SpinPolicy> lock_api::RawMutex for RawMutex<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = MutexToken;

    #[inline]
    fn lock(&self) -> MutexToken {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawMutex::lock(self),
            |_| true,
        )
    }

    #[inline]
    fn try_lock(&self) -> Option<MutexToken> {
        let t = RawMutex::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, t.is_some());
        t
    }

    #[inline]
    unsafe fn unlock(&self, guard: MutexToken) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract: `guard` is this mutex's live acquisition.
        unsafe { RawMutex::unlock(self, guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawMutex::is_locked(self)
    }
}

#[cfg(not(loom))]
// SAFETY: unlock_fair releases like unlock, handing ownership to the first waiter.
unsafe impl<S: SpinPolicy> lock_api::RawMutexFair for RawMutex<S> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: MutexToken) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract.
        unsafe { RawMutex::unlock_fair(self, guard) }
    }
}

#[cfg(not(loom))]
// SAFETY: timed acquisition returns a guard only when the lock was acquired.
unsafe impl<S: SpinPolicy> lock_api::RawMutexTimed for RawMutex<S> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_for(&self, timeout: std::time::Duration) -> Option<MutexToken> {
        let d = wait::now_ns().saturating_add(timeout.as_nanos().min(u64::MAX as u128) as u64);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_until_ns(d),
            Option::is_some,
        )
    }

    fn try_lock_until(&self, timeout: std::time::Instant) -> Option<MutexToken> {
        let d = wait::instant_to_ns(timeout);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_until_ns(d),
            Option::is_some,
        )
    }
}

/// Lockdep: the mutex at this address ends; a mutex made here later is a
/// new lock. (Only with the feature: a type with `Drop` cannot be taken
/// apart by value, which nothing does, and `const INIT` is unaffected.)
#[cfg(feature = "lockdep")]
impl<S: SpinPolicy> Drop for RawMutex<S> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

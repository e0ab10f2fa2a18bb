//! Ticket lock, native and PV (the pvticketlock analogue).
//!
//! # Word layout (two `AtomicU32`, 8 bytes, all zero = unlocked)
//!
//! ```text
//! next:     31..0  tickets handed out (fetch_add); ticket = next mod 2^16
//! serving:  31..16 sleepers (PV: waiters registered to sleep)
//!           15..0  ticket now served (owner's ticket)
//! ```
//!
//! # States
//!
//! ```text
//! unlocked:  next%2^16 == serving%2^16
//! lock:      t = next++        ; wait until serving%2^16 == t
//! unlock:    serving%2^16 += 1 (wrapping within the low half, never carrying
//!            into the sleeper count)
//! PV sleep:  serving += 1<<16 ; while serving%2^16 != t: futex_wait_bitset(serving, v, bit(t))
//!            serving -= 1<<16
//! PV unlock: old = RMW(serving); if old>>16 != 0: futex_wake_bitset(serving, all, bit(t+1))
//! ```
//!
//! The bitset is `1 << (ticket % 32)`, so an unlock wakes only the waiters
//! whose ticket matches the next one modulo 32: with at most 32 sleepers that is
//! exactly the next ticket holder, no herd. More sleepers share bits and get
//! spurious wakes (they re-check and sleep again). At most 65535 threads may
//! wait on one ticket lock (tickets are 16 bits).
//!
//! Ordering: the acquire load of `serving` pairs with the owner's release
//! store/RMW. Sleeper registration (a SeqCst RMW on `serving`) and the unlock
//! RMW are totally ordered on the same word: either the unlock sees the
//! sleeper count, or the sleeper's re-load sees the new ticket.

use super::policy::WaitPolicy;
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{SpinBudget, futex_wait_bitset, futex_wake_bitset, spin_until};
use std::marker::PhantomData;

const TICKET_MASK: u32 = 0xffff;
const SLEEPER: u32 = 1 << 16;

#[inline]
fn bit(ticket: u32) -> u32 {
    1 << (ticket % 32)
}

/// Raw ticket lock, generic over its [`WaitPolicy`] (only `SLEEP` matters).
///
/// ```
/// use klock::{RawTicketLock, Pv};
/// let l = RawTicketLock::<Pv>::new();
/// l.lock();
/// assert!(l.is_locked());
/// unsafe { l.unlock() };
/// assert!(!l.is_locked());
/// ```
#[repr(C)]
pub struct RawTicketLock<P> {
    next: AtomicU32,
    serving: AtomicU32,
    _p: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for RawTicketLock<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTicketLock")
            .field("next", &self.next.load(Ordering::Relaxed))
            .field(
                "serving",
                &format_args!("{:#010x}", self.serving.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

impl<P: WaitPolicy> Default for RawTicketLock<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: WaitPolicy> RawTicketLock<P> {
    /// An unlocked lock.
    ///
    /// ```
    /// const L: klock::RawTicketLock<klock::Native> = klock::RawTicketLock::new();
    /// # let _ = L;
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTicketLock {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// An unlocked lock (loom: not `const`; under loom only).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTicketLock {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// Take a ticket and wait for it.
    ///
    /// ```
    /// let l = klock::RawTicketLock::<klock::Native>::new();
    /// l.lock();
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub fn lock(&self) {
        // Relaxed: the ticket itself carries no data; the Acquire load of
        // `serving` below is what pairs with the previous owner's release.
        let t = self.next.fetch_add(1, Ordering::Relaxed) & TICKET_MASK;
        if self.serving.load(Ordering::Acquire) & TICKET_MASK == t {
            return;
        }
        self.lock_slow(t);
    }

    #[cold]
    fn lock_slow(&self, t: u32) {
        let mine = || self.serving.load(Ordering::Acquire) & TICKET_MASK == t;
        if !P::SLEEP {
            spin_until(&mut SpinBudget::unbounded(), mine);
            return;
        }
        if spin_until(&mut SpinBudget::new(P::ticket_spin_ns()), mine) {
            return;
        }
        // Register as a sleeper; SeqCst RMW pairs with the unlock RMW.
        self.serving.fetch_add(SLEEPER, Ordering::SeqCst);
        stat::inc(Event::TicketSleep);
        loop {
            // Acquire pairs with the owner's Release unlock.
            let v = self.serving.load(Ordering::Acquire);
            if v & TICKET_MASK == t {
                break;
            }
            crate::chaos::point(crate::chaos::Site::BeforeSleep);
            futex_wait_bitset(&self.serving, v, bit(t), None);
        }
        self.serving.fetch_sub(SLEEPER, Ordering::Relaxed);
    }

    /// Take the lock if nobody holds or waits for it.
    ///
    /// ```
    /// let l = klock::RawTicketLock::<klock::Pv>::new();
    /// assert!(l.try_lock());
    /// assert!(!l.try_lock());
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire pairs with the previous owner's release of `serving`.
        let s = self.serving.load(Ordering::Acquire) & TICKET_MASK;
        let n = self.next.load(Ordering::Relaxed);
        n & TICKET_MASK == s
            && self
                .next
                .compare_exchange(n, n.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Is the lock held (or waited for)?
    ///
    /// ```
    /// assert!(!klock::RawTicketLock::<klock::Pv>::new().is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.next.load(Ordering::Relaxed) & TICKET_MASK
            != self.serving.load(Ordering::Relaxed) & TICKET_MASK
    }

    /// Release the lock: serve the next ticket, and wake it if it sleeps.
    ///
    /// # Safety
    ///
    /// The lock must be held by the caller.
    ///
    /// ```
    /// let l = klock::RawTicketLock::<klock::Native>::new();
    /// l.lock();
    /// // SAFETY: held.
    /// unsafe { l.unlock() };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self) {
        // Only the owner changes the low half, so this read is stable.
        let s = self.serving.load(Ordering::Relaxed);
        let next_ticket = (s + 1) & TICKET_MASK;
        if !P::SLEEP {
            // Release pairs with the waiters' Acquire loads of `serving`.
            self.serving
                .store((s & !TICKET_MASK) | next_ticket, Ordering::Release);
            return;
        }
        // RMW (not a store) so concurrent sleeper registrations are kept; wrap
        // the low half without carrying. Release as above; totally ordered
        // with the sleepers' SeqCst registration.
        let old = if s & TICKET_MASK == TICKET_MASK {
            self.serving.fetch_sub(TICKET_MASK, Ordering::SeqCst)
        } else {
            self.serving.fetch_add(1, Ordering::SeqCst)
        };
        crate::chaos::point(crate::chaos::Site::AfterRelease);
        if old >> 16 != 0 {
            futex_wake_bitset(&self.serving, u32::MAX, bit(next_ticket));
            stat::inc(Event::TicketWake);
        }
    }
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion as documented on `lock`/`unlock`; stateless guard.
unsafe impl<P: WaitPolicy> lock_api::RawMutex for RawTicketLock<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = lock_api::GuardSend;

    #[inline]
    fn lock(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawTicketLock::lock(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<lock_api::GuardSend> {
        let got = RawTicketLock::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _guard: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract: held by the caller.
        unsafe { RawTicketLock::unlock(self) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawTicketLock::is_locked(self)
    }
}

/// Lockdep: the lock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<P> Drop for RawTicketLock<P> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::spin::{Native, Pv};

    #[test]
    fn wraps_without_carry() {
        let l = RawTicketLock::<Pv>::new();
        for _ in 0..70_000 {
            l.lock();
            // SAFETY: held.
            unsafe { l.unlock() };
        }
        assert!(!l.is_locked());
        assert_eq!(
            l.serving.load(Ordering::Relaxed) >> 16,
            0,
            "no carry into sleepers"
        );
        let n = RawTicketLock::<Native>::new();
        for _ in 0..70_000 {
            assert!(n.try_lock());
            // SAFETY: held.
            unsafe { n.unlock() };
        }
        assert!(!n.is_locked());
    }

    #[test]
    fn contended_pv_and_native() {
        fn run<P: WaitPolicy>(threads: usize) {
            use std::sync::Arc;
            struct S<P>(RawTicketLock<P>, std::cell::UnsafeCell<u64>);
            // SAFETY: the cell is only touched with the lock held.
            unsafe impl<P> Sync for S<P> {}
            let s = Arc::new(S::<P>(RawTicketLock::new(), std::cell::UnsafeCell::new(0)));
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let s = s.clone();
                    std::thread::spawn(move || {
                        for _ in 0..2000 {
                            s.0.lock();
                            // SAFETY: lock held.
                            unsafe { *s.1.get() += 1 };
                            // SAFETY: held.
                            unsafe { s.0.unlock() };
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            // SAFETY: all threads joined.
            assert_eq!(unsafe { *s.1.get() }, threads as u64 * 2000);
        }
        run::<Pv>(6);
        run::<Native>(1);
    }
}

//! The floor mutex (issue 32, "the floor"): std's futex mutex protocol
//! written in klock's house, the cheapest correct hand-over every other
//! klock mutex is measured against (`docs/mutex.md`, "The floor";
//! `docs/design.md` P19). One word, one RMW to take it, one to release it;
//! barging (no hand-off, no fairness bound), no owner identity.
//!
//! # Word layout (4 bytes, one `AtomicU32`)
//!
//! ```text
//! state: 0 = UNLOCKED, 1 = LOCKED (no sleeper), 2 = CONTENDED (locked, sleepers possible)
//! ```
//!
//! # State diagram
//!
//! ```text
//!  0 --lock fast CAS (claim: 0 -> 1)--> 1 --unlock swap (release: x -> 0)--> 0
//!  * --slow path swap (claim_contended: * -> 2)--> 2     (acquired iff it was 0)
//!  2 --unlock swap (release: x -> 0), it was 2: futex_wake(1)--> 0
//! ```
//!
//! A thread that took the lock through `* -> 2` holds it as CONTENDED: it
//! cannot know whether others sleep, so its unlock wakes one (perhaps
//! needlessly). A woken thread barges with every newcomer; it sets 2 again
//! so that the next unlock wakes the next sleeper (no lost wake-up: a
//! sleeper sleeps only on 2, and 2 is cleared only by an unlock that wakes).
//!
//! Waiting: a read-only spin on the word through klock's one spin loop
//! ([`crate::wait::spin_until`]) while it reads LOCKED; it stops as soon as
//! the word is free or shows sleepers (2), then the `swap(2)` loop with
//! `futex_wait(word, 2)` between tries.

use super::oneword::one_word_lock_api;
use super::token::MutexToken;
use crate::chaos::{self, Site};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;

/// Unlocked.
pub const FLOOR_UNLOCKED: u32 = 0;
/// Locked, no sleeper.
pub const FLOOR_LOCKED: u32 = 1;
/// Locked, sleepers possible: unlock must wake one.
pub const FLOOR_CONTENDED: u32 = 2;

/// The read-only spin's budget before sleeping (about std's 100 PAUSEs on
/// current x86). Under loom, one iteration (its budget counts iterations).
const SPIN_NS: u64 = if cfg!(loom) { 1 } else { 2_000 };

/// The floor's raw mutex: std's futex protocol (see the module docs). Use it
/// through [`MutexFloor`]; 4 bytes.
///
/// ```
/// let m = klock::internal::mutex::RawMutexFloor::new();
/// let t = m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock(t) };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawMutexFloor {
    state: AtomicU32,
}

/// A mutex on the floor protocol (a lock_api mutex over [`RawMutexFloor`]).
///
/// ```
/// let m = klock::internal::mutex::MutexFloor::new(5);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 6);
/// ```
#[cfg(not(loom))]
pub type MutexFloor<T> = lock_api::Mutex<RawMutexFloor, T>;

impl RawMutexFloor {
    /// The word's raw value (tests, diagnostics).
    pub fn state(&self) -> u32 {
        // Relaxed: a snapshot, orders nothing.
        self.state.load(Ordering::Relaxed)
    }

    /// Is the mutex held (by anyone)? A snapshot.
    pub fn is_locked(&self) -> bool {
        self.state() != FLOOR_UNLOCKED
    }

    /// `0 -> 1`: take the free lock with no sleeper to announce. Acquire:
    /// pairs with the Release of the `x -> 0` swap in [`release`](Self::release).
    #[inline]
    fn claim(&self) -> bool {
        self.state
            .compare_exchange(
                FLOOR_UNLOCKED,
                FLOOR_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// `* -> 2`: announce a (possible) sleeper; acquired iff the old value
    /// was 0. Acquire: pairs with the Release of the `x -> 0` swap in
    /// [`release`](Self::release) (the holder's critical section happens
    /// before ours).
    #[inline]
    fn claim_contended(&self) -> bool {
        self.state.swap(FLOOR_CONTENDED, Ordering::Acquire) == FLOOR_UNLOCKED
    }

    /// `x -> 0`: release; returns `x`. Release: pairs with the Acquire of
    /// `claim` / `claim_contended` of the next holder.
    #[inline]
    fn release(&self) -> u32 {
        self.state.swap(FLOOR_UNLOCKED, Ordering::Release)
    }

    /// Read-only spin while the word reads LOCKED (1); returns the last
    /// value read (0 or 2, or 1 when the budget ran out).
    #[inline]
    fn spin(&self) -> u32 {
        let mut s = FLOOR_LOCKED;
        wait::spin_until(&mut wait::SpinBudget::new(SPIN_NS), || {
            // Relaxed: a hint; the claim that follows is the Acquire.
            s = self.state.load(Ordering::Relaxed);
            s != FLOOR_LOCKED
        });
        s
    }

    /// Acquire the mutex, sleeping if needed.
    #[inline]
    pub fn lock(&self) -> MutexToken {
        if !self.claim() {
            self.lock_slow(None);
        }
        MutexToken::from_id(0)
    }

    /// Acquire the mutex if it is free (`0 -> 1`).
    #[inline]
    pub fn try_lock(&self) -> Option<MutexToken> {
        self.claim().then(|| MutexToken::from_id(0))
    }

    /// Acquire the mutex, sleeping at most until `deadline_ns` ([`wait::now_ns`] time).
    pub fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
        (self.claim() || self.lock_slow(Some(deadline_ns))).then(|| MutexToken::from_id(0))
    }

    /// The slow path: spin read-only, then `* -> 2` and sleep on 2 until
    /// a swap finds 0. Returns `false` only when `deadline` passed.
    #[cold]
    fn lock_slow(&self, deadline: Option<u64>) -> bool {
        let mut s = self.spin();
        if s == FLOOR_UNLOCKED && self.claim() {
            return true;
        }
        loop {
            // A word already at 2 needs no swap to announce us; a 0 or 1
            // does (and a 0 gives us the lock).
            if s != FLOOR_CONTENDED && self.claim_contended() {
                return true;
            }
            let Some(timeout) = wait::remaining(deadline) else {
                return false;
            };
            // Decided to sleep; an unlock here finds 2 and wakes, or the
            // futex sees the word is no longer 2 and returns at once.
            chaos::point(Site::BeforeSleep);
            wait::futex_wait(&self.state, FLOOR_CONTENDED, timeout);
            chaos::point(Site::AfterWake);
            // After a wake-up the word may be 0 (spin() returns it at once):
            // the swap takes it announcing sleepers (we may not be the last).
            s = self.spin();
        }
    }

    /// Release the mutex; wake one sleeper if the word said there might be one.
    ///
    /// # Safety
    ///
    /// `token` is this mutex's live acquisition.
    #[inline]
    pub unsafe fn unlock(&self, token: MutexToken) {
        let _ = token;
        if self.release() == FLOOR_CONTENDED {
            // The lock is free and may be taken, used and left before the wake.
            chaos::point(Site::AfterRelease);
            wait::futex_wake(&self.state, 1);
        }
    }
}

// Mutual exclusion (the `lock_api` impls' SAFETY argument): the word leaves 0 only by a CAS `0 -> 1` or a swap
// that read 0, each Acquire, and returns to 0 only by the holder's Release
// swap. The token carries nothing (id 0, no owner identity): any thread may
// release a guard it was sent, as with klock's other raw mutexes.
one_word_lock_api!(RawMutexFloor, state);

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn size_is_one_word() {
        assert_eq!(std::mem::size_of::<RawMutexFloor>(), 4);
    }

    #[test]
    fn claim_is_0_to_1_only() {
        let m = RawMutexFloor::new();
        assert!(m.claim());
        assert_eq!(m.state(), FLOOR_LOCKED);
        assert!(!m.claim());
        assert_eq!(m.state(), FLOOR_LOCKED);
    }

    #[test]
    fn claim_contended_is_any_to_2() {
        let m = RawMutexFloor::new();
        // 0 -> 2: acquired.
        assert!(m.claim_contended());
        assert_eq!(m.state(), FLOOR_CONTENDED);
        // 2 -> 2: not acquired.
        assert!(!m.claim_contended());
        assert_eq!(m.state(), FLOOR_CONTENDED);
        // 1 -> 2: not acquired, sleepers announced.
        m.state.store(FLOOR_LOCKED, Ordering::Relaxed);
        assert!(!m.claim_contended());
        assert_eq!(m.state(), FLOOR_CONTENDED);
    }

    #[test]
    fn release_is_x_to_0_and_reports_x() {
        let m = RawMutexFloor::new();
        for x in [FLOOR_LOCKED, FLOOR_CONTENDED] {
            m.state.store(x, Ordering::Relaxed);
            assert_eq!(m.release(), x);
            assert_eq!(m.state(), FLOOR_UNLOCKED);
        }
    }

    #[test]
    fn uncontended_lock_unlock_stays_at_1() {
        let m = RawMutexFloor::new();
        let t = m.lock();
        assert_eq!(m.state(), FLOOR_LOCKED);
        assert!(m.try_lock().is_none());
        // SAFETY: t is this mutex's live acquisition.
        unsafe { m.unlock(t) };
        assert_eq!(m.state(), FLOOR_UNLOCKED);
    }

    #[test]
    fn timed_lock_times_out_on_held_lock() {
        let m = MutexFloor::new(0);
        let g = m.lock();
        assert!(
            m.try_lock_for(std::time::Duration::from_millis(5))
                .is_none()
        );
        drop(g);
        assert!(
            m.try_lock_for(std::time::Duration::from_millis(5))
                .is_some()
        );
        assert!(!m.is_locked());
    }

    #[test]
    fn contended_counter() {
        let m = Arc::new(MutexFloor::new(0u64));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..5_000 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 40_000);
        assert!(!m.is_locked());
    }
}

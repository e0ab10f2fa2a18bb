//! The barging mutex (issue 32, design C): the floor's one-word hand-over
//! (`mutex/floor.rs`) with three changes, each a protocol change, not a
//! constant: the word counts its sleepers exactly (an unlock makes a
//! syscall only when someone sleeps, where std's "2" state makes one on
//! every unlock after a contention), at most one wake-up is in flight (the
//! woken thread clears WOKEN when it runs), and a bound on bypass hands the
//! lock only to a waiter that is **running** (INV-HANDOFF-RUNNING): a woken
//! waiter that has waited longer than [`BYPASS_BOUND_NS`](super::oneword::BYPASS_BOUND_NS) asks, and the next
//! unlock passes the lock to it instead of releasing it.
//!
//! # Word layout (4 bytes, one `AtomicU32`)
//!
//! ```text
//!  31                                  4      3         2        1       0
//! +-------------------------------------+---------+---------+-------+--------+
//! | sleepers: threads in the wait loop  | GRANTED | HANDOFF | WOKEN | LOCKED |
//! +-------------------------------------+---------+---------+-------+--------+
//! ```
//!
//! * **LOCKED** (L): held. Anyone who finds it clear may take it (barging).
//! * **WOKEN** (K): an unlock woke a sleeper that has not run yet; later
//!   unlocks wake nobody (INV-WAKING's rule on one word).
//! * **HANDOFF** (H): a running waiter past the bound asks for the next
//!   release; set only while L is set, by one thread at a time.
//! * **GRANTED** (G): the unlock passed the lock to the H asker (L stays set).
//! * **sleepers** (n): threads that enrolled and have neither taken the lock
//!   nor left; each sleeps on the whole word.
//!
//! # State diagram, as `(n, flags)`
//!
//! ```text
//!  (0,-) --lock fast CAS--> (0,L) --unlock fast CAS--> (0,-)
//!  (n,f), no L --anyone's claim--> (n,f|L)                  barging
//!  (n,L|f) --a waiter enrolls--> (n+1,L|f), then futex_wait on that value
//!  (n,L), n>0 --unlock (release)--> (n,K) + futex_wake(1)
//!  (n,L|K) --unlock (release)--> (n,K)                       a wake is in flight
//!  (n,L|K) --a woken waiter finds it held (rearm)--> (n,L), sleeps again
//!  (n,f), no L --an enrolled waiter takes it (claim_enrolled)--> (n-1,(f|L)&!K)
//!  (n,L|f) --a running waiter past the bound (ask)--> (n,L|H|f)
//!  (n,L|H|f) --unlock (grant)--> (n,L|G|f)                   no release, no wake
//!  (n,L|G|f) --the asker (pick_up)--> (n-1,L|f&!K)
//!  (n,L|H|f) --the asker stops waiting running (withdraw)--> (n,L|f)
//!  (n,L|f) --a waiter times out (leave)--> (n-1,L|f&!K)     only while held
//! ```
//!
//! No lost wake-up: a waiter sleeps only on a value it read, so any change
//! (a release above all) makes its `futex_wait` return at once; and while K
//! is set some enrolled thread has not yet looked at the word since K was
//! set, and it clears K before it sleeps. Every way out of the count
//! (claim_enrolled, pick_up, leave) clears K too, so K never outlives the
//! sleepers (K implies n > 0). A leaving waiter never leaves a free lock
//! behind: it takes it; it leaves only a held one, whose unlock then wakes.
//!
//! After its release an unlock touches nothing but the futex address
//! (INV-WAKE-ADDR); a grant releases nothing and wakes nobody.

use super::oneword::{self, Grant, SPIN_NS, one_word_lock_api, past_bound};
use super::token::MutexToken;
use crate::chaos::{self, Site};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget, WaitOutcome};

/// Held.
pub const LOCKED: u32 = 1 << 0;
/// A wake-up is in flight: unlocks wake nobody until the woken thread runs.
pub const WOKEN: u32 = 1 << 1;
/// A running waiter past the bound asks for the next release.
pub const HANDOFF: u32 = 1 << 2;
/// The lock was passed to the HANDOFF asker; LOCKED stays set.
pub const GRANTED: u32 = 1 << 3;
/// One sleeper in the count above the flags.
pub const SLEEPER: u32 = 1 << 4;

// ---------------------------------------------------------------------------
// Predicates and transitions: pure functions of a word value
// ---------------------------------------------------------------------------

/// `(n, f|L)`: held (or granted).
#[inline]
const fn held(w: u32) -> bool {
    w & LOCKED != 0
}

/// `n`: enrolled sleepers.
#[inline]
const fn sleepers(w: u32) -> u32 {
    w / SLEEPER
}

/// `(n, f|H)`: a running waiter asks for the next release.
#[inline]
const fn asked(w: u32) -> bool {
    w & HANDOFF != 0
}

/// `(n, f|G)`: the lock was passed to the asker.
#[inline]
const fn granted(w: u32) -> bool {
    w & GRANTED != 0
}

/// `(n, f) -> (n, f|L)`: take a free lock (`f` has no L).
#[inline]
const fn claim(w: u32) -> u32 {
    w | LOCKED
}

/// `(n, L|f) -> (n+1, L|f)`: enroll as a sleeper.
#[inline]
const fn enroll(w: u32) -> u32 {
    w + SLEEPER
}

/// `(n, f) -> (n-1, (f|L) & !K)`: an enrolled waiter takes a free lock; it
/// is running, so any wake-up in flight has done its job.
#[inline]
const fn claim_enrolled(w: u32) -> u32 {
    ((w | LOCKED) - SLEEPER) & !WOKEN
}

/// `(n, L|f) -> (n, f)` plus `K` when `n > 0` and no K: release; returns the
/// new word and whether the caller must wake one sleeper (`f` has no H).
#[inline]
const fn release(w: u32) -> (u32, bool) {
    let wake = sleepers(w) > 0 && w & WOKEN == 0;
    let new = w & !LOCKED;
    if wake {
        (new | WOKEN, true)
    } else {
        (new, false)
    }
}

/// `(n, L|K|f) -> (n, L|f)`: a woken waiter found the lock held and will
/// sleep again; the next unlock must wake someone.
#[inline]
const fn rearm(w: u32) -> u32 {
    w & !WOKEN
}

/// `(n, L|f) -> (n, L|H|f)`: ask for the next release.
#[inline]
const fn ask(w: u32) -> u32 {
    w | HANDOFF
}

/// `(n, L|H|f) -> (n, L|G|f)`: pass the lock to the asker.
#[inline]
const fn grant(w: u32) -> u32 {
    (w & !HANDOFF) | GRANTED
}

/// `(n, L|G|f) -> (n-1, L|f&!K)`: the asker takes the lock passed to it.
/// Like every way out of the count, it clears K: a K left behind with no
/// sleeper would stop the unlock after a later enrollment from waking it.
#[inline]
const fn pick_up(w: u32) -> u32 {
    (w & !(GRANTED | WOKEN)) - SLEEPER
}

/// `(n, L|H|f) -> (n, L|f)`: the asker stops waiting running.
#[inline]
const fn withdraw(w: u32) -> u32 {
    w & !HANDOFF
}

/// `(n, L|f) -> (n-1, L|f & !K)`: a timed-out waiter leaves a held lock;
/// clearing K makes the holder's unlock wake the next sleeper.
#[inline]
const fn leave(w: u32) -> u32 {
    (w - SLEEPER) & !WOKEN
}

/// The grant protocol on this word (for [`oneword::wait_for_grant`]).
const GRANT: Grant = Grant {
    granted,
    pick_up,
    withdraw,
};

/// The barging mutex (see the module docs); 4 bytes. Use it through
/// [`MutexBarge`].
///
/// ```
/// let m = klock::internal::mutex::RawMutexBarge::new();
/// let t = m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock(t) };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawMutexBarge {
    word: AtomicU32,
}

/// A mutex on the barging protocol (a lock_api mutex over [`RawMutexBarge`]).
///
/// ```
/// let m = klock::internal::mutex::MutexBarge::new(5);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 6);
/// ```
#[cfg(not(loom))]
pub type MutexBarge<T> = lock_api::Mutex<RawMutexBarge, T>;

/// How a running enrolled waiter's look at the word ended.
enum Turn {
    /// It holds the lock.
    Acquired,
    /// It sleeps on this value.
    Sleep(u32),
}

impl RawMutexBarge {
    /// The word's raw value (tests, diagnostics).
    pub fn word(&self) -> u32 {
        // Relaxed: a snapshot, orders nothing.
        self.word.load(Ordering::Relaxed)
    }

    /// Is the mutex held (or granted)? A snapshot.
    pub fn is_locked(&self) -> bool {
        held(self.word())
    }

    /// CAS `w -> new`; Acquire on success: pairs with the Release of the
    /// unlock (release or grant) that let us in. Returns the current word
    /// on failure.
    #[inline]
    fn cas_acquire(&self, w: u32, new: u32) -> Result<u32, u32> {
        self.word
            .compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
    }

    /// CAS `w -> new`, Relaxed: a change that passes no data (enroll,
    /// rearm, ask, withdraw, leave); the acquisition that follows is an
    /// Acquire CAS of its own.
    #[inline]
    fn cas_relaxed(&self, w: u32, new: u32) -> Result<u32, u32> {
        self.word
            .compare_exchange(w, new, Ordering::Relaxed, Ordering::Relaxed)
    }

    /// Acquire the mutex, sleeping if needed.
    #[inline]
    pub fn lock(&self) -> MutexToken {
        if self.cas_acquire(0, LOCKED).is_err() {
            self.lock_slow(None);
        }
        MutexToken::from_id(0)
    }

    /// Acquire the mutex if it is free (barging past sleepers).
    #[inline]
    pub fn try_lock(&self) -> Option<MutexToken> {
        let mut w = self.word();
        while !held(w) {
            match self.cas_acquire(w, claim(w)) {
                Ok(_) => return Some(MutexToken::from_id(0)),
                Err(x) => w = x,
            }
        }
        None
    }

    /// Acquire the mutex, sleeping at most until `deadline_ns` ([`wait::now_ns`] time).
    pub fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
        (self.cas_acquire(0, LOCKED).is_ok() || self.lock_slow(Some(deadline_ns)))
            .then(|| MutexToken::from_id(0))
    }

    /// Spin read-only while `busy(word)` for at most `ns`; returns the
    /// last value read. Relaxed: a hint; every acquisition is a CAS.
    #[inline]
    fn spin_while(&self, ns: u64, busy: impl Fn(u32) -> bool) -> u32 {
        let mut w = 0;
        wait::spin_until(&mut SpinBudget::new(ns), || {
            w = self.word();
            !busy(w)
        });
        w
    }

    /// The slow path, as one story:
    ///
    /// 1. spin read-only while the lock is held, at most [`SPIN_NS`] (a
    ///    real-time thread does not spin, INV-RT-NOSPIN);
    /// 2. enroll as a sleeper, or take the lock if it is free;
    /// 3. sleep on the word's value until it changes or a wake-up comes;
    /// 4. running again: take the lock, or ask for a hand-off once past
    ///    the bound, or re-arm and go back to 3;
    /// 5. past the deadline: leave (taking the lock if it is free).
    #[cold]
    fn lock_slow(&self, deadline: Option<u64>) -> bool {
        let rt = wait::realtime();
        let spin_ns = if rt { 0 } else { SPIN_NS };
        // Step 1. Sleepers do not stop the spin: the count persists across
        // unlocks (std's "2" does not), and a spinner that stopped at it
        // sent every contender to sleep (16 000 voluntary context switches
        // in 0.5 s at `balanced` T=8 against the floor's 540, 0.64x).
        let w = self.spin_while(spin_ns, held);
        if !held(w) && self.try_lock().is_some() {
            return true;
        }
        // Step 2.
        let Some(mut w) = self.enroll() else {
            return true;
        };
        let start = wait::now_ns();
        loop {
            // Step 3.
            let Some(timeout) = wait::remaining(deadline) else {
                return self.leave();
            };
            chaos::point(Site::BeforeSleep);
            let out = wait::futex_wait(&self.word, w, timeout);
            chaos::point(Site::AfterWake);
            if out == WaitOutcome::TimedOut {
                return self.leave();
            }
            // Step 4.
            match self.turn(start, spin_ns, rt) {
                Turn::Acquired => return true,
                Turn::Sleep(x) => w = x,
            }
        }
    }

    /// Step 2: `(n,L|f) -> (n+1,L|f)`, or take the lock if it is free;
    /// returns the value to sleep on (`None`: we hold the lock).
    fn enroll(&self) -> Option<u32> {
        let mut w = self.word();
        loop {
            let r = if held(w) {
                self.cas_relaxed(w, enroll(w)).map(|_| Some(enroll(w)))
            } else {
                self.cas_acquire(w, claim(w)).map(|_| None)
            };
            match r {
                Ok(v) => return v,
                Err(x) => w = x,
            }
        }
    }

    /// Step 4, an enrolled waiter running again (woken, or its value
    /// changed): spin briefly while the lock is held, then take it if
    /// free; past the bound, ask for it and wait running; else clear K and
    /// sleep again.
    fn turn(&self, start: u64, spin_ns: u64, rt: bool) -> Turn {
        let mut w = self.spin_while(spin_ns, held);
        // One request per turn: an asker that withdrew sleeps before it asks again.
        let mut may_ask = !rt && past_bound(start);
        loop {
            let r = if !held(w) {
                self.cas_acquire(w, claim_enrolled(w))
                    .map(|_| Turn::Acquired)
            } else if may_ask && !asked(w) {
                match self.cas_relaxed(w, ask(w)) {
                    Ok(_) if self.wait_for_grant() => return Turn::Acquired,
                    // Withdrawn: look at what the word holds now.
                    Ok(_) => {
                        may_ask = false;
                        Err(self.word())
                    }
                    Err(x) => Err(x),
                }
            } else {
                self.cas_relaxed(w, rearm(w)).map(|_| Turn::Sleep(rearm(w)))
            };
            match r {
                Ok(t) => return t,
                Err(x) => w = x,
            }
        }
    }

    /// The asker waits running for the grant; returns whether it holds the
    /// lock (else it withdrew its request).
    fn wait_for_grant(&self) -> bool {
        oneword::wait_for_grant(&self.word, &GRANT)
    }

    /// Step 5: past the deadline. Take the lock if it is free; else
    /// `(n,L|f) -> (n-1,L|f&!K)` and report the timeout (the holder's
    /// unlock wakes the next sleeper).
    fn leave(&self) -> bool {
        let mut w = self.word();
        loop {
            let r = if held(w) {
                self.cas_relaxed(w, leave(w)).map(|_| false)
            } else {
                self.cas_acquire(w, claim_enrolled(w)).map(|_| true)
            };
            match r {
                Ok(got) => return got,
                Err(x) => w = x,
            }
        }
    }

    /// Release the mutex: `(0,L) -> (0,-)` in one CAS, else the slow path.
    ///
    /// # Safety
    ///
    /// `token` is this mutex's live acquisition.
    #[inline]
    pub unsafe fn unlock(&self, token: MutexToken) {
        let _ = token;
        // Release pairs with the Acquire CAS of the next holder.
        if self
            .word
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow();
        }
    }

    /// Grant the lock to an asker, or release it and wake one sleeper when
    /// sleepers exist and no wake-up is in flight.
    #[cold]
    fn unlock_slow(&self) {
        let mut w = self.word();
        loop {
            let (new, wake) = if asked(w) {
                (grant(w), false)
            } else {
                release(w)
            };
            // Release: pairs with the Acquire CAS of the next holder (a
            // barger, an enrolled waiter, or the asker's pick-up).
            match self
                .word
                .compare_exchange(w, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    // Released (free, or granted to the asker): the lock may
                    // be taken, used and left before we go on; after this
                    // only the futex address is touched (INV-WAKE-ADDR).
                    chaos::point(Site::AfterRelease);
                    if wake {
                        wait::futex_wake(&self.word, 1);
                    }
                    return;
                }
                Err(x) => w = x,
            }
        }
    }
}

// Mutual exclusion (the `lock_api` impls' SAFETY argument): LOCKED is set only by an Acquire CAS that read it
// clear, or stays set across a grant to exactly one asker (only one thread
// can set HANDOFF, and only it picks GRANTED up); it is cleared only by the
// holder's Release CAS. The token carries nothing (id 0).
one_word_lock_api!(RawMutexBarge, word);

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;

    const L: u32 = LOCKED;
    const K: u32 = WOKEN;
    const H: u32 = HANDOFF;
    const G: u32 = GRANTED;
    const fn n(k: u32) -> u32 {
        k * SLEEPER
    }

    #[test]
    fn size_is_one_word() {
        assert_eq!(std::mem::size_of::<RawMutexBarge>(), 4);
    }

    #[test]
    fn transitions_match_the_diagram() {
        assert_eq!(claim(n(3) | K), n(3) | K | L);
        assert_eq!(enroll(n(2) | L), n(3) | L);
        assert_eq!(claim_enrolled(n(3) | K), n(2) | L);
        assert_eq!(release(n(0) | L), (0, false));
        assert_eq!(release(n(2) | L), (n(2) | K, true));
        assert_eq!(release(n(2) | L | K), (n(2) | K, false));
        assert_eq!(rearm(n(2) | L | K), n(2) | L);
        assert_eq!(ask(n(2) | L), n(2) | L | H);
        assert_eq!(grant(n(2) | L | H | K), n(2) | L | G | K);
        assert_eq!(pick_up(n(2) | L | G), n(1) | L);
        assert_eq!(pick_up(n(1) | L | G | K), L, "no K without a sleeper");
        assert_eq!(withdraw(n(2) | L | H), n(2) | L);
        assert_eq!(leave(n(2) | L | K), n(1) | L);
        assert_eq!(sleepers(n(5) | L | K | H), 5);
        assert!(held(G | L) && !held(n(9) | K) && asked(H) && granted(G));
    }

    #[test]
    fn uncontended_lock_unlock() {
        let m = RawMutexBarge::new();
        let t = m.lock();
        assert_eq!(m.word(), LOCKED);
        assert!(m.try_lock().is_none());
        // SAFETY: t is this mutex's live acquisition.
        unsafe { m.unlock(t) };
        assert_eq!(m.word(), 0);
    }

    #[test]
    fn unlock_grants_to_an_asker_and_wakes_nobody() {
        let m = RawMutexBarge::new();
        m.word.store(n(1) | L | H, Ordering::Relaxed);
        // SAFETY: the word says held; the test plays the holder.
        unsafe { m.unlock(MutexToken::from_id(0)) };
        assert_eq!(m.word(), n(1) | L | G);
        assert!(m.wait_for_grant());
        assert_eq!(m.word(), L);
    }

    #[test]
    fn an_asker_without_grant_withdraws() {
        let m = RawMutexBarge::new();
        m.word.store(n(1) | L | H, Ordering::Relaxed);
        assert!(!m.wait_for_grant());
        assert_eq!(m.word(), n(1) | L);
    }

    #[test]
    fn timeout_leaves_a_held_lock_and_takes_a_free_one() {
        let m = MutexBarge::new(0);
        // SAFETY: the raw mutex is only read (`word`) or driven through its
        // own safe methods while the test owns every acquisition.
        let raw = unsafe { m.raw() };
        let g = m.lock();
        assert!(
            m.try_lock_for(std::time::Duration::from_millis(5))
                .is_none()
        );
        assert_eq!(raw.word(), LOCKED, "the leaver is no longer counted");
        drop(g);
        assert!(
            m.try_lock_for(std::time::Duration::from_millis(5))
                .is_some()
        );
        assert!(!m.is_locked());
        // A leaver that finds the lock free takes it.
        raw.word.store(n(1), Ordering::Relaxed);
        assert!(raw.leave());
        assert_eq!(raw.word(), LOCKED);
    }

    #[test]
    fn contended_counter() {
        let m = Arc::new(MutexBarge::new(0u64));
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
        // SAFETY: only reads the word.
        assert_eq!(unsafe { m.raw() }.word(), 0, "every sleeper left the count");
    }
}

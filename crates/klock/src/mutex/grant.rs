//! The granting floor (issue 32, design D): std's futex protocol exactly
//! as the floor has it (`mutex/floor.rs`: the contended mark is reset by
//! every release, so spinning resumes, and every contended unlock wakes one
//! sleeper), plus a bound on bypass that hands the lock only to a
//! **running** waiter (INV-HANDOFF-RUNNING): a woken waiter that has waited
//! longer than [`BYPASS_BOUND_NS`](super::oneword::BYPASS_BOUND_NS) asks (HANDOFF), waits running, and the
//! next unlock passes the lock to it instead of releasing it (GRANTED).
//! std's failure mode at 128 threads on 2 CPUs is a woken waiter that loses
//! to a running newcomer and goes back to the end of the futex queue, round
//! after round (max/min in the tens of thousands); the grant ends that.
//!
//! # Word layout (4 bytes, one `AtomicU32`)
//!
//! ```text
//!  31            4      3         2           1          0
//! +---------------+---------+---------+-----------+--------+
//! |       0       | GRANTED | HANDOFF | CONTENDED | LOCKED |
//! +---------------+---------+---------+-----------+--------+
//! ```
//!
//! `LOCKED` alone is std's 1, `LOCKED|CONTENDED` std's 2 (sleepers
//! possible). HANDOFF and GRANTED are set only while LOCKED is.
//!
//! # State diagram (flags; L=LOCKED C=CONTENDED H=HANDOFF G=GRANTED)
//!
//! ```text
//!  - --lock fast CAS (claim)--> L --unlock fast CAS--> -
//!  f, no L --a waiter's mark (mark: take it)--> L|C         acquired
//!  L|f --a waiter's mark (mark)--> L|C|f, then futex_wait on it
//!  L|C[|f] --unlock (release)--> -  + futex_wake(1)
//!  L|C|f --a woken waiter past the bound (ask)--> L|C|H|f
//!  L|C|H --unlock (grant)--> L|C|G                          no release, no wake
//!  L|C|G --the asker (pick_up)--> L|C
//!  L|C|H --the asker stops waiting running (withdraw)--> L|C
//! ```
//!
//! No lost wake-up, as std: a waiter sleeps only on a word with C set; C
//! is cleared only by a release, which wakes one; a woken waiter that fails
//! sets C again. A grant keeps C, so the asker's own release wakes the next.
//! A timed-out waiter just leaves (C stays: at worst a needless wake-up).
//! After its release an unlock touches only the futex address
//! (INV-WAKE-ADDR); a grant releases nothing and wakes nobody.

use super::oneword::{self, Grant, SPIN_NS, one_word_lock_api, past_bound};
use super::token::MutexToken;
use crate::chaos::{self, Site};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget};

/// Held.
pub const LOCKED: u32 = 1 << 0;
/// Held, sleepers possible: the release wakes one.
pub const CONTENDED: u32 = 1 << 1;
/// A running waiter past the bound asks for the next release.
pub const HANDOFF: u32 = 1 << 2;
/// The lock was passed to the HANDOFF asker; LOCKED stays set.
pub const GRANTED: u32 = 1 << 3;

// Predicates and transitions: pure functions of a word value.

/// `L|f`: held (or granted).
#[inline]
const fn held(w: u32) -> bool {
    w & LOCKED != 0
}

/// `f|H`: a running waiter asks for the next release.
#[inline]
const fn asked(w: u32) -> bool {
    w & HANDOFF != 0
}

/// `f|G`: the lock was passed to the asker.
#[inline]
const fn granted(w: u32) -> bool {
    w & GRANTED != 0
}

/// `f -> f|L|C`: a waiter announces itself; acquired iff `f` had no L.
#[inline]
const fn mark(w: u32) -> u32 {
    w | LOCKED | CONTENDED
}

/// `L|C|f -> L|C|H|f`: ask for the next release.
#[inline]
const fn ask(w: u32) -> u32 {
    w | HANDOFF
}

/// `L|C|H -> L|C|G`: pass the lock to the asker.
#[inline]
const fn grant(w: u32) -> u32 {
    (w & !HANDOFF) | GRANTED
}

/// `L|C|G -> L|C`: the asker takes the lock passed to it.
#[inline]
const fn pick_up(w: u32) -> u32 {
    w & !GRANTED
}

/// `L|C|H -> L|C`: the asker stops waiting running.
#[inline]
const fn withdraw(w: u32) -> u32 {
    w & !HANDOFF
}

/// The grant protocol on this word (for [`oneword::wait_for_grant`]).
const GRANT: Grant = Grant {
    granted,
    pick_up,
    withdraw,
};

/// The granting floor's raw mutex (see the module docs); 4 bytes. Use it
/// through [`MutexGrant`].
///
/// ```
/// let m = klock::internal::mutex::RawMutexGrant::new();
/// let t = m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock(t) };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawMutexGrant {
    word: AtomicU32,
}

/// A mutex on the granting floor (a lock_api mutex over [`RawMutexGrant`]).
///
/// ```
/// let m = klock::internal::mutex::MutexGrant::new(5);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 6);
/// ```
#[cfg(not(loom))]
pub type MutexGrant<T> = lock_api::Mutex<RawMutexGrant, T>;

impl RawMutexGrant {
    /// The word's raw value (tests, diagnostics).
    pub fn word(&self) -> u32 {
        // Relaxed: a snapshot, orders nothing.
        self.word.load(Ordering::Relaxed)
    }

    /// Is the mutex held (or granted)? A snapshot.
    pub fn is_locked(&self) -> bool {
        held(self.word())
    }

    /// CAS `w -> new`. Acquire on success when `new` takes the lock: pairs
    /// with the Release of the unlock (release or grant) that let us in;
    /// the other changes (mark while held, ask, withdraw) pass no data and
    /// the Acquire costs nothing extra on x86.
    #[inline]
    fn cas(&self, w: u32, new: u32) -> Result<u32, u32> {
        self.word
            .compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed)
    }

    /// Acquire the mutex, sleeping if needed.
    #[inline]
    pub fn lock(&self) -> MutexToken {
        if self.cas(0, LOCKED).is_err() {
            self.lock_slow(None);
        }
        MutexToken::from_id(0)
    }

    /// Acquire the mutex if it is free (`- -> L`).
    #[inline]
    pub fn try_lock(&self) -> Option<MutexToken> {
        self.cas(0, LOCKED).is_ok().then(|| MutexToken::from_id(0))
    }

    /// Acquire the mutex, sleeping at most until `deadline_ns` ([`wait::now_ns`] time).
    pub fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
        (self.cas(0, LOCKED).is_ok() || self.lock_slow(Some(deadline_ns)))
            .then(|| MutexToken::from_id(0))
    }

    /// Read-only spin while the word reads exactly L (held, no sleeper: the
    /// floor's rule), at most `ns`; returns the last value read. Relaxed: a
    /// hint; every acquisition is a CAS.
    #[inline]
    fn spin(&self, ns: u64) -> u32 {
        let mut w = 0;
        wait::spin_until(&mut SpinBudget::new(ns), || {
            w = self.word();
            w != LOCKED
        });
        w
    }

    /// The slow path, as one story:
    ///
    /// 1. spin read-only while the word is exactly L (a real-time thread
    ///    does not spin, INV-RT-NOSPIN);
    /// 2. mark the word contended, which takes it if it is free;
    /// 3. sleep on the marked word; past the deadline, give up;
    /// 4. woken: past the bound, ask for the lock and wait for it running;
    ///    else spin as in 1 and go back to 2.
    #[cold]
    fn lock_slow(&self, deadline: Option<u64>) -> bool {
        let rt = wait::realtime();
        let spin_ns = if rt { 0 } else { SPIN_NS };
        // Step 1.
        self.spin(spin_ns);
        let start = wait::now_ns();
        loop {
            // Step 2.
            let Some(w) = self.mark() else {
                return true;
            };
            // Step 3.
            let Some(timeout) = wait::remaining(deadline) else {
                return false;
            };
            chaos::point(Site::BeforeSleep);
            wait::futex_wait(&self.word, w, timeout);
            chaos::point(Site::AfterWake);
            // Step 4.
            if !rt && past_bound(start) && self.ask_and_wait() {
                return true;
            }
            // Running again, as the floor after a wake-up: spin while the
            // word is exactly L before marking it (without this, 0.61-0.75x
            // the floor at `balanced` T=2-8).
            self.spin(spin_ns);
        }
    }

    /// Step 2: `f -> f|L|C`; `None` if that took the lock, else the value
    /// to sleep on.
    fn mark(&self) -> Option<u32> {
        let mut w = self.word();
        loop {
            match self.cas(w, mark(w)) {
                Ok(_) if !held(w) => return None,
                Ok(_) => return Some(mark(w)),
                Err(x) => w = x,
            }
        }
    }

    /// Step 4: ask for the next release if the lock is held and nobody has
    /// asked, then wait running for the grant; returns whether we hold the
    /// lock (else we withdrew, or could not ask).
    fn ask_and_wait(&self) -> bool {
        let mut w = self.word();
        loop {
            if !held(w) || asked(w) || granted(w) {
                return false;
            }
            match self.cas(w, ask(mark(w))) {
                Ok(_) => break,
                Err(x) => w = x,
            }
        }
        oneword::wait_for_grant(&self.word, &GRANT)
    }

    /// Release the mutex: `L -> -` in one CAS, else the slow path.
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

    /// Grant the lock to an asker, or release it (`-> -`) and wake one
    /// sleeper.
    #[cold]
    fn unlock_slow(&self) {
        let mut w = self.word();
        loop {
            let new = if asked(w) { grant(w) } else { 0 };
            // Release: pairs with the Acquire CAS of the next holder (a
            // barger, a marking waiter, or the asker's pick-up).
            match self
                .word
                .compare_exchange(w, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    // Released (free, or granted to the asker): the lock may
                    // be taken, used and left before we go on; after this
                    // only the futex address is touched (INV-WAKE-ADDR).
                    chaos::point(Site::AfterRelease);
                    if !asked(w) && w & CONTENDED != 0 {
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
one_word_lock_api!(RawMutexGrant, word);

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    const L: u32 = LOCKED;
    const C: u32 = CONTENDED;
    const H: u32 = HANDOFF;
    const G: u32 = GRANTED;

    #[test]
    fn size_is_one_word() {
        assert_eq!(std::mem::size_of::<RawMutexGrant>(), 4);
    }

    #[test]
    fn transitions_match_the_diagram() {
        assert_eq!(mark(0), L | C);
        assert_eq!(mark(L), L | C);
        assert_eq!(mark(L | C | H), L | C | H);
        assert_eq!(ask(L | C), L | C | H);
        assert_eq!(grant(L | C | H), L | C | G);
        assert_eq!(pick_up(L | C | G), L | C);
        assert_eq!(withdraw(L | C | H), L | C);
        assert!(held(L) && !held(C) && asked(H) && granted(G));
    }

    #[test]
    fn unlock_grants_to_an_asker_and_releases_otherwise() {
        let m = RawMutexGrant::new();
        m.word.store(L | C | H, Ordering::Relaxed);
        // SAFETY: the word says held; the test plays the holder.
        unsafe { m.unlock(MutexToken::from_id(0)) };
        assert_eq!(m.word(), L | C | G);
        m.word.store(L | C, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { m.unlock(MutexToken::from_id(0)) };
        assert_eq!(m.word(), 0);
    }

    #[test]
    fn an_asker_without_grant_withdraws() {
        let m = RawMutexGrant::new();
        m.word.store(L | C, Ordering::Relaxed);
        assert!(!m.ask_and_wait());
        assert_eq!(m.word(), L | C);
        // Nothing to ask for on a free lock.
        m.word.store(0, Ordering::Relaxed);
        assert!(!m.ask_and_wait());
    }

    #[test]
    fn timed_lock_times_out_then_succeeds() {
        let m = MutexGrant::new(0);
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
}

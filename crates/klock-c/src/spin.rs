//! [`KSpin`]: klock's runtime-selected spinlock ([`RawSpin`], `KLOCK_SPIN`)
//! with the state a tokenless C unlock needs (`klock_spinlock_t`).
//!
//! # Layout (16 bytes, align 4; all zero = unlocked)
//!
//! ```text
//! offset  0  klock RawSpin (lock word(s) of the KLOCK_SPIN variant): 8 bytes
//! offset  8  holder: the holder's klock thread id, 0 = not held
//! offset 12  token: the RawSpin unlock token of the current acquisition
//! ```
//!
//! Why not just the 8-byte `RawSpin`: a queued PV or unfair spinlock that
//! made a sleeping waiter queue head returns that waiter in its
//! [`Token`], and the unlock must wake it ("kick at unlock"); an unlock
//! without the token would leave the new head asleep and the lock stuck.
//! `RawSpin` keeps no token, so the C object keeps it beside the lock.
//! `holder` makes unlocking an unlocked lock a clean EPERM (one swap) and
//! relocking by the holder EDEADLK instead of a silent self-deadlock.
//!
//! # Protocol
//!
//! * lock: acquire `raw`; write `token` (the holder's cell); store `holder`
//!   (Release: publishes `token` to whoever swaps `holder` out).
//! * unlock: swap `holder` to 0 (Acquire: pairs with the lock's Release, so
//!   `token` is visible); 0 means nobody held it: EPERM, and `token` is not
//!   touched. Otherwise read `token`, then release `raw`. The next holder's
//!   write of `token` follows its acquisition of `raw`, which pairs with
//!   this release: the read happens before it.
//!
//! Any thread may unlock a held spinlock (glibc allows it; POSIX leaves it
//! undefined); the program must then order the hand-over itself.
//!
//! ```
//! use klock_c::spin::KSpin;
//! use libc::{EBUSY, EDEADLK, EPERM};
//! let s = KSpin::new();
//! assert_eq!(s.lock(), 0);
//! assert_eq!(s.lock(), EDEADLK);
//! assert_eq!(s.trylock(), EBUSY);
//! assert_eq!(s.destroy(), EBUSY);
//! assert_eq!(s.unlock(), 0);
//! assert_eq!(s.unlock(), EPERM);
//! assert_eq!(s.destroy(), 0);
//! ```

use klock::internal::tid::{ANON_ID, current_id};
use klock::{RawSpin, SpinToken as Token};
use libc::{EBUSY, EDEADLK, EPERM, c_int};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// A `KLOCK_SPIN`-selected spinlock with its unlock token (see the module
/// docs for the layout and the protocol).
#[repr(C)]
#[derive(Debug)]
pub struct KSpin {
    raw: RawSpin,
    holder: AtomicU32,
    token: UnsafeCell<Token>,
}

// SAFETY: `raw` and `holder` are atomics; `token` is written only by the
// thread that just acquired `raw` (before its Release store of `holder`) and
// read only by the thread whose Acquire swap took `holder` from non-zero to
// zero, before it releases `raw` (module docs, "Protocol"): the accesses are
// ordered by those pairs, never concurrent.
unsafe impl Sync for KSpin {}

const _: () = assert!(std::mem::size_of::<KSpin>() == 16);
const _: () = assert!(std::mem::align_of::<KSpin>() == 4);

impl Default for KSpin {
    fn default() -> Self {
        Self::new()
    }
}

impl KSpin {
    /// An unlocked spinlock (all zero).
    pub const fn new() -> Self {
        KSpin {
            raw: RawSpin::new(),
            holder: AtomicU32::new(0),
            token: UnsafeCell::new(Token::NONE),
        }
    }

    /// The klock spinlock inside.
    pub fn raw(&self) -> &RawSpin {
        &self.raw
    }

    /// Record the acquisition that returned `token`.
    #[inline]
    fn acquired(&self, token: Token, me: u32) -> c_int {
        // SAFETY: we hold `raw`; nobody else reads or writes `token` until
        // our Release store below is swapped out by an unlock (protocol).
        unsafe { *self.token.get() = token };
        // Release pairs with the Acquire swap in `unlock` (publishes `token`).
        self.holder.store(me, Ordering::Release);
        0
    }

    /// Lock, spinning (and, for the PV and unfair variants, sleeping) until
    /// it is free. EDEADLK if the caller already holds it.
    pub fn lock(&self) -> c_int {
        let me = current_id();
        if let Some(t) = self.raw.try_lock() {
            return self.acquired(t, me);
        }
        // Relaxed: only our own store can make it equal `me` (a thread sees
        // its own writes); the anonymous id is shared, so it proves nothing.
        if me != ANON_ID && self.holder.load(Ordering::Relaxed) == me {
            return EDEADLK;
        }
        let t = self.raw.lock();
        self.acquired(t, me)
    }

    /// Lock if free, else EBUSY.
    pub fn trylock(&self) -> c_int {
        match self.raw.try_lock() {
            Some(t) => self.acquired(t, current_id()),
            None => EBUSY,
        }
    }

    /// Unlock: EPERM if it is not locked.
    pub fn unlock(&self) -> c_int {
        // Acquire pairs with the Release store in `acquired`.
        if self.holder.swap(0, Ordering::Acquire) == 0 {
            return EPERM;
        }
        // SAFETY: our swap took `holder` from non-zero, so an acquisition
        // wrote `token` before its Release store, and no other unlock can
        // read it (their swaps see 0) or lock write it (`raw` is still held).
        let t = unsafe { *self.token.get() };
        // SAFETY: `raw` is held (holder was set, and only this swap clears
        // it), with this token; the variant is fixed for the process.
        unsafe { self.raw.unlock(t) };
        0
    }

    /// Destroy: EBUSY while locked (there is no destroyed state: a
    /// destroyed spinlock is an unlocked one).
    pub fn destroy(&self) -> c_int {
        // Relaxed: a snapshot; destroying a lock in use is the program's race.
        if self.holder.load(Ordering::Relaxed) != 0 || self.raw.is_locked() {
            EBUSY
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_thread_may_unlock_and_the_counter_holds() {
        let s = KSpin::new();
        assert_eq!(s.lock(), 0);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                assert_eq!(s.trylock(), EBUSY);
                assert_eq!(s.unlock(), 0);
            });
        });
        assert_eq!(s.unlock(), EPERM);

        struct Shared(UnsafeCell<u64>);
        // SAFETY: only accessed under `s`.
        unsafe impl Sync for Shared {}
        impl Shared {
            fn bump(&self) {
                // SAFETY: called under the spinlock only.
                unsafe { *self.0.get() += 1 };
            }
        }
        let n = Shared(UnsafeCell::new(0));
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..2000 {
                        assert_eq!(s.lock(), 0);
                        n.bump();
                        assert_eq!(s.unlock(), 0);
                    }
                });
            }
        });
        assert_eq!(unsafe { *n.0.get() }, 8000);
        assert_eq!(s.destroy(), 0);
    }
}

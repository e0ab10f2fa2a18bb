//! What issue 32's one-word mutexes share (the floor, `floor.rs`; the
//! barging mutex, `barge.rs`; the granting floor, `grant.rs`): the
//! `lock_api` glue, written once as [`one_word_lock_api!`], and the bounds
//! of the two designs that hand the lock to a running waiter.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget};

/// The read-only spin's budget of the hand-off designs, before sleeping and
/// after a wake-up: the floor's (about std's 100 PAUSEs). Under loom 0:
/// one look, no scheduling point (a loom yield there hides the
/// interleavings the models need).
pub(super) const SPIN_NS: u64 = if cfg!(loom) { 0 } else { 2_000 };

/// The bound on bypass: a woken waiter that has waited this long asks for
/// a hand-off. parking_lot forces a fair unlock every 0.5 ms on average;
/// ours costs no wake-up (the asker runs), so 1 ms. Under loom 0: every
/// woken waiter may ask.
pub(super) const BYPASS_BOUND_NS: u64 = if cfg!(loom) { 0 } else { 1_000_000 };

/// How long an asker waits running for its grant before it withdraws and
/// sleeps again (the holder may be preempted): a few short critical
/// sections on an overcommitted CPU. Under loom two iterations.
pub(super) const GRANT_SPIN_NS: u64 = if cfg!(loom) { 2 } else { 100_000 };

/// Has a waiter that started at `start` waited past [`BYPASS_BOUND_NS`]?
/// (Always, under loom, where the bound is 0.)
#[inline]
#[allow(clippy::absurd_extreme_comparisons)]
pub(super) fn past_bound(start: u64) -> bool {
    wait::now_ns().saturating_sub(start) >= BYPASS_BOUND_NS
}

/// A word's grant protocol, for [`wait_for_grant`]: which values say the
/// lock was passed to the asker, and the asker's two ways out.
pub(super) struct Grant {
    /// The word says the lock was passed to the asker.
    pub granted: fn(u32) -> bool,
    /// The asker takes the lock passed to it (`..|G -> ..`).
    pub pick_up: fn(u32) -> u32,
    /// The asker stops waiting running (`..|H -> ..`).
    pub withdraw: fn(u32) -> u32,
}

/// The asker of a hand-off waits running, at most [`GRANT_SPIN_NS`], for
/// the unlock's grant; then picks the lock up, or withdraws its request
/// (one CAS decides between the two against a racing grant). Returns
/// whether it holds the lock. Relaxed reads are hints; the pick-up's CAS
/// is Acquire, pairing with the Release CAS of the unlock's grant.
pub(super) fn wait_for_grant(word: &AtomicU32, g: &Grant) -> bool {
    let mut w = 0;
    wait::spin_until(&mut SpinBudget::new(GRANT_SPIN_NS), || {
        w = word.load(Ordering::Relaxed);
        (g.granted)(w)
    });
    loop {
        let (new, got) = if (g.granted)(w) {
            ((g.pick_up)(w), true)
        } else {
            ((g.withdraw)(w), false)
        };
        match word.compare_exchange(w, new, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return got,
            Err(x) => w = x,
        }
    }
}

/// For a one-word mutex type `$ty { $field: AtomicU32 }` (0 = unlocked):
/// its `new` (const; a plain fn under loom, whose atomics are not const)
/// and `Default`, and `lock_api::RawMutex` and `RawMutexTimed` over its
/// inherent `lock`, `try_lock`, `lock_until_ns`, `unlock` and
/// `is_locked`, with a `MutexToken` of id 0 (no owner identity: any thread
/// may release a guard it was sent).
macro_rules! one_word_lock_api {
    ($ty:ident, $field:ident) => {
        impl $ty {
            /// An unlocked mutex (word 0).
            #[cfg(not(loom))]
            pub const fn new() -> Self {
                $ty {
                    $field: AtomicU32::new(0),
                }
            }

            /// An unlocked mutex (word 0).
            #[cfg(loom)]
            pub fn new() -> Self {
                $ty {
                    $field: AtomicU32::new(0),
                }
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }

        #[cfg(not(loom))]
        // SAFETY: each type's module docs argue its mutual exclusion (the
        // word's acquiring CASes are Acquire, its releases Release); these
        // impls only forward. Timed acquisition returns a guard only when
        // the lock was acquired.
        unsafe impl lock_api::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = Self::new();
            type Guard = super::token::MutexToken;

            #[inline]
            fn lock(&self) -> super::token::MutexToken {
                <$ty>::lock(self)
            }

            #[inline]
            fn try_lock(&self) -> Option<super::token::MutexToken> {
                <$ty>::try_lock(self)
            }

            #[inline]
            unsafe fn unlock(&self, guard: super::token::MutexToken) {
                // SAFETY: forwarded contract: `guard` is this mutex's live
                // acquisition.
                unsafe { <$ty>::unlock(self, guard) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                <$ty>::is_locked(self)
            }
        }

        #[cfg(not(loom))]
        // SAFETY: as above.
        unsafe impl lock_api::RawMutexTimed for $ty {
            type Duration = std::time::Duration;
            type Instant = std::time::Instant;

            fn try_lock_for(
                &self,
                timeout: std::time::Duration,
            ) -> Option<super::token::MutexToken> {
                self.lock_until_ns($crate::wait::deadline_after(timeout))
            }

            fn try_lock_until(
                &self,
                timeout: std::time::Instant,
            ) -> Option<super::token::MutexToken> {
                self.lock_until_ns($crate::wait::instant_to_ns(timeout))
            }
        }
    };
}
pub(super) use one_word_lock_api;

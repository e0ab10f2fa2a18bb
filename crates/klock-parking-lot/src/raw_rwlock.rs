//! [`RawRwLock`]: lock_api 0.4's raw reader-writer traits over klock's
//! rwsem.
//!
//! klock's rwsem (lock_api 0.5) returns a `WriteToken` from every write
//! acquisition and wants it back at the write unlock, the fair write
//! unlock and the downgrades; lock_api 0.4 keeps no token. The writer
//! therefore parks its token in the raw lock itself (`token`, 4 bytes),
//! which only the thread holding the write lock touches.

use crate::deadlock::{self, Hold, Want};
use crate::k::{RawRwLock as KRwLock, RwLockRecursiveExt as _, WriteToken, ldhook};
use klock::internal::lockdep::Mode;
use lock_api05::{GuardSend, RawRwLockFair as _, RawRwLockTimed as _, RawRwLockUpgradeTimed as _};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

/// The raw reader-writer lock behind [`RwLock`](crate::RwLock): klock's
/// rwsem (16 bytes) and the current writer's token (4 bytes); parking_lot's
/// is one word.
///
/// It implements every lock_api 0.4 rwlock trait parking_lot 0.12's does:
/// [`RawRwLock`](lock_api::RawRwLock), [`RawRwLockFair`](lock_api::RawRwLockFair),
/// [`RawRwLockDowngrade`](lock_api::RawRwLockDowngrade),
/// [`RawRwLockTimed`](lock_api::RawRwLockTimed),
/// [`RawRwLockRecursive`](lock_api::RawRwLockRecursive),
/// [`RawRwLockRecursiveTimed`](lock_api::RawRwLockRecursiveTimed),
/// [`RawRwLockUpgrade`](lock_api::RawRwLockUpgrade),
/// [`RawRwLockUpgradeFair`](lock_api::RawRwLockUpgradeFair),
/// [`RawRwLockUpgradeDowngrade`](lock_api::RawRwLockUpgradeDowngrade) and
/// [`RawRwLockUpgradeTimed`](lock_api::RawRwLockUpgradeTimed).
///
/// # Differences from parking_lot
///
/// * **Fairness.** klock's rwsem is the kernel's: running readers and
///   writers may steal a free lock from sleeping waiters; the first waiting
///   writer asks for a hand-off after `KLOCK_RWSEM_HANDOFF_NS` (4 ms), after
///   which new readers queue. parking_lot is task-fair with eventual
///   fairness (a fair unlock about every 0.5 ms). Both bound a writer's wait.
/// * **Recursive reads** (`read_recursive`) join past waiting writers and
///   past an upgrade under way whenever no writer holds the lock, as in
///   parking_lot. A plain `read` by a thread that already holds a read lock
///   can deadlock behind a waiting writer in both.
/// * **Fair upgradable unlock** (`unlock_upgradable_fair`) hands the lock
///   only to a waiting writer; an upgradable reader at the head is woken
///   and may lose to a newcomer. `bump_shared`/`bump_exclusive` are
///   lock_api's defaults (fair unlock, then lock); `bump_upgradable` is
///   klock's.
/// * **Timed upgrades** (`try_upgrade_for`) stop new plain readers while
///   they wait, like the blocking upgrade.
///
/// ```
/// use parking_lot::lock_api::{RawRwLock as _, RawRwLockUpgrade as _, RawRwLockDowngrade as _};
/// let l = parking_lot::RawRwLock::INIT;
/// l.lock_shared();
/// assert!(l.try_lock_shared());
/// assert!(!l.try_lock_exclusive());
/// unsafe { l.unlock_shared(); l.unlock_shared() };
/// l.lock_upgradable();
/// unsafe { l.upgrade() };
/// assert!(l.is_locked_exclusive());
/// unsafe { l.downgrade(); l.unlock_shared() };
/// assert!(!l.is_locked());
/// ```
pub struct RawRwLock {
    /// The rwsem, inside a lock_api 0.5 `RwLock<_, ()>` only so that the
    /// timed recursive reads can use klock's `RwLockRecursiveExt` (which
    /// converts the deadline to klock's clock); everything else goes to the
    /// raw rwsem ([`Self::k`]).
    inner: lock_api05::RwLock<KRwLock, ()>,
    /// The write lock's token while it is held; written after a write
    /// acquisition, read before a write release, only by the writer.
    token: UnsafeCell<MaybeUninit<WriteToken>>,
}

// SAFETY: `token` is accessed only by the thread holding the write lock,
// between its acquisition (Acquire) and release (Release), so accesses are
// ordered by the lock itself; the rwsem is Send + Sync.
unsafe impl Sync for RawRwLock {}
// SAFETY: as above; a WriteToken is a plain id.
unsafe impl Send for RawRwLock {}

// parking_lot's RawRwLock (an atomic word) is RefUnwindSafe; so is this
// one: a panic cannot leave the token cell half-written (a 4-byte store by
// the writer), and the rwsem itself is atomics.
impl std::panic::RefUnwindSafe for RawRwLock {}

impl std::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawRwLock")
            .field("rwsem", self.k())
            .finish()
    }
}

impl RawRwLock {
    /// The raw rwsem.
    #[inline]
    fn k(&self) -> &KRwLock {
        // SAFETY: lock_api 0.5's `raw` is unsafe because locking through it
        // bypasses the guards of `inner`; `inner` guards `()` and no guard
        // of it lives past the calls in this file that make one
        // (the recursive timed reads forget theirs at once).
        unsafe { self.inner.raw() }
    }

    /// Lockdep's name for this lock: the rwsem's address (klock's `lockdep`
    /// hooks; its drop forgets it).
    #[inline]
    fn ld(&self) -> usize {
        ldhook::addr(self.k())
    }

    /// The deadlock detector's name for this lock: its address.
    #[inline]
    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// Park the token of a write acquisition.
    ///
    /// # Safety
    ///
    /// The calling thread has just acquired the write lock (`t`).
    #[inline]
    unsafe fn park(&self, t: WriteToken) {
        // SAFETY: only the write holder touches `token` (see the Sync impl).
        unsafe { (*self.token.get()).write(t) };
    }

    /// Take back the parked token.
    ///
    /// # Safety
    ///
    /// The write lock is held (so `park` ran for this acquisition) and the
    /// caller releases or converts it with the token.
    #[inline]
    unsafe fn unpark(&self) -> WriteToken {
        // SAFETY: as for `park`; initialised by the acquisition's `park`.
        unsafe { (*self.token.get()).assume_init_read() }
    }

    /// A write acquisition that succeeded (`t`): park it, tell the detector.
    #[inline]
    fn wrote(&self, t: Option<WriteToken>, from: Option<Hold>) -> bool {
        match t {
            Some(t) => {
                // SAFETY: `t` is the write acquisition we just made.
                unsafe { self.park(t) };
                deadlock::acquired(self.key(), from, Hold::Exclusive);
                true
            }
            None => false,
        }
    }

    /// A read or upgradable acquisition that did not block: tell the detector.
    #[inline]
    fn got(&self, ok: bool, hold: Hold) -> bool {
        if ok {
            deadlock::acquired(self.key(), None, hold);
        }
        ok
    }

    /// The recursive read of the timed variants: `f` makes a lock_api 0.5
    /// read guard, which is forgotten (the lock_api 0.4 guard releases it).
    #[inline]
    fn recursive_with(
        &self,
        f: impl FnOnce(
            &lock_api05::RwLock<KRwLock, ()>,
        ) -> Option<lock_api05::RwLockReadGuard<'_, KRwLock, ()>>,
    ) -> bool {
        match f(&self.inner) {
            Some(g) => {
                std::mem::forget(g);
                self.got(true, Hold::Shared)
            }
            None => false,
        }
    }
}

/// Lockdep's mode of a plain read: the rwsem's new readers queue behind a
/// waiting writer. Recursive reads pass waiting writers (`ReadPassing`); an
/// upgradable read is validated as a write. The lock_api 0.5 methods called
/// here (fair unlocks, timed forms, timed recursive reads) carry klock's
/// hooks; the inherent ones get theirs here.
const READ: Mode = Mode::Read;

// SAFETY: every acquisition forwards to klock's rwsem (its lock_api 0.5
// impl's contract: writers exclusive, readers only without a writer,
// Acquire/Release); the write token is parked and restored around it.
unsafe impl lock_api::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRwLock = RawRwLock {
        inner: lock_api05::RwLock::from_raw(KRwLock::new(), ()),
        token: UnsafeCell::new(MaybeUninit::uninit()),
    };

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock_shared(&self) {
        let k = self.k();
        ldhook::wait(
            self.ld(),
            READ,
            false,
            || {
                deadlock::acquire(
                    self.key(),
                    Want::Shared,
                    (None, Hold::Shared),
                    || k.try_lock_shared().then_some(()),
                    || k.lock_shared(),
                )
            },
            |_| true,
        )
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        let got = self.got(self.k().try_lock_shared(), Hold::Shared);
        ldhook::tried(self.ld(), READ, false, got);
        got
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Shared);
        // SAFETY: the caller holds a read lock (lock_api's contract).
        unsafe { self.k().unlock_shared() }
    }

    #[inline]
    fn lock_exclusive(&self) {
        let k = self.k();
        let t = ldhook::wait(
            self.ld(),
            Mode::Write,
            false,
            || {
                deadlock::acquire(
                    self.key(),
                    Want::Exclusive,
                    (None, Hold::Exclusive),
                    || k.try_lock_exclusive(),
                    || k.lock_exclusive(),
                )
            },
            |_| true,
        );
        // SAFETY: `t` is the write acquisition we just made.
        unsafe { self.park(t) };
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        let got = self.wrote(self.k().try_lock_exclusive(), None);
        ldhook::tried(self.ld(), Mode::Write, false, got);
        got
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the write lock, whose token is parked.
        unsafe { self.k().unlock_exclusive(self.unpark()) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.k().is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.k().is_locked_exclusive()
    }
}

// SAFETY: fair unlocks release like the plain ones, granting a waiting
// writer the lock in the releasing CAS.
unsafe impl lock_api::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        deadlock::released(self.key(), Hold::Shared);
        // SAFETY: the caller holds a read lock.
        unsafe { self.k().unlock_shared_fair(GuardSend::new()) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        deadlock::released(self.key(), Hold::Exclusive);
        // SAFETY: the caller holds the write lock, whose token is parked.
        unsafe { self.k().unlock_exclusive_fair(self.unpark()) }
    }
}

// SAFETY: write -> read in one step (no other writer can get in between).
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self) {
        ldhook::changed(self.ld(), READ);
        deadlock::acquired(self.key(), Some(Hold::Exclusive), Hold::Shared);
        // SAFETY: the caller holds the write lock, whose token is parked.
        unsafe { self.k().downgrade(self.unpark()) }
    }
}

// SAFETY: timed acquisitions return true only when they hold the lock.
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        self.got(
            self.k().try_lock_shared_for(timeout).is_some(),
            Hold::Shared,
        )
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> bool {
        self.got(
            self.k().try_lock_shared_until(timeout).is_some(),
            Hold::Shared,
        )
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        self.wrote(self.k().try_lock_exclusive_for(timeout), None)
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> bool {
        self.wrote(self.k().try_lock_exclusive_until(timeout), None)
    }
}

// SAFETY: a recursive read is a read lock (no writer holds the lock).
unsafe impl lock_api::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) {
        let k = self.k();
        ldhook::wait(
            self.ld(),
            Mode::ReadPassing,
            true,
            || {
                deadlock::acquire(
                    self.key(),
                    Want::SharedRecursive,
                    (None, Hold::Shared),
                    || k.try_lock_shared_recursive().then_some(()),
                    || k.lock_shared_recursive(),
                )
            },
            |_| true,
        )
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        let got = self.got(self.k().try_lock_shared_recursive(), Hold::Shared);
        ldhook::tried(self.ld(), Mode::ReadPassing, true, got);
        got
    }
}

// SAFETY: as RawRwLockRecursive, with a deadline.
unsafe impl lock_api::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        self.recursive_with(|l| l.try_read_recursive_for(timeout))
    }

    #[inline]
    fn try_lock_shared_recursive_until(&self, timeout: Instant) -> bool {
        self.recursive_with(|l| l.try_read_recursive_until(timeout))
    }
}

// SAFETY: an upgradable read excludes writers and other upgradable reads;
// upgrade waits for the readers to leave, then holds the write lock.
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        let k = self.k();
        ldhook::wait(
            self.ld(),
            Mode::Write,
            false,
            || {
                deadlock::acquire(
                    self.key(),
                    Want::Upgradable,
                    (None, Hold::Upgradable),
                    || k.try_lock_upgradable().then_some(()),
                    || k.lock_upgradable(),
                )
            },
            |_| true,
        )
    }

    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        let got = self.got(self.k().try_lock_upgradable(), Hold::Upgradable);
        ldhook::tried(self.ld(), Mode::Write, false, got);
        got
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Upgradable);
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.k().unlock_upgradable() }
    }

    #[inline]
    unsafe fn upgrade(&self) {
        let k = self.k();
        let t = deadlock::acquire(
            self.key(),
            Want::Upgrade,
            (Some(Hold::Upgradable), Hold::Exclusive),
            // SAFETY (both closures): the caller holds the upgradable lock.
            || unsafe { k.try_upgrade() },
            || unsafe { k.upgrade() },
        );
        // SAFETY: `t` is the write lock the upgrade gave us.
        unsafe { self.park(t) };
    }

    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        let t = unsafe { self.k().try_upgrade() };
        self.wrote(t, Some(Hold::Upgradable))
    }
}

// SAFETY: as RawRwLockUpgrade; the fair unlock hands the lock to a waiting
// writer, bump_upgradable lets waiting writers in and re-takes the lock.
unsafe impl lock_api::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        ldhook::release(self.ld());
        deadlock::released(self.key(), Hold::Upgradable);
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.k().unlock_upgradable_fair() }
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        // Lockdep: a release and a blocking retake.
        ldhook::release(self.ld());
        // SAFETY: the caller holds the upgradable read lock (it holds one
        // again when this returns).
        ldhook::wait(
            self.ld(),
            Mode::Write,
            false,
            || unsafe { self.k().bump_upgradable() },
            |_| true,
        )
    }
}

// SAFETY: the downgrades keep the lock held throughout.
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        ldhook::changed(self.ld(), READ);
        deadlock::acquired(self.key(), Some(Hold::Upgradable), Hold::Shared);
        // SAFETY: the caller holds the upgradable read lock.
        unsafe { self.k().downgrade_upgradable() }
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        deadlock::acquired(self.key(), Some(Hold::Exclusive), Hold::Upgradable);
        // SAFETY: the caller holds the write lock, whose token is parked.
        unsafe { self.k().downgrade_to_upgradable(self.unpark()) }
    }
}

// SAFETY: as RawRwLockUpgrade, with deadlines; a failed timed upgrade
// leaves the upgradable lock held.
unsafe impl lock_api::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        self.got(
            self.k().try_lock_upgradable_for(timeout).is_some(),
            Hold::Upgradable,
        )
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> bool {
        self.got(
            self.k().try_lock_upgradable_until(timeout).is_some(),
            Hold::Upgradable,
        )
    }

    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        let t = unsafe { self.k().try_upgrade_for(GuardSend::new(), timeout) };
        self.wrote(t.ok(), Some(Hold::Upgradable))
    }

    #[inline]
    unsafe fn try_upgrade_until(&self, timeout: Instant) -> bool {
        // SAFETY: the caller holds the upgradable read lock.
        let t = unsafe { self.k().try_upgrade_until(GuardSend::new(), timeout) };
        self.wrote(t.ok(), Some(Hold::Upgradable))
    }
}

//! `lock_api`: the `RawRwLock*` trait impls of [`RawRwLockFloorOf`](super::RawRwLockFloorOf)
//! (plain, fair, downgrade, timed, upgradable with its fair, downgrade and
//! timed variants), each forwarding to the inherent methods; and
//! [`RawRwLockRecursive`](crate::rwlock::RawRwLockRecursive) for the recursive reads.

use super::RawRwLockFloorOf;
use crate::ldhook;
use crate::lockdep::Mode;
use crate::wait;

/// Lockdep's mode of a read: the floor is writer-preferring (a new reader
/// waits while a writer waits), so a read can wait while the lock is
/// read-held. Recursive reads pass waiting writers: `ReadPassing`. An
/// upgradable read excludes writers and other upgradable reads: validated
/// as a write (the upgrade keeps that mode).
const READ: Mode = Mode::Read;

// SAFETY: mutual exclusion: the readers field leaves 0 for write-locked only
// by an Acquire CAS from a free word, and no reader adds while it reads
// write-locked (`is_read_lockable`); each side's unlock is a Release RMW.
// The guards carry nothing: any thread may release a guard it was sent.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLock
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type SharedGuard = lock_api::GuardSend;
    type ExclusiveGuard = lock_api::GuardSend;

    #[inline]
    fn lock_shared(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || Self::lock_shared(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
        let got = Self::try_lock_shared(self);
        ldhook::tried(ldhook::addr(self), READ, false, got);
        got.then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is a live read lock.
        unsafe { Self::unlock_shared(self) }
    }
    #[inline]
    fn lock_exclusive(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || Self::lock_exclusive(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<lock_api::GuardSend> {
        let got = Self::try_lock_exclusive(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is the live write lock.
        unsafe { Self::unlock_exclusive(self) }
    }
    fn is_locked(&self) -> bool {
        Self::is_locked(self)
    }
    fn is_locked_exclusive(&self) -> bool {
        Self::is_locked_exclusive(self)
    }
}

// SAFETY: as above; a timed acquisition returns a guard only when it holds.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockTimed
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || self.lock_shared_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_shared_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || self.lock_shared_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_exclusive_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_exclusive_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
}

// SAFETY: the fair unlocks are the plain ones: with turns every unlock
// already hands over (the writers' or the readers' turn), and the floor
// without turns is std's unfair protocol either way.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockFair
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    unsafe fn unlock_shared_fair(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is a live read lock.
        unsafe { Self::unlock_shared(self) }
    }
    unsafe fn unlock_exclusive_fair(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is the live write lock.
        unsafe { Self::unlock_exclusive(self) }
    }
}

// SAFETY: a downgrade turns the write lock into one read lock in one
// Release RMW; no writer can enter in between.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockDowngrade
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    unsafe fn downgrade(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        ldhook::changed(ldhook::addr(self), READ);
        // SAFETY: forwarded: the guard is the live write lock.
        unsafe { Self::downgrade(self) };
        lock_api::GuardSend::new()
    }
}

// SAFETY: an upgradable read is a read lock plus the UPGRADABLE bit, which
// one reader at a time adds (a CAS from a word without it); an upgrade
// takes the write lock by an Acquire CAS only from a word with one reader
// (itself), so every other read released before it (Release RMWs).
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockUpgrade
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    type UpgradableGuard = lock_api::GuardSend;

    fn lock_upgradable(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || Self::lock_upgradable(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }
    fn try_lock_upgradable(&self) -> Option<lock_api::GuardSend> {
        let got = Self::try_lock_upgradable(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }
    unsafe fn unlock_upgradable(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        unsafe { Self::unlock_upgradable(self) }
    }
    unsafe fn upgrade(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        unsafe { Self::upgrade(self) };
        lock_api::GuardSend::new()
    }
    unsafe fn try_upgrade(
        &self,
        g: lock_api::GuardSend,
    ) -> Result<lock_api::GuardSend, lock_api::GuardSend> {
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        if unsafe { Self::try_upgrade(self) } {
            Ok(lock_api::GuardSend::new())
        } else {
            Err(g)
        }
    }
}

// SAFETY: as for `RawRwLockFair`.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockUpgradeFair
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    unsafe fn unlock_upgradable_fair(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        unsafe { Self::unlock_upgradable(self) }
    }
}

// SAFETY: both downgrades are one Release RMW that keeps a read lock held.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockUpgradeDowngrade
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    unsafe fn downgrade_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        ldhook::changed(ldhook::addr(self), READ);
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        unsafe { Self::downgrade_upgradable(self) };
        lock_api::GuardSend::new()
    }
    unsafe fn downgrade_to_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        // SAFETY: forwarded: the guard is the live write lock.
        unsafe { Self::downgrade_to_upgradable(self) };
        lock_api::GuardSend::new()
    }
}

// SAFETY: as above; a timed form returns a guard only when it holds.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockUpgradeTimed
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    fn try_lock_upgradable_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_upgradable_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_upgradable_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_upgradable_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    unsafe fn try_upgrade_for(
        &self,
        g: lock_api::GuardSend,
        t: Self::Duration,
    ) -> Result<lock_api::GuardSend, lock_api::GuardSend> {
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        if unsafe { self.upgrade_until_ns(wait::deadline_after(t)) } {
            Ok(lock_api::GuardSend::new())
        } else {
            Err(g)
        }
    }
    unsafe fn try_upgrade_until(
        &self,
        g: lock_api::GuardSend,
        t: Self::Instant,
    ) -> Result<lock_api::GuardSend, lock_api::GuardSend> {
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        if unsafe { self.upgrade_until_ns(wait::instant_to_ns(t)) } {
            Ok(lock_api::GuardSend::new())
        } else {
            Err(g)
        }
    }
}

impl<const PHASED: bool, const READ_TURN_US: u32> crate::rwlock::RawRwLockRecursive
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    fn lock_shared_recursive(&self) {
        let a = ldhook::addr(self);
        ldhook::wait(
            a,
            Mode::ReadPassing,
            true,
            || Self::lock_shared_recursive(self),
            |_| true,
        )
    }
    fn try_lock_shared_recursive(&self) -> bool {
        let got = Self::try_lock_shared_recursive(self);
        ldhook::tried(ldhook::addr(self), Mode::ReadPassing, true, got);
        got
    }
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        let (a, d) = (ldhook::addr(self), deadline_ns);
        ldhook::wait(
            a,
            Mode::ReadPassing,
            true,
            || Self::lock_shared_recursive_until_ns(self, d),
            |&ok| ok,
        )
    }
}

/// Lockdep: the rwlock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<const PHASED: bool, const READ_TURN_US: u32> Drop for RawRwLockFloorOf<PHASED, READ_TURN_US> {
    fn drop(&mut self) {
        ldhook::forget(ldhook::addr(self));
    }
}

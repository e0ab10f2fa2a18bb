//! `lock_api`: the `RawRwLock*` trait impls of [`RawRwLockFloorOf`](super::RawRwLockFloorOf)
//! (plain, fair, downgrade, timed, upgradable with its fair, downgrade and
//! timed variants), each forwarding to the inherent methods; and
//! [`RawRwLockRecursive`](crate::rwlock::RawRwLockRecursive) for the recursive reads.

use super::RawRwLockFloorOf;
use crate::wait;

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
        Self::lock_shared(self);
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
        Self::try_lock_shared(self).then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded: the guard is a live read lock.
        unsafe { Self::unlock_shared(self) }
    }
    #[inline]
    fn lock_exclusive(&self) -> lock_api::GuardSend {
        Self::lock_exclusive(self);
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<lock_api::GuardSend> {
        Self::try_lock_exclusive(self).then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, _: lock_api::GuardSend) {
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
        self.lock_shared_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_shared_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_shared_until_ns(wait::instant_to_ns(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        self.lock_exclusive_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_exclusive_until_ns(wait::instant_to_ns(t))
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
        // SAFETY: forwarded: the guard is a live read lock.
        unsafe { Self::unlock_shared(self) }
    }
    unsafe fn unlock_exclusive_fair(&self, _: lock_api::GuardSend) {
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
        Self::lock_upgradable(self);
        lock_api::GuardSend::new()
    }
    fn try_lock_upgradable(&self) -> Option<lock_api::GuardSend> {
        Self::try_lock_upgradable(self).then(lock_api::GuardSend::new)
    }
    unsafe fn unlock_upgradable(&self, _: lock_api::GuardSend) {
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
        // SAFETY: forwarded: the guard is the live upgradable read lock.
        unsafe { Self::unlock_upgradable(self) }
    }
}

// SAFETY: both downgrades are one Release RMW that keeps a read lock held.
unsafe impl<const PHASED: bool, const READ_TURN_US: u32> lock_api::RawRwLockUpgradeDowngrade
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    unsafe fn downgrade_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
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
        self.lock_upgradable_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_upgradable_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_upgradable_until_ns(wait::instant_to_ns(t))
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
        Self::lock_shared_recursive(self)
    }
    fn try_lock_shared_recursive(&self) -> bool {
        Self::try_lock_shared_recursive(self)
    }
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        Self::lock_shared_recursive_until_ns(self, deadline_ns)
    }
}

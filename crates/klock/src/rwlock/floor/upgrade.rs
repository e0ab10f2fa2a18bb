//! The floor's upgradable reads and downgrades (see "Upgradable reads" in
//! the module docs). An upgradable read is a read lock plus the UPGRADABLE
//! bit, which at most one reader holds; it waits as a read does (plain
//! readers never wait for the bit, so they sleep only behind writers). An
//! upgrade announces WRITERS_WAITING, which stops new readers, and sleeps
//! on `upgrade_notify` until the reader that leaves it alone wakes it
//! (`is_upgrade_drained`).

use super::{
    RW_FLOOR_UPGRADABLE, RW_FLOOR_WRITE_LOCKED, RW_FLOOR_WRITERS_WAITING, RawRwLockFloorOf,
    ReadKind, has_readers_waiting, has_writers_waiting, is_write_locked, readers,
};
use crate::chaos::{self, Site};
use crate::sync::atomic::Ordering;
use crate::wait;

/// One read lock in the count.
const READ_LOCKED: u32 = 1;

/// The readers field and the UPGRADABLE bit, which an upgrade replaces by
/// write-locked.
const READ_FIELDS: u32 = RW_FLOOR_WRITE_LOCKED | RW_FLOOR_UPGRADABLE;

/// Is the upgradable reader the only reader in `s`?
#[inline]
fn is_alone(s: u32) -> bool {
    readers(s) == 1
}

impl<const PHASED: bool, const READ_TURN_US: u32> RawRwLockFloorOf<PHASED, READ_TURN_US> {
    // ---- transitions ----------------------------------------------------------

    /// `(1,U,xy) -> (W,-,xy)`: the upgradable reader, alone, takes the
    /// write lock. Acquire: pairs with the Release of every read unlock
    /// (their critical sections come before the writer's).
    #[inline]
    fn upgrade_from(&self, s: u32) -> Result<(), u32> {
        debug_assert!(is_alone(s) && s & RW_FLOOR_UPGRADABLE != 0);
        self.state
            .compare_exchange(
                s,
                (s & !READ_FIELDS) | RW_FLOOR_WRITE_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .map(drop)
    }

    /// While the lock is read-held (or free) with READERS_WAITING: `(n,R*)
    /// -> (n,-*)` and wake every reader. For a release of the UPGRADABLE
    /// bit, which upgradable readers may sleep behind; plain readers that
    /// wake re-check and sleep again.
    fn wake_readers_while_read(&self, mut s: u32) {
        while has_readers_waiting(s) && !is_write_locked(s) {
            // The window between a release (or a downgrade) and its wake-up.
            chaos::point(Site::AfterRelease);
            match self.wake_readers(s) {
                Ok(()) => return,
                Err(x) => s = x,
            }
        }
    }

    // ---- upgradable reads -----------------------------------------------------

    /// Take an upgradable read lock if that needs no waiting: `(n,-,--) ->
    /// (n+1,U,--)`.
    ///
    /// ```
    /// let l = klock::internal::rwlock::RawRwLockBatched::new();
    /// assert!(l.try_lock_upgradable());
    /// assert!(!l.try_lock_upgradable(), "one upgradable reader at a time");
    /// assert!(l.try_lock_shared(), "plain readers share it");
    /// unsafe { l.unlock_shared() };
    /// unsafe { l.unlock_upgradable() };
    /// ```
    #[inline]
    pub fn try_lock_upgradable(&self) -> bool {
        self.try_read(ReadKind::Upgradable)
    }

    /// Take an upgradable read lock, sleeping while a writer holds or
    /// waits or another reader holds one.
    #[inline]
    pub fn lock_upgradable(&self) {
        self.read(ReadKind::Upgradable, None);
    }

    /// [`lock_upgradable`](Self::lock_upgradable), sleeping at most until
    /// `deadline_ns`. `false`: the deadline passed.
    pub fn lock_upgradable_until_ns(&self, deadline_ns: u64) -> bool {
        self.read(ReadKind::Upgradable, Some(deadline_ns))
    }

    /// Release an upgradable read lock: `(n,U,**) -> (n-1,-,**)`, then as a
    /// read release, and wake readers that may wait for the bit.
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable read lock.
    #[inline]
    pub unsafe fn unlock_upgradable(&self) {
        const D: u32 = READ_LOCKED | RW_FLOOR_UPGRADABLE;
        // Release: as in `unlock_shared`.
        let s = self.state.fetch_sub(D, Ordering::Release) - D;
        self.after_read_release(s);
        if has_readers_waiting(s) {
            // Relaxed: a fresh look; the CAS in `wake_readers` decides.
            self.wake_readers_while_read(self.state.load(Ordering::Relaxed));
        }
    }

    /// Upgrade without waiting: `(1,U,xy) -> (W,-,xy)` if no other reader
    /// holds the lock. `false`: the upgradable read lock is still held.
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable read lock.
    ///
    /// ```
    /// let l = klock::internal::rwlock::RawRwLockBatched::new();
    /// l.lock_upgradable();
    /// l.lock_shared();
    /// assert!(!unsafe { l.try_upgrade() }, "another reader is inside");
    /// unsafe { l.unlock_shared() };
    /// assert!(unsafe { l.try_upgrade() });
    /// assert!(l.is_locked_exclusive());
    /// unsafe { l.unlock_exclusive() };
    /// ```
    #[inline]
    pub unsafe fn try_upgrade(&self) -> bool {
        // Relaxed: the CAS is the Acquire.
        let mut s = self.state.load(Ordering::Relaxed);
        while is_alone(s) {
            match self.upgrade_from(s) {
                Ok(()) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Upgrade, sleeping until the other readers have left.
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable read lock.
    #[inline]
    pub unsafe fn upgrade(&self) {
        // SAFETY: forwarded.
        if !unsafe { self.try_upgrade() } {
            self.upgrade_slow(None);
        }
    }

    /// [`upgrade`](Self::upgrade), sleeping at most until `deadline_ns`.
    /// `false`: the deadline passed and the upgradable read lock is still
    /// held; the WRITERS_WAITING the upgrade set is taken back
    /// (`withdraw_upgrade`).
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable read lock.
    pub unsafe fn upgrade_until_ns(&self, deadline_ns: u64) -> bool {
        // SAFETY: forwarded.
        (unsafe { self.try_upgrade() }) || self.upgrade_slow(Some(deadline_ns))
    }

    /// The upgrade slow path, in four steps: take the write lock once
    /// alone; else announce WRITERS_WAITING (new readers stay out); spin
    /// while others read; sleep on `upgrade_notify` until the last of them
    /// bumps it. `false`: timed out.
    #[cold]
    fn upgrade_slow(&self, deadline: Option<u64>) -> bool {
        // Relaxed: the CAS is the Acquire.
        let mut s = self.state.load(Ordering::Relaxed);
        let mut announced = false;
        loop {
            // 1. Take the write lock once this is the only reader.
            if is_alone(s) {
                match self.upgrade_from(s) {
                    Ok(()) => return true,
                    Err(x) => s = x,
                }
                continue;
            }
            // 2. Announce: new readers wait, and the last other reader out
            //    sees `is_upgrade_drained`. Nobody clears the bit while a
            //    reader holds the lock.
            if !has_writers_waiting(s)
                && let Err(x) = self.announce(s, RW_FLOOR_WRITERS_WAITING)
            {
                s = x;
                continue;
            }
            announced |= !has_writers_waiting(s);
            // 3. Spin while the others may leave soon.
            s = self.spin_while(|s| !is_alone(s));
            if is_alone(s) {
                continue;
            }
            // Acquire: pairs with the Release bump in `wake_upgrader`, so the
            // re-check below sees the release that bumped it.
            let seq = self.upgrade_notify.load(Ordering::Acquire);
            // Relaxed: the futex compares `seq`.
            s = self.state.load(Ordering::Relaxed);
            if is_alone(s) {
                continue;
            }
            // 4. Sleep until the last other reader bumps `upgrade_notify`.
            let Some(timeout) = wait::remaining(deadline) else {
                if announced {
                    self.withdraw_upgrade();
                }
                return false;
            };
            chaos::point(Site::BeforeSleep);
            wait::futex_wait(&self.upgrade_notify, seq, timeout);
            chaos::point(Site::AfterWake);
            // Relaxed: the CAS is the Acquire.
            s = self.state.load(Ordering::Relaxed);
        }
    }

    /// A timed-out upgrade takes back the WRITERS_WAITING it set, so that
    /// the readers it kept out (its own thread's included) may enter:
    /// `(n,U,*W) -> (n,U,*-)`, then wake one writer (a writer that slept
    /// behind the bit meanwhile sets it again: the floor's clear-then-wake,
    /// as in `wake_writer_or_readers`) and the readers that wait.
    #[cold]
    fn withdraw_upgrade(&self) {
        // Relaxed (load and CAS): the Release bump in `wake_writer` orders
        // the cleared bit before a writer's Acquire load of its sequence.
        let mut s = self.state.load(Ordering::Relaxed);
        while has_writers_waiting(s) {
            match self.state.compare_exchange(
                s,
                s & !RW_FLOOR_WRITERS_WAITING,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    s &= !RW_FLOOR_WRITERS_WAITING;
                    break;
                }
                Err(x) => s = x,
            }
        }
        self.wake_writer();
        self.wake_readers_while_read(s);
    }

    // ---- downgrades -------------------------------------------------------------

    /// Turn the write lock into a read lock: `(W,-,xy) -> (1,-,xy)`, then
    /// wake waiting readers (with turns they enter past waiting writers).
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    ///
    /// ```
    /// let l = klock::internal::rwlock::RawRwLockBatched::new();
    /// l.lock_exclusive();
    /// unsafe { l.downgrade() };
    /// assert!(l.try_lock_shared());
    /// unsafe { l.unlock_shared() };
    /// unsafe { l.unlock_shared() };
    /// assert!(!l.is_locked());
    /// ```
    #[inline]
    pub unsafe fn downgrade(&self) {
        const D: u32 = RW_FLOOR_WRITE_LOCKED - READ_LOCKED;
        // Release: pairs with the Acquire CAS of the readers that enter.
        let s = self.state.fetch_sub(D, Ordering::Release) - D;
        self.wake_readers_while_read(s);
    }

    /// Turn the write lock into an upgradable read lock: `(W,-,xy) ->
    /// (1,U,xy)`, then wake waiting readers.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    #[inline]
    pub unsafe fn downgrade_to_upgradable(&self) {
        // (READ_LOCKED | UPGRADABLE) - WRITE_LOCKED, modulo 2^32: the count
        // goes from all ones to 1 and the free UPGRADABLE bit is set.
        const D: u32 = (READ_LOCKED | RW_FLOOR_UPGRADABLE).wrapping_sub(RW_FLOOR_WRITE_LOCKED);
        // Release: as in `downgrade`.
        let s = self.state.fetch_add(D, Ordering::Release).wrapping_add(D);
        self.wake_readers_while_read(s);
    }

    /// Turn the upgradable read lock into a plain one: `(n,U,xy) ->
    /// (n,-,xy)`, then wake readers that may wait for the bit.
    ///
    /// # Safety
    ///
    /// The caller holds the upgradable read lock.
    #[inline]
    pub unsafe fn downgrade_upgradable(&self) {
        // Release: an upgradable reader that takes the bit next orders
        // after this one's reads (only reads: the bit guards no data).
        let s = self.state.fetch_sub(RW_FLOOR_UPGRADABLE, Ordering::Release) - RW_FLOOR_UPGRADABLE;
        self.wake_readers_while_read(s);
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::super::{RawRwLockBatched, RawRwLockFloor};
    use super::*;

    const W: u32 = RW_FLOOR_WRITERS_WAITING;
    const R: u32 = super::super::RW_FLOOR_READERS_WAITING;
    const U: u32 = RW_FLOOR_UPGRADABLE;
    const X: u32 = RW_FLOOR_WRITE_LOCKED;

    fn with_state(s: u32) -> RawRwLockBatched {
        let l = RawRwLockBatched::new();
        l.state.store(s, Ordering::Relaxed);
        l
    }

    #[test]
    fn upgradable_read_is_n_to_n_plus_1_with_the_bit() {
        let l = with_state(2);
        assert!(l.try_lock_upgradable());
        assert_eq!(l.state(), 3 | U);
        assert!(!l.try_lock_upgradable(), "one upgradable reader");
        assert!(l.try_lock_shared(), "plain readers do not wait for the bit");
        assert_eq!(l.state(), 4 | U);
        let l = with_state(1 | W);
        assert!(
            !l.try_lock_upgradable(),
            "behind a waiting writer, as a read"
        );
    }

    #[test]
    fn upgrade_from_is_1u_to_write_locked_keeping_waiter_bits() {
        let l = with_state(1 | U | R | W);
        assert!(l.upgrade_from(1 | U | R | W).is_ok());
        assert_eq!(l.state(), X | R | W);
        let l = with_state(2 | U);
        // SAFETY: the state says an upgradable read is held (a unit test of the word).
        assert!(!unsafe { l.try_upgrade() }, "another reader is inside");
        assert_eq!(l.state(), 2 | U);
    }

    #[test]
    fn a_reader_leaving_an_upgrader_alone_bumps_upgrade_notify() {
        let l = with_state(2 | U | W);
        // SAFETY: the state holds a plain read lock besides the upgradable one.
        unsafe { l.unlock_shared() };
        assert_eq!(l.state(), 1 | U | W);
        assert_eq!(l.upgrade_notify.load(Ordering::Relaxed), 1);
        let l = with_state(3 | U | W);
        // SAFETY: as above.
        unsafe { l.unlock_shared() };
        assert_eq!(l.upgrade_notify.load(Ordering::Relaxed), 0, "not alone yet");
        let l = with_state(2 | U);
        // SAFETY: as above.
        unsafe { l.unlock_shared() };
        assert_eq!(
            l.upgrade_notify.load(Ordering::Relaxed),
            0,
            "no upgrade announced"
        );
    }

    #[test]
    fn unlock_upgradable_clears_the_bit_and_wakes_readers_behind_it() {
        let l = with_state(2 | U | R);
        // SAFETY: the state holds the upgradable read lock.
        unsafe { l.unlock_upgradable() };
        assert_eq!(l.state(), 1, "readers woken, R cleared");
        let l = with_state(1 | U);
        // SAFETY: as above.
        unsafe { l.unlock_upgradable() };
        assert_eq!(l.state(), 0);
    }

    #[test]
    fn downgrades_keep_waiter_bits_and_wake_readers() {
        let l = with_state(X | W | R);
        // SAFETY: the state is write-locked.
        unsafe { l.downgrade() };
        assert_eq!(l.state(), 1 | W, "(W,-,RW) -> (1,-,-W), readers woken");
        let l = with_state(X | W);
        // SAFETY: as above.
        unsafe { l.downgrade_to_upgradable() };
        assert_eq!(l.state(), 1 | U | W);
        // SAFETY: the state holds the upgradable read lock.
        unsafe { l.downgrade_upgradable() };
        assert_eq!(l.state(), 1 | W);
    }

    #[test]
    fn a_timed_out_upgrade_takes_back_its_writers_waiting() {
        let l = RawRwLockBatched::new();
        l.lock_upgradable();
        l.lock_shared();
        // SAFETY: this thread holds the upgradable read lock.
        assert!(
            !unsafe { l.upgrade_until_ns(0) },
            "another reader is inside"
        );
        assert_eq!(l.state(), 2 | U, "(2,U,-W) -> (2,U,--)");
        assert!(l.try_lock_shared(), "the thread's own plain read gets in");
        // SAFETY: the three read locks taken above.
        unsafe {
            l.unlock_shared();
            l.unlock_shared();
            l.unlock_upgradable();
        }
        assert_eq!(l.state(), 0);
        // A reader that slept behind the announced upgrade (READERS_WAITING)
        // is woken too, or the thread's own plain read would still wait.
        let l = with_state(2 | U | R);
        // SAFETY: the state says an upgradable read is held (a unit test of the word).
        assert!(!unsafe { l.upgrade_until_ns(0) });
        assert_eq!(l.state(), 2 | U, "(2,U,RW) -> (2,U,--), readers woken");
    }

    #[test]
    fn an_upgrade_waits_for_the_other_reader_and_stops_new_ones() {
        use std::sync::Arc;
        let l = Arc::new(RawRwLockFloor::new());
        l.lock_shared();
        l.lock_upgradable();
        let l2 = Arc::clone(&l);
        let t = std::thread::spawn(move || {
            // SAFETY: this thread's upgradable read lock (taken above, moved here).
            unsafe { l2.upgrade() };
            // SAFETY: the upgrade returned the write lock.
            unsafe { l2.unlock_exclusive() };
        });
        while !has_writers_waiting(l.state()) {
            std::thread::yield_now();
        }
        assert!(
            !l.try_lock_shared(),
            "an announced upgrade stops new readers"
        );
        // SAFETY: the plain read lock taken above.
        unsafe { l.unlock_shared() };
        t.join().unwrap();
        assert_eq!(l.state() & !W, 0);
    }
}

//! Downgrades, upgradable reads and upgrades: `downgrade`
//! (`(0,X) -> (1,-)`), the upgradable read (`(n,-) -> (n+1,U)`, blocking,
//! try or timed), its plain and fair releases and `bump_upgradable`,
//! `downgrade_upgradable` (`(n,U) -> (n,-)`), `downgrade_to_upgradable`
//! (`(0,X) -> (1,U)`), and the upgrade (`(1,U) -> (0,X)`, waiting on the
//! count word with UPGRADING set, timed with `cancel_upgrade`).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (0,X)   --downgrade--> (1,-) (and queued readers granted)
//!  (1,U)   --upgrade: set G, wait for the other readers--> (1,U|G) --> (0,X)
//!  (n,U|G[|W]) --timed upgrade gives up (cancel_upgrade), then hand_on--> (n+k,U[|W])  readers queued meanwhile granted
//!  (x,W..) --timed upgradable read gives up (leave)--> (x,[W])  K cleared, the turn passed on
//!  (1,U|W) --unlock_upgradable_fair, head writer: hand_on passes X--> (0,X[|W])
//!  (n,U)   --downgrade_upgradable--> (n,-) (an upgrader at the head woken)
//!  (0,X)   --downgrade_to_upgradable--> (1,U) (and queued readers granted)
//! ```

use super::raw::{Got, RawRwLock, WriteToken};
use super::word::Class;
use super::word::{
    OWNER_READER, READER_BIAS, UPGRADE, UPGRADING, WAITERS, WRITER, has_waiters, is_lockable_by,
    readers,
};
use super::word::{cancel_upgrading, start_upgrading, upgrade_after_wait, upgrade_at_once};
use crate::chaos::{self, Site};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, WaitOutcome};

/// Aborts the process if dropped: held across a re-acquisition that must
/// not unwind (lock_api's `bump_*`: the caller's guard would stand for a
/// lock it no longer holds); forgotten once it returned.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        std::process::abort();
    }
}

impl<S: SpinPolicy> RawRwLock<S> {
    /// Turn the write lock into a read lock (`(0,X) -> (1,-)`), granting
    /// queued readers at the head the lock too.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// unsafe { l.downgrade(t) };
    /// assert!(l.try_lock_shared());
    /// unsafe { l.unlock_shared(); l.unlock_shared() };
    /// ```
    pub unsafe fn downgrade(&self, token: WriteToken) {
        let _ = token;
        self.set_reader_owned_from_writer();
        // SAFETY: forwarded.
        unsafe { self.release_share(WRITER, READER_BIAS, false) }
    }

    #[inline]
    fn set_reader_owned_from_writer(&self) {
        // Relaxed: a hint, stored while we still hold the lock.
        self.owner.store(OWNER_READER, Ordering::Relaxed);
    }

    /// Take an upgradable read lock: shared with readers, exclusive with
    /// writers and other upgradable readers (`(n,-) -> (n+1,U)`).
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_upgradable();
    /// assert!(l.try_lock_shared());
    /// assert!(!l.try_lock_upgradable());
    /// unsafe { l.unlock_shared() };
    /// let t = unsafe { l.upgrade() };
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    pub fn lock_upgradable(&self) {
        let got = self.upgradable(None);
        debug_assert!(got);
    }

    /// [`lock_upgradable`](Self::lock_upgradable) with a deadline in
    /// [`wait::now_ns`] time: `true` if it was taken (release it with
    /// [`unlock_upgradable`](Self::unlock_upgradable)), `false` if the
    /// deadline passed first (nothing held). A queued upgrader that gives up
    /// leaves the list as a timed writer does (`leave`: it clears WAKING,
    /// which may stand for a wake-up it consumed, and passes the turn on).
    /// The `lock_api::RawRwLockUpgradeTimed` acquisitions go through it;
    /// public for the loom models (see
    /// [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// Transitions: `(n,-) -> (n+1,U)` as
    /// [`lock_upgradable`](Self::lock_upgradable); queued, `(n,W..) ->
    /// (n+1,U[|W])` on a re-try (`take_queued`), or on giving up the
    /// timed-out waiter's exit (`(x,W|K..) -> (x,[W])`, WAKING cleared,
    /// WAITERS/PREFQ/HANDOFF cleared as the list empties).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_upgradable();
    /// // Another upgradable reader excludes us; the deadline has passed.
    /// assert!(!l.lock_upgradable_until_ns(0));
    /// unsafe { l.unlock_upgradable() };
    /// assert!(l.lock_upgradable_until_ns(klock::internal::wait::now_ns() + 1_000_000));
    /// unsafe { l.unlock_upgradable() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) fn lock_upgradable_until_ns(&self, deadline: u64) -> bool {
        self.upgradable(Some(deadline))
    }

    /// The upgradable read, blocking or until `deadline`: the polite try
    /// (no barging past waiters), a steal, or the wait list.
    fn upgradable(&self, deadline: Option<u64>) -> bool {
        if self.try_lock_upgradable() {
            return true;
        }
        let got = self.try_take(Class::Upgrader)
            || matches!(self.wait(Class::Upgrader, deadline, false), Got::Yes);
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Try to take an upgradable read lock without waiting.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// assert!(l.try_lock_upgradable());
    /// unsafe { l.unlock_upgradable() };
    /// ```
    #[inline]
    pub fn try_lock_upgradable(&self) -> bool {
        let got = self.add_while(Class::Upgrader.share(), |c| {
            c & WAITERS == 0 && is_lockable_by(c, Class::Upgrader, false)
        });
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Release an upgradable read lock.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    pub unsafe fn unlock_upgradable(&self) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS | UPGRADE, 0, false) }
    }

    /// Release an upgradable read lock fairly (`lock_api`'s
    /// `unlock_upgradable_fair`): `(n,U) -> (n-1,-)` as
    /// [`unlock_upgradable`](Self::unlock_upgradable), except that with
    /// waiters it always takes WLOCK (no WAKING short cut) and, when the
    /// release frees the lock and a writer heads the list, passes the lock
    /// to it in the releasing CAS (`(1,U|W) -> (0,X[|W])`, as the other fair
    /// unlocks). Readers at the head are granted as by any unlock; an
    /// upgrader at the head is woken, not granted (it re-tries, as after any
    /// unlock).
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_upgradable();
    /// unsafe { l.unlock_upgradable_fair() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS | UPGRADE, 0, true) }
    }

    /// Let waiters in if there are any, then take the upgradable read lock
    /// back (`lock_api`'s `bump_upgradable`): with no waiters (WAITERS
    /// clear) it changes nothing and returns at once (nobody to yield to: a
    /// waiter that queues later finds us still holding, as it would have a
    /// moment earlier); otherwise
    /// [`unlock_upgradable_fair`](Self::unlock_upgradable_fair) then
    /// [`lock_upgradable`](Self::lock_upgradable). Aborts the process if
    /// taking the lock back unwinds (the caller's guard would then stand
    /// for a lock it no longer holds).
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock (and holds it again on
    /// return).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_upgradable();
    /// let before = l.count_word();
    /// unsafe { l.bump_upgradable() };
    /// assert_eq!(l.count_word(), before);
    /// unsafe { l.unlock_upgradable() };
    /// ```
    pub unsafe fn bump_upgradable(&self) {
        // Relaxed: a hint; if a waiter queues after this load, it queued
        // behind a lock we held anyway (as if it came a moment later).
        if !has_waiters(self.count.load(Ordering::Relaxed)) {
            return;
        }
        // SAFETY: forwarded.
        unsafe { self.unlock_upgradable_fair() };
        let abort = AbortOnUnwind;
        self.lock_upgradable();
        std::mem::forget(abort);
    }

    /// Turn an upgradable read lock into a plain read lock: `(n,U) ->
    /// (n,-)` (lock_api's `downgrade_upgradable`). The reader count is kept,
    /// so no writer can get in between; UPGRADE is released, so an
    /// upgrader at the head of the list may now take it: with waiters, the
    /// release takes WLOCK and gives the head its turn (an upgrader woken,
    /// readers at the head granted) as any release does.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_upgradable();
    /// unsafe { l.downgrade_upgradable() };
    /// assert!(l.try_lock_upgradable()); // UPGRADE is free again
    /// unsafe { l.unlock_upgradable(); l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn downgrade_upgradable(&self) {
        // SAFETY: forwarded (we hold UPGRADE; `release_share` subtracts it
        // and adds nothing: our reader count stays).
        unsafe { self.release_share(UPGRADE, 0, false) }
    }

    /// Turn the write lock into an upgradable read lock: `(0,X) -> (1,U)`
    /// in the releasing CAS (lock_api's `downgrade_to_upgradable`), so no
    /// writer or other upgrader can get in between. Readers at the head of
    /// the list are granted at the same time (the lock becomes read-owned,
    /// as with [`downgrade`](Self::downgrade)); a writer or upgrader at the
    /// head still cannot take it.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock acquired as `token`.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// unsafe { l.downgrade_to_upgradable(t) };
    /// assert!(l.try_lock_shared()); // readers get in
    /// assert!(!l.try_lock_upgradable()); // another upgrader does not
    /// assert!(l.try_lock_exclusive().is_none()); // nor a writer
    /// unsafe { l.unlock_shared(); l.unlock_upgradable() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn downgrade_to_upgradable(&self, token: WriteToken) {
        let _ = token;
        self.set_reader_owned_from_writer();
        // SAFETY: forwarded (we hold WRITER; it becomes one reader count and
        // UPGRADE in one RMW).
        unsafe { self.release_share(WRITER, READER_BIAS | UPGRADE, false) }
    }

    /// Upgrade an upgradable read lock to the write lock: stop new readers
    /// (UPGRADING), wait for the others to leave, then `(1,U|G) -> (0,X)`.
    /// Queued readers are granted at the write unlock.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_upgradable();
    /// let t = unsafe { l.upgrade() };
    /// assert!(l.is_locked_exclusive());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    pub unsafe fn upgrade(&self) -> WriteToken {
        // SAFETY: forwarded.
        let t = unsafe { self.upgrade_wait(None) };
        t.expect("an upgrade without a deadline returns holding the write lock")
    }

    /// [`upgrade`](Self::upgrade) with a deadline in [`wait::now_ns`] time
    /// (lock_api's `try_upgrade_for`/`_until`): the write token if the other
    /// readers left in time; `None` if the deadline passed first, and then
    /// the caller still holds its upgradable read lock and the word is as if
    /// it had never tried (`cancel_upgrade`: UPGRADING cleared, and readers
    /// that queued because of it given their turn). Public for the loom
    /// models (see [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// Transitions: `(1,U) -> (0,X)` at once; else `(n,U) -> (n,U|G)`, wait,
    /// then `(1,U|G) -> (0,X)`, or on giving up `(n,U|G[|W]) -> (n,U[|W])`.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_upgradable();
    /// l.lock_shared(); // another reader inside
    /// assert!(unsafe { l.upgrade_until_ns(0) }.is_none());
    /// unsafe { l.unlock_shared() };
    /// let t = unsafe { l.upgrade_until_ns(klock::internal::wait::now_ns() + 1_000_000) }.unwrap();
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) unsafe fn upgrade_until_ns(&self, deadline: u64) -> Option<WriteToken> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_wait(Some(deadline)) }
    }

    /// The upgrade, blocking or until `deadline`.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    unsafe fn upgrade_wait(&self, deadline: Option<u64>) -> Option<WriteToken> {
        // SAFETY: forwarded.
        if let Some(t) = unsafe { self.try_upgrade() } {
            return Some(t);
        }
        // Already past the deadline: do not stop the readers at all.
        wait::remaining(deadline)?;
        let id = crate::tid::current_id();
        // Relaxed: UPGRADING carries no data; the CAS below acquires.
        let mut c = start_upgrading(self.count.fetch_or(UPGRADING, Ordering::Relaxed));
        let mut expired = false;
        loop {
            if readers(c) == 1 {
                // Acquire pairs with the readers' Release.
                match self.count.compare_exchange_weak(
                    c,
                    upgrade_after_wait(c),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(x) => c = x,
                }
                continue;
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                self.cancel_upgrade();
                stat::inc(Event::RwTimeout);
                return None;
            };
            // The last other reader wakes the count word.
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwUpgradeWait);
            let r = wait::futex_wait(&self.count, c, timeout);
            expired |= r == WaitOutcome::TimedOut;
            chaos::point(Site::AfterWake);
            // Relaxed: the CAS above decides (its Acquire pairs with the readers' Release).
            c = self.count.load(Ordering::Relaxed);
        }
        self.set_writer_owned(id);
        Some(WriteToken { id })
    }

    /// A timed upgrade gives up: `(n,U|G[|W]) -> (n,U[|W])`, n >= 1 (we
    /// still hold the upgradable read lock). While UPGRADING was set new
    /// readers failed their fast path and may have queued: with waiters,
    /// take WLOCK and give the head its turn (readers at the head are
    /// granted: the lock is read-owned and no longer upgrading). A reader
    /// that queues after our RMW runs its own hand-on under WLOCK and sees
    /// UPGRADING clear. The only wake-up an upgrader may consume is on the
    /// count word, and only the one upgrader (UPGRADE is exclusive) sleeps
    /// there: nothing to pass on.
    fn cancel_upgrade(&self) {
        // Relaxed: UPGRADING carries no data (we publish nothing: we only
        // read under the upgradable lock); the hand-on below takes WLOCK
        // with Acquire (pairs with the last WLOCK holder's Release) and
        // re-reads the word under it.
        let c = cancel_upgrading(self.count.fetch_and(!UPGRADING, Ordering::Relaxed));
        if has_waiters(c) {
            self.wake_readers_into_read_owned();
        }
    }

    /// Upgrade if no other reader holds the lock, without waiting.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    pub unsafe fn try_upgrade(&self) -> Option<WriteToken> {
        let id = crate::tid::current_id();
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        while readers(c) == 1 && c & UPGRADING == 0 {
            // Acquire pairs with the readers' Release.
            match self.count.compare_exchange_weak(
                c,
                upgrade_at_once(c),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.set_writer_owned(id);
                    return Some(WriteToken { id });
                }
                Err(x) => c = x,
            }
        }
        None
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::super::tests::eventually;
    use super::super::*;
    use crate::rwlock::word::*;
    use crate::sync::atomic::Ordering;
    use crate::wait;
    use std::sync::Arc;

    /// `downgrade_to_upgradable`: `(0,X) -> (1,U)`; readers get in (a
    /// queued one is granted), another upgrader or a writer does not.
    #[test]
    fn downgrade_to_upgradable_lets_readers_in_only() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        let t = l.lock_exclusive();
        let l2 = l.clone();
        let r = std::thread::spawn(move || {
            l2.lock_shared();
            unsafe { l2.unlock_shared() };
        });
        eventually("reader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.downgrade_to_upgradable(t) };
        // The queued reader is granted while we hold the upgradable lock.
        r.join().unwrap();
        assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
        assert!(l.try_lock_shared());
        assert!(!l.try_lock_upgradable());
        assert!(l.try_lock_exclusive().is_none());
        let l3 = l.clone();
        let timed = std::thread::spawn(move || {
            let up = l3.lock_upgradable_until_ns(wait::now_ns() + 10_000_000);
            let wr = l3.lock_exclusive_until_ns(wait::now_ns() + 10_000_000);
            (up, wr.is_some())
        });
        assert_eq!(timed.join().unwrap(), (false, false));
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        unsafe { l.unlock_shared() };
        // Still upgradable: the upgrade needs no wait now.
        let t = unsafe { l.try_upgrade() }.expect("alone: upgrade at once");
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    /// `downgrade_upgradable`: `(n,U) -> (n,-)`; a queued upgrader gets in
    /// beside our read lock, a writer still does not.
    #[test]
    fn downgrade_upgradable_lets_an_upgrader_in() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let u = std::thread::spawn(move || {
            l2.lock_upgradable();
            rx.recv().unwrap();
            unsafe { l2.unlock_upgradable() };
        });
        eventually("upgrader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.downgrade_upgradable() };
        eventually("upgrader admitted", || {
            l.count_word() == (2 * READER_BIAS) | UPGRADE
        });
        assert!(l.try_lock_exclusive().is_none());
        tx.send(()).unwrap();
        u.join().unwrap();
        assert_eq!(l.count_word(), READER_BIAS);
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
    }

    /// A timed upgrade times out while a reader holds the lock; a reader
    /// that queued because of UPGRADING meanwhile is granted when it gives
    /// up; the lock is then fully usable (upgrade, write, read).
    #[test]
    fn timed_upgrade_times_out_while_a_reader_holds() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let l1 = l.clone();
        let held = std::thread::spawn(move || {
            l1.lock_shared();
            rx.recv().unwrap();
            unsafe { l1.unlock_shared() };
        });
        eventually("reader inside", || readers(l.count_word()) == 2);
        let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l2, in2) = (l.clone(), inside.clone());
        let late = std::thread::spawn(move || {
            eventually("upgrade under way", || l2.count_word() & UPGRADING != 0);
            l2.lock_shared();
            in2.store(true, Ordering::SeqCst);
            unsafe { l2.unlock_shared() };
        });
        assert!(unsafe { l.upgrade_until_ns(wait::now_ns() + 200_000_000) }.is_none());
        // As if we had never tried: no UPGRADING, still upgradable.
        assert_eq!(l.count_word() & (UPGRADING | WRITER | UPGRADE), UPGRADE);
        eventually("the reader queued behind UPGRADING got in", || {
            inside.load(Ordering::SeqCst)
        });
        late.join().unwrap();
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        assert!(
            unsafe { l.upgrade_until_ns(0) }.is_none(),
            "deadline passed"
        );
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        tx.send(()).unwrap();
        held.join().unwrap();
        let t = unsafe { l.upgrade_until_ns(wait::now_ns() + 1_000_000_000) }.unwrap();
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.unlock_exclusive(t) };
        l.lock_shared();
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
    }

    /// A timed upgradable read queues behind another upgradable reader, gives
    /// up, and leaves the word clean (no WAITERS, WAKING or HANDOFF left);
    /// one that is let in before its deadline gets the lock.
    #[test]
    fn timed_upgradable_read_times_out_and_leaves_clean() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let h =
            std::thread::spawn(move || l2.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
        assert!(!h.join().unwrap());
        assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
        let l3 = l.clone();
        let h = std::thread::spawn(move || {
            let got = l3.lock_upgradable_until_ns(wait::now_ns() + 5_000_000_000);
            if got {
                unsafe { l3.unlock_upgradable() };
            }
            got
        });
        eventually("upgrader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.unlock_upgradable() };
        assert!(h.join().unwrap());
        assert_eq!(l.count_word(), 0);
        // Behind a writer too.
        let t = l.lock_exclusive();
        let l4 = l.clone();
        let h =
            std::thread::spawn(move || l4.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
        assert!(!h.join().unwrap());
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    /// `unlock_upgradable_fair` passes the lock to a queued writer in the
    /// releasing CAS (WRITER is set before the writer even runs);
    /// `bump_upgradable` lets it in and returns holding the upgradable lock
    /// again, and without waiters changes nothing.
    #[test]
    fn fair_upgradable_unlock_and_bump() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let w = std::thread::spawn(move || {
            let t = l2.lock_exclusive();
            rx.recv().unwrap();
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        unsafe { l.unlock_upgradable_fair() };
        assert_eq!(
            l.count_word() & (WRITER | READER_MASK),
            WRITER,
            "handed over"
        );
        assert!(!l.try_lock_upgradable());
        tx.send(()).unwrap();
        w.join().unwrap();
        assert_eq!(l.count_word(), 0);

        l.lock_upgradable();
        unsafe { l.bump_upgradable() };
        assert_eq!(
            l.count_word(),
            READER_BIAS | UPGRADE,
            "no waiter: unchanged"
        );
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l3, d3) = (l.clone(), done.clone());
        let w = std::thread::spawn(move || {
            let t = l3.lock_exclusive();
            d3.store(true, Ordering::SeqCst);
            unsafe { l3.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        unsafe { l.bump_upgradable() };
        assert!(
            done.load(Ordering::SeqCst),
            "the bump let the writer in first"
        );
        assert_eq!(l.count_word() & !WAITERS, READER_BIAS | UPGRADE);
        w.join().unwrap();
        unsafe { l.unlock_upgradable() };
        assert_eq!(l.count_word(), 0);
    }
}

//! The unlock slow path ([`unlock_slow`](RawMutex::unlock_slow): some flag
//! is set, so the fast `CAS(me -> 0)` in `mod.rs` failed) and the condvar's
//! [`requeue`](RawMutex::requeue) of notified waiters onto the wait list.
//!
//! Its part of the state diagram (module docs): every release but the fast
//! one, and the requeue.
//!
//! ```text
//!  (me,-) --unlock fast CAS--> (0,-)                  (mod.rs; any flag comes here)
//!  (x,W) --unlock: WLOCK, wake head, CAS--> (0,W|K)
//!  (y,W|K) --unlock: one CAS, no wake--> (0,W|K)
//!  (x,W[|K]|H) --unlock: WLOCK, CAS--> (head,W|K|P)
//!  (x,W[|K]) --unlock, head first >= fair ns: WLOCK, CAS--> (head,W|K|P)
//!  (x,f) --condvar requeue under WLOCK--> (x,f|W)    (wakes the head if x = 0)
//! ```
//!
//! Lifetime (module docs): after the CAS that releases the lock, only the
//! head waiter's type-stable node is touched (`futex_wake`).

use super::raw::RawMutex;
use super::word::{RELEASE_NO_WAITERS, WAITERS, WLOCK};
use super::word::{
    hand_to_head, handoff_requested, has_waiters, is_free, list_locked, lock_list,
    release_keep_flags, release_wake_head, unlock_needs_no_wake,
};
use crate::chaos::{self, Site};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::waitlist::{Waiter, WaiterState, fair_check_due, lock_bit};

impl<S: SpinPolicy> RawMutex<S> {
    /// Unlock slow path: some flag is set. Without WAITERS/HANDOFF, or with
    /// WAKING (a woken waiter will retry) and no HANDOFF, just drop the id;
    /// otherwise take WLOCK while still owner, mark the head WOKEN and
    /// release (or hand over) and drop WLOCK in one CAS; then wake the head.
    #[cold]
    pub(super) fn unlock_slow(&self, fair: bool) {
        // 1. This hold ends the slow-owner hint that names it.
        self.end_owner_hint();
        // Relaxed: only the CASes below decide; their orderings are commented.
        let o = self.owner.load(Ordering::Relaxed);
        // 2. Hand over or release: a fair unlock, or eventual fairness due.
        let fair = fair || self.fair_handoff_due(o);
        // 3. Nobody to wake: release the id and keep the flags; else take
        //    WLOCK while still owner.
        if !self.release_or_lock_list(o, fair) {
            return;
        }
        // 4. We own the lock and WLOCK: mark the head WOKEN.
        let (head, need_wake) = self.mark_head_woken();
        // 5. Release (or hand over to the head) and drop WLOCK in one CAS.
        let handed = self.release_to_head(head, fair);
        // 6. From here on only the head's type-stable node is touched.
        Self::wake_head(head, need_wake, handed);
    }

    /// Step 1 of [`unlock_slow`](Self::unlock_slow): the slow-owner hint
    /// names this owner, if any; it ends with this hold (`spin.rs`,
    /// `note_owner`).
    fn end_owner_hint(&self) {
        if self.list.hint() != 0 {
            self.list.set_hint(0);
        }
    }

    /// Step 2: eventual fairness (`KLOCK_MUTEX_FAIR_HANDOFF_NS`): a head
    /// that has been first for that long gets the lock handed over, even
    /// asleep. At most one such hand-off per interval and lock (the next
    /// head's clock starts when it becomes first), so the lock idles for a
    /// wake-up at a bounded rate.
    fn fair_handoff_due(&self, o: u32) -> bool {
        has_waiters(o) && fair_check_due() && self.fair_due()
    }

    /// Step 4, with the lock and WLOCK held: the head, and whether it needs
    /// a futex wake. A head still WOKEN from an earlier wake it has not
    /// re-armed yet (re-arming needs WLOCK, which we hold) is awake and will
    /// retry after our release: no wake. INV-WAKE-ADDR: the mark is made
    /// under WLOCK; step 5's release CAS publishes it.
    fn mark_head_woken(&self) -> (Option<Waiter<'static>>, bool) {
        let h = self.list.head();
        let hn = (h != 0).then(|| Waiter::decode(h));
        let need_wake = hn.is_some_and(|hn| hn.wake_mark());
        (hn, need_wake)
    }

    /// Step 6, after the release: wake the head's own futex word, the only
    /// address a releaser may touch (INV-WAKE-ADDR).
    fn wake_head(head: Option<Waiter<'static>>, need_wake: bool, handed: bool) {
        chaos::point(Site::AfterRelease);
        stat::cond_inc(Event::MutexHandoff, handed);
        if let Some(hn) = head
            && need_wake
        {
            stat::inc(Event::MutexWake);
            hn.wake();
        }
    }

    /// Step 1 of [`unlock_slow`](Self::unlock_slow), from the owner word `o`:
    /// if no wake is needed, release the id, keep the flags and return
    /// `false` (the unlock is done); otherwise take WLOCK, still as owner,
    /// and return `true`.
    #[inline]
    fn release_or_lock_list(&self, mut o: u32, fair: bool) -> bool {
        loop {
            if unlock_needs_no_wake(o, fair) {
                // Only WLOCK (a waiter enqueueing) or nothing, or a woken
                // waiter has not re-armed yet: release the id, keep the flags.
                // With WAKING no wake is lost: the woken waiter clears WAKING
                // (under WLOCK) before it re-tries and sleeps, in an RMW on
                // this word; our CAS is ordered before it (then that re-try
                // sees id 0) or after it (then we see WAKING clear).
                // Release pairs with the next owner's Acquire.
                match self.owner.compare_exchange_weak(
                    o,
                    release_keep_flags(o),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        stat::cond_inc(Event::MutexWakePending, has_waiters(o));
                        return false;
                    }
                    Err(x) => o = x,
                }
                continue;
            }
            if list_locked(o) {
                crate::wait::spin_then_yield(|| {
                    (!list_locked(crate::sync::peek(&self.owner, Ordering::Relaxed))).then_some(())
                });
                o = self.owner.load(Ordering::Relaxed);
                continue;
            }
            // Acquire pairs with the Release of the previous WLOCK holder.
            match self.owner.compare_exchange_weak(
                o,
                lock_list(o),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => o = x,
            }
        }
    }

    /// Step 3 of [`unlock_slow`](Self::unlock_slow), holding the lock and
    /// WLOCK, the head `hn` (if any) marked WOKEN: release the lock, or hand
    /// it to the head (`fair` or HANDOFF requested), and drop WLOCK in one
    /// CAS. Returns whether the lock was handed over.
    #[inline]
    fn release_to_head(&self, hn: Option<Waiter<'static>>, fair: bool) -> bool {
        let mut o = self.owner.load(Ordering::Relaxed);
        // The head is WOKEN now (and will not sleep before it re-arms, which
        // clears WAKING): publish WAKING so later unlocks need no WLOCK/wake.
        loop {
            let (new, handed) = match hn {
                None => (RELEASE_NO_WAITERS, false),
                Some(hn) if fair || handoff_requested(o) => (hand_to_head(hn.thread_id()), true),
                Some(_) => (release_wake_head(), false),
            };
            // Release: publishes the critical section to the next owner (and
            // the list edits to the next WLOCK holder). The wait list stays
            // consistent with WAITERS because WLOCK is released in this CAS.
            match self
                .owner
                .compare_exchange_weak(o, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return handed,
                Err(x) => o = x,
            }
        }
    }

    /// Has the head been first for `KLOCK_MUTEX_FAIR_HANDOFF_NS`? (A clock
    /// read and a load of the head's node: see [`fair_check_due`].)
    #[inline]
    fn fair_due(&self) -> bool {
        // Not to a real-time head: it is served by priority (see `enqueue`).
        self.list
            .head_first_for(crate::tune::get().mutex_fair_handoff_ns)
            && Waiter::decode(self.list.head()).rt_prio() == 0
    }

    /// Condvar support: append the detached circular list whose head is
    /// `head` (condvar waiters, thread id in `aux`) to the wait list, mark
    /// every moved node SLEEPING, and wake the list head if the mutex is free.
    /// Returns how many nodes moved. The caller holds the condvar's list lock
    /// (so no moved waiter can leave meanwhile) but no lock of this mutex.
    pub(crate) fn requeue(&self, head: u32) -> usize {
        if head == 0 {
            return 0;
        }
        lock_bit(&self.owner, WLOCK);
        // Mark every moved node: they now wait for the mutex (a node that
        // wakes spuriously sees SLEEPING and continues as a mutex waiter).
        let mut count = 0;
        let now = crate::wait::now_us();
        let mut t = head;
        loop {
            let n = Waiter::decode(t);
            // INV-WAKE-ADDR: under WLOCK and the condvar's lock, which the
            // moved waiter needs to leave either list.
            n.set_state(WaiterState::Sleeping);
            n.set_since_us(now);
            // Requeued at the back, as a waiter without priority order.
            n.set_rt_prio(0);
            chaos::point(Site::ListEdit);
            count += 1;
            t = n.next_link();
            if t == head {
                break;
            }
        }
        self.list.splice_back(head);
        // Set WAITERS *before* looking at the owner (both in one RMW): an owner
        // whose release follows this RMW sees WAITERS and wakes the head; if
        // the id field was already 0, nobody will, so we wake the head.
        // AcqRel: Acquire pairs with the owner's release (we read its id).
        let o = self.owner.fetch_or(WAITERS, Ordering::AcqRel);
        let h = self.list.head();
        let wake = is_free(o);
        if wake {
            // INV-WAKE-ADDR: under WLOCK, released by wunlock below.
            Waiter::decode(h).set_state(WaiterState::Woken);
        }
        self.wunlock(0, 0);
        chaos::point(Site::AfterRelease);
        stat::add(Event::CondRequeue, count as u64);
        stat::add(Event::MutexArm, count as u64);
        // Only the head's type-stable node is touched after the release.
        if wake {
            stat::inc(Event::MutexWake);
            Waiter::decode(h).wake();
        }
        count
    }
}

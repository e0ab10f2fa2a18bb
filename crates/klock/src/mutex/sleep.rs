//! Sleeping on the wait list: a queued waiter's loop
//! ([`wait_queued`](RawMutex::wait_queued): enqueue, retry, re-arm, sleep,
//! leave), the woken first waiter's hand-off request
//! ([`request_handoff`](RawMutex::request_handoff)) and its running wait for
//! the hand-off ([`wait_for_pickup`](RawMutex::wait_for_pickup)), and the
//! timed-out waiter's exit ([`leave_on_timeout`](RawMutex::leave_on_timeout)).
//!
//! Its part of the state diagram (module docs): every transition a waiter
//! makes, all but the hand-off request and the pick-up under WLOCK.
//!
//! ```text
//!  (x,-) --waiter enqueues under WLOCK--> (x,W)
//!  (x,W|K) --woken head re-arms (or a waiter leaves) under WLOCK--> (x,W)
//!  (x,W[|K]) --first waiter waited > handoff ns--> (x,W[|K]|H)
//!  (head,W|K|P) --head picks up--> (head,W|K)
//!  (head,W|K) --head leaves the list (clears K): the next unlock wakes the new head--> (head,W)
//!  (me,W) --last waiter leaves the list under WLOCK--> (me,-)
//! ```
//!
//! INV-WLOCK-STATE (`docs/invariants.md`): a waiter's `state` is re-armed and set
//! only under WLOCK.

use super::raw::RawMutex;
use super::spin::SpinEnd;
use super::word::{HANDOFF, WAITERS, WAKING, WLOCK};
use super::word::{ask_handoff, handed_over, handoff_requested, is_free};
use crate::chaos::{self, Site};
use crate::node::QNode;
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, SpinBudget, WaitOutcome};
use crate::waitlist::{Waiter, WaiterState, lock_bit};

impl<S: SpinPolicy> RawMutex<S> {
    /// Clear flags for a list that lost `leaver`: WAITERS|HANDOFF when the list
    /// is now empty, HANDOFF when the leaver was the head (only the head sets it).
    /// Passed (with WAKING) as `clear` to [`wunlock`](Self::wunlock):
    /// `(x,W[|H]|L) -> (x,-)` when the last waiter left, `(x,W[|H]|L) -> (x,W)`
    /// when the head left others behind.
    #[inline]
    fn leave_flags(&self, leaver_was_head: bool) -> u32 {
        if self.list.head() == 0 {
            WAITERS | HANDOFF
        } else if leaver_was_head {
            HANDOFF
        } else {
            0
        }
    }

    /// Queue `q` and sleep until the lock is ours (or the deadline passes).
    /// With `requeued`, the node is already on the list (moved there by a
    /// condvar notify) and its `state` is SLEEPING.
    ///
    /// 1. Enqueue under WLOCK (unless requeued), or take a lock freed meanwhile.
    /// 2. Loop: try the lock; as a woken first waiter, spin on the owner and,
    ///    past the hand-off threshold, ask for the lock and wait for it
    ///    running (`woken_head_turn`).
    /// 3. Re-arm under WLOCK (`rearm`), try once more, then sleep (`sleep`);
    ///    past the deadline, leave the list (`leave_on_timeout`).
    /// 4. Holding the lock: leave the list (`leave_list`).
    pub(crate) fn wait_queued(
        &self,
        q: QNode,
        id: u32,
        deadline: Option<u64>,
        requeued: bool,
    ) -> bool {
        let me = q.tail();
        let n = Waiter::of(q.node());
        let mut first = if requeued {
            self.list.head() == me
        } else {
            match self.enqueue(me, n, id) {
                Some(first) => first,
                None => return true,
            }
        };
        let start = wait::now_ns();
        let mut woken = false;
        let mut handoff_asked = false;
        // A timed futex wait returned TimedOut: the deadline has passed (the
        // only way a loom model, which has no clock, reaches the timeout).
        let mut expired = false;
        loop {
            if self.try_acquire(id, true) {
                break;
            }
            if first
                && woken
                && !handoff_asked
                && self.woken_head_turn(id, start, &mut handoff_asked)
            {
                break;
            }
            first = self.rearm(me, n);
            chaos::point(Site::BeforeSleep);
            if self.try_acquire(id, true) {
                break;
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                return self.leave_on_timeout(q, id);
            };
            woken = self.sleep(n, timeout, &mut expired);
        }
        self.leave_list(me);
        true
    }

    /// Step 1: under WLOCK, take the lock if it is free (`None`: we hold
    /// it), else arm our node, append it and set WAITERS in the WLOCK
    /// release; returns whether we are first.
    fn enqueue(&self, me: u32, n: Waiter<'_>, id: u32) -> Option<bool> {
        lock_bit(&self.owner, WLOCK);
        if self.try_acquire(id, false) {
            self.wunlock(0, 0);
            return None;
        }
        // Under WLOCK, whose Release (wunlock) publishes them to the
        // unlocker that reads them under WLOCK.
        n.set_state(WaiterState::Sleeping);
        stat::inc(Event::MutexArm);
        n.set_thread_id(id);
        n.set_since_us(wait::now_us());
        // A real-time waiter queues by priority (POSIX; INV-RT-NOSPIN's
        // companion: it is served by priority, not by timed hand-offs).
        n.set_rt_prio(wait::rt_priority());
        self.list.push_by_priority(me);
        let first = self.list.head() == me;
        // Setting WAITERS in the WLOCK-release RMW: an unlock ordered after
        // it sees WAITERS and wakes the head; one ordered before it left the
        // id field 0, which our trylock below sees.
        self.wunlock(WAITERS, 0);
        Some(first)
    }

    /// Step 2, a woken first waiter that has not asked for the hand-off:
    /// spin on the owner, then past the threshold ask for the hand-off and
    /// wait for it running. Returns whether we hold the lock.
    fn woken_head_turn(&self, id: u32, start: u64, handoff_asked: &mut bool) -> bool {
        let t = crate::tune::get();
        // A woken first waiter spins on the owner before sleeping again
        // (kernel 4.10 "optimistic spinning of woken waiter") ...
        // (Not gated by the adaptive hint, `adapt`: gating it measured
        // the same on `sysbench threads` on a busy machine and 0.5-0.7x
        // on a quiet one; the woken waiter is running anyway.)
        // INV-RT-NOSPIN: not for a real-time thread.
        if S::SPIN && t.mutex_spin != 0 && !wait::realtime() {
            let mut total = SpinBudget::new(t.mutex_spin_max_ns);
            if self.spin_on_owner(id, &mut total, None) == SpinEnd::Acquired {
                return true;
            }
        }
        // ... and, once it has waited past the threshold after a failed
        // wake-up, asks for the lock to be handed over ...
        // (Not a real-time thread: it cannot wait for the hand-off running
        // (INV-RT-NOSPIN), and one owed to a sleeper idles the lock for a
        // wake-up while nobody else may take it; it is served by priority.)
        if !wait::realtime()
            && wait::now_ns().saturating_sub(start) >= t.mutex_handoff_ns
            && self.request_handoff()
        {
            *handoff_asked = true;
            stat::inc(Event::MutexHandoffRequest);
            // ... and waits for it running (the kernel's woken waiter
            // spins with HANDOFF set), so that the lock does not sit
            // idle in PICKUP for a whole wake-up.
            return self.wait_for_pickup(id);
        }
        false
    }

    /// Step 3a: re-arm under WLOCK (see module docs: this is what orders the
    /// unlocker's WOKEN store against our sleep). If an unlock woke us,
    /// WAKING may be ours: clear it, so the next unlock wakes again.
    /// Returns whether we are first.
    fn rearm(&self, me: u32, n: Waiter<'_>) -> bool {
        lock_bit(&self.owner, WLOCK);
        let was_woken = n.is_woken();
        n.set_state(WaiterState::Sleeping);
        stat::cond_inc(Event::MutexArm, was_woken);
        let first = self.list.head() == me;
        self.wunlock(0, if was_woken { WAKING } else { 0 });
        first
    }

    /// Step 3b: sleep on our node until woken or `timeout` passes; sets
    /// `expired` when the caller's deadline passed. Returns whether an
    /// unlock woke us.
    fn sleep(
        &self,
        n: Waiter<'_>,
        timeout: Option<std::time::Duration>,
        expired: &mut bool,
    ) -> bool {
        stat::inc(Event::MutexSleep);
        let r = wait::futex_wait(n.futex(), WaiterState::Sleeping as u32, timeout);
        *expired |= r == WaitOutcome::TimedOut;
        chaos::point(Site::AfterWake);
        // The lock itself is acquired through the owner CAS.
        let woken = n.is_woken();
        stat::cond_inc(
            Event::MutexSpuriousWakeup,
            !woken && r != WaitOutcome::TimedOut,
        );
        woken
    }

    /// Step 4: we own the lock; leave the list under WLOCK.
    fn leave_list(&self, me: u32) {
        lock_bit(&self.owner, WLOCK);
        let was_head = self.list.head() == me;
        self.list.remove(me);
        if was_head {
            self.list.stamp_head();
        }
        // WAKING: we may be the woken waiter it stands for (clearing is safe),
        // so the next unlock wakes the new head (after its release, outside
        // anyone's critical section). HANDOFF is not passed on to a new head
        // that sleeps (INV-HANDOFF-RUNNING): it asks for the hand-off itself
        // once it runs and fails, if it has waited past the threshold.
        let clear = self.leave_flags(was_head) | WAKING;
        self.wunlock(0, clear);
    }

    /// The first waiter asked for a hand-off: wait, running, until the owner
    /// hands the lock to us (PICKUP) or the spin budget runs out (then the
    /// caller sleeps; the hand-off wakes it). Polls with the owner-poll
    /// backoff. Returns `true` holding the lock.
    pub(super) fn wait_for_pickup(&self, id: u32) -> bool {
        // INV-RT-NOSPIN: a real-time thread sleeps; the hand-off wakes it.
        if wait::realtime() {
            return false;
        }
        let t = crate::tune::get();
        let mut poll = wait::PollBackoff::new(t.mutex_poll_max_ns);
        wait::spin_until(&mut SpinBudget::new(t.mutex_spin_ns), || {
            if self.try_acquire(id, true) {
                return true;
            }
            poll.pause();
            false
        })
    }

    /// The first waiter's `trylock_or_handoff`: set HANDOFF while someone else
    /// owns the lock, `(x,W[|K]) -> (x,W[|K]|H)` with `x` != 0 and no P.
    /// Returns whether HANDOFF is (now) set.
    pub(super) fn request_handoff(&self) -> bool {
        let mut o = self.owner.load(Ordering::Relaxed);
        loop {
            if is_free(o) || handed_over(o) {
                return false;
            }
            if handoff_requested(o) {
                return true;
            }
            // Relaxed: HANDOFF carries no data; the unlocker reads it under
            // WLOCK in its own CAS loop (same word, so RMW order decides).
            match self.owner.compare_exchange_weak(
                o,
                ask_handoff(o),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => o = x,
            }
        }
    }

    /// Timed-out waiter: leave the list under WLOCK, unless the lock was handed
    /// to us (or is free) meanwhile, in which case take it (returns `true`).
    pub(super) fn leave_on_timeout(&self, q: QNode, id: u32) -> bool {
        let me = q.tail();
        lock_bit(&self.owner, WLOCK);
        // Clear WAKING first (it may stand for us, and we are leaving): from
        // this RMW on, an owner cannot release without taking WLOCK.
        // Relaxed: an RMW under WLOCK; the loads below follow it in the
        // word's modification order (coherence).
        // (x,f|K|L) -> (x,f|L)
        self.owner.fetch_and(!WAKING, Ordering::Relaxed);
        let got = self.try_acquire(id, true);
        let was_head = self.list.head() == me;
        self.list.remove(me);
        if was_head {
            self.list.stamp_head();
        }
        let clear = self.leave_flags(was_head) | WAKING;
        // If the lock is free and others still wait, we may have consumed the
        // wake-up meant for the head: pass it on.
        let h = self.list.head();
        // Relaxed: while the list is non-empty WAITERS stays set and WAKING is
        // clear (above), so an owner cannot release without taking WLOCK
        // (held by us): a non-zero id cannot become 0 meanwhile (a zero one
        // may be taken: a harmless wake).
        let wake = !got && h != 0 && is_free(self.owner.load(Ordering::Relaxed));
        if wake {
            // INV-WAKE-ADDR: under WLOCK, released by wunlock below.
            Waiter::decode(h).set_state(WaiterState::Woken);
        }
        self.wunlock(0, clear);
        chaos::point(Site::AfterRelease);
        if wake {
            stat::inc(Event::MutexWake);
            Waiter::decode(h).wake();
        }
        got
    }
}

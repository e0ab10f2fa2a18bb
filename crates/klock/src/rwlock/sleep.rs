//! Waiting on the wait list, the waiter side (the waker side is
//! `wake.rs`): [`wait`](RawRwLock::wait) queues a thread that could not
//! take the lock (`wait_queued`), or, when it cannot get a node, polls
//! unqueued (`wait_unqueued`, the one no-node fallback). A queued reader
//! sleeps until a waker grants it the lock (`wait_granted`); a queued
//! writer or upgrader re-tries under WLOCK whenever woken (`wait_retry`,
//! `take_queued`) and, first and past the hand-off threshold, sets
//! HANDOFF; a waiter selected for a grant waits for it (`await_grant`), a
//! timed-out one leaves the list (`leave`).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (x,X|..) or (n,W) --failed reader/writer queues under WLOCK--> (..,W)
//!  (0,W|K) --the woken writer clears K and re-tries (take_queued)--> (0,X[|W])
//!  (x,W..) --timed upgradable read gives up (leave)--> (x,[W])  K cleared, the turn passed on
//! ```
//!
//! INV-WLOCK-STATE (`docs/invariants.md`): a waiter's `state` is re-armed
//! only under WLOCK.

use super::queue::RwWaiter;
use super::raw::{Got, RawRwLock};
use super::word::Class;
use super::word::{HANDOFF, PREFQ, WAITERS, WAKING, handoff_owed, is_lockable_by, take_from_list};
use crate::chaos::{self, Site};
use crate::node::{self, QNode};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, SpinBudget, WaitOutcome};
use crate::waitlist::{Waiter, WaiterState};

impl<S: SpinPolicy> RawRwLock<S> {
    /// Queue and wait for `class`; readers are granted the lock by a waker,
    /// writers and upgraders re-try when woken (writers are granted it on a
    /// hand-off or a fair unlock).
    /// `pref`: a reader-preferring reader (INV-PREFQ).
    pub(super) fn wait(&self, class: Class, deadline: Option<u64>, pref: bool) -> Got {
        node::with_node(|q| match q {
            Some(q) => self.wait_queued(q, class, deadline, pref),
            None => self.wait_unqueued(class, deadline),
        })
    }

    /// No node: poll within the spin budget, yield in between (unfair but
    /// correct; counted as `rwsem_no_node`).
    fn wait_unqueued(&self, class: Class, deadline: Option<u64>) -> Got {
        stat::inc(Event::RwNoNode);
        let taken = wait::poll_unqueued(
            crate::tune::get().rwsem_spin_ns,
            deadline,
            || self.try_take(class),
            // Relaxed: a hint; `try_take`'s Acquire CAS decides.
            || is_lockable_by(self.count.load(Ordering::Relaxed), class, false),
        );
        if taken { Got::Yes } else { Got::TimedOut }
    }

    /// With our node `q`: enqueue under WLOCK (WAITERS, and PREFQ for a
    /// reader-preferring reader, set: `(x,f|L) -> (x,f|L|W[|F])`), give
    /// whoever can go now its turn, then wait as `class` does.
    fn wait_queued(&self, q: QNode, class: Class, deadline: Option<u64>, pref: bool) -> Got {
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        // Enqueue under WLOCK, then give whoever can go now its turn (maybe
        // us: the lock may have become free, or read-owned, meanwhile).
        self.wlock();
        w.set_class(class, pref);
        w.w.set_state(WaiterState::Sleeping);
        self.list.push_back(me);
        // Relaxed: an RMW under WLOCK; an unlock ordered after it sees
        // WAITERS and takes WLOCK (after us); one ordered before it freed the
        // lock, which the hand-on below sees. PREFQ likewise: a
        // reader-preferring acquisition ordered after it passes the turn
        // (after us); one ordered before it left its count, which the
        // hand-on below sees (INV-PREFQ).
        let bits = WAITERS | if pref { PREFQ } else { 0 };
        self.count.fetch_or(bits, Ordering::Relaxed);
        self.pass_turn_and_wunlock();
        match class {
            Class::Reader => self.wait_granted(q, deadline),
            _ => self.wait_retry(q, class, deadline),
        }
    }

    /// Our node was selected for a grant: wait (no timeout: INV-GRANT-PIN)
    /// for the granter to complete it. Returns holding the lock.
    fn await_grant(&self, w: RwWaiter<'_>) -> Got {
        while !w.w.is_granted() {
            let _ = wait::futex_wait(w.w.futex(), WaiterState::Granting as u32, None);
        }
        Got::Yes
    }

    /// A queued reader: sleep until a waker grants the lock (it removes us
    /// from the list and counts us), or the deadline passes.
    fn wait_granted(&self, q: QNode, deadline: Option<u64>) -> Got {
        let w = RwWaiter::of(q.node());
        let mut expired = false;
        loop {
            if w.w.is_selected() {
                return self.await_grant(w);
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                return self.leave(q, Class::Reader);
            };
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwSleepReader);
            let r = wait::futex_wait(w.w.futex(), WaiterState::Sleeping as u32, timeout);
            expired |= r == WaitOutcome::TimedOut;
            chaos::point(Site::AfterWake);
        }
    }

    /// A queued writer or upgrader: re-try under WLOCK whenever woken; as
    /// the first writer past the hand-off threshold, set HANDOFF and wait
    /// running for the grant (seed 003 patch 14) before sleeping again.
    fn wait_retry(&self, q: QNode, class: Class, deadline: Option<u64>) -> Got {
        let t = crate::tune::get();
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        let start = wait::now_ns();
        let mut expired = false;
        loop {
            // Re-try and re-arm under WLOCK (INV-WLOCK-STATE).
            self.wlock();
            if w.w.is_selected() {
                self.wunlock();
                return self.await_grant(w);
            }
            // INV-WAKING: clear it before the re-try (it may stand for us):
            // an unlock from here on takes WLOCK and wakes us after we re-arm.
            // Relaxed: an RMW under WLOCK on the word the unlocks CAS.
            self.count.fetch_and(!WAKING, Ordering::Relaxed);
            let first = self.list.head() == me;
            if self.take_queued(class, first, me) {
                return Got::Yes;
            }
            // Relaxed: under WLOCK.
            let c = self.count.load(Ordering::Relaxed);
            let mut handoff = handoff_owed(c) && first;
            if first
                && !handoff
                && class == Class::Writer
                && wait::now_ns().saturating_sub(start) >= t.rwsem_handoff_ns
            {
                // Relaxed: an RMW under WLOCK; HANDOFF carries no data.
                self.count.fetch_or(HANDOFF, Ordering::Relaxed);
                stat::inc(Event::RwHandoff);
                handoff = true;
            }
            w.w.set_state(WaiterState::Sleeping);
            self.wunlock();
            if handoff && S::SPIN && t.rwsem_spin != 0 && !wait::realtime() {
                // Seed 003 patch 14: the lock is ours the moment it is free (the unlock
                // grants it to us): wait for that running, not asleep.
                let mut poll = wait::PollBackoff::new(super::spin::POLL_MAX_NS);
                wait::spin_until(&mut SpinBudget::new(t.rwsem_spin_ns), || {
                    w.w.is_selected() || {
                        poll.pause();
                        false
                    }
                });
            }
            if w.w.is_selected() {
                return self.await_grant(w);
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                return self.leave(q, class);
            };
            // INV-HANDOFF-TIMER: the first writer sleeps at most until its
            // hand-off threshold, so that it can claim HANDOFF even when no
            // unlock ever frees the lock for it (readers joining readers).
            // The kernel lets a reader's wake-up set HANDOFF on the first
            // waiter's behalf; our readers join without the list lock.
            let timer = (first && !handoff && class == Class::Writer && !cfg!(loom)).then(|| {
                let left = (start + t.rwsem_handoff_ns).saturating_sub(wait::now_ns());
                std::time::Duration::from_nanos(left.max(1))
            });
            let (timeout, by_timer) = match (timeout, timer) {
                (Some(d), Some(h)) if h < d => (Some(h), true),
                (None, Some(h)) => (Some(h), true),
                (d, _) => (d, false),
            };
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwSleepWriter);
            let r = wait::futex_wait(w.w.futex(), WaiterState::Sleeping as u32, timeout);
            expired |= r == WaitOutcome::TimedOut && !by_timer;
            chaos::point(Site::AfterWake);
        }
    }

    /// Under WLOCK: take the lock as a queued writer or upgrader if it is
    /// ours to take (`(0,W[|H]) -> (0,X[|W])`), leave the list and release
    /// WLOCK; otherwise keep WLOCK and return `false`.
    fn take_queued(&self, class: Class, first: bool, me: u32) -> bool {
        let add = class.share();
        let last = first && Waiter::decode(me).next_link() == me;
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if !is_lockable_by(c, class, first) {
                return false;
            }
            // Acquire pairs with the Release of the unlock that freed it.
            // Only we (the head, if it is set) could have set HANDOFF.
            match self.count.compare_exchange_weak(
                c,
                take_from_list(c, add, last),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        self.unlink(me);
        if class == Class::Upgrader {
            // Readers queued behind us may share the lock with us now.
            self.pass_turn_and_wunlock();
        } else {
            self.wunlock();
        }
        true
    }

    /// Timed-out waiter: leave the list under WLOCK, unless a grant selected
    /// us first (then we hold the lock). Passes the turn on (the lock may be
    /// free, or our HANDOFF may have been blocking others).
    fn leave(&self, q: QNode, class: Class) -> Got {
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        self.wlock();
        if w.w.is_selected() {
            self.wunlock();
            stat::inc(Event::RwTimeoutGranted);
            return self.await_grant(w);
        }
        let first = self.list.head() == me;
        if class != Class::Reader && self.take_queued(class, first, me) {
            return Got::Yes;
        }
        self.unlink(me);
        // WAKING may stand for us (we are leaving): clearing is always safe.
        let clear = WAKING
            | if self.list.head() == 0 {
                WAITERS | HANDOFF | PREFQ
            } else if first {
                HANDOFF // only the head sets it
            } else {
                0
            };
        // Relaxed: an RMW under WLOCK.
        self.count.fetch_and(!clear, Ordering::Relaxed);
        self.pass_turn_and_wunlock();
        stat::inc(Event::RwTimeout);
        Got::TimedOut
    }
}

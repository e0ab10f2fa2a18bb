//! The wait list protocol: the rwsem's typed view of a node ([`RwWaiter`],
//! its [`Class`] in `ident`), the wake-up queue filled under WLOCK and
//! completed after the release ([`WakeQ`], INV-WAKE-ADDR, INV-GRANT-PIN),
//! queueing and waiting (`wait`, `wait_queued`, `wait_granted` for readers,
//! `wait_retry` for writers and upgraders, `take_queued`, the timed-out
//! waiter's `leave`, and the unqueued fallback `wait_unqueued`), passing the
//! turn under WLOCK (`grant_readers`, `hand_on`, `unlink`,
//! `pass_turn_and_wunlock`) and the release slow path (`release_share`).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (x,X|..) or (n,W) --failed reader/writer queues under WLOCK--> (..,W)
//!  (0,X|W) --write unlock, head readers: grant_readers--> (k,[W])      k readers granted at once
//!  (0,X|W) --write unlock, head writer: hand_on marks it woken--> (0,W|K)
//!  (x,W|K) --any unlock while K: one CAS, no WLOCK, no wake--> (0,W|K)
//!  (0,W|K) --the woken writer clears K and re-tries (take_queued)--> (0,X[|W])
//!  (1,W)   --last read unlock: wake head writer--> (0,W|K)
//!  (0,W|H) --unlock, head writer asked for hand-off: hand_on passes X--> (0,X[|W])
//!  (n,W|F), n>0, writer at the head --hand_on: grant queued reader-preferring readers--> (n+k,W[|F])
//!  (x,W..) --timed upgradable read gives up (leave)--> (x,[W])  K cleared, the turn passed on
//! ```

use super::word::{
    HANDOFF, OWNER_NONSPINNABLE, OWNER_READER, PREFQ, READER_BIAS, UPGRADING, WAITERS, WAKING,
    WLOCK, WRITER, handoff_owed, has_waiters, is_lockable_by, readers,
};
use super::word::{
    grant_queued_readers, hand_to_writer, lock_list, mark_woken, release, take_from_list,
    unlock_list,
};
use super::{Class, Got, RawRwLock, SpinPolicy};
use crate::chaos::{self, Site};
use crate::node::{self, QNode};
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, SpinBudget, WaitOutcome};
use crate::waitlist::{Waiter, WaiterState, fair_check_due, lock_bit};

// ---------------------------------------------------------------------------
// Waiters
// ---------------------------------------------------------------------------

/// The rwsem's typed view of a wait-list node: the list protocol through
/// [`Waiter`], and `ident` holding the waiter's [`Class`].
#[derive(Clone, Copy)]
pub(crate) struct RwWaiter<'a> {
    w: Waiter<'a>,
    n: &'a node::Node,
}

impl<'a> RwWaiter<'a> {
    #[inline]
    fn of(n: &'a node::Node) -> Self {
        RwWaiter {
            w: Waiter::of(n),
            n,
        }
    }

    #[inline]
    fn decode(t: u32) -> RwWaiter<'static> {
        RwWaiter::of(node::decode(t))
    }

    /// The waiter's class (under WLOCK).
    #[inline]
    fn class(self) -> Class {
        // Relaxed: written under WLOCK before the node was linked.
        match self.n.ident.load(Ordering::Relaxed) & !PREF_WAITER {
            1 => Class::Reader,
            2 => Class::Writer,
            _ => Class::Upgrader,
        }
    }

    /// Is it a reader-preferring reader (under WLOCK)?
    #[inline]
    fn is_pref(self) -> bool {
        // Relaxed: as in `class`.
        self.n.ident.load(Ordering::Relaxed) & PREF_WAITER != 0
    }

    /// `pref`: a reader-preferring reader (INV-PREFQ).
    #[inline]
    fn set_class(self, c: Class, pref: bool) {
        let flag = if pref { PREF_WAITER } else { 0 };
        // Relaxed: under WLOCK (published by its release).
        self.n.ident.store(c as u32 | flag, Ordering::Relaxed);
    }
}

/// `ident` flag of a queued reader-preferring reader (beside its [`Class`]).
const PREF_WAITER: u32 = 1 << 8;

/// Nodes to `futex_wake` after the list lock's release (the kernel's
/// `wake_q`): tail codes, at most one batch of readers plus one writer.
struct WakeQ {
    n: usize,
    codes: [u32; WAKEQ_CAP],
}

/// The largest `KLOCK_RWSEM_WAKE_READERS`, plus one writer.
const WAKEQ_CAP: usize = 257;

impl WakeQ {
    fn new() -> Self {
        WakeQ {
            n: 0,
            codes: [0; WAKEQ_CAP],
        }
    }

    fn push(&mut self, t: u32) {
        self.codes[self.n] = t;
        self.n += 1;
    }

    /// Flag on a collected tail code (whose low 16 bits are zero): a grant
    /// to complete, not only a wake.
    const GRANT: u32 = 1;

    /// After the release: complete the grants (INV-GRANT-PIN) and wake
    /// every collected node (addresses only: INV-WAKE-ADDR).
    fn finish(&self) {
        for &t in &self.codes[..self.n] {
            let w = Waiter::decode(t & !Self::GRANT);
            if t & Self::GRANT != 0 {
                w.grant();
            }
            stat::inc(Event::RwWake);
            w.wake();
        }
    }
}

// ---------------------------------------------------------------------------
// The wait list
// ---------------------------------------------------------------------------

impl<S: SpinPolicy> RawRwLock<S> {
    /// Queue and wait for `class`; readers are granted the lock by a waker,
    /// writers and upgraders re-try when woken (writers are granted it on a
    /// hand-off or a fair unlock).
    /// `pref`: a reader-preferring reader (INV-PREFQ).
    pub(super) fn wait(&self, class: Class, id: u32, deadline: Option<u64>, pref: bool) -> Got {
        node::with_node(|q| match q {
            Some(q) => self.wait_queued(q, class, deadline, pref),
            None => self.wait_unqueued(class, id, deadline),
        })
    }

    /// No node: poll within the spin budget, yield in between (unfair but
    /// correct; counted as `rwsem_no_node`).
    fn wait_unqueued(&self, class: Class, _id: u32, deadline: Option<u64>) -> Got {
        stat::inc(Event::RwNoNode);
        let ns = crate::tune::get().rwsem_spin_ns;
        loop {
            if self.try_take(class) {
                return Got::Yes;
            }
            if wait::remaining(deadline).is_none() {
                return Got::TimedOut;
            }
            wait::spin_until(&mut SpinBudget::new(ns), || {
                is_lockable_by(self.count.load(Ordering::Relaxed), class, false)
            });
            wait::relinquish();
        }
    }

    /// Take WLOCK while holding nothing (a contender).
    #[inline]
    pub(super) fn wlock(&self) {
        lock_bit(&self.count, WLOCK);
    }

    /// Release WLOCK (a contender's; nothing else changes).
    /// Release pairs with the Acquire of the next `lock_bit(WLOCK)`.
    #[inline]
    fn wunlock(&self) {
        self.count.fetch_and(!WLOCK, Ordering::Release);
    }

    /// Under WLOCK, as a contender: give the head its turn, release WLOCK,
    /// finish the grants and wakes.
    pub(super) fn pass_turn_and_wunlock(&self) {
        let mut wq = WakeQ::new();
        // Relaxed: under WLOCK; the hand-on CASes decide.
        let grant = handoff_owed(self.count.load(Ordering::Relaxed));
        self.hand_on(0, 0, grant, &mut wq);
        wq.finish();
    }

    fn wait_queued(&self, q: QNode, class: Class, deadline: Option<u64>, pref: bool) -> Got {
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        // Enqueue under WLOCK, then give whoever can go now its turn (maybe
        // us: the lock may have become free, or read-owned, meanwhile).
        self.wlock();
        w.set_class(class, pref);
        w.w.set_state(WaiterState::Sleeping);
        // First-since stamp (eventual fairness; restamped when it becomes first).
        w.w.set_since_us(wait::now_us());
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
                let mut poll =
                    wait::PollBackoff::new(crate::tune::fixed::POLL_GRACE_NS, t.rwsem_poll_max_ns);
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

    /// Under WLOCK: select up to `KLOCK_RWSEM_WAKE_READERS` queued readers
    /// (skipping writers; seed 003 patch 15), count them in one RMW (`(n,..) ->
    /// (n+k,..)`, clearing HANDOFF, WAITERS and PREFQ when the list
    /// empties, PREFQ when no reader-preferring reader is left), unlink them
    /// and mark them Granting (the kernel's two passes: no grantee runs
    /// before it is counted). The caller completes the grants after
    /// releasing WLOCK ([`WakeQ::finish`]).
    ///
    /// `only_pref` (a writer heads the list and the lock stays read-owned,
    /// INV-PREFQ): only reader-preferring readers, HANDOFF (the head
    /// writer's) kept, and only while the count after the release still
    /// has readers and no writer: `(n,W|F[|H]) -> (n+k,W[|F][|H])`, n > 0.
    fn grant_readers(&self, sub: u32, add: u32, wq: &mut WakeQ, only_pref: bool) -> bool {
        let limit = crate::tune::get().rwsem_wake_readers as usize;
        let start = wq.n;
        let h = self.list.head();
        let mut t = h;
        let mut left = 0usize;
        let mut left_pref = 0usize;
        loop {
            let w = RwWaiter::decode(t);
            let reader = w.class() == Class::Reader && (!only_pref || w.is_pref());
            if reader && wq.n - start < limit {
                wq.push(t | WakeQ::GRANT);
            } else {
                left += 1;
                left_pref += usize::from(w.class() == Class::Reader && w.is_pref());
            }
            t = w.w.next_link();
            if t == h {
                break;
            }
        }
        let k = (wq.n - start) as u32;
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            // Re-check on every try: a contender granter does not hold the
            // lock, so a stealing writer may take it meanwhile (then no
            // grant: the kernel backs out the same way). Reader-preferring
            // readers behind a writer only join a lock that stays
            // read-owned (a count failing readers drop without WLOCK may be
            // gone).
            let after = release(c, sub, add);
            if after & (WRITER | UPGRADING) != 0 || (only_pref && readers(after) == 0) {
                wq.n = start;
                return false;
            }
            // Acquire: a contender granter passes on the release of the
            // lock's last owner (pairs with its Release), through the
            // grants' Release, to the grantees (INV-GRANT-PIN).
            match self.count.compare_exchange_weak(
                c,
                grant_queued_readers(c, k, only_pref, left == 0, left_pref == 0),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        let head_before = self.list.head();
        for &t in &wq.codes[start..wq.n] {
            let t = t & !WakeQ::GRANT;
            self.list.remove(t);
            chaos::point(Site::ListEdit);
            // INV-WAKE-ADDR: under WLOCK, the node was on our list.
            Waiter::decode(t).mark_granting();
        }
        if self.list.head() != head_before {
            self.list.stamp_head();
        }
        // Relaxed: a hint.
        self.owner.store(OWNER_READER, Ordering::Relaxed);
        stat::add(Event::RwReadGranted, k as u64);
        stat::cond_inc(Event::RwReadGrantBatch, k > 1);
        if only_pref {
            stat::add(Event::RwReadGrantedPref, k as u64);
        }
        true
    }

    /// Under WLOCK, holding `sub` (0 for a contender): give the head its
    /// turn as of the count after `c - sub + add`, then release (`sub` out,
    /// `add` in, WLOCK cleared) in one CAS. Readers at the head: granted
    /// (counted before the release). A writer at the head, with `grant`
    /// (hand-off, fair unlock) and the lock free after the release: the lock
    /// passes to it in the releasing CAS (`(0,X|W|H) -> (0,X[|W])`).
    /// Otherwise a writer or upgrader head is marked woken if it could take
    /// the lock (seed 003 patch 12: no second wake).
    fn hand_on(&self, sub: u32, add: u32, grant: bool, wq: &mut WakeQ) {
        let h = self.list.head();
        let class = (h != 0).then(|| RwWaiter::decode(h).class());
        // Step 1: readers at the head (or reader-preferring readers behind a
        // writer head) are granted before the release.
        let mut c = self.grant_head_readers(sub, add, class, wq);
        // Step 2: release in one CAS, giving a writer or upgrader head its
        // turn (the lock handed to it, or it marked woken).
        let mut marked = false;
        loop {
            let after = unlock_list(release(c, sub, add));
            let (new, handed) = Self::head_turn(h, class, after, grant, &mut marked, wq);
            if handed {
                // Keep WLOCK across the unlink: the lock passes in this CAS.
                // AcqRel: Release publishes our critical section; Acquire (a
                // contender granter) takes the last owner's release; the
                // grant's Release passes both on to the grantee.
                match self.count.compare_exchange_weak(
                    c,
                    lock_list(new),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // Step 3: the hand-off's grant.
                        self.finish_hand_off(h, wq);
                        return;
                    }
                    Err(x) => c = x,
                }
                continue;
            }
            // Release pairs with the next owner's Acquire (and releases
            // WLOCK to the next holder).
            match self
                .count
                .compare_exchange_weak(c, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(x) => c = x,
            }
        }
    }

    /// Step 1 of [`hand_on`](Self::hand_on), under WLOCK: grant the readers
    /// at the head (`class`: the head's), or, INV-PREFQ, the
    /// reader-preferring readers queued behind a writer head while the lock
    /// stays read-owned. Returns the count word as of after the grants.
    #[inline]
    fn grant_head_readers(&self, sub: u32, add: u32, class: Option<Class>, wq: &mut WakeQ) -> u32 {
        // Relaxed: under WLOCK; the CASes below decide.
        let mut c = self.count.load(Ordering::Relaxed);
        if class == Some(Class::Reader) && self.grant_readers(sub, add, wq, false) {
            c = self.count.load(Ordering::Relaxed);
        }
        // INV-PREFQ: a writer heads the list and the lock stays read-owned:
        // reader-preferring readers queued behind it join the readers.
        let after = release(c, sub, add);
        if class.is_some_and(|cl| cl != Class::Reader)
            && c & PREFQ != 0
            && readers(after) > 0
            && after & (WRITER | UPGRADING) == 0
            && self.grant_readers(sub, add, wq, true)
        {
            c = self.count.load(Ordering::Relaxed);
        }
        c
    }

    /// Step 2 of [`hand_on`](Self::hand_on), for one releasing CAS: the new
    /// count word given `after` (the count after the release, WLOCK clear)
    /// and whether the lock passes in it to the writer head `h` (`grant`).
    /// A writer or upgrader head that could take the lock but is not handed
    /// it is marked woken (and queued on `wq` for its wake) once: `marked`.
    #[inline]
    fn head_turn(
        h: u32,
        class: Option<Class>,
        after: u32,
        grant: bool,
        marked: &mut bool,
        wq: &mut WakeQ,
    ) -> (u32, bool) {
        let Some(cl) = class.filter(|&cl| cl != Class::Reader) else {
            return (after, false);
        };
        if !is_lockable_by(after, cl, true) {
            return (after, false);
        }
        if grant && cl == Class::Writer {
            let last = Waiter::decode(h).next_link() == h;
            return (hand_to_writer(after, last), true);
        }
        if !*marked {
            // INV-WAKE-ADDR: under WLOCK, before the release.
            if RwWaiter::decode(h).w.wake_mark() {
                wq.push(h);
            } else {
                stat::inc(Event::RwWakeSkipped);
            }
            *marked = true;
        }
        // INV-WAKING: the head is woken until it re-tries.
        (mark_woken(after), false)
    }

    /// Step 3 of [`hand_on`](Self::hand_on): the lock has passed to the
    /// writer head `h` in the releasing CAS, which kept WLOCK. Unlink it,
    /// mark it granted and queue its grant on `wq`, then drop WLOCK.
    #[inline]
    fn finish_hand_off(&self, h: u32, wq: &mut WakeQ) {
        chaos::point(Site::AfterRelease);
        self.unlink(h);
        // Relaxed: a hint; the grantee stores its id.
        self.owner.store(0, Ordering::Relaxed);
        Waiter::decode(h).mark_granting();
        wq.push(h | WakeQ::GRANT);
        stat::inc(Event::RwHandedOff);
        // The lock is the grantee's, and it cannot run
        // before `finish`: WLOCK is still ours to release.
        self.wunlock();
    }

    /// Under WLOCK: take `t` off the list; if it was the head, the new head
    /// is first from now on (eventual fairness's clock).
    #[inline]
    fn unlink(&self, t: u32) {
        let was_head = self.list.head() == t;
        self.list.remove(t);
        if was_head {
            self.list.stamp_head();
        }
    }

    /// Release `sub` and take `add` (read unlock: `READER_BIAS`, 0; write
    /// unlock: `WRITER`, 0; downgrade: `WRITER`, `READER_BIAS`). Without
    /// waiters that could use it: one CAS. Otherwise take WLOCK while still
    /// holding `sub`, give the head its turn, release in one CAS, then only
    /// complete grants and wake (INV-WAKE-ADDR, INV-GRANT-PIN).
    ///
    /// # Safety
    ///
    /// The caller holds `sub`.
    pub(super) unsafe fn release_share(&self, sub: u32, add: u32, fair: bool) {
        let plain_read = sub == READER_BIAS && add == 0;
        // Relaxed: the CASes decide; their orderings are commented.
        let mut c = self.count.load(Ordering::Relaxed);
        // Eventual fairness (`KLOCK_RWSEM_FAIR_HANDOFF_NS`): a head that has
        // been first that long gets its turn in this release (readers
        // granted, a writer handed the lock), even while a woken head is
        // pending. The next head's clock starts when it becomes first.
        let fair = fair
            || (has_waiters(c)
                && fair_check_due()
                && self
                    .list
                    .head_first_for(crate::tune::get().rwsem_fair_handoff_ns));
        loop {
            if plain_read && c & UPGRADING != 0 && readers(c) == 2 {
                // The upgrader is about to be alone: release, then wake it on
                // the count word (an address).
                // Release pairs with the upgrader's Acquire CAS.
                match self.count.compare_exchange_weak(
                    c,
                    release(c, sub, 0),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        chaos::point(Site::AfterRelease);
                        wait::futex_wake(&self.count, 1);
                        return;
                    }
                    Err(x) => c = x,
                }
                continue;
            }
            // A reader that is not the last cannot let a waiter in.
            // INV-WAKING: a woken head will re-try after this release.
            let woken_head = c & WAKING != 0 && !handoff_owed(c) && !fair;
            if !has_waiters(c) || (plain_read && readers(c) > 1) || woken_head {
                // Release pairs with the next owner's Acquire.
                match self.count.compare_exchange_weak(
                    c,
                    release(c, sub, add),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(x) => c = x,
                }
                continue;
            }
            if c & WLOCK != 0 {
                crate::wait::spin_then_yield(|| {
                    (crate::sync::peek(&self.count, Ordering::Relaxed) & WLOCK == 0).then_some(())
                });
                c = self.count.load(Ordering::Relaxed);
                continue;
            }
            // Acquire pairs with the Release of the previous WLOCK holder.
            match self.count.compare_exchange_weak(
                c,
                lock_list(c),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        // We hold `sub` and WLOCK.
        if plain_read && readers(c) == 1 {
            // The last reader leaves with waiters: writers may spin again.
            // Relaxed: a hint.
            self.owner.fetch_and(!OWNER_NONSPINNABLE, Ordering::Relaxed);
        }
        let mut wq = WakeQ::new();
        self.hand_on(sub, add, fair || handoff_owed(c), &mut wq);
        chaos::point(Site::AfterRelease);
        wq.finish();
    }
}

//! The optimistic spin queue (OSQ): a cancellable MCS queue of spinners, the
//! kernel's `osq_lock` (seed 004 and its 3.15 successor), built on [`crate::node`].
//!
//! It is **not** a data lock: it only decides which spinner may poll a mutex's
//! owner word, so that N spinners do not hammer one cache line (seed 004).
//! The mutex's own CAS provides the data ordering.
//!
//! # Word layout (one `AtomicU32`, 4 bytes)
//!
//! ```text
//!  31                    18 17 16 15               0
//! +------------------------+-----+------------------+
//! |  tail slot + 1         |level|   0 (unused)     |
//! +------------------------+-----+------------------+
//! ```
//!
//! The tail is a [`crate::node`] tail code; 0 = empty queue.
//!
//! # Node fields while queued
//!
//! Read and written only through [`OsqNode`], the OSQ's typed view:
//!
//! | word | meaning |
//! |---|---|
//! | `grant` | [`OsqGrant`]: `Head` once the predecessor granted us the queue head (release store, acquire read) |
//! | `next` | successor's tail code (0 = none yet) |
//! | `prev` | predecessor's tail code (rewritten by an unqueueing predecessor, step C) |
//! | `ident` | queue position (1 = head), a hint for "spinners outnumber CPUs" |
//! | `stamp` | heartbeat: `now_ns() >> 10` truncated, published while spinning (under loom, which has no clock, a count of heartbeats: see `OsqNode::looks_descheduled`) |
//!
//! The OSQ never stores into a node after the step that lets its thread go:
//! the grant is the last store into the successor, and the unqueue steps B-C
//! store only into neighbours that wait for exactly those stores
//! (INV-WAKE-ADDR, see [`crate::node`]). Step A's store of 0 into the
//! predecessor's `next` may be followed by step B moving the tail back to
//! that predecessor, which then leaves through `unlock`'s tail CAS: that CAS
//! acquires step B's Release, so the 0 lands before the predecessor's thread
//! reuses its node (as a wait-list node, for one). Its `state` word is unused.
//!
//! # State diagram (one node)
//!
//! ```text
//!             xchg tail
//!  (idle) ----------------> old == 0 ------------------------------> HEAD
//!                 |
//!                 +-> link prev.next = me; spin on locked ---locked=1--> HEAD
//!                          | budget out / prev heartbeat stale / too deep
//!                          v
//!                 A: CAS prev.next me->0  (or see locked=1 -> HEAD)
//!                 B: tail me->prev, or steal next with xchg(next, 0)
//!                 C: next.prev = prev; prev.next = next  --------------> (idle, gave up)
//!  HEAD --unlock: CAS tail me->0, or grant next.locked = 1------------> (idle)
//! ```
//!
//! A spinner that gives up leaves the queue consistent: its predecessor links to
//! its successor (or the tail moves back to the predecessor). A user-space
//! spinner can be preempted anywhere, which is exactly why the unqueue protocol
//! is needed (the kernel's OSQ unqueues for the same reason: a vCPU can be
//! preempted too). The unbounded waits inside the protocol
//! (waiting for a successor's link, or for a predecessor's step C) spin within
//! `KLOCK_WAITLOCK_SPIN_NS` and then yield, so a preempted peer gets the CPU.
//!
//! ```
//! use klock::internal::osq::Osq;
//! use klock::internal::wait::SpinBudget;
//! let q = Osq::new();
//! klock::internal::node::with_node(|n| {
//!     let n = n.unwrap();
//!     assert!(q.lock(n, &mut SpinBudget::new(1000), 4));
//!     assert!(!q.is_empty());
//!     q.unlock(n);
//! });
//! assert!(q.is_empty());
//! ```

use crate::node::{self, Node, QNode, check_tag, tag};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::{peek, publish};
use crate::wait::{self, SpinBudget};

/// A cancellable MCS queue of spinners (4 bytes: one `AtomicU32`).
///
/// ```
/// assert_eq!(std::mem::size_of::<klock::internal::osq::Osq>(), 4);
/// ```
#[derive(Debug)]
pub struct Osq {
    /// Tail code of the last queued node (0 = empty). Pairs: the AcqRel `swap`
    /// in `lock` publishes the new node and acquires the predecessor's.
    tail: AtomicU32,
}

impl Default for Osq {
    fn default() -> Self {
        Osq::new()
    }
}

/// Publish a heartbeat in our own node's `stamp` (microseconds, truncated):
/// successors read it to guess whether this spinner is still running.
/// Under loom (no clock) a count of heartbeats instead; only the node's own
/// thread writes it.
#[inline]
pub(crate) fn heartbeat(node: &Node) {
    #[cfg(not(loom))]
    let beat = (wait::now_ns() >> 10) as u32;
    // Relaxed: our own word (a hint for the readers).
    #[cfg(loom)]
    let beat = node.stamp.load(Ordering::Relaxed).wrapping_add(1);
    // Relaxed: a hint, read as a hint.
    node.stamp.store(beat, Ordering::Relaxed);
}

/// Whether a spinner in [`Osq::lock`] publishes its heartbeat and checks its
/// predecessor's at spin iteration `iter`: every
/// [`OSQ_HEARTBEAT_EVERY`](crate::tune::fixed::OSQ_HEARTBEAT_EVERY)-th
/// natively; under loom, whose budgets are a few iterations, at every
/// iteration when the stale check is on (`stale_ns` != 0), never otherwise.
#[inline(always)]
fn beat_due(iter: u32, stale_ns: u64) -> bool {
    if cfg!(loom) {
        stale_ns != 0
    } else {
        iter.is_multiple_of(crate::tune::fixed::OSQ_HEARTBEAT_EVERY)
    }
}

/// What a spinner remembers of its predecessor's heartbeat between checks:
/// under loom the (node, count) it last read (see
/// [`OsqNode::looks_descheduled`]); natively nothing (the clock decides).
#[derive(Default)]
struct BeatWatch {
    #[cfg(loom)]
    seen: Option<(usize, u32)>,
}

/// States of an OSQ node's `grant` word (tagged [`tag::OSQ`]).
///
/// ```text
///  Waiting --predecessor's unlock grants--> Head --our unlock--> (idle)
///  Waiting --unqueue (steps A-C)--> (idle)
/// ```
///
/// ```
/// use klock::internal::osq::OsqGrant;
/// assert_ne!(OsqGrant::Waiting as u32, OsqGrant::Head as u32);
/// assert_eq!(OsqGrant::Head as u32 & klock::internal::node::tag::MASK, klock::internal::node::tag::OSQ);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsqGrant {
    /// Queued behind a predecessor.
    Waiting = tag::OSQ | 1,
    /// Granted the queue head by the predecessor.
    Head = tag::OSQ | 2,
}

/// The OSQ's typed view of a [`Node`] (see the module docs' table).
#[derive(Clone, Copy)]
pub(crate) struct OsqNode<'a>(&'a Node);

impl<'a> OsqNode<'a> {
    #[inline]
    pub(crate) fn of(n: &'a Node) -> Self {
        OsqNode(n)
    }

    /// Initialise our own node before the tail swap publishes it.
    #[inline]
    fn init(self) {
        // Relaxed: published by the AcqRel tail swap in `lock`.
        self.0
            .grant
            .store(OsqGrant::Waiting as u32, Ordering::Relaxed);
        self.0.next.store(0, Ordering::Relaxed);
        self.0.prev.store(0, Ordering::Relaxed);
        self.0.ident.store(1, Ordering::Relaxed);
        heartbeat(self.0);
    }

    /// Our own node: granted the head? Acquire pairs with [`grant`](Self::grant).
    #[inline]
    fn is_head(self) -> bool {
        let g = peek(&self.0.grant, Ordering::Acquire);
        check_tag("grant", g, tag::OSQ);
        g == OsqGrant::Head as u32
    }

    /// Grant the head to this successor (still queued: it waits for exactly
    /// this store). Release pairs with [`is_head`](Self::is_head).
    #[inline]
    fn grant(self) {
        publish(&self.0.grant, OsqGrant::Head as u32, Ordering::Release);
    }

    /// Queue position (1 = head); a hint when read from another node.
    #[inline]
    fn position(self) -> u32 {
        // Relaxed: a hint (the predecessor's value is published by its swap).
        self.0.ident.load(Ordering::Relaxed)
    }

    #[inline]
    fn set_position(self, pos: u32) {
        // Relaxed: published by the Release link store in `lock`.
        self.0.ident.store(pos, Ordering::Relaxed);
    }

    /// Does the spinner owning this node look descheduled (heartbeat older than
    /// `KLOCK_OSQ_STALE_NS`)? A hint only (`docs/design.md`, principle P5): the caller
    /// gives up (unqueues) on `true`, which is safe whatever the answer.
    ///
    /// Under loom there is no clock ([`wait::now_ns`] is 0), so a heartbeat
    /// is a count ([`heartbeat`]) and the predecessor looks descheduled when
    /// its count has not moved since this spinner's previous check of the
    /// same node (`watch`): loom explores both answers wherever the
    /// predecessor may or may not have run in between (or its newer count
    /// may not be visible yet).
    #[inline]
    fn looks_descheduled(self, stale_ns: u64, watch: &mut BeatWatch) -> bool {
        if stale_ns == 0 {
            return false;
        }
        // Relaxed: a hint.
        let beat = self.0.stamp.load(Ordering::Relaxed);
        #[cfg(loom)]
        {
            let key = (self.0 as *const Node as usize, beat);
            let unchanged = watch.seen == Some(key);
            watch.seen = Some(key);
            unchanged
        }
        #[cfg(not(loom))]
        {
            let _ = watch;
            let now = (wait::now_ns() >> 10) as u32;
            (now.wrapping_sub(beat) as u64) << 10 > stale_ns
        }
    }

    /// The `next` link word (a tail code).
    #[inline]
    fn next(self) -> &'a AtomicU32 {
        &self.0.next
    }

    /// The `prev` link word (a tail code).
    #[inline]
    fn prev(self) -> &'a AtomicU32 {
        &self.0.prev
    }
}

impl Osq {
    /// An empty queue.
    ///
    /// ```
    /// assert!(klock::internal::osq::Osq::new().is_empty());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Osq {
        Osq {
            tail: AtomicU32::new(0),
        }
    }

    /// An empty queue.
    #[cfg(loom)]
    pub fn new() -> Osq {
        Osq {
            tail: AtomicU32::new(0),
        }
    }

    /// Is nobody queued? (A racy snapshot.)
    ///
    /// ```
    /// assert!(klock::internal::osq::Osq::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.tail.load(Ordering::Relaxed) == 0
    }

    /// Queue position (1 = head) of the current tail, 0 if empty: a hint for
    /// "spinners would outnumber CPUs". Racy by nature.
    ///
    /// ```
    /// assert_eq!(klock::internal::osq::Osq::new().depth_hint(), 0);
    /// ```
    #[inline]
    pub fn depth_hint(&self) -> u32 {
        match self.tail.load(Ordering::Relaxed) {
            0 => 0,
            t => OsqNode::of(node::decode(t)).position(),
        }
    }

    /// Join the queue with `q` and wait to become its head. Returns `true` at
    /// the head (call [`unlock`](Self::unlock) when done spinning) and `false`
    /// if the caller gave up and has already left the queue: `budget` ran out,
    /// the predecessor looks descheduled, or the caller's position exceeds
    /// `max_pos` (spinners would outnumber CPUs).
    ///
    /// ```
    /// use klock::internal::{osq::Osq, wait::SpinBudget};
    /// let q = Osq::new();
    /// klock::internal::node::with_node(|n| {
    ///     let n = n.unwrap();
    ///     assert!(q.lock(n, &mut SpinBudget::new(0), 1)); // empty queue: head at once
    ///     q.unlock(n);
    /// });
    /// ```
    pub fn lock(&self, q: QNode, budget: &mut SpinBudget, max_pos: u32) -> bool {
        // Step 1: join as the tail; an empty queue makes us its head at once.
        let Some(pos) = self.join(q) else {
            return true;
        };
        // Step 2: spin until granted the head, unless too far back.
        if pos <= max_pos && Self::spin_for_head(OsqNode::of(q.node()), budget) {
            return true;
        }
        // Step 3: give up: leave the queue (or take the head, granted meanwhile).
        self.unqueue(q)
    }

    /// Step 1 of [`lock`](Self::lock): initialise our node and swap it in
    /// as the tail. `None`: the queue was empty, we are its head. Otherwise
    /// linked behind the predecessor: our queue position.
    #[inline]
    fn join(&self, q: QNode) -> Option<u32> {
        let me = q.tail();
        let n = OsqNode::of(q.node());
        n.init();
        // AcqRel: Release publishes the stores above to whoever decodes our tail
        // (a successor reading `aux`/`state`); Acquire pairs with the
        // predecessor's own swap so its `aux` is initialised when we read it.
        let old = self.tail.swap(me, Ordering::AcqRel);
        crate::chaos::point(crate::chaos::Site::ListEdit);
        if old == 0 {
            return None;
        }
        let prev = OsqNode::of(node::decode(old));
        let pos = prev.position().saturating_add(1);
        n.set_position(pos);
        // Relaxed: published by the Release link store below.
        n.prev().store(old, Ordering::Relaxed);
        // Release: our `prev` (and `aux`) stores must be visible before we are
        // reachable through prev.next (the kernel's smp_wmb); pairs with the
        // Acquire `swap` of prev.next in `wait_next` / `unlock`.
        publish(prev.next(), me, Ordering::Release);
        crate::chaos::point(crate::chaos::Site::ListEdit);
        Some(pos)
    }

    /// Step 2 of [`lock`](Self::lock): spin on our node `n` until granted the
    /// head (`true`), the budget runs out or the predecessor looks
    /// descheduled (`false`). Publishes our heartbeat as it spins.
    #[inline]
    fn spin_for_head(n: OsqNode<'_>, budget: &mut SpinBudget) -> bool {
        let stale = crate::tune::get().osq_stale_ns;
        let mut iter = 0u32;
        let mut watch = BeatWatch::default();
        let mut stale_seen = false;
        if wait::spin_until(budget, || {
            iter = iter.wrapping_add(1);
            if beat_due(iter, stale) {
                heartbeat(n.0);
                // Relaxed: a hint.
                let p = OsqNode::of(node::decode(n.prev().load(Ordering::Relaxed)));
                if p.looks_descheduled(stale, &mut watch) {
                    stale_seen = true;
                    return true;
                }
            }
            n.is_head()
        }) && n.is_head()
        {
            return true;
        }
        stat::cond_inc(Event::OsqStale, stale_seen);
        false
    }

    /// Step 3 of [`lock`](Self::lock), the unqueue: leave the queue (steps
    /// A-C, `false`) unless the head is granted to us first (`true`).
    #[inline]
    fn unqueue(&self, q: QNode) -> bool {
        // Step A: unlink from prev.next, unless the grant arrives first.
        let Some(prev_tail) = Self::unlink_from_prev(q) else {
            return true;
        };
        stat::inc(Event::OsqUnqueue);
        // Step B: either move the tail back to prev (we were last) or take our
        // successor (its link is stable once we swap it out).
        let Some(next_tail) = self.wait_next(q, prev_tail) else {
            return false;
        };
        stat::inc(Event::OsqUnqueueRelink);
        // Step C: link successor and predecessor. Release on prev.next pairs
        // with the successor's / prev's Acquire reads of the link.
        publish(
            OsqNode::of(node::decode(next_tail)).prev(),
            prev_tail,
            Ordering::Release,
        );
        crate::chaos::point(crate::chaos::Site::ListEdit);
        publish(
            OsqNode::of(node::decode(prev_tail)).next(),
            next_tail,
            Ordering::Release,
        );
        false
    }

    /// Step A of the unqueue: clear our predecessor's `next` link to us and
    /// return the predecessor's tail code, or `None` if the head was granted
    /// to us first.
    #[inline]
    fn unlink_from_prev(q: QNode) -> Option<u32> {
        let me = q.tail();
        let n = OsqNode::of(q.node());
        let mut prev_tail = n.prev().load(Ordering::Acquire);
        let granted = wait::spin_then_yield(|| {
            let prev = OsqNode::of(node::decode(prev_tail));
            // Acquire on success: step C of an unqueueing predecessor released
            // our new `prev`; relaxed reload below.
            if peek(prev.next(), Ordering::Relaxed) == me
                && prev
                    .next()
                    .compare_exchange(me, 0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(false);
            }
            // Acquire pairs with the Release grant store: we own the queue head.
            if n.is_head() {
                return Some(true);
            }
            // prev may itself have unqueued and rewritten our prev (its step C).
            prev_tail = n.prev().load(Ordering::Acquire);
            None
        });
        (!granted).then_some(prev_tail)
    }

    /// Wait until we either move the tail from us back to `prev_tail` (we were
    /// last: `None`) or obtain our successor's tail code (swapped out of our
    /// `next`, so nobody else links through it).
    fn wait_next(&self, q: QNode, prev_tail: u32) -> Option<u32> {
        let me = q.tail();
        let n = OsqNode::of(q.node());
        wait::spin_then_yield(|| {
            // Acquire on success pairs with the swaps of later joiners (none
            // exist if the CAS succeeds; kept for symmetry with the kernel).
            if peek(&self.tail, Ordering::Relaxed) == me
                && self
                    .tail
                    .compare_exchange(me, prev_tail, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(None);
            }
            if peek(n.next(), Ordering::Relaxed) != 0 {
                // Acquire pairs with the successor's Release store of the link,
                // so its `prev` store is visible to us.
                let next = n.next().swap(0, Ordering::Acquire);
                if next != 0 {
                    return Some(Some(next));
                }
            }
            None
        })
    }

    /// Leave the head of the queue: pass it to the successor (if any).
    ///
    /// ```
    /// let q = klock::internal::osq::Osq::new();
    /// klock::internal::node::with_node(|n| {
    ///     let n = n.unwrap();
    ///     assert!(q.lock(n, &mut klock::internal::wait::SpinBudget::new(10), 1));
    ///     q.unlock(n);
    /// });
    /// ```
    pub fn unlock(&self, q: QNode) {
        let me = q.tail();
        // Release: nothing to publish for the data (the OSQ is not a data lock),
        // but keeps the head's spinning stores ordered before a new joiner's.
        // Acquire: the tail may read `me` again because a successor unqueued
        // (its step B moved the tail back to us, AcqRel in `wait_next`) after
        // its step A CAS stored 0 into our `next`; pairing with that Release
        // orders the successor's store before our thread reuses this node
        // (e.g. as a wait-list node, whose `next` must not turn 0 behind our
        // back: INV-WAKE-ADDR). Without it the memory model lets the stale 0
        // land after the wait list's link (loom: `loom_osq_stale.rs`).
        if self
            .tail
            .compare_exchange(me, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        let n = OsqNode::of(q.node());
        // Acquire pairs with the successor's Release link store.
        let mut next = n.next().swap(0, Ordering::Acquire);
        if next == 0 {
            next = self.wait_next(q, 0).unwrap_or(0);
        }
        if next != 0 {
            // The successor's last store from us: it leaves only after
            // seeing it (INV-WAKE-ADDR).
            OsqNode::of(node::decode(next)).grant();
            crate::chaos::point(crate::chaos::Site::AfterRelease);
        }
    }
}

/// Most spinners allowed at once (OSQ positions) for any lock that spins
/// through an OSQ: `KLOCK_OSQ_MAX_SPINNERS`, or effective CPUs - 1.
pub(crate) fn max_spinners() -> u32 {
    let t = crate::tune::get().osq_max_spinners;
    if t != 0 {
        t
    } else if cfg!(loom) {
        2
    } else {
        (crate::wait::effective_cpus() as u32).saturating_sub(1)
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    #[test]
    fn single_thread_lock_unlock() {
        let q = Osq::new();
        node::with_node(|n| {
            let n = n.unwrap();
            for _ in 0..3 {
                assert!(q.lock(n, &mut SpinBudget::new(0), 1));
                assert_eq!(q.depth_hint(), 1);
                q.unlock(n);
                assert!(q.is_empty());
            }
        });
    }

    #[test]
    fn too_deep_gives_up_and_unqueues() {
        let q = Arc::new(Osq::new());
        let hold = Arc::new(AtomicBool::new(true));
        let in_q = Arc::new(AtomicBool::new(false));
        let (q2, hold2, in2) = (q.clone(), hold.clone(), in_q.clone());
        let head = std::thread::spawn(move || {
            node::with_node(|n| {
                let n = n.unwrap();
                assert!(q2.lock(n, &mut SpinBudget::new(0), 1));
                in2.store(true, std::sync::atomic::Ordering::Release);
                while hold2.load(std::sync::atomic::Ordering::Acquire) {
                    heartbeat(n.node());
                    std::thread::yield_now();
                }
                q2.unlock(n);
            })
        });
        while !in_q.load(std::sync::atomic::Ordering::Acquire) {
            std::thread::yield_now();
        }
        node::with_node(|n| {
            let n = n.unwrap();
            // Position 2 > max 1: leaves without spinning.
            assert!(!q.lock(n, &mut SpinBudget::unbounded(), 1));
            // Position 2 within max, budget 0: spins not at all, unqueues.
            assert!(!q.lock(n, &mut SpinBudget::new(0), 8));
        });
        assert_eq!(q.depth_hint(), 1, "tail moved back to the head");
        hold.store(false, std::sync::atomic::Ordering::Release);
        head.join().unwrap();
        assert!(q.is_empty());
    }

    #[test]
    fn many_spinners_with_cancellation_stay_consistent() {
        // Threads join with tiny budgets (most give up) while the head passes
        // on; at the end the queue must be empty and every head unique.
        let q = Arc::new(Osq::new());
        let heads = Arc::new(AtomicUsize::new(0));
        let inside = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..8)
            .map(|i| {
                let (q, heads, inside) = (q.clone(), heads.clone(), inside.clone());
                std::thread::spawn(move || {
                    for k in 0..2000u64 {
                        node::with_node(|n| {
                            let n = n.unwrap();
                            let budget = if (k + i) % 3 == 0 { 0 } else { 2_000 };
                            if q.lock(n, &mut SpinBudget::new(budget), 64) {
                                assert_eq!(
                                    inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
                                    0,
                                    "two OSQ heads"
                                );
                                heads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                                q.unlock(n);
                            }
                        })
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(q.is_empty());
        assert!(heads.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
}

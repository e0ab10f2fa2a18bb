//! The wait list: the FIFO of sleeping waiters that the mutex, the condvar
//! and the rwsem share (the kernel's `wait_list` + `wait_lock`), written once.
//!
//! * [`WaitList`]: a circular doubly-linked list of [`crate::node`] nodes, its
//!   head's tail code in bits 16-31 of one word (bits 0-15 belong to the
//!   word's owner: the condvar keeps its list lock there).
//! * [`lock_bit`]: the list lock, a bit in a word of the lock's choosing
//!   (the mutex's and the rwsem's WLOCK, the condvar's CV_LOCK), so that an
//!   unlock can release the lock and the list lock in one RMW.
//! * [`Waiter`]: the typed view of a node while it is on a wait list: links,
//!   the futex word `state` ([`WaiterState`]), and `ident`, whose meaning
//!   belongs to the protocol (the mutex: the thread id; the rwsem: the
//!   waiter's class, through its own view `rwlock::RwWaiter`).
//!
//! A waiter's `state` is re-armed and set only under the list lock
//! (INV-WLOCK-STATE, defined in `docs/invariants.md`). This rules out a lost wake-up (a waker's store either follows
//! the re-arm, and the futex wait sees it, or precedes it, and then the
//! waker's release happens-before the waiter's re-check). And, since a
//! waiter needs the list lock to leave the list, every store into another
//! waiter's node is a store into a node still on our list (INV-WAKE-ADDR,
//! [`crate::node`]). After the list lock's release a waker only calls
//! [`Waiter::wake`] (an address).
//!
//! ```
//! use klock::internal::waitlist::WaiterState;
//! assert_ne!(WaiterState::Sleeping, WaiterState::Woken);
//! ```

use crate::chaos::{self, Site};
use crate::node;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;

/// States of a wait-list node's `state` word, its futex word (tagged
/// [`node::tag::WAITER`]). Set only under WLOCK (INV-WLOCK-STATE, see the
/// module docs), so every store into another thread's node happens while
/// that node is on our list and its thread needs WLOCK to leave
/// (INV-WAKE-ADDR).
///
/// ```text
///  Sleeping --unlock / requeue / leaving waiter passes the wake (under WLOCK)--> Woken
///  Woken --waiter re-arms (under WLOCK)--> Sleeping
///  Sleeping|Woken --rwsem grant: unlinked, share counted (under WLOCK)--> Granting
///  Granting --the granter, after its release (INV-GRANT-PIN)--> Granted
/// ```
///
/// ```
/// use klock::internal::waitlist::WaiterState;
/// assert_eq!(WaiterState::Woken as u32 & klock::internal::node::tag::MASK, klock::internal::node::tag::WAITER);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaiterState {
    /// The waiter may sleep on its `state` word.
    Sleeping = node::tag::WAITER | 1,
    /// An unlock (or requeue) woke the waiter; it has not re-armed yet.
    Woken = node::tag::WAITER | 2,
    /// The waker removed the waiter from the list and gave it the lock (the
    /// rwsem's grant): final; the waiter returns holding the lock.
    Granted = node::tag::WAITER | 3,
    /// The waker removed the waiter from the list and counted its share but
    /// has not released the list lock yet: the waiter must wait for
    /// `Granted` (INV-GRANT-PIN: a node in this state is pinned; only its
    /// granter stores into it, after its release).
    Granting = node::tag::WAITER | 4,
}

/// The wait list's typed view of a [`node::Node`] (mutex waiters, and condvar
/// waiters once requeued; the condvar's own state values are
/// `condvar::CondState`).
#[derive(Clone, Copy)]
pub(crate) struct Waiter<'a>(&'a node::Node);

impl<'a> Waiter<'a> {
    #[inline]
    pub(crate) fn of(n: &'a node::Node) -> Self {
        Waiter(n)
    }

    /// The waiter a tail code names.
    #[inline]
    pub(crate) fn decode(t: u32) -> Waiter<'static> {
        Waiter(node::decode(t))
    }

    /// The `next` list link (a tail code; under the list lock).
    #[inline]
    pub(crate) fn next_link(self) -> u32 {
        // Relaxed: under the list lock.
        self.0.next.load(Ordering::Relaxed)
    }

    /// Our own node's state is still `v` (a condvar waiter's check; checked
    /// for a foreign tag, which would be a stale write).
    #[inline]
    pub(crate) fn state_is(self, v: u32) -> bool {
        // Relaxed: the decision is re-made under the list lock.
        let s = self.0.state.load(Ordering::Relaxed);
        if s & node::tag::MASK != node::tag::CONDVAR {
            node::check_tag("state", s, node::tag::WAITER);
        }
        s == v
    }

    /// [`state_is`](Self::state_is) with Acquire: for a value that is the
    /// last write another thread makes to the node (a condvar's `Notified`),
    /// so that its earlier writes (list links) happen before we reuse it.
    #[inline]
    pub(crate) fn state_is_acquire(self, v: u32) -> bool {
        // Acquire pairs with the Release of `set_raw_state_release`.
        let s = self.0.state.load(Ordering::Acquire);
        if s & node::tag::MASK != node::tag::CONDVAR {
            node::check_tag("state", s, node::tag::WAITER);
        }
        s == v
    }

    /// Our own node (a condvar waiter): has a notify moved it to the mutex
    /// list (a [`WaiterState`])? Only the wait-list tag counts, so a stray
    /// value of another protocol (a stale write, caught in debug builds) does
    /// not let the waiter leave the condvar list early.
    #[inline]
    pub(crate) fn is_requeued(self) -> bool {
        // Relaxed: the decision is made under the locks; this is its result.
        let s = self.0.state.load(Ordering::Relaxed);
        if s & node::tag::MASK != node::tag::CONDVAR {
            node::check_tag("state", s, node::tag::WAITER);
        }
        s & node::tag::MASK == node::tag::WAITER
    }

    /// Is our own node `Woken`? (Checked: a value of the qspinlock or OSQ
    /// protocol here would be a stale write.)
    #[inline]
    pub(crate) fn is_woken(self) -> bool {
        // Relaxed: see raw_state.
        let v = self.0.state.load(Ordering::Relaxed);
        if v & node::tag::MASK != node::tag::CONDVAR {
            node::check_tag("state", v, node::tag::WAITER);
        }
        v == WaiterState::Woken as u32
    }

    /// Store a state (under the list lock; INV-WLOCK-STATE).
    #[inline]
    pub(crate) fn set_state(self, s: WaiterState) {
        // Relaxed: under WLOCK, whose Release publishes it to the next holder.
        self.0.state.store(s as u32, Ordering::Relaxed);
    }

    /// Store a raw state value of a protocol sharing this view (the condvar).
    #[inline]
    pub(crate) fn set_raw_state(self, v: u32) {
        // Relaxed: under the condvar's list lock (its Release publishes it).
        self.0.state.store(v, Ordering::Relaxed);
    }

    /// Store a raw state value as the last write to another thread's node
    /// (Release pairs with the Acquire of
    /// [`state_is_acquire`](Self::state_is_acquire)).
    #[inline]
    pub(crate) fn set_raw_state_release(self, v: u32) {
        self.0.state.store(v, Ordering::Release);
    }

    /// Mark `Woken` under WLOCK; returns whether it was not already woken
    /// (then a `futex_wake` is needed after the release).
    #[inline]
    pub(crate) fn wake_mark(self) -> bool {
        // Relaxed: under WLOCK; the release CAS of the lock publishes it.
        self.0
            .state
            .swap(WaiterState::Woken as u32, Ordering::Relaxed)
            != WaiterState::Woken as u32
    }

    /// Select the waiter for a grant (under the list lock, after it was
    /// unlinked and its share counted): it waits for [`grant`](Self::grant).
    #[inline]
    pub(crate) fn mark_granting(self) {
        // Relaxed: under the list lock; `grant`'s Release follows.
        self.0
            .state
            .store(WaiterState::Granting as u32, Ordering::Relaxed);
    }

    /// Our own node: selected for a grant (Granting or Granted)?
    #[inline]
    pub(crate) fn is_selected(self) -> bool {
        // Relaxed: a Granted value is re-read with Acquire by `is_granted`.
        let v = self.0.state.load(Ordering::Relaxed);
        v == WaiterState::Granting as u32 || v == WaiterState::Granted as u32
    }

    /// Complete a grant (INV-GRANT-PIN: allowed after the lock's release,
    /// because a Granting waiter cannot leave): the waiter may return
    /// holding the lock as soon as it sees this.
    #[inline]
    pub(crate) fn grant(self) {
        // Release: pairs with the Acquire in `is_granted`: the waker's
        // critical section and the count update happen-before the grantee's.
        self.0
            .state
            .store(WaiterState::Granted as u32, Ordering::Release);
    }

    /// Our own node: were we granted the lock?
    #[inline]
    pub(crate) fn is_granted(self) -> bool {
        // Acquire: pairs with the Release in `grant`.
        let v = self.0.state.load(Ordering::Acquire);
        node::check_tag("state", v, node::tag::WAITER);
        v == WaiterState::Granted as u32
    }

    /// The thread id the waiter will own the lock under (hand-off).
    #[inline]
    pub(crate) fn thread_id(self) -> u32 {
        // Relaxed: under WLOCK (written under WLOCK or the condvar's lock).
        self.0.ident.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set_thread_id(self, id: u32) {
        // Relaxed: under the list lock.
        self.0.ident.store(id, Ordering::Relaxed);
    }

    /// When the waiter became first on the list, or queued if it is not
    /// first yet (monotonic microseconds, truncated to 32 bits: compare with
    /// `wrapping_sub`).
    /// The waiter's real-time priority (1-99; 0 = not real-time), kept in
    /// the node's otherwise unused `grant` word while it is on a mutex's
    /// list. Read and set under WLOCK.
    #[inline]
    pub(crate) fn rt_prio(self) -> u32 {
        // Relaxed: under WLOCK, whose Release published it.
        self.0.grant.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set_rt_prio(self, p: u32) {
        // Relaxed: under WLOCK.
        self.0.grant.store(p, Ordering::Relaxed);
    }

    /// The parking lot's key (`asym::lot`): the address of the word the
    /// node waits for, split over `ident` (low 32 bits) and `grant` (high).
    /// Set before the node is listed; read under the list lock.
    #[inline]
    pub(crate) fn set_key(self, lo: u32, hi: u32) {
        // Relaxed (both): published by the list lock's Release.
        self.0.ident.store(lo, Ordering::Relaxed);
        self.0.grant.store(hi, Ordering::Relaxed);
    }

    /// Does the node wait for the word whose key is `(lo, hi)`?
    #[inline]
    pub(crate) fn has_key(self, lo: u32, hi: u32) -> bool {
        // Relaxed (both): read under the list lock that published them.
        self.0.ident.load(Ordering::Relaxed) == lo && self.0.grant.load(Ordering::Relaxed) == hi
    }

    #[inline]
    pub(crate) fn since_us(self) -> u32 {
        // Relaxed: a hint for newcomers (read without the list lock; a stale
        // or reused node only makes one newcomer yield or queue needlessly).
        self.0.stamp.load(Ordering::Relaxed)
    }

    /// Record when the waiter queued or became first (under the list lock).
    #[inline]
    pub(crate) fn set_since_us(self, us: u32) {
        // Relaxed: published by the list lock's Release (read as a hint).
        self.0.stamp.store(us, Ordering::Relaxed);
    }

    /// The futex word (wake only an address after a release: INV-WAKE-ADDR).
    #[inline]
    pub(crate) fn futex(self) -> &'a AtomicU32 {
        &self.0.state
    }

    /// Wake the waiter's futex word (an address only: allowed after the release).
    #[inline]
    pub(crate) fn wake(self) {
        wait::futex_wake(&self.0.state, 1);
    }
}

/// A FIFO of nodes (circular, doubly linked through `next`/`prev` tail codes),
/// its head's tail code kept in bits 16-31 of one word. Every operation needs
/// the list's lock (the mutex's WLOCK, the condvar's bit lock); the lock's
/// Acquire/Release orders the Relaxed link accesses.
#[derive(Debug)]
pub(crate) struct WaitList {
    /// Head tail code in bits 16-31; bits 0-15 belong to the owner of the word.
    pub(crate) word: AtomicU32,
}

const HEAD_MASK: u32 = node::TAIL_MASK;
/// The hint bits ([`WaitList::hint`]): below the head, above bit 0.
const HINT_MASK: u32 = !HEAD_MASK & !1;
const _: () = assert!(HINT_MASK == 0xfffe);

/// A lock owner's id folded into the hint bits, never 0 (0 = no hint).
/// Two ids may share a tag: the hint then misleads one decision.
///
/// (Tested in `hint_bits_sit_between_the_lock_bit_and_the_head`.)
#[inline]
pub(crate) const fn owner_tag(id: u32) -> u32 {
    let t = ((id ^ (id >> 15)) << 1) & HINT_MASK;
    if t == 0 { 2 } else { t }
}

impl WaitList {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        WaitList {
            word: AtomicU32::new(0),
        }
    }
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        WaitList {
            word: AtomicU32::new(0),
        }
    }

    /// Head tail code (0 = empty). Under the list lock; Relaxed (racy) otherwise.
    #[inline]
    pub(crate) fn head(&self) -> u32 {
        self.word.load(Ordering::Relaxed) & HEAD_MASK
    }

    /// Has the head been first for `ns` or longer (`ns` 0: no)? Read
    /// without the list lock: a hint (nodes are type-stable; a stale one
    /// only makes one decision needlessly). The mutex's eventual fairness.
    #[inline]
    pub(crate) fn head_first_for(&self, ns: u64) -> bool {
        if ns == 0 {
            return false;
        }
        let h = self.head();
        h != 0 && u64::from(wait::now_us().wrapping_sub(Waiter::decode(h).since_us())) * 1000 >= ns
    }

    /// Under the list lock, after the head left: stamp the new head "first
    /// from now on" (what [`head_first_for`](Self::head_first_for) reads).
    /// INV-WAKE-ADDR: a store into a node on our list, under its lock.
    #[inline]
    pub(crate) fn stamp_head(&self) {
        let h = self.head();
        if h != 0 {
            Waiter::decode(h).set_since_us(wait::now_us());
        }
    }

    /// The lock's hint beside the list, bits 1-15 of the word (bit 0 is the
    /// condvar's CV_LOCK; the head needs bits 16-31). The mutex keeps the
    /// tag of an owner a spinner gave up on there ([`owner_tag`]). Relaxed:
    /// a hint, never part of a decision that needs ordering.
    #[inline]
    pub(crate) fn hint(&self) -> u32 {
        self.word.load(Ordering::Relaxed) & HINT_MASK
    }

    /// Set the hint bits to `v` (`v & !HINT_MASK == 0`), keeping the head and
    /// bit 0 ([`set_bits`](Self::set_bits): the head changes concurrently,
    /// under the list lock; the hint without it).
    pub(crate) fn set_hint(&self, v: u32) {
        debug_assert_eq!(v & !HINT_MASK, 0);
        self.set_bits(HINT_MASK, v);
    }

    #[inline]
    fn set_head(&self, h: u32) {
        // Only the lock holder changes the head bits; the others (the
        // condvar's lock bit, the mutex's hint) are kept.
        self.set_bits(HEAD_MASK, h);
    }

    /// Replace the bits under `mask` with `v`, keeping the others: a CAS
    /// loop, since the other bits change concurrently (the condvar's lock
    /// bit, the mutex's hint). No store when they already hold `v`.
    /// Relaxed: the word's other users order themselves (the list lock's
    /// own RMWs); the hint is a hint.
    #[inline]
    fn set_bits(&self, mask: u32, v: u32) {
        let mut o = self.word.load(Ordering::Relaxed);
        while o & mask != v {
            match self.word.compare_exchange_weak(
                o,
                (o & !mask) | v,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(x) => o = x,
            }
        }
    }

    pub(crate) fn push_back(&self, t: u32) {
        let n = node::decode(t);
        let h = self.head();
        if h == 0 {
            n.next.store(t, Ordering::Relaxed);
            n.prev.store(t, Ordering::Relaxed);
            self.set_head(t);
        } else {
            let hn = node::decode(h);
            let tl = hn.prev.load(Ordering::Relaxed);
            n.next.store(h, Ordering::Relaxed);
            n.prev.store(tl, Ordering::Relaxed);
            node::decode(tl).next.store(t, Ordering::Relaxed);
            chaos::point(Site::ListEdit);
            hn.prev.store(t, Ordering::Relaxed);
        }
    }

    /// Insert `t` (its [`Waiter::rt_prio`] set) before the first waiter of
    /// lower real-time priority, FIFO among equals: the order POSIX asks of
    /// a mutex whose waiters run under `SCHED_FIFO`/`SCHED_RR` (the kernel's
    /// futex queue is ordered the same way). A waiter that is not
    /// real-time (0) goes to the back without a walk.
    pub(crate) fn push_by_priority(&self, t: u32) {
        let p = Waiter::decode(t).rt_prio();
        let h = self.head();
        if p == 0 || h == 0 {
            return self.push_back(t);
        }
        let mut x = h;
        loop {
            if Waiter::decode(x).rt_prio() < p {
                break;
            }
            x = Waiter::decode(x).next_link();
            if x == h {
                return self.push_back(t);
            }
        }
        // Link `t` before `x`.
        let (n, xn) = (node::decode(t), node::decode(x));
        let pv = xn.prev.load(Ordering::Relaxed);
        n.next.store(x, Ordering::Relaxed);
        n.prev.store(pv, Ordering::Relaxed);
        node::decode(pv).next.store(t, Ordering::Relaxed);
        chaos::point(Site::ListEdit);
        xn.prev.store(t, Ordering::Relaxed);
        if x == h {
            self.set_head(t);
        }
    }

    pub(crate) fn remove(&self, t: u32) {
        let n = node::decode(t);
        let nx = n.next.load(Ordering::Relaxed);
        if nx == t {
            self.set_head(0);
            return;
        }
        let pv = n.prev.load(Ordering::Relaxed);
        node::decode(pv).next.store(nx, Ordering::Relaxed);
        chaos::point(Site::ListEdit);
        node::decode(nx).prev.store(pv, Ordering::Relaxed);
        if self.head() == t {
            self.set_head(nx);
        }
    }

    /// Detach the whole list; returns its head (0 if empty).
    pub(crate) fn take_all(&self) -> u32 {
        let h = self.head();
        if h != 0 {
            self.set_head(0);
        }
        h
    }

    /// Append a detached circular list whose head is `h2`.
    pub(crate) fn splice_back(&self, h2: u32) {
        if h2 == 0 {
            return;
        }
        let h = self.head();
        if h == 0 {
            self.set_head(h2);
            return;
        }
        let (hn, h2n) = (node::decode(h), node::decode(h2));
        let t1 = hn.prev.load(Ordering::Relaxed);
        let t2 = h2n.prev.load(Ordering::Relaxed);
        node::decode(t1).next.store(h2, Ordering::Relaxed);
        chaos::point(Site::ListEdit);
        h2n.prev.store(t1, Ordering::Relaxed);
        node::decode(t2).next.store(h, Ordering::Relaxed);
        hn.prev.store(t2, Ordering::Relaxed);
    }
}

/// Take a lock bit in `word` (test-and-test-and-set; spins within
/// `KLOCK_WAITLOCK_SPIN_NS`, then yields). Returns the word's value with the
/// bit set. Acquire pairs with the Release in whichever RMW clears the bit.
pub(crate) fn lock_bit(word: &AtomicU32, bit: u32) -> u32 {
    loop {
        let o = word.fetch_or(bit, Ordering::Acquire);
        if o & bit == 0 {
            return o | bit;
        }
        crate::wait::spin_then_yield(|| {
            (crate::sync::peek(word, Ordering::Relaxed) & bit == 0).then_some(())
        });
    }
}

/// A thread's slow unlocks look at the head's wait ([`WaitList::head_first_for`]:
/// a clock read and a load of another thread's node, ~30-60 ns while the
/// lock is still held) only once in this many: a fair hand-off comes at most
/// this many of its unlocks late, and a `hot` lock's holds stay short
/// (checked on every unlock it cost the mutex's `hot` 0.40-0.74x).
const FAIR_CHECK_EVERY: u32 = 16;

#[cfg(not(loom))]
std::thread_local! {
    static FAIR_TICK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static FAIR_TICK: std::cell::Cell<u32> = std::cell::Cell::new(0);
}

/// Whether this slow unlock is one that checks the head's wait (a thread's
/// first, then every [`FAIR_CHECK_EVERY`]-th; `false` while TLS is torn
/// down). The mutex's eventual fairness.
#[inline]
pub(crate) fn fair_check_due() -> bool {
    FAIR_TICK
        .try_with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n % FAIR_CHECK_EVERY == 1
        })
        .unwrap_or(false)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The tails of `l` from its head, in list order.
    fn order(l: &WaitList) -> Vec<u32> {
        let h = l.head();
        let mut v = vec![];
        let mut t = h;
        while t != 0 {
            v.push(t);
            t = Waiter::decode(t).next_link();
            if t == h {
                break;
            }
        }
        v
    }

    #[test]
    fn hint_bits_sit_between_the_lock_bit_and_the_head() {
        node::with_node(|a| {
            let a = a.unwrap().tail();
            let l = WaitList::new();
            // A tag is never 0 and never touches bit 0 or the head's bits.
            for id in [0, 1, 2, 0x7fff, 0x8000, 0x1234_5678, (1 << 27) - 1] {
                let t = owner_tag(id);
                assert_ne!(t, 0, "id {id:#x}");
                assert_eq!(t & !HINT_MASK, 0, "id {id:#x}");
            }
            assert_ne!(owner_tag(5), owner_tag(6));
            // The hint survives head changes, and the head survives hints.
            l.set_hint(owner_tag(7));
            l.push_back(a);
            assert_eq!((l.head(), l.hint()), (a, owner_tag(7)));
            l.set_hint(0);
            assert_eq!((l.head(), l.hint()), (a, 0));
            l.set_hint(owner_tag(9));
            l.remove(a);
            assert_eq!((l.head(), l.hint()), (0, owner_tag(9)));
            // Bit 0 (a condvar's CV_LOCK) is left alone both ways.
            lock_bit(&l.word, 1);
            l.set_hint(owner_tag(3));
            assert_eq!(l.word.load(Ordering::Relaxed) & 1, 1);
            assert_eq!(l.hint(), owner_tag(3));
        });
    }

    #[test]
    fn push_by_priority_orders_real_time_waiters_fifo_among_equals() {
        // Four nodes of this thread (nesting levels 0-3).
        node::with_node(|a| {
            node::with_node(|b| {
                node::with_node(|c| {
                    node::with_node(|d| {
                        let [a, b, c, d] = [a, b, c, d].map(|q| q.unwrap().tail());
                        let l = WaitList::new();
                        // a: not real-time; b: 10; c: 50; d: 10.
                        for (t, p) in [(a, 0), (b, 10), (c, 50), (d, 10)] {
                            Waiter::decode(t).set_rt_prio(p);
                            l.push_by_priority(t);
                        }
                        assert_eq!(order(&l), vec![c, b, d, a]);
                        // The back links agree.
                        assert_eq!(node::decode(c).prev.load(Ordering::Relaxed), a);
                        assert_eq!(node::decode(a).prev.load(Ordering::Relaxed), d);
                        l.remove(c);
                        assert_eq!(order(&l), vec![b, d, a]);
                        for t in [b, d, a] {
                            l.remove(t);
                        }
                        assert_eq!(l.head(), 0);
                    })
                })
            })
        });
    }
}

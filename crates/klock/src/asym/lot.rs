//! A parking lot behind the asymmetric barrier (issue 33, design 3): the
//! waiters of plain-store-unlock words queue their nodes in a process-wide
//! table of FIFO lists, and the unlocker that sees a waiter takes it in
//! hand: it marks the word's first waiter woken (one wake in flight per
//! word) or, once the bound (`KLOCK_SPIN_HANDOFF_NS`, 1 ms) has passed
//! since that waiter's first wake, takes the word again and grants it. So
//! an unlock never makes a wake that finds nobody (design 1's cost,
//! `super`'s counts), a woken waiter that loses the race keeps its place,
//! and each word's queue advances at least once per bound: what keeps
//! every thread served at T=128 on 2 CPUs (max/min 5-7 where parking_lot
//! has 11). The grant may go to a sleeper, which idles the word for a
//! wake-up; that is what the bound costs (0.59-0.76x the best peer at T=8
//! against 0.94x without grants, issue 33's report). Granting only to a
//! running waiter that asks, tried twice, did not keep the queue moving
//! (max/min 66-108 000 at T=128).
//!
//! # The table
//!
//! ```text
//! LOT[hash(word address) % 64]: one wait-list word per cache line
//!   bits 16-31  head of the bucket's FIFO of nodes (a tail code; 0 = empty)
//!   bit 0       LIST_LOCK (the list's bit lock)
//! a node on it: ident = low 32 bits of the word's address, grant = high 32 bits,
//!               stamp = µs of its first wake (0 = not woken yet), state = WaiterState
//! ```
//!
//! # Node states (a node's `state`, its futex word; set only under LIST_LOCK)
//!
//! ```text
//!  (off list) --waiter queues (push_back)--> Sleeping
//!  Sleeping --unlocker: first of its word--> Woken        (futex_wake after LIST_LOCK)
//!  Woken --waiter lost the race: re-arm in place--> Sleeping
//!  Sleeping|Woken --unlocker: first of its word, first woken at least the bound ago,
//!                  CAS word 0 -> held succeeded: unlink--> Granted (final: the waiter owns the word)
//!  Sleeping|Woken --waiter took the word itself: unlink--> (off list)
//! ```
//!
//! # The protocol
//!
//! ```text
//! waiter:   queue (LIST_LOCK) ; barrier() ; loop {
//!             try_lock? -> leave (LIST_LOCK, unlink) ; done
//!             futex_wait(state, Sleeping)
//!             Granted? -> done ; Woken? -> after_wake: try_lock? -> leave ; done
//!                                          else re-arm (LIST_LOCK): Granted? done ; Sleeping }
//! unlocker: word.store(0, Release) ; LOT[b] & HEAD != 0 ? -> wake(word):
//!             LIST_LOCK ; n = first node of word ; past the bound since n's first wake
//!                                                  && CAS(word, 0, held)? -> unlink, Granted
//!                                                  n Sleeping? -> Woken (stamp the first wake)
//!                                                  n Woken? -> nothing (a wake is in flight)
//!             unlock LIST_LOCK ; futex_wake(n.state)        (an address only: INV-WAKE-ADDR)
//! ```
//!
//! **No lost wake-up** (INV-ASYM-BARRIER, as for the counts in `super`): a
//! node is on the list from before its barrier until its thread owns the
//! word, so an unlock whose store the waiter's re-check did not see loads a
//! nonempty head and takes LIST_LOCK; the waiter's node is then on the
//! list. A re-armed node never left the list, so a re-arm needs no new
//! barrier: every holder since the barrier took the word with a CAS after
//! the node was listed. An unlocker that finds the first node Woken does
//! nothing: that waiter is running (or about to), and it re-checks the
//! word after each re-arm, which is ordered after this unlock's store by
//! LIST_LOCK.
//!
//! Buckets are shared by colliding words: the unlocker walks its bucket for
//! the first node of its own word.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use klock::internal::asym::lot;
//! let w = AtomicU32::new(1);
//! assert!(!lot::release_and_check(&w), "no waiter is queued on a fresh word");
//! assert_eq!(w.load(Ordering::Relaxed), 0);
//! ```

use super::{BUCKETS, FALLBACK_SLEEP, barrier, index};
use crate::chaos::{self, Site};
use crate::node::{self, Node};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;
use crate::waitlist::{WaitList, Waiter, WaiterState, lock_bit};

/// The list's bit lock in a bucket's word (bits 16-31 are the head).
const LIST_LOCK: u32 = 1;

/// A node's `stamp` before its first wake; a wake stamps `now_us() | 1`.
const UNWOKEN: u32 = 0;

/// One bucket's list on its own cache line.
#[cfg_attr(not(loom), repr(align(64)))]
struct Bucket(WaitList);

#[cfg(not(loom))]
static LOT: [Bucket; BUCKETS] = [const { Bucket(WaitList::new()) }; BUCKETS];

#[cfg(loom)]
loom::lazy_static! {
    static ref LOT: Vec<Bucket> = (0..BUCKETS).map(|_| Bucket(WaitList::new())).collect();
}

/// The list of `word`'s bucket.
#[inline(always)]
fn list(word: &AtomicU32) -> &'static WaitList {
    &LOT[index(word)].0
}

/// The unlocker's side: release `word` with a plain store of 0, then report
/// whether a node may wait in its bucket (then the caller calls [`wake`]).
/// No fence: INV-ASYM-BARRIER puts the cost on the waiter.
#[inline(always)]
pub fn release_and_check(word: &AtomicU32) -> bool {
    super::release_then_load(word, &list(word).word) & node::TAIL_MASK != 0
}

/// The key a node carries: the word's address, split over two node words.
#[inline]
fn key(word: &AtomicU32) -> (u32, u32) {
    let a = word as *const AtomicU32 as usize as u64;
    (a as u32, (a >> 32) as u32)
}

/// Take the bucket's list lock (Acquire, in `lock_bit`).
fn lock_list(l: &WaitList) {
    lock_bit(&l.word, LIST_LOCK);
}

/// Release the bucket's list lock. Release: pairs with the next
/// `lock_list`'s Acquire (the list, the nodes' states and keys).
fn unlock_list(l: &WaitList) {
    l.word.fetch_and(!LIST_LOCK, Ordering::Release);
}

/// The first node of `word` in its bucket (FIFO order), or 0. Under the
/// list lock.
fn first_of(l: &WaitList, word: &AtomicU32) -> u32 {
    let k = key(word);
    let h = l.head();
    let mut t = h;
    while t != 0 {
        if Waiter::decode(t).has_key(k.0, k.1) {
            return t;
        }
        t = Waiter::decode(t).next_link();
        if t == h {
            break;
        }
    }
    0
}

/// The unlocker's wake, after [`release_and_check`] answered `true`. Takes
/// the first waiter of `word` in hand: grants it the word if it has waited
/// at least `handoff_us` (`None` = never; `Some(0)` = always) and `take`
/// (the lock's CAS free -> held, Acquire) succeeds; else marks it Woken
/// unless a wake is already in flight. After the list lock only the node's
/// address is touched.
#[cold]
#[inline(never)]
pub fn wake(word: &AtomicU32, handoff_us: Option<u32>, take: impl FnOnce() -> bool) {
    let l = list(word);
    lock_list(l);
    let t = first_of(l, word);
    if t == 0 {
        // Another word's waiter in the bucket.
        unlock_list(l);
        return;
    }
    let w = Waiter::decode(t);
    // The bound runs from the waiter's first wake (when it became the
    // word's first), so at most one grant per bound and word: a grant to
    // every long-queued waiter would be a convoy.
    let since = w.since_us();
    let starving =
        since != UNWOKEN && handoff_us.is_some_and(|b| wait::now_us().wrapping_sub(since) >= b);
    let wake = if starving && take() {
        l.remove(t);
        chaos::point(Site::ListEdit);
        // Release: pairs with the waiter's Acquire `is_granted`; it owns
        // the word from here (the CAS in `take` made it held).
        w.grant();
        stat::inc(Event::TasGrant);
        true
    } else if w.state_is(WaiterState::Sleeping as u32) {
        // Relaxed (both): published by `unlock_list`'s Release.
        w.set_state(WaiterState::Woken);
        if since == UNWOKEN {
            w.set_since_us(wait::now_us() | 1);
        }
        true
    } else {
        // Woken and not yet back: one wake in flight per word.
        false
    };
    unlock_list(l);
    if wake {
        chaos::point(Site::AfterRelease);
        // INV-WAKE-ADDR: the node may be reused already; a wake is harmless.
        w.wake();
    }
}

/// The waiter's side, after its spin: queue on `word` behind the barrier
/// and wait until it owns the word. `try_lock` is the lock's
/// test-and-set; `after_wake` is a woken waiter's short look, then its
/// attempt (it returns whether it took the word). Without a node (slots
/// exhausted, nesting deeper than 4) the thread yields and retries.
pub fn wait(word: &AtomicU32, try_lock: impl Fn() -> bool, after_wake: impl Fn() -> bool) {
    node::with_node(|q| match q {
        Some(q) => wait_queued(word, q.node(), q.tail(), &try_lock, &after_wake),
        None => {
            while !try_lock() {
                std::thread::yield_now();
            }
        }
    })
}

/// [`wait`] with this thread's node `n` (tail code `t`).
fn wait_queued(
    word: &AtomicU32,
    n: &Node,
    t: u32,
    try_lock: &dyn Fn() -> bool,
    after_wake: &dyn Fn() -> bool,
) {
    let l = list(word);
    let w = Waiter::of(n);
    #[cfg(not(loom))]
    install_fork_hook();
    // 1. Queue at the back (FIFO), not yet woken (the hand-off bound
    //    starts at the first wake).
    // Relaxed stores (key, stamp, state): published to unlockers by
    // `unlock_list`'s Release below, which pairs with their `lock_list`.
    let (lo, hi) = key(word);
    w.set_key(lo, hi);
    w.set_since_us(UNWOKEN);
    w.set_state(WaiterState::Sleeping);
    lock_list(l);
    l.push_back(t);
    unlock_list(l);
    // 2. The barrier (INV-ASYM-BARRIER): after it, every unlock whose store
    //    the re-check below does not see will find this node.
    chaos::point(Site::Fence);
    let untimed = barrier();
    let timeout = (!untimed).then_some(FALLBACK_SLEEP);
    loop {
        // 3. Re-check, then sleep while Sleeping.
        if try_lock() {
            return leave(l, t);
        }
        chaos::point(Site::BeforeSleep);
        let _ = wait::futex_wait(w.futex(), WaiterState::Sleeping as u32, timeout);
        chaos::point(Site::AfterWake);
        // 4. Granted: the unlocker took the word for us and unlinked us.
        if w.is_granted() {
            return;
        }
        if w.state_is_acquire(WaiterState::Woken as u32) {
            // 5. Woken: one short try; if it fails, re-arm in place (no new
            //    barrier: the node never left the list) unless granted
            //    meanwhile.
            if after_wake() {
                return leave(l, t);
            }
            lock_list(l);
            if w.is_granted() {
                unlock_list(l);
                return;
            }
            // Relaxed: under the list lock; its Release publishes it.
            w.set_state(WaiterState::Sleeping);
            unlock_list(l);
        }
        // A timed-out or spurious return is still Sleeping: loop.
    }
}

/// The waiter took the word itself: unlink its node. No grant can be in
/// flight for it (a grant needs the word free, and this thread holds it).
fn leave(l: &WaitList, t: u32) {
    lock_list(l);
    l.remove(t);
    unlock_list(l);
}

/// Install [`atfork_child_reset`] as the lot's fork hook the first time a
/// waiter parks (the lists can only hold nodes after that).
#[cfg(not(loom))]
#[inline]
pub(crate) fn install_fork_hook() {
    static HOOKS: crate::fork::Hooks = crate::fork::Hooks {
        child: atfork_child_reset,
        ..crate::fork::Hooks::NONE
    };
    crate::fork::install(crate::fork::Slot::Lot, &HOOKS);
}

/// Fork safety, in the child: every node on the lists belongs to a thread
/// of the parent that does not exist here (the forking thread was not
/// parked), so empty every bucket and free its list lock, whatever edit
/// another thread of the parent was in the middle of.
#[cfg(not(loom))]
pub(crate) fn atfork_child_reset() {
    for b in LOT.iter() {
        // Relaxed: the child has one thread.
        b.0.word.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn key_round_trips_the_address() {
        let w = AtomicU32::new(0);
        let n = Node::new();
        let (lo, hi) = key(&w);
        Waiter::of(&n).set_key(lo, hi);
        assert!(Waiter::of(&n).has_key(lo, hi));
        let other = AtomicU32::new(0);
        let (lo2, hi2) = key(&other);
        assert!(!Waiter::of(&n).has_key(lo2, hi2));
        assert_eq!(
            ((hi as u64) << 32) | lo as u64,
            &w as *const AtomicU32 as u64
        );
    }

    #[test]
    fn fork_child_finds_the_lot_empty_and_unlocked() {
        let w = AtomicU32::new(1);
        let l = list(&w);
        install_fork_hook();
        // A parent thread in the middle of a list edit at the fork.
        lock_list(l);
        // SAFETY: the child only loads an atomic and calls `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // Relaxed: the child has one thread.
            let v = l.word.load(Ordering::Relaxed);
            // SAFETY: ends the child without running the test harness's
            // exit handlers.
            unsafe { libc::_exit(if v == 0 { 0 } else { 1 }) };
        }
        unlock_list(l);
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child inherited a locked or non-empty bucket ({status:#x})"
        );
    }

    #[test]
    fn wake_without_a_waiter_changes_nothing() {
        let w = AtomicU32::new(0);
        let mut took = false;
        wake(&w, Some(0), || {
            took = true;
            true
        });
        assert!(!took, "no waiter: no grant");
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }
}

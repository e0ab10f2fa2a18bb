//! The queued spinlock (qspinlock) family: native, PV (base and patched) and
//! the queued unfair lock, as one algorithm generic over its [`WaitPolicy`].
//!
//! # Word layout (one `AtomicU32`, never accessed at another size)
//!
//! ```text
//!  31            18 17 16 15      9   8   7            0
//! +----------------+-----+---------+---+--------------+
//! |   slot + 1     |level| (zero)  | P | locked byte  |
//! +----------------+-----+---------+---+--------------+
//! locked byte: 0 free, 1 LOCKED, 3 SLOW (held; a waiter sleeps on this word,
//!              the unlocker must wake it), 2 = transient during a SLOW unlock
//! P (pending): native/PV: a second contender waits for the owner without
//!              queueing; unfair: the queue head is claiming (no stealing)
//! tail (bits 16-31): the last queued waiter's node, see crate::node
//! ```
//!
//! # State diagram, triples (tail, pending, locked)
//!
//! ```text
//! fast path:    (0,0,0) --CAS--> (0,0,1) --unlock--> (*,*,0)
//! pending:      (0,0,1) -> (0,1,1) -> (0,1,0) -> (0,0,1)       [native, PV]
//! queue:        (n,x,y) -> (n,0,0) -> (0,0,1)                  [we are the only waiter]
//!               (*,x,y) -> (*,0,0) -> (*,0,1)                  [others queued behind us]
//! PV head:      (*,0,1) -> (*,0,3)  head sleeps on the word (SLOW)
//!               (*,0,3) -unlock-> (*,0,2) -clear bit 1-> (*,0,0) + futex_wake(word)
//! unfair fast:  (*,0,0|2) -fetch_or-> (*,0,1|3)  any time; (*,1,0) -> give back, queue
//! unfair steal: (n,0,0) -> (n,0,1)  newcomer, while the head does not claim
//! unfair head:  (n,0,0) -> (n,0,1)  spinning, competing with stealers
//!               (n,0,y) -> (n,1,y) -> (n,0,1)  claiming (waited past the threshold)
//! ```
//!
//! # Waiting (policy)
//!
//! * Native: everybody spins (pending waiter, head, queued nodes).
//! * PV: a queued node spins for `spin_ns`, then sets its node state HALTED
//!   and sleeps on its own node word. The predecessor that makes it queue head
//!   does **not** wake it: it marks it HEAD_HALTED and returns the node in the
//!   [`Token`]; the unlock wakes it (kick at unlock: one wake instead of two).
//!   The head spins for `spin_ns`, then sets SLOW in the locked byte and sleeps
//!   on the lock word itself; the unlock sees SLOW and wakes the word. The
//!   kernel needs a lock -> head hash table because its `pv_kick` is directed at
//!   a CPU; a futex is directed at an address, so sleeping on the lock word lets
//!   the kernel's futex hash do that job.
//! * Patched PV: wait-early (a node whose predecessor is HALTED sleeps without
//!   spinning out its budget) and kick-ahead (the new owner wakes up to
//!   `kick_ahead` sleeping nodes behind the new head, so their wake-up latency
//!   overlaps the critical section).
//! * Unfair: newcomers steal (CAS on the locked byte) while the pending bit is
//!   clear, for at most `spin_ns`, then queue. The queue head competes with
//!   stealers while it spins and while it sleeps (an owner that re-takes a
//!   hot lock keeps its cache line; the lock keeps moving while the head is
//!   preempted). Once the head has waited `steal_threshold_ns` it sets
//!   pending and keeps it set, spinning or asleep ("claiming"): stealing
//!   stops until it is served. (The kernel's hybrid PV lock sets pending
//!   whenever the head spins; measured here, that moves the line to the head
//!   on every hot acquisition: `docs/results/2026-11-24-overcommit.md`.)
//!
//! # Ordering pairs
//!
//! 1. Acquire CAS/loads of the word vs the Release `fetch_sub` of unlock.
//! 2. Node publication: `Node::reset` then the AcqRel tail exchange; the
//!    successor's link store (Release) vs our Acquire poll of `node.next`.
//! 3. MCS grant: `next.locked = 1` (Release) vs the waiter's Acquire poll.
//! 4. Sleep vs grant (Dekker): waiter `state = HALTED; fence(SeqCst); load
//!    locked` vs granter `locked = 1; fence(SeqCst); CAS state`.
//! 5. Head sleep vs unlock: both are RMWs on the word (SLOW set by CAS, unlock
//!    by `fetch_sub`), so one sees the other; the futex value check closes the
//!    window between the CAS and the sleep.

use super::policy::WaitPolicy;
use super::qsnode::{QsNode, QsState};
use super::token::Token;
use crate::chaos::{self, Site};
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::node::{self, QNode, TAIL_MASK};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering, fence};
use crate::wait::{PollBackoff, SpinBudget, futex_wait, futex_wake, spin_until, yield_now};
use std::marker::PhantomData;

const LOCKED: u32 = 1;
/// Added to LOCKED to make SLOW (3).
const SLOW_BIT: u32 = 2;
const SLOW: u32 = LOCKED | SLOW_BIT;
const LOCKED_MASK: u32 = 0xff;
const PENDING: u32 = 1 << 8;
const LOCKED_PENDING: u32 = LOCKED_MASK | PENDING;
/// Predecessor state is checked when `iteration & PREV_CHECK_MASK == 0`
/// (wait-early; every 64 spins, every spin under loom). A check frequency, not
/// a tunable.
const PREV_CHECK_MASK: u32 = crate::tune::fixed::PV_PREV_CHECK_EVERY - 1;

#[inline(always)]
#[cfg_attr(loom, allow(clippy::bad_bit_mask))]
fn check_prev_now(i: u32) -> bool {
    i & PREV_CHECK_MASK == 0
}

/// Raw queued spinlock, generic over its [`WaitPolicy`]. `size_of` is 4 and
/// the all-zero word is the unlocked state.
///
/// ```
/// use klock::{RawQSpinLock, Native};
/// assert_eq!(std::mem::size_of::<RawQSpinLock<Native>>(), 4);
/// let l = RawQSpinLock::<Native>::new();
/// let t = l.lock();
/// assert!(l.is_locked());
/// assert!(l.try_lock().is_none());
/// unsafe { l.unlock(t) };
/// assert!(!l.is_locked());
/// ```
#[repr(transparent)]
pub struct RawQSpinLock<P> {
    word: AtomicU32,
    _p: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for RawQSpinLock<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawQSpinLock")
            .field(
                "word",
                &format_args!("{:#010x}", self.word.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

impl<P: WaitPolicy> Default for RawQSpinLock<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: WaitPolicy> RawQSpinLock<P> {
    /// An unlocked lock.
    ///
    /// ```
    /// const L: klock::RawQSpinLock<klock::Pv> = klock::RawQSpinLock::new();
    /// # let _ = L;
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawQSpinLock {
            word: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// An unlocked lock (loom: not `const`; under loom only).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawQSpinLock {
            word: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// The raw lock word (for diagnostics and tests).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// assert_eq!(klock::RawQSpinLock::<klock::Native>::new().word(), 0);
    /// ```
    pub(crate) fn word(&self) -> u32 {
        self.word.load(Ordering::Relaxed)
    }

    /// Acquire the lock; the returned token must be passed to [`unlock`](Self::unlock).
    ///
    /// ```
    /// let l = klock::RawQSpinLock::<klock::Unfair>::new();
    /// let t = l.lock();
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub fn lock(&self) -> Token {
        if P::UNFAIR {
            return self.lock_unfair();
        }
        // Acquire pairs with the Release of the previous unlock.
        if self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Token::NONE;
        }
        self.lock_slow()
    }

    /// Unfair fast path: one `fetch_or` of LOCKED, `(*,0,0|2) -> (*,0,1|3)`,
    /// which succeeds whether or not waiters are queued (a CAS from 0 would
    /// fail on the tail bits, and an owner re-taking a hot lock would pay a
    /// second RMW). OR-ing into a held word changes nothing (1 and 3 keep bit
    /// 0); into the transient 2 of a SLOW unlock it takes the lock as SLOW,
    /// which is sound because that unlock finishes with an idempotent
    /// `fetch_and(!SLOW_BIT)` (see `unlock_slow`). A claiming head (pending)
    /// is owed the lock: give it back at once and queue. Only bit 0 of the
    /// RMW's result is used, so x86 emits one `lock bts` (testing PENDING in
    /// the result too made it a load + `cmpxchg` loop, +4 instructions);
    /// PENDING is read by a load after the acquisition, which can only add
    /// a claim made after our OR (giving the lock back then is harmless).
    #[inline]
    fn lock_unfair(&self) -> Token {
        // Acquire pairs with the Release of the previous unlock.
        if self.word.fetch_or(LOCKED, Ordering::Acquire) & LOCKED == 0 {
            // Relaxed: same word after our RMW (coherence: at least as new).
            if self.word.load(Ordering::Relaxed) & PENDING == 0 {
                return Token::NONE;
            }
            // SAFETY: we hold the lock (our OR set bit 0), with no successor token.
            unsafe { self.unlock(Token::NONE) };
            chaos::point(Site::AfterRelease);
        }
        self.lock_slow()
    }

    /// Acquire the lock if it is free and nobody waits (the whole word is 0).
    ///
    /// ```
    /// let l = klock::RawQSpinLock::<klock::Pv>::new();
    /// let t = l.try_lock().unwrap();
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<Token> {
        let v = self.word.load(Ordering::Relaxed);
        // Acquire pairs with the Release of the previous unlock.
        (v == 0
            && self
                .word
                .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok())
        .then_some(Token::NONE)
    }

    /// Is the lock held or contended (any bit set)?
    ///
    /// ```
    /// assert!(!klock::RawQSpinLock::<klock::Pv>::new().is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }

    /// Release the lock.
    ///
    /// # Safety
    ///
    /// The lock must be held by the caller, and `token` must be the one returned
    /// by the `lock`/`try_lock` call that acquired it.
    ///
    /// ```
    /// let l = klock::RawQSpinLock::<klock::Native>::new();
    /// let t = l.lock();
    /// // SAFETY: we hold it, with this token.
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self, token: Token) {
        if P::SLEEP && !token.is_none() {
            self.unlock_kick(token);
            return;
        }
        // (*,*,1) -> (*,*,0), or PV (*,*,3) -> (*,*,2) and on in unlock_slow.
        // Release pairs with every acquirer's Acquire load/CAS of the word.
        // The locked byte is 1 or 3 (PV SLOW) while held; subtracting 1 never
        // borrows from the pending bit.
        let old = self.word.fetch_sub(LOCKED, Ordering::Release);
        if P::SLEEP && (old & LOCKED_MASK) != LOCKED {
            self.unlock_slow(old);
        }
    }

    /// Unlock with a deferred kick ("kick at unlock"): the successor we made
    /// head while it slept. Its state is set **before** the release, its
    /// address is woken after it (INV-WAKE-ADDR): once the lock is free the
    /// successor may take it, leave and reuse its node for another lock.
    #[cold]
    fn unlock_kick(&self, token: Token) {
        let head = QsNode::of(node::decode(token.0));
        // HeadHalted -> Running. The head cannot leave before our release below.
        head.set_for_wake(QsState::Running);
        // Release pairs with every acquirer's Acquire (as in `unlock`).
        let old = self.word.fetch_sub(LOCKED, Ordering::Release);
        chaos::point(Site::AfterRelease);
        if old & LOCKED_MASK != LOCKED {
            self.unlock_slow(old);
        }
        head.wake();
        stat::inc(Event::PvKickUnlock);
    }

    /// PV unlock of a SLOW word: finish the release and wake the word.
    #[cold]
    fn unlock_slow(&self, old: u32) {
        chaos::point(Site::AfterRelease);
        if old & LOCKED_MASK == SLOW {
            // (*,*,3) -> (*,*,2) happened above; now (*,*,2) -> (*,*,0). An
            // unfair fast path may have OR-ed LOCKED in meanwhile ((*,*,3):
            // it holds the lock, as SLOW), so clear the bit rather than
            // subtract: idempotent, and the new holder keeps LOCKED. The
            // Release pairs with the sleeper's Acquire reload after waking.
            self.word.fetch_and(!SLOW_BIT, Ordering::Release);
            chaos::point(Site::AfterRelease);
            // Wake every sleeper of this word (the head, and no-node waiters).
            // The lock may be freed by now: the wake only names the address
            // (see wait::futex_wake), it does not touch the memory.
            #[cfg(feature = "stats")]
            LAST_WORD_KICK.store(crate::wait::now_ns(), std::sync::atomic::Ordering::Relaxed);
            futex_wake(&self.word, u32::MAX);
            stat::inc(Event::PvKickUnlock);
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self) -> Token {
        if P::UNFAIR {
            if self.steal() {
                return Token::NONE;
            }
        } else if P::PENDING_PATH && self.pending_path() {
            return Token::NONE;
        }
        node::with_node(|q| match q {
            Some(q) => self.queue(q),
            None => {
                self.no_node();
                Token::NONE
            }
        })
    }

    /// The pending path (native and PV): the second contender waits for the
    /// owner without queueing. Returns `true` holding the lock.
    fn pending_path(&self) -> bool {
        let mut v = self.word.load(Ordering::Relaxed);
        // A: a pending -> locked hand-over is in flight (0,1,0): give it a moment.
        if v == PENDING {
            let mut b = SpinBudget::new(P::pending_ns());
            spin_until(&mut b, || {
                v = self.word.load(Ordering::Relaxed);
                v != PENDING
            });
        }
        if v & !LOCKED_MASK != 0 {
            return false; // pending or queued: queue
        }
        // B: claim pending. Acquire pairs with the owner's unlock if it is
        // already gone (we then take the lock below without a further acquire).
        let v = self.word.fetch_or(PENDING, Ordering::Acquire);
        if v & !LOCKED_MASK != 0 {
            if v & PENDING == 0 {
                // We set it, but someone queued meanwhile: undo.
                self.word.fetch_and(!PENDING, Ordering::Relaxed);
            }
            return false;
        }
        // C: (0,1,1) -> wait for (*,1,0). Acquire pairs with the owner's unlock.
        if v & LOCKED_MASK != 0 {
            let mut b = if P::SLEEP {
                SpinBudget::new(P::spin_ns())
            } else {
                SpinBudget::unbounded()
            };
            if !spin_until(&mut b, || {
                self.word.load(Ordering::Acquire) & LOCKED_MASK == 0
            }) {
                // PV: the owner takes long (maybe preempted): queue and sleep.
                self.word.fetch_and(!PENDING, Ordering::Relaxed);
                return false;
            }
        }
        // (*,1,0) -> (*,0,1). Only the pending owner may do this; the head waits
        // for pending to clear, so no one else sets locked now.
        self.word
            .fetch_add(LOCKED.wrapping_sub(PENDING), Ordering::Relaxed);
        stat::inc(Event::LockPending);
        true
    }

    /// Unfair: try to steal while the queue head is not claiming, for at most
    /// the spin budget. Returns `true` holding the lock.
    fn steal(&self) -> bool {
        let mut stolen = false;
        let mut b = SpinBudget::new(P::spin_ns());
        let mut poll = Self::poll_backoff();
        spin_until(&mut b, || {
            // Timed: only a poll that missed the cache pauses (PollBackoff::poll).
            let v = poll.poll(|| self.word.load(Ordering::Relaxed));
            if v & LOCKED_PENDING == 0 {
                // Acquire pairs with the previous unlock.
                stolen = self
                    .word
                    .compare_exchange(v, v | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok();
                return stolen;
            }
            // Empty queue (become head at once) or head claiming: queue.
            if v & TAIL_MASK == 0 || v & PENDING != 0 {
                return true;
            }
            poll.pause();
            false
        });
        if stolen {
            stat::inc(Event::UnfairSteal);
        }
        stolen
    }

    /// The unfair waiters' poll backoff (see [`crate::wait::PollBackoff`]).
    #[inline]
    fn poll_backoff() -> PollBackoff {
        let (min, cap) = P::poll_backoff_ns();
        PollBackoff::with_min(min, cap)
    }

    /// No node (slots exhausted, nesting > 4): take the lock without queueing.
    /// Unfair but correct (the kernel's `lock_no_node`).
    #[cold]
    fn no_node(&self) {
        stat::inc(Event::LockNoNode);
        loop {
            let mut b = SpinBudget::new(P::spin_ns());
            if spin_until(&mut b, || {
                if P::UNFAIR {
                    self.steal_once()
                } else {
                    self.try_lock().is_some()
                }
            }) {
                return;
            }
            if !(P::SLEEP && self.sleep_on_word()) {
                yield_now();
            }
        }
    }

    fn steal_once(&self) -> bool {
        let v = self.word.load(Ordering::Relaxed);
        // Acquire pairs with the previous unlock.
        v & LOCKED_PENDING == 0
            && self
                .word
                .compare_exchange(v, v | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Sleep on the lock word while it is held: turn LOCKED into SLOW so the
    /// unlock wakes the word. Returns after a wake, a word change, or at once
    /// if the locked byte is 0 (then yields if a pending/claiming waiter is
    /// about to take it).
    fn sleep_on_word(&self) -> bool {
        loop {
            let v = self.word.load(Ordering::Relaxed);
            let expect = match v & LOCKED_MASK {
                0 => {
                    if v & PENDING != 0 {
                        yield_now();
                    }
                    return false;
                }
                LOCKED => {
                    // SeqCst RMW: totally ordered with the unlock's fetch_sub on
                    // the same word, so either the unlock sees SLOW or we see
                    // the release (and retry).
                    match self.word.compare_exchange(
                        v,
                        v + SLOW_BIT,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => v + SLOW_BIT,
                        Err(_) => continue,
                    }
                }
                // SLOW (3) or the transient 2 of a SLOW unlock: the unlocker
                // will wake the word after clearing it.
                _ => v,
            };
            // The futex re-checks the value under its bucket lock, so a release
            // between our CAS and the sleep makes this return at once.
            chaos::point(Site::BeforeSleep);
            futex_wait(&self.word, expect, None);
            chaos::point(Site::AfterWake);
            #[cfg(feature = "stats")]
            {
                let k = LAST_WORD_KICK.load(std::sync::atomic::Ordering::Relaxed);
                let now = crate::wait::now_ns();
                if k != 0 && now >= k {
                    stat::inc(Event::PvKickWake);
                    stat::add(Event::PvLatencyWakeNs, now - k);
                }
            }
            return true;
        }
    }

    /// Exchange the tail, keeping locked and pending (a CAS loop: the kernel's
    /// 16-bit xchg is a mixed-size access). AcqRel: Release publishes our
    /// node's reset to the successor that decodes our tail; Acquire makes the
    /// predecessor's node reset visible before we write its `next`.
    fn xchg_tail(&self, tail: u32) -> u32 {
        let mut v = self.word.load(Ordering::Relaxed);
        loop {
            match self.word.compare_exchange_weak(
                v,
                (v & !TAIL_MASK) | tail,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(old) => return old,
                Err(x) => v = x,
            }
        }
    }

    fn queue(&self, q: QNode) -> Token {
        stat::inc(Event::LockSlowpath);
        match q.level() {
            1 => stat::inc(Event::LockUseNode2),
            2 => stat::inc(Event::LockUseNode3),
            3 => stat::inc(Event::LockUseNode4),
            _ => {}
        }
        let node = QsNode::of(q.node());
        let tail = q.tail();
        // Unfair: the waiter's wait counts from here (queue time included).
        let start = if P::UNFAIR { crate::wait::now_ns() } else { 0 };
        node.init();
        // One more try: we just touched a cold node.
        if (P::UNFAIR && self.steal_once()) || (!P::UNFAIR && self.try_lock().is_some()) {
            return Token::NONE;
        }
        let old = self.xchg_tail(tail);
        if old & TAIL_MASK != 0 {
            let prev = QsNode::of(node::decode(old & TAIL_MASK));
            chaos::point(Site::ListEdit);
            prev.link(tail);
            self.wait_node(node, prev);
        }
        // Queue head.
        let last = if P::UNFAIR {
            self.head_unfair(node, tail, start)
        } else {
            self.head_fair(node, tail)
        };
        if last {
            return Token::NONE;
        }
        self.hand_over(node)
    }

    /// Non-head waiter: wait until the predecessor makes us head (`locked`).
    fn wait_node(&self, node: QsNode<'_>, prev: QsNode<'_>) {
        if !P::SLEEP {
            spin_until(&mut SpinBudget::unbounded(), || node.granted());
            return;
        }
        let mut kicked = false;
        loop {
            let mut early = false;
            let mut i = 0u32;
            let mut b = SpinBudget::new(P::spin_ns());
            let granted = spin_until(&mut b, || {
                if node.granted() {
                    return true;
                }
                if P::PATCHED && !kicked {
                    i = i.wrapping_add(1);
                    if check_prev_now(i)
                        && matches!(
                            prev.state_hint(),
                            Some(QsState::Halted | QsState::HeadHalted | QsState::HeadSleeping)
                        )
                    {
                        early = true;
                        return true;
                    }
                }
                false
            });
            if granted && !early {
                return;
            }
            // Sleep. Dekker pair with hand_over: HALTED; full fence; re-check.
            // (QS-4) Sleep. Dekker pair with hand_over: Halted; full fence; re-check.
            node.set_state(QsState::Halted);
            chaos::point(Site::Fence);
            fence(Ordering::SeqCst);
            if !node.granted() {
                stat::inc(Event::PvWaitNode);
                stat::cond_inc(Event::PvWaitEarly, early);
                chaos::point(Site::BeforeSleep);
                futex_wait(node.futex(), QsState::Halted as u32, None);
                chaos::point(Site::AfterWake);
                node.note_wake();
            }
            // Back to running unless a kicker already changed the state
            // (HeadHalted: made head asleep; Kicked: kick-ahead; Running: the
            // unlock's kick).
            let s = match node.cas_state(QsState::Halted, QsState::Running) {
                Ok(()) => QsState::Halted as u32,
                Err(s) => s,
            };
            check_tag_qs(s);
            if node.granted() {
                return;
            }
            kicked = s == QsState::Kicked as u32;
            if kicked {
                node.set_state(QsState::Running);
            } else {
                stat::inc(Event::PvSpuriousWakeup);
            }
        }
    }

    /// Queue head, native and PV: wait for (*,0,0) and take the lock. Returns
    /// whether we were the last waiter (tail cleared, nobody to hand over to).
    fn head_fair(&self, node: QsNode<'_>, tail: u32) -> bool {
        if P::SLEEP {
            // Successors' wait-early must see us running.
            node.set_state(QsState::Running);
        }
        let mut slept = false;
        let v = loop {
            let mut v = 0;
            let mut b = if P::SLEEP {
                SpinBudget::new(P::spin_ns())
            } else {
                SpinBudget::unbounded()
            };
            // Acquire pairs with the owner's (or pending owner's) unlock.
            if spin_until(&mut b, || {
                v = self.word.load(Ordering::Acquire);
                v & LOCKED_PENDING == 0
            }) {
                break v;
            }
            stat::cond_inc(Event::PvWaitAgain, slept);
            stat::inc(Event::PvWaitHead);
            node.set_state(QsState::HeadSleeping);
            slept |= self.sleep_on_word();
            node.set_state(QsState::Running);
        };
        // Nobody else can set locked now: newcomers see our tail and queue, a
        // pending setter sees the tail and backs off, stealing does not exist.
        if v & TAIL_MASK == tail
            && self
                .word
                .compare_exchange(v, LOCKED, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return true; // (n,0,0) -> (0,0,1)
        }
        // (*,*,0) -> (*,*,1); a transient pending bit from a backing-off
        // contender may be present and is left alone.
        self.word.fetch_or(LOCKED, Ordering::Relaxed);
        false
    }

    /// Queue head, unfair: compete with stealers; after the threshold, claim
    /// (set pending) so stealing stops until we are served.
    fn head_unfair(&self, node: QsNode<'_>, tail: u32, start: u64) -> bool {
        node.set_state(QsState::Running);
        let threshold = P::steal_threshold_ns();
        let mut claiming = false;
        let mut last = false;
        let mut slept = false;
        loop {
            if !claiming && crate::wait::now_ns().saturating_sub(start) >= threshold {
                claiming = true;
                stat::inc(Event::UnfairClaim);
            }
            // Stealing stays allowed while we spin (the owner re-takes a hot
            // lock without moving its line, newcomers barge); only once we
            // have waited past the threshold do we claim: pending is set and
            // stays set, so stealing stops until we are served (bounded
            // unfairness). Only the head sets pending in unfair mode.
            if claiming {
                self.word.fetch_or(PENDING, Ordering::Relaxed);
            }
            let mut b = SpinBudget::new(P::spin_ns());
            let mut poll = Self::poll_backoff();
            if spin_until(&mut b, || {
                // Timed: only a poll that missed the cache pauses (PollBackoff::poll).
                let v = poll.poll(|| self.word.load(Ordering::Relaxed));
                if v & LOCKED_MASK != 0 {
                    // A claiming head polls continuously: the lock is ours next.
                    if !claiming {
                        poll.pause();
                    }
                    return false;
                }
                let is_last = v & TAIL_MASK == tail;
                let new = if is_last {
                    LOCKED // clears tail and our pending
                } else {
                    (v & !PENDING) | LOCKED
                };
                // Acquire pairs with the previous unlock.
                if self
                    .word
                    .compare_exchange(v, new, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    last = is_last;
                    return true;
                }
                false
            }) {
                stat::inc(Event::UnfairQueued);
                return last;
            }
            // Going to sleep: when claiming, pending stays set while we sleep
            // and the lock waits for us.
            stat::cond_inc(Event::PvWaitAgain, slept);
            stat::inc(Event::PvWaitHead);
            node.set_state(QsState::HeadSleeping);
            slept |= self.sleep_on_word();
            node.set_state(QsState::Running);
        }
    }

    /// We own the lock and a successor exists (or is linking): make it head.
    fn hand_over(&self, node: QsNode<'_>) -> Token {
        let mut next = 0;
        // Acquire pairs with the successor's Release link store. The successor
        // may be preempted between its tail exchange and the link: spin, then
        // yield (PV) so it can run.
        let mut b = if P::SLEEP {
            SpinBudget::new(P::spin_ns())
        } else {
            SpinBudget::unbounded()
        };
        loop {
            if spin_until(&mut b, || {
                next = node.next();
                next != 0
            }) {
                break;
            }
            yield_now();
        }
        let nn = QsNode::of(node::decode(next));
        // The successor waits for this grant and then for the lock, which we
        // hold: it stays queued here until our unlock (INV-WAKE-ADDR).
        nn.grant();
        if !P::SLEEP {
            return Token::NONE;
        }
        chaos::point(Site::Fence);
        // (QS-4) Dekker pair with wait_node: grant; full fence; look at its state.
        fence(Ordering::SeqCst);
        let token = if nn.cas_state(QsState::Halted, QsState::HeadHalted).is_ok() {
            // Asleep: do not wake it now (it would only wait for us as head);
            // our unlock will (kick at unlock).
            Token(next)
        } else {
            Token::NONE
        };
        if P::PATCHED {
            self.kick_ahead(nn);
        }
        token
    }

    /// Wake up to `kick_ahead` sleeping waiters behind the new head `head`.
    /// The chain is stable: we hold the lock, so nobody behind the head can
    /// leave the queue; links are only appended.
    /// The waiters behind the head cannot leave the queue before they are
    /// granted head, which needs our lock: the stores below are into nodes
    /// still queued here (INV-WAKE-ADDR).
    fn kick_ahead(&self, head: QsNode<'_>) {
        let k = P::kick_ahead();
        let mut cur = head;
        for _ in 0..k {
            let n = cur.next();
            if n == 0 {
                break;
            }
            let nn = QsNode::of(node::decode(n));
            if nn.cas_state(QsState::Halted, QsState::Kicked).is_ok() {
                nn.set_for_wake(QsState::Kicked);
                nn.wake();
                stat::inc(Event::PvKickAhead);
            }
            cur = nn;
        }
    }
}

/// Debug check of a state value read from our own node (see `node::check_tag`).
#[inline(always)]
fn check_tag_qs(v: u32) {
    node::check_tag("state", v, node::tag::QSPIN);
}

#[cfg(feature = "stats")]
static LAST_WORD_KICK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(not(loom))]
// SAFETY: the lock provides mutual exclusion: `lock`/`try_lock` return only
// when the caller holds it, `unlock` releases it with Release ordering, and the
// token is the per-acquisition state `unlock` needs.
unsafe impl<P: WaitPolicy> lock_api::RawMutex for RawQSpinLock<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = Token;

    #[inline]
    fn lock(&self) -> Token {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawQSpinLock::lock(self),
            |_| true,
        )
    }

    #[inline]
    fn try_lock(&self) -> Option<Token> {
        let t = RawQSpinLock::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, t.is_some());
        t
    }

    #[inline]
    unsafe fn unlock(&self, guard: Token) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract: held by the caller, with its token.
        unsafe { RawQSpinLock::unlock(self, guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawQSpinLock::is_locked(self)
    }
}

/// Lockdep: the lock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<P> Drop for RawQSpinLock<P> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::spin::{Native, Pv, PvBase, Unfair};

    fn basic<P: WaitPolicy>() {
        let l = RawQSpinLock::<P>::new();
        let t = l.lock();
        assert_eq!(l.word(), LOCKED);
        assert!(l.try_lock().is_none());
        // SAFETY: held, with its token.
        unsafe { l.unlock(t) };
        assert_eq!(l.word(), 0);
    }

    #[test]
    fn uncontended_all_policies() {
        basic::<Native>();
        basic::<Pv>();
        basic::<PvBase>();
        basic::<Unfair>();
    }

    fn contended<P: WaitPolicy>(threads: usize, iters: usize, no_node_every: usize) {
        use std::sync::Arc;
        struct Shared<P> {
            l: RawQSpinLock<P>,
            c: std::cell::UnsafeCell<u64>,
        }
        // SAFETY: `c` is only accessed with `l` held.
        unsafe impl<P> Sync for Shared<P> {}
        let s = Arc::new(Shared::<P> {
            l: RawQSpinLock::new(),
            c: std::cell::UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    if no_node_every > 0 && i % no_node_every == 0 {
                        crate::node::simulate_no_node(true);
                    }
                    for _ in 0..iters {
                        let t = s.l.lock();
                        // SAFETY: lock held.
                        unsafe { *s.c.get() += 1 };
                        // SAFETY: held, with its token.
                        unsafe { s.l.unlock(t) };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        // SAFETY: all threads joined; no concurrent access.
        assert_eq!(unsafe { *s.c.get() }, (threads * iters) as u64);
        assert_eq!(s.l.word(), 0);
    }

    #[test]
    fn contended_native() {
        contended::<Native>(2, 500, 0);
    }

    #[test]
    fn contended_pv() {
        contended::<Pv>(6, 2000, 0);
        contended::<PvBase>(6, 2000, 0);
    }

    #[test]
    fn contended_unfair() {
        contended::<Unfair>(6, 2000, 0);
    }

    #[test]
    fn no_node_fallback() {
        contended::<Pv>(4, 1000, 2);
        contended::<Unfair>(4, 1000, 2);
        contended::<Native>(2, 300, 2);
    }

    /// A second locker while the lock is held must take the pending path or
    /// the queue, and the counters must see it (feature `stats`).
    #[cfg(feature = "stats")]
    #[test]
    fn slow_path_is_counted() {
        let _s = crate::stat::TEST_SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let l = std::sync::Arc::new(RawQSpinLock::<Pv>::new());
        let t = l.lock();
        let l2 = l.clone();
        // The second locker's own counters: other tests cannot add to them.
        let h = std::thread::spawn(move || {
            let before = crate::stat::thread_snapshot();
            let t = l2.lock();
            // SAFETY: held, with its token.
            unsafe { l2.unlock(t) };
            crate::stat::thread_snapshot().delta(&before)
        });
        // Let the other thread find the lock held (it waits however long we take).
        while l.word() & !LOCKED_MASK == 0 && !h.is_finished() {
            std::thread::yield_now();
        }
        // SAFETY: held, with its token.
        unsafe { l.unlock(t) };
        let d = h.join().unwrap();
        assert!(d.get(Event::LockPending) + d.get(Event::LockSlowpath) >= 1);
    }

    #[test]
    fn lock_api_surface() {
        let m = crate::spin::SpinLock::new(5);
        {
            let g = m.lock();
            assert!(m.is_locked());
            assert!(m.try_lock().is_none());
            assert_eq!(*g, 5);
        }
        assert!(!m.is_locked());
        assert_eq!(*m.try_lock().unwrap(), 5);
    }
}

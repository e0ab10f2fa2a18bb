//! Passing the turn, the waker side (the waiter side is `sleep.rs`): the
//! release slow path ([`release_share`](RawRwLock::release_share): waiters
//! may need the release, or an upgrader waits for the readers, so the fast
//! CAS in `mod.rs` failed), a contender's pass under WLOCK
//! (`pass_turn_and_wunlock`), and what both do under WLOCK: `hand_on`
//! (readers at the head granted, a writer head handed the lock or marked
//! woken) and `grant_readers`, with the wake-up queue filled under WLOCK
//! and completed after the release ([`WakeQ`], INV-WAKE-ADDR,
//! INV-GRANT-PIN).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (n,-) --read unlock: CAS--> (n-1,-)                                (mod.rs; a failed CAS comes here)
//!  (0,X|W) --write unlock, head readers: grant_readers--> (k,[W])      k readers granted at once
//!  (0,X|W) --write unlock, head writer: hand_on marks it woken--> (0,W|K)
//!  (x,W|K) --any unlock while K: one CAS, no WLOCK, no wake--> (0,W|K)
//!  (1,W)   --last read unlock: wake head writer--> (0,W|K)
//!  (0,W|H) --unlock, head writer asked for hand-off: hand_on passes X--> (0,X[|W])
//!  (n,W|F), n>0, writer at the head --hand_on: grant queued reader-preferring readers--> (n+k,W[|F])
//! ```
//!
//! Lifetime (INV-WAKE-ADDR, module docs): after the CAS that releases the
//! share and WLOCK, only `futex_wake` on type-stable nodes or, for an
//! upgrader, on the count word.

use super::queue::RwWaiter;
use super::raw::RawRwLock;
use super::word::Class;
use super::word::{
    OWNER_NONSPINNABLE, OWNER_READER, PREFQ, READER_BIAS, UPGRADING, WRITER, handoff_owed,
    is_lockable_by, list_locked, read_release_wakes_upgrader, readers, release_needs_no_turn,
};
use super::word::{
    grant_queued_readers, hand_to_writer, lock_list, mark_woken, release, unlock_list,
};
use crate::chaos::{self, Site};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait;
use crate::waitlist::Waiter;

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

impl<S: SpinPolicy> RawRwLock<S> {
    /// Under WLOCK, as a contender: give the head its turn, release WLOCK,
    /// finish the grants and wakes.
    pub(super) fn pass_turn_and_wunlock(&self) {
        let mut wq = WakeQ::new();
        // Relaxed: under WLOCK; the hand-on CASes decide.
        let grant = handoff_owed(self.count.load(Ordering::Relaxed));
        self.hand_on(0, 0, grant, &mut wq);
        wq.finish();
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
        for &t in &wq.codes[start..wq.n] {
            let t = t & !WakeQ::GRANT;
            self.list.remove(t);
            chaos::point(Site::ListEdit);
            // INV-WAKE-ADDR: under WLOCK, the node was on our list.
            Waiter::decode(t).mark_granting();
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

    /// Release `sub` and take `add` (read unlock: `READER_BIAS`, 0; write
    /// unlock: `WRITER`, 0; downgrade: `WRITER`, `READER_BIAS`), in named
    /// steps:
    ///
    /// 1. Nobody needs a turn (`fair`: the caller's fair unlock gives the
    ///    head one): release in one CAS (waking an upgrader this
    ///    read unlock leaves alone), done; else take WLOCK while still
    ///    holding `sub` ([`release_or_lock_list`](Self::release_or_lock_list)).
    /// 2. The last reader leaves with waiters: writers may spin again
    ///    ([`writers_may_spin_again`](Self::writers_may_spin_again)).
    /// 3. Give the head its turn and release `sub` and WLOCK in one CAS
    ///    ([`hand_on`](Self::hand_on)); then only complete grants and wake
    ///    (INV-WAKE-ADDR, INV-GRANT-PIN).
    ///
    /// # Safety
    ///
    /// The caller holds `sub`.
    // Out of line: its wake queue (a stack array) must not become part of
    // every unlock's frame; the uncontended unlocks stay a few instructions.
    #[inline(never)]
    pub(super) unsafe fn release_share(&self, sub: u32, add: u32, fair: bool) {
        let plain_read = sub == READER_BIAS && add == 0;
        // Relaxed: the CASes decide; their orderings are commented.
        let c = self.count.load(Ordering::Relaxed);
        // Step 1: one CAS if nobody needs a turn; else WLOCK, still holding `sub`.
        let Some(c) = self.release_or_lock_list(c, sub, add, plain_read, fair) else {
            return;
        };
        // Step 2: we hold `sub` and WLOCK.
        if plain_read && readers(c) == 1 {
            self.writers_may_spin_again();
        }
        // Step 3: the head's turn, released in one CAS; then grants and wakes.
        let mut wq = WakeQ::new();
        self.hand_on(sub, add, fair || handoff_owed(c), &mut wq);
        chaos::point(Site::AfterRelease);
        wq.finish();
    }

    /// Step 1 of [`release_share`](Self::release_share), from the count
    /// `c`, holding `sub` (`plain_read`: `sub` is one reader, `add` 0):
    ///
    /// * a read unlock that leaves a waiting upgrader alone
    ///   ([`read_release_wakes_upgrader`]): `(2,U|G|f) -> (1,U|G|f)`, then
    ///   the upgrader woken on the count word; `None`, done;
    /// * nobody needs a turn ([`release_needs_no_turn`]): `(x,f) -> (x,f) -
    ///   sub + add` in one CAS; `None`, done;
    /// * otherwise, once WLOCK is free: `(x,f) -> (x,f|L)`, still holding
    ///   `sub`; `Some` of the count WLOCK was taken in (without L).
    #[inline]
    fn release_or_lock_list(
        &self,
        mut c: u32,
        sub: u32,
        add: u32,
        plain_read: bool,
        fair: bool,
    ) -> Option<u32> {
        loop {
            if plain_read && read_release_wakes_upgrader(c) {
                match self.release_and_wake_upgrader(c, sub) {
                    Ok(()) => return None,
                    Err(x) => c = x,
                }
                continue;
            }
            // A reader that is not the last cannot let a waiter in.
            // INV-WAKING: a woken head will re-try after this release.
            if release_needs_no_turn(c, plain_read, fair) {
                // Release pairs with the next owner's Acquire.
                match self.count.compare_exchange_weak(
                    c,
                    release(c, sub, add),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return None,
                    Err(x) => c = x,
                }
                continue;
            }
            if list_locked(c) {
                // Relaxed (both loads): they only wait for WLOCK to clear;
                // the CAS below takes it (its Acquire is commented there).
                crate::wait::spin_then_yield(|| {
                    (!list_locked(crate::sync::peek(&self.count, Ordering::Relaxed))).then_some(())
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
                Ok(_) => return Some(c),
                Err(x) => c = x,
            }
        }
    }

    /// The read unlock that leaves the upgrader alone, `(2,U|G|f) ->
    /// (1,U|G|f)` in one CAS from `c`: after it, wake the upgrader on the
    /// count word (an address). `Err` of the count a failed CAS saw.
    #[inline]
    fn release_and_wake_upgrader(&self, c: u32, sub: u32) -> Result<(), u32> {
        // Release pairs with the upgrader's Acquire CAS.
        self.count.compare_exchange_weak(
            c,
            release(c, sub, 0),
            Ordering::Release,
            Ordering::Relaxed,
        )?;
        chaos::point(Site::AfterRelease);
        wait::futex_wake(&self.count, 1);
        Ok(())
    }

    /// Step 2 of [`release_share`](Self::release_share), holding the last
    /// reader's count and WLOCK: owner `(x,f[|N]) -> (x,f)`, writers may
    /// spin again.
    #[inline]
    fn writers_may_spin_again(&self) {
        // Relaxed: a hint.
        self.owner.fetch_and(!OWNER_NONSPINNABLE, Ordering::Relaxed);
    }
}

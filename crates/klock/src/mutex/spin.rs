//! Optimistic spinning: how a contender waits **running** before it queues
//! (the OSQ head's [`spin_on_owner`](RawMutex::spin_on_owner),
//! [`optimistic_spin`](RawMutex::optimistic_spin),
//! [`yield_rounds`](RawMutex::yield_rounds)) and the unqueued fallback for a
//! thread without a node or id ([`wait_unqueued`](RawMutex::wait_unqueued)).
//! The woken first waiter in `sleep` reuses `spin_on_owner` without the OSQ.
//! [`spin_phase`](RawMutex::spin_phase) asks the adaptive hint (`adapt`)
//! first, and `optimistic_spin` tells it how each spin ended ([`SpinEnd`]).
//!
//! Its part of the state diagram (module docs): a spinner only ever takes a
//! free id field, and stops as soon as a waiter is owed the lock.
//!
//! ```text
//!  (0,-) --lock fast CAS--> (me,-)                    (a spinner's trylock: same change)
//!  (0,W|K) --anyone's trylock--> (y,W|K)
//!  (x,W[|K]|H), (head,W|K|P): spinners stop (owed_to_waiter), the caller queues
//! ```
//!
//! Every poll of the word is Relaxed (a hint); acquisition is always
//! [`try_acquire`](RawMutex::try_acquire)'s Acquire CAS.

use super::adapt;
use super::raw::RawMutex;
use super::word::{has_waiters, is_free, owed_to_waiter, owner_id};
use crate::node;
use crate::osq;
use crate::owner_spin::{self, Seen};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, SpinBudget};
use crate::waitlist::owner_tag;

/// How a [`spin_on_owner`](RawMutex::spin_on_owner) ended: what the
/// adaptive hint (`adapt`) learns from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpinEnd {
    /// The spinner took the lock.
    Acquired,
    /// One owner kept the lock past `KLOCK_MUTEX_SPIN_NS`, or the episode
    /// ran out of `total`: the owner probably is not running (a failure).
    OwnerSlow,
    /// HANDOFF or PICKUP appeared: a waiter is owed the lock (no verdict on
    /// the owner).
    Owed,
}

impl<S: SpinPolicy> RawMutex<S> {
    /// Spin on the owner word: take the lock when its id field is 0; keep
    /// spinning while owners change quickly; stop when HANDOFF/PICKUP appear,
    /// when one owner holds it longer than `KLOCK_MUTEX_SPIN_NS` (hint: not
    /// running), or when `total` runs out. Publishes a heartbeat on `beat`.
    pub(super) fn spin_on_owner(
        &self,
        id: u32,
        total: &mut SpinBudget,
        beat: Option<&node::Node>,
    ) -> SpinEnd {
        let t0 = if stat::ENABLED { wait::now_ns() } else { 0 };
        let end = self.spin_on_owner_inner(id, total, beat);
        if stat::ENABLED {
            stat::add(Event::MutexSpinOwnerNs, wait::now_ns().saturating_sub(t0));
        }
        self.note_owner(end);
        end
    }

    /// The lock's slow-owner hint (the list word's hint bits): after a spin
    /// that gave up on the owner, its tag, so that newcomers skip spinning
    /// on that owner ([`owner_known_slow`](Self::owner_known_slow)); after a
    /// spin that took the lock, none. The slow unlock clears it too.
    fn note_owner(&self, end: SpinEnd) {
        match end {
            SpinEnd::OwnerSlow => {
                // Relaxed: a hint. The owner may have changed since the spin
                // ended; a wrong tag misleads one newcomer's decision.
                let o = self.owner.load(Ordering::Relaxed);
                if !is_free(o) {
                    self.list.set_hint(owner_tag(owner_id(o)));
                }
            }
            SpinEnd::Acquired if self.list.hint() != 0 => self.list.set_hint(0),
            _ => {}
        }
    }

    /// Has a spinner already given up on the current owner (it held the
    /// lock past `KLOCK_MUTEX_SPIN_NS`: probably not running, or a long
    /// hold)? Then a newcomer's spin and yield rounds would fail too and
    /// only take a CPU from the owner; it queues at once instead.
    #[inline]
    pub(super) fn owner_known_slow(&self) -> bool {
        let h = self.list.hint();
        // Relaxed: a hint (as `note_owner`).
        let o = self.owner.load(Ordering::Relaxed);
        h != 0 && !is_free(o) && h == owner_tag(owner_id(o))
    }

    fn spin_on_owner_inner(
        &self,
        id: u32,
        total: &mut SpinBudget,
        beat: Option<&node::Node>,
    ) -> SpinEnd {
        let t = crate::tune::get();
        // Relaxed (here and in the loop): hints; acquisition is try_acquire's CAS.
        let mut cur = owner_id(self.owner.load(Ordering::Relaxed));
        // Delay between polls while the same owner keeps re-taking the lock
        // (the `hot` case): see `wait::PollBackoff`.
        let mut poll = wait::PollBackoff::new(t.mutex_poll_max_ns);
        owner_spin::spin_on_owner(
            total,
            t.mutex_spin_ns,
            &mut poll,
            beat,
            SpinEnd::OwnerSlow,
            |poll| {
                let o = poll.poll(|| crate::sync::peek(&self.owner, Ordering::Relaxed));
                if owed_to_waiter(o) {
                    // A waiter is owed the lock (or has it): spinning is pointless;
                    // a PICKUP addressed to us is taken by the caller's trylock.
                    return Seen::Done(SpinEnd::Owed);
                }
                if is_free(o) {
                    return if self.try_acquire(id, false) {
                        Seen::Done(SpinEnd::Acquired)
                    } else {
                        Seen::Lost
                    };
                }
                if owner_id(o) != cur {
                    cur = owner_id(o);
                    return Seen::NewOwner;
                }
                Seen::Held
            },
        )
    }

    /// The running part of the slow path, between the first trylock and the
    /// wait list: optimistic spinning, then the yield rounds, unless the
    /// adaptive hint says this thread's spins keep failing (`adapt`): then
    /// neither, and the caller queues at once (the `SpinOff` path).
    #[inline]
    pub(super) fn spin_phase(&self, id: u32) -> bool {
        let t = crate::tune::get();
        // INV-RT-NOSPIN: a real-time thread queues at once.
        // Under a CPU quota every policy spins as the floor does: owner
        // polling and yield rounds spend the group's bandwidth that the
        // holder needs (issue 32: `klock_mutex_plain` made 1.25-1.37 Mops/s
        // under `--quota 0.5` at T=8/32 where this path made 0.92-1.04).
        if S::PLAIN {
            return !wait::realtime() && self.plain_spin(id);
        }
        if S::SPIN && wait::quota_limited() {
            // A newcomer queues at once behind waiters: at T=128 under
            // `--quota 0.5`, spinning newcomers kept the lock from woken
            // heads that waited for a CPU (max/min 4 837 against 152-171
            // queueing; queueing costs the p99.9 at T=8: 48 µs-1.1 ms
            // against 1.9 µs, where the previous default had 210-280 µs).
            // Relaxed: a hint; the queue path re-checks under WLOCK.
            let queued = has_waiters(self.owner.load(Ordering::Relaxed));
            return !queued && !wait::realtime() && self.plain_spin(id);
        }
        if !S::SPIN || t.mutex_spin == 0 || wait::realtime() || !adapt::should_spin(t) {
            return false;
        }
        if self.owner_known_slow() {
            stat::inc(Event::MutexSpinSkip);
            return false;
        }
        self.optimistic_spin(id) || self.yield_rounds(id)
    }

    /// The floor's spin ([`SpinPlain`](super::SpinPlain)): read the word
    /// (Relaxed, a hint) while it is held and nothing is owed to a waiter,
    /// for at most [`PLAIN_SPIN_NS`]; then one trylock if it is free.
    /// WAITERS does not stop it: unlike std's "2" it persists across
    /// unlocks, and stopping at it sent every contender to the wait list
    /// (0.68x the floor at `balanced` T=8).
    fn plain_spin(&self, id: u32) -> bool {
        let mut o = 0;
        wait::spin_until(&mut SpinBudget::new(PLAIN_SPIN_NS), || {
            o = self.owner.load(Ordering::Relaxed);
            is_free(o) || owed_to_waiter(o)
        });
        is_free(o) && !owed_to_waiter(o) && self.try_acquire(id, false)
    }

    /// Optimistic spinning for a thread that is not queued yet. A spin that
    /// watched the owner tells the adaptive hint how it ended.
    pub(super) fn optimistic_spin(&self, id: u32) -> bool {
        let t = crate::tune::get();
        if !S::SPIN || t.mutex_spin == 0 {
            return false;
        }
        let max = osq::max_spinners();
        let mut total = SpinBudget::new(t.mutex_spin_max_ns);
        let got = if S::QUEUE {
            if self.osq.depth_hint() >= max {
                stat::inc(Event::MutexSpinSkip);
                return false;
            }
            node::with_node(|q| {
                let Some(q) = q else { return false };
                let t0 = if stat::ENABLED { wait::now_ns() } else { 0 };
                let head = self.osq.lock(q, &mut total, max);
                if stat::ENABLED {
                    stat::add(Event::OsqWaitNs, wait::now_ns().saturating_sub(t0));
                }
                if !head {
                    return false;
                }
                let end = self.spin_on_owner(id, &mut total, Some(q.node()));
                self.osq.unlock(q);
                learn(t, end)
            })
        } else {
            learn(t, self.spin_on_owner(id, &mut total, None))
        };
        stat::inc(if got {
            Event::MutexSpinSuccess
        } else {
            Event::MutexSpinFail
        });
        got
    }

    /// `KLOCK_MUTEX_YIELDS` rounds of "yield the CPU, then trylock" before
    /// sleeping: gives a preempted owner the CPU and keeps the contender off
    /// the futex queue (parking_lot does similar).
    pub(super) fn yield_rounds(&self, id: u32) -> bool {
        let t = crate::tune::get();
        if !S::SPIN || t.mutex_spin == 0 {
            return false;
        }
        // Never under a CPU quota: `spin_phase` waits as the floor there.
        let rounds = t.mutex_yields;
        if rounds == 0 {
            return false;
        }
        for _ in 0..rounds {
            wait::yield_now();
            if self.try_acquire(id, false) {
                return true;
            }
        }
        false
    }

    /// No node (or no id): poll within the spin budget, yield in between.
    pub(super) fn wait_unqueued(&self, id: u32, deadline: Option<u64>) -> bool {
        stat::inc(Event::MutexNoNode);
        wait::poll_unqueued(
            crate::tune::get().mutex_spin_ns,
            deadline,
            || self.try_acquire(id, false),
            || is_free(crate::sync::peek(&self.owner, Ordering::Relaxed)),
        )
    }
}

/// The plain spin's budget: the floor's (about std's 100 PAUSEs); under
/// loom one iteration.
const PLAIN_SPIN_NS: u64 = if cfg!(loom) { 1 } else { 2_000 };

/// Fold a spin's end into the adaptive hint; returns whether it acquired.
#[inline]
fn learn(t: &crate::tune::Tunables, end: SpinEnd) -> bool {
    if end != SpinEnd::Owed {
        adapt::record(t, end == SpinEnd::Acquired);
    }
    end == SpinEnd::Acquired
}

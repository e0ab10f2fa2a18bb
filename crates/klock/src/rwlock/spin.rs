//! Optimistic spinning (the kernel's `rwsem_optimistic_spin`, patches 8-10
//! and 13 of seed 003): the OSQ head polls the owner word while one writer
//! holds the lock (`spin_on_owner`, within `KLOCK_RWSEM_SPIN_NS` per owner
//! and `KLOCK_RWSEM_SPIN_MAX_NS` in all); writers also spin on a
//! reader-owned lock for `KLOCK_RWSEM_RSPIN_NS` + 500 ns per reader and then
//! mark the owner NONSPINNABLE (`mark_nonspinnable`). Readers
//! (`ReaderMode::SpinOnWriter`) spin on writers only. Every acquisition is
//! `try_take`'s CAS (`mod.rs`); the owner word is a hint.

use super::raw::RawRwLock;
use super::word::Class;
use super::word::nonspinnable;
use super::word::{OWNER_READER, WRITER, handoff_owed, is_nonspinnable, owner_id, readers};
use crate::node::{self, QNode};
use crate::osq;
use crate::owner_spin::{self, Seen};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait::{self, SpinBudget};

/// Spin on a reader-owned lock grows by this per reader: the kernel's
/// `rwsem_rspin_threshold` (10 µs + 0.5 µs per reader).
const RSPIN_NS_PER_READER: u64 = 500;

/// ... counting at most this many readers (the kernel's cap: 25 µs in all).
const RSPIN_READERS_CAP: u32 = 30;
/// Owner-poll backoff cap (`wait::PollBackoff`) of waiting readers and
/// spinning writers: 0, poll continuously, so a reader waiting running
/// catches the short free windows between writers (a backoff lost them:
/// `docs/results/2026-11-25-rwlock.md`, design 4).
pub(super) const POLL_MAX_NS: u64 = 0;

impl<S: SpinPolicy> RawRwLock<S> {
    /// Spin (OSQ head only) for `class` while it looks worth it: the
    /// kernel's `rwsem_optimistic_spin` with time budgets for `owner_on_cpu`.
    pub(super) fn optimistic_spin(&self, class: Class, _id: u32) -> bool {
        let t = crate::tune::get();
        let max = osq::max_spinners();
        if S::QUEUE && self.osq.depth_hint() >= max {
            return false;
        }
        let mut total = SpinBudget::new(t.rwsem_spin_max_ns);
        let got = node::with_node(|q| {
            let Some(q) = q else { return false };
            if S::QUEUE && !self.osq.lock(q, &mut total, max) {
                return false;
            }
            let got = self.spin_loop(class, &mut total, q);
            if S::QUEUE {
                self.osq.unlock(q);
            }
            got
        });
        stat::inc(if got {
            Event::RwSpinSuccess
        } else {
            Event::RwSpinFail
        });
        got
    }

    fn spin_loop(&self, class: Class, total: &mut SpinBudget, q: QNode) -> bool {
        let t = crate::tune::get();
        let mut prev = OwnerState::Null;
        let mut rspin = SpinBudget::new(0);
        let mut poll = wait::PollBackoff::new(POLL_MAX_NS);
        loop {
            let st = self.spin_on_owner(total, &mut poll, q);
            if st == OwnerState::NonSpinnable {
                return false;
            }
            if self.try_take(class) {
                return true;
            }
            if st == OwnerState::Reader {
                if class != Class::Writer {
                    return false; // readers spin on writers only (seed 003 patch 8)
                }
                if prev != OwnerState::Reader {
                    // A new reader phase: writers spin on readers for a bounded
                    // time (seed 003 patch 10, time-based here).
                    if is_nonspinnable(self.owner.load(Ordering::Relaxed)) {
                        return false;
                    }
                    let n = readers(self.count.load(Ordering::Relaxed)).min(RSPIN_READERS_CAP);
                    rspin = SpinBudget::new(t.rwsem_rspin_ns + n as u64 * RSPIN_NS_PER_READER);
                } else if rspin.expired() {
                    self.mark_nonspinnable();
                    return false;
                }
            }
            if handoff_owed(self.count.load(Ordering::Relaxed)) || total.expired() {
                return false;
            }
            prev = st;
            if !poll.pause() {
                std::hint::spin_loop();
            }
        }
    }

    /// The kernel's tri-state `rwsem_spin_on_owner` (seed 003 patch 9): spin while
    /// one writer holds the lock; report who holds it when that ends.
    fn spin_on_owner(
        &self,
        total: &mut SpinBudget,
        poll: &mut wait::PollBackoff,
        q: QNode,
    ) -> OwnerState {
        let t = crate::tune::get();
        // Relaxed (all loads): hints; acquisition is try_take's CAS.
        let c = self.count.load(Ordering::Relaxed);
        if c & WRITER == 0 {
            return if readers(c) != 0 {
                OwnerState::Reader
            } else {
                OwnerState::Null
            };
        }
        let o = self.owner.load(Ordering::Relaxed);
        if is_nonspinnable(o) {
            return OwnerState::NonSpinnable;
        }
        let id = owner_id(o);
        // One writer held it too long (probably not running): NonSpinnable.
        owner_spin::spin_on_owner(
            total,
            t.rwsem_spin_ns,
            poll,
            Some(q.node()),
            OwnerState::NonSpinnable,
            |poll| {
                // Timed: only a poll that missed the cache pauses
                // (`PollBackoff::poll`, `KLOCK_POLL_MISS_TICKS`).
                let c = poll.poll(|| self.count.load(Ordering::Relaxed));
                if c & WRITER == 0 {
                    Seen::Done(OwnerState::Null)
                } else if owner_id(self.owner.load(Ordering::Relaxed)) != id || handoff_owed(c) {
                    Seen::Done(OwnerState::Writer)
                } else {
                    Seen::Held
                }
            },
        )
    }

    /// A writer gave up spinning on readers: mark the owner NONSPINNABLE if
    /// it is still reader-owned (seed 003 patch 13: readers stop spinning too).
    fn mark_nonspinnable(&self) {
        // Relaxed: a hint.
        let o = self.owner.load(Ordering::Relaxed);
        if o & OWNER_READER != 0 && !is_nonspinnable(o) {
            let _ = self.owner.compare_exchange(
                o,
                nonspinnable(o),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            stat::inc(Event::RwSpinNonSpinnable);
        }
    }
}

/// Owner states seen by a spinner (the kernel's `enum owner_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnerState {
    /// No owner (or one in transition): try to take it.
    Null,
    /// A writer owns it (a new one, or the same one still running).
    Writer,
    /// Readers own it.
    Reader,
    /// Stop spinning.
    NonSpinnable,
}

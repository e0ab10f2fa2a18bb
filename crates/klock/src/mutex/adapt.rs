//! The adaptive spinning hint: a per-thread score of how often this thread's
//! recent optimistic spins ended in acquisition, which lets a thread whose
//! spins keep failing go to sleep at once (`docs/design.md`, principle P5: the kernel
//! spins only while `owner->on_cpu`; user space cannot ask, so it learns).
//!
//! # Why
//!
//! A contender that spins, or makes yield rounds, stays runnable. When the
//! owner gives its CPU away inside its critical section (`sched_yield`, a
//! page fault, a preemption on an overcommitted machine), a runnable
//! contender is exactly what takes the CPU: the owner's `sched_yield`
//! really yields, and the critical section stretches to a time slice. With
//! sleeping waiters (glibc) the owner's yield returns at once. Measured on
//! `sysbench threads` under the interposer (docs/mutex.md): 532 spins won,
//! 8267 lost, 13.9 s of 16 thread-seconds waiting.
//!
//! # The score
//!
//! Glibc's adaptive mutex keeps an EWMA of spin lengths in the mutex word;
//! ours has no spare bits, so the EWMA lives in the thread (a hint about the
//! locks this thread meets, not about one lock):
//!
//! ```text
//! score' = score - score/2^SHIFT + (acquired ? ONE/2^SHIFT : 0)     ONE = 256
//! ```
//!
//! i.e. the recent success rate in 1/256ths, over about 2^SHIFT spins. A spin
//! that took the lock raises it; a spin that watched the owner keep the lock
//! past the budget (`KLOCK_MUTEX_SPIN_NS` per owner, `KLOCK_MUTEX_SPIN_MAX_NS`
//! in all) lowers it. Spins that end for other reasons do not count: the OSQ
//! was full (`mutex_spin_skip`) or the thread never reached its head (it
//! never watched the owner), or HANDOFF/PICKUP appeared (a waiter is owed the
//! lock: says nothing about the owner). While the score is below
//! `KLOCK_MUTEX_ADAPT_PCT` % the slow path skips optimistic spinning **and**
//! the yield rounds and queues at once (`mutex_spin_adapt_skip`), except
//! for a probe (`mutex_spin_adapt_probe`) that spins as usual so that the
//! score can recover: the first after `KLOCK_MUTEX_ADAPT_PROBE` such slow
//! paths, the interval doubling with each failed probe up to
//! `KLOCK_MUTEX_ADAPT_PROBE_MAX` and reset by a success. (Without the
//! doubling, a probe every 16th slow path spent about half of the gain:
//! each probe spins up to `KLOCK_MUTEX_SPIN_MAX_NS` while the owner wants
//! the CPU.) A new thread starts at ONE (spin, as without the hint).
//! `KLOCK_MUTEX_ADAPT=0` turns the hint off.
//!
//! "One owner kept the lock" is judged by the owner id, so an owner that
//! releases and re-takes the lock between two polls looks the same as one
//! that holds it (the `hot` workload: about 40 % of its spins "fail" so; the
//! hint then skips about a tenth of its spin phases, with no throughput
//! change measured, docs/results/2026-11-24-adaptive-spin.md).
//!
//! The skip path is the `SpinOff` path: the same `wait_queued` every
//! sleeping waiter takes, so the hint cannot lose a wake-up or break
//! exclusion (it only chooses between two paths that both exist already).
//!
//! The state is three `Cell`s in a const-initialised thread-local without a
//! destructor: one TLS access, no lazy-initialisation check, nothing on the
//! fast paths (only `lock_slow` reads it).

use crate::stat::{self, Event};
use crate::tune::Tunables;
use std::cell::Cell;

/// Score of a thread whose recent spins all succeeded (the scale of
/// `KLOCK_MUTEX_ADAPT_PCT`): 256 keeps the EWMA step exact in integers.
pub(crate) const ONE: u32 = 256;
/// EWMA weight 1/2^SHIFT: about 8 recent spins; from ONE, 11 straight
/// failures reach 25 % (one failure among successes moves it by 1/8).
pub(crate) const SHIFT: u32 = 3;

/// The numbers [`Adapt`] works with, from the tunables.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// Spin while the score is at least this (`KLOCK_MUTEX_ADAPT_PCT` of ONE).
    threshold: u32,
    /// Slow paths per probe after a success (`KLOCK_MUTEX_ADAPT_PROBE`).
    probe: u32,
    /// Cap of the probe interval (`KLOCK_MUTEX_ADAPT_PROBE_MAX`).
    probe_max: u32,
}

impl Params {
    #[inline]
    fn of(t: &Tunables) -> Params {
        Params {
            threshold: t.mutex_adapt_pct * ONE / 100,
            probe: t.mutex_adapt_probe,
            probe_max: t.mutex_adapt_probe_max.max(t.mutex_adapt_probe),
        }
    }
}

/// This thread's hint.
pub(crate) struct Adapt {
    /// Recent spin success rate in 1/[`ONE`]ths.
    score: Cell<u32>,
    /// Slow paths skipped since the last probe.
    skipped: Cell<u32>,
    /// Slow paths per probe: `probe`, doubled by each failed probe up to
    /// `probe_max`, back to `probe` after a spin that acquired (0 = `probe`).
    interval: Cell<u32>,
}

impl Adapt {
    const fn new() -> Adapt {
        Adapt {
            score: Cell::new(ONE),
            skipped: Cell::new(0),
            interval: Cell::new(0),
        }
    }

    fn interval(&self, p: Params) -> u32 {
        match self.interval.get() {
            0 => p.probe,
            n => n.min(p.probe_max).max(p.probe),
        }
    }

    /// Whether this slow path spins (and yields) before queueing: yes while
    /// the score is at or above the threshold, and on every
    /// `interval`-th slow path below it (a probe).
    fn should_spin(&self, p: Params) -> bool {
        if self.score.get() >= p.threshold {
            return true;
        }
        let n = self.skipped.get() + 1;
        if n >= self.interval(p) {
            self.skipped.set(0);
            stat::inc(Event::MutexSpinAdaptProbe);
            true
        } else {
            self.skipped.set(n);
            stat::inc(Event::MutexSpinAdaptSkip);
            false
        }
    }

    /// Fold one spin's outcome into the score; a failed probe (a failure
    /// while below the threshold) doubles the probe interval, a success
    /// resets it.
    fn record(&self, acquired: bool, p: Params) {
        let s = self.score.get();
        if acquired {
            self.interval.set(0);
        } else if s < p.threshold {
            let next = self.interval(p).saturating_mul(2).min(p.probe_max);
            self.interval.set(next);
        }
        let gain = if acquired { ONE >> SHIFT } else { 0 };
        self.score.set(s - (s >> SHIFT) + gain);
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static ADAPT: Adapt = const { Adapt::new() };
}
#[cfg(loom)]
loom::thread_local! {
    static ADAPT: Adapt = Adapt::new();
}

/// Whether the slow path should spin and make its yield rounds (see the
/// module docs). Always `true` with `KLOCK_MUTEX_ADAPT=0` or while TLS is
/// being torn down.
#[inline]
pub(super) fn should_spin(t: &Tunables) -> bool {
    t.mutex_adapt == 0
        || ADAPT
            .try_with(|a| a.should_spin(Params::of(t)))
            .unwrap_or(true)
}

/// Record the outcome of a spin that watched the owner: `acquired`, or the
/// owner kept the lock past the budget.
#[inline]
pub(super) fn record(t: &Tunables, acquired: bool) {
    let _ = ADAPT.try_with(|a| a.record(acquired, Params::of(t)));
}

/// This thread's adaptive-spinning score, in 1/256ths of "every recent spin
/// took the lock" (256 for a thread that has not failed a spin yet).
///
/// ```
/// assert!(klock::internal::mutex::adapt_score() <= 256);
/// ```
pub fn adapt_score() -> u32 {
    ADAPT.try_with(|a| a.score.get()).unwrap_or(ONE)
}

/// Set this thread's adaptive-spinning score (clamped to 0..=256) and reset
/// its probe count: for tests and models that need a thread that skips.
pub fn set_adapt_score(score: u32) {
    let _ = ADAPT.try_with(|a| {
        a.score.set(score.min(ONE));
        a.skipped.set(0);
        a.interval.set(0);
    });
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    const P: Params = Params {
        threshold: ONE / 4,
        probe: 4,
        probe_max: 16,
    };

    #[test]
    fn score_moves_with_outcomes() {
        let a = Adapt::new();
        assert_eq!(a.score.get(), ONE);
        a.record(true, P);
        assert_eq!(a.score.get(), ONE, "success at the top stays at the top");
        a.record(false, P);
        assert_eq!(a.score.get(), ONE - ONE / 8);
        // Straight failures: 11 take it from ONE below 25 %, never below 0.
        let a = Adapt::new();
        let mut n = 0;
        while a.score.get() >= ONE / 4 {
            a.record(false, P);
            n += 1;
        }
        assert_eq!(n, 11);
        for _ in 0..100 {
            a.record(false, P);
        }
        let low = a.score.get();
        assert!(low < 8, "{low}");
        // Successes climb back: two from the floor (7) pass 25 %.
        assert_eq!(low, 7);
        a.record(true, P);
        assert!(a.score.get() < ONE / 4);
        a.record(true, P);
        assert!(a.score.get() >= ONE / 4, "{}", a.score.get());
        for _ in 0..100 {
            a.record(true, P);
        }
        assert!(a.score.get() > ONE - 8 && a.score.get() <= ONE);
    }

    #[test]
    fn skips_below_threshold_and_probes_with_backoff() {
        let a = Adapt::new();
        assert!(a.should_spin(P), "a new thread spins");
        for _ in 0..20 {
            a.record(false, P);
        }
        // The failures above the threshold left the interval alone; the
        // ones below it doubled it up to the cap.
        assert_eq!(a.interval(P), 16);
        a.record(true, P);
        assert_eq!(a.interval(P), 4, "a success resets the interval");
        // Below the threshold: three skips, then a probe.
        let pattern = |a: &Adapt, n| (0..n).map(|_| a.should_spin(P)).collect::<Vec<bool>>();
        assert_eq!(pattern(&a, 4), [false, false, false, true]);
        // The probe fails: the next one comes after 8, then 16, then 16.
        a.record(false, P);
        assert_eq!(
            pattern(&a, 8),
            [false; 7].iter().copied().chain([true]).collect::<Vec<_>>()
        );
        a.record(false, P);
        assert_eq!(pattern(&a, 16).iter().filter(|&&x| x).count(), 1);
        a.record(false, P);
        assert_eq!(a.interval(P), 16, "capped");
        // Probe interval 1 spins every time.
        let every = Params {
            probe: 1,
            probe_max: 1,
            ..P
        };
        assert!(a.should_spin(every) && a.should_spin(every));
        // Successful probes: the score recovers, no more skips.
        for _ in 0..20 {
            a.record(true, P);
        }
        assert!((0..32).all(|_| a.should_spin(P)));
    }

    #[test]
    fn thread_hint_is_per_thread_and_settable() {
        set_adapt_score(3);
        assert_eq!(adapt_score(), 3);
        std::thread::spawn(|| assert_eq!(adapt_score(), ONE))
            .join()
            .unwrap();
        set_adapt_score(1000);
        assert_eq!(adapt_score(), ONE);
        record(&Tunables::DEFAULT, false);
        assert_eq!(adapt_score(), ONE - ONE / 8);
        set_adapt_score(ONE);
    }

    fn skipped() -> u32 {
        ADAPT.with(|a| a.skipped.get())
    }

    /// Contend once on a lock held by this thread until the contender has
    /// queued (WAITERS): its spin, if it spun, cannot have acquired.
    /// Returns the contender's score before and after.
    fn contend_once(m: &super::super::RawMutex) -> (u32, u32) {
        let t = m.lock();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let before = adapt_score();
                let t = m.lock();
                unsafe { m.unlock(t) };
                (before, adapt_score())
            });
            while !super::super::word::has_waiters(m.owner_word()) {
                std::thread::yield_now();
            }
            unsafe { m.unlock(t) };
            h.join().unwrap()
        })
    }

    #[test]
    fn a_failed_spin_lowers_the_score_in_a_real_lock() {
        let t = crate::tune::get();
        if t.mutex_adapt == 0 || t.mutex_spin == 0 || crate::osq::max_spinners() == 0 {
            return; // the hint (or spinning) is off in this environment
        }
        let m = super::super::RawMutex::<super::super::SpinOsq>::new();
        let (before, after) = contend_once(&m);
        assert_eq!(before, ONE);
        // The owner kept the lock until the contender queued: the spin failed
        // (or ended on HANDOFF, impossible without earlier waiters).
        assert_eq!(after, ONE - ONE / 8);
    }

    #[test]
    fn a_low_score_skips_to_the_wait_list() {
        let t = crate::tune::get();
        if t.mutex_adapt == 0 || t.mutex_adapt_probe < 2 || Params::of(t).threshold == 0 {
            return;
        }
        let m = super::super::RawMutex::<super::super::SpinOsq>::new();
        let t = m.lock();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                set_adapt_score(0);
                let t = m.lock();
                unsafe { m.unlock(t) };
                // Skipped (no spin recorded: the score is unchanged) and
                // counted towards the next probe.
                (adapt_score(), skipped())
            });
            while !super::super::word::has_waiters(m.owner_word()) {
                std::thread::yield_now();
            }
            unsafe { m.unlock(t) };
            assert_eq!(h.join().unwrap(), (0, 1));
        });
    }

    #[test]
    fn off_switch_always_spins() {
        let mut t = Tunables::DEFAULT;
        t.mutex_adapt = 0;
        set_adapt_score(0);
        assert!((0..100).all(|_| should_spin(&t)));
        t.mutex_adapt = 1;
        t.mutex_adapt_probe = 1000;
        assert!(!should_spin(&t));
        set_adapt_score(ONE);
        assert!(should_spin(&t));
    }
}

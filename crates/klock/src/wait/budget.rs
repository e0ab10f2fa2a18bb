//! Spinning: [`SpinBudget`] and [`spin_until`] (`docs/design.md`, principle P3:
//! budgets are nanoseconds read from `CLOCK_MONOTONIC` every few
//! iterations, never raw PAUSE counts; all locks spin through
//! [`spin_until`]), [`Backoff`], and [`PollBackoff`] with the TSC-timed
//! load that tells a cache hit from a miss.

#[cfg_attr(loom, allow(unused_imports))] // the budgets read the clock only outside loom
use super::clock::{cpu_relax, now_ns};

/// How many spin iterations pass between two clock reads.
#[cfg(not(loom))]
const CLOCK_EVERY: u32 = 8;

/// A time budget for spinning: created with a length in nanoseconds, it expires
/// once that much monotonic time has passed (the clock is read every few
/// iterations, so the first expiry check after creation is cheap). An
/// [`unbounded`](SpinBudget::unbounded) budget never expires.
///
/// Under loom the budget counts calls to [`expired`](SpinBudget::expired)
/// instead (one per nanosecond of budget).
///
/// ```
/// use klock::internal::wait::SpinBudget;
/// let mut b = SpinBudget::new(0);
/// assert!(b.expired());
/// let mut u = SpinBudget::unbounded();
/// assert!(!u.expired());
/// ```
#[derive(Clone, Debug)]
pub struct SpinBudget {
    /// Absolute deadline in `now_ns` time; `u64::MAX` = unbounded; 0 = not started.
    deadline: u64,
    len: u64,
    /// Iterations left until the next clock read (std) / iterations left (loom).
    countdown: u64,
}

impl SpinBudget {
    /// A budget of `ns` nanoseconds, starting at the first [`expired`](Self::expired) call.
    ///
    /// ```
    /// let b = klock::internal::wait::SpinBudget::new(10_000);
    /// assert_eq!(b.len_ns(), 10_000);
    /// ```
    #[inline]
    pub fn new(ns: u64) -> SpinBudget {
        SpinBudget {
            deadline: 0,
            len: ns,
            countdown: if cfg!(loom) { ns } else { 0 },
        }
    }

    /// A budget that never expires (native spinning).
    ///
    /// ```
    /// assert!(!klock::internal::wait::SpinBudget::unbounded().expired());
    /// ```
    #[inline]
    pub fn unbounded() -> SpinBudget {
        SpinBudget {
            deadline: u64::MAX,
            len: u64::MAX,
            countdown: u64::MAX,
        }
    }

    /// The budget's length in nanoseconds.
    ///
    /// ```
    /// assert_eq!(klock::internal::wait::SpinBudget::new(5).len_ns(), 5);
    /// ```
    #[inline]
    pub fn len_ns(&self) -> u64 {
        self.len
    }

    /// Restart the budget (full length again).
    ///
    /// ```
    /// let mut b = klock::internal::wait::SpinBudget::new(0);
    /// assert!(b.expired());
    /// b.restart();
    /// ```
    #[inline]
    pub fn restart(&mut self) {
        *self = if self.deadline == u64::MAX {
            SpinBudget::unbounded()
        } else {
            SpinBudget::new(self.len)
        };
    }

    /// Has the budget run out? Call once per spin iteration.
    ///
    /// ```
    /// let mut b = klock::internal::wait::SpinBudget::new(1_000_000_000);
    /// assert!(!b.expired());
    /// ```
    #[inline]
    pub fn expired(&mut self) -> bool {
        if self.deadline == u64::MAX {
            return false;
        }
        #[cfg(loom)]
        {
            if self.countdown == 0 {
                return true;
            }
            self.countdown -= 1;
            false
        }
        #[cfg(not(loom))]
        {
            if self.len == 0 {
                return true;
            }
            if self.countdown > 0 {
                self.countdown -= 1;
                return false;
            }
            self.countdown = CLOCK_EVERY as u64;
            let now = now_ns();
            if self.deadline == 0 {
                self.deadline = now.saturating_add(self.len).max(1);
                return false;
            }
            now >= self.deadline
        }
    }
}

/// Spin until `cond()` is true (returns `true`) or the budget runs out (returns
/// `false`). `cond` is evaluated before every [`cpu_relax`], so a condition that
/// is already true costs one call. This is the only spin loop in klock.
///
/// ```
/// use klock::internal::wait::{spin_until, SpinBudget};
/// let mut n = 0;
/// assert!(spin_until(&mut SpinBudget::unbounded(), || { n += 1; n == 3 }));
/// assert!(!spin_until(&mut SpinBudget::new(0), || false));
/// ```
#[inline]
pub fn spin_until(budget: &mut SpinBudget, mut cond: impl FnMut() -> bool) -> bool {
    loop {
        if cond() {
            return true;
        }
        if budget.expired() {
            return false;
        }
        cpu_relax();
    }
}

/// Exponential backoff between two bounds in nanoseconds, built on [`spin_until`]:
/// each [`wait_until`](Backoff::wait_until) spins for the current delay (or until
/// the condition holds) and doubles the delay up to the cap.
///
/// ```
/// let mut b = klock::internal::wait::Backoff::new(10, 40);
/// assert!(b.wait_until(|| true));
/// ```
#[derive(Clone, Debug)]
pub struct Backoff {
    cur: u64,
    max: u64,
}

impl Backoff {
    /// A backoff starting at `min_ns` and capped at `max_ns`.
    ///
    /// ```
    /// let _b = klock::internal::wait::Backoff::new(50, 4000);
    /// ```
    #[inline]
    pub fn new(min_ns: u64, max_ns: u64) -> Backoff {
        Backoff {
            cur: min_ns.min(max_ns),
            max: max_ns,
        }
    }

    /// Spin for the current delay or until `cond()` holds; then grow the delay.
    /// Returns whether `cond()` held.
    ///
    /// ```
    /// let mut b = klock::internal::wait::Backoff::new(0, 0);
    /// assert!(!b.wait_until(|| false));
    /// ```
    #[inline]
    pub fn wait_until(&mut self, cond: impl FnMut() -> bool) -> bool {
        let ok = spin_until(&mut SpinBudget::new(self.cur), cond);
        self.cur = (self.cur.max(1) * 2).min(self.max);
        ok
    }
}

/// Polling a lock word whose owner keeps it: wait between polls with a
/// delay that doubles from
/// `max_ns / POLL_BACKOFF_MIN_DIVISOR` up to `max_ns`. Each poll pulls the
/// word's cache line away from an owner that re-takes the lock at once (a
/// hot lock), so the longer one owner keeps it the less often a waiter
/// looks. [`restart`](PollBackoff::restart) when the owner changes or the
/// lock was seen free. `max_ns == 0` (and loom) polls continuously. Used by
/// the mutex's owner spinning and the unfair spinlock's waiters. No grace
/// period of continuous polling first: the cache-miss-timed poll makes a
/// hit cost the owner nothing, and a grace measured slower
/// (`docs/results/2026-11-25-no-starvation.md`).
///
/// ```
/// let mut p = klock::internal::wait::PollBackoff::new(0);
/// assert!(!p.pause()); // cap 0: never delays
/// ```
#[derive(Clone, Debug)]
pub struct PollBackoff {
    backoff: Backoff,
    min: u64,
    max: u64,
    /// Whether the last [`poll`](PollBackoff::poll) missed the cache (true
    /// until the first one, and for callers that load the word themselves).
    missed: bool,
}

impl PollBackoff {
    /// Delays up to `max_ns`, the first `max_ns / POLL_BACKOFF_MIN_DIVISOR`.
    ///
    /// ```
    /// let _ = klock::internal::wait::PollBackoff::new(16_000);
    /// ```
    #[inline]
    pub fn new(max_ns: u64) -> PollBackoff {
        Self::with_min(
            max_ns / crate::tune::fixed::POLL_BACKOFF_MIN_DIVISOR,
            max_ns,
        )
    }

    /// As [`new`](Self::new), with the first delay `min_ns` instead of
    /// `max_ns / POLL_BACKOFF_MIN_DIVISOR`.
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::with_min(50, 1000);
    /// assert!(p.pause());
    /// ```
    #[inline]
    pub fn with_min(min_ns: u64, max_ns: u64) -> PollBackoff {
        let max = if cfg!(loom) { 0 } else { max_ns };
        let min = min_ns.clamp(1, max.max(1));
        PollBackoff {
            backoff: Backoff::new(min, max),
            min,
            max,
            missed: true,
        }
    }

    /// Start over: the owner changed (or the lock was free).
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::new(1000);
    /// p.restart();
    /// ```
    #[inline]
    pub fn restart(&mut self) {
        self.backoff = Backoff::new(self.min, self.max);
    }

    /// Poll the lock word through `load` and remember whether the load
    /// missed the cache ([`load_missed`]): only a poll that missed makes the
    /// next [`pause`](PollBackoff::pause) wait. A hit means nobody wrote the
    /// word since this CPU last read it (the owner is holding, not
    /// re-taking), so polling again costs the owner nothing and sees the
    /// release at once.
    ///
    /// ```
    /// let w = std::sync::atomic::AtomicU32::new(3);
    /// let mut p = klock::internal::wait::PollBackoff::new(1000);
    /// assert_eq!(p.poll(|| w.load(std::sync::atomic::Ordering::Relaxed)), 3);
    /// ```
    #[inline]
    pub fn poll(&mut self, load: impl FnOnce() -> u32) -> u32 {
        let (v, missed) = load_missed(load);
        self.missed = missed;
        v
    }

    /// Called after a poll that found the lock still held (by the same
    /// owner): unless the last
    /// [`poll`](PollBackoff::poll) hit the cache, wait the current delay and
    /// double it. Returns whether it waited.
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::new(1000);
    /// assert!(p.pause());
    /// ```
    #[inline]
    pub fn pause(&mut self) -> bool {
        if self.max == 0 {
            return false;
        }
        if !self.missed {
            // A hit: nobody wrote the word since our last look (the owner is
            // holding, not re-taking): poll again at once.
            return false;
        }
        self.backoff.wait_until(|| false);
        true
    }
}

/// Run `load` (one load of a lock word) and say whether it **missed**: took
/// longer than an L1 hit by more than `KLOCK_POLL_MISS_TICKS` TSC
/// ticks, i.e. the line had been written by another CPU since this CPU last
/// read it. A poller that keeps missing while it sees the same owner is
/// bouncing the line of an owner that releases and re-takes the lock (a hot
/// lock): it should back off. A poller that hits is reading its own cached
/// copy, which costs the owner nothing: it may keep polling and see the
/// release at once (a long hold). Without a TSC (not x86-64), under loom,
/// or with the tunable at 0, every load counts as a miss, so callers back
/// off as before.
///
/// ```
/// let w = std::sync::atomic::AtomicU32::new(7);
/// let (v, _missed) = klock::internal::wait::load_missed(|| w.load(std::sync::atomic::Ordering::Relaxed));
/// assert_eq!(v, 7);
/// ```
#[inline]
pub fn load_missed(load: impl FnOnce() -> u32) -> (u32, bool) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        let margin = crate::tune::get().poll_miss_ticks;
        if margin != 0 {
            let (v, ticks) = tsc::time(load);
            return (v, ticks > tsc::hit_ticks().saturating_add(margin));
        }
    }
    (load(), true)
}

/// TSC timing of single loads (x86-64).
#[cfg(all(target_arch = "x86_64", not(loom)))]
mod tsc {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Calibrated L1-hit time of [`time`] in ticks (`u64::MAX` = not yet).
    static HIT: AtomicU64 = AtomicU64::new(u64::MAX);

    /// Run `f` between two fenced TSC reads; its result and the ticks.
    #[inline]
    pub(super) fn time(f: impl FnOnce() -> u32) -> (u32, u64) {
        // SAFETY: `lfence` and `rdtsc` are baseline x86-64 (SSE2) instructions
        // with no memory effects; the fences keep the load between the reads.
        unsafe {
            _mm_lfence();
            let t0 = _rdtsc();
            let v = f();
            _mm_lfence();
            let t1 = _rdtsc();
            (v, t1.wrapping_sub(t0))
        }
    }

    /// The median of a few timed loads of a word in this CPU's cache (the
    /// median, not the minimum: a virtual TSC may tick in steps of ~10 ns,
    /// and an L1 hit then reads as one or two steps).
    #[cold]
    fn calibrate() -> u64 {
        let local = std::sync::atomic::AtomicU32::new(0);
        let mut t = [0u64; CALIBRATION_LOADS];
        for x in t.iter_mut() {
            *x = time(|| local.load(Ordering::Relaxed)).1;
        }
        t.sort_unstable();
        let hit = t[CALIBRATION_LOADS / 2];
        // Relaxed: any thread's calibration is as good as another's.
        HIT.store(hit, Ordering::Relaxed);
        hit
    }

    /// Loads timed to calibrate: enough for a stable median.
    const CALIBRATION_LOADS: usize = 63;

    #[inline]
    pub(super) fn hit_ticks() -> u64 {
        // Relaxed: a cached number, recomputed if not yet stored.
        match HIT.load(Ordering::Relaxed) {
            u64::MAX => calibrate(),
            h => h,
        }
    }
}

/// Spin on `cond` within the wait-lock budget, then yield, until it returns
/// `Some`. Used for the protocol's short but unbounded waits on peers that may
/// be preempted (never for waiting on a lock holder). Built on the one spin
/// loop, [`spin_until`].
#[inline]
pub(crate) fn spin_then_yield<T>(mut cond: impl FnMut() -> Option<T>) -> T {
    let ns = crate::tune::get().waitlock_spin_ns;
    loop {
        let mut out = None;
        if spin_until(&mut SpinBudget::new(ns), || {
            out = cond();
            out.is_some()
        }) && let Some(v) = out
        {
            return v;
        }
        super::sched::relinquish();
    }
}

/// The sleeping locks' no-node fallback (no queue node: the slots are
/// exhausted or the nesting is deeper than the levels): `try_take` until it
/// succeeds (`true`) or `deadline` passes (`false`), spinning up to
/// `budget_ns` while the lock does not `look_free` and yielding between
/// rounds. Unfair but correct; written once for the mutex and the rwsem.
pub(crate) fn poll_unqueued(
    budget_ns: u64,
    deadline: Option<u64>,
    mut try_take: impl FnMut() -> bool,
    mut looks_free: impl FnMut() -> bool,
) -> bool {
    loop {
        if try_take() {
            return true;
        }
        if super::clock::remaining(deadline).is_none() {
            return false;
        }
        spin_until(&mut SpinBudget::new(budget_ns), &mut looks_free);
        super::sched::relinquish();
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::wait::test_support::HANG;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    /// A word this CPU just read is in its cache: among many timed polls
    /// of it, some hit, and a pause right after a hit does not wait. A poll
    /// that missed (the state before any poll) does. (Needs the TSC; other
    /// targets count every load as a miss.)
    #[test]
    fn poll_hit_skips_the_pause_miss_does_not() {
        let w = std::sync::atomic::AtomicU32::new(5);
        let mut p = PollBackoff::new(1_000);
        assert!(p.pause(), "before any poll, a pause waits");
        if !cfg!(target_arch = "x86_64") || crate::tune::get().poll_miss_ticks == 0 {
            return;
        }
        let hit = (0..1000).any(|_| {
            assert_eq!(p.poll(|| w.load(Ordering::Relaxed)), 5);
            !p.pause()
        });
        assert!(hit, "no poll of a cached word read as a hit");
    }

    /// A word another thread keeps writing misses: some timed polls of it
    /// read as misses, and the pause after them waits.
    #[test]
    fn poll_of_a_written_word_misses() {
        // The writer must run on another CPU (one cache would always hit).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if !cfg!(target_arch = "x86_64") || crate::tune::get().poll_miss_ticks == 0 || cpus < 2 {
            return;
        }
        let w = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (w, stop) = (w.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    w.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let mut p = PollBackoff::new(100);
        // Until the first miss (the event); the watchdog only ends a search
        // that never finds one.
        let deadline = std::time::Instant::now() + HANG;
        let mut missed = false;
        while !missed && std::time::Instant::now() < deadline {
            p.poll(|| w.load(Ordering::Relaxed));
            missed = p.pause();
            std::hint::spin_loop();
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(missed, "no poll of a word written by another thread missed");
    }

    #[test]
    fn budget_expires_and_unbounded_does_not() {
        let mut b = SpinBudget::new(1_000);
        let mut spins = 0u64;
        while !b.expired() {
            spins += 1;
            assert!(spins < 1_000_000_000);
        }
        let mut u = SpinBudget::unbounded();
        for _ in 0..1000 {
            assert!(!u.expired());
        }
        assert!(!spin_until(&mut SpinBudget::new(100), || false));
    }

    #[test]
    fn backoff_grows_to_cap() {
        let mut b = Backoff::new(1, 8);
        for _ in 0..10 {
            b.wait_until(|| false);
        }
        assert_eq!(b.cur, 8);
    }
}

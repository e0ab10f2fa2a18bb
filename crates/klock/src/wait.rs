//! How a thread waits and is woken: the one place with a spin loop and a futex call.
//!
//! * [`futex_wait`] / [`futex_wake`] (and the `_bitset` forms): private futexes on an
//!   `AtomicU32`. A wait returns a [`WaitOutcome`]; **every outcome may be spurious**,
//!   callers always re-check their condition (EINTR, EAGAIN, a wake meant for a
//!   previous user of the same address, ...).
//! * [`SpinBudget`] and [`spin_until`]: time-based spinning (`docs/design.md`,
//!   principle P3: budgets are nanoseconds read from `CLOCK_MONOTONIC` every
//!   few iterations, never raw PAUSE counts). All locks spin through [`spin_until`].
//! * [`cpu_relax`], [`yield_now`] and [`now_ns`].
//! * [`effective_cpus`]: min(online, affinity mask, cgroup quota), computed once.
//! * [`realtime`]: is the calling thread under `SCHED_FIFO`/`SCHED_RR`? Such a
//!   thread never spins or yields for a lock (it would keep a lower-priority
//!   holder off the CPU; the kernel's mutex and rwsem do not spin for
//!   real-time tasks either): INV-RT-NOSPIN.
//!
//! # Loom model
//!
//! Under `cfg(loom)` the futex is modelled exactly so that loom reports lost
//! wake-ups as deadlocks: a global table (a loom `Mutex`) holds the waiters,
//! keyed by the atomic's address and a bitset. `futex_wait` checks the value
//! *under the table lock* (as the kernel checks it under the hash-bucket lock),
//! registers itself and blocks on a loom `Condvar` until a `futex_wake` for its
//! address marks it. A waiter nobody wakes therefore blocks forever and loom
//! fails the model. A **timed** wait (`timeout` is `Some`) *may time out*, a
//! nondeterministic choice: it registers like an untimed wait, releases the
//! table, yields (a loom scheduling point) and then either a wake marked it
//! (`Woken`) or it deregisters and returns `TimedOut`; loom explores the wake
//! arriving before and after that point. There is no time under loom
//! ([`now_ns`] is 0), so the length of the timeout plays no part, and callers
//! treat a `TimedOut` return of a wait with a deadline as "the deadline has
//! passed" (true on real systems as well). Spurious wake-ups are not injected.
//! Spin budgets count iterations under loom (one iteration per budget
//! nanosecond), so models use budgets such as 0 or 1.
//!
//! ```
//! use klock::internal::wait::{futex_wait, futex_wake, WaitOutcome};
//! use std::sync::atomic::AtomicU32;
//! let w = AtomicU32::new(1);
//! // The value is not 0, so the wait returns at once.
//! assert_eq!(futex_wait(&w, 0, None), WaitOutcome::Mismatch);
//! assert_eq!(futex_wake(&w, 1), 0);
//! ```

use crate::sync::atomic::AtomicU32;
use std::time::Duration;

/// Why a futex wait returned. Callers must re-check their condition in every case.
///
/// ```
/// use klock::internal::wait::{futex_wait, WaitOutcome};
/// use std::sync::atomic::AtomicU32;
/// use std::time::Duration;
/// let w = AtomicU32::new(0);
/// let r = futex_wait(&w, 0, Some(Duration::from_micros(10)));
/// assert!(matches!(r, WaitOutcome::TimedOut | WaitOutcome::Woken | WaitOutcome::Interrupted));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Returned 0: woken by a wake (possibly one meant for someone else).
    Woken,
    /// The word did not hold the expected value (EAGAIN): nothing slept.
    Mismatch,
    /// Interrupted by a signal (EINTR).
    Interrupted,
    /// The timeout elapsed (ETIMEDOUT).
    TimedOut,
}

/// Bitset meaning "any waiter" for the `_bitset` calls.
///
/// ```
/// assert_eq!(klock::internal::wait::BITSET_ANY, u32::MAX);
/// ```
pub const BITSET_ANY: u32 = u32::MAX;

/// Sleep while `*word == expected` (private futex), at most `timeout`.
///
/// ```
/// use klock::internal::wait::{futex_wait, WaitOutcome};
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(futex_wait(&AtomicU32::new(7), 6, None), WaitOutcome::Mismatch);
/// ```
#[inline]
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> WaitOutcome {
    futex_wait_bitset(word, expected, BITSET_ANY, timeout)
}

/// Wake up to `n` waiters sleeping on `word`; returns how many were woken.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(klock::internal::wait::futex_wake(&AtomicU32::new(0), u32::MAX), 0);
/// ```
#[inline]
pub fn futex_wake(word: &AtomicU32, n: u32) -> u32 {
    futex_wake_bitset(word, n, BITSET_ANY)
}

#[cfg(not(loom))]
mod imp {
    use super::WaitOutcome;
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    pub(super) fn wait_bitset(
        word: &AtomicU32,
        expected: u32,
        bitset: u32,
        timeout: Option<Duration>,
    ) -> WaitOutcome {
        // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline.
        let ts = timeout.map(|d| {
            let deadline =
                super::now_ns().saturating_add(d.as_nanos().min(u64::MAX as u128) as u64);
            libc::timespec {
                tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
            }
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a live AtomicU32 for the duration of the call; the
        // kernel only reads it (atomically, under its hash-bucket lock). `tsp` is
        // null or points to a timespec on this stack frame. A zero bitset would be
        // EINVAL, so it is mapped to "any".
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
                expected,
                tsp,
                std::ptr::null::<u32>(),
                if bitset == 0 { u32::MAX } else { bitset },
            )
        };
        if r == 0 {
            return WaitOutcome::Woken;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => WaitOutcome::Mismatch,
            Some(libc::EINTR) => WaitOutcome::Interrupted,
            Some(libc::ETIMEDOUT) => WaitOutcome::TimedOut,
            // Anything else cannot happen for a valid private futex, except
            // where a seccomp filter denies futex (ENOSYS, EPERM): every wait
            // would return at once and every waiter would spin hot. Warn once
            // and degrade to a yielding wait; the caller re-checks.
            e => super::futex_unavailable("wait", e.unwrap_or(0)),
        }
    }

    pub(super) fn wake_bitset(word: &AtomicU32, n: u32, bitset: u32) -> u32 {
        let n = n.min(i32::MAX as u32);
        // SAFETY: FUTEX_WAKE does not access the memory behind the address for a
        // private futex; the address only selects the kernel hash bucket. Waking
        // an address whose object was just released is therefore harmless (at
        // worst a spurious wake for a later user of the address, which every
        // waiter tolerates) -- the same contract std's futex Mutex relies on.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE_BITSET | libc::FUTEX_PRIVATE_FLAG,
                n,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                if bitset == 0 { u32::MAX } else { bitset },
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            // EFAULT/EINVAL cannot happen for a live AtomicU32; ENOSYS/EPERM
            // (seccomp) can: waiters then yield instead of sleeping, so a
            // failed wake loses nothing; say so once.
            super::futex_unavailable("wake", e);
            return 0;
        }
        r as u32
    }
}

/// An unexpected futex error (seccomp's ENOSYS or EPERM, say): warn once on
/// stderr, then degrade the wait to a `sched_yield` (treated as a spurious
/// return, which every caller tolerates). Returns the outcome callers see.
#[cfg(not(loom))]
#[cold]
fn futex_unavailable(op: &str, errno: i32) -> WaitOutcome {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    // Relaxed: a once-only flag; no data is published with it.
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "klock: futex {op} failed ({}); waits degrade to sched_yield \
             (is futex blocked by a seccomp filter?)",
            std::io::Error::from_raw_os_error(errno)
        );
    }
    FUTEX_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    yield_now();
    WaitOutcome::Woken
}

/// Unexpected futex errors seen so far (see [`futex_errors`]).
#[cfg(not(loom))]
static FUTEX_ERRORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many futex calls failed with an unexpected error (ENOSYS, EPERM, ...)
/// in this process. Each made its wait a `sched_yield`; the first printed a
/// warning. 0 on a normal system.
///
/// ```
/// assert_eq!(klock::internal::wait::futex_errors(), 0);
/// ```
pub fn futex_errors() -> u64 {
    #[cfg(not(loom))]
    {
        // Relaxed: a statistic.
        FUTEX_ERRORS.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(loom)]
    {
        0
    }
}

#[cfg(loom)]
mod imp {
    //! Exact futex model: see the module docs.
    use super::WaitOutcome;
    use crate::sync::atomic::{AtomicU32, Ordering};
    use loom::sync::{Condvar, Mutex};
    use std::time::Duration;

    struct Waiter {
        id: u64,
        addr: usize,
        bitset: u32,
        woken: bool,
    }

    #[derive(Default)]
    struct Table {
        waiters: Vec<Waiter>,
        next_id: u64,
    }

    loom::lazy_static! {
        static ref TABLE: (Mutex<Table>, Condvar) = (Mutex::new(Table::default()), Condvar::new());
    }

    pub(super) fn wait_bitset(
        word: &AtomicU32,
        expected: u32,
        bitset: u32,
        timeout: Option<Duration>,
    ) -> WaitOutcome {
        let addr = word as *const AtomicU32 as usize;
        let (lock, cv) = &*TABLE;
        let mut t = lock.lock().unwrap();
        // The value check happens under the table lock, like the kernel's check
        // under the hash-bucket lock: a waker changes the word *before* taking
        // the table lock, so either we see the change or we are registered.
        if word.load(Ordering::SeqCst) != expected {
            return WaitOutcome::Mismatch;
        }
        let id = t.next_id;
        t.next_id += 1;
        t.waiters.push(Waiter {
            id,
            addr,
            bitset: if bitset == 0 { u32::MAX } else { bitset },
            woken: false,
        });
        if timeout.is_some() {
            // May time out: let the other threads run (a wake may arrive
            // now), then leave the table, woken or not. Being registered
            // across the yield is what makes a wake before the timeout count
            // (`futex_wake` returns it) and be seen as `Woken`.
            drop(t);
            loom::thread::yield_now();
            let mut t = lock.lock().unwrap();
            let i = t
                .waiters
                .iter()
                .position(|w| w.id == id)
                .expect("a timed waiter stays registered until it leaves");
            return if t.waiters.remove(i).woken {
                WaitOutcome::Woken
            } else {
                WaitOutcome::TimedOut
            };
        }
        loop {
            t = cv.wait(t).unwrap();
            if let Some(i) = t.waiters.iter().position(|w| w.id == id && w.woken) {
                t.waiters.remove(i);
                return WaitOutcome::Woken;
            }
        }
    }

    pub(super) fn wake_bitset(word: &AtomicU32, n: u32, bitset: u32) -> u32 {
        let addr = word as *const AtomicU32 as usize;
        let (lock, cv) = &*TABLE;
        let mut t = lock.lock().unwrap();
        let mut woken = 0;
        for w in t.waiters.iter_mut() {
            if woken == n {
                break;
            }
            if w.addr == addr && !w.woken && w.bitset & bitset != 0 {
                w.woken = true;
                woken += 1;
            }
        }
        if woken > 0 {
            cv.notify_all();
        }
        woken
    }
}

/// Sleep while `*word == expected`, for waiters whose `bitset` intersects the
/// waker's (FUTEX_WAIT_BITSET, private). Used to wake one ticket holder without
/// a herd. A zero bitset means "any".
///
/// ```
/// use klock::internal::wait::{futex_wait_bitset, WaitOutcome};
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(futex_wait_bitset(&AtomicU32::new(1), 0, 1 << 3, None), WaitOutcome::Mismatch);
/// ```
#[inline]
pub fn futex_wait_bitset(
    word: &AtomicU32,
    expected: u32,
    bitset: u32,
    timeout: Option<Duration>,
) -> WaitOutcome {
    imp::wait_bitset(word, expected, bitset, timeout)
}

/// Wake up to `n` waiters on `word` whose bitset intersects `bitset`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(klock::internal::wait::futex_wake_bitset(&AtomicU32::new(0), 1, 1 << 3), 0);
/// ```
#[inline]
pub fn futex_wake_bitset(word: &AtomicU32, n: u32, bitset: u32) -> u32 {
    imp::wake_bitset(word, n, bitset)
}

/// Monotonic microseconds truncated to 32 bits (wraps every 71 minutes:
/// compare two of them with `wrapping_sub`), for time stamps kept in a
/// 32-bit node word. 0 under loom.
#[inline]
pub(crate) fn now_us() -> u32 {
    (now_ns() / 1000) as u32
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC` via the vDSO, about 20 ns). Under
/// loom it returns 0: there is no time in a model.
///
/// ```
/// let a = klock::internal::wait::now_ns();
/// let b = klock::internal::wait::now_ns();
/// assert!(b >= a);
/// ```
#[inline]
pub fn now_ns() -> u64 {
    #[cfg(not(loom))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(loom)]
    {
        0
    }
}

/// The spin-wait hint (PAUSE). Under loom, a scheduling point.
///
/// ```
/// klock::internal::wait::cpu_relax();
/// ```
#[inline(always)]
pub fn cpu_relax() {
    crate::sync::spin_loop();
}

/// Time left until `deadline` (in [`now_ns`] time) for a futex wait:
/// `Some(None)` = no deadline (wait without timeout), `Some(Some(d))` = `d`
/// left, `None` = the deadline has passed. Shared by every timed lock.
///
/// ```
/// assert_eq!(klock::internal::wait::remaining(None), Some(None));
/// assert_eq!(klock::internal::wait::remaining(Some(0)), None);
/// ```
#[inline]
pub fn remaining(deadline: Option<u64>) -> Option<Option<Duration>> {
    match deadline {
        None => Some(None),
        Some(d) => {
            let now = now_ns();
            (now < d).then(|| Some(Duration::from_nanos(d - now)))
        }
    }
}

/// A `std::time::Instant` as a deadline in [`now_ns`] time (a past instant
/// maps to now). For the lock_api `*_until` methods.
///
/// ```
/// let d = klock::internal::wait::instant_to_ns(std::time::Instant::now());
/// assert!(d <= klock::internal::wait::now_ns());
/// ```
pub fn instant_to_ns(i: std::time::Instant) -> u64 {
    let now = std::time::Instant::now();
    let base = now_ns();
    match i.checked_duration_since(now) {
        Some(d) => base.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        None => base,
    }
}

/// A timeout as a deadline in [`now_ns`] time (saturating).
///
/// ```
/// let d = klock::internal::wait::deadline_after(std::time::Duration::from_millis(1));
/// assert!(d > klock::internal::wait::now_ns());
/// ```
pub fn deadline_after(t: Duration) -> u64 {
    now_ns().saturating_add(t.as_nanos().min(u64::MAX as u128) as u64)
}

/// Give the CPU to another runnable thread (`sched_yield`).
///
/// ```
/// klock::internal::wait::yield_now();
/// ```
#[inline]
pub fn yield_now() {
    crate::sync::yield_now();
}

/// A place among the threads of this process that are in a lock's yield
/// rounds (`sched_yield` + trylock before sleeping), held while yielding.
/// [`try_enter`](YieldSlot::try_enter) refuses once `cap` threads hold one:
/// a yielding thread stays runnable, and when more threads yield than there
/// are CPUs, a woken waiter queues for a CPU behind all of them (the
/// starvation at 128 threads on 2 CPUs). A refused thread sleeps on the
/// lock's wait list instead. Under loom every entry is granted.
///
/// ```
/// let a = klock::internal::wait::YieldSlot::try_enter(1);
/// assert!(a.is_some());
/// drop(a);
/// assert!(klock::internal::wait::YieldSlot::try_enter(0).is_some()); // 0 = no cap
/// ```
pub struct YieldSlot {
    /// Whether this place is counted in the gauge (a cap was given; never
    /// under loom, which has no gauge).
    #[cfg_attr(loom, allow(dead_code))]
    counted: bool,
}

#[cfg(not(loom))]
static YIELDERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl YieldSlot {
    /// Take a place if fewer than `cap` threads hold one (`cap` 0: always).
    #[inline]
    pub fn try_enter(cap: usize) -> Option<YieldSlot> {
        #[cfg(not(loom))]
        if cap != 0 {
            use std::sync::atomic::Ordering::Relaxed;
            // Relaxed: a gauge; nothing is published through it.
            if YIELDERS.fetch_add(1, Relaxed) >= cap {
                YIELDERS.fetch_sub(1, Relaxed);
                return None;
            }
            return Some(YieldSlot { counted: true });
        }
        let _ = cap;
        Some(YieldSlot { counted: false })
    }
}

impl Drop for YieldSlot {
    #[inline]
    fn drop(&mut self) {
        #[cfg(not(loom))]
        if self.counted {
            // Relaxed: see try_enter.
            YIELDERS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A real-time thread's pause in [`relinquish`]: long enough for a
/// lower-priority peer to be scheduled and finish a short protocol step.
#[cfg(not(loom))]
const RT_RELINQUISH_NS: u64 = 20_000;

/// Let any runnable thread have the CPU, for waits on a peer that may be
/// preempted: `sched_yield`, or, for a real-time thread ([`realtime`]; to it
/// `sched_yield` offers the CPU only to threads of its own priority), a
/// 20 µs sleep, so that a lower-priority peer can run (INV-RT-NOSPIN).
///
/// ```
/// klock::internal::wait::relinquish();
/// ```
#[inline]
pub fn relinquish() {
    #[cfg(not(loom))]
    if realtime() {
        std::thread::sleep(Duration::from_nanos(RT_RELINQUISH_NS));
        return;
    }
    yield_now();
}

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

/// Polling a lock word whose owner keeps it: poll continuously for a grace
/// period, then wait between polls with a delay that doubles from
/// `max_ns / POLL_BACKOFF_MIN_DIVISOR` up to `max_ns`. Each poll pulls the
/// word's cache line away from an owner that re-takes the lock at once (a
/// hot lock), so the longer one owner keeps it the less often a waiter
/// looks. [`restart`](PollBackoff::restart) when the owner changes or the
/// lock was seen free. `max_ns == 0` (and loom) polls continuously. Used by
/// the mutex's owner spinning and the unfair spinlock's waiters.
///
/// ```
/// let mut p = klock::internal::wait::PollBackoff::new(0, 0);
/// assert!(!p.pause()); // cap 0: never delays
/// ```
#[derive(Clone, Debug)]
pub struct PollBackoff {
    grace: SpinBudget,
    backoff: Backoff,
    min: u64,
    max: u64,
    /// Whether the last [`poll`](PollBackoff::poll) missed the cache (true
    /// until the first one, and for callers that load the word themselves).
    missed: bool,
}

impl PollBackoff {
    /// Continuous polling for `grace_ns`, then delays up to `max_ns`.
    ///
    /// ```
    /// let _ = klock::internal::wait::PollBackoff::new(400, 16_000);
    /// ```
    #[inline]
    pub fn new(grace_ns: u64, max_ns: u64) -> PollBackoff {
        Self::with_min(
            grace_ns,
            max_ns / crate::tune::fixed::POLL_BACKOFF_MIN_DIVISOR,
            max_ns,
        )
    }

    /// As [`new`](Self::new), with the first delay `min_ns` instead of
    /// `max_ns / POLL_BACKOFF_MIN_DIVISOR`.
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::with_min(0, 50, 1000);
    /// assert!(p.pause());
    /// ```
    #[inline]
    pub fn with_min(grace_ns: u64, min_ns: u64, max_ns: u64) -> PollBackoff {
        let max = if cfg!(loom) { 0 } else { max_ns };
        let min = min_ns.clamp(1, max.max(1));
        PollBackoff {
            grace: SpinBudget::new(grace_ns),
            backoff: Backoff::new(min, max),
            min,
            max,
            missed: true,
        }
    }

    /// Start over: the owner changed (or the lock was free).
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::new(0, 1000);
    /// p.restart();
    /// ```
    #[inline]
    pub fn restart(&mut self) {
        self.grace.restart();
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
    /// let mut p = klock::internal::wait::PollBackoff::new(0, 1000);
    /// assert_eq!(p.poll(|| w.load(std::sync::atomic::Ordering::Relaxed)), 3);
    /// ```
    #[inline]
    pub fn poll(&mut self, load: impl FnOnce() -> u32) -> u32 {
        let (v, missed) = load_missed(load);
        self.missed = missed;
        v
    }

    /// Called after a poll that found the lock still held (by the same
    /// owner): past the grace period, and unless the last
    /// [`poll`](PollBackoff::poll) hit the cache, wait the current delay and
    /// double it. Returns whether it waited.
    ///
    /// ```
    /// let mut p = klock::internal::wait::PollBackoff::new(0, 1000);
    /// assert!(p.pause());
    /// ```
    #[inline]
    pub fn pause(&mut self) -> bool {
        if self.max == 0 || !self.grace.expired() {
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

/// Parse a cgroup v2 `cpu.max` file ("quota period" or "max period") into a CPU
/// count (quota / period rounded up). `None` = no limit or unparsable.
///
/// ```
/// use klock::internal::wait::parse_cpu_max;
/// assert_eq!(parse_cpu_max("150000 100000\n"), Some(2));
/// assert_eq!(parse_cpu_max("max 100000"), None);
/// ```
pub fn parse_cpu_max(s: &str) -> Option<usize> {
    cpu_max_ratio(s).map(round_up_cpus)
}

/// Parse cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` contents into a CPU
/// count (rounded up). A quota of -1 means no limit (`None`).
///
/// ```
/// use klock::internal::wait::parse_cfs_quota;
/// assert_eq!(parse_cfs_quota("50000\n", "100000\n"), Some(1));
/// assert_eq!(parse_cfs_quota("-1", "100000"), None);
/// ```
pub fn parse_cfs_quota(quota: &str, period: &str) -> Option<usize> {
    quota_ratio(quota, period).map(round_up_cpus)
}

/// A v2 `cpu.max` ("quota period", "max period") as a fraction of CPUs.
fn cpu_max_ratio(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    quota_ratio(quota, it.next().unwrap_or("100000"))
}

/// quota / period in CPUs; `None` for "max", -1, 0 or garbage.
fn quota_ratio(quota: &str, period: &str) -> Option<f64> {
    let q: f64 = quota.trim().parse().ok()?;
    let p: f64 = period.trim().parse().ok()?;
    (q > 0.0 && p > 0.0).then_some(q / p)
}

/// Half a CPU of quota still runs one thread at a time.
fn round_up_cpus(cpus: f64) -> usize {
    (cpus.ceil() as usize).max(1)
}

/// Find this process's cgroup v2 path in `/proc/self/cgroup` contents ("0::/path").
#[cfg(not(loom))]
fn cgroup_v2_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

/// This process's cgroup CPU quota in CPUs (quota / period, not rounded),
/// read now: the smallest over its own group and every ancestor, cgroup v2
/// (`cpu.max`, the `0::` line of `/proc/self/cgroup`) and v1 (`cpu.cfs_quota_us`
/// under the `cpu` controller's mount, the process's own `cpu` group path).
/// `None` when no quota applies or none can be read.
///
/// ```
/// if let Some(q) = klock::internal::wait::cgroup_quota() {
///     assert!(q > 0.0);
/// }
/// ```
#[cfg(not(loom))]
pub fn cgroup_quota() -> Option<f64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut best: Option<f64> = None;
    let mut consider = |v: Option<f64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    // Every directory from `path` up to the hierarchy's root.
    let ancestors = |path: &str| {
        let mut out = Vec::new();
        let mut p = path.trim().trim_end_matches('/').to_string();
        loop {
            out.push(p.clone());
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => break,
            }
        }
        out
    };
    let pc = read("/proc/self/cgroup").unwrap_or_default();
    // cgroup v2: our own group and every ancestor up to the mount root.
    if let Some(path) = cgroup_v2_path(&pc) {
        for p in ancestors(path) {
            consider(read(&format!("/sys/fs/cgroup{p}/cpu.max")).and_then(|s| cpu_max_ratio(&s)));
        }
    }
    // cgroup v1: the `cpu` controller's group ("N:cpu,cpuacct:/path").
    let v1 = pc.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',').any(|c| c == "cpu").then_some(path)
    });
    for dir in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
        for p in ancestors(v1.unwrap_or("/")) {
            if let (Some(q), Some(per)) = (
                read(&format!("{dir}{p}/cpu.cfs_quota_us")),
                read(&format!("{dir}{p}/cpu.cfs_period_us")),
            ) {
                consider(quota_ratio(&q, &per));
            }
        }
    }
    best
}

#[cfg(not(loom))]
fn cgroup_cpus() -> Option<usize> {
    cgroup_quota().map(round_up_cpus)
}

#[cfg(not(loom))]
fn compute_effective_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let mut n = if online > 0 { online as usize } else { 1 };
    // SAFETY: `set` is a properly sized, zeroed cpu_set_t owned by this frame.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let c = libc::CPU_COUNT(&set);
            if c > 0 {
                n = n.min(c as usize);
            }
        }
    }
    if let Some(c) = cgroup_cpus() {
        n = n.min(c);
    }
    n.max(1)
}

/// Effective CPUs = min(online CPUs, CPUs in the affinity mask, cgroup v2
/// `cpu.max` quota/period rounded up (own group and ancestors), cgroup v1 CFS
/// quota). Computed once per process. Under loom: 2.
///
/// ```
/// assert!(klock::internal::wait::effective_cpus() >= 1);
/// ```
pub fn effective_cpus() -> usize {
    #[cfg(not(loom))]
    {
        static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        if let Some(&n) = CPUS.get() {
            return n;
        }
        // Fork handlers first, and outside the initialiser: their prepare
        // step finishes this computation before a fork (see crate::fork).
        crate::fork::register();
        *CPUS.get_or_init(compute_effective_cpus)
    }
    #[cfg(loom)]
    {
        2
    }
}

/// Does a cgroup CPU quota limit this process below its CPUs (online and in
/// its affinity mask)? Computed once, like [`effective_cpus`]. Under a quota
/// a thread that yields or spins spends the group's bandwidth, which the
/// lock holder then lacks (the reason .NET proposes to stop spin-waiting
/// under a quota). Under loom: `false`.
///
/// ```
/// let _limited: bool = klock::internal::wait::quota_limited();
/// ```
pub fn quota_limited() -> bool {
    #[cfg(not(loom))]
    {
        static LIMITED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if let Some(&l) = LIMITED.get() {
            return l;
        }
        // Fork handlers first, and outside the initialiser: their prepare
        // step finishes this computation before a fork (see crate::fork), so
        // a child never inherits it half done (every mutex slow path asks).
        crate::fork::register();
        *LIMITED.get_or_init(|| {
            // SAFETY: sysconf has no memory-safety preconditions.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64;
            cgroup_quota().is_some_and(|q| q < online)
        })
    }
    #[cfg(loom)]
    {
        false
    }
}

/// How long a thread trusts its cached scheduling policy ([`realtime`]) when
/// nobody announced a change ([`sched_changed`]): a program that switches
/// policies without the interposer is seen within this time.
#[cfg(not(loom))]
const RT_RECHECK_NS: u64 = 50_000_000;

/// Bumped by [`sched_changed`]; a thread's cached policy is stale when it was
/// read under another generation.
#[cfg(not(loom))]
static SCHED_GEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[cfg(not(loom))]
std::thread_local! {
    // (generation, read at now_ns, is real-time); read_at 0 = never read.
    static RT_CACHE: std::cell::Cell<(u32, u64, bool)> =
        const { std::cell::Cell::new((0, 0, false)) };
}

/// Is the calling thread running under a real-time policy (`SCHED_FIFO` or
/// `SCHED_RR`)? Lock slow paths ask this before spinning or yielding
/// (INV-RT-NOSPIN): a real-time waiter that spins or yields can keep a
/// lower-priority holder off the CPU for good. Cached per thread; the cache
/// is re-read after [`sched_changed`] or 50 ms (`RT_RECHECK_NS`). Costs a clock
/// read; call it on slow paths only. Always `false` under loom.
///
/// ```
/// // A test thread runs under SCHED_OTHER.
/// assert!(!klock::internal::wait::realtime());
/// ```
#[inline]
pub fn realtime() -> bool {
    #[cfg(not(loom))]
    {
        // Relaxed: a hint. A change announced before this load is seen; one
        // racing with it is seen by the next slow path.
        let generation = SCHED_GEN.load(std::sync::atomic::Ordering::Relaxed);
        let now = now_ns();
        let cached = RT_CACHE.try_with(|c| c.get()).unwrap_or((0, 0, false));
        if cached.1 != 0 && cached.0 == generation && now.wrapping_sub(cached.1) < RT_RECHECK_NS {
            return cached.2;
        }
        // SAFETY: sched_getscheduler(0) reads the calling thread's policy; no
        // memory is passed.
        let policy = unsafe { libc::sched_getscheduler(0) };
        let rt = policy == libc::SCHED_FIFO || policy == libc::SCHED_RR;
        let _ = RT_CACHE.try_with(|c| c.set((generation, now.max(1), rt)));
        rt
    }
    #[cfg(loom)]
    {
        false
    }
}

/// The calling thread's real-time priority (`sched_priority`, 1-99) if it
/// runs under `SCHED_FIFO`/`SCHED_RR` ([`realtime`]), else 0. A system call
/// for a real-time thread: call it only where that thread is about to
/// sleep. Always 0 under loom.
///
/// ```
/// assert_eq!(klock::internal::wait::rt_priority(), 0);
/// ```
pub fn rt_priority() -> u32 {
    #[cfg(not(loom))]
    {
        if !realtime() {
            return 0;
        }
        let mut p = libc::sched_param { sched_priority: 0 };
        // SAFETY: `p` is a valid out-parameter for the calling thread (0).
        let r = unsafe { libc::sched_getparam(0, &mut p) };
        if r == 0 {
            p.sched_priority.max(1) as u32
        } else {
            1
        }
    }
    #[cfg(loom)]
    {
        0
    }
}

/// Record the calling thread's own new policy (it just set it): `rt` is
/// whether it is `SCHED_FIFO`/`SCHED_RR`. Saves the re-read that
/// [`sched_changed`] would cost every thread; other threads' caches stay.
///
/// ```
/// klock::internal::wait::note_own_policy(false);
/// assert!(!klock::internal::wait::realtime());
/// ```
pub fn note_own_policy(rt: bool) {
    #[cfg(not(loom))]
    {
        // Relaxed: see `realtime`.
        let generation = SCHED_GEN.load(std::sync::atomic::Ordering::Relaxed);
        let _ = RT_CACHE.try_with(|c| c.set((generation, now_ns().max(1), rt)));
    }
    #[cfg(loom)]
    let _ = rt;
}

/// Announce that some thread's scheduling policy may have changed: every
/// thread re-reads its own at its next [`realtime`] call. The interposer
/// calls it from `pthread_setschedparam`, `sched_setscheduler` and friends.
///
/// ```
/// klock::internal::wait::sched_changed();
/// assert!(!klock::internal::wait::realtime());
/// ```
pub fn sched_changed() {
    #[cfg(not(loom))]
    // Relaxed: see `realtime`.
    SCHED_GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    /// The watchdog of the tests below that wait for an event (a sleeper
    /// asleep, woken, a poll that misses): far beyond the microseconds the
    /// event takes, so that only a hang (a lost wake-up) trips it.
    const HANG: Duration = Duration::from_secs(120);

    /// Join `t`, failing with `what` (what did not happen) if it has not
    /// finished within [`HANG`] instead of hanging the test run.
    fn join_or_fail(t: std::thread::JoinHandle<()>, what: &str) {
        let deadline = std::time::Instant::now() + HANG;
        while !t.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "watchdog: after {HANG:?}: {what}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        t.join().unwrap();
    }

    #[test]
    fn cpu_max_parser() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("max"), None);
        assert_eq!(parse_cpu_max("100000 100000"), Some(1));
        assert_eq!(parse_cpu_max("200000 100000"), Some(2));
        assert_eq!(parse_cpu_max("250000 100000"), Some(3));
        assert_eq!(parse_cpu_max("1000 100000"), Some(1));
        assert_eq!(parse_cpu_max("50000"), Some(1));
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(parse_cpu_max("abc 100000"), None);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max("100000 0"), None);
    }

    /// A word this CPU just read is in its cache: among many timed polls
    /// of it, some hit, and a pause right after a hit does not wait. A poll
    /// that missed (the state before any poll) does. (Needs the TSC; other
    /// targets count every load as a miss.)
    #[test]
    fn poll_hit_skips_the_pause_miss_does_not() {
        let w = std::sync::atomic::AtomicU32::new(5);
        let mut p = PollBackoff::new(0, 1_000);
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
        let mut p = PollBackoff::new(0, 100);
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
    fn yield_slots_are_capped() {
        let a = YieldSlot::try_enter(usize::MAX - 1).expect("a place");
        // Places taken by others (none by default) only lower what is left.
        let before = YIELDERS.load(Ordering::Relaxed);
        assert!(YieldSlot::try_enter(before).is_none(), "full at the cap");
        let b = YieldSlot::try_enter(before + 1).expect("one more place");
        drop(b);
        drop(a);
        assert!(YieldSlot::try_enter(0).is_some(), "0 = no cap");
    }

    #[test]
    fn cfs_parser() {
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_quota("400000", "100000"), Some(4));
        assert_eq!(parse_cfs_quota("150000", "100000"), Some(2));
        assert_eq!(parse_cfs_quota("x", "100000"), None);
        assert_eq!(parse_cfs_quota("100000", "0"), None);
    }

    #[test]
    fn cgroup_path() {
        let s = "12:cpu,cpuacct:/x\n0::/user.slice/a.scope\n";
        assert_eq!(cgroup_v2_path(s), Some("/user.slice/a.scope"));
        assert_eq!(cgroup_v2_path("1:name=systemd:/\n"), None);
    }

    #[test]
    fn effective_cpus_bounded_by_online() {
        let online = std::thread::available_parallelism().map_or(1, |n| n.get());
        let e = effective_cpus();
        assert!(e >= 1 && e <= online.max(1) * 2, "{e} vs {online}");
        assert_eq!(e, effective_cpus());
    }

    #[test]
    fn wait_mismatch_and_timeout() {
        let w = AtomicU32::new(5);
        assert_eq!(futex_wait(&w, 4, None), WaitOutcome::Mismatch);
        let r = futex_wait(&w, 5, Some(Duration::from_millis(1)));
        assert_ne!(r, WaitOutcome::Mismatch);
    }

    /// Liveness: a wake releases a sleeper. A lost wake-up leaves it asleep
    /// for good: the watchdog fails the test instead of hanging it.
    #[test]
    fn wake_releases_a_sleeper() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0, None);
            }
        });
        std::thread::sleep(Duration::from_millis(5));
        w.store(1, Ordering::Release);
        futex_wake(&w, u32::MAX);
        join_or_fail(
            t,
            "the sleeper was not released by futex_wake (lost wake-up)",
        );
    }

    /// Block until thread `tid` of this process is asleep (state `S`) and
    /// has entered its futex wait `n` times (`entered`); fail after
    /// [`HANG`] (it never did).
    fn until_asleep(tid: u32, entered: &AtomicU32, n: u32) {
        let path = format!("/proc/self/task/{tid}/stat");
        let deadline = std::time::Instant::now() + HANG;
        loop {
            let stat = std::fs::read_to_string(&path).unwrap();
            // The state follows the parenthesised command name.
            let state = stat.rsplit(") ").next().unwrap().chars().next();
            // Acquire: pairs with the sleeper's Release increment.
            if entered.load(Ordering::Acquire) >= n && state == Some('S') {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "watchdog: after {HANG:?}: the sleeper never entered futex wait {n} and slept"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn bitset_wakes_only_matching() {
        // The sleeper waits with bitset 1<<4 while the word stays 0. A wake
        // with a disjoint bitset must find nobody (returns 0, the sleeper
        // stays asleep); a matching one must wake exactly it (returns 1).
        // A plain wake that ignored the bitset would return 1 the first time.
        let w = Arc::new(AtomicU32::new(0));
        let entered = Arc::new(AtomicU32::new(0));
        let tid = Arc::new(AtomicU32::new(0));
        let (w2, e2, t2) = (w.clone(), entered.clone(), tid.clone());
        let t = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            t2.store(unsafe { libc::gettid() } as u32, Ordering::Release);
            while w2.load(Ordering::Acquire) == 0 {
                // Release: pairs with `until_asleep`'s Acquire load.
                e2.fetch_add(1, Ordering::Release);
                futex_wait_bitset(&w2, 0, 1 << 4, None);
            }
        });
        let tid = loop {
            // Acquire: pairs with the sleeper's Release store.
            match tid.load(Ordering::Acquire) {
                0 => std::thread::yield_now(),
                t => break t,
            }
        };
        until_asleep(tid, &entered, 1);
        assert_eq!(
            futex_wake_bitset(&w, u32::MAX, 1 << 5),
            0,
            "disjoint bitset woke a waiter"
        );
        until_asleep(tid, &entered, 1);
        assert_eq!(entered.load(Ordering::Acquire), 1, "the sleeper woke");
        assert_eq!(
            futex_wake_bitset(&w, u32::MAX, 1 << 4),
            1,
            "matching bitset woke nobody"
        );
        // The woken sleeper finds the word still 0 and sleeps again.
        until_asleep(tid, &entered, 2);
        // Release: pairs with the sleeper's Acquire load of the word.
        w.store(1, Ordering::Release);
        futex_wake(&w, u32::MAX);
        join_or_fail(
            t,
            "the sleeper was not released by futex_wake (lost wake-up)",
        );
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
    fn unexpected_futex_error_degrades_to_a_yield() {
        let before = futex_errors();
        // What a seccomp-denied futex returns: the wait degrades to a yield
        // and reports a (spurious) wake, so the caller re-checks.
        assert_eq!(futex_unavailable("wait", libc::ENOSYS), WaitOutcome::Woken);
        assert_eq!(futex_unavailable("wake", libc::EPERM), WaitOutcome::Woken);
        assert_eq!(futex_errors(), before + 2);
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

//! Private futexes on an `AtomicU32`: [`futex_wait`] / [`futex_wake`] and
//! the `_bitset` forms, the one place klock calls the futex system call. A
//! wait returns a [`WaitOutcome`]; **every outcome may be spurious**,
//! callers always re-check their condition (EINTR, EAGAIN, a wake meant for
//! a previous user of the same address, ...).
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
                crate::wait::now_ns().saturating_add(d.as_nanos().min(u64::MAX as u128) as u64);
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
    super::yield_now();
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

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::wait::test_support::{HANG, join_or_fail};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

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
    fn unexpected_futex_error_degrades_to_a_yield() {
        let before = futex_errors();
        // What a seccomp-denied futex returns: the wait degrades to a yield
        // and reports a (spurious) wake, so the caller re-checks.
        assert_eq!(futex_unavailable("wait", libc::ENOSYS), WaitOutcome::Woken);
        assert_eq!(futex_unavailable("wake", libc::EPERM), WaitOutcome::Woken);
        assert_eq!(futex_errors(), before + 2);
    }
}

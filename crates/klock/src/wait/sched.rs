//! Scheduling: [`yield_now`], [`relinquish`], and [`realtime`]: is the calling thread under
//! `SCHED_FIFO`/`SCHED_RR`? Such a thread never spins or yields for a lock
//! (it would keep a lower-priority holder off the CPU; the kernel's mutex
//! and rwsem do not spin for real-time tasks either): INV-RT-NOSPIN.

#[cfg(not(loom))]
use super::clock::now_ns;
#[cfg(not(loom))]
use std::time::Duration;

/// Give the CPU to another runnable thread (`sched_yield`).
///
/// ```
/// klock::internal::wait::yield_now();
/// ```
#[inline]
pub fn yield_now() {
    crate::sync::yield_now();
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

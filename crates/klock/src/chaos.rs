//! Preemption injection (cargo feature `chaos`; `docs/design.md`, principle P15).
//!
//! A user thread can be preempted on any instruction. The races that matter
//! most need a preemption inside a window a few instructions wide: after a
//! releasing RMW and before the releaser's next access, between a waiter's
//! state store and its `futex_wait`, between two edits of a wait list, around
//! the fences of a Dekker pair. Every such window in klock is marked with
//! [`point`]. With the `chaos` feature each mark injects, at random, nothing,
//! a `sched_yield`, or a sleep of 1-200 µs, so that torture tests reach those
//! interleavings within seconds instead of once a month in production.
//! Without the feature [`point`] is an empty `#[inline(always)]` function: the
//! marks compile to nothing.
//!
//! The randomness is a per-thread xorshift generator seeded from one process
//! seed (`KLOCK_CHAOS_SEED`, else the clock) and a per-thread counter. The seed
//! is printed to stderr the first time a mark fires and is available as
//! [`seed`], so a failing torture test can print it. `KLOCK_CHAOS_PERMILLE`
//! sets how often a mark injects anything (see [`crate::tune`]).
//!
//! Under loom the marks do nothing: loom explores preemptions itself.
//!
//! ```
//! // Outside the `chaos` feature this is a no-op; with it, a random delay.
//! klock::internal::chaos::point(klock::internal::chaos::Site::AfterRelease);
//! ```

/// The kind of window a mark sits in (for documentation and for statistics
/// of where delays were injected; the injection is the same for every kind).
///
/// ```
/// assert_ne!(klock::internal::chaos::Site::AfterRelease, klock::internal::chaos::Site::BeforeSleep);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Right after a releasing RMW (unlock, grant, hand-over): the lock may be
    /// taken, used and left by another thread before the releaser continues.
    AfterRelease,
    /// Between a waiter's state store (or re-arm) and its `futex_wait`.
    BeforeSleep,
    /// Right after a waiter returns from `futex_wait`, before it re-checks.
    AfterWake,
    /// Between two edits of a wait list or queue (link, unlink, splice).
    ListEdit,
    /// Around the full fence of a Dekker (store-buffering) pair.
    Fence,
}

/// Mark a preemption window. A no-op unless the `chaos` feature is on.
///
/// ```
/// klock::internal::chaos::point(klock::internal::chaos::Site::ListEdit);
/// ```
#[inline(always)]
pub fn point(_site: Site) {
    #[cfg(all(feature = "chaos", not(loom)))]
    imp::inject();
}

/// The process's chaos seed (0 when the feature is off). Print it when a test
/// fails; rerun with `KLOCK_CHAOS_SEED=<seed>` to replay the same per-thread
/// sequences of delays (thread scheduling still differs).
///
/// ```
/// let _ = klock::internal::chaos::seed();
/// ```
pub fn seed() -> u64 {
    #[cfg(all(feature = "chaos", not(loom)))]
    {
        imp::seed()
    }
    #[cfg(not(all(feature = "chaos", not(loom))))]
    {
        0
    }
}

/// Is preemption injection compiled in?
///
/// ```
/// assert_eq!(klock::internal::chaos::ENABLED, cfg!(feature = "chaos"));
/// ```
pub const ENABLED: bool = cfg!(all(feature = "chaos", not(loom)));

#[cfg(all(feature = "chaos", not(loom)))]
mod imp {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Longest injected sleep: long enough for another thread to run a whole
    /// lock/unlock/leave cycle (and a futex round trip) inside the window.
    const MAX_SLEEP_US: u64 = 200;
    /// Of the injections, one in this many is a sleep; the rest are yields.
    const SLEEP_ONE_IN: u64 = 4;

    static SEED: OnceLock<u64> = OnceLock::new();
    static THREADS: AtomicU64 = AtomicU64::new(0);

    /// At a fork: finish the seed (see `crate::fork`).
    static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
        finish: || {
            let _ = seed();
        },
        ..crate::fork::Hooks::NONE
    };

    pub(super) fn seed() -> u64 {
        if let Some(&s) = SEED.get() {
            return s;
        }
        // The tunables and the fork hooks first, outside the initialiser
        // (see crate::fork).
        let configured = crate::tune::get().chaos_seed;
        crate::fork::install(crate::fork::Slot::Chaos, &FORK_HOOKS);
        *SEED.get_or_init(|| {
            let s = match configured {
                0 => crate::wait::now_ns() | 1,
                s => s,
            };
            eprintln!("klock chaos: seed {s} (replay with KLOCK_CHAOS_SEED={s})");
            s
        })
    }

    std::thread_local! {
        static RNG: Cell<u64> = const { Cell::new(0) };
    }

    fn next() -> u64 {
        RNG.try_with(|r| {
            let mut x = r.get();
            if x == 0 {
                // Relaxed: a unique-number counter, nothing is published.
                let t = THREADS.fetch_add(1, Ordering::Relaxed);
                x = (seed() ^ t.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.set(x);
            x
        })
        .unwrap_or(0)
    }

    #[inline(never)]
    pub(super) fn inject() {
        let permille = crate::tune::get().chaos_permille as u64;
        let r = next();
        if r % 1000 >= permille {
            return;
        }
        let r = r / 1000;
        if r.is_multiple_of(SLEEP_ONE_IN) {
            let us = 1 + (r / SLEEP_ONE_IN) % MAX_SLEEP_US;
            std::thread::sleep(std::time::Duration::from_micros(us));
        } else {
            std::thread::yield_now();
        }
    }
}

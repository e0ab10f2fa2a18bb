//! Crate-private shims: every lock and mechanism uses `crate::sync::*` so that
//! the same code runs on `std` normally and on `loom` under `cfg(loom)`.
//!
//! Statistics (`stat`) deliberately use `std` atomics even under loom: they are
//! not part of any algorithm and would only enlarge loom's state space.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic;

#[cfg(loom)]
pub(crate) use loom::sync::atomic;

#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::thread_local;

/// The CPU's spin-wait hint (PAUSE on x86). Under loom, a yield point.
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::hint::spin_loop();
}

/// Give the CPU away (sched_yield). Under loom, a yield point.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Read `a` inside a wait loop. Natively a plain load. Under loom a plain
/// load in a loop may return the same stale value forever (real hardware makes
/// stores visible eventually), which loom would report as a livelock; a failed
/// `compare_exchange` reads the newest value without storing, so `peek` uses
/// one with an expected value no klock word holds (`u32::MAX`; were it there,
/// the "exchange" would rewrite the same value).
#[inline(always)]
pub(crate) fn peek(a: &atomic::AtomicU32, ord: atomic::Ordering) -> u32 {
    #[cfg(loom)]
    {
        match a.compare_exchange(u32::MAX, u32::MAX, atomic::Ordering::AcqRel, ord) {
            Ok(v) | Err(v) => v,
        }
    }
    #[cfg(not(loom))]
    {
        a.load(ord)
    }
}

/// Store `v` into a word another thread spins on. Natively a plain store;
/// under loom a `swap`, because loom orders a plain store only after the
/// stores its thread has seen (a partial modification order), so a spinner's
/// RMW could keep reading an older value that real hardware would have
/// overwritten; a swap reads (and so follows) the newest value.
#[inline(always)]
pub(crate) fn publish(a: &atomic::AtomicU32, v: u32, ord: atomic::Ordering) {
    #[cfg(loom)]
    {
        a.swap(v, ord);
    }
    #[cfg(not(loom))]
    {
        a.store(v, ord);
    }
}

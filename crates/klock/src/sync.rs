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

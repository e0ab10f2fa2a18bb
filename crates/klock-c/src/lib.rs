//! klock's C ABI. `include/klock.h` declares the `klock_*` functions
//! ([`ffi`], documented in `docs/c.md`); [`core`] holds the pthread
//! semantics they share with the LD_PRELOAD interposer (`klock-preload`);
//! [`spin`] is the C spinlock (`klock_spinlock_t`).

pub mod core;
pub mod ffi;
pub mod spin;

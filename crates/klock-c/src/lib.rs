//! klock's C ABI. `include/klock.h` declares the `klock_*` functions (see
//! `docs/c.md`); [`core`] holds the pthread semantics they share with the
//! LD_PRELOAD interposer (`klock-preload`).

pub mod core;

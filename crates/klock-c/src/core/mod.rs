//! pthread semantics on klock's locks, written once for both C front ends:
//! the `klock_*` functions of `klock.h` ([`crate`]'s `ffi`) and the
//! `pthread_*` interposer (`klock-preload`), which casts glibc's objects to
//! these layouts in place.
//!
//! Every function returns an errno-style code (0 on success): EBUSY, EINVAL,
//! ETIMEDOUT, EPERM, EDEADLK, EAGAIN, as pthread's do, and never panics on
//! bad input.
//!
//! * [`time`]: `timespec` deadlines on a chosen clock -> klock deadlines.
//! * [`mutex`]: [`mutex::KMutex`], a klock mutex plus kind and recursion
//!   depth (normal, recursive, error-checking), 20 bytes, laid out so that
//!   the kind sits where glibc keeps `__kind` (offset 16).
//! * [`cond`]: [`cond::KCond`], klock's wait-morphing condvar plus the
//!   clock of timed waits; waits in three steps so that a caller can sleep
//!   cancellably in C.
//! * [`rwlock`]: [`rwlock::KRwLock`], klock's rwsem with pthread's one
//!   unlock, recursive read locks and EDEADLK.

pub mod cond;
pub mod mutex;
pub mod rwlock;
pub mod time;

/// Errno values, re-exported for the front ends.
pub use libc::{EAGAIN, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

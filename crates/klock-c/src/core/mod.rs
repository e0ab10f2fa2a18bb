//! pthread semantics on klock's locks, written once for both C front ends:
//! the `klock_*` functions of `klock.h` ([`crate`]'s `ffi`) and the
//! `pthread_*` interposer (`klock-preload`), which casts glibc's objects to
//! these layouts in place.
//!
//! Every function returns an errno-style code (0 on success): EBUSY, EINVAL,
//! ETIMEDOUT, EPERM, EDEADLK, EAGAIN, as pthread's do, and never panics on
//! bad input (klock's `try_` forms report its refusals as values; a
//! corrupted lock word klock detects aborts with one line, not a panic).
//!
//! * [`how`]: [`how::How`], how an acquisition waits (block, try, until a
//!   deadline on a clock): the one vocabulary from the front ends' entry
//!   points down to the cores' `acquire`, `read` and `write`.
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
pub mod how;
pub mod mutex;
pub mod rwlock;
pub mod time;

/// Errno values, re-exported for the front ends.
pub use libc::{EAGAIN, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

use std::sync::atomic::{AtomicBool, Ordering};

/// Write `line` to stderr once per process (the first caller to find `flag`
/// clear prints). One raw `write` system call: no allocation, no lock, and
/// no pthread cancellation point (glibc's `write` wrapper is one; the C
/// functions promise none). Errors (a closed stderr) are ignored.
pub(crate) fn warn_once(flag: &AtomicBool, line: &[u8]) {
    // Relaxed: only decides which thread prints.
    if flag.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: `line` is a valid buffer of `line.len()` bytes for the call;
    // write(2) on fd 2 reads it and nothing else.
    unsafe { libc::syscall(libc::SYS_write, 2, line.as_ptr(), line.len()) };
}

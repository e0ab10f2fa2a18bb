//! The validator's settings: `KLOCK_LOCKDEP` (off, report, abort) and
//! `KLOCK_LOCKDEP_FILE`, read once without allocating, ignored in
//! secure-execution mode; and the fork hooks that hold the graph lock
//! across `fork()`.

use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

use super::report;

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const REPORT: u8 = 2;
const ABORT: u8 = 3;

/// What `KLOCK_LOCKDEP` asked for (read once). Relaxed: a pure function of
/// the environment.
static STATE: AtomicU8 = AtomicU8::new(UNREAD);

/// Is validation on? One relaxed load once the setting is read:
/// `KLOCK_LOCKDEP=1` (or `report`) reports, `abort` reports and aborts, `0`
/// is off; unset is off, except in a build with klock's `lockdep` feature,
/// where it is on. Off in secure-execution mode (set-user-ID programs).
#[inline]
pub fn enabled() -> bool {
    match STATE.load(Relaxed) {
        UNREAD => read_setting() >= REPORT,
        s => s >= REPORT,
    }
}

#[cold]
fn read_setting() -> u8 {
    let default = if cfg!(feature = "lockdep") {
        REPORT
    } else {
        OFF
    };
    let s = match env(c"KLOCK_LOCKDEP") {
        None => default,
        Some(b"0" | b"off") => OFF,
        Some(b"1" | b"report" | b"on") => REPORT,
        Some(b"abort") => ABORT,
        Some(_) => {
            report::write_out(
                b"klock: KLOCK_LOCKDEP: expected 0, 1, report or abort; validation stays off\n",
                None,
            );
            OFF
        }
    };
    if s >= REPORT {
        install_fork_hooks();
        warm_up_backtrace();
    }
    match STATE.compare_exchange(UNREAD, s, Relaxed, Relaxed) {
        Ok(_) => s,
        Err(won) => won,
    }
}

/// Force validation on or off for this process, before or after the
/// environment was read (tools and tests). `abort` as `KLOCK_LOCKDEP=abort`.
pub fn set_enabled(on: bool, abort: bool) {
    let s = match (on, abort) {
        (false, _) => OFF,
        (true, false) => REPORT,
        (true, true) => ABORT,
    };
    if on {
        install_fork_hooks();
        warm_up_backtrace();
    }
    STATE.store(s, Relaxed);
}

/// A `KLOCK_*` variable, without allocating (this may run inside a lock
/// call, inside the program's allocator); nothing in secure-execution mode.
fn env(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    if crate::tune::secure() {
        return None;
    }
    // SAFETY: a NUL-terminated name; getenv's result lives until the
    // environment changes, which programs do not do to KLOCK_* variables.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: getenv returns null or a NUL-terminated string.
    (!p.is_null()).then(|| unsafe { crate::symbolize::cstr_bytes(p) })
}

/// The first `backtrace()` loads the unwinder (`dlopen`): do it now, outside
/// any lock the program holds.
fn warm_up_backtrace() {
    let mut frames = [core::ptr::null_mut(); 2];
    // SAFETY: a writable array of 2 pointers.
    unsafe { libc::backtrace(frames.as_mut_ptr(), 2) };
}

/// Does a report abort the process (`KLOCK_LOCKDEP=abort`)?
pub(super) fn aborts() -> bool {
    STATE.load(Relaxed) == ABORT
}

/// `KLOCK_LOCKDEP_FILE`, if set (and not in secure-execution mode).
pub(super) fn report_file() -> Option<&'static [u8]> {
    env(c"KLOCK_LOCKDEP_FILE")
}

/// Is validation on, without reading the setting (for [`forget`]: a lock
/// that ends before anything read the setting has no identity to forget).
///
/// [`forget`]: super::forget
pub(super) fn on_if_read() -> bool {
    STATE.load(Relaxed) >= REPORT
}

/// Hold the graph lock across a fork (a child must not inherit it taken).
fn install_fork_hooks() {
    #[cfg(not(loom))]
    crate::fork::install(crate::fork::Slot::Lockdep, &FORK_HOOKS);
}

#[cfg(not(loom))]
static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    lock: || super::graph::GRAPH.raw_lock(),
    unlock: fork_unlock,
    ..crate::fork::Hooks::NONE
};

/// atfork parent/child: release the graph lock the prepare hook took.
///
/// # Safety
///
/// This thread took the lock in the prepare hook and has not released it.
#[cfg(not(loom))]
unsafe fn fork_unlock() {
    // SAFETY: the caller's contract is `raw_unlock`'s.
    unsafe { super::graph::GRAPH.raw_unlock() }
}

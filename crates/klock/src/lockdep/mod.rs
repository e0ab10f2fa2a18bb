//! Lock-order validation ("lockdep"): the kernel's idea for user space. Each
//! thread's held locks are known ([`held`]); taking lock `L` while holding `H`
//! records the edge `H -> L` the first time it is seen ([`graph`]), and an
//! edge that closes a cycle is reported ([`report`]) as a `possible
//! deadlock`, long before the unlucky interleaving happens.
//!
//! Layers: this file holds the settings and the hooks a lock calls; `held`,
//! `ids` (lock identity), `graph` (edges and the cycle search) and `report`
//! (text and output) sit below it and do not call back up; `region` maps
//! their tables.
//!
//! **The rules** (docs/lockdep.md):
//! * a try that can fail creates no wait edge, but the lock counts as held;
//! * a recursive relock (a recursive mutex, a second read hold) is no edge;
//! * read-then-write and write-then-read orders can deadlock; read-read orders
//!   cannot on a reader-preferring lock ([`Mode::ReadPassing`]) but can on one
//!   whose readers queue behind a waiting writer ([`Mode::Read`]);
//! * a condvar wait releases and retakes its mutex (the caller calls
//!   [`released`], then [`acquire`]).
//!
//! **Cost**: with validation off, every hook is one relaxed load
//! ([`enabled`]); on, an acquisition reads the thread's held entries and
//! probes the edge set once per held lock it checks (the top one, and those
//! below it down to the first one that was waited for); only an edge never
//! seen takes the graph lock.
//!
//! ```
//! use klock::internal::lockdep::{self, Mode};
//! // The interposer's and klock's own locks call these; shown here by hand.
//! if lockdep::enabled() {
//!     let (a, b) = (0x1000usize, 0x2000usize);
//!     let (la, lb) = (lockdep::lock_at(a).unwrap(), lockdep::lock_at(b).unwrap());
//!     let lock = |l| lockdep::acquire(l, Mode::Write, false, false, || 0, |r| *r == 0);
//!     lock(la);
//!     lock(lb);
//!     lockdep::released(lb);
//!     lockdep::released(la);
//! }
//! ```

mod graph;
mod held;
mod ids;
mod region;
mod report;

use core::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

/// How an acquisition holds (and waits for) its lock, as far as a deadlock
/// is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Exclusive: a mutex, a spinlock, a write lock.
    Write,
    /// Shared, on a lock whose new readers queue behind a waiting writer
    /// (glibc's `PREFER_WRITER_NONRECURSIVE_NP`, klock's fair rwsem).
    Read,
    /// Shared, on a reader-preferring lock: a reader never waits while the
    /// lock is read-held (glibc's default kind).
    ReadPassing,
}

impl Mode {
    /// Shared?
    pub fn is_read(self) -> bool {
        self != Mode::Write
    }
}

/// A lock instance's identity, from [`lock_stamped`] or [`lock_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock(u32);

// ---------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const REPORT: u8 = 2;
const ABORT: u8 = 3;

/// What `KLOCK_LOCKDEP` asked for (read once). Relaxed: a pure function of
/// the environment.
static STATE: AtomicU8 = AtomicU8::new(UNREAD);
static REPORTS: AtomicU64 = AtomicU64::new(0);

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
        crate::fork::install(crate::fork::Slot::Lockdep, &FORK_HOOKS);
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
        crate::fork::install(crate::fork::Slot::Lockdep, &FORK_HOOKS);
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

/// Cycles reported so far in this process.
pub fn reports() -> u64 {
    REPORTS.load(Relaxed)
}

/// Locks not validated because the identity tables were full.
pub fn untracked() -> usize {
    ids::untracked()
}

// ---------------------------------------------------------------------------
// Identity
// ---------------------------------------------------------------------------

/// The identity of the lock at `addr` whose object keeps it in four spare
/// bytes `stamp`, zero in a newly initialised or reused object (see
/// docs/lockdep.md). `None` when validation cannot track it.
#[inline]
pub fn lock_stamped(stamp: &core::sync::atomic::AtomicU32, addr: usize) -> Option<Lock> {
    ids::stamped(stamp, addr).map(Lock)
}

/// The identity already stamped in `stamp` (a release; never makes one).
#[inline]
pub fn lock_stamped_known(stamp: &core::sync::atomic::AtomicU32) -> Option<Lock> {
    ids::stamped_known(stamp).map(Lock)
}

/// The identity of the lock at `addr`, kept by address (no spare bytes).
#[inline]
pub fn lock_at(addr: usize) -> Option<Lock> {
    ids::at(addr).map(Lock)
}

/// The identity the lock at `addr` has, if any (a release; never makes one).
#[inline]
pub fn lock_at_known(addr: usize) -> Option<Lock> {
    ids::at_known(addr).map(Lock)
}

/// The lock at `addr` (kept by address) ends: init, destroy or drop. Its
/// next use is a new lock.
pub fn forget(addr: usize) {
    if STATE.load(Relaxed) >= REPORT {
        ids::forget(addr);
    }
}

// ---------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------

/// Does a thread holding `h` need new edges to wait for `lock` in `mode`?
/// Only the held locks down to the first one that was waited for are
/// checked: below it, the order is already known (its own edges); below a
/// tried one it is not. A relock of a held lock adds none: recursive, or one
/// that fails or self-deadlocks, which is not an order between two locks.
#[inline(always)]
fn needs_edges(h: &held::Held, lock: Lock, mode: Mode) -> bool {
    let held = h.entries();
    if held.is_empty() || h.busy || h.find(lock.0).is_some() {
        return false;
    }
    for e in held.iter().rev() {
        if !graph::seen(graph::key(e.id, e.mode, lock.0, mode)) {
            return true;
        }
        if !e.tried {
            return false;
        }
    }
    false
}

/// The keys [`needs_edges`] found missing, copied out of `h` for the slow
/// path (which may re-enter the hooks, so holds no borrow of `h`).
fn missing_edges(h: &held::Held, lock: Lock, mode: Mode, out: &mut [u64; held::DEPTH]) -> usize {
    let mut n = 0;
    for e in h.entries().iter().rev() {
        let k = graph::key(e.id, e.mode, lock.0, mode);
        if !graph::seen(k) {
            out[n] = k;
            n += 1;
        }
        if !e.tried {
            break;
        }
    }
    n
}

/// One acquisition of `lock` in `mode` under validation: `take` acquires,
/// and `held_after` says from its result whether the lock is now held. A
/// blocking or timed acquisition (`tried` false) is checked before it
/// waits: edges from the locks held, a report for a cycle one closes. A
/// try adds no edge. `recursive`: a relock of a held `lock` is allowed (a
/// recursive mutex, a read lock) and counts one more hold.
///
/// The caller checked [`enabled`]. `take` must not call these hooks.
#[inline]
pub fn acquire<R>(
    lock: Lock,
    mode: Mode,
    recursive: bool,
    tried: bool,
    take: impl FnOnce() -> R,
    held_after: impl FnOnce(&R) -> bool,
) -> R {
    let h = held::current();
    if h.is_null() {
        return take();
    }
    // SAFETY: this thread's, valid for the process's life; each borrow below
    // ends before any call that may take a lock (`current`'s rule).
    if !tried && needs_edges(unsafe { &*h }, lock, mode) {
        record_for(h, lock, mode);
    }
    let r = take();
    if held_after(&r) {
        // SAFETY: as above.
        let h = unsafe { &mut *h };
        if !h.busy {
            let _ = h.push(lock.0, mode, tried, recursive);
        }
    }
    r
}

/// A thread is about to wait for `lock` in `mode` (a blocking or timed
/// acquisition; a try calls only [`taken`]): [`acquire`]'s check, for a
/// lock that cannot hand its acquisition over as a closure. `recursive` as
/// for [`acquire`].
pub fn before_wait(lock: Lock, mode: Mode, recursive: bool) {
    let _ = recursive;
    let h = held::current();
    // SAFETY: as in `acquire`.
    if !h.is_null() && needs_edges(unsafe { &*h }, lock, mode) {
        record_for(h, lock, mode);
    }
}

/// `lock` was acquired in `mode` (`tried`: by a try, which waited for
/// nothing). `recursive` as for [`acquire`].
#[inline]
pub fn taken(lock: Lock, mode: Mode, recursive: bool, tried: bool) {
    // SAFETY: as in `acquire`; null when this thread is not validated.
    if let Some(h) = unsafe { held::current().as_mut() }
        && !h.busy
    {
        let _ = h.push(lock.0, mode, tried, recursive);
    }
}

/// `lock` was released (once: a recursive hold keeps the rest).
#[inline]
pub fn released(lock: Lock) {
    // SAFETY: as in `acquire`; null when this thread is not validated.
    if let Some(h) = unsafe { held::current().as_mut() }
        && !h.busy
    {
        h.pop(lock.0)
    }
}

/// The slow path of a check: copy the missing keys, mark the thread busy
/// (its own lock calls inside `backtrace` are not validated), record them.
#[cold]
#[inline(never)]
fn record_for(h: *mut held::Held, lock: Lock, mode: Mode) {
    let mut keys = [0u64; held::DEPTH];
    let n = {
        // SAFETY: as in `acquire`; this borrow ends before `record`.
        let h = unsafe { &mut *h };
        h.busy = true;
        missing_edges(h, lock, mode, &mut keys)
    };
    record(&keys[..n]);
    // SAFETY: as in `acquire`.
    unsafe { (*h).busy = false };
}

/// The slow path: new edges. The stack is captured once, outside the graph
/// lock; each edge is added under it and a cycle it closes reported there
/// (reports are serialised, and the edges they name are complete).
#[cold]
#[inline(never)]
fn record(new: &[u64]) {
    let mut raw = [core::ptr::null_mut(); graph::FRAMES + 2];
    // SAFETY: a writable array of raw.len() pointers.
    let n = unsafe { libc::backtrace(raw.as_mut_ptr(), raw.len() as i32) }.max(0) as usize;
    let mut frames = [0usize; graph::FRAMES + 2];
    for (f, r) in frames.iter_mut().zip(&raw[..n]) {
        *f = *r as usize;
    }
    // Drop `record` itself.
    let frames = &frames[n.min(1)..n];
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let mut g = graph::GRAPH.lock();
    for &k in new {
        if let Some(cycle) = graph::add(&mut g, k, tid, frames) {
            REPORTS.fetch_add(1, Relaxed);
            if let Some(text) = report::format(&cycle) {
                report::write_out(text, env(c"KLOCK_LOCKDEP_FILE"));
            }
            if STATE.load(Relaxed) == ABORT {
                // SAFETY: abort has no preconditions; it ends the process.
                unsafe { libc::abort() };
            }
        }
    }
    drop(g);
}

static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    lock: || graph::GRAPH.raw_lock(),
    unlock: fork_unlock,
    ..crate::fork::Hooks::NONE
};

/// atfork parent/child: release the graph lock the prepare hook took.
///
/// # Safety
///
/// This thread took the lock in the prepare hook and has not released it.
unsafe fn fork_unlock() {
    // SAFETY: the caller's contract is `raw_unlock`'s.
    unsafe { graph::GRAPH.raw_unlock() }
}

#[cfg(test)]
mod tests;

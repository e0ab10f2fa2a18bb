//! The hooks the locks call: identities ([`lock_stamped`], [`lock_at`],
//! [`forget`]), the acquisition check ([`acquire`], or [`before_wait`] and
//! [`taken`]), [`released`] and [`retire`]; and the slow path that records
//! new edges and reports the cycles they close.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::settings;
use super::types::{Lock, Mode};
use super::{edges, graph, held, ids, report};

static REPORTS: AtomicU64 = AtomicU64::new(0);

/// Cycles reported so far in this process.
pub fn reports() -> u64 {
    REPORTS.load(Relaxed)
}

/// Does every recorded edge agree with the validator's topological order of
/// the locks (docs/lockdep.md, Cost)? `None` once the graph has a cycle.
/// For tests of the validator.
///
/// ```
/// assert_ne!(klock::internal::lockdep::order_holds(), Some(false));
/// ```
pub fn order_holds() -> Option<bool> {
    graph::order_holds()
}

/// Locks not validated because the identity tables were full, plus lock
/// orders not checked because the edge table was.
pub fn untracked() -> usize {
    ids::untracked() + graph::GRAPH.lock().dropped as usize
}

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
    if settings::on_if_read() {
        ids::forget(addr);
    }
}

/// Does a thread holding `h` need new edges to wait for `lock` in `mode`?
/// Only the held locks down to the first one that was waited for are
/// checked: below it, the order is already known (its own edges); below a
/// tried one it is not. A relock of a held lock adds none: recursive, or one
/// that fails or self-deadlocks, which is not an order between two locks.
#[inline(always)]
fn needs_edges(h: &mut held::Held, lock: Lock, mode: Mode) -> bool {
    let n = h.entries().len();
    if n == 0 || h.busy || h.find(lock.0).is_some() {
        return false;
    }
    for i in (0..n).rev() {
        let e = h.entries()[i];
        let k = edges::key(e.id, e.mode, lock.0, mode);
        if !h.cached(k) {
            if !graph::seen(k) {
                return !graph::full();
            }
            h.remember(k);
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
        let k = edges::key(e.id, e.mode, lock.0, mode);
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
/// The caller checked [`enabled`](super::enabled). `take` must not call
/// these hooks.
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
    if !tried && needs_edges(unsafe { &mut *h }, lock, mode) {
        record_for(h, lock, mode);
    }
    // Window: checked, not yet waiting (another thread may take the lock or
    // retire an identity this thread holds).
    crate::chaos::point(crate::chaos::Site::BeforeSleep);
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
    if !h.is_null() && needs_edges(unsafe { &mut *h }, lock, mode) {
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

/// Does this thread hold `lock` (as far as validation knows)? True also when
/// the thread is not validated or is inside the slow path, so that a caller
/// treats only a lock surely taken elsewhere as a semaphore-style release
/// ([`released`]). Asked **before** a release, while the object is live.
#[inline]
pub fn holds(lock: Lock) -> bool {
    // SAFETY: as in `acquire`; null when this thread is not validated.
    match unsafe { held::current().as_ref() } {
        Some(h) if !h.busy => h.find(lock.0).is_some(),
        _ => true,
    }
}

/// `lock` was released (once: a recursive hold keeps the rest). False when
/// this thread did not hold it: another thread did (a normal mutex or a
/// spinlock used as a semaphore, unlocked by a thread that did not lock
/// it), or it was taken before validation began. The caller then gives the
/// lock a new identity ([`renew_stamped`], [`forget`]) and [`retire`]s the
/// old one: the holder drops its stale entry at its next hook.
#[inline]
pub fn released(lock: Lock) -> bool {
    // SAFETY: as in `acquire`; null when this thread is not validated.
    match unsafe { held::current().as_mut() } {
        Some(h) if !h.busy => h.pop(lock.0),
        _ => true,
    }
}

/// `lock`'s identity was released by a thread that did not hold it and was
/// replaced (see [`released`]): every thread drops its entry of it at its
/// next hook.
pub fn retire(lock: Lock) {
    ids::retire(lock.0);
}

/// The lock whose identity `stamp` holds gets a new one at its next
/// acquisition (see [`released`]).
#[inline]
pub fn renew_stamped(stamp: &core::sync::atomic::AtomicU32) {
    // Relaxed: the next `lock_stamped` CASes from 0 with its own ordering.
    stamp.store(0, Relaxed);
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
    let mut raw = [core::ptr::null_mut(); edges::FRAMES + 2];
    // SAFETY: a writable array of raw.len() pointers.
    let n = unsafe { libc::backtrace(raw.as_mut_ptr(), raw.len() as i32) }.max(0) as usize;
    let mut frames = [0usize; edges::FRAMES + 2];
    for (f, r) in frames.iter_mut().zip(&raw[..n]) {
        *f = *r as usize;
    }
    // Drop `record` itself.
    let frames = &frames[n.min(1)..n];
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    // Window: other threads may record these edges first (`add` rechecks).
    crate::chaos::point(crate::chaos::Site::ListEdit);
    let mut g = graph::GRAPH.lock();
    let was_full = graph::full();
    for &k in new {
        if let Some(cycle) = graph::add(&mut g, k, tid, frames) {
            // Relaxed: a counter (tests read it after joining the threads).
            REPORTS.fetch_add(1, Relaxed);
            if let Some(text) = report::format(&cycle) {
                report::write_out(text, settings::report_file());
            }
            if settings::aborts() {
                // SAFETY: abort has no preconditions; it ends the process.
                unsafe { libc::abort() };
            }
        }
    }
    const _: () = assert!(edges::MAX_EDGES == 262_144, "the message below says so");
    if !was_full && graph::full() {
        report::write_out(
            b"klock lockdep: the lock-order table is full (262 144 orders); new orders \
              are no longer checked\n",
            settings::report_file(),
        );
    }
    drop(g);
}

//! Each thread's stack of held locks: what it holds, in the order it took
//! them, with how (read or exclusive, tried or waited for) and how deeply
//! (recursive relocks). Fixed size, no allocation.
//!
//! **Where a thread's stack lives**: in one lazily mapped array indexed by
//! the thread's klock id (`tid::current_id`, unique among live threads and
//! one `%fs`-relative load), not in a `thread_local!`, which inside the
//! interposer is a call to `__tls_get_addr` per access. Ids are recycled
//! when threads end, so each thread clears its stack at its first use,
//! marked in an initial-exec thread word (`fresh`, 0 in a new thread). A
//! thread whose id is past the array (or the shared id of threads whose TLS
//! is being torn down) is not validated.
//!
//! ```text
//! take L:    [.., H]      -> [.., H, L]       (L not held)
//!            [.., L, H]   -> [.., L+1, H]     (recursive relock: depth + 1)
//! release L: [.., L, H]   -> [.., H]          (depth 1: out of order is fine)
//!            [.., L+1, H] -> [.., L, H]
//! ```

use super::region::Region;
use super::types::Mode;

/// Locks one thread can hold at once and still be validated (deeper ones are
/// taken and released untracked: their edges are not checked).
pub(super) const DEPTH: usize = 48;

/// Threads validated at once (ids past it are not).
const THREADS: usize = 1 << 16;

/// One held lock (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) id: u32,
    pub(super) mode: Mode,
    /// Taken by a try (no wait edge led to it).
    pub(super) tried: bool,
    /// Recursive holds (1 = once; a deeper recursion stops counting at
    /// u16::MAX and is then released early, which only loses edges).
    pub(super) depth: u16,
}

const EMPTY: Entry = Entry {
    id: 0,
    mode: Mode::Write,
    tried: false,
    depth: 0,
};

/// Edge keys a thread remembers as seen (power of two): a direct-mapped
/// cache in front of the shared edge set, in the thread's own cache lines.
const SEEN_CACHE: usize = 256;

/// A thread's held locks.
pub(super) struct Held {
    /// Recently seen edge keys (0 = empty), indexed by [`cache_slot`].
    cache: [u64; SEEN_CACHE],
    n: usize,
    /// The value of `ids::RETIRED` when the stack was last purged.
    retired: u32,
    e: [Entry; DEPTH],
    /// Set while this thread is inside lockdep's slow path (backtrace,
    /// graph, report), whose own lock calls are not validated.
    pub(super) busy: bool,
}

impl Held {
    const fn new() -> Held {
        Held {
            cache: [0; SEEN_CACHE],
            n: 0,
            retired: 0,
            e: [EMPTY; DEPTH],
            busy: false,
        }
    }

    /// Has this thread seen the edge `k` recorded? (False: ask the shared
    /// set.)
    #[inline(always)]
    pub(super) fn cached(&self, k: u64) -> bool {
        self.cache[cache_slot(k)] == k
    }

    /// Remember that the edge `k` is recorded.
    #[inline(always)]
    pub(super) fn remember(&mut self, k: u64) {
        self.cache[cache_slot(k)] = k;
    }

    /// The held locks, oldest first.
    #[inline(always)]
    pub(super) fn entries(&self) -> &[Entry] {
        &self.e[..self.n.min(DEPTH)]
    }

    /// The entry of `id`, if held (the newest hold).
    #[inline(always)]
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.entries().iter().rposition(|e| e.id == id)
    }

    /// `id` was taken: a new entry, or one more depth of a held one when
    /// `recursive`. False if the stack is full (not tracked).
    #[inline(always)]
    pub(super) fn push(&mut self, id: u32, mode: Mode, tried: bool, recursive: bool) -> bool {
        if recursive && let Some(i) = self.find(id) {
            self.e[i].depth = self.e[i].depth.saturating_add(1);
            return true;
        }
        let n = self.n;
        if n >= DEPTH {
            return false;
        }
        self.e[n] = Entry {
            id,
            mode,
            tried,
            depth: 1,
        };
        self.n = n + 1;
        true
    }

    /// `id` was released: one depth less, the entry gone at depth 0. False
    /// for an id this thread does not hold (taken before validation began,
    /// untracked, or another thread's: a mutex used as a semaphore). The
    /// newest entry is the usual case, handled inline.
    #[inline(always)]
    pub(super) fn pop(&mut self, id: u32) -> bool {
        let n = self.n;
        if n > 0 && n <= DEPTH && self.e[n - 1].id == id {
            if self.e[n - 1].depth > 1 {
                self.e[n - 1].depth -= 1;
            } else {
                self.n = n - 1;
            }
            return true;
        }
        self.pop_inner(id)
    }

    /// [`pop`](Self::pop) of an entry below the newest (out-of-order release).
    #[cold]
    #[inline(never)]
    fn pop_inner(&mut self, id: u32) -> bool {
        let Some(i) = self.find(id) else { return false };
        if self.e[i].depth > 1 {
            self.e[i].depth -= 1;
            return true;
        }
        for j in i..self.n - 1 {
            self.e[j] = self.e[j + 1];
        }
        self.n -= 1;
        true
    }

    /// Drop the entries of retired identities (released by another thread).
    #[cold]
    #[inline(never)]
    fn purge_retired(&mut self) {
        let mut k = 0;
        for i in 0..self.n.min(DEPTH) {
            if !super::ids::retired(self.e[i].id) {
                self.e[k] = self.e[i];
                k += 1;
            }
        }
        self.n = k;
    }

    /// Forget everything (a fork child's other threads are gone, but this
    /// thread's holds stay: nothing to do; kept for tests).
    #[cfg(test)]
    pub(super) fn clear(&mut self) {
        self.n = 0;
    }
}

/// A key's slot in a thread's seen-edge cache.
#[inline(always)]
fn cache_slot(k: u64) -> usize {
    ((k ^ (k >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize & (SEEN_CACHE - 1)
}

static HELD: Region<Held, THREADS> = Region::new();

// This thread's "stack cleared" mark (0 in a new thread; see the module
// docs). An initial-exec thread word on x86-64 Linux; elsewhere a
// const-initialised `thread_local!`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
crate::__klock_thread_word!(mod fresh = "klock_lockdep_fresh_v1");

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod fresh {
    use std::cell::Cell;
    std::thread_local! {
        static FRESH: Cell<u32> = const { Cell::new(0) };
    }
    #[inline]
    pub(super) fn get() -> u32 {
        FRESH.try_with(|c| c.get()).unwrap_or(0)
    }
    #[inline]
    pub(super) fn set(v: u32) {
        let _ = FRESH.try_with(|c| c.set(v));
    }
}

/// This thread's held locks, as a pointer valid for the life of the process
/// (null: this thread is not validated). Callers make each `&mut` from it
/// short: never alive across a call that may take a lock (the acquisition
/// itself, the slow path's `backtrace`), where a nested hook makes its own.
#[inline]
pub(super) fn current() -> *mut Held {
    let id = crate::tid::current_id() as usize;
    if id >= THREADS {
        return core::ptr::null_mut();
    }
    let Some(base) = HELD.base() else {
        return core::ptr::null_mut();
    };
    // SAFETY: `id < THREADS`, inside the mapping.
    let h = unsafe { base.add(id) };
    if fresh::get() == 0 {
        // SAFETY: slot `id` belongs to this thread while it lives (ids are
        // unique among live threads); nothing else borrows it now.
        unsafe { *h = Held::new() };
        fresh::set(1);
    }
    // Acquire pairs with the Release increment in `ids::retire`.
    let retired = super::ids::RETIRED.load(core::sync::atomic::Ordering::Acquire);
    // SAFETY: as above.
    let held = unsafe { &mut *h };
    if held.retired != retired {
        held.purge_retired();
        held.retired = retired;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_pop_follow_the_diagram() {
        let mut h = Held::new();
        assert!(h.push(1, Mode::Write, false, false));
        assert!(h.push(2, Mode::Read, true, false));
        assert!(h.push(1, Mode::Write, false, true)); // recursive relock
        assert_eq!(h.entries().len(), 2);
        assert_eq!(h.entries()[0].depth, 2);
        h.pop(1);
        assert_eq!(h.entries()[0].depth, 1);
        h.pop(1); // out of order
        assert_eq!(h.entries().len(), 1);
        assert_eq!(h.entries()[0].id, 2);
        assert!(h.entries()[0].tried);
        assert!(!h.pop(7)); // not held: ignored
        h.pop(2);
        assert!(h.entries().is_empty());
        for i in 0..DEPTH as u32 {
            assert!(h.push(i + 1, Mode::Write, false, false));
        }
        assert!(!h.push(999, Mode::Write, false, false), "full");
        h.clear();
        assert!(h.entries().is_empty());
    }
}

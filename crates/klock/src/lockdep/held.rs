//! Each thread's stack of held locks: what it holds, in the order it took
//! them, with how (read or exclusive, tried or waited for) and how deeply
//! (recursive relocks). Thread-local, fixed size, no allocation.
//!
//! ```text
//! take L:    [.., H]      -> [.., H, L]       (L not held)
//!            [.., L, H]   -> [.., L+1, H]     (recursive relock: depth + 1)
//! release L: [.., L, H]   -> [.., H]          (depth 1: out of order is fine)
//!            [.., L+1, H] -> [.., L, H]
//! ```

use core::cell::UnsafeCell;

use super::Mode;

/// Locks one thread can hold at once and still be validated (deeper ones are
/// taken and released untracked: their edges are not checked).
pub(super) const DEPTH: usize = 48;

/// One held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) id: u32,
    pub(super) mode: Mode,
    /// Taken by a try (no wait edge led to it).
    pub(super) tried: bool,
    /// Recursive holds (1 = once).
    pub(super) depth: u32,
}

const EMPTY: Entry = Entry {
    id: 0,
    mode: Mode::Write,
    tried: false,
    depth: 0,
};

/// A thread's held locks.
pub(super) struct Held {
    n: usize,
    e: [Entry; DEPTH],
    /// Set while this thread is inside lockdep's slow path (backtrace,
    /// graph, report), whose own lock calls are not validated.
    pub(super) busy: bool,
}

impl Held {
    const fn new() -> Held {
        Held {
            n: 0,
            e: [EMPTY; DEPTH],
            busy: false,
        }
    }

    /// The held locks, oldest first.
    pub(super) fn entries(&self) -> &[Entry] {
        &self.e[..self.n]
    }

    /// The entry of `id`, if held.
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.entries().iter().rposition(|e| e.id == id)
    }

    /// `id` was taken: a new entry, or one more depth of a held one when
    /// `recursive`. False if the stack is full (not tracked).
    pub(super) fn push(&mut self, id: u32, mode: Mode, tried: bool, recursive: bool) -> bool {
        if recursive && let Some(i) = self.find(id) {
            self.e[i].depth += 1;
            return true;
        }
        if self.n == DEPTH {
            return false;
        }
        self.e[self.n] = Entry {
            id,
            mode,
            tried,
            depth: 1,
        };
        self.n += 1;
        true
    }

    /// `id` was released: one depth less, the entry gone at depth 0. An id
    /// not held (taken before validation began, or untracked) is ignored.
    pub(super) fn pop(&mut self, id: u32) {
        let Some(i) = self.find(id) else { return };
        if self.e[i].depth > 1 {
            self.e[i].depth -= 1;
            return;
        }
        self.e.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }

    /// Forget everything (a fork child's other threads are gone, but this
    /// thread's holds stay: nothing to do; kept for tests).
    #[cfg(test)]
    pub(super) fn clear(&mut self) {
        self.n = 0;
    }
}

thread_local! {
    static HELD: UnsafeCell<Held> = const { UnsafeCell::new(Held::new()) };
}

/// Runs `f` on this thread's held locks.
#[inline]
pub(super) fn with<R>(f: impl FnOnce(&mut Held) -> R) -> R {
    // SAFETY: the cell is this thread's, and `with` is never re-entered while
    // `f` runs: the hooks call it once each, and the slow path they call
    // sets `busy` (checked first by every hook) before it can take a lock.
    HELD.with(|h| f(unsafe { &mut *h.get() }))
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
        h.pop(7); // not held: ignored
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

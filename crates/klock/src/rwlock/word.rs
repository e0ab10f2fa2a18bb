//! The count word's and the owner word's encoding: their bits, named tests
//! of a word value (the predicates), and the waiters' [`Class`] with the
//! share each class adds to the count. The layouts and the state diagram's
//! notation `(readers, flags)` (W=WRITER Q=WAITERS H=HANDOFF K=WAKING
//! U=UPGRADE G=UPGRADING P=PREFQ) are in the module docs (`rwlock/mod.rs`).
//!
//! Everything here is a pure function of a `u32`: no atomics, no orderings.
//! The callers' CASes and RMWs (and their ordering comments) stay at the
//! places in the algorithm where they happen.

// ---------------------------------------------------------------------------
// The count word
// ---------------------------------------------------------------------------

/// A writer holds the lock.
pub const WRITER: u32 = 1 << 0;
/// The wait list is non-empty.
pub const WAITERS: u32 = 1 << 1;
/// The first waiter is owed the lock.
pub const HANDOFF: u32 = 1 << 2;
/// The wait-list lock.
pub const WLOCK: u32 = 1 << 3;
/// An upgradable reader holds the lock.
pub const UPGRADE: u32 = 1 << 4;
/// The upgradable reader waits for the other readers to leave.
pub const UPGRADING: u32 = 1 << 5;
/// A writer (or upgrader) at the head was woken and has not re-tried yet:
/// an unlock need not take WLOCK to wake it again (INV-WAKING).
pub const WAKING: u32 = 1 << 6;
/// A reader-preferring reader may be queued (INV-PREFQ); only set with
/// WAITERS.
pub const PREFQ: u32 = 1 << 7;
/// Bit offset of the reader count.
pub const READER_SHIFT: u32 = 8;
/// One reader.
pub const READER_BIAS: u32 = 1 << READER_SHIFT;
/// Top bit of the reader count: 2^23 readers; new readers fail and panic.
pub const READFAIL: u32 = 1 << 31;
/// The reader count (READFAIL included).
pub const READER_MASK: u32 = !(READER_BIAS - 1);
/// Someone holds the lock.
const LOCK_MASK: u32 = WRITER | READER_MASK;
/// The read fast path fails when any of these was set before its add.
const READ_FAILED_MASK: u32 = WRITER | WAITERS | HANDOFF | UPGRADING | READFAIL;

/// Readers counted in `c` (holders and failed fast-path adds).
///
/// ```
/// use klock::rwlock::{readers, READER_BIAS, WRITER};
/// assert_eq!(readers(3 * READER_BIAS | WRITER), 3);
/// ```
#[inline]
pub const fn readers(c: u32) -> u32 {
    c >> READER_SHIFT
}

/// Is the lock free (no writer, no reader)?
///
/// ```
/// use klock::rwlock::{is_free, WAITERS, WRITER};
/// assert!(is_free(WAITERS));
/// assert!(!is_free(WRITER));
/// ```
#[inline]
pub const fn is_free(c: u32) -> bool {
    c & LOCK_MASK == 0
}

/// Could the read fast path keep the reader count it added to `c` (the
/// value before the add)? std's `is_read_lockable`.
///
/// ```
/// use klock::rwlock::{is_read_lockable, READER_BIAS, WAITERS};
/// assert!(is_read_lockable(5 * READER_BIAS));
/// assert!(!is_read_lockable(5 * READER_BIAS | WAITERS));
/// ```
#[inline]
pub const fn is_read_lockable(c: u32) -> bool {
    c & READ_FAILED_MASK == 0
}

/// May a reader-preferring reader take its count in `c` (the value before
/// its add)? Yes while the lock is read-owned and no writer holds it,
/// whoever waits and even with a hand-off owed (the hand-off happens when
/// the count drops to 0, in one CAS with the release, so a count that is
/// still there has not been handed over); on a free lock, unless a hand-off
/// is owed. Never with WRITER (a writer owns it, also one just handed the
/// lock), UPGRADING or READFAIL.
///
/// ```
/// use klock::rwlock::{is_pref_read_lockable, HANDOFF, READER_BIAS, WAITERS, WRITER};
/// assert!(is_pref_read_lockable(2 * READER_BIAS | WAITERS | HANDOFF));
/// assert!(is_pref_read_lockable(WAITERS));
/// assert!(!is_pref_read_lockable(WAITERS | HANDOFF));
/// assert!(!is_pref_read_lockable(READER_BIAS | WRITER));
/// ```
#[inline]
pub const fn is_pref_read_lockable(c: u32) -> bool {
    c & (WRITER | UPGRADING | READFAIL) == 0 && (readers(c) > 0 || c & HANDOFF == 0)
}

/// May a recursive reader (one that may already hold a read lock on this
/// lock) keep the reader count it added to `c` (the value before its add)?
/// Yes unless a writer holds the lock (WRITER, also one just handed it) or
/// the reader count would overflow (READFAIL); past waiting writers, past a
/// hand-off owed to one while the lock is read-owned, and past an upgrade
/// under way (UPGRADING: the upgrader waits for the readers, so a reader
/// that holds the lock and queued behind it would deadlock). On a free lock
/// it defers to a hand-off owed to a waiter, as
/// [`is_pref_read_lockable`].
///
/// ```
/// use klock::rwlock::{is_recursive_read_lockable, HANDOFF, READER_BIAS, UPGRADE, UPGRADING, WAITERS, WRITER};
/// assert!(is_recursive_read_lockable(2 * READER_BIAS | WAITERS | HANDOFF));
/// assert!(is_recursive_read_lockable(READER_BIAS | UPGRADE | UPGRADING));
/// assert!(!is_recursive_read_lockable(WAITERS | HANDOFF));
/// assert!(!is_recursive_read_lockable(WRITER | WAITERS));
/// ```
#[inline]
pub const fn is_recursive_read_lockable(c: u32) -> bool {
    c & (WRITER | READFAIL) == 0 && (readers(c) > 0 || c & HANDOFF == 0)
}

/// Is a hand-off owed to the first waiter?
#[inline]
pub(crate) const fn handoff_owed(c: u32) -> bool {
    c & HANDOFF != 0
}

/// Is the wait list non-empty?
#[inline]
pub(crate) const fn has_waiters(c: u32) -> bool {
    c & WAITERS != 0
}

/// May a reader release its count in `c` with one plain CAS (`(n,..) ->
/// (n-1,..)`)? Yes unless it could be the last reader with waiters queued
/// (INV-WAKE-ADDR: it must take WLOCK first) or an upgrader waits for the
/// readers to leave (it may need a wake on the count word).
#[inline]
pub(crate) const fn is_plain_read_release(c: u32) -> bool {
    c & UPGRADING == 0 && (!has_waiters(c) || readers(c) > 1)
}

/// Could a writer (or, with `upgrader`, an upgradable reader) take the lock
/// in state `c`? `first`: the caller is the list head (HANDOFF is its own).
#[inline]
pub(crate) const fn is_lockable_by(c: u32, class: Class, first: bool) -> bool {
    if handoff_owed(c) && !first {
        return false;
    }
    match class {
        Class::Writer => is_free(c),
        Class::Upgrader => c & (WRITER | UPGRADE | UPGRADING | READFAIL) == 0,
        Class::Reader => c & (WRITER | UPGRADING | READFAIL) == 0,
    }
}

// ---------------------------------------------------------------------------
// The owner word (a hint)
// ---------------------------------------------------------------------------

/// Owner word: the last owner was a reader.
pub const OWNER_READER: u32 = 1 << 0;
/// Owner word: writers must not spin (set by a writer that timed out
/// spinning on readers; reset by a writer's acquisition or the last reader
/// leaving with waiters queued).
pub const OWNER_NONSPINNABLE: u32 = 1 << 1;
/// Bit offset of the writer's thread id in the owner word.
pub const OWNER_SHIFT: u32 = 2;

const _: () = assert!(OWNER_SHIFT + crate::tid::ID_BITS <= 32);

/// The writer thread id in an owner word (0: none).
///
/// ```
/// assert_eq!(klock::rwlock::owner_id(7 << klock::rwlock::OWNER_SHIFT), 7);
/// ```
#[inline]
pub const fn owner_id(o: u32) -> u32 {
    o >> OWNER_SHIFT
}

#[inline]
pub(crate) const fn is_nonspinnable(o: u32) -> bool {
    o & OWNER_NONSPINNABLE != 0
}

// ---------------------------------------------------------------------------
// Waiters' classes
// ---------------------------------------------------------------------------

/// What a queued waiter wants (stored in its node's `ident`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Reader = 1,
    Writer = 2,
    Upgrader = 3,
}

impl Class {
    /// What this class adds to the count when it takes the lock.
    #[inline]
    pub(crate) const fn share(self) -> u32 {
        match self {
            Class::Reader => READER_BIAS,
            Class::Writer => WRITER,
            Class::Upgrader => READER_BIAS | UPGRADE,
        }
    }
}

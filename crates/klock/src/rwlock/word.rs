//! The count word's and the owner word's encoding: their bits, named tests
//! of a word value (the predicates), the waiters' [`Class`] with the share
//! each class adds to the count, and named transitions, each documented
//! with the change it makes in the module docs' notation `(readers, flags)`
//! (X=WRITER W=WAITERS H=HANDOFF L=WLOCK U=UPGRADE G=UPGRADING K=WAKING
//! F=PREFQ; `f` stands for whatever other flags the word holds, `-` for
//! none). The owner word's transitions are written `owner (id, flags)` with
//! R=OWNER_READER and N=OWNER_NONSPINNABLE. (One legend for the mutex, the
//! rwsem and the condvar: `docs/invariants.md`, "State-diagram notation".)
//!
//! ```text
//! count:  31        30 ............ 8  7       6        5          4       3      2        1        0
//!        +---------+------------------+-------+--------+-----------+---------+------+--------+--------+--------+
//!        |READFAIL |  reader count    | PREFQ | WAKING | UPGRADING | UPGRADE | WLOCK|HANDOFF |WAITERS | WRITER |
//!        +---------+------------------+-------+--------+-----------+---------+------+--------+--------+--------+
//! owner:  bits 2-31 writer thread id (0 = none) | bit 1 NONSPINNABLE | bit 0 READER_OWNED
//! ```
//!
//! Everything here is a pure function of a `u32`: no atomics, no orderings.
//! The callers' CASes and RMWs (and their ordering comments) stay at the
//! places in the algorithm where they happen; where an RMW with a constant
//! operand (`fetch_or(UPGRADING)`, ...) is followed by a computation of the
//! word it left, that computation is the named transition.

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
/// use klock::internal::rwlock::{readers, READER_BIAS, WRITER};
/// assert_eq!(readers(3 * READER_BIAS | WRITER), 3);
/// ```
#[inline]
pub const fn readers(c: u32) -> u32 {
    c >> READER_SHIFT
}

/// Is the lock free (no writer, no reader)?
///
/// ```
/// use klock::internal::rwlock::{is_free, WAITERS, WRITER};
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
/// use klock::internal::rwlock::{is_read_lockable, READER_BIAS, WAITERS};
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
/// use klock::internal::rwlock::{is_pref_read_lockable, HANDOFF, READER_BIAS, WAITERS, WRITER};
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
/// use klock::internal::rwlock::{is_recursive_read_lockable, HANDOFF, READER_BIAS, UPGRADE, UPGRADING, WAITERS, WRITER};
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

/// Does the read unlock `(2,U|G|f) -> (1,U|G|f)` leave the upgrader, which
/// waits with UPGRADING set for the other readers to leave, the only
/// reader? Then the release wakes it on the count word (an address), with
/// no WLOCK and no turn given.
#[inline]
pub(crate) const fn read_release_wakes_upgrader(c: u32) -> bool {
    c & UPGRADING != 0 && readers(c) == 2
}

/// May a release of `c` be one CAS, `(x,f) -> (x,f) - sub + add`, with no
/// WLOCK and no turn given? Yes with nobody waiting (`f` without W); for a
/// read unlock (`read`) that is not the last reader, `(n,W|f) ->
/// (n-1,W|f)`, n > 1 (it cannot let a waiter in); and, unless the release
/// is `fair`, while a woken head has not re-tried and no hand-off is owed,
/// `(x,W|K|f) -> (x,W|K|f) - sub + add`, `f` without H (INV-WAKING: the
/// head re-tries after this release).
#[inline]
pub(crate) const fn release_needs_no_turn(c: u32, read: bool, fair: bool) -> bool {
    !has_waiters(c) || (read && readers(c) > 1) || (c & WAKING != 0 && !handoff_owed(c) && !fair)
}

/// `(x,f|L)`: someone holds the wait-list lock.
#[inline]
pub(crate) const fn list_locked(c: u32) -> bool {
    c & WLOCK != 0
}

/// Could a waiter of `class` take the lock in state `c`? A writer needs it
/// free; an upgradable reader needs no writer, upgradable holder, upgrade
/// under way or READFAIL; a reader needs no writer, upgrade under way or
/// READFAIL. `first`: the caller is the list head (an owed HANDOFF is its own).
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
/// assert_eq!(klock::internal::rwlock::owner_id(7 << klock::internal::rwlock::OWNER_SHIFT), 7);
/// ```
#[inline]
pub const fn owner_id(o: u32) -> u32 {
    o >> OWNER_SHIFT
}

/// Owner `(x,f|N)`: writers must not spin.
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

// ---------------------------------------------------------------------------
// Transitions: the count word after a change
// ---------------------------------------------------------------------------

/// `(n,f) -> (n+1,f)`: one more reader (a CAS operand: `c` passed a
/// read-lockable test, so the count cannot overflow).
#[inline]
pub(crate) const fn add_reader(c: u32) -> u32 {
    c + READER_BIAS
}

/// `(n,f) -> (n+1,f)`, wrapping: the word after a reader's
/// `fetch_add(READER_BIAS)` that returned `c` (the RMW wraps too).
#[inline]
pub(crate) const fn add_reader_wrapping(c: u32) -> u32 {
    c.wrapping_add(READER_BIAS)
}

/// `(n,f) -> (n-1,f)`, n >= 1: one reader fewer (a read unlock, or a
/// reader taking back the count its fast path added).
#[inline]
pub(crate) const fn drop_reader(c: u32) -> u32 {
    c - READER_BIAS
}

/// `(n+1,f) -> (n,f)`, wrapping: the word a reader's `fetch_add` found,
/// given the word after it (the inverse of [`add_reader_wrapping`]).
#[inline]
pub(crate) const fn drop_reader_wrapping(c: u32) -> u32 {
    c.wrapping_sub(READER_BIAS)
}

/// `(n,f) -> (n,f) + share`: take the lock by adding a class's
/// [`share`](Class::share): a reader `(n,f) -> (n+1,f)`, a writer
/// `(0,f) -> (0,f|X)`, an upgrader `(n,f) -> (n+1,f|U)` (a CAS operand,
/// after [`is_lockable_by`] or another acquisition test passed).
#[inline]
pub(crate) const fn add_share(c: u32, share: u32) -> u32 {
    c + share
}

/// `(x,f) -> (x,f) - sub + add`: release the share `sub` and take the share
/// `add` in one RMW: read unlock `(n,f) -> (n-1,f)` (`READER_BIAS`, 0),
/// write unlock `(0,X|f) -> (0,f)` (`WRITER`, 0), downgrade
/// `(0,X|f) -> (1,f)` (`WRITER`, `READER_BIAS`), downgrade to upgradable
/// `(0,X|f) -> (1,U|f)` (`WRITER`, `READER_BIAS | UPGRADE`), upgradable
/// unlock `(n,U|f) -> (n-1,f)` (`READER_BIAS | UPGRADE`, 0), downgrade of an
/// upgradable read `(n,U|f) -> (n,f)` (`UPGRADE`, 0).
#[inline]
pub(crate) const fn release(c: u32, sub: u32, add: u32) -> u32 {
    c - sub + add
}

/// `(x,f) -> (x,f|L)`: take the wait-list lock (WLOCK; `f` has no L).
#[inline]
pub(crate) const fn lock_list(c: u32) -> u32 {
    c | WLOCK
}

/// `(x,f|L) -> (x,f)`: the word with the wait-list lock released.
#[inline]
pub(crate) const fn unlock_list(c: u32) -> u32 {
    c & !WLOCK
}

/// `(x,f) -> (x,f|K)`: the writer or upgrader at the head is marked woken
/// (INV-WAKING) until it re-tries.
#[inline]
pub(crate) const fn mark_woken(c: u32) -> u32 {
    c | WAKING
}

/// `(x,f[|H][|K]) -> (x,f) + share`: a queued writer or upgrader takes the
/// lock (its [`share`](Class::share)) and leaves the list, clearing HANDOFF
/// (only the head sets it, and only the head takes the lock while it is
/// set) and WAKING (it may stand for this waiter), and WAITERS|PREFQ when it
/// was the `last` waiter: a writer `(0,W[|H][|K]) -> (0,X|W)`, or
/// `(0,W[|H][|K][|F]) -> (0,X)` when last; an upgrader
/// `(n,W[|H][|K]) -> (n+1,U|W)`, or `(n,W..) -> (n+1,U)` when last.
#[inline]
pub(crate) const fn take_from_list(c: u32, share: u32, last: bool) -> u32 {
    let clear = HANDOFF | WAKING | if last { WAITERS | PREFQ } else { 0 };
    (c + share) & !clear
}

/// `(n,f) -> (n+k,f')`: `k` queued readers granted in one RMW, where `f'`
/// is `f` without HANDOFF (unless `only_pref`: reader-preferring readers
/// granted behind a writer at the head keep its HANDOFF), without
/// WAITERS|PREFQ when `none_left` (the list is empty), and without PREFQ
/// when `no_pref_left` (no reader-preferring reader is queued):
/// `(n,W[|H][|F]) -> (n+k,W[|F])`, or `(n+k,-)` once the list is empty;
/// `only_pref`: `(n,W|F[|H]) -> (n+k,W[|F][|H])`.
#[inline]
pub(crate) const fn grant_queued_readers(
    c: u32,
    k: u32,
    only_pref: bool,
    none_left: bool,
    no_pref_left: bool,
) -> u32 {
    let clear = if only_pref { 0 } else { HANDOFF }
        | if none_left { WAITERS | PREFQ } else { 0 }
        | if no_pref_left { PREFQ } else { 0 };
    (c + k * READER_BIAS) & !clear
}

/// `(0,W[|H][|K][|F]) -> (0,X|W[|F])`: the lock handed to the writer at the
/// head in the releasing CAS (`c` is the word after the release, free),
/// HANDOFF and WAKING cleared; `(0,W..) -> (0,X)` when it is the `last`
/// waiter (WAITERS|PREFQ cleared too).
#[inline]
pub(crate) const fn hand_to_writer(c: u32, last: bool) -> u32 {
    let empty = if last { WAITERS | PREFQ } else { 0 };
    (c + WRITER) & !(HANDOFF | WAKING | empty)
}

/// `(n,U|f) -> (n,U|G|f)`: the word after the upgrader's
/// `fetch_or(UPGRADING)` that returned `c` (new readers now fail and queue).
#[inline]
pub(crate) const fn start_upgrading(c: u32) -> u32 {
    c | UPGRADING
}

/// `(n,U|G|f) -> (n,U|f)`: the word after a timed upgrade's
/// `fetch_and(!UPGRADING)` that returned `c` (it gives up).
#[inline]
pub(crate) const fn cancel_upgrading(c: u32) -> u32 {
    c & !UPGRADING
}

/// `(1,U|G|f) -> (0,X|f)`: the upgrader, the last reader, takes the write
/// lock after waiting with UPGRADING set (its reader count, UPGRADE and
/// UPGRADING become WRITER).
#[inline]
pub(crate) const fn upgrade_after_wait(c: u32) -> u32 {
    (c - (READER_BIAS | UPGRADE | UPGRADING)) | WRITER
}

/// `(1,U|f) -> (0,X|f)`, `f` without G: the upgrader, the only reader,
/// takes the write lock at once (its reader count and UPGRADE become
/// WRITER).
#[inline]
pub(crate) const fn upgrade_at_once(c: u32) -> u32 {
    (c - (READER_BIAS | UPGRADE)) | WRITER
}

// ---------------------------------------------------------------------------
// Transitions: the owner word after a change
// ---------------------------------------------------------------------------

/// Owner `(x,f) -> (id,-)`: a writer's acquisition publishes its id (and
/// resets NONSPINNABLE: a new writer phase).
#[inline]
pub(crate) const fn owned_by_writer(id: u32) -> u32 {
    id << OWNER_SHIFT
}

/// Owner `(x,f) -> (0,R|f&N)`: reader-owned, NONSPINNABLE kept.
#[inline]
pub(crate) const fn owned_by_readers(o: u32) -> u32 {
    OWNER_READER | (o & OWNER_NONSPINNABLE)
}

/// Owner `(x,f) -> (x,f|N)`: writers must not spin (a writer timed out
/// spinning on readers).
#[inline]
pub(crate) const fn nonspinnable(o: u32) -> u32 {
    o | OWNER_NONSPINNABLE
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    /// The count word `(n, f)`: `n` readers (READFAIL is the count's top
    /// bit), flags `f`.
    fn w(n: u32, f: u32) -> u32 {
        assert!(f & READER_MASK == 0 && n < 1 << 24);
        (n << READER_SHIFT) | f
    }

    const X: u32 = WRITER;
    const W: u32 = WAITERS;
    const H: u32 = HANDOFF;
    const L: u32 = WLOCK;
    const U: u32 = UPGRADE;
    const G: u32 = UPGRADING;
    const K: u32 = WAKING;
    const F: u32 = PREFQ;
    /// Reader counts to try: none, one, two, many, the largest that reads
    /// (2^23 - 1), READFAIL alone, READFAIL and more.
    const NS: [u32; 7] = [0, 1, 2, 100, (1 << 23) - 1, 1 << 23, (1 << 23) + 5];
    /// Every combination of the eight flag bits.
    fn flags() -> impl Iterator<Item = u32> {
        0..=0xff
    }
    fn has(f: u32, bits: u32) -> bool {
        f & bits != 0
    }

    #[test]
    fn flags_and_fields() {
        let all = [
            WRITER, WAITERS, HANDOFF, WLOCK, UPGRADE, UPGRADING, WAKING, PREFQ,
        ];
        assert_eq!(
            all.iter().fold(0, |a, b| a | b),
            0xff,
            "one bit each, below the count"
        );
        assert_eq!(READER_BIAS, 1 << 8);
        assert_eq!(READFAIL, w(1 << 23, 0));
        assert_eq!(READER_MASK, !0xff);
        for n in NS {
            for f in flags() {
                assert_eq!(readers(w(n, f)), n);
            }
        }
    }

    #[test]
    fn count_predicates_match_their_docs() {
        for n in NS {
            let readfail = n >= 1 << 23;
            for f in flags() {
                let c = w(n, f);
                // No writer, no reader.
                assert_eq!(is_free(c), n == 0 && !has(f, X), "is_free {c:#x}");
                // The fast path keeps its add: no X, W, H, G, READFAIL.
                assert_eq!(
                    is_read_lockable(c),
                    !has(f, X | W | H | G) && !readfail,
                    "is_read_lockable {c:#x}"
                );
                // Read-owned: whoever waits, H included; free: no H. Never X, G, READFAIL.
                assert_eq!(
                    is_pref_read_lockable(c),
                    !has(f, X | G) && !readfail && (n > 0 || !has(f, H)),
                    "is_pref_read_lockable {c:#x}"
                );
                // As the reader-preferring read, and past G too.
                assert_eq!(
                    is_recursive_read_lockable(c),
                    !has(f, X) && !readfail && (n > 0 || !has(f, H)),
                    "is_recursive_read_lockable {c:#x}"
                );
                assert_eq!(handoff_owed(c), has(f, H));
                assert_eq!(has_waiters(c), has(f, W));
                // One plain CAS: no G, and not the last reader with waiters.
                assert_eq!(
                    is_plain_read_release(c),
                    !has(f, G) && (!has(f, W) || n > 1),
                    "is_plain_read_release {c:#x}"
                );
                for first in [false, true] {
                    let owed = has(f, H) && !first;
                    assert_eq!(
                        is_lockable_by(c, Class::Writer, first),
                        !owed && n == 0 && !has(f, X)
                    );
                    assert_eq!(
                        is_lockable_by(c, Class::Upgrader, first),
                        !owed && !has(f, X | U | G) && !readfail
                    );
                    assert_eq!(
                        is_lockable_by(c, Class::Reader, first),
                        !owed && !has(f, X | G) && !readfail
                    );
                }
            }
        }
    }

    #[test]
    fn release_predicates_match_their_docs() {
        for n in NS {
            for f in flags() {
                let c = w(n, f);
                // (2,U|G|f): the read unlock leaves the upgrader alone.
                assert_eq!(
                    read_release_wakes_upgrader(c),
                    has(f, G) && n == 2,
                    "read_release_wakes_upgrader {c:#x}"
                );
                for read in [false, true] {
                    for fair in [false, true] {
                        // No W; a reader not the last; a woken head, no H, not fair.
                        assert_eq!(
                            release_needs_no_turn(c, read, fair),
                            !has(f, W) || (read && n > 1) || (has(f, K) && !has(f, H) && !fair),
                            "release_needs_no_turn {c:#x} read {read} fair {fair}"
                        );
                    }
                }
                assert_eq!(list_locked(c), has(f, L), "list_locked {c:#x}");
            }
        }
        // The docs' transitions.
        assert_eq!(release(w(2, U | G), READER_BIAS, 0), w(1, U | G));
        assert!(release_needs_no_turn(w(3, W), true, true));
        assert!(!release_needs_no_turn(w(1, W), true, false));
        assert!(release_needs_no_turn(w(0, X | W | K), false, false));
        assert!(!release_needs_no_turn(w(0, X | W | K | H), false, false));
        assert!(!release_needs_no_turn(w(0, X | W | K), false, true));
    }

    #[test]
    fn shares_and_acquisitions() {
        assert_eq!(Class::Reader.share(), w(1, 0));
        assert_eq!(Class::Writer.share(), w(0, X));
        assert_eq!(Class::Upgrader.share(), w(1, U));
        for n in [0, 1, 2, 100] {
            for f in flags().filter(|&f| !has(f, X | U)) {
                let c = w(n, f);
                assert_eq!(add_reader(c), w(n + 1, f));
                assert_eq!(add_reader_wrapping(c), w(n + 1, f));
                assert_eq!(drop_reader_wrapping(add_reader_wrapping(c)), c);
                assert_eq!(add_share(c, Class::Reader.share()), w(n + 1, f));
                assert_eq!(add_share(c, Class::Upgrader.share()), w(n + 1, f | U));
                assert_eq!(add_share(w(0, f), Class::Writer.share()), w(0, f | X));
                if n > 0 {
                    assert_eq!(drop_reader(c), w(n - 1, f));
                    assert_eq!(drop_reader_wrapping(c), w(n - 1, f));
                }
            }
        }
        // The fetch_add wraps (the RMW does), and its inverse undoes it.
        assert_eq!(add_reader_wrapping(w((1 << 24) - 1, W)), w(0, W));
        assert_eq!(drop_reader_wrapping(w(0, W)), w((1 << 24) - 1, W));
    }

    #[test]
    fn releases_match_their_docs() {
        for f in flags().filter(|&f| !has(f, X | U)) {
            for n in [1, 2, 100] {
                // read unlock; upgradable unlock; downgrade of an upgradable read
                assert_eq!(release(w(n, f), READER_BIAS, 0), w(n - 1, f));
                assert_eq!(release(w(n, U | f), READER_BIAS | UPGRADE, 0), w(n - 1, f));
                assert_eq!(release(w(n, U | f), UPGRADE, 0), w(n, f));
            }
            // write unlock; downgrade; downgrade to upgradable
            assert_eq!(release(w(0, X | f), WRITER, 0), w(0, f));
            assert_eq!(release(w(0, X | f), WRITER, READER_BIAS), w(1, f));
            assert_eq!(
                release(w(0, X | f), WRITER, READER_BIAS | UPGRADE),
                w(1, U | f)
            );
        }
    }

    #[test]
    fn list_lock_and_woken_mark() {
        for n in NS {
            for f in flags().filter(|&f| !has(f, L)) {
                assert_eq!(lock_list(w(n, f)), w(n, f | L));
                assert_eq!(unlock_list(w(n, f | L)), w(n, f));
                assert_eq!(unlock_list(w(n, f)), w(n, f));
                assert_eq!(mark_woken(w(n, f)), w(n, f | K));
            }
        }
    }

    #[test]
    fn queued_take_grant_and_hand_off_match_their_docs() {
        for f in flags().filter(|&f| !has(f, X | U | G)) {
            for last in [false, true] {
                let cleared = H | K | if last { W | F } else { 0 };
                // A writer takes a free lock; an upgrader joins n readers.
                assert_eq!(
                    take_from_list(w(0, f), Class::Writer.share(), last),
                    w(0, (f | X) & !cleared)
                );
                assert_eq!(hand_to_writer(w(0, f), last), w(0, (f | X) & !cleared));
                for n in [0, 1, 5] {
                    assert_eq!(
                        take_from_list(w(n, f), Class::Upgrader.share(), last),
                        w(n + 1, (f | U) & !cleared)
                    );
                }
            }
            assert_eq!(hand_to_writer(w(0, W | H | K), false), w(0, X | W));
            assert_eq!(hand_to_writer(w(0, W | H | K | F), true), w(0, X));
            for n in [0, 1, 5] {
                for k in [1, 2, 256] {
                    for only_pref in [false, true] {
                        for none_left in [false, true] {
                            for no_pref_left in [false, true] {
                                let cleared = if only_pref { 0 } else { H }
                                    | if none_left { W | F } else { 0 }
                                    | if no_pref_left { F } else { 0 };
                                assert_eq!(
                                    grant_queued_readers(
                                        w(n, f),
                                        k,
                                        only_pref,
                                        none_left,
                                        no_pref_left
                                    ),
                                    w(n + k, f & !cleared)
                                );
                            }
                        }
                    }
                }
            }
        }
        // The docs' examples.
        assert_eq!(
            grant_queued_readers(w(0, W | H | F), 3, false, false, false),
            w(3, W | F)
        );
        assert_eq!(
            grant_queued_readers(w(0, W | H), 3, false, true, true),
            w(3, 0)
        );
        assert_eq!(
            grant_queued_readers(w(2, W | F | H), 1, true, false, true),
            w(3, W | H)
        );
    }

    #[test]
    fn upgrades_match_their_docs() {
        for f in flags().filter(|&f| !has(f, X | U | G)) {
            for n in [1, 2, 100] {
                assert_eq!(start_upgrading(w(n, U | f)), w(n, U | G | f));
                assert_eq!(cancel_upgrading(w(n, U | G | f)), w(n, U | f));
            }
            assert_eq!(upgrade_after_wait(w(1, U | G | f)), w(0, X | f));
            assert_eq!(upgrade_at_once(w(1, U | f)), w(0, X | f));
        }
    }

    #[test]
    fn owner_word_matches_its_docs() {
        const R: u32 = OWNER_READER;
        const N: u32 = OWNER_NONSPINNABLE;
        let o = |id: u32, f: u32| (id << OWNER_SHIFT) | f;
        assert_eq!(OWNER_SHIFT, 2);
        for id in [0, 1, 7, crate::tid::ANON_ID] {
            assert_eq!(owned_by_writer(id), o(id, 0));
            for f in 0..=(R | N) {
                assert_eq!(owner_id(o(id, f)), id);
                assert_eq!(is_nonspinnable(o(id, f)), has(f, N));
                assert_eq!(owned_by_readers(o(id, f)), o(0, R | (f & N)));
                assert_eq!(nonspinnable(o(id, f)), o(id, f | N));
            }
        }
    }
}

//! The owner word's encoding: its bits, named tests of a word value, and named
//! transitions, each documented with the change it makes in the module
//! docs' notation `(id, flags)` (W=WAITERS H=HANDOFF P=PICKUP L=WLOCK
//! K=WAKING; `f` stands for whatever other flags the word holds; one legend
//! for the mutex, the rwsem and the condvar: `docs/invariants.md`,
//! "State-diagram notation").
//!
//! ```text
//! owner:  31                             5     4      3      2       1       0
//!        +--------------------------------+--------+------+--------+--------+---------+
//!        | owner thread id (27 bits, 0=free)| WAKING |WLOCK | PICKUP |HANDOFF | WAITERS |
//!        +--------------------------------+--------+------+--------+--------+---------+
//! ```
//!
//! Everything here is a pure function of a `u32`: no atomics, no orderings.
//! The callers' CASes and RMWs (and their ordering comments) stay at the
//! places in the algorithm where they happen.

/// First waiter exists: unlock must take the slow path.
pub const WAITERS: u32 = 1 << 0;
/// The first waiter asked for a direct hand-off.
pub const HANDOFF: u32 = 1 << 1;
/// The lock was handed to the waiter named in the id field.
pub const PICKUP: u32 = 1 << 2;
/// Wait-list lock bit.
pub const WLOCK: u32 = 1 << 3;
/// A woken waiter has not re-armed or left yet: unlock need not wake anyone
/// (INV-WAKING).
pub const WAKING: u32 = 1 << 4;
/// All flag bits.
pub const FLAGS: u32 = WAITERS | HANDOFF | PICKUP | WLOCK | WAKING;
/// Bit offset of the owner id.
pub const ID_SHIFT: u32 = 5;

// The id field above the flag bits is exactly as wide as a thread id.
const _: () = assert!(ID_SHIFT + crate::tid::ID_BITS == 32);
const _: () = assert!(crate::tid::ANON_ID == (1 << (32 - ID_SHIFT)) - 1);

// ---------------------------------------------------------------------------
// Predicates: what a word value says
// ---------------------------------------------------------------------------

/// The id field: the owner, or the waiter a hand-off is addressed to (0 = free).
#[inline]
pub(crate) const fn owner_id(w: u32) -> u32 {
    w >> ID_SHIFT
}

/// `(0, f)`: nobody owns the lock (flags may be set).
#[inline]
pub(crate) const fn is_free(w: u32) -> bool {
    owner_id(w) == 0
}

/// `(x, f|H)` or `(x, f|P)`: a waiter is owed the lock (HANDOFF) or has it
/// (PICKUP); a free id field may not be taken and spinning is pointless.
#[inline]
pub(crate) const fn owed_to_waiter(w: u32) -> bool {
    w & (HANDOFF | PICKUP) != 0
}

/// `(x, f|W)`: the wait list is non-empty.
#[inline]
pub(crate) const fn has_waiters(w: u32) -> bool {
    w & WAITERS != 0
}

/// `(x, f|K)`: a woken waiter has not re-armed or left yet.
#[inline]
pub(crate) const fn wake_pending(w: u32) -> bool {
    w & WAKING != 0
}

/// `(x, f|H)`: the first waiter asked for a hand-off.
#[inline]
pub(crate) const fn handoff_requested(w: u32) -> bool {
    w & HANDOFF != 0
}

/// `(x, f|P)`: the lock was handed to the waiter `x`, who has not picked it up.
#[inline]
pub(crate) const fn handed_over(w: u32) -> bool {
    w & PICKUP != 0
}

/// `(id, f|P)`: the lock was handed to `id`.
#[inline]
pub(crate) const fn handed_to(w: u32, id: u32) -> bool {
    handed_over(w) && owner_id(w) == id
}

/// `(x, f|L)`: someone holds the wait-list lock.
#[inline]
pub(crate) const fn list_locked(w: u32) -> bool {
    w & WLOCK != 0
}

/// Whether an unlock of `w` may just drop the id, keeping the flags, with no
/// WLOCK and no wake-up: no HANDOFF, and either no waiters (`-` or only
/// WLOCK: a waiter enqueueing) or, for an unfair unlock, a woken waiter still
/// pending (`W|K`), which will retry before it sleeps.
#[inline]
pub(crate) const fn unlock_needs_no_wake(w: u32, fair: bool) -> bool {
    !handoff_requested(w) && (!has_waiters(w) || (wake_pending(w) && !fair))
}

// ---------------------------------------------------------------------------
// Transitions: the word after a change
// ---------------------------------------------------------------------------

/// `(0, -) -> (id, -)`: the word of a lock held by `id` and nothing else; the
/// fast paths' CAS operand (acquired from 0, released back to 0).
#[inline]
pub(crate) const fn locked_by(id: u32) -> u32 {
    id << ID_SHIFT
}

/// `(0, f) -> (id, f)`: take a free lock, keeping the flags (trylock, a
/// spinner's or a woken waiter's acquisition; `f` has neither H nor P).
#[inline]
pub(crate) const fn claim(w: u32, id: u32) -> u32 {
    w | locked_by(id)
}

/// `(id, f|P) -> (id, f)`: the waiter the lock was handed to picks it up.
#[inline]
pub(crate) const fn pick_up(w: u32) -> u32 {
    w & !PICKUP
}

/// `(x, f) -> (x, f|H)`: the first waiter asks for a hand-off (`x` != 0).
#[inline]
pub(crate) const fn ask_handoff(w: u32) -> u32 {
    w | HANDOFF
}

/// `(me, f) -> (0, f)`: release, keeping every flag (when
/// [`unlock_needs_no_wake`]).
#[inline]
pub(crate) const fn release_keep_flags(w: u32) -> u32 {
    w & FLAGS
}

/// `(x, f) -> (x, f|L)`: take the wait-list lock (`f` has no L).
#[inline]
pub(crate) const fn lock_list(w: u32) -> u32 {
    w | WLOCK
}

/// `(x, f|L) -> (x, (f|set) & !clear)`: release the wait-list lock, setting
/// `set` and clearing `clear` in the same RMW.
#[inline]
pub(crate) const fn unlock_list(w: u32, set: u32, clear: u32) -> u32 {
    (w | set) & !(clear | WLOCK)
}

/// `(me, L) -> (0, -)`: release with WLOCK held and the wait list empty;
/// owner and WLOCK go in one CAS.
pub(crate) const RELEASE_NO_WAITERS: u32 = 0;

/// `(me, W|L) -> (0, W|K)`: release with WLOCK held, the head marked WOKEN;
/// owner and WLOCK go in one CAS, WAKING tells later unlocks that the head
/// is running and needs no wake-up.
#[inline]
pub(crate) const fn release_wake_head() -> u32 {
    WAITERS | WAKING
}

/// `(me, W|H|L) -> (head, W|K|P)`: release with WLOCK held and hand the lock
/// to the head waiter `head` (HANDOFF was asked for, or a fair unlock); owner
/// and WLOCK go in one CAS, the head picks the lock up by clearing P.
#[inline]
pub(crate) const fn hand_to_head(head: u32) -> u32 {
    locked_by(head) | PICKUP | WAITERS | WAKING
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn predicates_read_the_fields() {
        assert!(is_free(0) && is_free(FLAGS));
        assert_eq!(owner_id(locked_by(7) | FLAGS), 7);
        assert!(!is_free(locked_by(1)));
        assert!(owed_to_waiter(HANDOFF) && owed_to_waiter(PICKUP));
        assert!(!owed_to_waiter(WAITERS | WLOCK | WAKING));
        assert!(has_waiters(WAITERS) && !has_waiters(FLAGS & !WAITERS));
        assert!(wake_pending(WAKING) && !wake_pending(FLAGS & !WAKING));
        assert!(handed_to(locked_by(3) | PICKUP, 3));
        assert!(!handed_to(locked_by(3) | PICKUP, 4) && !handed_to(locked_by(3), 3));
        assert!(list_locked(WLOCK) && !list_locked(FLAGS & !WLOCK));
    }

    #[test]
    fn unlock_needs_no_wake_cases() {
        let me = locked_by(5);
        assert!(unlock_needs_no_wake(me, false) && unlock_needs_no_wake(me | WLOCK, true));
        assert!(unlock_needs_no_wake(me | WAITERS | WAKING, false));
        assert!(!unlock_needs_no_wake(me | WAITERS | WAKING, true));
        assert!(!unlock_needs_no_wake(me | WAITERS, false));
        assert!(!unlock_needs_no_wake(
            me | HANDOFF | WAITERS | WAKING,
            false
        ));
    }

    #[test]
    fn transitions_match_their_docs() {
        let me = locked_by(5);
        assert_eq!(claim(WAITERS | WAKING, 9), locked_by(9) | WAITERS | WAKING);
        assert_eq!(
            pick_up(locked_by(9) | WAITERS | WAKING | PICKUP),
            locked_by(9) | WAITERS | WAKING
        );
        assert_eq!(ask_handoff(me | WAITERS), me | WAITERS | HANDOFF);
        assert_eq!(release_keep_flags(me | WAITERS | WAKING), WAITERS | WAKING);
        assert_eq!(lock_list(me | WAITERS), me | WAITERS | WLOCK);
        assert_eq!(
            unlock_list(me | WLOCK | WAKING, WAITERS, WAKING),
            me | WAITERS
        );
        assert_eq!(release_wake_head(), WAITERS | WAKING);
        let h = hand_to_head(9);
        assert!(handed_to(h, 9) && has_waiters(h) && wake_pending(h) && !list_locked(h));
        assert!(is_free(RELEASE_NO_WAITERS) && RELEASE_NO_WAITERS & FLAGS == 0);
    }
}

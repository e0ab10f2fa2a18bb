//! Spinning on a lock's owner, written once for the mutex (`mutex/spin.rs`)
//! and the rwsem (`rwlock/spin.rs`): the kernel's `mutex_spin_on_owner` and
//! `rwsem_spin_on_owner` share this loop, and each lock only says what one
//! poll of its word means ([`Seen`]).
//!
//! One pass polls the word through the owner-poll backoff
//! ([`wait::PollBackoff`]: only a poll that missed the cache pauses), gives
//! each owner `per_owner_ns` (an owner that holds the lock longer is
//! probably not running), restarts that budget and the backoff when the
//! owner changes, publishes an OSQ heartbeat on `beat` after every pause and
//! every [`OSQ_HEARTBEAT_EVERY`](crate::tune::fixed::OSQ_HEARTBEAT_EVERY)-th
//! poll (so that queued spinners can tell a running head from a preempted
//! one), and stops when `total` runs out.
//!
//! ```text
//!  poll --Done(r)--> return r            (taken, owed to a waiter, owner gone or changed kind)
//!  poll --Lost--> poll again             (free, but another thread's CAS won)
//!  poll --NewOwner--> restart budgets, poll again
//!  poll --Held--> per-owner budget out? return `slow` : pause (only after a miss), poll again
//!  every pass: heartbeat (after a pause, and every 64th), `total` out? return `slow`, cpu_relax
//! ```
//!
//! ```
//! // The loop is internal; the locks use it through their optimistic spinning.
//! let m = klock::Mutex::new(0);
//! *m.lock() += 1;
//! assert_eq!(*m.lock(), 1);
//! ```

use crate::node::Node;
use crate::osq;
use crate::wait::{self, PollBackoff, SpinBudget};

/// What one poll of the lock word saw, as the lock reads its own word.
pub(crate) enum Seen<R> {
    /// Stop spinning with this result.
    Done(R),
    /// The lock was free but our trylock lost: poll again at once.
    Lost,
    /// Another owner holds it now: its per-owner budget and the poll
    /// backoff start again.
    NewOwner,
    /// The same owner still holds it.
    Held,
}

/// Spin while `look` reports the lock held (see the module docs); returns
/// what `look` decided, or `slow` when one owner held the lock past
/// `per_owner_ns` or `total` ran out.
#[inline]
pub(crate) fn spin_on_owner<R>(
    total: &mut SpinBudget,
    per_owner_ns: u64,
    poll: &mut PollBackoff,
    beat: Option<&Node>,
    slow: R,
    mut look: impl FnMut(&mut PollBackoff) -> Seen<R>,
) -> R {
    let mut per_owner = SpinBudget::new(per_owner_ns);
    let mut iter = 0u32;
    loop {
        let delayed = match look(poll) {
            Seen::Done(r) => return r,
            Seen::Lost => false,
            Seen::NewOwner => {
                per_owner.restart();
                poll.restart();
                false
            }
            Seen::Held => {
                if per_owner.expired() {
                    return slow;
                }
                // Pauses only if this poll missed the cache (the owner
                // re-took the lock since the last one): `PollBackoff::poll`.
                poll.pause()
            }
        };
        iter = iter.wrapping_add(1);
        if let Some(n) = beat
            && (delayed || iter.is_multiple_of(crate::tune::fixed::OSQ_HEARTBEAT_EVERY))
        {
            osq::heartbeat(n);
        }
        if total.expired() {
            return slow;
        }
        wait::cpu_relax();
    }
}

//! klock's general-purpose sleeping mutex: the kernel mutex (seed 004 grown
//! into its 4.10+ form) in user space. One-CAS fast paths, optimistic spinning
//! queued through an [`Osq`], a FIFO wait list of per-thread nodes, each waiter
//! sleeping on its own futex word, and bounded unfairness through HANDOFF.
//!
//! # Word layout (12 bytes, three `AtomicU32`)
//!
//! ```text
//! owner:  31                             5     4      3      2       1       0
//!        +--------------------------------+--------+------+--------+--------+---------+
//!        | owner thread id (27 bits, 0=free)| WAKING |WLOCK | PICKUP |HANDOFF | WAITERS |
//!        +--------------------------------+--------+------+--------+--------+---------+
//! list:   bits 16-31: head waiter's node tail code (0 = no waiter); bits 0-15: 0
//! osq:    bits 16-31: OSQ tail (see crate::osq); bits 0-15: 0
//! ```
//!
//! * **owner id**: a per-thread id, unique among live threads (recycled at
//!   thread exit). The kernel stores the task pointer; we need the identity for
//!   the "owner changed" spinning rule and to name the PICKUP recipient.
//! * **WAITERS**: the wait list is non-empty; unlock must take the slow path.
//! * **HANDOFF**: the first waiter waited longer than `KLOCK_MUTEX_HANDOFF_NS`;
//!   unlock must not release the lock but pass it to the first waiter.
//! * **PICKUP**: the lock was handed to the thread named in the id field; only
//!   that waiter may take it (it clears PICKUP).
//! * **WLOCK**: the wait-list lock (the kernel's `wait_lock`), a bit lock. It
//!   lives in the owner word so that the unlock slow path can release the
//!   owner and the wait list **in one CAS** (see "Lifetime" below).
//! * **WAKING**: an unlock marked a waiter WOKEN and that waiter has neither
//!   re-armed nor left the list yet: it is running (or about to), and will
//!   retry before it sleeps. While WAKING is set (and HANDOFF is not), unlock
//!   only drops the id (one CAS, no WLOCK, no wake): the rule "do not wake
//!   another waiter while a woken one has not run yet" (INV-WAKING). Set only by the unlock
//!   slow path (with the head WOKEN, under WLOCK); cleared under WLOCK by the
//!   woken waiter when it re-arms, and by every waiter that leaves the list.
//!   Clearing is always safe (it only costs a wake-up).
//!
//! Everything zero = unlocked with no waiters (`const INIT`; `docs/design.md`,
//! principle P7).
//!
//! # State diagram (owner word as (id, flags); W=WAITERS H=HANDOFF P=PICKUP K=WAKING L=WLOCK)
//!
//! The letters are those of the one legend for the mutex, the rwsem and the
//! condvar (`docs/invariants.md`, "State-diagram notation").
//!
//! ```text
//!  (0,-) --lock fast CAS--> (me,-) --unlock fast CAS--> (0,-)
//!  (x,-) --waiter enqueues under WLOCK--> (x,W)
//!  (x,W) --unlock: WLOCK, wake head, CAS--> (0,W|K) --anyone's trylock--> (y,W|K)
//!  (y,W|K) --unlock: one CAS, no wake--> (0,W|K)
//!  (x,W|K) --woken head re-arms (or a waiter leaves) under WLOCK--> (x,W)
//!  (x,W[|K]) --first waiter waited > handoff ns--> (x,W[|K]|H)
//!  (x,W[|K]|H) --unlock: WLOCK, CAS--> (head,W|K|P) --head picks up--> (head,W|K)
//!  (x,W[|K]) --unlock, head first >= fair ns: WLOCK, CAS--> (head,W|K|P)
//!  (head,W|K) --head leaves the list (clears K): the next unlock wakes the new head--> (head,W)
//!  (me,W) --last waiter leaves the list under WLOCK--> (me,-)
//!  (x,f) --condvar requeue under WLOCK--> (x,f|W)    (wakes the head if x = 0)
//! ```
//!
//! The word is read through named predicates (`owner_id`, `is_free`,
//! `owed_to_waiter`, `has_waiters`, `wake_pending`, ...) and written through
//! named transitions (`claim`, `pick_up`, `release_wake_head`,
//! `hand_to_head`, ...), each documented with its `(id, flags)` change, in
//! `mutex/word.rs`.
//!
//! Unlock is one `CAS(me -> 0)` when the word holds only the owner; any flag
//! sends it to the slow path, which is one more CAS when only WAITERS|WAKING
//! (or nothing but WLOCK) is set.
//!
//! # Waiting
//!
//! Slow path: try, then (under a cgroup CPU quota, `wait::quota_limited()`)
//! the floor's spin, a 2 µs read-only spin while the lock is held and no
//! waiter is queued, or else **optimistic spinning** (if the policy allows it,
//! `KLOCK_MUTEX_SPIN=1`, this thread's adaptive spinning score says its
//! recent spins mostly succeeded (`mutex/adapt.rs`: otherwise it skips
//! spinning and the yield rounds and queues at once, except for a periodic
//! probe), and the OSQ position is at most
//! `KLOCK_OSQ_MAX_SPINNERS` or effective CPUs - 1): only the OSQ head polls
//! the owner word; it stops when the lock is free (takes it), when HANDOFF or
//! PICKUP appear, when one owner holds the lock longer than
//! `KLOCK_MUTEX_SPIN_NS` (the owner probably is not running: hint), or after
//! `KLOCK_MUTEX_SPIN_MAX_NS` in total (our `need_resched()`). While one
//! owner holds it, it backs off between polls that missed the cache (up to
//! `KLOCK_MUTEX_POLL_MAX_NS`). Then the thread
//! takes a node from [`crate::node`], appends it to the FIFO wait list under
//! WLOCK, sets WAITERS, and sleeps on its node's `state` word. Unlock wakes
//! exactly the first waiter. A woken first waiter spins on the owner (without
//! the OSQ) before sleeping again; once it has waited past the handoff
//! threshold it sets HANDOFF, waits running (within `KLOCK_MUTEX_SPIN_NS`)
//! for the next unlock to hand it the lock (PICKUP), and only then sleeps
//! again, so that a hand-off to a running waiter does not idle the lock for
//! a wake-up. **INV-HANDOFF-RUNNING**: the lock is handed only to a waiter
//! that asked for it while running, with one rate-bounded exception,
//! **eventual fairness** (`KLOCK_MUTEX_FAIR_HANDOFF_NS`, 1 ms): an unlock
//! hands the lock to a first waiter that has been first that long, asleep or
//! not, so that a crowd of running newcomers cannot keep the head waiting
//! for ever (at 128 threads on 2 CPUs it did: max/min 443-1 444). The next
//! head's clock starts when it becomes first, so this idles the lock for at
//! most one wake-up per interval. A waiter that leaves the list does not
//! pass HANDOFF on to a new head that sleeps; it clears WAKING, so the next
//! unlock wakes that head, which asks for the hand-off itself once it runs
//! and fails: a hand-off to a sleeper idles the lock for a wake-up (history:
//! `docs/results/2026-11-29-tunables.md`).
//!
//! Node words while on the wait list, read and written only through the
//! typed view [`Waiter`](crate::waitlist::Waiter): `next`/`prev` circular
//! doubly-linked list links (tail codes), `state` the futex word
//! ([`WaiterState`]), `ident` the waiter's thread id
//! ([`Waiter::thread_id`](crate::waitlist::Waiter::thread_id)), `stamp`
//! when the waiter became first (or queued), read by eventual fairness
//! (the running hand-off threshold is timed by the waiter itself,
//! INV-HANDOFF-RUNNING).
//! `state` is re-armed and set only under WLOCK (INV-WLOCK-STATE, defined
//! in `docs/invariants.md`), which is what rules out a lost wake-up, and
//! (since a waiter needs WLOCK to leave the list) what makes every store
//! into another waiter's node a store into a node still on our list
//! (INV-WAKE-ADDR, [`crate::node`]): an unlocker's WOKEN store either follows
//! the re-arm (the futex wait sees it) or precedes it, and then its release of
//! the owner happens-before the waiter's next trylock.
//!
//! # Lifetime
//!
//! The unlock slow path takes WLOCK while still owning the lock, marks the
//! first waiter WOKEN, and then releases owner and WLOCK with one CAS. After
//! that CAS it only calls `futex_wake` on the waiter's node, which lives in the
//! type-stable node registry. So, unlike the kernel mutex, an unlock never
//! touches the mutex after the release that lets another thread free it.
//! (Lockers and waiters do touch it while they are borrowing it, as usual.)
//!
//! # Fallback
//!
//! A thread that cannot get a node (see [`crate::node`]) or an id waits
//! unqueued: it polls the word within the spin budget and yields in between
//! (unfair but correct; counted as `mutex_no_node`).
//!
//! # Source layout
//!
//! * `mutex/mod.rs` (this file): the word layout, flags, public types, the
//!   [`RawMutex`] struct, the inline fast paths (`lock`, `try_lock`,
//!   `unlock`), the shared `try_acquire` and `wunlock`, `lock_slow`'s order
//!   of attempts, the `lock_api` impls and the unit tests;
//! * `mutex/word.rs`: the owner-word encoding (constants, predicates,
//!   transitions);
//! * `mutex/spin.rs`: optimistic spinning (`spin_phase`, `spin_on_owner`,
//!   `optimistic_spin`, `yield_rounds`) and the unqueued fallback
//!   (`wait_unqueued`);
//! * `mutex/adapt.rs`: the adaptive spinning hint (a per-thread score of
//!   recent spin outcomes; `KLOCK_MUTEX_ADAPT*`);
//! * `mutex/sleep.rs`: the wait-list waiter (`wait_queued`,
//!   `wait_for_pickup`, `request_handoff`, `leave_on_timeout`);
//! * `mutex/unlock.rs`: the unlock slow path (`unlock_slow`) and the
//!   condvar's `requeue`.
//!
//! The wait list itself, the `Waiter` view and [`WaiterState`] live in
//! [`crate::waitlist`].
//!
//! ```
//! let m = klock::Mutex::new(0u32);
//! *m.lock() += 1;
//! assert_eq!(*m.lock(), 1);
//! ```

mod adapt;
mod barge;
mod floor;
mod grant;
mod oneword;
mod raw;
mod sleep;
mod spin;
#[cfg(test)]
#[cfg(not(loom))]
mod tests;
mod token;
mod unlock;
mod word;

pub use crate::spin_policy::{SpinNoQueue, SpinOff, SpinOsq, SpinPlain, SpinPolicy};
pub use crate::waitlist::WaiterState;
pub use adapt::{adapt_score, set_adapt_score};
#[cfg(not(loom))]
pub use barge::MutexBarge;
pub use barge::{
    GRANTED as GRANTED_TO_ASKER, HANDOFF as HANDOFF_ASKED, LOCKED as BARGE_LOCKED, RawMutexBarge,
    SLEEPER, WOKEN as BARGE_WOKEN,
};
#[cfg(not(loom))]
pub use floor::MutexFloor;
pub use floor::{FLOOR_CONTENDED, FLOOR_LOCKED, FLOOR_UNLOCKED, RawMutexFloor};
#[cfg(not(loom))]
pub use grant::MutexGrant;
pub use grant::{
    CONTENDED as GRANT_CONTENDED, GRANTED as GRANT_GRANTED, HANDOFF as GRANT_HANDOFF,
    LOCKED as GRANT_LOCKED, RawMutexGrant,
};
pub use raw::RawMutex;
pub use token::MutexToken;
pub use word::{FLAGS, HANDOFF, ID_SHIFT, PICKUP, WAITERS, WAKING, WLOCK};

// ---------------------------------------------------------------------------
// Thread ids
// ---------------------------------------------------------------------------

// The allocator lives in `crate::tid`; the mutex keeps its public names.
// (`word` checks that the id field is exactly as wide as a thread id.)
pub use crate::tid::{ANON_ID, current_id};

/// A mutex (`lock_api::Mutex` over [`RawMutex`]) with OSQ-queued optimistic
/// spinning. Size: 12 bytes + `T` (rounded to `T`'s alignment).
///
/// ```
/// static M: klock::Mutex<Vec<u32>> = klock::Mutex::new(Vec::new());
/// M.lock().push(1);
/// assert_eq!(M.lock().len(), 1);
/// ```
#[cfg(not(loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex<SpinOsq>, T>;

/// A guard of [`Mutex`] (`lock_api::MutexGuard`; a reference plus the 4-byte
/// token: 16 bytes on 64-bit).
///
/// ```
/// let m = klock::Mutex::new(1);
/// let g: klock::MutexGuard<'_, i32> = m.lock();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex<SpinOsq>, T>;

/// A mutex that never spins (sleeps at once): the seed's MUTEX_SPIN_ON_OWNER
/// off. Size: 12 bytes + `T`.
///
/// ```
/// let m = klock::MutexNoSpin::new(5);
/// assert_eq!(*m.lock(), 5);
/// ```
#[cfg(not(loom))]
pub type MutexNoSpin<T> = lock_api::Mutex<RawMutex<SpinOff>, T>;

/// A mutex whose spinners all poll the owner (no OSQ): seed 004's ablation.
/// Size: 12 bytes + `T`.
///
/// ```
/// let m = klock::MutexNoQueue::new(5);
/// assert_eq!(*m.lock(), 5);
/// ```
#[cfg(not(loom))]
pub type MutexNoQueue<T> = lock_api::Mutex<RawMutex<SpinNoQueue>, T>;

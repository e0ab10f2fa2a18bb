//! klock's reader-writer lock: the kernel rwsem as reworked by seed 003
//! (qrwlock-like count word, owner tracking in the fast paths, waiter
//! hand-off, optimistic spinning of writers and, optionally, of readers, a
//! reader wake-up that wakes every queued reader) plus the later kernel's
//! reader lock stealing, in user space on klock's shared mechanisms: the
//! wait list ([`crate::waitlist`]), the OSQ ([`crate::osq`]), per-thread
//! nodes ([`crate::node`]) and thread ids ([`crate::tid`]).
//!
//! # Word layout (16 bytes: four `AtomicU32`)
//!
//! ```text
//! count:  31        30 ............ 8  7       6        5          4       3      2        1        0
//!        +---------+------------------+-------+--------+-----------+---------+------+--------+--------+--------+
//!        |READFAIL |  reader count    | PREFQ | WAKING | UPGRADING | UPGRADE | WLOCK|HANDOFF |WAITERS | WRITER |
//!        +---------+------------------+-------+--------+-----------+---------+------+--------+--------+--------+
//!        (READFAIL is the top bit of the reader count: the overflow guard)
//! owner:  bits 2-31 writer thread id (0 = none) | bit 1 NONSPINNABLE | bit 0 READER_OWNED
//! list:   bits 16-31: head waiter's node tail code (see crate::waitlist)
//! osq:    bits 16-31: OSQ tail (see crate::osq)
//! ```
//!
//! * **WRITER**: a writer holds the lock.
//! * **WAITERS**: the wait list is non-empty: readers' fast path fails, and
//!   every unlock that could let a waiter in takes the slow path.
//! * **HANDOFF**: the first waiter (a writer) has waited past
//!   `KLOCK_RWSEM_HANDOFF_NS`: nobody else may take the lock; the next
//!   unlock that frees it grants it to that waiter (seed 003 patch 7).
//! * **WLOCK**: the wait-list lock (the kernel's `wait_lock`), a bit in the
//!   count word, so that an unlock releases its share and the list lock in
//!   one RMW and touches nothing but a node's futex address afterwards.
//! * **UPGRADE**: an upgradable reader holds the lock (it also holds one
//!   reader count); excludes writers and other upgradable readers.
//! * **UPGRADING**: the upgradable reader is waiting for the other readers
//!   to leave: new readers fail their fast path and queue.
//! * **WAKING** (INV-WAKING): the writer or upgrader at the head was woken
//!   and has not re-tried yet. While it is set (and no hand-off is owed) an
//!   unlock releases with one CAS and wakes nobody: the woken waiter clears
//!   WAKING under WLOCK before it re-tries, in an RMW on this word, so an
//!   unlock ordered before that RMW is seen by the re-try and one ordered
//!   after it sees WAKING clear and wakes (the mutex's WAKING rule).
//! * **PREFQ** (INV-PREFQ): a reader-preferring reader (the
//!   `*_prefer_readers` reads, glibc's default rwlock kinds) may be queued.
//!   Set with WAITERS under WLOCK when one queues; cleared with WAITERS, or
//!   by a grant pass that finds none left. Never set without WAITERS. While
//!   it is set, every reader-preferring acquisition that leaves the lock
//!   read-owned passes the turn under WLOCK, and `hand_on` grants the queued
//!   reader-preferring readers whenever the lock stays read-owned, even
//!   behind a writer at the head: such a reader never sleeps while the lock
//!   is read-owned (a reader holding the lock may be waiting for it).
//! * **reader count** (bits 8-31): readers holding the lock, plus readers
//!   whose fast-path add failed and that have not taken it back yet.
//! * **owner**: a hint for spinners (seed 003 patch 3): the writer's thread id, or
//!   READER_OWNED; NONSPINNABLE once a writer gave up spinning on readers
//!   (seed 003 patch 13), until a writer takes the lock or the last reader leaves
//!   with waiters queued.
//!
//! Everything zero = unlocked (`const INIT`).
//!
//! # State diagram (count as (readers, flags); X=WRITER W=WAITERS H=HANDOFF K=WAKING U=UPGRADE G=UPGRADING F=PREFQ)
//!
//! The letters are those of the one legend for the mutex, the rwsem and the
//! condvar (`docs/invariants.md`, "State-diagram notation").
//!
//! ```text
//!  (0,-) --read: fetch_add--> (1,-) --read: fetch_add--> (n+1,-)
//!  (n,-) --read unlock: CAS--> (n-1,-)
//!  (0,-) --write: CAS--> (0,X) --write unlock: CAS--> (0,-)
//!  (x,X|..) or (n,W) --failed reader/writer queues under WLOCK--> (..,W)
//!  (0,X|W) --write unlock, head readers: grant_readers--> (k,[W])      k readers granted at once
//!  (0,X|W) --write unlock, head writer: hand_on marks it woken--> (0,W|K)
//!  (x,W|K) --any unlock while K: one CAS, no WLOCK, no wake--> (0,W|K)
//!  (0,W|K) --the woken writer clears K and re-tries (take_queued)--> (0,X[|W])
//!  (1,W)   --last read unlock: wake head writer--> (0,W|K)
//!  (0,W|H) --unlock, head writer asked for hand-off: hand_on passes X--> (0,X[|W])
//!  (0,X)   --downgrade--> (1,-) (and queued readers granted)
//!  (n,W[|H]), n>0 --reader-preferring read: CAS--> (n+1,W[|H])    joins past a waiting writer
//!  (n,W|F), n>0, writer at the head --hand_on: grant queued reader-preferring readers--> (n+k,W[|F])
//!  (1,U)   --upgrade: set G, wait for the other readers--> (1,U|G) --> (0,X)
//!  (n,W[|H][|U|G]), n>0 --recursive read: fetch_add kept--> (n+1,W[|H][|U|G])  past waiters and an upgrade
//!  (n,U|G[|W]) --timed upgrade gives up (cancel_upgrade), then hand_on--> (n+k,U[|W])  readers queued meanwhile granted
//!  (x,W..) --timed upgradable read gives up (leave)--> (x,[W])  K cleared, the turn passed on
//!  (1,U|W) --unlock_upgradable_fair, head writer: hand_on passes X--> (0,X[|W])
//!  (n,U)   --downgrade_upgradable--> (n,-) (an upgrader at the head woken)
//!  (0,X)   --downgrade_to_upgradable--> (1,U) (and queued readers granted)
//! ```
//!
//! The words are read through named predicates (`readers`, `is_free`,
//! `is_read_lockable`, `is_lockable_by`, `handoff_owed`, ...) and the new
//! word values are computed by named transitions (`add_reader`, `release`,
//! `take_from_list`, `grant_queued_readers`, `hand_to_writer`,
//! `upgrade_after_wait`, ...), each documented with its `(readers, flags)`
//! change (L=WLOCK there), in `rwlock/word.rs`.
//!
//! # Policy
//!
//! * Readers queue behind any waiter (the fast path fails on WAITERS), so a
//!   reader stream cannot starve a queued writer. The reader-preferring
//!   reads (an extra API for the pthread layer, glibc's default kinds) are
//!   the exception: they join whenever the lock is read-owned, past waiting
//!   writers and past a hand-off owed to one; writers may then wait
//!   indefinitely, as with glibc.
//! * A woken writer re-tries and may lose to a spinning writer or a stealing
//!   reader; once it has waited `KLOCK_RWSEM_HANDOFF_NS` it sets HANDOFF,
//!   spins while it is first (seed 003 patch 14), and the next unlock grants it the
//!   lock directly: exactly one owner results, and bounded unfairness.
//! * A reader wake-up grants the lock to every queued reader, up to
//!   `KLOCK_RWSEM_WAKE_READERS`, skipping queued writers (seed 003 patch 15).
//! * Waking a writer that is already woken is skipped (seed 003 patch 12).
//! * A reader that fails the fast path (`KLOCK_RWSEM_READER`, named by
//!   [`ReaderMode`](crate::tune::ReaderMode)): `Steal` (1) steals the lock
//!   when no writer holds it, no hand-off is owed and no other reader holds
//!   it; `StealThenWaitRunning` (4, the default) steals as 1 and then waits
//!   running, within `KLOCK_RWSEM_READ_WAIT_NS`, for a free lock before it
//!   queues (a sleeping reader is what let writers take 80-98 % of the
//!   ops); `SpinOnWriter` (2) spins on a writer owner through the OSQ (seed
//!   003 patch 8) unless the owner word says NONSPINNABLE (seed 003 patch
//!   13); `JoinReaders` (3) also joins other readers (a queued writer then
//!   gets in through its hand-off timer, INV-HANDOFF-TIMER); `Queue` (0)
//!   queues.
//! * Writers spin (policy [`SpinOsq`]) through the OSQ on a writer owner
//!   (within `KLOCK_RWSEM_SPIN_NS` per owner, `KLOCK_RWSEM_SPIN_MAX_NS` in
//!   all) and on a reader-owned lock for `KLOCK_RWSEM_RSPIN_NS` + 500 ns
//!   per reader (seed 003 patch 10, time-based); past that they mark the owner
//!   NONSPINNABLE. [`SpinOff`] (`klock_rwsem_nospin`) never spins.
//!
//! # Lifetime (INV-WAKE-ADDR)
//!
//! An unlock takes WLOCK *while it still holds its share* when waiters may
//! need it, grants or marks waiters under WLOCK, and releases its share and
//! WLOCK in one CAS; after that it only calls `futex_wake` on nodes (type
//! stable) or, for an upgrader, on the count word.
//!
//! # Source layout
//!
//! * `rwlock/mod.rs` (this file): the word layout, state diagram and policy,
//!   the [`RawRwLock`] struct and [`WriteToken`], the diagnostics and the
//!   owner hint, the inline fast paths (`lock_shared`, `try_lock_shared`,
//!   `unlock_shared`, `unlock_any`, `lock_exclusive`, `try_lock_exclusive`,
//!   `try_unlock_uncontended`, `unlock_exclusive`), the shared `add_while`
//!   and `try_take`, the `lock_api` impls, [`RwLockRecursiveExt`] and the
//!   type aliases ([`RwLock`], ...), and the unit tests of the whole lock;
//! * `rwlock/word.rs`: the count and owner words' encoding (constants,
//!   predicates, the waiters' `Class`, transitions), with its unit tests;
//! * `rwlock/read.rs`: recursive, reader-preferring and timed reads, the
//!   read slow path (stealing, the running wait, spinning or queueing) and
//!   the reader wake-ups (`drop_reader_count`, `wake_if_free`,
//!   `wake_readers_into_read_owned`), with the unit tests of the
//!   reader-preferring and recursive reads;
//! * `rwlock/write.rs`: the timed write lock and the write slow path;
//! * `rwlock/spin.rs`: optimistic spinning (`optimistic_spin`, `spin_loop`,
//!   `spin_on_owner`, `mark_nonspinnable`);
//! * `rwlock/queue.rs`: the wait-list node both sides use (the `RwWaiter`
//!   view, its `Class`), a contender's WLOCK (`wlock`, `wunlock`) and
//!   `unlink`;
//! * `rwlock/sleep.rs`: the waiter side: queueing and waiting (`wait`,
//!   `wait_queued`, `wait_granted`, `wait_retry`, `take_queued`,
//!   `await_grant`, the timed-out waiter's `leave`) and the no-node
//!   fallback `wait_unqueued`;
//! * `rwlock/wake.rs`: the waker side: the release slow path
//!   (`release_share`, in named steps), passing the turn under WLOCK
//!   (`pass_turn_and_wunlock`, `hand_on`, `grant_readers`) and the wake-up
//!   queue `WakeQ`;
//! * `rwlock/upgrade.rs`: downgrades, upgradable reads and upgrades, with
//!   their unit tests.
//!
//! The wait list itself and the `Waiter` view it builds on live in
//! [`crate::waitlist`].
//!
//! ```
//! let l = klock::RwLock::new(5);
//! {
//!     let a = l.read();
//!     let b = l.read();
//!     assert_eq!(*a + *b, 10);
//! }
//! *l.write() += 1;
//! assert_eq!(*l.read(), 6);
//! ```

mod floor;
mod queue;
mod raw;
mod read;
#[cfg(not(loom))]
mod recursive;
mod sleep;
mod spin;
#[cfg(test)]
#[cfg(not(loom))]
mod tests;
mod upgrade;
mod wake;
mod word;
mod write;

pub use crate::spin_policy::{SpinOff, SpinOsq, SpinPolicy};
pub use floor::{
    RW_FLOOR_MASK, RW_FLOOR_MAX_READERS, RW_FLOOR_READERS_WAITING, RW_FLOOR_UPGRADABLE,
    RW_FLOOR_WRITE_LOCKED, RW_FLOOR_WRITERS_WAITING, RawRwLockBatched, RawRwLockFloor,
    RawRwLockFloorOf, RawRwLockPhased, WRITER_BATCH_US,
};
#[cfg(not(loom))]
pub use floor::{RwLockBatched, RwLockFloor, RwLockPhased};
pub use raw::{RawRwLock, WriteToken};
#[cfg(not(loom))]
pub use recursive::{RawRwLockRecursive, RwLockRecursiveExt};
pub use word::{
    HANDOFF, OWNER_NONSPINNABLE, OWNER_READER, OWNER_SHIFT, PREFQ, READER_BIAS, READER_MASK,
    READER_SHIFT, READFAIL, UPGRADE, UPGRADING, WAITERS, WAKING, WLOCK, WRITER, is_free,
    is_pref_read_lockable, is_read_lockable, is_recursive_read_lockable, owner_id, readers,
};

/// klock's reader-writer lock: `lock_api::RwLock` over
/// [`RawRwLockBatched`], the floor protocol with turns and writer batches
/// (`docs/rwsem.md`, "The default"). 16 bytes + `T` (rounded to `T`'s
/// alignment). Upgradable, downgradable, timed, fair-unlock and recursive
/// reads ([`RwLockRecursiveExt`]); no class waits longer than the other's
/// turn. The seed's rwsem is [`RwLockRwsem`].
///
/// ```
/// let l = klock::RwLock::new(vec![1]);
/// l.write().push(2);
/// assert_eq!(l.read().len(), 2);
/// let u = l.upgradable_read();
/// let mut w = klock::RwLockUpgradableReadGuard::upgrade(u);
/// w.push(3);
/// assert_eq!(w.len(), 3);
/// ```
#[cfg(not(loom))]
pub type RwLock<T> = lock_api::RwLock<RawRwLockBatched, T>;
/// Read guard of [`RwLock`] (a reference: 8 bytes on 64-bit).
///
/// ```
/// let l = klock::RwLock::new(1);
/// let g: klock::RwLockReadGuard<'_, i32> = l.read();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLockBatched, T>;
/// Write guard of [`RwLock`] (a reference: 8 bytes on 64-bit).
///
/// ```
/// let l = klock::RwLock::new(1);
/// let mut g: klock::RwLockWriteGuard<'_, i32> = l.write();
/// *g = 2;
/// ```
#[cfg(not(loom))]
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLockBatched, T>;
/// Upgradable read guard of [`RwLock`].
///
/// ```
/// let l = klock::RwLock::new(1);
/// let g = l.upgradable_read();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type RwLockUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawRwLockBatched, T>;

/// The seed's rwsem (`lock_api::RwLock` over [`RawRwLock`]; lockbench
/// `klock_rwsem`): owner-aware optimistic spinning, a FIFO wait queue with
/// hand-off, reader policies. Size: 16 bytes + `T`. A named variant; the
/// default is [`RwLock`].
///
/// ```
/// let l = klock::RwLockRwsem::new(vec![1]);
/// l.write().push(2);
/// let u = l.upgradable_read();
/// let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(u);
/// w.push(3);
/// assert_eq!(w.len(), 3);
/// ```
#[cfg(not(loom))]
pub type RwLockRwsem<T> = lock_api::RwLock<RawRwLock<SpinOsq>, T>;
/// The rwsem whose writers never spin (`klock_rwsem_nospin`).
///
/// ```
/// let l = klock::RwLockNoSpin::new(1);
/// assert_eq!(*l.read(), 1);
/// ```
#[cfg(not(loom))]
pub type RwLockNoSpin<T> = lock_api::RwLock<RawRwLock<SpinOff>, T>;

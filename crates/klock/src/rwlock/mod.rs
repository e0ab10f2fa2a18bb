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
mod read;
mod sleep;
mod spin;
mod upgrade;
mod wake;
mod word;
mod write;

pub use crate::mutex::{SpinOff, SpinOsq, SpinPolicy};
pub use floor::{
    RW_FLOOR_MASK, RW_FLOOR_MAX_READERS, RW_FLOOR_READERS_WAITING, RW_FLOOR_UPGRADABLE,
    RW_FLOOR_WRITE_LOCKED, RW_FLOOR_WRITERS_WAITING, RawRwLockBatched, RawRwLockFloor,
    RawRwLockFloorOf, RawRwLockPhased, WRITER_BATCH_US,
};
#[cfg(not(loom))]
pub use floor::{RwLockBatched, RwLockFloor, RwLockPhased};
pub use word::{
    HANDOFF, OWNER_NONSPINNABLE, OWNER_READER, OWNER_SHIFT, PREFQ, READER_BIAS, READER_MASK,
    READER_SHIFT, READFAIL, UPGRADE, UPGRADING, WAITERS, WAKING, WLOCK, WRITER, is_free,
    is_pref_read_lockable, is_read_lockable, is_recursive_read_lockable, owner_id, readers,
};

use crate::osq::Osq;
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
#[cfg(not(loom))]
use crate::wait;
use crate::waitlist::WaitList;
use std::marker::PhantomData;
use word::{
    Class, add_reader_wrapping, add_share, drop_reader, is_lockable_by, is_plain_read_release,
    owned_by_readers, owned_by_writer,
};

// ---------------------------------------------------------------------------
// The raw lock
// ---------------------------------------------------------------------------

/// The raw rwsem (16 bytes), generic over the writers' [`SpinPolicy`]
/// ([`SpinOsq`] spins through the OSQ; [`SpinOff`] never spins; both 0
/// bytes). Use it through [`RwLock`] (`lock_api`) or directly.
///
/// ```
/// use klock::RawRwLock;
/// let l: RawRwLock = RawRwLock::new();
/// l.lock_shared();
/// assert!(l.is_locked());
/// unsafe { l.unlock_shared() };
/// let id = l.lock_exclusive();
/// unsafe { l.unlock_exclusive(id) };
/// assert!(!l.is_locked());
/// ```
#[derive(Debug)]
pub struct RawRwLock<S: SpinPolicy = SpinOsq> {
    /// See the layout in the module docs.
    count: AtomicU32,
    /// Owner hint (writer id / READER_OWNED / NONSPINNABLE).
    owner: AtomicU32,
    /// FIFO of sleeping waiters, protected by WLOCK.
    list: WaitList,
    /// Spinners' queue.
    osq: Osq,
    _policy: PhantomData<S>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawRwLock>() == 16);

impl<S: SpinPolicy> Default for RawRwLock<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// Proof of a write acquisition: the writer's thread id (4 bytes), handed
/// back at unlock so that a guard may be released by another thread.
///
/// ```
/// let l = klock::RawRwLock::<klock::SpinOff>::new();
/// let t: klock::WriteToken = l.lock_exclusive();
/// assert_ne!(t.id(), 0); // 0 is "no writer"
/// let l = &l;
/// std::thread::scope(|s| {
///     s.spawn(move || unsafe { l.unlock_exclusive(t) }); // released by another thread
/// });
/// assert!(!l.is_locked());
/// ```
#[derive(Debug)]
pub struct WriteToken {
    id: u32,
}

impl WriteToken {
    /// The owner id the acquisition published.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// How a slow path ended.
enum Got {
    /// We hold what we asked for.
    Yes,
    /// The deadline passed.
    TimedOut,
}

impl<S: SpinPolicy> RawRwLock<S> {
    /// An unlocked rwsem (all zero).
    ///
    /// ```
    /// static L: klock::RawRwLock = klock::RawRwLock::new();
    /// assert!(!L.is_locked());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawRwLock {
            count: AtomicU32::new(0),
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }
    /// An unlocked rwsem (loom build).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawRwLock {
            count: AtomicU32::new(0),
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }

    /// The count word (diagnostics and tests).
    ///
    /// ```
    /// assert_eq!(klock::RawRwLock::<klock::SpinOff>::new().count_word(), 0);
    /// ```
    #[doc(hidden)]
    pub fn count_word(&self) -> u32 {
        // Relaxed: a snapshot.
        self.count.load(Ordering::Relaxed)
    }

    /// Is the lock held (read or write)?
    ///
    /// ```
    /// assert!(!klock::RawRwLock::<klock::SpinOff>::new().is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        !is_free(self.count_word())
    }

    /// Is the lock write-locked?
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert!(l.is_locked_exclusive());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    pub fn is_locked_exclusive(&self) -> bool {
        self.count_word() & WRITER != 0
    }

    /// The id of the thread holding the write lock, or 0 (no writer, or a
    /// writer granted the lock that has not published its id yet). A thread
    /// comparing with its own id gets an exact answer (the C layer's
    /// EDEADLK check).
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert_eq!(l.writer(), klock::internal::tid::current_id());
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.writer(), 0);
    /// ```
    #[inline]
    #[doc(hidden)]
    pub fn writer(&self) -> u32 {
        // Relaxed (both): our own id is only ever stored by ourselves.
        if self.count.load(Ordering::Relaxed) & WRITER == 0 {
            return 0;
        }
        owner_id(self.owner.load(Ordering::Relaxed))
    }

    // ---- owner hint -------------------------------------------------------

    #[inline]
    fn set_reader_owned(&self) {
        // Relaxed (both): a hint; only stored when it changes, so readers do
        // not bounce the line among themselves.
        let o = self.owner.load(Ordering::Relaxed);
        if o & OWNER_READER == 0 {
            self.owner.store(owned_by_readers(o), Ordering::Relaxed);
        }
    }

    #[inline]
    fn set_writer_owned(&self, id: u32) {
        // Relaxed: a hint; also resets NONSPINNABLE (a new writer phase).
        self.owner.store(owned_by_writer(id), Ordering::Relaxed);
    }

    // ---- read side ----------------------------------------------------------

    /// Take a read lock: one `fetch_add`, then the slow path when a writer,
    /// a waiter, a hand-off or an upgrade is in the way.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_shared();
    /// unsafe { l.unlock_shared() };
    /// ```
    #[inline]
    pub fn lock_shared(&self) {
        if let Err(c) = self.read_fast() {
            let _ = self.read_slow(c, None, false);
        }
    }

    /// The read fast path: `(n,-) -> (n+1,-)` by one `fetch_add`; on
    /// failure the count after our add (our reader count stays in it).
    #[inline]
    fn read_fast(&self) -> Result<(), u32> {
        // Acquire pairs with the Release of the last writer's unlock.
        let c = self.count.fetch_add(READER_BIAS, Ordering::Acquire);
        if is_read_lockable(c) {
            self.set_reader_owned();
            stat::inc(Event::RwReadFast);
            Ok(())
        } else {
            Err(add_reader_wrapping(c))
        }
    }

    /// Add `add` to the count by CAS while `ok(count)` (Acquire on success).
    #[inline]
    fn add_while(&self, add: u32, ok: impl Fn(u32) -> bool) -> bool {
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        while ok(c) {
            // Acquire pairs with the Release of the unlock that allowed it.
            match self.count.compare_exchange_weak(
                c,
                add_share(c, add),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => c = x,
            }
        }
        false
    }

    /// Try to take a read lock without waiting.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// assert!(l.try_lock_shared());
    /// let t = l.try_lock_exclusive();
    /// assert!(t.is_none());
    /// unsafe { l.unlock_shared() };
    /// ```
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        let got = self.add_while(READER_BIAS, is_read_lockable);
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Release a read lock.
    ///
    /// # Safety
    ///
    /// The caller holds a read lock (taken by any thread).
    #[inline]
    pub unsafe fn unlock_shared(&self) {
        // First guess the uncontended word `(1,-)`: one CAS and no load
        // before it (uncontended read 5.56 ns against std_rw's 5.93; with
        // the load first it was 6.70 against 5.96, 2026-11-26). A failed
        // CAS returns the word for the second try (a reader among others),
        // else the slow path.
        let mut c = READER_BIAS;
        for _ in 0..2 {
            if !is_plain_read_release(c) {
                break;
            }
            // Release pairs with the next writer's Acquire; Relaxed on
            // failure: the CAS decides.
            match self.count.compare_exchange(
                c,
                drop_reader(c),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(x) => c = x,
            }
        }
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS, 0, false) }
    }

    /// Release whichever lock the caller holds, read or write (pthread's one
    /// `pthread_rwlock_unlock`): while a writer holds the lock no reader can,
    /// so WRITER set means the caller is that writer. Returns `true` if it
    /// released a write lock.
    ///
    /// # Safety
    ///
    /// The caller holds a read or a write lock (not an upgradable one).
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// std::mem::forget(t);
    /// assert!(unsafe { l.unlock_any() });
    /// l.lock_shared();
    /// assert!(!unsafe { l.unlock_any() });
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
    #[doc(hidden)]
    pub unsafe fn unlock_any(&self) -> bool {
        // Relaxed: the WRITER bit is our own (we hold the lock) or is clear
        // for good while we hold a read lock.
        if self.count.load(Ordering::Relaxed) & WRITER != 0 {
            let id = owner_id(self.owner.load(Ordering::Relaxed));
            // SAFETY: forwarded; we are the writer.
            unsafe { self.unlock_exclusive(WriteToken { id }) };
            true
        } else {
            // SAFETY: forwarded; we hold a read lock.
            unsafe { self.unlock_shared() };
            false
        }
    }

    // ---- write side ---------------------------------------------------------

    /// Take the write lock: one CAS `0 -> WRITER`, else the slow path.
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    #[inline]
    pub fn lock_exclusive(&self) -> WriteToken {
        let id = crate::tid::current_id();
        if !self.write_fast(id) {
            let _ = self.write_slow(id, None);
        }
        WriteToken { id }
    }

    /// The write fast path: `(0,-) -> (0,X)` by one CAS, then the owner hint.
    #[inline]
    fn write_fast(&self, id: u32) -> bool {
        // Acquire pairs with the Release of every unlock.
        let ok = self
            .count
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if ok {
            self.set_writer_owned(id);
            stat::inc(Event::RwWriteFast);
        }
        ok
    }

    /// Try to take the write lock without waiting (no stealing past a
    /// hand-off).
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.try_lock_exclusive().unwrap();
    /// assert!(!l.try_lock_shared());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    #[inline]
    pub fn try_lock_exclusive(&self) -> Option<WriteToken> {
        let id = crate::tid::current_id();
        self.try_take(Class::Writer).then(|| {
            self.set_writer_owned(id);
            WriteToken { id }
        })
    }

    /// The uncontended release of whichever side the caller holds, for the
    /// C layer's one unlock: with WRITER set, the write lock when the count
    /// is exactly `(0,X)` and the owner hint names the caller (released as
    /// [`unlock_exclusive`](Self::unlock_exclusive) does), or a read lock
    /// whose release is plain (`is_plain_read_release`: one CAS,
    /// `(n,-) -> (n-1,-)`). Returns `Some(true)` for the write lock,
    /// `Some(false)` for a read lock, `None` changing nothing (the caller
    /// takes [`unlock_any`](Self::unlock_any)).
    ///
    /// # Safety
    ///
    /// The caller holds this lock (read or write).
    ///
    /// ```
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// assert!(l.try_lock_shared());
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
    /// let t = l.try_lock_exclusive().unwrap();
    /// std::mem::forget(t);
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(true));
    /// assert!(!l.is_locked());
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
    /// ```
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn try_unlock_uncontended(&self) -> Option<bool> {
        // Relaxed: the CAS (ours or unlock_exclusive's) decides.
        let c = self.count.load(Ordering::Relaxed);
        if c & WRITER != 0 {
            // The write side (as `unlock_any` decides). Any other bit or a
            // reader count (a reader's optimistic add, about to be taken
            // back) sends it to the full path: that count is not ours.
            if c != WRITER {
                return None;
            }
            let id = crate::tid::current_id();
            // Relaxed: the hint names us only if we wrote it (we hold the lock).
            if owner_id(self.owner.load(Ordering::Relaxed)) != id {
                return None;
            }
            // SAFETY: we hold the write lock (WRITER set, our id in the hint).
            unsafe { self.unlock_exclusive(WriteToken { id }) };
            return Some(true);
        }
        // Release pairs with the next writer's Acquire (as in unlock_shared).
        // (A free lock, readers 0, is not ours to release: `None`.)
        (readers(c) > 0
            && is_plain_read_release(c)
            && self
                .count
                .compare_exchange(c, drop_reader(c), Ordering::Release, Ordering::Relaxed)
                .is_ok())
        .then_some(false)
    }

    /// Release the write lock.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock acquired as `token`.
    #[inline]
    pub unsafe fn unlock_exclusive(&self, token: WriteToken) {
        let _ = token;
        // Relaxed: a hint, cleared before the release.
        self.owner.store(0, Ordering::Relaxed);
        // Release pairs with the next owner's Acquire.
        if self
            .count
            .compare_exchange(WRITER, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: forwarded.
            unsafe { self.release_share(WRITER, 0, false) }
        }
    }

    /// Unqueued acquisition for `class` (stealing: allowed unless a
    /// hand-off is owed). Writers: `(0,-) -> (0,X)`; readers and upgraders
    /// add their count (and UPGRADE).
    #[inline]
    fn try_take(&self, class: Class) -> bool {
        self.add_while(class.share(), |c| is_lockable_by(c, class, false))
    }
}

// ---------------------------------------------------------------------------
// lock_api
// ---------------------------------------------------------------------------

#[cfg(not(loom))]
// SAFETY: a writer holds WRITER, set only by a CAS from a free count (or
// passed to it in the releasing CAS of a hand-off); readers hold a count
// added only while no WRITER is set (the fast path keeps its add only if
// the old value allowed it); Acquire on every acquisition, Release on every
// release.
unsafe impl<S: SpinPolicy> lock_api::RawRwLock for RawRwLock<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type SharedGuard = lock_api::GuardSend;
    type ExclusiveGuard = WriteToken;

    #[inline]
    fn lock_shared(&self) -> lock_api::GuardSend {
        RawRwLock::lock_shared(self);
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
        RawRwLock::try_lock_shared(self).then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_shared(self) }
    }
    #[inline]
    fn lock_exclusive(&self) -> WriteToken {
        RawRwLock::lock_exclusive(self)
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<WriteToken> {
        RawRwLock::try_lock_exclusive(self)
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, t: WriteToken) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_exclusive(self, t) }
    }
    fn is_locked(&self) -> bool {
        RawRwLock::is_locked(self)
    }
    fn is_locked_exclusive(&self) -> bool {
        RawRwLock::is_locked_exclusive(self)
    }
}

#[cfg(not(loom))]
// SAFETY: a fair unlock releases exactly like a plain one, except that a
// writer at the head is granted the lock in the releasing CAS.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockFair for RawRwLock<S> {
    unsafe fn unlock_shared_fair(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS, 0, true) }
    }
    unsafe fn unlock_exclusive_fair(&self, t: WriteToken) {
        let _ = t;
        // Relaxed: a hint, cleared before the release.
        self.owner.store(0, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { self.release_share(WRITER, 0, true) }
    }
}

#[cfg(not(loom))]
// SAFETY: see `RawRwLock::downgrade`: WRITER becomes one reader count in one RMW.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockDowngrade for RawRwLock<S> {
    unsafe fn downgrade(&self, t: WriteToken) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade(self, t) };
        lock_api::GuardSend::new()
    }
}

#[cfg(not(loom))]
// SAFETY: timed acquisitions return a guard only when the lock was taken.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockTimed for RawRwLock<S> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        self.lock_shared_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_shared_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_shared_until_ns(wait::instant_to_ns(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_for(&self, t: Self::Duration) -> Option<WriteToken> {
        self.lock_exclusive_until_ns(wait::deadline_after(t))
    }
    fn try_lock_exclusive_until(&self, t: Self::Instant) -> Option<WriteToken> {
        self.lock_exclusive_until_ns(wait::instant_to_ns(t))
    }
}

#[cfg(not(loom))]
// SAFETY: UPGRADE is held with one reader count and excludes writers and
// other upgraders; upgrade turns it into WRITER only when it is the last
// reader (one CAS).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgrade for RawRwLock<S> {
    type UpgradableGuard = lock_api::GuardSend;

    fn lock_upgradable(&self) -> lock_api::GuardSend {
        RawRwLock::lock_upgradable(self);
        lock_api::GuardSend::new()
    }
    fn try_lock_upgradable(&self) -> Option<lock_api::GuardSend> {
        RawRwLock::try_lock_upgradable(self).then(lock_api::GuardSend::new)
    }
    unsafe fn unlock_upgradable(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_upgradable(self) }
    }
    unsafe fn upgrade(&self, _: lock_api::GuardSend) -> WriteToken {
        // SAFETY: forwarded.
        unsafe { RawRwLock::upgrade(self) }
    }
    unsafe fn try_upgrade(
        &self,
        g: lock_api::GuardSend,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { RawRwLock::try_upgrade(self) }.ok_or(g)
    }
}

#[cfg(not(loom))]
// SAFETY: a fair upgradable unlock releases exactly like a plain one (one
// reader count and UPGRADE), except that a writer at the head is granted the
// lock in the releasing CAS; the bump holds the lock again on return (or
// aborts).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeFair for RawRwLock<S> {
    unsafe fn unlock_upgradable_fair(&self, _: lock_api::GuardSend) {
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_upgradable_fair(self) }
    }
    unsafe fn bump_upgradable(&self, _: &mut lock_api::GuardSend) {
        // SAFETY: forwarded; the guard state (a marker) stays valid.
        unsafe { RawRwLock::bump_upgradable(self) }
    }
}

#[cfg(not(loom))]
// SAFETY: both downgrades change the mode in one RMW on the count word that
// keeps a reader count throughout (no writer can get in between):
// `(n,U) -> (n,-)` and `(0,X) -> (1,U)`; the second releases (Release) the
// writer's critical section to later acquisitions.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeDowngrade for RawRwLock<S> {
    unsafe fn downgrade_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade_upgradable(self) };
        lock_api::GuardSend::new()
    }
    unsafe fn downgrade_to_upgradable(&self, t: WriteToken) -> lock_api::GuardSend {
        // SAFETY: forwarded.
        unsafe { RawRwLock::downgrade_to_upgradable(self, t) };
        lock_api::GuardSend::new()
    }
}

#[cfg(not(loom))]
// SAFETY: a timed upgradable read returns a guard only when the lock was
// taken; a timed upgrade returns the write token only when it holds WRITER,
// and otherwise hands back the upgradable guard still held (the give-up
// keeps the reader count and UPGRADE).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeTimed for RawRwLock<S> {
    fn try_lock_upgradable_for(&self, t: Self::Duration) -> Option<lock_api::GuardSend> {
        self.lock_upgradable_until_ns(wait::deadline_after(t))
            .then(lock_api::GuardSend::new)
    }
    fn try_lock_upgradable_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        self.lock_upgradable_until_ns(wait::instant_to_ns(t))
            .then(lock_api::GuardSend::new)
    }
    unsafe fn try_upgrade_for(
        &self,
        g: lock_api::GuardSend,
        t: Self::Duration,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_until_ns(wait::deadline_after(t)) }.ok_or(g)
    }
    unsafe fn try_upgrade_until(
        &self,
        g: lock_api::GuardSend,
        t: Self::Instant,
    ) -> Result<WriteToken, lock_api::GuardSend> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_until_ns(wait::instant_to_ns(t)) }.ok_or(g)
    }
}

/// The recursive reads of a klock raw rwlock: a read admitted past waiting
/// writers (never past a write-holder), for a thread that may already hold
/// a read lock. Implemented by [`RawRwLock`] (the rwsem) and the floor
/// family (`klock::internal::rwlock::RawRwLockFloorOf`); used through
/// [`RwLockRecursiveExt`].
#[cfg(not(loom))]
pub trait RawRwLockRecursive: lock_api::RawRwLock<SharedGuard = lock_api::GuardSend> {
    /// Take a read lock past waiting writers, waiting only while a writer
    /// holds the lock.
    fn lock_shared_recursive(&self);
    /// [`lock_shared_recursive`](Self::lock_shared_recursive) without waiting.
    fn try_lock_shared_recursive(&self) -> bool;
    /// [`lock_shared_recursive`](Self::lock_shared_recursive) until
    /// `deadline_ns` ([`wait::now_ns`] time). `false`: it passed.
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool;
}

#[cfg(not(loom))]
impl<S: SpinPolicy> RawRwLockRecursive for RawRwLock<S> {
    fn lock_shared_recursive(&self) {
        RawRwLock::lock_shared_recursive(self)
    }
    fn try_lock_shared_recursive(&self) -> bool {
        RawRwLock::try_lock_shared_recursive(self)
    }
    fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        RawRwLock::lock_shared_recursive_until_ns(self, deadline_ns)
    }
}

/// Recursive reads on a [`RwLock`] (or any `lock_api::RwLock` over
/// a [`RawRwLockRecursive`]): parking_lot's `read_recursive`, `try_read_recursive`,
/// `try_read_recursive_for` and `try_read_recursive_until`. lock_api 0.5
/// dropped its `RawRwLockRecursive` and `RawRwLockRecursiveTimed` traits
/// (parking_lot 0.13 offers a separate `RecursiveRwLock` type instead), so
/// klock provides the methods through this extension trait: code written
/// for the older parking_lot API compiles with `use
/// klock::RwLockRecursiveExt;`. A recursive read is admitted past
/// waiting writers and past an upgrade under way, whenever no writer holds
/// the lock.
///
/// ```
/// use klock::RwLockRecursiveExt;
/// let l = klock::RwLock::new(1);
/// let a = l.read();
/// let b = l.read_recursive();
/// assert_eq!(*a + *b, 2);
/// drop((a, b));
/// let w = l.write();
/// assert!(l.try_read_recursive().is_none());
/// assert!(l.try_read_recursive_for(std::time::Duration::from_millis(1)).is_none());
/// drop(w);
/// ```
#[cfg(not(loom))]
pub trait RwLockRecursiveExt<R: RawRwLockRecursive, T: ?Sized> {
    /// A read lock past waiting writers (blocks only while a writer holds
    /// it). See [`RawRwLockRecursive::lock_shared_recursive`].
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, R, T>;
    /// [`read_recursive`](Self::read_recursive) without waiting.
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
    /// [`read_recursive`](Self::read_recursive) for at most `timeout`.
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
    /// [`read_recursive`](Self::read_recursive) until `deadline`.
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>>;
}

#[cfg(not(loom))]
impl<R: RawRwLockRecursive, T: ?Sized> RwLockRecursiveExt<R, T> for lock_api::RwLock<R, T> {
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, R, T> {
        // SAFETY: `raw` is only used to take a read lock, which no live
        // guard or reference conflicts with; the guard made below releases it.
        unsafe { self.raw() }.lock_shared_recursive();
        // SAFETY: we hold a read lock on this lock; the guard state is a
        // marker.
        unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) }
    }
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got = unsafe { self.raw() }.try_lock_shared_recursive();
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::deadline_after(timeout));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, R, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::instant_to_ns(deadline));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
}

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

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn try_unlock_uncontended_leaves_a_transient_reader_count_alone() {
        // `(0,X)` plus a reader's optimistic add (about to be taken back):
        // the writer's fast unlock must not take that count as its own.
        let l = RawRwLock::<SpinOff>::new();
        let _held = l.try_lock_exclusive().unwrap();
        l.count.fetch_add(READER_BIAS, Ordering::Relaxed);
        assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
        assert_eq!(l.count.load(Ordering::Relaxed), WRITER | READER_BIAS);
        l.count.fetch_sub(READER_BIAS, Ordering::Relaxed);
        assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(true));
        assert!(!l.is_locked());
        // A free lock is nobody's to release.
        assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
        // Two readers: each release is one plain CAS.
        assert!(l.try_lock_shared() && l.try_lock_shared());
        assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
        assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
        assert!(!l.is_locked());
    }

    #[test]
    fn sizes_and_zero_init() {
        assert_eq!(std::mem::size_of::<RawRwLock>(), 16);
        assert_eq!(std::mem::size_of::<RawRwLock<SpinOff>>(), 16);
        assert_eq!(std::mem::size_of::<WriteToken>(), 4);
        let l: RawRwLock = RawRwLock::new();
        assert_eq!(l.count_word(), 0);
    }

    #[test]
    fn fast_path_words() {
        let l: RawRwLock = RawRwLock::new();
        l.lock_shared();
        l.lock_shared();
        assert_eq!(l.count_word(), 2 * READER_BIAS);
        unsafe { l.unlock_shared() };
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
        let t = l.lock_exclusive();
        assert_eq!(l.count_word(), WRITER);
        assert_eq!(owner_id(l.owner.load(Ordering::Relaxed)), t.id());
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
        l.lock_upgradable();
        assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
        let t = unsafe { l.upgrade() };
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.downgrade(t) };
        assert_eq!(l.count_word(), READER_BIAS);
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
    }

    #[test]
    fn predicates() {
        assert!(is_read_lockable(0));
        assert!(!is_read_lockable(WRITER));
        assert!(!is_read_lockable(UPGRADING));
        assert!(is_read_lockable(UPGRADE | READER_BIAS));
        assert!(is_lockable_by(WAITERS, Class::Writer, false));
        assert!(!is_lockable_by(WAITERS | HANDOFF, Class::Writer, false));
        assert!(is_lockable_by(WAITERS | HANDOFF, Class::Writer, true));
        assert!(is_lockable_by(READER_BIAS, Class::Upgrader, false));
        assert!(!is_lockable_by(
            READER_BIAS | UPGRADE,
            Class::Upgrader,
            false
        ));
        assert_eq!(readers(READFAIL), 1 << 23);
    }

    #[test]
    fn reader_count_overflow_panics_and_leaves_count_intact() {
        let l: RawRwLock<SpinOff> = RawRwLock::new();
        // Simulate 2^23 - 1 leaked read guards.
        l.count.store(READFAIL - READER_BIAS, Ordering::Relaxed);
        l.lock_shared(); // the 2^23-th reader: count reaches READFAIL
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.lock_shared()));
        assert!(r.is_err());
        assert_eq!(l.count_word(), READFAIL);
        assert!(!l.try_lock_shared());
    }

    #[test]
    fn timed_write_times_out_and_leaves_clean() {
        use lock_api::RawRwLockTimed;
        let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
        l.lock_shared();
        let l2 = l.clone();
        let h = std::thread::spawn(move || {
            l2.try_lock_exclusive_for(std::time::Duration::from_millis(20))
                .is_some()
        });
        assert!(!h.join().unwrap());
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
        let l3 = l.clone();
        let t = l.lock_exclusive();
        let h = std::thread::spawn(move || {
            l3.try_lock_shared_for(std::time::Duration::from_millis(20))
        });
        assert!(h.join().unwrap().is_none());
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    fn hammer<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
        hammer_mode::<S>(readers, writers, iters, None)
    }

    fn hammer_mode<S: SpinPolicy>(
        readers: usize,
        writers: usize,
        iters: u64,
        mode: Option<crate::tune::ReaderMode>,
    ) {
        let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
            Arc::new(lock_api::RwLock::new((0, 0)));
        let reads = Arc::new(AtomicU64::new(0));
        let mut hs = Vec::new();
        for i in 0..readers + writers {
            let l = l.clone();
            let reads = reads.clone();
            hs.push(std::thread::spawn(move || {
                super::read::MODE.with(|c| c.set(mode));
                for k in 0..iters {
                    if i < readers {
                        let g = l.read();
                        assert_eq!(g.0, g.1, "torn read");
                        reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    } else if k % 7 == 0 {
                        let u = l.upgradable_read();
                        let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(u);
                        w.0 += 1;
                        w.1 += 1;
                    } else {
                        let mut g = l.write();
                        g.0 += 1;
                        g.1 += 1;
                    }
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let g = l.read();
        assert_eq!(g.0, writers as u64 * iters);
        assert_eq!(
            reads.load(std::sync::atomic::Ordering::Relaxed),
            readers as u64 * iters
        );
        drop(g);
        assert_eq!(unsafe { l.raw() }.count_word(), 0);
    }

    /// Wait until `f` holds (the event a test waits for: a thread queued, let
    /// in, ...). The watchdog (120 s, far beyond the microseconds these events
    /// take) only turns a hang into a failure naming the event.
    pub(super) fn eventually(what: &str, f: impl Fn() -> bool) {
        const HANG: std::time::Duration = std::time::Duration::from_secs(120);
        let t0 = std::time::Instant::now();
        while !f() {
            assert!(
                t0.elapsed() < HANG,
                "watchdog: after {HANG:?} still waiting: {what}"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Code written for parking_lot's RwLock compiles and behaves against
    /// klock's: the lock_api methods these traits enable, on the guards.
    #[test]
    fn parking_lot_style_api() {
        parking_lot_style_api_on::<RawRwLock>();
    }

    /// The same on the default ([`crate::RwLock`], the floor with batches).
    #[test]
    fn parking_lot_style_api_on_the_default() {
        parking_lot_style_api_on::<super::RawRwLockBatched>();
    }

    fn parking_lot_style_api_on<R>()
    where
        R: lock_api::RawRwLockUpgradeTimed<
                Duration = std::time::Duration,
                Instant = std::time::Instant,
            > + lock_api::RawRwLockUpgradeDowngrade
            + lock_api::RawRwLockUpgradeFair
            + super::RawRwLockRecursive,
    {
        use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
        use std::time::Duration;
        let l = lock_api::RwLock::<R, u32>::new(0u32);
        let mut u = l.upgradable_read();
        u.with_upgraded(|v| *v += 1);
        assert_eq!(*u, 1);
        let r = l.read();
        assert!(
            u.try_with_upgraded_for(Duration::from_millis(5), |v| *v += 1)
                .is_none()
        );
        let u = match U::try_upgrade_for(u, Duration::from_millis(5)) {
            Ok(_) => panic!("upgraded past a reader"),
            Err(u) => u,
        };
        drop(r);
        let mut w = U::try_upgrade_until(u, std::time::Instant::now() + Duration::from_secs(1))
            .ok()
            .unwrap();
        *w += 1;
        let u = W::downgrade_to_upgradable(w);
        assert!(
            l.try_upgradable_read_for(Duration::from_millis(5))
                .is_none()
        );
        let r = U::downgrade(u);
        let u2 = l
            .try_upgradable_read_until(std::time::Instant::now() + Duration::from_secs(1))
            .unwrap();
        let mut u2 = u2;
        U::bump(&mut u2);
        U::unlock_fair(u2);
        assert_eq!(*r, 2);
        let rr = l.read_recursive();
        assert_eq!(*rr, 2);
        assert!(l.try_read_recursive_for(Duration::from_millis(1)).is_some());
        assert!(l.try_read_recursive().is_some());
        drop((r, rr));
        assert!(!l.is_locked());
    }

    /// Every new transition under contention: recursive and timed reads,
    /// timed upgradable reads and upgrades, both downgrades, fair unlocks
    /// and bumps against writers: no torn read, no lost update, clean word.
    #[test]
    fn upgrade_api_contended() {
        hammer_upgrade_api::<SpinOff>(3, 3, 3_000);
        hammer_upgrade_api::<SpinOsq>(3, 3, 3_000);
    }

    fn hammer_upgrade_api<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
        use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
        use std::time::Duration;
        let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
            Arc::new(lock_api::RwLock::new((0, 0)));
        let wrote = Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..readers + writers)
            .map(|i| {
                let (l, wrote) = (l.clone(), wrote.clone());
                std::thread::spawn(move || {
                    let short = Duration::from_micros(200);
                    for k in 0..iters {
                        if i < readers {
                            let g = match k % 3 {
                                0 => Some(l.read_recursive()),
                                1 => l.try_read_recursive_for(short),
                                _ => l.try_read_recursive(),
                            };
                            if let Some(g) = g {
                                assert_eq!(g.0, g.1, "torn read");
                            }
                            continue;
                        }
                        let mut n = 0;
                        match k % 4 {
                            0 => {
                                if let Some(mut u) = l.try_upgradable_read_for(short) {
                                    assert_eq!(u.0, u.1, "torn read");
                                    u.with_upgraded(|v| {
                                        v.0 += 1;
                                        v.1 += 1;
                                    });
                                    n += 1;
                                    U::bump(&mut u);
                                    if k % 8 == 0 {
                                        U::unlock_fair(u);
                                    } else {
                                        let r = U::downgrade(u);
                                        assert_eq!(r.0, r.1, "torn read");
                                    }
                                }
                            }
                            1 => {
                                let u = l.upgradable_read();
                                if let Ok(mut w) = U::try_upgrade_for(u, short) {
                                    w.0 += 1;
                                    w.1 += 1;
                                    n += 1;
                                }
                            }
                            _ => {
                                let mut w = l.write();
                                w.0 += 1;
                                w.1 += 1;
                                n += 1;
                                let u = W::downgrade_to_upgradable(w);
                                if let Ok(mut w) = U::try_upgrade(u) {
                                    w.0 += 1;
                                    w.1 += 1;
                                    n += 1;
                                }
                            }
                        }
                        wrote.fetch_add(n, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(l.read().0, wrote.load(Ordering::Relaxed));
        assert_eq!(unsafe { l.raw() }.count_word(), 0);
    }

    #[test]
    fn contended_both_policies() {
        hammer::<SpinOsq>(4, 4, 20_000);
        hammer::<SpinOff>(4, 4, 20_000);
    }

    #[test]
    fn every_reader_mode() {
        for mode in crate::tune::ReaderMode::ALL {
            hammer_mode::<SpinOsq>(3, 3, 10_000, Some(mode));
        }
    }
}

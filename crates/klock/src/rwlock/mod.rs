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
//!   unlock that frees it grants it to that waiter (patch 7).
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
//! * **owner**: a hint for spinners (patch 3): the writer's thread id, or
//!   READER_OWNED; NONSPINNABLE once a writer gave up spinning on readers
//!   (patch 13), until a writer takes the lock or the last reader leaves
//!   with waiters queued.
//!
//! Everything zero = unlocked (`const INIT`).
//!
//! # State diagram (count as (readers, flags); W=WRITER Q=WAITERS H=HANDOFF K=WAKING U=UPGRADE G=UPGRADING P=PREFQ)
//!
//! ```text
//!  (0,-) --read: fetch_add--> (1,-) --read: fetch_add--> (n+1,-)
//!  (n,-) --read unlock: CAS--> (n-1,-)
//!  (0,-) --write: CAS--> (0,W) --write unlock: CAS--> (0,-)
//!  (x,W|..) or (n,Q) --failed reader/writer queues under WLOCK--> (..,Q)
//!  (0,W|Q) --write unlock, head readers: grant_readers--> (k,Q?)      k readers granted at once
//!  (0,W|Q) --write unlock, head writer: hand_on marks it woken--> (0,Q|K)
//!  (x,Q|K) --any unlock while K: one CAS, no WLOCK, no wake--> (0,Q|K)
//!  (0,Q|K) --the woken writer clears K and re-tries (take_queued)--> (0,W[|Q])
//!  (1,Q)   --last read unlock: wake head writer--> (0,Q|K)
//!  (0,Q|H) --unlock, head writer asked for hand-off: hand_on passes W--> (0,W[|Q])
//!  (0,W)   --downgrade--> (1,-) (and queued readers granted)
//!  (n,Q[|H]), n>0 --reader-preferring read: CAS--> (n+1,Q[|H])    joins past a waiting writer
//!  (n,Q|P), n>0, writer at the head --hand_on: grant queued reader-preferring readers--> (n+k,Q[|P])
//!  (1,U)   --upgrade: set G, wait for the other readers--> (1,U|G) --> (0,W)
//!  (n,Q[|H][|U|G]), n>0 --recursive read: fetch_add kept--> (n+1,Q[|H][|U|G])  past waiters and an upgrade
//!  (n,U|G[|Q]) --timed upgrade gives up (cancel_upgrade), then hand_on--> (n+k,U[|Q])  readers queued meanwhile granted
//!  (x,Q..) --timed upgradable read gives up (leave)--> (x,[Q])  K cleared, the turn passed on
//!  (1,U|Q) --unlock_upgradable_fair, head writer: hand_on passes W--> (0,W[|Q])
//!  (n,U)   --downgrade_upgradable--> (n,-) (an upgrader at the head woken)
//!  (0,W)   --downgrade_to_upgradable--> (1,U) (and queued readers granted)
//! ```
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
//!   spins while it is first (patch 14), and the next unlock grants it the
//!   lock directly: exactly one owner results, and bounded unfairness.
//! * A reader wake-up grants the lock to every queued reader, up to
//!   `KLOCK_RWSEM_WAKE_READERS`, skipping queued writers (patch 15).
//! * Waking a writer that is already woken is skipped (patch 12).
//! * A reader that fails the fast path (`KLOCK_RWSEM_READER`): 1 steals
//!   the lock when no writer holds it, no hand-off is owed and no other
//!   reader holds it; 4 (default) steals as 1 and then waits running, within
//!   `KLOCK_MUTEX_SPIN_NS`, for a free lock before it queues (a sleeping
//!   reader is what let writers take 80-98 % of the ops); 2 spins on a writer owner through the OSQ
//!   (patch 8) unless the owner word says NONSPINNABLE (patch 13); 3 also
//!   joins other readers (a queued writer then gets in through its
//!   hand-off timer, INV-HANDOFF-TIMER); 0 queues.
//! * Writers spin (policy [`SpinOsq`]) through the OSQ on a writer owner
//!   (within `KLOCK_MUTEX_SPIN_NS` per owner, `KLOCK_MUTEX_SPIN_MAX_NS` in
//!   all) and on a reader-owned lock for `KLOCK_RWSEM_RSPIN_NS` + 500 ns
//!   per reader (patch 10, time-based); past that they mark the owner
//!   NONSPINNABLE. [`SpinOff`] (`klock_rwsem_nospin`) never spins.
//!
//! # Lifetime (INV-WAKE-ADDR)
//!
//! An unlock takes WLOCK *while it still holds its share* when waiters may
//! need it, grants or marks waiters under WLOCK, and releases its share and
//! WLOCK in one CAS; after that it only calls `futex_wake` on nodes (type
//! stable) or, for an upgrader, on the count word.
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

use crate::chaos::{self, Site};
pub use crate::mutex::{SpinOff, SpinOsq, SpinPolicy};
use crate::node::{self, QNode};
use crate::osq::{self, Osq};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait::{self, SpinBudget, WaitOutcome};
use crate::waitlist::{WaitList, Waiter, WaiterState, fair_check_due, lock_bit};
use std::marker::PhantomData;

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
const fn handoff_owed(c: u32) -> bool {
    c & HANDOFF != 0
}

/// Is the wait list non-empty?
#[inline]
const fn has_waiters(c: u32) -> bool {
    c & WAITERS != 0
}

/// May a reader release its count in `c` with one plain CAS (`(n,..) ->
/// (n-1,..)`)? Yes unless it could be the last reader with waiters queued
/// (INV-WAKE-ADDR: it must take WLOCK first) or an upgrader waits for the
/// readers to leave (it may need a wake on the count word).
#[inline]
const fn is_plain_read_release(c: u32) -> bool {
    c & UPGRADING == 0 && (!has_waiters(c) || readers(c) > 1)
}

/// Could a writer (or, with `upgrader`, an upgradable reader) take the lock
/// in state `c`? `first`: the caller is the list head (HANDOFF is its own).
#[inline]
const fn is_lockable_by(c: u32, class: Class, first: bool) -> bool {
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
const fn is_nonspinnable(o: u32) -> bool {
    o & OWNER_NONSPINNABLE != 0
}

// ---------------------------------------------------------------------------
// Waiters
// ---------------------------------------------------------------------------

/// What a queued waiter wants (stored in its node's `ident`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Reader = 1,
    Writer = 2,
    Upgrader = 3,
}

/// The rwsem's typed view of a wait-list node: the list protocol through
/// [`Waiter`], and `ident` holding the waiter's [`Class`].
#[derive(Clone, Copy)]
pub(crate) struct RwWaiter<'a> {
    w: Waiter<'a>,
    n: &'a node::Node,
}

impl<'a> RwWaiter<'a> {
    #[inline]
    fn of(n: &'a node::Node) -> Self {
        RwWaiter {
            w: Waiter::of(n),
            n,
        }
    }

    #[inline]
    fn decode(t: u32) -> RwWaiter<'static> {
        RwWaiter::of(node::decode(t))
    }

    /// The waiter's class (under WLOCK).
    #[inline]
    fn class(self) -> Class {
        // Relaxed: written under WLOCK before the node was linked.
        match self.n.ident.load(Ordering::Relaxed) & !PREF_WAITER {
            1 => Class::Reader,
            2 => Class::Writer,
            _ => Class::Upgrader,
        }
    }

    /// Is it a reader-preferring reader (under WLOCK)?
    #[inline]
    fn is_pref(self) -> bool {
        // Relaxed: as in `class`.
        self.n.ident.load(Ordering::Relaxed) & PREF_WAITER != 0
    }

    /// `pref`: a reader-preferring reader (INV-PREFQ).
    #[inline]
    fn set_class(self, c: Class, pref: bool) {
        let flag = if pref { PREF_WAITER } else { 0 };
        // Relaxed: under WLOCK (published by its release).
        self.n.ident.store(c as u32 | flag, Ordering::Relaxed);
    }
}

/// `ident` flag of a queued reader-preferring reader (beside its [`Class`]).
const PREF_WAITER: u32 = 1 << 8;

/// Nodes to `futex_wake` after the list lock's release (the kernel's
/// `wake_q`): tail codes, at most one batch of readers plus one writer.
struct WakeQ {
    n: usize,
    codes: [u32; WAKEQ_CAP],
}

/// The largest `KLOCK_RWSEM_WAKE_READERS`, plus one writer.
const WAKEQ_CAP: usize = 257;

/// Spin on a reader-owned lock grows by this per reader: the kernel's
/// `rwsem_rspin_threshold` (10 µs + 0.5 µs per reader).
const RSPIN_NS_PER_READER: u64 = 500;
/// ... counting at most this many readers (the kernel's cap: 25 µs in all).
const RSPIN_READERS_CAP: u32 = 30;

impl WakeQ {
    fn new() -> Self {
        WakeQ {
            n: 0,
            codes: [0; WAKEQ_CAP],
        }
    }

    fn push(&mut self, t: u32) {
        self.codes[self.n] = t;
        self.n += 1;
    }

    /// Flag on a collected tail code (whose low 16 bits are zero): a grant
    /// to complete, not only a wake.
    const GRANT: u32 = 1;

    /// After the release: complete the grants (INV-GRANT-PIN) and wake
    /// every collected node (addresses only: INV-WAKE-ADDR).
    fn finish(&self) {
        for &t in &self.codes[..self.n] {
            let w = Waiter::decode(t & !Self::GRANT);
            if t & Self::GRANT != 0 {
                w.grant();
            }
            stat::inc(Event::RwWake);
            w.wake();
        }
    }
}

// ---------------------------------------------------------------------------
// The raw lock
// ---------------------------------------------------------------------------

/// The raw rwsem (16 bytes), generic over the writers' [`SpinPolicy`]
/// ([`SpinOsq`] spins through the OSQ; [`SpinOff`] never spins; both 0
/// bytes). Use it through [`RwLock`] (`lock_api`) or directly.
///
/// ```
/// use klock::rwlock::RawRwLock;
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
/// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
/// let t = l.lock_exclusive();
/// assert_eq!(t.id(), klock::tid::current_id());
/// unsafe { l.unlock_exclusive(t) };
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
    /// static L: klock::rwlock::RawRwLock = klock::rwlock::RawRwLock::new();
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
    /// assert_eq!(klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new().count_word(), 0);
    /// ```
    pub fn count_word(&self) -> u32 {
        // Relaxed: a snapshot.
        self.count.load(Ordering::Relaxed)
    }

    /// Is the lock held (read or write)?
    ///
    /// ```
    /// assert!(!klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new().is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        !is_free(self.count_word())
    }

    /// Is the lock write-locked?
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
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
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert_eq!(l.writer(), klock::tid::current_id());
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.writer(), 0);
    /// ```
    #[inline]
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
            self.owner
                .store(OWNER_READER | (o & OWNER_NONSPINNABLE), Ordering::Relaxed);
        }
    }

    #[inline]
    fn set_writer_owned(&self, id: u32) {
        // Relaxed: a hint; also resets NONSPINNABLE (a new writer phase).
        self.owner.store(id << OWNER_SHIFT, Ordering::Relaxed);
    }

    // ---- read side ----------------------------------------------------------

    /// Take a read lock: one `fetch_add`, then the slow path when a writer,
    /// a waiter, a hand-off or an upgrade is in the way.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
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
            Err(c.wrapping_add(READER_BIAS))
        }
    }

    /// Add `add` to the count by CAS while `ok(count)` (Acquire on success).
    #[inline]
    fn add_while(&self, add: u32, ok: impl Fn(u32) -> bool) -> bool {
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        while ok(c) {
            // Acquire pairs with the Release of the unlock that allowed it.
            match self
                .count
                .compare_exchange_weak(c, c + add, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => c = x,
            }
        }
        false
    }

    /// Try to take a read lock without waiting.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
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
        // Relaxed: the CAS decides.
        let c = self.count.load(Ordering::Relaxed);
        // Release pairs with the next writer's Acquire.
        if is_plain_read_release(c)
            && self
                .count
                .compare_exchange(c, c - READER_BIAS, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS, 0, false) }
    }

    /// Take a read lock even past waiting writers and past an upgrade under
    /// way, as long as no writer holds it: for a thread that may already
    /// hold a read lock on this lock (a fair read lock would queue behind a
    /// writer, or an upgrader, that waits for us: deadlock). glibc's default
    /// rwlock allows such recursion, so the C layer takes this path when the
    /// thread holds read locks. parking_lot's `read_recursive`; lock_api 0.5
    /// has no recursive-read trait, so [`RwLockRecursiveExt`] gives
    /// [`RwLock`] the `read_recursive` family on top of these inherent
    /// methods.
    ///
    /// Transitions: `(n,..) -> (n+1,..)` by the read fast path's
    /// `fetch_add`, kept when [`is_recursive_read_lockable`] held before it
    /// (`(n,Q[|H][|U|G]) -> (n+1,Q[|H][|U|G])`, n > 0: past waiting
    /// writers, a hand-off owed and an upgrade under way); otherwise (a
    /// writer holds the lock, or it is free with a hand-off owed) the plain
    /// read slow path.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_shared();
    /// l.lock_shared_recursive();
    /// unsafe { l.unlock_shared(); l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
    pub fn lock_shared_recursive(&self) {
        let got = self.read_recursive(None);
        debug_assert!(got);
    }

    /// [`lock_shared_recursive`](Self::lock_shared_recursive) with a
    /// deadline in [`wait::now_ns`] time, as
    /// [`lock_shared_until_ns`](Self::lock_shared_until_ns): `true` if it
    /// was taken, `false` if the deadline passed first (nothing held; a
    /// queued reader that gives up leaves the list as the timed read does).
    /// Only waits while a writer holds the lock (or it is free with a
    /// hand-off owed).
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert!(!l.lock_shared_recursive_until_ns(0)); // deadline passed
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_recursive_until_ns(0)); // no wait needed
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub fn lock_shared_recursive_until_ns(&self, deadline: u64) -> bool {
        self.read_recursive(Some(deadline))
    }

    /// The recursive read, blocking or until `deadline`: the fast path's
    /// add, kept if [`is_recursive_read_lockable`] held before it, else the
    /// read slow path (which drops the count, and panics on READFAIL).
    #[inline]
    fn read_recursive(&self, deadline: Option<u64>) -> bool {
        match self.read_fast() {
            Ok(()) => true,
            // Our count is in `c`: keep it if only waiters, a hand-off owed
            // while read-owned, or an upgrade under way failed the fast path.
            Err(c) if is_recursive_read_lockable(c.wrapping_sub(READER_BIAS)) => {
                self.set_reader_owned();
                stat::inc(Event::RwReadSlow);
                true
            }
            Err(c) => matches!(self.read_slow(c, deadline, false), Got::Yes),
        }
    }

    /// [`try_lock_shared`](Self::try_lock_shared) past waiting writers and
    /// past an upgrade under way (see
    /// [`lock_shared_recursive`](Self::lock_shared_recursive)): one CAS loop
    /// while [`is_recursive_read_lockable`].
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// assert!(l.try_lock_shared_recursive());
    /// unsafe { l.unlock_shared() };
    /// ```
    #[inline]
    pub fn try_lock_shared_recursive(&self) -> bool {
        let got = self.add_while(READER_BIAS, is_recursive_read_lockable);
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Take a read lock the reader-preferring way (glibc's default rwlock
    /// kinds; an inherent method, used by the pthread layer): never wait
    /// while the lock is read-owned, past waiting writers and past a
    /// hand-off owed to one (a writer may then wait indefinitely, as with
    /// glibc). Otherwise (a writer holds it, or it is free with a hand-off
    /// owed) the plain read slow path: steal, spin, or queue; queued, the
    /// reader is granted the lock as soon as it becomes read-owned, even
    /// behind a writer at the head (INV-PREFQ). A program whose reader holds
    /// the lock while it waits for another reader (glibc allows it) cannot
    /// deadlock behind a queued writer.
    ///
    /// Transitions: `(n,..) -> (n+1,..)` by CAS when
    /// [`is_pref_read_lockable`] (n > 0: whatever waits, HANDOFF included;
    /// n = 0: no HANDOFF); then, with PREFQ set, under WLOCK `hand_on`
    /// grants the queued reader-preferring readers `(n+1,Q|P) ->
    /// (n+1+k,Q[|P])`. Never from `(x,W|..)`: a writer, also one just
    /// handed the lock, owns it.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_shared_prefer_readers();
    /// l.lock_shared_prefer_readers();
    /// unsafe { l.unlock_shared(); l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
    pub fn lock_shared_prefer_readers(&self) {
        let _ = self.read_pref(None);
    }

    /// [`lock_shared_prefer_readers`](Self::lock_shared_prefer_readers)
    /// without waiting: `true` if it was taken (succeeds while the lock is
    /// read-owned, whoever waits; on a free lock unless a hand-off is owed).
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// assert!(l.try_lock_shared_prefer_readers());
    /// unsafe { l.unlock_shared() };
    /// let t = l.lock_exclusive();
    /// assert!(!l.try_lock_shared_prefer_readers());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    #[inline]
    pub fn try_lock_shared_prefer_readers(&self) -> bool {
        self.try_read_pref()
    }

    /// [`lock_shared_prefer_readers`](Self::lock_shared_prefer_readers) with
    /// a deadline in [`wait::now_ns`] time, as
    /// [`lock_shared_until_ns`](Self::lock_shared_until_ns): `true` if it
    /// was taken, `false` if the deadline passed first (nothing held).
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert!(!l.lock_shared_prefer_readers_until_ns(0));
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_prefer_readers_until_ns(0)); // no wait needed
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub fn lock_shared_prefer_readers_until_ns(&self, deadline: u64) -> bool {
        self.read_pref(Some(deadline))
    }

    /// The reader-preferring read without waiting: one CAS loop while
    /// [`is_pref_read_lockable`].
    #[inline]
    fn try_read_pref(&self) -> bool {
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        while is_pref_read_lockable(c) {
            // Acquire pairs with the Release of the last writer's unlock
            // (or of the grant that let the current readers in).
            match self.count.compare_exchange_weak(
                c,
                c + READER_BIAS,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.set_reader_owned();
                    stat::inc(Event::RwReadFast);
                    self.grant_pref_readers_if_queued();
                    return true;
                }
                Err(x) => c = x,
            }
        }
        false
    }

    /// The reader-preferring read, blocking or until `deadline` (see
    /// [`lock_shared_prefer_readers`](Self::lock_shared_prefer_readers)).
    fn read_pref(&self, deadline: Option<u64>) -> bool {
        if self.try_read_pref() {
            return true;
        }
        // Not joinable: the read slow path, with our count added (as the
        // fast path leaves it), as a reader-preferring waiter.
        // Acquire pairs with the Release of the unlock that allows us in.
        let c = self.count.fetch_add(READER_BIAS, Ordering::Acquire);
        if is_pref_read_lockable(c) {
            self.set_reader_owned();
            stat::inc(Event::RwReadSlow);
            self.grant_pref_readers_if_queued();
            return true;
        }
        matches!(
            self.read_slow(c.wrapping_add(READER_BIAS), deadline, true),
            Got::Yes
        )
    }

    /// We hold a read lock: if reader-preferring readers may be queued
    /// (PREFQ), grant them now (INV-PREFQ). Under WLOCK, `hand_on` grants
    /// queued readers (behind a writer at the head: only reader-preferring
    /// ones) while the lock is read-owned, which it is: we hold it.
    #[inline]
    fn grant_pref_readers_if_queued(&self) {
        // Relaxed: PREFQ is set under WLOCK before its reader sleeps; the
        // pass below re-reads everything under WLOCK. A PREFQ set after
        // this load belongs to a reader whose own `hand_on` (under WLOCK,
        // after its fetch_or) sees our count and grants it.
        if self.count.load(Ordering::Relaxed) & PREFQ != 0 {
            self.wake_readers_into_read_owned();
        }
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
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// std::mem::forget(t);
    /// assert!(unsafe { l.unlock_any() });
    /// l.lock_shared();
    /// assert!(!unsafe { l.unlock_any() });
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
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

    /// Read lock with a deadline in [`wait::now_ns`] time: `true` if it was
    /// taken (then release it with [`unlock_shared`](Self::unlock_shared)),
    /// `false` if the deadline passed first (nothing is held). The
    /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
    /// models (under loom `now_ns()` is 0, so a deadline of 1 lets every
    /// futex wait time out or not).
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// // A deadline already passed: fails at once.
    /// assert!(!l.lock_shared_until_ns(0));
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_until_ns(klock::wait::now_ns() + 1_000_000));
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub fn lock_shared_until_ns(&self, deadline: u64) -> bool {
        match self.read_fast() {
            Ok(()) => true,
            Err(c) => matches!(self.read_slow(c, Some(deadline), false), Got::Yes),
        }
    }

    /// Read slow path; `c` is the count after our add (our reader count is
    /// in it). `pref`: a reader-preferring reader (queues as one, and passes
    /// the turn to queued ones once it holds the lock: INV-PREFQ).
    #[cold]
    fn read_slow(&self, c: u32, deadline: Option<u64>, pref: bool) -> Got {
        if c & READFAIL != 0 {
            self.drop_reader_count();
            panic!("klock::RwLock: more than 2^23 concurrent readers (reader count overflow)");
        }
        let t = crate::tune::get();
        let mode = reader_mode();
        // Reader lock stealing (kernel 5.11+): no writer, no hand-off, no
        // upgrade under way and no other reader: a queued writer loses at
        // most until it sets HANDOFF.
        if mode != 0
            && mode != 2
            && c & (WRITER | HANDOFF | UPGRADING) == 0
            && (readers(c) == 1 || mode == 3)
        {
            self.set_reader_owned();
            stat::inc(Event::RwReadSteal);
            stat::inc(Event::RwReadSlow);
            if has_waiters(c) {
                // Queued readers may join us (the kernel's READ_OWNED wake).
                self.wake_readers_into_read_owned();
            }
            return Got::Yes;
        }
        self.drop_reader_count();
        // INV-RT-NOSPIN: real-time readers neither wait running nor spin.
        if mode == 4
            && S::SPIN
            && t.mutex_spin != 0
            && t.rwsem_read_wait_ns != 0
            && !wait::realtime()
            && self.steal_running()
        {
            // steal_running passed the turn if anyone waits.
            return Got::Yes;
        }
        if mode == 2
            && S::SPIN
            && t.mutex_spin != 0
            && !is_nonspinnable(self.owner.load(Ordering::Relaxed))
            && !wait::realtime()
            && self.optimistic_spin(Class::Reader, 0)
        {
            self.set_reader_owned();
            stat::inc(Event::RwReadSlow);
            if pref {
                self.grant_pref_readers_if_queued();
            }
            return Got::Yes;
        }
        let got = self.wait(Class::Reader, 0, deadline, pref);
        if matches!(got, Got::Yes) {
            self.set_reader_owned();
            stat::inc(Event::RwReadSlow);
            if pref {
                // Granted (the granter served every reader-preferring
                // reader it could) or taken unqueued: pass on what is left.
                self.grant_pref_readers_if_queued();
            }
        }
        got
    }

    /// Mode 4: wait running (within `KLOCK_MUTEX_SPIN_NS`, polling with the
    /// owner-poll backoff) for a *free* lock with no hand-off owed, and take
    /// it as a reader, instead of sleeping at once.
    fn steal_running(&self) -> bool {
        let t = crate::tune::get();
        let mut poll = wait::PollBackoff::new(t.mutex_poll_grace_ns, t.rwsem_poll_max_ns);
        let got = wait::spin_until(&mut SpinBudget::new(t.rwsem_read_wait_ns), || {
            self.add_while(READER_BIAS, |c| {
                is_free(c) && c & (HANDOFF | UPGRADING | READFAIL) == 0
            }) || {
                poll.pause();
                false
            }
        });
        if got {
            self.set_reader_owned();
            stat::inc(Event::RwReadSteal);
            stat::inc(Event::RwReadSlow);
            // Relaxed: a hint; the wake re-checks under WLOCK.
            if has_waiters(self.count.load(Ordering::Relaxed)) {
                self.wake_readers_into_read_owned();
            }
        }
        got
    }

    /// Take back a reader count we added but may not keep. If that leaves
    /// the lock free with waiters queued, the wake-up is ours to do (nobody
    /// else saw the lock become free).
    fn drop_reader_count(&self) {
        // Relaxed: the CAS decides; Release: our count blocked a writer,
        // nothing to publish, but a wake below needs the latest list.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            let new = c - READER_BIAS;
            match self
                .count
                .compare_exchange_weak(c, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    chaos::point(Site::AfterRelease);
                    if is_free(new) && has_waiters(new) {
                        self.wake_if_free();
                    } else if new & UPGRADING != 0 && readers(new) == 1 {
                        wait::futex_wake(&self.count, 1);
                    }
                    return;
                }
                Err(x) => c = x,
            }
        }
    }

    /// A contender saw the lock free with waiters: under WLOCK, grant or
    /// wake whoever can go now.
    fn wake_if_free(&self) {
        self.wlock();
        self.pass_turn_and_wunlock();
    }

    /// We stole a read lock while readers were queued: grant them too (the
    /// kernel's READ_OWNED wake; a writer at the head cannot go anyway).
    fn wake_readers_into_read_owned(&self) {
        self.wlock();
        self.pass_turn_and_wunlock();
    }

    // ---- write side ---------------------------------------------------------

    /// Take the write lock: one CAS `0 -> WRITER`, else the slow path.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
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

    /// The write fast path: `(0,-) -> (0,W)` by one CAS, then the owner hint.
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
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
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
    /// is exactly `(0,W)` and the owner hint names the caller (released as
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
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// assert!(l.try_lock_shared());
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(false));
    /// let t = l.try_lock_exclusive().unwrap();
    /// std::mem::forget(t);
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, Some(true));
    /// assert!(!l.is_locked());
    /// assert_eq!(unsafe { l.try_unlock_uncontended() }, None);
    /// ```
    #[inline(always)]
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
                .compare_exchange(c, c - READER_BIAS, Ordering::Release, Ordering::Relaxed)
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

    /// Write lock with a deadline in [`wait::now_ns`] time: the token if it
    /// was taken (release it with [`unlock_exclusive`](Self::unlock_exclusive)),
    /// `None` if the deadline passed first (nothing is held). The
    /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
    /// models (see [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_shared();
    /// // A deadline already passed: fails at once.
    /// assert!(l.lock_exclusive_until_ns(0).is_none());
    /// unsafe { l.unlock_shared() };
    /// let t = l.lock_exclusive_until_ns(klock::wait::now_ns() + 1_000_000).unwrap();
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub fn lock_exclusive_until_ns(&self, deadline: u64) -> Option<WriteToken> {
        let id = crate::tid::current_id();
        (self.write_fast(id) || matches!(self.write_slow(id, Some(deadline)), Got::Yes))
            .then_some(WriteToken { id })
    }

    #[cold]
    fn write_slow(&self, id: u32, deadline: Option<u64>) -> Got {
        let t = crate::tune::get();
        let got = if self.try_take(Class::Writer)
            || (S::SPIN
                && t.mutex_spin != 0
                && !is_nonspinnable(self.owner.load(Ordering::Relaxed))
                && !wait::realtime() // INV-RT-NOSPIN
                && self.optimistic_spin(Class::Writer, id))
        {
            Got::Yes
        } else {
            self.wait(Class::Writer, id, deadline, false)
        };
        if matches!(got, Got::Yes) {
            self.set_writer_owned(id);
            stat::inc(Event::RwWriteSlow);
        }
        got
    }

    /// Unqueued acquisition for `class` (stealing: allowed unless a
    /// hand-off is owed). Writers: `(0,-) -> (0,W)`; readers and upgraders
    /// add their count (and UPGRADE).
    #[inline]
    fn try_take(&self, class: Class) -> bool {
        self.add_while(class.share(), |c| is_lockable_by(c, class, false))
    }

    // ---- optimistic spinning --------------------------------------------------

    /// Spin (OSQ head only) for `class` while it looks worth it: the
    /// kernel's `rwsem_optimistic_spin` with time budgets for `owner_on_cpu`.
    fn optimistic_spin(&self, class: Class, _id: u32) -> bool {
        let t = crate::tune::get();
        let max = osq::max_spinners();
        if S::QUEUE && self.osq.depth_hint() >= max {
            return false;
        }
        let mut total = SpinBudget::new(t.mutex_spin_max_ns);
        let got = node::with_node(|q| {
            let Some(q) = q else { return false };
            if S::QUEUE && !self.osq.lock(q, &mut total, max) {
                return false;
            }
            let got = self.spin_loop(class, &mut total, q);
            if S::QUEUE {
                self.osq.unlock(q);
            }
            got
        });
        stat::inc(if got {
            Event::RwSpinSuccess
        } else {
            Event::RwSpinFail
        });
        got
    }

    fn spin_loop(&self, class: Class, total: &mut SpinBudget, q: QNode) -> bool {
        let t = crate::tune::get();
        let mut prev = OwnerState::Null;
        let mut rspin = SpinBudget::new(0);
        let mut poll = wait::PollBackoff::new(t.mutex_poll_grace_ns, t.rwsem_poll_max_ns);
        loop {
            let st = self.spin_on_owner(total, &mut poll, q);
            if st == OwnerState::NonSpinnable {
                return false;
            }
            if self.try_take(class) {
                return true;
            }
            if st == OwnerState::Reader {
                if class != Class::Writer {
                    return false; // readers spin on writers only (patch 8)
                }
                if prev != OwnerState::Reader {
                    // A new reader phase (patch 10, time-based here).
                    if is_nonspinnable(self.owner.load(Ordering::Relaxed)) {
                        return false;
                    }
                    let n = readers(self.count.load(Ordering::Relaxed)).min(RSPIN_READERS_CAP);
                    rspin = SpinBudget::new(t.rwsem_rspin_ns + n as u64 * RSPIN_NS_PER_READER);
                } else if rspin.expired() {
                    self.mark_nonspinnable();
                    return false;
                }
            }
            if handoff_owed(self.count.load(Ordering::Relaxed)) || total.expired() {
                return false;
            }
            prev = st;
            if !poll.pause() {
                std::hint::spin_loop();
            }
        }
    }

    /// The kernel's tri-state `rwsem_spin_on_owner` (patch 9): spin while
    /// one writer holds the lock; report who holds it when that ends.
    fn spin_on_owner(
        &self,
        total: &mut SpinBudget,
        poll: &mut wait::PollBackoff,
        q: QNode,
    ) -> OwnerState {
        let t = crate::tune::get();
        // Relaxed (all loads): hints; acquisition is try_take's CAS.
        let c = self.count.load(Ordering::Relaxed);
        if c & WRITER == 0 {
            return if readers(c) != 0 {
                OwnerState::Reader
            } else {
                OwnerState::Null
            };
        }
        let o = self.owner.load(Ordering::Relaxed);
        if is_nonspinnable(o) {
            return OwnerState::NonSpinnable;
        }
        let id = owner_id(o);
        let mut per_owner = SpinBudget::new(t.mutex_spin_ns);
        let mut iter = 0u32;
        loop {
            // Timed: only a poll that missed the cache pauses below
            // (`PollBackoff::poll`, `KLOCK_POLL_MISS_TICKS`).
            let c = poll.poll(|| self.count.load(Ordering::Relaxed));
            if c & WRITER == 0 {
                return OwnerState::Null;
            }
            if owner_id(self.owner.load(Ordering::Relaxed)) != id || handoff_owed(c) {
                return OwnerState::Writer;
            }
            if per_owner.expired() || total.expired() {
                // One writer held it too long: probably not running.
                return OwnerState::NonSpinnable;
            }
            let delayed = poll.pause();
            iter = iter.wrapping_add(1);
            if delayed || iter.is_multiple_of(crate::tune::fixed::OSQ_HEARTBEAT_EVERY) {
                osq::heartbeat(q.node());
            }
        }
    }

    /// A writer gave up spinning on readers: mark the owner NONSPINNABLE if
    /// it is still reader-owned (patch 13: readers stop spinning too).
    fn mark_nonspinnable(&self) {
        // Relaxed: a hint.
        let o = self.owner.load(Ordering::Relaxed);
        if o & OWNER_READER != 0 && !is_nonspinnable(o) {
            let _ = self.owner.compare_exchange(
                o,
                o | OWNER_NONSPINNABLE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            stat::inc(Event::RwSpinNonSpinnable);
        }
    }

    // ---- the wait list ----------------------------------------------------------

    /// Queue and wait for `class`; readers are granted the lock by a waker,
    /// writers and upgraders re-try when woken (writers are granted it on a
    /// hand-off or a fair unlock).
    /// `pref`: a reader-preferring reader (INV-PREFQ).
    fn wait(&self, class: Class, id: u32, deadline: Option<u64>, pref: bool) -> Got {
        node::with_node(|q| match q {
            Some(q) => self.wait_queued(q, class, deadline, pref),
            None => self.wait_unqueued(class, id, deadline),
        })
    }

    /// No node: poll within the spin budget, yield in between (unfair but
    /// correct; counted as `mutex_no_node`).
    fn wait_unqueued(&self, class: Class, _id: u32, deadline: Option<u64>) -> Got {
        stat::inc(Event::MutexNoNode);
        let ns = crate::tune::get().mutex_spin_ns;
        loop {
            if self.try_take(class) {
                return Got::Yes;
            }
            if wait::remaining(deadline).is_none() {
                return Got::TimedOut;
            }
            wait::spin_until(&mut SpinBudget::new(ns), || {
                is_lockable_by(self.count.load(Ordering::Relaxed), class, false)
            });
            wait::relinquish();
        }
    }

    /// Take WLOCK while holding nothing (a contender).
    #[inline]
    fn wlock(&self) {
        lock_bit(&self.count, WLOCK);
    }

    /// Release WLOCK (a contender's; nothing else changes).
    /// Release pairs with the Acquire of the next `lock_bit(WLOCK)`.
    #[inline]
    fn wunlock(&self) {
        self.count.fetch_and(!WLOCK, Ordering::Release);
    }

    /// Under WLOCK, as a contender: give the head its turn, release WLOCK,
    /// finish the grants and wakes.
    fn pass_turn_and_wunlock(&self) {
        let mut wq = WakeQ::new();
        // Relaxed: under WLOCK; the hand-on CASes decide.
        let grant = handoff_owed(self.count.load(Ordering::Relaxed));
        self.hand_on(0, 0, grant, &mut wq);
        wq.finish();
    }

    fn wait_queued(&self, q: QNode, class: Class, deadline: Option<u64>, pref: bool) -> Got {
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        // Enqueue under WLOCK, then give whoever can go now its turn (maybe
        // us: the lock may have become free, or read-owned, meanwhile).
        self.wlock();
        w.set_class(class, pref);
        w.w.set_state(WaiterState::Sleeping);
        // First-since stamp (eventual fairness; restamped when it becomes first).
        w.w.set_since_us(wait::now_us());
        self.list.push_back(me);
        // Relaxed: an RMW under WLOCK; an unlock ordered after it sees
        // WAITERS and takes WLOCK (after us); one ordered before it freed the
        // lock, which the hand-on below sees. PREFQ likewise: a
        // reader-preferring acquisition ordered after it passes the turn
        // (after us); one ordered before it left its count, which the
        // hand-on below sees (INV-PREFQ).
        let bits = WAITERS | if pref { PREFQ } else { 0 };
        self.count.fetch_or(bits, Ordering::Relaxed);
        self.pass_turn_and_wunlock();
        match class {
            Class::Reader => self.wait_granted(q, deadline),
            _ => self.wait_retry(q, class, deadline),
        }
    }

    /// Our node was selected for a grant: wait (no timeout: INV-GRANT-PIN)
    /// for the granter to complete it. Returns holding the lock.
    fn await_grant(&self, w: RwWaiter<'_>) -> Got {
        while !w.w.is_granted() {
            let _ = wait::futex_wait(w.w.futex(), WaiterState::Granting as u32, None);
        }
        Got::Yes
    }

    /// A queued reader: sleep until a waker grants the lock (it removes us
    /// from the list and counts us), or the deadline passes.
    fn wait_granted(&self, q: QNode, deadline: Option<u64>) -> Got {
        let w = RwWaiter::of(q.node());
        let mut expired = false;
        loop {
            if w.w.is_selected() {
                return self.await_grant(w);
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                return self.leave(q, Class::Reader);
            };
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwSleepReader);
            let r = wait::futex_wait(w.w.futex(), WaiterState::Sleeping as u32, timeout);
            expired |= r == WaitOutcome::TimedOut;
            chaos::point(Site::AfterWake);
        }
    }

    /// A queued writer or upgrader: re-try under WLOCK whenever woken; as
    /// the first writer past the hand-off threshold, set HANDOFF and wait
    /// running for the grant (patch 14) before sleeping again.
    fn wait_retry(&self, q: QNode, class: Class, deadline: Option<u64>) -> Got {
        let t = crate::tune::get();
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        let start = wait::now_ns();
        let mut expired = false;
        loop {
            // Re-try and re-arm under WLOCK (INV-WLOCK-STATE).
            self.wlock();
            if w.w.is_selected() {
                self.wunlock();
                return self.await_grant(w);
            }
            // INV-WAKING: clear it before the re-try (it may stand for us):
            // an unlock from here on takes WLOCK and wakes us after we re-arm.
            // Relaxed: an RMW under WLOCK on the word the unlocks CAS.
            self.count.fetch_and(!WAKING, Ordering::Relaxed);
            let first = self.list.head() == me;
            if self.take_queued(class, first, me) {
                return Got::Yes;
            }
            // Relaxed: under WLOCK.
            let c = self.count.load(Ordering::Relaxed);
            let mut handoff = handoff_owed(c) && first;
            if first
                && !handoff
                && class == Class::Writer
                && wait::now_ns().saturating_sub(start) >= t.rwsem_handoff_ns
            {
                // Relaxed: an RMW under WLOCK; HANDOFF carries no data.
                self.count.fetch_or(HANDOFF, Ordering::Relaxed);
                stat::inc(Event::RwHandoff);
                handoff = true;
            }
            w.w.set_state(WaiterState::Sleeping);
            self.wunlock();
            if handoff && S::SPIN && t.mutex_spin != 0 && !wait::realtime() {
                // Patch 14: the lock is ours the moment it is free (the unlock
                // grants it to us): wait for that running, not asleep.
                let mut poll = wait::PollBackoff::new(t.mutex_poll_grace_ns, t.rwsem_poll_max_ns);
                wait::spin_until(&mut SpinBudget::new(t.mutex_spin_ns), || {
                    w.w.is_selected() || {
                        poll.pause();
                        false
                    }
                });
            }
            if w.w.is_selected() {
                return self.await_grant(w);
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                return self.leave(q, class);
            };
            // INV-HANDOFF-TIMER: the first writer sleeps at most until its
            // hand-off threshold, so that it can claim HANDOFF even when no
            // unlock ever frees the lock for it (readers joining readers).
            // The kernel lets a reader's wake-up set HANDOFF on the first
            // waiter's behalf; our readers join without the list lock.
            let timer = (first && !handoff && class == Class::Writer && !cfg!(loom)).then(|| {
                let left = (start + t.rwsem_handoff_ns).saturating_sub(wait::now_ns());
                std::time::Duration::from_nanos(left.max(1))
            });
            let (timeout, by_timer) = match (timeout, timer) {
                (Some(d), Some(h)) if h < d => (Some(h), true),
                (None, Some(h)) => (Some(h), true),
                (d, _) => (d, false),
            };
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwSleepWriter);
            let r = wait::futex_wait(w.w.futex(), WaiterState::Sleeping as u32, timeout);
            expired |= r == WaitOutcome::TimedOut && !by_timer;
            chaos::point(Site::AfterWake);
        }
    }

    /// Under WLOCK: take the lock as a queued writer or upgrader if it is
    /// ours to take (`(0,Q[|H]) -> (0,W[|Q])`), leave the list and release
    /// WLOCK; otherwise keep WLOCK and return `false`.
    fn take_queued(&self, class: Class, first: bool, me: u32) -> bool {
        let add = class.share();
        let last = first && Waiter::decode(me).next_link() == me;
        // Only we (the head, if it is set) could have set HANDOFF.
        let clear = HANDOFF | WAKING | if last { WAITERS | PREFQ } else { 0 };
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if !is_lockable_by(c, class, first) {
                return false;
            }
            // Acquire pairs with the Release of the unlock that freed it.
            match self.count.compare_exchange_weak(
                c,
                (c + add) & !clear,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        self.unlink(me);
        if class == Class::Upgrader {
            // Readers queued behind us may share the lock with us now.
            self.pass_turn_and_wunlock();
        } else {
            self.wunlock();
        }
        true
    }

    /// Timed-out waiter: leave the list under WLOCK, unless a grant selected
    /// us first (then we hold the lock). Passes the turn on (the lock may be
    /// free, or our HANDOFF may have been blocking others).
    fn leave(&self, q: QNode, class: Class) -> Got {
        let me = q.tail();
        let w = RwWaiter::of(q.node());
        self.wlock();
        if w.w.is_selected() {
            self.wunlock();
            stat::inc(Event::RwTimeoutGranted);
            return self.await_grant(w);
        }
        let first = self.list.head() == me;
        if class != Class::Reader && self.take_queued(class, first, me) {
            return Got::Yes;
        }
        self.unlink(me);
        // WAKING may stand for us (we are leaving): clearing is always safe.
        let clear = WAKING
            | if self.list.head() == 0 {
                WAITERS | HANDOFF | PREFQ
            } else if first {
                HANDOFF // only the head sets it
            } else {
                0
            };
        // Relaxed: an RMW under WLOCK.
        self.count.fetch_and(!clear, Ordering::Relaxed);
        self.pass_turn_and_wunlock();
        stat::inc(Event::RwTimeout);
        Got::TimedOut
    }

    /// Under WLOCK: select up to `KLOCK_RWSEM_WAKE_READERS` queued readers
    /// (skipping writers; patch 15), count them in one RMW (`(n,..) ->
    /// (n+k,..)`, clearing HANDOFF, WAITERS and PREFQ when the list
    /// empties, PREFQ when no reader-preferring reader is left), unlink them
    /// and mark them Granting (the kernel's two passes: no grantee runs
    /// before it is counted). The caller completes the grants after
    /// releasing WLOCK ([`WakeQ::finish`]).
    ///
    /// `only_pref` (a writer heads the list and the lock stays read-owned,
    /// INV-PREFQ): only reader-preferring readers, HANDOFF (the head
    /// writer's) kept, and only while the count after the release still
    /// has readers and no writer: `(n,Q|P[|H]) -> (n+k,Q[|P][|H])`, n > 0.
    fn grant_readers(&self, sub: u32, add: u32, wq: &mut WakeQ, only_pref: bool) -> bool {
        let limit = crate::tune::get().rwsem_wake_readers as usize;
        let start = wq.n;
        let h = self.list.head();
        let mut t = h;
        let mut left = 0usize;
        let mut left_pref = 0usize;
        loop {
            let w = RwWaiter::decode(t);
            let reader = w.class() == Class::Reader && (!only_pref || w.is_pref());
            if reader && wq.n - start < limit {
                wq.push(t | WakeQ::GRANT);
            } else {
                left += 1;
                left_pref += usize::from(w.class() == Class::Reader && w.is_pref());
            }
            t = w.w.next_link();
            if t == h {
                break;
            }
        }
        let k = (wq.n - start) as u32;
        let clear = if only_pref { 0 } else { HANDOFF }
            | if left == 0 { WAITERS | PREFQ } else { 0 }
            | if left_pref == 0 { PREFQ } else { 0 };
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            // Re-check on every try: a contender granter does not hold the
            // lock, so a stealing writer may take it meanwhile (then no
            // grant: the kernel backs out the same way). Reader-preferring
            // readers behind a writer only join a lock that stays
            // read-owned (a count failing readers drop without WLOCK may be
            // gone).
            let after = c - sub + add;
            if after & (WRITER | UPGRADING) != 0 || (only_pref && readers(after) == 0) {
                wq.n = start;
                return false;
            }
            // Acquire: a contender granter passes on the release of the
            // lock's last owner (pairs with its Release), through the
            // grants' Release, to the grantees (INV-GRANT-PIN).
            match self.count.compare_exchange_weak(
                c,
                (c + k * READER_BIAS) & !clear,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        let head_before = self.list.head();
        for &t in &wq.codes[start..wq.n] {
            let t = t & !WakeQ::GRANT;
            self.list.remove(t);
            chaos::point(Site::ListEdit);
            // INV-WAKE-ADDR: under WLOCK, the node was on our list.
            Waiter::decode(t).mark_granting();
        }
        if self.list.head() != head_before {
            self.list.stamp_head();
        }
        // Relaxed: a hint.
        self.owner.store(OWNER_READER, Ordering::Relaxed);
        stat::add(Event::RwReadGranted, k as u64);
        stat::cond_inc(Event::RwReadGrantBatch, k > 1);
        if only_pref {
            stat::add(Event::RwReadGrantedPref, k as u64);
        }
        true
    }

    /// Under WLOCK, holding `sub` (0 for a contender): give the head its
    /// turn as of the count after `c - sub + add`, then release (`sub` out,
    /// `add` in, WLOCK cleared) in one CAS. Readers at the head: granted
    /// (counted before the release). A writer at the head, with `grant`
    /// (hand-off, fair unlock) and the lock free after the release: the lock
    /// passes to it in the releasing CAS (`(0,W|Q|H) -> (0,W[|Q])`).
    /// Otherwise a writer or upgrader head is marked woken if it could take
    /// the lock (patch 12: no second wake).
    fn hand_on(&self, sub: u32, add: u32, grant: bool, wq: &mut WakeQ) {
        let h = self.list.head();
        let class = (h != 0).then(|| RwWaiter::decode(h).class());
        // Relaxed: under WLOCK; the CASes below decide.
        let mut c = self.count.load(Ordering::Relaxed);
        if class == Some(Class::Reader) && self.grant_readers(sub, add, wq, false) {
            c = self.count.load(Ordering::Relaxed);
        }
        // INV-PREFQ: a writer heads the list and the lock stays read-owned:
        // reader-preferring readers queued behind it join the readers.
        let after = c - sub + add;
        if class.is_some_and(|cl| cl != Class::Reader)
            && c & PREFQ != 0
            && readers(after) > 0
            && after & (WRITER | UPGRADING) == 0
            && self.grant_readers(sub, add, wq, true)
        {
            c = self.count.load(Ordering::Relaxed);
        }
        let mut marked = false;
        loop {
            let after = (c - sub + add) & !WLOCK;
            let mut new = after;
            let mut handed = false;
            if let Some(cl) = class.filter(|&cl| cl != Class::Reader)
                && is_lockable_by(after, cl, true)
            {
                if grant && cl == Class::Writer {
                    let last = Waiter::decode(h).next_link() == h;
                    let empty = if last { WAITERS | PREFQ } else { 0 };
                    new = (after + WRITER) & !(HANDOFF | WAKING | empty);
                    handed = true;
                } else {
                    if !marked {
                        // INV-WAKE-ADDR: under WLOCK, before the release.
                        if RwWaiter::decode(h).w.wake_mark() {
                            wq.push(h);
                        } else {
                            stat::inc(Event::RwWakeSkipped);
                        }
                        marked = true;
                    }
                    // INV-WAKING: the head is woken until it re-tries.
                    new |= WAKING;
                }
            }
            if handed {
                // Keep WLOCK across the unlink: the lock passes in this CAS.
                // AcqRel: Release publishes our critical section; Acquire (a
                // contender granter) takes the last owner's release; the
                // grant's Release passes both on to the grantee.
                match self.count.compare_exchange_weak(
                    c,
                    new | WLOCK,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        chaos::point(Site::AfterRelease);
                        self.unlink(h);
                        // Relaxed: a hint; the grantee stores its id.
                        self.owner.store(0, Ordering::Relaxed);
                        Waiter::decode(h).mark_granting();
                        wq.push(h | WakeQ::GRANT);
                        stat::inc(Event::MutexHandoff);
                        // The lock is the grantee's, and it cannot run
                        // before `finish`: WLOCK is still ours to release.
                        self.wunlock();
                        return;
                    }
                    Err(x) => c = x,
                }
                continue;
            }
            // Release pairs with the next owner's Acquire (and releases
            // WLOCK to the next holder).
            match self
                .count
                .compare_exchange_weak(c, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(x) => c = x,
            }
        }
    }

    /// Under WLOCK: take `t` off the list; if it was the head, the new head
    /// is first from now on (eventual fairness's clock).
    #[inline]
    fn unlink(&self, t: u32) {
        let was_head = self.list.head() == t;
        self.list.remove(t);
        if was_head {
            self.list.stamp_head();
        }
    }

    /// Release `sub` and take `add` (read unlock: `READER_BIAS`, 0; write
    /// unlock: `WRITER`, 0; downgrade: `WRITER`, `READER_BIAS`). Without
    /// waiters that could use it: one CAS. Otherwise take WLOCK while still
    /// holding `sub`, give the head its turn, release in one CAS, then only
    /// complete grants and wake (INV-WAKE-ADDR, INV-GRANT-PIN).
    ///
    /// # Safety
    ///
    /// The caller holds `sub`.
    unsafe fn release_share(&self, sub: u32, add: u32, fair: bool) {
        let plain_read = sub == READER_BIAS && add == 0;
        // Relaxed: the CASes decide; their orderings are commented.
        let mut c = self.count.load(Ordering::Relaxed);
        // Eventual fairness (`KLOCK_RWSEM_FAIR_HANDOFF_NS`): a head that has
        // been first that long gets its turn in this release (readers
        // granted, a writer handed the lock), even while a woken head is
        // pending. The next head's clock starts when it becomes first.
        let fair = fair
            || (has_waiters(c)
                && fair_check_due()
                && self
                    .list
                    .head_first_for(crate::tune::get().rwsem_fair_handoff_ns));
        loop {
            if plain_read && c & UPGRADING != 0 && readers(c) == 2 {
                // The upgrader is about to be alone: release, then wake it on
                // the count word (an address).
                // Release pairs with the upgrader's Acquire CAS.
                match self.count.compare_exchange_weak(
                    c,
                    c - sub,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        chaos::point(Site::AfterRelease);
                        wait::futex_wake(&self.count, 1);
                        return;
                    }
                    Err(x) => c = x,
                }
                continue;
            }
            // A reader that is not the last cannot let a waiter in.
            // INV-WAKING: a woken head will re-try after this release.
            let woken_head = c & WAKING != 0 && !handoff_owed(c) && !fair;
            if !has_waiters(c) || (plain_read && readers(c) > 1) || woken_head {
                // Release pairs with the next owner's Acquire.
                match self.count.compare_exchange_weak(
                    c,
                    c - sub + add,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(x) => c = x,
                }
                continue;
            }
            if c & WLOCK != 0 {
                osq::spin_then_yield(|| {
                    (osq::peek(&self.count, Ordering::Relaxed) & WLOCK == 0).then_some(())
                });
                c = self.count.load(Ordering::Relaxed);
                continue;
            }
            // Acquire pairs with the Release of the previous WLOCK holder.
            match self.count.compare_exchange_weak(
                c,
                c | WLOCK,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(x) => c = x,
            }
        }
        // We hold `sub` and WLOCK.
        if plain_read && readers(c) == 1 {
            // The last reader leaves with waiters: writers may spin again.
            // Relaxed: a hint.
            self.owner.fetch_and(!OWNER_NONSPINNABLE, Ordering::Relaxed);
        }
        let mut wq = WakeQ::new();
        self.hand_on(sub, add, fair || handoff_owed(c), &mut wq);
        chaos::point(Site::AfterRelease);
        wq.finish();
    }
}

/// `KLOCK_RWSEM_READER` (unit tests may override it per thread).
#[inline]
fn reader_mode() -> u32 {
    #[cfg(all(test, not(loom)))]
    if let Some(m) = tests::MODE.with(|c| c.get()) {
        return m;
    }
    crate::tune::get().rwsem_reader
}

/// Aborts the process if dropped: held across a re-acquisition that must
/// not unwind (lock_api's `bump_*`: the caller's guard would stand for a
/// lock it no longer holds); forgotten once it returned.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        std::process::abort();
    }
}

impl Class {
    /// What this class adds to the count when it takes the lock.
    #[inline]
    const fn share(self) -> u32 {
        match self {
            Class::Reader => READER_BIAS,
            Class::Writer => WRITER,
            Class::Upgrader => READER_BIAS | UPGRADE,
        }
    }
}

/// Owner states seen by a spinner (the kernel's `enum owner_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnerState {
    /// No owner (or one in transition): try to take it.
    Null,
    /// A writer owns it (a new one, or the same one still running).
    Writer,
    /// Readers own it.
    Reader,
    /// Stop spinning.
    NonSpinnable,
}

// ---------------------------------------------------------------------------
// Downgrade and upgradable reads
// ---------------------------------------------------------------------------

impl<S: SpinPolicy> RawRwLock<S> {
    /// Turn the write lock into a read lock (`(0,W) -> (1,-)`), granting
    /// queued readers at the head the lock too.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// unsafe { l.downgrade(t) };
    /// assert!(l.try_lock_shared());
    /// unsafe { l.unlock_shared(); l.unlock_shared() };
    /// ```
    pub unsafe fn downgrade(&self, token: WriteToken) {
        let _ = token;
        self.set_reader_owned_from_writer();
        // SAFETY: forwarded.
        unsafe { self.release_share(WRITER, READER_BIAS, false) }
    }

    #[inline]
    fn set_reader_owned_from_writer(&self) {
        // Relaxed: a hint, stored while we still hold the lock.
        self.owner.store(OWNER_READER, Ordering::Relaxed);
    }

    /// Take an upgradable read lock: shared with readers, exclusive with
    /// writers and other upgradable readers (`(n,-) -> (n+1,U)`).
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_upgradable();
    /// assert!(l.try_lock_shared());
    /// assert!(!l.try_lock_upgradable());
    /// unsafe { l.unlock_shared() };
    /// let t = unsafe { l.upgrade() };
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    pub fn lock_upgradable(&self) {
        let got = self.upgradable(None);
        debug_assert!(got);
    }

    /// [`lock_upgradable`](Self::lock_upgradable) with a deadline in
    /// [`wait::now_ns`] time: `true` if it was taken (release it with
    /// [`unlock_upgradable`](Self::unlock_upgradable)), `false` if the
    /// deadline passed first (nothing held). A queued upgrader that gives up
    /// leaves the list as a timed writer does (`leave`: it clears WAKING,
    /// which may stand for a wake-up it consumed, and passes the turn on).
    /// The `lock_api::RawRwLockUpgradeTimed` acquisitions go through it;
    /// public for the loom models (see
    /// [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// Transitions: `(n,-) -> (n+1,U)` as
    /// [`lock_upgradable`](Self::lock_upgradable); queued, `(n,Q..) ->
    /// (n+1,U[|Q])` on a re-try (`take_queued`), or on giving up the
    /// timed-out waiter's exit (`(x,Q|K..) -> (x,[Q])`, WAKING cleared,
    /// WAITERS/PREFQ/HANDOFF cleared as the list empties).
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_upgradable();
    /// // Another upgradable reader excludes us; the deadline has passed.
    /// assert!(!l.lock_upgradable_until_ns(0));
    /// unsafe { l.unlock_upgradable() };
    /// assert!(l.lock_upgradable_until_ns(klock::wait::now_ns() + 1_000_000));
    /// unsafe { l.unlock_upgradable() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub fn lock_upgradable_until_ns(&self, deadline: u64) -> bool {
        self.upgradable(Some(deadline))
    }

    /// The upgradable read, blocking or until `deadline`: the polite try
    /// (no barging past waiters), a steal, or the wait list.
    fn upgradable(&self, deadline: Option<u64>) -> bool {
        if self.try_lock_upgradable() {
            return true;
        }
        let got = self.try_take(Class::Upgrader) || {
            let id = crate::tid::current_id();
            matches!(self.wait(Class::Upgrader, id, deadline, false), Got::Yes)
        };
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Try to take an upgradable read lock without waiting.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// assert!(l.try_lock_upgradable());
    /// unsafe { l.unlock_upgradable() };
    /// ```
    #[inline]
    pub fn try_lock_upgradable(&self) -> bool {
        let got = self.add_while(Class::Upgrader.share(), |c| {
            c & WAITERS == 0 && is_lockable_by(c, Class::Upgrader, false)
        });
        if got {
            self.set_reader_owned();
        }
        got
    }

    /// Release an upgradable read lock.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    pub unsafe fn unlock_upgradable(&self) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS | UPGRADE, 0, false) }
    }

    /// Release an upgradable read lock fairly (`lock_api`'s
    /// `unlock_upgradable_fair`): `(n,U) -> (n-1,-)` as
    /// [`unlock_upgradable`](Self::unlock_upgradable), except that with
    /// waiters it always takes WLOCK (no WAKING short cut) and, when the
    /// release frees the lock and a writer heads the list, passes the lock
    /// to it in the releasing CAS (`(1,U|Q) -> (0,W[|Q])`, as the other fair
    /// unlocks). Readers at the head are granted as by any unlock; an
    /// upgrader at the head is woken, not granted (it re-tries, as after any
    /// unlock).
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_upgradable();
    /// unsafe { l.unlock_upgradable_fair() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS | UPGRADE, 0, true) }
    }

    /// Let waiters in if there are any, then take the upgradable read lock
    /// back (`lock_api`'s `bump_upgradable`): with no waiters (WAITERS
    /// clear) it changes nothing and returns at once (nobody to yield to: a
    /// waiter that queues later finds us still holding, as it would have a
    /// moment earlier); otherwise
    /// [`unlock_upgradable_fair`](Self::unlock_upgradable_fair) then
    /// [`lock_upgradable`](Self::lock_upgradable). Aborts the process if
    /// taking the lock back unwinds (the caller's guard would then stand
    /// for a lock it no longer holds).
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock (and holds it again on
    /// return).
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_upgradable();
    /// let before = l.count_word();
    /// unsafe { l.bump_upgradable() };
    /// assert_eq!(l.count_word(), before);
    /// unsafe { l.unlock_upgradable() };
    /// ```
    pub unsafe fn bump_upgradable(&self) {
        // Relaxed: a hint; if a waiter queues after this load, it queued
        // behind a lock we held anyway (as if it came a moment later).
        if !has_waiters(self.count.load(Ordering::Relaxed)) {
            return;
        }
        // SAFETY: forwarded.
        unsafe { self.unlock_upgradable_fair() };
        let abort = AbortOnUnwind;
        self.lock_upgradable();
        std::mem::forget(abort);
    }

    /// Turn an upgradable read lock into a plain read lock: `(n,U) ->
    /// (n,-)` (lock_api's `downgrade_upgradable`). The reader count is kept,
    /// so no writer can get in between; UPGRADE is released, so an
    /// upgrader at the head of the list may now take it: with waiters, the
    /// release takes WLOCK and gives the head its turn (an upgrader woken,
    /// readers at the head granted) as any release does.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_upgradable();
    /// unsafe { l.downgrade_upgradable() };
    /// assert!(l.try_lock_upgradable()); // UPGRADE is free again
    /// unsafe { l.unlock_upgradable(); l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn downgrade_upgradable(&self) {
        // SAFETY: forwarded (we hold UPGRADE; `release_share` subtracts it
        // and adds nothing: our reader count stays).
        unsafe { self.release_share(UPGRADE, 0, false) }
    }

    /// Turn the write lock into an upgradable read lock: `(0,W) -> (1,U)`
    /// in the releasing CAS (lock_api's `downgrade_to_upgradable`), so no
    /// writer or other upgrader can get in between. Readers at the head of
    /// the list are granted at the same time (the lock becomes read-owned,
    /// as with [`downgrade`](Self::downgrade)); a writer or upgrader at the
    /// head still cannot take it.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock acquired as `token`.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// unsafe { l.downgrade_to_upgradable(t) };
    /// assert!(l.try_lock_shared()); // readers get in
    /// assert!(!l.try_lock_upgradable()); // another upgrader does not
    /// assert!(l.try_lock_exclusive().is_none()); // nor a writer
    /// unsafe { l.unlock_shared(); l.unlock_upgradable() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn downgrade_to_upgradable(&self, token: WriteToken) {
        let _ = token;
        self.set_reader_owned_from_writer();
        // SAFETY: forwarded (we hold WRITER; it becomes one reader count and
        // UPGRADE in one RMW).
        unsafe { self.release_share(WRITER, READER_BIAS | UPGRADE, false) }
    }

    /// Upgrade an upgradable read lock to the write lock: stop new readers
    /// (UPGRADING), wait for the others to leave, then `(1,U|G) -> (0,W)`.
    /// Queued readers are granted at the write unlock.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// let l = klock::rwlock::RawRwLock::<klock::rwlock::SpinOff>::new();
    /// l.lock_upgradable();
    /// let t = unsafe { l.upgrade() };
    /// assert!(l.is_locked_exclusive());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    pub unsafe fn upgrade(&self) -> WriteToken {
        // SAFETY: forwarded.
        let t = unsafe { self.upgrade_wait(None) };
        t.expect("an upgrade without a deadline returns holding the write lock")
    }

    /// [`upgrade`](Self::upgrade) with a deadline in [`wait::now_ns`] time
    /// (lock_api's `try_upgrade_for`/`_until`): the write token if the other
    /// readers left in time; `None` if the deadline passed first, and then
    /// the caller still holds its upgradable read lock and the word is as if
    /// it had never tried (`cancel_upgrade`: UPGRADING cleared, and readers
    /// that queued because of it given their turn). Public for the loom
    /// models (see [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// Transitions: `(1,U) -> (0,W)` at once; else `(n,U) -> (n,U|G)`, wait,
    /// then `(1,U|G) -> (0,W)`, or on giving up `(n,U|G[|Q]) -> (n,U[|Q])`.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    ///
    /// ```
    /// use klock::rwlock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_upgradable();
    /// l.lock_shared(); // another reader inside
    /// assert!(unsafe { l.upgrade_until_ns(0) }.is_none());
    /// unsafe { l.unlock_shared() };
    /// let t = unsafe { l.upgrade_until_ns(klock::wait::now_ns() + 1_000_000) }.unwrap();
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub unsafe fn upgrade_until_ns(&self, deadline: u64) -> Option<WriteToken> {
        // SAFETY: forwarded.
        unsafe { self.upgrade_wait(Some(deadline)) }
    }

    /// The upgrade, blocking or until `deadline`.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    unsafe fn upgrade_wait(&self, deadline: Option<u64>) -> Option<WriteToken> {
        // SAFETY: forwarded.
        if let Some(t) = unsafe { self.try_upgrade() } {
            return Some(t);
        }
        // Already past the deadline: do not stop the readers at all.
        wait::remaining(deadline)?;
        let id = crate::tid::current_id();
        // Relaxed: UPGRADING carries no data; the CAS below acquires.
        let mut c = self.count.fetch_or(UPGRADING, Ordering::Relaxed) | UPGRADING;
        let mut expired = false;
        loop {
            if readers(c) == 1 {
                // Acquire pairs with the readers' Release.
                match self.count.compare_exchange_weak(
                    c,
                    (c - (READER_BIAS | UPGRADE | UPGRADING)) | WRITER,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(x) => c = x,
                }
                continue;
            }
            let Some(timeout) = wait::remaining(deadline).filter(|_| !expired) else {
                self.cancel_upgrade();
                stat::inc(Event::RwTimeout);
                return None;
            };
            // The last other reader wakes the count word.
            chaos::point(Site::BeforeSleep);
            stat::inc(Event::RwUpgradeWait);
            let r = wait::futex_wait(&self.count, c, timeout);
            expired |= r == WaitOutcome::TimedOut;
            chaos::point(Site::AfterWake);
            // Relaxed: the CAS above decides (its Acquire pairs with the readers' Release).
            c = self.count.load(Ordering::Relaxed);
        }
        self.set_writer_owned(id);
        Some(WriteToken { id })
    }

    /// A timed upgrade gives up: `(n,U|G[|Q]) -> (n,U[|Q])`, n >= 1 (we
    /// still hold the upgradable read lock). While UPGRADING was set new
    /// readers failed their fast path and may have queued: with waiters,
    /// take WLOCK and give the head its turn (readers at the head are
    /// granted: the lock is read-owned and no longer upgrading). A reader
    /// that queues after our RMW runs its own hand-on under WLOCK and sees
    /// UPGRADING clear. The only wake-up an upgrader may consume is on the
    /// count word, and only the one upgrader (UPGRADE is exclusive) sleeps
    /// there: nothing to pass on.
    fn cancel_upgrade(&self) {
        // Relaxed: UPGRADING carries no data (we publish nothing: we only
        // read under the upgradable lock); the hand-on below takes WLOCK
        // with Acquire (pairs with the last WLOCK holder's Release) and
        // re-reads the word under it.
        let c = self.count.fetch_and(!UPGRADING, Ordering::Relaxed) & !UPGRADING;
        if has_waiters(c) {
            self.wake_readers_into_read_owned();
        }
    }

    /// Upgrade if no other reader holds the lock, without waiting.
    ///
    /// # Safety
    ///
    /// The caller holds an upgradable read lock.
    pub unsafe fn try_upgrade(&self) -> Option<WriteToken> {
        let id = crate::tid::current_id();
        // Relaxed: the CAS decides.
        let mut c = self.count.load(Ordering::Relaxed);
        while readers(c) == 1 && c & UPGRADING == 0 {
            // Acquire pairs with the readers' Release.
            match self.count.compare_exchange_weak(
                c,
                (c - (READER_BIAS | UPGRADE)) | WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.set_writer_owned(id);
                    return Some(WriteToken { id });
                }
                Err(x) => c = x,
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------
// lock_api
// ---------------------------------------------------------------------------

/// klock's reader-writer lock (`lock_api::RwLock` over [`RawRwLock`]).
/// Size: 16 bytes + `T` (rounded to `T`'s alignment).
///
/// ```
/// let l = klock::RwLock::new(vec![1]);
/// l.write().push(2);
/// assert_eq!(l.read().len(), 2);
/// let u = l.upgradable_read();
/// let mut w = klock::rwlock::RwLockUpgradableReadGuard::upgrade(u);
/// w.push(3);
/// assert_eq!(w.len(), 3);
/// ```
#[cfg(not(loom))]
pub type RwLock<T> = lock_api::RwLock<RawRwLock<SpinOsq>, T>;
/// A reader-writer lock whose writers never spin (`klock_rwsem_nospin`).
///
/// ```
/// let l = klock::rwlock::RwLockNoSpin::new(1);
/// assert_eq!(*l.read(), 1);
/// ```
#[cfg(not(loom))]
pub type RwLockNoSpin<T> = lock_api::RwLock<RawRwLock<SpinOff>, T>;
/// Read guard of [`RwLock`] (a reference: 8 bytes on 64-bit).
///
/// ```
/// let l = klock::RwLock::new(1);
/// let g: klock::RwLockReadGuard<'_, i32> = l.read();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock<SpinOsq>, T>;
/// Write guard of [`RwLock`] (a reference plus the 4-byte [`WriteToken`]).
///
/// ```
/// let l = klock::RwLock::new(1);
/// let mut g: klock::RwLockWriteGuard<'_, i32> = l.write();
/// *g = 2;
/// ```
#[cfg(not(loom))]
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock<SpinOsq>, T>;
/// Upgradable read guard of [`RwLock`].
///
/// ```
/// let l = klock::RwLock::new(1);
/// let g = l.upgradable_read();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type RwLockUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawRwLock<SpinOsq>, T>;

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
// `(n,U) -> (n,-)` and `(0,W) -> (1,U)`; the second releases (Release) the
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

/// Recursive reads on a [`RwLock`] (or any `lock_api::RwLock` over
/// [`RawRwLock`]): parking_lot's `read_recursive`, `try_read_recursive`,
/// `try_read_recursive_for` and `try_read_recursive_until`. lock_api 0.5
/// dropped its `RawRwLockRecursive` and `RawRwLockRecursiveTimed` traits
/// (parking_lot 0.13 offers a separate `RecursiveRwLock` type instead), so
/// klock provides the methods through this extension trait: code written
/// for the older parking_lot API compiles with `use
/// klock::rwlock::RwLockRecursiveExt;`. A recursive read is admitted past
/// waiting writers and past an upgrade under way, whenever no writer holds
/// the lock ([`RawRwLock::lock_shared_recursive`]).
///
/// ```
/// use klock::rwlock::RwLockRecursiveExt;
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
pub trait RwLockRecursiveExt<S: SpinPolicy, T: ?Sized> {
    /// A read lock past waiting writers (blocks only while a writer holds
    /// it). See [`RawRwLock::lock_shared_recursive`].
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>;
    /// [`read_recursive`](Self::read_recursive) without waiting.
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>>;
    /// [`read_recursive`](Self::read_recursive) for at most `timeout`.
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>>;
    /// [`read_recursive`](Self::read_recursive) until `deadline`.
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>>;
}

#[cfg(not(loom))]
impl<S: SpinPolicy, T: ?Sized> RwLockRecursiveExt<S, T> for lock_api::RwLock<RawRwLock<S>, T> {
    fn read_recursive(&self) -> lock_api::RwLockReadGuard<'_, RawRwLock<S>, T> {
        // SAFETY: `raw` is only used to take a read lock, which no live
        // guard or reference conflicts with; the guard made below releases it.
        unsafe { self.raw() }.lock_shared_recursive();
        // SAFETY: we hold a read lock on this lock; the guard state is a
        // marker.
        unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) }
    }
    fn try_read_recursive(&self) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got = unsafe { self.raw() }.try_lock_shared_recursive();
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_for(
        &self,
        timeout: std::time::Duration,
    ) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::deadline_after(timeout));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
    fn try_read_recursive_until(
        &self,
        deadline: std::time::Instant,
    ) -> Option<lock_api::RwLockReadGuard<'_, RawRwLock<S>, T>> {
        // SAFETY: as in `read_recursive` (`raw` only takes a read lock).
        let got =
            unsafe { self.raw() }.lock_shared_recursive_until_ns(wait::instant_to_ns(deadline));
        // SAFETY: as in `read_recursive`, when `got`.
        got.then(|| unsafe { self.make_read_guard_unchecked(lock_api::GuardSend::new()) })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn try_unlock_uncontended_leaves_a_transient_reader_count_alone() {
        // `(0,W)` plus a reader's optimistic add (about to be taken back):
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

    thread_local! {
        pub(super) static MODE: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
    }

    fn hammer<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
        hammer_mode::<S>(readers, writers, iters, None)
    }

    fn hammer_mode<S: SpinPolicy>(readers: usize, writers: usize, iters: u64, mode: Option<u32>) {
        let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
            Arc::new(lock_api::RwLock::new((0, 0)));
        let reads = Arc::new(AtomicU64::new(0));
        let mut hs = Vec::new();
        for i in 0..readers + writers {
            let l = l.clone();
            let reads = reads.clone();
            hs.push(std::thread::spawn(move || {
                MODE.with(|c| c.set(mode));
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

    /// Wait (up to 5 s) until `f` holds.
    fn eventually(what: &str, f: impl Fn() -> bool) {
        let t0 = std::time::Instant::now();
        while !f() {
            assert!(t0.elapsed().as_secs() < 5, "timed out waiting: {what}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn pref_reads_pass_a_waiting_writer() {
        let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
        l.lock_shared();
        let l2 = l.clone();
        let w = std::thread::spawn(move || {
            let t = l2.lock_exclusive();
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        let l3 = l.clone();
        std::thread::spawn(move || {
            // The fair read queues behind the writer; the reader-preferring
            // ones get in (the lock is read-held).
            assert!(!l3.try_lock_shared());
            assert!(l3.try_lock_shared_prefer_readers());
            assert!(l3.lock_shared_prefer_readers_until_ns(wait::now_ns() + 1_000_000));
            l3.lock_shared_prefer_readers();
            assert_eq!(readers(l3.count_word()), 4);
            for _ in 0..3 {
                unsafe { l3.unlock_shared() };
            }
        })
        .join()
        .unwrap();
        assert!(!w.is_finished());
        unsafe { l.unlock_shared() };
        w.join().unwrap();
        assert_eq!(l.count_word(), 0);
    }

    #[test]
    fn pref_reads_never_join_a_writer() {
        let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
        let t = l.lock_exclusive();
        assert!(!l.try_lock_shared_prefer_readers());
        assert!(!l.lock_shared_prefer_readers_until_ns(wait::now_ns() + 2_000_000));
        assert_eq!(l.count_word(), WRITER);
        // Free, but a hand-off is owed to a waiter: no.
        assert!(!is_pref_read_lockable(WAITERS | HANDOFF));
        let l2 = l.clone();
        let r = std::thread::spawn(move || {
            l2.lock_shared_prefer_readers();
            unsafe { l2.unlock_shared() };
        });
        eventually("reader queued", || l.count_word() & PREFQ != 0);
        unsafe { l.unlock_exclusive(t) };
        r.join().unwrap();
        assert_eq!(l.count_word(), 0, "PREFQ and WAITERS cleared");
    }

    /// INV-PREFQ: a reader-preferring reader queued behind a writer at the
    /// head gets in once another reader holds the lock.
    #[test]
    fn pref_reader_queued_behind_writer_is_granted_when_read_owned() {
        let l: Arc<RawRwLock> = Arc::new(RawRwLock::new());
        let t = l.lock_exclusive();
        let l2 = l.clone();
        let w = std::thread::spawn(move || {
            let t = l2.lock_exclusive();
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l3, in3) = (l.clone(), inside.clone());
        let r = std::thread::spawn(move || {
            l3.lock_shared_prefer_readers();
            in3.store(true, Ordering::SeqCst);
            unsafe { l3.unlock_shared() };
        });
        eventually("reader queued", || l.count_word() & PREFQ != 0);
        unsafe { l.unlock_exclusive(t) };
        // The writer may win first; either way, once we read-hold the lock
        // the queued reader must get in beside us.
        l.lock_shared_prefer_readers();
        eventually("queued reader admitted beside a reader", || {
            inside.load(Ordering::SeqCst)
        });
        unsafe { l.unlock_shared() };
        r.join().unwrap();
        w.join().unwrap();
        assert_eq!(l.count_word(), 0);
    }

    /// Reader-preferring readers (blocking, try, timed) against writers:
    /// no torn read, no lost update, a clean word at the end.
    #[test]
    fn pref_readers_and_writers_contended() {
        for spin in [false, true] {
            if spin {
                hammer_pref::<SpinOsq>(4, 3, 5_000);
            } else {
                hammer_pref::<SpinOff>(4, 3, 5_000);
            }
        }
    }

    fn hammer_pref<S: SpinPolicy>(readers: usize, writers: usize, iters: u64) {
        let l: Arc<lock_api::RwLock<RawRwLock<S>, (u64, u64)>> =
            Arc::new(lock_api::RwLock::new((0, 0)));
        let hs: Vec<_> = (0..readers + writers)
            .map(|i| {
                let l = l.clone();
                std::thread::spawn(move || {
                    let raw = unsafe { l.raw() };
                    for k in 0..iters {
                        if i < readers {
                            let got = match k % 3 {
                                0 => {
                                    raw.lock_shared_prefer_readers();
                                    true
                                }
                                1 => raw.try_lock_shared_prefer_readers(),
                                _ => raw
                                    .lock_shared_prefer_readers_until_ns(wait::now_ns() + 100_000),
                            };
                            if got {
                                let g = unsafe { &*l.data_ptr() };
                                assert_eq!(g.0, g.1, "torn read");
                                unsafe { raw.unlock_shared() };
                            }
                        } else {
                            let mut g = l.write();
                            g.0 += 1;
                            g.1 += 1;
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(l.read().0, writers as u64 * iters);
        assert_eq!(unsafe { l.raw() }.count_word(), 0);
    }

    // ---- the lock_api extension traits (issue 20) --------------------------

    /// A recursive read gets in while a writer waits, where a plain read
    /// (fast path or try) would queue; it does not get in while a writer
    /// holds the lock.
    #[test]
    fn recursive_read_passes_waiting_writer() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_shared();
        let l2 = l.clone();
        let w = std::thread::spawn(move || {
            let t = l2.lock_exclusive();
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        assert!(
            !l.try_lock_shared(),
            "a plain read must queue behind the writer"
        );
        assert!(l.try_lock_shared_recursive());
        l.lock_shared_recursive();
        assert!(l.lock_shared_recursive_until_ns(wait::now_ns() + 1_000_000));
        assert_eq!(readers(l.count_word()), 4);
        for _ in 0..4 {
            assert!(!w.is_finished());
            unsafe { l.unlock_shared() };
        }
        w.join().unwrap();
        assert_eq!(l.count_word(), 0);
        // A writer holds it: the recursive reads fail or time out, cleanly.
        let t = l.lock_exclusive();
        assert!(!l.try_lock_shared_recursive());
        let l3 = l.clone();
        let timed = std::thread::spawn(move || {
            l3.lock_shared_recursive_until_ns(wait::now_ns() + 20_000_000)
        });
        assert!(!timed.join().unwrap());
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    /// A reader that holds the lock and reads again while an upgrade waits
    /// for the readers to leave: a plain read would queue behind UPGRADING
    /// (deadlock: the upgrader waits for us); the recursive read gets in.
    #[test]
    fn recursive_read_passes_an_upgrade_under_way() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_shared();
        let l2 = l.clone();
        let u = std::thread::spawn(move || {
            l2.lock_upgradable();
            let t = unsafe { l2.upgrade() };
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("upgrade under way", || l.count_word() & UPGRADING != 0);
        assert!(
            !l.try_lock_shared(),
            "a plain read must wait for the upgrade"
        );
        assert!(l.try_lock_shared_recursive());
        l.lock_shared_recursive();
        unsafe { l.unlock_shared() };
        unsafe { l.unlock_shared() };
        assert!(!u.is_finished());
        unsafe { l.unlock_shared() };
        u.join().unwrap();
        assert_eq!(l.count_word(), 0);
    }

    /// `downgrade_to_upgradable`: `(0,W) -> (1,U)`; readers get in (a
    /// queued one is granted), another upgrader or a writer does not.
    #[test]
    fn downgrade_to_upgradable_lets_readers_in_only() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        let t = l.lock_exclusive();
        let l2 = l.clone();
        let r = std::thread::spawn(move || {
            l2.lock_shared();
            unsafe { l2.unlock_shared() };
        });
        eventually("reader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.downgrade_to_upgradable(t) };
        // The queued reader is granted while we hold the upgradable lock.
        r.join().unwrap();
        assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
        assert!(l.try_lock_shared());
        assert!(!l.try_lock_upgradable());
        assert!(l.try_lock_exclusive().is_none());
        let l3 = l.clone();
        let timed = std::thread::spawn(move || {
            let up = l3.lock_upgradable_until_ns(wait::now_ns() + 10_000_000);
            let wr = l3.lock_exclusive_until_ns(wait::now_ns() + 10_000_000);
            (up, wr.is_some())
        });
        assert_eq!(timed.join().unwrap(), (false, false));
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        unsafe { l.unlock_shared() };
        // Still upgradable: the upgrade needs no wait now.
        let t = unsafe { l.try_upgrade() }.expect("alone: upgrade at once");
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    /// `downgrade_upgradable`: `(n,U) -> (n,-)`; a queued upgrader gets in
    /// beside our read lock, a writer still does not.
    #[test]
    fn downgrade_upgradable_lets_an_upgrader_in() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let u = std::thread::spawn(move || {
            l2.lock_upgradable();
            rx.recv().unwrap();
            unsafe { l2.unlock_upgradable() };
        });
        eventually("upgrader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.downgrade_upgradable() };
        eventually("upgrader admitted", || {
            l.count_word() == (2 * READER_BIAS) | UPGRADE
        });
        assert!(l.try_lock_exclusive().is_none());
        tx.send(()).unwrap();
        u.join().unwrap();
        assert_eq!(l.count_word(), READER_BIAS);
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
    }

    /// A timed upgrade times out while a reader holds the lock; a reader
    /// that queued because of UPGRADING meanwhile is granted when it gives
    /// up; the lock is then fully usable (upgrade, write, read).
    #[test]
    fn timed_upgrade_times_out_while_a_reader_holds() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let l1 = l.clone();
        let held = std::thread::spawn(move || {
            l1.lock_shared();
            rx.recv().unwrap();
            unsafe { l1.unlock_shared() };
        });
        eventually("reader inside", || readers(l.count_word()) == 2);
        let inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l2, in2) = (l.clone(), inside.clone());
        let late = std::thread::spawn(move || {
            eventually("upgrade under way", || l2.count_word() & UPGRADING != 0);
            l2.lock_shared();
            in2.store(true, Ordering::SeqCst);
            unsafe { l2.unlock_shared() };
        });
        assert!(unsafe { l.upgrade_until_ns(wait::now_ns() + 200_000_000) }.is_none());
        // As if we had never tried: no UPGRADING, still upgradable.
        assert_eq!(l.count_word() & (UPGRADING | WRITER | UPGRADE), UPGRADE);
        eventually("the reader queued behind UPGRADING got in", || {
            inside.load(Ordering::SeqCst)
        });
        late.join().unwrap();
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        assert!(
            unsafe { l.upgrade_until_ns(0) }.is_none(),
            "deadline passed"
        );
        assert_eq!(l.count_word(), (2 * READER_BIAS) | UPGRADE);
        tx.send(()).unwrap();
        held.join().unwrap();
        let t = unsafe { l.upgrade_until_ns(wait::now_ns() + 1_000_000_000) }.unwrap();
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.unlock_exclusive(t) };
        l.lock_shared();
        unsafe { l.unlock_shared() };
        assert_eq!(l.count_word(), 0);
    }

    /// A timed upgradable read queues behind another upgradable reader, gives
    /// up, and leaves the word clean (no WAITERS, WAKING or HANDOFF left);
    /// one that is let in before its deadline gets the lock.
    #[test]
    fn timed_upgradable_read_times_out_and_leaves_clean() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let h =
            std::thread::spawn(move || l2.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
        assert!(!h.join().unwrap());
        assert_eq!(l.count_word(), READER_BIAS | UPGRADE);
        let l3 = l.clone();
        let h = std::thread::spawn(move || {
            let got = l3.lock_upgradable_until_ns(wait::now_ns() + 5_000_000_000);
            if got {
                unsafe { l3.unlock_upgradable() };
            }
            got
        });
        eventually("upgrader queued", || l.count_word() & WAITERS != 0);
        unsafe { l.unlock_upgradable() };
        assert!(h.join().unwrap());
        assert_eq!(l.count_word(), 0);
        // Behind a writer too.
        let t = l.lock_exclusive();
        let l4 = l.clone();
        let h =
            std::thread::spawn(move || l4.lock_upgradable_until_ns(wait::now_ns() + 20_000_000));
        assert!(!h.join().unwrap());
        assert_eq!(l.count_word(), WRITER);
        unsafe { l.unlock_exclusive(t) };
        assert_eq!(l.count_word(), 0);
    }

    /// `unlock_upgradable_fair` passes the lock to a queued writer in the
    /// releasing CAS (WRITER is set before the writer even runs);
    /// `bump_upgradable` lets it in and returns holding the upgradable lock
    /// again, and without waiters changes nothing.
    #[test]
    fn fair_upgradable_unlock_and_bump() {
        let l: Arc<RawRwLock<SpinOff>> = Arc::new(RawRwLock::new());
        l.lock_upgradable();
        let l2 = l.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let w = std::thread::spawn(move || {
            let t = l2.lock_exclusive();
            rx.recv().unwrap();
            unsafe { l2.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        unsafe { l.unlock_upgradable_fair() };
        assert_eq!(
            l.count_word() & (WRITER | READER_MASK),
            WRITER,
            "handed over"
        );
        assert!(!l.try_lock_upgradable());
        tx.send(()).unwrap();
        w.join().unwrap();
        assert_eq!(l.count_word(), 0);

        l.lock_upgradable();
        unsafe { l.bump_upgradable() };
        assert_eq!(
            l.count_word(),
            READER_BIAS | UPGRADE,
            "no waiter: unchanged"
        );
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l3, d3) = (l.clone(), done.clone());
        let w = std::thread::spawn(move || {
            let t = l3.lock_exclusive();
            d3.store(true, Ordering::SeqCst);
            unsafe { l3.unlock_exclusive(t) };
        });
        eventually("writer queued", || l.count_word() & WAITERS != 0);
        unsafe { l.bump_upgradable() };
        assert!(
            done.load(Ordering::SeqCst),
            "the bump let the writer in first"
        );
        assert_eq!(l.count_word() & !WAITERS, READER_BIAS | UPGRADE);
        w.join().unwrap();
        unsafe { l.unlock_upgradable() };
        assert_eq!(l.count_word(), 0);
    }

    /// Code written for parking_lot's RwLock compiles and behaves against
    /// klock's: the lock_api methods these traits enable, on the guards.
    #[test]
    fn parking_lot_style_api() {
        use lock_api::{RwLockUpgradableReadGuard as U, RwLockWriteGuard as W};
        use std::time::Duration;
        let l = crate::RwLock::new(0u32);
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
        assert_eq!(unsafe { l.raw() }.count_word(), 0);
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
        for mode in 0..=4 {
            hammer_mode::<SpinOsq>(3, 3, 10_000, Some(mode));
        }
    }
}

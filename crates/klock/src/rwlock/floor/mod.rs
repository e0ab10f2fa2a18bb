//! The floor rwlock (issue 34, "the floor"): std's futex rwlock protocol
//! written in klock's house, the cheapest correct hand-over every klock
//! rwlock is measured against (`docs/rwsem.md`, "The floor";
//! `docs/design.md` P19). One RMW to take either side, one to release it;
//! writer-preferring (a new reader waits while a writer waits), no owner
//! identity, no queue: who runs next is whoever the kernel wakes first.
//!
//! # Word layout (16 bytes: four `AtomicU32`)
//!
//! ```text
//! state:  31               30               29            28 ................ 0
//!        +----------------+----------------+-------------+--------------------+
//!        |WRITERS_WAITING |READERS_WAITING | UPGRADABLE  | readers (MASK = W) |
//!        +----------------+----------------+-------------+--------------------+
//! writer_notify:  a sequence number writers sleep on (bumped by each writer wake-up)
//! upgrade_notify: a sequence number an upgrading reader sleeps on (bumped when it is the last reader)
//! readers_since:  when READERS_WAITING was last set, µs (writer batches only; a hint)
//! ```
//!
//! * **readers** (bits 0-28): the number of read locks held; all ones
//!   ([`RW_FLOOR_WRITE_LOCKED`]) means a writer holds the lock.
//! * **UPGRADABLE**: one of the read locks is upgradable (at most one is;
//!   set only beside a read count, so never while free or write-locked).
//! * **READERS_WAITING**: readers may sleep on `state`; set by a reader
//!   before it sleeps, cleared by the unlock that wakes them all.
//! * **WRITERS_WAITING**: writers may sleep on `writer_notify`; set by a
//!   writer before it sleeps; a writer that took the lock after sleeping
//!   sets it again (others may still sleep). An upgrading reader sets it
//!   too, to stop new readers while the others drain.
//!
//! Everything zero = unlocked.
//!
//! # State diagram (state as (readers, R W))
//!
//! ```text
//!  (n,--) --read: add (n<MAX, no waiter bit)--> (n+1,--)
//!  (0,-*) --write: CAS to write-locked (| WRITERS_WAITING if it slept)--> (W,-*)
//!  (n,**) --read unlock: sub--> (n-1,**);  (1,-W) --last reader--> (0,-W): wake one writer
//!  (W,**) --write unlock: sub--> (0,**):   wake one writer if W, else all readers if R
//!  (0,RW) --wake: -> (0,R-), one writer woken; if none was asleep -> (0,--), readers woken
//!  waiters: a reader sleeps on state while it reads write-locked or a waiter bit (it sets R);
//!           a writer sleeps on writer_notify while the lock is held (it sets W)
//! ```
//!
//! No lost wake-up: a reader sleeps only while `state` still holds the
//! value with READERS_WAITING it set (the futex compares), and every unlock
//! that leaves the lock free with READERS_WAITING set clears it and wakes
//! all readers (or wakes a writer, which clears it in turn when it
//! unlocks). A writer sleeps only on the `writer_notify` value it read
//! before re-checking `state` with WRITERS_WAITING set; a wake-up bumps
//! `writer_notify` first, so a wake between the re-check and the sleep makes
//! the futex return at once. A timed writer gives up only at step 4 of
//! `write_slow`, after it saw the lock held with WRITERS_WAITING set (it
//! sets the bit again after a wake-up): the holder's unlock then wakes,
//! so a wake-up it took is not lost.
//!
//! # Turns (`PHASED`: [`RawRwLockPhased`], [`RawRwLockBatched`])
//!
//! The floor lets a woken writer lose to running readers: WRITERS_WAITING
//! is cleared for its wake-up, and until it runs (a futex wake-to-running,
//! 30-40 µs on the 2-vCPU host) new readers see no waiter bit. With turns:
//!
//! ```text
//!  read release, lock free, W set:  (0,*W) stays (0,*W), one writer woken (its reservation);
//!                                   none asleep: (0,*W) -> (0,*-), then (0,R-) -> (0,--) + readers woken
//!  write release, R set (Phased):   (0,R*) -> (0,--): every reader woken, and one writer if W was set
//!  write release, R set (Batched):  readers waited < READ_TURN_US: as a read release (next writer);
//!                                   else (0,RW) -> (0,-W), every reader woken; W stays, so only
//!                                   readers that slept enter (new ones wait behind the writers)
//!  a reader that slept may enter past R and W (not past a write-holder)
//! ```
//!
//! Each class's wait is bounded by the other's turn: readers wait for one
//! writer (Phased) or for a writer batch of `READ_TURN_US` (Batched);
//! writers wait for one turn of the readers that slept.
//!
//! # Upgradable reads (`upgrade.rs`)
//!
//! ```text
//!  (n,U=0,**) --upgradable read (as a read, U free)--> (n+1,U,**)
//!  (1,U,**)   --upgrade: CAS--> (W,-,**)        (n>1,U,*-) --upgrade: announce W--> (n,U,*W), sleep on upgrade_notify
//!  (2,U,*W)   --a reader leaves--> (1,U,*W): bump upgrade_notify, wake the upgrader
//!  (n,U,*W)   --upgrade timed out (it had set W)--> (n,U,*-): one writer and the readers woken
//!  (W,-,**)   --downgrade--> (1,-,**) / (1,U,**), waiting readers woken
//! ```

use crate::chaos::{self, Site};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;

/// The reader-count field (bits 0-28); all ones = write-locked.
pub const RW_FLOOR_MASK: u32 = (1 << 29) - 1;
/// A writer holds the lock.
pub const RW_FLOOR_WRITE_LOCKED: u32 = RW_FLOOR_MASK;
/// The most read locks at once (one below write-locked).
pub const RW_FLOOR_MAX_READERS: u32 = RW_FLOOR_MASK - 1;
/// One read lock is upgradable.
pub const RW_FLOOR_UPGRADABLE: u32 = 1 << 29;
/// Readers may sleep on `state`.
pub const RW_FLOOR_READERS_WAITING: u32 = 1 << 30;
/// Writers may sleep on `writer_notify`.
pub const RW_FLOOR_WRITERS_WAITING: u32 = 1 << 31;

/// One read lock in the count.
const READ_LOCKED: u32 = 1;

/// The read-only spin's budget before each sleep (about std's 100 PAUSEs,
/// as the floor mutex's). Under loom 0: one look, no scheduling point.
const SPIN_NS: u64 = if cfg!(loom) { 0 } else { 2_000 };

/// Readers in `s` (a write-locked word reads [`RW_FLOOR_MASK`]).
#[inline]
fn readers(s: u32) -> u32 {
    s & RW_FLOOR_MASK
}

/// Nobody holds the lock (waiter bits may be set).
#[inline]
fn is_unlocked(s: u32) -> bool {
    readers(s) == 0
}

/// A writer holds the lock.
#[inline]
fn is_write_locked(s: u32) -> bool {
    readers(s) == RW_FLOOR_WRITE_LOCKED
}

#[inline]
fn has_readers_waiting(s: u32) -> bool {
    s & RW_FLOOR_READERS_WAITING != 0
}

#[inline]
fn has_writers_waiting(s: u32) -> bool {
    s & RW_FLOOR_WRITERS_WAITING != 0
}

/// May a new reader take `s`? Not while a writer holds it, nor while
/// anyone waits (writer preference; readers wait only behind writers), nor
/// at the reader limit.
#[inline]
fn is_read_lockable(s: u32) -> bool {
    // Also false for write-locked (MASK > MAX_READERS).
    readers(s) < RW_FLOOR_MAX_READERS && !has_readers_waiting(s) && !has_writers_waiting(s)
}

/// With turns, may a reader that slept take `s`? Past waiter bits, not past
/// a writer that holds the lock, nor at the reader limit.
#[inline]
fn is_turn_read_lockable(s: u32) -> bool {
    readers(s) < RW_FLOOR_MAX_READERS
}

/// Does a reader hold the lock upgradable?
#[inline]
fn has_upgradable(s: u32) -> bool {
    s & RW_FLOOR_UPGRADABLE != 0
}

/// After a read release left `s`: does an upgrading reader wait for the
/// others to drain, and are they gone? (The one reader left is the
/// upgradable one; WRITERS_WAITING is set while it upgrades, and by a
/// writer that waits behind it: then the wake-up is spurious, and rare.)
#[inline]
fn is_upgrade_drained(s: u32) -> bool {
    readers(s) == 1 && has_upgradable(s) && has_writers_waiting(s)
}

/// Which read lock a read path takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ReadKind {
    /// A plain read: behind waiting writers (with turns, past them once it slept).
    Plain,
    /// A recursive read: past waiting writers, never past a write-holder.
    Recursive,
    /// An upgradable read: as a plain read, and only while no other is upgradable.
    Upgradable,
}

impl ReadKind {
    /// May this reader take `s`? `slept`: it slept, and the lock has turns.
    #[inline]
    fn may_take(self, s: u32, slept: bool) -> bool {
        let past_writers = slept || self == ReadKind::Recursive;
        let lockable = if past_writers {
            is_turn_read_lockable(s)
        } else {
            is_read_lockable(s)
        };
        lockable && !(self == ReadKind::Upgradable && has_upgradable(s))
    }

    /// What taking it adds to `state`.
    #[inline]
    fn delta(self) -> u32 {
        match self {
            ReadKind::Upgradable => READ_LOCKED | RW_FLOOR_UPGRADABLE,
            _ => READ_LOCKED,
        }
    }
}

/// [`wait::now_ns`] in microseconds, wrapping at 2^32 (71 minutes): only
/// differences under that are compared.
#[inline]
fn now_us() -> u32 {
    (wait::now_ns() / 1_000) as u32
}

/// At the reader limit (not write-locked): a reader would overflow.
#[inline]
fn at_max_readers(s: u32) -> bool {
    readers(s) == RW_FLOOR_MAX_READERS
}

/// The floor's raw rwlock: std's futex protocol (see the module docs). Use
/// it through [`RwLockFloor`]; 16 bytes.
///
/// ```
/// let l = klock::internal::rwlock::RawRwLockFloor::new();
/// l.lock_shared();
/// assert!(l.try_lock_shared());
/// assert!(!l.try_lock_exclusive());
/// unsafe { l.unlock_shared() };
/// unsafe { l.unlock_shared() };
/// l.lock_exclusive();
/// assert!(l.is_locked_exclusive());
/// unsafe { l.unlock_exclusive() };
/// assert!(!l.is_locked());
/// ```
#[derive(Debug)]
pub struct RawRwLockFloorOf<const PHASED: bool, const READ_TURN_US: u32 = 0> {
    state: AtomicU32,
    writer_notify: AtomicU32,
    upgrade_notify: AtomicU32,
    /// With a read-turn bound: when READERS_WAITING was last set, in
    /// microseconds of [`wait::now_ns`] (wrapping). A hint.
    readers_since: AtomicU32,
}

/// The floor: [`RawRwLockFloorOf`] without turns (std's protocol).
pub type RawRwLockFloor = RawRwLockFloorOf<false>;

/// The floor with turns (issue 34, first mechanism; see "Turns" in the
/// module docs): a woken writer's reservation, and a writer's unlock that
/// gives waiting readers the next turn.
///
/// ```
/// let l = klock::internal::rwlock::RawRwLockPhased::new();
/// l.lock_exclusive();
/// assert!(!l.try_lock_shared());
/// unsafe { l.unlock_exclusive() };
/// assert!(l.try_lock_shared());
/// unsafe { l.unlock_shared() };
/// ```
pub type RawRwLockPhased = RawRwLockFloorOf<true>;

/// The floor with turns and writer batches (issue 34, second mechanism):
/// as [`RawRwLockPhased`], but a writer's unlock hands on to the next
/// writer until the readers have waited [`WRITER_BATCH_US`]; their turn
/// then admits only the readers that slept (new readers stay out behind
/// the waiting writers).
///
/// ```
/// let l = klock::internal::rwlock::RawRwLockBatched::new();
/// l.lock_exclusive();
/// assert!(!l.try_lock_shared());
/// unsafe { l.unlock_exclusive() };
/// assert!(l.try_lock_shared());
/// unsafe { l.unlock_shared() };
/// ```
pub type RawRwLockBatched = RawRwLockFloorOf<true, WRITER_BATCH_US>;

/// How long waiting readers let writers hand the lock on among themselves
/// before their turn ([`RawRwLockBatched`]): a few futex hand-offs (30-40
/// µs each on the 2-vCPU host). Measured there at 18+18: 1 ms and more left
/// writers 13-23 % of the operations, 1-100 µs gave them 74-90 %, 200 µs
/// 39-63 % (`docs/results/2026-11-28-rwlock-floor.md`, "The batch bound").
pub const WRITER_BATCH_US: u32 = 200;

/// A reader-writer lock on the floor protocol (a lock_api rwlock over
/// [`RawRwLockFloor`]).
///
/// ```
/// let l = klock::internal::rwlock::RwLockFloor::new(5);
/// assert_eq!(*l.read(), 5);
/// *l.write() += 1;
/// assert_eq!(*l.read(), 6);
/// ```
#[cfg(not(loom))]
pub type RwLockFloor<T> = lock_api::RwLock<RawRwLockFloor, T>;

/// A reader-writer lock on the floor with turns (a lock_api rwlock over
/// [`RawRwLockPhased`]).
///
/// ```
/// let l = klock::internal::rwlock::RwLockPhased::new(1);
/// *l.write() += 1;
/// assert_eq!(*l.read(), 2);
/// ```
#[cfg(not(loom))]
pub type RwLockPhased<T> = lock_api::RwLock<RawRwLockPhased, T>;

/// A reader-writer lock over [`RawRwLockBatched`].
///
/// ```
/// let l = klock::internal::rwlock::RwLockBatched::new(1);
/// *l.write() += 1;
/// assert_eq!(*l.read(), 2);
/// ```
#[cfg(not(loom))]
pub type RwLockBatched<T> = lock_api::RwLock<RawRwLockBatched, T>;

impl<const PHASED: bool, const READ_TURN_US: u32> Default
    for RawRwLockFloorOf<PHASED, READ_TURN_US>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<const PHASED: bool, const READ_TURN_US: u32> RawRwLockFloorOf<PHASED, READ_TURN_US> {
    /// An unlocked rwlock (every word 0).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawRwLockFloorOf {
            state: AtomicU32::new(0),
            writer_notify: AtomicU32::new(0),
            upgrade_notify: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
        }
    }

    /// An unlocked rwlock (every word 0).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawRwLockFloorOf {
            state: AtomicU32::new(0),
            writer_notify: AtomicU32::new(0),
            upgrade_notify: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
        }
    }

    /// The state word's raw value (tests, diagnostics).
    pub fn state(&self) -> u32 {
        // Relaxed: a snapshot, orders nothing.
        self.state.load(Ordering::Relaxed)
    }

    /// Is the lock held (either side)? A snapshot.
    pub fn is_locked(&self) -> bool {
        !is_unlocked(self.state())
    }

    /// Is the lock write-held? A snapshot.
    pub fn is_locked_exclusive(&self) -> bool {
        is_write_locked(self.state())
    }

    // ---- transitions on `state` -------------------------------------------

    /// `(n,U,**) -> (n+1,U,**)` (a read), or `(n,-,**) -> (n+1,U,**)` (an
    /// upgradable read): one CAS from `s` adding `kind`'s delta.
    /// Acquire: pairs with the Release of the writer's unlock (`unlock_exclusive`).
    #[inline]
    fn add_read(&self, s: u32, kind: ReadKind) -> Result<(), u32> {
        self.state
            .compare_exchange_weak(s, s + kind.delta(), Ordering::Acquire, Ordering::Relaxed)
            .map(drop)
    }

    /// `(0,xy) -> (W,xy | extra)`: take the free lock for writing, from `s`.
    /// Acquire: pairs with the Release of every unlock.
    #[inline]
    fn claim_write(&self, s: u32, extra: u32) -> Result<(), u32> {
        debug_assert!(is_unlocked(s));
        self.state
            .compare_exchange_weak(
                s,
                s | RW_FLOOR_WRITE_LOCKED | extra,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .map(drop)
    }

    /// `s -> s | bit`: announce a sleeper. Relaxed: the futex compares the
    /// new value; ordering comes from the acquiring CAS after the wake.
    #[inline]
    fn announce(&self, s: u32, bit: u32) -> Result<(), u32> {
        self.state
            .compare_exchange(s, s | bit, Ordering::Relaxed, Ordering::Relaxed)
            .map(drop)
    }

    /// Read-only spin while `keep_spinning(state)`; returns the last value.
    /// A real-time thread looks once (INV-RT-NOSPIN).
    #[inline]
    fn spin_while(&self, keep_spinning: impl Fn(u32) -> bool) -> u32 {
        if wait::realtime() {
            // Relaxed: as below.
            return self.state.load(Ordering::Relaxed);
        }
        stat::inc(Event::RwFloorSpin);
        let mut s = 0;
        wait::spin_until(&mut wait::SpinBudget::new(SPIN_NS), || {
            // Relaxed: a hint; the CAS that acts on it is the Acquire.
            s = self.state.load(Ordering::Relaxed);
            !keep_spinning(s)
        });
        s
    }

    // ---- read side ----------------------------------------------------------

    /// Take a read lock if that needs no waiting: `(n,--) -> (n+1,--)`.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        self.try_read(ReadKind::Plain)
    }

    /// Take a `kind` read lock while the word allows it without waiting:
    /// the one read-taking CAS loop of the try-reads. `false`: the word said no.
    #[inline]
    fn try_read(&self, kind: ReadKind) -> bool {
        // Relaxed: the CAS is the Acquire.
        let mut s = self.state.load(Ordering::Relaxed);
        while kind.may_take(s, false) {
            match self.add_read(s, kind) {
                Ok(()) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Take a read lock, sleeping while a writer holds or waits.
    #[inline]
    pub fn lock_shared(&self) {
        self.read(ReadKind::Plain, None);
    }

    /// Take a `kind` read lock: the fast try, then the slow path until
    /// `deadline`. The one body of every blocking and timed read entry
    /// point. `false`: the deadline passed.
    #[inline]
    fn read(&self, kind: ReadKind, deadline: Option<u64>) -> bool {
        self.try_read(kind) || self.read_slow(deadline, kind)
    }

    /// Take a read lock past waiting writers (not past a write-holder),
    /// without waiting: for a thread that may already hold a read lock,
    /// which a writer-preferring read would deadlock behind a writer that
    /// waits for it.
    ///
    /// ```
    /// let l = klock::internal::rwlock::RawRwLockBatched::new();
    /// assert!(l.try_lock_shared_recursive());
    /// assert!(l.try_lock_shared_recursive());
    /// assert!(!l.try_lock_exclusive());
    /// unsafe { l.unlock_shared() };
    /// unsafe { l.unlock_shared() };
    /// ```
    #[inline]
    pub fn try_lock_shared_recursive(&self) -> bool {
        self.try_read(ReadKind::Recursive)
    }

    /// Take a read lock past waiting writers, sleeping only while a writer
    /// holds the lock (see [`try_lock_shared_recursive`](Self::try_lock_shared_recursive)).
    #[inline]
    pub fn lock_shared_recursive(&self) {
        self.read(ReadKind::Recursive, None);
    }

    /// [`lock_shared_recursive`](Self::lock_shared_recursive), sleeping at
    /// most until `deadline_ns`. `false`: the deadline passed.
    pub fn lock_shared_recursive_until_ns(&self, deadline_ns: u64) -> bool {
        self.read(ReadKind::Recursive, Some(deadline_ns))
    }

    /// Take a read lock, sleeping at most until `deadline_ns`
    /// ([`wait::now_ns`] time). `false`: the deadline passed.
    pub fn lock_shared_until_ns(&self, deadline_ns: u64) -> bool {
        self.read(ReadKind::Plain, Some(deadline_ns))
    }

    /// The read slow path of every `kind`, in four steps: spin while a
    /// writer holds the lock and nobody waits; take it if `kind` may;
    /// else announce READERS_WAITING; sleep on that value of `state`.
    /// `false`: timed out.
    #[cold]
    fn read_slow(&self, deadline: Option<u64>, kind: ReadKind) -> bool {
        // 1. Spin while only a writer is in the way (it may leave soon).
        let mut s = self.spin_while(|s| {
            is_write_locked(s) && !has_readers_waiting(s) && !has_writers_waiting(s)
        });
        // With turns, a reader that slept takes its turn past a waiting writer.
        let mut slept = false;
        loop {
            // 2. Take it if this reader may.
            if kind.may_take(s, slept) {
                match self.add_read(s, kind) {
                    Ok(()) => return true,
                    Err(x) => s = x,
                }
                continue;
            }
            assert!(!at_max_readers(s), "klock: too many read locks");
            // 3. Announce this reader, unless the bit is already there.
            if !has_readers_waiting(s) {
                if let Err(x) = self.announce(s, RW_FLOOR_READERS_WAITING) {
                    s = x;
                    continue;
                }
                if READ_TURN_US > 0 {
                    // Relaxed: a hint for the writers' unlocks.
                    self.readers_since.store(now_us(), Ordering::Relaxed);
                }
            }
            // 4. Sleep while the word still says so.
            let Some(timeout) = wait::remaining(deadline) else {
                return false;
            };
            chaos::point(Site::BeforeSleep);
            wait::futex_wait(&self.state, s | RW_FLOOR_READERS_WAITING, timeout);
            chaos::point(Site::AfterWake);
            slept = PHASED;
            s = self.spin_while(|s| {
                is_write_locked(s) && !has_readers_waiting(s) && !has_writers_waiting(s)
            });
        }
    }

    /// Release a read lock: `(n,**) -> (n-1,**)`; the last reader out wakes
    /// a waiting writer (readers wait only behind writers, so a free lock
    /// with only READERS_WAITING cannot follow a read unlock).
    ///
    /// # Safety
    ///
    /// The caller holds a read lock.
    #[inline]
    pub unsafe fn unlock_shared(&self) {
        // Release: pairs with the next writer's Acquire CAS (`claim_write`)
        // and an upgrader's (`upgrade_from`).
        let s = self.state.fetch_sub(READ_LOCKED, Ordering::Release) - READ_LOCKED;
        self.after_read_release(s);
    }

    /// After a read release left `s`: the last reader out wakes a writer
    /// (with turns: the writers' turn, or the readers' if none sleeps);
    /// the last but an upgrading one wakes the upgrader.
    #[inline]
    fn after_read_release(&self, s: u32) {
        if is_unlocked(s) && has_writers_waiting(s) {
            chaos::point(Site::AfterRelease);
            if PHASED {
                self.writers_turn(s);
            } else {
                self.wake_writer_or_readers(s);
            }
        } else if PHASED && is_unlocked(s) && has_readers_waiting(s) {
            // Readers that took their turn past a writer may leave readers
            // waiting behind a writer that has since given up.
            chaos::point(Site::AfterRelease);
            self.writers_turn(s);
        } else if is_upgrade_drained(s) {
            chaos::point(Site::AfterRelease);
            self.wake_upgrader();
        }
    }

    // ---- write side ---------------------------------------------------------

    /// Take the write lock if it is free and nobody waits: `(0,--) -> (W,--)`.
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        // Relaxed: the CAS is the Acquire.
        let mut s = self.state.load(Ordering::Relaxed);
        while is_unlocked(s) {
            match self.claim_write(s, 0) {
                Ok(()) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Take the write lock, sleeping while it is held.
    #[inline]
    pub fn lock_exclusive(&self) {
        if self.claim_write(0, 0).is_err() {
            self.write_slow(None);
        }
    }

    /// Take the write lock, sleeping at most until `deadline_ns`. `false`:
    /// the deadline passed.
    pub fn lock_exclusive_until_ns(&self, deadline_ns: u64) -> bool {
        self.claim_write(0, 0).is_ok() || self.write_slow(Some(deadline_ns))
    }

    /// The write slow path, in four steps: spin while the lock is held and
    /// no writer waits; take it if free (keeping WRITERS_WAITING set once
    /// this writer has slept: others may sleep too); else announce
    /// WRITERS_WAITING; sleep on `writer_notify`. `false`: timed out.
    #[cold]
    fn write_slow(&self, deadline: Option<u64>) -> bool {
        let spin = |s| !is_unlocked(s) && !has_writers_waiting(s);
        // 1. Spin while a holder may leave soon and no writer waits.
        let mut s = self.spin_while(spin);
        let mut others = 0;
        loop {
            // 2. Take it if free.
            if is_unlocked(s) {
                match self.claim_write(s, others) {
                    Ok(()) => return true,
                    Err(x) => s = x,
                }
                continue;
            }
            // 3. Announce this writer, unless the bit is already there.
            if !has_writers_waiting(s)
                && let Err(x) = self.announce(s, RW_FLOOR_WRITERS_WAITING)
            {
                s = x;
                continue;
            }
            // From now on other writers may sleep beside us.
            others = RW_FLOOR_WRITERS_WAITING;
            // Acquire: pairs with the Release bump in `wake_writer`, so the
            // re-check below sees the state the waker left.
            let seq = self.writer_notify.load(Ordering::Acquire);
            // Relaxed: re-checked against the bit we set; the futex compares `seq`.
            s = self.state.load(Ordering::Relaxed);
            if is_unlocked(s) || !has_writers_waiting(s) {
                continue;
            }
            // 4. Sleep until a wake bumps `writer_notify`.
            let Some(timeout) = wait::remaining(deadline) else {
                return false;
            };
            chaos::point(Site::BeforeSleep);
            wait::futex_wait(&self.writer_notify, seq, timeout);
            chaos::point(Site::AfterWake);
            s = self.spin_while(spin);
        }
    }

    /// Release the write lock: `(W,**) -> (0,**)`, then wake a writer if
    /// one waits, else every reader.
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    #[inline]
    pub unsafe fn unlock_exclusive(&self) {
        // Release: pairs with the next holder's Acquire CAS.
        let s = self
            .state
            .fetch_sub(RW_FLOOR_WRITE_LOCKED, Ordering::Release)
            - RW_FLOOR_WRITE_LOCKED;
        debug_assert!(is_unlocked(s));
        if has_readers_waiting(s) || has_writers_waiting(s) {
            chaos::point(Site::AfterRelease);
            if PHASED {
                self.readers_turn(s);
            } else {
                self.wake_writer_or_readers(s);
            }
        }
    }

    // ---- wake-ups -------------------------------------------------------------

    /// The lock is free with waiter bits `s`: `(0,-W) -> (0,--)` and wake a
    /// writer; `(0,RW) -> (0,R-)` and wake a writer, and if none was asleep
    /// go on as for `(0,R-)`; `(0,R-) -> (0,--)` and wake every reader. A
    /// CAS that fails re-decides while the lock is free; once someone took
    /// it, it is their turn to wake (their unlock sees the bits).
    #[cold]
    fn wake_writer_or_readers(&self, mut s: u32) {
        debug_assert!(is_unlocked(s));
        const W: u32 = RW_FLOOR_WRITERS_WAITING;
        const R: u32 = RW_FLOOR_READERS_WAITING;
        // Relaxed (the CASes): the unlock's Release RMW already published
        // the critical section; the woken thread's Acquire CAS pairs with
        // it. A failed CAS re-decides with the new word while the lock is
        // free (a waiter announced itself, or an upgradable reader's
        // release cleared READERS_WAITING); a held lock is its holder's
        // to wake.
        loop {
            if !is_unlocked(s) {
                return;
            }
            let r = if s == W {
                self.state
                    .compare_exchange(s, 0, Ordering::Relaxed, Ordering::Relaxed)
                    .map(|_| {
                        self.wake_writer();
                    })
            } else if s == R | W {
                match self
                    .state
                    .compare_exchange(s, R, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) if self.wake_writer() => Ok(()),
                    Ok(_) => self.wake_readers(R),
                    Err(x) => Err(x),
                }
            } else if s == R {
                self.wake_readers(s)
            } else {
                return;
            };
            match r {
                Ok(()) => return,
                Err(x) => s = x,
            }
        }
    }

    /// With turns, after a read release left the lock free with waiter bits
    /// `s`: the writers' turn. `(0,*W)`: keep WRITERS_WAITING (the woken
    /// writer's reservation: new readers stay out until it runs) and wake
    /// one writer; if none was asleep, `(0,*W) -> (0,*-)`, then
    /// `(0,R-) -> (0,--)` and wake every reader. A failed CAS on a word
    /// that is no longer free leaves the turn to the new holder's unlock.
    #[cold]
    fn writers_turn(&self, mut s: u32) {
        const W: u32 = RW_FLOOR_WRITERS_WAITING;
        const R: u32 = RW_FLOOR_READERS_WAITING;
        loop {
            if !is_unlocked(s) {
                return;
            }
            if s & W != 0 {
                if self.wake_writer() {
                    return;
                }
                // Relaxed (both CASes): as in `wake_writer_or_readers`.
                match self
                    .state
                    .compare_exchange(s, s & !W, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => s &= !W,
                    Err(x) => {
                        s = x;
                        continue;
                    }
                }
            }
            if s & R != 0
                && let Err(x) = self.wake_readers(s)
            {
                s = x;
                continue;
            }
            return;
        }
    }

    /// With turns, after a write release left the lock free with waiter
    /// bits `s`: the readers' turn if any wait. `(0,R*) -> (0,--)`, wake
    /// every reader (each may enter past a writer that announces itself
    /// meanwhile) and, if WRITERS_WAITING was set, one writer (it announces
    /// itself again); with no reader waiting, the writers' turn.
    #[cold]
    fn readers_turn(&self, mut s: u32) {
        const W: u32 = RW_FLOOR_WRITERS_WAITING;
        const R: u32 = RW_FLOOR_READERS_WAITING;
        loop {
            if !is_unlocked(s) {
                return;
            }
            if s & R == 0 || (READ_TURN_US > 0 && s & W != 0 && !self.readers_waited_long()) {
                // No reader waits, or writers still have the batch: the
                // next writer's turn (the readers' if none is asleep).
                self.writers_turn(s);
                return;
            }
            if READ_TURN_US > 0 {
                // The readers' turn behind a writer batch: only readers
                // that slept may enter (WRITERS_WAITING stays set, so new
                // readers wait); the last of them wakes the next writer.
                match self
                    .state
                    .compare_exchange(s, s & !R, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        if wait::futex_wake(&self.state, u32::MAX) == 0 {
                            // No reader was asleep (READERS_WAITING was
                            // stale: they timed out): no last reader will
                            // wake a writer, so the writers' turn now.
                            self.writers_turn(s & !R);
                        }
                        return;
                    }
                    Err(x) => {
                        s = x;
                        continue;
                    }
                }
            }
            // Relaxed: as in `wake_writer_or_readers`.
            match self
                .state
                .compare_exchange(s, s & !(R | W), Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    wait::futex_wake(&self.state, u32::MAX);
                    if s & W != 0 {
                        self.wake_writer();
                    }
                    return;
                }
                Err(x) => s = x,
            }
        }
    }

    /// Have the readers waited [`READ_TURN_US`](Self) since READERS_WAITING
    /// was set?
    #[inline]
    fn readers_waited_long(&self) -> bool {
        // Relaxed: a hint (a stale time only moves the turn).
        let since = self.readers_since.load(Ordering::Relaxed);
        now_us().wrapping_sub(since) >= READ_TURN_US
    }

    /// `(n,R*) -> (n,-*)` and wake every reader sleeping on `state` (a
    /// failed CAS returns the word: the caller re-decides). Relaxed: the
    /// release RMW before it published the critical section; each woken
    /// reader's Acquire CAS pairs with that.
    #[inline]
    fn wake_readers(&self, s: u32) -> Result<(), u32> {
        self.state.compare_exchange(
            s,
            s & !RW_FLOOR_READERS_WAITING,
            Ordering::Relaxed,
            Ordering::Relaxed,
        )?;
        wait::futex_wake(&self.state, u32::MAX);
        Ok(())
    }

    /// Bump `upgrade_notify` and wake the upgrading reader, if it sleeps.
    #[inline]
    fn wake_upgrader(&self) {
        // Release: pairs with the Acquire load of `seq` in `upgrade_slow`.
        self.upgrade_notify.fetch_add(1, Ordering::Release);
        wait::futex_wake(&self.upgrade_notify, 1);
    }

    /// Bump `writer_notify` and wake one writer; did a writer wake?
    #[inline]
    fn wake_writer(&self) -> bool {
        // Release: pairs with the Acquire load of `seq` in `write_slow`.
        self.writer_notify.fetch_add(1, Ordering::Release);
        wait::futex_wake(&self.writer_notify, 1) > 0
    }
}

#[cfg(not(loom))]
mod api;
#[cfg(test)]
#[cfg(not(loom))]
mod tests;
mod upgrade;

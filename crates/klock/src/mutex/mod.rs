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
//! `KLOCK_MUTEX_MAX_SPINNERS` or effective CPUs - 1): only the OSQ head polls
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
//! and fails. (Until 2026-11-24 the leaver set HANDOFF for a sleeping new
//! head that had waited past the threshold; every such hand-off idled the
//! lock for a wake-up, and with `--noise 2` at T=128 `balanced` throughput
//! collapsed to 0.3 Mops/s.)
//!
//! **Queue first**, a policy (POLICY-QUEUE-FIRST in `docs/invariants.md`;
//! opt-in, `KLOCK_MUTEX_QUEUE_FIRST=1`): a newcomer does not spend its
//! `KLOCK_MUTEX_YIELDS` yield rounds while WAITERS is set; it queues.
//! (parking_lot parks at once when its PARKED bit is set.) A
//! yielding newcomer stays runnable, and on an overcommitted machine the
//! woken head waits behind it for a CPU: at T=128 `balanced` a few queued
//! threads make 57-260 operations per second against 100 000+ for the others
//! (max/min 12 400; 250 with the policy). It costs `hot` a quarter of its
//! throughput at T>=8, so it is off by default (see `tune`).
//!
//! Node words while on the wait list, read and written only through the
//! typed view [`Waiter`](crate::waitlist::Waiter): `next`/`prev` circular
//! doubly-linked list links (tail codes), `state` the futex word
//! ([`WaiterState`]), `ident` the waiter's thread id
//! ([`Waiter::thread_id`](crate::waitlist::Waiter::thread_id)), `stamp`
//! when the waiter became first (or queued), read by eventual fairness and
//! `KLOCK_MUTEX_FAIR_NS` (the running hand-off threshold is timed by the
//! waiter itself, INV-HANDOFF-RUNNING).
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
mod sleep;
mod spin;
mod unlock;
mod word;

use crate::node;
use crate::osq::Osq;
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;
use crate::waitlist::WaitList;
use std::marker::PhantomData;
use word::{claim, handed_to, is_free, locked_by, owed_to_waiter, owner_id, pick_up, unlock_list};

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
pub use word::{FLAGS, HANDOFF, ID_SHIFT, PICKUP, WAITERS, WAKING, WLOCK};

// ---------------------------------------------------------------------------
// Thread ids
// ---------------------------------------------------------------------------

// The allocator lives in `crate::tid`; the mutex keeps its public names.
// (`word` checks that the id field is exactly as wide as a thread id.)
pub use crate::tid::{ANON_ID, current_id};

// ---------------------------------------------------------------------------
// Spinning policies
// ---------------------------------------------------------------------------

/// How the mutex spins before sleeping: a type parameter, so each variant is
/// monomorphised (no fast-path branch). Sealed: [`SpinOsq`], [`SpinNoQueue`],
/// [`SpinOff`].
///
/// ```
/// use klock::{SpinPolicy, SpinOsq, SpinOff};
/// assert!(SpinOsq::SPIN && SpinOsq::QUEUE);
/// assert!(!SpinOff::SPIN);
/// ```
pub trait SpinPolicy: sealed::Sealed + Send + Sync + 'static {
    /// Spin on the owner at all (the kernel's MUTEX_SPIN_ON_OWNER).
    const SPIN: bool;
    /// Queue spinners in an OSQ so only its head polls the owner (seed 004).
    const QUEUE: bool;
    /// Spin like the floor (`mutex/floor.rs`): a short read-only spin on the
    /// owner word that stops as soon as it shows waiters, then the wait list;
    /// no OSQ, no owner polling, no adaptive hint, no yield rounds.
    const PLAIN: bool = false;
    /// Name used by lockbench.
    const NAME: &'static str;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SpinOsq {}
    impl Sealed for super::SpinNoQueue {}
    impl Sealed for super::SpinOff {}
    impl Sealed for super::SpinPlain {}
}

/// Default policy: optimistic spinning, spinners queued in an OSQ (0 bytes).
///
/// ```
/// assert_eq!(<klock::SpinOsq as klock::SpinPolicy>::NAME, "osq");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinOsq;
/// Ablation (seed 004's "without the patch"): every spinner polls the owner
/// (0 bytes).
///
/// ```
/// assert!(!<klock::SpinNoQueue as klock::SpinPolicy>::QUEUE);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinNoQueue;
/// No optimistic spinning (MUTEX_SPIN_ON_OWNER off): sleep at once (0 bytes).
///
/// ```
/// assert!(!<klock::SpinOff as klock::SpinPolicy>::SPIN);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinOff;

/// The floor's waiting on klock's word and wait list: a read-only spin of
/// about 2 µs that stops when the word shows waiters, then the FIFO wait
/// list with its hand-off (0 bytes). Issue 32's design B.
///
/// ```
/// assert!(<klock::SpinPlain as klock::SpinPolicy>::PLAIN);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinPlain;

impl SpinPolicy for SpinPlain {
    const SPIN: bool = true;
    const QUEUE: bool = false;
    const PLAIN: bool = true;
    const NAME: &'static str = "plain";
}

impl SpinPolicy for SpinOsq {
    const SPIN: bool = true;
    const QUEUE: bool = true;
    const NAME: &'static str = "osq";
}
impl SpinPolicy for SpinNoQueue {
    const SPIN: bool = true;
    const QUEUE: bool = false;
    const NAME: &'static str = "noqueue";
}
impl SpinPolicy for SpinOff {
    const SPIN: bool = false;
    const QUEUE: bool = false;
    const NAME: &'static str = "nospin";
}

// ---------------------------------------------------------------------------
// The raw mutex
// ---------------------------------------------------------------------------

/// The raw mutex (12 bytes: owner word, wait-list head, OSQ tail), generic over
/// its [`SpinPolicy`]. Use it through [`Mutex`] / [`MutexNoSpin`]
/// (`lock_api`), or directly with [`lock`](Self::lock) / [`unlock`](Self::unlock).
///
/// ```
/// use klock::RawMutex;
/// let m: RawMutex = RawMutex::new();
/// let t = m.lock();
/// assert!(m.is_locked());
/// unsafe { m.unlock(t) };
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
pub struct RawMutex<S: SpinPolicy = SpinOsq> {
    /// See the layout in the module docs.
    owner: AtomicU32,
    /// FIFO of sleeping waiters, protected by WLOCK.
    pub(crate) list: WaitList,
    /// Spinners' queue.
    osq: Osq,
    _policy: PhantomData<S>,
}

/// Proof of one acquisition, handed back at unlock (lock_api 0.5's `Guard`):
/// the owner id the acquisition wrote into the word, so a guard may be sent
/// to and released by another thread (4 bytes).
///
/// ```
/// let m = klock::RawMutex::<klock::SpinOff>::new();
/// let t: klock::MutexToken = m.lock();
/// assert_ne!(t.id(), 0); // 0 is "no owner"
/// let m = &m;
/// std::thread::scope(|s| {
///     s.spawn(move || unsafe { m.unlock(t) }); // released by another thread
/// });
/// assert!(!m.is_locked());
/// ```
#[derive(Debug)]
#[must_use = "the mutex stays locked until the token is passed to unlock"]
pub struct MutexToken {
    id: u32,
}

impl MutexToken {
    /// The owner id recorded in the mutex word.
    pub fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn from_id(id: u32) -> MutexToken {
        MutexToken { id }
    }

    /// The token of an acquisition made under `id` whose token was not kept
    /// (the C layer: pthread's API has no guard).
    ///
    /// # Safety
    ///
    /// The mutex this token will be passed to is held with owner id `id`.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// std::mem::forget(m.lock());
    /// unsafe { m.unlock(klock::MutexToken::for_holder(m.holder())) };
    /// assert!(!m.is_locked());
    /// ```
    #[doc(hidden)]
    pub unsafe fn for_holder(id: u32) -> MutexToken {
        MutexToken { id }
    }
}

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

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawMutex>() <= 16);
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawMutex>() == 12);

impl<S: SpinPolicy> Default for RawMutex<S> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn record_wait(t0: u64) {
    if stat::ENABLED {
        let ns = wait::now_ns().saturating_sub(t0);
        stat::add(Event::MutexWaitNs, ns);
        stat::inc(match ns {
            0..10_000 => Event::MutexWaitLt10us,
            10_000..100_000 => Event::MutexWaitLt100us,
            100_000..1_000_000 => Event::MutexWaitLt1ms,
            1_000_000..10_000_000 => Event::MutexWaitLt10ms,
            _ => Event::MutexWaitGe10ms,
        });
    }
}

impl<S: SpinPolicy> RawMutex<S> {
    /// An unlocked mutex (all zero).
    ///
    /// ```
    /// static M: klock::RawMutex = klock::RawMutex::new();
    /// assert!(!M.is_locked());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawMutex {
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked mutex (all zero).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawMutex {
            owner: AtomicU32::new(0),
            list: WaitList::new(),
            osq: Osq::new(),
            _policy: PhantomData,
        }
    }

    /// The raw owner word (for tests and diagnostics).
    ///
    /// ```
    /// assert_eq!(klock::RawMutex::<klock::SpinOsq>::new().owner_word(), 0);
    /// ```
    #[inline]
    #[doc(hidden)]
    pub fn owner_word(&self) -> u32 {
        // Relaxed: a diagnostic snapshot.
        self.owner.load(Ordering::Relaxed)
    }

    /// Is the mutex held (or handed to a waiter)?
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot (lock_api's is_locked gives no ordering).
        !is_free(self.owner.load(Ordering::Relaxed))
    }

    /// Acquire: one CAS when free, else the slow path (spin, then sleep).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub fn lock(&self) -> MutexToken {
        let id = current_id();
        // Acquire pairs with the Release of the previous owner's unlock (fast
        // CAS, slow-path CAS or hand-off CAS).
        if self
            .owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            stat::inc(Event::MutexFastpath);
            return MutexToken { id };
        }
        let ok = self.lock_slow(id, None);
        debug_assert!(ok);
        MutexToken { id }
    }

    /// The uncontended acquisition alone: `(0,0) -> (me,0)` in one CAS, and
    /// nothing else (no flags may be set; the word is left unchanged on
    /// failure). For front ends that check their own conditions first and
    /// fall back to [`lock`](Self::lock) or [`try_lock`](Self::try_lock).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.try_lock_uncontended().unwrap();
    /// assert!(m.try_lock_uncontended().is_none());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline(always)]
    #[doc(hidden)]
    pub fn try_lock_uncontended(&self) -> Option<MutexToken> {
        let id = current_id();
        // Acquire pairs with the Release of the previous owner's unlock (as
        // in `lock`).
        self.owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(MutexToken { id })
    }

    /// The uncontended release alone: `(me,0) -> (0,0)` in one CAS when the
    /// calling thread holds the mutex and no flag is set; otherwise nothing
    /// changes and it returns `false` (the caller then takes its full unlock
    /// path, which wakes waiters or reports a non-holder).
    ///
    /// # Safety
    ///
    /// If the calling thread holds the mutex, the caller's protocol allows
    /// it to release it now (no guard or token of this acquisition is used
    /// afterwards).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// std::mem::forget(t);
    /// assert!(unsafe { m.try_unlock_uncontended() });
    /// assert!(!m.is_locked());
    /// assert!(!unsafe { m.try_unlock_uncontended() });
    /// ```
    #[inline(always)]
    #[doc(hidden)]
    pub unsafe fn try_unlock_uncontended(&self) -> bool {
        // Release pairs with the Acquire of the next owner's CAS (as in
        // `release`).
        self.owner
            .compare_exchange(
                locked_by(current_id()),
                0,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Acquire if free (also when only flags are set); never waits.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<MutexToken> {
        let id = current_id();
        self.try_acquire(id, false).then_some(MutexToken { id })
    }

    /// Acquire, giving up at `deadline_ns` (a [`wait::now_ns`] time).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// let d = klock::internal::wait::now_ns() + 1_000_000;
    /// assert!(std::thread::scope(|s| s.spawn(|| m.lock_until_ns(d).is_none()).join().unwrap()));
    /// unsafe { m.unlock(t) };
    /// ```
    #[doc(hidden)]
    pub fn lock_until_ns(&self, deadline_ns: u64) -> Option<MutexToken> {
        let id = current_id();
        if self
            .owner
            .compare_exchange(0, locked_by(id), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            stat::inc(Event::MutexFastpath);
            return Some(MutexToken { id });
        }
        self.lock_slow(id, Some(deadline_ns))
            .then_some(MutexToken { id })
    }

    /// Release.
    ///
    /// # Safety
    ///
    /// `token` must come from an acquisition of this mutex that has not been
    /// released yet.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self, token: MutexToken) {
        // SAFETY: forwarded.
        unsafe { self.release(token, false) }
    }

    /// The unlock fast path, `(me,-) -> (0,-)` in one CAS; any flag sends
    /// it to the slow path (`fair`: hand the lock to the first waiter).
    ///
    /// # Safety
    ///
    /// As for [`unlock`](Self::unlock).
    #[inline]
    unsafe fn release(&self, token: MutexToken, fair: bool) {
        // Release pairs with the Acquire of the next owner's CAS.
        if self
            .owner
            .compare_exchange(locked_by(token.id), 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow(fair);
        }
    }

    /// Release and hand the lock to the first waiter, if any (fair unlock).
    ///
    /// # Safety
    ///
    /// As for [`unlock`](Self::unlock).
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// unsafe { m.unlock_fair(t) };
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    pub unsafe fn unlock_fair(&self, token: MutexToken) {
        // SAFETY: forwarded.
        unsafe { self.release(token, true) }
    }

    /// The kernel's `trylock_common` without the handoff request: take the lock
    /// if the id field is 0 (keeping WAITERS/WLOCK), or, for a `waiter`, pick
    /// up a hand-off addressed to `id`.
    #[inline]
    fn try_acquire(&self, id: u32, waiter: bool) -> bool {
        let mut o = self.owner.load(Ordering::Relaxed);
        loop {
            let new = if is_free(o) {
                if owed_to_waiter(o) {
                    return false;
                }
                claim(o, id)
            } else if waiter && handed_to(o, id) {
                pick_up(o)
            } else {
                return false;
            };
            // Acquire pairs with the Release of the unlock / hand-off CAS.
            match self
                .owner
                .compare_exchange_weak(o, new, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => o = x,
            }
        }
    }

    /// Slow path of lock; `deadline` in `now_ns` time. Returns whether the lock
    /// was acquired (always `true` without a deadline).
    #[cold]
    fn lock_slow(&self, id: u32, deadline: Option<u64>) -> bool {
        stat::inc(Event::MutexSlowpath);
        let t0 = if stat::ENABLED { wait::now_ns() } else { 0 };
        let ok = self.try_acquire(id, false)
            || self.spin_phase(id)
            || node::with_node(|q| match q {
                Some(q) if id != ANON_ID => self.wait_queued(q, id, deadline, false),
                _ => self.wait_unqueued(id, deadline),
            });
        if ok {
            record_wait(t0);
        } else {
            stat::inc(Event::MutexTimeout);
        }
        ok
    }

    /// Release WLOCK, setting `set` and clearing `clear` in the same RMW
    /// ([`unlock_list`]: `(x,f|L) -> (x,(f|set)&!clear)`); used by the waiters
    /// (`sleep`) and the condvar requeue (`unlock`).
    /// Release pairs with the Acquire of the next `lock_bit(WLOCK)`.
    #[inline]
    fn wunlock(&self, set: u32, clear: u32) -> u32 {
        let mut o = self.owner.load(Ordering::Relaxed);
        loop {
            let new = unlock_list(o, set, clear);
            match self
                .owner
                .compare_exchange_weak(o, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return o,
                Err(x) => o = x,
            }
        }
    }

    /// The id of the thread holding the mutex (0 if free; the recipient of a
    /// pending hand-off while PICKUP is set). Error-checking and recursive
    /// mutexes in the C layer compare it with [`current_id`].
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// assert_eq!(m.holder(), 0);
    /// let t = m.lock();
    /// assert_eq!(m.holder(), klock::internal::mutex::current_id());
    /// unsafe { m.unlock(t) };
    /// ```
    #[inline]
    #[doc(hidden)]
    pub fn holder(&self) -> u32 {
        // Relaxed: the caller either is the holder (its own store) or only
        // compares with its own id, which no other thread can store.
        owner_id(self.owner.load(Ordering::Relaxed))
    }

    /// Release the mutex on behalf of whichever thread holds it: glibc's
    /// default mutex lets a non-owner unlock (programs use it as a binary
    /// semaphore), and the C layer's normal kind keeps that.
    ///
    /// # Safety
    ///
    /// The mutex is held, and the caller's protocol guarantees that no other
    /// thread releases this acquisition.
    ///
    /// ```
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// let t = m.lock();
    /// std::mem::forget(t);
    /// std::thread::scope(|s| { s.spawn(|| unsafe { m.unlock_any() }); });
    /// assert!(!m.is_locked());
    /// ```
    #[inline]
    #[doc(hidden)]
    pub unsafe fn unlock_any(&self) {
        // SAFETY: forwarded; the token names the holder recorded in the word.
        unsafe { self.unlock(MutexToken { id: self.holder() }) }
    }
}

#[cfg(not(loom))]
// SAFETY: mutual exclusion: the id field is set only by a CAS from id 0 (or a
// PICKUP addressed to one waiter) and cleared only by the owner's unlock;
// Acquire on every successful acquisition, Release on every release.
unsafe impl<S: SpinPolicy> lock_api::RawMutex for RawMutex<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = MutexToken;

    #[inline]
    fn lock(&self) -> MutexToken {
        RawMutex::lock(self)
    }

    #[inline]
    fn try_lock(&self) -> Option<MutexToken> {
        RawMutex::try_lock(self)
    }

    #[inline]
    unsafe fn unlock(&self, guard: MutexToken) {
        // SAFETY: forwarded contract: `guard` is this mutex's live acquisition.
        unsafe { RawMutex::unlock(self, guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawMutex::is_locked(self)
    }
}

#[cfg(not(loom))]
// SAFETY: unlock_fair releases like unlock, handing ownership to the first waiter.
unsafe impl<S: SpinPolicy> lock_api::RawMutexFair for RawMutex<S> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: MutexToken) {
        // SAFETY: forwarded contract.
        unsafe { RawMutex::unlock_fair(self, guard) }
    }
}

#[cfg(not(loom))]
// SAFETY: timed acquisition returns a guard only when the lock was acquired.
unsafe impl<S: SpinPolicy> lock_api::RawMutexTimed for RawMutex<S> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_for(&self, timeout: std::time::Duration) -> Option<MutexToken> {
        let d = wait::now_ns().saturating_add(timeout.as_nanos().min(u64::MAX as u128) as u64);
        self.lock_until_ns(d)
    }

    fn try_lock_until(&self, timeout: std::time::Instant) -> Option<MutexToken> {
        self.lock_until_ns(wait::instant_to_ns(timeout))
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::word::{handoff_requested, has_waiters, owner_id};
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn a_spinner_that_gives_up_names_the_owner_until_it_unlocks() {
        // Needs a spinner beside the holder (2+ CPUs, no quota).
        if crate::osq::max_spinners() == 0 || crate::wait::quota_limited() {
            return;
        }
        let m = Arc::new(RawMutex::<SpinOsq>::new());
        let t = m.lock();
        let holder = owner_id(m.owner.load(Ordering::Relaxed));
        assert_eq!(m.list.hint(), 0);
        // A contender spins KLOCK_MUTEX_SPIN_NS on us, gives up and queues.
        let m2 = m.clone();
        let c = std::thread::spawn(move || {
            let t = m2.lock();
            // SAFETY: our own acquisition.
            unsafe { m2.unlock(t) };
        });
        while !has_waiters(m.owner.load(Ordering::Relaxed)) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(m.list.hint(), crate::waitlist::owner_tag(holder));
        assert!(m.owner_known_slow(), "a newcomer would skip its spin");
        // The hold ends: the slow unlock clears the hint.
        // SAFETY: our own acquisition.
        unsafe { m.unlock(t) };
        assert_eq!(m.list.hint(), 0);
        c.join().unwrap();
        assert!(!m.owner_known_slow());
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<RawMutex<SpinOsq>>(), 12);
        assert_eq!(std::mem::size_of::<RawMutex<SpinOff>>(), 12);
        assert_eq!(std::mem::size_of::<RawMutex<SpinNoQueue>>(), 12);
        assert_eq!(std::mem::size_of::<MutexToken>(), 4);
        assert_eq!(std::mem::size_of::<Mutex<()>>(), 12);
        assert_eq!(std::mem::size_of::<Mutex<u64>>(), 24);
        assert_eq!(std::mem::size_of::<MutexGuard<'_, u64>>(), 16);
        assert_eq!(std::mem::size_of::<SpinOsq>(), 0);
        assert_eq!(std::mem::size_of::<crate::osq::Osq>(), 4);
    }

    #[test]
    fn fast_path_word_values() {
        let m = RawMutex::<SpinOsq>::new();
        let t = m.lock();
        assert_eq!(m.owner_word(), current_id() << ID_SHIFT);
        unsafe { m.unlock(t) };
        assert_eq!(m.owner_word(), 0);
    }

    #[test]
    fn ids_unique_among_live_threads() {
        let b = std::sync::Barrier::new(8);
        let ids: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let id = current_id();
                        b.wait();
                        id
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let set: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(set.len(), 8);
    }

    fn contend<S: SpinPolicy>(threads: usize, iters: u64) {
        let m = Arc::new(lock_api::Mutex::<RawMutex<S>, u64>::new(0));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..iters {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), threads as u64 * iters);
        // SAFETY: only reads the word; the raw mutex is not locked/unlocked here.
        assert_eq!(unsafe { m.raw() }.owner_word() & !WLOCK, 0);
    }

    #[test]
    fn contended_all_policies() {
        contend::<SpinOsq>(8, 5_000);
        contend::<SpinNoQueue>(8, 5_000);
        contend::<SpinOff>(8, 5_000);
    }

    #[test]
    fn timed_lock_times_out_and_leaves_clean() {
        let m = Arc::new(RawMutex::<SpinOff>::new());
        let t = m.lock();
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    lock_api::RawMutexTimed::try_lock_for(&*m, Duration::from_millis(20)).is_none()
                })
            })
            .collect();
        for h in hs {
            assert!(h.join().unwrap());
        }
        // Every waiter left: no flags besides the owner.
        assert_eq!(m.owner_word(), current_id() << ID_SHIFT);
        unsafe { m.unlock(t) };
        assert_eq!(m.owner_word(), 0);
    }

    #[test]
    fn unlock_fair_hands_off() {
        // The waiter publishes its id, queues, and once it owns the lock
        // holds it until told to release: so right after `unlock_fair` the
        // word must already name it (a hand-off), where a plain unlock would
        // leave the word free or owned by nobody until the woken waiter ran.
        let m = Arc::new(RawMutex::<SpinOff>::new());
        let t = m.lock();
        let waiter_id = Arc::new(AtomicU32::new(0));
        let release = Arc::new(AtomicBool::new(false));
        let (m2, id2, rel2) = (m.clone(), waiter_id.clone(), release.clone());
        let h = std::thread::spawn(move || {
            // Release: pairs with the Acquire load below.
            id2.store(current_id(), Ordering::Release);
            let t = m2.lock();
            // Acquire: pairs with the Release store after the check.
            while !rel2.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            unsafe { m2.unlock(t) };
        });
        // Wait until the other thread is queued.
        while !has_waiters(m.owner_word()) {
            std::thread::yield_now();
        }
        unsafe { m.unlock_fair(t) };
        let w = m.owner_word();
        // Acquire: pairs with the waiter's Release store of its id.
        let id = waiter_id.load(Ordering::Acquire);
        // Release: pairs with the waiter's Acquire load.
        release.store(true, Ordering::Release);
        h.join().unwrap();
        assert_eq!(owner_id(w), id, "unlock_fair did not hand off: {w:#x}");
        assert_eq!(m.owner_word(), 0);
    }

    #[test]
    fn stealing_owner_cannot_starve_a_waiter() {
        // The owner releases and immediately re-takes the lock (a steal) every
        // 3 ms, longer than the default 2 ms handoff threshold. The woken
        // first waiter must get the lock: either it wins a race, or it sets
        // HANDOFF and the next unlock hands the lock to it (PICKUP).
        let m = Arc::new(RawMutex::<SpinOff>::new());
        let t = m.lock();
        let m2 = m.clone();
        let h = std::thread::spawn(move || {
            let t = m2.lock();
            unsafe { m2.unlock(t) };
        });
        while !has_waiters(m.owner_word()) {
            std::thread::yield_now();
        }
        // The waiter must get in (the event); the watchdog, far beyond the
        // few hand-off thresholds that takes, only catches starvation.
        let hang = Duration::from_secs(120);
        let deadline = std::time::Instant::now() + hang;
        let mut t = Some(t);
        while !h.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "watchdog: after {hang:?} the waiter has not got the lock (starved)"
            );
            std::thread::sleep(Duration::from_millis(3));
            let Some(tok) = t.take() else {
                t = m.try_lock();
                continue;
            };
            let handoff = handoff_requested(m.owner_word());
            unsafe { m.unlock(tok) };
            if handoff {
                // Handed over: the word names the waiter (or it already
                // released), never us.
                assert_ne!(owner_id(m.owner_word()), current_id());
            }
            t = m.try_lock();
        }
        if let Some(tok) = t {
            unsafe { m.unlock(tok) };
        }
        h.join().unwrap();
        assert_eq!(m.owner_word(), 0);
    }
}

//! A condition variable for klock's [`RawMutex`] (lock_api 0.5 `RawCondvar` +
//! `RawCondvarTimed`). `notify_one` takes the oldest waiter off the list and
//! wakes it; it re-locks the mutex as any locker does (std's hand-over: it
//! spins while the holder runs). `notify_all` uses **wait morphing**: it
//! wakes nobody, it moves every waiter onto the mutex's wait list, where the
//! mutex's unlock wakes them one at a time, so `notify_all` on hundreds of
//! waiters wakes one thread, not a herd. A waiter watches its node for a few
//! µs before its first sleep, so a notify that follows soon costs no sleep.
//! (Until issue 32, `notify_one` morphed too; waking the waiter made the
//! condvar hand-off 2-4x faster on a 2-vCPU host:
//! `docs/results/2026-11-28-mutex-floor.md`.)
//!
//! # Layout (16 bytes on 64-bit)
//!
//! ```text
//! list:  31                  16 15            1     0
//!       +----------------------+---------------+-------+
//!       | head waiter tail code|       0       | CV_LOCK|
//!       +----------------------+---------------+-------+
//! mutex: address of the RawMutex the current waiters use (valid while the
//!        list is non-empty: every waiter borrows it)
//! ```
//!
//! # Waiter states (the node's `state` word, its futex word)
//!
//! States and flags are written out in full here (the legend shared with
//! the mutex and the rwsem is in `docs/invariants.md`, "State-diagram
//! notation").
//!
//! ```text
//!  CV_WAITING --notify_one (under CV_LOCK), then futex_wake--> CV_NOTIFIED: re-lock the mutex normally
//!  CV_WAITING --notify_all (under CV_LOCK + the mutex's WLOCK)--> SLEEPING (on the mutex list)
//!  SLEEPING --mutex unlock / requeue with the mutex free--> WOKEN --> mutex waiter loop
//!  CV_WAITING --timeout (under CV_LOCK)--> removed; re-lock the mutex normally
//! ```
//!
//! The waiter appends itself under CV_LOCK **before** it unlocks the mutex, so
//! a notify that follows the unlock always finds it (no lost wake-up). It
//! sleeps while its state is CV_WAITING and never returns before a notify or
//! its timeout: the queued path has **no spurious wake-ups**, and
//! `notify_one`/`notify_all` return exact counts.
//!
//! # The fallback word (`fallback`, a futex word)
//!
//! ```text
//!  31                  12 11          0
//! +----------------------+-------------+
//! |      generation      |   waiters   |
//! +----------------------+-------------+
//! ```
//!
//! Waiters that are not on the list wait here instead:
//!
//! * a thread that cannot get a queue node (more than `KLOCK_NODE_SLOTS`
//!   threads waiting at once, or waits nested deeper than 4);
//! * a **foreign** wait ([`begin_wait_foreign`](RawCondvar::begin_wait_foreign)):
//!   the caller's mutex is not a klock [`RawMutex`] (the interposer's
//!   glibc-served mutexes: robust, priority-inherit, ...), so there is no
//!   mutex wait list to morph onto; the caller unlocks and re-locks its own
//!   mutex around the sleep.
//!
//! ```text
//!  register (holding the mutex): waiters+1, remember the generation; unlock
//!  sleep on the word while the generation is the remembered one
//!  notify (one or all), if waiters != 0:
//!      generation+1 and waiters := 0 in one CAS, then futex_wake(all)
//!  give up (timeout, cancellation): waiters-1 in a CAS that also checks the
//!      generation is unchanged (else a notify won: not a timeout)
//! ```
//!
//! Registering before the unlock makes a notify that follows the unlock see
//! `waiters != 0` (no lost wake-up), and the notify deregisters every waiter
//! it wakes, so a woken waiter writes nothing more to the condvar (it may be
//! destroyed right after the notify; the waiter only re-reads the word
//! once). Every notify wakes **all** fallback waiters: their wake-ups may be
//! spurious (POSIX and lock_api allow that; `wait_while` callers re-check),
//! which is why the notify counts are 0 while any exists. A 20-bit
//! generation wraps after about a million notifies; a waiter would miss its
//! wake-up only if exactly a multiple of that many notifies ran while it was
//! between reading the word and the futex syscall. More than 4095 fallback
//! waiters at once on one condvar: the extra ones do not register and
//! "unlock, yield, re-lock" (an immediate spurious wake-up), as every
//! fallback waiter did before the word had a generation.
//!
//! One condvar serves one mutex at a time: waiting with a second mutex while
//! waiters of the first remain panics (before unlocking anything); the
//! `try_` forms ([`RawCondvar::try_begin_wait`],
//! [`RawCondvar::try_wait_until_ns`]) refuse such a wait instead, for
//! callers that report it as an error code (the C library's EINVAL).
//!
//! ```
//! use std::sync::Arc;
//! use klock::{Condvar, Mutex};
//! let pair = Arc::new((Mutex::new(false), Condvar::new()));
//! let p2 = pair.clone();
//! let t = std::thread::spawn(move || {
//!     *p2.0.lock() = true;
//!     p2.1.notify_one();
//! });
//! let mut ready = pair.0.lock();
//! pair.1.wait_while(&mut ready, |r| !*r);
//! assert!(*ready);
//! drop(ready);
//! t.join().unwrap();
//! ```

use crate::mutex::{self, MutexToken, RawMutex, SpinOsq, SpinPolicy};
use crate::node::{self, tag};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use crate::wait;
use crate::waitlist::{self, WaitList, Waiter};
use std::marker::PhantomData;

/// States of a condvar waiter's node `state` word while it is on the
/// condvar's list (tagged [`tag::CONDVAR`]); a notify moves the node to the
/// mutex's wait list and sets a [`waitlist::WaiterState`] (both under CV_LOCK and
/// the mutex's WLOCK: INV-WAKE-ADDR).
///
/// ```
/// use klock::internal::condvar::CondState;
/// assert_eq!(CondState::Waiting as u32 & klock::internal::node::tag::MASK, klock::internal::node::tag::CONDVAR);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondState {
    /// On the condvar's list, waiting for a notify (or its timeout).
    Waiting = tag::CONDVAR | 1,
    /// Taken off the condvar's list by a `notify_one` and woken: re-lock
    /// the mutex as any locker does (the last value a notifier writes to
    /// the node; Release, paired with the waiter's Acquire in `sleep_word`).
    Notified = tag::CONDVAR | 2,
}
/// How long a waiter watches its node before the first sleep: a notify that
/// follows within a few µs (a producer's next item) then costs no sleep and
/// no wake-up (issue 32's A/B: `docs/results/2026-11-28-mutex-floor.md`).
/// Under loom, one iteration (the budget counts iterations).
const COND_SPIN_NS: u64 = if cfg!(loom) { 1 } else { 4_000 };
/// Condvar list lock bit.
const CV_LOCK: u32 = 1;

/// The panic message of a wait with a second mutex (see the module docs).
const TWO_MUTEXES: &str = "klock: a Condvar was used with two different mutexes at once";

/// The fallback word's waiter count (see the module docs).
const FB_WAITERS: u32 = (1 << 12) - 1;
/// One step of the fallback word's generation.
const FB_GEN_ONE: u32 = 1 << 12;
/// The fallback word's generation bits.
const FB_GEN: u32 = !FB_WAITERS;
/// `WaitTicket::generation` of a fallback waiter that did not register (the
/// count was full): never a generation (those have the low bits clear).
const FB_UNREGISTERED: u32 = 1;

/// The raw condvar (16 bytes on 64-bit): a FIFO of waiter nodes and the
/// address of the mutex they use.
///
/// ```
/// let cv = klock::RawCondvar::<klock::SpinOsq>::new();
/// assert_eq!(cv.notify_all(), 0);
/// ```
#[derive(Debug)]
pub struct RawCondvar<S: SpinPolicy = SpinOsq> {
    list: WaitList,
    /// `*const RawMutex<S>` of the current waiters (0 = none yet).
    mutex: AtomicUsize,
    /// The fallback word: generation and count of the waiters that are not
    /// on the list (no node, or a foreign mutex; see the module docs). While
    /// any exists a wake-up may be spurious, so notify returns `false`/`0`
    /// (lock_api's contract: exact counts only without spurious wake-ups).
    fallback: AtomicU32,
    _policy: PhantomData<S>,
}

/// A condition variable for [`crate::mutex::Mutex`] (`lock_api::Condvar`): 16 bytes.
///
/// ```
/// let m = klock::Mutex::new(0);
/// let cv = klock::Condvar::new();
/// let mut g = m.lock();
/// let r = cv.wait_for(&mut g, std::time::Duration::from_millis(1));
/// assert!(r.timed_out());
/// ```
#[cfg(not(loom))]
pub type Condvar = lock_api::Condvar<RawCondvar<SpinOsq>>;

/// A condition variable for [`crate::mutex::MutexNoSpin`]: 16 bytes.
///
/// ```
/// let cv = klock::CondvarNoSpin::new();
/// assert!(!cv.notify_one());
/// ```
#[cfg(not(loom))]
pub type CondvarNoSpin = lock_api::Condvar<RawCondvar<mutex::SpinOff>>;

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RawCondvar>() <= 16);

/// A condvar wait in progress, between `RawCondvar::begin_wait` and
/// `RawCondvar::end_wait` (or the `_foreign` pair): the waiter's leased
/// node (`None`: a fallback waiter), its thread id and, for a fallback
/// waiter, the generation it registered under. 24 bytes, plain data: the C
/// layer keeps it in a C frame across its cancellable sleep.
#[derive(Debug)]
#[must_use = "a begun wait must be ended (end_wait re-locks the mutex)"]
pub struct WaitTicket {
    q: Option<node::QNode>,
    id: u32,
    generation: u32,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<WaitTicket>() <= 24);

impl<S: SpinPolicy> Default for RawCondvar<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// Aborts the process if dropped during unwinding: a panic between unlocking
/// the mutex and re-locking it could not restore the caller's guard (the
/// lock_api contract asks for an abort then). Only internal invariant
/// violations can panic there.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("klock: panic inside Condvar::wait after unlocking the mutex; aborting");
            std::process::abort();
        }
    }
}

impl<S: SpinPolicy> RawCondvar<S> {
    /// A condvar with no waiters (all zero).
    ///
    /// ```
    /// static CV: klock::RawCondvar = klock::RawCondvar::new();
    /// assert!(!CV.notify_one());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawCondvar {
            list: WaitList::new(),
            mutex: AtomicUsize::new(0),
            fallback: AtomicU32::new(0),
            _policy: PhantomData,
        }
    }

    /// A condvar with no waiters.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawCondvar {
            list: WaitList::new(),
            mutex: AtomicUsize::new(0),
            fallback: AtomicU32::new(0),
            _policy: PhantomData,
        }
    }

    /// lock_api's contract: report `n` woken threads only if no waiter can
    /// wake spuriously. Queued waiters never do; fallback waiters may, so a
    /// notify that woke any (`fallback_woken`) reports 0.
    #[inline]
    fn exact(&self, n: usize, fallback_woken: u32) -> usize {
        if fallback_woken == 0 { n } else { 0 }
    }

    /// Register a fallback waiter (the caller holds its mutex and unlocks it
    /// afterwards): the generation to sleep under, or [`FB_UNREGISTERED`]
    /// when the count is full.
    fn fallback_register(&self) -> u32 {
        // Relaxed (load and CAS): the caller unlocks its mutex after this; a
        // notifier that must see the registration locks that mutex first,
        // whose release/acquire pair orders the two.
        let mut v = self.fallback.load(Ordering::Relaxed);
        loop {
            if v & FB_WAITERS == FB_WAITERS {
                return FB_UNREGISTERED;
            }
            match self.fallback.compare_exchange_weak(
                v,
                v + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return v & FB_GEN,
                Err(x) => v = x,
            }
        }
    }

    /// Wake every registered fallback waiter (each notify does: their
    /// wake-ups may be spurious). Returns how many there were.
    fn fallback_wake(&self) -> u32 {
        // Relaxed: as in `fallback_register` (the mutex orders a waiter's
        // registration before a notify that must find it).
        let mut v = self.fallback.load(Ordering::Relaxed);
        loop {
            if v & FB_WAITERS == 0 {
                return 0;
            }
            // New generation, no registered waiters: the notify deregisters
            // the waiters it wakes. Release pairs with the Acquire load in
            // `sleep_word`: a woken waiter sees what the notifier wrote first.
            let new = (v & FB_GEN).wrapping_add(FB_GEN_ONE);
            match self
                .fallback
                .compare_exchange_weak(v, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(x) => v = x,
            }
        }
        crate::chaos::point(crate::chaos::Site::AfterRelease);
        // Only the address after the CAS (INV-WAKE-ADDR): the woken waiters no
        // longer count on the condvar.
        wait::futex_wake(&self.fallback, u32::MAX);
        v & FB_WAITERS
    }

    /// A fallback waiter gives up (timeout, cancellation, or a failed
    /// foreign unlock): true if it left before a notify reached it (it
    /// timed out), false if a notify already took it off the count.
    fn fallback_leave(&self, generation: u32) -> bool {
        // Acquire (failure and success) pairs with the Release CAS in
        // `fallback_wake`, as in `sleep_word`.
        let mut v = self.fallback.load(Ordering::Acquire);
        loop {
            if v & FB_GEN != generation {
                return false;
            }
            debug_assert!(v & FB_WAITERS != 0, "a registered waiter is counted");
            match self.fallback.compare_exchange_weak(
                v,
                v - 1,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(x) => v = x,
            }
        }
    }

    #[inline]
    fn lock_list(&self) {
        waitlist::lock_bit(&self.list.word, CV_LOCK);
    }

    #[inline]
    fn unlock_list(&self) {
        // Release pairs with the Acquire in the next lock_list.
        self.list.word.fetch_and(!CV_LOCK, Ordering::Release);
    }

    /// Are threads waiting for a notify (a racy snapshot; exact while the
    /// caller holds the mutex the waiters use)? The C layer's destroy
    /// returns EBUSY then.
    ///
    /// ```
    /// assert!(!klock::RawCondvar::<klock::SpinOsq>::new().has_waiters());
    /// ```
    pub fn has_waiters(&self) -> bool {
        // Relaxed: a snapshot (see `fallback_register` for why the mutex
        // orders it).
        self.list.head() != 0 || self.fallback.load(Ordering::Relaxed) & FB_WAITERS != 0
    }

    /// Wake one waiter: take the oldest waiter off the condvar and wake it;
    /// it re-locks the mutex as any locker does (spinning while the holder
    /// runs, std's hand-over). Returns whether there was one; `false` also
    /// while a no-node fallback waiter exists (its wake-ups may be spurious,
    /// see the module docs).
    ///
    /// ```
    /// assert!(!klock::RawCondvar::<klock::SpinOsq>::new().notify_one());
    /// ```
    pub fn notify_one(&self) -> bool {
        let fb = self.fallback_wake();
        // Racy pre-check: a notify with no waiter costs one load.
        if self.list.head() == 0 {
            return false;
        }
        // 1. Under CV_LOCK, unlink the oldest waiter.
        self.lock_list();
        let h = self.list.head();
        if h == 0 {
            self.unlock_list();
            return false;
        }
        self.list.remove(h);
        crate::chaos::point(crate::chaos::Site::ListEdit);
        // 2. `Waiting -> Notified`, the last write to its node. Release pairs
        // with the Acquire in `sleep_word` / `end_wait`: our link edits
        // happen before the waiter reuses the node.
        let n = Waiter::decode(h);
        n.set_raw_state_release(CondState::Notified as u32);
        self.unlock_list();
        crate::chaos::point(crate::chaos::Site::AfterRelease);
        // 3. Wake its address (INV-WAKE-ADDR: the node is type-stable; if the
        // waiter already left, the wake is a spurious one for its next use).
        stat::inc(Event::CondWakeOne);
        n.wake();
        self.exact(1, fb) == 1
    }

    /// Wake all waiters: move them all onto the mutex's wait list at once.
    /// Returns how many (0 while a no-node fallback waiter exists).
    ///
    /// ```
    /// assert_eq!(klock::RawCondvar::<klock::SpinOsq>::new().notify_all(), 0);
    /// ```
    pub fn notify_all(&self) -> usize {
        let fb = self.fallback_wake();
        if self.list.head() == 0 {
            return 0;
        }
        self.lock_list();
        let h = self.list.take_all();
        let mut count = 0;
        if h != 0 {
            // Relaxed: written under CV_LOCK, which we hold.
            let m = self.mutex.load(Ordering::Relaxed) as *const RawMutex<S>;
            // SAFETY: as in notify_one.
            count = unsafe { &*m }.requeue(h);
        }
        self.unlock_list();
        self.exact(count, fb)
    }

    /// Atomically unlock `mutex` and wait for a notify (or `deadline_ns`, a
    /// [`wait::now_ns`] time), then re-lock it; `token` is replaced by the new
    /// acquisition. Returns `true` if the wait timed out. It is the three
    /// steps [`begin_wait`](Self::begin_wait), sleeping on
    /// [`sleep_word`](Self::sleep_word), [`end_wait`](Self::end_wait).
    ///
    /// # Safety
    ///
    /// The caller holds `mutex` with `token`.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// let mut t = m.lock();
    /// let d = klock::internal::wait::now_ns() + 1_000_000;
    /// assert!(unsafe { cv.wait_until_ns(&m, &mut t, Some(d)) });
    /// unsafe { m.unlock(t) };
    /// ```
    pub(crate) unsafe fn wait_until_ns(
        &self,
        mutex: &RawMutex<S>,
        token: &mut MutexToken,
        deadline_ns: Option<u64>,
    ) -> bool {
        // SAFETY: forwarded contract.
        match unsafe { self.try_wait_until_ns(mutex, token, deadline_ns) } {
            Some(timed_out) => timed_out,
            None => panic!("{TWO_MUTEXES}"),
        }
    }

    /// [`wait_until_ns`](Self::wait_until_ns), but `None` instead of a
    /// panic when other threads wait on this condvar with a different mutex
    /// (see [`try_begin_wait`](Self::try_begin_wait)): nothing changed, the
    /// caller still holds `mutex` with `token`. `Some(timed_out)` otherwise.
    ///
    /// # Safety
    ///
    /// The caller holds `mutex` with `token`.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// let mut t = m.lock();
    /// let d = klock::internal::wait::now_ns() + 1_000_000;
    /// assert_eq!(unsafe { cv.try_wait_until_ns(&m, &mut t, Some(d)) }, Some(true));
    /// unsafe { m.unlock(t) };
    /// ```
    pub(crate) unsafe fn try_wait_until_ns(
        &self,
        mutex: &RawMutex<S>,
        token: &mut MutexToken,
        deadline_ns: Option<u64>,
    ) -> Option<bool> {
        // SAFETY: forwarded contract (the token is re-created by end_wait,
        // or handed back unchanged by a refusal).
        let ticket = match unsafe { self.try_begin_wait(mutex, MutexToken::from_id(token.id())) } {
            Ok(ticket) => ticket,
            Err(_same_token) => return None,
        };
        let guard = AbortOnUnwind;
        // The last futex wait timed out: the deadline has passed (the only
        // way a loom model, which has no clock, reaches the timeout).
        let mut expired = false;
        let mut give_up = false;
        // Watch the node a little before the first sleep (never for a
        // real-time thread, nor for a mutex type that never spins).
        if S::SPIN && !wait::realtime() {
            wait::spin_until(&mut wait::SpinBudget::new(COND_SPIN_NS), || {
                self.sleep_word(&ticket).is_none()
            });
        }
        while let Some((word, value)) = self.sleep_word(&ticket) {
            let timeout = match deadline_ns {
                None => None,
                Some(d) => {
                    let now = wait::now_ns();
                    if now >= d || expired {
                        give_up = true;
                        break;
                    }
                    Some(std::time::Duration::from_nanos(d - now))
                }
            };
            crate::chaos::point(crate::chaos::Site::BeforeSleep);
            expired = wait::futex_wait(word, value, timeout) == wait::WaitOutcome::TimedOut;
            crate::chaos::point(crate::chaos::Site::AfterWake);
        }
        // SAFETY: `ticket` came from begin_wait on this mutex, this thread.
        let (t, timed_out) = unsafe { self.end_wait(mutex, ticket, give_up) };
        *token = t;
        std::mem::forget(guard);
        Some(timed_out)
    }

    /// Step 1 of a wait: queue on the condvar, then unlock `mutex` (a notify
    /// that follows the unlock finds us: no lost wake-up). The ticket must
    /// go to [`end_wait`](Self::end_wait) on this thread, which re-locks. For
    /// callers that sleep outside Rust between the steps (the C layer's
    /// cancellable `pthread_cond_wait`); [`wait_until_ns`](Self::wait_until_ns)
    /// is the Rust composition.
    ///
    /// # Safety
    ///
    /// The caller holds `mutex` with `token`.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// let t = m.lock();
    /// let ticket = unsafe { cv.begin_wait(&m, t) };
    /// assert!(!m.is_locked());
    /// assert!(cv.sleep_word(&ticket).is_some()); // nobody notified us yet
    /// let (t, timed_out) = unsafe { cv.end_wait(&m, ticket, true) };
    /// assert!(timed_out);
    /// unsafe { m.unlock(t) };
    /// ```
    pub(crate) unsafe fn begin_wait(&self, mutex: &RawMutex<S>, token: MutexToken) -> WaitTicket {
        // SAFETY: forwarded contract.
        match unsafe { self.try_begin_wait(mutex, token) } {
            Ok(ticket) => ticket,
            Err(_token) => panic!("{TWO_MUTEXES}"),
        }
    }

    /// [`begin_wait`](Self::begin_wait), but `Err(token)` instead of a panic
    /// when other threads wait on this condvar with a different mutex (one
    /// condvar serves one mutex at a time): nothing was queued or unlocked,
    /// and the caller still holds `mutex` with the returned token. For
    /// callers that report the misuse as an error code (the C library's
    /// EINVAL, as POSIX allows).
    ///
    /// # Safety
    ///
    /// The caller holds `mutex` with `token`.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// let t = m.lock();
    /// let ticket = unsafe { cv.try_begin_wait(&m, t) }.expect("no other mutex in use");
    /// let (t, timed_out) = unsafe { cv.end_wait(&m, ticket, true) };
    /// assert!(timed_out);
    /// unsafe { m.unlock(t) };
    /// ```
    pub(crate) unsafe fn try_begin_wait(
        &self,
        mutex: &RawMutex<S>,
        token: MutexToken,
    ) -> Result<WaitTicket, MutexToken> {
        stat::inc(Event::CondWait);
        let id = mutex::current_id();
        let maddr = mutex as *const RawMutex<S> as usize;
        let q = node::lease();
        let q = match q {
            Some(q) if id != mutex::ANON_ID => q,
            other => {
                if let Some(q) = other {
                    node::unlease(q);
                }
                // No node: wait on the fallback word (registered while we
                // hold the mutex, see the module docs).
                let generation = self.fallback_register();
                // SAFETY: caller holds the mutex with `token`.
                unsafe { mutex.unlock(token) };
                return Ok(WaitTicket {
                    q: None,
                    id,
                    generation,
                });
            }
        };
        let me = q.tail();
        let n = Waiter::of(q.node());
        self.lock_list();
        // Relaxed (both): under CV_LOCK, whose Release publishes them to the
        // next holder (a notifier).
        let cur = self.mutex.load(Ordering::Relaxed);
        if self.list.head() != 0 && cur != maddr {
            self.unlock_list();
            node::unlease(q);
            return Err(token);
        }
        self.mutex.store(maddr, Ordering::Relaxed);
        n.set_raw_state(CondState::Waiting as u32);
        n.set_thread_id(id);
        self.list.push_back(me);
        self.unlock_list();
        crate::chaos::point(crate::chaos::Site::ListEdit);
        // SAFETY: caller holds the mutex with `token`.
        unsafe { mutex.unlock(token) };
        Ok(WaitTicket {
            q: Some(q),
            id,
            generation: 0,
        })
    }

    /// Step 1 of a **foreign** wait, for a mutex that is not a klock
    /// [`RawMutex`] (the interposer's glibc-served mutexes): register on the
    /// fallback word (see the module docs). The caller holds its mutex now
    /// and unlocks it right after (a notify that follows that unlock finds
    /// this waiter), sleeps on [`sleep_word`](Self::sleep_word) while it
    /// returns a word, then calls [`end_wait_foreign`](Self::end_wait_foreign)
    /// and re-locks its mutex. If its unlock fails, it calls
    /// `end_wait_foreign(ticket, true)` at once. Wake-ups may be spurious.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::RawCondvar;
    /// use klock::SpinOsq;
    /// let cv = RawCondvar::<SpinOsq>::new();
    /// let ticket = cv.begin_wait_foreign(); // (then: unlock the own mutex)
    /// assert!(cv.has_waiters());
    /// assert!(cv.sleep_word(&ticket).is_some());
    /// assert_eq!(cv.notify_all(), 0); // fallback waiters make counts 0
    /// assert!(cv.sleep_word(&ticket).is_none()); // notified
    /// assert!(!cv.end_wait_foreign(ticket, true)); // not a timeout
    /// assert!(!cv.has_waiters());
    /// ```
    pub(crate) fn begin_wait_foreign(&self) -> WaitTicket {
        stat::inc(Event::CondWait);
        WaitTicket {
            q: None,
            id: 0,
            generation: self.fallback_register(),
        }
    }

    /// Step 3 of a foreign wait: leave the condvar (the caller then re-locks
    /// its own mutex). Returns whether the wait timed out: `give_up` (the
    /// deadline passed, cancellation, or a failed unlock) took the waiter
    /// off the condvar before a notify reached it. Without `give_up` it
    /// first sleeps until a notify (callers call it once `sleep_word`
    /// answered `None`).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let cv = klock::RawCondvar::<klock::SpinOsq>::new();
    /// let ticket = cv.begin_wait_foreign();
    /// assert!(cv.end_wait_foreign(ticket, true)); // nobody notified: timed out
    /// assert!(!cv.has_waiters());
    /// ```
    pub(crate) fn end_wait_foreign(&self, ticket: WaitTicket, give_up: bool) -> bool {
        debug_assert!(ticket.q.is_none(), "a foreign ticket has no node");
        let timed_out = self.leave_condvar(&ticket, give_up);
        if timed_out {
            stat::inc(Event::CondTimeout);
        }
        timed_out
    }

    /// The condvar phase of every wait's end: without `give_up`, sleep until
    /// a notify has reached the waiter (for callers that stopped asking
    /// early); with it, leave the condvar unless a notify won the race.
    /// Returns whether the waiter left un-notified (timed out). A fallback
    /// waiter that did not register yields (its spurious wake-up).
    fn leave_condvar(&self, ticket: &WaitTicket, give_up: bool) -> bool {
        if !give_up {
            while let Some((w, v)) = self.sleep_word(ticket) {
                wait::futex_wait(w, v, None);
            }
            if ticket.q.is_none() && ticket.generation == FB_UNREGISTERED {
                wait::yield_now();
            }
            return false;
        }
        match ticket.q {
            None if ticket.generation == FB_UNREGISTERED => {
                wait::yield_now();
                false
            }
            None => self.fallback_leave(ticket.generation),
            Some(q) => {
                let n = Waiter::of(q.node());
                self.lock_list();
                // Under CV_LOCK, as is every notify's change.
                let timed_out = n.state_is(CondState::Waiting as u32);
                if timed_out {
                    self.list.remove(q.tail());
                }
                self.unlock_list();
                timed_out
            }
        }
    }

    /// Step 2 of a wait: the futex word and value to sleep on while no
    /// notify has reached us, or `None` once one has (or for a no-node
    /// fallback ticket): then call [`end_wait`](Self::end_wait). Spurious
    /// futex returns are fine: ask again.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// std::thread::scope(|s| {
    ///     let ticket = unsafe { cv.begin_wait(&m, m.lock()) };
    ///     s.spawn(|| { let t = m.lock(); cv.notify_one(); unsafe { m.unlock(t) } });
    ///     while let Some((w, v)) = cv.sleep_word(&ticket) {
    ///         klock::internal::wait::futex_wait(w, v, None);
    ///     }
    ///     let (t, timed_out) = unsafe { cv.end_wait(&m, ticket, false) };
    ///     assert!(!timed_out);
    ///     unsafe { m.unlock(t) };
    /// });
    /// ```
    pub(crate) fn sleep_word(&self, ticket: &WaitTicket) -> Option<(&AtomicU32, u32)> {
        let Some(q) = ticket.q else {
            if ticket.generation == FB_UNREGISTERED {
                return None;
            }
            // Acquire pairs with the Release CAS in `fallback_wake`. The
            // whole word is the expected value: a change of the count only
            // makes the futex wait return early, and we ask again.
            let v = self.fallback.load(Ordering::Acquire);
            return (v & FB_GEN == ticket.generation).then_some((&self.fallback, v));
        };
        let n = Waiter::of(q.node());
        // A notify moved us to the mutex list (a WaiterState) or woke us to
        // re-lock (Notified): the decision is made under the locks, this is
        // only its result.
        (!n.is_requeued() && !n.state_is_acquire(CondState::Notified as u32))
            .then(|| (n.futex(), CondState::Waiting as u32))
    }

    /// Step 3 of a wait: re-lock `mutex` and return the new token, and
    /// whether the wait timed out. `give_up` (the deadline passed, or the
    /// thread is being cancelled): leave the condvar if no notify has
    /// reached us yet and re-lock normally (timed out); otherwise (or if a
    /// notify won the race) wait on the mutex's list, where the notify put us
    /// (a fallback waiter, never on that list, re-locks normally).
    ///
    /// # Safety
    ///
    /// `ticket` came from [`begin_wait`](Self::begin_wait) on `mutex` and
    /// this condvar, on this thread, and the thread has no node leased since.
    pub(crate) unsafe fn end_wait(
        &self,
        mutex: &RawMutex<S>,
        ticket: WaitTicket,
        give_up: bool,
    ) -> (MutexToken, bool) {
        let timed_out = self.leave_condvar(&ticket, give_up);
        if timed_out {
            stat::inc(Event::CondTimeout);
        }
        let Some(q) = ticket.q else {
            // A fallback waiter: not on the mutex's list, lock it normally.
            return (mutex.lock(), timed_out);
        };
        let token =
            if timed_out || Waiter::of(q.node()).state_is_acquire(CondState::Notified as u32) {
                node::unlease(q);
                mutex.lock()
            } else {
                // We are on the mutex's wait list (Sleeping or Woken).
                debug_assert!(Waiter::of(q.node()).is_requeued());
                mutex.wait_queued(q, ticket.id, None, true);
                node::unlease(q);
                MutexToken::from_id(ticket.id)
            };
        (token, timed_out)
    }

    /// Untimed `wait_until_ns`.
    ///
    /// # Safety
    ///
    /// The caller holds `mutex` with `token`.
    ///
    /// ```
    /// use klock::{RawCondvar, RawMutex, SpinOsq};
    /// let (m, cv) = (RawMutex::<SpinOsq>::new(), RawCondvar::<SpinOsq>::new());
    /// std::thread::scope(|s| {
    ///     let mut t = m.lock();
    ///     s.spawn(|| { let t = m.lock(); cv.notify_one(); unsafe { m.unlock(t) } });
    ///     unsafe { cv.wait(&m, &mut t) };
    ///     unsafe { m.unlock(t) };
    /// });
    /// ```
    pub unsafe fn wait(&self, mutex: &RawMutex<S>, token: &mut MutexToken) {
        // SAFETY: forwarded contract.
        unsafe { self.wait_until_ns(mutex, token, None) };
    }
}

#[cfg(not(loom))]
// SAFETY: `wait` enqueues before unlocking (atomic w.r.t. notify), re-locks
// before returning, and aborts if it would unwind without the lock.
unsafe impl<S: SpinPolicy> lock_api::RawCondvar for RawCondvar<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type RawMutex = RawMutex<S>;

    unsafe fn wait(&self, mutex: &RawMutex<S>, guard: &mut MutexToken) {
        // SAFETY: forwarded contract.
        relocked(mutex, || unsafe { RawCondvar::wait(self, mutex, guard) })
    }

    fn notify_one(&self) -> bool {
        RawCondvar::notify_one(self)
    }

    fn notify_all(&self) -> usize {
        RawCondvar::notify_all(self)
    }
}

#[cfg(not(loom))]
// SAFETY: as for RawCondvar; timeouts only end the condvar phase.
unsafe impl<S: SpinPolicy> lock_api::RawCondvarTimed for RawCondvar<S> {
    fn checked_duration_to_instant(timeout: &std::time::Duration) -> Option<std::time::Instant> {
        std::time::Instant::now().checked_add(*timeout)
    }

    unsafe fn wait_until(
        &self,
        mutex: &RawMutex<S>,
        guard: &mut MutexToken,
        timeout: &std::time::Instant,
    ) -> bool {
        let now = std::time::Instant::now();
        let d = wait::now_ns().saturating_add(
            timeout
                .saturating_duration_since(now)
                .as_nanos()
                .min(u64::MAX as u128) as u64,
        );
        // SAFETY: forwarded contract.
        relocked(mutex, || unsafe {
            self.wait_until_ns(mutex, guard, Some(d))
        })
    }

    unsafe fn wait_for(
        &self,
        mutex: &RawMutex<S>,
        guard: &mut MutexToken,
        timeout: &std::time::Duration,
    ) -> bool {
        let d = wait::now_ns().saturating_add(timeout.as_nanos().min(u64::MAX as u128) as u64);
        // SAFETY: forwarded contract.
        relocked(mutex, || unsafe {
            self.wait_until_ns(mutex, guard, Some(d))
        })
    }
}

/// Lockdep: a wait releases `mutex` and retakes it (a blocking acquisition,
/// validated against the locks held then, which are those held now: the
/// thread sleeps in between). The wait itself unlocks and relocks through
/// the mutex's inherent methods, which carry no hooks.
#[cfg(not(loom))]
#[inline(always)]
fn relocked<S: SpinPolicy, T>(mutex: &RawMutex<S>, wait: impl FnOnce() -> T) -> T {
    use crate::{ldhook, lockdep::Mode};
    let a = ldhook::addr(mutex);
    ldhook::release(a);
    ldhook::wait(a, Mode::Write, false, wait, |_| true)
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests;

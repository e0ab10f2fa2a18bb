//! The rwsem's lock type, [`RawRwLock`]: its words, the fast paths, the
//! slow paths' top level and its `lock_api` impls. The layout and the state
//! diagram are in the module docs (`rwlock/mod.rs`); the readers' and
//! writers' slow paths are `read.rs` and `write.rs`, the waiter and waker
//! sides `sleep.rs` and `wake.rs`.

use super::word::{
    Class, OWNER_READER, READER_BIAS, WRITER, add_reader_wrapping, add_share, drop_reader, is_free,
    is_lockable_by, is_plain_read_release, is_read_lockable, owned_by_readers, owned_by_writer,
    owner_id, readers,
};
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::osq::Osq;
use crate::spin_policy::{SpinOsq, SpinPolicy};
use crate::stat::{self, Event};
use crate::sync::atomic::{AtomicU32, Ordering};
#[cfg(not(loom))]
use crate::wait;
use crate::waitlist::WaitList;
use std::marker::PhantomData;

/// The raw rwsem (16 bytes), generic over the writers' [`SpinPolicy`]
/// ([`SpinOsq`] spins through the OSQ; [`SpinOff`](crate::SpinOff) never spins; both 0
/// bytes). Use it through [`RwLockRwsem`](crate::RwLockRwsem) (`lock_api`) or directly.
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
    pub(super) count: AtomicU32,
    /// Owner hint (writer id / READER_OWNED / NONSPINNABLE).
    pub(super) owner: AtomicU32,
    /// FIFO of sleeping waiters, protected by WLOCK.
    pub(super) list: WaitList,
    /// Spinners' queue.
    pub(super) osq: Osq,
    pub(super) _policy: PhantomData<S>,
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
    pub(super) id: u32,
}

impl WriteToken {
    /// The owner id the acquisition published.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// How a slow path ended.
pub(super) enum Got {
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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// assert_eq!(klock::RawRwLock::<klock::SpinOff>::new().count_word(), 0);
    /// ```
    pub(crate) fn count_word(&self) -> u32 {
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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert_eq!(l.writer(), klock::internal::tid::current_id());
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.writer(), 0);
    /// ```
    #[inline]
    pub(crate) fn writer(&self) -> u32 {
        // Relaxed (both): our own id is only ever stored by ourselves.
        if self.count.load(Ordering::Relaxed) & WRITER == 0 {
            return 0;
        }
        owner_id(self.owner.load(Ordering::Relaxed))
    }

    // ---- owner hint -------------------------------------------------------

    #[inline]
    pub(super) fn set_reader_owned(&self) {
        // Relaxed (both): a hint; only stored when it changes, so readers do
        // not bounce the line among themselves.
        let o = self.owner.load(Ordering::Relaxed);
        if o & OWNER_READER == 0 {
            self.owner.store(owned_by_readers(o), Ordering::Relaxed);
        }
    }

    #[inline]
    pub(super) fn set_writer_owned(&self, id: u32) {
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
    pub(super) fn read_fast(&self) -> Result<(), u32> {
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
    pub(super) fn add_while(&self, add: u32, ok: impl Fn(u32) -> bool) -> bool {
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
        // before it, the cheaper uncontended read (the A/B:
        // `docs/results/2026-11-29-tunables.md`, history). A failed
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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// std::mem::forget(t);
    /// assert!(unsafe { l.unlock_any() });
    /// l.lock_shared();
    /// assert!(!unsafe { l.unlock_any() });
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
    pub(crate) unsafe fn unlock_any(&self) -> bool {
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
    pub(super) fn write_fast(&self, id: u32) -> bool {
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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
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
    pub(crate) unsafe fn try_unlock_uncontended(&self) -> Option<bool> {
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
    pub(super) fn try_take(&self, class: Class) -> bool {
        self.add_while(class.share(), |c| is_lockable_by(c, class, false))
    }
}

// ---------------------------------------------------------------------------
// lock_api
// ---------------------------------------------------------------------------

/// Lockdep's mode of a read: the rwsem's new readers queue behind a waiting
/// writer (after its hand-off request, always), so a read can wait while
/// the lock is read-held.
#[cfg(not(loom))]
const READ: Mode = Mode::Read;

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
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || RawRwLock::lock_shared(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
        let got = RawRwLock::try_lock_shared(self);
        ldhook::tried(ldhook::addr(self), READ, false, got);
        got.then(lock_api::GuardSend::new)
    }
    #[inline]
    unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_shared(self) }
    }
    #[inline]
    fn lock_exclusive(&self) -> WriteToken {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawRwLock::lock_exclusive(self),
            |_| true,
        )
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<WriteToken> {
        let t = RawRwLock::try_lock_exclusive(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, t.is_some());
        t
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, t: WriteToken) {
        ldhook::release(ldhook::addr(self));
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
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded.
        unsafe { self.release_share(READER_BIAS, 0, true) }
    }
    unsafe fn unlock_exclusive_fair(&self, t: WriteToken) {
        let _ = t;
        ldhook::release(ldhook::addr(self));
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
        ldhook::changed(ldhook::addr(self), READ);
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
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || self.lock_shared_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_shared_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            READ,
            false,
            || self.lock_shared_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_exclusive_for(&self, t: Self::Duration) -> Option<WriteToken> {
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_exclusive_until_ns(d),
            Option::is_some,
        )
    }
    fn try_lock_exclusive_until(&self, t: Self::Instant) -> Option<WriteToken> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_exclusive_until_ns(d),
            Option::is_some,
        )
    }
}

#[cfg(not(loom))]
// SAFETY: UPGRADE is held with one reader count and excludes writers and
// other upgraders; upgrade turns it into WRITER only when it is the last
// reader (one CAS).
// Lockdep: an upgradable read excludes writers and other upgradable reads,
// so it is validated as a write; the upgrade and the downgrade to
// upgradable keep that mode (no new wait edge: the lock is held).
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgrade for RawRwLock<S> {
    type UpgradableGuard = lock_api::GuardSend;

    fn lock_upgradable(&self) -> lock_api::GuardSend {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawRwLock::lock_upgradable(self),
            |_| true,
        );
        lock_api::GuardSend::new()
    }
    fn try_lock_upgradable(&self) -> Option<lock_api::GuardSend> {
        let got = RawRwLock::try_lock_upgradable(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, got);
        got.then(lock_api::GuardSend::new)
    }
    unsafe fn unlock_upgradable(&self, _: lock_api::GuardSend) {
        ldhook::release(ldhook::addr(self));
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
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded.
        unsafe { RawRwLock::unlock_upgradable_fair(self) }
    }
    unsafe fn bump_upgradable(&self, _: &mut lock_api::GuardSend) {
        // Lockdep: a release and a blocking retake.
        let a = ldhook::addr(self);
        ldhook::release(a);
        // SAFETY: forwarded; the guard state (a marker) stays valid.
        ldhook::wait(
            a,
            Mode::Write,
            false,
            || unsafe { RawRwLock::bump_upgradable(self) },
            |_| true,
        )
    }
}

#[cfg(not(loom))]
// SAFETY: both downgrades change the mode in one RMW on the count word that
// keeps a reader count throughout (no writer can get in between):
// `(n,U) -> (n,-)` and `(0,X) -> (1,U)`; the second releases (Release) the
// writer's critical section to later acquisitions.
unsafe impl<S: SpinPolicy> lock_api::RawRwLockUpgradeDowngrade for RawRwLock<S> {
    unsafe fn downgrade_upgradable(&self, _: lock_api::GuardSend) -> lock_api::GuardSend {
        ldhook::changed(ldhook::addr(self), READ);
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
        let d = wait::deadline_after(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_upgradable_until_ns(d),
            |&ok| ok,
        )
        .then(lock_api::GuardSend::new)
    }
    fn try_lock_upgradable_until(&self, t: Self::Instant) -> Option<lock_api::GuardSend> {
        let d = wait::instant_to_ns(t);
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || self.lock_upgradable_until_ns(d),
            |&ok| ok,
        )
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

/// Lockdep: the rwsem at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl<S: SpinPolicy> Drop for RawRwLock<S> {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

//! The read side past the fast paths in `mod.rs`: recursive reads
//! ([`lock_shared_recursive`](RawRwLock::lock_shared_recursive)),
//! reader-preferring reads
//! ([`lock_shared_prefer_readers`](RawRwLock::lock_shared_prefer_readers),
//! INV-PREFQ), the timed read, and the read slow path (`read_slow`: reader
//! lock stealing, the running wait of
//! [`ReaderMode::StealThenWaitRunning`] (`steal_running`), reader spinning, or
//! the wait list), with the reader count taken back (`drop_reader_count`)
//! and the wake-ups a reader owes (`wake_if_free`,
//! `wake_readers_into_read_owned`).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (0,-) --read: fetch_add--> (1,-) --read: fetch_add--> (n+1,-)      (mod.rs; a failed add comes here)
//!  (x,X|..) or (n,W) --failed reader queues under WLOCK--> (..,W)     (sleep.rs)
//!  (n,W[|H]), n>0 --reader-preferring read: CAS--> (n+1,W[|H])    joins past a waiting writer
//!  (n,W|F), n>0, writer at the head --hand_on: grant queued reader-preferring readers--> (n+k,W[|F])
//!  (n,W[|H][|U|G]), n>0 --recursive read: fetch_add kept--> (n+1,W[|H][|U|G])  past waiters and an upgrade
//! ```

use super::raw::{Got, RawRwLock};
use super::word::Class;
use super::word::{
    HANDOFF, PREFQ, READER_BIAS, READFAIL, UPGRADING, WRITER, has_waiters, is_free,
    is_nonspinnable, is_pref_read_lockable, is_recursive_read_lockable, readers,
};
use super::word::{add_reader, add_reader_wrapping, drop_reader, drop_reader_wrapping};
use crate::chaos::{self, Site};
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::tune::ReaderMode;
use crate::wait::{self, SpinBudget};

impl<S: SpinPolicy> RawRwLock<S> {
    /// Take a read lock even past waiting writers and past an upgrade under
    /// way, as long as no writer holds it: for a thread that may already
    /// hold a read lock on this lock (a fair read lock would queue behind a
    /// writer, or an upgrader, that waits for us: deadlock). glibc's default
    /// rwlock allows such recursion, so the C layer takes this path when the
    /// thread holds read locks. parking_lot's `read_recursive`; lock_api 0.5
    /// has no recursive-read trait, so [`RwLockRecursiveExt`](super::RwLockRecursiveExt) gives
    /// [`RwLock`](super::RwLock) the `read_recursive` family on top of these inherent
    /// methods.
    ///
    /// Transitions: `(n,..) -> (n+1,..)` by the read fast path's
    /// `fetch_add`, kept when [`is_recursive_read_lockable`] held before it
    /// (`(n,W[|H][|U|G]) -> (n+1,W[|H][|U|G])`, n > 0: past waiting
    /// writers, a hand-off owed and an upgrade under way); otherwise (a
    /// writer holds the lock, or it is free with a hand-off owed) the plain
    /// read slow path.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert!(!l.lock_shared_recursive_until_ns(0)); // deadline passed
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_recursive_until_ns(0)); // no wait needed
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) fn lock_shared_recursive_until_ns(&self, deadline: u64) -> bool {
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
            Err(c) if is_recursive_read_lockable(drop_reader_wrapping(c)) => {
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
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
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
    /// grants the queued reader-preferring readers `(n+1,W|F) ->
    /// (n+1+k,W[|F])`. Never from `(x,X|..)`: a writer, also one just
    /// handed the lock, owns it.
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// l.lock_shared_prefer_readers();
    /// l.lock_shared_prefer_readers();
    /// unsafe { l.unlock_shared(); l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    #[inline]
    pub(crate) fn lock_shared_prefer_readers(&self) {
        let _ = self.read_pref(None);
    }

    /// [`lock_shared_prefer_readers`](Self::lock_shared_prefer_readers)
    /// without waiting: `true` if it was taken (succeeds while the lock is
    /// read-owned, whoever waits; on a free lock unless a hand-off is owed).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let l = klock::RawRwLock::<klock::SpinOff>::new();
    /// assert!(l.try_lock_shared_prefer_readers());
    /// unsafe { l.unlock_shared() };
    /// let t = l.lock_exclusive();
    /// assert!(!l.try_lock_shared_prefer_readers());
    /// unsafe { l.unlock_exclusive(t) };
    /// ```
    #[inline]
    pub(crate) fn try_lock_shared_prefer_readers(&self) -> bool {
        self.try_read_pref()
    }

    /// [`lock_shared_prefer_readers`](Self::lock_shared_prefer_readers) with
    /// a deadline in [`wait::now_ns`] time, as
    /// [`lock_shared_until_ns`](Self::lock_shared_until_ns): `true` if it
    /// was taken, `false` if the deadline passed first (nothing held).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// assert!(!l.lock_shared_prefer_readers_until_ns(0));
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_prefer_readers_until_ns(0)); // no wait needed
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) fn lock_shared_prefer_readers_until_ns(&self, deadline: u64) -> bool {
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
                add_reader(c),
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
            self.read_slow(add_reader_wrapping(c), deadline, true),
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

    /// Read lock with a deadline in [`wait::now_ns`] time: `true` if it was
    /// taken (then release it with [`unlock_shared`](Self::unlock_shared)),
    /// `false` if the deadline passed first (nothing is held). The
    /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
    /// models (under loom `now_ns()` is 0, so a deadline of 1 lets every
    /// futex wait time out or not).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// let t = l.lock_exclusive();
    /// // A deadline already passed: fails at once.
    /// assert!(!l.lock_shared_until_ns(0));
    /// unsafe { l.unlock_exclusive(t) };
    /// assert!(l.lock_shared_until_ns(klock::internal::wait::now_ns() + 1_000_000));
    /// unsafe { l.unlock_shared() };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) fn lock_shared_until_ns(&self, deadline: u64) -> bool {
        match self.read_fast() {
            Ok(()) => true,
            Err(c) => matches!(self.read_slow(c, Some(deadline), false), Got::Yes),
        }
    }

    /// Read slow path; `c` is the count after our add (our reader count is
    /// in it). `pref`: a reader-preferring reader (queues as one, and passes
    /// the turn to queued ones once it holds the lock: INV-PREFQ).
    #[cold]
    pub(super) fn read_slow(&self, c: u32, deadline: Option<u64>, pref: bool) -> Got {
        if c & READFAIL != 0 {
            self.drop_reader_count();
            panic!("klock::RwLock: more than 2^23 concurrent readers (reader count overflow)");
        }
        let t = crate::tune::get();
        let mode = reader_mode();
        // Reader lock stealing (kernel 5.11+): no writer, no hand-off, no
        // upgrade under way and no other reader (but for JoinReaders): a
        // queued writer loses at most until it sets HANDOFF.
        let steals = match mode {
            ReaderMode::Queue | ReaderMode::SpinOnWriter => false,
            ReaderMode::Steal | ReaderMode::StealThenWaitRunning => readers(c) == 1,
            ReaderMode::JoinReaders => true,
        };
        if steals && c & (WRITER | HANDOFF | UPGRADING) == 0 {
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
        if mode == ReaderMode::StealThenWaitRunning
            && S::SPIN
            && t.rwsem_spin != 0
            && t.rwsem_read_wait_ns != 0
            && !wait::realtime()
            && self.steal_running()
        {
            // steal_running passed the turn if anyone waits.
            return Got::Yes;
        }
        if mode == ReaderMode::SpinOnWriter
            && S::SPIN
            && t.rwsem_spin != 0
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
        let got = self.wait(Class::Reader, deadline, pref);
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

    /// [`ReaderMode::StealThenWaitRunning`]: wait running (within `KLOCK_RWSEM_READ_WAIT_NS`, polling with the
    /// owner-poll backoff) for a *free* lock with no hand-off owed, and take
    /// it as a reader, instead of sleeping at once.
    fn steal_running(&self) -> bool {
        let t = crate::tune::get();
        let mut poll = wait::PollBackoff::new(super::spin::POLL_MAX_NS);
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
    pub(super) fn drop_reader_count(&self) {
        // Relaxed: the CAS decides; Release: our count blocked a writer,
        // nothing to publish, but a wake below needs the latest list.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            let new = drop_reader(c);
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
    pub(super) fn wake_readers_into_read_owned(&self) {
        self.wlock();
        self.pass_turn_and_wunlock();
    }
}

/// `KLOCK_RWSEM_READER` (unit tests may override it per thread: [`MODE`]).
#[inline]
fn reader_mode() -> ReaderMode {
    #[cfg(all(test, not(loom)))]
    if let Some(m) = MODE.with(|c| c.get()) {
        return m;
    }
    crate::tune::get().rwsem_reader_mode()
}

#[cfg(all(test, not(loom)))]
thread_local! {
    /// This thread's reader mode in unit tests (`None`: the tunable's).
    pub(super) static MODE: std::cell::Cell<Option<ReaderMode>> =
        const { std::cell::Cell::new(None) };
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::super::tests::eventually;
    use super::super::*;
    use crate::rwlock::word::*;
    use crate::sync::atomic::Ordering;
    use crate::wait;
    use std::sync::Arc;

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
}

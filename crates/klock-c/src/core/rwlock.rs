//! [`KRwLock`]: klock's rwsem with pthread's semantics.
//!
//! # Layout (20 bytes, align 4; all zero = unlocked)
//!
//! ```text
//! offset  0  klock RawRwLock (count word, owner hint, wait list, OSQ): 16 bytes
//! offset 16  state: 0 usable, -1 destroyed
//! ```
//!
//! * One unlock for both sides (pthread's `pthread_rwlock_unlock`).
//! * **Read policy**, chosen per call ([`ReadPolicy`]):
//!   [`ReadPolicy::PreferReaders`] is glibc's default rwlock kind: a reader
//!   never waits while the lock is read-owned, even while writers wait
//!   ([`klock::RawRwLock::lock_shared_prefer_readers`]; writers may
//!   wait indefinitely). [`ReadPolicy::Fair`] is klock's rwsem: new readers
//!   queue behind a waiting writer (writers do not starve), except:
//! * **Recursive read locks** (fair policy): glibc's default rwlock lets a
//!   thread that holds a read lock take another even while a writer waits;
//!   klock's rwsem queues readers behind waiting writers, which would
//!   deadlock such a thread. So a thread that holds any read lock (a
//!   per-thread count) takes further ones with
//!   [`klock::RawRwLock::lock_shared_recursive`]. (Another thread's
//!   reader still queues: a reader that holds the lock while it waits for
//!   another thread's reader can deadlock under the fair policy.)
//! * EDEADLK when the write-holder asks for either lock again.
//!
//! ```
//! use klock_c::core::{how::How, rwlock::{KRwLock, ReadPolicy}, EBUSY, EDEADLK};
//! let l: KRwLock = KRwLock::new();
//! assert_eq!(l.wrlock(How::Block), 0);
//! assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), EDEADLK);
//! assert_eq!(l.unlock(), 0);
//! assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), 0);
//! assert_eq!(l.wrlock(How::Try), EBUSY);
//! assert_eq!(l.unlock(), 0);
//! assert_eq!(l.destroy(), 0);
//! ```

use super::how::{How, untried};
use klock::RawRwLock;
use klock::internal::rwlock::RawRwLockInternals;
use klock::internal::tid::current_id;
use klock::{SpinOsq, SpinPolicy};
use libc::{EAGAIN, EBUSY, EINVAL, EPERM, c_int};
use std::sync::atomic::{AtomicI32, Ordering};

/// A klock rwlock with pthread semantics (see the module docs).
#[repr(C)]
#[derive(Debug)]
pub struct KRwLock<S: SpinPolicy = SpinOsq> {
    raw: RawRwLock<S>,
    state: AtomicI32,
}

const _: () = assert!(std::mem::size_of::<KRwLock>() == 20);
const _: () = assert!(std::mem::align_of::<KRwLock>() == 4);

/// `state` of a destroyed lock.
const DESTROYED: i32 = -1;

/// Read locks at once from which a reader that misses the fast path gets
/// EAGAIN, as from glibc's `pthread_rwlock_rdlock` past its reader limit:
/// klock's own limit is 2^23 (a reader past it panics in klock, which
/// through `extern "C"` would abort with Rust's panic text), less a margin
/// of 2^16 readers that may race past this check at once.
const MAX_READERS: u32 = (1 << 23) - (1 << 16);

/// Does the count word `c` hold [`MAX_READERS`] read locks or more?
fn too_many_readers(c: u32) -> bool {
    klock::internal::rwlock::readers(c) >= MAX_READERS
}

// Read locks this thread holds, over all KRwLocks (see the module docs):
// an initial-exec thread-local where klock provides one (one `%fs` load on
// the read fast paths, also inside the interposer), else `thread_local!`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
klock::internal::tls::thread_word!(mod reads_word = "klock_c_reads_held_v1");

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod reads_word {
    use std::cell::Cell;
    thread_local! {
        static READS_HELD: Cell<u32> = const { Cell::new(0) };
    }
    #[inline]
    pub fn get() -> u32 {
        READS_HELD.try_with(Cell::get).unwrap_or(0)
    }
    #[inline]
    pub fn add(d: u32) {
        let _ = READS_HELD.try_with(|c| c.set(c.get().wrapping_add(d)));
    }
}

#[inline]
fn reads_held() -> u32 {
    reads_word::get()
}

/// Count a read lock taken (`up`) or released. Wrapping: an unlock without
/// a lock is the program's error (pthread: undefined); it then reads as
/// "holds read locks", which only lets the thread's reads pass waiting
/// writers.
#[inline]
fn add_reads_held(up: bool) {
    reads_word::add(if up { 1 } else { 1u32.wrapping_neg() });
}

/// How a read lock treats waiting writers.
///
/// ```
/// use klock_c::core::{how::How, rwlock::{KRwLock, ReadPolicy}};
/// let l: KRwLock = KRwLock::new();
/// assert_eq!(l.rdlock(How::Block, ReadPolicy::PreferReaders), 0);
/// assert_eq!(l.rdlock(How::Try, ReadPolicy::Fair), 0);
/// assert_eq!(l.unlock(), 0);
/// assert_eq!(l.unlock(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPolicy {
    /// klock's rwsem: a new reader queues behind a waiting writer (a thread
    /// already holding a read lock excepted; see the module docs).
    Fair,
    /// glibc's default kind (`PTHREAD_RWLOCK_PREFER_READER_NP`, and
    /// `PREFER_WRITER_NP`, which glibc treats alike): a reader never waits
    /// while the lock is read-owned.
    PreferReaders,
}

impl<S: SpinPolicy> Default for KRwLock<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: SpinPolicy> KRwLock<S> {
    /// An unlocked rwlock.
    pub const fn new() -> Self {
        KRwLock {
            raw: RawRwLock::new(),
            state: AtomicI32::new(0),
        }
    }

    /// The klock rwlock inside.
    pub fn raw(&self) -> &RawRwLock<S> {
        &self.raw
    }

    fn check(&self) -> Result<(), c_int> {
        // Relaxed: set by init/destroy, ordered by the program's publication.
        if self.state.load(Ordering::Relaxed) == 0 {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Read lock `how`, the `p` way, the whole call: the uncontended try
    /// ([`rdlock_fast`](Self::rdlock_fast)), then [`read`](Self::read).
    #[inline]
    pub fn rdlock(&self, how: How, p: ReadPolicy) -> c_int {
        if self.rdlock_fast() {
            return 0;
        }
        self.read(how, p)
    }

    /// Read lock `how`, the `p` way, after [`rdlock_fast`](Self::rdlock_fast)
    /// failed (the interposer asks it before its dispatch;
    /// [`rdlock`](Self::rdlock) for everyone else): EINVAL if destroyed,
    /// [`How::own_lock_error`] for the write-holder, EAGAIN past the reader
    /// limit, else the policy's read ([`read_as`](Self::read_as)), counted.
    #[cold]
    pub fn read(&self, how: How, p: ReadPolicy) -> c_int {
        if let Err(e) = self.check() {
            return e;
        }
        if self.is_my_write_lock() {
            return how.own_lock_error();
        }
        if too_many_readers(self.raw.count_word()) {
            return EAGAIN;
        }
        match self.read_as(how, p) {
            Ok(()) => {
                add_reads_held(true);
                0
            }
            Err(e) => e,
        }
    }

    /// The read itself, the `p` way, as `how` says ([`How::take`]). A try
    /// asks the policy's own question; the fair one's is the uncontended
    /// try, which failed. klock's blocking reads ask theirs themselves.
    fn read_as(&self, how: How, p: ReadPolicy) -> Result<(), c_int> {
        let raw = &self.raw;
        if p == ReadPolicy::PreferReaders {
            // No recursion special case: a read-owned lock admits every
            // reader of this policy.
            return how.take(
                raw,
                RawRwLockInternals::try_lock_shared_prefer_readers,
                RawRwLockInternals::lock_shared_prefer_readers,
                RawRwLockInternals::lock_shared_prefer_readers_until_ns,
            );
        }
        if reads_held() > 0 {
            // A thread holding read locks passes waiting writers (they may
            // wait for it); a timed one queues fairly once that fails.
            return how.take(
                raw,
                RawRwLock::try_lock_shared_recursive,
                RawRwLock::lock_shared_recursive,
                RawRwLockInternals::lock_shared_until_ns,
            );
        }
        how.take(
            raw,
            untried,
            RawRwLock::lock_shared,
            RawRwLockInternals::lock_shared_until_ns,
        )
    }

    /// Does the caller hold the write lock? (The thread-id lookup only when
    /// a writer holds it.)
    #[inline]
    fn is_my_write_lock(&self) -> bool {
        let w = self.raw.writer();
        w != 0 && w == current_id()
    }

    /// Write lock `how`, the whole call: the uncontended try
    /// ([`wrlock_fast`](Self::wrlock_fast)), then [`write`](Self::write).
    /// Out of line, as the whole write lock was before `How` was shared:
    /// a `klock_rwlock_*wrlock` is the pointer check and one direct call
    /// (the interposer inlines `wrlock_fast` itself and calls `write`).
    /// `#[cold]` keeps it out of line and crate-local; an `#[inline(never)]`
    /// generic is called through the GOT (a different instruction).
    #[cold]
    pub fn wrlock(&self, how: How) -> c_int {
        if self.wrlock_fast() {
            return 0;
        }
        self.write(how)
    }

    /// Write lock `how` after [`wrlock_fast`](Self::wrlock_fast) failed (as
    /// [`read`](Self::read)): EINVAL if destroyed,
    /// [`How::own_lock_error`] for the write-holder, else klock's write
    /// lock as `how` says. `wrlock_fast` asked klock's one write try, so a
    /// try's answer is its no (EBUSY).
    #[cold]
    pub fn write(&self, how: How) -> c_int {
        if let Err(e) = self.check() {
            return e;
        }
        if self.is_my_write_lock() {
            return how.own_lock_error();
        }
        match how.take(
            &self.raw,
            untried,
            RawRwLock::lock_exclusive,
            RawRwLockInternals::lock_exclusive_until_ns,
        ) {
            // `unlock_any` finds the writer's id in the owner word.
            Ok(_token) => 0,
            Err(e) => e,
        }
    }

    /// Unlock whichever side the caller holds: EPERM if the lock is not held.
    #[inline]
    pub fn unlock(&self) -> c_int {
        if let Err(e) = self.check() {
            return e;
        }
        if !self.raw.is_locked() {
            return EPERM;
        }
        // SAFETY: the caller holds it (pthread's contract; the lock is held
        // by someone, and only a holder calls unlock).
        if !unsafe { self.raw.unlock_any() } {
            add_reads_held(false);
        }
        0
    }

    /// The uncontended read lock ([`ReadPolicy`] does not matter here): a
    /// usable lock that takes a reader at once. `false` changes nothing;
    /// the caller takes the full path.
    ///
    /// ```
    /// use klock_c::core::rwlock::KRwLock;
    /// let l: KRwLock = KRwLock::new();
    /// assert!(l.rdlock_fast());
    /// assert!(!l.wrlock_fast());
    /// assert!(l.unlock_fast());
    /// ```
    #[inline(always)]
    pub fn rdlock_fast(&self) -> bool {
        if self.check().is_ok() && self.raw.try_lock_shared() {
            add_reads_held(true);
            return true;
        }
        false
    }

    /// The uncontended write lock: a usable, free lock, taken in one CAS.
    /// `false` changes nothing; the caller takes the full path.
    ///
    /// ```
    /// use klock_c::core::rwlock::KRwLock;
    /// let l: KRwLock = KRwLock::new();
    /// assert!(l.wrlock_fast());
    /// assert!(!l.rdlock_fast());
    /// assert!(l.unlock_fast());
    /// ```
    #[inline(always)]
    pub fn wrlock_fast(&self) -> bool {
        self.check().is_ok() && self.raw.try_lock_exclusive().is_some()
    }

    /// The uncontended unlock of the side the caller holds
    /// (`RawRwLock::try_unlock_uncontended`). `false` changes nothing;
    /// the caller takes the full [`unlock`](Self::unlock).
    ///
    /// ```
    /// use klock_c::core::rwlock::KRwLock;
    /// let l: KRwLock = KRwLock::new();
    /// assert!(!l.unlock_fast());
    /// ```
    #[inline(always)]
    pub fn unlock_fast(&self) -> bool {
        if self.check().is_err() {
            return false;
        }
        // SAFETY: pthread's contract: only a holder calls unlock (a free
        // lock answers `None`: the full path reports EPERM).
        match unsafe { self.raw.try_unlock_uncontended() } {
            Some(true) => true,
            Some(false) => {
                add_reads_held(false);
                true
            }
            None => false,
        }
    }

    /// Destroy: EBUSY while held; afterwards every call is EINVAL until the
    /// lock is initialised again.
    pub fn destroy(&self) -> c_int {
        if let Err(e) = self.check() {
            return e;
        }
        if self.raw.is_locked() {
            return EBUSY;
        }
        // Relaxed: see `check`.
        self.state.store(DESTROYED, Ordering::Relaxed);
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::{ETIMEDOUT, timespec};
    use std::sync::atomic::AtomicBool;

    /// Past about 2^23 read locks a reader gets EAGAIN (glibc's error for
    /// its reader limit), not klock's overflow panic (an abort in C).
    #[test]
    fn too_many_read_locks_is_eagain() {
        let l: KRwLock = KRwLock::new();
        let mut held = 0u32;
        let r = loop {
            match l.rdlock(How::Block, ReadPolicy::Fair) {
                0 => held += 1,
                e => break e,
            }
        };
        assert_eq!(r, EAGAIN);
        assert!((MAX_READERS..=1 << 23).contains(&held), "{held}");
        assert_eq!(l.rdlock(How::Try, ReadPolicy::Fair), EAGAIN);
        let past = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec.
        assert_eq!(
            l.rdlock(
                unsafe { How::until(libc::CLOCK_REALTIME, &past) },
                ReadPolicy::Fair
            ),
            EAGAIN
        );
        for _ in 0..held {
            assert_eq!(l.unlock(), 0);
        }
        assert_eq!(l.unlock(), EPERM);
        assert_eq!(l.wrlock(How::Block), 0, "the count came back to 0");
        assert_eq!(l.unlock(), 0);
    }

    #[test]
    fn recursive_read_passes_a_waiting_writer() {
        let l: KRwLock = KRwLock::new();
        assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), 0);
        let writer_in = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(l.wrlock(How::Block), 0);
                writer_in.store(true, Ordering::SeqCst);
                assert_eq!(l.unlock(), 0);
            });
            // Let the writer queue behind our read lock.
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(
                l.rdlock(How::Block, ReadPolicy::Fair),
                0,
                "a second read lock must not deadlock"
            );
            assert!(!writer_in.load(Ordering::SeqCst));
            assert_eq!(l.unlock(), 0);
            assert_eq!(l.unlock(), 0);
        });
        assert!(writer_in.load(Ordering::SeqCst));
        assert_eq!(l.unlock(), EPERM);
    }

    /// Another thread's reader: the fair policy queues it behind a waiting
    /// writer (EBUSY, ETIMEDOUT), the reader-preferring one admits it.
    #[test]
    fn other_threads_reader_and_a_waiting_writer() {
        let l: KRwLock = KRwLock::new();
        assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), 0);
        let writer_in = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(l.wrlock(How::Block), 0);
                writer_in.store(true, Ordering::SeqCst);
                assert_eq!(l.unlock(), 0);
            });
            // Until the writer has queued (the event); the watchdog only
            // catches a writer that never does.
            let t0 = std::time::Instant::now();
            while l.raw().count_word() & klock::internal::rwlock::WAITERS == 0 {
                assert!(
                    t0.elapsed().as_secs() < 120,
                    "watchdog: after 120 s the writer has not queued"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            s.spawn(|| {
                let soon = timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                assert_eq!(l.rdlock(How::Try, ReadPolicy::Fair), EBUSY);
                assert_eq!(
                    l.rdlock(
                        unsafe { How::until(libc::CLOCK_MONOTONIC, &soon) },
                        ReadPolicy::Fair
                    ),
                    ETIMEDOUT
                );
                assert_eq!(l.rdlock(How::Try, ReadPolicy::PreferReaders), 0);
                assert_eq!(
                    l.rdlock(
                        unsafe { How::until(libc::CLOCK_MONOTONIC, &soon) },
                        ReadPolicy::PreferReaders
                    ),
                    0
                );
                assert_eq!(l.rdlock(How::Block, ReadPolicy::PreferReaders), 0);
                for _ in 0..3 {
                    assert_eq!(l.unlock(), 0);
                }
            })
            .join()
            .unwrap();
            assert!(!writer_in.load(Ordering::SeqCst));
            assert_eq!(l.unlock(), 0);
        });
        assert!(writer_in.load(Ordering::SeqCst));
        assert_eq!(l.raw().count_word(), 0);
    }

    #[test]
    fn timed_write_times_out_and_checks_abstime_when_blocking() {
        let l: KRwLock = KRwLock::new();
        assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let past = timespec {
                    tv_sec: 1,
                    tv_nsec: 0,
                };
                assert_eq!(
                    l.wrlock(unsafe { How::until(libc::CLOCK_MONOTONIC, &past) }),
                    ETIMEDOUT
                );
                let bad = timespec {
                    tv_sec: 1,
                    tv_nsec: 1_000_000_000,
                };
                assert_eq!(
                    l.wrlock(unsafe { How::until(libc::CLOCK_REALTIME, &bad) }),
                    EINVAL
                );
                assert_eq!(l.rdlock(How::Try, ReadPolicy::Fair), 0);
                assert_eq!(l.unlock(), 0);
            });
        });
        assert_eq!(l.destroy(), EBUSY);
        assert_eq!(l.unlock(), 0);
        assert_eq!(l.destroy(), 0);
        assert_eq!(l.rdlock(How::Block, ReadPolicy::Fair), EINVAL);
    }
}

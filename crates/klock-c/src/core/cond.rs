//! [`KCond`]: klock's wait-morphing condvar with pthread's semantics.
//!
//! # Layout (24 bytes on 64-bit, align 8; all zero = a condvar timing on CLOCK_REALTIME)
//!
//! ```text
//! offset  0  klock RawCondvar (wait list, mutex address, fallback count): 16 bytes
//! offset 16  clock of timed waits (CLOCK_REALTIME = 0, or CLOCK_MONOTONIC)
//! ```
//!
//! A wait comes in three steps so that a caller can sleep in C, where
//! pthread cancellation may unwind: [`KCond::begin`] (queue, unlock),
//! sleeping on [`KCond::sleep_word`] while it returns a word, and
//! [`KCond::end`] (re-lock; with `give_up`, also the timeout and
//! cancellation path). [`KCond::wait`] is the Rust composition. A mutex
//! that is not a [`KMutex`] (the interposer's glibc-served ones) waits with
//! [`KCond::begin_foreign`] and [`KCond::end_foreign`] instead, on klock's
//! fallback word, unlocking and re-locking its mutex itself.
//!
//! ```
//! use klock_c::core::{cond::KCond, how::How, mutex::{KMutex, Kind}, ETIMEDOUT};
//! let (m, cv): (KMutex, KCond) = (KMutex::new(Kind::Normal), KCond::new());
//! assert_eq!(m.lock(How::Block), 0);
//! assert_eq!(cv.wait(&m, Some(klock::internal::wait::now_ns() + 1_000_000)), ETIMEDOUT);
//! assert_eq!(m.unlock(), 0);
//! ```

use super::mutex::KMutex;
use super::time;
use klock::internal::condvar::RawCondvarInternals as _;
use klock::{RawCondvar, internal::condvar::WaitTicket};
use klock::{SpinOsq, SpinPolicy};
use libc::{CLOCK_REALTIME, EBUSY, EINVAL, ETIMEDOUT, c_int, clockid_t, timespec};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// A condvar with the clock of its timed waits (see the module docs).
#[repr(C)]
#[derive(Debug)]
pub struct KCond<S: SpinPolicy = SpinOsq> {
    raw: RawCondvar<S>,
    clock: AtomicI32,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<KCond>() == 24);

/// A wait in progress between [`KCond::begin`] and [`KCond::end`]: plain
/// data, at most 32 bytes, which the C side keeps in its own frame.
#[derive(Debug)]
#[must_use = "a begun wait must be ended (end re-locks the mutex)"]
pub struct Wait {
    ticket: WaitTicket,
    depth: u32,
}

const _: () = assert!(std::mem::size_of::<Wait>() <= 32);
const _: () = assert!(std::mem::align_of::<Wait>() <= 8);

impl<S: SpinPolicy> Default for KCond<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: SpinPolicy> KCond<S> {
    /// A condvar whose timed waits use CLOCK_REALTIME.
    pub const fn new() -> Self {
        KCond {
            raw: RawCondvar::new(),
            clock: AtomicI32::new(CLOCK_REALTIME),
        }
    }

    /// A condvar whose timed waits use `clock`, or EINVAL for a clock other
    /// than CLOCK_REALTIME and CLOCK_MONOTONIC.
    pub fn with_clock(clock: clockid_t) -> Result<Self, c_int> {
        if !time::valid_clock(clock) {
            return Err(EINVAL);
        }
        let c = Self::new();
        // Relaxed: not shared yet.
        c.clock.store(clock, Ordering::Relaxed);
        Ok(c)
    }

    /// The clock of [`timedwait`](Self::timedwait).
    pub fn clock(&self) -> clockid_t {
        // Relaxed: written at init, before the condvar is shared.
        self.clock.load(Ordering::Relaxed)
    }

    /// Wake one waiter (it runs when the mutex is released to it).
    pub fn signal(&self) -> c_int {
        self.raw.notify_one();
        0
    }

    /// Wake all waiters. Destroying the condvar right after is safe: the
    /// woken waiters no longer touch it.
    pub fn broadcast(&self) -> c_int {
        self.raw.notify_all();
        0
    }

    /// Destroy: EBUSY while threads wait on it.
    pub fn destroy(&self) -> c_int {
        if self.raw.has_waiters() { EBUSY } else { 0 }
    }

    /// Wait (with a klock deadline, or none): unlock `m`, wait for a
    /// signal, re-lock. EPERM if the caller does not hold `m`; ETIMEDOUT
    /// when the deadline passed (the mutex is re-locked either way). A
    /// recursive mutex is released and restored whole.
    pub fn wait(&self, m: &KMutex<S>, deadline: Option<u64>) -> c_int {
        let (mut token, depth) = match m.take_for_wait() {
            Ok(x) => x,
            Err(e) => return e,
        };
        // SAFETY: take_for_wait checked that we hold `m` under `token`; a
        // refused wait leaves it so.
        let r = unsafe { self.raw.try_wait_until_ns(m.raw(), &mut token, deadline) };
        m.restore_after_wait(token, depth);
        match r {
            Some(true) => ETIMEDOUT,
            Some(false) => 0,
            None => second_mutex(),
        }
    }

    /// [`wait`](Self::wait) until `abstime` on `clock` (EINVAL for a bad
    /// time or clock, before anything is released).
    ///
    /// # Safety
    ///
    /// `abstime` is null or points to a readable `timespec`.
    pub unsafe fn clockwait(
        &self,
        m: &KMutex<S>,
        clock: clockid_t,
        abstime: *const timespec,
    ) -> c_int {
        // SAFETY: caller's contract.
        match unsafe { time::deadline(clock, abstime) } {
            Ok(d) => self.wait(m, Some(d)),
            Err(e) => e,
        }
    }

    /// [`clockwait`](Self::clockwait) on the condvar's own clock.
    ///
    /// # Safety
    ///
    /// As for `clockwait`.
    pub unsafe fn timedwait(&self, m: &KMutex<S>, abstime: *const timespec) -> c_int {
        // SAFETY: forwarded.
        unsafe { self.clockwait(m, self.clock(), abstime) }
    }

    /// Step 1: queue, then unlock `m` (EPERM if the caller does not hold
    /// it; nothing changes then).
    pub fn begin(&self, m: &KMutex<S>) -> Result<Wait, c_int> {
        let (token, depth) = m.take_for_wait()?;
        // SAFETY: take_for_wait checked that we hold `m` under `token`.
        match unsafe { self.raw.try_begin_wait(m.raw(), token) } {
            Ok(ticket) => Ok(Wait { ticket, depth }),
            Err(token) => {
                // Refused before unlocking: still held by us, with `token`.
                m.restore_after_wait(token, depth);
                Err(second_mutex())
            }
        }
    }

    /// Step 2: the futex word and value to sleep on, or `None` once a
    /// signal has reached the waiter (at once for a fallback waiter that could
    /// not register: its wake-up is spurious).
    pub fn sleep_word(&self, w: &Wait) -> Option<(&AtomicU32, u32)> {
        self.raw.sleep_word(&w.ticket)
    }

    /// Step 1 of a wait with a mutex that is not a [`KMutex`] (the
    /// interposer's glibc-served mutexes): register on the condvar. The
    /// caller holds its mutex and unlocks it right after (a signal sent
    /// after that unlock finds this waiter); if that unlock fails, it calls
    /// [`end_foreign`](Self::end_foreign) with `give_up` at once. The
    /// sleep is step 2 as for a klock mutex. Wake-ups may be spurious.
    ///
    /// ```
    /// use klock_c::core::{cond::KCond, ETIMEDOUT};
    /// let cv: KCond = KCond::new();
    /// let w = cv.begin_foreign(); // (the caller now unlocks its mutex)
    /// assert!(cv.sleep_word(&w).is_some());
    /// assert_eq!(cv.end_foreign(w, true), ETIMEDOUT); // (then re-locks it)
    /// assert_eq!(cv.destroy(), 0);
    /// ```
    pub fn begin_foreign(&self) -> Wait {
        Wait {
            ticket: self.raw.begin_wait_foreign(),
            depth: 0,
        }
    }

    /// Step 3 of a wait begun with [`begin_foreign`](Self::begin_foreign):
    /// leave the condvar; the caller re-locks its mutex after. ETIMEDOUT if
    /// `give_up` took the waiter off before a signal reached it, else 0.
    /// Without `give_up` it sleeps until a signal first.
    pub fn end_foreign(&self, w: Wait, give_up: bool) -> c_int {
        if self.raw.end_wait_foreign(w.ticket, give_up) {
            ETIMEDOUT
        } else {
            0
        }
    }

    /// Step 3: re-lock `m` and restore its depth; ETIMEDOUT if `give_up`
    /// (deadline passed, or cancellation) took the waiter off the condvar
    /// before a signal reached it, else 0.
    ///
    /// # Safety
    ///
    /// `w` came from [`begin`](Self::begin) on this condvar and `m`, on this
    /// thread, and the thread took no klock queue node since (nothing but
    /// the sleep ran in between).
    pub unsafe fn end(&self, m: &KMutex<S>, w: Wait, give_up: bool) -> c_int {
        // SAFETY: forwarded.
        let (token, timed_out) = unsafe { self.raw.end_wait(m.raw(), w.ticket, give_up) };
        m.restore_after_wait(token, w.depth);
        if timed_out { ETIMEDOUT } else { 0 }
    }
}

/// The error of a wait that klock refused because other threads wait on the
/// condvar with a different mutex: EINVAL (POSIX leaves the misuse
/// undefined and allows EINVAL). klock refuses it before unlocking anything
/// (the mutex stays held, nothing is queued). The first refusal in the
/// process also prints one line (a program that ignores the error would
/// otherwise spin on its wait loop without a clue).
#[cold]
fn second_mutex() -> c_int {
    static WARNED: AtomicBool = AtomicBool::new(false);
    super::warn_once(
        &WARNED,
        b"klock: a condvar was waited on with two different mutexes at once; \
          the second wait returns EINVAL (printed once)\n",
    );
    EINVAL
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::how::How;
    use crate::core::mutex::Kind;
    use libc::EPERM;

    #[test]
    fn stepwise_wait_is_woken_and_relocks_recursive_depth() {
        let m: KMutex = KMutex::new(Kind::Recursive);
        let cv: KCond = KCond::new();
        assert_eq!(m.lock(How::Block), 0);
        assert_eq!(m.lock(How::Block), 0);
        std::thread::scope(|s| {
            let w = cv.begin(&m).unwrap();
            s.spawn(|| {
                assert_eq!(m.lock(How::Block), 0);
                assert_eq!(cv.signal(), 0);
                assert_eq!(m.unlock(), 0);
            });
            while let Some((word, v)) = cv.sleep_word(&w) {
                klock::internal::wait::futex_wait(word, v, None);
            }
            assert_eq!(unsafe { cv.end(&m, w, false) }, 0);
        });
        assert_eq!(m.unlock(), 0);
        assert_eq!(m.unlock(), 0);
        assert_eq!(m.unlock(), EPERM);
    }

    #[test]
    fn a_second_mutex_is_einval_and_leaves_it_held() {
        let m1: KMutex = KMutex::new(Kind::Normal);
        let m2: KMutex = KMutex::new(Kind::Recursive);
        let cv: KCond = KCond::new();
        std::thread::scope(|s| {
            assert_eq!(m1.lock(How::Block), 0);
            let waiter = s.spawn(|| {
                assert_eq!(m1.lock(How::Block), 0);
                let r = cv.wait(&m1, Some(klock::internal::wait::now_ns() + 10_000_000_000));
                assert_eq!(m1.unlock(), 0);
                r
            });
            assert_eq!(m1.unlock(), 0);
            // The waiter released m1 only once it was queued on cv.
            while !cv.raw.has_waiters() {
                std::thread::yield_now();
            }
            assert_eq!(m2.lock(How::Block), 0);
            assert_eq!(m2.lock(How::Block), 0);
            assert_eq!(cv.wait(&m2, None), EINVAL);
            assert_eq!(cv.begin(&m2).err(), Some(EINVAL));
            assert_eq!(m2.unlock(), 0);
            assert_eq!(m2.unlock(), 0, "the recursion depth was restored");
            assert_eq!(m2.unlock(), EPERM);
            assert_eq!(m1.lock(How::Block), 0);
            assert_eq!(cv.signal(), 0);
            assert_eq!(m1.unlock(), 0);
            assert_eq!(waiter.join().unwrap(), 0);
        });
    }

    #[test]
    fn foreign_wait_is_signalled() {
        // The foreign mutex: a std one, unlocked and re-locked by hand.
        let m = std::sync::Mutex::new(0);
        let cv: KCond = KCond::new();
        std::thread::scope(|s| {
            let g = m.lock().unwrap();
            let w = cv.begin_foreign();
            drop(g);
            assert_eq!(cv.destroy(), EBUSY);
            s.spawn(|| {
                *m.lock().unwrap() = 1;
                assert_eq!(cv.signal(), 0);
            });
            while let Some((word, v)) = cv.sleep_word(&w) {
                klock::internal::wait::futex_wait(word, v, None);
            }
            assert_eq!(cv.end_foreign(w, false), 0);
            assert_eq!(*m.lock().unwrap(), 1);
        });
        assert_eq!(cv.destroy(), 0);
    }

    #[test]
    fn wait_without_the_mutex_is_eperm_and_destroy_busy() {
        let m: KMutex = KMutex::new(Kind::ErrorCheck);
        let cv: KCond = KCond::new();
        assert_eq!(cv.wait(&m, None), EPERM);
        assert_eq!(m.lock(How::Block), 0);
        let w = cv.begin(&m).unwrap();
        assert_eq!(cv.destroy(), EBUSY);
        assert_eq!(unsafe { cv.end(&m, w, true) }, ETIMEDOUT);
        assert_eq!(cv.destroy(), 0);
        assert_eq!(m.unlock(), 0);
        assert!(KCond::<SpinOsq>::with_clock(libc::CLOCK_PROCESS_CPUTIME_ID).is_err());
    }
}

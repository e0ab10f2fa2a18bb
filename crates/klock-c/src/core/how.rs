//! [`How`]: how an acquisition waits, the one vocabulary of every C-layer
//! acquisition. The `klock_*` functions and the interposer's `pthread_*`
//! ones name it once (`How::Block`, `How::Try`, [`How::until`]) and pass it
//! unchanged down to the cores' entry points
//! ([`KMutex::acquire`](super::mutex::KMutex::acquire),
//! [`KRwLock::read`](super::rwlock::KRwLock::read),
//! [`KRwLock::write`](super::rwlock::KRwLock::write)), which answer it with
//! [`How::take`]: the one place a `How` becomes klock calls and errno values.

use super::time;
use libc::{EBUSY, EDEADLK, ETIMEDOUT, c_int, clockid_t, timespec};

/// How an acquisition waits.
#[derive(Clone, Copy, Debug)]
pub enum How {
    /// As long as it takes (`lock`, `rdlock`, `wrlock`).
    Block,
    /// Not at all: EBUSY instead (`trylock`, `tryrdlock`, `trywrlock`).
    Try,
    /// Until an absolute time ([`How::until`]; `timedlock`, `clocklock`,
    /// ...): ETIMEDOUT when it passes.
    Until(Abstime),
}

/// pthread's `abstime` on a clock, as the program gave it: checked (EINVAL
/// for a null pointer, a bad `tv_nsec` or clock) only when the call would
/// block, as glibc does. Packed to 4-byte alignment so that a [`How`] is
/// 16 bytes (its tag beside the clock), as the per-file copies it replaced
/// were: the `klock_*` functions' fast paths compile as before.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub struct Abstime {
    clock: clockid_t,
    abstime: *const timespec,
}

const _: () = assert!(std::mem::size_of::<How>() == 16);

impl How {
    /// Until `abstime` on `clock`.
    ///
    /// # Safety
    ///
    /// `abstime` is null or points to a `timespec` that stays readable while
    /// the `How` is used (the call it is made for).
    ///
    /// ```
    /// use klock_c::core::{how::How, mutex::{KMutex, Kind}, EINVAL};
    /// let m: KMutex = KMutex::new(Kind::ErrorCheck);
    /// let bad = libc::timespec { tv_sec: 0, tv_nsec: -1 };
    /// // SAFETY: `bad` outlives the calls.
    /// let how = unsafe { How::until(libc::CLOCK_REALTIME, &bad) };
    /// assert_eq!(m.acquire(how), 0); // free: the time is not looked at
    /// assert_eq!(m.acquire(how), libc::EDEADLK);
    /// # assert_eq!(m.unlock(), 0);
    /// ```
    pub const unsafe fn until(clock: clockid_t, abstime: *const timespec) -> How {
        How::Until(Abstime { clock, abstime })
    }

    /// Is this a try (the statistics count a try's result as uncontended)?
    pub fn is_try(self) -> bool {
        matches!(self, How::Try)
    }

    /// The answer to a holder asking for its own lock again (an
    /// error-checking mutex, an rwlock's write-holder): EBUSY for a try,
    /// EDEADLK for a wait, as glibc answers.
    ///
    /// ```
    /// use klock_c::core::{how::How, EBUSY, EDEADLK};
    /// assert_eq!((How::Try.own_lock_error(), How::Block.own_lock_error()), (EBUSY, EDEADLK));
    /// ```
    pub fn own_lock_error(self) -> c_int {
        if self.is_try() { EBUSY } else { EDEADLK }
    }

    /// Acquire the way `self` says, for a caller whose uncontended try has
    /// already failed: a try asks `try_` (EBUSY if it says no); a blocking
    /// acquisition calls `block` (klock's blocking call, which asks its own
    /// fast question first); a timed one asks `try_`, then checks the time
    /// (EINVAL: only now, when it would block) and calls `until` with the
    /// klock deadline (ETIMEDOUT if it says no).
    ///
    /// ```
    /// use klock_c::core::{how::How, EBUSY, ETIMEDOUT};
    /// let past = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    /// // SAFETY: `past` outlives the call.
    /// let until = unsafe { How::until(libc::CLOCK_MONOTONIC, &past) };
    /// assert_eq!(How::Try.take(|| None, || 1, |_| Some(2)), Err(EBUSY));
    /// assert_eq!(How::Block.take(|| None, || 1, |_| Some(2)), Ok(1));
    /// assert_eq!(until.take(|| None::<u8>, || 1, |_| None), Err(ETIMEDOUT));
    /// ```
    #[inline]
    pub fn take<T>(
        self,
        try_: impl FnOnce() -> Option<T>,
        block: impl FnOnce() -> T,
        until: impl FnOnce(u64) -> Option<T>,
    ) -> Result<T, c_int> {
        match self {
            How::Block => Ok(block()),
            How::Try => try_().ok_or(EBUSY),
            How::Until(t) => match try_() {
                Some(got) => Ok(got),
                None => until(t.deadline()?).ok_or(ETIMEDOUT),
            },
        }
    }
}

impl Abstime {
    /// The klock deadline ([`time::deadline`]), or EINVAL.
    fn deadline(self) -> Result<u64, c_int> {
        // SAFETY: `How::until`'s contract: `abstime` is null or readable
        // for the call this `Abstime` is used in.
        unsafe { time::deadline(self.clock, self.abstime) }
    }
}

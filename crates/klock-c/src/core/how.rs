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

    /// Acquire `lock` the way `self` says, for a caller whose uncontended
    /// try has already failed: a try asks `try_` (EBUSY if it says no); a
    /// blocking acquisition calls `block` (klock's blocking call, which asks
    /// its own fast question first); a timed one asks `try_`, then checks
    /// the time (EINVAL: only now, when it would block) and calls `until`
    /// with the klock deadline (ETIMEDOUT if it says no). The three forms
    /// are klock's own functions (fn items, statically dispatched), so a
    /// contended call goes from the caller's file through this one straight
    /// into klock's, never back into the caller's; [`untried`] stands for a
    /// try the caller has already asked.
    ///
    /// ```
    /// use klock_c::core::{how::{How, untried}, EBUSY, ETIMEDOUT};
    /// let past = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    /// // SAFETY: `past` outlives the call.
    /// let until = unsafe { How::until(libc::CLOCK_MONOTONIC, &past) };
    /// let m = klock::RawMutex::<klock::SpinOff>::new();
    /// let held = m.lock();
    /// let never = |_: &klock::RawMutex<klock::SpinOff>, _: u64| None;
    /// assert_eq!(How::Try.take(&m, klock::RawMutex::try_lock, klock::RawMutex::lock, never).err(), Some(EBUSY));
    /// assert_eq!(until.take(&m, untried, klock::RawMutex::lock, never).err(), Some(ETIMEDOUT));
    /// unsafe { m.unlock(held) };
    /// assert!(How::Block.take(&m, untried, klock::RawMutex::lock, never).is_ok());
    /// ```
    #[inline]
    pub fn take<L: ?Sized, T: Got, U: Got<Out = T::Out>>(
        self,
        lock: &L,
        try_: impl FnOnce(&L) -> T,
        block: impl FnOnce(&L) -> T::Out,
        until: impl FnOnce(&L, u64) -> U,
    ) -> Result<T::Out, c_int> {
        match self {
            How::Block => Ok(block(lock)),
            How::Try => try_(lock).got().ok_or(EBUSY),
            How::Until(t) => match try_(lock).got() {
                Some(got) => Ok(got),
                None => until(lock, t.deadline()?).got().ok_or(ETIMEDOUT),
            },
        }
    }
}

/// What a klock acquisition form returns, as "taken, with this guard" or
/// not: `bool` (a read lock: no guard) or `Option<guard>`.
pub trait Got {
    /// The guard of a taken lock (`()` for a read lock).
    type Out;
    /// `Some(guard)` if the lock was taken.
    fn got(self) -> Option<Self::Out>;
}

impl Got for bool {
    type Out = ();
    #[inline(always)]
    fn got(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Got for Option<T> {
    type Out = T;
    #[inline(always)]
    fn got(self) -> Option<T> {
        self
    }
}

/// The try form of a caller that has already asked klock's uncontended
/// question (its fast path failed): "no" without touching the lock.
#[inline(always)]
pub fn untried<L: ?Sized, T>(_: &L) -> Option<T> {
    None
}

impl Abstime {
    /// The klock deadline ([`time::deadline`]), or EINVAL.
    fn deadline(self) -> Result<u64, c_int> {
        // SAFETY: `How::until`'s contract: `abstime` is null or readable
        // for the call this `Abstime` is used in.
        unsafe { time::deadline(self.clock, self.abstime) }
    }
}

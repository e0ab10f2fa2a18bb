//! [`Condvar`] and [`WaitTimeoutResult`]: parking_lot's condition variable
//! API over klock's condvar (wait morphing onto klock's mutex).

use crate::deadlock::{self, Hold};
use crate::k::RawCondvar;
use crate::mutex::MutexGuard;
use crate::raw_mutex::RawMutex;
use lock_api05::RawCondvarTimed as _;
use std::time::{Duration, Instant};

/// Whether a timed wait on a [`Condvar`] returned because its time ran out.
///
/// ```
/// let m = parking_lot::Mutex::new(());
/// let cv = parking_lot::Condvar::new();
/// let mut g = m.lock();
/// let r: parking_lot::WaitTimeoutResult = cv.wait_for(&mut g, std::time::Duration::from_millis(1));
/// assert!(r.timed_out());
/// ```
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// Did the wait time out (rather than being notified)?
    ///
    /// ```
    /// let m = parking_lot::Mutex::new(());
    /// let cv = parking_lot::Condvar::new();
    /// let r = cv.wait_until(&mut m.lock(), std::time::Instant::now());
    /// assert!(r.timed_out());
    /// ```
    #[inline]
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// A condition variable for [`Mutex`](crate::Mutex) guards (parking_lot's
/// API over klock's `RawCondvar`, 16 bytes).
///
/// A notify moves waiters onto the mutex's wait list (wait morphing): the
/// mutex's unlocks then wake them one at a time, so `notify_all` on many
/// waiters wakes one thread, not a herd (parking_lot also requeues).
///
/// # Differences from parking_lot
///
/// * **Return values.** [`notify_one`](Self::notify_one) returns whether it
///   moved a waiter and [`notify_all`](Self::notify_all) how many, exactly,
///   as parking_lot's do, except while a *fallback* waiter exists: a thread
///   that could not get one of klock's per-thread queue nodes (more than
///   `KLOCK_NODE_SLOTS` threads waiting at once, or waits nested more than
///   4 deep) waits on a futex word instead; every notify wakes all such
///   waiters and, while any exists, `notify_one` returns `false` and
///   `notify_all` 0.
/// * **Spurious wake-ups.** A queued waiter returns only when notified or
///   timed out, as in parking_lot; a fallback waiter may wake spuriously
///   (use [`wait_while`](Self::wait_while) if that matters).
/// * One condvar serves one mutex at a time: waiting with a second mutex
///   while threads wait with the first panics, as in parking_lot (klock
///   checks it before unlocking anything).
/// * Timeouts: klock measures them on `CLOCK_MONOTONIC`, as `Instant` does.
///
/// ```
/// use parking_lot::{Condvar, Mutex};
/// use std::sync::Arc;
/// let pair = Arc::new((Mutex::new(0), Condvar::new()));
/// let p2 = pair.clone();
/// let t = std::thread::spawn(move || {
///     *p2.0.lock() = 1;
///     p2.1.notify_all();
/// });
/// let mut g = pair.0.lock();
/// while *g == 0 {
///     pair.1.wait(&mut g);
/// }
/// drop(g);
/// t.join().unwrap();
/// ```
pub struct Condvar {
    raw: RawCondvar,
}

impl Condvar {
    /// A condition variable with no waiters (a `const fn`).
    ///
    /// ```
    /// static CV: parking_lot::Condvar = parking_lot::Condvar::new();
    /// assert!(!CV.notify_one());
    /// ```
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            raw: RawCondvar::new(),
        }
    }

    /// Wake one waiter (the oldest): it returns from its wait once it has
    /// the mutex. Returns whether there was a waiter (see the type's docs
    /// for the fallback case).
    ///
    /// ```
    /// assert!(!parking_lot::Condvar::new().notify_one());
    /// ```
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.raw.notify_one()
    }

    /// Wake every waiter; returns how many (see the type's docs for the
    /// fallback case).
    ///
    /// ```
    /// assert_eq!(parking_lot::Condvar::new().notify_all(), 0);
    /// ```
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.raw.notify_all()
    }

    /// Release the guard's mutex, wait for a notify, lock the mutex again.
    ///
    /// # Panics
    ///
    /// If other threads wait on this condvar with a different mutex.
    ///
    /// ```
    /// use parking_lot::{Condvar, Mutex};
    /// let (m, cv) = (Mutex::new(false), Condvar::new());
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         *m.lock() = true;
    ///         cv.notify_one();
    ///     });
    ///     let mut g = m.lock();
    ///     while !*g {
    ///         cv.wait(&mut g);
    ///     }
    /// });
    /// ```
    #[inline]
    pub fn wait<T: ?Sized>(&self, mutex_guard: &mut MutexGuard<'_, T>) {
        self.wait_internal(mutex_guard, None);
    }

    /// [`wait`](Self::wait) until `timeout` at most (the mutex is locked
    /// again either way).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// ```
    /// let (m, cv) = (parking_lot::Mutex::new(()), parking_lot::Condvar::new());
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2);
    /// assert!(cv.wait_until(&mut m.lock(), deadline).timed_out());
    /// ```
    #[inline]
    pub fn wait_until<T: ?Sized>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        timeout: Instant,
    ) -> WaitTimeoutResult {
        self.wait_internal(mutex_guard, Some(timeout))
    }

    /// [`wait`](Self::wait) for `timeout` at most. A timeout too large for
    /// an `Instant` waits without a deadline.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// ```
    /// let (m, cv) = (parking_lot::Mutex::new(()), parking_lot::Condvar::new());
    /// assert!(cv.wait_for(&mut m.lock(), std::time::Duration::from_millis(2)).timed_out());
    /// ```
    #[inline]
    pub fn wait_for<T: ?Sized>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        self.wait_internal(mutex_guard, Instant::now().checked_add(timeout))
    }

    /// Wait while `condition` returns `true` (checked first, with the mutex
    /// held, and after every wake-up).
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// ```
    /// use parking_lot::{Condvar, Mutex};
    /// let (m, cv) = (Mutex::new(0), Condvar::new());
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         for _ in 0..3 {
    ///             *m.lock() += 1;
    ///             cv.notify_all();
    ///         }
    ///     });
    ///     let mut g = m.lock();
    ///     cv.wait_while(&mut g, |n| *n < 3);
    ///     assert_eq!(*g, 3);
    /// });
    /// ```
    #[inline]
    pub fn wait_while<T, F>(&self, mutex_guard: &mut MutexGuard<'_, T>, condition: F)
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_internal(mutex_guard, condition, None);
    }

    /// [`wait_while`](Self::wait_while) until `timeout` at most. Returns
    /// timed out if the time ran out while the condition still held.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// ```
    /// let (m, cv) = (parking_lot::Mutex::new(0), parking_lot::Condvar::new());
    /// let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2);
    /// let mut g = m.lock();
    /// assert!(cv.wait_while_until(&mut g, |n| *n == 0, deadline).timed_out());
    /// assert!(!cv.wait_while_until(&mut g, |n| *n != 0, deadline).timed_out());
    /// ```
    #[inline]
    pub fn wait_while_until<T, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_internal(mutex_guard, condition, Some(timeout))
    }

    /// [`wait_while`](Self::wait_while) for `timeout` at most.
    ///
    /// # Panics
    ///
    /// As [`wait`](Self::wait).
    ///
    /// ```
    /// let (m, cv) = (parking_lot::Mutex::new(0), parking_lot::Condvar::new());
    /// let r = cv.wait_while_for(&mut m.lock(), |n| *n == 0, std::time::Duration::from_millis(2));
    /// assert!(r.timed_out());
    /// ```
    #[inline]
    pub fn wait_while_for<T: ?Sized, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_internal(mutex_guard, condition, Instant::now().checked_add(timeout))
    }

    fn wait_while_internal<T, F>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        mut condition: F,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *mutex_guard) {
            if self.wait_internal(mutex_guard, deadline).timed_out() {
                return WaitTimeoutResult(true);
            }
        }
        WaitTimeoutResult(false)
    }

    /// One wait on the guard's mutex (`None`: no deadline).
    fn wait_internal<T: ?Sized>(
        &self,
        mutex_guard: &mut MutexGuard<'_, T>,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        // SAFETY: `raw` is only used to hand the held mutex to the condvar,
        // which unlocks and re-locks it; the guard is borrowed mutably for
        // the whole wait, so nobody else uses it meanwhile.
        let m: &RawMutex = unsafe { lock_api::MutexGuard::mutex(mutex_guard).raw() };
        // SAFETY: the guard holds the mutex: the token is its acquisition's.
        let mut token = unsafe { m.take_token() };
        deadlock::released(m.key(), Hold::Exclusive);
        let timed_out = match deadline {
            // SAFETY: we hold `m.inner` with `token`; the condvar re-locks it
            // and replaces `token` before returning. (Both arms are klock's
            // lock_api 0.5 methods, which tell lockdep of the release and
            // the retake.)
            None => {
                unsafe { lock_api05::RawCondvar::wait(&self.raw, &m.inner, &mut token) };
                false
            }
            // SAFETY: as above.
            Some(d) => unsafe { self.raw.wait_until(&m.inner, &mut token, &d) },
        };
        // SAFETY: the condvar re-locked the mutex for this thread: `token`.
        unsafe { m.park_token(token) };
        deadlock::acquired(m.key(), None, Hold::Exclusive);
        WaitTimeoutResult(timed_out)
    }
}

impl Default for Condvar {
    /// [`Condvar::new`].
    #[inline]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad("Condvar { .. }")
    }
}

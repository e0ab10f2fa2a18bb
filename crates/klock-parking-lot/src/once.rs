//! [`Once`] and [`OnceState`]: one-time initialisation, 1 byte per `Once`.
//!
//! The state byte holds DONE, POISON, RUNNING and WAITERS. Threads that
//! find a `Once` RUNNING sleep on one process-wide klock mutex and condvar
//! (`SLEEP`), shared by every `Once`: initialisations are rare and short,
//! so sharing costs at most a few needless wake-ups, and it keeps the
//! `Once` itself one byte, as parking_lot's (which parks on its global
//! hash table).

use std::sync::atomic::{AtomicU8, Ordering};

/// The closure has completed; nothing else is ever set with it.
const DONE: u8 = 1;
/// A closure panicked (kept while a forced call runs).
const POISON: u8 = 2;
/// A thread is running a closure.
const RUNNING: u8 = 4;
/// A thread sleeps waiting for the running closure.
const WAITERS: u8 = 8;

/// Where threads wait for a running closure (every `Once` shares it).
static SLEEP: (klock::Mutex<()>, klock::Condvar) = (klock::Mutex::new(()), klock::Condvar::new());

/// The state of a [`Once`].
///
/// ```
/// let once = parking_lot::Once::new();
/// assert_eq!(once.state(), parking_lot::OnceState::New);
/// once.call_once(|| {});
/// assert!(once.state().done());
/// assert!(!once.state().poisoned());
/// ```
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum OnceState {
    /// No closure has run yet.
    New,
    /// A closure ran and panicked.
    Poisoned,
    /// A thread is running a closure.
    InProgress,
    /// A closure has completed.
    Done,
}

impl OnceState {
    /// Did a closure panic (and none complete since)?
    ///
    /// ```
    /// assert!(parking_lot::OnceState::Poisoned.poisoned());
    /// ```
    #[inline]
    pub fn poisoned(self) -> bool {
        self == OnceState::Poisoned
    }

    /// Has a closure completed?
    ///
    /// ```
    /// assert!(parking_lot::OnceState::Done.done());
    /// ```
    #[inline]
    pub fn done(self) -> bool {
        self == OnceState::Done
    }
}

/// Runs one closure once: parking_lot's `Once` (1 byte, `const fn new`,
/// need not be `'static`).
///
/// A call returns once some closure has completed, and everything that
/// closure wrote is visible after it. A panicking closure *poisons* the
/// `Once`: later [`call_once`](Self::call_once) calls panic, and
/// [`call_once_force`](Self::call_once_force) runs its closure (told the
/// state was [`OnceState::Poisoned`]) until one completes.
///
/// # Differences from parking_lot
///
/// Same semantics (poisoning included). Waiting threads sleep at once on
/// klock's mutex and condvar, without parking_lot's adaptive spinning.
///
/// ```
/// use parking_lot::Once;
/// static INIT: Once = Once::new();
/// static mut VAL: u32 = 0;
/// for _ in 0..2 {
///     // SAFETY: written once, under the Once, before any read.
///     INIT.call_once(|| unsafe { VAL += 1 });
/// }
/// assert_eq!(unsafe { VAL }, 1);
/// ```
pub struct Once(AtomicU8);

impl Once {
    /// A `Once` whose closure has not run (a `const fn`).
    ///
    /// ```
    /// static O: parking_lot::Once = parking_lot::Once::new();
    /// assert_eq!(O.state(), parking_lot::OnceState::New);
    /// ```
    #[inline]
    pub const fn new() -> Once {
        Once(AtomicU8::new(0))
    }

    /// The current state (a snapshot).
    ///
    /// ```
    /// let o = parking_lot::Once::new();
    /// let _ = std::panic::catch_unwind(|| o.call_once(|| panic!("boom")));
    /// assert_eq!(o.state(), parking_lot::OnceState::Poisoned);
    /// ```
    #[inline]
    pub fn state(&self) -> OnceState {
        // Acquire: a Done answer makes the closure's writes visible.
        let s = self.0.load(Ordering::Acquire);
        if s & DONE != 0 {
            OnceState::Done
        } else if s & RUNNING != 0 {
            OnceState::InProgress
        } else if s & POISON != 0 {
            OnceState::Poisoned
        } else {
            OnceState::New
        }
    }

    /// Run `f` if no closure has completed yet, else wait for the running
    /// one or return at once.
    ///
    /// # Panics
    ///
    /// If the `Once` is poisoned (a closure panicked), and when `f` panics
    /// (which poisons it).
    ///
    /// ```
    /// let o = parking_lot::Once::new();
    /// let mut n = 0;
    /// o.call_once(|| n += 1);
    /// o.call_once(|| n += 1);
    /// assert_eq!(n, 1);
    /// ```
    #[inline]
    pub fn call_once<F>(&self, f: F)
    where
        F: FnOnce(),
    {
        // Acquire pairs with the Release that set DONE.
        if self.0.load(Ordering::Acquire) == DONE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(false, &mut |_| {
            if let Some(f) = f.take() {
                f()
            }
        });
    }

    /// [`call_once`](Self::call_once) that also runs on a poisoned `Once`;
    /// `f` is told whether it was poisoned ([`OnceState::Poisoned`]) or new
    /// ([`OnceState::New`]).
    ///
    /// ```
    /// let o = parking_lot::Once::new();
    /// let _ = std::panic::catch_unwind(|| o.call_once(|| panic!("boom")));
    /// o.call_once_force(|s| assert!(s.poisoned()));
    /// assert!(o.state().done());
    /// ```
    #[inline]
    pub fn call_once_force<F>(&self, f: F)
    where
        F: FnOnce(OnceState),
    {
        // Acquire pairs with the Release that set DONE.
        if self.0.load(Ordering::Acquire) == DONE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(true, &mut |s| {
            if let Some(f) = f.take() {
                f(s)
            }
        });
    }

    /// Claim the closure's turn or wait for the running one; run `f` if we
    /// claimed it. Not generic, so it is compiled once.
    #[cold]
    fn call_once_slow(&self, force: bool, f: &mut dyn FnMut(OnceState)) {
        let (lock, cv) = &SLEEP;
        let mut g = lock.lock();
        let was = loop {
            // Acquire pairs with the Release that set DONE (the state only
            // changes under SLEEP's lock, but DONE also publishes the
            // closure's writes to lock-free readers).
            let s = self.0.load(Ordering::Acquire);
            if s & DONE != 0 {
                return;
            }
            if s & RUNNING != 0 {
                // Relaxed: under SLEEP's lock, which orders it.
                self.0.fetch_or(WAITERS, Ordering::Relaxed);
                cv.wait(&mut g);
                continue;
            }
            if s & POISON != 0 && !force {
                drop(g);
                panic!("Once instance has previously been poisoned");
            }
            // Relaxed: under SLEEP's lock.
            self.0.store(RUNNING | (s & POISON), Ordering::Relaxed);
            break s;
        };
        drop(g);
        // Poison on unwind; publish DONE otherwise.
        let finish = Finish { once: self };
        f(if was & POISON != 0 {
            OnceState::Poisoned
        } else {
            OnceState::New
        });
        std::mem::forget(finish);
        self.finish(DONE);
    }

    /// Leave RUNNING for `to` (DONE or POISON) and wake the waiters.
    fn finish(&self, to: u8) {
        let (lock, cv) = &SLEEP;
        let g = lock.lock();
        // Release: the closure's writes happen-before every Acquire load
        // that sees DONE.
        let s = self.0.swap(to, Ordering::Release);
        drop(g);
        if s & WAITERS != 0 {
            cv.notify_all();
        }
    }
}

/// Poisons the `Once` if the closure unwinds.
struct Finish<'a> {
    once: &'a Once,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.once.finish(POISON);
    }
}

impl Default for Once {
    /// [`Once::new`].
    #[inline]
    fn default() -> Once {
        Once::new()
    }
}

impl std::fmt::Debug for Once {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Once")
            .field("state", &self.state())
            .finish()
    }
}

//! The mutexes' guard token (`lock_api`'s `Guard`): the owner id an
//! acquisition wrote into the word. Shared by the kernel mutex and the
//! one-word mutexes (floor, barge, grant).

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
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// let m = klock::RawMutex::<klock::SpinOsq>::new();
    /// std::mem::forget(m.lock());
    /// unsafe { m.unlock(klock::MutexToken::for_holder(m.holder())) };
    /// assert!(!m.is_locked());
    /// ```
    pub(crate) unsafe fn for_holder(id: u32) -> MutexToken {
        MutexToken { id }
    }
}

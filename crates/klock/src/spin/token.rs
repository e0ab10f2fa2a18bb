//! The queued spinlocks' guard token: a deferred kick carried from lock to
//! unlock (the other spinlocks hand back [`Token::NONE`]).

/// Per-acquisition state of the queued spinlocks, carried by the lock_api guard
/// and handed back at unlock: the tail code of a successor that was made queue
/// head while asleep and must be woken when the lock is released ("kick at
/// unlock"), or none. The unlock sets that node's state **before** its release
/// and only wakes the address after it (INV-WAKE-ADDR, see `crate::node`).
/// Unlocking from another thread is fine (node memory is type-stable), so the
/// token is `Send`.
///
/// ```
/// let l = klock::RawQSpinLock::<klock::Pv>::new();
/// let t = l.lock();
/// assert!(t.is_none()); // uncontended: nothing to kick
/// unsafe { l.unlock(t) };
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use = "pass the token back to unlock"]
pub struct Token(pub(crate) u32);

impl Token {
    /// No deferred kick.
    ///
    /// ```
    /// assert!(klock::SpinToken::NONE.is_none());
    /// ```
    pub const NONE: Token = Token(0);

    /// `true` if there is no deferred kick.
    ///
    /// ```
    /// assert!(klock::SpinToken::NONE.is_none());
    /// ```
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

//! Runtime-selected spinlock (`KLOCK_SPIN=native|pv|pvbase|unfair|ticket|pvticket|tas`),
//! the kernel's boot-time choice (seed 001 patch 7, "nopvspin") for the C
//! library and the interposer.
//!
//! # Layout (8 bytes, all zero = unlocked)
//!
//! ```text
//! a: AtomicU32   queued/TAS variants: their lock word; ticket: `next`
//! b: AtomicU32   ticket: `serving`; unused otherwise
//! ```
//!
//! The variant is read once per process from [`crate::tune`] and never changes,
//! so every lock and unlock of one lock use the same variant. Each operation
//! costs one extra (well-predicted) branch on the variant: that is the price of
//! choosing at run time; Rust code that knows its variant uses the aliases.

use super::policy::{Native, Pv, PvBase, Unfair, WaitPolicy};
use super::qspinlock::RawQSpinLock;
use super::tas::RawTasLock;
use super::ticket::RawTicketLock;
use super::token::Token;
#[cfg(not(loom))]
use crate::ldhook;
#[cfg(not(loom))]
use crate::lockdep::Mode;
use crate::sync::atomic::AtomicU32;
use crate::tune::SpinKind;

/// A spinlock whose variant is chosen by `KLOCK_SPIN` at start-up.
///
/// ```
/// let l = klock::RawSpin::new();
/// let t = l.lock();
/// assert!(l.is_locked());
/// unsafe { l.unlock(t) };
/// assert_eq!(klock::RawSpin::kind(), klock::tune::get().spin_kind);
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct RawSpin {
    a: AtomicU32,
    b: AtomicU32,
}

impl Default for RawSpin {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $qe:expr, $t:ident => $te:expr, $s:ident => $se:expr) => {
        match RawSpin::kind() {
            SpinKind::Native => {
                let $q = $self.q::<Native>();
                $qe
            }
            SpinKind::Pv => {
                let $q = $self.q::<Pv>();
                $qe
            }
            SpinKind::PvBase => {
                let $q = $self.q::<PvBase>();
                $qe
            }
            SpinKind::Unfair => {
                let $q = $self.q::<Unfair>();
                $qe
            }
            SpinKind::Ticket => {
                let $t = $self.t::<Native>();
                $te
            }
            SpinKind::PvTicket => {
                let $t = $self.t::<Pv>();
                $te
            }
            SpinKind::Tas => {
                let $s = $self.s();
                $se
            }
        }
    };
}

impl RawSpin {
    /// An unlocked lock.
    ///
    /// ```
    /// static L: klock::RawSpin = klock::RawSpin::new();
    /// assert!(!L.is_locked());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawSpin {
            a: AtomicU32::new(0),
            b: AtomicU32::new(0),
        }
    }

    /// An unlocked lock (loom: not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        RawSpin {
            a: AtomicU32::new(0),
            b: AtomicU32::new(0),
        }
    }

    /// The process's variant (`KLOCK_SPIN`, default `unfair`).
    ///
    /// ```
    /// let _k: klock::tune::SpinKind = klock::RawSpin::kind();
    /// ```
    #[inline]
    pub fn kind() -> SpinKind {
        crate::tune::get().spin_kind
    }

    #[inline]
    fn q<P: WaitPolicy>(&self) -> &RawQSpinLock<P> {
        // SAFETY: RawQSpinLock<P> is repr(transparent) over one AtomicU32 (the
        // PhantomData is zero-sized), so `&self.a` is a valid reference to it
        // for the lifetime of `self`.
        unsafe { &*(&self.a as *const AtomicU32 as *const RawQSpinLock<P>) }
    }

    #[inline]
    fn t<P: WaitPolicy>(&self) -> &RawTicketLock<P> {
        // SAFETY: RawTicketLock<P> is repr(C) { next: AtomicU32, serving:
        // AtomicU32, PhantomData } and RawSpin is repr(C) { a, b }: same size,
        // alignment and field offsets.
        unsafe { &*(self as *const RawSpin as *const RawTicketLock<P>) }
    }

    #[inline]
    fn s(&self) -> &RawTasLock<Native> {
        // SAFETY: RawTasLock is repr(transparent) over one AtomicU32.
        unsafe { &*(&self.a as *const AtomicU32 as *const RawTasLock<Native>) }
    }

    /// Acquire the lock; pass the token to [`unlock`](Self::unlock).
    ///
    /// ```
    /// let l = klock::RawSpin::new();
    /// let t = l.lock();
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub fn lock(&self) -> Token {
        dispatch!(self, q => q.lock(), t => { t.lock(); Token::NONE }, s => { s.lock(); Token::NONE })
    }

    /// Acquire the lock if free.
    ///
    /// ```
    /// let l = klock::RawSpin::new();
    /// let t = l.try_lock().unwrap();
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<Token> {
        dispatch!(self, q => q.try_lock(), t => t.try_lock().then_some(Token::NONE),
                  s => s.try_lock().then_some(Token::NONE))
    }

    /// Is the lock held?
    ///
    /// ```
    /// assert!(!klock::RawSpin::new().is_locked());
    /// ```
    #[inline]
    pub fn is_locked(&self) -> bool {
        dispatch!(self, q => q.is_locked(), t => t.is_locked(), s => s.is_locked())
    }

    /// Release the lock.
    ///
    /// # Safety
    ///
    /// Held by the caller; `token` from the acquiring call.
    ///
    /// ```
    /// let l = klock::RawSpin::new();
    /// let t = l.lock();
    /// // SAFETY: held, with its token.
    /// unsafe { l.unlock(t) };
    /// ```
    #[inline]
    pub unsafe fn unlock(&self, token: Token) {
        // SAFETY (all arms): forwarded contract; the variant is fixed for the
        // process, so it is the one that acquired.
        dispatch!(self, q => unsafe { q.unlock(token) }, t => unsafe { t.unlock() },
                  s => unsafe { s.unlock() })
    }
}

#[cfg(not(loom))]
// SAFETY: forwards to the selected variant, which provides mutual exclusion.
unsafe impl lock_api::RawMutex for RawSpin {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type Guard = Token;

    #[inline]
    fn lock(&self) -> Token {
        ldhook::wait(
            ldhook::addr(self),
            Mode::Write,
            false,
            || RawSpin::lock(self),
            |_| true,
        )
    }

    #[inline]
    fn try_lock(&self) -> Option<Token> {
        let t = RawSpin::try_lock(self);
        ldhook::tried(ldhook::addr(self), Mode::Write, false, t.is_some());
        t
    }

    #[inline]
    unsafe fn unlock(&self, guard: Token) {
        ldhook::release(ldhook::addr(self));
        // SAFETY: forwarded contract.
        unsafe { RawSpin::unlock(self, guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawSpin::is_locked(self)
    }
}

/// Lockdep: the lock at this address ends; one made here later is a new
/// lock (only with the feature; `const INIT` is unaffected).
#[cfg(feature = "lockdep")]
impl Drop for RawSpin {
    fn drop(&mut self) {
        crate::ldhook::forget(crate::ldhook::addr(self));
    }
}

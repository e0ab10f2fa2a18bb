//! The rwsem's wait-list node and the list lock, shared by the waiter side
//! (`sleep.rs`) and the waker side (`wake.rs`): the typed view of a node
//! ([`RwWaiter`]: the list protocol through [`Waiter`], and in `ident` the
//! waiter's [`Class`] and whether it is a reader-preferring reader), a
//! contender's WLOCK (`wlock`, `wunlock`: `(x,f) -> (x,f|L) -> (x,f)`), and
//! taking a node off the list under WLOCK (`unlink`, which restarts the new
//! head's first-since clock). The list itself is
//! [`WaitList`](crate::waitlist::WaitList).

use super::raw::RawRwLock;
use super::word::Class;
use super::word::WLOCK;
use crate::node;
use crate::spin_policy::SpinPolicy;
use crate::sync::atomic::Ordering;
use crate::waitlist::{Waiter, lock_bit};

/// The rwsem's typed view of a wait-list node: the list protocol through
/// [`Waiter`], and `ident` holding the waiter's [`Class`].
#[derive(Clone, Copy)]
pub(crate) struct RwWaiter<'a> {
    pub(super) w: Waiter<'a>,
    n: &'a node::Node,
}

impl<'a> RwWaiter<'a> {
    #[inline]
    pub(super) fn of(n: &'a node::Node) -> Self {
        RwWaiter {
            w: Waiter::of(n),
            n,
        }
    }

    #[inline]
    pub(super) fn decode(t: u32) -> RwWaiter<'static> {
        RwWaiter::of(node::decode(t))
    }

    /// The waiter's class (under WLOCK).
    #[inline]
    pub(super) fn class(self) -> Class {
        // Relaxed: written under WLOCK before the node was linked.
        match self.n.ident.load(Ordering::Relaxed) & !PREF_WAITER {
            1 => Class::Reader,
            2 => Class::Writer,
            _ => Class::Upgrader,
        }
    }

    /// Is it a reader-preferring reader (under WLOCK)?
    #[inline]
    pub(super) fn is_pref(self) -> bool {
        // Relaxed: as in `class`.
        self.n.ident.load(Ordering::Relaxed) & PREF_WAITER != 0
    }

    /// `pref`: a reader-preferring reader (INV-PREFQ).
    #[inline]
    pub(super) fn set_class(self, c: Class, pref: bool) {
        let flag = if pref { PREF_WAITER } else { 0 };
        // Relaxed: under WLOCK (published by its release).
        self.n.ident.store(c as u32 | flag, Ordering::Relaxed);
    }
}

/// `ident` flag of a queued reader-preferring reader (beside its [`Class`]).
const PREF_WAITER: u32 = 1 << 8;

impl<S: SpinPolicy> RawRwLock<S> {
    /// Take WLOCK while holding nothing (a contender).
    #[inline]
    pub(super) fn wlock(&self) {
        lock_bit(&self.count, WLOCK);
    }

    /// Release WLOCK (a contender's; nothing else changes).
    /// Release pairs with the Acquire of the next `lock_bit(WLOCK)`.
    #[inline]
    pub(super) fn wunlock(&self) {
        self.count.fetch_and(!WLOCK, Ordering::Release);
    }

    /// Under WLOCK: take `t` off the list.
    #[inline]
    pub(super) fn unlink(&self, t: u32) {
        self.list.remove(t);
    }
}

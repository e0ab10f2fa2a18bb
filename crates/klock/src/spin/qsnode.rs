//! The queued spinlock's view of a queue node: its states ([`QsState`]),
//! grant values, and the typed accessors that store only those
//! ([`QsNode`]).

use crate::node::{Node, check_tag, tag};
use crate::sync::atomic::{AtomicU32, Ordering};

/// States of a queued-spinlock node's `state` word (also the futex word a
/// queued PV waiter sleeps on). Tagged [`crate::node::tag::QSPIN`].
///
/// ```text
///  Running --spin budget spent--> Halted --predecessor grants while asleep--> HeadHalted
///     ^                             |  \--kick-ahead--> Kicked --wakes, spins--> Running
///     +---------woken / granted-----+   HeadHalted --unlock kicks (before its release)--> Running
///  head: Running <--> HeadSleeping (sleeps on the lock word; informational)
/// ```
///
/// ```
/// use klock::internal::spin::QsState;
/// assert_eq!(QsState::from_u32(QsState::Halted as u32), Some(QsState::Halted));
/// assert_eq!(QsState::from_u32(0), None);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QsState {
    /// The waiter is running (spinning or working).
    Running = tag::QSPIN | 1,
    /// The waiter sleeps (or is about to) on its own `state` word, waiting to
    /// become queue head.
    Halted = tag::QSPIN | 2,
    /// Made queue head while asleep; the lock owner wakes it when it unlocks
    /// (kick at unlock), storing `Running` **before** its release.
    HeadHalted = tag::QSPIN | 3,
    /// Queue head sleeping on the lock word (informational: successors'
    /// wait-early sees that the head sleeps).
    HeadSleeping = tag::QSPIN | 4,
    /// Woken ahead of its turn by kick-ahead: spins its whole budget before it
    /// sleeps again.
    Kicked = tag::QSPIN | 5,
}

impl QsState {
    /// Decode a `state` value (`None` for another protocol's value or 0).
    ///
    /// ```
    /// assert!(klock::internal::spin::QsState::from_u32(klock::internal::node::tag::WAITER | 1).is_none());
    /// ```
    pub fn from_u32(v: u32) -> Option<QsState> {
        use QsState::*;
        [Running, Halted, HeadHalted, HeadSleeping, Kicked]
            .into_iter()
            .find(|s| *s as u32 == v)
    }
}

/// MCS grant values of a queued-spinlock node (`grant` word).
const QS_WAITING: u32 = tag::QSPIN | 0x100;
const QS_GRANTED: u32 = tag::QSPIN | 0x101;

/// The queued spinlock's typed view of a [`Node`]: names its words and stores
/// only [`QsState`] values and tagged grants.
#[derive(Clone, Copy)]
pub(crate) struct QsNode<'a>(&'a Node);

impl<'a> QsNode<'a> {
    #[inline]
    pub(crate) fn of(n: &'a Node) -> Self {
        QsNode(n)
    }

    /// Initialise our own node before publishing it (the tail exchange's
    /// Release orders these Relaxed stores).
    #[inline]
    pub(crate) fn init(self) {
        self.0.grant.store(QS_WAITING, Ordering::Relaxed);
        self.0.next.store(0, Ordering::Relaxed);
        self.0
            .state
            .store(QsState::Running as u32, Ordering::Relaxed);
    }

    /// Our own node: has the predecessor made us queue head? Acquire pairs
    /// with the Release in [`grant`](Self::grant) (ordering pair QS-3).
    #[inline]
    pub(crate) fn granted(self) -> bool {
        let g = self.0.grant.load(Ordering::Acquire);
        check_tag("grant", g, tag::QSPIN);
        g == QS_GRANTED
    }

    /// Make this (successor's, still queued) node queue head. Release pairs
    /// with [`granted`](Self::granted).
    #[inline]
    pub(crate) fn grant(self) {
        self.0.grant.store(QS_GRANTED, Ordering::Release);
    }

    /// A predecessor's state, read as a hint (wait-early): the predecessor may
    /// have moved on, so any value is possible and none is checked.
    #[inline]
    pub(crate) fn state_hint(self) -> Option<QsState> {
        // Relaxed: a hint.
        QsState::from_u32(self.0.state.load(Ordering::Relaxed))
    }

    /// Store our own node's state.
    #[inline]
    pub(crate) fn set_state(self, s: QsState) {
        // Relaxed: the Dekker pairs that need ordering add their own fences.
        self.0.state.store(s as u32, Ordering::Relaxed);
    }

    /// CAS a (possibly another thread's) state from `from` to `to`; fails
    /// harmlessly on a node that left this protocol (INV-WAKE-ADDR: tagged
    /// expected value). Relaxed: every user pairs it with a fence or a grant.
    #[inline]
    pub(crate) fn cas_state(self, from: QsState, to: QsState) -> Result<(), u32> {
        self.0
            .state
            .compare_exchange(from as u32, to as u32, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| ())
    }

    /// Successor's tail code (0 = none yet). Acquire pairs with the
    /// successor's Release [`link`](Self::link) (ordering pair QS-2).
    #[inline]
    pub(crate) fn next(self) -> u32 {
        self.0.next.load(Ordering::Acquire)
    }

    /// Link `tail` behind this (predecessor's) node. The predecessor cannot
    /// leave the queue before it has seen this link (it waits for it in
    /// hand_over), so the store is into a node still queued here.
    #[inline]
    pub(crate) fn link(self, tail: u32) {
        self.0.next.store(tail, Ordering::Release);
    }

    /// The futex word the waiter sleeps on.
    #[inline]
    pub(crate) fn futex(self) -> &'a AtomicU32 {
        &self.0.state
    }

    /// Set the state of a node whose thread sleeps (or is about to) on its
    /// state word, as a wake-up: the futex value check then fails, so the wake
    /// cannot be lost. The caller must still own the protocol step that keeps
    /// the node queued (it holds the lock, or has not released it yet):
    /// INV-WAKE-ADDR. Wake the word with [`wake`](Self::wake) afterwards, which
    /// may happen after the release.
    #[inline]
    pub(crate) fn set_for_wake(self, s: QsState) {
        #[cfg(feature = "stats")]
        self.0
            .kick_ns
            .store(crate::wait::now_ns(), std::sync::atomic::Ordering::Relaxed);
        // Release pairs with the waiter's Acquire re-load of its grant after
        // waking; the futex's own serialisation orders the wake after this store.
        self.0.state.store(s as u32, Ordering::Release);
    }

    /// Wake the node's futex word: only an address (INV-WAKE-ADDR), so it may
    /// follow the release.
    #[inline]
    pub(crate) fn wake(self) {
        crate::wait::futex_wake(&self.0.state, 1);
    }

    /// After a sleep on our own state word: account the kick-to-wake latency
    /// if a kick was recorded (feature `stats`).
    #[inline]
    pub(crate) fn note_wake(self) {
        #[cfg(feature = "stats")]
        {
            let k = self.0.kick_ns.swap(0, std::sync::atomic::Ordering::Relaxed);
            if k != 0 {
                crate::stat::inc(crate::stat::Event::PvKickWake);
                crate::stat::add(
                    crate::stat::Event::PvLatencyWakeNs,
                    crate::wait::now_ns().saturating_sub(k),
                );
            }
        }
    }
}

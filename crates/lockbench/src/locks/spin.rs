//! Plain spinlock baselines that never yield or sleep: `ttas`, `ticket`, `mcs`.
//!
//! They show what pure spinning costs once threads outnumber CPUs (a preempted holder or
//! next-in-line waiter stalls everyone for a scheduler tick).

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

use super::entry::LockEntry;
use crate::adapter::BenchLock;

/// Registry lines for the spinlock baselines.
pub fn entries() -> Vec<LockEntry> {
    vec![
        LockEntry::mutex::<Ttas>(
            "ttas",
            "test-and-test-and-set spinlock with pause (never sleeps)",
        ),
        LockEntry::mutex::<Ticket>("ticket", "ticket spinlock, FIFO (never sleeps)"),
        LockEntry::mutex::<Mcs>("mcs", "MCS queue spinlock, stack node (never sleeps)"),
    ]
}

/// Test-and-test-and-set: swap to take, spin on a plain load while held.
pub struct Ttas(AtomicBool);

impl BenchLock for Ttas {
    type Ctx = ();
    fn new() -> Self {
        Ttas(AtomicBool::new(false))
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // Acquire: pairs with the Release store in the unlock below (previous holder).
        while self.0.swap(true, Ordering::Acquire) {
            while self.0.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        let r = f();
        // Release: publishes the critical section to the next Acquire swap.
        self.0.store(false, Ordering::Release);
        r
    }
}

/// Ticket lock: take a number, wait until it is served.
#[repr(C)]
pub struct Ticket {
    next: AtomicU32,
    serving: AtomicU32,
}

impl BenchLock for Ticket {
    type Ctx = ();
    fn new() -> Self {
        Ticket {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
        }
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        // Relaxed: the ticket number orders nothing; `serving` carries the hand-off.
        let me = self.next.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with the Release store of `serving` by the previous holder.
        while self.serving.load(Ordering::Acquire) != me {
            std::hint::spin_loop();
        }
        let r = f();
        // Release: hands the critical section's writes to the next ticket holder.
        self.serving.store(me.wrapping_add(1), Ordering::Release);
        r
    }
}

/// MCS queue node, one per thread (lives on the worker's stack via `BenchLock::Ctx`).
#[repr(align(128))]
pub struct McsNode {
    next: AtomicPtr<McsNode>,
    locked: AtomicBool,
}

impl Default for McsNode {
    fn default() -> Self {
        McsNode {
            next: AtomicPtr::new(ptr::null_mut()),
            locked: AtomicBool::new(false),
        }
    }
}

/// MCS lock: waiters queue and each spins on its own node.
pub struct Mcs {
    tail: AtomicPtr<McsNode>,
}

impl BenchLock for Mcs {
    type Ctx = McsNode;
    fn new() -> Self {
        Mcs {
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }
    #[inline]
    fn with_lock<R>(&self, node: &McsNode, f: impl FnOnce() -> R) -> R {
        let me = node as *const McsNode as *mut McsNode;
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.locked.store(true, Ordering::Relaxed);
        // AcqRel: Release publishes our node's init to the successor-to-be that links
        // behind us; Acquire pairs with the previous tail owner's Release swap/store.
        let prev = self.tail.swap(me, Ordering::AcqRel);
        if !prev.is_null() {
            // SAFETY: `prev` is the node of a thread still inside `with_lock` (it cannot
            // leave before it sees our link or empties the tail), so it is alive.
            unsafe { (*prev).next.store(me, Ordering::Release) };
            // Acquire: pairs with the predecessor's Release store of `locked = false`.
            while node.locked.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
        }
        let r = f();
        let mut next = node.next.load(Ordering::Acquire);
        if next.is_null() {
            // Release: publishes the critical section to the next swap of `tail`.
            if self
                .tail
                .compare_exchange(me, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return r;
            }
            // A successor swapped the tail but has not linked yet: wait for the link.
            loop {
                // Acquire: pairs with the successor's Release store of our `next`.
                next = node.next.load(Ordering::Acquire);
                if !next.is_null() {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // SAFETY: `next` is a waiting successor's node; it spins until we clear `locked`.
        // Release: hands the critical section's writes to the successor.
        unsafe { (*next).locked.store(false, Ordering::Release) };
        r
    }
}

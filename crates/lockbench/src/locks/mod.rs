//! The competitor registry: every lock lockbench can run, by name.
//!
//! Adding a lock is one adapter (a [`BenchLock`](crate::adapter::BenchLock) impl, or
//! none at all for a `lock_api` lock) plus one line in the `entries()` of its file.
//! klock's locks go in [`klock::entries`] under names starting with `klock_`.

pub mod entry;
pub mod klock;
pub mod pthread;
pub mod spin;
pub mod stdlib;

use crate::adapter::{LockApiMutex, LockApiRwLock};
pub use entry::{LockEntry, LockKind};

/// All registered competitors, in report order.
pub fn registry() -> Vec<LockEntry> {
    let mut v = stdlib::entries();
    v.extend([
        LockEntry::mutex::<LockApiMutex<parking_lot::RawMutex>>(
            "parking_lot",
            "parking_lot 0.13 Mutex (eventually fair, spins then parks)",
        ),
        LockEntry::mutex::<LockApiMutex<parking_lot::RawFairMutex>>(
            "parking_lot_fair",
            "parking_lot 0.13 FairMutex (always hands off to the next waiter)",
        ),
        LockEntry::rwlock::<LockApiRwLock<parking_lot::RawRwLock>>(
            "parking_lot_rw",
            "parking_lot 0.13 RwLock (task-fair, writer-preferring)",
        ),
    ]);
    v.extend(pthread::entries());
    v.extend(spin::entries());
    v.extend(klock::entries());
    v
}

/// Looks a competitor up by exact name.
pub fn find(name: &str) -> Option<LockEntry> {
    registry().into_iter().find(|e| e.name == name)
}

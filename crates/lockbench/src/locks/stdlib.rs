//! `std::sync` competitors: `std` (Mutex) and `std_rw` (RwLock).

use super::entry::LockEntry;
use crate::adapter::BenchLock;

/// Registry lines for the standard library's locks.
pub fn entries() -> Vec<LockEntry> {
    vec![
        LockEntry::mutex::<StdMutex>("std", "std::sync::Mutex (futex, spins briefly)"),
        LockEntry::rwlock::<StdRwLock>("std_rw", "std::sync::RwLock (futex, writer-preferring)"),
    ]
}

/// `std::sync::Mutex<()>`; poisoning is ignored.
pub struct StdMutex(std::sync::Mutex<()>);

impl BenchLock for StdMutex {
    type Ctx = ();
    fn new() -> Self {
        StdMutex(std::sync::Mutex::new(()))
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        let _g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

/// `std::sync::RwLock<()>`; poisoning is ignored.
pub struct StdRwLock(std::sync::RwLock<()>);

impl BenchLock for StdRwLock {
    type Ctx = ();
    fn new() -> Self {
        StdRwLock(std::sync::RwLock::new(()))
    }
    #[inline]
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        let _g = self.0.write().unwrap_or_else(|e| e.into_inner());
        f()
    }
    #[inline]
    fn with_read<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        let _g = self.0.read().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

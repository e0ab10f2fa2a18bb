//! The internal lock of klock's own registries (node slots, thread ids,
//! stats): `RegLock`, the classic three-state futex mutex (0 free, 1
//! locked, 2 locked with possible sleepers), with raw lock/unlock calls for
//! the `pthread_atfork` handlers of [`crate::fork`], which take it in one
//! call (prepare) and release it in another (parent, child); a guard-based
//! `std` mutex only allows that by parking guards in a static between the
//! calls. klock's spinlocks are not used either: they count stats events
//! (the stats registry would lock itself), read the tunables and inject
//! chaos delays. It spins through [`crate::wait::spin_until`] for
//! [`crate::tune::fixed::REGISTRY_SPIN_NS`] and sleeps with
//! [`crate::wait::futex_wait`]. Under `cfg(loom)` it is a plain
//! `std::sync::Mutex` (the registries stay invisible to loom) and has no
//! raw calls.
//!
//! ```text
//!  0 --lock: CAS--> 1 --unlock: swap 0--> 0
//!  1 --a contender sleeps: swap 2--> 2 --unlock: swap 0, futex_wake--> 0
//! ```
//!
//! ```
//! // Internal; every registry of klock uses it, e.g. through thread ids.
//! assert!(klock::internal::tid::current_id() != 0);
//! ```

/// Mutual exclusion for klock's internal registries, with raw lock/unlock for
/// the atfork handlers (see the module docs).
#[cfg(not(loom))]
pub(crate) struct RegLock<T> {
    /// 0 = free, 1 = locked, 2 = locked and a contender may sleep on it.
    word: crate::sync::atomic::AtomicU32,
    data: std::cell::UnsafeCell<T>,
}

// SAFETY: `data` is only reached through a `RegGuard`, i.e. by the one thread
// that holds the lock, so sharing a `RegLock` shares `T` between threads one
// at a time: `T: Send` is what that needs (as for `std::sync::Mutex`).
#[cfg(not(loom))]
unsafe impl<T: Send> Sync for RegLock<T> {}

#[cfg(not(loom))]
impl<T> RegLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        RegLock {
            word: crate::sync::atomic::AtomicU32::new(0),
            data: std::cell::UnsafeCell::new(value),
        }
    }

    pub(crate) fn lock(&self) -> RegGuard<'_, T> {
        self.raw_lock();
        RegGuard { lock: self }
    }

    /// Take the lock without a guard (atfork prepare); release it with
    /// [`raw_unlock`](Self::raw_unlock).
    #[inline]
    pub(crate) fn raw_lock(&self) {
        use crate::sync::atomic::Ordering;
        // Acquire pairs with the Release swap in `raw_unlock`: the previous
        // holder's writes to `data` are visible to us.
        if self
            .word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        use crate::sync::atomic::Ordering;
        use crate::wait::{SpinBudget, futex_wait, spin_until};
        let mut budget = SpinBudget::new(crate::tune::fixed::REGISTRY_SPIN_NS);
        // Acquire CAS: pairs with the Release swap in `raw_unlock`.
        if spin_until(&mut budget, || {
            self.word.load(Ordering::Relaxed) == 0
                && self
                    .word
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        }) {
            return;
        }
        // Sleep. The swap to 2 tells the holder to wake someone; if it returns
        // 0 we own the lock (as 2: our unlock may wake needlessly). Acquire
        // pairs with the Release swap in `raw_unlock`. No lost wake-up: an
        // unlock between our swap and the futex wait leaves 0 != 2, so the
        // wait returns at once; an unlock after it sees 2 and wakes.
        while self.word.swap(2, Ordering::Acquire) != 0 {
            futex_wait(&self.word, 2, None);
        }
    }

    /// Release a lock taken with [`raw_lock`](Self::raw_lock).
    ///
    /// # Safety
    ///
    /// The caller holds the lock (from `raw_lock`, or in the forked child the
    /// lock its prepare handler took) and no guard will release it again.
    #[inline]
    pub(crate) unsafe fn raw_unlock(&self) {
        use crate::sync::atomic::Ordering;
        // Release pairs with the Acquire CAS/swap of the next locker. After
        // this swap we touch nothing but the word's address (INV-WAKE-ADDR).
        if self.word.swap(0, Ordering::Release) == 2 {
            crate::wait::futex_wake(&self.word, 1);
        }
    }
}

/// Holds a [`RegLock`]; releases it when dropped.
#[cfg(not(loom))]
pub(crate) struct RegGuard<'a, T> {
    lock: &'a RegLock<T>,
}

#[cfg(not(loom))]
impl<T> std::ops::Deref for RegGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock, so
        // no other reference to `data` is live.
        unsafe { &*self.lock.data.get() }
    }
}

#[cfg(not(loom))]
impl<T> std::ops::DerefMut for RegGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow
        // through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

#[cfg(not(loom))]
impl<T> Drop for RegGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard was created by `lock`, which took the lock, and
        // only this drop releases it.
        unsafe { self.lock.raw_unlock() }
    }
}

/// Under loom: a plain `std::sync::Mutex` (invisible to the model), no raw
/// operations and no atfork handlers.
#[cfg(loom)]
pub(crate) struct RegLock<T>(std::sync::Mutex<T>);

#[cfg(loom)]
pub(crate) type RegGuard<'a, T> = std::sync::MutexGuard<'a, T>;

#[cfg(loom)]
impl<T> RegLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        RegLock(std::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> RegGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T> std::fmt::Debug for RegLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegLock").finish_non_exhaustive()
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn reglock_excludes_and_raw_ops_pair() {
        let l = Arc::new(RegLock::new(0u64));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = l.lock();
                        // A non-atomic read-modify-write: a lost update would
                        // show a second holder.
                        let v = *g;
                        std::hint::black_box(());
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*l.lock(), 80_000);
        l.raw_lock();
        let l2 = l.clone();
        let waiter = std::thread::spawn(move || *l2.lock() += 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: taken by `raw_lock` above, no guard involved.
        unsafe { l.raw_unlock() };
        waiter.join().unwrap();
        assert_eq!(*l.lock(), 80_001);
    }
}

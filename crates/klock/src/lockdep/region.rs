//! Zero-filled, lazily mapped arrays for lockdep's tables: `mmap`ed on first
//! use (`MAP_NORESERVE`: only the pages touched cost memory), never freed, and
//! never allocated through `malloc` (the hooks run inside `pthread_mutex_lock`,
//! maybe inside the program's own allocator).

use core::marker::PhantomData;
use core::sync::atomic::{AtomicPtr, Ordering};

/// Regions at least this large ask for transparent huge pages.
const HUGE: usize = 2 << 20;

/// A fixed-capacity array of `N` `T`s, all zero bytes until written.
pub(super) struct Region<T, const N: usize> {
    ptr: AtomicPtr<T>,
    _t: PhantomData<T>,
}

// SAFETY: the region hands out `&T` only; `T` (atomics, or data guarded by the
// graph lock through `UnsafeCell`-free raw access) decides what sharing means.
unsafe impl<T: Sync, const N: usize> Sync for Region<T, N> {}

impl<T, const N: usize> Region<T, N> {
    /// An unmapped region.
    pub(super) const fn new() -> Self {
        Region {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
            _t: PhantomData,
        }
    }

    /// The array, mapped on first use; `None` if the mapping failed.
    ///
    /// The caller's `T` must be valid as all-zero bytes (atomics, integers).
    #[inline]
    pub(super) fn get(&self) -> Option<&[T; N]> {
        // Acquire pairs with the AcqRel CAS below: the mapping is complete
        // (and zero) before its address is seen.
        let p = self.ptr.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a live mapping of N zero-initialised Ts, never unmapped.
            return Some(unsafe { &*p.cast::<[T; N]>() });
        }
        self.map()
    }

    /// The array's first element as a raw pointer, for a `T` that its owner
    /// mutates in place (a thread's own slot); `None` if unmappable.
    #[inline]
    pub(super) fn base(&self) -> Option<*mut T> {
        self.get().map(|a| a.as_ptr().cast_mut())
    }

    #[cold]
    fn map(&self) -> Option<&[T; N]> {
        let bytes = core::mem::size_of::<[T; N]>();
        // SAFETY: an anonymous private mapping; no preconditions.
        let m = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if m == libc::MAP_FAILED {
            return None;
        }
        if bytes >= HUGE {
            // A table probed at random (the edge keys): transparent huge
            // pages spare the TLB a miss per probe. Advice only; ignored
            // where THP is off.
            // SAFETY: our own fresh mapping.
            unsafe { libc::madvise(m, bytes, libc::MADV_HUGEPAGE) };
        }
        let mine = m.cast::<T>();
        // AcqRel: Release publishes the zero mapping (pairs with the Acquire
        // load in `get`); Acquire sees the winner's mapping on failure.
        let p = match self.ptr.compare_exchange(
            core::ptr::null_mut(),
            mine,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => mine,
            Err(other) => {
                // SAFETY: our own mapping, never published.
                unsafe { libc::munmap(m, bytes) };
                other
            }
        };
        // SAFETY: a live mapping of N zero-filled Ts (valid all-zero: the
        // caller's contract), never unmapped.
        Some(unsafe { &*p.cast::<[T; N]>() })
    }
}

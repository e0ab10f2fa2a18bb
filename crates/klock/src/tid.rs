//! Per-thread ids: a small number (1..=[`ANON_ID`]) naming each live thread,
//! written into lock words that need an owner identity (the mutex's owner
//! field, its PICKUP recipient, the condvar's waiter records).
//!
//! An id is allocated the first time a thread asks for it ([`current_id`]) and
//! returned to a free list when the thread exits (a thread-local destructor),
//! so ids stay dense and fit in [`ID_BITS`] bits. A thread whose
//! thread-locals are being destroyed, or one beyond 2^27 - 2 live threads,
//! gets the shared [`ANON_ID`], which lock code treats as "no identity"
//! (no queueing, no hand-off).
//!
//! # Fork
//!
//! The free list is guarded by klock's internal registry lock, which the
//! atfork handlers ([`crate::fork`]) hold across `fork()`, so a child can hand
//! out ids to its new threads. Ids of threads that do not exist in the child
//! stay allocated there (a bounded leak: lock words copied from the parent
//! may still name them, so they are not reused). The forking thread keeps its
//! id.
//!
//! ```
//! let id = klock::internal::tid::current_id();
//! assert!(id >= 1 && id <= klock::internal::tid::ANON_ID);
//! let other = std::thread::spawn(klock::internal::tid::current_id).join().unwrap();
//! assert_ne!(id, other); // both threads were alive at once
//! ```

use crate::reglock::RegLock;
use std::cell::Cell;

/// Width of a thread id in bits (the mutex stores it above its 5 flag bits).
///
/// ```
/// assert_eq!(klock::internal::tid::ID_BITS, 27);
/// ```
pub const ID_BITS: u32 = 27;
/// Largest id; also the shared "anonymous" id of threads without one.
///
/// ```
/// assert_eq!(klock::internal::tid::ANON_ID, (1 << klock::internal::tid::ID_BITS) - 1);
/// ```
pub const ANON_ID: u32 = (1 << ID_BITS) - 1;

/// Returns the thread's id to the free list when the thread exits, and marks
/// the cached id anonymous so a lock used from a later TLS destructor cannot
/// reuse an id another thread may receive.
struct TidGuard(Cell<u32>);

/// Ids returned by exited threads. Internal registry lock (not
/// `std::sync::Mutex`): the atfork handlers take and release it in separate
/// calls.
static FREE_IDS: RegLock<Vec<u32>> = RegLock::new(Vec::new());
static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

fn alloc_id() -> u32 {
    if let Some(id) = FREE_IDS.lock().pop() {
        return id;
    }
    // Relaxed: a unique-number counter; no data is published with it.
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if id >= ANON_ID {
        // 2^27 - 1 live threads: share the anonymous id (no queueing).
        NEXT_ID.store(ANON_ID, std::sync::atomic::Ordering::Relaxed);
        return ANON_ID;
    }
    id
}

impl Drop for TidGuard {
    fn drop(&mut self) {
        let id = self.0.get();
        slot::set(ANON_ID);
        if id != 0 && id != ANON_ID {
            FREE_IDS.lock().push(id);
        }
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static TID_GUARD: TidGuard = const { TidGuard(Cell::new(0)) };
}
#[cfg(loom)]
loom::thread_local! {
    static TID: Cell<u32> = Cell::new(0);
    static TID_GUARD: TidGuard = TidGuard(Cell::new(0));
}

// The calling thread's id slot (0 = not assigned yet): the one value every
// lock fast path reads. On x86-64 Linux an initial-exec thread-local
// (`klock::internal::tls::thread_word!`): one `%fs`-relative load, also inside a shared
// object (the C library, the interposer), where `thread_local!` would be a
// general-dynamic access through `__tls_get_addr` (about 3 ns per call).
// Static TLS is accessible on the thread also while its destructors run,
// so the slot needs no `try_with`.
#[cfg(all(not(loom), target_arch = "x86_64", target_os = "linux"))]
crate::__klock_thread_word!(mod slot = "klock_tid_slot_v1");

/// The slot elsewhere: a const-initialised `thread_local!` without a
/// destructor (after the thread's TLS is gone, reads give [`ANON_ID`]).
#[cfg(all(not(loom), not(all(target_arch = "x86_64", target_os = "linux"))))]
mod slot {
    use std::cell::Cell;
    std::thread_local! {
        static TID: Cell<u32> = const { Cell::new(0) };
    }
    #[inline]
    pub(super) fn get() -> u32 {
        TID.try_with(|c| c.get()).unwrap_or(super::ANON_ID)
    }
    #[inline]
    pub(super) fn set(v: u32) {
        let _ = TID.try_with(|c| c.set(v));
    }
}

#[cfg(loom)]
mod slot {
    #[inline]
    pub(super) fn get() -> u32 {
        super::TID.try_with(|c| c.get()).unwrap_or(super::ANON_ID)
    }
    #[inline]
    pub(super) fn set(v: u32) {
        let _ = super::TID.try_with(|c| c.set(v));
    }
}

#[cold]
fn assign_id() -> u32 {
    // Fork hooks before the first id leaves the free list (crate::fork).
    #[cfg(not(loom))]
    crate::fork::install(crate::fork::Slot::Tid, &FORK_HOOKS);
    let id = alloc_id();
    // Register the recycling guard; if this thread's TLS is being torn down,
    // stay anonymous (and give the id back).
    match TID_GUARD.try_with(|g| g.0.set(id)) {
        Ok(()) => {
            slot::set(id);
            id
        }
        Err(_) => {
            if id != ANON_ID {
                FREE_IDS.lock().push(id);
            }
            slot::set(ANON_ID);
            ANON_ID
        }
    }
}

/// This thread's owner id (1..=[`ANON_ID`]), unique among live threads;
/// [`ANON_ID`] once the thread's TLS is being destroyed (a lock used from a
/// TLS destructor).
///
/// ```
/// let id = klock::internal::mutex::current_id();
/// assert!(id >= 1 && id <= klock::internal::mutex::ANON_ID);
/// assert_eq!(id, klock::internal::mutex::current_id());
/// ```
#[inline]
pub fn current_id() -> u32 {
    match slot::get() {
        0 => assign_id(),
        id => id,
    }
}

/// At a fork: give the forking thread its id, hold the free list's lock
/// across the fork (see `crate::fork`).
#[cfg(not(loom))]
static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    thread: || {
        let _ = current_id();
    },
    lock: atfork_lock,
    unlock: atfork_unlock,
    ..crate::fork::Hooks::NONE
};

/// atfork prepare: take the free list's lock (see [`crate::fork`]).
#[cfg(not(loom))]
fn atfork_lock() {
    FREE_IDS.raw_lock();
}

/// atfork parent/child: release the lock [`atfork_lock`] took.
///
/// # Safety
///
/// This thread took the lock with [`atfork_lock`] and has not released it.
#[cfg(not(loom))]
unsafe fn atfork_unlock() {
    // SAFETY: the caller's contract is `raw_unlock`'s.
    unsafe { FREE_IDS.raw_unlock() }
}

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
//! ```
//! let id = klock::tid::current_id();
//! assert!(id >= 1 && id <= klock::tid::ANON_ID);
//! let other = std::thread::spawn(klock::tid::current_id).join().unwrap();
//! assert_ne!(id, other); // both threads were alive at once
//! ```

use std::cell::Cell;

/// Width of a thread id in bits (the mutex stores it above its 5 flag bits).
///
/// ```
/// assert_eq!(klock::tid::ID_BITS, 27);
/// ```
pub const ID_BITS: u32 = 27;
/// Largest id; also the shared "anonymous" id of threads without one.
///
/// ```
/// assert_eq!(klock::tid::ANON_ID, (1 << klock::tid::ID_BITS) - 1);
/// ```
pub const ANON_ID: u32 = (1 << ID_BITS) - 1;

/// Returns the thread's id to the free list when the thread exits, and marks
/// the cached id anonymous so a lock used from a later TLS destructor cannot
/// reuse an id another thread may receive.
struct TidGuard(Cell<u32>);

static FREE_IDS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());
static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

fn alloc_id() -> u32 {
    if let Some(id) = FREE_IDS.lock().unwrap_or_else(|e| e.into_inner()).pop() {
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
        let _ = TID.try_with(|c| c.set(ANON_ID));
        if id != 0 && id != ANON_ID {
            FREE_IDS.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        }
    }
}

#[cfg(not(loom))]
std::thread_local! {
    // Const-initialised and without a destructor: the fast path reads it with
    // one TLS load (0 = not assigned yet).
    static TID: Cell<u32> = const { Cell::new(0) };
    static TID_GUARD: TidGuard = const { TidGuard(Cell::new(0)) };
}
#[cfg(loom)]
loom::thread_local! {
    static TID: Cell<u32> = Cell::new(0);
    static TID_GUARD: TidGuard = TidGuard(Cell::new(0));
}

#[cold]
fn assign_id() -> u32 {
    let id = alloc_id();
    // Register the recycling guard; if this thread's TLS is being torn down,
    // stay anonymous (and give the id back).
    match TID_GUARD.try_with(|g| g.0.set(id)) {
        Ok(()) => {
            let _ = TID.try_with(|c| c.set(id));
            id
        }
        Err(_) => {
            if id != ANON_ID {
                FREE_IDS.lock().unwrap_or_else(|e| e.into_inner()).push(id);
            }
            let _ = TID.try_with(|c| c.set(ANON_ID));
            ANON_ID
        }
    }
}

/// This thread's owner id (1..=[`ANON_ID`]), unique among live threads;
/// [`ANON_ID`] once the thread's TLS is being destroyed (a lock used from a
/// TLS destructor).
///
/// ```
/// let id = klock::mutex::current_id();
/// assert!(id >= 1 && id <= klock::mutex::ANON_ID);
/// assert_eq!(id, klock::mutex::current_id());
/// ```
#[inline]
pub fn current_id() -> u32 {
    match TID.try_with(|c| c.get()) {
        Ok(0) => assign_id(),
        Ok(id) => id,
        Err(_) => ANON_ID,
    }
}

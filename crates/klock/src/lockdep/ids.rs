//! Lock identity: which lock instance an address holds right now.
//!
//! An identity is a number (`id`, 1-based) with a record ([`Rec`]) in one
//! array. It is found one of two ways:
//!
//! * **Stamped** ([`stamped`]): the lock object has four spare bytes, and the
//!   id is written there at the lock's first validated acquisition. An object
//!   that is initialised again, or freed and reused for a new lock, has the
//!   bytes zeroed (`pthread_mutex_init` and the interposer's init zero them; a
//!   static initialiser, C++'s `constexpr` `std::mutex()` and `calloc` are
//!   all-zero), so it gets a new id without any `destroy` call. One load.
//! * **By address** ([`at`]): objects without spare bytes (a 4-byte
//!   `pthread_spinlock_t`, the locks glibc serves, Rust's locks) are looked up
//!   in an open-addressing table keyed by address. `init` and `destroy` (a
//!   Rust lock's drop) call [`forget`], so the next use takes a new id.
//!
//! ```text
//! stamp / table slot:  0 --first acquisition: CAS 0 -> new id--> id
//!                      id --init, destroy, drop (forget): store 0--> 0
//! ```

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::region::Region;

/// Ids available for the life of the process (each lock instance takes one;
/// 4M locks is more than any program here creates, and the records are mapped
/// lazily).
pub(super) const MAX_LOCKS: usize = 1 << 22;
/// Address-table slots (power of two).
const SLOTS: usize = 1 << 20;
/// Probes before the address table gives up on an address (it is then not
/// validated, and [`untracked`] counts it).
const PROBES: usize = 64;

/// One lock instance. `addr` and `site` are written once; the graph fields
/// are read and written only under the graph lock (Relaxed there).
#[derive(Default)]
pub(super) struct Rec {
    /// The lock's address when it got this id.
    pub(super) addr: AtomicUsize,
    /// The first edge into it (index, 0 = none): where it was first waited
    /// for with another lock held, the report's "first taken nested at".
    pub(super) site: AtomicUsize,
    /// Head of its list of outgoing edges (edge index, 0 = none).
    pub(super) out: AtomicU32,
    /// Head of its list of incoming edges (edge index, 0 = none).
    pub(super) in_head: AtomicU32,
    /// Its place in the topological order (`order`; 0 = unplaced).
    pub(super) ord: core::sync::atomic::AtomicI64,
    /// The order's reordering marks.
    pub(super) pk: AtomicU32,
    /// Search marks, per arrival kind (see `graph`): the search generation
    /// that reached it, and how (edge index << 1 | previous arrival kind).
    pub(super) seen: [AtomicU32; 2],
    pub(super) via: [AtomicU32; 2],
    /// Retired ([`retire`]): released by a thread that did not hold it, so a
    /// holder's entry for it is stale.
    pub(super) dead: core::sync::atomic::AtomicBool,
}

static RECS: Region<Rec, MAX_LOCKS> = Region::new();
static NEXT: AtomicU32 = AtomicU32::new(1);
static UNTRACKED: AtomicUsize = AtomicUsize::new(0);

/// One slot of the address table: `key` is claimed once (CAS 0 -> address) and
/// never freed; `id` is the identity there now (0: none yet).
#[derive(Default)]
struct Slot {
    key: AtomicUsize,
    id: AtomicU32,
}

static TABLE: Region<Slot, SLOTS> = Region::new();

/// The record of `id`.
#[inline]
pub(super) fn rec(id: u32) -> &'static Rec {
    // A live id was handed out by `new_id`, which mapped the records.
    let recs = RECS.get().expect("an id implies the records are mapped");
    &recs[id as usize]
}

/// A new identity for the lock at `addr`; `None` when the ids or the memory
/// ran out (the lock is then not validated).
fn new_id(addr: usize) -> Option<u32> {
    let recs = RECS.get()?;
    // Relaxed: a counter; the record is published by the caller's Release.
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if id as usize >= MAX_LOCKS {
        // Relaxed (both): counters; nothing is published through them.
        NEXT.store(MAX_LOCKS as u32, Ordering::Relaxed);
        UNTRACKED.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // Relaxed: published by the Release CAS that installs the id.
    recs[id as usize].addr.store(addr, Ordering::Relaxed);
    Some(id)
}

/// Install a new id in `cell` if it holds none: the id in `cell` afterwards.
#[inline]
fn claim(cell: &AtomicU32, addr: usize) -> Option<u32> {
    // Acquire pairs with the Release CAS below: the record's `addr` is seen.
    let id = cell.load(Ordering::Acquire);
    if id != 0 {
        return Some(id);
    }
    let new = new_id(addr)?;
    // Window: another thread may claim the cell first (its id wins).
    crate::chaos::point(crate::chaos::Site::ListEdit);
    // Release publishes the record (pairs with the Acquire load above);
    // Acquire on failure sees the winner's record. A losing id is wasted.
    match cell.compare_exchange(0, new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(new),
        Err(won) => Some(won),
    }
}

/// The identity of a lock whose object keeps it in the four spare bytes
/// `stamp` (zero in a newly initialised object).
#[inline]
pub(super) fn stamped(stamp: &AtomicU32, addr: usize) -> Option<u32> {
    claim(stamp, addr)
}

/// The identity stamped in `stamp`, if any (for a release: never makes one).
#[inline]
pub(super) fn stamped_known(stamp: &AtomicU32) -> Option<u32> {
    // Acquire: as in `claim`.
    let id = stamp.load(Ordering::Acquire);
    (id != 0).then_some(id)
}

#[inline]
fn hash(addr: usize) -> usize {
    // Fibonacci hashing of the address without its alignment bits.
    ((addr >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize)) >> 12
}

/// The address table's slot for `addr`, claiming one if `create`.
fn slot(addr: usize, create: bool) -> Option<&'static Slot> {
    let table = TABLE.get()?;
    let start = hash(addr);
    for i in start..start + PROBES {
        let s = &table[i & (SLOTS - 1)];
        // Relaxed: the key is the only data of a claim; the id has its own
        // Acquire/Release pairing (`claim`).
        let k = s.key.load(Ordering::Relaxed);
        if k == addr {
            return Some(s);
        }
        if k == 0 {
            if !create {
                return None;
            }
            // Relaxed: as above.
            match s
                .key
                .compare_exchange(0, addr, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(s),
                Err(k) if k == addr => return Some(s),
                Err(_) => {}
            }
        }
    }
    // Relaxed: a counter.
    UNTRACKED.fetch_add(1, Ordering::Relaxed);
    None
}

/// The identity of the lock at `addr` (address table), made if it has none.
pub(super) fn at(addr: usize) -> Option<u32> {
    claim(&slot(addr, true)?.id, addr)
}

/// The identity of the lock at `addr` if it has one (for a release).
pub(super) fn at_known(addr: usize) -> Option<u32> {
    stamped_known(&slot(addr, false)?.id)
}

/// The lock at `addr` ends (destroy, init, drop): its next use is a new lock.
pub(super) fn forget(addr: usize) {
    if let Some(s) = slot(addr, false) {
        // Release: nothing to publish really; pairs with `claim`'s Acquire.
        s.id.store(0, Ordering::Release);
    }
}

/// Bumped by every [`retire`]: a thread whose stack saw an older value
/// drops its entries of retired ids before it uses the stack again.
pub(super) static RETIRED: AtomicU32 = AtomicU32::new(0);

/// The identity `id` was released by a thread that did not hold it (a mutex
/// used as a semaphore); its lock already has a new identity. Whoever holds
/// an entry of it drops the entry at its next hook (`held::current`).
pub(super) fn retire(id: u32) {
    // Relaxed: published by the Release increment below.
    rec(id).dead.store(true, Ordering::Relaxed);
    // Release pairs with the Acquire load in `held::current`: a thread that
    // sees the new count sees the mark.
    RETIRED.fetch_add(1, Ordering::Release);
}

/// Is `id` retired?
#[inline]
pub(super) fn retired(id: u32) -> bool {
    // Relaxed: ordered by `RETIRED` (see `retire`).
    rec(id).dead.load(Ordering::Relaxed)
}

/// Locks not validated because a table was full.
pub(super) fn untracked() -> usize {
    UNTRACKED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zeroed_stamp_is_a_new_lock_and_a_stamp_is_kept() {
        let stamp = AtomicU32::new(0);
        let a = stamped(&stamp, 0x1000).unwrap();
        assert_eq!(stamped(&stamp, 0x1000), Some(a));
        assert_eq!(stamped_known(&stamp), Some(a));
        stamp.store(0, Ordering::Relaxed); // init / reuse zeroes the bytes
        assert_eq!(stamped_known(&stamp), None);
        let b = stamped(&stamp, 0x1000).unwrap();
        assert_ne!(a, b);
        assert_eq!(rec(b).addr.load(Ordering::Relaxed), 0x1000);
    }

    #[test]
    fn forget_gives_an_address_a_new_identity() {
        let addr = 0xdead_0000;
        assert_eq!(at_known(addr), None);
        let a = at(addr).unwrap();
        assert_eq!(at(addr), Some(a));
        assert_eq!(at_known(addr), Some(a));
        forget(addr);
        assert_eq!(at_known(addr), None);
        let b = at(addr).unwrap();
        assert_ne!(a, b);
    }
}

//! The per-lock registry: a fixed-capacity, lock-free, insert-only hash table of
//! counters keyed by the lock's address ([`Table`], one [`Slot`] per lock), the
//! lock families it tells apart ([`Family`]), and what a snapshot of it reads
//! ([`LockStat`] per lock, [`Totals`] per process, the top-N rankings: locks by
//! contention, condvars by wait time).
//!
//! A condvar wait is not an acquisition: it has its own counters (waits, timeouts,
//! wait time), kept apart from the lock counters of the same slot, so that threads
//! idling on a condvar by design do not count as lock contention.
//!
//! Storage is `mmap`ed once by [`Table::alloc`] (nothing is mapped while
//! statistics are off). Slots are claimed with one CAS and never freed; counters
//! are relaxed atomics. The counting methods never allocate and never take a lock:
//! they run inside `pthread_mutex_lock`. An address that finds no free slot within
//! [`PROBE_LIMIT`] probes is counted as "untracked". This module uses nothing else
//! of the statistics.

use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64};
use core::sync::atomic::{AtomicUsize, Ordering::*};

/// Which family a lock belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `pthread_mutex_t`.
    Mutex,
    /// `pthread_rwlock_t`, shared side.
    RwRead,
    /// `pthread_rwlock_t`, exclusive side.
    RwWrite,
    /// `pthread_spinlock_t`.
    Spin,
    /// `pthread_cond_t` (a wait; no hold time).
    Cond,
}

impl Family {
    /// The family's bit in [`LockStat::kinds`].
    pub const fn bit(self) -> u8 {
        match self {
            Family::Mutex => KIND_MUTEX,
            Family::RwRead | Family::RwWrite => KIND_RWLOCK,
            Family::Spin => KIND_SPIN,
            Family::Cond => KIND_COND,
        }
    }
    /// Whether the holder is exclusive, so that a hold time is measured.
    pub const fn exclusive(self) -> bool {
        matches!(self, Family::Mutex | Family::RwWrite | Family::Spin)
    }
}

/// [`LockStat::kinds`] bit: used as a mutex.
pub const KIND_MUTEX: u8 = 1;
/// [`LockStat::kinds`] bit: used as a rwlock.
pub const KIND_RWLOCK: u8 = 2;
/// [`LockStat::kinds`] bit: used as a spinlock.
pub const KIND_SPIN: u8 = 4;
/// [`LockStat::kinds`] bit: used as a condition variable.
pub const KIND_COND: u8 = 8;

/// Default number of table slots.
pub const DEFAULT_SLOTS: usize = 1 << 16;
/// Longest probe sequence; an address that finds neither itself nor a free slot in
/// this many slots is untracked (it stays untracked: slots are never freed).
pub const PROBE_LIMIT: usize = 256;
/// Return addresses kept per first-contention stack.
pub const FRAMES: usize = 24;

/// One lock's (or condvar's) counters. 128 bytes: two cache lines, so neighbours do
/// not share the line with the hot counters.
#[repr(C, align(128))]
#[derive(Default)]
pub struct Slot {
    /// Lock address; 0 = free.
    key: AtomicUsize,
    /// Families seen at this address ([`KIND_MUTEX`] ...).
    kinds: AtomicU8,
    /// 0 = no stack, 1 = being captured, 2 = captured (frames in the stack array).
    stack_state: AtomicU8,
    /// Frames captured.
    nframes: AtomicU8,
    acquisitions: AtomicU64,
    reads: AtomicU64,
    contended: AtomicU64,
    wait_total: AtomicU64,
    wait_max: AtomicU64,
    /// CLOCK_MONOTONIC ns at the current exclusive holder's acquisition; 0 = none.
    hold_start: AtomicU64,
    hold_total: AtomicU64,
    hold_count: AtomicU64,
    hold_max: AtomicU64,
    /// Condvar waits (not acquisitions: kept apart from the lock counters).
    cond_waits: AtomicU64,
    /// Of which timed out.
    cond_timeouts: AtomicU64,
    cond_wait_total: AtomicU64,
    cond_wait_max: AtomicU64,
}

const _: () = assert!(size_of::<Slot>() == 128, "a slot is two cache lines");

/// One first-contention stack's storage.
pub(super) type Stack = [AtomicUsize; FRAMES];

/// A fixed-capacity, lock-free, insert-only hash table of [`Slot`]s keyed by address.
///
/// `const`-constructible empty (for the global); [`Table::alloc`] maps the storage.
pub struct Table {
    slots: AtomicPtr<Slot>,
    /// `capacity - 1` (capacity is a power of two).
    mask: AtomicUsize,
    /// Slot indices + 1 in claim order (0 = claimed but not yet recorded).
    order: AtomicPtr<AtomicU32>,
    /// Slots claimed.
    used: AtomicUsize,
    /// First-contention stacks, one per slot (level 2 only; null otherwise).
    stacks: AtomicPtr<Stack>,
    /// Acquisitions of locks that found no slot.
    untracked: AtomicU64,
    /// Bytes mapped, for `Drop`.
    mapped: AtomicUsize,
}

// SAFETY: every field is an atomic; the pointed-to storage is only accessed through
// atomics and lives until `Drop` (never, for the global).
unsafe impl Sync for Table {}

#[inline]
fn home(addr: usize, mask: usize) -> usize {
    // Fibonacci hashing: lock addresses are 8..64-byte aligned; the multiply spreads
    // the high bits of the product over the whole table.
    ((addr as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

impl Table {
    /// An empty table with no storage (every lookup fails).
    pub const fn new() -> Table {
        Table {
            slots: AtomicPtr::new(core::ptr::null_mut()),
            mask: AtomicUsize::new(0),
            order: AtomicPtr::new(core::ptr::null_mut()),
            used: AtomicUsize::new(0),
            stacks: AtomicPtr::new(core::ptr::null_mut()),
            untracked: AtomicU64::new(0),
            mapped: AtomicUsize::new(0),
        }
    }

    /// Maps storage for `capacity` slots (rounded up to a power of two, at least 16),
    /// plus one stack per slot when `stacks`. Call once, before any lookup; false if
    /// `mmap` failed (the table stays empty).
    pub fn alloc(&self, capacity: usize, stacks: bool) -> bool {
        let cap = capacity.clamp(16, 1 << 24).next_power_of_two();
        let slots_b = cap * size_of::<Slot>();
        let order_b = (cap * size_of::<AtomicU32>()).next_multiple_of(128);
        let stacks_b = if stacks { cap * size_of::<Stack>() } else { 0 };
        let total = slots_b + order_b + stacks_b;
        // SAFETY: an anonymous private mapping; no existing memory is affected. The
        // kernel zero-fills it, which is the valid all-free state of every atomic here.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return false;
        }
        let base = p as *mut u8;
        // Relaxed (these four): published by the Release store of `slots` below.
        self.mask.store(cap - 1, Relaxed);
        self.mapped.store(total, Relaxed);
        // SAFETY: both offsets are inside the mapping (sizes computed above).
        let (order, st) = unsafe { (base.add(slots_b), base.add(slots_b + order_b)) };
        self.order.store(order.cast(), Relaxed);
        if stacks {
            self.stacks.store(st.cast(), Relaxed);
        }
        // Release: pairs with the Acquire load in `lookup`/`snapshot`, which then see
        // `mask`, `order` and `stacks`.
        self.slots.store(base.cast(), Release);
        true
    }

    /// Capacity in slots (0 before [`Table::alloc`]).
    pub fn capacity(&self) -> usize {
        // Acquire: pairs with the Release store in `alloc` (then `mask` is valid).
        if self.slots.load(Acquire).is_null() {
            0
        } else {
            // Relaxed: published by the Acquire above.
            self.mask.load(Relaxed) + 1
        }
    }

    /// Slots claimed so far.
    pub fn used(&self) -> usize {
        // Relaxed: a count, read for the report only.
        self.used.load(Relaxed).min(self.capacity())
    }

    /// Acquisitions that found no slot.
    pub fn untracked(&self) -> u64 {
        // Relaxed: a statistic.
        self.untracked.load(Relaxed)
    }

    /// The slot of `addr`; with `insert`, claims a free slot for it if absent.
    /// `None`: absent (and not inserted), address 0, no storage, or no free slot within
    /// [`PROBE_LIMIT`] probes.
    #[inline]
    pub fn lookup(&self, addr: usize, insert: bool) -> Option<(usize, &Slot)> {
        // Acquire: pairs with the Release store in `alloc`.
        let slots = self.slots.load(Acquire);
        if slots.is_null() || addr == 0 {
            return None;
        }
        // Relaxed: published by the Acquire above.
        let mask = self.mask.load(Relaxed);
        let mut i = home(addr, mask);
        for _ in 0..PROBE_LIMIT.min(mask + 1) {
            // SAFETY: i <= mask < capacity; the mapping lives as long as `self`.
            let s = unsafe { &*slots.add(i) };
            // Relaxed: the key is the only datum a claim publishes (the counters are
            // atomics that start at zero), so no ordering is needed with the CAS below.
            let k = s.key.load(Relaxed);
            if k == addr {
                return Some((i, s));
            }
            if k == 0 {
                if !insert {
                    return None;
                }
                // Relaxed: see the load above; the CAS only decides who owns the slot.
                match s.key.compare_exchange(0, addr, Relaxed, Relaxed) {
                    Ok(_) => {
                        self.record_claim(i);
                        return Some((i, s));
                    }
                    Err(cur) if cur == addr => return Some((i, s)),
                    Err(_) => {}
                }
            }
            i = (i + 1) & mask;
        }
        None
    }

    fn record_claim(&self, i: usize) {
        // Relaxed: only hands out distinct positions; the report tolerates a position
        // whose index is not yet written (it reads 0 and skips it).
        let n = self.used.fetch_add(1, Relaxed);
        // Relaxed: published by the Acquire load of `slots` in `lookup`.
        let order = self.order.load(Relaxed);
        if n <= self.mask.load(Relaxed) {
            // SAFETY: n < capacity: inside the order array.
            // Relaxed: a report may miss a claim in flight, which is harmless.
            unsafe { (*order.add(n)).store(i as u32 + 1, Relaxed) };
        }
    }

    /// Counts one acquisition of `addr` (for [`Family::Cond`]: one wait, `contended`
    /// meaning it timed out); `now` is the CLOCK_MONOTONIC time (ns) used as the hold
    /// start of an exclusive family. Returns the slot when the caller should capture
    /// a first-contention stack into it (level 2 decides).
    #[inline]
    pub fn count_acquired(
        &self,
        addr: usize,
        f: Family,
        contended: bool,
        wait_ns: u64,
        now: u64,
    ) -> Option<usize> {
        let Some((i, s)) = self.lookup(addr, true) else {
            // Relaxed: a statistic.
            self.untracked.fetch_add(1, Relaxed);
            return None;
        };
        // Relaxed (all counters): statistics, read once at report time; nothing is
        // published through them.
        if s.kinds.load(Relaxed) & f.bit() == 0 {
            s.kinds.fetch_or(f.bit(), Relaxed);
        }
        if f == Family::Cond {
            return Table::count_wait(i, s, contended, wait_ns);
        }
        s.acquisitions.fetch_add(1, Relaxed);
        if f == Family::RwRead {
            s.reads.fetch_add(1, Relaxed);
        }
        if wait_ns > 0 {
            s.wait_total.fetch_add(wait_ns, Relaxed);
            s.wait_max.fetch_max(wait_ns, Relaxed);
        }
        if f.exclusive() {
            // Relaxed: written by the holder while it holds the lock and read by the
            // holder in `count_released`; the lock under measurement orders
            // successive holders (its release/acquire pair).
            s.hold_start.store(now.max(1), Relaxed);
        }
        if contended {
            s.contended.fetch_add(1, Relaxed);
            // Relaxed: only a filter; `claim_stack`'s CAS decides.
            if s.stack_state.load(Relaxed) == 0 {
                return Some(i);
            }
        }
        None
    }

    /// One condvar wait on slot `i` (`timed_out`: its contended event); as
    /// [`Table::count_acquired`].
    fn count_wait(i: usize, s: &Slot, timed_out: bool, wait_ns: u64) -> Option<usize> {
        // Relaxed (all counters): statistics, as in `count_acquired`.
        s.cond_waits.fetch_add(1, Relaxed);
        if wait_ns > 0 {
            s.cond_wait_total.fetch_add(wait_ns, Relaxed);
            s.cond_wait_max.fetch_max(wait_ns, Relaxed);
        }
        if !timed_out {
            return None;
        }
        s.cond_timeouts.fetch_add(1, Relaxed);
        // Relaxed: only a filter; `claim_stack`'s CAS decides.
        (s.stack_state.load(Relaxed) == 0).then_some(i)
    }

    /// Ends the hold of the exclusive holder of `addr` (no-op for shared families and
    /// unknown addresses). `now`: CLOCK_MONOTONIC ns.
    #[inline]
    pub fn count_released(&self, addr: usize, f: Family, now: u64) {
        if !f.exclusive() {
            return;
        }
        let Some((_, s)) = self.lookup(addr, false) else {
            return;
        };
        // Relaxed: see `count_acquired`; the swap to 0 makes a second release without
        // an acquisition (an inner recursive unlock seen twice) count nothing.
        let start = s.hold_start.swap(0, Relaxed);
        if start != 0 && now >= start {
            let h = now - start;
            // Relaxed: statistics.
            s.hold_total.fetch_add(h, Relaxed);
            s.hold_count.fetch_add(1, Relaxed);
            s.hold_max.fetch_max(h, Relaxed);
        }
    }

    /// Stores `frames` as slot `i`'s first-contention stack unless one is already
    /// there (or being stored) or the table has no stack storage. True if stored.
    pub fn store_stack(&self, i: usize, frames: &[usize]) -> bool {
        let Some(st) = self.claim_stack(i) else {
            return false;
        };
        self.finish_stack(i, st, frames);
        true
    }

    pub(super) fn claim_stack(&self, i: usize) -> Option<&Stack> {
        // Relaxed: published by the Acquire load of `slots` (callers got `i` from
        // `lookup`).
        let stacks = self.stacks.load(Relaxed);
        if stacks.is_null() || i > self.mask.load(Relaxed) {
            return None;
        }
        // SAFETY: i < capacity and `slots` is non-null (`i` came from `lookup`).
        let s = unsafe { &*self.slots.load(Relaxed).add(i) };
        // Relaxed: the CAS only elects the one capturer; the frames are published by
        // the Release store in `finish_stack`.
        s.stack_state
            .compare_exchange(0, 1, Relaxed, Relaxed)
            .ok()?;
        // SAFETY: i < capacity: inside the stack array.
        Some(unsafe { &*stacks.add(i) })
    }

    pub(super) fn finish_stack(&self, i: usize, st: &Stack, frames: &[usize]) {
        let n = frames.len().min(FRAMES);
        for (d, &f) in st.iter().zip(&frames[..n]) {
            // Relaxed: published by the Release store of `stack_state` below.
            d.store(f, Relaxed);
        }
        // SAFETY: as in `claim_stack`.
        let s = unsafe { &*self.slots.load(Relaxed).add(i) };
        // Relaxed: published by the Release store below.
        s.nframes.store(n as u8, Relaxed);
        // Release: pairs with the Acquire load in `stack_of`.
        s.stack_state.store(2, Release);
    }

    /// Copies slot `i`'s first-contention stack into `out`; returns the frame count
    /// (0: none captured).
    pub fn stack_of(&self, i: usize, out: &mut [usize; FRAMES]) -> usize {
        // Relaxed: published by the Acquire load of `slots` in `snapshot`.
        let stacks = self.stacks.load(Relaxed);
        let slots = self.slots.load(Acquire);
        if stacks.is_null() || slots.is_null() || i > self.mask.load(Relaxed) {
            return 0;
        }
        // SAFETY: i < capacity.
        let s = unsafe { &*slots.add(i) };
        // Acquire: pairs with the Release store in `finish_stack`.
        if s.stack_state.load(Acquire) != 2 {
            return 0;
        }
        // Relaxed: published by the Acquire above.
        let n = (s.nframes.load(Relaxed) as usize).min(FRAMES);
        // SAFETY: i < capacity: inside the stack array.
        let st = unsafe { &*stacks.add(i) };
        for (o, f) in out.iter_mut().zip(st.iter()).take(n) {
            // Relaxed: published by the Acquire above.
            *o = f.load(Relaxed);
        }
        n
    }

    /// Zeroes every claimed slot's counters and stack (keys stay): a forked child's
    /// fresh start. Hold starts stay, since the child may hold locks across `fork`.
    pub fn reset_counters(&self) {
        self.each_claimed(|_, s| {
            // Relaxed (all): the child is single-threaded here.
            for c in [
                &s.acquisitions,
                &s.reads,
                &s.contended,
                &s.wait_total,
                &s.wait_max,
                &s.hold_total,
                &s.hold_count,
                &s.hold_max,
                &s.cond_waits,
                &s.cond_timeouts,
                &s.cond_wait_total,
                &s.cond_wait_max,
            ] {
                c.store(0, Relaxed);
            }
            s.stack_state.store(0, Relaxed);
            s.nframes.store(0, Relaxed);
        });
        // Relaxed: as above.
        self.untracked.store(0, Relaxed);
    }

    fn each_claimed(&self, mut f: impl FnMut(usize, &Slot)) {
        // Acquire: pairs with the Release store in `alloc`.
        let slots = self.slots.load(Acquire);
        if slots.is_null() {
            return;
        }
        // Relaxed: published by the Acquire above.
        let order = self.order.load(Relaxed);
        for n in 0..self.used() {
            // SAFETY: n < capacity: inside the order array.
            // Relaxed: see `record_claim` (0 = not yet written: skipped).
            let idx = unsafe { (*order.add(n)).load(Relaxed) } as usize;
            if idx == 0 || idx > self.capacity() {
                continue;
            }
            // SAFETY: idx - 1 < capacity.
            f(idx - 1, unsafe { &*slots.add(idx - 1) });
        }
    }

    /// A snapshot of slot `i`'s counters.
    fn stat_of(i: usize, s: &Slot) -> LockStat {
        // Relaxed (all): statistics; a report taken while other threads run is a
        // snapshot of counters that are each exact but not mutually consistent.
        LockStat {
            slot: i,
            addr: s.key.load(Relaxed),
            kinds: s.kinds.load(Relaxed),
            acquisitions: s.acquisitions.load(Relaxed),
            reads: s.reads.load(Relaxed),
            contended: s.contended.load(Relaxed),
            wait_total_ns: s.wait_total.load(Relaxed),
            wait_max_ns: s.wait_max.load(Relaxed),
            hold_total_ns: s.hold_total.load(Relaxed),
            hold_count: s.hold_count.load(Relaxed),
            hold_max_ns: s.hold_max.load(Relaxed),
            cond_waits: s.cond_waits.load(Relaxed),
            cond_timeouts: s.cond_timeouts.load(Relaxed),
            cond_wait_total_ns: s.cond_wait_total.load(Relaxed),
            cond_wait_max_ns: s.cond_wait_max.load(Relaxed),
            stack_captured: s.stack_state.load(Relaxed) == 2,
        }
    }

    /// Totals over every claimed slot; the `top.len()` highest-ranked locks (see
    /// [`LockStat::rank_key`]) in `top` and the `conds.len()` condvars with the most
    /// wait time (see [`LockStat::cond_rank_key`]) in `conds`, best first. Returns
    /// (totals, locks listed, condvars listed). A slot used both ways (memory
    /// reuse) may be in both lists.
    pub fn snapshot(&self, top: &mut [LockStat], conds: &mut [LockStat]) -> (Totals, usize, usize) {
        let mut t = Totals {
            untracked: self.untracked(),
            slots: self.capacity(),
            ..Totals::default()
        };
        let (mut n, mut nc) = (0usize, 0usize);
        self.each_claimed(|i, s| {
            let st = Table::stat_of(i, s);
            t.add(&st);
            if st.acquisitions > 0 {
                insert_ranked(top, &mut n, st, LockStat::rank_key);
            }
            if st.cond_waits > 0 {
                insert_ranked(conds, &mut nc, st, LockStat::cond_rank_key);
            }
        });
        (t, n, nc)
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let p = *self.slots.get_mut();
        if !p.is_null() {
            // SAFETY: the mapping made by `alloc`, of `mapped` bytes; `&mut self`
            // means no reference into it survives.
            unsafe { libc::munmap(p.cast(), *self.mapped.get_mut()) };
        }
    }
}

/// Keeps `top[..*n]` sorted best-first by `rank` while inserting `st` (drops the
/// worst when full).
fn insert_ranked(
    top: &mut [LockStat],
    n: &mut usize,
    st: LockStat,
    rank: fn(&LockStat) -> (u64, u64, u64),
) {
    if top.is_empty() {
        return;
    }
    let key = rank(&st);
    if *n == top.len() && key <= rank(&top[*n - 1]) {
        return;
    }
    let mut pos = (*n).min(top.len() - 1);
    while pos > 0 && rank(&top[pos - 1]) < key {
        if pos < top.len() {
            top[pos] = top[pos - 1];
        }
        pos -= 1;
    }
    top[pos] = st;
    if *n < top.len() {
        *n += 1;
    }
}

/// One lock's (or condvar's) counters, as read for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStat {
    /// Table slot (for its stack).
    pub slot: usize,
    /// Lock address.
    pub addr: usize,
    /// Families seen ([`KIND_MUTEX`] | ...).
    pub kinds: u8,
    /// Acquisitions (the lock families, both rwlock sides; not condvar waits).
    pub acquisitions: u64,
    /// Of which shared (rwlock read side).
    pub reads: u64,
    /// Acquisitions whose first attempt failed.
    pub contended: u64,
    /// Time spent waiting for the lock, ns.
    pub wait_total_ns: u64,
    /// Longest wait for the lock, ns.
    pub wait_max_ns: u64,
    /// Time held (exclusive families), ns.
    pub hold_total_ns: u64,
    /// Holds measured.
    pub hold_count: u64,
    /// Longest hold, ns.
    pub hold_max_ns: u64,
    /// Condvar waits (`pthread_cond_wait` and the timed variants that returned).
    pub cond_waits: u64,
    /// Of which timed out.
    pub cond_timeouts: u64,
    /// Time spent in condvar waits, ns.
    pub cond_wait_total_ns: u64,
    /// Longest condvar wait, ns.
    pub cond_wait_max_ns: u64,
    /// Whether a first-contention stack was captured.
    pub stack_captured: bool,
}

impl LockStat {
    /// Ranking: contended acquisitions, then wait time, then acquisitions.
    pub fn rank_key(&self) -> (u64, u64, u64) {
        (self.contended, self.wait_total_ns, self.acquisitions)
    }
    /// Condvar ranking: wait time, then waits, then timeouts.
    pub fn cond_rank_key(&self) -> (u64, u64, u64) {
        (self.cond_wait_total_ns, self.cond_waits, self.cond_timeouts)
    }
}

/// Whole-process totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Locks with at least one acquisition.
    pub locks: u64,
    /// Acquisitions on tracked locks.
    pub acquisitions: u64,
    /// Contended acquisitions.
    pub contended: u64,
    /// Time spent waiting for locks, ns (condvar waits not included).
    pub wait_ns: u64,
    /// Condvars with at least one wait.
    pub condvars: u64,
    /// Condvar waits.
    pub cond_waits: u64,
    /// Of which timed out.
    pub cond_timeouts: u64,
    /// Time spent in condvar waits, ns.
    pub cond_wait_ns: u64,
    /// Per family (mutex, rwlock, spin): locks, acquisitions, contended; for cond:
    /// condvars, waits, timed out.
    pub by_kind: [[u64; 3]; 4],
    /// Acquisitions (and condvar waits) on untracked objects.
    pub untracked: u64,
    /// Table capacity.
    pub slots: usize,
}

impl Totals {
    /// Adds one slot: its lock side if it was acquired, its condvar side if it
    /// was waited on.
    pub fn add(&mut self, s: &LockStat) {
        if s.acquisitions > 0 {
            self.locks += 1;
            self.acquisitions += s.acquisitions;
            self.contended += s.contended;
            self.wait_ns += s.wait_total_ns;
            for (k, row) in self.by_kind.iter_mut().enumerate() {
                if 1 << k != KIND_COND && s.kinds & (1 << k) != 0 {
                    row[0] += 1;
                    row[1] += s.acquisitions;
                    row[2] += s.contended;
                }
            }
        }
        if s.cond_waits > 0 {
            self.condvars += 1;
            self.cond_waits += s.cond_waits;
            self.cond_timeouts += s.cond_timeouts;
            self.cond_wait_ns += s.cond_wait_total_ns;
            let row = &mut self.by_kind[KIND_COND.trailing_zeros() as usize];
            row[0] += 1;
            row[1] += s.cond_waits;
            row[2] += s.cond_timeouts;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(cap: usize, stacks: bool) -> Table {
        let t = Table::new();
        assert!(t.alloc(cap, stacks));
        t
    }

    #[test]
    fn insert_and_lookup() {
        let t = table(1024, false);
        assert_eq!(t.capacity(), 1024);
        assert!(t.lookup(0x1008, false).is_none(), "absent before insert");
        let (i, _) = t.lookup(0x1008, true).unwrap();
        let (j, _) = t.lookup(0x1008, false).unwrap();
        assert_eq!(i, j);
        assert!(t.lookup(0, true).is_none(), "address 0 is never tracked");
        for a in 1..=500usize {
            t.count_acquired(a * 64, Family::Mutex, a % 2 == 0, 10, 5);
        }
        for a in 1..=500usize {
            let (_, s) = t.lookup(a * 64, false).unwrap();
            assert_eq!(s.key.load(Relaxed), a * 64);
            assert_eq!(s.acquisitions.load(Relaxed), 1);
        }
        assert_eq!(t.used(), 501);
        let mut top = [LockStat::default(); 10];
        let (tot, n, nc) = t.snapshot(&mut top, &mut []);
        assert_eq!((n, nc), (10, 0));
        assert_eq!(tot.locks, 500, "0x1008 was looked up but never acquired");
        assert_eq!(tot.acquisitions, 500);
        assert_eq!(tot.contended, 250);
        assert!(top.iter().all(|s| s.contended == 1));
    }

    #[test]
    fn collisions_probe_to_distinct_slots() {
        let t = table(16, false);
        let mask = 15;
        let a = 0x7000usize;
        let same: Vec<usize> = (1..100_000usize)
            .map(|k| a + k * 8)
            .filter(|&x| home(x, mask) == home(a, mask))
            .take(3)
            .collect();
        assert_eq!(same.len(), 3);
        let mut idx = vec![t.lookup(a, true).unwrap().0];
        for &x in &same {
            idx.push(t.lookup(x, true).unwrap().0);
        }
        let mut d = idx.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 4, "colliding keys share no slot: {idx:?}");
        for (k, &x) in std::iter::once(&a).chain(&same).enumerate() {
            assert_eq!(t.lookup(x, false).unwrap().0, idx[k]);
        }
    }

    #[test]
    fn full_table_counts_untracked() {
        let t = table(16, false);
        for a in 1..=16usize {
            assert!(
                t.count_acquired(a * 64, Family::Spin, false, 0, 1)
                    .is_none()
            );
        }
        assert_eq!(t.used(), 16);
        assert_eq!(t.untracked(), 0);
        t.count_acquired(17 * 64, Family::Spin, true, 0, 1);
        t.count_acquired(17 * 64, Family::Spin, true, 0, 1);
        assert_eq!(t.untracked(), 2);
        assert!(t.lookup(17 * 64, true).is_none());
        // Existing keys still work.
        t.count_acquired(64, Family::Spin, false, 0, 1);
        assert_eq!(t.lookup(64, false).unwrap().1.acquisitions.load(Relaxed), 2);
        // An empty table tracks nothing.
        let e = Table::new();
        assert!(e.lookup(64, true).is_none());
        assert_eq!(e.capacity(), 0);
    }

    #[test]
    fn hold_and_wait_accounting() {
        let t = table(64, true);
        let m = 0x5000;
        t.count_acquired(m, Family::Mutex, false, 0, 1_000);
        t.count_released(m, Family::Mutex, 1_500);
        let c = t.count_acquired(m, Family::Mutex, true, 700, 2_000);
        assert!(c.is_some(), "first contention asks for a stack");
        assert!(t.store_stack(c.unwrap(), &[1, 2, 3]));
        assert!(
            !t.store_stack(c.unwrap(), &[9]),
            "only the first stack is kept"
        );
        t.count_released(m, Family::Mutex, 4_000);
        t.count_released(m, Family::Mutex, 9_000); // no acquisition: ignored
        assert!(
            t.count_acquired(m, Family::Mutex, true, 300, 5_000)
                .is_none()
        );
        t.count_released(m, Family::Mutex, 5_100);
        let rw = 0x6000;
        t.count_acquired(rw, Family::RwRead, true, 50, 0);
        t.count_released(rw, Family::RwRead, 10);
        t.count_acquired(rw, Family::RwWrite, false, 0, 100);
        t.count_released(rw, Family::RwWrite, 160);
        let mut top = [LockStat::default(); 4];
        let (tot, n, _) = t.snapshot(&mut top, &mut []);
        assert_eq!(n, 2);
        let s = top[0];
        assert_eq!(s.addr, m);
        assert_eq!((s.acquisitions, s.contended), (3, 2));
        assert_eq!((s.wait_total_ns, s.wait_max_ns), (1_000, 700));
        assert_eq!(
            (s.hold_count, s.hold_total_ns, s.hold_max_ns),
            (3, 2_600, 2_000)
        );
        assert!(s.stack_captured);
        let mut f = [0; FRAMES];
        assert_eq!(t.stack_of(s.slot, &mut f), 3);
        assert_eq!(&f[..3], &[1, 2, 3]);
        let r = top[1];
        assert_eq!((r.kinds, r.reads, r.acquisitions), (KIND_RWLOCK, 1, 2));
        assert_eq!(
            (r.hold_count, r.hold_total_ns),
            (1, 60),
            "read side: no hold"
        );
        assert_eq!(tot.by_kind[0], [1, 3, 2]);
        assert_eq!(tot.by_kind[1], [1, 2, 1]);
        t.reset_counters();
        let (tot, n, _) = t.snapshot(&mut top, &mut []);
        assert_eq!((tot.locks, n), (0, 0));
        assert_eq!(t.stack_of(s.slot, &mut f), 0);
    }

    /// Condvar waits have their own counters and ranking: they are not lock
    /// acquisitions, contention or lock wait time.
    #[test]
    fn condvar_waits_are_kept_apart() {
        let t = table(64, true);
        let (m, c, both) = (0x1000, 0x2000, 0x3000);
        t.count_acquired(m, Family::Mutex, true, 5_000, 1);
        t.count_released(m, Family::Mutex, 2);
        t.count_acquired(c, Family::Cond, false, 2_000_000_000, 0);
        let first_timeout = t.count_acquired(c, Family::Cond, true, 300_000_000, 0);
        assert!(first_timeout.is_some(), "a first timeout asks for a stack");
        assert!(t.count_acquired(c, Family::Cond, true, 1, 0).is_some());
        t.count_acquired(both, Family::Cond, false, 10, 0);
        t.count_acquired(both, Family::RwRead, false, 0, 0);
        let mut top = [LockStat::default(); 4];
        let mut conds = [LockStat::default(); 4];
        let (tot, n, nc) = t.snapshot(&mut top, &mut conds);
        assert_eq!((n, nc), (2, 2), "{top:?} {conds:?}");
        assert_eq!((tot.locks, tot.acquisitions, tot.contended), (2, 2, 1));
        assert_eq!(tot.wait_ns, 5_000, "no condvar wait in the lock wait");
        assert_eq!((tot.condvars, tot.cond_waits, tot.cond_timeouts), (2, 4, 2));
        assert_eq!(tot.cond_wait_ns, 2_300_000_011);
        assert_eq!(
            tot.by_kind[3],
            [2, 4, 2],
            "cond: condvars, waits, timed out"
        );
        assert_eq!(
            tot.by_kind[1],
            [1, 1, 0],
            "the reused address's rwlock side"
        );
        assert_eq!(conds[0].addr, c, "the longest wait first");
        assert_eq!(
            (
                conds[0].acquisitions,
                conds[0].cond_waits,
                conds[0].cond_timeouts
            ),
            (0, 3, 2)
        );
        assert_eq!(conds[0].cond_wait_max_ns, 2_000_000_000);
        assert_eq!(top[0].addr, m);
        assert!(
            top.iter().all(|s| s.addr != c),
            "a condvar is no lock: {top:?}"
        );
        t.reset_counters();
        let (tot, n, nc) = t.snapshot(&mut top, &mut conds);
        assert_eq!((tot.cond_waits, n, nc), (0, 0, 0));
    }

    #[test]
    fn ranking_keeps_the_top() {
        let mut top = [LockStat::default(); 3];
        let mut n = 0;
        for (c, w) in [(5, 1), (1, 9), (5, 7), (0, 0), (9, 0), (1, 10)] {
            insert_ranked(
                &mut top,
                &mut n,
                LockStat {
                    contended: c,
                    wait_total_ns: w,
                    acquisitions: 1,
                    ..LockStat::default()
                },
                LockStat::rank_key,
            );
        }
        assert_eq!(n, 3);
        let got: Vec<(u64, u64)> = top.iter().map(|s| (s.contended, s.wait_total_ns)).collect();
        assert_eq!(got, vec![(9, 0), (5, 7), (5, 1)]);
    }
}

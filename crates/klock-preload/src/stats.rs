//! Contention statistics for the interposer (`KLOCK_STATS=1|2`), in the spirit of
//! mutrace but cheaper and `_exit`-safe.
//!
//! * `KLOCK_STATS=1`: at exit, a report of the most contended locks (top 10 by
//!   contended acquisitions, then by wait time): address, family, acquisitions,
//!   contended acquisitions, total/avg/max wait and total/avg/max hold time.
//! * `KLOCK_STATS=2`: additionally the call stack at each listed lock's FIRST
//!   contended acquisition (raw `backtrace()` addresses, symbolized at report time
//!   from the objects' ELF symbol tables, so `static` functions get names too).
//! * `KLOCK_STATS_FILE=PATH`: append the report to PATH (`%p` expands to the pid)
//!   instead of writing it to stderr. Without it the report goes to fd 2, but only
//!   if fd 2 is still the file it was at start-up (xz closes stderr, and a later
//!   `open` may reuse fd 2 for the program's data).
//! * `KLOCK_STATS_TOP=N` (1..=100, default 10) locks listed;
//!   `KLOCK_STATS_SLOTS=N` (power of two, 64..=16M, default 65536) table size.
//!
//! Storage is a fixed-capacity, lock-free, open-addressing hash table keyed by the
//! lock's address, `mmap`ed once by [`init`] (nothing is mapped when statistics are
//! off). Slots are claimed with one CAS and never freed; counters are relaxed atomics.
//! The hooks ([`acquired`], [`released`]) never allocate and never take a lock: they
//! run inside `pthread_mutex_lock`. The one exception is the level-2 `backtrace()` at
//! a lock's first contended acquisition, guarded by a thread-local re-entrancy flag.
//! An address that finds no free slot within [`PROBE_LIMIT`] probes is counted as
//! "untracked" and shown in the report.
//!
//! The report is formatted into an `mmap`ed buffer with `core::fmt` (no allocation,
//! no std I/O) and written with raw `write(2)`. [`flush`] is idempotent; [`init`]
//! registers it with `atexit`, and the interposer's `_exit`/`_Exit` wrappers call it.
//! A `fork`ed child starts with zeroed counters (the parent's are not reported twice)
//! and writes its own report; a `vfork` child (shared memory, no fork handlers) that
//! leaves through `_exit` writes nothing and leaves the parent's report alone.

use core::cell::{Cell, UnsafeCell};
use core::fmt::{self, Write as _};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicU32, AtomicU64};
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
/// Default and largest number of locks listed.
pub const DEFAULT_TOP: usize = 10;
/// Largest `KLOCK_STATS_TOP`.
pub const MAX_TOP: usize = 100;
/// Report buffer size; longer reports are cut and say so.
const REPORT_BYTES: usize = 1 << 20;

// ---------------------------------------------------------------------------------
// The table.

/// One lock's counters. 128 bytes: two cache lines, so neighbours do not share the
/// line with the hot counters.
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
}

type Stack = [AtomicUsize; FRAMES];

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

    /// Counts one acquisition of `addr`; `now` is the CLOCK_MONOTONIC time (ns) used
    /// as the hold start of an exclusive family. Returns the slot when the caller
    /// should capture a first-contention stack into it (level 2 decides).
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

    fn claim_stack(&self, i: usize) -> Option<&Stack> {
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

    fn finish_stack(&self, i: usize, st: &Stack, frames: &[usize]) {
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
            stack_captured: s.stack_state.load(Relaxed) == 2,
        }
    }

    /// Totals over every claimed slot, and the `top.len()` highest-ranked locks (see
    /// [`LockStat::rank_key`]) in `top`, best first; returns (totals, locks listed).
    pub fn snapshot(&self, top: &mut [LockStat]) -> (Totals, usize) {
        let mut t = Totals {
            untracked: self.untracked(),
            slots: self.capacity(),
            ..Totals::default()
        };
        let mut n = 0usize;
        self.each_claimed(|i, s| {
            let st = Table::stat_of(i, s);
            if st.acquisitions == 0 {
                return;
            }
            t.add(&st);
            insert_ranked(top, &mut n, st);
        });
        (t, n)
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

/// Keeps `top[..*n]` sorted best-first while inserting `st` (drops the worst when full).
fn insert_ranked(top: &mut [LockStat], n: &mut usize, st: LockStat) {
    if top.is_empty() {
        return;
    }
    let key = st.rank_key();
    if *n == top.len() && key <= top[*n - 1].rank_key() {
        return;
    }
    let mut pos = (*n).min(top.len() - 1);
    while pos > 0 && top[pos - 1].rank_key() < key {
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

/// One lock's counters, as read for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStat {
    /// Table slot (for its stack).
    pub slot: usize,
    /// Lock address.
    pub addr: usize,
    /// Families seen ([`KIND_MUTEX`] | ...).
    pub kinds: u8,
    /// Acquisitions (all families, both rwlock sides).
    pub acquisitions: u64,
    /// Of which shared (rwlock read side).
    pub reads: u64,
    /// Acquisitions whose first attempt failed.
    pub contended: u64,
    /// Time spent waiting, ns.
    pub wait_total_ns: u64,
    /// Longest wait, ns.
    pub wait_max_ns: u64,
    /// Time held (exclusive families), ns.
    pub hold_total_ns: u64,
    /// Holds measured.
    pub hold_count: u64,
    /// Longest hold, ns.
    pub hold_max_ns: u64,
    /// Whether a first-contention stack was captured.
    pub stack_captured: bool,
}

impl LockStat {
    /// Ranking: contended acquisitions, then wait time, then acquisitions.
    pub fn rank_key(&self) -> (u64, u64, u64) {
        (self.contended, self.wait_total_ns, self.acquisitions)
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
    /// Wait time, ns.
    pub wait_ns: u64,
    /// Per family (mutex, rwlock, spin, cond): locks, acquisitions, contended.
    pub by_kind: [[u64; 3]; 4],
    /// Acquisitions on untracked locks.
    pub untracked: u64,
    /// Table capacity.
    pub slots: usize,
}

impl Totals {
    /// Adds one lock.
    pub fn add(&mut self, s: &LockStat) {
        self.locks += 1;
        self.acquisitions += s.acquisitions;
        self.contended += s.contended;
        self.wait_ns += s.wait_total_ns;
        for (k, row) in self.by_kind.iter_mut().enumerate() {
            if s.kinds & (1 << k) != 0 {
                row[0] += 1;
                row[1] += s.acquisitions;
                row[2] += s.contended;
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Formatting (no allocation: into a caller-provided byte buffer).

/// A `fmt::Write` into a fixed byte buffer; overflow truncates and is remembered.
pub struct Buf<'a> {
    buf: &'a mut [u8],
    len: usize,
    /// Whether something did not fit.
    pub truncated: bool,
}

impl<'a> Buf<'a> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Buf<'a> {
        Buf {
            buf,
            len: 0,
            truncated: false,
        }
    }
    /// The bytes written.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// Appends raw bytes (a C string's contents, say).
    pub fn push_bytes(&mut self, b: &[u8]) {
        let n = b.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        if n < b.len() {
            self.truncated = true;
        }
    }
}

impl fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_bytes(s.as_bytes());
        Ok(())
    }
}

/// A count with thousands separators.
struct Count(u64);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut digits = [0u8; 26];
        let mut n = self.0;
        let mut i = digits.len();
        let mut k = 0;
        loop {
            if k > 0 && k % 3 == 0 {
                i -= 1;
                digits[i] = b',';
            }
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            k += 1;
            if n == 0 {
                break;
            }
        }
        // The bytes are ASCII digits and commas.
        f.pad(core::str::from_utf8(&digits[i..]).unwrap_or("?"))
    }
}

/// A duration in ns, in a readable unit (`850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`).
struct Ns(u64);

impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = [0u8; 32];
        let mut w = Buf::new(&mut b);
        let n = self.0;
        let x = n as f64;
        let _ = if n < 1_000 {
            write!(w, "{n} ns")
        } else if n < 1_000_000 {
            write!(w, "{:.1} us", x / 1e3)
        } else if n < 1_000_000_000 {
            write!(w, "{:.2} ms", x / 1e6)
        } else {
            write!(w, "{:.2} s", x / 1e9)
        };
        f.pad(core::str::from_utf8(w.bytes()).unwrap_or("?"))
    }
}

/// The family column: `mutex`, `rwlock`, ... joined with `+` when an address was
/// used as several (memory reuse).
struct Kinds(u8);

impl fmt::Display for Kinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = [0u8; 32];
        let mut w = Buf::new(&mut b);
        for (k, name) in KIND_NAMES.iter().enumerate() {
            if self.0 & (1 << k) != 0 {
                if !w.bytes().is_empty() {
                    w.push_bytes(b"+");
                }
                w.push_bytes(name.as_bytes());
            }
        }
        if w.bytes().is_empty() {
            w.push_bytes(b"?");
        }
        f.pad(core::str::from_utf8(w.bytes()).unwrap_or("?"))
    }
}

const KIND_NAMES: [&str; 4] = ["mutex", "rwlock", "spin", "cond"];

/// What the report says about the process.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// Program name (bytes of `program_invocation_name`).
    pub program: &'a [u8],
    /// This process.
    pub pid: i32,
    /// The parent's pid when this process was forked under the interposer (its
    /// counters started at the fork), else 0.
    pub forked_from: i32,
    /// Time since [`init`] (or the fork), ns.
    pub runtime_ns: u64,
    /// 1 or 2.
    pub level: u8,
}

/// Where the report's stacks come from: the table (at exit) or a test's fake.
pub trait StackSource {
    /// Copies lock `s`'s first-contention stack into `out`; returns the frame count.
    fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize;
    /// Whether `addr` is in the interposer itself (its leading frames are dropped).
    fn is_own(&mut self, addr: usize) -> bool;
    /// Writes frame `addr`'s description (`function+0xoff  (object)`).
    fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>);
}

/// Formats the report: header lines, the table of `top` (best first), and at level 2
/// each listed lock's first-contention stack from `src`.
pub fn format_report(
    w: &mut Buf<'_>,
    h: &Header<'_>,
    t: &Totals,
    top: &[LockStat],
    src: &mut dyn StackSource,
) {
    let _ = write_report(w, h, t, top, src);
    if w.truncated {
        let keep = w.buf.len().saturating_sub(32);
        w.len = w.len.min(keep);
        w.truncated = false;
        w.push_bytes(b"\nklock-stats: (report cut)\n");
    }
}

fn write_report(
    w: &mut Buf<'_>,
    h: &Header<'_>,
    t: &Totals,
    top: &[LockStat],
    src: &mut dyn StackSource,
) -> fmt::Result {
    w.push_bytes(b"klock-stats: ");
    w.push_bytes(h.program);
    write!(w, " (pid {}", h.pid)?;
    if h.forked_from != 0 {
        write!(w, ", forked from {}", h.forked_from)?;
    }
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    writeln!(
        w,
        ") | {:.3} s | {} locks seen | {} acquisitions, {} contended ({:.2}%) | wait {}",
        h.runtime_ns as f64 / 1e9,
        Count(t.locks),
        Count(t.acquisitions),
        Count(t.contended),
        pct(t.contended, t.acquisitions),
        Ns(t.wait_ns)
    )?;
    if t.acquisitions == 0 {
        writeln!(w, "klock-stats: no lock acquisitions seen")?;
    } else {
        w.push_bytes(b"klock-stats: by family:");
        let mut first = true;
        for (k, row) in t.by_kind.iter().enumerate() {
            if row[0] == 0 {
                continue;
            }
            write!(
                w,
                "{} {} {} locks, {} acq, {} contended",
                if first { "" } else { ";" },
                KIND_NAMES[k],
                Count(row[0]),
                Count(row[1]),
                Count(row[2])
            )?;
            first = false;
        }
        w.push_bytes(b"\n");
    }
    if t.untracked > 0 {
        writeln!(
            w,
            "klock-stats: WARNING {} acquisitions on untracked locks (no free slot within {} probes of a {}-slot table; raise KLOCK_STATS_SLOTS)",
            Count(t.untracked),
            PROBE_LIMIT,
            t.slots
        )?;
    }
    if top.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "klock-stats: top {} of {} locks, by contended acquisitions then wait time (avg wait: per contended acquisition; hold: exclusive holders only):",
        top.len(),
        Count(t.locks)
    )?;
    writeln!(
        w,
        "{:>3}  {:<18} {:<11} {:>13} {:>13} {:>13} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "#",
        "lock",
        "family",
        "acquired",
        "reads",
        "contended",
        "cont%",
        "wait tot",
        "wait avg",
        "wait max",
        "hold tot",
        "hold avg",
        "hold max"
    )?;
    for (n, s) in top.iter().enumerate() {
        let mut addr = [0u8; 24];
        let mut aw = Buf::new(&mut addr);
        write!(aw, "{:#x}", s.addr)?;
        let addr_s = core::str::from_utf8(aw.bytes()).unwrap_or("?");
        let mut reads = [0u8; 32];
        let mut rw = Buf::new(&mut reads);
        if s.kinds & KIND_RWLOCK != 0 {
            write!(rw, "{}", Count(s.reads))?;
        } else {
            rw.push_bytes(b"-");
        }
        let reads_s = core::str::from_utf8(rw.bytes()).unwrap_or("?");
        let wait_div = if s.contended > 0 {
            s.contended
        } else {
            s.acquisitions.max(1)
        };
        write!(
            w,
            "{:>3}  {:<18} {:<11} {:>13} {:>13} {:>13} {:>6.2}% {:>10} {:>10} {:>10}",
            n + 1,
            addr_s,
            Kinds(s.kinds),
            Count(s.acquisitions),
            reads_s,
            Count(s.contended),
            pct(s.contended, s.acquisitions),
            Ns(s.wait_total_ns),
            Ns(s.wait_total_ns / wait_div),
            Ns(s.wait_max_ns),
        )?;
        if let Some(avg) = s.hold_total_ns.checked_div(s.hold_count) {
            writeln!(
                w,
                " {:>10} {:>10} {:>10}",
                Ns(s.hold_total_ns),
                Ns(avg),
                Ns(s.hold_max_ns)
            )?;
        } else {
            writeln!(w, " {:>10} {:>10} {:>10}", "-", "-", "-")?;
        }
    }
    if h.level < 2 {
        return Ok(());
    }
    for (n, s) in top.iter().enumerate() {
        if s.contended == 0 {
            continue;
        }
        write!(
            w,
            "klock-stats: #{} {:#x} ({}) first contended at:",
            n + 1,
            s.addr,
            Kinds(s.kinds)
        )?;
        let mut frames = [0usize; FRAMES];
        let nf = if s.stack_captured {
            src.frames(s, &mut frames)
        } else {
            0
        };
        if nf == 0 {
            writeln!(w, " (not captured)")?;
            continue;
        }
        w.push_bytes(b"\n");
        // Drop the interposer's leading frames (the hook and the wrapped pthread
        // call), unless nothing else is left.
        let skip = frames[..nf].iter().take_while(|&&f| src.is_own(f)).count();
        let skip = if skip == nf { 0 } else { skip };
        for &f in &frames[skip..nf] {
            write!(w, "    {:#018x}  ", f)?;
            src.symbolize(f, w);
            w.push_bytes(b"\n");
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Symbolization: dladdr for the object, then the object's ELF symbol table (.symtab,
// else .dynsym) for the enclosing function. No allocation; files are mmapped.

/// The table's stacks, symbolized from the running process.
struct LiveStacks<'a> {
    table: &'a Table,
    /// Base address of this library (its frames are dropped).
    own_base: usize,
    /// Base address of the main program (symbolized from /proc/self/exe).
    main_base: usize,
    /// The main program's path (`readlink /proc/self/exe`; empty if unknown), shown
    /// instead of the loader's name for it (`argv[0]`).
    exe: &'a [u8],
}

/// `readlink("/proc/self/exe")` into `buf`; the bytes written (empty on failure).
fn self_exe(buf: &mut [u8]) -> &[u8] {
    // SAFETY: a NUL-terminated path and a writable buffer of buf.len() bytes.
    let n = unsafe {
        libc::readlink(
            c"/proc/self/exe".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n > 0 && (n as usize) < buf.len() {
        &buf[..n as usize]
    } else {
        &[]
    }
}

fn dl_info(addr: usize) -> Option<libc::Dl_info> {
    // SAFETY: Dl_info is plain old data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the address (it need not be mapped) and fills `info`.
    let ok = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    (ok != 0).then_some(info)
}

impl StackSource for LiveStacks<'_> {
    fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize {
        self.table.stack_of(s.slot, out)
    }
    fn is_own(&mut self, addr: usize) -> bool {
        self.own_base != 0 && dl_info(addr).is_some_and(|i| i.dli_fbase as usize == self.own_base)
    }
    fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>) {
        let Some(info) = dl_info(addr) else {
            out.push_bytes(b"??");
            return;
        };
        let base = info.dli_fbase as usize;
        // A return address: look up the call instruction's byte.
        let pc = addr.saturating_sub(1);
        let main = base == self.main_base;
        let fname = if main && !self.exe.is_empty() {
            self.exe
        } else {
            cstr_bytes(info.dli_fname)
        };
        let path: &[u8] = if main { b"/proc/self/exe\0" } else { fname };
        let mut found = false;
        if !path.is_empty() {
            found = elf_symbolize(path, base, pc, out);
        }
        if !found && !info.dli_sname.is_null() {
            out.push_bytes(cstr_bytes(info.dli_sname));
            let _ = write!(out, "+{:#x}", addr - info.dli_saddr as usize);
            found = true;
        }
        if !found {
            out.push_bytes(b"??");
        }
        out.push_bytes(b"  (");
        if fname.is_empty() {
            out.push_bytes(b"?");
        } else {
            out.push_bytes(fname);
        }
        if !found {
            // No symbol (a stripped object's local function): the offset in the
            // object, for `addr2line -e OBJECT OFFSET` with its debug symbols.
            let _ = write!(out, "+{:#x}", addr.wrapping_sub(base));
        }
        out.push_bytes(b")");
    }
}

/// The bytes of a C string (empty for null), without the NUL.
fn cstr_bytes<'a>(p: *const libc::c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: callers pass NUL-terminated strings owned by libc/the loader, which
    // live for the process's lifetime.
    unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes()
}

/// Reads a `T` at `off` in `data`, if it fits.
fn read_at<T: Copy>(data: &[u8], off: usize) -> Option<T> {
    let end = off.checked_add(size_of::<T>())?;
    if end > data.len() {
        return None;
    }
    // SAFETY: `off..end` is inside `data`; read_unaligned has no alignment needs and
    // T is plain old data (ELF structures).
    Some(unsafe { core::ptr::read_unaligned(data.as_ptr().add(off).cast::<T>()) })
}

/// Writes `name+0xoff` for the function containing `pc` in the ELF file at `path`
/// (NUL-terminated or not) mapped at `base`. False if not found.
fn elf_symbolize(path: &[u8], base: usize, pc: usize, out: &mut Buf<'_>) -> bool {
    let mut cpath = [0u8; 4096];
    let n = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    if n >= cpath.len() {
        return false;
    }
    cpath[..n].copy_from_slice(&path[..n]);
    // SAFETY: a NUL-terminated path; open has no other preconditions.
    let fd = unsafe { libc::open(cpath.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `st` is plain old data filled by fstat on our own fd.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fd is open; `st` is writable.
    let size = if unsafe { libc::fstat(fd, &mut st) } == 0 {
        st.st_size as usize
    } else {
        0
    };
    let map = if size > 0 {
        // SAFETY: a private read-only mapping of our own fd; unmapped below.
        unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                size,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    // SAFETY: our own fd, no longer needed (the mapping stays valid).
    unsafe { libc::close(fd) };
    if map == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: the mapping is `size` readable bytes until the munmap below. A file
    // truncated under us could fault; symbol files of a running process are not.
    let data = unsafe { core::slice::from_raw_parts(map as *const u8, size) };
    let found = elf_lookup(data, base, pc);
    if let Some((name_off, value, bias)) = found {
        let name = &data[name_off..];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push_bytes(&name[..end]);
        let _ = write!(out, "+{:#x}", pc + 1 - (value + bias));
    }
    // SAFETY: the mapping made above; `data` is not used after this.
    unsafe { libc::munmap(map, size) };
    found.is_some()
}

/// Finds the function symbol containing `pc` in the ELF image `data` loaded at
/// `base`: (file offset of its name, st_value, load bias).
fn elf_lookup(data: &[u8], base: usize, pc: usize) -> Option<(usize, usize, usize)> {
    let eh: libc::Elf64_Ehdr = read_at(data, 0)?;
    if eh.e_ident[..4] != *b"\x7fELF" || eh.e_ident[4] != 2 {
        return None;
    }
    // Load bias: ET_EXEC is linked at its addresses; ET_DYN at base - lowest vaddr.
    let mut bias = 0usize;
    if eh.e_type == libc::ET_DYN {
        let mut lo = usize::MAX;
        for k in 0..eh.e_phnum as usize {
            let ph: libc::Elf64_Phdr =
                read_at(data, eh.e_phoff as usize + k * eh.e_phentsize as usize)?;
            if ph.p_type == libc::PT_LOAD {
                lo = lo.min(ph.p_vaddr as usize & !0xfff);
            }
        }
        bias = base.wrapping_sub(if lo == usize::MAX { 0 } else { lo });
    }
    let rel = pc.wrapping_sub(bias);
    let shdr = |k: usize| -> Option<libc::Elf64_Shdr> {
        read_at(data, eh.e_shoff as usize + k * eh.e_shentsize as usize)
    };
    let mut best: Option<(usize, usize)> = None; // (name offset, value)
    // SHT_SYMTAB = 2 (full, with static functions), else SHT_DYNSYM = 11.
    for want in [2u32, 11] {
        for k in 0..eh.e_shnum as usize {
            let sh = shdr(k)?;
            if sh.sh_type != want {
                continue;
            }
            let strtab = shdr(sh.sh_link as usize)?;
            let count = sh.sh_size as usize / size_of::<libc::Elf64_Sym>().max(1);
            for j in 0..count {
                let sym: libc::Elf64_Sym = read_at(
                    data,
                    sh.sh_offset as usize + j * size_of::<libc::Elf64_Sym>(),
                )?;
                let ty = sym.st_info & 0xf;
                // STT_FUNC = 2, STT_GNU_IFUNC = 10.
                if (ty != 2 && ty != 10) || sym.st_shndx == 0 {
                    continue;
                }
                let v = sym.st_value as usize;
                let size = (sym.st_size as usize).max(1);
                if rel >= v && rel < v + size && best.is_none_or(|(_, bv)| v > bv) {
                    let off = strtab.sh_offset as usize + sym.st_name as usize;
                    if off < data.len() {
                        best = Some((off, v));
                    }
                }
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(off, v)| (off, v, bias))
}

// ---------------------------------------------------------------------------------
// The process-wide state and the hooks.

/// 0 = off, 1 = report, 2 = report with stacks. Set last by `init`.
static LEVEL: AtomicU8 = AtomicU8::new(0);
/// 0 = not initialised, 1 = initialising, 2 = done with statistics off, 3 = done
/// with statistics on.
static INIT: AtomicU8 = AtomicU8::new(0);
const INIT_BUSY: u8 = 1;
const INIT_OFF: u8 = 2;
const INIT_ON: u8 = 3;
static FLUSHED: AtomicBool = AtomicBool::new(false);
static TABLE: Table = Table::new();
static START_NS: AtomicU64 = AtomicU64::new(0);
static FORKED_FROM: AtomicI32 = AtomicI32::new(0);
/// The process whose counters the table holds (set at init and in a fork child).
/// A `vfork` child (or a raw `clone`) shares the memory but runs no fork handler:
/// its `_exit` must neither report the parent's counters nor mark them flushed.
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
static TOP: AtomicUsize = AtomicUsize::new(DEFAULT_TOP);
/// Identity (st_dev, st_ino) of fd 2 at init; (0, 0) = unknown.
static STDERR_DEV: AtomicU64 = AtomicU64::new(0);
static STDERR_INO: AtomicU64 = AtomicU64::new(0);

/// `KLOCK_STATS_FILE`, copied at init (the program may change its environment).
struct PathCell(UnsafeCell<[u8; 4096]>);
// SAFETY: written only by `configure` while it owns INIT == INIT_BUSY, before the
// Release store of INIT_ON, and read only after an Acquire load of INIT == INIT_ON
// (in `flush`); INIT never leaves INIT_ON.
unsafe impl Sync for PathCell {}
static STATS_FILE: PathCell = PathCell(UnsafeCell::new([0; 4096]));

thread_local! {
    /// Set while this thread captures a backtrace (which may re-enter the hooks).
    static IN_BACKTRACE: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" {
    /// glibc's `argv[0]` copy.
    static program_invocation_name: *const libc::c_char;
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> libc::c_int;
}

/// CLOCK_MONOTONIC in ns.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable; CLOCK_MONOTONIC always exists (vDSO, no locks).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The interposer's one environment accessor (nothing in secure-execution mode).
fn getenv(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    crate::config::env(name)
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |a, &c| {
        c.is_ascii_digit().then(|| a * 10 + (c - b'0') as u64)
    })
}

/// Statistics configuration (normally read from the environment by [`init`]).
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    /// 0 = off, 1 = report, 2 = report with stacks.
    pub level: u8,
    /// `KLOCK_STATS_FILE` (None = stderr).
    pub file: Option<&'a [u8]>,
    /// Locks listed.
    pub top: usize,
    /// Table slots.
    pub slots: usize,
}

impl Config<'static> {
    /// Reads `KLOCK_STATS`, `KLOCK_STATS_FILE`, `KLOCK_STATS_TOP`, `KLOCK_STATS_SLOTS`.
    /// Unknown values turn statistics off or fall back to the defaults, with a
    /// warning on stderr.
    pub fn from_env() -> Config<'static> {
        let level = match getenv(c"KLOCK_STATS") {
            None | Some(b"") | Some(b"0") => 0,
            Some(b"1") => 1,
            Some(b"2") => 2,
            Some(_) => {
                warn(b"klock-stats: KLOCK_STATS must be 0, 1 or 2; statistics are off\n");
                0
            }
        };
        let top = match getenv(c"KLOCK_STATS_TOP").map(parse_u64) {
            None => DEFAULT_TOP,
            Some(Some(n)) if (1..=MAX_TOP as u64).contains(&n) => n as usize,
            Some(_) => {
                warn(b"klock-stats: KLOCK_STATS_TOP must be 1..=100; using 10\n");
                DEFAULT_TOP
            }
        };
        let slots = match getenv(c"KLOCK_STATS_SLOTS").map(parse_u64) {
            None => DEFAULT_SLOTS,
            Some(Some(n)) if (64..=1 << 24).contains(&n) => n as usize,
            Some(_) => {
                warn(b"klock-stats: KLOCK_STATS_SLOTS must be 64..=16777216; using 65536\n");
                DEFAULT_SLOTS
            }
        };
        Config {
            level,
            file: getenv(c"KLOCK_STATS_FILE").filter(|f| !f.is_empty()),
            top,
            slots,
        }
    }
}

fn warn(msg: &[u8]) {
    write_all(2, msg);
}

fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: `b` is a valid readable buffer of b.len() bytes.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r < 0 {
            // SAFETY: errno is thread-local; reading it has no preconditions.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return false;
        }
        if r == 0 {
            return false;
        }
        b = &b[r as usize..];
    }
    true
}

fn fd_identity(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: plain old data, filled by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat on any fd number is safe (EBADF if closed).
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// Reads the configuration from the environment, once (later calls do nothing).
/// The interposer calls it from its constructor and lazily from its entry points.
/// With statistics on: maps the table, registers [`flush`] with `atexit` and a
/// `fork` child handler, and (level 2) warms up `backtrace()` so its one-time
/// `dlopen` of libgcc_s does not happen inside a lock.
pub fn init() {
    configure(&Config::from_env());
}

/// [`init`] with an explicit configuration (tests, embedders). The first call of
/// either decides, except that a configuration turning statistics on may follow one
/// that left them off (an interposer entry point may have called [`init`] with
/// `KLOCK_STATS` unset first). Returns whether statistics are on afterwards.
pub fn configure(cfg: &Config<'_>) -> bool {
    // Acquire/Relaxed: only elects the initialiser; publication is by the Release
    // store of INIT below. From INIT_OFF nothing was published that we overwrite.
    let won = INIT
        .compare_exchange(0, INIT_BUSY, Acquire, Relaxed)
        .is_ok()
        || (cfg.level > 0
            && INIT
                .compare_exchange(INIT_OFF, INIT_BUSY, Acquire, Relaxed)
                .is_ok());
    if !won {
        return enabled();
    }
    if cfg.level > 0 {
        if let Some(f) = cfg.file {
            // SAFETY: INIT == INIT_BUSY: we are the only writer and no reader runs
            // before INIT == INIT_ON (see PathCell).
            let dst = unsafe { &mut *STATS_FILE.0.get() };
            let n = f.len().min(dst.len() - 1);
            dst[..n].copy_from_slice(&f[..n]);
            dst[n] = 0;
        }
        if let Some((dev, ino)) = fd_identity(2) {
            // Relaxed: published by the Release store of INIT below.
            STDERR_DEV.store(dev, Relaxed);
            STDERR_INO.store(ino, Relaxed);
        }
        // Relaxed: published by the Release store of INIT below.
        TOP.store(cfg.top.clamp(1, MAX_TOP), Relaxed);
        // SAFETY: getpid has no preconditions.
        OWNER_PID.store(unsafe { libc::getpid() }, Relaxed);
        START_NS.store(now_ns(), Relaxed);
        if TABLE.alloc(cfg.slots, cfg.level >= 2) {
            if cfg.level >= 2 {
                let mut warm = [core::ptr::null_mut(); 4];
                // SAFETY: a valid buffer of 4 pointers.
                unsafe { libc::backtrace(warm.as_mut_ptr(), 4) };
            }
            // SAFETY: registering plain `extern "C"` functions of this library,
            // which is never unloaded (LD_PRELOAD).
            unsafe {
                libc::atexit(at_exit);
                pthread_atfork(None, None, Some(at_fork_child));
            }
            // Relaxed: `enabled()` is a filter; hooks find the table through the
            // Acquire load of its slots pointer (paired with `alloc`'s Release).
            LEVEL.store(cfg.level.min(2), Relaxed);
            if cfg.level > 0 {
                crate::config::stats_on();
            }
        } else {
            warn(b"klock-stats: cannot map the statistics table; statistics are off\n");
        }
    }
    let on = enabled();
    // Release: pairs with the Acquire load in `flush` (the file path and settings).
    INIT.store(if on { INIT_ON } else { INIT_OFF }, Release);
    on
}

extern "C" fn at_exit() {
    flush();
}

unsafe extern "C" fn at_fork_child() {
    // The child is single-threaded here.
    TABLE.reset_counters();
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    // Relaxed (all): single-threaded; `flush` runs later in this thread or after
    // pthread_create (which orders).
    FORKED_FROM.store(ppid, Relaxed);
    // SAFETY: getpid has no preconditions.
    OWNER_PID.store(unsafe { libc::getpid() }, Relaxed);
    START_NS.store(now_ns(), Relaxed);
    FLUSHED.store(false, Relaxed);
}

/// Are statistics on? One relaxed load.
#[inline]
pub fn enabled() -> bool {
    // Relaxed: a filter only (see `configure`).
    LEVEL.load(Relaxed) != 0
}

/// The statistics level in effect: 0 (off), 1 or 2.
pub fn level() -> u8 {
    // Relaxed: as `enabled`.
    LEVEL.load(Relaxed)
}

/// A lock at `addr` was acquired; `contended`: its first attempt failed; `wait_ns`:
/// time spent waiting. Call after the lock is held (the hold time starts now).
#[inline]
pub fn acquired(addr: usize, f: Family, contended: bool, wait_ns: u64) {
    if !enabled() {
        return;
    }
    let now = if f.exclusive() { now_ns() } else { 0 };
    if let Some(i) = TABLE.count_acquired(addr, f, contended, wait_ns, now)
        && level() >= 2
    {
        capture_stack(i);
    }
}

#[cold]
#[inline(never)]
fn capture_stack(i: usize) {
    // `try_with`: during thread teardown the flag may be gone; then skip.
    let _ = IN_BACKTRACE.try_with(|busy| {
        if busy.get() {
            return;
        }
        let Some(st) = TABLE.claim_stack(i) else {
            return;
        };
        busy.set(true);
        let mut raw = [core::ptr::null_mut(); FRAMES];
        // SAFETY: a valid buffer of FRAMES pointers; libgcc_s was loaded by `init`.
        let n = unsafe { libc::backtrace(raw.as_mut_ptr(), FRAMES as libc::c_int) };
        let mut frames = [0usize; FRAMES];
        let n = (n.max(0) as usize).min(FRAMES);
        for (d, s) in frames.iter_mut().zip(&raw[..n]) {
            *d = *s as usize;
        }
        TABLE.finish_stack(i, st, &frames[..n]);
        busy.set(false);
    });
}

/// The lock at `addr` is about to be released by its holder (hold time ends).
#[inline]
pub fn released(addr: usize, f: Family) {
    if !enabled() || !f.exclusive() {
        return;
    }
    TABLE.count_released(addr, f, now_ns());
}

/// Writes the report (idempotent: only the first call per process writes; called at
/// exit and from the `_exit`/`_Exit` wrappers). No-op when statistics are off.
pub fn flush() {
    // Acquire: pairs with the Release store in `configure` (path, settings, table).
    if INIT.load(Acquire) != INIT_ON {
        return;
    }
    // SAFETY: getpid has no preconditions.
    // Relaxed: OWNER_PID was published by INIT (or set by this process's own fork
    // handler, in this thread's past).
    if unsafe { libc::getpid() } != OWNER_PID.load(Relaxed) {
        return;
    }
    // Relaxed: only elects the one writer; everything it reads is atomics or was
    // published by INIT.
    if FLUSHED.swap(true, Relaxed) {
        return;
    }
    // SAFETY: a fresh anonymous mapping; unmapped below.
    let map = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            REPORT_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        warn(b"klock-stats: cannot map the report buffer\n");
        return;
    }
    // SAFETY: REPORT_BYTES writable bytes, exclusively ours until the munmap.
    let buf = unsafe { core::slice::from_raw_parts_mut(map as *mut u8, REPORT_BYTES) };
    let len = {
        let mut w = Buf::new(buf);
        report_into(&mut w);
        w.bytes().len()
    };
    // SAFETY: reading back what was just written.
    let bytes = unsafe { core::slice::from_raw_parts(map as *const u8, len) };
    emit(bytes);
    // SAFETY: the mapping made above; `buf`/`bytes` are dead.
    unsafe { libc::munmap(map, REPORT_BYTES) };
}

/// Formats the live report into `w` (what [`flush`] writes).
pub fn report_into(w: &mut Buf<'_>) {
    let mut top = [LockStat::default(); MAX_TOP];
    // Relaxed: published by INIT (configure).
    let k = TOP.load(Relaxed).clamp(1, MAX_TOP);
    let (totals, n) = TABLE.snapshot(&mut top[..k]);
    // SAFETY: glibc sets program_invocation_name before any constructor runs; it may
    // be null only in exotic embeddings, which `cstr_bytes` handles.
    let prog = cstr_bytes(unsafe { program_invocation_name });
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let h = Header {
        program: if prog.is_empty() { b"?" } else { prog },
        pid,
        // Relaxed (both): see `at_fork_child`.
        forked_from: FORKED_FROM.load(Relaxed),
        runtime_ns: now_ns().saturating_sub(START_NS.load(Relaxed)),
        level: level(),
    };
    let main_base = {
        // SAFETY: getauxval has no preconditions.
        let phdr = unsafe { libc::getauxval(libc::AT_PHDR) } as usize;
        dl_info(phdr).map_or(0, |i| i.dli_fbase as usize)
    };
    let mut exe = [0u8; 4096];
    let mut src = LiveStacks {
        table: &TABLE,
        own_base: dl_info(flush as *const () as usize).map_or(0, |i| i.dli_fbase as usize),
        main_base,
        exe: self_exe(&mut exe),
    };
    format_report(w, &h, &totals, &top[..n], &mut src);
}

/// Writes `bytes` to `KLOCK_STATS_FILE` (appending; `%p` = pid) or to fd 2 if it is
/// still the file it was at init.
fn emit(bytes: &[u8]) {
    // SAFETY: read-only after INIT == INIT_ON (Acquire in `flush`).
    let path = unsafe { &*STATS_FILE.0.get() };
    if path[0] != 0 {
        let mut p = [0u8; 4096 + 16];
        let mut w = Buf::new(&mut p);
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        let mut i = 0;
        while i < end {
            if path[i] == b'%' && i + 1 < end && path[i + 1] == b'p' {
                // SAFETY: getpid has no preconditions.
                let _ = write!(w, "{}", unsafe { libc::getpid() });
                i += 2;
            } else {
                w.push_bytes(&path[i..i + 1]);
                i += 1;
            }
        }
        w.push_bytes(b"\0");
        if !w.truncated {
            // O_NOFOLLOW: a symbolic link as the last component is refused
            // (ELOOP), so a planted link cannot redirect the append to another
            // file. Mode 0644 (never wider than 0666): the umask applies.
            // SAFETY: a NUL-terminated path.
            let fd = unsafe {
                libc::open(
                    w.bytes().as_ptr().cast(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_APPEND
                        | libc::O_CLOEXEC
                        | libc::O_NOFOLLOW,
                    0o644,
                )
            };
            if fd >= 0 {
                write_all(fd, bytes);
                // SAFETY: our own fd.
                unsafe { libc::close(fd) };
                return;
            }
            // SAFETY: errno is thread-local; reading it has no preconditions.
            if unsafe { *libc::__errno_location() } == libc::ELOOP {
                let path = w.bytes();
                let mut line = crate::config::Line::new();
                line.push(
                    b"klock-stats: KLOCK_STATS_FILE is a symbolic link, which is not \
                      followed; no report written: ",
                );
                line.push(&path[..path.len() - 1]);
                line.emit();
                return;
            }
        }
        warn(b"klock-stats: cannot open KLOCK_STATS_FILE; writing to stderr\n");
    }
    // Relaxed (both): published by INIT.
    let want = (STDERR_DEV.load(Relaxed), STDERR_INO.load(Relaxed));
    match fd_identity(2) {
        Some(id) if id == want || want == (0, 0) => {
            write_all(2, bytes);
        }
        // fd 2 was closed or now refers to another file (possibly the program's
        // output): writing there could corrupt it.
        _ => {}
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
        let (tot, n) = t.snapshot(&mut top);
        assert_eq!(n, 10);
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
        let (tot, n) = t.snapshot(&mut top);
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
        let (tot, n) = t.snapshot(&mut top);
        assert_eq!((tot.locks, n), (0, 0));
        assert_eq!(t.stack_of(s.slot, &mut f), 0);
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
            );
        }
        assert_eq!(n, 3);
        let got: Vec<(u64, u64)> = top.iter().map(|s| (s.contended, s.wait_total_ns)).collect();
        assert_eq!(got, vec![(9, 0), (5, 7), (5, 1)]);
    }

    struct Fake;
    impl StackSource for Fake {
        fn frames(&mut self, s: &LockStat, out: &mut [usize; FRAMES]) -> usize {
            out[0] = 0x1111;
            out[1] = 0x2222;
            out[2] = 0x3333;
            if s.addr == 0xbeef { 3 } else { 1 }
        }
        fn is_own(&mut self, addr: usize) -> bool {
            addr == 0x1111 || addr == 0x3333
        }
        fn symbolize(&mut self, addr: usize, out: &mut Buf<'_>) {
            let _ = write!(out, "fn_{addr:x}+0x4  (/bin/prog)");
        }
    }

    fn synthetic() -> (Totals, Vec<LockStat>) {
        let a = LockStat {
            slot: 0,
            addr: 0xbeef,
            kinds: KIND_MUTEX,
            acquisitions: 1_234_567,
            reads: 0,
            contended: 234_567,
            wait_total_ns: 2_345_678_901,
            wait_max_ns: 4_100_000,
            hold_total_ns: 1_000_000_000,
            hold_count: 1_234_567,
            hold_max_ns: 1_200,
            stack_captured: true,
        };
        let b = LockStat {
            slot: 1,
            addr: 0xcafe,
            kinds: KIND_RWLOCK | KIND_COND,
            acquisitions: 10,
            reads: 7,
            contended: 0,
            ..LockStat::default()
        };
        let mut t = Totals {
            untracked: 3,
            slots: 16,
            ..Totals::default()
        };
        t.add(&a);
        t.add(&b);
        (t, vec![a, b])
    }

    fn render(level: u8, forked: i32) -> String {
        let (t, top) = synthetic();
        let mut b = vec![0u8; 1 << 16];
        let mut w = Buf::new(&mut b);
        let h = Header {
            program: b"./prog",
            pid: 42,
            forked_from: forked,
            runtime_ns: 2_013_000_000,
            level,
        };
        format_report(&mut w, &h, &t, &top, &mut Fake);
        String::from_utf8(w.bytes().to_vec()).unwrap()
    }

    #[test]
    fn report_format_level1() {
        let r = render(1, 0);
        let lines: Vec<&str> = r.lines().collect();
        assert!(
            lines[0].starts_with("klock-stats: ./prog (pid 42) | 2.013 s | 2 locks seen"),
            "{r}"
        );
        assert!(
            lines[0].contains("1,234,577 acquisitions, 234,567 contended"),
            "{r}"
        );
        assert!(
            lines[1].contains("mutex 1 locks, 1,234,567 acq, 234,567 contended"),
            "{r}"
        );
        assert!(lines[1].contains("rwlock 1 locks") && lines[1].contains("cond 1 locks"));
        assert!(
            r.contains("WARNING 3 acquisitions on untracked locks"),
            "{r}"
        );
        assert!(r.contains("top 2 of 2 locks"), "{r}");
        let row = lines.iter().find(|l| l.contains("0xbeef")).unwrap();
        for cell in [
            "mutex",
            "1,234,567",
            "234,567",
            "19.00%",
            "2.35 s",
            "10.0 us",
            "4.10 ms",
            "1.00 s",
            "810 ns",
            "1.2 us",
        ] {
            assert!(row.contains(cell), "missing {cell}: {row}");
        }
        let row2 = lines.iter().find(|l| l.contains("0xcafe")).unwrap();
        assert!(
            row2.contains("rwlock+cond") && row2.contains(" 7 "),
            "{row2}"
        );
        assert!(row2.trim_end().ends_with("-"), "no hold times: {row2}");
        assert!(!r.contains("first contended"), "no stacks at level 1");
    }

    #[test]
    fn report_format_level2_and_fork() {
        let r = render(2, 7);
        assert!(r.contains("(pid 42, forked from 7)"), "{r}");
        assert!(r.contains("#1 0xbeef (mutex) first contended at:"), "{r}");
        assert!(r.contains("fn_2222+0x4  (/bin/prog)"), "{r}");
        assert!(
            r.contains("fn_3333+0x4"),
            "only leading own frames are dropped: {r}"
        );
        assert!(
            !r.contains("fn_1111"),
            "leading own frames are dropped: {r}"
        );
        assert!(
            !r.contains("#2 0xcafe"),
            "never contended: no stack section"
        );
    }

    #[test]
    fn report_without_acquisitions_and_cut() {
        let mut b = vec![0u8; 4096];
        let mut w = Buf::new(&mut b);
        let h = Header {
            program: b"sh",
            pid: 1,
            forked_from: 0,
            runtime_ns: 0,
            level: 1,
        };
        format_report(&mut w, &h, &Totals::default(), &[], &mut Fake);
        let s = String::from_utf8(w.bytes().to_vec()).unwrap();
        assert!(s.contains("no lock acquisitions seen"), "{s}");
        assert_eq!(s.lines().count(), 2, "{s}");
        // A buffer too small for the report is cut and says so.
        let (t, top) = synthetic();
        let mut small = vec![0u8; 300];
        let mut w = Buf::new(&mut small);
        format_report(&mut w, &h, &t, &top, &mut Fake);
        let s = String::from_utf8_lossy(w.bytes()).into_owned();
        assert!(s.ends_with("klock-stats: (report cut)\n"), "{s}");
    }

    #[test]
    fn counts_and_durations_format() {
        let f = |x: &dyn fmt::Display| {
            let mut b = [0u8; 64];
            let mut w = Buf::new(&mut b);
            write!(w, "{x}").unwrap();
            String::from_utf8(w.bytes().to_vec()).unwrap()
        };
        assert_eq!(f(&Count(0)), "0");
        assert_eq!(f(&Count(999)), "999");
        assert_eq!(f(&Count(1000)), "1,000");
        assert_eq!(f(&Count(u64::MAX)), "18,446,744,073,709,551,615");
        assert_eq!(f(&Ns(999)), "999 ns");
        assert_eq!(f(&Ns(12_345)), "12.3 us");
        assert_eq!(f(&Ns(4_560_000)), "4.56 ms");
        assert_eq!(f(&Ns(1_230_000_000)), "1.23 s");
        assert_eq!(f(&Kinds(0)), "?");
        assert_eq!(f(&Kinds(KIND_SPIN)), "spin");
    }

    #[test]
    fn symbolizes_a_static_function_of_this_binary() {
        #[inline(never)]
        fn probe_target() -> usize {
            std::hint::black_box(probe_target as *const () as usize)
        }
        let addr = probe_target() + 1; // "return address" just inside the function
        let mut src = LiveStacks {
            table: &TABLE,
            own_base: 1, // nothing is dropped
            exe: b"/the/exe",
            main_base: {
                // SAFETY: no preconditions.
                let phdr = unsafe { libc::getauxval(libc::AT_PHDR) } as usize;
                dl_info(phdr).map_or(0, |i| i.dli_fbase as usize)
            },
        };
        let mut b = [0u8; 1024];
        let mut w = Buf::new(&mut b);
        src.symbolize(addr, &mut w);
        let s = String::from_utf8_lossy(w.bytes()).into_owned();
        assert!(s.contains("probe_target"), "{s}");
        assert!(s.ends_with("(/the/exe)"), "the main program's path: {s}");
        let mut b = [0u8; 4096];
        assert!(self_exe(&mut b).starts_with(b"/"));
    }

    /// The one test that touches the process-wide state: configure, count, flush
    /// twice, one report in the file.
    #[test]
    fn flush_is_idempotent() {
        let dir = std::env::temp_dir().join(format!("klock-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report-%p.txt");
        let real = dir.join(format!("report-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&real);
        let p = path.to_str().unwrap().as_bytes().to_vec();
        let on = configure(&Config {
            level: 2,
            file: Some(&p),
            top: 5,
            slots: 256,
        });
        assert!(on && enabled() && level() == 2);
        let lock = 0xdead_0000usize;
        acquired(lock, Family::Mutex, true, 1_000);
        released(lock, Family::Mutex);
        acquired(lock, Family::Mutex, false, 0);
        released(lock, Family::Mutex);
        flush();
        flush();
        let text = std::fs::read_to_string(&real).unwrap();
        assert_eq!(text.matches("locks seen").count(), 1, "{text}");
        assert!(text.contains("0xdead0000"), "{text}");
        let stack = text.split("first contended at:\n").nth(1).expect(&text);
        assert!(stack.starts_with("    0x"), "a symbolized frame: {text}");
        // A second configure is ignored.
        assert!(configure(&Config {
            level: 0,
            file: None,
            top: 1,
            slots: 64
        }));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

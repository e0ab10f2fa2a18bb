//! Per-thread queue nodes, reached through a slot registry so that a 32-bit
//! lock word can name a queue tail (the kernel's per-CPU `qnodes[4]`, made
//! per-thread: a user thread can be preempted anywhere, so per-CPU nodes would
//! be reused while still queued).
//!
//! # Tail encoding
//!
//! ```text
//!  31                    18 17 16 15                0
//! +------------------------+-----+-------------------+
//! |       slot + 1         |level|  (lock's own bits)|
//! +------------------------+-----+-------------------+
//! ```
//!
//! * bits 16-17: nesting level 0..=3 (a thread that queues for a lock while
//!   it already holds a node, e.g. an OSQ spinner's node and then a wait-list
//!   node, or a lock taken inside a condvar predicate, uses the next level);
//! * bits 18-31: slot + 1 (14 bits, so at most [`MAX_SLOTS`] = 16383 slots);
//!   `tail == 0` means "no queue", like the kernel's cpu+1;
//! * bits 0-15 are left to the lock (qspinlock: locked byte + pending bit).
//!
//! # Slots and memory
//!
//! A thread takes a slot the first time it needs a node and returns it when it
//! exits (a thread-local destructor). Node memory is **type-stable**: it is
//! allocated in chunks on demand and never freed while the registry lives (the
//! process-wide registry lives forever), because successors and unlockers may
//! hold a node's address after its owner moved on.
//!
//! # INV-WAKE-ADDR: after the release, wake an address and touch nothing else
//!
//! A node is reused as soon as its thread leaves [`with_node`], possibly at
//! once, by the same thread, for another protocol (a thread that took a
//! spinlock goes on to wait for a mutex with the same node level). Therefore:
//!
//! * a stale **reference** may be used only to `futex_wake` the node's word
//!   (a spurious wake, which every waiter tolerates) or to read a hint;
//! * every **store** into another thread's node happens while that node is
//!   provably still queued in our protocol: before the releasing RMW that lets
//!   its thread finish (a lock release, an MCS grant, a list removal), or under
//!   the list lock that the node's thread needs in order to leave;
//! * a **CAS** into another thread's node is allowed where its expected value
//!   carries our protocol's [`tag`]: on a node that moved on it fails.
//!
//! Sites cite this rule as INV-WAKE-ADDR (`docs/invariants.md`; design
//! principle P13 in `docs/design.md`). Its
//! violation (a qspinlock unlock that stored RUNNING into its successor's node
//! after the release) once hung programs that mixed `SpinLock` with `Mutex`
//! and `Condvar` in the same threads; the tags below make such a store
//! detectable ([`check_tag`]).
//!
//! # Signal handlers
//!
//! klock's locks are **not async-signal-safe** (neither is
//! `pthread_mutex_lock`): a thread's first use of a node takes the registry's
//! lock and may allocate, the first use of a thread id takes the id list's
//! lock, and a handler that takes a lock its thread already holds deadlocks.
//! Do not lock klock locks in signal handlers.
//!
//! # Fallback when no node is available
//!
//! [`with_node`] passes `None` when the thread cannot have a node: every slot
//! is taken (more than [`crate::tune::Tunables::node_slots`] threads queue at
//! once), the nesting depth exceeds 4, or the thread-local is being destroyed.
//! Locks then take a **non-queued path** on the lock word itself, like the
//! kernel's `lock_no_node` case: trylock within the spin budget, then back off
//! (yield; the PV locks sleep on the lock word as a "head-like" waiter). This
//! path is unfair but correct, and it needs no memory, which is why it is
//! preferred over heap nodes in an overflow slot range (a heap node would
//! have to outlive every stale reference, i.e. leak, and the 14-bit slot field
//! is already exhausted in exactly this situation).
//!
//! # Fork
//!
//! The global registry is fork-safe ([`crate::fork`]): its free list is
//! guarded by klock's internal registry lock, which the atfork prepare handler
//! takes (after finishing the registry's lazy creation and giving the forking
//! thread its slot) and the parent and child handlers release. A forked child
//! can therefore start threads that take slots, and queue on new locks.
//!
//! Slots leased by threads that do not exist in the child stay leased there (a
//! bounded leak of one slot per vanished thread; lock words copied from the
//! parent may still name them, so they are not reclaimed). A lock that, at the
//! fork, was held by another thread or had queued waiters (spinners in its
//! MCS/OSQ queue, sleepers on its wait list) keeps naming those vanished
//! threads' nodes in the child: using it there **may hang forever**, as a
//! pthread mutex held across `fork()` does. The child may use only locks that
//! were free with no waiters at the fork, and any lock it creates. See
//! `docs/fork.md`.
//!
//! ```
//! klock::internal::node::with_node(|q| {
//!     let q = q.expect("a node is available");
//!     assert_eq!(q.level(), 0);
//!     assert!(std::ptr::eq(q.node(), klock::internal::node::decode(q.tail())));
//! });
//! ```

use crate::reglock::RegLock;
use crate::sync::atomic::{AtomicU32, Ordering};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, Ordering as StdOrdering};

/// Bit offset of the tail (level field) in a 32-bit word.
///
/// ```
/// assert_eq!(klock::internal::node::TAIL_OFFSET, 16);
/// ```
pub const TAIL_OFFSET: u32 = 16;
/// Bit offset of the level field.
///
/// ```
/// assert_eq!(klock::internal::node::LEVEL_OFFSET, klock::internal::node::TAIL_OFFSET);
/// ```
pub const LEVEL_OFFSET: u32 = 16;
/// Width of the level field.
///
/// ```
/// assert_eq!(1 << klock::internal::node::LEVEL_BITS, klock::internal::node::LEVELS);
/// ```
pub const LEVEL_BITS: u32 = 2;
/// Bit offset of the slot+1 field.
///
/// ```
/// assert_eq!(klock::internal::node::SLOT_OFFSET, 18);
/// ```
pub const SLOT_OFFSET: u32 = LEVEL_OFFSET + LEVEL_BITS;
/// Width of the slot+1 field.
///
/// ```
/// assert_eq!(klock::internal::node::SLOT_BITS, 14);
/// ```
pub const SLOT_BITS: u32 = 32 - SLOT_OFFSET;
/// Mask of every tail bit (level and slot).
///
/// ```
/// assert_eq!(klock::internal::node::TAIL_MASK, 0xffff_0000);
/// ```
pub const TAIL_MASK: u32 = !((1 << TAIL_OFFSET) - 1);
/// Nesting levels per thread (the kernel's `_Q_MAX_NODES`).
///
/// ```
/// assert_eq!(klock::internal::node::LEVELS, 4);
/// ```
pub const LEVELS: u32 = 4;
/// Largest possible slot count (slot+1 must fit in [`SLOT_BITS`]).
///
/// ```
/// assert_eq!(klock::internal::node::MAX_SLOTS, 16383);
/// ```
pub const MAX_SLOTS: u32 = (1 << SLOT_BITS) - 1;

/// Encode `(slot, level)` as a tail. Returns `None` if either is out of range.
///
/// ```
/// use klock::internal::node::{encode_tail, decode_tail};
/// let t = encode_tail(5, 2).unwrap();
/// assert_eq!(t & 0xffff, 0);
/// assert_eq!(decode_tail(t), Some((5, 2)));
/// assert_eq!(encode_tail(16383, 0), None);
/// ```
pub const fn encode_tail(slot: u32, level: u32) -> Option<u32> {
    if slot >= MAX_SLOTS || level >= LEVELS {
        return None;
    }
    Some(((slot + 1) << SLOT_OFFSET) | (level << LEVEL_OFFSET))
}

/// Decode a tail (the low 16 bits are ignored) into `(slot, level)`; `None` for
/// the empty tail.
///
/// ```
/// assert_eq!(klock::internal::node::decode_tail(0x0000_00ff), None);
/// ```
pub const fn decode_tail(tail: u32) -> Option<(u32, u32)> {
    let slot1 = tail >> SLOT_OFFSET;
    if slot1 == 0 {
        return None;
    }
    Some((slot1 - 1, (tail >> LEVEL_OFFSET) & ((1 << LEVEL_BITS) - 1)))
}

/// Protocol tags: the high byte of every value a protocol stores into a node's
/// `state` or `grant` word (`docs/design.md`, principle P14). Four protocols queue the same
/// per-thread nodes (one after another, never at once): the queued spinlock,
/// the OSQ, the wait list (mutex) and the condvar. Their values are disjoint,
/// so a store that lands in a node after its thread moved on to another
/// protocol (a "stale write", forbidden by INV-WAKE-ADDR, the module docs)
/// is recognisable: each view checks in debug builds that a word it reads in
/// its own node carries its own tag ([`check_tag`]), and every CAS into another
/// thread's node expects a tagged value, so it fails harmlessly on a node that
/// has moved on.
///
/// ```
/// use klock::internal::node::tag;
/// let all = [tag::QSPIN, tag::OSQ, tag::WAITER, tag::CONDVAR];
/// for (i, a) in all.iter().enumerate() {
///     assert_eq!(a & !tag::MASK, 0);
///     assert!(all[i + 1..].iter().all(|b| a != b));
/// }
/// ```
pub mod tag {
    /// Mask of the tag byte.
    ///
    /// ```
    /// assert_eq!(klock::internal::node::tag::MASK, 0xff00_0000);
    /// ```
    pub const MASK: u32 = 0xff00_0000;
    /// Queued spinlock (`spin::QsState`, its MCS grant).
    ///
    /// ```
    /// assert_eq!(klock::internal::node::tag::QSPIN >> 24, b'Q' as u32);
    /// ```
    pub const QSPIN: u32 = (b'Q' as u32) << 24;
    /// Optimistic spin queue (`osq::OsqGrant`).
    ///
    /// ```
    /// assert_eq!(klock::internal::node::tag::OSQ >> 24, b'O' as u32);
    /// ```
    pub const OSQ: u32 = (b'O' as u32) << 24;
    /// Mutex wait list (`waitlist::WaiterState`).
    ///
    /// ```
    /// assert_eq!(klock::internal::node::tag::WAITER >> 24, b'M' as u32);
    /// ```
    pub const WAITER: u32 = (b'M' as u32) << 24;
    /// Condvar wait list (`condvar::CondState`).
    ///
    /// ```
    /// assert_eq!(klock::internal::node::tag::CONDVAR >> 24, b'C' as u32);
    /// ```
    pub const CONDVAR: u32 = (b'C' as u32) << 24;

    /// The protocol name of a tagged value, for diagnostics.
    ///
    /// ```
    /// use klock::internal::node::tag;
    /// assert_eq!(tag::name(tag::OSQ | 1), "osq");
    /// assert_eq!(tag::name(0), "none");
    /// ```
    pub fn name(v: u32) -> &'static str {
        match v & MASK {
            QSPIN => "qspinlock",
            OSQ => "osq",
            WAITER => "mutex wait list",
            CONDVAR => "condvar",
            0 => "none",
            _ => "unknown",
        }
    }
}

/// Debug check for a value read from the caller's **own** node (or one its
/// protocol guarantees is still queued with it): it must carry `tag` (or be 0,
/// a node never used). A value of another protocol means a stale write from a
/// thread that touched the node after the node's previous protocol released it,
/// a violation of INV-WAKE-ADDR. Compiles to nothing in release builds.
///
/// ```
/// use klock::internal::node::{check_tag, tag};
/// check_tag("state", tag::QSPIN | 2, tag::QSPIN);
/// ```
#[inline(always)]
#[track_caller]
pub fn check_tag(word: &'static str, v: u32, tag: u32) {
    debug_assert!(
        is_own(v, tag),
        "klock: stale write into a node: its {word} word holds {v:#010x} ({}), \
         but the node is queued by the {} protocol (INV-WAKE-ADDR violated)",
        tag::name(v),
        tag::name(tag),
    );
}

/// Does `v` belong to the protocol tagged `tag` (or is it 0, a node never
/// used)? The predicate behind [`check_tag`].
///
/// ```
/// use klock::internal::node::{is_own, tag};
/// assert!(is_own(tag::WAITER | 2, tag::WAITER));
/// assert!(is_own(0, tag::WAITER));
/// assert!(!is_own(tag::QSPIN | 1, tag::WAITER)); // a stale qspinlock store
/// ```
#[inline(always)]
pub const fn is_own(v: u32, tag: u32) -> bool {
    v == 0 || v & tag::MASK == tag
}

/// One queue node: raw words whose meaning belongs to the protocol that
/// currently queues the node. Protocols never touch these fields directly:
/// each reads and writes a node through its own typed view
/// (`spin::qspinlock::QsNode`, `osq::OsqNode`, `waitlist::Waiter`, `rwlock::RwWaiter`), which names the
/// words for that protocol and stores only values with its [`tag`].
///
/// | word | qspinlock | OSQ | wait list (mutex, condvar) | parking lot (`asym::lot`) |
/// |---|---|---|---|---|
/// | `grant` | MCS grant (`QsGrant`) | MCS grant (`OsqGrant`) | mutex: the waiter's real-time priority (0 = none) | high 32 bits of the word's address |
/// | `next` | successor's tail | successor's tail | list link | list link |
/// | `prev` | unused | predecessor's tail | list link | list link |
/// | `state` | `QsState`, futex word | unused | `WaiterState`/`CondState`, futex word | `WaiterState`, futex word |
/// | `ident` | unused | queue position | waiter's thread id | low 32 bits of the word's address |
/// | `stamp` | unused | heartbeat (µs) | mutex: when it became first (µs) | its first wake (µs; 0 = none yet) |
///
/// ```
/// let n = klock::internal::node::Node::new();
/// assert!(format!("{n:?}").contains("state"));
/// ```
#[cfg_attr(not(loom), repr(align(64)))]
#[derive(Debug)]
pub struct Node {
    /// MCS grant (tagged per protocol).
    pub(crate) grant: AtomicU32,
    /// Link to the successor (a tail code, 0 = none).
    pub(crate) next: AtomicU32,
    /// Link to the predecessor (a tail code).
    pub(crate) prev: AtomicU32,
    /// Tagged state, and the futex word the node's thread sleeps on.
    pub(crate) state: AtomicU32,
    /// A thread id or queue position (per protocol).
    pub(crate) ident: AtomicU32,
    /// A time stamp (per protocol).
    pub(crate) stamp: AtomicU32,
    /// Kick timestamp (monotonic ns) for the kick-to-wake latency statistic.
    #[cfg(feature = "stats")]
    pub(crate) kick_ns: std::sync::atomic::AtomicU64,
}

impl Default for Node {
    fn default() -> Self {
        Node::new()
    }
}

impl Node {
    /// A node with every word zero (no protocol yet).
    ///
    /// ```
    /// let _n = klock::internal::node::Node::new();
    /// ```
    pub fn new() -> Node {
        Node {
            grant: AtomicU32::new(0),
            next: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            state: AtomicU32::new(0),
            ident: AtomicU32::new(0),
            stamp: AtomicU32::new(0),
            #[cfg(feature = "stats")]
            kick_ns: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The raw `state` word (diagnostics and tests): its tag names the protocol
    /// that last wrote it.
    ///
    /// ```
    /// assert_eq!(klock::internal::node::Node::new().state_value(), 0);
    /// ```
    pub fn state_value(&self) -> u32 {
        // Relaxed: a diagnostic snapshot.
        self.state.load(Ordering::Relaxed)
    }
}

/// Slots per lazily allocated chunk.
const CHUNK: u32 = if cfg!(loom) { 4 } else { 64 };

/// A registry of node slots. The process uses one global registry
/// ([`with_node`], [`decode`]); tests can build small private ones to check
/// exhaustion and recycling.
///
/// ```
/// let reg = klock::internal::node::Registry::new(1);
/// let a = reg.acquire().unwrap();
/// assert!(reg.acquire().is_none()); // exhausted
/// let slot = a.slot();
/// drop(a);
/// assert_eq!(reg.acquire().unwrap().slot(), slot); // recycled
/// ```
#[derive(Debug)]
pub struct Registry {
    capacity: u32,
    chunks: Box<[AtomicPtr<Node>]>,
    /// Internal registry lock (not `std::sync::Mutex`): the atfork handlers
    /// of the global registry take and release it in separate calls.
    free: RegLock<FreeSlots>,
}

#[derive(Debug, Default)]
struct FreeSlots {
    fresh: u32,
    recycled: Vec<u32>,
    in_use: u32,
}

impl Registry {
    /// A registry with `capacity` slots (clamped to 1..=[`MAX_SLOTS`]).
    ///
    /// ```
    /// assert_eq!(klock::internal::node::Registry::new(100_000).capacity(), klock::internal::node::MAX_SLOTS);
    /// ```
    pub fn new(capacity: u32) -> Arc<Registry> {
        let capacity = capacity.clamp(1, MAX_SLOTS);
        let nchunks = capacity.div_ceil(CHUNK) as usize;
        Arc::new(Registry {
            capacity,
            chunks: (0..nchunks)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            free: RegLock::new(FreeSlots::default()),
        })
    }

    /// Number of slots.
    ///
    /// ```
    /// assert_eq!(klock::internal::node::Registry::new(3).capacity(), 3);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Slots currently leased.
    ///
    /// ```
    /// let r = klock::internal::node::Registry::new(2);
    /// let _a = r.acquire();
    /// assert_eq!(r.in_use(), 1);
    /// ```
    pub fn in_use(&self) -> u32 {
        self.free.lock().in_use
    }

    /// Lease a free slot (recycled slots first), or `None` if all are taken.
    ///
    /// ```
    /// let r = klock::internal::node::Registry::new(1);
    /// assert!(r.acquire().is_some());
    /// ```
    pub fn acquire(self: &Arc<Self>) -> Option<SlotLease> {
        let mut f = self.free.lock();
        let slot = if let Some(s) = f.recycled.pop() {
            s
        } else if f.fresh < self.capacity {
            let s = f.fresh;
            f.fresh += 1;
            s
        } else {
            return None;
        };
        f.in_use += 1;
        let c = (slot / CHUNK) as usize;
        if self.chunks[c].load(StdOrdering::Acquire).is_null() {
            let chunk: Box<[Node]> = (0..CHUNK * LEVELS).map(|_| Node::new()).collect();
            // Release pairs with the Acquire load in `node()`: the nodes'
            // initialisation is visible to whoever finds the pointer. Only this
            // function stores, under the `free` mutex, so a plain store suffices.
            self.chunks[c].store(Box::into_raw(chunk) as *mut Node, StdOrdering::Release);
        }
        drop(f);
        Some(SlotLease {
            registry: self.clone(),
            slot,
        })
    }

    fn release(&self, slot: u32) {
        let mut f = self.free.lock();
        f.recycled.push(slot);
        f.in_use -= 1;
    }

    /// The node named by `tail` (`None` for an empty tail, a slot beyond the
    /// capacity, or a slot never leased).
    ///
    /// ```
    /// let r = klock::internal::node::Registry::new(2);
    /// let l = r.acquire().unwrap();
    /// let t = klock::internal::node::encode_tail(l.slot(), 1).unwrap();
    /// assert!(r.node(t).is_some());
    /// assert!(r.node(0).is_none());
    /// ```
    pub fn node(&self, tail: u32) -> Option<&Node> {
        let (slot, level) = decode_tail(tail)?;
        if slot >= self.capacity {
            return None;
        }
        // Acquire pairs with the Release store in `acquire()`.
        let p = self.chunks[(slot / CHUNK) as usize].load(StdOrdering::Acquire);
        if p.is_null() {
            return None;
        }
        let i = ((slot % CHUNK) * LEVELS + level) as usize;
        // SAFETY: `p` points to a chunk of CHUNK*LEVELS nodes allocated by
        // `acquire` and freed only when the registry is dropped (which `&self`
        // excludes); `i < CHUNK*LEVELS`.
        Some(unsafe { &*p.add(i) })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        for c in self.chunks.iter() {
            let p = c.load(StdOrdering::Acquire);
            if !p.is_null() {
                // SAFETY: allocated in `acquire` as a boxed slice of exactly
                // CHUNK*LEVELS nodes; nobody can reference it once the registry
                // itself is being dropped.
                drop(unsafe {
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                        p,
                        (CHUNK * LEVELS) as usize,
                    ))
                });
            }
        }
    }
}

/// A leased slot; dropping it returns the slot to its registry.
///
/// ```
/// let r = klock::internal::node::Registry::new(1);
/// let l = r.acquire().unwrap();
/// assert_eq!(l.slot(), 0);
/// assert!(l.node(3).is_some());
/// ```
#[derive(Debug)]
pub struct SlotLease {
    registry: Arc<Registry>,
    slot: u32,
}

impl SlotLease {
    /// The slot number.
    ///
    /// ```
    /// let r = klock::internal::node::Registry::new(1);
    /// assert_eq!(r.acquire().unwrap().slot(), 0);
    /// ```
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The node of this slot at `level` (`None` if `level >= LEVELS`).
    ///
    /// ```
    /// let r = klock::internal::node::Registry::new(1);
    /// let l = r.acquire().unwrap();
    /// assert!(l.node(0).is_some() && l.node(4).is_none());
    /// ```
    pub fn node(&self, level: u32) -> Option<&Node> {
        self.registry.node(encode_tail(self.slot, level)?)
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        self.registry.release(self.slot);
    }
}

#[cfg(not(loom))]
static GLOBAL: std::sync::OnceLock<Arc<Registry>> = std::sync::OnceLock::new();

#[cfg(not(loom))]
#[inline]
fn global() -> &'static Arc<Registry> {
    match GLOBAL.get() {
        Some(r) => r,
        None => init_global(),
    }
}

#[cfg(not(loom))]
#[cold]
fn init_global() -> &'static Arc<Registry> {
    // The tunables and the fork hooks first, outside the initialiser (see
    // crate::fork: a first install inside it could wait for a fork whose
    // prepare waits for it).
    let slots = crate::tune::get().node_slots;
    crate::fork::install(crate::fork::Slot::Node, &FORK_HOOKS);
    GLOBAL.get_or_init(|| Registry::new(slots))
}

/// At a fork: finish the registry, give the forking thread its slot, hold
/// the registry lock across the fork (see `crate::fork`).
#[cfg(not(loom))]
static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    finish: || {
        let _ = global();
    },
    thread: || with_node(|_| ()),
    lock: atfork_lock,
    unlock: atfork_unlock,
    ..crate::fork::Hooks::NONE
};

/// atfork prepare: take the global registry's lock (see [`crate::fork`]).
#[cfg(not(loom))]
fn atfork_lock() {
    global().free.raw_lock();
}

/// atfork parent/child: release the lock [`atfork_lock`] took.
///
/// # Safety
///
/// This thread took the lock with [`atfork_lock`] and has not released it.
#[cfg(not(loom))]
unsafe fn atfork_unlock() {
    // SAFETY: the caller's contract is `raw_unlock`'s.
    unsafe { global().free.raw_unlock() }
}

#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: Arc<Registry> = Registry::new(8);
}

#[cfg(loom)]
fn global() -> &'static Arc<Registry> {
    &GLOBAL
}

/// The process-wide registry (capacity `KLOCK_NODE_SLOTS`).
///
/// ```
/// assert!(klock::internal::node::global_registry().capacity() >= 1);
/// ```
pub fn global_registry() -> &'static Arc<Registry> {
    global()
}

/// The node a tail names, in the global registry.
///
/// # Aborts
///
/// If `tail` does not name a node of a leased slot. Lock words only ever hold
/// tails produced by [`with_node`], so this is memory corruption (a lock
/// that was neither initialised nor zeroed, or was overwritten): klock
/// prints one line, `klock: corrupted queue tail ...`, and aborts the
/// process, instead of UB. Not a panic: unwinding out of a half-done lock
/// operation would leave the lock (and its wait-list lock bit) unusable, and
/// through the C library it would print Rust's panic text and backtrace
/// before the message. Under loom it panics, so that the model checker
/// reports it.
///
/// ```
/// klock::internal::node::with_node(|q| {
///     let q = q.unwrap();
///     let n = klock::internal::node::decode(q.tail());
///     assert!(std::ptr::eq(n, q.node()));
/// });
/// ```
#[inline]
pub fn decode(tail: u32) -> &'static Node {
    match global().node(tail) {
        Some(n) => n,
        None => corrupted_tail(tail),
    }
}

/// [`decode`]'s failure: one line on stderr, then abort (see there).
#[cold]
#[inline(never)]
fn corrupted_tail(tail: u32) -> ! {
    let what = format_args!(
        "klock: corrupted queue tail {tail:#010x}: no such node (a lock that was \
         neither initialised nor zeroed, or was overwritten); aborting"
    );
    if cfg!(loom) {
        panic!("{what}");
    }
    fatal(what)
}

/// Print `what` as one line on stderr, then abort the process, without
/// Rust's panic machinery (no panic message, no backtrace, no unwinding).
/// The line is formatted into a stack buffer (cut at 255 bytes) and written
/// with one raw `write` system call: no allocation, no lock (the heap or
/// stderr's lock may be what is broken), and no pthread cancellation point.
#[cold]
pub(crate) fn fatal(what: std::fmt::Arguments<'_>) -> ! {
    let mut line = FatalLine {
        buf: [0; 256],
        len: 0,
    };
    let _ = std::fmt::Write::write_fmt(&mut line, what);
    line.buf[line.len] = b'\n';
    // SAFETY: `buf` is valid for `len + 1` bytes (len <= 255, see
    // write_str); write(2) only reads them. Its result does not matter: the
    // process aborts next.
    unsafe { libc::syscall(libc::SYS_write, 2, line.buf.as_ptr(), line.len + 1) };
    std::process::abort()
}

/// [`fatal`]'s stack buffer: text up to 255 bytes, room for the newline.
struct FatalLine {
    buf: [u8; 256],
    len: usize,
}

impl std::fmt::Write for FatalLine {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.buf.len() - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// A node leased for the duration of a [`with_node`] call: the node and its tail.
///
/// ```
/// klock::internal::node::with_node(|q| assert!(q.unwrap().tail() != 0));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct QNode {
    node: &'static Node,
    tail: u32,
}

impl QNode {
    /// The node.
    #[inline]
    ///
    /// ```
    /// klock::internal::node::with_node(|q| assert_eq!(q.unwrap().node().state_value() & 0, 0));
    /// ```
    pub fn node(&self) -> &'static Node {
        self.node
    }

    /// Its tail code (low 16 bits zero).
    #[inline]
    ///
    /// ```
    /// klock::internal::node::with_node(|q| assert_eq!(q.unwrap().tail() & 0xffff, 0));
    /// ```
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// Its nesting level (0..=3).
    #[inline]
    ///
    /// ```
    /// klock::internal::node::with_node(|q| assert!(q.unwrap().level() < 4));
    /// ```
    pub fn level(&self) -> u32 {
        (self.tail >> LEVEL_OFFSET) & ((1 << LEVEL_BITS) - 1)
    }
}

struct ThreadNodes {
    lease: Cell<Option<u32>>,
    lease_obj: std::cell::RefCell<Option<SlotLease>>,
    depth: Cell<u32>,
    no_node: Cell<bool>,
}

crate::sync::thread_local! {
    static THREAD: ThreadNodes = const_thread_nodes();
}

fn const_thread_nodes() -> ThreadNodes {
    ThreadNodes {
        lease: Cell::new(None),
        lease_obj: std::cell::RefCell::new(None),
        depth: Cell::new(0),
        no_node: Cell::new(false),
    }
}

/// Run `f` with this thread's node of the next free nesting level, or with
/// `None` if the thread cannot have one (all slots taken, nesting deeper than
/// 4, thread-local destroyed, or [`simulate_no_node`] on). The level is
/// released when `f` returns (also on unwind). The node's fields are as the
/// previous user left them: the protocol's view initialises them before it
/// publishes the node.
///
/// ```
/// klock::internal::node::with_node(|outer| {
///     klock::internal::node::with_node(|inner| {
///         assert_eq!(inner.unwrap().level(), outer.unwrap().level() + 1);
///     });
/// });
/// ```
#[inline]
pub fn with_node<R>(f: impl FnOnce(Option<QNode>) -> R) -> R {
    let q = lease();
    let _g = q.map(Unlease);
    f(q)
}

/// Returns a [`lease`]d node when dropped (also on unwind).
struct Unlease(QNode);

impl Drop for Unlease {
    fn drop(&mut self) {
        unlease(self.0);
    }
}

/// [`with_node`] without the closure: lease this thread's node of the next
/// free nesting level, or `None` (as for `with_node`). For callers whose wait
/// cannot run inside a closure: the C layer's cancellable condvar wait
/// sleeps in a C frame between two Rust calls. Every lease must be returned
/// with [`unlease`], on this thread, innermost first.
///
/// ```
/// let q = klock::internal::node::lease().unwrap();
/// klock::internal::node::with_node(|inner| assert_eq!(inner.unwrap().level(), q.level() + 1));
/// klock::internal::node::unlease(q);
/// ```
#[inline]
pub fn lease() -> Option<QNode> {
    THREAD
        .try_with(|t| {
            let depth = t.depth.get();
            if depth >= LEVELS || t.no_node.get() {
                return None;
            }
            let slot = match t.lease.get() {
                Some(s) => s,
                None => {
                    let l = global().acquire()?;
                    let s = l.slot();
                    *t.lease_obj.borrow_mut() = Some(l);
                    t.lease.set(Some(s));
                    s
                }
            };
            let tail = encode_tail(slot, depth).expect("slot below MAX_SLOTS, depth below LEVELS");
            t.depth.set(depth + 1);
            Some(QNode {
                node: decode(tail),
                tail,
            })
        })
        // Thread-local already destroyed (a lock used from a TLS destructor).
        .unwrap_or(None)
}

/// Return a node taken with [`lease`] (the innermost one this thread holds).
///
/// ```
/// let q = klock::internal::node::lease().unwrap();
/// klock::internal::node::unlease(q);
/// ```
#[inline]
pub fn unlease(q: QNode) {
    let _ = THREAD.try_with(|t| {
        let depth = t.depth.get();
        debug_assert_eq!(depth, q.level() + 1, "node leases returned out of order");
        t.depth.set(depth - 1);
    });
}

/// Test hook: make [`with_node`] pass `None` on this thread while `on`, so the
/// locks' no-node fallback can be exercised without exhausting 16383 slots.
///
/// ```
/// klock::internal::node::simulate_no_node(true);
/// klock::internal::node::with_node(|q| assert!(q.is_none()));
/// klock::internal::node::simulate_no_node(false);
/// ```
pub fn simulate_no_node(on: bool) {
    let _ = THREAD.try_with(|t| t.no_node.set(on));
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests;

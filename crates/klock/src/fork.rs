//! Fork safety of klock's own global state.
//!
//! klock keeps a little process-wide state besides the locks themselves: the
//! node slot registry (`node`), the thread-id free list (`tid`), the stats
//! registry (`stat`, feature `stats`), the parking lot of the parked
//! spinlock (`asym::lot`), and values computed once: the tunables (`tune`),
//! the effective CPU count and the quota test (`wait::cpus`) and the chaos
//! seed (`chaos`). `fork()` copies only the calling thread, so without care
//! a child could inherit a registry whose internal lock was held by another
//! thread of the parent (and wait for it forever the first time it starts a
//! thread or queues on a lock), or a once-initialised value that another
//! thread was still computing (and wait for that forever).
//!
//! # What klock does
//!
//! This module is a leaf: it imports none of that state. Each piece
//! registers into it from below, with [`install`]: a fixed-order table with
//! one [`Slot`] per piece, each holding the piece's [`Hooks`]. A module
//! installs its hooks before it first builds its state, outside every
//! once-initialiser and holding no lock; the first install registers the
//! `pthread_atfork` handlers ([`register`]; idempotent, also public so a
//! program or the interposer can do it early). The handlers walk the table:
//!
//! * **prepare** (in the forking thread, before the fork), in three phases,
//!   each over the slots in table order: *finish* every once-initialiser
//!   (tunables, effective CPUs and quota, chaos seed, the global node
//!   registry); give the forking thread its own *thread* share (id, node
//!   slot, stats block); take the registry *locks* (thread ids, node slots,
//!   stats). So at the fork no once-initialiser is running and no registry
//!   is mid-update; and the forking thread needs no registry lock until the
//!   fork is over (other libraries' prepare handlers may lock klock mutexes,
//!   e.g. through the interposer).
//! * **parent** and **child** (after the fork): release those locks in the
//!   reverse order. Their protected data are consistent (prepare held the
//!   locks), so releasing is all the child needs; then the child runs the
//!   *child* steps (the parking lot empties its lists: they name only
//!   threads of the parent).
//!
//! A first install that races a fork could land after prepare's walk and
//! then build state the fork copies half built. [`install`] and prepare are
//! a Dekker pair (SeqCst): either the walk sees the slot, or the installer
//! sees the fork in progress and waits until its handlers are done (the
//! forking thread itself never waits: its finish steps may install). The
//! registration flag is an atomic, not a `std::sync::Once`: a `Once` left
//! "running" by a thread of the parent would make the child wait forever,
//! while a thread that sees "registering by someone else" just carries on.
//!
//! # What the child may do
//!
//! Create and use new locks, condvars and threads (they get node slots and
//! ids), and use any lock that was **free with no queued waiters** at the
//! fork. A lock that another thread held, or that had waiters (queued
//! spinners, sleeping mutex or condvar waiters), is in the same state in the
//! child, but the threads that would release it or that are named in its
//! queue do not exist there: using it may hang forever, exactly as with a
//! pthread mutex held across `fork()`. The child must not touch such locks.
//!
//! Node slots and thread ids leased by threads that do not exist in the child
//! stay leased there: at most one slot and one id per thread of the parent,
//! a bounded leak (they cannot be reclaimed safely: lock words inherited from
//! the parent may still name them). A child that forks again leaks again, so
//! a long fork chain of heavily threaded processes can exhaust the node slots;
//! locks then take their slower no-node path, still correct. With `stats`,
//! the counter blocks of the vanished threads stay in the sums.
//!
//! Not covered: private `node::Registry` instances (tests), a fork that
//! races with klock's very first initialisation in the process (while the
//! thread that registers the handlers is still inside `pthread_atfork`: the
//! child then works but has no handlers for its own forks), a first use that
//! races a fork whose other prepare handlers wait for a lock that first user
//! holds (the first user waits for the fork, see above), and `fork()` from a
//! signal handler that interrupted klock's registry code (it deadlocks in
//! prepare, as `fork()` from a handler that interrupted `malloc` would).
//! `klock::register_fork_handlers()`, called before the program starts
//! threads, builds every piece of state at once and rules out the first two.
//!
//! # The internal lock
//!
//! The registries' lock is `reglock`'s `RegLock`, a small futex mutex with
//! raw lock/unlock calls for these handlers.
//!
//! ```
//! klock::internal::fork::register(); // idempotent; klock also does it on first use
//! assert!(klock::internal::fork::registered());
//! ```

// ---------------------------------------------------------------------------
// The hook table
// ---------------------------------------------------------------------------

/// The table's slots, one per piece of process-wide state, in the order the
/// handlers visit them: every phase of `prepare` walks the table from
/// [`Slot::Tune`] down, `parent` and `child` release in reverse. The order is
/// the dependency order (the tunables first: every other initialiser reads
/// them); the registry locks are never nested, so their order is only fixed,
/// not forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// `Chaos`, `Stat` and `AsymChaos` are installed only with their features.
#[cfg_attr(
    any(loom, not(all(feature = "chaos", feature = "stats"))),
    allow(dead_code)
)]
pub(crate) enum Slot {
    /// `tune`: the tunables (a once-initialised value).
    Tune,
    /// `wait::cpus`: the effective CPU count and the quota test.
    Cpus,
    /// `chaos`: the injection seed.
    Chaos,
    /// `tid`: the thread-id free list (a registry lock).
    Tid,
    /// `node`: the global node registry (once-initialised, then a lock).
    Node,
    /// `stat`: the counter blocks (a registry lock; feature `stats`).
    Stat,
    /// `asym::lot`: the parking lot's lists (emptied in the child).
    Lot,
    /// `asym` under `chaos`: the emulated in-flight plain-store unlocks
    /// (none in the child).
    AsymChaos,
    /// `lockdep`: the lock-order graph's lock.
    Lockdep,
    /// Unit tests' own slots (fresh, so that a test can install one).
    #[cfg(test)]
    TestA,
    #[cfg(test)]
    TestB,
}

/// How many [`Slot`]s the table has.
#[cfg(not(loom))]
const SLOTS: usize = if cfg!(test) {
    Slot::Lockdep as usize + 3
} else {
    Slot::Lockdep as usize + 1
};

/// What one piece of state does at a fork. Each field defaults to
/// [`Hooks::NONE`]'s no-op, so a module names only the steps it needs.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Hooks {
    /// prepare, phase 1: finish the once-initialisers (waiting for another
    /// thread's, if one is running), so that none is running at the fork.
    pub(crate) finish: fn(),
    /// prepare, phase 2: build the forking thread's own share (its id, node
    /// slot, counter block), so that it needs no registry lock until the
    /// fork is over.
    pub(crate) thread: fn(),
    /// prepare, phase 3: take the registry lock.
    pub(crate) lock: fn(),
    /// parent and child: release what `lock` took.
    ///
    /// # Safety
    ///
    /// Called only on the thread whose `prepare` ran `lock`, once.
    pub(crate) unlock: unsafe fn(),
    /// child only, after every unlock: reset state that names threads of the
    /// parent.
    pub(crate) child: fn(),
}

impl Hooks {
    /// No step at all: the base of every table entry.
    pub(crate) const NONE: Hooks = Hooks {
        finish: nop,
        thread: nop,
        lock: nop,
        unlock: nop,
        child: nop,
    };
}

fn nop() {}

/// Put `hooks` in `slot` if it is empty, registering the `pthread_atfork`
/// handlers first if need be. Each module calls this **before it first
/// builds the state the hooks cover, outside every once-initialiser and
/// holding no lock**: a first install that races a fork waits until that
/// fork's handlers are done (the fork's `prepare` may not have seen the
/// slot), so that no fork finds the state half built. Cheap once the slot is
/// filled (one load). Does nothing under loom.
#[inline]
#[cfg_attr(loom, allow(unused_variables))]
pub(crate) fn install(slot: Slot, hooks: &'static Hooks) {
    #[cfg(not(loom))]
    imp::install(slot, hooks);
}

// ---------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------

/// Register klock's `pthread_atfork` handlers if they are not registered yet.
/// klock does this itself before it first builds any of its global state.
/// Cheap after the first call (one atomic load). Never waits: if another
/// thread is registering right now, this returns at once. Does nothing under
/// loom.
///
/// ```
/// klock::internal::fork::register();
/// klock::internal::fork::register(); // the handlers are registered once
/// assert!(klock::internal::fork::registered());
/// ```
#[inline]
pub fn register() {
    #[cfg(not(loom))]
    imp::register();
}

/// Whether klock's atfork handlers are registered in this process (always
/// `false` under loom).
///
/// ```
/// let _ = klock::Mutex::new(0u8).lock(); // any use of klock registers them
/// assert!(klock::internal::fork::registered());
/// ```
pub fn registered() -> bool {
    #[cfg(not(loom))]
    {
        imp::registered()
    }
    #[cfg(loom)]
    {
        false
    }
}

#[cfg(not(loom))]
mod imp {
    use super::{Hooks, SLOTS, Slot};
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

    /// The table: `&'static Hooks` per slot, null = empty.
    static TABLE: [AtomicPtr<Hooks>; SLOTS] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

    /// A fork's handlers are between `prepare`'s first step and
    /// `parent`/`child`'s last.
    static PREPARING: AtomicBool = AtomicBool::new(false);

    /// The slots whose `lock` this prepare ran (bit = slot), so that the
    /// release runs `unlock` for exactly those, whatever was installed
    /// meanwhile. Written and read only by the forking thread.
    static LOCKED: AtomicU32 = AtomicU32::new(0);

    std::thread_local! {
        /// This thread runs `prepare`: its own first installs (an
        /// initialiser that `finish` runs) must not wait for its own fork.
        static FORKING: Cell<bool> = const { Cell::new(false) };
    }

    #[inline]
    pub(super) fn install(slot: Slot, hooks: &'static Hooks) {
        // Acquire: pairs with the Release half of `install_slow`'s SeqCst
        // store; the fast path only needs to see that the slot is filled.
        if TABLE[slot as usize].load(Ordering::Acquire).is_null() {
            install_slow(slot, hooks);
        }
    }

    #[cold]
    fn install_slow(slot: Slot, hooks: &'static Hooks) {
        register();
        // SeqCst (Dekker with `prepare`): either prepare's table walk, which
        // follows its SeqCst store of PREPARING, sees this slot, or the load
        // below sees PREPARING and this thread waits until the fork is over
        // before it builds any state the walk missed.
        TABLE[slot as usize].store(hooks as *const Hooks as *mut Hooks, Ordering::SeqCst);
        if PREPARING.load(Ordering::SeqCst) && !FORKING.with(Cell::get) {
            // The fork's parent/child handler clears the flag (the child has
            // no copy of this thread).
            while PREPARING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
    }

    /// The hooks in `slot`, if installed. SeqCst: see `install_slow`.
    fn hooks(slot: usize) -> Option<&'static Hooks> {
        let p = TABLE[slot].load(Ordering::SeqCst);
        // SAFETY: non-null entries were stored from `&'static Hooks`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    const UNREGISTERED: u32 = 0;
    const REGISTERING: u32 = 1;
    const REGISTERED: u32 = 2;

    /// Registration state. Relaxed throughout: the flag only decides which
    /// thread calls `pthread_atfork`; the handler list itself is synchronised
    /// by libc, and the handlers touch only state that has its own locks.
    static STATE: AtomicU32 = AtomicU32::new(UNREGISTERED);

    #[inline]
    pub(super) fn register() {
        if STATE.load(Ordering::Relaxed) != REGISTERED {
            register_slow();
        }
    }

    pub(super) fn registered() -> bool {
        STATE.load(Ordering::Relaxed) == REGISTERED
    }

    #[cold]
    fn register_slow() {
        // Relaxed: see STATE. Losers (REGISTERING or REGISTERED) return at once.
        if STATE
            .compare_exchange(
                UNREGISTERED,
                REGISTERING,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return;
        }
        // SAFETY: registers three `extern "C" fn()` without captured state;
        // they stay valid for the life of the process (klock is never
        // unloaded while its state is in use).
        let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        // On failure (ENOMEM) a later call tries again.
        let next = if r == 0 { REGISTERED } else { UNREGISTERED };
        STATE.store(next, Ordering::Relaxed);
    }

    #[cfg(test)]
    pub(super) fn installed(slot: Slot) -> bool {
        hooks(slot as usize).is_some()
    }

    pub(super) extern "C" fn prepare() {
        FORKING.with(|f| f.set(true));
        // SeqCst: the Dekker store that `install_slow` pairs with.
        PREPARING.store(true, Ordering::SeqCst);
        // Each phase walks the whole table again: a finish step may install
        // a slot of its own (this thread's installs do not wait).
        for s in 0..SLOTS {
            if let Some(h) = hooks(s) {
                (h.finish)();
            }
        }
        for s in 0..SLOTS {
            if let Some(h) = hooks(s) {
                (h.thread)();
            }
        }
        let mut locked = 0;
        for s in 0..SLOTS {
            if let Some(h) = hooks(s) {
                (h.lock)();
                locked |= 1 << s;
            }
        }
        // Relaxed: only this thread reads it, in parent/child.
        LOCKED.store(locked, Ordering::Relaxed);
    }

    /// Undo `prepare`'s locks in reverse order, then let waiting installers go.
    fn release() {
        let locked = LOCKED.swap(0, Ordering::Relaxed);
        for s in (0..SLOTS).rev() {
            if locked & (1 << s) != 0 {
                let unlock = hooks(s).expect("a locked slot stays installed").unlock;
                // SAFETY: `prepare` ran this slot's `lock` on this thread
                // (the atfork protocol runs prepare, then parent in the
                // parent or child in the child, on the forking thread), and
                // LOCKED's swap makes this the only release.
                unsafe { unlock() };
            }
        }
        // SeqCst: pairs with `install_slow`'s wait loop.
        PREPARING.store(false, Ordering::SeqCst);
        FORKING.with(|f| f.set(false));
    }

    pub(super) extern "C" fn parent() {
        release();
    }

    pub(super) extern "C" fn child() {
        // The child's only thread is the one that took the locks; the data
        // they guard are consistent, so releasing them is all that is needed.
        // (A contender of the parent may have left a lock word at 2; the
        // wake that causes finds nobody, harmlessly.)
        release();
        // Then the state that names threads of the parent (the parking lot
        // empties its lists).
        for s in 0..SLOTS {
            if let Some(h) = hooks(s) {
                (h.child)();
            }
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn first_use_registers_handlers() {
        let _ = crate::tune::get();
        assert!(registered());
        assert!(imp::installed(Slot::Tune));
        register();
        assert!(registered());
    }

    /// The Dekker between `install` and `prepare`: during a fork's handlers
    /// the forking thread's own first install returns at once (it may run
    /// inside a finish step), another thread's waits until the release, so
    /// that it builds no state the fork's walk missed. Fails if the wait or
    /// the forking thread's exemption is removed.
    #[test]
    fn an_install_racing_a_fork_waits_for_its_handlers() {
        static B: Hooks = Hooks::NONE;
        static DONE: AtomicBool = AtomicBool::new(false);
        imp::prepare();
        install(Slot::TestA, &Hooks::NONE); // the forking thread: no wait
        assert!(imp::installed(Slot::TestA));
        let t = std::thread::spawn(|| {
            install(Slot::TestB, &B);
            DONE.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !DONE.load(Ordering::SeqCst),
            "an install finished during prepare"
        );
        assert!(
            imp::installed(Slot::TestB),
            "the slot is filled before the wait"
        );
        imp::parent();
        t.join().unwrap();
        assert!(DONE.load(Ordering::SeqCst));
    }
}

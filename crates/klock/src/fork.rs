//! Fork safety of klock's own global state.
//!
//! klock keeps a little process-wide state besides the locks themselves: the
//! node slot registry ([`crate::node`]), the thread-id free list
//! ([`crate::tid`]), the stats registry ([`crate::stat`], feature `stats`),
//! the parking lot of the parked spinlock (`asym::lot`, reset by a child
//! hook it registers: [`on_child`]),
//! and values computed once: the tunables ([`crate::tune::get`]), the
//! effective CPU count ([`crate::wait::effective_cpus`]) and whether a CPU
//! quota limits the process ([`crate::wait::quota_limited`]). `fork()` copies only
//! the calling thread, so without care a child could inherit a registry whose
//! internal lock was held by another thread of the parent (and wait for it
//! forever the first time it starts a thread or queues on a lock), or a
//! once-initialised value that another thread was still computing (and wait
//! for that forever).
//!
//! # What klock does
//!
//! klock registers `pthread_atfork` handlers once per process, the first time
//! it builds any of that state ([`register`]; idempotent, also public so a
//! program or the interposer can do it early):
//!
//! * **prepare** (in the forking thread, before the fork): finish every lazy
//!   initialisation (tunables, effective CPUs, the quota test, the chaos
//!   seed, the global node registry), give the forking thread its id, node
//!   slot and stats block, then take the registries' internal locks in a
//!   fixed order: node slots, thread ids, stats. So at the fork no
//!   once-initialiser is running and no registry is mid-update; and the
//!   forking thread needs no registry lock until the fork is over (other libraries' prepare handlers may lock
//!   klock mutexes, e.g. through the interposer).
//! * **parent** and **child** (after the fork): release those locks in the
//!   reverse order. Their protected data are consistent (prepare held the
//!   locks), so releasing is all the child needs.
//!
//! Registering happens before any of the state exists, and never inside a
//! once-initialiser: `pthread_atfork` may wait for a fork in progress (glibc
//! serialises the handler list), and a fork must never find an initialiser
//! that waits for it. The registration flag is an atomic, not a
//! `std::sync::Once`: a `Once` left "running" by a thread of the parent would
//! make the child wait forever, while a thread that sees "registering by
//! someone else" just carries on.
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
//! Not covered: private [`crate::node::Registry`] instances (tests), a fork
//! that races with klock's very first initialisation in the process (while
//! the thread that registers the handlers is still inside `pthread_atfork`:
//! the child then works but has no handlers for its own forks; call
//! [`register`] before starting threads to rule this out), and `fork()` from
//! a signal handler that interrupted klock's registry code (it deadlocks in
//! prepare, as `fork()` from a handler that interrupted `malloc` would).
//!
//! # The internal lock
//!
//! The registries' lock is [`crate::reglock`]'s `RegLock`, a small futex
//! mutex with raw lock/unlock calls for these handlers; it lives in its own
//! leaf module so that the registries below this one need nothing from it
//! but that lock and [`register`].
//!
//! ```
//! klock::internal::fork::register(); // idempotent; klock also does it on first use
//! assert!(klock::internal::fork::registered());
//! ```

// ---------------------------------------------------------------------------
// atfork handlers
// ---------------------------------------------------------------------------

/// Register klock's `pthread_atfork` handlers if they are not registered yet.
/// klock calls this itself before it first builds any of its global state;
/// calling it early (before the program starts threads, e.g. from a library
/// constructor) also covers a fork that races with that first use. Cheap
/// after the first call (one atomic load). Never waits: if another thread is
/// registering right now, this returns at once. Does nothing under loom.
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

/// Run `f` in the child after every later `fork()`, after klock's own
/// child handler: how a mechanism above this module (today `asym::lot`)
/// resets its process-wide state without this module importing it (no
/// import circle). Idempotent per `f`; at most [`CHILD_HOOKS`] hooks (a
/// fixed table: registering needs no allocation and no lock). Not under
/// loom (no fork there).
#[cfg(not(loom))]
pub(crate) fn on_child(f: fn()) {
    register();
    imp::add_child_hook(f);
}

/// How many child hooks [`on_child`] can hold.
#[cfg(not(loom))]
pub(crate) const CHILD_HOOKS: usize = 4;

#[cfg(not(loom))]
mod imp {
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    /// The child hooks ([`super::on_child`]): function addresses, 0 = free.
    static HOOKS: [AtomicUsize; super::CHILD_HOOKS] =
        [const { AtomicUsize::new(0) }; super::CHILD_HOOKS];

    pub(super) fn add_child_hook(f: fn()) {
        let p = f as usize;
        for h in &HOOKS {
            // Release: pairs with the child handler's Acquire load (the
            // hook's own statics are initialised before it is added).
            match h.compare_exchange(0, p, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(x) if x == p => return,
                Err(_) => {}
            }
        }
        crate::node::fatal(format_args!(
            "klock: more than {} fork child hooks",
            super::CHILD_HOOKS
        ));
    }

    /// Run every child hook (in the child, after klock's own release).
    fn run_child_hooks() {
        for h in &HOOKS {
            // Acquire: pairs with `add_child_hook`'s Release.
            let p = h.load(Ordering::Acquire);
            if p != 0 {
                // SAFETY: `p` was stored from a `fn()` in `add_child_hook`;
                // function pointers and usize have the same size here.
                let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(p) };
                f();
            }
        }
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

    extern "C" fn prepare() {
        // 1. No once-initialiser may be running at the fork: finish them all
        //    (waiting for another thread's initialiser if need be; none of
        //    them waits for a registry lock we are about to take).
        let _ = crate::tune::get();
        let _ = crate::wait::effective_cpus();
        let _ = crate::wait::quota_limited();
        let _ = crate::chaos::seed();
        let _ = crate::node::global_registry();
        // 2. The forking thread's own id, node slot and stats block, so that
        //    nothing it does until the parent/child handler (other libraries'
        //    prepare handlers may lock klock mutexes) needs a registry lock.
        let _ = crate::tid::current_id();
        crate::node::with_node(|_| ());
        crate::stat::prepare_thread();
        // 3. The registry locks, in a fixed order (released in reverse).
        crate::node::atfork_lock();
        crate::tid::atfork_lock();
        crate::stat::atfork_lock();
    }

    fn release() {
        // SAFETY: `prepare` took exactly these locks in this thread (the
        // atfork protocol runs prepare, then parent in the parent or child in
        // the child, on the forking thread), and nothing else releases them.
        unsafe {
            crate::stat::atfork_unlock();
            crate::tid::atfork_unlock();
            crate::node::atfork_unlock();
        }
    }

    extern "C" fn parent() {
        release();
    }

    extern "C" fn child() {
        // The child's only thread is the one that took the locks; the data
        // they guard are consistent, so releasing them is all that is needed.
        // (A contender of the parent may have left a lock word at 2; the
        // wake that causes finds nobody, harmlessly.)
        release();
        // Mechanisms above this module reset their own state (the parking
        // lot empties its lists: they name only threads of the parent).
        run_child_hooks();
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn first_use_registers_handlers() {
        let _ = crate::tune::get();
        assert!(registered());
        register();
        assert!(registered());
    }
}

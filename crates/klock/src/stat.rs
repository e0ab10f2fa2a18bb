//! Lock-event counters in the spirit of the kernel's `lock_event_counts`
//! (cargo feature `stats`).
//!
//! Counters are per thread (relaxed increments on a thread-owned block, no
//! shared cache line) and summed on read: [`snapshot`] adds the blocks of all
//! live threads and the totals retired by exited threads. [`reset`] zeroes
//! everything with relaxed stores; an increment racing with a reset may survive
//! it (as in the kernel). Without the feature, `inc` and `add` are empty
//! `#[inline(always)]` functions and [`snapshot`] returns zeros: nothing is
//! compiled into the locks. With `KLOCK_STATS=1` the report is printed to
//! stderr at process exit (an `atexit` handler registered when the first
//! thread counts an event).
//!
//! The registry of per-thread blocks is fork-safe (`crate::fork`): the
//! atfork handlers hold its lock across `fork()`. Blocks of threads that do
//! not exist in a forked child stay in the child's sums.
//!
//! Latencies are kept as a nanosecond sum event plus a count event
//! (e.g. [`Event::PvLatencyWakeNs`] / [`Event::PvKickWake`]); the report prints
//! the average, like the kernel's `pv_latency_wake`.
//!
//! Counting is klock's own business (`inc`, `add` and `cond_inc` are
//! crate-private); a program reads the counts.
//!
//! ```
//! use klock::stat::{self, Event};
//! let s = stat::snapshot();
//! if !stat::ENABLED { assert_eq!(s.get(Event::LockSlowpath), 0) }
//! println!("{}", s.report());
//! ```

use std::fmt::Write as _;

/// Whether counters are compiled in (feature `stats`).
///
/// ```
/// let _on: bool = klock::stat::ENABLED;
/// ```
pub const ENABLED: bool = cfg!(feature = "stats");

macro_rules! events {
    ($( $(#[doc = $doc:literal])* $v:ident = $name:literal, )*) => {
        /// A countable lock event. Names follow the kernel's `lock_events_list.h`
        /// where an equivalent exists.
        ///
        /// ```
        /// assert_eq!(klock::stat::Event::PvKickUnlock.name(), "pv_kick_unlock");
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(usize)]
        pub enum Event { $( $(#[doc = $doc])* $v, )* }

        impl Event {
            /// Every event, in declaration order.
            ///
            /// ```
            /// assert_eq!(klock::stat::Event::ALL.len(), klock::stat::NUM_EVENTS);
            /// ```
            pub const ALL: &'static [Event] = &[ $( Event::$v, )* ];

            /// The kernel-style name.
            ///
            /// ```
            /// assert_eq!(klock::stat::Event::LockSlowpath.name(), "lock_slowpath");
            /// ```
            pub const fn name(self) -> &'static str {
                match self { $( Event::$v => $name, )* }
            }
        }
    };
}

events! {
    // ---- queued spinlock, common -------------------------------------------
    /// Acquired through the pending bit (light contention, no queueing).
    LockPending = "lock_pending",
    /// Entered the MCS queue.
    LockSlowpath = "lock_slowpath",
    /// Used nesting level 2, 3 or 4 (index 1..=3).
    LockUseNode2 = "lock_use_node2",
    /// Used nesting level 3.
    LockUseNode3 = "lock_use_node3",
    /// Used nesting level 4.
    LockUseNode4 = "lock_use_node4",
    /// No node available: non-queued fallback path.
    LockNoNode = "lock_no_node",
    // ---- PV ----------------------------------------------------------------
    /// An unlock woke a sleeping queue head (kick at unlock).
    PvKickUnlock = "pv_kick_unlock",
    /// A sleeping successor was woken ahead of its turn (kick-ahead).
    PvKickAhead = "pv_kick_ahead",
    /// A sleeper returned after a recorded kick.
    PvKickWake = "pv_kick_wake",
    /// Nanoseconds from kick to wake-up (sum; divide by `pv_kick_wake`).
    PvLatencyWakeNs = "pv_latency_wake",
    /// A non-head waiter woke without having been made head.
    PvSpuriousWakeup = "pv_spurious_wakeup",
    /// A queue head slept again after a previous sleep.
    PvWaitAgain = "pv_wait_again",
    /// A non-head waiter slept early because its predecessor was asleep.
    PvWaitEarly = "pv_wait_early",
    /// A queue head slept on the lock word.
    PvWaitHead = "pv_wait_head",
    /// A non-head waiter slept on its node.
    PvWaitNode = "pv_wait_node",
    // ---- queued unfair lock ------------------------------------------------
    /// The lock was stolen ahead of the queue.
    UnfairSteal = "unfair_steal",
    /// The lock was acquired by the queue head.
    UnfairQueued = "unfair_queued",
    /// The queue head waited past the threshold and stopped stealing.
    UnfairClaim = "unfair_claim",
    // ---- ticket / TAS ------------------------------------------------------
    /// A ticket waiter slept.
    TicketSleep = "ticket_sleep",
    /// A ticket unlock issued a wake.
    TicketWake = "ticket_wake",
    /// A TAS/no-node waiter slept.
    TasSleep = "tas_sleep",
    /// A TAS unlocker granted the lock to a parked waiter past its bound.
    TasGrant = "tas_grant",
    // ---- mutex / rwsem (section owned by the mutex work) -------------------
    /// Mutex acquired by the one-CAS fast path.
    MutexFastpath = "mutex_fastpath",
    /// Mutex lock entered the slow path.
    MutexSlowpath = "mutex_slowpath",
    /// Optimistic spinning acquired the mutex.
    MutexSpinSuccess = "mutex_spin_success",
    /// Optimistic spinning gave up (budget, hints, handoff) without the mutex.
    MutexSpinFail = "mutex_spin_fail",
    /// Spinning was skipped: spinners would outnumber effective CPUs, or a
    /// spinner had already given up on the current owner (the slow-owner
    /// hint; the newcomer queues at once).
    MutexSpinSkip = "mutex_spin_skip",
    /// The adaptive spinning hint sent a slow path to the wait list without
    /// spinning or yielding (this thread's recent spins mostly failed).
    MutexSpinAdaptSkip = "mutex_spin_adapt_skip",
    /// A slow path spun despite a low adaptive score (every
    /// `KLOCK_MUTEX_ADAPT_PROBE`-th), so that the score can recover.
    MutexSpinAdaptProbe = "mutex_spin_adapt_probe",
    /// A spinner left the OSQ before reaching its head (cancellable MCS unqueue).
    OsqUnqueue = "osq_unqueue",
    /// A mutex waiter slept on its node's futex word.
    MutexSleep = "mutex_sleep",
    /// A mutex unlock (or condvar requeue) woke the first waiter.
    MutexWake = "mutex_wake",
    /// A mutex waiter returned from sleep without having been woken.
    MutexSpuriousWakeup = "mutex_spurious_wakeup",
    /// The first waiter set HANDOFF (waited past `KLOCK_MUTEX_HANDOFF_NS`).
    MutexHandoffRequest = "mutex_handoff_request",
    /// An unlock passed ownership directly to the first waiter (PICKUP).
    MutexHandoff = "mutex_handoff",
    /// A timed mutex lock gave up.
    MutexTimeout = "mutex_timeout",
    /// No queue node: the mutex waited on the non-queued fallback path.
    MutexNoNode = "mutex_no_node",
    /// Nanoseconds spent in the mutex lock slow path (sum; divide by `mutex_slowpath`).
    MutexWaitNs = "mutex_wait_ns",
    /// Slow-path acquisitions that waited < 10 us (histogram bucket).
    MutexWaitLt10us = "mutex_wait_lt_10us",
    /// Slow-path acquisitions that waited 10-100 us.
    MutexWaitLt100us = "mutex_wait_lt_100us",
    /// Slow-path acquisitions that waited 100 us - 1 ms.
    MutexWaitLt1ms = "mutex_wait_lt_1ms",
    /// Slow-path acquisitions that waited 1-10 ms.
    MutexWaitLt10ms = "mutex_wait_lt_10ms",
    /// Slow-path acquisitions that waited >= 10 ms.
    MutexWaitGe10ms = "mutex_wait_ge_10ms",
    /// Nanoseconds spent spinning on the owner word (sum; the kernel's
    /// `mutex_spin_on_owner`), including woken waiters' spinning.
    MutexSpinOwnerNs = "mutex_spin_owner_ns",
    /// Nanoseconds spent waiting in the OSQ for its head (sum; seed 004's `mspin_lock`).
    OsqWaitNs = "osq_wait_ns",
    /// A thread waited on a condvar.
    CondWait = "cond_wait",
    /// Condvar waiters moved onto the mutex's wait list by a notify.
    CondRequeue = "cond_requeue",
    /// Condvar waiters woken by a `notify_one` to re-lock the mutex themselves.
    CondWakeOne = "cond_wake_one",
    // ---- rwsem ---------------------------------------------------------------
    /// Read lock taken by the fast path (one fetch-add).
    RwReadFast = "rwsem_rlock_fast",
    /// Read lock taken in the slow path (steal, spin, grant or no-node poll).
    RwReadSlow = "rwsem_rlock_slow",
    /// Write lock taken by the fast path (one CAS).
    RwWriteFast = "rwsem_wlock_fast",
    /// Write lock taken in the slow path.
    RwWriteSlow = "rwsem_wlock_slow",
    /// A reader stole the lock in the slow path (no writer, no hand-off owed).
    RwReadSteal = "rwsem_rlock_steal",
    /// Optimistic spinning (writer or reader) acquired the lock.
    RwSpinSuccess = "rwsem_opt_lock",
    /// Optimistic spinning gave up.
    RwSpinFail = "rwsem_opt_fail",
    /// A writer spinning on a reader-owned lock marked it non-spinnable.
    RwSpinNonSpinnable = "rwsem_opt_nospin",
    /// A waiting writer set HANDOFF.
    RwHandoff = "rwsem_wlock_handoff",
    /// Readers granted the lock by a wake-up (sum over batches).
    RwReadGranted = "rwsem_rlock_granted",
    /// A waiter was woken (futex wake issued).
    RwWake = "rwsem_wake",
    /// A waker found the writer already woken (seed 003 patch 12: no second wake).
    RwWakeSkipped = "rwsem_wake_skipped",
    /// A reader slept.
    RwSleepReader = "rwsem_sleep_reader",
    /// A writer slept.
    RwSleepWriter = "rwsem_sleep_writer",
    /// An rwsem contender had no queue node (slot registry exhausted) and
    /// polled unqueued (the rwsem's `mutex_no_node`).
    RwNoNode = "rwsem_no_node",
    /// An rwsem release handed the lock to the writer at the head (HANDOFF
    /// or a fair unlock), in its releasing CAS.
    RwHandedOff = "rwsem_handed_off",
    /// A timed rwsem acquisition timed out.
    RwTimeout = "rwsem_timeout",
    /// One grant counted more than one queued reader in its RMW (a batch).
    RwReadGrantBatch = "rwsem_rlock_grant_batch",
    /// Reader-preferring readers granted past a writer at the head of the
    /// list while the lock stays read-owned (INV-PREFQ; sum over grants).
    RwReadGrantedPref = "rwsem_rlock_granted_pref",
    /// A timed-out waiter found that a grant had selected it and took the
    /// lock instead of leaving the list.
    RwTimeoutGranted = "rwsem_timeout_granted",
    /// An upgrade waited (futex) for the other readers to leave.
    RwUpgradeWait = "rwsem_upgrade_wait",
    /// A waiter of the default RwLock (the floor family) entered its
    /// read-only spin (in a read, write or upgrade slow path); never a
    /// real-time thread (INV-RT-NOSPIN).
    RwFloorSpin = "rwlock_spin",
    /// A timed condvar wait timed out.
    CondTimeout = "cond_timeout",
    /// A mutex waiter armed its node for a wake-up (SLEEPING under WLOCK):
    /// when it joined the wait list, was moved there by a condvar notify, or
    /// re-armed after a wake-up. Each `mutex_wake` consumes one arm, so
    /// `mutex_wake <= mutex_arm` (the WAKING rule: no second wake for a
    /// waiter that has not re-armed).
    MutexArm = "mutex_arm",
    /// A mutex unlock with waiters released without a wake-up because a woken
    /// waiter has not re-tried yet (WAKING).
    MutexWakePending = "mutex_wake_pending",
    /// An OSQ spinner that gave up relinked its successor to its predecessor
    /// (unqueue step C: it left from the middle of the queue).
    OsqUnqueueRelink = "osq_unqueue_relink",
    /// An OSQ spinner gave up because its predecessor's heartbeat looked
    /// stale (`KLOCK_OSQ_STALE_NS`).
    OsqStale = "osq_stale",
    // ---- add new mutex events above this line ------------------------------
}

/// Number of events.
///
/// ```
/// assert!(klock::stat::NUM_EVENTS > 0);
/// ```
pub const NUM_EVENTS: usize = Event::ALL.len();

/// Summed counter values at one moment.
///
/// ```
/// let s = klock::stat::snapshot();
/// assert_eq!(s.values().len(), klock::stat::NUM_EVENTS);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    values: [u64; NUM_EVENTS],
}

impl Snapshot {
    /// The value of one event.
    ///
    /// ```
    /// let _ = klock::stat::snapshot().get(klock::stat::Event::PvWaitHead);
    /// ```
    pub fn get(&self, e: Event) -> u64 {
        self.values[e as usize]
    }

    /// All values, indexed like [`Event::ALL`].
    ///
    /// ```
    /// assert_eq!(klock::stat::snapshot().values().len(), klock::stat::NUM_EVENTS);
    /// ```
    pub fn values(&self) -> &[u64; NUM_EVENTS] {
        &self.values
    }

    /// `self - earlier`, saturating (for measuring one experiment).
    ///
    /// ```
    /// let a = klock::stat::snapshot();
    /// let d = klock::stat::snapshot().delta(&a);
    /// let _ = d.get(klock::stat::Event::LockSlowpath);
    /// ```
    pub fn delta(&self, earlier: &Snapshot) -> Snapshot {
        let mut values = [0; NUM_EVENTS];
        for (i, v) in values.iter_mut().enumerate() {
            *v = self.values[i].saturating_sub(earlier.values[i]);
        }
        Snapshot { values }
    }

    /// Average kick-to-wake latency in ns (`pv_latency_wake / pv_kick_wake`).
    ///
    /// ```
    /// let _ = klock::stat::snapshot().avg_wake_latency_ns();
    /// ```
    pub fn avg_wake_latency_ns(&self) -> Option<u64> {
        let n = self.get(Event::PvKickWake);
        (n > 0).then(|| self.get(Event::PvLatencyWakeNs) / n)
    }

    /// A text report, one `name: value` line per non-zero event (latencies as
    /// averages), or a note when the feature is off.
    ///
    /// ```
    /// assert!(!klock::stat::snapshot().report().is_empty());
    /// ```
    pub fn report(&self) -> String {
        if !ENABLED {
            return "klock lock events: not compiled in (enable feature `stats`)\n".to_string();
        }
        let mut s = String::from("klock lock events:\n");
        for &e in Event::ALL {
            let v = self.get(e);
            if v == 0 {
                continue;
            }
            if e == Event::PvLatencyWakeNs {
                if let Some(avg) = self.avg_wake_latency_ns() {
                    let _ = writeln!(s, "  {:<24} {} ns (avg)", e.name(), avg);
                }
            } else {
                let _ = writeln!(s, "  {:<24} {}", e.name(), v);
            }
        }
        s
    }
}

#[cfg(feature = "stats")]
mod imp {
    use super::{NUM_EVENTS, Snapshot};
    use crate::reglock::{RegGuard, RegLock};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub(super) struct Block {
        pub(super) c: [AtomicU64; NUM_EVENTS],
    }

    struct Global {
        live: Vec<Arc<Block>>,
        retired: [u64; NUM_EVENTS],
    }

    /// Internal registry lock (not `std::sync::Mutex`): the atfork handlers
    /// take and release it in separate calls.
    static GLOBAL: RegLock<Global> = RegLock::new(Global {
        live: Vec::new(),
        retired: [0; NUM_EVENTS],
    });

    fn global() -> RegGuard<'static, Global> {
        GLOBAL.lock()
    }

    /// At a fork (see `crate::fork`): the forking thread's block exists (so
    /// that counting needs no registry lock until the fork is over), and the
    /// registry lock is held across the fork.
    #[cfg(not(loom))]
    static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
        thread: || {
            let _ = LOCAL.try_with(|_| ());
        },
        lock: || GLOBAL.raw_lock(),
        // SAFETY (of the call): the fork hooks' contract, the forking thread
        // took the lock with `lock` and has not released it, is
        // `raw_unlock`'s.
        unlock: || unsafe { GLOBAL.raw_unlock() },
        ..crate::fork::Hooks::NONE
    };

    pub(super) struct Local(pub(super) Arc<Block>);

    impl Drop for Local {
        fn drop(&mut self) {
            let mut g = global();
            for (i, c) in self.0.c.iter().enumerate() {
                g.retired[i] += c.load(Ordering::Relaxed);
            }
            g.live.retain(|b| !Arc::ptr_eq(b, &self.0));
        }
    }

    thread_local! {
        pub(super) static LOCAL: Local = {
            // The tunables and the fork hooks before the registry is first
            // used, outside every initialiser (crate::fork).
            let report = crate::tune::get().stats_report != 0;
            #[cfg(not(loom))]
            crate::fork::install(crate::fork::Slot::Stat, &FORK_HOOKS);
            let b = Arc::new(Block { c: std::array::from_fn(|_| AtomicU64::new(0)) });
            global().live.push(b.clone());
            if report {
                register_report();
            }
            Local(b)
        };
    }

    #[inline]
    pub(super) fn add(i: usize, n: u64) {
        let _ = LOCAL.try_with(|l| {
            // Only this thread writes its block: load+store instead of an RMW.
            let c = &l.0.c[i];
            c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        });
    }

    pub(super) fn snapshot() -> Snapshot {
        let g = global();
        let mut values = g.retired;
        for b in &g.live {
            for (i, c) in b.c.iter().enumerate() {
                values[i] += c.load(Ordering::Relaxed);
            }
        }
        Snapshot { values }
    }

    pub(super) fn thread_snapshot() -> Snapshot {
        let mut values = [0; NUM_EVENTS];
        let _ = LOCAL.try_with(|l| {
            for (v, c) in values.iter_mut().zip(l.0.c.iter()) {
                // Relaxed: our own block, written only by this thread (`add`).
                *v = c.load(Ordering::Relaxed);
            }
        });
        Snapshot { values }
    }

    pub(super) fn reset() {
        let mut g = global();
        g.retired = [0; NUM_EVENTS];
        for b in &g.live {
            for c in b.c.iter() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    extern "C" fn report_at_exit() {
        eprint!("{}", snapshot().report());
    }

    /// Print the report at exit, registered once. A flag, not a `Once`: a
    /// `Once` left running by a thread of the parent would hang the child
    /// (see `crate::fork`); the loser of the swap just carries on.
    fn register_report() {
        use std::sync::atomic::AtomicBool;
        static DONE: AtomicBool = AtomicBool::new(false);
        // Relaxed: the flag only elects the registering thread.
        if !DONE.swap(true, Ordering::Relaxed) {
            // SAFETY: registering a plain extern "C" fn with no captured
            // state; it only reads the global counters.
            unsafe { libc::atexit(report_at_exit) };
        }
    }
}

/// Count one occurrence of `e` (no-op without the `stats` feature).
#[inline(always)]
pub(crate) fn inc(e: Event) {
    add(e, 1)
}

/// Add `n` to `e` (no-op without the `stats` feature).
#[inline(always)]
pub(crate) fn add(e: Event, n: u64) {
    #[cfg(feature = "stats")]
    imp::add(e as usize, n);
    #[cfg(not(feature = "stats"))]
    let _ = (e, n);
}

/// Count `e` once if `cond` (the kernel's `lockevent_cond_inc`: adds 1, not `cond`).
#[inline(always)]
pub(crate) fn cond_inc(e: Event, cond: bool) {
    if ENABLED && cond {
        inc(e)
    }
}

/// Sum of every thread's counters (all zero without the feature).
///
/// ```
/// let _ = klock::stat::snapshot();
/// ```
pub fn snapshot() -> Snapshot {
    #[cfg(feature = "stats")]
    {
        imp::snapshot()
    }
    #[cfg(not(feature = "stats"))]
    {
        Snapshot {
            values: [0; NUM_EVENTS],
        }
    }
}

/// The calling OS thread's own counters (all zero without the feature).
///
/// Other threads' counts are not included, so a test can count what its own
/// thread did while other tests run beside it. Under loom every model thread
/// runs on the test's OS thread, so this is the whole model's count.
///
/// ```
/// let before = klock::stat::thread_snapshot();
/// let m = klock::Mutex::new(0);
/// *m.lock() += 1; // uncontended: no wake-up
/// let d = klock::stat::thread_snapshot().delta(&before);
/// assert_eq!(d.get(klock::stat::Event::MutexWake), 0);
/// ```
pub fn thread_snapshot() -> Snapshot {
    #[cfg(feature = "stats")]
    {
        imp::thread_snapshot()
    }
    #[cfg(not(feature = "stats"))]
    {
        Snapshot {
            values: [0; NUM_EVENTS],
        }
    }
}

/// Zero every counter (concurrent increments may survive).
///
/// ```
/// klock::stat::reset();
/// ```
pub fn reset() {
    #[cfg(feature = "stats")]
    imp::reset();
}

/// Print [`snapshot`]'s report to stderr.
///
/// ```
/// klock::stat::print_report();
/// ```
pub fn print_report() {
    eprint!("{}", snapshot().report());
}

/// Serialises tests that call [`reset`] with tests that check counter deltas.
#[cfg(all(test, feature = "stats", not(loom)))]
pub(crate) static TEST_SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(all(test, feature = "stats", not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_across_threads_including_exited() {
        let _s = TEST_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Other tests may count the same event concurrently (the unfair
        // spinlock counts UnfairClaim): each thread's own block is exact, the
        // global sum can only exceed what this test added.
        let before = snapshot().get(Event::UnfairClaim);
        let hs: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mine = thread_snapshot().get(Event::UnfairClaim);
                    for _ in 0..100 {
                        inc(Event::UnfairClaim);
                    }
                    thread_snapshot().get(Event::UnfairClaim) - mine
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), 100, "a thread's own counter");
        }
        let mine = thread_snapshot().get(Event::UnfairClaim);
        add(Event::UnfairClaim, 5);
        assert_eq!(thread_snapshot().get(Event::UnfairClaim) - mine, 5);
        // The four threads have exited: their counts were retired into the
        // sum, not lost with them.
        let d = snapshot().get(Event::UnfairClaim) - before;
        assert!(d >= 405, "{d} < 405: exited threads' counts lost");
        let r = snapshot().report();
        assert!(r.contains("unfair_claim"));
        reset();
        assert!(snapshot().get(Event::UnfairClaim) < 405);
    }

    #[test]
    fn latency_average() {
        let mut s = Snapshot {
            values: [0; NUM_EVENTS],
        };
        s.values[Event::PvKickWake as usize] = 4;
        s.values[Event::PvLatencyWakeNs as usize] = 1000;
        assert_eq!(s.avg_wake_latency_ns(), Some(250));
        assert!(s.report().contains("250 ns"));
    }
}

#[cfg(all(test, not(feature = "stats")))]
mod tests_off {
    use super::*;

    #[test]
    fn off_counts_nothing() {
        inc(Event::LockPending);
        assert!(snapshot().values().iter().all(|&v| v == 0));
        assert!(snapshot().report().contains("not compiled in"));
    }
}

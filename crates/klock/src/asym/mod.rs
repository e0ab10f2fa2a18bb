//! Asymmetric sleeper announcement (issue 33): how a lock whose unlock is a
//! plain release store learns that a waiter may be asleep, without an RMW
//! or a fence on any unlock. The waiter, about to sleep, pays instead: it
//! announces itself in a process-wide table and then issues a process-wide
//! barrier (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`), the idea behind
//! biased locks. Any lock can use it; today the spinlock
//! [`RawTasSleepLock`](crate::spin::RawTasSleepLock) does.
//!
//! # The table
//!
//! ```text
//! SLEEPERS[hash(word address) % 64]: AtomicU32, one per cache line
//!   = how many threads are announced on a word of that bucket
//! ```
//!
//! A bucket is shared by every word that hashes to it. So an unlocker may
//! see another lock's sleepers, and then it makes one needless `futex_wake`;
//! it never misses its own.
//!
//! # The protocol
//!
//! ```text
//! waiter (rare):  announce: SLEEPERS[b] += 1     (an RMW)
//!                 barrier()                      (membarrier: every thread of the
//!                                                 process runs a full fence)
//!                 re-check the word; futex_wait(word, held value)
//!                 leave:    SLEEPERS[b] -= 1     (unless its waker did)
//! unlocker:       word.store(0, Release); if SLEEPERS[b] != 0 { wake_one(word) }
//!                                                (no fence between store and load;
//!                                                 a wake that woke someone takes
//!                                                 one count out: `wake_one`)
//! ```
//!
//! **INV-ASYM-BARRIER** (no lost wake-up). Take a waiter that sleeps on a
//! value written by holder H. The kernel checks the value under its lock.
//! * **H held the lock during the barrier.** The barrier ran a full fence
//!   on H's CPU, or H passed a context switch, which also fences. H's later
//!   load of the bucket comes after that fence, so it sees the announcement.
//! * **H took the lock after the barrier.** H's load of the bucket comes
//!   after its Acquire CAS, which comes after the barrier. So H sees the
//!   announcement too.
//!
//! Either way H wakes the word. A store that was still in H's store buffer
//! when the waiter re-checked (x86's store-load reordering) has drained by
//! the end of the barrier, so the waiter sees 0 and does not sleep. A waiter
//! is counted until it wakes, and announces itself again (another barrier)
//! before its next sleep.
//!
//! Where `membarrier` is unavailable (old kernels, seccomp), [`barrier`]
//! answers `false`. Waiters then sleep with a timeout
//! ([`FALLBACK_SLEEP`]): a wake-up may be lost, but never for longer than
//! that.
//!
//! Loom cannot model `membarrier`. Under loom the barrier is a SeqCst fence
//! on both sides (Dekker's argument), so loom checks the rest of the
//! protocol: the count, the sleep loop and the leave. Under the `chaos`
//! feature the store buffer is made explicit. The unlocker loads the bucket
//! *before* its store, as TSO may, with a chaos point between. The barrier
//! then waits until every such unlock in flight has stored (the drain the
//! IPI forces). `tests/torture_spin.rs` shows the lost wake-up when the
//! barrier is removed ([`disable_barrier_for_test`]) and none with it.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wait;
use std::time::Duration;

pub mod lot;

/// Buckets in the table: 64 cache lines (4 KiB); more buckets only make
/// needless wakes of a colliding lock rarer.
const BUCKETS: usize = 64;

/// How long a waiter sleeps at most when `membarrier` is unavailable.
pub const FALLBACK_SLEEP: Duration = Duration::from_millis(1);

/// One bucket on its own cache line (an announcement invalidates only it).
#[cfg_attr(not(loom), repr(align(64)))]
struct Bucket(AtomicU32);

#[cfg(not(loom))]
static SLEEPERS: [Bucket; BUCKETS] = [const { Bucket(AtomicU32::new(0)) }; BUCKETS];

#[cfg(loom)]
loom::lazy_static! {
    static ref SLEEPERS: Vec<Bucket> = (0..BUCKETS).map(|_| Bucket(AtomicU32::new(0))).collect();
}

/// The bucket index of `word` (a Fibonacci hash of its address), shared
/// by both tables.
#[inline(always)]
fn index(word: &AtomicU32) -> usize {
    let a = word as *const AtomicU32 as usize as u64;
    ((a >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % BUCKETS
}

/// The count bucket of `word`.
#[inline(always)]
fn bucket(word: &AtomicU32) -> &'static AtomicU32 {
    &SLEEPERS[index(word)].0
}

/// The unlocker's side: release `word` with a plain store of 0, then report
/// whether a waiter may sleep on it (then the caller wakes it). No fence:
/// INV-ASYM-BARRIER puts the cost on the waiter.
#[inline(always)]
pub fn release_and_check(word: &AtomicU32) -> bool {
    release_then_load(word, bucket(word)) != 0
}

/// The unlocker's half of INV-ASYM-BARRIER, for any table: store 0 into
/// `word` (Release), then load `table`'s word with no fence between. Both
/// tables (the counts here, the parking lot in [`lot`]) use it.
#[inline(always)]
fn release_then_load(word: &AtomicU32, table: &AtomicU32) -> u32 {
    #[cfg(all(feature = "chaos", not(loom)))]
    {
        chaos_drain::release_then_load(word, table)
    }
    #[cfg(not(all(feature = "chaos", not(loom))))]
    {
        // Release pairs with the next holder's Acquire CAS.
        word.store(0, Ordering::Release);
        // Loom only: the SeqCst fence that stands in for what the waiter's
        // membarrier forces on this CPU; pairs with the fence in `barrier`.
        #[cfg(loom)]
        crate::sync::atomic::fence(Ordering::SeqCst);
        // Relaxed: INV-ASYM-BARRIER (the waiter's barrier orders it).
        table.load(Ordering::Relaxed)
    }
}

/// An announced waiter; dropping it leaves the table.
#[derive(Debug)]
#[must_use = "the announcement lasts as long as the value"]
pub struct Announced {
    bucket: &'static AtomicU32,
    /// The barrier ran: untimed sleeps are safe.
    pub barrier: bool,
}

impl Announced {
    /// Sleep on `word` while it holds `value`, then leave the table. A
    /// waiter woken by [`wake_one`] was taken out of the table by its waker
    /// (so that later unlocks do not wake it again while it waits for a
    /// CPU); any other return (the value changed, a signal, the fallback
    /// timeout) leaves it here.
    pub fn sleep(self, word: &AtomicU32, value: u32) {
        let timeout = (!self.barrier).then_some(FALLBACK_SLEEP);
        let woken = wait::futex_wait(word, value, timeout) == wait::WaitOutcome::Woken;
        if woken {
            // The waker's `wake_one` decremented our count.
            std::mem::forget(self);
        }
    }
}

/// The unlocker's wake, after [`release_and_check`] answered `true`: wake
/// one sleeper of `word` and, if one woke, take it out of the table.
#[inline]
pub fn wake_one(word: &AtomicU32) {
    if wait::futex_wake(word, 1) == 1 {
        // Relaxed: a count (see `Announced::drop`).
        bucket(word).fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Announced {
    fn drop(&mut self) {
        // Relaxed: only a count of who may sleep; a stale nonzero value
        // costs an unlocker one needless wake.
        self.bucket.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The waiter's side: announce that this thread may sleep on `word`, then
/// run the barrier. Re-check the word after this and before every sleep.
pub fn announce(word: &AtomicU32) -> Announced {
    let b = bucket(word);
    // SeqCst: the RMW the barrier publishes (INV-ASYM-BARRIER).
    b.fetch_add(1, Ordering::SeqCst);
    crate::chaos::point(crate::chaos::Site::Fence);
    Announced {
        bucket: b,
        barrier: barrier(),
    }
}

/// The process-wide barrier: after it returns, every store any thread of
/// the process made before it is visible, and every load it makes after
/// it sees this thread's earlier writes. `false` if unavailable (see the
/// module docs).
pub fn barrier() -> bool {
    #[cfg(loom)]
    {
        // Loom's stand-in for membarrier: pairs with the unlocker's SeqCst
        // fence in `release_and_check` (Dekker: one of the two sees the other).
        crate::sync::atomic::fence(Ordering::SeqCst);
        true
    }
    #[cfg(not(loom))]
    {
        #[cfg(feature = "chaos")]
        if chaos_drain::barrier_disabled() {
            return true;
        }
        let ok = membarrier::expedited();
        #[cfg(feature = "chaos")]
        chaos_drain::drain();
        ok
    }
}

/// Test hook (the `chaos` feature): make [`barrier`] do nothing, to show
/// that the torture test catches the lost wake-up it prevents.
#[cfg(all(feature = "chaos", not(loom)))]
pub fn disable_barrier_for_test(off: bool) {
    chaos_drain::set_disabled(off);
}

/// Test hook (the `chaos` feature): hold every unlock's emulated store
/// buffer open for `us` µs (between its early table load and its store),
/// so that a test can place a sleeper inside the window; 0 turns it off.
#[cfg(all(feature = "chaos", not(loom)))]
pub fn widen_window_for_test(us: u64) {
    chaos_drain::set_window(us);
}

#[cfg(not(loom))]
mod membarrier {
    use std::sync::atomic::{AtomicU8, Ordering};

    /// `MEMBARRIER_CMD_QUERY`.
    const QUERY: libc::c_long = 0;
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`.
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    /// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    /// 0 not yet known, 1 registered, 2 unavailable.
    static STATE: AtomicU8 = AtomicU8::new(0);

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes two integer arguments and no pointer.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Register once (idempotent; racing registrations are harmless).
    #[cold]
    fn register() -> u8 {
        let q = call(QUERY);
        let s = if q >= 0 && q & PRIVATE_EXPEDITED != 0 && call(REGISTER_PRIVATE_EXPEDITED) == 0 {
            1
        } else {
            2
        };
        // Relaxed: a cache of a kernel answer; a racing thread computes the same.
        STATE.store(s, Ordering::Relaxed);
        s
    }

    /// The expedited private barrier; `false` if the kernel refuses it.
    pub(super) fn expedited() -> bool {
        // Relaxed: see `register`.
        let mut s = STATE.load(Ordering::Relaxed);
        if s == 0 {
            s = register();
        }
        if s != 1 {
            return false;
        }
        if call(PRIVATE_EXPEDITED) == 0 {
            return true;
        }
        // EPERM: not registered in this process (a fork child whose kernel
        // did not carry the registration over): register and retry once.
        register() == 1 && call(PRIVATE_EXPEDITED) == 0
    }
}

/// The `chaos` feature's explicit store buffer (see the module docs).
#[cfg(all(feature = "chaos", not(loom)))]
mod chaos_drain {
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

    /// Unlocks between their early bucket load and their store.
    static IN_FLIGHT: AtomicU32 = AtomicU32::new(0);
    static DISABLED: AtomicBool = AtomicBool::new(false);
    /// µs every unlock keeps its store pending (a test's window).
    static WINDOW_US: AtomicU64 = AtomicU64::new(0);

    /// At a fork: the child has no unlock in flight (the forking thread is
    /// not in one), whatever count the parent's threads left (see
    /// `crate::fork`; without it the child's first barrier drains forever).
    static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
        // Relaxed: pairs with nothing; the child's only thread runs this
        // before it can reach a barrier.
        child: || IN_FLIGHT.store(0, Ordering::Relaxed),
        ..crate::fork::Hooks::NONE
    };

    pub(super) fn release_then_load(word: &AtomicU32, table: &AtomicU32) -> u32 {
        crate::fork::install(crate::fork::Slot::AsymChaos, &FORK_HOOKS);
        // SeqCst (all of this emulation): it stands for the hardware's
        // order, so it orders everything with everything; only under chaos.
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        // The load TSO may perform before the store is visible.
        let seen = table.load(Ordering::SeqCst);
        crate::chaos::point(crate::chaos::Site::Fence);
        let w = WINDOW_US.load(Ordering::Relaxed);
        if w > 0 {
            std::thread::sleep(std::time::Duration::from_micros(w));
        }
        word.store(0, Ordering::Release);
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
        seen
    }

    /// The drain the barrier's IPIs force: every unlock in flight stores.
    pub(super) fn drain() {
        while IN_FLIGHT.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
    }

    pub(super) fn barrier_disabled() -> bool {
        // Relaxed (both switches): set by a test before its threads start.
        DISABLED.load(Ordering::Relaxed)
    }

    pub(super) fn set_disabled(off: bool) {
        DISABLED.store(off, Ordering::Relaxed);
    }

    pub(super) fn set_window(us: u64) {
        WINDOW_US.store(us, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn announce_counts_and_leaves() {
        let w = AtomicU32::new(1);
        assert!(!release_and_check(&w));
        assert_eq!(w.load(Ordering::Relaxed), 0);
        w.store(1, Ordering::Relaxed);
        let a = announce(&w);
        assert!(release_and_check(&w), "an announced waiter is seen");
        drop(a);
        w.store(1, Ordering::Relaxed);
        assert!(!release_and_check(&w), "a waiter that left is not");
    }

    #[test]
    fn barrier_is_available_here() {
        // The kernels CI runs on have had membarrier since 4.14; a refusal
        // would turn every sleep into a 1 ms timed one.
        assert!(barrier());
    }
}

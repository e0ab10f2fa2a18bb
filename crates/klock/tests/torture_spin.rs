//! Torture test for every spinlock variant, in the spirit of locktorture:
//! 4x and 16x more threads than effective CPUs, random hold and think times,
//! nested acquisitions (two lock levels), a lost-update counter, threads that
//! exit and new ones that start while others are queued, some threads forced
//! onto the no-node fallback path, and a watchdog that aborts the process with
//! a message after 60 s instead of hanging CI. Nothing here asserts on timing.
#![cfg(not(loom))]

mod torture_common;
use torture_common::{Rng, work};

use lock_api::{Mutex, RawMutex};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// How long each (variant, multiplier) run keeps starting new work.
const RUN: Duration = Duration::from_millis(400);
/// The watchdog's limit for one variant (both multipliers).
const WATCHDOG: Duration = Duration::from_secs(60);
/// Cap on threads (16x of a big machine would be too many for CI).
const MAX_THREADS: usize = 64;

/// Serialises the tests: they measure nothing, but running all variants at
/// once would multiply the overcommit and the run time.
static SERIAL: StdMutex<()> = StdMutex::new(());

struct Shared<R: RawMutex> {
    outer: Mutex<R, u64>,
    inner: Mutex<R, u64>,
    done_ops: AtomicU64,
    done_nested: AtomicU64,
    stop: AtomicBool,
}

struct Watchdog {
    done: Arc<AtomicBool>,
    h: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &'static str) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let h = std::thread::spawn(move || {
            let start = Instant::now();
            while !d.load(Ordering::Acquire) {
                if start.elapsed() > WATCHDOG {
                    eprintln!(
                        "torture_spin: WATCHDOG: {name} did not finish within {WATCHDOG:?} \
                         (lost wake-up or livelock); aborting"
                    );
                    std::process::abort();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Watchdog { done, h: Some(h) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(h) = self.h.take() {
            let _ = h.join();
        }
    }
}

fn worker<R: RawMutex + Send + Sync + 'static>(s: Arc<Shared<R>>, seed: u64, no_node: bool) {
    if no_node {
        klock::internal::node::simulate_no_node(true);
    }
    let mut rng = Rng(seed | 1);
    // Short-lived: each worker does a random number of operations and exits,
    // so threads come and go while others are queued.
    let ops = 20 + rng.below(200);
    for _ in 0..ops {
        if s.stop.load(Ordering::Relaxed) {
            break;
        }
        if rng.below(8) == 0 {
            // Nested: outer then inner (fixed order, no deadlock); exercises
            // the second node level of the queued locks.
            let mut o = s.outer.lock();
            let mut i = s.inner.lock();
            *o += 1;
            *i += 1;
            work(rng.below(50));
            drop(i);
            drop(o);
            s.done_nested.fetch_add(1, Ordering::Relaxed);
        } else {
            let mut g = s.outer.lock();
            // Lost-update detector: a non-atomic read-modify-write with work
            // in between.
            let v = *g;
            work(rng.below(200));
            *g = v + 1;
            drop(g);
        }
        s.done_ops.fetch_add(1, Ordering::Relaxed);
        // Think time; sometimes give the CPU away.
        work(rng.below(400));
        if rng.below(16) == 0 {
            std::thread::yield_now();
        }
        if rng.below(64) == 0
            && let Some(mut g) = s.inner.try_lock()
        {
            *g += 1;
            drop(g);
            s.done_nested.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn run<R: RawMutex + Send + Sync + 'static>(name: &'static str, mult: usize) {
    let cpus = klock::internal::wait::effective_cpus();
    let threads = (cpus * mult).clamp(2, MAX_THREADS);
    let s = Arc::new(Shared::<R> {
        outer: Mutex::new(0),
        inner: Mutex::new(0),
        done_ops: AtomicU64::new(0),
        done_nested: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let live = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut handles = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (mult as u64);
    let mut spawned = 0u64;
    // Keep `threads` workers alive, replacing those that exit, for RUN.
    while start.elapsed() < RUN {
        while live.load(Ordering::Acquire) < threads {
            let (s2, l2) = (s.clone(), live.clone());
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let sd = seed;
            // Every 7th thread takes the non-queued (no-node) fallback.
            let no_node = spawned % 7 == 3;
            spawned += 1;
            l2.fetch_add(1, Ordering::AcqRel);
            handles.push(std::thread::spawn(move || {
                worker(s2, sd, no_node);
                l2.fetch_sub(1, Ordering::AcqRel);
            }));
        }
        handles.retain(|h| !h.is_finished());
        std::thread::sleep(Duration::from_millis(2));
    }
    s.stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("worker panicked");
    }
    let ops = s.done_ops.load(Ordering::Relaxed);
    let nested = s.done_nested.load(Ordering::Relaxed);
    let outer = *s.outer.lock();
    let inner = *s.inner.lock();
    assert!(
        !s.outer.is_locked() && !s.inner.is_locked(),
        "{name}: lock left held"
    );
    // Every op incremented outer exactly once; nested ops and trylocks the inner.
    assert_eq!(outer, ops, "{name} x{mult}: lost updates on the outer lock");
    assert_eq!(
        inner, nested,
        "{name} x{mult}: lost updates on the inner lock"
    );
    assert!(spawned as usize >= threads, "{name}: workers were started");
    eprintln!("torture_spin: {name} x{mult} ({threads} threads, {spawned} started): {ops} ops ok");
}

fn torture<R: RawMutex + Send + Sync + 'static>(name: &'static str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _wd = Watchdog::start(name);
    run::<R>(name, 4);
    run::<R>(name, 16);
}

use klock::{Native, Pv, PvBase, RawQSpinLock, RawSpin, RawTasLock, RawTicketLock, Unfair};

#[test]
fn torture_tas() {
    torture::<RawTasLock<Native>>("tas");
}

#[test]
fn torture_ticket() {
    torture::<RawTicketLock<Native>>("ticket");
}

#[test]
fn torture_pvticket() {
    torture::<RawTicketLock<Pv>>("pvticket");
}

#[test]
fn torture_qspin_native() {
    torture::<RawQSpinLock<Native>>("qspin");
}

#[test]
fn torture_pvqspin_base() {
    torture::<RawQSpinLock<PvBase>>("pvqspin_base");
}

#[test]
fn torture_pvqspin() {
    torture::<RawQSpinLock<Pv>>("pvqspin");
}

#[test]
fn torture_unfair() {
    torture::<RawQSpinLock<Unfair>>("unfair");
}

#[test]
fn torture_dyn() {
    torture::<RawSpin>("dyn");
}

#[test]
fn torture_pv_tas() {
    torture::<RawTasLock<Pv>>("pv_tas");
}

/// The patched PV lock with kick-ahead on (off by default).
struct PvKickAhead;
impl klock::internal::spin::Seal for PvKickAhead {}
impl klock::WaitPolicy for PvKickAhead {
    const NAME: &'static str = "pv_kick2";
    const SLEEP: bool = true;
    const PATCHED: bool = true;
    const UNFAIR: bool = false;
    fn kick_ahead() -> u32 {
        2
    }
    fn spin_ns() -> u64 {
        2_000
    }
}

#[test]
fn torture_pvqspin_kick_ahead() {
    torture::<RawQSpinLock<PvKickAhead>>("pvqspin_kick_ahead");
}

/// A short spin so that waiters sleep often (the announce/barrier path).
struct ShortSpin;
impl klock::internal::spin::Seal for ShortSpin {}
impl klock::WaitPolicy for ShortSpin {
    const NAME: &'static str = "short_spin";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
    fn spin_ns() -> u64 {
        500
    }
}

#[test]
fn torture_tas_sleep() {
    torture::<klock::RawTasSleepLock<Pv>>("tas_sleep");
    torture::<klock::RawTasSleepLock<ShortSpin>>("tas_sleep_short");
}

#[test]
fn torture_tas_park() {
    torture::<klock::RawTasParkLock<Pv>>("tas_park");
    torture::<klock::RawTasParkLock<ShortSpin>>("tas_park_short");
}

/// No spin at all: a waiter announces itself and sleeps at once.
#[cfg(feature = "chaos")]
struct NoSpin;
#[cfg(feature = "chaos")]
impl klock::internal::spin::Seal for NoSpin {}
#[cfg(feature = "chaos")]
impl klock::WaitPolicy for NoSpin {
    const NAME: &'static str = "no_spin";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
    fn spin_ns() -> u64 {
        0
    }
}

/// INV-ASYM-BARRIER, tested where loom cannot go (the `chaos` feature,
/// `.ci/chaos`). Under `chaos` an unlock loads the sleeper table *before*
/// its store lands, the store-buffer reordering x86 allows made explicit.
/// The test holds that window open for 2 ms (`widen_window_for_test`),
/// and the barrier drains such unlocks. Each round:
/// 1. The main thread holds the lock.
/// 2. A waiter that does not spin starts locking 50 µs later, inside the
///    unlock's window: it announces itself, re-checks, sees HELD and sleeps.
/// 3. The main thread waits up to 50 ms for the waiter to take the lock.
///
/// With the barrier no round may lose its wake-up. Without it (see
/// `disable_barrier_for_test`) some round must: the waiter sleeps on the
/// stale HELD, the unlock saw no sleeper, and the test wakes the waiter by
/// hand to go on. Both directions are asserted, so the test fails if the
/// barrier stops working or stops mattering.
#[cfg(feature = "chaos")]
fn lost_wakeups<S: klock::TasSleeper>(
    barrier: bool,
    rounds: usize,
    hand_wake: fn(&std::sync::atomic::AtomicU32),
) -> usize {
    use klock::internal::asym;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    asym::disable_barrier_for_test(!barrier);
    asym::widen_window_for_test(2_000);
    let l = Arc::new(klock::RawTasSleepLock::<NoSpin, S>::new());
    // SAFETY: RawTasSleepLock is a repr(transparent) AtomicU32 (the word),
    // alive for the test (`l` is held until the end); only woken by hand.
    let word: &std::sync::atomic::AtomicU32 =
        unsafe { &*(Arc::as_ptr(&l) as *const std::sync::atomic::AtomicU32) };
    let mut lost = 0;
    for _ in 0..rounds {
        l.lock();
        let got = Arc::new(AtomicBool::new(false));
        let (l2, g2) = (l.clone(), got.clone());
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros(50));
            l2.lock();
            g2.store(true, Ordering::Release);
            // SAFETY: locked just above.
            unsafe { l2.unlock() };
        });
        // SAFETY: locked at the top of the round.
        unsafe { l.unlock() };
        let start = Instant::now();
        while !got.load(Ordering::Acquire) {
            if start.elapsed() > Duration::from_millis(50) {
                lost += 1;
                // The lost wake-up: deliver it by hand so the round ends.
                while !got.load(Ordering::Acquire) {
                    hand_wake(word);
                    std::thread::sleep(Duration::from_millis(1));
                }
                break;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        t.join().unwrap();
    }
    asym::widen_window_for_test(0);
    asym::disable_barrier_for_test(false);
    lost
}

/// The hand wake of a counted sleeper: as an unlocker would, it takes the
/// waiter out of the table.
#[cfg(feature = "chaos")]
fn wake_counted(word: &std::sync::atomic::AtomicU32) {
    klock::internal::asym::wake_one(word);
}

/// The hand wake of a parked waiter: as an unlocker would (no grant).
#[cfg(feature = "chaos")]
fn wake_parked(word: &std::sync::atomic::AtomicU32) {
    klock::internal::asym::lot::wake(word, None, || false);
}

#[cfg(feature = "chaos")]
#[test]
fn asym_barrier_prevents_lost_wakeups() {
    assert_eq!(
        lost_wakeups::<klock::Counted>(true, 30, wake_counted),
        0,
        "a wake-up was lost with the barrier"
    );
}

#[cfg(feature = "chaos")]
#[test]
fn asym_without_barrier_loses_a_wakeup() {
    assert!(
        lost_wakeups::<klock::Counted>(false, 30, wake_counted) > 0,
        "removing the barrier lost no wake-up: the test no longer exercises INV-ASYM-BARRIER"
    );
}

#[cfg(feature = "chaos")]
#[test]
fn lot_barrier_prevents_lost_wakeups() {
    assert_eq!(
        lost_wakeups::<klock::Parked>(true, 30, wake_parked),
        0,
        "a parked waiter's wake-up was lost with the barrier"
    );
}

#[cfg(feature = "chaos")]
#[test]
fn lot_without_barrier_loses_a_wakeup() {
    assert!(
        lost_wakeups::<klock::Parked>(false, 30, wake_parked) > 0,
        "removing the barrier lost no parked wake-up: the test no longer exercises INV-ASYM-BARRIER"
    );
}

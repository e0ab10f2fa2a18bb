//! The machine's costs: what a lock hand-over is made of, measured in about a
//! tenth of a second at the start of a report and shown in its header.
//!
//! * **cache-line transfer**: two threads pinned to two different CPUs of the
//!   affinity mask bounce one cache-line-aligned `AtomicU64` (the pinger
//!   stores and waits; the answerer waits and answers with a compare-exchange):
//!   round trip / 2, per batch of 100 round trips;
//! * **futex wake-to-running**: a thread sleeps in `FUTEX_WAIT`; another, on a
//!   second CPU where there is one, stamps the time, stores the word and calls
//!   `FUTEX_WAKE`; the sleeper's clock on return minus the stamp, per wake;
//! * **`sched_yield`**: one thread alone calling `sched_yield` in a loop (the
//!   syscall, no switch), and two threads pinned to one CPU handing a turn to
//!   each other with `sched_yield` (a yield plus a context switch per hand-over);
//! * **atomic RMW**: `fetch_add` and a successful `compare_exchange` on a private
//!   line in a loop (uncontended, one thread).
//!
//! Every cost is a [`Dist`] over batches (or wakes): median, quartiles, min and
//! max. Each part runs under its own deadline, so a busy machine makes the
//! numbers noisy but never makes the measurement long. The threads are scratch
//! threads: they pin themselves and exit.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A distribution of repeated measurements, nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    /// Median.
    pub median: f64,
    /// 25th percentile (linear interpolation).
    pub p25: f64,
    /// 75th percentile (linear interpolation).
    pub p75: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of values (batches or wakes).
    pub samples: usize,
}

impl Dist {
    /// The distribution of `v`; `None` when `v` holds no finite value.
    ///
    /// ```
    /// let d = lockbench::costs::Dist::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
    /// assert_eq!((d.median, d.p25, d.p75, d.min, d.max, d.samples), (3.0, 2.0, 4.0, 1.0, 5.0, 5));
    /// assert!(lockbench::costs::Dist::of(&[]).is_none());
    /// ```
    pub fn of(v: &[f64]) -> Option<Dist> {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        Some(Dist {
            median: quantile(&s, 0.5),
            p25: quantile(&s, 0.25),
            p75: quantile(&s, 0.75),
            min: s[0],
            max: s[s.len() - 1],
            samples: s.len(),
        })
    }

    /// `median (p25-p75)` with a unit chosen for the median (ns, µs or ms).
    ///
    /// ```
    /// let d = lockbench::costs::Dist::of(&[90.0, 100.0, 110.0]).unwrap();
    /// assert_eq!(d.short(), "100 ns (95-105)");
    /// ```
    pub fn short(&self) -> String {
        let (div, unit) = unit_for(self.median);
        let p = decimals(self.median / div);
        format!(
            "{:.p$} {unit} ({:.p$}-{:.p$})",
            self.median / div,
            self.p25 / div,
            self.p75 / div
        )
    }
}

/// Quantile `q` (0..=1) of an ascending-sorted, non-empty slice, interpolating
/// linearly between the two nearest ranks (the median of an even count is the
/// mean of the middle two).
///
/// ```
/// use lockbench::costs::quantile;
/// assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
/// assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75);
/// assert_eq!((quantile(&[7.0], 0.9), quantile(&[1.0, 9.0], 1.0)), (7.0, 9.0));
/// ```
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The divisor and unit that show `ns` with at most 4 digits before the point.
fn unit_for(ns: f64) -> (f64, &'static str) {
    if ns >= 1e6 {
        (1e6, "ms")
    } else if ns >= 1e4 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

/// Decimals that show `x` with 3 significant digits below 100, none above.
fn decimals(x: f64) -> usize {
    if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    }
}

/// `x` with [`decimals`]`(x)` decimals.
fn num(x: f64) -> String {
    format!("{x:.*}", decimals(x))
}

/// The machine's costs (see the module docs for how each is measured).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// The CPUs the threads were pinned to: the first two of the affinity mask
    /// (one when only one is usable).
    pub cpus: Vec<usize>,
    /// Whether every scratch thread could pin itself (`sched_setaffinity`).
    pub pinned: bool,
    /// One-way cache-line transfer between `cpus[0]` and `cpus[1]`, ns per
    /// transfer (one value per batch of 100 round trips); `null` with one usable CPU.
    pub transfer_ns: Option<Dist>,
    /// Futex wake-to-running, ns per wake (one value per wake). The waker ran
    /// on `cpus[1]` and the sleeper on `cpus[0]` when there are two.
    pub futex_wake_ns: Option<Dist>,
    /// One thread alone calling `sched_yield` in a loop, ns per call.
    pub yield_ns: Option<Dist>,
    /// Two threads pinned to `cpus[0]` passing a turn back and forth with
    /// `sched_yield`, ns per hand-over (a yield plus a context switch).
    pub yield_switch_ns: Option<Dist>,
    /// `fetch_add` on a private cache line, ns per op.
    pub rmw_ns: Option<Dist>,
    /// A successful `compare_exchange` on a private cache line, ns per op.
    pub cas_ns: Option<Dist>,
    /// Wall time the whole measurement took, ms.
    pub took_ms: f64,
}

/// The report header's line of costs, parts joined by `sep`: each cost as
/// `median (p25-p75)`; "not recorded" for a report from before they were
/// measured (`None`).
///
/// ```
/// let c = lockbench::costs::Costs { cpus: vec![0], pinned: true, ..Default::default() };
/// let h = lockbench::costs::header(Some(&c), " | ");
/// assert!(h.contains("cache-line transfer n/a: one CPU"), "{h}");
/// assert!(lockbench::costs::header(None, " | ").contains("not recorded"));
/// ```
pub fn header(c: Option<&Costs>, sep: &str) -> String {
    let Some(c) = c else {
        return "machine costs: not recorded in this report (older than lockbench's cost probe)"
            .into();
    };
    let d = |x: &Option<Dist>| x.map(|d| d.short()).unwrap_or_else(|| "n/a".into());
    let transfer = match (&c.transfer_ns, c.cpus.as_slice()) {
        (Some(t), [a, b, ..]) => format!("{} (CPU {a} <-> {b})", t.short()),
        (None, [_]) => "n/a: one CPU".into(),
        _ => "n/a".into(),
    };
    format!(
        "machine costs, median (IQR){}: cache-line transfer {transfer}{sep}futex wake-to-running {}{sep}\
         sched_yield {} alone, {} per hand-over of two threads on one CPU{sep}atomic RMW {}, CAS {}",
        if c.pinned { "" } else { ", threads NOT pinned" },
        d(&c.futex_wake_ns),
        d(&c.yield_ns),
        d(&c.yield_switch_ns),
        d(&c.rmw_ns),
        c.cas_ns
            .map(|x| format!("{} ns", num(x.median)))
            .unwrap_or_else(|| "n/a".into()),
    )
}

/// Deadline of each part of [`measure`] (the parts run one after the other).
const PART_DEADLINE: Duration = Duration::from_millis(90);
/// Round trips per cache-line ping-pong batch (about 25 µs).
const TRIPS: u64 = 100;
/// Ping-pong batches (fewer if the part's deadline passes first).
const TRANSFER_BATCHES: usize = 1000;
/// Batches per cost (transfer, yield, RMW).
const BATCHES: usize = 9;
/// Futex wakes sampled (fewer if the part's deadline passes first).
const WAKES: usize = 101;

/// Measures every cost of [`Costs`] (about 0.1 s; at most about 0.5 s on a
/// busy machine, each part stopping at its deadline).
pub fn measure() -> Costs {
    let t0 = Instant::now();
    let cpus: Vec<usize> = usable_cpus().into_iter().take(2).collect();
    let (a, b) = (
        cpus.first().copied(),
        cpus.get(1).copied().or(cpus.first().copied()),
    );
    let pinned = std::sync::atomic::AtomicBool::new(true);
    let pin_or_note = |cpu: Option<usize>| {
        if !cpu.is_some_and(pin) {
            pinned.store(false, Ordering::Relaxed);
        }
    };
    let transfer_ns = (cpus.len() >= 2)
        .then(|| Dist::of(&transfer_batches(|| pin_or_note(a), || pin_or_note(b))))
        .flatten();
    let futex_wake_ns = Dist::of(&futex_wakes(|| pin_or_note(a), || pin_or_note(b)));
    let yield_switch_ns = Dist::of(&yield_switches(|| pin_or_note(a)));
    let (yield_ns, rmw_ns, cas_ns) = std::thread::scope(|s| {
        s.spawn(|| {
            pin_or_note(a);
            let private = Line(AtomicU64::new(0));
            (
                Dist::of(&batches(|| per_call(200, yield_once))),
                Dist::of(&batches(|| fetch_add_loop(&private.0, 100_000))),
                Dist::of(&batches(|| cas_loop(&private.0, 100_000))),
            )
        })
        .join()
        .unwrap_or_default()
    });
    Costs {
        cpus,
        pinned: pinned.load(Ordering::Relaxed),
        transfer_ns,
        futex_wake_ns,
        yield_ns,
        yield_switch_ns,
        rmw_ns,
        cas_ns,
        took_ms: t0.elapsed().as_secs_f64() * 1e3,
    }
}

/// The CPUs of the calling thread's affinity mask, ascending (empty if unknown).
pub fn usable_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel writes at most
    // `size_of::<cpu_set_t>()` bytes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Pins the calling thread to `cpu`; false if the kernel refused.
pub fn pin(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above); `set` is valid and
    // sched_setaffinity only reads `size_of::<cpu_set_t>()` bytes of it.
    unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Runs `f` [`BATCHES`] times or until [`PART_DEADLINE`]; its results.
fn batches(mut f: impl FnMut() -> f64) -> Vec<f64> {
    let end = Instant::now() + PART_DEADLINE;
    let mut v = Vec::with_capacity(BATCHES);
    while v.len() < BATCHES && Instant::now() < end {
        v.push(f());
    }
    v
}

/// Nanoseconds per call of `f` over `n` calls.
fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

/// One `sched_yield` system call.
fn yield_once() {
    // SAFETY: sched_yield has no memory-safety preconditions.
    unsafe { libc::sched_yield() };
}

/// A cache line of its own.
#[repr(align(128))]
struct Line<T>(T);

/// `fetch_add` on `w`, `n` times; ns per op.
fn fetch_add_loop(w: &AtomicU64, n: u32) -> f64 {
    per_call(n, || {
        std::hint::black_box(w).fetch_add(1, Ordering::AcqRel);
    })
}

/// A successful `compare_exchange` on `w` (load, then swap in the next
/// value), `n` times; ns per op.
fn cas_loop(w: &AtomicU64, n: u32) -> f64 {
    per_call(n, || {
        let w = std::hint::black_box(w);
        let v = w.load(Ordering::Relaxed);
        let _ = w.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed);
    })
}

/// The value that tells the ping-pong's partner to exit.
const STOP: u64 = u64::MAX;

/// Ping-pong batches: per batch, ns per one-way transfer. `pin_a` and `pin_b`
/// pin the pinging and the answering thread.
fn transfer_batches(pin_a: impl Fn() + Sync, pin_b: impl Fn() + Sync) -> Vec<f64> {
    let line = Line(AtomicU64::new(0));
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_b();
            answer(&line.0)
        });
        let v = std::thread::scope(|s2| {
            s2.spawn(|| {
                pin_a();
                ping(&line.0)
            })
            .join()
            .unwrap_or_default()
        });
        line.0.store(STOP, Ordering::Release);
        v
    })
}

/// The answering side: turns every odd value into the next even one until
/// STOP (a compare-exchange, so a STOP stored meanwhile is never overwritten),
/// or until well after the part's deadline.
fn answer(w: &AtomicU64) {
    let end = Instant::now() + 2 * PART_DEADLINE;
    let mut n = 0u32;
    loop {
        let v = w.load(Ordering::Acquire);
        if v == STOP {
            return;
        }
        if v % 2 == 1 {
            let _ = w.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire);
        } else {
            spin_loop();
            n = n.wrapping_add(1);
            if n.is_multiple_of(4096) && Instant::now() >= end {
                return;
            }
        }
    }
}

/// The pinging side: batches of [`TRIPS`] round trips until [`TRANSFER_BATCHES`]
/// or the part's deadline; per batch, ns per one-way transfer (round trip /
/// 2). Short batches keep most of them clear of preemption (a batch during
/// which either thread was descheduled is an outlier the median ignores).
fn ping(w: &AtomicU64) -> Vec<f64> {
    let end = Instant::now() + PART_DEADLINE;
    let mut next = 0u64;
    let mut v = Vec::with_capacity(TRANSFER_BATCHES);
    while v.len() < TRANSFER_BATCHES {
        let t = Instant::now();
        for _ in 0..TRIPS {
            w.store(next + 1, Ordering::Release);
            if !wait_for(w, next + 2, end) {
                return v;
            }
            next += 2;
        }
        v.push(t.elapsed().as_nanos() as f64 / (2 * TRIPS) as f64);
    }
    v
}

/// Spins until `w` holds `v` (true) or `end` passes (false).
fn wait_for(w: &AtomicU64, v: u64, end: Instant) -> bool {
    let mut n = 0u32;
    while w.load(Ordering::Acquire) != v {
        spin_loop();
        n = n.wrapping_add(1);
        if n.is_multiple_of(4096) && Instant::now() >= end {
            return false;
        }
    }
    true
}

/// The shared state of the futex wake measurement.
struct WakeState {
    /// The futex word: 0 = asleep or about to be, 1 = woken.
    word: Line<AtomicU32>,
    /// Round the sleeper is ready for (set just before it sleeps).
    ready: AtomicU64,
    /// Round the sleeper has finished (the waker may start the next).
    done: AtomicU64,
    /// The waker's clock just before its store, ns since `base`.
    stamp: AtomicU64,
    /// The common clock.
    base: Instant,
}

impl WakeState {
    /// Nanoseconds since `base`.
    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

/// Futex wake-to-running samples, ns. The sleeper runs where `pin_a` pins
/// it, the waker where `pin_b` does.
fn futex_wakes(pin_a: impl Fn() + Sync, pin_b: impl Fn() + Sync) -> Vec<f64> {
    let st = WakeState {
        word: Line(AtomicU32::new(0)),
        ready: AtomicU64::new(0),
        done: AtomicU64::new(0),
        stamp: AtomicU64::new(0),
        base: Instant::now(),
    };
    let end = Instant::now() + PART_DEADLINE;
    std::thread::scope(|s| {
        let sleeper = s.spawn(|| {
            pin_a();
            sleeper(&st, end)
        });
        s.spawn(|| {
            pin_b();
            waker(&st, end)
        });
        sleeper.join().unwrap_or_default()
    })
}

/// The sleeping side: per round, announce, `FUTEX_WAIT`, and on a real wake
/// record now − the waker's stamp. Rounds numbered from 1; returns the samples.
fn sleeper(st: &WakeState, end: Instant) -> Vec<f64> {
    use klock::internal::wait::{WaitOutcome, futex_wait};
    let mut v = Vec::with_capacity(WAKES);
    for round in 1..=WAKES as u64 {
        if Instant::now() >= end {
            break;
        }
        st.word.0.store(0, Ordering::Release);
        st.ready.store(round, Ordering::Release);
        let r = futex_wait(&st.word.0, 0, Some(Duration::from_millis(20)));
        let now = st.now();
        if r == WaitOutcome::Woken && st.word.0.load(Ordering::Acquire) == 1 {
            v.push(now.saturating_sub(st.stamp.load(Ordering::Acquire)) as f64);
        }
        while st.word.0.load(Ordering::Acquire) != 1 && Instant::now() < end {
            yield_once();
        }
        st.done.store(round, Ordering::Release);
    }
    st.done.store(u64::MAX, Ordering::Release);
    v
}

/// The waking side: per round, wait for the sleeper to announce, give it
/// 30 µs to fall asleep, stamp, store and `FUTEX_WAKE`; then wait for the
/// sleeper to finish the round.
fn waker(st: &WakeState, end: Instant) {
    use klock::internal::wait::futex_wake;
    set_timer_slack_1ns();
    for round in 1.. {
        while st.ready.load(Ordering::Acquire) < round {
            if st.done.load(Ordering::Acquire) == u64::MAX || Instant::now() >= end {
                return;
            }
            yield_once();
        }
        std::thread::sleep(Duration::from_micros(30));
        st.stamp.store(st.now(), Ordering::Release);
        st.word.0.store(1, Ordering::Release);
        futex_wake(&st.word.0, 1);
        while st.done.load(Ordering::Acquire) < round {
            if Instant::now() >= end {
                return;
            }
            yield_once();
        }
    }
}

/// Timer slack of the calling thread to 1 ns, so a 30 µs sleep is not ~80 µs.
fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and touches no memory
    // of ours; it only affects the calling (scratch) thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Two threads pinned to one CPU (where `pin_a` pins them) hand a turn to each
/// other with `sched_yield`; per batch of `2 * TURNS` hand-overs, ns per hand-over.
fn yield_switches(pin_a: impl Fn() + Sync) -> Vec<f64> {
    let turn = Line(AtomicU64::new(0));
    let end = Instant::now() + PART_DEADLINE;
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_a();
            while take_turns(&turn.0, 1, end) == TURNS {}
        });
        let v = s
            .spawn(|| {
                pin_a();
                batches(|| {
                    let t = Instant::now();
                    match take_turns(&turn.0, 0, end) {
                        0 => f64::NAN,
                        n => t.elapsed().as_nanos() as f64 / (2 * n) as f64,
                    }
                })
            })
            .join()
            .unwrap_or_default();
        turn.0.store(STOP, Ordering::Release);
        v
    })
}

/// Turns per batch of the yield hand-over.
const TURNS: u64 = 100;

/// Takes [`TURNS`] turns of parity `me` on `turn` (waits with `sched_yield` while
/// it is the other's), or fewer when `end` passes or the word says STOP;
/// returns the turns taken.
fn take_turns(turn: &AtomicU64, me: u64, end: Instant) -> u64 {
    let mut taken = 0;
    while taken < TURNS {
        let v = turn.load(Ordering::Acquire);
        if v == STOP || Instant::now() >= end {
            break;
        }
        if v % 2 == me {
            // A compare-exchange: never overwrites a STOP stored meanwhile.
            if turn
                .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                taken += 1;
            }
        } else {
            yield_once();
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let s = [10.0, 20.0, 30.0, 40.0, 50.0];
        assert_eq!(quantile(&s, 0.0), 10.0);
        assert_eq!(quantile(&s, 0.5), 30.0);
        assert_eq!(quantile(&s, 1.0), 50.0);
        assert_eq!(quantile(&s, 0.1), 14.0);
        assert_eq!(quantile(&s, 2.0), 50.0, "clamped");
        assert_eq!(quantile(&[1.0, 2.0], 0.5), 1.5);
    }

    #[test]
    fn dist_sorts_and_drops_non_finite_values() {
        let d = Dist::of(&[f64::NAN, 9.0, 1.0, f64::INFINITY, 5.0]).unwrap();
        assert_eq!((d.median, d.min, d.max, d.samples), (5.0, 1.0, 9.0, 3));
        assert_eq!((d.p25, d.p75), (3.0, 7.0));
        assert!(Dist::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn short_picks_a_unit_and_significant_digits() {
        let d = |v: &[f64]| Dist::of(v).unwrap().short();
        assert_eq!(d(&[2.5, 2.51, 2.7]), "2.51 ns (2.50-2.60)");
        assert_eq!(d(&[30_000.0, 31_700.0, 40_000.0]), "31.7 µs (30.9-35.9)");
        assert_eq!(d(&[2e6, 4e6]), "3.00 ms (2.50-3.50)");
        assert_eq!(d(&[9999.0]), "9999 ns (9999-9999)");
    }

    #[test]
    fn header_names_every_cost_and_what_is_missing() {
        let one = Dist::of(&[100.0]);
        let c = Costs {
            cpus: vec![2, 5],
            pinned: false,
            transfer_ns: one,
            futex_wake_ns: one,
            yield_ns: one,
            yield_switch_ns: None,
            rmw_ns: one,
            cas_ns: one,
            took_ms: 1.0,
        };
        let h = header(Some(&c), " | ");
        for part in [
            "threads NOT pinned",
            "cache-line transfer 100 ns (100-100) (CPU 2 <-> 5)",
            "futex wake-to-running 100 ns",
            "sched_yield 100 ns (100-100) alone, n/a per hand-over",
            "atomic RMW 100 ns (100-100), CAS 100 ns",
        ] {
            assert!(h.contains(part), "{part:?} not in {h}");
        }
        let c = Costs {
            cpus: vec![],
            transfer_ns: None,
            ..c
        };
        assert!(header(Some(&c), " | ").contains("cache-line transfer n/a |"));
    }

    /// Finite positive numbers, within a generous watchdog (no timing bound).
    #[test]
    fn measure_returns_finite_positive_costs() {
        // Each part stops at its own deadline, so on a loaded machine a part
        // may come back unmeasured (`None`); every part must be measured in
        // one of three tries, and whatever is measured must be sane.
        let mut c = None;
        for _ in 0..3 {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(measure()).unwrap());
            let got = rx
                .recv_timeout(Duration::from_secs(120))
                .expect("the cost measurement finished within the 120 s watchdog");
            let all = [
                &got.futex_wake_ns,
                &got.yield_ns,
                &got.yield_switch_ns,
                &got.rmw_ns,
                &got.cas_ns,
            ]
            .iter()
            .all(|d| d.is_some())
                && (got.cpus.len() < 2 || got.transfer_ns.is_some());
            c = Some(got);
            if all {
                break;
            }
        }
        let c = c.unwrap();
        let ok = |d: &Option<Dist>| {
            let d = d.expect("measured");
            assert!(d.samples > 0);
            [d.median, d.p25, d.p75, d.min, d.max]
                .iter()
                .all(|x| x.is_finite() && *x > 0.0)
        };
        assert!(!c.cpus.is_empty());
        if c.cpus.len() >= 2 {
            assert!(ok(&c.transfer_ns), "{c:?}");
        } else {
            assert!(c.transfer_ns.is_none());
        }
        for d in [
            &c.futex_wake_ns,
            &c.yield_ns,
            &c.yield_switch_ns,
            &c.rmw_ns,
            &c.cas_ns,
        ] {
            assert!(ok(d), "{c:?}");
        }
        assert!(c.took_ms > 0.0);
    }
}

//! The generic contended runner, monomorphized per lock type: `threads` workers (the
//! first `readers` of them readers) hammer one lock guarding two counters whose lost
//! updates and torn reads count as violations; ops are counted per worker over exactly
//! the window, a run whose workers do not drain in time is `collapsed`. The reader's
//! description (critical sections, timing, drain, latency sampling): `docs/lockbench.md`,
//! "Workloads" and "Measurement method".

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::adapter::BenchLock;
use crate::sys::{TickScale, Usage, thread_usage, ticks};
use crate::syscount::{Counters, SysCounts};
use crate::work::spin_work_from;

/// Parameters of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// Total worker threads.
    pub threads: usize,
    /// How many of them are readers (0 for the mutex experiment).
    pub readers: usize,
    /// Work-loop iterations inside the critical section.
    pub cs_iters: u64,
    /// `std::hint::spin_loop()` calls inside the critical section, after the work.
    pub cs_pauses: u64,
    /// Work-loop iterations outside the critical section.
    pub ncs_iters: u64,
    /// Sleep inside the critical section, if any.
    pub cs_sleep: Option<Duration>,
    /// Measurement window.
    pub duration: Duration,
    /// How long workers may take to finish after the stop flag before the run counts
    /// as collapsed.
    pub drain_timeout: Duration,
    /// Time one acquisition in `2^sample_shift`.
    pub sample_shift: u32,
    /// Read the tick clock after every op for each thread's worst gap (costs one
    /// RDTSC per op; off with `LOCKBENCH_NO_WORST_WAIT=1`, see [`worst_wait_on`]).
    pub worst_wait: bool,
}

/// Whether runs time every op for the worst wait: yes unless
/// `LOCKBENCH_NO_WORST_WAIT` is set (to anything but `0` or empty).
pub fn worst_wait_on() -> bool {
    !std::env::var_os("LOCKBENCH_NO_WORST_WAIT").is_some_and(|v| !v.is_empty() && v != "0")
}

impl RunSpec {
    /// A short spec, handy for tests: `threads` writers, no work, `ms` milliseconds.
    ///
    /// ```
    /// let s = lockbench::runner::RunSpec::quick(2, 5);
    /// assert_eq!(s.threads, 2);
    /// ```
    pub fn quick(threads: usize, ms: u64) -> RunSpec {
        RunSpec {
            threads,
            readers: 0,
            cs_iters: 0,
            cs_pauses: 0,
            ncs_iters: 0,
            cs_sleep: None,
            duration: Duration::from_millis(ms),
            drain_timeout: Duration::from_secs(5),
            sample_shift: 6,
            worst_wait: true,
        }
    }
}

/// Per-class (readers or writers) raw results of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassOutput {
    /// Ops per thread in the window (snapshot at stop).
    pub ops: Vec<u64>,
    /// Sorted sampled acquisition latencies, ns.
    pub latencies: Vec<u64>,
}

/// Raw results of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Window length, ns.
    pub elapsed_ns: u64,
    /// Ops per thread in the window, in thread order (readers first).
    pub ops: Vec<u64>,
    /// Writers' ops and latencies.
    pub writers: ClassOutput,
    /// Readers' ops and latencies (empty for the mutex experiment).
    pub readers: ClassOutput,
    /// Worker CPU time + context switches (RUSAGE_THREAD, summed over finished workers).
    pub usage: Usage,
    /// Ops completed including the drain (denominator for CPU per op).
    pub total_ops_final: u64,
    /// futex and `sched_yield` calls of the workers over the same span as `usage`,
    /// summed; `None` when the counters were unavailable (`syscalls_unavailable`).
    pub syscalls: Option<SysCounts>,
    /// Why the syscall counters were unavailable (`None` when they were counted).
    pub syscalls_unavailable: Option<String>,
    /// Per thread, in thread order: its worst gap, the longest time between the end
    /// of one of its ops (lock released) and the end of its next, or from the window
    /// start to its first, over every op (ns; 0 for a worker that did not finish;
    /// empty when `spec.worst_wait` is off).
    pub worst_gap_ns: Vec<u64>,
    /// Lost/extra updates plus torn reads.
    pub violations: u64,
    /// Torn reads seen by readers.
    pub torn_reads: u64,
    /// Whether some worker did not finish within the drain timeout.
    pub collapsed: bool,
    /// Time from stop to the last worker finishing (or the timeout), ns.
    pub drain_ns: u64,
}

#[repr(C, align(128))]
struct Shared<L> {
    lock: L,
    a: AtomicU64,
    b: AtomicU64,
}

#[repr(align(128))]
struct Slot(AtomicU64);

struct WorkerResult {
    ops_final: u64,
    torn: u64,
    lat: Vec<u64>,
    usage: Usage,
    sys: Result<SysCounts, String>,
    worst_gap_ns: Option<u64>,
}

struct Control {
    ready: AtomicUsize,
    go: AtomicBool,
    stop: AtomicBool,
    done: AtomicUsize,
    slots: Vec<Slot>,
    results: Mutex<Vec<Option<WorkerResult>>>,
}

/// CS work chained on `seed` (the previous work's result mixed with the counter just
/// loaded), so it cannot start before the NCS work ends or the counter is read.
#[inline(always)]
fn cs_payload(seed: u64, iters: u64, pauses: u64, sleep: Option<Duration>) -> u64 {
    let r = spin_work_from(seed, iters);
    for _ in 0..pauses {
        std::hint::spin_loop();
    }
    if let Some(d) = sleep {
        std::thread::sleep(d);
    }
    r
}

/// One op's lock + critical section: returns the chained work value, the time the
/// critical section began (sampled ops only) and whether a reader saw a torn pair.
#[inline(always)]
fn one_op<L: BenchLock>(
    shared: &Shared<L>,
    ctx: &L::Ctx,
    reader: bool,
    acc: u64,
    sample: bool,
    spec: &RunSpec,
) -> (u64, Option<Instant>, bool) {
    if reader {
        shared.lock.with_read(ctx, || {
            let t1 = sample.then(Instant::now);
            // Relaxed: ordering comes from the lock under test.
            let a = shared.a.load(Ordering::Relaxed);
            let r = cs_payload(acc ^ a, spec.cs_iters, spec.cs_pauses, spec.cs_sleep);
            let b = shared.b.load(Ordering::Relaxed);
            (r, t1, a != b)
        })
    } else {
        shared.lock.with_lock(ctx, || {
            let t1 = sample.then(Instant::now);
            // Relaxed: ordering comes from the lock under test; a broken lock shows
            // up as lost updates, not as UB.
            let a = shared.a.load(Ordering::Relaxed);
            let b = shared.b.load(Ordering::Relaxed);
            shared.a.store(a.wrapping_add(1), Ordering::Relaxed);
            let r = cs_payload(acc ^ a, spec.cs_iters, spec.cs_pauses, spec.cs_sleep);
            shared.b.store(b.wrapping_add(1), Ordering::Relaxed);
            (r, t1, false)
        })
    }
}

/// Waits at the start gate (after counting itself ready).
fn start_gate(ctl: &Control) {
    // Relaxed: only a count; the gate itself is `go`.
    ctl.ready.fetch_add(1, Ordering::Relaxed);
    // Acquire: pairs with the main thread's Release store of `go` (window start).
    while !ctl.go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

fn worker<L: BenchLock, const GAPS: bool>(
    idx: usize,
    reader: bool,
    spec: RunSpec,
    shared: Arc<Shared<L>>,
    ctl: Arc<Control>,
) {
    let ctx = L::Ctx::default();
    if spec.cs_sleep.is_some() {
        exact_sleeps();
    }
    let counters = Counters::open();
    let mask = (1u64 << spec.sample_shift.min(30)) - 1;
    let cap = (spec.duration.as_secs_f64() * 2e6) as usize >> spec.sample_shift.min(30);
    let mut lat: Vec<u64> = Vec::with_capacity(cap.min(1 << 20));
    start_gate(&ctl);
    let u0 = thread_usage();
    if let Ok(c) = &counters {
        c.enable();
    }
    let scale = TickScale::start();
    let slot = &ctl.slots[idx].0;
    let (mut n, mut torn) = (0u64, 0u64);
    // The work chain's running value: NCS -> CS -> NCS ... are one dependency chain.
    let mut acc: u64 = idx as u64;
    let (mut last, mut worst) = (ticks(), 0u64);
    // Relaxed: the stop flag only ends the loop; results are published via `done`.
    while !ctl.stop.load(Ordering::Relaxed) {
        acc = spin_work_from(acc, spec.ncs_iters);
        let sample = n & mask == 0;
        let t0 = sample.then(Instant::now);
        let (r, t1, bad) = one_op(&shared, &ctx, reader, acc, sample, &spec);
        if GAPS {
            let now = ticks();
            worst = worst.max(now.wrapping_sub(last));
            last = now;
        }
        (acc, torn) = (r, torn + bad as u64);
        if let (Some(t0), Some(t1)) = (t0, t1) {
            lat.push(t1.saturating_duration_since(t0).as_nanos() as u64);
        }
        n += 1;
        // Relaxed: a counter the main thread snapshots; exactness at the stop instant
        // is not needed (an op in flight is counted in the drain).
        slot.store(n, Ordering::Relaxed);
    }
    std::hint::black_box(acc);
    let usage = thread_usage().since(&u0);
    let sys = counters.and_then(|c| c.read());
    let worst_gap_ns = GAPS.then(|| (worst as f64 * scale.ns_per_tick()) as u64);
    let r = WorkerResult {
        ops_final: n,
        torn,
        lat,
        usage,
        sys,
        worst_gap_ns,
    };
    publish(&ctl, idx, r);
}

/// A sleeping critical section should sleep about as long as asked: drops this
/// thread's timer slack from the default 50 µs to 1 ns.
fn exact_sleeps() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes plain integers and only affects the
    // calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Hands a worker's result to the main thread.
fn publish(ctl: &Control, idx: usize, r: WorkerResult) {
    // A worker detached after a collapse finishes after the main thread took the
    // results: its slot is gone and its result is dropped.
    if let Some(slot) = (ctl.results.lock().unwrap_or_else(|e| e.into_inner())).get_mut(idx) {
        *slot = Some(r);
    }
    // Release: publishes our result (and our counter writes) to the main thread's
    // Acquire load of `done`.
    ctl.done.fetch_add(1, Ordering::Release);
}

/// Runs one contended run of lock type `L` (the entry point a
/// [`LockEntry`](crate::locks::LockEntry) stores).
pub fn run<L: BenchLock>(spec: &RunSpec) -> RunOutput {
    crate::sys::leave_single_threaded_mode();
    let t = spec.threads.max(1);
    let readers = spec.readers.min(t);
    let shared = Arc::new(Shared {
        lock: L::new(),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    });
    let ctl = Arc::new(Control {
        ready: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        done: AtomicUsize::new(0),
        slots: (0..t).map(|_| Slot(AtomicU64::new(0))).collect(),
        results: Mutex::new((0..t).map(|_| None).collect()),
    });
    let handles: Vec<_> = (0..t)
        .map(|i| {
            let (sh, c, sp) = (shared.clone(), ctl.clone(), spec.clone());
            std::thread::Builder::new()
                .name(format!("lb-worker-{i}"))
                .spawn(move || match sp.worst_wait {
                    true => worker::<L, true>(i, i < readers, sp, sh, c),
                    false => worker::<L, false>(i, i < readers, sp, sh, c),
                })
                .expect("spawning a worker thread")
        })
        .collect();
    // Relaxed: only a count; the workers wait on `go` for the real hand-off.
    while ctl.ready.load(Ordering::Relaxed) < t {
        std::thread::yield_now();
    }
    let start = Instant::now();
    // Release: pairs with the workers' Acquire loads of `go`.
    ctl.go.store(true, Ordering::Release);
    std::thread::sleep(spec.duration);
    // Relaxed: the flag only ends the loops; results are published through `done`.
    ctl.stop.store(true, Ordering::Relaxed);
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    // Relaxed: a snapshot of independent counters; each is exact for its own thread.
    let ops: Vec<u64> = (ctl.slots.iter())
        .map(|s| s.0.load(Ordering::Relaxed))
        .collect();
    let (collapsed, drain_ns) = drain(&ctl, handles, spec.drain_timeout);
    let results: Vec<Option<WorkerResult>> =
        std::mem::take(&mut *ctl.results.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = collect(&results, ops, readers);
    out.elapsed_ns = elapsed_ns;
    out.collapsed = collapsed;
    out.drain_ns = drain_ns;
    if !collapsed {
        // Relaxed: every worker's writes happen-before our Acquire of `done == t`.
        let a = shared.a.load(Ordering::Relaxed);
        let b = shared.b.load(Ordering::Relaxed);
        let writer_final: u64 = results[readers..]
            .iter()
            .flatten()
            .map(|r| r.ops_final)
            .sum();
        out.violations += a.abs_diff(writer_final) + b.abs_diff(writer_final);
    }
    out
}

/// Waits up to `timeout` for the workers to finish their last acquisition; returns
/// whether the run collapsed (some did not) and how long the drain took. A collapsed
/// run's workers are detached: they hold their own `Arc`s of the lock and counters,
/// which stay alive until they finish.
fn drain(
    ctl: &Control,
    handles: Vec<std::thread::JoinHandle<()>>,
    timeout: Duration,
) -> (bool, u64) {
    let t = handles.len();
    let stop_t = Instant::now();
    // Acquire: pairs with each worker's Release increment of `done`.
    while ctl.done.load(Ordering::Acquire) < t && stop_t.elapsed() < timeout {
        std::thread::sleep(Duration::from_micros(200));
    }
    // Acquire: as above; pairs with the workers' Release increments.
    let collapsed = ctl.done.load(Ordering::Acquire) < t;
    let drain_ns = stop_t.elapsed().as_nanos() as u64;
    if !collapsed {
        for h in handles {
            let _ = h.join();
        }
    }
    (collapsed, drain_ns)
}

/// The run's output from the workers' results and the ops counted in the window:
/// per class ops and (sorted) latencies, CPU time and context switches, torn reads.
fn collect(results: &[Option<WorkerResult>], ops: Vec<u64>, readers: usize) -> RunOutput {
    let mut out = RunOutput {
        ops: ops.clone(),
        ..RunOutput::default()
    };
    for (i, r) in results.iter().enumerate() {
        let class = if i < readers {
            &mut out.readers
        } else {
            &mut out.writers
        };
        class.ops.push(ops[i]);
        if let Some(g) = r.as_ref().map_or(Some(0), |r| r.worst_gap_ns) {
            out.worst_gap_ns.push(g);
        }
        if let Some(r) = r {
            class.latencies.extend_from_slice(&r.lat);
            out.usage.cpu_ns += r.usage.cpu_ns;
            out.usage.nvcsw += r.usage.nvcsw;
            out.usage.nivcsw += r.usage.nivcsw;
            out.total_ops_final += r.ops_final;
            out.torn_reads += r.torn;
        }
    }
    (out.syscalls, out.syscalls_unavailable) = sum_syscalls(results);
    // A finished thread's gap is at least one tick: all zeros = not measured.
    if out.worst_gap_ns.iter().all(|&g| g == 0) {
        out.worst_gap_ns.clear();
    }
    out.readers.latencies.sort_unstable();
    out.writers.latencies.sort_unstable();
    out.violations = out.torn_reads;
    out
}

/// The workers' syscall counts summed, or the first reason one could not count.
fn sum_syscalls(results: &[Option<WorkerResult>]) -> (Option<SysCounts>, Option<String>) {
    let mut sum = SysCounts::default();
    for r in results.iter().flatten() {
        match &r.sys {
            Ok(c) => sum.add(c),
            Err(why) => return (None, Some(why.clone())),
        }
    }
    (Some(sum), None)
}

/// Uncontended cost: one thread, `ops` lock+counter+++unlock iterations (after a 10%
/// warm-up); returns ns per op. `read` takes the shared side (`with_read`).
pub fn uncontended<L: BenchLock>(ops: u64, read: bool) -> f64 {
    if read {
        uncontended_loop::<L, true>(ops)
    } else {
        uncontended_loop::<L, false>(ops)
    }
}

/// The loop of [`uncontended`], monomorphized per side so that the measured
/// code is the lock's inlined fast path and nothing else.
fn uncontended_loop<L: BenchLock, const READ: bool>(ops: u64) -> f64 {
    crate::sys::leave_single_threaded_mode();
    let shared = Shared {
        lock: L::new(),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    };
    let ctx = L::Ctx::default();
    let s = std::hint::black_box(&shared);
    let body = || {
        // Relaxed: single thread; the lock provides ordering anyway.
        let a = s.a.load(Ordering::Relaxed);
        s.a.store(a.wrapping_add(1), Ordering::Relaxed);
    };
    let op = || match READ {
        true => s.lock.with_read(&ctx, body),
        false => s.lock.with_lock(&ctx, body),
    };
    (0..ops / 10).for_each(|_| op());
    let t = Instant::now();
    (0..ops).for_each(|_| op());
    t.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

//! The condvar hand-off runner behind `lockbench condvar`: `producers` threads push
//! numbered items into a bounded FIFO queue guarded by a mutex, `consumers` threads
//! pop them; a consumer waits on the "not empty" condition variable while the queue
//! is empty, a producer on "not full" while it is full, and each side notifies one
//! waiter of the other side (with the lock held) after every push or pop.
//!
//! A [`Pair`] is one mutex + condvar implementation (klock's, std's, parking_lot's,
//! glibc's). The run checks the hand-off ([`check_handoff`]): every item produced
//! is consumed exactly once, and each consumer sees each producer's items in order.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::{Usage, thread_usage};
use crate::syscount::{Counters, SysCounts};
use crate::work::spin_work_from;

/// One queued item: producer index and sequence number, and (for one item in 64)
/// the time it was made, ns since the run's start plus 1 (0 = not sampled).
#[derive(Clone, Copy, Debug)]
pub struct Item {
    producer: u32,
    seq: u64,
    stamp: u64,
}

/// The state the mutex guards: the bounded queue and whether the run is over.
#[derive(Debug, Default)]
pub struct Queue {
    items: VecDeque<Item>,
    cap: usize,
    closed: bool,
}

/// Which condition a thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Consumers wait here while the queue is empty.
    NotEmpty = 0,
    /// Producers wait here while the queue is full.
    NotFull = 1,
}

/// A mutex and two condition variables of one implementation.
pub trait Pair: Send + Sync + 'static {
    /// An empty queue holding at most `cap` items.
    fn new(cap: usize) -> Self;
    /// Locks the queue, waits on `wait` while `blocked` holds, runs `f`, notifies
    /// one waiter on `wake` (lock still held) and unlocks.
    fn op<R>(
        &self,
        wait: Side,
        blocked: fn(&Queue) -> bool,
        f: impl FnOnce(&mut Queue) -> R,
        wake: Side,
    ) -> R;
    /// Wakes every waiter on `side`.
    fn notify_all(&self, side: Side);
}

/// Marks the queue closed and wakes everyone: producers stop, consumers drain it.
fn close<P: Pair>(p: &P) {
    p.op(
        Side::NotFull,
        |_| false,
        |q| q.closed = true,
        Side::NotEmpty,
    );
    p.notify_all(Side::NotEmpty);
    p.notify_all(Side::NotFull);
}

fn queue(cap: usize) -> Queue {
    Queue {
        items: VecDeque::with_capacity(cap),
        cap,
        closed: false,
    }
}

/// std's `Mutex` + `Condvar`.
pub struct StdPair {
    m: std::sync::Mutex<Queue>,
    cv: [std::sync::Condvar; 2],
}

impl Pair for StdPair {
    fn new(cap: usize) -> Self {
        StdPair {
            m: std::sync::Mutex::new(queue(cap)),
            cv: [std::sync::Condvar::new(), std::sync::Condvar::new()],
        }
    }
    fn op<R>(
        &self,
        wait: Side,
        blocked: fn(&Queue) -> bool,
        f: impl FnOnce(&mut Queue) -> R,
        wake: Side,
    ) -> R {
        let mut g = self.m.lock().unwrap_or_else(|e| e.into_inner());
        while blocked(&g) {
            g = (self.cv[wait as usize].wait(g)).unwrap_or_else(|e| e.into_inner());
        }
        let r = f(&mut g);
        self.cv[wake as usize].notify_one();
        r
    }
    fn notify_all(&self, side: Side) {
        self.cv[side as usize].notify_all();
    }
}

/// A `lock_api` mutex + condvar (klock's `Mutex`/`Condvar`, parking_lot's).
pub struct LockApiPair<C: lock_api::RawCondvar> {
    m: lock_api::Mutex<C::RawMutex, Queue>,
    cv: [lock_api::Condvar<C>; 2],
}

impl<C> Pair for LockApiPair<C>
where
    C: lock_api::RawCondvar + Send + Sync + 'static,
    C::RawMutex: Send + Sync + 'static,
{
    fn new(cap: usize) -> Self {
        LockApiPair {
            m: lock_api::Mutex::new(queue(cap)),
            cv: [lock_api::Condvar::new(), lock_api::Condvar::new()],
        }
    }
    fn op<R>(
        &self,
        wait: Side,
        blocked: fn(&Queue) -> bool,
        f: impl FnOnce(&mut Queue) -> R,
        wake: Side,
    ) -> R {
        let mut g = self.m.lock();
        while blocked(&g) {
            self.cv[wait as usize].wait(&mut g);
        }
        let r = f(&mut g);
        self.cv[wake as usize].notify_one();
        r
    }
    fn notify_all(&self, side: Side) {
        self.cv[side as usize].notify_all();
    }
}

/// klock's `Mutex` + `Condvar`.
pub type KlockPair = LockApiPair<klock::RawCondvar>;
/// parking_lot's `Mutex` + `Condvar`.
pub type ParkingLotPair = LockApiPair<parking_lot::RawCondvar>;

/// glibc's `pthread_mutex_t` (default type) + `pthread_cond_t`, each boxed so it
/// never moves.
pub struct PthreadPair {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
    cv: [Box<UnsafeCell<libc::pthread_cond_t>>; 2],
    q: UnsafeCell<Queue>,
}

// SAFETY: the pthread objects are made to be shared between threads and never move
// (boxed); the queue is only touched with the mutex held.
unsafe impl Send for PthreadPair {}
// SAFETY: as above.
unsafe impl Sync for PthreadPair {}

impl Pair for PthreadPair {
    fn new(cap: usize) -> Self {
        let cond = || Box::new(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER));
        PthreadPair {
            m: Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)),
            cv: [cond(), cond()],
            q: UnsafeCell::new(queue(cap)),
        }
    }
    fn op<R>(
        &self,
        wait: Side,
        blocked: fn(&Queue) -> bool,
        f: impl FnOnce(&mut Queue) -> R,
        wake: Side,
    ) -> R {
        let (m, cv) = (self.m.get(), self.cv[wait as usize].get());
        // SAFETY: statically initialised, boxed (never moving) pthread objects; the
        // queue is only accessed between lock and unlock (wait re-locks before
        // returning), so no other thread touches it meanwhile.
        unsafe {
            let rc = libc::pthread_mutex_lock(m);
            debug_assert_eq!(rc, 0, "pthread_mutex_lock");
            while blocked(&*self.q.get()) {
                let rc = libc::pthread_cond_wait(cv, m);
                debug_assert_eq!(rc, 0, "pthread_cond_wait");
            }
            let r = f(&mut *self.q.get());
            libc::pthread_cond_signal(self.cv[wake as usize].get());
            libc::pthread_mutex_unlock(m);
            r
        }
    }
    fn notify_all(&self, side: Side) {
        // SAFETY: a statically initialised, boxed condvar.
        unsafe { libc::pthread_cond_broadcast(self.cv[side as usize].get()) };
    }
}

impl Drop for PthreadPair {
    fn drop(&mut self) {
        // SAFETY: nobody holds or waits on them any more (we own them exclusively).
        unsafe {
            libc::pthread_mutex_destroy(self.m.get());
            for c in &self.cv {
                libc::pthread_cond_destroy(c.get());
            }
        }
    }
}

/// Parameters of one hand-off run.
#[derive(Clone, Debug, PartialEq)]
pub struct HandSpec {
    /// Producer threads.
    pub producers: usize,
    /// Consumer threads.
    pub consumers: usize,
    /// Queue capacity, items.
    pub capacity: usize,
    /// Work-loop iterations a producer spends making an item (outside the lock).
    pub produce_iters: u64,
    /// Work-loop iterations a consumer spends on an item (outside the lock).
    pub consume_iters: u64,
    /// Measurement window.
    pub duration: Duration,
    /// How long the threads may take to finish after the queue is closed before
    /// the run counts as collapsed.
    pub drain_timeout: Duration,
}

/// Raw results of one hand-off run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandOutput {
    /// Window length, ns.
    pub elapsed_ns: u64,
    /// Items per thread in the window: pushes of each producer, then pops of each
    /// consumer.
    pub ops: Vec<u64>,
    /// Items consumed in the window.
    pub consumed: u64,
    /// Items consumed in all (window and drain): the CPU-per-item denominator.
    pub consumed_final: u64,
    /// Sorted sampled hand-off latencies (push call to pop return), ns.
    pub latencies: Vec<u64>,
    /// Worker CPU time and context switches, summed.
    pub usage: Usage,
    /// Workers' futex and `sched_yield` calls over the same span as `usage`,
    /// summed; `None` when the counters were unavailable.
    pub syscalls: Option<SysCounts>,
    /// Why the syscall counters were unavailable, if they were.
    pub syscalls_unavailable: Option<String>,
    /// Hand-off errors ([`check_handoff`]); 0 unless the pair is broken.
    pub violations: u64,
    /// Some thread did not finish within the drain timeout (then nothing is checked).
    pub collapsed: bool,
    /// Time from closing the queue to the last thread finishing, ns.
    pub drain_ns: u64,
}

/// What the consumers saw of one producer's items: count, sum and sum of squares
/// of the sequence numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    /// Items.
    pub count: u64,
    /// Sum of their sequence numbers.
    pub sum: u128,
    /// Sum of their squares.
    pub sumsq: u128,
}

impl Tally {
    /// Adds item `seq`.
    pub fn add(&mut self, seq: u64) {
        self.count += 1;
        self.sum += seq as u128;
        self.sumsq += (seq as u128) * (seq as u128);
    }
    fn merge(&mut self, o: &Tally) {
        self.count += o.count;
        self.sum += o.sum;
        self.sumsq += o.sumsq;
    }
    /// The tally of items 0..n, each once.
    pub fn exactly(n: u64) -> Tally {
        let n = n as u128;
        Tally {
            count: n as u64,
            sum: n * n.saturating_sub(1) / 2,
            sumsq: (n.saturating_sub(1) * n * (2 * n).saturating_sub(1)) / 6,
        }
    }
}

/// Checks a hand-off: producer `p` pushed `produced[p]` items numbered 0.., and
/// `consumed[c][p]` is what consumer `c` popped of them. Every item must have been
/// consumed exactly once (the merged count, sum and sum of squares of the numbers
/// must be those of 0..n). Returns one line per producer that fails.
///
/// ```
/// use lockbench::exp::handoff::{Tally, check_handoff};
/// let mut a = Tally::default();
/// let mut b = Tally::default();
/// for s in [0, 2] { a.add(s) }
/// b.add(1);
/// assert!(check_handoff(&[3], &[vec![a], vec![b]]).is_empty());
/// b.add(1); // item 1 consumed twice
/// assert_eq!(check_handoff(&[3], &[vec![a], vec![b]]).len(), 1);
/// ```
pub fn check_handoff(produced: &[u64], consumed: &[Vec<Tally>]) -> Vec<String> {
    let mut bad = Vec::new();
    for (p, &n) in produced.iter().enumerate() {
        let mut seen = Tally::default();
        for c in consumed {
            seen.merge(&c.get(p).copied().unwrap_or_default());
        }
        let want = Tally::exactly(n);
        if seen != want {
            bad.push(format!(
                "producer {p}: pushed {n} items, consumers popped {} (sums {} / {}, want {} / {})",
                seen.count, seen.sum, seen.sumsq, want.sum, want.sumsq
            ));
        }
    }
    bad
}

#[repr(align(128))]
struct Slot(AtomicU64);

/// What one thread hands back.
#[derive(Default)]
struct Worker {
    items: u64,
    usage: Usage,
    /// This thread's syscall counts, or why they are unavailable.
    syscalls: Option<Result<SysCounts, String>>,
    lat: Vec<u64>,
    /// Consumers: per producer.
    tally: Vec<Tally>,
    /// Consumers: items of a producer that came before an earlier-numbered one.
    disorder: u64,
}

struct Control {
    ready: AtomicUsize,
    go: AtomicBool,
    stop: AtomicBool,
    done: AtomicUsize,
    base: Instant,
    slots: Vec<Slot>,
    results: Mutex<Vec<Option<Worker>>>,
}

/// What a worker measures itself by from the window's start: its rusage and
/// its syscall counters (the runner's accounting, `accounting::per_op`).
struct Start {
    usage: Usage,
    counters: Result<Counters, String>,
}

impl Control {
    fn start(&self) -> Start {
        let counters = Counters::open();
        // Relaxed: only a count; the gate itself is `go`.
        self.ready.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with the main thread's Release store of `go`.
        while !self.go.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let usage = thread_usage();
        if let Ok(c) = &counters {
            c.enable();
        }
        Start { usage, counters }
    }
    fn publish(&self, idx: usize, mut w: Worker, s: Start) {
        w.usage = thread_usage().since(&s.usage);
        w.syscalls = Some(s.counters.and_then(|c| c.read()));
        if let Some(s) = (self.results.lock().unwrap_or_else(|e| e.into_inner())).get_mut(idx) {
            *s = Some(w);
        }
        // Release: publishes the result to the main thread's Acquire load of `done`.
        self.done.fetch_add(1, Ordering::Release);
    }
    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64 + 1
    }
}

/// One item in this many carries a time stamp.
const SAMPLE_MASK: u64 = 63;

fn producer<P: Pair>(i: usize, spec: HandSpec, pair: Arc<P>, ctl: Arc<Control>) {
    let u0 = ctl.start();
    let (mut seq, mut acc) = (0u64, i as u64);
    // Relaxed: the flag only ends the loop; results are published through `done`.
    while !ctl.stop.load(Ordering::Relaxed) {
        acc = spin_work_from(acc, spec.produce_iters);
        let stamp = if seq & SAMPLE_MASK == 0 { ctl.now() } else { 0 };
        let item = Item {
            producer: i as u32,
            seq,
            stamp,
        };
        let full = |q: &Queue| q.items.len() >= q.cap && !q.closed;
        let push = |q: &mut Queue| {
            if !q.closed {
                q.items.push_back(item);
            }
            !q.closed
        };
        if !pair.op(Side::NotFull, full, push, Side::NotEmpty) {
            break;
        }
        seq += 1;
        // Relaxed: a counter the main thread snapshots.
        ctl.slots[i].0.store(seq, Ordering::Relaxed);
    }
    std::hint::black_box(acc);
    let w = Worker {
        items: seq,
        ..Worker::default()
    };
    ctl.publish(i, w, u0);
}

fn consumer<P: Pair>(idx: usize, spec: HandSpec, pair: Arc<P>, ctl: Arc<Control>) {
    let u0 = ctl.start();
    let mut w = Worker {
        tally: vec![Tally::default(); spec.producers],
        ..Worker::default()
    };
    let mut next = vec![0u64; spec.producers];
    let mut acc = idx as u64;
    let empty = |q: &Queue| q.items.is_empty() && !q.closed;
    // Runs until the queue is closed and empty: the drain consumes every item.
    while let Some(it) = pair.op(
        Side::NotEmpty,
        empty,
        |q| q.items.pop_front(),
        Side::NotFull,
    ) {
        if it.stamp != 0 {
            w.lat.push(ctl.now().saturating_sub(it.stamp));
        }
        let p = it.producer as usize;
        if let Some(t) = w.tally.get_mut(p) {
            t.add(it.seq);
            w.disorder += (it.seq < next[p]) as u64;
            next[p] = it.seq + 1;
        }
        acc = spin_work_from(acc ^ it.seq, spec.consume_iters);
        w.items += 1;
        // Relaxed: a counter the main thread snapshots.
        ctl.slots[idx].0.store(w.items, Ordering::Relaxed);
    }
    std::hint::black_box(acc);
    ctl.publish(idx, w, u0);
}

/// Runs one hand-off run with pair `P` (the entry point of a `condvar` competitor).
pub fn run<P: Pair>(spec: &HandSpec) -> HandOutput {
    crate::sys::leave_single_threaded_mode();
    let (np, nc) = (spec.producers.max(1), spec.consumers.max(1));
    let t = np + nc;
    let pair = Arc::new(P::new(spec.capacity.max(1)));
    let ctl = Arc::new(Control {
        ready: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        done: AtomicUsize::new(0),
        base: Instant::now(),
        slots: (0..t).map(|_| Slot(AtomicU64::new(0))).collect(),
        results: Mutex::new((0..t).map(|_| None).collect()),
    });
    let spec = HandSpec {
        producers: np,
        consumers: nc,
        ..spec.clone()
    };
    let handles: Vec<_> = (0..t)
        .map(|i| {
            let (p, c, s) = (pair.clone(), ctl.clone(), spec.clone());
            let b = std::thread::Builder::new().name(format!("lb-handoff-{i}"));
            match i < np {
                true => b.spawn(move || producer::<P>(i, s, p, c)),
                false => b.spawn(move || consumer::<P>(i, s, p, c)),
            }
            .expect("spawning a hand-off thread")
        })
        .collect();
    // Relaxed: only a count; the threads wait on `go`.
    while ctl.ready.load(Ordering::Relaxed) < t {
        std::thread::yield_now();
    }
    let start = Instant::now();
    // Release: pairs with the threads' Acquire loads of `go`.
    ctl.go.store(true, Ordering::Release);
    std::thread::sleep(spec.duration);
    // Relaxed: only ends the producers' loops.
    ctl.stop.store(true, Ordering::Relaxed);
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    // Relaxed: a snapshot of independent counters.
    let ops: Vec<u64> = ctl
        .slots
        .iter()
        .map(|s| s.0.load(Ordering::Relaxed))
        .collect();
    close(&*pair);
    let (collapsed, drain_ns) = drain(&ctl, handles, spec.drain_timeout);
    let results = std::mem::take(&mut *ctl.results.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = collect(&results, np, collapsed);
    out.consumed = ops[np..].iter().sum();
    out.ops = ops;
    out.elapsed_ns = elapsed_ns;
    out.drain_ns = drain_ns;
    out
}

/// Waits up to `timeout` for every thread; (collapsed, drain ns). A collapsed
/// run's threads are detached (they hold their own `Arc`s).
fn drain(
    ctl: &Control,
    handles: Vec<std::thread::JoinHandle<()>>,
    timeout: Duration,
) -> (bool, u64) {
    let t0 = Instant::now();
    // Acquire: pairs with each thread's Release increment of `done`.
    while ctl.done.load(Ordering::Acquire) < handles.len() && t0.elapsed() < timeout {
        std::thread::sleep(Duration::from_micros(200));
    }
    // Acquire: as above.
    let collapsed = ctl.done.load(Ordering::Acquire) < handles.len();
    if !collapsed {
        handles.into_iter().for_each(|h| drop(h.join()));
    }
    (collapsed, t0.elapsed().as_nanos() as u64)
}

/// Sums the threads' results and checks the hand-off (unless collapsed).
fn collect(results: &[Option<Worker>], np: usize, collapsed: bool) -> HandOutput {
    let mut out = HandOutput {
        collapsed,
        ..HandOutput::default()
    };
    let mut sys = Some(SysCounts::default());
    for w in results.iter().flatten() {
        out.usage.cpu_ns += w.usage.cpu_ns;
        out.usage.nvcsw += w.usage.nvcsw;
        out.usage.nivcsw += w.usage.nivcsw;
        match &w.syscalls {
            Some(Ok(c)) => {
                if let Some(s) = sys.as_mut() {
                    s.add(c);
                }
            }
            Some(Err(why)) => {
                sys = None;
                out.syscalls_unavailable.get_or_insert_with(|| why.clone());
            }
            None => sys = None,
        }
        out.latencies.extend_from_slice(&w.lat);
        out.violations += w.disorder;
    }
    out.syscalls = sys;
    out.latencies.sort_unstable();
    let items = |r: &[Option<Worker>]| {
        r.iter()
            .map(|w| w.as_ref().map_or(0, |w| w.items))
            .collect::<Vec<_>>()
    };
    out.consumed_final = items(&results[np..]).iter().sum();
    if !collapsed {
        let tallies: Vec<Vec<Tally>> = results[np..]
            .iter()
            .flatten()
            .map(|w| w.tally.clone())
            .collect();
        let bad = check_handoff(&items(&results[..np]), &tallies);
        for line in &bad {
            eprintln!("error: condvar hand-off: {line}");
        }
        out.violations += bad.len() as u64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type RunFn = fn(&HandSpec) -> HandOutput;

    fn spec(p: usize, c: usize, cap: usize) -> HandSpec {
        HandSpec {
            producers: p,
            consumers: c,
            capacity: cap,
            produce_iters: 0,
            consume_iters: 0,
            duration: Duration::from_millis(30),
            drain_timeout: Duration::from_secs(20),
        }
    }

    /// Every pair hands every item over exactly once, at several shapes.
    #[test]
    fn every_pair_hands_each_item_over_once() {
        let pairs: [(&str, RunFn); 4] = [
            ("klock", run::<KlockPair>),
            ("std", run::<StdPair>),
            ("parking_lot", run::<ParkingLotPair>),
            ("pthread", run::<PthreadPair>),
        ];
        for (name, f) in pairs {
            for (p, c, cap) in [(1, 1, 1), (2, 3, 4), (3, 1, 16)] {
                let o = f(&spec(p, c, cap));
                assert!(!o.collapsed, "{name} {p}+{c}");
                assert_eq!(o.violations, 0, "{name} {p}+{c}");
                assert!(o.consumed_final > 0, "{name} {p}+{c}: nothing consumed");
                assert_eq!(o.ops.len(), p + c);
                assert!(o.consumed_final >= o.consumed);
                assert!(!o.latencies.is_empty(), "{name}");
            }
        }
    }

    /// A pair that loses one item in 500 (it drops the queue's head now and then).
    struct Lossy(StdPair, AtomicU64);
    impl Pair for Lossy {
        fn new(cap: usize) -> Self {
            Lossy(StdPair::new(cap), AtomicU64::new(0))
        }
        fn op<R>(
            &self,
            wait: Side,
            blocked: fn(&Queue) -> bool,
            f: impl FnOnce(&mut Queue) -> R,
            wake: Side,
        ) -> R {
            self.0.op(
                wait,
                blocked,
                |q| {
                    if self.1.fetch_add(1, Ordering::Relaxed) % 500 == 499 {
                        q.items.pop_front();
                    }
                    f(q)
                },
                wake,
            )
        }
        fn notify_all(&self, side: Side) {
            self.0.notify_all(side)
        }
    }

    #[test]
    fn a_pair_that_loses_items_is_caught() {
        // The pair drops one item in 500: run until the check has seen one
        // (a loaded machine may move few items per run); a watchdog of 200
        // runs only catches a check that never notices.
        let mut consumed = 0;
        for _ in 0..200 {
            let o = run::<Lossy>(&spec(2, 2, 8));
            assert!(!o.collapsed);
            if o.violations > 0 {
                return;
            }
            consumed += o.consumed;
        }
        panic!("a lost item went unnoticed in 200 runs ({consumed} items consumed)");
    }

    /// The check fails on a lost item, a duplicate, and a renumbered item.
    #[test]
    fn the_check_catches_lost_duplicated_and_wrong_items() {
        let of = |seqs: &[u64]| {
            let mut t = Tally::default();
            seqs.iter().for_each(|&s| t.add(s));
            t
        };
        assert!(check_handoff(&[4], &[vec![of(&[0, 1, 2, 3])]]).is_empty());
        assert!(check_handoff(&[4, 0], &[vec![of(&[0, 3])], vec![of(&[1, 2])]]).is_empty());
        assert_eq!(check_handoff(&[4], &[vec![of(&[0, 1, 3])]]).len(), 1);
        assert_eq!(check_handoff(&[4], &[vec![of(&[0, 1, 2, 3, 3])]]).len(), 1);
        // Same count and sum, another multiset: the squares tell.
        assert_eq!(check_handoff(&[4], &[vec![of(&[1, 1, 2, 2])]]).len(), 1);
        assert_eq!(check_handoff(&[2, 1], &[vec![of(&[0, 1])]]).len(), 1);
    }
}

//! Shared pieces of the loom models: the model runner, a counter protected by
//! a klock mutex, and the node-slot gate ([`SlotGate`], [`spawn`]) of the
//! models whose threads exit and recycle slots. Not a test target itself.
#![allow(dead_code)]

use klock::tune::Tunables;
use klock::{RawMutex, SpinPolicy};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread::{self, JoinHandle};

/// Runs a model with tunables `t` (set once per process: each loom file is
/// its own process) at `LOOM_MAX_PREEMPTIONS` (default 2), capped at
/// `max_bound`; prints the number of executions explored and, with
/// `--features stats`, which paths they took. Returns those counts summed
/// over every execution (all zero without `stats`).
pub fn run_model(
    t: Tunables,
    max_bound: usize,
    f: impl Fn() + Sync + Send + 'static,
) -> klock::stat::Snapshot {
    let _ = klock::tune::set(t);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(2).min(max_bound));
    check_counted(b, "loom", f)
}

/// Runs `f` under the configured builder `b`, counting the executions and
/// the lock events of this OS thread (every model thread runs on it, so they
/// are the model's, whatever other tests run beside it); prints both under
/// `label` and returns the event counts.
pub fn check_counted(
    b: loom::model::Builder,
    label: &str,
    f: impl Fn() + Sync + Send + 'static,
) -> klock::stat::Snapshot {
    let iters = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let i2 = iters.clone();
    let before = klock::stat::thread_snapshot();
    b.check(move || {
        // Relaxed: a count read after `check` returns (same thread).
        i2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    let counts = klock::stat::thread_snapshot().delta(&before);
    eprintln!(
        "{label}: {} executions",
        iters.load(std::sync::atomic::Ordering::Relaxed)
    );
    if klock::stat::ENABLED {
        eprint!("{}", counts.report());
    }
    counts
}

/// Fails, saying why, unless lock statistics are compiled in: a model that
/// asserts the events in `reach` needs them (CI builds loom with `stats`).
pub fn require_stats(reach: &[klock::stat::Event]) {
    if !klock::stat::ENABLED && !reach.is_empty() {
        panic!(
            "this model asserts that it reaches {:?}: build the loom tests with \
             --features stats (as .ci/run does)",
            reach.iter().map(|e| e.name()).collect::<Vec<_>>()
        );
    }
}

/// Fails unless every event in `reach` was counted in `counts`: the branches
/// a model claims to cover were explored, not just asserted "if observed".
pub fn assert_reached(counts: &klock::stat::Snapshot, reach: &[klock::stat::Event]) {
    for e in reach {
        assert!(
            counts.get(*e) > 0,
            "no execution reached {} (the branch this model claims to cover)",
            e.name()
        );
    }
}

/// As [`run_model`], then fails unless every event in `reach` was counted in
/// at least one execution ([`assert_reached`]). Needs `--features stats`
/// ([`require_stats`]).
pub fn run_model_reaching(
    t: Tunables,
    max_bound: usize,
    reach: &[klock::stat::Event],
    f: impl Fn() + Sync + Send + 'static,
) -> klock::stat::Snapshot {
    require_stats(reach);
    let counts = run_model(t, max_bound, f);
    assert_reached(&counts, reach);
    counts
}

/// A branch a model observes from outside the lock (a returned value, a
/// word read back): `hit` in the execution that takes it, `assert_reached`
/// after the model. Use one `static` per model.
pub struct Branch(std::sync::atomic::AtomicUsize);

impl Branch {
    pub const fn new() -> Self {
        Branch(std::sync::atomic::AtomicUsize::new(0))
    }
    pub fn hit(&self) {
        // Relaxed: a count read after loom's `check` returns.
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    pub fn count(&self) -> usize {
        // Relaxed: as `hit`.
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Fails unless some execution took the branch named `what`.
    pub fn assert_reached(&self, what: &str) {
        assert!(self.count() > 0, "no execution reached: {what}");
    }
}

/// Small budgets for loom (budgets count iterations under loom).
pub fn loom_tunables() -> Tunables {
    let mut t = Tunables::DEFAULT;
    t.mutex_spin_ns = 2;
    t.mutex_spin_max_ns = 3;
    t.waitlock_spin_ns = 1;
    t.mutex_yields = 1;
    t.osq_stale_ns = 0;
    t
}

/// A counter protected by a klock mutex; loom's `UnsafeCell` checks that no
/// two accesses overlap (mutual exclusion).
pub struct Shared<S: SpinPolicy> {
    pub m: RawMutex<S>,
    pub data: UnsafeCell<usize>,
}

// SAFETY: `data` is only accessed while `m` is held.
unsafe impl<S: SpinPolicy> Sync for Shared<S> {}

impl<S: SpinPolicy> Shared<S> {
    pub fn new() -> Self {
        Shared {
            m: RawMutex::new(),
            data: UnsafeCell::new(0),
        }
    }
    pub fn incr(&self) {
        let t = self.m.lock();
        // SAFETY: the lock is held (loom checks that no other access overlaps).
        self.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: `t` comes from the `lock` above and is released once.
        unsafe { self.m.unlock(t) };
    }
    pub fn get(&self) -> usize {
        let t = self.m.lock();
        // SAFETY: the lock is held.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: `t` comes from the `lock` above and is released once.
        unsafe { self.m.unlock(t) };
        v
    }
}

/// `n` model threads that each [`incr`](Shared::incr) `s` once; join them.
pub fn spawn_incrs<S: SpinPolicy + 'static>(s: &Arc<Shared<S>>, n: usize) -> Vec<JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || s.incr())
        })
        .collect()
}

/// Take `q` once with a spin budget of `budget` iterations (at most 8
/// deep); as its head, check that no other head is inside (`inside`) and
/// count the head in `heads`. Returns whether this thread became head.
pub fn osq_take_once(
    q: &klock::internal::osq::Osq,
    budget: u64,
    inside: &AtomicBool,
    heads: &AtomicUsize,
) -> bool {
    klock::internal::node::with_node(|n| {
        let n = n.unwrap();
        if !q.lock(n, &mut klock::internal::wait::SpinBudget::new(budget), 8) {
            return false;
        }
        // SeqCst: test bookkeeping, read after the joins.
        assert!(!inside.swap(true, Ordering::SeqCst), "two OSQ heads");
        heads.fetch_add(1, Ordering::SeqCst);
        inside.store(false, Ordering::SeqCst);
        q.unlock(n);
        true
    })
}

/// Take this thread's node slot and thread id now.
pub fn lease() {
    let _ = klock::internal::tid::current_id();
    klock::internal::node::with_node(|_| ());
}

/// Stands in, in loom's view, for the node registry's lock.
///
/// A thread returns its node slot (and its id) at exit, and the next thread
/// that needs one leases it, through a registry that loom does not see (a
/// plain mutex under `cfg(loom)`). Loom then does not order the exited
/// thread's last Relaxed stores into the node before the new owner's, and
/// lets the new owner read them: a false failure (a wait-list link reads 0,
/// "corrupted queue tail"). On real systems the registry's lock orders them.
/// So a model thread leases its slot and then passes the gate (an AcqRel RMW)
/// when it starts, and passes it again as its last step: a thread that leased
/// a slot released by an exited thread passes the gate after that thread's
/// last pass, so every store the exited thread made happens before the new
/// owner's first use of the node.
pub struct SlotGate(pub AtomicUsize);

impl SlotGate {
    pub fn pass(&self) {
        // AcqRel: RMWs on one word form a release sequence; see above.
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// Spawn a model thread: lease a slot and pass the gate first, pass the gate
/// last.
pub fn spawn<T: Send + 'static>(
    g: &Arc<SlotGate>,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let g = g.clone();
    thread::spawn(move || {
        lease();
        g.pass();
        let v = f();
        g.pass();
        v
    })
}

/// Yield until `flag` reaches `n` (a loom-friendly wait for another
/// thread's progress). The read is a failed `compare_exchange` (as
/// `klock::internal::osq::peek` does): under loom a plain load in a loop may return a
/// stale value forever, and so may an RMW that stores (`fetch_add(0)`: loom
/// lets it read the waiter's own earlier RMW instead of the other thread's
/// store, its modification order being partial); a failed CAS stores
/// nothing and reads the newest value.
pub fn until(flag: &AtomicUsize, n: usize) {
    loop {
        // SeqCst: a test flag; the CAS never succeeds (no flag holds MAX).
        let v =
            match flag.compare_exchange(usize::MAX, usize::MAX, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(v) | Err(v) => v,
            };
        if v == n {
            return;
        }
        thread::yield_now();
    }
}

pub mod tas;

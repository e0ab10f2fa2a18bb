//! \[Experimental\] Deadlock detection (feature `deadlock_detection`).
//!
//! With the feature on, every raw lock of this crate ([`RawMutex`],
//! [`RawFairMutex`], [`RawRwLock`], so also [`ReentrantMutex`] and the
//! mutex a [`Condvar`] waits with) keeps a global **wait-for graph**:
//!
//! * an acquisition records "thread T holds lock L" (shared, exclusive or
//!   upgradable) after it succeeds; a release removes it before unlocking;
//! * a blocking acquisition that cannot take the lock at once records
//!   "thread T waits for L" (with what it wants) until it has the lock.
//!
//! [`check_deadlock`] takes one consistent snapshot of that graph (under the
//! graph's own lock) and returns each set of waiting threads that wait on
//! each other in a cycle: a strongly connected component of the wait-for
//! graph restricted to waiting threads, where T -> H when T waits for a lock
//! H holds in a way that blocks T:
//!
//! | T waits for | blocked by |
//! |---|---|
//! | a mutex, a write lock | every holder (T itself included: relocking a held mutex) |
//! | an upgradable read | exclusive and upgradable holders |
//! | a read (`read`) | exclusive holders, and threads waiting to write or to upgrade on the same lock (klock queues new reads behind them) |
//! | a recursive read (`read_recursive`) | exclusive holders only |
//! | an upgrade (`RwLockUpgradableReadGuard::upgrade`) | read holders |
//!
//! A thread in such a cycle waits for a thread that is itself waiting, so
//! none of them can release what the others wait for: they are deadlocked.
//! Each cycle is reported once: a call returns the cycles that contain at
//! least one wait not reported by an earlier call (parking_lot: "all
//! deadlocks detected since the last call").
//!
//! Not seen by the graph: timed and `try_` acquisitions (they give up by
//! themselves), waits on a [`Condvar`] itself (a missing notify is not a
//! lock cycle) and the re-lock of the mutex at the end of such a wait
//! (it happens inside klock's condvar), and locks that are not this
//! crate's.
//!
//! # Differences from parking_lot
//!
//! * [`DeadlockedThread::backtrace`] is a [`std::backtrace::Backtrace`]
//!   captured when the thread started to wait, with
//!   [`Backtrace::capture`](std::backtrace::Backtrace::capture): it is
//!   empty ("disabled backtrace") unless `RUST_BACKTRACE` or
//!   `RUST_LIB_BACKTRACE` is set (parking_lot uses the `backtrace` crate
//!   and always captures). Code that prints it with `{:?}` compiles
//!   unchanged.
//! * Cost: every acquisition and release takes one global `std` mutex and
//!   updates a hash map, whether contended or not (parking_lot pays a
//!   comparable cost per acquisition with the feature on). Do not measure
//!   performance with it.
//! * A cycle is a strongly connected component: if two cycles share a
//!   thread they come back as one `Vec`.
//!
//! [`RawMutex`]: crate::RawMutex
//! [`RawFairMutex`]: crate::RawFairMutex
//! [`RawRwLock`]: crate::RawRwLock
//! [`ReentrantMutex`]: crate::ReentrantMutex
//! [`Condvar`]: crate::Condvar
//!
//! ```
//! # #[cfg(feature = "deadlock_detection")] {
//! use parking_lot::{deadlock, Mutex};
//! use std::sync::{Arc, Barrier};
//! use std::time::Duration;
//!
//! let (a, b) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
//! let barrier = Arc::new(Barrier::new(2));
//! for (x, y) in [(a.clone(), b.clone()), (b.clone(), a.clone())] {
//!     let barrier = barrier.clone();
//!     std::thread::spawn(move || {
//!         let _gx = x.lock();
//!         barrier.wait();
//!         let _gy = y.lock(); // never returns
//!     });
//! }
//! let cycles = loop {
//!     std::thread::sleep(Duration::from_millis(10));
//!     let c = deadlock::check_deadlock();
//!     if !c.is_empty() {
//!         break c;
//!     }
//! };
//! assert_eq!(cycles.len(), 1);
//! assert_eq!(cycles[0].len(), 2);
//! for t in &cycles[0] {
//!     println!("thread {:?} at {:?}", t.thread_id(), t.backtrace());
//! }
//! assert!(deadlock::check_deadlock().is_empty()); // reported once
//! # }
//! ```

// Without the feature the module is private and its hooks compile to
// nothing (parking_lot 0.12 has no `deadlock` module then either: a
// program that calls `parking_lot::deadlock::check_deadlock` without the
// feature fails to compile, it never gets a silent empty answer).

/// What a thread holds of a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "deadlock_detection"), allow(dead_code))]
pub(crate) enum Hold {
    /// A read lock.
    Shared,
    /// A mutex or a write lock.
    Exclusive,
    /// An upgradable read lock.
    Upgradable,
}

/// What a blocked thread is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "deadlock_detection"), allow(dead_code))]
pub(crate) enum Want {
    /// A mutex or a write lock.
    Exclusive,
    /// An upgradable read lock.
    Upgradable,
    /// A read lock (queues behind waiting writers).
    Shared,
    /// A recursive read lock (waits only for a writer that holds the lock).
    SharedRecursive,
    /// An upgrade of the upgradable read lock the thread holds.
    Upgrade,
}

#[cfg(not(feature = "deadlock_detection"))]
mod hooks {
    use super::{Hold, Want};

    /// Block for a lock: without the feature, just `block()`.
    #[inline(always)]
    pub(crate) fn acquire<T>(
        _key: usize,
        _want: Want,
        _change: (Option<Hold>, Hold),
        _try_now: impl FnOnce() -> Option<T>,
        block: impl FnOnce() -> T,
    ) -> T {
        block()
    }

    /// Record an acquisition or a change of hold: nothing without the feature.
    #[inline(always)]
    pub(crate) fn acquired(_key: usize, _from: Option<Hold>, _to: Hold) {}

    /// Record a release: nothing without the feature.
    #[inline(always)]
    pub(crate) fn released(_key: usize, _hold: Hold) {}
}

#[cfg(feature = "deadlock_detection")]
mod hooks {
    use super::{Hold, Want};
    use std::backtrace::Backtrace;
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;
    use std::thread::ThreadId;

    /// One blocked thread.
    pub(super) struct Waiting {
        /// The lock's address.
        pub(super) key: usize,
        pub(super) want: Want,
        /// Unique per wait: a cycle is reported once per set of waits.
        pub(super) epoch: u64,
        pub(super) backtrace: Arc<Backtrace>,
    }

    /// The wait-for graph's state.
    #[derive(Default)]
    pub(super) struct Graph {
        /// Lock address -> (holder, what it holds), one entry per hold (a
        /// thread with two recursive reads has two).
        pub(super) holders: HashMap<usize, Vec<(ThreadId, Hold)>>,
        pub(super) waiting: HashMap<ThreadId, Waiting>,
        pub(super) next_epoch: u64,
        /// Epochs of waits already reported in a cycle.
        pub(super) reported: HashSet<u64>,
    }

    pub(super) static GRAPH: std::sync::Mutex<Option<Graph>> = std::sync::Mutex::new(None);

    /// Run `f` on the graph (created on first use). A panic inside `f`
    /// cannot leave it half-updated in a way that matters, so poisoning is
    /// ignored.
    pub(super) fn with_graph<R>(f: impl FnOnce(&mut Graph) -> R) -> R {
        let mut g = GRAPH.lock().unwrap_or_else(|e| e.into_inner());
        f(g.get_or_insert_with(Graph::default))
    }

    fn add_hold(g: &mut Graph, key: usize, me: ThreadId, from: Option<Hold>, to: Hold) {
        let hs = g.holders.entry(key).or_default();
        if let Some(from) = from
            && let Some(i) = hs.iter().position(|&(t, h)| t == me && h == from)
        {
            hs.swap_remove(i);
        }
        hs.push((me, to));
    }

    /// Block for a lock, recording the wait while `block` runs unless
    /// `try_now` gets it at once; then record the hold change `change`
    /// (`(Some(from), to)`: the thread held `from` and now holds `to`).
    pub(crate) fn acquire<T>(
        key: usize,
        want: Want,
        change: (Option<Hold>, Hold),
        try_now: impl FnOnce() -> Option<T>,
        block: impl FnOnce() -> T,
    ) -> T {
        let me = std::thread::current().id();
        if let Some(t) = try_now() {
            with_graph(|g| add_hold(g, key, me, change.0, change.1));
            return t;
        }
        let backtrace = Arc::new(Backtrace::capture());
        with_graph(|g| {
            let epoch = g.next_epoch;
            g.next_epoch += 1;
            g.waiting.insert(
                me,
                Waiting {
                    key,
                    want,
                    epoch,
                    backtrace,
                },
            );
        });
        let t = block();
        with_graph(|g| {
            if let Some(w) = g.waiting.remove(&me) {
                g.reported.remove(&w.epoch);
            }
            add_hold(g, key, me, change.0, change.1);
        });
        t
    }

    /// Record an acquisition that did not block (`from`: the hold it
    /// replaces, for upgrades and downgrades).
    pub(crate) fn acquired(key: usize, from: Option<Hold>, to: Hold) {
        let me = std::thread::current().id();
        with_graph(|g| add_hold(g, key, me, from, to));
    }

    /// Record a release (call before unlocking).
    pub(crate) fn released(key: usize, hold: Hold) {
        let me = std::thread::current().id();
        with_graph(|g| {
            if let Some(hs) = g.holders.get_mut(&key) {
                if let Some(i) = hs.iter().position(|&(t, h)| t == me && h == hold) {
                    hs.swap_remove(i);
                }
                if hs.is_empty() {
                    g.holders.remove(&key);
                }
            }
        });
    }
}

pub(crate) use hooks::{acquire, acquired, released};

#[cfg(feature = "deadlock_detection")]
pub use detect::{DeadlockedThread, check_deadlock};

#[cfg(feature = "deadlock_detection")]
mod detect {
    use super::hooks::{Graph, with_graph};
    use super::{Hold, Want};
    use std::backtrace::Backtrace;
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::thread::ThreadId;

    /// A thread in a deadlock cycle (parking_lot_core's `DeadlockedThread`).
    ///
    /// ```
    /// // Nothing is deadlocked here.
    /// assert!(parking_lot::deadlock::check_deadlock().is_empty());
    /// ```
    #[derive(Debug, Clone)]
    pub struct DeadlockedThread {
        thread_id: ThreadId,
        backtrace: Arc<Backtrace>,
    }

    impl DeadlockedThread {
        /// The thread's id (`std::thread::ThreadId`, as in parking_lot).
        pub fn thread_id(&self) -> ThreadId {
            self.thread_id
        }

        /// Where the thread started to wait: a backtrace captured with
        /// `Backtrace::capture` (disabled unless `RUST_BACKTRACE` or
        /// `RUST_LIB_BACKTRACE` is set; see the [module docs](super)).
        pub fn backtrace(&self) -> &Backtrace {
            &self.backtrace
        }
    }

    /// Does a wait for `want` on a lock held as `held` (by any thread, the
    /// waiter included) block the waiter (see the table in the module docs)?
    fn blocks(want: Want, held: Hold) -> bool {
        match want {
            Want::Exclusive => true,
            Want::Upgradable => held != Hold::Shared,
            Want::Shared | Want::SharedRecursive => held == Hold::Exclusive,
            // An upgrade waits for every read lock, the upgrader's own
            // included; its own upgradable hold does not block it.
            Want::Upgrade => held == Hold::Shared,
        }
    }

    /// The wait-for edges among waiting threads.
    fn edges(g: &Graph) -> HashMap<ThreadId, Vec<ThreadId>> {
        let mut out: HashMap<ThreadId, Vec<ThreadId>> = HashMap::new();
        for (&t, w) in &g.waiting {
            let mut to = Vec::new();
            for &(h, held) in g.holders.get(&w.key).map(Vec::as_slice).unwrap_or(&[]) {
                if blocks(w.want, held) && g.waiting.contains_key(&h) && !to.contains(&h) {
                    to.push(h);
                }
            }
            if w.want == Want::Shared {
                // A plain read queues behind threads waiting to write or
                // to upgrade on the same lock.
                for (&o, ow) in &g.waiting {
                    if o != t
                        && ow.key == w.key
                        && matches!(ow.want, Want::Exclusive | Want::Upgrade)
                        && !to.contains(&o)
                    {
                        to.push(o);
                    }
                }
            }
            out.insert(t, to);
        }
        out
    }

    /// Tarjan's strongly connected components, iteratively; returns the
    /// components that contain a cycle (more than one thread, or one
    /// thread with an edge to itself).
    fn cycles(e: &HashMap<ThreadId, Vec<ThreadId>>) -> Vec<Vec<ThreadId>> {
        let nodes: Vec<ThreadId> = e.keys().copied().collect();
        let idx: HashMap<ThreadId, usize> =
            nodes.iter().enumerate().map(|(i, &t)| (t, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|t| e[t].iter().map(|h| idx[h]).collect())
            .collect();
        let n = nodes.len();
        let (mut index, mut low, mut on_stack) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
        let (mut next, mut stack, mut out) = (0, Vec::new(), Vec::new());
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            // (node, position in its successor list)
            let mut work = vec![(root, 0usize)];
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if *pos == 0 && index[v] == usize::MAX {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                }
                if let Some(&w) = succ[v].get(*pos) {
                    *pos += 1;
                    if index[w] == usize::MAX {
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(x) = stack.pop() {
                        on_stack[x] = false;
                        comp.push(x);
                        if x == v {
                            break;
                        }
                    }
                    if comp.len() > 1 || succ[v].contains(&v) {
                        out.push(comp.into_iter().map(|i| nodes[i]).collect());
                    }
                }
            }
        }
        out
    }

    /// Returns the deadlocks detected since the last call: each inner
    /// `Vec` holds the threads of one cycle of waits on this crate's locks
    /// (see the [module docs](super) for what counts).
    ///
    /// ```
    /// assert!(parking_lot::deadlock::check_deadlock().is_empty());
    /// ```
    pub fn check_deadlock() -> Vec<Vec<DeadlockedThread>> {
        with_graph(|g| {
            let found = cycles(&edges(g));
            let mut out = Vec::new();
            for comp in found {
                let new = comp
                    .iter()
                    .any(|t| !g.reported.contains(&g.waiting[t].epoch));
                if !new {
                    continue;
                }
                for t in &comp {
                    g.reported.insert(g.waiting[t].epoch);
                }
                out.push(
                    comp.iter()
                        .map(|t| DeadlockedThread {
                            thread_id: *t,
                            backtrace: g.waiting[t].backtrace.clone(),
                        })
                        .collect(),
                );
            }
            out
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn ids(n: usize) -> Vec<ThreadId> {
            (0..n)
                .map(|_| {
                    std::thread::spawn(|| std::thread::current().id())
                        .join()
                        .unwrap()
                })
                .collect()
        }

        #[test]
        fn tarjan_finds_cycles_and_self_loops_only() {
            let t = ids(5);
            let mut e = HashMap::new();
            e.insert(t[0], vec![t[1]]);
            e.insert(t[1], vec![t[0]]);
            e.insert(t[2], vec![t[0]]); // waits on the cycle, not in it
            e.insert(t[3], vec![t[3]]); // self-deadlock
            e.insert(t[4], vec![]);
            let mut c = cycles(&e);
            c.iter_mut()
                .for_each(|c| c.sort_by_key(|x| format!("{x:?}")));
            c.sort_by_key(|c| c.len());
            assert_eq!(c.len(), 2);
            assert_eq!(c[0], vec![t[3]]);
            assert_eq!(c[1].len(), 2);
            assert!(c[1].contains(&t[0]) && c[1].contains(&t[1]));
        }

        #[test]
        fn blocking_rules() {
            assert!(blocks(Want::Exclusive, Hold::Exclusive));
            assert!(blocks(Want::Exclusive, Hold::Shared));
            assert!(!blocks(Want::Upgradable, Hold::Shared));
            assert!(blocks(Want::Upgradable, Hold::Upgradable));
            assert!(!blocks(Want::SharedRecursive, Hold::Shared));
            assert!(blocks(Want::SharedRecursive, Hold::Exclusive));
            assert!(blocks(Want::Shared, Hold::Exclusive));
            assert!(!blocks(Want::Shared, Hold::Upgradable));
            assert!(!blocks(Want::Upgrade, Hold::Upgradable));
            assert!(blocks(Want::Upgrade, Hold::Shared));
        }
    }
}

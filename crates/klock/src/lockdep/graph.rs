//! The lock-order graph: one edge `H -> L` for each way a thread was seen
//! waiting for `L` while holding `H`, and the search for a cycle when a new
//! edge arrives.
//!
//! * **Seen edges cost a lookup, not a lock**: [`seen`] probes an
//!   open-addressing set of edge keys, written only under the graph lock and
//!   read without it (a miss is checked again under the lock).
//! * **A new edge** ([`add`]) takes the graph lock (klock's registry lock,
//!   never a lock the program can see), asks the topological order
//!   (`order`) whether it can close a cycle, searches for a path back from
//!   `L` to `H` only if so, links the edge into `H`'s out-list and `L`'s
//!   in-list, and publishes its key last.
//!
//! An edge's key carries the two modes that decide whether a cycle through
//! it can block: `from_read` (H was held shared) and `to_passing` (L was
//! wanted shared on a reader-preferring lock, which never waits while the
//! lock is only read-held). A path is a deadlock only if no lock on it is
//! entered by a `to_passing` edge and left by a `from_read` one
//! ([`blocks`]): a passing reader does not wait for a reader. (The keys
//! and the edge records are `edges`'.)

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, Ordering::Relaxed};

use super::edges::{EDGES, FRAMES, Key, MAX_EDGES, edge};
use super::ids::{self, MAX_LOCKS};
use super::order::{self, Order, Verdict};
use super::region::Region;
use crate::reglock::RegLock;

/// Key-set slots: twice the edges, so probes stay short.
const SET: usize = MAX_EDGES * 2;
/// Longest cycle a report spells out.
pub(super) const MAX_CYCLE: usize = 16;

/// Can a thread that arrived at a lock by an edge with `arrived_passing`
/// leave it by an edge with `from_read` and still be blocked there? Not when
/// it waits as a passing reader while the lock is read-held.
#[inline]
pub(super) fn blocks(arrived_passing: bool, from_read: bool) -> bool {
    !(arrived_passing && from_read)
}

static KEYS: Region<AtomicU64, SET> = Region::new();
/// The BFS queue of a search: states `id << 1 | arrived_passing`.
static QUEUE: Region<AtomicU32, { MAX_LOCKS * 2 }> = Region::new();

/// What the graph lock guards besides the edges' contents.
pub(super) struct Graph {
    /// Edges recorded (index of the last one; 0 = none).
    pub(super) edges: u32,
    /// The current search's generation (marks in the records).
    generation: u32,
    /// Edges dropped because the table was full.
    pub(super) dropped: u64,
    /// The topological order.
    order: Order,
}

/// Set when the edge table filled: new orders are no longer checked (a
/// seen edge still costs its lookup; an unseen one no longer takes the
/// slow path).
static FULL: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Has the edge table filled?
#[inline]
pub(super) fn full() -> bool {
    // Relaxed: a one-way flag; a thread that misses it takes the slow path
    // once more, which checks again under the lock.
    FULL.load(Relaxed)
}

pub(super) static GRAPH: RegLock<Graph> = RegLock::new(Graph {
    edges: 0,
    generation: 0,
    dropped: 0,
    order: Order::new(),
});

/// Where a key's probe starts: the whole key mixed (a lock with thousands
/// of out-edges, such as Kyoto Cabinet's database lock over its slot locks,
/// must not crowd one region of the set: clustered starts made probe runs
/// long enough to dominate a validated acquisition).
#[inline]
fn slot_of(k: u64) -> usize {
    let h = (k ^ (k >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (h ^ (h >> 32)) as usize
}

/// Has the edge `k` been recorded? Lock-free.
#[inline]
pub(super) fn seen(k: u64) -> bool {
    let Some(keys) = KEYS.get() else { return true };
    let mut i = slot_of(k);
    loop {
        // Acquire pairs with the Release store in `publish`: a key seen means
        // its edge is complete (only the graph lock's holders read that).
        let v = keys[i & (SET - 1)].load(Ordering::Acquire);
        if v == k {
            return true;
        }
        if v == 0 {
            return false;
        }
        i += 1;
    }
}

/// Put `k` in the set. Only under the graph lock (one writer), and at most
/// [`MAX_EDGES`] keys in [`SET`] slots, so a free slot is always found.
fn publish(keys: &[AtomicU64; SET], k: u64) {
    let mut i = slot_of(k);
    loop {
        let s = &keys[i & (SET - 1)];
        // Relaxed: the writer is alone (graph lock).
        if s.load(Relaxed) == 0 {
            // Release pairs with the Acquire load in `seen`.
            s.store(k, Ordering::Release);
            return;
        }
        i += 1;
    }
}

/// A cycle closed by a new edge: the new edge first, then the path back
/// to its start (edge indices), `len` of them kept and `more` not.
pub(super) struct Cycle {
    pub(super) edges: [u32; MAX_CYCLE],
    pub(super) len: usize,
    pub(super) more: usize,
}

/// Record the edge `k` (not yet [`seen`]) made by thread `tid` at `frames`,
/// holding the graph lock `g`. Returns the cycle it closes, if any; `None`
/// also when another thread recorded it first or the table is full.
pub(super) fn add(g: &mut Graph, k: u64, tid: u32, frames: &[usize]) -> Option<Cycle> {
    // Relaxed throughout: graph data, touched only under the graph lock,
    // whose Acquire lock / Release unlock pair orders it between holders.
    let (keys, edges) = (KEYS.get()?, EDGES.get()?);
    if seen(k) {
        return None;
    }
    if g.edges as usize + 1 >= MAX_EDGES {
        g.dropped += 1;
        // Relaxed: see `full`.
        FULL.store(true, Relaxed);
        return None;
    }
    let key = Key::of(k);
    // The order rules most edges out at once; the exact search runs only
    // where the graph may have a cycle through this one.
    let (from, to) = (ids::rec(key.from), ids::rec(key.to));
    let cycle = match order::insert(&mut g.order, &key) {
        Verdict::Acyclic => None,
        Verdict::Search => search(g, key),
    };
    g.edges += 1;
    let i = g.edges;
    let e = &edges[i as usize];
    e.key.store(k, Relaxed);
    e.tid.store(tid, Relaxed);
    let n = frames.len().min(FRAMES);
    for (slot, &f) in e.frames.iter().zip(&frames[..n]) {
        slot.store(f, Relaxed);
    }
    e.frames_n.store(n as u32, Relaxed);
    e.next.store(from.out.load(Relaxed), Relaxed);
    from.out.store(i, Relaxed);
    e.next_in.store(to.in_head.load(Relaxed), Relaxed);
    to.in_head.store(i, Relaxed);
    let _ = ids::rec(key.to)
        .site
        .compare_exchange(0, i as usize, Relaxed, Relaxed);
    // Window: the edge is linked but not yet published; a reader misses it
    // and rechecks under the lock (which this thread holds).
    crate::chaos::point(crate::chaos::Site::ListEdit);
    publish(keys, k);
    cycle.map(|mut c| {
        c.edges[0] = i;
        c
    })
}

/// Does every recorded edge go up the topological order? `None` once the
/// graph has a cycle (no order to keep). For tests.
pub(super) fn order_holds() -> Option<bool> {
    // Relaxed throughout: graph data, touched only under the graph lock,
    // whose Acquire lock / Release unlock pair orders it between holders.
    let g = GRAPH.lock();
    if g.order.broken {
        return None;
    }
    Some((1..=g.edges).all(|i| {
        let k = Key::of(edge(i).key.load(Relaxed));
        ids::rec(k.from).ord.load(Relaxed) < ids::rec(k.to).ord.load(Relaxed)
    }))
}

/// Breadth-first search for a blocking path from the new edge's `to` back to
/// its `from`, over states (lock, arrived by a passing-reader edge). The
/// first element of the returned cycle is left for the caller (the new edge).
fn search(g: &mut Graph, new: Key) -> Option<Cycle> {
    // Relaxed throughout: graph data, touched only under the graph lock,
    // whose Acquire lock / Release unlock pair orders it between holders.
    let queue = QUEUE.get()?;
    g.generation = g.generation.wrapping_add(1).max(1);
    let gen_ = g.generation;
    let mark = |id: u32, a: bool, via: u32| {
        let r = ids::rec(id);
        r.seen[a as usize].store(gen_, Relaxed);
        r.via[a as usize].store(via, Relaxed);
    };
    let (mut head, mut tail) = (0usize, 0usize);
    mark(new.to, new.to_passing, 0);
    queue[tail].store(new.to << 1 | new.to_passing as u32, Relaxed);
    tail += 1;
    while head < tail {
        let s = queue[head].load(Relaxed);
        head += 1;
        let (x, a) = (s >> 1, s & 1 != 0);
        if x == new.from && blocks(a, new.from_read) {
            return Some(path(new, a));
        }
        let mut i = ids::rec(x).out.load(Relaxed);
        while i != 0 {
            let e = edge(i);
            let k = Key::of(e.key.load(Relaxed));
            if blocks(a, k.from_read) {
                let r = ids::rec(k.to);
                if r.seen[k.to_passing as usize].load(Relaxed) != gen_ && tail < queue.len() {
                    mark(k.to, k.to_passing, i << 1 | a as u32);
                    queue[tail].store(k.to << 1 | k.to_passing as u32, Relaxed);
                    tail += 1;
                }
            }
            i = e.next.load(Relaxed);
        }
    }
    None
}

/// The path found by [`search`], read back from the marks: edges from the
/// new edge's `to` to its `from`, in order, after a slot for the new edge.
fn path(new: Key, arrived: bool) -> Cycle {
    // Relaxed throughout: graph data, touched only under the graph lock,
    // whose Acquire lock / Release unlock pair orders it between holders.
    let mut back = [0u32; MAX_LOCKS_IN_PATH];
    let (mut n, mut total) = (0usize, 0usize);
    let (mut id, mut a) = (new.from, arrived);
    loop {
        let via = ids::rec(id).via[a as usize].load(Relaxed);
        if via == 0 {
            break;
        }
        let i = via >> 1;
        if n < back.len() {
            back[n] = i;
            n += 1;
        }
        total += 1;
        a = via & 1 != 0;
        id = Key::of(edge(i).key.load(Relaxed)).from;
    }
    let mut c = Cycle {
        edges: [0; MAX_CYCLE],
        len: 1,
        more: 0,
    };
    // `back` holds the path from its end; keep the first MAX_CYCLE - 1 edges
    // from its start (the report names the rest as a count).
    for &i in back[..n].iter().rev() {
        if c.len < MAX_CYCLE {
            c.edges[c.len] = i;
            c.len += 1;
        } else {
            c.more += 1;
        }
    }
    c.more += total - n;
    c
}

/// Edges kept while reading a path back (longer paths are counted only).
const MAX_LOCKS_IN_PATH: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passing_reader_is_not_blocked_by_a_reader() {
        assert!(!blocks(true, true));
        assert!(blocks(true, false));
        assert!(blocks(false, true));
        assert!(blocks(false, false));
    }
}

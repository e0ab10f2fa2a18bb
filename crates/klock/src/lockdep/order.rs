//! A topological order of the lock graph, kept up to date as edges arrive
//! (Pearce and Kelly's dynamic topological sort), so that a new edge that
//! agrees with the order, the common case in a program with a lock order,
//! needs no cycle search at all.
//!
//! Every lock with an edge has a number `ord`, and every edge `u -> v` has
//! `ord[u] < ord[v]`. A new edge `x -> y`:
//!
//! ```text
//! x or y unplaced   x gets --lo (below all), y gets ++hi (above all)     O(1)
//! ord[x] < ord[y]   agrees: no cycle possible                            O(1)
//! x has no in-edge  x moves to --lo                                      O(1)
//! y has no out-edge y moves to ++hi                                      O(1)
//! otherwise         forward from y over locks below x (reaching x: a
//!                   cycle in the graph), backward from x over locks above
//!                   y; the two sets swap places in the order            O(affected)
//! more than REORDER_MAX locks would move: the order is given up (below)
//! ```
//!
//! A cycle in the graph is not always a deadlock (a passing reader does not
//! wait for a reader: `graph::blocks`), so the caller then runs the exact
//! search; and from then on the graph has no topological order, so
//! [`Order::broken`] is set and every new edge is searched (still pruned by
//! the O(1) in/out checks). A reordering that would move more than
//! `REORDER_MAX` locks gives the order up the same way. All of it runs under the graph lock.

use core::sync::atomic::Ordering::Relaxed;

use super::edges::{Key, edge};
use super::ids::{self, MAX_LOCKS};
use super::region::Region;

/// The order's state (inside the graph lock's data).
pub(super) struct Order {
    lo: i64,
    hi: i64,
    /// The graph has a cycle: no order any more, search every edge.
    pub(super) broken: bool,
    mark: u32,
}

impl Order {
    pub(super) const fn new() -> Order {
        Order {
            lo: 0,
            hi: 0,
            broken: false,
            mark: 0,
        }
    }
}

/// What the order says about a new edge.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No cycle through it (the order now includes it).
    Acyclic,
    /// It may close a cycle: run the exact search.
    Search,
}

/// Locks one reordering may move: past it the order is given up (as for a
/// cycle) and every later edge is searched instead. A program that takes
/// long chains of locks in an order the graph learns backwards (Kyoto
/// Cabinet's tree database, 1 024 slot locks taken together) would
/// otherwise move thousands of locks per new edge, under the graph lock.
const REORDER_MAX: usize = 1024;

/// Scratch for the two sets (forward, backward) and the merged numbers.
static FWD: Region<u32, MAX_LOCKS> = Region::new();
static BWD: Region<u32, MAX_LOCKS> = Region::new();
static NUMS: Region<i64, { MAX_LOCKS * 2 }> = Region::new();

/// A lock's place. Relaxed (here and below): order data, touched only under
/// the graph lock, whose Acquire lock / Release unlock pair orders it.
fn ord(id: u32) -> i64 {
    ids::rec(id).ord.load(Relaxed)
}

fn set_ord(id: u32, o: i64) {
    ids::rec(id).ord.store(o, Relaxed);
}

/// Place the edge `x -> y` (not yet linked) in the order.
pub(super) fn insert(o: &mut Order, k: &Key) -> Verdict {
    let (x, y) = (k.from, k.to);
    if ord(x) == 0 {
        o.lo -= 1;
        set_ord(x, o.lo);
    }
    if ord(y) == 0 {
        o.hi += 1;
        set_ord(y, o.hi);
    }
    let (rx, ry) = (ids::rec(x), ids::rec(y));
    if rx.in_head.load(Relaxed) == 0 || ry.out.load(Relaxed) == 0 {
        // No edge into x, or none out of y: no cycle through x -> y. Move
        // an out-of-order one to the end it may stand at.
        if ord(x) > ord(y) && !o.broken {
            if rx.in_head.load(Relaxed) == 0 {
                o.lo -= 1;
                set_ord(x, o.lo);
            } else {
                o.hi += 1;
                set_ord(y, o.hi);
            }
        }
        return Verdict::Acyclic;
    }
    if o.broken {
        return Verdict::Search;
    }
    if ord(x) < ord(y) {
        return Verdict::Acyclic;
    }
    if reorder(o, x, y) {
        Verdict::Acyclic
    } else {
        o.broken = true;
        Verdict::Search
    }
}

/// Pearce-Kelly's reordering for `x -> y` with `ord[y] < ord[x]`: false if
/// `x` is reachable from `y` (a cycle in the graph), or if more than
/// [`REORDER_MAX`] locks would move.
fn reorder(o: &mut Order, x: u32, y: u32) -> bool {
    let (Some(f), Some(b), Some(nums)) = (FWD.base(), BWD.base(), NUMS.base()) else {
        return false;
    };
    // SAFETY: the scratch arrays are used only under the graph lock, which
    // the caller holds; nothing else borrows them.
    let (f, b, nums) = unsafe {
        (
            core::slice::from_raw_parts_mut(f, MAX_LOCKS),
            core::slice::from_raw_parts_mut(b, MAX_LOCKS),
            core::slice::from_raw_parts_mut(nums, MAX_LOCKS * 2),
        )
    };
    let (ox, oy) = (ord(x), ord(y));
    o.mark = o.mark.wrapping_add(2).max(2);
    let (fmark, bmark) = (o.mark, o.mark + 1);
    let marked = |id: u32, m: u32| ids::rec(id).pk.load(Relaxed) == m;
    let mark = |id: u32, m: u32| ids::rec(id).pk.store(m, Relaxed);
    // Forward from y over locks ordered below x.
    let mut nf = 1;
    f[0] = y;
    mark(y, fmark);
    let mut i = 0;
    while i < nf {
        let mut e = ids::rec(f[i]).out.load(Relaxed);
        i += 1;
        while e != 0 {
            let ed = edge(e);
            let z = Key::of(ed.key.load(Relaxed)).to;
            if z == x {
                return false;
            }
            if !marked(z, fmark) && ord(z) < ox {
                if nf == REORDER_MAX {
                    return false;
                }
                mark(z, fmark);
                f[nf] = z;
                nf += 1;
            }
            e = ed.next.load(Relaxed);
        }
    }
    // Backward from x over locks ordered above y.
    let mut nb = 1;
    b[0] = x;
    mark(x, bmark);
    let mut i = 0;
    while i < nb {
        let mut e = ids::rec(b[i]).in_head.load(Relaxed);
        i += 1;
        while e != 0 {
            let ed = edge(e);
            let z = Key::of(ed.key.load(Relaxed)).from;
            if !marked(z, bmark) && ord(z) > oy {
                if nb == REORDER_MAX {
                    return false;
                }
                mark(z, bmark);
                b[nb] = z;
                nb += 1;
            }
            e = ed.next_in.load(Relaxed);
        }
    }
    // The backward set goes first, then the forward set, each keeping its
    // own order, into the same numbers.
    let (f, b) = (&mut f[..nf], &mut b[..nb]);
    b.sort_unstable_by_key(|&id| ord(id));
    f.sort_unstable_by_key(|&id| ord(id));
    let nums = &mut nums[..nf + nb];
    for (n, &id) in nums.iter_mut().zip(b.iter().chain(f.iter())) {
        *n = ord(id);
    }
    nums.sort_unstable();
    for (&n, &id) in nums.iter().zip(b.iter().chain(f.iter())) {
        set_ord(id, n);
    }
    true
}

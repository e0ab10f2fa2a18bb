//! The validator's topological order (docs/lockdep.md, Cost), in a process
//! of its own (a cycle anywhere in the process ends the order): orders taken
//! in a hidden global order, over locks made in a scrambled one, force
//! reorder after reorder; afterwards every edge goes up the order and
//! nothing was reported; then one reversed pair is reported, and the order
//! is given up.

use klock::internal::lockdep::{self, Lock, Mode};

fn take(l: Lock) {
    lockdep::acquire(l, Mode::Write, false, false, || (), |_| true);
}

#[test]
fn the_order_stays_topological_until_a_cycle() {
    lockdep::set_enabled(true, false);
    let dir = std::env::temp_dir().join(format!("klock-lockdep-order-{}", std::process::id()));
    // SAFETY: set before any other thread of this test process reads it.
    unsafe { std::env::set_var("KLOCK_LOCKDEP_FILE", &dir) };
    const N: usize = 60;
    let base = 0x6e00_0000_0000usize;
    let mut by_rank = vec![None; N];
    for k in 0..N {
        // Made (first used) in a scrambled order: rank (k * 17 + 5) % N.
        by_rank[(k * 17 + 5) % N] = Some(lockdep::lock_at(base + 64 * k).unwrap());
    }
    let by_rank: Vec<Lock> = by_rank.into_iter().map(Option::unwrap).collect();
    let mut seed = 12345u64;
    let before = lockdep::reports();
    for _ in 0..2000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (a, b) = ((seed >> 33) as usize % N, (seed >> 17) as usize % N);
        if a == b {
            continue;
        }
        let (p, q) = (by_rank[a.min(b)], by_rank[a.max(b)]);
        take(p);
        take(q);
        let _ = lockdep::released(q);
        let _ = lockdep::released(p);
    }
    assert_eq!(
        lockdep::reports(),
        before,
        "a consistent order is never reported"
    );
    assert_eq!(
        lockdep::order_holds(),
        Some(true),
        "every edge goes up the order"
    );
    take(by_rank[N - 1]);
    take(by_rank[0]);
    let _ = lockdep::released(by_rank[0]);
    let _ = lockdep::released(by_rank[N - 1]);
    assert_eq!(
        lockdep::reports(),
        before + 1,
        "the reversed pair closes a cycle"
    );
    assert_eq!(lockdep::order_holds(), None, "a cycle ends the order");
    let text = std::fs::read_to_string(&dir).unwrap_or_default();
    let _ = std::fs::remove_file(&dir);
    assert!(text.contains("possible deadlock"), "{text}");
}

//! Run a short contended workload on one spinlock variant and print the lock
//! events (build with `--features stats` to see counters).
//!
//! `cargo run --release -p klock --features stats --example spin_stats -- pv 8`
//!
//! The variant is any `KLOCK_SPIN` name; the second argument is the thread count.

use klock::{DynSpinLock, RawSpin};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "pv".to_string());
    let threads: usize = match args.next().map(|t| t.parse()) {
        None => 8,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!(
                "usage: spin_stats [native|pv|pvbase|unfair|ticket|pvticket|tas] [threads>0]"
            );
            std::process::exit(2);
        }
    };
    let Some(kind) = klock::tune::SpinKind::from_name(kind.as_bytes()) else {
        eprintln!(
            "spin_stats: unknown spinlock '{kind}' ({})",
            klock::tune::SpinKind::allowed()
        );
        std::process::exit(2);
    };
    let mut t = klock::tune::Tunables::from_lookup(|v| std::env::var(v).ok(), |e| eprintln!("{e}"));
    t.spin_kind = kind;
    if !klock::tune::set(t) {
        eprintln!("tunables were already read; using them");
    }
    assert_eq!(RawSpin::kind(), kind);
    let lock = DynSpinLock::new(0u64);
    let stop = Instant::now() + Duration::from_millis(500);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while Instant::now() < stop {
                    *lock.lock() += 1;
                    for i in 0..200u64 {
                        std::hint::black_box(i);
                    }
                }
            });
        }
    });
    println!(
        "{}: {threads} threads, {} acquisitions",
        kind.name(),
        *lock.lock()
    );
    print!("{}", klock::stat::snapshot().report());
}

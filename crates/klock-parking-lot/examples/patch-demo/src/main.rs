//! Uses parking_lot 0.12's API as any program does; prints which
//! implementation it got (klock's raw mutex is 16 bytes, parking_lot's 1).

use parking_lot::{Condvar, Mutex, Once, RwLock};
use std::sync::Arc;

static INIT: Once = Once::new();

fn main() {
    INIT.call_once(|| println!("initialised once"));
    let counter = Arc::new(Mutex::new(0u64));
    let table = Arc::new(RwLock::new(vec![0u64; 4]));
    let done = Arc::new((Mutex::new(0usize), Condvar::new()));
    let threads = 4;
    for t in 0..threads {
        let (counter, table, done) = (counter.clone(), table.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..10_000u64 {
                *counter.lock() += 1;
                if i % 100 == 0 {
                    table.write()[t] += 1;
                } else {
                    let _sum: u64 = table.read().iter().sum();
                }
            }
            *done.0.lock() += 1;
            done.1.notify_all();
        });
    }
    let mut finished = done.0.lock();
    done.1.wait_while(&mut finished, |n| *n < threads);
    drop(finished);
    assert_eq!(*counter.lock(), 40_000);
    assert_eq!(table.read().iter().sum::<u64>(), 400);
    let raw = std::mem::size_of::<parking_lot::RawMutex>();
    println!(
        "counter = {}, parking_lot::RawMutex is {raw} bytes: {}",
        counter.lock(),
        if raw > 1 {
            "klock's parking_lot (klock-parking-lot)"
        } else {
            "crates.io's parking_lot"
        }
    );
}

//! r2d2 pool checkout workload: `THREADS` threads each loop {get a connection
//! from a pool of `POOL` connections; hold it for `HOLD` ns of work; return it}
//! for `SECONDS`. With fewer connections than threads, r2d2 parks the waiters on
//! its parking_lot `Condvar`, so the run exercises Mutex and Condvar both.
//!
//! Usage: `r2d2-pool-workload THREADS POOL HOLD_NS SECONDS`. Prints one line:
//! `ops=<total> secs=<elapsed> per_thread=<n,n,...> lat=<p50,p99,p99.9,max,samples>
//! cpu_ns=<n> nvcsw=<n> nivcsw=<n>`: checkout latency in ns, sampled every 64th
//! checkout of each thread, and the process's CPU time and context switches.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A connection that costs nothing to make or check: the pool's locking is
/// all that is measured.
struct Nop;

impl r2d2::ManageConnection for Nop {
    type Connection = u64;
    type Error = std::io::Error;
    fn connect(&self) -> Result<u64, Self::Error> {
        Ok(0)
    }
    fn is_valid(&self, _: &mut u64) -> Result<(), Self::Error> {
        Ok(())
    }
    fn has_broken(&self, _: &mut u64) -> bool {
        false
    }
}

fn arg(args: &[String], i: usize, name: &str) -> u64 {
    match args.get(i).map(|s| s.parse::<f64>()) {
        Some(Ok(v)) if v >= 0.0 => v as u64,
        _ => {
            eprintln!("usage: r2d2-pool-workload THREADS POOL HOLD_NS SECONDS (bad or missing {name})");
            std::process::exit(2)
        }
    }
}

/// Busy work standing in for using the connection (no syscall, no lock).
fn work(ns: u64) {
    let end = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = arg(&args, 1, "THREADS").max(1) as usize;
    let pool_size = arg(&args, 2, "POOL").max(1) as u32;
    let hold = arg(&args, 3, "HOLD_NS");
    let secs: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let pool = r2d2::Pool::builder()
        .max_size(pool_size)
        .min_idle(Some(pool_size))
        .test_on_check_out(false)
        .connection_timeout(Duration::from_secs(60))
        .build(Nop)
        .expect("pool");
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (pool, stop) = (pool.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut n, mut lat) = (0u64, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let t0 = (n % 64 == 0).then(Instant::now);
                    let conn = pool.get().expect("checkout");
                    if let Some(t0) = t0 {
                        lat.push(t0.elapsed().as_nanos() as u64);
                    }
                    work(hold);
                    drop(conn);
                    n += 1;
                }
                (n, lat)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let (mut per, mut lat) = (Vec::new(), Vec::new());
    for h in handles {
        let (n, l) = h.join().unwrap();
        per.push(n.to_string());
        lat.extend(l);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let total: u64 = per.iter().map(|n| n.parse::<u64>().unwrap()).sum();
    lat.sort_unstable();
    let samples = lat.len();
    let pct = |p: f64| lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)));
    let lat = [pct(0.5), pct(0.99), pct(0.999), lat.last()].map(|v| v.copied().unwrap_or(0));
    // SAFETY: getrusage only writes the struct it is given, which is zeroed and ours.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let cpu_ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    println!(
        "ops={total} secs={elapsed:.3} per_thread={} lat={},{},{},{},{} cpu_ns={} nvcsw={} nivcsw={}",
        per.join(","),
        lat[0],
        lat[1],
        lat[2],
        lat[3],
        samples,
        cpu_ns(ru.ru_utime) + cpu_ns(ru.ru_stime),
        ru.ru_nvcsw,
        ru.ru_nivcsw
    );
}

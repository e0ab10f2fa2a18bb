//! Fork safety of klock's own global state (the node slot registry, the
//! thread-id allocator, the stats registry, the tunables and effective CPUs;
//! see `klock::internal::fork` and `docs/fork.md`).
//!
//! While threads hammer klock locks, churn short-lived threads (which take and
//! return node slots and thread ids) and probe the registries, the test thread
//! forks repeatedly. Each child uses only what the rules allow: a lock that was
//! free with no waiters at fork time (the hammer threads never touch it), and
//! new locks, threads and condvars. It reports through its exit code (0 = all
//! good); the parent waits for it with a watchdog and kills it if it hangs.
//! Nothing here asserts on timing.
//!
//! The registry probe (`global_registry().in_use()`, `stat::snapshot()`) keeps
//! the registries' internal locks held a large share of the time, so a fork
//! without klock's atfork handlers would often leave one of them locked in the
//! child, and the child would hang on its first new thread or node.
//! `KLOCK_FORK_TEST_ROUNDS` overrides the number of forks (default 20);
//! with `KLOCK_FORK_TEST_GDB` set, a hung child's threads are printed with
//! `gdb` before it is killed.
//!
//! The child starts its threads with `pthread_create`, not `std::thread`:
//! std's thread start and exit take a process-wide std lock (the stack
//! overflow handler's thread registry), which the parent's thread churn
//! sometimes holds at the fork, so a child's `std::thread::spawn` can hang for
//! reasons that have nothing to do with klock. Programs under the LD_PRELOAD
//! interposer start their threads with `pthread_create` too.
#![cfg(not(loom))]

use klock::{Condvar, Mutex, SpinLock};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a child may run before the parent kills it and fails the test:
/// a watchdog for a hang, far beyond the child's normal run (milliseconds).
const WATCHDOG: Duration = Duration::from_secs(120);

/// Locks shared with the hammer threads (never used by a child).
struct Hot {
    spin: SpinLock<u64>,
    mutex: Mutex<u64>,
    cv: Condvar,
    stop: AtomicBool,
    /// Increments of `spin` done by the hammer threads (lost-update check).
    spin_ops: AtomicU64,
}

fn rounds() -> usize {
    std::env::var("KLOCK_FORK_TEST_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// Write a message to stderr with one `write(2)`: no Rust stderr lock (which a
/// thread of the parent might have held at fork time).
fn child_say(msg: &str) {
    // SAFETY: writes `msg.len()` bytes from a live buffer to fd 2.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// A thread started with `pthread_create` (see the module docs).
struct RawThread(libc::pthread_t);

type Job = Box<dyn FnOnce() + Send>;

extern "C" fn raw_thread_main(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Box<Job>` leaked by `raw_spawn`, passed to exactly
    // one thread.
    let job = unsafe { Box::from_raw(arg.cast::<Job>()) };
    // A panic must not unwind out of an `extern "C"` fn: report it instead.
    let ok = std::panic::catch_unwind(AssertUnwindSafe(job)).is_ok();
    usize::from(ok) as *mut libc::c_void
}

fn raw_spawn(f: impl FnOnce() + Send + 'static) -> RawThread {
    let job: Box<Job> = Box::new(Box::new(f));
    let arg = Box::into_raw(job).cast::<libc::c_void>();
    let mut t: libc::pthread_t = 0;
    // SAFETY: `t` is a live out-parameter; `raw_thread_main` takes ownership
    // of `arg` (reclaimed below if the thread could not be started).
    let r = unsafe { libc::pthread_create(&mut t, std::ptr::null(), raw_thread_main, arg) };
    if r != 0 {
        // SAFETY: no thread received `arg`.
        drop(unsafe { Box::from_raw(arg.cast::<Job>()) });
        panic!("pthread_create: error {r}");
    }
    RawThread(t)
}

impl RawThread {
    /// Wait for the thread; `true` if its job returned without panicking.
    fn join(self) -> bool {
        let mut ret: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: joins a thread started by `raw_spawn`, exactly once.
        let r = unsafe { libc::pthread_join(self.0, &mut ret) };
        r == 0 && ret as usize == 1
    }
}

/// What a child does: everything the fork rules allow.
fn child_body(quiet: &Mutex<u64>, quiet_spin: &SpinLock<u64>) {
    // Locks that were free, with no waiters, at fork time.
    *quiet.lock() += 1;
    *quiet_spin.lock() += 1;
    // This thread's id and node slot (taken before the fork by the prepare
    // handler, or now).
    assert!(klock::internal::mutex::current_id() >= 1);
    klock::internal::node::with_node(|q| assert!(q.is_some(), "forking thread has a node"));

    // New locks, contended by new threads (each takes a node slot and an id).
    let m = Arc::new(Mutex::new(0u64));
    let s = Arc::new(SpinLock::new(0u64));
    let cv = Arc::new(Condvar::new());
    const THREADS: u64 = 3;
    const ITERS: u64 = 2000;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (m, s, cv) = (m.clone(), s.clone(), cv.clone());
            raw_spawn(move || {
                assert!(klock::internal::mutex::current_id() >= 1);
                klock::internal::node::with_node(|q| {
                    assert!(q.is_some(), "new thread gets a node")
                });
                for i in 0..ITERS {
                    *m.lock() += 1;
                    *s.lock() += 1;
                    if i % 256 == t {
                        let mut g = m.lock();
                        cv.notify_all();
                        cv.wait_for(&mut g, Duration::from_micros(200));
                    }
                }
            })
        })
        .collect();
    // A timed condvar wait (the timeout or a notify both end it).
    {
        let mut g = m.lock();
        cv.wait_for(&mut g, Duration::from_millis(1));
    }
    for h in handles {
        assert!(h.join(), "child thread panicked");
    }
    assert_eq!(*m.lock(), THREADS * ITERS);
    assert_eq!(*s.lock(), THREADS * ITERS);
    assert_eq!(*quiet.lock(), 1);
}

/// Wait for `pid` with a watchdog; returns its wait status or a failure.
fn wait_child(pid: libc::pid_t) -> Result<i32, String> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: plain syscall on our own child; `status` is a live i32.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Ok(status);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("waitpid({pid}): {e}"));
            }
        }
        if start.elapsed() > WATCHDOG {
            if std::env::var_os("KLOCK_FORK_TEST_GDB").is_some() {
                let _ = std::process::Command::new("gdb")
                    .args([
                        "-p",
                        &pid.to_string(),
                        "-batch",
                        "-ex",
                        "thread apply all bt",
                    ])
                    .status();
            }
            // SAFETY: kill and reap our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!(
                "child {pid} did not exit within {WATCHDOG:?} (hung on klock state inherited from the parent?)"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn fork_while_other_threads_hammer_locks() {
    // klock's first use registers its atfork handlers (no other thread yet,
    // so no registration can be in flight elsewhere).
    let _ = klock::internal::mutex::current_id();
    assert!(klock::internal::fork::registered());
    let hot = Arc::new(Hot {
        spin: SpinLock::new(0),
        mutex: Mutex::new(0),
        cv: Condvar::new(),
        stop: AtomicBool::new(false),
        spin_ops: AtomicU64::new(0),
    });
    // Never touched by the hammer threads: free with no waiters at every fork.
    let quiet = Mutex::new(0u64);
    let quiet_spin = SpinLock::new(0u64);

    let mut threads = Vec::new();
    // Spinlock hammers.
    for _ in 0..2 {
        let hot = hot.clone();
        threads.push(std::thread::spawn(move || {
            let mut n = 0;
            while !hot.stop.load(Ordering::Relaxed) {
                *hot.spin.lock() += 1;
                n += 1;
            }
            hot.spin_ops.fetch_add(n, Ordering::Relaxed);
        }));
    }
    // Mutex + condvar ping-pong (timed waits, so `stop` always ends them).
    for _ in 0..2 {
        let hot = hot.clone();
        threads.push(std::thread::spawn(move || {
            while !hot.stop.load(Ordering::Relaxed) {
                let mut g = hot.mutex.lock();
                *g += 1;
                hot.cv.notify_one();
                hot.cv.wait_for(&mut g, Duration::from_micros(100));
            }
        }));
    }
    // Thread churn: short-lived threads take a node slot and an id, use the
    // hot locks, and give both back when they exit.
    {
        let hot = hot.clone();
        threads.push(std::thread::spawn(move || {
            while !hot.stop.load(Ordering::Relaxed) {
                let hs: Vec<_> = (0..2)
                    .map(|_| {
                        let hot = hot.clone();
                        std::thread::spawn(move || {
                            klock::internal::node::with_node(|_| ());
                            for _ in 0..20 {
                                *hot.mutex.lock() += 1;
                                *hot.spin.lock() += 1;
                            }
                            hot.spin_ops.fetch_add(20, Ordering::Relaxed);
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
            }
        }));
    }
    // Registry probe: takes the node registry's (and, with `stats`, the stats
    // registry's) internal lock over and over.
    {
        let hot = hot.clone();
        threads.push(std::thread::spawn(move || {
            while !hot.stop.load(Ordering::Relaxed) {
                let _ = klock::internal::node::global_registry().in_use();
                let _ = klock::stat::snapshot();
            }
        }));
    }

    let mut failures = Vec::new();
    for round in 0..rounds() {
        // Let the hammers run a little between forks.
        std::thread::sleep(Duration::from_millis(2));
        // SAFETY: fork() in a multithreaded process. The child only uses
        // klock (whose fork safety is under test), the allocator (glibc's is
        // fork-safe), thread creation and raw write/_exit; it never returns
        // into the test harness: every path ends in `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                child_body(&quiet, &quiet_spin);
            }));
            let code = match r {
                Ok(()) => 0,
                Err(p) => {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    child_say(&format!("fork child (round {round}) failed: {msg}\n"));
                    1
                }
            };
            // SAFETY: leave the child at once, without running the parent's
            // atexit handlers or unwinding into the harness.
            unsafe { libc::_exit(code) };
        }
        match wait_child(pid) {
            Ok(status) if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 => {}
            Ok(status) => failures.push(format!("round {round}: child status {status:#x}")),
            Err(e) => failures.push(format!("round {round}: {e}")),
        }
        if !failures.is_empty() {
            // One failure decides the test; do not spend a watchdog per round.
            break;
        }
    }

    hot.stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        *hot.spin.lock(),
        hot.spin_ops.load(Ordering::Relaxed),
        "lost update on the hammered spinlock"
    );
    // The parent's locks are untouched by the children.
    assert_eq!(*quiet.lock(), 0);
    assert!(failures.is_empty(), "fork children failed: {failures:#?}");
}

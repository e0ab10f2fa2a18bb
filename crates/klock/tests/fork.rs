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
//!
//! The floor rwlock family (`klock::internal::rwlock::RawRwLockFloorOf`:
//! a state word with the reader count and the waiter bits, no queue and no
//! owner) has its own tests here: the forking thread holds a read or the
//! write lock while two other threads of the parent sleep on it (a writer
//! and a reader: WRITERS_WAITING and READERS_WAITING set in the word). The
//! child inherits the word with both bits and none of the sleepers; it
//! must be able to release the forking thread's lock, then take the lock
//! for writing and reading, in either order (one child per order), plainly
//! and upgradably, and have new threads of its own sleep on it and be woken,
//! with the stale bits causing no hang and ending cleared. Each of the
//! child's first acquisitions is bounded (`FLOOR_TAKE`), so that a stale
//! bit that makes it sleep on a free lock fails with the state word
//! instead of waiting for the watchdog. In the parent, the sleepers then
//! get the lock once the forking thread releases it.
#![cfg(not(loom))]

use klock::internal::rwlock::{
    RW_FLOOR_READERS_WAITING, RW_FLOOR_WRITE_LOCKED, RW_FLOOR_WRITERS_WAITING, RawRwLockFloorOf,
    WRITER_BATCH_US,
};
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

// ---- the floor rwlock with sleepers at the fork ----------------------------------

/// How long a child's first acquisitions of the inherited floor lock may
/// take (a free lock is taken at once): a bound that turns a sleep on a
/// stale waiter bit into a failure naming the word.
const FLOOR_TAKE: Duration = Duration::from_secs(10);

/// How long the parent waits for its sleepers to go to sleep, and then to
/// get the lock once it is released: watchdogs, far beyond the need.
const FLOOR_SETTLE: Duration = Duration::from_secs(60);

/// What the forking thread holds while the parent's sleepers wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Read,
    Write,
}

/// The order of the child's first acquisitions after it released the
/// forking thread's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    WriteFirst,
    ReadFirst,
}

type Floor<const P: bool, const B: u32> = RawRwLockFloorOf<P, B>;

fn floor_name<const P: bool, const B: u32>() -> &'static str {
    match (P, B) {
        (false, _) => "RawRwLockFloor",
        (true, 0) => "RawRwLockPhased",
        _ => "RawRwLockBatched",
    }
}

/// The calling thread's kernel id.
fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Is thread `tid` of this process asleep (state `S` in its `stat`)?
fn asleep(tid: libc::pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses.
    stat.rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('S'))
}

/// Poll `cond` every 100 µs until it holds, for at most `limit`; `false`:
/// it did not.
fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    true
}

/// Did a bounded acquisition of the free lock end in time? It fails, or
/// sleeps until its deadline and then takes the lock as a waiter whom no
/// wake-up came to (a timed floor read that slept enters past the waiter
/// bits at its deadline): either way, the blocking form would hang.
fn took_in_time(
    what: &str,
    l_state: impl Fn() -> u32,
    take: impl FnOnce(u64) -> bool,
) -> Result<(), String> {
    let start = Instant::now();
    let got = take(klock::internal::wait::now_ns() + FLOOR_TAKE.as_nanos() as u64);
    if !got || start.elapsed() >= FLOOR_TAKE {
        return Err(format!(
            "{what} of the free lock {} after {:?}, at its deadline ({FLOOR_TAKE:?}): it slept and \
             nobody woke it (state word {:#x})",
            if got { "taken" } else { "not taken" },
            start.elapsed(),
            l_state()
        ));
    }
    Ok(())
}

/// A child's first two acquisitions, in `order`, each bounded by [`FLOOR_TAKE`].
fn floor_child_take<const P: bool, const B: u32>(
    l: &Floor<P, B>,
    order: Order,
) -> Result<(), String> {
    let write = || {
        took_in_time(
            "the write lock",
            || l.state(),
            |d| l.lock_exclusive_until_ns(d),
        )?;
        if !l.is_locked_exclusive() {
            return Err(format!("write-locked, state word {:#x}", l.state()));
        }
        // SAFETY: the write lock taken above.
        unsafe { l.unlock_exclusive() };
        Ok(())
    };
    let read = || {
        took_in_time("a read lock", || l.state(), |d| l.lock_shared_until_ns(d))?;
        if l.is_locked_exclusive() || !l.is_locked() {
            return Err(format!("read-locked, state word {:#x}", l.state()));
        }
        // SAFETY: the read lock taken above.
        unsafe { l.unlock_shared() };
        Ok(())
    };
    match order {
        Order::WriteFirst => {
            write()?;
            read()
        }
        Order::ReadFirst => {
            read()?;
            write()
        }
    }
}

/// In the child: the inherited word has the forking thread's `held` lock
/// and both waiter bits; release the lock, take it both ways (first in
/// `order`, bounded), upgradably, and with sleepers of the child's own.
fn floor_child<const P: bool, const B: u32>(
    l: &Arc<Floor<P, B>>,
    held: Held,
    order: Order,
) -> Result<(), String> {
    const W: u32 = RW_FLOOR_WRITERS_WAITING;
    const R: u32 = RW_FLOOR_READERS_WAITING;
    let at_fork = l.state();
    let expected = match held {
        Held::Read => 1 | R | W,
        Held::Write => RW_FLOOR_WRITE_LOCKED | R | W,
    };
    if at_fork != expected {
        return Err(format!(
            "state word at the fork {at_fork:#x}, expected {expected:#x} (the forking thread's \
             lock and both sleepers' bits)"
        ));
    }
    // SAFETY: the forking thread (this one, in the child) holds `held`.
    match held {
        Held::Read => unsafe { l.unlock_shared() },
        Held::Write => unsafe { l.unlock_exclusive() },
    }
    floor_child_take(l, order)?;
    // The blocking forms and an upgrade (the lock is free by now).
    l.lock_exclusive();
    // SAFETY: the write lock just taken.
    unsafe { l.unlock_exclusive() };
    l.lock_shared();
    // SAFETY: the read lock just taken.
    unsafe { l.unlock_shared() };
    l.lock_upgradable();
    // SAFETY: the upgradable read lock just taken.
    unsafe { l.upgrade() };
    // SAFETY: the upgrade returned the write lock.
    unsafe { l.downgrade() };
    // SAFETY: the read lock the downgrade left.
    unsafe { l.unlock_shared() };
    if l.state() != 0 {
        return Err(format!(
            "state word {:#x} after the child's own rounds",
            l.state()
        ));
    }
    // New threads of the child sleep on the lock and are woken: a writer
    // behind this thread's read lock, then a reader behind its write lock.
    for (mine, bit) in [(Held::Read, W), (Held::Write, R)] {
        match mine {
            Held::Read => l.lock_shared(),
            Held::Write => l.lock_exclusive(),
        }
        let l2 = Arc::clone(l);
        let t = raw_spawn(move || match mine {
            Held::Read => {
                l2.lock_exclusive();
                // SAFETY: the write lock just taken.
                unsafe { l2.unlock_exclusive() };
            }
            Held::Write => {
                l2.lock_shared();
                // SAFETY: the read lock just taken.
                unsafe { l2.unlock_shared() };
            }
        });
        if !poll_until(FLOOR_TAKE, || l.state() & bit != 0) {
            return Err(format!(
                "the child's new waiter did not announce itself (state word {:#x})",
                l.state()
            ));
        }
        // SAFETY: the lock taken above.
        match mine {
            Held::Read => unsafe { l.unlock_shared() },
            Held::Write => unsafe { l.unlock_exclusive() },
        }
        if !t.join() {
            return Err("the child's waiter thread panicked".into());
        }
    }
    if l.state() != 0 {
        return Err(format!("state word {:#x} at the child's end", l.state()));
    }
    Ok(())
}

/// Fork while the calling thread holds `held` on a floor lock and two other
/// threads sleep on it (a writer and a reader); the child runs
/// [`floor_child`]. Then release the lock in the parent and check the
/// sleepers get it. Panics on a failure (the child's message is on stderr).
fn fork_with_floor_sleepers<const P: bool, const B: u32>(held: Held, order: Order) {
    const W: u32 = RW_FLOOR_WRITERS_WAITING;
    const R: u32 = RW_FLOOR_READERS_WAITING;
    let what = format!("{} ({held:?} held, {order:?})", floor_name::<P, B>());
    let l = Arc::new(Floor::<P, B>::new());
    match held {
        Held::Read => l.lock_shared(),
        Held::Write => l.lock_exclusive(),
    }
    // The sleepers: a writer, then a reader (behind the writer's bit or the
    // write lock). Each reports its thread id, then when it got the lock.
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let mut sleepers = Vec::new();
    for (writer, bit) in [(true, W), (false, R)] {
        let (l2, tid_tx, done_tx) = (Arc::clone(&l), tid_tx.clone(), done_tx.clone());
        sleepers.push(std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            if writer {
                l2.lock_exclusive();
                // SAFETY: the write lock just taken.
                unsafe { l2.unlock_exclusive() };
            } else {
                l2.lock_shared();
                // SAFETY: the read lock just taken.
                unsafe { l2.unlock_shared() };
            }
            done_tx.send(writer).unwrap();
        }));
        let tid = tid_rx.recv().unwrap();
        assert!(
            poll_until(FLOOR_SETTLE, || l.state() & bit != 0 && asleep(tid)),
            "{what}: a sleeper did not go to sleep (state word {:#x})",
            l.state()
        );
    }
    // SAFETY: as in `fork_while_other_threads_hammer_locks`: the child
    // uses only the floor lock, raw threads, the allocator and raw
    // write/_exit, and every path ends in `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| floor_child(&l, held, order)));
        let code = match r {
            Ok(Ok(())) => 0,
            Ok(Err(msg)) => {
                child_say(&format!("fork child ({what}) failed: {msg}\n"));
                1
            }
            Err(_) => {
                child_say(&format!("fork child ({what}) panicked\n"));
                1
            }
        };
        // SAFETY: as in `fork_while_other_threads_hammer_locks`.
        unsafe { libc::_exit(code) };
    }
    match wait_child(pid) {
        Ok(status) if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 => {}
        Ok(status) => panic!("{what}: child status {status:#x} (its message is above)"),
        Err(e) => panic!("{what}: {e}"),
    }
    // The parent: release, and the sleepers get the lock.
    // SAFETY: this thread holds `held` (taken above).
    match held {
        Held::Read => unsafe { l.unlock_shared() },
        Held::Write => unsafe { l.unlock_exclusive() },
    }
    for _ in 0..2 {
        if done_rx.recv_timeout(FLOOR_SETTLE).is_err() {
            panic!(
                "{what}: in the parent, a sleeper did not get the lock within {FLOOR_SETTLE:?} \
                 (state word {:#x})",
                l.state()
            );
        }
    }
    for t in sleepers {
        t.join().unwrap();
    }
    assert_eq!(l.state(), 0, "{what}: the parent's state word at the end");
}

#[test]
fn fork_with_floor_sleepers_behind_a_read_lock() {
    for order in [Order::WriteFirst, Order::ReadFirst] {
        fork_with_floor_sleepers::<false, 0>(Held::Read, order);
        fork_with_floor_sleepers::<true, 0>(Held::Read, order);
        fork_with_floor_sleepers::<true, WRITER_BATCH_US>(Held::Read, order);
    }
}

/// Without the batched lock's read-first child: see the next test.
#[test]
fn fork_with_floor_sleepers_behind_the_write_lock() {
    for order in [Order::WriteFirst, Order::ReadFirst] {
        fork_with_floor_sleepers::<false, 0>(Held::Write, order);
        fork_with_floor_sleepers::<true, 0>(Held::Write, order);
    }
    fork_with_floor_sleepers::<true, WRITER_BATCH_US>(Held::Write, Order::WriteFirst);
}

/// The batched lock's read-first child after a write lock. The child's
/// write unlock finds `(0,RW)` with READERS_WAITING set long ago (by the
/// parent's reader, which does not exist in the child), so `readers_turn`
/// gives the readers their turn behind the writer batch; its wake-up wakes
/// nobody, so it must pass the turn on to the writers (it once left
/// WRITERS_WAITING on the free lock, and a new plain reader slept behind it
/// with nobody to wake it; the same happened without a fork when the
/// readers that set READERS_WAITING had timed out).
#[test]
fn fork_with_floor_sleepers_behind_the_write_lock_batched_read_first() {
    fork_with_floor_sleepers::<true, WRITER_BATCH_US>(Held::Write, Order::ReadFirst);
}

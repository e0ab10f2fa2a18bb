//! Contention statistics for the interposer (`KLOCK_STATS=1|2`), in the spirit of
//! mutrace but cheaper and `_exit`-safe.
//!
//! * `KLOCK_STATS=1`: at exit, a report of the most contended locks (top 10 by
//!   contended acquisitions, then by wait time): name (a static variable's symbol)
//!   or address, family, acquisitions, contended acquisitions, total/avg/max wait
//!   and total/avg/max hold time; then, apart, the condvars threads waited on
//!   longest (waits, timeouts, wait time: idle time by design, not contention).
//! * `KLOCK_STATS=2`: additionally the call stack at each listed lock's FIRST
//!   contended acquisition (raw `backtrace()` addresses, symbolized at report time
//!   from the objects' ELF symbol tables, so `static` functions get names too).
//! * `KLOCK_STATS_FILE=PATH`: append the report to PATH (`%p` expands to the pid)
//!   instead of writing it to stderr. Without it the report goes to the stderr the
//!   program started with (fd 2, or a duplicate of it made by [`init`] when the
//!   program closed fd 2 or reused it for its data, as xz and sort do), else to
//!   `$TMPDIR/klock-stats-PID.txt`, said in one line: it never vanishes silently.
//! * `KLOCK_STATS_TOP=N` (1..=100, default 10) locks listed;
//!   `KLOCK_STATS_SLOTS=N` (power of two, 64..=16M, default 65536) table size.
//!
//! Storage is a fixed-capacity, lock-free, open-addressing hash table keyed by the
//! lock's address, `mmap`ed once by [`init`] (nothing is mapped when statistics are
//! off). Slots are claimed with one CAS and never freed; counters are relaxed atomics.
//! The hooks ([`acquired`], [`released`]) never allocate and never take a lock: they
//! run inside `pthread_mutex_lock`. The one exception is the level-2 `backtrace()` at
//! a lock's first contended acquisition, guarded by a thread-local re-entrancy flag.
//! An address that finds no free slot within [`PROBE_LIMIT`] probes is counted as
//! "untracked" and shown in the report.
//!
//! The report is formatted into an `mmap`ed buffer with `core::fmt` (no allocation,
//! no std I/O) and written with raw `write(2)` (`SIGPIPE` blocked). [`flush`] is idempotent; [`init`]
//! registers it with `atexit`, and the interposer's `_exit`/`_Exit` wrappers call it.
//! A `fork`ed child starts with zeroed counters (the parent's are not reported twice)
//! and writes its own report; a `vfork` child (shared memory, no fork handlers) that
//! leaves through `_exit` writes nothing and leaves the parent's report alone.
//!
//! # Layout
//!
//! This file owns the process-wide state and the entry points the interposer
//! calls: [`init`]/[`configure`], the hooks [`acquired`]/[`released`], [`flush`]
//! and [`report_into`]. It sits above the parts it uses, none of which calls back
//! into it:
//!
//! * `table`: the per-lock registry (the hash table; a snapshot's [`LockStat`]s
//!   and [`Totals`]); uses nothing else here;
//! * `env`: the settings ([`Config`]) read from `KLOCK_STATS*`;
//! * `format`: the report's text ([`format_report`] into a [`Buf`]);
//! * `symbolize`: a stack frame to `function+0xoff  (object)`, a lock's address
//!   to its static variable's name;
//! * `output`: the report file, the original stderr or the fallback file, and the
//!   warnings.

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU64};
use core::sync::atomic::{AtomicUsize, Ordering::*};

mod env;
mod format;
mod output;
mod symbolize;
mod table;

pub use crate::stats::env::{Config, DEFAULT_TOP, MAX_TOP};
pub use crate::stats::format::{Buf, Header, StackSource, format_report};
pub use crate::stats::table::{
    DEFAULT_SLOTS, FRAMES, Family, KIND_COND, KIND_MUTEX, KIND_RWLOCK, KIND_SPIN, LockStat,
    PROBE_LIMIT, Slot, Table, Totals,
};

use crate::stats::output::warn;
use crate::stats::symbolize::LiveStacks;
use klock::internal::symbolize::{Symbolizer, cstr_bytes};

/// Report buffer size; longer reports are cut and say so.
const REPORT_BYTES: usize = 1 << 20;

/// What [`flush`] maps for the report: the two rankings and the text, kept off
/// the stack (`_exit` may be called on a small thread stack). All-zero (as `mmap`
/// gives it) is a valid value.
#[repr(C)]
struct Scratch {
    top: [LockStat; MAX_TOP],
    conds: [LockStat; MAX_TOP],
    text: [u8; REPORT_BYTES],
}

/// 0 = off, 1 = report, 2 = report with stacks. Set last by `init`.
static LEVEL: AtomicU8 = AtomicU8::new(0);
/// 0 = not initialised, 1 = initialising, 2 = done with statistics off, 3 = done
/// with statistics on.
static INIT: AtomicU8 = AtomicU8::new(0);
const INIT_BUSY: u8 = 1;
const INIT_OFF: u8 = 2;
const INIT_ON: u8 = 3;
static FLUSHED: AtomicBool = AtomicBool::new(false);
static TABLE: Table = Table::new();
static START_NS: AtomicU64 = AtomicU64::new(0);
static FORKED_FROM: AtomicI32 = AtomicI32::new(0);
/// The process whose counters the table holds (set at init and in a fork child).
/// A `vfork` child (or a raw `clone`) shares the memory but runs no fork handler:
/// its `_exit` must neither report the parent's counters nor mark them flushed.
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
static TOP: AtomicUsize = AtomicUsize::new(DEFAULT_TOP);

thread_local! {
    /// Set while this thread captures a backtrace (which may re-enter the hooks).
    static IN_BACKTRACE: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" {
    /// glibc's `argv[0]` copy.
    static program_invocation_name: *const libc::c_char;
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> libc::c_int;
}

/// CLOCK_MONOTONIC in ns.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable; CLOCK_MONOTONIC always exists (vDSO, no locks).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reads the configuration from the environment, once (later calls do nothing).
/// The interposer calls it from its constructor and lazily from its entry points.
/// With statistics on: maps the table, registers [`flush`] with `atexit` and a
/// `fork` child handler, and (level 2) warms up `backtrace()` so its one-time
/// `dlopen` of libgcc_s does not happen inside a lock.
pub fn init() {
    configure(&Config::from_env());
}

/// [`init`] with an explicit configuration (tests, embedders). The first call of
/// either decides, except that a configuration turning statistics on may follow one
/// that left them off (an interposer entry point may have called [`init`] with
/// `KLOCK_STATS` unset first). Returns whether statistics are on afterwards.
pub fn configure(cfg: &Config<'_>) -> bool {
    // Acquire/Relaxed: only elects the initialiser; publication is by the Release
    // store of INIT below. From INIT_OFF nothing was published that we overwrite.
    let won = INIT
        .compare_exchange(0, INIT_BUSY, Acquire, Relaxed)
        .is_ok()
        || (cfg.level > 0
            && INIT
                .compare_exchange(INIT_OFF, INIT_BUSY, Acquire, Relaxed)
                .is_ok());
    if !won {
        return enabled();
    }
    if cfg.level > 0 {
        // SAFETY: INIT == INIT_BUSY: we are the only writer and no reader runs
        // before INIT == INIT_ON, published by the Release store of INIT below.
        unsafe { output::set_destination(cfg.file) };
        // Relaxed: published by the Release store of INIT below.
        TOP.store(cfg.top.clamp(1, MAX_TOP), Relaxed);
        // SAFETY: getpid has no preconditions.
        OWNER_PID.store(unsafe { libc::getpid() }, Relaxed);
        START_NS.store(now_ns(), Relaxed);
        if TABLE.alloc(cfg.slots, cfg.level >= 2) {
            if cfg.level >= 2 {
                let mut warm = [core::ptr::null_mut(); 4];
                // SAFETY: a valid buffer of 4 pointers.
                unsafe { libc::backtrace(warm.as_mut_ptr(), 4) };
            }
            // SAFETY: registering plain `extern "C"` functions of this library,
            // which is never unloaded (LD_PRELOAD).
            unsafe {
                libc::atexit(at_exit);
                pthread_atfork(None, None, Some(at_fork_child));
            }
            // Relaxed: `enabled()` is a filter; hooks find the table through the
            // Acquire load of its slots pointer (paired with `alloc`'s Release).
            LEVEL.store(cfg.level.min(2), Relaxed);
            if cfg.level > 0 {
                crate::config::close_fast_paths();
            }
        } else {
            warn(b"klock-stats: cannot map the statistics table; statistics are off\n");
        }
    }
    let on = enabled();
    // Release: pairs with the Acquire load in `flush` (the file path and settings).
    INIT.store(if on { INIT_ON } else { INIT_OFF }, Release);
    on
}

extern "C" fn at_exit() {
    flush();
}

unsafe extern "C" fn at_fork_child() {
    // The child is single-threaded here.
    TABLE.reset_counters();
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    // Relaxed (all): single-threaded; `flush` runs later in this thread or after
    // pthread_create (which orders).
    FORKED_FROM.store(ppid, Relaxed);
    // SAFETY: getpid has no preconditions.
    OWNER_PID.store(unsafe { libc::getpid() }, Relaxed);
    START_NS.store(now_ns(), Relaxed);
    FLUSHED.store(false, Relaxed);
}

/// Are statistics on? One relaxed load.
#[inline]
pub fn enabled() -> bool {
    // Relaxed: a filter only (see `configure`).
    LEVEL.load(Relaxed) != 0
}

/// The statistics level in effect: 0 (off), 1 or 2.
pub fn level() -> u8 {
    // Relaxed: as `enabled`.
    LEVEL.load(Relaxed)
}

/// A lock at `addr` was acquired; `contended`: its first attempt failed; `wait_ns`:
/// time spent waiting. Call after the lock is held (the hold time starts now).
#[inline]
pub fn acquired(addr: usize, f: Family, contended: bool, wait_ns: u64) {
    if !enabled() {
        return;
    }
    let now = if f.exclusive() { now_ns() } else { 0 };
    if let Some(i) = TABLE.count_acquired(addr, f, contended, wait_ns, now)
        && level() >= 2
    {
        capture_stack(i);
    }
}

#[cold]
#[inline(never)]
fn capture_stack(i: usize) {
    // `try_with`: during thread teardown the flag may be gone; then skip.
    let _ = IN_BACKTRACE.try_with(|busy| {
        if busy.get() {
            return;
        }
        let Some(st) = TABLE.claim_stack(i) else {
            return;
        };
        busy.set(true);
        let mut raw = [core::ptr::null_mut(); FRAMES];
        // SAFETY: a valid buffer of FRAMES pointers; libgcc_s was loaded by `init`.
        let n = unsafe { libc::backtrace(raw.as_mut_ptr(), FRAMES as libc::c_int) };
        let mut frames = [0usize; FRAMES];
        let n = (n.max(0) as usize).min(FRAMES);
        for (d, s) in frames.iter_mut().zip(&raw[..n]) {
            *d = *s as usize;
        }
        TABLE.finish_stack(i, st, &frames[..n]);
        busy.set(false);
    });
}

/// The lock at `addr` is about to be released by its holder (hold time ends).
#[inline]
pub fn released(addr: usize, f: Family) {
    if !enabled() || !f.exclusive() {
        return;
    }
    TABLE.count_released(addr, f, now_ns());
}

/// Writes the report (idempotent: only the first call per process writes; called at
/// exit and from the `_exit`/`_Exit` wrappers). No-op when statistics are off.
pub fn flush() {
    // Acquire: pairs with the Release store in `configure` (path, settings, table).
    if INIT.load(Acquire) != INIT_ON {
        return;
    }
    // SAFETY: getpid has no preconditions.
    // Relaxed: OWNER_PID was published by INIT (or set by this process's own fork
    // handler, in this thread's past).
    if unsafe { libc::getpid() } != OWNER_PID.load(Relaxed) {
        return;
    }
    // Relaxed: only elects the one writer; everything it reads is atomics or was
    // published by INIT.
    if FLUSHED.swap(true, Relaxed) {
        return;
    }
    // SAFETY: a fresh anonymous mapping; unmapped below.
    let map = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            size_of::<Scratch>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        warn(b"klock-stats: cannot map the report buffer\n");
        return;
    }
    // SAFETY: a page-aligned mapping of size_of::<Scratch>() writable bytes,
    // zero-filled (a valid Scratch), exclusively ours until the munmap.
    let s = unsafe { &mut *(map as *mut Scratch) };
    let len = {
        let mut w = Buf::new(&mut s.text);
        report_into(&mut w, &mut s.top, &mut s.conds);
        w.bytes().len()
    };
    // SAFETY: after the Acquire load of INIT == INIT_ON above, which published the
    // destination; INIT never leaves INIT_ON, so it is not written again.
    unsafe { output::emit(&s.text[..len]) };
    // SAFETY: the mapping made above; `s` is not used after this.
    unsafe { libc::munmap(map, size_of::<Scratch>()) };
}

/// Formats the live report into `w` (what [`flush`] writes), ranking the locks
/// in `top` and the condvars in `conds` (scratch space, overwritten).
pub fn report_into(
    w: &mut Buf<'_>,
    top: &mut [LockStat; MAX_TOP],
    conds: &mut [LockStat; MAX_TOP],
) {
    // Relaxed: published by INIT (configure).
    let k = TOP.load(Relaxed).clamp(1, MAX_TOP);
    let (totals, n, nc) = TABLE.snapshot(&mut top[..k], &mut conds[..k]);
    // SAFETY: glibc sets program_invocation_name before any constructor runs; it may
    // be null only in exotic embeddings, which `cstr_bytes` handles.
    let prog = unsafe { cstr_bytes(program_invocation_name) };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let h = Header {
        program: if prog.is_empty() { b"?" } else { prog },
        pid,
        // Relaxed (both): see `at_fork_child`.
        forked_from: FORKED_FROM.load(Relaxed),
        runtime_ns: now_ns().saturating_sub(START_NS.load(Relaxed)),
        level: level(),
    };
    let mut exe = [0u8; 4096];
    let mut src = LiveStacks {
        table: &TABLE,
        sym: Symbolizer::live(flush as *const () as usize, &mut exe),
    };
    format_report(w, &h, &totals, &top[..n], &conds[..nc], &mut src);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one test that touches the process-wide state: configure, count, flush
    /// twice, one report in the file.
    #[test]
    fn flush_is_idempotent() {
        let dir = std::env::temp_dir().join(format!("klock-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report-%p.txt");
        let real = dir.join(format!("report-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&real);
        let p = path.to_str().unwrap().as_bytes().to_vec();
        let on = configure(&Config {
            level: 2,
            file: Some(&p),
            top: 5,
            slots: 256,
        });
        assert!(on && enabled() && level() == 2);
        let lock = 0xdead_0000usize;
        acquired(lock, Family::Mutex, true, 1_000);
        released(lock, Family::Mutex);
        acquired(lock, Family::Mutex, false, 0);
        released(lock, Family::Mutex);
        flush();
        flush();
        let text = std::fs::read_to_string(&real).unwrap();
        assert_eq!(text.matches("locks seen").count(), 1, "{text}");
        assert!(text.contains("0xdead0000"), "{text}");
        let stack = text.split("first contended at:\n").nth(1).expect(&text);
        assert!(stack.starts_with("    0x"), "a symbolized frame: {text}");
        // A second configure is ignored.
        assert!(configure(&Config {
            level: 0,
            file: None,
            top: 1,
            slots: 64
        }));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

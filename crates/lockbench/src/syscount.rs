//! Per-thread syscall counts for the per-operation accounting: how many futex and
//! `sched_yield` calls a worker thread made during its window, for any lock.
//!
//! Source: perf tracepoint counters (`perf_event_open`, `PERF_TYPE_TRACEPOINT`) on
//! the `syscalls:sys_enter_*` tracepoints, opened per worker thread (pid 0 = this
//! thread, cpu -1 = wherever it runs, not inherited), created disabled and enabled
//! when the window begins, read when the worker's loop ends: the same span as its
//! `RUSAGE_THREAD` delta. Futex calls are `futex(2)` plus, where the kernel has them,
//! the futex2 calls (`futex_wait`, `futex_wake`, `futex_waitv`, `futex_requeue`).
//!
//! The tracepoint ids come from tracefs (`/sys/kernel/tracing`, else
//! `/sys/kernel/debug/tracing`). Where the ids cannot be read or the kernel refuses
//! the counters (`kernel.perf_event_paranoid`, no `CAP_PERFMON`, seccomp in a
//! container) every call here returns the reason, and records hold `null` counts
//! with that reason instead of zeros. `LOCKBENCH_NO_SYSCOUNT=1` turns counting off
//! (also the tests' way to see the unavailable path).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Set (to anything but `0` or empty) to turn the syscall counters off.
pub const DISABLE_ENV: &str = "LOCKBENCH_NO_SYSCOUNT";

/// Syscalls counted on one thread (or summed over threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SysCounts {
    /// futex(2) and futex2 calls.
    pub futex: u64,
    /// sched_yield(2) calls.
    pub sched_yield: u64,
}

impl SysCounts {
    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &SysCounts) {
        self.futex += o.futex;
        self.sched_yield += o.sched_yield;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Futex,
    Yield,
}

/// The tracepoints, whether each must exist, and what it counts as.
const EVENTS: [(&str, bool, Kind); 6] = [
    ("sys_enter_futex", true, Kind::Futex),
    ("sys_enter_futex_wait", false, Kind::Futex),
    ("sys_enter_futex_wake", false, Kind::Futex),
    ("sys_enter_futex_waitv", false, Kind::Futex),
    ("sys_enter_futex_requeue", false, Kind::Futex),
    ("sys_enter_sched_yield", true, Kind::Yield),
];

const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// `struct perf_event_attr` up to `config1` (`PERF_ATTR_SIZE_VER0`, 64 bytes), which
/// every kernel with perf accepts; the bit-field word is `flags`.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;

/// Whether `LOCKBENCH_NO_SYSCOUNT` asks for no counting.
fn disabled_by_env() -> bool {
    std::env::var_os(DISABLE_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The tracepoint ids (read once per process), or why they cannot be had.
fn ids() -> &'static Result<Vec<(u64, Kind)>, String> {
    static IDS: OnceLock<Result<Vec<(u64, Kind)>, String>> = OnceLock::new();
    IDS.get_or_init(|| {
        if disabled_by_env() {
            return Err(format!("turned off by {DISABLE_ENV}"));
        }
        let mut why = Vec::new();
        for root in TRACEFS {
            match ids_under(root) {
                Ok(v) => return Ok(v),
                Err(e) => why.push(e),
            }
        }
        Err(why.join("; "))
    })
}

/// The ids from one tracefs mount point.
fn ids_under(root: &str) -> Result<Vec<(u64, Kind)>, String> {
    let mut v = Vec::new();
    for (name, required, kind) in EVENTS {
        let path = format!("{root}/events/syscalls/{name}/id");
        match std::fs::read_to_string(&path) {
            Ok(s) => match s.trim().parse::<u64>() {
                Ok(id) => v.push((id, kind)),
                Err(_) => return Err(format!("{path}: not a tracepoint id: {:?}", s.trim())),
            },
            Err(e) if required => return Err(format!("cannot read {path}: {e}")),
            Err(_) => {}
        }
    }
    Ok(v)
}

/// One disabled counter of tracepoint `id` on the calling thread. `exclude_kernel`:
/// a syscall-entry tracepoint fires with the caller's user-mode registers, so it is
/// still counted, and the kernel then does not require `perf_event_paranoid` < 2.
fn open_one(id: u64) -> Result<OwnedFd, String> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a valid, fully initialised perf_event_attr of the size it
    // declares; pid 0 / cpu -1 / group -1 ask for a counter of the calling thread; the
    // kernel only reads `attr` and returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(open_error(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a descriptor the kernel just created for us and nothing else
    // owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Why `perf_event_open` failed, in words a user can act on.
fn open_error(e: std::io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused ({e}; kernel.perf_event_paranoid = {paranoid}, needs CAP_PERFMON or a lower setting)"
        ),
        Some(libc::ENOSYS) => {
            format!("perf_event_open unavailable ({e}; seccomp or a kernel without perf)")
        }
        _ => format!("perf_event_open on a syscall tracepoint failed: {e}"),
    }
}

/// The calling thread's syscall counters (futex and `sched_yield`), disabled until
/// [`Counters::enable`].
#[derive(Debug)]
pub struct Counters {
    fds: Vec<(OwnedFd, Kind)>,
}

impl Counters {
    /// Opens the counters for the calling thread, or says why they are unavailable.
    pub fn open() -> Result<Counters, String> {
        // Keeps the tracepoints registered (see `availability`).
        availability().as_ref().map_err(Clone::clone)?;
        Counters::open_here()
    }

    /// [`Counters::open`] without the process-wide keep-alive.
    fn open_here() -> Result<Counters, String> {
        let ids = ids().as_ref().map_err(Clone::clone)?;
        let fds = (ids.iter())
            .map(|&(id, kind)| open_one(id).map(|fd| (fd, kind)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Counters { fds })
    }

    /// Starts counting (the window begins).
    pub fn enable(&self) {
        for (fd, _) in &self.fds {
            // SAFETY: `fd` is an open perf event descriptor we own; ENABLE takes no
            // argument and touches no memory of ours.
            unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) };
        }
    }

    /// The counts since [`Counters::enable`].
    pub fn read(&self) -> Result<SysCounts, String> {
        let mut c = SysCounts::default();
        for (fd, kind) in &self.fds {
            let n = read_count(fd)?;
            match kind {
                Kind::Futex => c.futex += n,
                Kind::Yield => c.sched_yield += n,
            }
        }
        Ok(c)
    }
}

/// One counter's value (`read_format` 0: a single u64).
fn read_count(fd: &OwnedFd) -> Result<u64, String> {
    let mut v: u64 = 0;
    // SAFETY: `v` is a writable 8-byte buffer and we pass its size; `fd` is open.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if n == 8 {
        Ok(v)
    } else {
        Err(format!(
            "reading a perf counter failed: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Whether counters can be opened on this machine (tried once, on the calling
/// thread): `Err` holds the reason the report prints. The counters opened for
/// the check stay open for the process's life: while one counter of a syscall
/// tracepoint exists the kernel keeps its probe registered, so a run's
/// per-thread opens and closes do not register and unregister it each time
/// (each costs an RCU grace period; without this a 32-thread run took 0.34 s
/// longer, 2026-11-28).
pub fn availability() -> &'static Result<(), String> {
    static KEPT: OnceLock<Result<Counters, String>> = OnceLock::new();
    static AVAIL: OnceLock<Result<(), String>> = OnceLock::new();
    AVAIL.get_or_init(|| {
        let kept = KEPT.get_or_init(Counters::open_here);
        kept.as_ref().map(|_| ()).map_err(Clone::clone)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts this thread's futex calls around `n` FUTEX_WAKE calls on a private word.
    fn wakes(n: u64) -> SysCounts {
        let c = Counters::open().expect("availability checked");
        let word = 0u32;
        c.enable();
        for _ in 0..n {
            // SAFETY: FUTEX_WAKE on a valid u32 we own; wakes nobody, touches nothing.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    &word as *const u32,
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    1,
                )
            };
        }
        for _ in 0..n {
            std::thread::yield_now();
        }
        c.read().unwrap()
    }

    #[test]
    fn counts_this_threads_futex_and_yield_calls_or_says_why_not() {
        match availability() {
            Ok(()) => {
                let c = wakes(10);
                assert!(c.futex >= 10, "{c:?}");
                assert!(c.sched_yield >= 10, "{c:?}");
            }
            Err(why) => {
                assert!(!why.is_empty());
                assert!(Counters::open().is_err());
            }
        }
    }
}

//! Where the report goes, and writing it there with raw `write(2)`. The report
//! never vanishes silently; in order:
//!
//! 1. the `KLOCK_STATS_FILE` path (copied at start-up, `%p` expanded to the pid,
//!    opened for appending; a symbolic link is refused, with one line and no
//!    report anywhere);
//! 2. the original stderr: fd 2 if it is still the file it was at start-up, else
//!    the duplicate of it made at start-up (close-on-exec, at a high descriptor),
//!    for programs that close stderr before exit (xz, sort) or reuse fd 2 for
//!    their data, which the report must not corrupt;
//! 3. a new file `$TMPDIR/klock-stats-PID.txt` (`/tmp` without `TMPDIR`), named in
//!    one line on whatever still works (the original stderr, or fd 2 if it is a
//!    terminal).
//!
//! `SIGPIPE` is blocked while writing (a reader that went away makes the write
//! fail and the report go to the file, rather than kill the exiting program).
//! Also the one-line warnings.

use core::cell::UnsafeCell;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::*};

use crate::stats::format::Buf;
use klock::internal::textout::{errno, expand_pid, open_report, write_all};

/// Identity (st_dev, st_ino) of fd 2 at init, valid if `STDERR_KNOWN`.
static STDERR_DEV: AtomicU64 = AtomicU64::new(0);
static STDERR_INO: AtomicU64 = AtomicU64::new(0);
static STDERR_KNOWN: AtomicBool = AtomicBool::new(false);
/// A duplicate of fd 2 made at init (close-on-exec); -1 = none.
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

/// A path copied at init (the program may change its environment).
struct PathCell(UnsafeCell<[u8; 4096]>);
// SAFETY: written only by `set_destination` and read only by `emit`, whose
// contracts keep them apart: `configure` writes while it owns INIT == INIT_BUSY,
// before the Release store of INIT_ON, and `flush` reads only after an Acquire
// load of INIT == INIT_ON; INIT never leaves INIT_ON.
unsafe impl Sync for PathCell {}

impl PathCell {
    const fn new() -> PathCell {
        PathCell(UnsafeCell::new([0; 4096]))
    }
    /// Stores `v` (cut to 4095 bytes), NUL-terminated.
    ///
    /// # Safety
    ///
    /// As [`set_destination`]: no other access at the same time.
    unsafe fn set(&self, v: &[u8]) {
        // SAFETY: the caller's contract: no other writer and no reader now.
        let dst = unsafe { &mut *self.0.get() };
        let n = v.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&v[..n]);
        dst[n] = 0;
    }
    /// The stored bytes (empty if none), without the NUL.
    ///
    /// # Safety
    ///
    /// As [`emit`]: after `set`'s write was published, never at the same time.
    unsafe fn get(&self) -> &[u8] {
        // SAFETY: the caller's contract: read-only now.
        let p = unsafe { &*self.0.get() };
        &p[..p.iter().position(|&b| b == 0).unwrap_or(p.len())]
    }
}

/// `KLOCK_STATS_FILE`.
static STATS_FILE: PathCell = PathCell::new();
/// The directory of the last-resort file: `TMPDIR` if absolute, else `/tmp`.
static FALLBACK_DIR: PathCell = PathCell::new();

/// Remembers where the report goes: `file` (`KLOCK_STATS_FILE`; None = stderr),
/// copied; the identity of fd 2 now and a duplicate of it; the directory of the
/// last-resort file.
///
/// # Safety
///
/// No call of this or of [`emit`] may run at the same time, and what this writes
/// must be published to [`emit`]'s caller: `configure` calls it while it owns
/// `INIT == INIT_BUSY` and then stores `INIT` with Release; `flush` calls [`emit`]
/// only after an Acquire load of `INIT == INIT_ON`, which never changes again.
pub(super) unsafe fn set_destination(file: Option<&[u8]>) {
    if let Some(f) = file {
        // SAFETY: the caller's contract.
        unsafe { STATS_FILE.set(f) };
    }
    let tmp = crate::config::env(c"TMPDIR").filter(|d| d.starts_with(b"/"));
    // SAFETY: the caller's contract.
    unsafe { FALLBACK_DIR.set(tmp.unwrap_or(b"/tmp")) };
    if let Some((dev, ino)) = fd_identity(2) {
        // Relaxed (all): published by the caller's Release store of INIT.
        STDERR_DEV.store(dev, Relaxed);
        STDERR_INO.store(ino, Relaxed);
        STDERR_KNOWN.store(true, Relaxed);
        SAVED_STDERR.store(dup_high(2), Relaxed);
    }
}

/// `fd` duplicated, close-on-exec, at the lowest free descriptor from three
/// quarters of the descriptor limit (at most 1024) up, out of the way of the
/// program's own low descriptors (and of the shell's, which keeps below 256);
/// -1 if that fails.
fn dup_high(fd: libc::c_int) -> libc::c_int {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is writable; getrlimit has no other preconditions.
    let lim = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
        rl.rlim_cur.min(1024) as libc::c_int
    } else {
        256
    };
    // SAFETY: fcntl on a descriptor number (EBADF if closed); the new descriptor
    // is ours and never closed (it must outlive the program's use of fd 2).
    unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, (lim * 3 / 4).max(3)) }
}

/// Writes `msg` to fd 2 (a one-line warning at start-up).
pub(super) fn warn(msg: &[u8]) {
    write_all(2, msg);
}

fn fd_identity(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: plain old data, filled by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat on any fd number is safe (EBADF if closed).
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// A descriptor of the original stderr: fd 2 if it is still the file it was at
/// init, else the duplicate made then if it still is; None if both are closed or
/// now refer to other files (the program's, which must not be written to).
fn original_stderr() -> Option<libc::c_int> {
    // Relaxed (all): published by INIT.
    if !STDERR_KNOWN.load(Relaxed) {
        return None;
    }
    let want = Some((STDERR_DEV.load(Relaxed), STDERR_INO.load(Relaxed)));
    let saved = SAVED_STDERR.load(Relaxed);
    if fd_identity(2) == want {
        Some(2)
    } else if saved >= 0 && fd_identity(saved) == want {
        Some(saved)
    } else {
        None
    }
}

/// Writes the one line `msg` where it can be read: the original stderr, else fd 2
/// if it is a terminal (the program's files are left alone).
fn notice(msg: &[u8]) {
    // SAFETY: isatty on any descriptor number is safe.
    let tty = || (unsafe { libc::isatty(2) } == 1).then_some(2);
    if let Some(fd) = original_stderr().or_else(tty) {
        write_all(fd, msg);
    }
}

/// Runs `f` with `SIGPIPE` blocked in this thread; a `SIGPIPE` that `f`'s writes
/// raised is discarded (the write fails with EPIPE instead of killing the
/// process at exit). One that was pending before stays pending.
fn without_sigpipe<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: sigset_t is plain old data; the sig* calls initialise and read it.
    let (mut pipe, mut old, mut pending): (libc::sigset_t, libc::sigset_t, libc::sigset_t) =
        unsafe { core::mem::zeroed() };
    // SAFETY: valid sigset_t pointers; these calls only change this thread's mask
    // (restored below) and read the pending set.
    let was_pending = unsafe {
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1
    };
    let r = f();
    // SAFETY: as above; sigtimedwait with a zero timeout only takes a pending
    // SIGPIPE (which is blocked here) and does not sleep.
    unsafe {
        if !was_pending
            && libc::sigpending(&mut pending) == 0
            && libc::sigismember(&pending, libc::SIGPIPE) == 1
        {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, core::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
    }
    r
}

/// How writing to `KLOCK_STATS_FILE` went.
enum Sent {
    /// Written (or refused with a line saying so): nothing more to do.
    Done,
    /// Could not open it: the report goes to stderr.
    Failed,
}

/// Appends `bytes` to the `KLOCK_STATS_FILE` `path` (`%p` = pid). O_NOFOLLOW: a
/// symbolic link as the last component is refused (ELOOP), so a planted link
/// cannot redirect the append to another file; then one line says so and no report
/// is written anywhere. Mode 0644 (never wider than 0666): the umask applies.
fn to_stats_file(path: &[u8], bytes: &[u8]) -> Sent {
    let mut p = [0u8; 4096 + 16];
    let mut w = Buf::new(&mut p);
    if !expand_pid(path, &mut w) {
        return Sent::Failed;
    }
    let fd = open_report(w.bytes(), libc::O_APPEND, 0o644);
    if fd >= 0 {
        write_all(fd, bytes);
        // SAFETY: our own fd.
        unsafe { libc::close(fd) };
        return Sent::Done;
    }
    if errno() != libc::ELOOP {
        return Sent::Failed;
    }
    let path = w.bytes();
    let mut line = [0u8; 4096 + 160];
    let mut l = Buf::new(&mut line);
    l.push_bytes(
        b"klock-stats: KLOCK_STATS_FILE is a symbolic link, which is not followed; \
          no report written: ",
    );
    l.push_bytes(&path[..path.len() - 1]);
    l.push_bytes(b"\n");
    notice(l.bytes());
    Sent::Done
}

/// Writes `$TMPDIR/klock-stats-PID.txt` (or `-PID-N.txt`, N = 1..=9, if taken)
/// into `w`, NUL-terminated; false if it did not fit.
fn fallback_path(dir: &[u8], n: u32, w: &mut Buf<'_>) -> bool {
    w.push_bytes(dir);
    if !dir.ends_with(b"/") {
        w.push_bytes(b"/");
    }
    // SAFETY: getpid has no preconditions.
    let _ = write!(w, "klock-stats-{}", unsafe { libc::getpid() });
    if n > 0 {
        let _ = write!(w, "-{n}");
    }
    w.push_bytes(b".txt\0");
    !w.truncated
}

/// The last resort when stderr is gone: a new file in the fallback directory
/// (created exclusively, mode 0600: never someone else's file, never a link), and
/// one line naming it (or saying that no file could be made).
fn to_fallback_file(bytes: &[u8]) {
    // SAFETY: as `emit`: after set_destination's writes were published.
    let dir = unsafe { FALLBACK_DIR.get() };
    let mut p = [0u8; 4096 + 64];
    let (mut fd, mut len) = (-1, 0);
    for n in 0..10 {
        let mut w = Buf::new(&mut p);
        if !fallback_path(dir, n, &mut w) {
            break;
        }
        len = w.bytes().len() - 1;
        fd = open_report(w.bytes(), libc::O_EXCL, 0o600);
        if fd >= 0 || errno() != libc::EEXIST {
            break;
        }
    }
    let ok = fd >= 0 && write_all(fd, bytes);
    if fd >= 0 {
        // SAFETY: our own fd.
        unsafe { libc::close(fd) };
    }
    let path = &p[..len];
    let mut line = [0u8; 4096 + 200];
    let mut l = Buf::new(&mut line);
    if ok {
        l.push_bytes(
            b"klock-stats: stderr (as at start-up) is closed or failed; report written to ",
        );
    } else {
        l.push_bytes(
            b"klock-stats: stderr (as at start-up) is closed or failed, and no report file \
              could be written; report lost: ",
        );
    }
    l.push_bytes(path);
    l.push_bytes(b"\n");
    notice(l.bytes());
}

/// Writes `bytes` to `KLOCK_STATS_FILE` (appending; `%p` = pid) if set, else to the
/// original stderr, else to a new file in `$TMPDIR` named on what still works.
///
/// # Safety
///
/// Only after [`set_destination`]'s writes were published to this thread, and
/// never at the same time as it (see there).
pub(super) unsafe fn emit(bytes: &[u8]) {
    without_sigpipe(|| {
        // SAFETY: the caller's contract: read-only after INIT == INIT_ON (Acquire
        // in `flush`).
        let file = unsafe { STATS_FILE.get() };
        if !file.is_empty() {
            match to_stats_file(file, bytes) {
                Sent::Done => return,
                Sent::Failed => {
                    notice(b"klock-stats: cannot open KLOCK_STATS_FILE; writing to stderr\n")
                }
            }
        }
        match original_stderr() {
            Some(fd) if write_all(fd, bytes) => {}
            _ => to_fallback_file(bytes),
        }
    })
}

//! Where the report goes, and writing it there with raw `write(2)`: the
//! `KLOCK_STATS_FILE` path (copied at start-up, `%p` expanded to the pid, opened
//! for appending, a symbolic link refused), else fd 2, but only if fd 2 is still
//! the file it was at start-up (a program may close stderr and reuse fd 2 for its
//! data). Also the one-line warnings on stderr.

use core::cell::UnsafeCell;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU64, Ordering::*};

use crate::stats::format::Buf;

/// Identity (st_dev, st_ino) of fd 2 at init; (0, 0) = unknown.
static STDERR_DEV: AtomicU64 = AtomicU64::new(0);
static STDERR_INO: AtomicU64 = AtomicU64::new(0);

/// `KLOCK_STATS_FILE`, copied at init (the program may change its environment).
struct PathCell(UnsafeCell<[u8; 4096]>);
// SAFETY: written only by `set_destination` and read only by `emit`, whose
// contracts keep them apart: `configure` writes while it owns INIT == INIT_BUSY,
// before the Release store of INIT_ON, and `flush` reads only after an Acquire
// load of INIT == INIT_ON; INIT never leaves INIT_ON.
unsafe impl Sync for PathCell {}
static STATS_FILE: PathCell = PathCell(UnsafeCell::new([0; 4096]));

/// Remembers where the report goes: `file` (`KLOCK_STATS_FILE`; None = stderr),
/// copied, and the identity of fd 2 now.
///
/// # Safety
///
/// No call of this or of [`emit`] may run at the same time, and what this writes
/// must be published to [`emit`]'s caller: `configure` calls it while it owns
/// `INIT == INIT_BUSY` and then stores `INIT` with Release; `flush` calls [`emit`]
/// only after an Acquire load of `INIT == INIT_ON`, which never changes again.
pub(super) unsafe fn set_destination(file: Option<&[u8]>) {
    if let Some(f) = file {
        // SAFETY: the caller's contract: no other writer and no reader now.
        let dst = unsafe { &mut *STATS_FILE.0.get() };
        let n = f.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&f[..n]);
        dst[n] = 0;
    }
    if let Some((dev, ino)) = fd_identity(2) {
        // Relaxed: published by the caller's Release store of INIT.
        STDERR_DEV.store(dev, Relaxed);
        STDERR_INO.store(ino, Relaxed);
    }
}

/// Writes `msg` to fd 2 (a one-line warning).
pub(super) fn warn(msg: &[u8]) {
    write_all(2, msg);
}

fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: `b` is a valid readable buffer of b.len() bytes.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r < 0 {
            // SAFETY: errno is thread-local; reading it has no preconditions.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return false;
        }
        if r == 0 {
            return false;
        }
        b = &b[r as usize..];
    }
    true
}

fn fd_identity(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: plain old data, filled by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat on any fd number is safe (EBADF if closed).
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// Writes `bytes` to `KLOCK_STATS_FILE` (appending; `%p` = pid) or to fd 2 if it is
/// still the file it was at init.
///
/// # Safety
///
/// Only after [`set_destination`]'s writes were published to this thread, and
/// never at the same time as it (see there).
pub(super) unsafe fn emit(bytes: &[u8]) {
    // SAFETY: the caller's contract: read-only after INIT == INIT_ON (Acquire in
    // `flush`).
    let path = unsafe { &*STATS_FILE.0.get() };
    if path[0] != 0 {
        let mut p = [0u8; 4096 + 16];
        let mut w = Buf::new(&mut p);
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        let mut i = 0;
        while i < end {
            if path[i] == b'%' && i + 1 < end && path[i + 1] == b'p' {
                // SAFETY: getpid has no preconditions.
                let _ = write!(w, "{}", unsafe { libc::getpid() });
                i += 2;
            } else {
                w.push_bytes(&path[i..i + 1]);
                i += 1;
            }
        }
        w.push_bytes(b"\0");
        if !w.truncated {
            // O_NOFOLLOW: a symbolic link as the last component is refused
            // (ELOOP), so a planted link cannot redirect the append to another
            // file. Mode 0644 (never wider than 0666): the umask applies.
            // SAFETY: a NUL-terminated path.
            let fd = unsafe {
                libc::open(
                    w.bytes().as_ptr().cast(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_APPEND
                        | libc::O_CLOEXEC
                        | libc::O_NOFOLLOW,
                    0o644,
                )
            };
            if fd >= 0 {
                write_all(fd, bytes);
                // SAFETY: our own fd.
                unsafe { libc::close(fd) };
                return;
            }
            // SAFETY: errno is thread-local; reading it has no preconditions.
            if unsafe { *libc::__errno_location() } == libc::ELOOP {
                let path = w.bytes();
                let mut line = crate::config::Line::new();
                line.push(
                    b"klock-stats: KLOCK_STATS_FILE is a symbolic link, which is not \
                      followed; no report written: ",
                );
                line.push(&path[..path.len() - 1]);
                line.emit();
                return;
            }
        }
        warn(b"klock-stats: cannot open KLOCK_STATS_FILE; writing to stderr\n");
    }
    // Relaxed (both): published by INIT.
    let want = (STDERR_DEV.load(Relaxed), STDERR_INO.load(Relaxed));
    match fd_identity(2) {
        Some(id) if id == want || want == (0, 0) => {
            write_all(2, bytes);
        }
        // fd 2 was closed or now refers to another file (possibly the program's
        // output): writing there could corrupt it.
        _ => {}
    }
}

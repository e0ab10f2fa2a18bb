//! Report output without allocating, for code that may run inside a lock
//! call (the interposer's statistics, lockdep's reports): a path with `%p`
//! expanded to the pid, a report file opened without following a symbolic
//! link, and a `write(2)` loop. A leaf: it uses nothing else in klock but
//! the text buffer.
//!
//! ```
//! let mut b = [0u8; 64];
//! let mut w = klock::internal::symbolize::Buf::new(&mut b);
//! assert!(klock::internal::textout::expand_pid(b"/tmp/x-%p", &mut w));
//! assert!(w.bytes().ends_with(b"\0"));
//! ```

use core::fmt::Write as _;

use crate::symbolize::Buf;

/// errno.
pub fn errno() -> libc::c_int {
    // SAFETY: errno is thread-local; reading it has no preconditions.
    unsafe { *libc::__errno_location() }
}

/// Writes all of `b` to `fd`, retrying on EINTR and, for a non-blocking
/// descriptor, waiting up to 2 s at a time for room. False on any other error.
pub fn write_all(fd: libc::c_int, mut b: &[u8]) -> bool {
    while !b.is_empty() {
        // SAFETY: `b` is a valid readable buffer of b.len() bytes.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r > 0 {
            b = &b[r as usize..];
            continue;
        }
        match (r, errno()) {
            (0, _) => return false,
            (_, libc::EINTR) => {}
            (_, libc::EAGAIN) => {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut p, 1, 2000) } <= 0 {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// Writes `path` with `%p` expanded to the pid, NUL-terminated, into `w`; false if
/// it did not fit.
pub fn expand_pid(path: &[u8], w: &mut Buf<'_>) -> bool {
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'%' && path.get(i + 1) == Some(&b'p') {
            // SAFETY: getpid has no preconditions.
            let _ = write!(w, "{}", unsafe { libc::getpid() });
            i += 2;
        } else {
            w.push_bytes(&path[i..i + 1]);
            i += 1;
        }
    }
    w.push_bytes(b"\0");
    !w.truncated
}

/// Opens the NUL-terminated `path` for writing with `flags` added, mode 0644 or
/// `mode`, close-on-exec, not following a symbolic link as its last component.
pub fn open_report(path: &[u8], flags: libc::c_int, mode: libc::mode_t) -> libc::c_int {
    if path.last() != Some(&0) {
        return -1;
    }
    // SAFETY: a NUL-terminated path (checked above).
    unsafe {
        libc::open(
            path.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW | flags,
            mode as libc::c_uint,
        )
    }
}

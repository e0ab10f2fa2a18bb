//! glibc declarations the `libc` crate does not carry (or not for this
//! target), and the glibc layout facts the interposer relies on, each
//! verified on glibc 2.36 / x86_64 with a C program (`offsetof`, and the
//! `__kind`/`__wrefs`/`__shared` values real initialisation writes).

use libc::{c_int, clockid_t, pthread_condattr_t, pthread_mutexattr_t, pthread_rwlockattr_t};

/// `PTHREAD_CANCEL_DISABLE` (glibc: 1).
pub const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// `pthread_mutex_t.__kind` (offset 16) flag bits of the mutexes passed to
/// glibc: robust 0x10, priority-inherit 0x20, priority-protect 0x40,
/// process-shared 0x80 (a robust mutex shows 0x90: glibc also sets the
/// pshared bit). klock's kinds are 0..=3, and -1 is "destroyed".
pub const MUTEX_KIND_GLIBC_FLAGS: i32 = 0x10 | 0x20 | 0x40 | 0x80;
/// Offset of `pthread_mutex_t.__kind`.
pub const MUTEX_KIND_OFFSET: usize = 16;
/// Offset of `pthread_cond_t.__wrefs` (u32): bit 0 = process-shared (set by
/// glibc's init, kept by every glibc operation, which moves `__wrefs` in
/// steps of 8), bit 1 = CLOCK_MONOTONIC. klock's `KCond` ends at 24.
pub const COND_WREFS_OFFSET: usize = 36;
/// `__wrefs` bit of a process-shared condvar.
pub const COND_WREFS_PSHARED: u32 = 1;
/// `__wrefs` bit of a condvar whose timed waits use CLOCK_MONOTONIC (set by
/// glibc's init, kept like the pshared bit).
pub const COND_WREFS_MONOTONIC: u32 = 2;
/// Offset of `pthread_rwlock_t.__shared` (i32, nonzero = process-shared;
/// written by glibc's init only). klock's `KRwLock` ends at 20.
pub const RWLOCK_SHARED_OFFSET: usize = 28;
/// Offset of `pthread_rwlock_t.__flags` (u32): the kind (0 prefer-reader =
/// default, 1 prefer-writer, 2 prefer-writer-nonrecursive), written by
/// glibc's init from the attribute and by
/// `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP` (2); the other
/// static initialiser leaves it 0.
pub const RWLOCK_FLAGS_OFFSET: usize = 48;
/// `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP` (glibc: 2).
pub const PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: c_int = 2;

const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() == 40);
const _: () = assert!(std::mem::size_of::<libc::pthread_cond_t>() == 48);
const _: () = assert!(std::mem::size_of::<libc::pthread_rwlock_t>() == 56);
const _: () = assert!(std::mem::size_of::<libc::pthread_spinlock_t>() == 4);

unsafe extern "C" {
    /// `pthread_setcancelstate(3)`.
    pub fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    /// `pthread_mutexattr_gettype(3)` (glibc's, not interposed).
    pub fn pthread_mutexattr_gettype(attr: *const pthread_mutexattr_t, kind: *mut c_int) -> c_int;
    /// `pthread_mutexattr_getprotocol(3)`.
    pub fn pthread_mutexattr_getprotocol(
        attr: *const pthread_mutexattr_t,
        protocol: *mut c_int,
    ) -> c_int;
    /// `pthread_mutexattr_getrobust(3)`.
    pub fn pthread_mutexattr_getrobust(
        attr: *const pthread_mutexattr_t,
        robust: *mut c_int,
    ) -> c_int;
    /// `pthread_mutexattr_getpshared(3)`.
    pub fn pthread_mutexattr_getpshared(
        attr: *const pthread_mutexattr_t,
        pshared: *mut c_int,
    ) -> c_int;
    /// `pthread_condattr_getclock(3)`.
    pub fn pthread_condattr_getclock(
        attr: *const pthread_condattr_t,
        clock: *mut clockid_t,
    ) -> c_int;
    /// `pthread_condattr_getpshared(3)`.
    pub fn pthread_condattr_getpshared(
        attr: *const pthread_condattr_t,
        pshared: *mut c_int,
    ) -> c_int;
    /// `pthread_rwlockattr_getkind_np(3)` (glibc's, not interposed).
    pub fn pthread_rwlockattr_getkind_np(
        attr: *const pthread_rwlockattr_t,
        pref: *mut c_int,
    ) -> c_int;
    /// `pthread_rwlockattr_getpshared(3)`.
    pub fn pthread_rwlockattr_getpshared(
        attr: *const pthread_rwlockattr_t,
        pshared: *mut c_int,
    ) -> c_int;
}

/// Read the file `path` in chunks into `buf`, handing each to `f`, with raw
/// system calls (open, read, close): usable before the C library is
/// initialised and from inside the dynamic loader (an indirect function's
/// resolver, `spin::entry`). `None` if the file cannot be opened or read.
#[cfg(target_arch = "x86_64")]
pub fn read_file(path: &std::ffi::CStr, buf: &mut [u8], mut f: impl FnMut(&[u8])) -> Option<()> {
    /// `syscall(n, a, b, c)` on x86-64 Linux: the result, or -errno.
    ///
    /// # Safety
    ///
    /// The arguments are valid for system call `n`.
    unsafe fn sys3(n: usize, a: usize, b: usize, c: usize) -> isize {
        let r: isize;
        // SAFETY: the x86-64 Linux system-call convention: number in rax,
        // arguments in rdi, rsi, rdx; rcx and r11 are clobbered.
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") n as isize => r,
                in("rdi") a,
                in("rsi") b,
                in("rdx") c,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        r
    }
    const READ: usize = 0;
    const OPEN: usize = 2;
    const CLOSE: usize = 3;
    // SAFETY: a NUL-terminated path; flags O_RDONLY | O_CLOEXEC.
    let fd = unsafe {
        sys3(
            OPEN,
            path.as_ptr() as usize,
            libc::O_RDONLY as usize | libc::O_CLOEXEC as usize,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    let ok = loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes of writing.
        let n = unsafe { sys3(READ, fd as usize, buf.as_mut_ptr() as usize, buf.len()) };
        if n == -(libc::EINTR as isize) {
            continue;
        }
        if n < 0 {
            break false;
        }
        if n == 0 {
            break true;
        }
        f(&buf[..n as usize]);
    };
    // SAFETY: our own descriptor, closed once.
    unsafe { sys3(CLOSE, fd as usize, 0, 0) };
    ok.then_some(())
}

/// [`read_file`] elsewhere: not implemented (the caller takes its safe
/// default).
#[cfg(not(target_arch = "x86_64"))]
pub fn read_file(_path: &std::ffi::CStr, _buf: &mut [u8], _f: impl FnMut(&[u8])) -> Option<()> {
    None
}

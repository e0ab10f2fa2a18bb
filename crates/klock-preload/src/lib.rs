//! klock-preload: an `LD_PRELOAD` interposer that swaps the pthread locks of
//! unmodified C/C++ programs for klock's.
//!
//! ```text
//! LD_PRELOAD=/path/to/libklock_preload.so ./program
//! ```
//!
//! Every lock's state lives **in the program's own object** (no side
//! table): a klock-c core type at offset 0 of `pthread_mutex_t`
//! ([`mutex`]), `pthread_cond_t` ([`cond`]), `pthread_rwlock_t`
//! ([`rwlock`]); `pthread_spinlock_t` keeps glibc's word protocol or holds
//! a klock queued spinlock ([`spin`]). Static initialisers work as they
//! stand. Robust, PI, PP and process-shared objects go to glibc. C11
//! `mtx_*`/`cnd_*` are mapped onto the same logic ([`c11`]). `_exit` and
//! `_Exit` flush the statistics first ([`stats`]).
//!
//! The exports are unversioned (so they catch every symbol version a
//! program references, e.g. `pthread_mutex_trylock@GLIBC_2.34`). The
//! variants are chosen by environment variables ([`config`]). The pthread
//! semantics themselves (kinds, recursion, EDEADLK/EPERM, deadlines) come
//! from `klock_c::core`. See `docs/preload.md`.

#![warn(missing_docs)]

pub mod c11;
pub mod cond;
pub mod config;
pub mod lockdep;
pub mod mutex;
pub mod real;
pub mod rwlock;
pub mod sched;
pub mod spin;
pub mod stats;
pub mod sys;

use libc::c_int;

/// Library constructor: read the configuration, resolve the real
/// functions, register klock's fork handlers, start the statistics, and
/// answer `KLOCK_PRELOAD_CHECK=1`. Everything here is also done lazily by
/// the entry points that need it (other libraries' constructors may lock
/// before this runs).
extern "C" fn init() {
    let _ = config::get();
    real::resolve_all();
    klock::register_fork_handlers();
    // klock's once-computed values, here on the main thread's big stack
    // rather than in the first lock call (which may run on a 16 KiB thread
    // stack, or inside a malloc that locks), and with the environment
    // read while nothing else runs.
    let _ = klock::tune::get();
    let _ = klock::internal::wait::effective_cpus();
    stats::init();
    if klock::internal::lockdep::enabled() {
        config::close_fast_paths();
    }
    if config::env(c"KLOCK_PRELOAD_CHECK") == Some(b"1") {
        let mut line = config::Line::new();
        line.push(b"klock-preload: active\n");
        line.emit();
    }
}

/// Library destructor: the statistics report at exit (after the program's
/// own destructors and atexit handlers registered after our constructor).
extern "C" fn fini() {
    stats::flush();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = fini;

/// The real `_exit`/`_Exit`, or the raw `exit_group` if it cannot be found.
fn exit_now(f: Result<unsafe extern "C" fn(c_int) -> !, real::Lookup>, status: c_int) -> ! {
    if let Ok(f) = f {
        // SAFETY: glibc's _exit/_Exit, which never returns.
        unsafe { f(status) }
    }
    loop {
        // SAFETY: exit_group ends the process; it does not return.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
    }
}

/// `_exit`: flush the statistics (programs such as stress-ng's children
/// leave this way, skipping destructors), then glibc's `_exit`.
///
/// # Safety
///
/// As `_exit`: ends the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    stats::flush();
    exit_now(real::exit(), status)
}

/// `_Exit`: as [`_exit`].
///
/// # Safety
///
/// As `_Exit`: ends the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    stats::flush();
    exit_now(real::exit_upper(), status)
}

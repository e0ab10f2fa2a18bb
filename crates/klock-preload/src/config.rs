//! The interposer's configuration: which klock variant serves each lock
//! family, read once from the environment.
//!
//! | variable | values (default first) | meaning |
//! |---|---|---|
//! | `KLOCK_MUTEX` | `klock`, `nospin` | mutexes and condvars: OSQ-queued optimistic spinning, or none (sleep at once) |
//! | `KLOCK_RWLOCK` | `klock`, `nospin` | rwlocks: the same choice |
//! | `KLOCK_RWLOCK_POLICY` | `glibc`, `fair` | rwlock readers: glibc's kinds (the default kind admits a reader whenever the lock is read-held), or klock's fair rwsem for every kind |
//! | `KLOCK_SPIN` | `tas`, `unfair`, `pv`, `pvbase`, `native` | spinlocks: glibc's word protocol with klock's waiting, or a 4-byte queued spinlock (process-private only) |
//! | `KLOCK_PRELOAD_CHECK` | `1` | print `klock-preload: active` on stderr at load |
//!
//! A value outside the list gets one line on stderr naming the variable and
//! the allowed values, and the default is used. `KLOCK_SPIN` is parsed by
//! klock's own parser, whose warning (from klock's tunables) is the one a
//! bad name gets; `ticket` and `pvticket` (valid for klock's own runtime
//! spinlock) do not fit in the 4-byte `pthread_spinlock_t`: one warning
//! from here.
//!
//! Reading happens in the library constructor or at the first lock call,
//! whichever comes first, with `getenv` (no allocation: this may run inside
//! another library's constructor or under `dlsym`). Messages go out through
//! `write(2)` from a stack buffer. In secure-execution mode (set-user-ID and
//! the like, [`secure`]) every `KLOCK_*` variable is ignored: [`env`], the one
//! accessor, reports them unset.

use crate::sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Which klock mutex serves `pthread_mutex_*` / `pthread_cond_*`
/// (`KLOCK_MUTEX`), or `pthread_rwlock_*` (`KLOCK_RWLOCK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepVariant {
    /// `klock` (default): optimistic spinning queued in an OSQ, then sleep
    /// ([`klock::SpinOsq`]).
    Osq,
    /// `nospin`: no optimistic spinning ([`klock::SpinOff`]).
    NoSpin,
}

/// Calls `$f::<S>(args)` with `S` the klock spin policy of `$v`, a
/// [`SleepVariant`] (one of the configuration's, read by the caller once).
macro_rules! by_variant {
    ($v:expr, $f:ident ( $($a:expr),* )) => {
        match $v {
            $crate::config::SleepVariant::Osq => $f::<klock::SpinOsq>($($a),*),
            $crate::config::SleepVariant::NoSpin => $f::<klock::SpinOff>($($a),*),
        }
    };
}
pub(crate) use by_variant;

/// How rwlock readers treat waiting writers (`KLOCK_RWLOCK_POLICY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwPolicy {
    /// `glibc` (default): each kind keeps glibc's semantics: the default
    /// kind, `PREFER_READER_NP` and `PREFER_WRITER_NP` admit a reader
    /// whenever the lock is read-held; `PREFER_WRITER_NONRECURSIVE_NP`
    /// queues new readers behind a waiting writer.
    Glibc,
    /// `fair`: klock's rwsem policy for every kind: new readers queue behind
    /// a waiting writer (a thread already holding a read lock excepted).
    /// A program whose reader holds the lock while it waits for another
    /// thread's reader can deadlock.
    Fair,
}

/// What serves `pthread_spin_*` (`KLOCK_SPIN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinVariant {
    /// `tas` (default): glibc's word protocol (1 = free), klock's waiting
    /// (bounded spin with backoff, then `sched_yield`); process-shared safe.
    Glibc,
    /// `unfair`: klock's queued unfair lock.
    Unfair,
    /// `pv`: the PV queued spinlock with kick-ahead and wait-early.
    Pv,
    /// `pvbase`: the PV queued spinlock without them.
    PvBase,
    /// `native`: the native queued spinlock (pure spinning).
    Native,
}

/// The configuration (a `Copy` snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Mutexes and condvars.
    pub mutex: SleepVariant,
    /// Rwlocks.
    pub rwlock: SleepVariant,
    /// Spinlocks.
    pub spin: SpinVariant,
    /// Rwlock readers.
    pub rwlock_policy: RwPolicy,
}

/// The packed configuration; 0 = not read yet. Relaxed everywhere: the
/// value is a pure function of the environment and publishes no other data;
/// the first writer wins (compare-exchange from 0), so every thread sees the
/// same configuration for the life of the process.
static PACKED: AtomicU32 = AtomicU32::new(0);
const READ: u32 = 1 << 31;

fn pack(c: Config) -> u32 {
    let m = c.mutex as u32;
    let r = c.rwlock as u32;
    let s = c.spin as u32;
    let p = c.rwlock_policy as u32;
    READ | m | (r << 1) | (s << 2) | (p << 5)
}

fn unpack(v: u32) -> Config {
    let sleep = |b: u32| {
        if b & 1 == 0 {
            SleepVariant::Osq
        } else {
            SleepVariant::NoSpin
        }
    };
    let spin = match (v >> 2) & 7 {
        0 => SpinVariant::Glibc,
        1 => SpinVariant::Unfair,
        2 => SpinVariant::Pv,
        3 => SpinVariant::PvBase,
        _ => SpinVariant::Native,
    };
    let rwlock_policy = if (v >> 5) & 1 == 0 {
        RwPolicy::Glibc
    } else {
        RwPolicy::Fair
    };
    Config {
        mutex: sleep(v),
        rwlock: sleep(v >> 1),
        spin,
        rwlock_policy,
    }
}

/// The configuration, read from the environment on first use.
#[inline]
pub fn get() -> Config {
    // Relaxed: see PACKED.
    let v = PACKED.load(Ordering::Relaxed);
    if v != 0 { unpack(v) } else { read() }
}

/// The fast paths' gate: [`GATE_TAS`] once the configuration is read with
/// `KLOCK_SPIN` = `tas`, and [`GATE_STATS`] once statistics are on. Both
/// only ever get set (`fetch_or`), so no update is lost. The spinlock fast
/// path runs iff the value is exactly `GATE_TAS`, the mutex and rwlock ones
/// iff `GATE_STATS` is clear. Relaxed: a filter; the
/// full path re-reads the configuration and statistics itself.
///
/// On x86-64 the word is a hidden symbol defined in assembly and read
/// RIP-relative (one load): a Rust `static` in this crate is reached
/// through the GOT (two loads), which measured as the last ~0.5 ns between
/// the interposed `pthread_spin_lock`/`unlock` pair and glibc's,
/// (`docs/results/2026-11-25-preload.md`).
mod gate {
    use std::sync::atomic::AtomicU32;

    #[cfg(target_arch = "x86_64")]
    std::arch::global_asm!(
        ".pushsection .bss.klock_preload_spin_gate_v1,\"aw\",@nobits",
        ".p2align 2",
        ".globl klock_preload_spin_gate_v1",
        ".hidden klock_preload_spin_gate_v1",
        ".type klock_preload_spin_gate_v1,@object",
        ".size klock_preload_spin_gate_v1,4",
        "klock_preload_spin_gate_v1:",
        ".zero 4",
        ".popsection",
    );

    /// The word (for the rare updates).
    #[cfg(target_arch = "x86_64")]
    pub(super) fn word() -> &'static AtomicU32 {
        let p: *const AtomicU32;
        // SAFETY: only computes the address of the 4-byte, 4-aligned,
        // zero-initialised object defined above, which lives as long as the
        // library and is accessed only atomically.
        unsafe {
            std::arch::asm!(
                "lea {p}, [rip + klock_preload_spin_gate_v1]",
                p = out(reg) p,
                options(nostack, nomem, preserves_flags, pure),
            );
            &*p
        }
    }

    /// A relaxed load of the word: one RIP-relative `mov` (an aligned
    /// 4-byte load is atomic on x86-64; `fetch_or` is the only writer).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn load() -> u32 {
        let v: u32;
        // SAFETY: reads the object defined above, nothing else.
        unsafe {
            std::arch::asm!(
                "mov {v:e}, dword ptr [rip + klock_preload_spin_gate_v1]",
                v = out(reg) v,
                options(nostack, readonly, preserves_flags),
            );
        }
        v
    }

    #[cfg(not(target_arch = "x86_64"))]
    static GATE: AtomicU32 = AtomicU32::new(0);

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn word() -> &'static AtomicU32 {
        &GATE
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(super) fn load() -> u32 {
        // Relaxed: see the module's parent doc.
        GATE.load(std::sync::atomic::Ordering::Relaxed)
    }
}
const GATE_TAS: u32 = 1;
const GATE_STATS: u32 = 2;

/// May `pthread_spin_*` take its fast path (glibc's word protocol, no
/// statistics)? One relaxed load; `false` until the configuration is read
/// (the caller's full path reads it).
#[inline(always)]
pub fn spin_fast() -> bool {
    gate::load() == GATE_TAS
}

/// May the mutex and rwlock entry points take their uncontended fast
/// paths (statistics off)? One RIP-relative load ([`stats::enabled`]'s
/// `static` is two, through the GOT).
///
/// [`stats::enabled`]: crate::stats::enabled
#[inline(always)]
pub fn locks_fast() -> bool {
    gate::load() & GATE_STATS == 0
}

/// Statistics or lock-order validation were switched on: close the fast
/// paths for good.
pub(crate) fn close_fast_paths() {
    // Relaxed: see `gate`.
    gate::word().fetch_or(GATE_STATS, Ordering::Relaxed);
}

#[cold]
fn read() -> Config {
    let mut c = Config {
        mutex: sleep_var(c"KLOCK_MUTEX"),
        rwlock: sleep_var(c"KLOCK_RWLOCK"),
        spin: spin_var(),
        rwlock_policy: rwlock_policy_var(),
    };
    // A queued spinlock needs the gated entry points: settle them before
    // the configuration is published, so that no thread ever sees a queued
    // configuration while the plain pair is bound.
    if c.spin != SpinVariant::Glibc && !settle_entry(ENTRY_GATED) {
        // The plain pair was bound first (the environment changed after
        // start, or /proc disagreed with getenv): keep glibc's protocol,
        // which it runs.
        warn_once(
            &WARNED_SPIN,
            c"KLOCK_SPIN",
            b"",
            "the spinlock entry points were bound for tas at start; using tas",
        );
        c.spin = SpinVariant::Glibc;
    }
    // Relaxed: see PACKED. A loser adopts the winner's value (which settled
    // the entry points the same way before it was published).
    let c = match PACKED.compare_exchange(0, pack(c), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => c,
        Err(v) => unpack(v),
    };
    if klock::internal::lockdep::enabled() {
        close_fast_paths();
    }
    if c.spin == SpinVariant::Glibc {
        // Relaxed: see `gate`.
        gate::word().fetch_or(GATE_TAS, Ordering::Relaxed);
    }
    c
}

/// Which `pthread_spin_lock`/`unlock` the process binds (`spin::entry`):
/// unsettled, the plain pair, or the gated pair. Settled once, by the first
/// of the resolvers and a configuration that is not glibc's protocol; both
/// then agree for the life of the process. Relaxed: it publishes nothing.
static ENTRY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const ENTRY_PLAIN: u8 = 1;
const ENTRY_GATED: u8 = 2;

/// Settle [`ENTRY`] to `want` unless it is settled: whether it is `want`.
fn settle_entry(want: u8) -> bool {
    match ENTRY.compare_exchange(0, want, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => true,
        Err(v) => v == want,
    }
}

/// Bind the ungated `pthread_spin_lock`/`unlock` (`spin::spin_lock_plain`)?
/// Yes iff the process runs glibc's protocol without statistics: from the
/// configuration once it is read, else from the environment the process
/// started with (a resolver may run before the C library can `getenv`, at
/// start-up under `-z now`), read from `/proc/self/environ` with raw system
/// calls: `KLOCK_SPIN`, `KLOCK_STATS` and `KLOCK_LOCKDEP` each unset, or
/// exactly `tas`, `0` and `0`. Anything else, or no `/proc`, binds the gated pair, which serves
/// every configuration. Settles [`ENTRY`]; a configuration read later that
/// asks for a queued spinlock then keeps `tas` with a warning.
#[cfg_attr(not(ifunc_entry), allow(dead_code))]
pub fn plain_spin_entry() -> bool {
    // Relaxed: see PACKED and `gate`.
    let want = if PACKED.load(Ordering::Relaxed) != 0 {
        spin_fast()
    } else {
        gate::load() & GATE_STATS == 0 && initial_env_is_plain()
    };
    settle_entry(if want { ENTRY_PLAIN } else { ENTRY_GATED }) && want
}

/// Does the environment the process started with leave `KLOCK_SPIN`,
/// `KLOCK_STATS` and `KLOCK_LOCKDEP` at their defaults (unset, or `tas`,
/// `0` and `0`)? `false` when
/// `/proc/self/environ` cannot be read.
fn initial_env_is_plain() -> bool {
    let mut scan = EnvScan::new(&[
        (b"KLOCK_SPIN=", b"tas"),
        (b"KLOCK_STATS=", b"0"),
        (b"KLOCK_LOCKDEP=", b"0"),
    ]);
    // One page-sized read or so per call; the scan streams, so any size works.
    let mut buf = [0u8; 1024];
    match sys::read_file(c"/proc/self/environ", &mut buf, |chunk| scan.feed(chunk)) {
        Some(()) => scan.finish(),
        None => false,
    }
}

/// A streaming check of a NUL-separated environment block: every entry
/// whose name is one of `vars` must have exactly the allowed value.
struct EnvScan<'a> {
    vars: &'a [(&'a [u8], &'a [u8])],
    /// Bytes of the current entry seen so far, capped at `entry.len()`.
    entry: [u8; 32],
    len: usize,
    /// Set once an entry named in `vars` had another value.
    bad: bool,
}

impl<'a> EnvScan<'a> {
    fn new(vars: &'a [(&'a [u8], &'a [u8])]) -> Self {
        EnvScan {
            vars,
            entry: [0; 32],
            len: 0,
            bad: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if b == 0 {
                self.end_entry();
            } else {
                if self.len < self.entry.len() {
                    self.entry[self.len] = b;
                }
                self.len += 1;
            }
        }
    }

    fn end_entry(&mut self) {
        let seen = &self.entry[..self.len.min(self.entry.len())];
        for (name, ok) in self.vars {
            if let Some(v) = seen.strip_prefix(*name) {
                // A value longer than the buffer is never the allowed one.
                if self.len > self.entry.len() || v != *ok {
                    self.bad = true;
                }
            }
        }
        self.len = 0;
    }

    fn finish(mut self) -> bool {
        if self.len != 0 {
            self.end_entry();
        }
        !self.bad
    }
}

/// Is the process in secure-execution mode (`getauxval(AT_SECURE) != 0`:
/// set-user-ID or set-group-ID, file capabilities, or an LSM transition)?
/// There the dynamic loader restricts `LD_PRELOAD` and glibc's
/// `secure_getenv` returns NULL; [`env`] reports every variable unset.
pub fn secure() -> bool {
    // SAFETY: getauxval reads the auxiliary vector the kernel gave the
    // process; it takes no lock and allocates nothing. 0 = not secure (or
    // no such entry, which on Linux is always present).
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// `getenv(name)` as bytes, without allocating. `None` if unset, and always
/// `None` in secure-execution mode ([`secure`]): a set-user-ID program run by
/// another user must not take paths or settings from that user's
/// environment. Every `KLOCK_*` read of the interposer goes through here.
pub fn env(name: &CStr) -> Option<&'static [u8]> {
    if secure() {
        return None;
    }
    // SAFETY: `name` is NUL-terminated. getenv returns NULL or a pointer
    // into the environment block, which stays valid unless the program
    // changes that variable (setenv/putenv, a documented hazard of getenv
    // that every reader of the environment shares).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        None
    } else {
        // SAFETY: as above; a NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

/// One warning per variable and process, whichever thread reads first.
static WARNED_MUTEX: AtomicBool = AtomicBool::new(false);
static WARNED_RWLOCK: AtomicBool = AtomicBool::new(false);
static WARNED_SPIN: AtomicBool = AtomicBool::new(false);
static WARNED_RWLOCK_POLICY: AtomicBool = AtomicBool::new(false);

fn sleep_var(name: &'static CStr) -> SleepVariant {
    match env(name) {
        None | Some(b"klock") => SleepVariant::Osq,
        Some(b"nospin") => SleepVariant::NoSpin,
        Some(bad) => {
            let flag = if name == c"KLOCK_MUTEX" {
                &WARNED_MUTEX
            } else {
                &WARNED_RWLOCK
            };
            warn_once(flag, name, bad, "allowed: klock, nospin; using klock");
            SleepVariant::Osq
        }
    }
}

fn rwlock_policy_var() -> RwPolicy {
    match env(c"KLOCK_RWLOCK_POLICY") {
        None | Some(b"glibc") => RwPolicy::Glibc,
        Some(b"fair") => RwPolicy::Fair,
        Some(bad) => {
            warn_once(
                &WARNED_RWLOCK_POLICY,
                c"KLOCK_RWLOCK_POLICY",
                bad,
                "allowed: glibc, fair; using glibc",
            );
            RwPolicy::Glibc
        }
    }
}

/// `KLOCK_SPIN`, parsed by klock's own parser (the names have one source,
/// `klock::tune::SpinKind`). A name klock does not know is warned about by
/// klock's tunables (one warning, with the one list of names), read in the
/// constructor too; here it only falls back to `tas`.
fn spin_var() -> SpinVariant {
    use klock::tune::SpinKind;
    let Some(v) = env(c"KLOCK_SPIN") else {
        return SpinVariant::Glibc;
    };
    // Trimmed, as klock's tunables read it: both see the same name.
    match SpinKind::from_name(v.trim_ascii()) {
        None | Some(SpinKind::Tas) => SpinVariant::Glibc,
        Some(SpinKind::Unfair) => SpinVariant::Unfair,
        Some(SpinKind::Pv) => SpinVariant::Pv,
        Some(SpinKind::PvBase) => SpinVariant::PvBase,
        Some(SpinKind::Native) => SpinVariant::Native,
        Some(SpinKind::Ticket | SpinKind::PvTicket) => {
            warn_once(
                &WARNED_SPIN,
                c"KLOCK_SPIN",
                v,
                "ticket locks do not fit in the 4-byte pthread_spinlock_t; using tas",
            );
            SpinVariant::Glibc
        }
    }
}

fn warn_once(flag: &AtomicBool, name: &CStr, value: &[u8], what: &str) {
    // Relaxed: only decides which thread prints.
    if flag.swap(true, Ordering::Relaxed) {
        return;
    }
    let mut b = Line::new();
    b.push(b"klock-preload: ");
    b.push(name.to_bytes());
    b.push(b"=");
    b.push(value);
    b.push(b": ");
    b.push(what.as_bytes());
    b.push(b"\n");
    b.emit();
}

/// One line for stderr, built in a fixed stack buffer (longer input is cut)
/// and written with one `write(2)` with cancellation disabled (`write` is a
/// cancellation point, and this may run inside a lock call).
pub struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Self::new()
    }
}

impl Line {
    /// An empty line.
    pub const fn new() -> Self {
        Line {
            buf: [0; 256],
            len: 0,
        }
    }

    /// Append bytes (cut at the buffer's end, keeping room for a newline).
    pub fn push(&mut self, s: &[u8]) {
        let room = self.buf.len() - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }

    /// Write the line to fd 2 (a cut line still ends with a newline).
    pub fn emit(mut self) {
        if self.len > 0 && self.buf[self.len - 1] != b'\n' {
            self.buf[self.len] = b'\n';
            self.len += 1;
        }
        let mut old = 0;
        // SAFETY: plain libc calls on valid pointers; the buffer outlives
        // the write. Errors (closed stderr) are ignored: diagnostics only.
        unsafe {
            crate::sys::pthread_setcancelstate(crate::sys::PTHREAD_CANCEL_DISABLE, &mut old);
            libc::write(2, self.buf.as_ptr().cast(), self.len);
            crate::sys::pthread_setcancelstate(old, &mut old);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn env_scan_allows_only_the_default_values() {
        let vars: &[(&[u8], &[u8])] = &[(b"KLOCK_SPIN=", b"tas"), (b"KLOCK_STATS=", b"0")];
        let scan = |block: &[u8], split: usize| {
            let mut s = EnvScan::new(vars);
            let (a, b) = block.split_at(split.min(block.len()));
            s.feed(a);
            s.feed(b);
            s.finish()
        };
        for (block, plain) in [
            (&b"HOME=/root\0PATH=/bin\0"[..], true),
            (b"KLOCK_SPIN=tas\0KLOCK_STATS=0\0", true),
            (b"KLOCK_SPIN=unfair\0", false),
            (b"A=1\0KLOCK_STATS=1\0B=2", false),
            (b"KLOCK_SPIN=tas ", false),
            (b"KLOCK_SPIN=", false),
            (b"KLOCK_SPINX=1\0KLOCK_SPIN_NS=5\0", true),
            (b"X=KLOCK_SPIN=unfair\0", true),
            (
                b"KLOCK_SPIN=tasaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\0",
                false,
            ),
            (b"KLOCK_SPIN=pv", false),
        ] {
            // Every split point: the entries cross chunk boundaries.
            for split in 0..=block.len() {
                assert_eq!(
                    scan(block, split),
                    plain,
                    "{:?} split at {split}",
                    String::from_utf8_lossy(block)
                );
            }
        }
    }

    #[test]
    fn read_file_reads_the_initial_environment() {
        let mut buf = [0u8; 7];
        let mut all = Vec::new();
        sys::read_file(c"/proc/self/environ", &mut buf, |c| {
            all.extend_from_slice(c)
        })
        .unwrap();
        assert_eq!(all, std::fs::read("/proc/self/environ").unwrap());
        assert!(sys::read_file(c"/nonexistent/klock", &mut buf, |_| ()).is_none());
    }
    use super::*;

    #[test]
    fn pack_roundtrips() {
        for mutex in [SleepVariant::Osq, SleepVariant::NoSpin] {
            for rwlock in [SleepVariant::Osq, SleepVariant::NoSpin] {
                for spin in [
                    SpinVariant::Glibc,
                    SpinVariant::Unfair,
                    SpinVariant::Pv,
                    SpinVariant::PvBase,
                    SpinVariant::Native,
                ] {
                    for rwlock_policy in [RwPolicy::Glibc, RwPolicy::Fair] {
                        let c = Config {
                            mutex,
                            rwlock,
                            spin,
                            rwlock_policy,
                        };
                        assert_eq!(unpack(pack(c)), c);
                        assert_ne!(pack(c), 0);
                    }
                }
            }
        }
    }

    #[test]
    fn env_reads_the_environment_outside_secure_mode() {
        // A test process is not set-user-ID (the set-user-ID case is
        // tests/secure.rs, which needs root).
        assert!(!secure());
        assert_eq!(env(c"KLOCK_NO_SUCH_VARIABLE_AT_ALL"), None);
        assert!(env(c"PATH").is_some());
    }

    #[test]
    fn line_is_cut_and_terminated() {
        let mut l = Line::new();
        l.push(&[b'x'; 400]);
        assert_eq!(l.len, 255);
    }
}

//! `pthread_spin_*` on the 4-byte `pthread_spinlock_t`.
//!
//! # Default (`KLOCK_SPIN` unset or `tas`): glibc's word protocol
//!
//! glibc on x86_64 (2.36, disassembled): the word is 1 when free and 0 or
//! below when held; `pthread_spin_init` and `pthread_spin_unlock` store 1;
//! lock is `lock decl` (it got the lock iff the word went 1 -> 0), then
//! spins on plain loads while the word is <= 0; trylock is a CAS 1 -> 0
//! (EBUSY otherwise). We keep that protocol exactly (take = a decrement
//! that went 1 -> 0 on the first try, CAS 1 -> 0 after; release = store
//! 1), so a process-shared spinlock keeps working between
//! processes with and without the preload, and any thread or process may
//! release it. Only the waiting changes: klock's bounded spin with
//! exponential backoff (`KLOCK_TAS_BACKOFF_MIN_NS`/`_MAX_NS`) for
//! `KLOCK_SPIN_NS`, then `sched_yield` between polls. No futex: a glibc
//! unlocker in another process would never wake us.
//!
//! # `KLOCK_SPIN=unfair|pv|pvbase|native`: a klock queued spinlock
//!
//! The word is a [`RawQSpinLock`] (all zero = free, so init stores 0).
//! Faster under contention and under overcommit (waiters queue; PV waiters
//! sleep), but **process-private only**: its queue names per-process nodes.
//! Initialising a process-shared spinlock in this mode prints a warning
//! once. A PV unlock may owe a sleeping successor a wake-up (klock's
//! "kick at unlock" token); pthread's unlock takes no token, so the locking
//! thread keeps it in a small thread-local table keyed by the lock's
//! address (POSIX: only the holder unlocks a spinlock). When the table is
//! full (more than [`STASH`] such locks held at once), the lock is passed
//! on and taken again instead, until it comes without a debt.

use crate::config::{self, SpinVariant};
use crate::stats::{self, Family};
use klock::internal::lockdep::Mode;
use klock::internal::spin::RawQSpinLockInternals as _;
use klock::internal::wait::{Backoff, SpinBudget, spin_until, yield_now};
use klock::{Native, Pv, PvBase, RawQSpinLock, SpinToken as Token, Unfair, WaitPolicy};
use libc::{EBUSY, EINVAL, EPERM, c_int, pthread_spinlock_t};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// glibc's free value.
const FREE: i32 = 1;
/// glibc's taken value (after our CAS; glibc's own lockers may drive the
/// word below 0 while they wait).
const TAKEN: i32 = 0;

const _: () = assert!(std::mem::size_of::<RawQSpinLock<Pv>>() == 4);

/// The word as glibc sees it.
///
/// # Safety
///
/// `l` points to a live `pthread_spinlock_t`, valid for `'a`.
#[inline]
unsafe fn word<'a>(l: *mut pthread_spinlock_t) -> &'a AtomicI32 {
    // SAFETY: a pthread_spinlock_t is an aligned int; glibc accesses it
    // only atomically (and the program only through pthread_spin_*).
    unsafe { &*l.cast::<AtomicI32>() }
}

/// The word as a klock queued spinlock.
///
/// # Safety
///
/// As for [`word`], in queued mode.
#[inline]
unsafe fn qs<'a, P: WaitPolicy>(l: *mut pthread_spinlock_t) -> &'a RawQSpinLock<P> {
    // SAFETY: RawQSpinLock is a transparent AtomicU32: same size and
    // alignment as the int.
    unsafe { &*l.cast::<RawQSpinLock<P>>() }
}

// ---------------------------------------------------------------------------
// glibc protocol
// ---------------------------------------------------------------------------

#[inline]
fn g_try(w: &AtomicI32) -> bool {
    // Acquire pairs with the Release store of the unlock (ours, or glibc's
    // plain store, a release on x86_64 and an atomic release in its C code).
    w.load(Ordering::Relaxed) == FREE
        && w.compare_exchange(FREE, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

#[cold]
fn g_lock_slow(w: &AtomicI32) {
    let t = klock::tune::get();
    let mut backoff = Backoff::new(t.tas_backoff_min_ns, t.tas_backoff_max_ns);
    let mut budget = SpinBudget::new(t.spin_ns);
    // Relaxed polls (test before test-and-set); `g_try` acquires.
    while !budget.expired() {
        if backoff.wait_until(|| w.load(Ordering::Relaxed) > 0) && g_try(w) {
            return;
        }
    }
    // The holder may be descheduled: give the CPU away between polls.
    loop {
        klock::internal::wait::relinquish();
        let mut b = SpinBudget::new(t.tas_backoff_max_ns);
        if spin_until(&mut b, || w.load(Ordering::Relaxed) > 0) && g_try(w) {
            return;
        }
    }
}

// ---------------------------------------------------------------------------
// Queued mode: the kick-at-unlock token table
// ---------------------------------------------------------------------------

/// Slots in the per-thread token table.
pub const STASH: usize = 8;

thread_local! {
    /// (lock address, token) pairs of held queued spinlocks whose unlock
    /// owes a wake-up; address 0 = empty. Const-initialised, no destructor.
    static TOKENS: [Cell<(usize, Token)>; STASH] =
        const { [const { Cell::new((0, Token::NONE)) }; STASH] };
    /// Occupied slots (the unlock fast path checks only this).
    static STASHED: Cell<u8> = const { Cell::new(0) };
}

/// Keep `t` for the unlock of `addr`; false if the table is full.
fn stash_put(addr: usize, t: Token) -> bool {
    TOKENS
        .try_with(|slots| {
            for s in slots {
                if s.get().0 == 0 {
                    s.set((addr, t));
                    let _ = STASHED.try_with(|n| n.set(n.get() + 1));
                    return true;
                }
            }
            false
        })
        .unwrap_or(false)
}

/// The token kept for `addr`, if any.
#[inline]
fn stash_take(addr: usize) -> Token {
    if STASHED.try_with(Cell::get).unwrap_or(0) == 0 {
        return Token::NONE;
    }
    TOKENS
        .try_with(|slots| {
            for s in slots {
                let (a, t) = s.get();
                if a == addr {
                    s.set((0, Token::NONE));
                    let _ = STASHED.try_with(|n| n.set(n.get() - 1));
                    return t;
                }
            }
            Token::NONE
        })
        .unwrap_or(Token::NONE)
}

fn q_lock<P: WaitPolicy>(l: *mut pthread_spinlock_t) {
    // SAFETY: the entry point checked `l` non-null; queued mode.
    let q = unsafe { qs::<P>(l) };
    loop {
        let t = q.lock();
        if t.is_none() || stash_put(l as usize, t) {
            return;
        }
        // No room for the debt: pass the lock on (paying it) and retry.
        // SAFETY: we hold the lock with token `t`.
        unsafe { q.unlock(t) };
        yield_now();
    }
}

fn q_trylock<P: WaitPolicy>(l: *mut pthread_spinlock_t) -> bool {
    // SAFETY: as in `q_lock`. A successful try_lock owes nothing
    // (it never queues).
    unsafe { qs::<P>(l) }.try_lock().is_some()
}

fn q_unlock<P: WaitPolicy>(l: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: as in `q_lock`.
    let q = unsafe { qs::<P>(l) };
    // The locked byte (bits 0-7): 0 = not held. Unlocking a free lock
    // would corrupt the word: EPERM instead.
    if q.word() & 0xff == 0 {
        return EPERM;
    }
    let t = stash_take(l as usize);
    // SAFETY: the lock is held (checked) and, by POSIX, by the caller,
    // whose table held its token (if any).
    unsafe { q.unlock(t) };
    0
}

/// Calls `$f::<P>(args)` for the configured queued variant, `$g` in glibc mode.
macro_rules! by_spin_variant {
    ($glibc:expr, $f:ident ( $($a:expr),* )) => {
        match config::get().spin {
            SpinVariant::Glibc => $glibc,
            SpinVariant::Unfair => $f::<Unfair>($($a),*),
            SpinVariant::Pv => $f::<Pv>($($a),*),
            SpinVariant::PvBase => $f::<PvBase>($($a),*),
            SpinVariant::Native => $f::<Native>($($a),*),
        }
    };
}

static WARNED_PSHARED: AtomicBool = AtomicBool::new(false);

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// `pthread_spin_init`: a free lock (glibc mode: 1; queued mode: 0).
///
/// # Safety
///
/// pthread's contract: `l` points to storage for a spinlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_spin_init(l: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    let queued = config::get().spin != SpinVariant::Glibc;
    if queued
        && pshared != libc::PTHREAD_PROCESS_PRIVATE
        // Relaxed: only decides who prints.
        && !WARNED_PSHARED.swap(true, Ordering::Relaxed)
    {
        let mut line = crate::config::Line::new();
        line.push(
            b"klock-preload: KLOCK_SPIN selects a queued spinlock, which is process-private \
              only; a PTHREAD_PROCESS_SHARED spinlock will not work across processes \
              (unset KLOCK_SPIN for glibc-compatible spinlocks)\n",
        );
        line.emit();
    }
    // Relaxed: init happens before the lock is shared (the program
    // publishes it).
    // SAFETY: non-null storage for a spinlock.
    unsafe { word(l) }.store(if queued { 0 } else { FREE }, Ordering::Relaxed);
    crate::lockdep::forget(l as usize);
    0
}

/// `pthread_spin_destroy`: nothing to release (as in glibc).
///
/// # Safety
///
/// pthread's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_spin_destroy(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    crate::lockdep::forget(l as usize);
    0
}

/// `pthread_spin_lock` in every configuration: the variant gate, then
/// glibc's protocol or a queued lock. Exported under that name where
/// there are no indirect functions; on x86-64 glibc, [`entry`] picks it or
/// [`spin_lock_plain`] once per process.
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an initialised spinlock.
#[cfg_attr(not(ifunc_entry), unsafe(export_name = "pthread_spin_lock"))]
pub unsafe extern "C" fn spin_lock_gated(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // The uncontended lock in glibc's protocol, before any dispatch: one
    // atomic decrement, taken iff the word went 1 -> 0. A failed decrement
    // leaves the held word one lower, which glibc's own lockers do too (held
    // is <= 0; the unlock stores 1). Acquire pairs with the Release store of
    // the unlock (as in `g_try`).
    // SAFETY: non-null spinlock from the program.
    if config::spin_fast() && unsafe { word(l) }.fetch_sub(1, Ordering::Acquire) == FREE {
        return 0;
    }
    // SAFETY: as above.
    unsafe { spin_lock_full(l) }
}

/// `pthread_spin_lock` after the fast path: out of line, so that the entry
/// point stays a leaf on the fast path (no register saves), and cold, so
/// that the fast path falls through to its `ret` as glibc's does (with the
/// taken branch LLVM laid out otherwise, the pair measured 1.02-1.14x
/// glibc's; falling through, 0.93-1.04x:
/// `docs/results/2026-11-28/spin-floor/preload-unc-cold/`).
///
/// # Safety
///
/// `l` is non-null and points to a spinlock.
#[cold]
#[inline(never)]
unsafe extern "C" fn spin_lock_full(l: *mut pthread_spinlock_t) -> c_int {
    if crate::lockdep::on() {
        let (ident, mode) = (crate::lockdep::Ident::Addr, Mode::Write);
        // SAFETY: the caller's contract.
        let take = || unsafe { spin_lock_counted(l) };
        return crate::lockdep::acquire(l as usize, ident, mode, false, false, take);
    }
    // SAFETY: the caller's contract.
    unsafe { spin_lock_counted(l) }
}

/// [`spin_lock_full`]'s acquisition, counted with statistics on.
///
/// # Safety
///
/// `l` is non-null and points to a spinlock.
#[inline(always)]
unsafe fn spin_lock_counted(l: *mut pthread_spinlock_t) -> c_int {
    let on = stats::enabled();
    // SAFETY: non-null spinlock from the program.
    if on && unsafe { pthread_spin_trylock(l) } == 0 {
        return 0;
    }
    let t0 = if on {
        klock::internal::wait::now_ns()
    } else {
        0
    };
    by_spin_variant!(
        {
            // SAFETY: non-null spinlock from the program, glibc mode.
            let w = unsafe { word(l) };
            if !g_try(w) {
                g_lock_slow(w);
            }
        },
        q_lock(l)
    );
    if on {
        let waited = klock::internal::wait::now_ns().saturating_sub(t0);
        stats::acquired(l as usize, Family::Spin, true, waited);
    }
    0
}

/// `pthread_spin_trylock`: EBUSY if held.
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an initialised spinlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_spin_trylock(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // SAFETY: non-null spinlock from the program, glibc mode.
    let got = by_spin_variant!(g_try(unsafe { word(l) }), q_trylock(l));
    if !got {
        return EBUSY;
    }
    if stats::enabled() {
        stats::acquired(l as usize, Family::Spin, false, 0);
    }
    if crate::lockdep::on() {
        let (ident, mode) = (crate::lockdep::Ident::Addr, Mode::Write);
        return crate::lockdep::acquire(l as usize, ident, mode, false, true, || 0);
    }
    0
}

/// `pthread_spin_unlock` in every configuration (as [`spin_lock_gated`]).
/// glibc mode: store 1 (any thread or process may release, as with
/// glibc). Queued mode: EPERM if the lock is free.
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an initialised spinlock.
#[cfg_attr(not(ifunc_entry), unsafe(export_name = "pthread_spin_unlock"))]
pub unsafe extern "C" fn spin_unlock_gated(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    if config::spin_fast() {
        // Release pairs with the Acquire CAS of the next locker (as below).
        // SAFETY: non-null spinlock from the program, glibc mode.
        unsafe { word(l) }.store(FREE, Ordering::Release);
        return 0;
    }
    // SAFETY: as above.
    unsafe { spin_unlock_full(l) }
}

/// `pthread_spin_unlock` after the fast path (see [`spin_lock_full`]).
///
/// # Safety
///
/// `l` is non-null and points to a spinlock.
#[cold]
#[inline(never)]
unsafe extern "C" fn spin_unlock_full(l: *mut pthread_spinlock_t) -> c_int {
    if stats::enabled() {
        stats::released(l as usize, Family::Spin);
    }
    if crate::lockdep::on() {
        let ident = crate::lockdep::Ident::Addr;
        // SAFETY: the caller's contract.
        return crate::lockdep::release(l as usize, ident, || unsafe { spin_unlock_now(l) });
    }
    // SAFETY: the caller's contract.
    unsafe { spin_unlock_now(l) }
}

/// [`spin_unlock_full`]'s release in the configured protocol.
///
/// # Safety
///
/// `l` is non-null and points to a spinlock.
#[inline(always)]
unsafe fn spin_unlock_now(l: *mut pthread_spinlock_t) -> c_int {
    by_spin_variant!(
        {
            // Release pairs with the Acquire CAS of the next locker (ours
            // or glibc's `lock decl`, a full barrier).
            // SAFETY: non-null spinlock from the program, glibc mode.
            unsafe { word(l) }.store(FREE, Ordering::Release);
            0
        },
        q_unlock(l)
    )
}

/// `pthread_spin_lock` when the process runs glibc's protocol without
/// statistics, the default: no gate. On this machine's AMD EPYC the gate's
/// load in front of the `lock decl` cost 8-10 % of an uncontended pair
/// (the locked instruction waits for the branch on it): 1.09x glibc's,
/// against 1.00x for this function (`docs/results/2026-11-28-spin-floor.md`).
///
/// # Safety
///
/// pthread's contract: `l` is null or points to an initialised spinlock;
/// the process's spin variant is glibc's and statistics are off, for good
/// ([`config::plain_spin_entry`]).
pub unsafe extern "C" fn spin_lock_plain(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // As in `spin_lock_gated`. Acquire pairs with the Release store of the
    // unlock.
    // SAFETY: non-null spinlock from the program.
    if unsafe { word(l) }.fetch_sub(1, Ordering::Acquire) == FREE {
        return 0;
    }
    // SAFETY: as above.
    unsafe { spin_lock_full(l) }
}

/// `pthread_spin_unlock` in the plain configuration ([`spin_lock_plain`]).
///
/// # Safety
///
/// As [`spin_lock_plain`].
pub unsafe extern "C" fn spin_unlock_plain(l: *mut pthread_spinlock_t) -> c_int {
    if l.is_null() {
        return EINVAL;
    }
    // Release pairs with the Acquire of the next locker (as in
    // `spin_unlock_gated`).
    // SAFETY: non-null spinlock from the program, glibc mode.
    unsafe { word(l) }.store(FREE, Ordering::Release);
    0
}

/// The exported `pthread_spin_lock` and `pthread_spin_unlock` on x86-64
/// glibc: GNU indirect functions. The dynamic loader calls each resolver
/// once, when it binds the name (at start-up under `-z now`, else at the
/// first call), and the program then calls the chosen function directly:
/// [`spin_lock_plain`] when the process runs glibc's protocol without
/// statistics ([`config::plain_spin_entry`] decides, once), else the gated
/// [`spin_lock_gated`]. Each resolver is a Rust function exported under the
/// public name whose symbol type the assembler directive below makes
/// `STT_GNU_IFUNC` (an assembly-defined symbol would not be exported).
#[cfg(ifunc_entry)]
pub mod entry {
    use super::*;

    /// The resolver of `pthread_spin_lock` (not callable as the lock).
    #[unsafe(no_mangle)]
    pub extern "C" fn pthread_spin_lock() -> usize {
        if config::plain_spin_entry() {
            spin_lock_plain as *const () as usize
        } else {
            spin_lock_gated as *const () as usize
        }
    }

    /// The resolver of `pthread_spin_unlock` (not callable as the unlock).
    #[unsafe(no_mangle)]
    pub extern "C" fn pthread_spin_unlock() -> usize {
        if config::plain_spin_entry() {
            spin_unlock_plain as *const () as usize
        } else {
            spin_unlock_gated as *const () as usize
        }
    }

    std::arch::global_asm!(
        ".type pthread_spin_lock, @gnu_indirect_function",
        ".type pthread_spin_unlock, @gnu_indirect_function",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stash_keeps_tokens_per_address() {
        assert_eq!(stash_take(0x1000), Token::NONE);
        // Token::NONE is the only token constructible here; a stored NONE
        // still occupies its slot until taken.
        for i in 0..STASH {
            assert!(stash_put(0x1000 + i * 8, Token::NONE));
        }
        assert!(!stash_put(0x9000, Token::NONE));
        assert_eq!(STASHED.with(Cell::get) as usize, STASH);
        for i in 0..STASH {
            let _ = stash_take(0x1000 + i * 8);
        }
        assert_eq!(STASHED.with(Cell::get), 0);
    }
}

//! Loom models of the spinlocks: mutual exclusion (a loom `UnsafeCell`, whose
//! concurrent access loom reports, plus a final count) and no lost wake-up
//! (the exact futex model in `klock::internal::wait` blocks a waiter nobody wakes; loom
//! reports the resulting deadlock).
//!
//! Run: `.ci/loom --test loom` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//! (CI sets `LOOM_MAX_PREEMPTIONS=2`).
//!
//! The policies below set the spin budgets to 0 or 1 iteration so the sleeping
//! paths (node sleep, head sleep with SLOW, kick at unlock, wait-early,
//! kick-ahead) are explored rather than spun past. Each model names the lock
//! events it covers and fails unless every one was counted in some execution
//! (the tests are built with `--features stats`, as CI does; every model
//! thread runs on the test's OS thread, so this thread's counters are the
//! model's). Only the spinning-only models (`tas_native_2`,
//! `ticket_native_2`) name none. The MCS hand-over to a queued successor has
//! no event of its own: `qspin_native_queue_2` shows only that the queue is
//! entered; the PV models' node sleeps (`pv_wait_node`) end only through it.
#![cfg(loom)]

use klock::stat::Event;
use klock::{RawQSpinLock, RawTasLock, RawTicketLock, SpinToken as Token, WaitPolicy};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

mod loom_common;
use loom_common::{assert_reached, check_counted, require_stats};

macro_rules! policy {
    ($name:ident, sleep = $s:expr, patched = $p:expr, unfair = $u:expr, spin = $spin:expr,
     kick = $k:expr, steal = $steal:expr) => {
        policy!(
            $name,
            sleep = $s,
            patched = $p,
            unfair = $u,
            spin = $spin,
            kick = $k,
            steal = $steal,
            pending = true
        );
    };
    ($name:ident, sleep = $s:expr, patched = $p:expr, unfair = $u:expr, spin = $spin:expr,
     kick = $k:expr, steal = $steal:expr, pending = $pend:expr) => {
        struct $name;
        impl klock::internal::spin::Seal for $name {}
        impl WaitPolicy for $name {
            const NAME: &'static str = stringify!($name);
            const PENDING_PATH: bool = $pend;
            const SLEEP: bool = $s;
            const PATCHED: bool = $p;
            const UNFAIR: bool = $u;
            fn spin_ns() -> u64 {
                $spin
            }
            fn ticket_spin_ns() -> u64 {
                $spin
            }
            fn kick_ahead() -> u32 {
                $k
            }
            fn steal_threshold_ns() -> u64 {
                $steal
            }
            fn pending_ns() -> u64 {
                0
            }
            fn tas_backoff_ns() -> (u64, u64) {
                (0, 1)
            }
        }
    };
}

policy!(
    NativeM,
    sleep = false,
    patched = false,
    unfair = false,
    spin = 0,
    kick = 0,
    steal = 0
);
policy!(
    NativeQ,
    sleep = false,
    patched = false,
    unfair = false,
    spin = 0,
    kick = 0,
    steal = 0,
    pending = false
);
policy!(
    PvBaseQ0,
    sleep = true,
    patched = false,
    unfair = false,
    spin = 0,
    kick = 0,
    steal = 0,
    pending = false
);
policy!(
    PvBase0,
    sleep = true,
    patched = false,
    unfair = false,
    spin = 0,
    kick = 0,
    steal = 0
);
policy!(
    PvBase1,
    sleep = true,
    patched = false,
    unfair = false,
    spin = 1,
    kick = 0,
    steal = 0
);
policy!(
    Pv0,
    sleep = true,
    patched = true,
    unfair = false,
    spin = 0,
    kick = 1,
    steal = 0
);
policy!(
    PvQ0,
    sleep = true,
    patched = true,
    unfair = false,
    spin = 0,
    kick = 2,
    steal = 0,
    pending = false
);
policy!(
    Pv2,
    sleep = true,
    patched = true,
    unfair = false,
    spin = 2,
    kick = 2,
    steal = 0
);
policy!(
    UnfairClaim,
    sleep = true,
    patched = false,
    unfair = true,
    spin = 0,
    kick = 0,
    steal = 0
);
policy!(
    UnfairSteal,
    sleep = true,
    patched = false,
    unfair = true,
    spin = 1,
    kick = 0,
    steal = u64::MAX
);

trait Lock: Send + Sync + 'static {
    fn new() -> Self;
    fn acquire(&self) -> Token;
    /// # Safety: held, token from acquire.
    unsafe fn release(&self, t: Token);
}

impl<P: WaitPolicy> Lock for RawQSpinLock<P> {
    fn new() -> Self {
        RawQSpinLock::new()
    }
    fn acquire(&self) -> Token {
        self.lock()
    }
    unsafe fn release(&self, t: Token) {
        unsafe { self.unlock(t) }
    }
}

impl<P: WaitPolicy> Lock for RawTicketLock<P> {
    fn new() -> Self {
        RawTicketLock::new()
    }
    fn acquire(&self) -> Token {
        self.lock();
        Token::NONE
    }
    unsafe fn release(&self, _t: Token) {
        unsafe { self.unlock() }
    }
}

impl<P: WaitPolicy> Lock for RawTasLock<P> {
    fn new() -> Self {
        RawTasLock::new()
    }
    fn acquire(&self) -> Token {
        self.lock();
        Token::NONE
    }
    unsafe fn release(&self, _t: Token) {
        unsafe { self.unlock() }
    }
}

struct Shared<L> {
    lock: L,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed with `lock` held (which is what the model checks).
unsafe impl<L: Sync> Sync for Shared<L> {}

fn critical<L: Lock>(s: &Shared<L>) {
    let t = s.lock.acquire();
    // loom reports a concurrent access here if mutual exclusion fails.
    s.data.with_mut(|p| unsafe { *p += 1 });
    // SAFETY: held, with its token.
    unsafe { s.lock.release(t) };
}

/// `threads` threads (including main) each take the lock `rounds` times;
/// fails unless every event in `reach` was counted in some execution.
fn model<L: Lock>(threads: usize, rounds: usize, reach: &[Event]) {
    model_with::<L>(threads, rounds, false, reach)
}

/// As [`model`]; with `no_node`, the first spawned thread has no queue node
/// (the fallback path: steal/trylock, then sleep on the lock word as SLOW).
fn model_with<L: Lock>(threads: usize, rounds: usize, no_node: bool, reach: &[Event]) {
    require_stats(reach);
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    // Pure spinning (native) produces long yield chains; allow them.
    b.max_branches = 100_000;
    let counts = check_counted(b, std::any::type_name::<L>(), move || {
        let s = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (1..threads)
            .map(|i| {
                let s = s.clone();
                thread::spawn(move || {
                    if no_node && i == 1 {
                        klock::internal::node::simulate_no_node(true);
                    }
                    for _ in 0..rounds {
                        critical(&s);
                    }
                })
            })
            .collect();
        for _ in 0..rounds {
            critical(&s);
        }
        for h in hs {
            h.join().unwrap();
        }
        let n = s.data.with(|p| unsafe { *p });
        assert_eq!(n as usize, threads * rounds);
    });
    assert_reached(&counts, reach);
}

#[test]
fn qspin_native_2() {
    model::<RawQSpinLock<NativeM>>(2, 2, &[Event::LockPending, Event::LockSlowpath]);
}

/// Without the pending path, contention goes through the MCS queue
/// (`lock_slowpath`) and its hand-over (no event of its own: see the header).
#[test]
fn qspin_native_queue_2() {
    model::<RawQSpinLock<NativeQ>>(2, 2, &[Event::LockSlowpath]);
}

/// PV queue with two threads: node sleep, head sleep (SLOW), kick at unlock.
#[test]
fn qspin_pvbase_queue_2() {
    model::<RawQSpinLock<PvBaseQ0>>(
        2,
        2,
        &[Event::PvWaitNode, Event::PvWaitHead, Event::PvKickUnlock],
    );
}

#[test]
fn qspin_pvbase_sleep_kick_slow_3() {
    model::<RawQSpinLock<PvBase0>>(
        3,
        1,
        &[Event::PvWaitNode, Event::PvWaitHead, Event::PvKickUnlock],
    );
}

#[test]
fn qspin_pvbase_spin1_2() {
    model::<RawQSpinLock<PvBase1>>(
        2,
        2,
        &[Event::LockPending, Event::PvWaitNode, Event::PvWaitHead],
    );
}

/// Three threads, patched PV (kick-ahead 1): a waiter behind a sleeping
/// predecessor sleeps early (`pv_wait_early`). Kick-ahead needs a sleeper two
/// places behind the owner that hands over, which three threads taking the
/// lock once cannot form: `qspin_pv_kick_ahead_4` covers it.
#[test]
fn qspin_pv_wait_early_3() {
    model::<RawQSpinLock<Pv0>>(
        3,
        1,
        &[Event::PvWaitEarly, Event::PvWaitNode, Event::PvKickUnlock],
    );
}

/// Four threads, no pending path: the owner that came through the queue makes
/// a sleeping successor head (token, kick at unlock) and kicks ahead the
/// sleeper behind it.
#[test]
fn qspin_pv_kick_ahead_4() {
    model::<RawQSpinLock<PvQ0>>(
        4,
        1,
        &[Event::PvKickAhead, Event::PvWaitNode, Event::PvKickUnlock],
    );
}

#[test]
fn qspin_pv_spin2_2() {
    model::<RawQSpinLock<Pv2>>(2, 2, &[Event::PvWaitNode, Event::PvWaitHead]);
}

#[test]
fn qspin_unfair_claim_3() {
    model::<RawQSpinLock<UnfairClaim>>(3, 1, &[Event::UnfairClaim, Event::UnfairQueued]);
}

#[test]
fn qspin_unfair_steal_2() {
    model::<RawQSpinLock<UnfairSteal>>(2, 2, &[Event::UnfairSteal]);
}

/// Three threads, spin budget 1: a mix of spinning and sleeping paths.
#[test]
fn qspin_pvbase_spin1_3() {
    model::<RawQSpinLock<PvBase1>>(
        3,
        1,
        &[Event::LockPending, Event::PvWaitNode, Event::PvWaitHead],
    );
}

#[test]
fn qspin_unfair_steal_3() {
    model::<RawQSpinLock<UnfairSteal>>(3, 1, &[Event::UnfairSteal, Event::PvWaitNode]);
}

#[test]
fn ticket_pv_2x2() {
    model::<RawTicketLock<PvBase0>>(2, 2, &[Event::TicketSleep, Event::TicketWake]);
}

/// A thread without a node (sleeps on the lock word) beside queued ones.
#[test]
fn qspin_pvbase_no_node_3() {
    model_with::<RawQSpinLock<PvBaseQ0>>(3, 1, true, &[Event::LockNoNode, Event::PvKickUnlock]);
}

#[test]
fn qspin_unfair_no_node_3() {
    model_with::<RawQSpinLock<UnfairClaim>>(3, 1, true, &[Event::LockNoNode, Event::UnfairSteal]);
}

#[test]
fn tas_native_2() {
    model::<RawTasLock<NativeM>>(2, 2, &[]);
}

#[test]
fn ticket_native_2() {
    model::<RawTicketLock<NativeM>>(2, 2, &[]);
}

#[test]
fn ticket_pv_3() {
    model::<RawTicketLock<PvBase0>>(3, 1, &[Event::TicketSleep, Event::TicketWake]);
}

#[test]
fn tas_pv_3() {
    model::<RawTasLock<PvBase0>>(3, 1, &[Event::TasSleep]);
}

//! Loom models of the races behind klock's soundness rules (`docs/soundness.md`):
//! timed mutex waits racing wake-ups and hand-offs, `try_lock` racing the
//! unlock slow path, `unlock_fair`, timed condvar waits racing notifies, the
//! no-node fallbacks, and one queue node used by two primitives in sequence
//! (a qspinlock, then a mutex or condvar wait: the INV-WAKE-ADDR bug fixed in
//! e31284a, where a kick at unlock stored into the successor's node after the
//! release).
//!
//! Run: `.ci/loom --test loom_sound` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//! (as CI does; every model runs at `LOOM_MAX_PREEMPTIONS`, 2 by default;
//! model 8a, four threads, takes most of the time). `--features stats`:
//! each model names the lock events of the branches it claims to cover
//! (hand-off, time-out, no-node fallback, kick at unlock, ...) and fails
//! unless some execution counted each; outcomes seen from outside are
//! counted with `Branch`.
//!
//! The futex is modelled exactly (see `klock::internal::wait`): a waiter nobody wakes
//! blocks forever and loom reports a deadlock, so every model that completes
//! shows the absence of lost wake-ups; loom's `UnsafeCell` checks mutual
//! exclusion; each model also checks its final counts and that the mutex word
//! is 0 (no flag left behind). Under loom `now_ns()` is 0, so a deadline of 1
//! is in the future and every timed futex wait may time out, a choice loom
//! explores both ways. Budgets are loom iterations (tiny tunables). Threads
//! lease their node slot when they start ([`SlotGate`]: slot recycling is
//! invisible to loom).
//!
//! Models 8a and 8b fail on the code before e31284a (a deadlock and a failed
//! assertion, at bound 2) and pass after it.
#![cfg(loom)]

use klock::RawCondvar;
use klock::internal::condvar::RawCondvarInternals as _;
use klock::internal::mutex::RawMutexInternals as _;
use klock::internal::spin::RawQSpinLockInternals as _;
use klock::{RawMutex, SpinOff};
use klock::{RawQSpinLock, SpinToken as Token, WaitPolicy};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::AtomicUsize;
use loom::thread;

mod loom_common;
use klock::stat::Event;
use loom_common::{Branch, Shared, SlotGate, lease, loom_tunables, run_model_reaching, spawn};

/// Runs a model at `LOOM_MAX_PREEMPTIONS` (default 2), capped at `max_bound`,
/// with the tunables of this file (one process: set once), and fails unless
/// every event in `reach` was counted in some execution (the branches the
/// model claims to cover; `--features stats`). The model spawns its threads
/// with [`spawn`] through the [`SlotGate`] it is given; the calling (main)
/// thread has leased its node slot and id first.
fn model(max_bound: usize, reach: &[Event], f: impl Fn(&Arc<SlotGate>) + Sync + Send + 'static) {
    let mut t = loom_tunables();
    // Never hand off by waiting time (loom's clock stays at 0): a woken waiter
    // that fails re-arms and sleeps again through the WAKING rule, which a
    // hand-off would bypass (hand-offs come from `unlock_fair`).
    t.mutex_handoff_ns = 1_000_000_000;
    run_model_reaching(t, max_bound, reach, move || {
        lease();
        f(&Arc::new(SlotGate(AtomicUsize::new(0))))
    });
}

/// This execution's lock events so far, since `since` (a
/// [`klock::stat::thread_snapshot`] taken when the execution began): every
/// model thread runs on the test's OS thread.
fn exec_counts(since: &klock::stat::Snapshot) -> klock::stat::Snapshot {
    klock::stat::thread_snapshot().delta(since)
}

/// The critical section of the counter models.
///
/// # Safety
///
/// The caller holds `s.m`.
unsafe fn bump(s: &Shared<SpinOff>) {
    // SAFETY: `s.m` is held (caller's contract); loom checks that no other
    // access overlaps.
    s.data.with_mut(|p| unsafe { *p += 1 });
}

/// A timed locker: `lock_until_ns(1)` (may time out under loom); on success
/// the critical section and unlock. Returns 1 if it got the lock, else 0.
fn timed_incr(s: &Shared<SpinOff>) -> usize {
    match s.m.lock_until_ns(1) {
        Some(t) => {
            // SAFETY: `t` says we hold the lock.
            unsafe { bump(s) };
            // SAFETY: `t` comes from the lock above and is released once.
            unsafe { s.m.unlock(t) };
            1
        }
        None => 0,
    }
}

/// Models 1 and 2: main holds the mutex, a thread waits with
/// `lock_until_ns(1)`; main releases (`unlock`, or `unlock_fair` with `fair`)
/// and takes the lock again at once. Run twice: with `long`, main yields
/// inside its critical section, so the timed waiter's wait also times out
/// before the release without costing a preemption. Each run reaches a
/// time-out (`mutex_timeout`), with `fair` a hand-off (`mutex_handoff`);
/// both outcomes of the timed lock are reached, and with `fair` an
/// execution where the timed waiter took the lock handed to it.
fn timed_lock_model(fair: bool, got: &'static [Branch; 3]) {
    for long in [false, true] {
        let reach: &[Event] = if fair {
            &[Event::MutexTimeout, Event::MutexHandoff]
        } else {
            &[Event::MutexTimeout]
        };
        model(2, reach, move |g| {
            let c0 = klock::stat::thread_snapshot();
            let s = Arc::new(Shared::<SpinOff>::new());
            let t = s.m.lock();
            let s2 = s.clone();
            let h = spawn(g, move || timed_incr(&s2));
            // SAFETY: `t` says we hold the lock.
            unsafe { bump(&s) };
            if long {
                thread::yield_now();
            }
            if fair {
                // SAFETY: `t` comes from the lock above and is released once.
                unsafe { s.m.unlock_fair(t) };
            } else {
                // SAFETY: `t` comes from the lock above and is released once.
                unsafe { s.m.unlock(t) };
            }
            s.incr();
            let n = h.join().unwrap();
            got[n].hit();
            if n == 1 && exec_counts(&c0).get(Event::MutexHandoff) > 0 {
                got[2].hit();
            }
            assert_eq!(s.get(), 2 + n);
            assert_eq!(s.m.owner_word(), 0);
        });
    }
    got[0].assert_reached("the timed locker timed out");
    got[1].assert_reached("the timed locker got the lock");
    if fair {
        got[2].assert_reached("the timed locker took the lock handed to it");
    }
}

/// Model 1: a timed lock that may time out races the owner's wake-up. Main
/// holds the mutex, a thread waits with `lock_until_ns(1)` (its futex wait may
/// time out before or after the unlock marked it WOKEN and set WAKING for it:
/// `leave_on_timeout` then takes the free lock, or leaves, clearing WAKING);
/// main unlocks and re-locks at once (a steal from the woken waiter). The
/// count is main's two plus the timed locker's success, and no flag is left
/// behind (a WAKING left set would strand later waiters).
#[test]
fn timed_lock_races_wake() {
    static GOT: [Branch; 3] = [Branch::new(), Branch::new(), Branch::new()];
    timed_lock_model(false, &GOT);
}

/// Model 2: as model 1, but main releases with `unlock_fair`, so a hand-off
/// (PICKUP, naming the timed waiter) races its time-out: a waiter that times
/// out after the hand-off must take the lock it was handed (else nobody,
/// main's re-lock included, ever could), one that left before must not get
/// it. One owner at a time (loom's `UnsafeCell`), counts, clean word.
#[test]
fn timed_lock_races_fair_handoff() {
    static GOT: [Branch; 3] = [Branch::new(), Branch::new(), Branch::new()];
    timed_lock_model(true, &GOT);
}

/// Model 3: a timed waiter and a plain waiter (three threads). Main holds the
/// mutex, one thread waits with `lock_until_ns(1)`, one with `lock()`; main
/// unlocks. A woken head that times out must not take the wake-up with it: it
/// clears WAKING (set for it) as it leaves (or takes the lock the wake-up was
/// for), so that the plain waiter is still woken (else loom reports the plain
/// waiter's deadlock). Both outcomes of the timed lock are reached. Not
/// reached here: `leave_on_timeout`'s own wake of the next waiter (a free
/// lock the leaver may not take: a hand-off owed to another waiter; this
/// file's tunables never ask for one).
#[test]
fn timed_and_plain_waiters() {
    static GOT: [Branch; 2] = [Branch::new(), Branch::new()];
    model(2, &[Event::MutexTimeout, Event::MutexSleep], |g| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let t = s.m.lock();
        let s1 = s.clone();
        let timed = spawn(g, move || timed_incr(&s1));
        let s2 = s.clone();
        let plain = spawn(g, move || s2.incr());
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.m.unlock(t) };
        let got = timed.join().unwrap();
        plain.join().unwrap();
        GOT[got].hit();
        assert_eq!(s.get(), 1 + got);
        assert_eq!(s.m.owner_word(), 0);
    });
    GOT[0].assert_reached("the timed waiter timed out");
    GOT[1].assert_reached("the timed waiter got the lock");
}

/// A mutex, a condvar and a flag protected by the mutex.
struct CvShared {
    m: RawMutex<SpinOff>,
    cv: RawCondvar<SpinOff>,
    flag: UnsafeCell<bool>,
}

// SAFETY: `flag` is only accessed while `m` is held (loom checks it).
unsafe impl Sync for CvShared {}

impl CvShared {
    fn new() -> Self {
        CvShared {
            m: RawMutex::new(),
            cv: RawCondvar::new(),
            flag: UnsafeCell::new(false),
        }
    }

    /// # Safety
    ///
    /// The caller holds `m`.
    unsafe fn flag(&self) -> bool {
        // SAFETY: `m` is held (caller's contract).
        self.flag.with(|p| unsafe { *p })
    }

    /// # Safety
    ///
    /// The caller holds `m`.
    unsafe fn set_flag(&self) {
        // SAFETY: `m` is held (caller's contract).
        self.flag.with_mut(|p| unsafe { *p = true });
    }

    /// Notify under the mutex after setting the flag; returns how many waiters
    /// the notify reported. With `long`, yield between the two (a long
    /// critical section: timed waiters may time out meanwhile).
    fn set_and_notify(&self, all: bool, long: bool) -> usize {
        let t = self.m.lock();
        // SAFETY: `t` says we hold `m`.
        unsafe { self.set_flag() };
        if long {
            thread::yield_now();
        }
        let n = if all {
            self.cv.notify_all()
        } else {
            usize::from(self.cv.notify_one())
        };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.m.unlock(t) };
        n
    }

    /// The condvar list is empty (nothing left to notify) and the mutex word
    /// is clean.
    fn check_clean(&self) {
        assert!(!self.cv.notify_one());
        assert_eq!(self.cv.notify_all(), 0);
        assert_eq!(self.m.owner_word(), 0);
    }
}

/// Model 4 (both notify forms): a timed condvar wait races the notify. Run
/// twice: with `long`, the notifier yields between setting the flag and
/// notifying, so the waiter's wait also times out before the notify without
/// costing a preemption. Each run reaches a time-out (`cond_timeout`) and a
/// notify that moves the waiter (`cond_requeue`, notify_all) or wakes it
/// (`cond_wake_one`, notify_one); over both runs, a notify
/// that reports the waiter and a waiter that times out.
fn condvar_timed_wait_races_notify(all: bool, seen: &'static [Branch; 2]) {
    for long in [false, true] {
        condvar_timed_model(all, long, seen);
    }
    seen[0].assert_reached("the notify reported (and woke) the waiter");
    seen[1].assert_reached("the waiter's wait timed out");
}

fn condvar_timed_model(all: bool, long: bool, seen: &'static [Branch; 2]) {
    // notify_all moves the waiter (cond_requeue); notify_one wakes it to
    // re-lock (cond_wake_one).
    let notified = if all {
        Event::CondRequeue
    } else {
        Event::CondWakeOne
    };
    model(2, &[Event::CondTimeout, notified], move |g| {
        let s = Arc::new(CvShared::new());
        let s2 = s.clone();
        let h = spawn(g, move || {
            let s = &*s2;
            let mut t = s.m.lock();
            let mut timed_out = false;
            // Waits that returned without a time-out.
            let mut woken = 0;
            // SAFETY (both `flag` calls): `t` says we hold `m` (the wait
            // re-locks it before returning).
            while !unsafe { s.flag() } {
                // SAFETY: we hold `m` with `t`.
                if unsafe { s.cv.wait_until_ns(&s.m, &mut t, Some(1)) } {
                    timed_out = true;
                    break;
                }
                woken += 1;
            }
            // SAFETY: `t` is the current acquisition of `m`, released once.
            unsafe { s.m.unlock(t) };
            (timed_out, woken)
        });
        let n = s.set_and_notify(all, long);
        let (timed_out, woken) = h.join().unwrap();
        assert!(n <= 1);
        // lock_api's contract: a notify reports a waiter only if it woke one;
        // that waiter's wait then ends by the notify, not by its time-out.
        if n == 1 {
            seen[0].hit();
            assert!(!timed_out, "notify reported a waiter that timed out");
            assert_eq!(woken, 1);
        }
        // The queued path has no spurious wake-ups: a wait that returned
        // without a time-out was notified, and the notify counted it.
        if woken > 0 {
            assert_eq!(n, 1, "a waiter woke but the notify did not count it");
        }
        if timed_out {
            seen[1].hit();
        }
        s.check_clean();
    });
}

/// Model 4a: `wait_until_ns(.., Some(1))` (may time out) racing
/// `notify_one`: if `notify_one` returned `true`, the waiter was woken by it
/// (its wait did not end by time-out); a wait that ended without a time-out
/// was counted by the notify; the list is empty and the mutex clean at the end.
#[test]
fn condvar_timed_wait_races_notify_one() {
    static SEEN: [Branch; 2] = [Branch::new(), Branch::new()];
    condvar_timed_wait_races_notify(false, &SEEN);
}

/// Model 4b: as 4a with `notify_all` (its count is 1 exactly when the waiter
/// was moved by it).
#[test]
fn condvar_timed_wait_races_notify_all() {
    static SEEN: [Branch; 2] = [Branch::new(), Branch::new()];
    condvar_timed_wait_races_notify(true, &SEEN);
}

/// Model 5: `unlock_fair` hands the lock to a sleeping waiter while the
/// releasing thread immediately locks again: main holds, a thread sleeps in
/// `lock()`, main `unlock_fair`s and re-locks. If the waiter was queued
/// (WAITERS set) when main released, the lock was handed to it: its critical
/// section comes before main's second one (it sees the count 1). Counts,
/// mutual exclusion, clean word. Some execution has the waiter queued at
/// the release and hands over.
#[test]
fn unlock_fair_then_relock() {
    static QUEUED: Branch = Branch::new();
    model(2, &[Event::MutexHandoff], |g| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let t = s.m.lock();
        let s2 = s.clone();
        let h = spawn(g, move || {
            let t = s2.m.lock();
            // SAFETY: `t` says we hold the lock.
            let seen = s2.data.with(|p| unsafe { *p });
            // SAFETY: as above.
            unsafe { bump(&s2) };
            // SAFETY: `t` comes from the lock above and is released once.
            unsafe { s2.m.unlock(t) };
            seen
        });
        // SAFETY: `t` says we hold the lock.
        unsafe { bump(&s) };
        // The waiter enqueues (and sets WAITERS) under WLOCK and can leave
        // the list only with the lock, which we hold.
        let queued = s.m.owner_word() & klock::internal::mutex::WAITERS != 0;
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.m.unlock_fair(t) };
        s.incr();
        let seen = h.join().unwrap();
        if queued {
            QUEUED.hit();
            assert_eq!(seen, 1, "unlock_fair did not hand the lock over");
        }
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
    QUEUED.assert_reached("the waiter was queued when main released fairly");
}

/// Model 6: `try_lock` racing the unlock slow path. Main holds; thread B
/// calls `try_lock()` once (on success: increment, unlock); thread C sleeps in
/// `lock()`, so main's unlock goes through `unlock_slow` (WLOCK, WOKEN,
/// WAKING) while B's trylock may take the lock out from under the woken C.
/// Counts, no lost wake-up for C, clean word. B's `try_lock` is shown to
/// succeed in some execution and fail in another, and C to sleep.
#[test]
fn try_lock_races_unlock_slow() {
    static TRY: [Branch; 2] = [Branch::new(), Branch::new()];
    model(2, &[Event::MutexSleep, Event::MutexWake], |g| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let t = s.m.lock();
        let sb = s.clone();
        let b = spawn(g, move || match sb.m.try_lock() {
            Some(t) => {
                // SAFETY: `t` says we hold the lock.
                unsafe { bump(&sb) };
                // SAFETY: `t` comes from try_lock and is released once.
                unsafe { sb.m.unlock(t) };
                1
            }
            None => 0,
        });
        let sc = s.clone();
        let c = spawn(g, move || sc.incr());
        // SAFETY: `t` says we hold the lock.
        unsafe { bump(&s) };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.m.unlock(t) };
        let got = b.join().unwrap();
        c.join().unwrap();
        TRY[got].hit();
        assert_eq!(s.get(), 2 + got);
        assert_eq!(s.m.owner_word(), 0);
    });
    TRY[0].assert_reached("try_lock failed");
    TRY[1].assert_reached("try_lock succeeded");
}

/// Model 7a: the mutex's no-node fallback beside a queued waiter. Main holds;
/// one thread has no queue node (`simulate_no_node`: `wait_unqueued`, polling
/// and yielding on the word), another sleeps on the wait list; main unlocks.
/// The unqueued poller may take the lock from under the woken waiter; the
/// queued waiter must still be woken. Reached: the no-node path and a
/// queued waiter's sleep and wake.
#[test]
fn mutex_no_node_beside_queued_waiter() {
    let reach = [Event::MutexNoNode, Event::MutexSleep, Event::MutexWake];
    model(2, &reach, |g| {
        let s = Arc::new(Shared::<SpinOff>::new());
        let t = s.m.lock();
        let s1 = s.clone();
        let unqueued = spawn(g, move || {
            klock::internal::node::simulate_no_node(true);
            s1.incr();
        });
        let s2 = s.clone();
        let queued = spawn(g, move || s2.incr());
        // SAFETY: `t` says we hold the lock.
        unsafe { bump(&s) };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.m.unlock(t) };
        unqueued.join().unwrap();
        queued.join().unwrap();
        assert_eq!(s.get(), 3);
        assert_eq!(s.m.owner_word(), 0);
    });
}

/// Model 7b: a condvar waiter without a queue node: its wait is "unlock,
/// yield, re-lock" (a spurious wake-up), so it loops on the flag; the notifier
/// sets the flag and notifies. The no-node waiter is never on the list, so
/// `notify_one` reports nobody (`false`: lock_api allows a notify that wakes
/// nobody it can count); no deadlock; clean at the end.
#[test]
fn condvar_no_node_waiter() {
    model(2, &[Event::MutexNoNode, Event::CondWait], |g| {
        let s = Arc::new(CvShared::new());
        let s2 = s.clone();
        let h = spawn(g, move || {
            klock::internal::node::simulate_no_node(true);
            let s = &*s2;
            let mut t = s.m.lock();
            // SAFETY: `t` says we hold `m` (the wait re-locks it).
            while !unsafe { s.flag() } {
                // SAFETY: we hold `m` with `t`.
                unsafe { s.cv.wait(&s.m, &mut t) };
            }
            // SAFETY: `t` is the current acquisition of `m`, released once.
            unsafe { s.m.unlock(t) };
        });
        let n = s.set_and_notify(false, false);
        h.join().unwrap();
        assert_eq!(n, 0, "a no-node waiter is never counted");
        s.check_clean();
    });
}

/// Model 7c: a no-node condvar waiter beside a queued one, `notify_all`. The
/// count is 0 or 1 (0 is allowed while the no-node waiter is registered: its
/// wake-ups may be spurious, so counts are withheld); both waiters finish.
#[test]
fn condvar_no_node_beside_queued_waiter() {
    let reach = [Event::MutexNoNode, Event::CondWait, Event::CondRequeue];
    model(2, &reach, |g| {
        let s = Arc::new(CvShared::new());
        let hs: Vec<_> = [true, false]
            .into_iter()
            .map(|no_node| {
                let s2 = s.clone();
                spawn(g, move || {
                    klock::internal::node::simulate_no_node(no_node);
                    let s = &*s2;
                    let mut t = s.m.lock();
                    // SAFETY: `t` says we hold `m` (the wait re-locks it).
                    while !unsafe { s.flag() } {
                        // SAFETY: we hold `m` with `t`.
                        unsafe { s.cv.wait(&s.m, &mut t) };
                    }
                    // SAFETY: `t` is the current acquisition of `m`, released once.
                    unsafe { s.m.unlock(t) };
                })
            })
            .collect();
        let n = s.set_and_notify(true, false);
        for h in hs {
            h.join().unwrap();
        }
        assert!(n <= 1);
        s.check_clean();
    });
}

// ---------------------------------------------------------------------------
// Model 8: one node, two primitives in sequence.
// ---------------------------------------------------------------------------

/// A sleeping qspinlock policy for model 8: no spinning (spin budget 0), no
/// pending path (the second contender queues), so a queued waiter halts on
/// its node at once and the owner that makes it head marks it HEAD_HALTED and
/// kicks it at unlock.
macro_rules! sleeping_policy {
    ($name:ident, unfair = $u:expr) => {
        struct $name;
        impl klock::internal::spin::Seal for $name {}
        impl WaitPolicy for $name {
            const NAME: &'static str = stringify!($name);
            const PENDING_PATH: bool = false;
            const SLEEP: bool = true;
            const PATCHED: bool = false;
            const UNFAIR: bool = $u;
            fn spin_ns() -> u64 {
                0
            }
            fn ticket_spin_ns() -> u64 {
                0
            }
            fn kick_ahead() -> u32 {
                0
            }
            fn steal_threshold_ns() -> u64 {
                0
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

sleeping_policy!(PvBaseQ0, unfair = false);
sleeping_policy!(UnfairQ0, unfair = true);

/// A qspinlock `s` and a mutex `m`, each with the data it protects, and a
/// condvar for `m`.
struct TwoLocks<P> {
    s: RawQSpinLock<P>,
    s_data: UnsafeCell<usize>,
    m: RawMutex<SpinOff>,
    m_data: UnsafeCell<usize>,
    cv: RawCondvar<SpinOff>,
}

// SAFETY: `s_data` is only accessed while `s` is held, `m_data` while `m` is
// held (loom checks both).
unsafe impl<P> Sync for TwoLocks<P> {}

impl<P: WaitPolicy> TwoLocks<P> {
    fn new() -> Self {
        TwoLocks {
            s: RawQSpinLock::new(),
            s_data: UnsafeCell::new(0),
            m: RawMutex::new(),
            m_data: UnsafeCell::new(0),
            cv: RawCondvar::new(),
        }
    }

    /// # Safety
    ///
    /// The caller holds `s`.
    unsafe fn bump_s(&self) {
        // SAFETY: `s` is held (caller's contract).
        self.s_data.with_mut(|p| unsafe { *p += 1 });
    }

    /// # Safety
    ///
    /// The caller holds `m`.
    unsafe fn bump_m(&self) {
        // SAFETY: `m` is held (caller's contract).
        self.m_data.with_mut(|p| unsafe { *p += 1 });
    }

    /// # Safety
    ///
    /// The caller holds `m`.
    unsafe fn m_data(&self) -> usize {
        // SAFETY: `m` is held (caller's contract).
        self.m_data.with(|p| unsafe { *p })
    }

    /// Take `s`, increment its counter, release it (the token carries a
    /// deferred kick when we made a sleeping successor head).
    fn s_section(&self) {
        let t: Token = self.s.lock();
        // SAFETY: `t` says we hold `s`.
        unsafe { self.bump_s() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.s.unlock(t) };
    }

    /// Take `m`, increment its counter, release it.
    fn m_section(&self) {
        let t = self.m.lock();
        // SAFETY: `t` says we hold `m`.
        unsafe { self.bump_m() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.m.unlock(t) };
    }

    fn s_count(&self) -> usize {
        // SAFETY: called after every other thread was joined: no concurrent
        // access (loom would report one).
        self.s_data.with(|p| unsafe { *p })
    }
}

/// Model 8a (the INV-WAKE-ADDR regression, mutex form). Threads:
///
/// * main: `M.lock(); <spawn H, P, B>; join(H); M.unlock(); M.lock();
///   <yield>; M.unlock()`;
/// * H: `S.lock(); <yield>; S.unlock()`;
/// * P: `S.lock(); S.unlock()`;
/// * B: `S.lock(); S.unlock(); M.lock(); M.unlock()`.
///
/// P queues on S as head and sleeps on the word, B queues behind P and halts
/// on its node. H's unlock wakes P; P takes S and, B being HALTED, marks it
/// HEAD_HALTED and returns B in its token (kick at unlock). The fixed unlock
/// stores B's `Running` before its releasing `fetch_sub`. Before e31284a it
/// stored it after: in between, B could take S, release it and sleep on M's
/// wait list with the same per-thread node (level 0); main's unlock of M
/// marked it WOKEN (and set WAKING) and main re-took M at once; P's stale
/// store then overwrote WOKEN, so B, failing to get M, re-armed without
/// clearing WAKING and slept; main's next unlock saw WAKING and woke nobody:
/// a lost wake-up, which loom reports as a deadlock (found at bound 2: B is
/// preempted between halting and its futex wait, P between its release and
/// its store; the yields are long critical sections). The mutex form needs
/// the re-lock: with a single unlock of M, B finds M free after any wake-up.
fn node_reuse_spin_then_mutex<P: WaitPolicy>() {
    // The path of the bug: B halts on its node (pv_wait_node), P kicks it at
    // unlock (pv_kick_unlock), B sleeps on M's list (mutex_sleep).
    let reach = [Event::PvWaitNode, Event::PvKickUnlock, Event::MutexSleep];
    model(2, &reach, |g| {
        let l = Arc::new(TwoLocks::<P>::new());
        let tm = l.m.lock();
        let lh = l.clone();
        let h = spawn(g, move || {
            let t = lh.s.lock();
            // SAFETY: `t` says we hold `s`.
            unsafe { lh.bump_s() };
            // A long critical section: let the others queue.
            thread::yield_now();
            // SAFETY: `t` comes from the lock above and is released once.
            unsafe { lh.s.unlock(t) };
        });
        let lp = l.clone();
        let p = spawn(g, move || lp.s_section());
        let lb = l.clone();
        let b = spawn(g, move || {
            lb.s_section();
            lb.m_section();
        });
        // SAFETY: `tm` says we hold `m`.
        unsafe { l.bump_m() };
        h.join().unwrap();
        // SAFETY: `tm` comes from the lock above and is released once.
        unsafe { l.m.unlock(tm) };
        // Re-take M at once (a steal while B, woken, has not run yet).
        let tm = l.m.lock();
        // SAFETY: `tm` says we hold `m`.
        unsafe { l.bump_m() };
        // A long critical section.
        thread::yield_now();
        // SAFETY: `tm` comes from the lock above and is released once.
        unsafe { l.m.unlock(tm) };
        p.join().unwrap();
        b.join().unwrap();
        assert_eq!(l.s_count(), 3);
        let t = l.m.lock();
        // SAFETY: `t` says we hold `m`.
        assert_eq!(unsafe { l.m_data() }, 3);
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { l.m.unlock(t) };
        assert_eq!(l.m.owner_word(), 0);
        assert_eq!(l.s.word(), 0);
    });
}

/// Model 8a with the base PV qspinlock.
#[test]
fn node_reuse_pvbase_spin_then_mutex() {
    node_reuse_spin_then_mutex::<PvBaseQ0>();
}

/// Model 8b (the INV-WAKE-ADDR regression, condvar form). Threads:
///
/// * main: `S.lock(); <spawn P, B; yield>; S.unlock(); join(P);
///   M.lock(); flag = true; cv.notify_one(); M.unlock()`;
/// * P: `S.lock(); S.unlock()`;
/// * B: `S.lock(); S.unlock(); M.lock(); if !flag { cv.wait(M);
///   assert!(flag) }; M.unlock()`.
///
/// As in 8a, P makes the halted B head and kicks it at unlock; B may take S
/// and release it as soon as P's release lands, then wait on the condvar with
/// the same node. The queued condvar path has no spurious wake-ups (its
/// `notify_*` counts depend on it), so B's single wait returns only after
/// main's notify, which follows `flag = true`. Before e31284a, P's stale
/// `Running` store into B's node (after its release) replaced B's condvar
/// state, and B's wait loop, which then left on any value but its waiting
/// one, took it for a notify: B returned un-notified (still on the condvar
/// list) and the assertion fails. Found at bound 2, as 8a (main's yield is a
/// long critical section).
fn node_reuse_spin_then_condvar<P: WaitPolicy>() {
    // As 8a, with B's condvar wait (cond_wait) and main's notify waking it.
    let reach = [
        Event::PvWaitNode,
        Event::PvKickUnlock,
        Event::CondWait,
        Event::CondWakeOne,
    ];
    model(2, &reach, |g| {
        let l = Arc::new(TwoLocks::<P>::new());
        let ts = l.s.lock();
        let lp = l.clone();
        let p = spawn(g, move || lp.s_section());
        let lb = l.clone();
        let b = spawn(g, move || {
            lb.s_section();
            let mut t = lb.m.lock();
            // SAFETY (both `m_data` calls): `t` says we hold `m` (the wait
            // re-locks it before returning).
            if unsafe { lb.m_data() } == 0 {
                // SAFETY: we hold `m` with `t`.
                unsafe { lb.cv.wait(&lb.m, &mut t) };
                assert_eq!(
                    unsafe { lb.m_data() },
                    1,
                    "a queued condvar wait returned without a notify"
                );
            }
            // SAFETY: `t` is the current acquisition of `m`, released once.
            unsafe { lb.m.unlock(t) };
        });
        // SAFETY: `ts` says we hold `s`.
        unsafe { l.bump_s() };
        thread::yield_now();
        // SAFETY: `ts` comes from the lock above and is released once.
        unsafe { l.s.unlock(ts) };
        p.join().unwrap();
        let t = l.m.lock();
        // SAFETY: `t` says we hold `m`; the flag is `m_data == 1`.
        unsafe { l.bump_m() };
        let _ = l.cv.notify_one();
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { l.m.unlock(t) };
        b.join().unwrap();
        assert_eq!(l.s_count(), 3);
        assert!(!l.cv.notify_one());
        assert_eq!(l.m.owner_word(), 0);
        assert_eq!(l.s.word(), 0);
    });
}

/// Model 8b with the base PV qspinlock.
#[test]
fn node_reuse_pvbase_spin_then_condvar() {
    node_reuse_spin_then_condvar::<PvBaseQ0>();
}

/// Model 8b with the unfair qspinlock.
#[test]
fn node_reuse_unfair_spin_then_condvar() {
    node_reuse_spin_then_condvar::<UnfairQ0>();
}

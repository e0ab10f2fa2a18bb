//! Loom models of the reader-writer lock (`klock::internal::rwlock`, the rwsem):
//! read/write and write/write exclusion through the wait list, no lost
//! wake-up, the batch grant of queued readers, the hand-off to a waiting
//! writer, downgrade, upgrade, timed reads and writes racing a wake-up, the
//! timed upgrade and the timed upgradable read (lock_api's
//! `RawRwLockUpgradeTimed`, through the inherent `upgrade_until_ns` and
//! `lock_upgradable_until_ns`: the lock_api impls are `not(loom)`), and
//! the reader-preferring reads (glibc's default rwlock kinds: admitted while
//! read-held past a waiting writer, never past a writer that owns the lock,
//! granted when the lock becomes read-owned behind a writer at the head).
//!
//! Run: `.ci/loom --test loom_rwlock` (CI's settings: `--cfg loom`, release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2)
//! (as CI does; not every model runs at that bound: see "Preemption bounds"
//! below). `--features stats`: each model names the lock events of the
//! branches it claims to cover and fails unless some execution counted
//! each; outcomes seen from outside are counted with `Branch`.
//!
//! The futex is modelled exactly (see `klock::internal::wait`): a waiter nobody wakes
//! blocks forever and loom reports a deadlock, so every model that completes
//! shows the absence of lost wake-ups (and of a grant that never completes:
//! INV-GRANT-PIN); loom's `UnsafeCell` checks that no write overlaps another
//! access (read/write and write/write exclusion); every model also checks
//! its final values and that the count word is 0 at the end (no reader
//! count, WAITERS, HANDOFF, UPGRADE or UPGRADING bit left behind). Under
//! loom `now_ns()` is 0, so a deadline of 1 is in the future and every timed
//! futex wait may time out, a choice loom explores both ways.
//!
//! Tunables (one process, so one set for the whole file): tiny spin budgets
//! (loom iterations) and `rwsem_handoff_ns = 0`: since loom's clock stays at
//! 0, a woken first writer that fails its re-try sets HANDOFF at once, so
//! the hand-off grant (`hand_on` passing WRITER in the releasing CAS) is
//! reachable. The price: the path where a woken writer fails, re-arms and
//! sleeps *without* HANDOFF is only reached by writers that are not first
//! here (`loom_rwlock_pref.rs` runs with the default threshold). Reader policy: the
//! default `KLOCK_RWSEM_READER` (4: steal, then wait running within the
//! tiny spin budget). Threads lease their node slot when they start
//! ([`SlotGate`], as in `loom_sound.rs`).
//!
//! Preemption bounds: each model runs at `LOOM_MAX_PREEMPTIONS` (CI: 2)
//! capped at its own bound. At 2 (CI's bound): the two-thread models 1
//! (both policies), 2, 6, 9, 10 and 16, and the three-thread models 8
//! (upgrade with a reader inside; 13 000 executions), 12 (try locks
//! against the unlock slow path; 54 000), 13 (reader-preferring reads past
//! a waiting writer; 120 000, the slowest at about 20 s), 14 (a
//! reader-preferring reader against the hand-off; 24 000), 18 (a timed
//! upgradable read and a writer; 49 000) and 19 (a timed upgradable read
//! leaving with a reader behind it; 2 100). At 1: the
//! three-thread models 3 (three writers), 4 (a reader and a writer queued
//! together), 5 (the batch grant), 7 (downgrade against a writer and a
//! reader), 8b (upgrade against a reader and a writer arriving at any
//! time), 11 (a timed writer at the head with a plain reader), 15 (a
//! reader-preferring reader granted behind a writer) and 17 (a timed
//! upgrade racing a reader inside and one arriving; 5 300 executions; at 2
//! it passes, but explores 609 000 in about 90 s: too slow for CI). At 2
//! none of the others finished within 90 s on this machine (release, debug assertions), and 11
//! exceeded the branch limit (5000 per execution; with 100 000,
//! `three_writers_nospin` did not finish in 15 minutes). Interleavings that
//! need two preemptions among three threads are left to the chaos torture
//! tests, run by `.ci/run` under `--features chaos` with debug assertions:
//! `tests/torture_rwlock.rs` (readers, writers with holds past the hand-off
//! threshold, upgraders and downgraders, each with its try and timed forms,
//! at 16 threads per CPU under injected preemption: models 3, 4, 5, 7, 8b,
//! 11, and 17 with the timed upgrades and timed upgradable reads) and the RwLock part of `tests/torture_mixed.rs`. Neither takes a
//! reader-preferring read (`lock_shared_prefer_readers` and its try and
//! timed forms): model 15's interleavings beyond bound 1 have no torture
//! coverage. The `rwsem-grant-acquire` race these models found is fixed: a
//! contender's grant now acquires the last owner's release.
#![cfg(loom)]

use klock::internal::rwlock::RawRwLockInternals as _;
use klock::stat::Event;
use klock::{
    RawRwLock, SpinOff, SpinOsq, SpinPolicy,
    internal::rwlock::{HANDOFF, WAITERS},
};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

mod loom_common;
use loom_common::{
    Branch, SlotGate, assert_reached, check_counted, lease, loom_tunables, require_stats, spawn,
    until,
};

/// This execution's lock events so far, since `since` (a
/// [`klock::stat::thread_snapshot`] taken when the execution began): every
/// model thread runs on the test's OS thread. All zero without `stats`.
fn exec_counts(since: &klock::stat::Snapshot) -> klock::stat::Snapshot {
    klock::stat::thread_snapshot().delta(since)
}

/// Runs a model at `LOOM_MAX_PREEMPTIONS` (default 2), capped at
/// `max_bound`, with this file's tunables (as `loom_common::run_model`, with
/// a larger branch limit), printing the number of executions and the lock
/// events they counted. Fails unless every event in `reach` was counted in
/// at least one execution (the branches the model claims to cover; needs
/// `--features stats`, as CI builds the loom tests). The model spawns its
/// threads with [`spawn`] through the [`SlotGate`] it is given; the calling
/// (main) thread has leased its node slot and id first.
fn model(
    max_bound: usize,
    reach: &[Event],
    f: impl Fn(&Arc<SlotGate>) + Sync + Send + 'static,
) -> klock::stat::Snapshot {
    require_stats(reach);
    let mut t = loom_tunables();
    // loom's clock is 0: a first writer that fails a re-try asks for the
    // hand-off at once (see the module docs).
    t.rwsem_handoff_ns = 0;
    // Writers spinning on readers: a few loom iterations, not thousands.
    t.rwsem_rspin_ns = 0;
    let _ = klock::tune::set(t);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(2).min(max_bound));
    // Three-thread models pass loom's default of 1000 branch points in one
    // execution (every atomic access and yield is one; WLOCK waits yield).
    b.max_branches = b.max_branches.max(
        std::env::var("LOOM_RW_BRANCHES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5_000),
    );
    let counts = check_counted(b, "loom", move || {
        lease();
        f(&Arc::new(SlotGate(AtomicUsize::new(0))))
    });
    assert_reached(&counts, reach);
    counts
}

/// A rwsem over two fields written together (a torn read shows as `a != b`;
/// loom's `UnsafeCell` reports any write overlapping another access).
struct Rw<S: SpinPolicy> {
    l: RawRwLock<S>,
    a: UnsafeCell<usize>,
    b: UnsafeCell<usize>,
}

// SAFETY: `a` and `b` are written only under the write lock and read only
// under a read (or the write) lock; loom checks it.
unsafe impl<S: SpinPolicy> Sync for Rw<S> {}

impl<S: SpinPolicy> Rw<S> {
    fn new() -> Self {
        Rw {
            l: RawRwLock::new(),
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
        }
    }

    /// Read both fields and check they match.
    ///
    /// # Safety
    ///
    /// The caller holds the lock (read, upgradable or write).
    unsafe fn get(&self) -> usize {
        // SAFETY: the lock is held (caller's contract).
        let a = self.a.with(|p| unsafe { *p });
        // SAFETY: as above.
        let b = self.b.with(|p| unsafe { *p });
        assert_eq!(a, b, "torn read");
        a
    }

    /// Increment both fields (with a scheduling point in between).
    ///
    /// # Safety
    ///
    /// The caller holds the write lock.
    unsafe fn bump(&self) {
        // SAFETY: the write lock is held (caller's contract).
        self.a.with_mut(|p| unsafe { *p += 1 });
        thread::yield_now();
        // SAFETY: as above.
        self.b.with_mut(|p| unsafe { *p += 1 });
    }

    /// Read lock, read, unlock; returns the value read.
    fn read(&self) -> usize {
        self.l.lock_shared();
        // SAFETY: read lock held.
        let v = unsafe { self.get() };
        // SAFETY: taken above, released once.
        unsafe { self.l.unlock_shared() };
        v
    }

    /// Write lock, increment, unlock; returns the value before.
    fn incr(&self) -> usize {
        let t = self.l.lock_exclusive();
        // SAFETY: write lock held.
        let v = unsafe { self.get() };
        // SAFETY: as above.
        unsafe { self.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { self.l.unlock_exclusive(t) };
        v
    }

    /// The final checks of every model: value `n`, count word 0.
    fn check(&self, n: usize) {
        assert_eq!(self.read(), n);
        assert_eq!(self.l.count_word(), 0, "count word not clean");
    }
}

/// Model 1 (both writer spin policies): a writer and a reader. Main writes;
/// a thread reads (fast path, steal, or queued and granted by the write
/// unlock). The reader never sees a torn value and never overlaps the
/// writer (loom's `UnsafeCell`); it comes before the write in some
/// execution and after it in another (`saw`). `reach`: the reader paths
/// each policy is shown to take (without spinning the reader queues and is
/// granted; with the OSQ policy it waits running, KLOCK_RWSEM_READER 4, and
/// steals the lock: it never queues in this model).
fn read_write_exclusion<S: SpinPolicy>(reach: &[Event], saw: &'static [Branch; 2]) {
    model(2, reach, move |g| {
        let s = Arc::new(Rw::<S>::new());
        let s2 = s.clone();
        let h = spawn(g, move || s2.read());
        s.incr();
        // Only 0 and 1 are ever written: the value tells the order.
        saw[h.join().unwrap()].hit();
        s.check(1);
    });
    saw[0].assert_reached("the reader before the writer");
    saw[1].assert_reached("the reader after the writer");
}

#[test]
fn read_write_exclusion_nospin() {
    static SAW: [Branch; 2] = [Branch::new(), Branch::new()];
    read_write_exclusion::<SpinOff>(&[Event::RwSleepReader, Event::RwReadGranted], &SAW);
}

#[test]
fn read_write_exclusion_osq() {
    static SAW: [Branch; 2] = [Branch::new(), Branch::new()];
    read_write_exclusion::<SpinOsq>(&[Event::RwReadSteal], &SAW);
}

/// Model 2: writer/writer exclusion through the wait list, and the
/// hand-off. Main holds the write lock and yields inside its critical
/// section (`bump`: a scheduling point that costs no preemption), so a second
/// writer queues and the unlock slow path wakes it; main then re-locks at once
/// (a steal from the woken writer, which then fails its re-try and, being
/// first, sets HANDOFF). If main sees HANDOFF while it holds the lock the
/// second time, its unlock must grant the lock to the waiting writer in the
/// releasing CAS (`hand_on`): from then on the word never shows HANDOFF
/// again (the grant clears it; a release that only woke the writer would
/// leave `(0,W|H|K)` until the writer's re-try), and main's third critical
/// section sees that writer's increment (HANDOFF keeps main out). Some
/// execution must see HANDOFF and hand over (`mutex_handoff` also counts
/// the rwsem's hand-off grant).
#[test]
fn writers_queue_and_handoff() {
    static HANDOFF_SEEN: Branch = Branch::new();
    model(2, &[Event::RwHandoff, Event::RwHandedOff], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s2 = s.clone();
        let h = spawn(g, move || s2.incr());
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        let t = s.l.lock_exclusive();
        // SAFETY: write lock held.
        unsafe { s.bump() };
        let handoff = s.l.count_word() & HANDOFF != 0;
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        if handoff {
            HANDOFF_SEEN.hit();
            assert_eq!(
                s.l.count_word() & HANDOFF,
                0,
                "HANDOFF was set but the unlock released without handing over"
            );
        }
        let before = s.incr();
        if handoff {
            assert_eq!(
                before, 3,
                "HANDOFF was set but the unlock did not hand over"
            );
        }
        h.join().unwrap();
        s.check(4);
    });
    HANDOFF_SEEN.assert_reached("main saw HANDOFF before its unlock");
}

/// Model 3: three writers (no spinning), nothing forced: two may sleep on
/// the list at once, wakes go to the head one at a time, hand-offs after a
/// failed re-try. Exclusion (loom), every writer finishes, count 3; some
/// execution sleeps, sets HANDOFF and hands the lock over.
#[test]
fn three_writers_nospin() {
    let reach = [Event::RwSleepWriter, Event::RwHandoff, Event::RwHandedOff];
    model(1, &reach, |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                spawn(g, move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        s.check(3);
    });
}

/// Model 4: no lost wake-up with both classes queued. Main holds the write
/// lock; a reader and a writer arrive (either may queue first, or steal
/// after the unlock); main unlocks. Everybody finishes (loom reports a
/// waiter nobody wakes as a deadlock); the reader sees 1 or 2, untorn.
/// Both classes are shown to sleep and the reader to be granted.
#[test]
fn writer_reader_writer_no_lost_wakeup() {
    let reach = [
        Event::RwSleepReader,
        Event::RwSleepWriter,
        Event::RwReadGranted,
    ];
    model(1, &reach, |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let r = spawn(g, move || s1.read());
        let s2 = s.clone();
        let w = spawn(g, move || s2.incr());
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        let v = r.join().unwrap();
        w.join().unwrap();
        assert!(v == 1 || v == 2, "reader saw {v}");
        s.check(2);
    });
}

/// Model 5: the batch grant. Main holds the write lock (yielding inside it,
/// so readers queue); two readers arrive; main unlocks. Each reader, once in, waits
/// (still holding) until both are in: so both must be able to hold the read
/// lock at once (both queued: one wake-up grants both; one queued, one
/// late: the late one gets in beside the granted one). A grant of one
/// reader at a time, or a lost grant, deadlocks. Both cases are reached:
/// some execution grants both readers in one RMW (`rwsem_rlock_grant_batch`),
/// some has no batch.
#[test]
fn reader_batch_grant() {
    static NO_BATCH: Branch = Branch::new();
    model(1, &[Event::RwReadGrantBatch], |g| {
        let c0 = klock::stat::thread_snapshot();
        let s = Arc::new(Rw::<SpinOff>::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let t = s.l.lock_exclusive();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (s, inside) = (s.clone(), inside.clone());
                spawn(g, move || {
                    s.l.lock_shared();
                    // SAFETY: read lock held.
                    let v = unsafe { s.get() };
                    inside.fetch_add(1, Ordering::SeqCst);
                    until(&inside, 2);
                    // SAFETY: taken above, released once.
                    unsafe { s.l.unlock_shared() };
                    v
                })
            })
            .collect();
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        for h in hs {
            assert_eq!(h.join().unwrap(), 1);
        }
        s.check(1);
        if exec_counts(&c0).get(Event::RwReadGrantBatch) == 0 {
            NO_BATCH.hit();
        }
    });
    NO_BATCH.assert_reached("both readers in without a batch grant");
}

/// Model 6: downgrade admits a queued reader. Main holds the write lock
/// (yielding inside it, so the reader queues), writes, downgrades; the reader must get in
/// while main still holds its (downgraded) read lock: main waits, holding
/// it, until the reader has been in. The reader sees main's write. Some
/// execution has the reader queued (asleep) and granted.
#[test]
fn downgrade_admits_queued_reader() {
    model(2, &[Event::RwSleepReader, Event::RwReadGranted], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let seen = Arc::new(AtomicUsize::new(0));
        let t = s.l.lock_exclusive();
        let (s2, seen2) = (s.clone(), seen.clone());
        let h = spawn(g, move || {
            s2.l.lock_shared();
            // SAFETY: read lock held.
            let v = unsafe { s2.get() };
            seen2.store(1, Ordering::SeqCst);
            // SAFETY: taken above, released once.
            unsafe { s2.l.unlock_shared() };
            v
        });
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.downgrade(t) };
        until(&seen, 1);
        // SAFETY: read lock held (downgraded).
        assert_eq!(unsafe { s.get() }, 1);
        // SAFETY: the downgraded read lock, released once.
        unsafe { s.l.unlock_shared() };
        assert_eq!(h.join().unwrap(), 1);
        s.check(1);
    });
}

/// Model 7: downgrade excludes writers. Main writes, downgrades, and reads
/// under the downgraded lock: still its own value (no writer got in between:
/// the value and loom's `UnsafeCell`). A writer and a reader contend
/// meanwhile (queued or not: some execution has each asleep); both finish;
/// the reader sees 1 or 2.
#[test]
fn downgrade_excludes_writer() {
    model(1, &[Event::RwSleepReader, Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let s2 = s.clone();
        let r = spawn(g, move || s2.read());
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.downgrade(t) };
        // SAFETY: read lock held (downgraded).
        assert_eq!(
            unsafe { s.get() },
            1,
            "a writer got in under a downgraded lock"
        );
        // SAFETY: the downgraded read lock, released once.
        unsafe { s.l.unlock_shared() };
        assert_eq!(w.join().unwrap(), 1);
        let v = r.join().unwrap();
        assert!(v == 1 || v == 2, "reader saw {v}");
        s.check(2);
    });
}

/// Model 8: upgrade waits for the other readers. Main takes an upgradable
/// read lock; a plain reader gets in beside it (flagging while it holds) and
/// says so; main waits for that, then lets a writer contend and upgrades
/// while the reader may still hold: the upgrade must wait (some execution
/// is shown to sleep in it, `rwsem_upgrade_wait`) and returns only when the
/// reader is out (flag clear); the writer never overlaps main's upgraded
/// write or the reader (loom's `UnsafeCell`). Main holds the upgradable
/// lock from the start (it excludes writers), so the writer comes after
/// main's write and sees 1.
#[test]
fn upgrade_waits_for_reader() {
    model(2, &[Event::RwUpgradeWait], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let reading = Arc::new(AtomicBool::new(false));
        let inside = Arc::new(AtomicUsize::new(0));
        s.l.lock_upgradable();
        let (s1, reading1, in1) = (s.clone(), reading.clone(), inside.clone());
        let r = spawn(g, move || {
            s1.l.lock_shared();
            reading1.store(true, Ordering::SeqCst);
            in1.fetch_add(1, Ordering::SeqCst);
            // SAFETY: read lock held.
            let v = unsafe { s1.get() };
            reading1.store(false, Ordering::SeqCst);
            // SAFETY: taken above, released once.
            unsafe { s1.l.unlock_shared() };
            v
        });
        until(&inside, 1);
        let s2 = s.clone();
        let w = spawn(g, move || s2.incr());
        // SAFETY: upgradable lock held.
        assert_eq!(unsafe { s.get() }, 0);
        // SAFETY: we hold the upgradable lock.
        let t = unsafe { s.l.upgrade() };
        assert!(
            !reading.load(Ordering::SeqCst),
            "upgrade returned while a reader held the lock"
        );
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the upgrade above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        // Main held the lock (upgradable) before the writer could start.
        assert_eq!(w.join().unwrap(), 1);
        assert_eq!(r.join().unwrap(), 0, "the reader was in before main wrote");
        s.check(2);
    });
}

/// Model 8b: an upgrade racing a reader and a writer that arrive at any
/// time (the reader may be admitted beside the upgradable lock, queue
/// behind the writer, or come after the upgrade). At bound 1 no execution
/// has the reader inside while the upgrade starts (model 8 forces that);
/// this one covers the arrivals around it. Exclusion (loom's `UnsafeCell`),
/// no lost wake-up, the writer after main's write, counts.
#[test]
fn upgrade_races_reader_and_writer() {
    model(1, &[Event::RwSleepReader, Event::RwSleepWriter], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        s.l.lock_upgradable();
        let s1 = s.clone();
        let r = spawn(g, move || s1.read());
        let s2 = s.clone();
        let w = spawn(g, move || s2.incr());
        // SAFETY: upgradable lock held.
        assert_eq!(unsafe { s.get() }, 0);
        // SAFETY: we hold the upgradable lock.
        let t = unsafe { s.l.upgrade() };
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the upgrade above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        // Main held the lock (upgradable) before the writer could start.
        assert_eq!(w.join().unwrap(), 1);
        // Any of 0, 1, 2 (before, between or after the writes); untorn.
        let _ = r.join().unwrap();
        s.check(2);
    });
}

/// A timed read (`lock_shared_until_ns(1)`: may time out under loom);
/// `Some(value)` if it got the lock.
fn timed_read<S: SpinPolicy>(s: &Rw<S>) -> Option<usize> {
    s.l.lock_shared_until_ns(1).then(|| {
        // SAFETY: read lock held.
        let v = unsafe { s.get() };
        // SAFETY: taken above, released once.
        unsafe { s.l.unlock_shared() };
        v
    })
}

/// A timed write (`lock_exclusive_until_ns(1)`); `Some(value before)` if it
/// got the lock.
fn timed_incr<S: SpinPolicy>(s: &Rw<S>) -> Option<usize> {
    s.l.lock_exclusive_until_ns(1).map(|t| {
        // SAFETY: write lock held.
        let v = unsafe { s.get() };
        // SAFETY: as above.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        v
    })
}

/// Model 9: a timed read races the write unlock's grant. Main holds the
/// write lock; a thread reads with a deadline (its futex wait may time out
/// before or after the grant selected it: `leave` then takes the grant, or
/// leaves the list); main unlocks and writes again at once. Run twice: with
/// `long`, main yields in its critical section (the time-out also comes
/// before the unlock). The timed reader sees 1 or 2 if it got in. Each run
/// reaches both ends of the race: a time-out that leaves the list
/// (`rwsem_timeout`) and one that finds itself already selected and takes
/// the grant (`rwsem_timeout_granted`); and both outcomes, in and out.
#[test]
fn timed_read_races_grant() {
    static GOT: Branch = Branch::new();
    static OUT: Branch = Branch::new();
    for long in [false, true] {
        model(2, &[Event::RwTimeout, Event::RwTimeoutGranted], move |g| {
            let s = Arc::new(Rw::<SpinOff>::new());
            let t = s.l.lock_exclusive();
            let s2 = s.clone();
            let h = spawn(g, move || timed_read(&s2));
            // SAFETY: write lock held.
            unsafe { s.bump() };
            if long {
                thread::yield_now();
            }
            // SAFETY: `t` comes from the lock above and is released once.
            unsafe { s.l.unlock_exclusive(t) };
            s.incr();
            if let Some(v) = h.join().unwrap() {
                GOT.hit();
                assert!(v == 1 || v == 2, "timed reader saw {v}");
            } else {
                OUT.hit();
            }
            s.check(2);
        });
    }
    GOT.assert_reached("the timed reader got in");
    OUT.assert_reached("the timed reader timed out");
}

/// Model 10: a timed write races the last reader's wake-up (and, with
/// HANDOFF, a grant). Main holds a read lock; a thread writes with a
/// deadline; main unlocks and reads again at once. Run with and without
/// `long` as model 9. The final value is the timed writer's success. Each
/// run reaches the hand-off (HANDOFF set, the lock handed over) and a
/// time-out that leaves the list; with `long`, also a time-out that finds
/// the hand-off grant already made and takes it. Both outcomes are reached.
#[test]
fn timed_write_races_wake() {
    static GOT: Branch = Branch::new();
    static OUT: Branch = Branch::new();
    for long in [false, true] {
        let mut reach = vec![Event::RwHandoff, Event::RwHandedOff, Event::RwTimeout];
        if long {
            reach.push(Event::RwTimeoutGranted);
        }
        model(2, &reach, move |g| {
            let s = Arc::new(Rw::<SpinOff>::new());
            s.l.lock_shared();
            let s2 = s.clone();
            let h = spawn(g, move || timed_incr(&s2));
            if long {
                thread::yield_now();
            }
            // SAFETY: taken above, released once.
            unsafe { s.l.unlock_shared() };
            let _ = s.read();
            let got = h.join().unwrap();
            // Only the timed writer writes: its `before` is 0 and main's
            // read 0 or 1 whatever the lock does (untorn: `get`); the final
            // value must match its success.
            if got.is_some() {
                GOT.hit();
            } else {
                OUT.hit();
            }
            s.check(usize::from(got.is_some()));
        });
    }
    GOT.assert_reached("the timed writer got in");
    OUT.assert_reached("the timed writer timed out");
}

/// Model 11: a timed writer at the head must not strand a reader queued
/// behind it. Main holds the write lock; a timed writer and a plain reader
/// arrive; main unlocks. If the timed writer leaves (time-out) while the
/// reader waits behind it, its leaving must pass the turn on (clearing its
/// HANDOFF and WAITERS as needed), else loom reports the reader's deadlock.
/// Reached: a timed writer that gives up in an execution where the reader
/// slept on the list, and one that took a grant after its time-out.
#[test]
fn timed_writer_and_plain_reader() {
    static LEFT_BEFORE_READER: Branch = Branch::new();
    let reach = [
        Event::RwTimeout,
        Event::RwTimeoutGranted,
        Event::RwSleepReader,
    ];
    model(1, &reach, |g| {
        let c0 = klock::stat::thread_snapshot();
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let w = spawn(g, move || timed_incr(&s1));
        let s2 = s.clone();
        let r = spawn(g, move || s2.read());
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        let got = w.join().unwrap();
        let v = r.join().unwrap();
        if let Some(before) = got {
            assert_eq!(before, 1);
        } else if exec_counts(&c0).get(Event::RwSleepReader) > 0 {
            LEFT_BEFORE_READER.hit();
        }
        assert!(v >= 1 && v <= 1 + usize::from(got.is_some()));
        s.check(1 + usize::from(got.is_some()));
    });
    LEFT_BEFORE_READER.assert_reached("the timed writer gave up while the reader slept");
}

/// Model 12: `try_lock_shared` and `try_lock_exclusive` racing the unlock
/// slow path. Main holds the write lock (yielding, so a writer queues); a second
/// thread tries a read and then a write once each; main unlocks (waking or
/// handing over to the queued writer). No overlap, no lost wake-up, counts.
/// Each try is shown to succeed in some execution and fail in another, and
/// some execution hands over.
#[test]
fn try_locks_race_unlock_slow() {
    static TRIES: [Branch; 4] = [Branch::new(), Branch::new(), Branch::new(), Branch::new()];
    model(2, &[Event::RwHandedOff], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let s2 = s.clone();
        let tr = spawn(g, move || {
            if s2.l.try_lock_shared() {
                TRIES[0].hit();
                // SAFETY: read lock held.
                let v = unsafe { s2.get() };
                assert!(v >= 1);
                // SAFETY: taken above, released once.
                unsafe { s2.l.unlock_shared() };
            } else {
                TRIES[1].hit();
            }
            match s2.l.try_lock_exclusive() {
                Some(t) => {
                    TRIES[2].hit();
                    // SAFETY: write lock held.
                    unsafe { s2.bump() };
                    // SAFETY: `t` comes from the lock above, released once.
                    unsafe { s2.l.unlock_exclusive(t) };
                    1
                }
                None => {
                    TRIES[3].hit();
                    0
                }
            }
        });
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        w.join().unwrap();
        let got = tr.join().unwrap();
        s.check(2 + got);
    });
    for (b, what) in TRIES.iter().zip([
        "try_lock_shared succeeded",
        "try_lock_shared failed",
        "try_lock_exclusive succeeded",
        "try_lock_exclusive failed",
    ]) {
        b.assert_reached(what);
    }
}

// ---------------------------------------------------------------------------
// Reader-preferring reads (glibc's default rwlock kinds; INV-PREFQ)
// ---------------------------------------------------------------------------

impl<S: SpinPolicy> Rw<S> {
    /// Reader-preferring read lock, read, unlock; returns the value read.
    fn read_pref(&self) -> usize {
        self.l.lock_shared_prefer_readers();
        // SAFETY: read lock held.
        let v = unsafe { self.get() };
        // SAFETY: taken above, released once.
        unsafe { self.l.unlock_shared() };
        v
    }
}

/// Model 13: a reader-preferring reader is admitted while the lock is
/// read-held with a writer waiting, by all three calls. Main holds a read
/// lock until the reader says it is done; a writer arrives (it may queue,
/// fail its re-try and set HANDOFF: `rwsem_handoff_ns` is 0 here); the
/// reader's try and timed (deadline 1: its futex waits may time out) calls
/// must succeed, and its blocking call must get in while main still holds
/// the lock (main waits for it: a reader queued behind the writer would
/// deadlock, which loom reports). Exclusion against the writer (loom's
/// `UnsafeCell`); the writer gets in after both readers left.
#[test]
fn pref_reader_passes_waiting_writer() {
    static PAST_WAITER: Branch = Branch::new();
    static PAST_HANDOFF: Branch = Branch::new();
    model(2, &[Event::RwSleepWriter, Event::RwHandoff], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let inside = Arc::new(AtomicUsize::new(0));
        s.l.lock_shared();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let (s2, in2) = (s.clone(), inside.clone());
        let r = spawn(g, move || {
            // The writer cannot leave the list while main read-holds: what
            // this shows stays true across the calls below.
            let c = s2.l.count_word();
            if c & WAITERS != 0 {
                PAST_WAITER.hit();
            }
            if c & HANDOFF != 0 {
                PAST_HANDOFF.hit();
            }
            assert!(
                s2.l.try_lock_shared_prefer_readers(),
                "try refused while read-held"
            );
            // SAFETY: read lock held.
            assert_eq!(unsafe { s2.get() }, 0);
            // SAFETY: taken above, released once.
            unsafe { s2.l.unlock_shared() };
            assert!(
                s2.l.lock_shared_prefer_readers_until_ns(1),
                "timed read refused while read-held"
            );
            // SAFETY: read lock held.
            assert_eq!(unsafe { s2.get() }, 0);
            // SAFETY: taken above, released once.
            unsafe { s2.l.unlock_shared() };
            let v = s2.read_pref();
            in2.fetch_add(1, Ordering::SeqCst);
            v
        });
        until(&inside, 1);
        // SAFETY: main's read lock, taken above, released once.
        unsafe { s.l.unlock_shared() };
        assert_eq!(r.join().unwrap(), 0, "the reader got in before main left");
        w.join().unwrap();
        s.check(1);
    });
    PAST_WAITER.assert_reached("the reader's calls with the writer queued (WAITERS)");
    PAST_HANDOFF.assert_reached("the reader's calls with HANDOFF set");
}

/// Model 14: a reader-preferring reader races the hand-off to a waiting
/// writer. Main holds a read lock; a writer queues (and may set HANDOFF);
/// main unlocks (handing the lock to the writer, or waking it) while a
/// reader-preferring reader arrives. The reader must never join the lock
/// the writer now owns (loom's `UnsafeCell`; untorn), and nobody is left
/// asleep (a lost wake-up is a loom deadlock). The reader comes before the
/// writer in some execution and after it in another.
#[test]
fn pref_reader_races_handoff() {
    static SAW: [Branch; 2] = [Branch::new(), Branch::new()];
    model(2, &[Event::RwHandoff, Event::RwHandedOff], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        s.l.lock_shared();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let s2 = s.clone();
        let r = spawn(g, move || s2.read_pref());
        // SAFETY: main's read lock, taken above, released once.
        unsafe { s.l.unlock_shared() };
        // Only 0 and 1 are ever written: the value tells the order.
        SAW[r.join().unwrap()].hit();
        w.join().unwrap();
        s.check(1);
    });
    SAW[0].assert_reached("the reader before the writer");
    SAW[1].assert_reached("the reader after the writer");
}

/// Model 15: a reader-preferring reader queued behind a writer at the head
/// is granted the lock once it becomes read-owned (INV-PREFQ). Main holds
/// the write lock; a writer and a reader-preferring reader R arrive (R may
/// queue behind the writer); main unlocks and takes a reader-preferring
/// read lock itself. R and main each wait, holding their read lock, until
/// both are in: if R stayed queued behind the writer while main read-holds
/// the lock, loom reports the deadlock (glibc's default kind admits R).
#[test]
fn pref_reader_granted_behind_writer() {
    model(1, &[Event::RwReadGrantedPref], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let t = s.l.lock_exclusive();
        let s1 = s.clone();
        let w = spawn(g, move || s1.incr());
        let (s2, in2) = (s.clone(), inside.clone());
        let r = spawn(g, move || {
            s2.l.lock_shared_prefer_readers();
            // SAFETY: read lock held.
            let v = unsafe { s2.get() };
            in2.fetch_add(1, Ordering::SeqCst);
            until(&in2, 2);
            // SAFETY: taken above, released once.
            unsafe { s2.l.unlock_shared() };
            v
        });
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        s.l.lock_shared_prefer_readers();
        // SAFETY: read lock held.
        let mine = unsafe { s.get() };
        inside.fetch_add(1, Ordering::SeqCst);
        until(&inside, 2);
        // SAFETY: taken above, released once.
        unsafe { s.l.unlock_shared() };
        let v = r.join().unwrap();
        w.join().unwrap();
        assert!(
            mine >= 1 && v >= 1 && mine == v,
            "readers saw {mine} and {v}"
        );
        s.check(2);
    });
}

/// Model 16: a timed reader-preferring read races the write unlock's grant
/// (as model 9: its futex wait may time out before or after the grant
/// selected it). Main holds the write lock, unlocks, writes again.
#[test]
fn pref_timed_read_races_grant() {
    static GOT: Branch = Branch::new();
    static OUT: Branch = Branch::new();
    model(2, &[Event::RwTimeout, Event::RwTimeoutGranted], |g| {
        let s = Arc::new(Rw::<SpinOff>::new());
        let t = s.l.lock_exclusive();
        let s2 = s.clone();
        let h = spawn(g, move || {
            s2.l.lock_shared_prefer_readers_until_ns(1).then(|| {
                // SAFETY: read lock held.
                let v = unsafe { s2.get() };
                // SAFETY: taken above, released once.
                unsafe { s2.l.unlock_shared() };
                v
            })
        });
        // SAFETY: write lock held.
        unsafe { s.bump() };
        // SAFETY: `t` comes from the lock above and is released once.
        unsafe { s.l.unlock_exclusive(t) };
        s.incr();
        if let Some(v) = h.join().unwrap() {
            GOT.hit();
            assert!(v == 1 || v == 2, "timed reader saw {v}");
        } else {
            OUT.hit();
        }
        s.check(2);
    });
    GOT.assert_reached("the timed reader got in");
    OUT.assert_reached("the timed reader timed out");
}

/// Model 17: a timed upgrade (`upgrade_until_ns(1)`: its futex wait on the
/// count word may time out) races a reader inside and a reader arriving
/// while UPGRADING stops new readers. Main holds the upgradable lock; R1
/// takes a read lock (main waits until it has entered) and leaves; R2 reads
/// at any time. If the upgrade gives up, the word must be as if it had
/// never tried (no UPGRADING; still upgradable) and R2, which may have
/// queued behind UPGRADING, must get in while main still holds the
/// upgradable lock (`cancel_upgrade` passes the turn: without that, main's
/// wait below spins forever and loom fails). If the upgrade succeeds, no
/// reader overlaps main's write (loom's `UnsafeCell`). Reached: an upgrade
/// that slept (`rwsem_upgrade_wait`) and one that gave up
/// (`rwsem_timeout`); both outcomes; a give-up in an execution where R2
/// slept on the list.
#[test]
fn timed_upgrade_races_readers() {
    static GOT: Branch = Branch::new();
    static OUT: Branch = Branch::new();
    static OUT_R2_SLEPT: Branch = Branch::new();
    model(
        1,
        &[Event::RwUpgradeWait, Event::RwTimeout, Event::RwSleepReader],
        |g| {
            let c0 = klock::stat::thread_snapshot();
            let s = Arc::new(Rw::<SpinOff>::new());
            let entered = Arc::new(AtomicUsize::new(0));
            let r2_done = Arc::new(AtomicUsize::new(0));
            s.l.lock_upgradable();
            let (s1, e1) = (s.clone(), entered.clone());
            let r1 = spawn(g, move || {
                s1.l.lock_shared();
                e1.fetch_add(1, Ordering::SeqCst);
                // Hold the lock across a scheduling point: the upgrade may
                // start (and time out) while we are inside.
                thread::yield_now();
                // SAFETY: read lock held.
                let v = unsafe { s1.get() };
                // SAFETY: taken above, released once.
                unsafe { s1.l.unlock_shared() };
                v
            });
            let (s2, d2) = (s.clone(), r2_done.clone());
            let r2 = spawn(g, move || {
                let v = s2.read();
                d2.fetch_add(1, Ordering::SeqCst);
                v
            });
            until(&entered, 1);
            // SAFETY: we hold the upgradable lock.
            match unsafe { s.l.upgrade_until_ns(1) } {
                Some(t) => {
                    GOT.hit();
                    // SAFETY: write lock held.
                    unsafe { s.bump() };
                    // SAFETY: `t` comes from the upgrade above, released once.
                    unsafe { s.l.unlock_exclusive(t) };
                }
                None => {
                    OUT.hit();
                    let c = s.l.count_word();
                    assert_eq!(
                        c & (klock::internal::rwlock::UPGRADING | klock::internal::rwlock::WRITER),
                        0,
                        "a timed-out upgrade left {c:#x}"
                    );
                    assert_ne!(
                        c & klock::internal::rwlock::UPGRADE,
                        0,
                        "no longer upgradable"
                    );
                    // R2 must get in beside our upgradable lock.
                    until(&r2_done, 1);
                    if exec_counts(&c0).get(Event::RwSleepReader) > 0 {
                        OUT_R2_SLEPT.hit();
                    }
                    // SAFETY: we still hold the upgradable lock.
                    unsafe { s.l.unlock_upgradable() };
                }
            }
            assert_eq!(r1.join().unwrap(), 0, "R1 entered before the upgrade");
            let v2 = r2.join().unwrap();
            let n = s.read();
            assert!(v2 <= n, "R2 saw {v2}, final {n}");
            s.check(n);
        },
    );
    GOT.assert_reached("the timed upgrade got the write lock");
    OUT.assert_reached("the timed upgrade gave up");
    OUT_R2_SLEPT.assert_reached("the upgrade gave up while R2 slept on the list");
}

/// Model 18: a timed upgradable read (`lock_upgradable_until_ns(1)`)
/// queued with a writer behind the upgradable lock main holds. Main
/// releases it; the release wakes the head (WAKING). The timed upgrader may
/// time out before or after that wake: a woken one re-tries in `leave`
/// (`take_queued`) and takes the lock rather than dropping the wake-up; one
/// that gives up first leaves the list. Either way the writer is not
/// stranded (loom reports its deadlock otherwise). No overlap between the
/// writer and either upgradable reader (loom's `UnsafeCell`), final value
/// 1, word clean. Reached: a give-up (`rwsem_timeout`) in an execution
/// where the writer slept; both outcomes.
#[test]
fn timed_upgradable_read_and_writer() {
    static GOT: Branch = Branch::new();
    static OUT_W_SLEPT: Branch = Branch::new();
    model(2, &[Event::RwTimeout, Event::RwSleepWriter], |g| {
        let c0 = klock::stat::thread_snapshot();
        let s = Arc::new(Rw::<SpinOff>::new());
        s.l.lock_upgradable();
        let s1 = s.clone();
        let u = spawn(g, move || {
            s1.l.lock_upgradable_until_ns(1).then(|| {
                // SAFETY: upgradable lock held.
                let v = unsafe { s1.get() };
                // SAFETY: taken above, released once.
                unsafe { s1.l.unlock_upgradable() };
                v
            })
        });
        let s2 = s.clone();
        let w = spawn(g, move || s2.incr());
        // SAFETY: upgradable lock held.
        assert_eq!(unsafe { s.get() }, 0);
        // SAFETY: taken above, released once.
        unsafe { s.l.unlock_upgradable() };
        let got = u.join().unwrap();
        assert_eq!(w.join().unwrap(), 0);
        match got {
            Some(v) => {
                GOT.hit();
                assert!(v <= 1, "timed upgrader saw {v}");
            }
            None if exec_counts(&c0).get(Event::RwSleepWriter) > 0 => OUT_W_SLEPT.hit(),
            None => {}
        }
        s.check(1);
    });
    GOT.assert_reached("the timed upgradable read got in");
    OUT_W_SLEPT.assert_reached("the timed upgradable read gave up while the writer slept");
}

/// Model 19: a timed upgradable read gives up while the lock stays
/// read-owned, with a reader queued behind it. Main holds the upgradable
/// lock (so the timed upgrader U must time out: main releases only after
/// joining it); a plain reader R arrives at any time and may queue behind U
/// (the read fast path fails on WAITERS). When U leaves, R heads the list of
/// a read-owned lock and must be granted at once (`leave` passes the turn):
/// main waits for R before it releases, so a turn not passed on spins main
/// forever and loom fails. Reached: U's give-up (`rwsem_timeout`) in an
/// execution where R slept on the list and was granted.
#[test]
fn timed_upgradable_read_leaves_reader_behind() {
    static R_SLEPT: Branch = Branch::new();
    model(2, &[Event::RwTimeout, Event::RwSleepReader], |g| {
        let c0 = klock::stat::thread_snapshot();
        let s = Arc::new(Rw::<SpinOff>::new());
        let r_done = Arc::new(AtomicUsize::new(0));
        s.l.lock_upgradable();
        let s1 = s.clone();
        let u = spawn(g, move || s1.l.lock_upgradable_until_ns(1));
        let (s2, d2) = (s.clone(), r_done.clone());
        let r = spawn(g, move || {
            let v = s2.read();
            d2.fetch_add(1, Ordering::SeqCst);
            v
        });
        assert!(!u.join().unwrap(), "main still holds the upgradable lock");
        until(&r_done, 1);
        if exec_counts(&c0).get(Event::RwSleepReader) > 0 {
            R_SLEPT.hit();
        }
        // SAFETY: taken above, released once.
        unsafe { s.l.unlock_upgradable() };
        assert_eq!(r.join().unwrap(), 0);
        s.check(0);
    });
    R_SLEPT.assert_reached("the reader queued behind the timed upgrader and was granted");
}

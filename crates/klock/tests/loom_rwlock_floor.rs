//! Loom models of the floor rwlock
//! (`klock::internal::rwlock::RawRwLockFloorOf<PHASED>`: a state word with
//! the reader count in bits 0-28, all ones = write-locked, bit 29
//! UPGRADABLE, bit 30 READERS_WAITING, bit 31 WRITERS_WAITING, a
//! `writer_notify` word writers sleep on and an `upgrade_notify` word an
//! upgrading reader sleeps on; see `crates/klock/src/rwlock/floor/`), both
//! variants: `RawRwLockFloor` (`PHASED = false`, std's futex rwlock
//! protocol) and `RawRwLockPhased` (`PHASED = true`, with turns: a read
//! release that leaves the lock free with WRITERS_WAITING keeps the bit
//! while it wakes one writer, the woken writer's reservation; a write
//! release with READERS_WAITING clears both bits and wakes every reader
//! and a writer, the readers' turn; a reader that slept enters past the
//! waiter bits, not past a write-holder).
//!
//! Run: `.ci/loom --test loom_rwlock_floor` (CI's settings: `--cfg loom`,
//! release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2). Under
//! loom `RawRwLockFloorOf::new()` is a plain fn and the lock_api impls do
//! not exist: the models use the inherent methods.
//!
//! Every model is a fn generic over `PHASED`, run twice: `floor::<model>`
//! and `phased::<model>` (the `floor_and_phased!` list at the end). All at
//! CI's bound 2 except model 8 (bound 1: about 9 000 executions; at bound
//! 2 it explores about 164 000, 16 s). Models 1-10: at most about 11 000
//! executions and 1 s a model. Models 11-21 (upgradable reads): at most
//! about 18 000 executions and 1.5 s, except model 18 (three threads and a
//! timed upgrade: about 67 000-74 000, 6 s). The file: 28 s on one test
//! thread, 23-36 s with `cargo test`'s threads (2-vCPU host, idle to
//! loaded).
//!
//! Models 1-7 check both protocols alike:
//! 1. `writer_and_reader`: a writer and a reader, one critical section
//!    each.
//! 2. `writer_yielding_and_reader`: model 1 with a `yield_now` inside the
//!    write section, before the writer reads the word (see below).
//! 3. `two_writers_and_reader`: two writers and a reader.
//! 4. `two_readers_and_writer`: two readers and a writer; a reader must be
//!    able to sleep behind a *waiting* writer while another reader holds
//!    the lock (writer preference).
//! 5. `timed_reader_beside_writer`: a timed reader (deadline 0: one try of
//!    each kind, it announces itself and gives up rather than sleep)
//!    beside a writer.
//! 6. `timed_writer_beside_writer`: a timed writer (deadline 0) beside a
//!    writer.
//! 7. `timed_writer_between_readers`: the main thread reads, a timed
//!    writer (deadline 0) and a plain reader arrive. A timed writer that
//!    announced itself and gave up leaves WRITERS_WAITING behind, a reader
//!    may sleep behind that bit, and the last reader's unlock then finds
//!    no writer asleep and must wake the readers.
//!
//! Models 8-10 observe a turn: with turns some execution must show it, on
//! the floor none may (so each observation shows the turn and nothing
//! else; `turns_only`):
//! 8. `slept_reader_passes_waiting_writer`: the main thread holds the
//!    write lock while two readers arrive and sleep, releases (the readers'
//!    turn) and writes again. Seen: a reader inside reads one reader and
//!    WRITERS_WAITING, then two readers (the other reader, which slept,
//!    entered past the waiting writer: the bit cannot clear while a reader
//!    holds).
//! 9. `reservation_keeps_new_readers_out`: the main thread reads while a
//!    writer arrives and sleeps, releases and tries to read again. Seen:
//!    the try fails on a free word that reads WRITERS_WAITING alone while
//!    the writer has not entered (the reservation: the last reader out
//!    kept the bit and woke the writer). Checked: after that, the main
//!    thread's plain read gets in only after the writer's section.
//! 10. `slept_reader_leaves_readers_waiting`: the main thread reads and
//!    abandons WRITERS_WAITING (a deadline-0 write beside its own read
//!    lock), a reader announces itself behind the bit, the main thread
//!    releases. Seen: the reader, inside, reads READERS_WAITING alone (it
//!    returned from its futex wait between the writers' turn's CAS that
//!    cleared WRITERS_WAITING and the one that would clear
//!    READERS_WAITING, and entered past the bit; the turn's second CAS
//!    fails, and the reader's unlock must clear the bit: `unlock_shared`'s
//!    second branch).
//!
//! What each model checks: the futex is modelled exactly (see
//! `klock::internal::wait`), so a sleeper nobody wakes blocks forever and
//! loom reports a deadlock (no lost wake-up); a writer writes two fields
//! (loom `UnsafeCell`s) one after the other and every reader checks they
//! are equal, and loom's `UnsafeCell` reports a write that overlaps any
//! other access or is not ordered before it (exclusion between writers and
//! between a writer and readers, the Acquire/Release pairs); inside, a
//! writer sees the word write-locked and a reader sees it read-locked; the
//! field count is exact, nobody holds the lock at the end and the state
//! word is 0 (no reader count or waiter bit left behind). Models 5-7 then
//! take the lock for writing and for reading from the main thread (a
//! timed waiter that gave up left a usable lock) and check the word is 0
//! again.
//!
//! Each model asserts (with `Branch`) that some execution took the path it
//! exists for, seen from inside a critical section (the floor counts no
//! lock events): model 1: WRITERS_WAITING seen (the writer announced it
//! would sleep behind the reader); model 2: the writer saw
//! READERS_WAITING (the reader announced it would sleep behind the
//! holder); model 3: a writer saw both bits at once (a reader and the
//! other writer waiting behind it), and WRITERS_WAITING seen; model 4: a
//! reader inside saw both bits (the other reader announced itself behind
//! the *waiting* writer, not behind a holder), and WRITERS_WAITING seen;
//! models 5 and 6: the timed waiter gave up in some execution and got in
//! in another; model 7: the timed writer gave up in an execution where the
//! holding reader saw both bits (the other reader waiting behind the
//! abandoned WRITERS_WAITING); models 8-10: as above. A waiter bit seen
//! means a waiter announced that it would sleep; loom explores both its
//! sleep and the wake-up landing before it. Model 2 exists because loom's
//! DPOR compares an access to an atomic only with the last access to it:
//! the reader's announcing CAS follows its own load of the word, so loom
//! never schedules that CAS before the holding writer's plain load and
//! model 1 cannot show READERS_WAITING from inside (the yield makes the
//! reader run while the writer holds). The branches live in leaked
//! `&'static Branch`es (`branch()`), not `static`s: a `static` in a
//! generic fn is one item shared by both instances.
//!
//! Deliberate breaks of `floor.rs` (checked by hand, not kept) and the
//! models that fail on each (at bound 2), on the floor (checked with
//! models 1-7, before models 8-10 and the `phased::` instances existed):
//! * `wake_writer` without its `futex_wake` (returning `false`): deadlock
//!   (a writer asleep behind a reader or a writer never woken) in models
//!   1-6.
//! * `wake_writer_or_readers` without the readers' `futex_wake`: deadlock
//!   (a reader asleep behind a writer) in models 1-4 and 7.
//! * `unlock_shared` without its `wake_writer_or_readers`: deadlock in
//!   models 1-5; model 7: the word is not clean at the end
//!   (WRITERS_WAITING left behind by the timed writer).
//! * `wake_writer_or_readers` returning after `wake_writer` in the `R|W`
//!   case even when no writer woke (no fallback to the readers): deadlock
//!   in models 3, 4 and 7 (a woken writer that had not slept yet, or a
//!   timed writer that gave up, leaves readers asleep).
//! * `write_slow` claiming with `others = 0` (a writer that slept does not
//!   set WRITERS_WAITING again): deadlock in model 3 (two writers asleep,
//!   the first one woken clears the bit, the second is never woken).
//! * `write_slow` loading `writer_notify` after its re-check of `state`
//!   instead of before: deadlock in models 3 and 4 (the wake-up lands
//!   between the two and the writer sleeps on the bumped value; model 1
//!   would need three preemptions).
//! * `unlock_exclusive`'s `fetch_sub` Relaxed instead of Release: loom's
//!   `UnsafeCell` reports a causality violation in every model.
//! * `write_slow` claiming whenever the word is not write-locked (readers
//!   ignored; the `debug_assert` in `claim_write` removed): concurrent
//!   `UnsafeCell` read and write in models 1-5 and 7.
//! * a timed read that reports success when its deadline passes
//!   (`return true` after `remaining`): model 5 (a reader inside sees the
//!   word write-locked).
//! * a timed write that reports success when its deadline passes: model 6
//!   (concurrent `UnsafeCell` writes) and model 7 (a writer inside sees the
//!   word not write-locked).
//!
//! With turns (each `phased::` model run alone: a loom deadlock panics
//! again while unwinding and aborts the whole test binary; every
//! `floor::` model passed on each of these breaks; checked on 1defea1 and
//! again on 11f7d27, after writer batches were added, with the same
//! results):
//! * `writers_turn` returning without a wake-up when WRITERS_WAITING is
//!   set (`if true { return; }` in place of `if self.wake_writer()`):
//!   deadlock (a writer asleep behind the last reader out is never woken,
//!   or a reader behind the bit) in models 1-5 and 8-10; models 6 and 7:
//!   the word is not clean at the end (an abandoned WRITERS_WAITING is
//!   never cleared).
//! * `readers_turn` without the writer's wake-up (the `wake_writer` after
//!   the readers'): deadlock in model 3 (two writers and a reader: the
//!   readers' turn clears WRITERS_WAITING and wakes only the reader, the
//!   other writer sleeps on).
//! * `readers_turn` without the readers' `futex_wake`: deadlock in models
//!   1-4, 7, 8 and 9.
//! * `writers_turn` without the readers' `futex_wake`: deadlock in models
//!   3, 4, 7, 9 and 10.
//! * `writers_turn` clearing WRITERS_WAITING before its wake-up (no
//!   reservation, as the floor): model 9 (no execution reached its
//!   branch).
//! * `read_slow` without the turn (`is_read_lockable(s)` alone): models 8
//!   and 10 (no execution reached their branch).
//! * `read_slow` taking the turn without having slept (`slept` dropped):
//!   model 9 ("a new reader passed the reservation before the woken writer
//!   ran"), and models 4, 7 and 10 (no execution reached their branch: a
//!   reader no longer waits behind a waiting writer while another reader
//!   holds).
//! * `unlock_shared` without its second branch (a free word with only
//!   READERS_WAITING left by readers that entered on their turn): model 10
//!   (the word is not clean at the end: 0x40000000).
//!
//! Not caught: `readers_turn` clearing only READERS_WAITING (keeping
//! WRITERS_WAITING for the writer it wakes). A policy change rather than
//! a lost wake-up: the next writers' turn on a free word clears the stale
//! bit, and no model observes that a new reader was kept out meanwhile.
//!
//! Models 11-21 cover upgradable reads (the UPGRADABLE bit, at most one
//! holder: `Shared::u` is a loom `UnsafeCell` written only under it, so
//! loom reports two upgradable readers inside at once), upgrades
//! (WRITERS_WAITING announced, a sleep on `upgrade_notify` until the last
//! other reader's release, `is_upgrade_drained`), downgrades and recursive
//! reads; each checks the same things as models 1-7 and its own doc names
//! the deliberate break of `crates/klock/src/rwlock/floor/` (`mod.rs`,
//! `upgrade.rs`) it fails on (checked by hand on bbdf06d, not kept; each
//! model run alone, on both variants, at bound 2):
//! 11. `upgrader_reader_writer`: an upgradable reader that upgrades and
//!     writes, a plain reader, a writer.
//! 12. `two_upgraders`: two upgradable readers that each upgrade.
//! 13. `upgrade_waits_for_reader`: the upgrade sleeps while a reader is
//!     inside; its release must wake it.
//! 14. `upgradable_behind_unlock_upgradable` and 15.
//!     `upgradable_behind_downgrade_upgradable`: an upgradable reader
//!     asleep for the bit, woken by the holder's `unlock_upgradable` /
//!     `downgrade_upgradable` (a plain read keeps the lock held, so no
//!     free-lock release wakes it instead).
//! 16. `downgrade_lets_reader_in` and 17.
//!     `downgrade_to_upgradable_lets_reader_in`: a reader asleep behind a
//!     writer gets in on the downgrade, before the downgraded lock is
//!     released.
//! 18. `timed_upgrade_beside_readers` and 20.
//!     `timed_upgrade_while_reader_stays`: `upgrade_until_ns(0)`; a timed-out
//!     upgrade keeps the upgradable read lock, and the WRITERS_WAITING it
//!     leaves keeps no reader or writer asleep for ever.
//! 19. `recursive_read_past_waiting_writer`: a recursive read (and a timed
//!     one) beside the thread's own read lock passes a waiting writer.
//! 21. `timed_upgradable_beside_upgrader`: `lock_upgradable_until_ns(0)`
//!     and a plain reader while the holder upgrades, downgrades to an
//!     upgradable read and releases it.
//!
//! Also checked on models 11 and 13: `upgrade_slow` loading
//! `upgrade_notify` after its re-check of `state` instead of before
//! (deadlock), and `upgrade_from`'s CAS Relaxed instead of Acquire
//! (concurrent `UnsafeCell` read and write). Model 18 does not catch a
//! timed-out upgrade that clears WRITERS_WAITING (model 20 does).
//!
//! Writer batches (`RawRwLockFloorOf<true, WRITER_BATCH_US>`,
//! `RawRwLockBatched`) are not modelled here: under loom there is no time,
//! so the readers would never have waited long enough for their turn.
#![cfg(loom)]

mod loom_common;
use loom_common::{Branch, loom_tunables, run_model};

use klock::internal::rwlock::{
    RW_FLOOR_MASK, RW_FLOOR_READERS_WAITING, RW_FLOOR_UPGRADABLE, RW_FLOOR_WRITERS_WAITING,
    RawRwLockFloorOf,
};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;

const R: u32 = RW_FLOOR_READERS_WAITING;
const W: u32 = RW_FLOOR_WRITERS_WAITING;
const U: u32 = RW_FLOOR_UPGRADABLE;

/// A fresh branch for one instance of a generic model (a `static` in a
/// generic fn is one item shared by every instance, and the floor and
/// phased tests run side by side).
fn branch() -> &'static Branch {
    Box::leak(Box::new(Branch::new()))
}

/// Two fields protected by a floor rwlock (`PHASED`: with turns): a writer
/// adds 1 to each, one after the other; a reader checks they are equal.
struct Shared<const PHASED: bool> {
    l: RawRwLockFloorOf<PHASED>,
    a: UnsafeCell<usize>,
    b: UnsafeCell<usize>,
    /// Written only under the UPGRADABLE bit (models 11-19): counts the
    /// upgradable sections; loom reports two upgradable readers at once.
    u: UnsafeCell<usize>,
}

// SAFETY: `a` and `b` are written only under the write lock and read only
// under a lock, `u` only under the upgradable read lock (loom checks all).
unsafe impl<const PHASED: bool> Sync for Shared<PHASED> {}

impl<const PHASED: bool> Shared<PHASED> {
    fn new() -> Self {
        Shared {
            l: RawRwLockFloorOf::new(),
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
            u: UnsafeCell::new(0),
        }
    }

    /// The write critical section, write lock held: both fields + 1.
    /// Returns the waiter bits of the state word read inside; with
    /// `yield_inside`, read after a `yield_now` that lets the other threads
    /// run while the writer holds (see model 2).
    fn write_section(&self, yield_inside: bool) -> u32 {
        assert!(
            self.l.is_locked_exclusive(),
            "writer inside, word not write-locked"
        );
        if yield_inside {
            thread::yield_now();
        }
        let bits = self.l.state() & (R | W);
        // SAFETY: the write lock is held.
        self.a.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: as above.
        self.b.with_mut(|p| unsafe { *p += 1 });
        bits
    }

    /// The read critical section, a read lock held: the fields match.
    /// Returns the waiter bits of the state word read inside.
    fn read_section(&self) -> u32 {
        let s = self.l.state();
        assert!(
            !self.l.is_locked_exclusive() && self.l.is_locked(),
            "reader inside, word {s:#x}"
        );
        // SAFETY: a read lock is held.
        let a = self.a.with(|p| unsafe { *p });
        // SAFETY: as above.
        let b = self.b.with(|p| unsafe { *p });
        assert_eq!(a, b, "torn read");
        s & (R | W)
    }

    /// Lock for writing, write, unlock; the bits seen inside.
    fn write(&self) -> u32 {
        self.write_with(false)
    }

    /// As `write`, yielding inside the section if `yield_inside`.
    fn write_with(&self, yield_inside: bool) -> u32 {
        self.l.lock_exclusive();
        let bits = self.write_section(yield_inside);
        // SAFETY: the write lock taken above.
        unsafe { self.l.unlock_exclusive() };
        bits
    }

    /// Lock for reading, read, unlock; the bits seen inside.
    fn read(&self) -> u32 {
        self.l.lock_shared();
        let bits = self.read_section();
        // SAFETY: the read lock taken above.
        unsafe { self.l.unlock_shared() };
        bits
    }

    /// A timed read with deadline 0 (one try of each kind, no sleep):
    /// the read section if it got in; whether it did.
    fn timed_read(&self) -> bool {
        if !self.l.lock_shared_until_ns(0) {
            return false;
        }
        self.read_section();
        // SAFETY: the read lock taken above.
        unsafe { self.l.unlock_shared() };
        true
    }

    /// A timed write with deadline 0: the write section if it got in;
    /// whether it did.
    fn timed_write(&self) -> bool {
        if !self.l.lock_exclusive_until_ns(0) {
            return false;
        }
        self.write_section(false);
        // SAFETY: the write lock taken above.
        unsafe { self.l.unlock_exclusive() };
        true
    }

    /// After the joins: `writes` write sections, nobody inside, word 0.
    fn check(&self, writes: usize) {
        // SAFETY: every other thread has been joined.
        let (a, b) = (
            self.a.with(|p| unsafe { *p }),
            self.b.with(|p| unsafe { *p }),
        );
        assert_eq!((a, b), (writes, writes), "lost or torn update");
        assert!(!self.l.is_locked(), "left locked");
        assert_eq!(self.l.state(), 0, "word not clean: {:#x}", self.l.state());
    }

    /// The main thread takes the lock once for writing and once for
    /// reading (the lock still works after a waiter gave up); word 0.
    fn reuse(&self) {
        self.write();
        self.read();
        assert_eq!(
            self.l.state(),
            0,
            "word not clean after reuse: {:#x}",
            self.l.state()
        );
    }

    /// The upgradable section, the upgradable read lock held: the word
    /// holds the UPGRADABLE bit, `u` + 1 (loom reports two upgradable
    /// readers inside at once, or one not ordered after the last), then
    /// the read section. Returns the waiter bits seen inside.
    fn upgradable_section(&self) -> u32 {
        let st = self.l.state();
        assert!(st & U != 0, "upgradable reader inside, word {st:#x}");
        // SAFETY: the upgradable read lock is held (one holder at a time).
        self.u.with_mut(|p| unsafe { *p += 1 });
        self.read_section()
    }

    /// After the joins: `n` upgradable sections.
    fn check_upgradable(&self, n: usize) {
        // SAFETY: every other thread has been joined.
        let u = self.u.with(|p| unsafe { *p });
        assert_eq!(u, n, "lost upgradable section");
    }

    /// Upgradable read, its section, upgrade, the write section, unlock.
    /// Returns the waiter bits seen in the upgradable section.
    fn upgrade_and_write(&self) -> u32 {
        self.l.lock_upgradable();
        let bits = self.upgradable_section();
        // SAFETY: the upgradable read lock taken above.
        unsafe { self.l.upgrade() };
        self.upgraded_section();
        // SAFETY: the upgrade returned the write lock.
        unsafe { self.l.unlock_exclusive() };
        bits
    }

    /// The write section after an upgrade: write-locked, the UPGRADABLE
    /// bit gone with the read count.
    fn upgraded_section(&self) {
        let st = self.l.state();
        assert_eq!(st & U, 0, "upgraded, word {st:#x}");
        self.write_section(false);
    }
}

/// Model 1: a writer and a reader.
fn writer_and_reader<const PHASED: bool>() {
    let writer_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        let bits = s.write();
        let rbits = h.join().unwrap();
        if bits & W != 0 || rbits & W != 0 {
            writer_waited.hit();
        }
        s.check(1);
    });
    writer_waited.assert_reached("WRITERS_WAITING was seen (the writer waited behind the reader)");
}

/// Model 2: model 1 with a `yield_now` in the write section before it
/// reads the word, so that some execution shows the reader announced
/// behind the holding writer (loom's DPOR does not schedule the reader's
/// announcing CAS before the holder's plain load: it compares an access
/// only with the last one to the atomic, here the reader's own load).
fn writer_yielding_and_reader<const PHASED: bool>() {
    let reader_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        let bits = s.write_with(true);
        h.join().unwrap();
        if bits & R != 0 {
            reader_waited.hit();
        }
        s.check(1);
    });
    reader_waited.assert_reached("the writer saw READERS_WAITING (a reader waited behind it)");
}

/// Model 3: two writers and a reader.
fn two_writers_and_reader<const PHASED: bool>() {
    let both_waited = branch();
    let writer_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hw = thread::spawn(move || s1.write());
        let hr = thread::spawn(move || s2.read());
        let bits = s.write();
        let wbits = hw.join().unwrap();
        let rbits = hr.join().unwrap();
        if bits == R | W || wbits == R | W {
            both_waited.hit();
        }
        if (bits | wbits | rbits) & W != 0 {
            writer_waited.hit();
        }
        s.check(2);
    });
    both_waited.assert_reached("a writer saw both waiter bits (a reader and a writer waited)");
    writer_waited.assert_reached("WRITERS_WAITING was seen (a writer waited)");
}

/// Model 4: two readers and a writer.
fn two_readers_and_writer<const PHASED: bool>() {
    let reader_behind_waiting_writer = branch();
    let writer_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hr = thread::spawn(move || s1.read());
        let hw = thread::spawn(move || s2.write());
        let bits = s.read();
        let rbits = hr.join().unwrap();
        let wbits = hw.join().unwrap();
        if bits == R | W || rbits == R | W {
            reader_behind_waiting_writer.hit();
        }
        if (bits | rbits | wbits) & W != 0 {
            writer_waited.hit();
        }
        s.check(1);
    });
    reader_behind_waiting_writer.assert_reached(
        "a reader inside saw both bits (the other reader waited behind the waiting writer)",
    );
    writer_waited.assert_reached("WRITERS_WAITING was seen (the writer waited)");
}

/// Model 5: a timed reader (deadline 0) beside a writer. It may get in or
/// give up (after announcing READERS_WAITING, which the writer's unlock
/// clears).
fn timed_reader_beside_writer<const PHASED: bool>() {
    let timed_out = branch();
    let got_in = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.timed_read());
        s.write();
        if h.join().unwrap() {
            got_in.hit();
        } else {
            timed_out.hit();
        }
        s.check(1);
        s.reuse();
    });
    timed_out.assert_reached("the timed reader gave up");
    got_in.assert_reached("the timed reader got in");
}

/// Model 6: a timed writer (deadline 0) beside a writer. It may get in or
/// give up (after announcing WRITERS_WAITING, which the holder's unlock
/// clears, waking nobody).
fn timed_writer_beside_writer<const PHASED: bool>() {
    let timed_out = branch();
    let got_in = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.timed_write());
        s.write();
        let got = h.join().unwrap();
        if got {
            got_in.hit();
        } else {
            timed_out.hit();
        }
        s.check(1 + got as usize);
        s.reuse();
    });
    timed_out.assert_reached("the timed writer gave up");
    got_in.assert_reached("the timed writer got in");
}

/// Model 7: the main thread reads; a timed writer (deadline 0) and a plain
/// reader arrive. A timed writer that gives up after announcing leaves
/// WRITERS_WAITING, a reader may sleep behind it, and the last reader's
/// unlock then wakes no writer and must wake the readers.
fn timed_writer_between_readers<const PHASED: bool>() {
    let abandoned_bit_sleeper = branch();
    let timed_out = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hw = thread::spawn(move || s1.timed_write());
        let hr = thread::spawn(move || s2.read());
        let bits = s.read();
        let got = hw.join().unwrap();
        hr.join().unwrap();
        if !got {
            timed_out.hit();
            if bits == R | W {
                abandoned_bit_sleeper.hit();
            }
        }
        s.check(got as usize);
        s.reuse();
    });
    timed_out.assert_reached("the timed writer gave up");
    abandoned_bit_sleeper.assert_reached(
        "the timed writer gave up while the holding reader saw both bits \
         (a reader waited behind the abandoned WRITERS_WAITING)",
    );
}

/// Model 8: the main thread holds the write lock while two readers
/// arrive (the `yield_now` lets them announce and sleep), releases it
/// (the readers' turn) and writes again. Each reader, inside, yields,
/// reads the word, yields and reads it again. A reader that reads one
/// reader (itself) with WRITERS_WAITING set, then two readers, saw the
/// other reader enter past the waiting writer: WRITERS_WAITING cannot be
/// cleared while it holds (only a free word loses a waiter bit), so the
/// other reader's add was from a word with the bit set, which only a
/// reader that slept may do (`is_turn_read_lockable`). At bound 1: the
/// path needs one preemption (the main thread's, between its unlock and
/// its next lock, so that a reader enters first), and bound 2 explores
/// about 164 000 executions (16 s), over CI's loom budget.
fn slept_reader_passes_waiting_writer<const PHASED: bool>() {
    let passed = branch();
    run_model(loom_tunables(), 1, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_exclusive();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    s.l.lock_shared();
                    thread::yield_now();
                    let first = s.l.state();
                    s.read_section();
                    thread::yield_now();
                    let then = s.l.state();
                    // SAFETY: the read lock taken above.
                    unsafe { s.l.unlock_shared() };
                    first & W != 0 && first & RW_FLOOR_MASK == 1 && then & RW_FLOOR_MASK == 2
                })
            })
            .collect();
        thread::yield_now();
        s.write_section(false);
        // SAFETY: the write lock taken above.
        unsafe { s.l.unlock_exclusive() };
        s.write();
        for h in hs {
            if h.join().unwrap() {
                passed.hit();
            }
        }
        s.check(2);
    });
    turns_only::<PHASED>(
        passed,
        "a reader that slept entered past WRITERS_WAITING (another reader inside saw \
         one reader with the bit set, then two)",
    );
}

/// Model 9: the main thread holds a read lock while a writer
/// arrives (the `yield_now` lets it announce and sleep), releases it and
/// at once tries to read again. The writer sets a flag inside, before its
/// section. A failed try followed by a word that reads exactly
/// WRITERS_WAITING (free, no reader waiting) with the flag still clear is
/// the woken writer's reservation: the read release kept the bit and woke
/// the writer, which has not run yet (an Acquire fence after the word's
/// load: a word the writer's unlock left would show the flag set). Then
/// the main thread reads: after a reservation it must get in only after
/// the writer (it announces itself and sleeps; nothing but the writer's
/// unlock wakes it, so it never enters past the bit).
fn reservation_keeps_new_readers_out<const PHASED: bool>() {
    let kept_out = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let entered = Arc::new(AtomicBool::new(false));
        s.l.lock_shared();
        let (s1, e1) = (s.clone(), entered.clone());
        let h = thread::spawn(move || {
            s1.l.lock_exclusive();
            // Relaxed: published by this writer's Release unlock (the
            // main thread's fence or read lock acquires it).
            e1.store(true, Ordering::Relaxed);
            s1.write_section(false);
            // SAFETY: the write lock taken above.
            unsafe { s1.l.unlock_exclusive() };
        });
        thread::yield_now();
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        let kept = if s.l.try_lock_shared() {
            s.read_section();
            // SAFETY: the read lock just taken.
            unsafe { s.l.unlock_shared() };
            false
        } else {
            let word = s.l.state();
            fence(Ordering::Acquire);
            // Relaxed: ordered by the fence.
            word == W && !entered.load(Ordering::Relaxed)
        };
        if kept {
            kept_out.hit();
        }
        s.l.lock_shared();
        // Relaxed: ordered by the lock (the writer's Release unlock, this
        // reader's Acquire add).
        assert!(
            !kept || entered.load(Ordering::Relaxed),
            "a new reader passed the reservation before the woken writer ran"
        );
        s.read_section();
        // SAFETY: the read lock just taken.
        unsafe { s.l.unlock_shared() };
        h.join().unwrap();
        s.check(1);
    });
    turns_only::<PHASED>(
        kept_out,
        "a reader failed to enter a free word with WRITERS_WAITING kept for a woken writer",
    );
}

/// Model 10: the main thread holds a read lock and tries to write with
/// deadline 0 (it announces WRITERS_WAITING behind its own read lock and
/// gives up without sleeping: an abandoned bit, as model 7's timed writer
/// leaves it); a reader arrives and announces itself behind the bit (the
/// `yield_now` lets it run), and the main thread releases. Its writers'
/// turn finds no writer asleep and clears WRITERS_WAITING; a reader that
/// returned from its futex wait in between (the word changed before it
/// slept) enters past READERS_WAITING before the turn clears that bit too,
/// so the turn's CAS fails and leaves the bit to the reader's unlock
/// (`unlock_shared`'s second branch: a free word with only
/// READERS_WAITING). The reader yields inside before it reads the word; a
/// reader inside that sees READERS_WAITING alone took that path.
fn slept_reader_leaves_readers_waiting<const PHASED: bool>() {
    let left = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        assert!(
            !s.l.lock_exclusive_until_ns(0),
            "a writer got in beside a reader"
        );
        let s1 = s.clone();
        let h = thread::spawn(move || {
            s1.l.lock_shared();
            thread::yield_now();
            let bits = s1.read_section();
            // SAFETY: the read lock taken above.
            unsafe { s1.l.unlock_shared() };
            bits
        });
        thread::yield_now();
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        if h.join().unwrap() == R {
            left.hit();
        }
        s.check(0);
    });
    turns_only::<PHASED>(
        left,
        "a reader that slept entered between a writers' turn's two CASes \
         (it saw READERS_WAITING without WRITERS_WAITING)",
    );
}

/// Model 11: an upgradable reader that upgrades and writes, a plain
/// reader and a writer. Exclusion across the upgrade: the writer and the
/// upgraded reader never overlap each other or the plain reader (loom's
/// `UnsafeCell`), the upgraded reader sees the word write-locked without
/// the bit. Seen: the plain reader inside beside the upgradable one with
/// WRITERS_WAITING set (an upgrade announced, or the writer waiting
/// behind both).
///
/// Fails with `try_upgrade` and `upgrade_slow` taking the write lock
/// beside other readers (`is_alone` as `readers(s) >= 1`): concurrent
/// `UnsafeCell` read and write (the plain reader inside); with
/// `after_read_release` without its `wake_upgrader()`: deadlock.
fn upgrader_reader_writer<const PHASED: bool>() {
    let shared_then_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hu = thread::spawn(move || s1.upgrade_and_write());
        let hr = thread::spawn(move || {
            s2.l.lock_shared();
            let word = s2.l.state();
            s2.read_section();
            // SAFETY: the read lock taken above.
            unsafe { s2.l.unlock_shared() };
            word
        });
        s.write();
        hu.join().unwrap();
        if hr.join().unwrap() & (U | W) == U | W {
            shared_then_waited.hit();
        }
        s.check(2);
        s.check_upgradable(1);
    });
    shared_then_waited
        .assert_reached("a plain reader inside beside the upgradable one saw WRITERS_WAITING");
}

/// Model 12: two upgradable readers, each upgrades and writes: one
/// upgradable reader at a time (`u`), the second waits for the bit (as a
/// reader, READERS_WAITING) and the first one's write unlock wakes it.
/// Seen: an upgradable reader inside saw READERS_WAITING.
///
/// Fails with `ReadKind::may_take` not checking `has_upgradable` (two
/// upgradable readers at once): "upgradable reader inside, word
/// 0x40000002" (the two bits carried into READERS_WAITING); with that and
/// `add_read` OR-ing the bit in (no carry): concurrent `UnsafeCell`
/// writes of `u`.
fn two_upgraders<const PHASED: bool>() {
    let other_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.upgrade_and_write());
        let bits = s.upgrade_and_write();
        if (bits | h.join().unwrap()) & R != 0 {
            other_waited.hit();
        }
        s.check(2);
        s.check_upgradable(2);
    });
    other_waited
        .assert_reached("an upgradable reader inside saw READERS_WAITING (the other waited)");
}

/// Model 13: the main thread reads; an upgradable reader arrives and
/// upgrades, sleeping on `upgrade_notify` while the main thread is inside
/// (the `yield_now` lets it announce). The main thread's read release
/// leaves it alone and must wake it (`is_upgrade_drained`), or loom
/// reports a deadlock. Seen: the main thread inside saw the upgrade
/// announced (WRITERS_WAITING beside the UPGRADABLE bit; no writer here).
///
/// Fails with `after_read_release` without its `wake_upgrader()` (the
/// `else if is_upgrade_drained` branch emptied): deadlock (the upgrader
/// asleep on `upgrade_notify`).
fn upgrade_waits_for_reader<const PHASED: bool>() {
    let announced = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        let s1 = s.clone();
        let h = thread::spawn(move || s1.upgrade_and_write());
        thread::yield_now();
        let word = s.l.state();
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        h.join().unwrap();
        if word & (U | W) == U | W {
            announced.hit();
        }
        s.check(1);
        s.check_upgradable(1);
    });
    announced.assert_reached("the reader inside saw the upgrade announced (U and W)");
}

/// Model 14: the main thread holds a plain read lock throughout (so no
/// release leaves the lock free: a free word's release wakes readers by
/// itself with turns); two upgradable readers each take an upgradable
/// read and release it with `unlock_upgradable`. The second sleeps for the
/// bit (READERS_WAITING) and only the first one's `unlock_upgradable` can
/// wake it. Seen: an upgradable reader inside saw READERS_WAITING.
///
/// Fails with `unlock_upgradable` without its `wake_readers_while_read`:
/// deadlock (the second upgradable reader asleep on `state`).
fn upgradable_behind_unlock_upgradable<const PHASED: bool>() {
    let other_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    s.l.lock_upgradable();
                    let bits = s.upgradable_section();
                    // SAFETY: the upgradable read lock taken above.
                    unsafe { s.l.unlock_upgradable() };
                    bits
                })
            })
            .collect();
        let mut bits = 0;
        for h in hs {
            bits |= h.join().unwrap();
        }
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        if bits & R != 0 {
            other_waited.hit();
        }
        s.check(0);
        s.check_upgradable(2);
    });
    other_waited
        .assert_reached("an upgradable reader inside saw READERS_WAITING (the other waited)");
}

/// Model 15: model 14 with `downgrade_upgradable`: each upgradable reader
/// turns its lock into a plain read (releasing the bit), reads, and
/// releases the read. The main thread's read keeps the lock read-held, so
/// only the downgrade can wake an upgradable reader sleeping for the bit.
///
/// Fails with `downgrade_upgradable` without its `wake_readers_while_read`:
/// deadlock (the second upgradable reader asleep on `state`).
fn upgradable_behind_downgrade_upgradable<const PHASED: bool>() {
    let other_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    s.l.lock_upgradable();
                    let bits = s.upgradable_section();
                    // SAFETY: the upgradable read lock taken above.
                    unsafe { s.l.downgrade_upgradable() };
                    s.read_section();
                    // SAFETY: the downgrade left a plain read lock.
                    unsafe { s.l.unlock_shared() };
                    bits
                })
            })
            .collect();
        let mut bits = 0;
        for h in hs {
            bits |= h.join().unwrap();
        }
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        if bits & R != 0 {
            other_waited.hit();
        }
        s.check(0);
        s.check_upgradable(2);
    });
    other_waited
        .assert_reached("an upgradable reader inside saw READERS_WAITING (the other waited)");
}

/// Model 16: the main thread writes while a reader arrives (the
/// `yield_now` lets it announce and sleep), downgrades to a read lock and
/// joins the reader before releasing: the downgrade must let the reader
/// in (wake it), or loom reports a deadlock. Seen: the writer saw
/// READERS_WAITING.
///
/// Fails with `downgrade` without its `wake_readers_while_read`: deadlock
/// (the reader asleep on `state`, the main thread in `join`).
fn downgrade_lets_reader_in<const PHASED: bool>() {
    let reader_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_exclusive();
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        thread::yield_now();
        let bits = s.write_section(false);
        // SAFETY: the write lock taken above.
        unsafe { s.l.downgrade() };
        s.read_section();
        h.join().unwrap();
        // SAFETY: the downgrade left a read lock.
        unsafe { s.l.unlock_shared() };
        if bits & R != 0 {
            reader_waited.hit();
        }
        s.check(1);
    });
    reader_waited.assert_reached("the writer saw READERS_WAITING (the reader waited)");
}

/// Model 17: model 16 with `downgrade_to_upgradable`: the main thread
/// downgrades its write lock to an upgradable read, joins the reader (the
/// downgrade must let it in), then upgrades again (alone) and writes.
///
/// Fails with `downgrade_to_upgradable` without its
/// `wake_readers_while_read`: deadlock (the reader asleep on `state`).
fn downgrade_to_upgradable_lets_reader_in<const PHASED: bool>() {
    let reader_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_exclusive();
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        thread::yield_now();
        let bits = s.write_section(false);
        // SAFETY: the write lock taken above.
        unsafe { s.l.downgrade_to_upgradable() };
        s.upgradable_section();
        h.join().unwrap();
        // SAFETY: the upgradable read lock the downgrade left.
        unsafe { s.l.upgrade() };
        s.upgraded_section();
        // SAFETY: the upgrade returned the write lock.
        unsafe { s.l.unlock_exclusive() };
        if bits & R != 0 {
            reader_waited.hit();
        }
        s.check(2);
        s.check_upgradable(1);
    });
    reader_waited.assert_reached("the writer saw READERS_WAITING (the reader waited)");
}

/// Model 18: the main thread reads; an upgradable reader upgrades with
/// deadline 0 (it announces WRITERS_WAITING and gives up rather than
/// sleep while the main thread is inside) and a plain reader arrives. On
/// a timeout the upgradable read lock is still held (the UPGRADABLE bit,
/// a read count: `upgradable_section`), it is released with
/// `unlock_upgradable`; the plain reader that slept behind the announced
/// upgrade is woken by the upgrade's withdrawal (`withdraw_upgrade`) or by
/// the last release. Then the
/// main thread writes and reads again (`reuse`). Seen: a timeout, a
/// success, and a timeout in an execution where the main thread inside
/// saw both bits (the plain reader asleep behind the announced upgrade).
///
/// Fails with `upgrade_slow` returning `true` when the deadline has passed:
/// "upgraded, word 0xa0000002" (the upgraded section's assertion: the bit
/// and two readers); with `unlock_upgradable` without its
/// `after_read_release`: deadlock (the plain reader asleep behind the
/// abandoned WRITERS_WAITING; found before `withdraw_upgrade` took the bit
/// back).
fn timed_upgrade_beside_readers<const PHASED: bool>() {
    let timed_out = branch();
    let got_in = branch();
    let reader_behind_abandoned = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        let (s1, s2) = (s.clone(), s.clone());
        let hu = thread::spawn(move || {
            s1.l.lock_upgradable();
            s1.upgradable_section();
            // SAFETY: the upgradable read lock taken above.
            if unsafe { s1.l.upgrade_until_ns(0) } {
                s1.upgraded_section();
                // SAFETY: the upgrade returned the write lock.
                unsafe { s1.l.unlock_exclusive() };
                true
            } else {
                s1.upgradable_section();
                // SAFETY: a failed upgrade keeps the upgradable read lock.
                unsafe { s1.l.unlock_upgradable() };
                false
            }
        });
        let hr = thread::spawn(move || s2.read());
        thread::yield_now();
        let bits = s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        let got = hu.join().unwrap();
        hr.join().unwrap();
        if got {
            got_in.hit();
        } else {
            timed_out.hit();
            if bits == R | W {
                reader_behind_abandoned.hit();
            }
        }
        s.check(got as usize);
        s.check_upgradable(1 + !got as usize);
        s.reuse();
    });
    timed_out.assert_reached("the timed upgrade gave up");
    got_in.assert_reached("the timed upgrade got in");
    reader_behind_abandoned.assert_reached(
        "the timed upgrade gave up while the holding reader saw both bits \
         (a reader waited behind the announced upgrade)",
    );
}

/// Model 19: the main thread reads while a writer arrives (the
/// `yield_now` lets it announce and sleep behind the read), then takes a
/// recursive read (and a timed one, deadline 0, which must get in at
/// once): both pass the waiting writer, or the main thread would wait for
/// a writer that waits for it (loom: deadlock). Seen: the main thread saw
/// WRITERS_WAITING before its recursive read.
///
/// Fails with `ReadKind::may_take` treating a recursive read as a plain
/// one (`past_writers = slept`): deadlock (the main thread asleep behind
/// the waiting writer).
fn recursive_read_past_waiting_writer<const PHASED: bool>() {
    let writer_waited = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_shared();
        let s1 = s.clone();
        let h = thread::spawn(move || s1.write());
        thread::yield_now();
        let word = s.l.state();
        s.l.lock_shared_recursive();
        assert!(
            s.l.lock_shared_recursive_until_ns(0),
            "a recursive read beside a read lock timed out"
        );
        s.read_section();
        // SAFETY: the three read locks taken above.
        unsafe {
            s.l.unlock_shared();
            s.l.unlock_shared();
            s.l.unlock_shared();
        }
        h.join().unwrap();
        if word & W != 0 {
            writer_waited.hit();
        }
        s.check(1);
    });
    writer_waited.assert_reached("WRITERS_WAITING seen before the recursive read");
}

/// Model 20: the main thread holds a read lock until the upgradable
/// reader is done: its upgrade with deadline 0 must return `false` (the
/// main thread stays inside), keep the upgradable read lock (the bit and a
/// read count) and leave the lock usable: a writer that arrives meanwhile
/// gets in after the main thread's release (it is spawned by the
/// upgradable reader once that holds, so that the main thread's join does
/// not wait for an upgradable reader queued behind the writer). Seen: the
/// writer arrived after the timeout (a flag set after it), when the lock
/// still held the WRITERS_WAITING the upgrade announced and left (nothing
/// clears it while a reader holds): it sleeps behind that bit without
/// announcing itself.
///
/// Fails with `upgrade_slow` returning `true` when the deadline has passed
/// (the assertion on its result); with a timed-out `upgrade_slow` clearing
/// WRITERS_WAITING before it returns: deadlock (the writer, asleep behind
/// the bit it found set, is never woken: the last reader out sees no
/// waiter bit).
fn timed_upgrade_while_reader_stays<const PHASED: bool>() {
    let after_timeout = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        let timed_out = Arc::new(AtomicBool::new(false));
        s.l.lock_shared();
        let (s1, t1) = (s.clone(), timed_out.clone());
        let hu = thread::spawn(move || {
            s1.l.lock_upgradable();
            let (s2, t2) = (s1.clone(), t1.clone());
            let hw = thread::spawn(move || {
                // SeqCst: a test flag, not ordering the lock.
                let after = t2.load(Ordering::SeqCst);
                s2.write();
                after
            });
            // SAFETY: the upgradable read lock taken above.
            let got = unsafe { s1.l.upgrade_until_ns(0) };
            assert!(!got, "an upgrade got in beside a reader");
            // SeqCst: as above.
            t1.store(true, Ordering::SeqCst);
            s1.upgradable_section();
            // SAFETY: a failed upgrade keeps the upgradable read lock.
            unsafe { s1.l.unlock_upgradable() };
            hw
        });
        let hw = hu.join().unwrap();
        s.read_section();
        // SAFETY: the read lock taken above.
        unsafe { s.l.unlock_shared() };
        if hw.join().unwrap() {
            after_timeout.hit();
        }
        s.check(1);
        s.check_upgradable(1);
        s.reuse();
    });
    after_timeout.assert_reached("the writer arrived after the upgrade timed out");
}

/// Model 21: the main thread holds the upgradable read lock while a
/// timed upgradable reader (deadline 0) and a plain reader arrive; it
/// upgrades, writes, downgrades to an upgradable read and releases it. The
/// timed reader gets in after the release or gives up (READERS_WAITING
/// announced behind the bit may stay behind it: the plain reader may
/// sleep behind that bit, and a release of the bit must wake it). Seen:
/// the timed upgradable read gave up, and got in.
///
/// Fails with `read_slow` reporting success when its deadline has passed
/// (`return true` after `wait::remaining`): concurrent `UnsafeCell`
/// writes of `u` (a second upgradable reader inside).
fn timed_upgradable_beside_upgrader<const PHASED: bool>() {
    let gave_up = branch();
    let got_in = branch();
    run_model(loom_tunables(), 2, move || {
        let s = Arc::new(Shared::<PHASED>::new());
        s.l.lock_upgradable();
        let (s1, s2) = (s.clone(), s.clone());
        let hc = thread::spawn(move || {
            if !s1.l.lock_upgradable_until_ns(0) {
                return false;
            }
            s1.upgradable_section();
            // SAFETY: the upgradable read lock taken above.
            unsafe { s1.l.unlock_upgradable() };
            true
        });
        let hr = thread::spawn(move || s2.read());
        thread::yield_now();
        s.upgradable_section();
        // SAFETY: the upgradable read lock taken above.
        unsafe { s.l.upgrade() };
        s.upgraded_section();
        // SAFETY: the upgrade returned the write lock.
        unsafe { s.l.downgrade_to_upgradable() };
        s.upgradable_section();
        // SAFETY: the downgrade left the upgradable read lock.
        unsafe { s.l.unlock_upgradable() };
        let got = hc.join().unwrap();
        hr.join().unwrap();
        if got {
            got_in.hit();
        } else {
            gave_up.hit();
        }
        s.check(1);
        s.check_upgradable(2 + got as usize);
        s.reuse();
    });
    gave_up.assert_reached("the timed upgradable read gave up");
    got_in.assert_reached("the timed upgradable read got in");
}

/// Models 8-10 observe a turn: with turns (`PHASED`) some execution
/// must reach `what`; on the floor none may (it has no turns, so the
/// observation shows the turn and nothing else).
fn turns_only<const PHASED: bool>(b: &Branch, what: &str) {
    if PHASED {
        b.assert_reached(what);
    } else {
        assert_eq!(b.count(), 0, "the floor (no turns) reached: {what}");
    }
}

/// Each model, once on the floor (`floor::`) and once with turns
/// (`phased::`).
macro_rules! floor_and_phased {
    ($($model:ident),* $(,)?) => {
        mod floor {
            $(#[test]
            fn $model() {
                super::$model::<false>();
            })*
        }
        mod phased {
            $(#[test]
            fn $model() {
                super::$model::<true>();
            })*
        }
    };
}

floor_and_phased!(
    writer_and_reader,
    writer_yielding_and_reader,
    two_writers_and_reader,
    two_readers_and_writer,
    timed_reader_beside_writer,
    timed_writer_beside_writer,
    timed_writer_between_readers,
    slept_reader_passes_waiting_writer,
    reservation_keeps_new_readers_out,
    slept_reader_leaves_readers_waiting,
    upgrader_reader_writer,
    two_upgraders,
    upgrade_waits_for_reader,
    upgradable_behind_unlock_upgradable,
    upgradable_behind_downgrade_upgradable,
    downgrade_lets_reader_in,
    downgrade_to_upgradable_lets_reader_in,
    timed_upgrade_beside_readers,
    recursive_read_past_waiting_writer,
    timed_upgrade_while_reader_stays,
    timed_upgradable_beside_upgrader,
);

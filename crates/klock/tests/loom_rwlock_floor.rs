//! Loom models of the floor rwlock
//! (`klock::internal::rwlock::RawRwLockFloorOf<PHASED>`: a state word with
//! the reader count in bits 0-29, all ones = write-locked, bit 30
//! READERS_WAITING, bit 31 WRITERS_WAITING, and a `writer_notify` word
//! writers sleep on; see `crates/klock/src/rwlock/floor.rs`), both
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
//! 2 it explores about 164 000, 16 s). At most about 11 000 executions
//! and 1 s a model; 7 s for the file on one test thread, 6-12 s with
//! `cargo test`'s threads (2-vCPU host, idle to loaded).
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
//! Writer batches (`RawRwLockFloorOf<true, WRITER_BATCH_US>`,
//! `RawRwLockBatched`) are not modelled here: under loom there is no time,
//! so the readers would never have waited long enough for their turn.
#![cfg(loom)]

mod loom_common;
use loom_common::{Branch, loom_tunables, run_model};

use klock::internal::rwlock::{
    RW_FLOOR_MASK, RW_FLOOR_READERS_WAITING, RW_FLOOR_WRITERS_WAITING, RawRwLockFloorOf,
};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;

const R: u32 = RW_FLOOR_READERS_WAITING;
const W: u32 = RW_FLOOR_WRITERS_WAITING;

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
}

// SAFETY: `a` and `b` are written only under the write lock and read only
// under a lock (loom checks both).
unsafe impl<const PHASED: bool> Sync for Shared<PHASED> {}

impl<const PHASED: bool> Shared<PHASED> {
    fn new() -> Self {
        Shared {
            l: RawRwLockFloorOf::new(),
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
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
);

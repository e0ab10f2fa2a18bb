//! Loom models of the floor rwlock
//! (`klock::internal::rwlock::RawRwLockFloor`, std's futex rwlock protocol:
//! a state word with the reader count in bits 0-29, all ones = write-locked,
//! bit 30 READERS_WAITING, bit 31 WRITERS_WAITING, and a `writer_notify`
//! word writers sleep on; see `crates/klock/src/rwlock/floor.rs`).
//!
//! Run: `.ci/loom --test loom_rwlock_floor` (CI's settings: `--cfg loom`,
//! release with debug assertions, `stats`, LOOM_MAX_PREEMPTIONS=2). Under
//! loom `RawRwLockFloor::new()` is a plain fn and the lock_api impls do not
//! exist: the models use the inherent methods.
//!
//! Models (every one at CI's bound 2; at most about 11 000 executions and
//! 1 s each, 3 s for the file):
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
//!    no writer asleep and must wake the readers instead.
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
//! abandoned WRITERS_WAITING). A waiter bit seen means a waiter announced
//! that it would sleep; loom explores both its sleep and the wake-up
//! landing before it. Model 2 exists because loom's DPOR compares an
//! access to an atomic only with the last access to it: the reader's
//! announcing CAS follows its own load of the word, so loom never
//! schedules that CAS before the holding writer's plain load and model 1
//! cannot show READERS_WAITING from inside (the yield makes the reader run
//! while the writer holds).
//!
//! Deliberate breaks of `floor.rs` (checked by hand, not kept) and the
//! models that fail on each (at bound 2):
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
#![cfg(loom)]

mod loom_common;
use loom_common::{Branch, loom_tunables, run_model};

use klock::internal::rwlock::{RW_FLOOR_READERS_WAITING, RW_FLOOR_WRITERS_WAITING, RawRwLockFloor};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

const R: u32 = RW_FLOOR_READERS_WAITING;
const W: u32 = RW_FLOOR_WRITERS_WAITING;

/// Two fields protected by a floor rwlock: a writer adds 1 to each, one
/// after the other; a reader checks they are equal.
struct Shared {
    l: RawRwLockFloor,
    a: UnsafeCell<usize>,
    b: UnsafeCell<usize>,
}

// SAFETY: `a` and `b` are written only under the write lock and read only
// under a lock (loom checks both).
unsafe impl Sync for Shared {}

impl Shared {
    fn new() -> Self {
        Shared {
            l: RawRwLockFloor::new(),
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
#[test]
fn writer_and_reader() {
    static WRITER_WAITED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        let bits = s.write();
        let rbits = h.join().unwrap();
        if bits & W != 0 || rbits & W != 0 {
            WRITER_WAITED.hit();
        }
        s.check(1);
    });
    WRITER_WAITED.assert_reached("WRITERS_WAITING was seen (the writer waited behind the reader)");
}

/// Model 2: model 1 with a `yield_now` in the write section before it
/// reads the word, so that some execution shows the reader announced
/// behind the holding writer (loom's DPOR does not schedule the reader's
/// announcing CAS before the holder's plain load: it compares an access
/// only with the last one to the atomic, here the reader's own load).
#[test]
fn writer_yielding_and_reader() {
    static READER_WAITED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || s1.read());
        let bits = s.write_with(true);
        h.join().unwrap();
        if bits & R != 0 {
            READER_WAITED.hit();
        }
        s.check(1);
    });
    READER_WAITED.assert_reached("the writer saw READERS_WAITING (a reader waited behind it)");
}

/// Model 3: two writers and a reader.
#[test]
fn two_writers_and_reader() {
    static BOTH_WAITED: Branch = Branch::new();
    static WRITER_WAITED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hw = thread::spawn(move || s1.write());
        let hr = thread::spawn(move || s2.read());
        let bits = s.write();
        let wbits = hw.join().unwrap();
        let rbits = hr.join().unwrap();
        if bits == R | W || wbits == R | W {
            BOTH_WAITED.hit();
        }
        if (bits | wbits | rbits) & W != 0 {
            WRITER_WAITED.hit();
        }
        s.check(2);
    });
    BOTH_WAITED.assert_reached("a writer saw both waiter bits (a reader and a writer waited)");
    WRITER_WAITED.assert_reached("WRITERS_WAITING was seen (a writer waited)");
}

/// Model 4: two readers and a writer.
#[test]
fn two_readers_and_writer() {
    static READER_BEHIND_WAITING_WRITER: Branch = Branch::new();
    static WRITER_WAITED: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hr = thread::spawn(move || s1.read());
        let hw = thread::spawn(move || s2.write());
        let bits = s.read();
        let rbits = hr.join().unwrap();
        let wbits = hw.join().unwrap();
        if bits == R | W || rbits == R | W {
            READER_BEHIND_WAITING_WRITER.hit();
        }
        if (bits | rbits | wbits) & W != 0 {
            WRITER_WAITED.hit();
        }
        s.check(1);
    });
    READER_BEHIND_WAITING_WRITER.assert_reached(
        "a reader inside saw both bits (the other reader waited behind the waiting writer)",
    );
    WRITER_WAITED.assert_reached("WRITERS_WAITING was seen (the writer waited)");
}

/// Model 5: a timed reader (deadline 0) beside a writer. It may get in or
/// give up (after announcing READERS_WAITING, which the writer's unlock
/// clears).
#[test]
fn timed_reader_beside_writer() {
    static TIMED_OUT: Branch = Branch::new();
    static GOT_IN: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            if s1.l.lock_shared_until_ns(0) {
                s1.read_section();
                // SAFETY: the read lock taken above.
                unsafe { s1.l.unlock_shared() };
                true
            } else {
                false
            }
        });
        s.write();
        if h.join().unwrap() {
            GOT_IN.hit();
        } else {
            TIMED_OUT.hit();
        }
        s.check(1);
        s.reuse();
    });
    TIMED_OUT.assert_reached("the timed reader gave up");
    GOT_IN.assert_reached("the timed reader got in");
}

/// Model 6: a timed writer (deadline 0) beside a writer. It may get in or
/// give up (after announcing WRITERS_WAITING, which the holder's unlock
/// clears, waking nobody).
#[test]
fn timed_writer_beside_writer() {
    static TIMED_OUT: Branch = Branch::new();
    static GOT_IN: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            if s1.l.lock_exclusive_until_ns(0) {
                s1.write_section(false);
                // SAFETY: the write lock taken above.
                unsafe { s1.l.unlock_exclusive() };
                true
            } else {
                false
            }
        });
        s.write();
        let got = h.join().unwrap();
        if got {
            GOT_IN.hit();
        } else {
            TIMED_OUT.hit();
        }
        s.check(1 + got as usize);
        s.reuse();
    });
    TIMED_OUT.assert_reached("the timed writer gave up");
    GOT_IN.assert_reached("the timed writer got in");
}

/// Model 7: the main thread reads; a timed writer (deadline 0) and a plain
/// reader arrive. A timed writer that gives up after announcing leaves
/// WRITERS_WAITING, a reader may sleep behind it, and the last reader's
/// unlock then wakes no writer and must wake the readers.
#[test]
fn timed_writer_between_readers() {
    static ABANDONED_BIT_SLEEPER: Branch = Branch::new();
    static TIMED_OUT: Branch = Branch::new();
    run_model(loom_tunables(), 2, || {
        let s = Arc::new(Shared::new());
        let (s1, s2) = (s.clone(), s.clone());
        let hw = thread::spawn(move || {
            if s1.l.lock_exclusive_until_ns(0) {
                s1.write_section(false);
                // SAFETY: the write lock taken above.
                unsafe { s1.l.unlock_exclusive() };
                true
            } else {
                false
            }
        });
        let hr = thread::spawn(move || s2.read());
        let bits = s.read();
        let got = hw.join().unwrap();
        hr.join().unwrap();
        if !got {
            TIMED_OUT.hit();
            if bits == R | W {
                ABANDONED_BIT_SLEEPER.hit();
            }
        }
        s.check(got as usize);
        s.reuse();
    });
    TIMED_OUT.assert_reached("the timed writer gave up");
    ABANDONED_BIT_SLEEPER.assert_reached(
        "the timed writer gave up while the holding reader saw both bits \
         (a reader waited behind the abandoned WRITERS_WAITING)",
    );
}

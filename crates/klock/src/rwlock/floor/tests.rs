//! Unit tests of the floor rwlock: its predicates and transitions against
//! the module docs' diagrams, and small threaded checks.

use super::*;
use std::sync::Arc;

const W: u32 = RW_FLOOR_WRITERS_WAITING;
const R: u32 = RW_FLOOR_READERS_WAITING;
const X: u32 = RW_FLOOR_WRITE_LOCKED;

fn with_state(s: u32) -> RawRwLockFloor {
    let l = RawRwLockFloor::new();
    l.state.store(s, Ordering::Relaxed);
    l
}

#[test]
fn size_is_four_words_at_most_16_bytes() {
    assert_eq!(std::mem::size_of::<RawRwLockFloor>(), 16);
}

#[test]
fn predicates_read_the_layout() {
    assert!(is_read_lockable(0));
    assert!(is_read_lockable(5));
    assert!(!is_read_lockable(X));
    assert!(!is_read_lockable(1 | W), "writer preference");
    assert!(!is_read_lockable(1 | R));
    assert!(!is_read_lockable(RW_FLOOR_MAX_READERS));
    assert!(at_max_readers(RW_FLOOR_MAX_READERS | W));
    assert!(is_write_locked(X | R | W));
    assert!(is_unlocked(R | W));
    assert!(!is_unlocked(X));
}

#[test]
fn add_reader_is_n_to_n_plus_1() {
    let l = with_state(3);
    assert!(l.add_read(3, ReadKind::Plain).is_ok());
    assert_eq!(l.state(), 4);
    assert_eq!(l.add_read(3, ReadKind::Plain), Err(4));
}

#[test]
fn claim_write_is_0_to_write_locked_keeping_bits() {
    let l = with_state(R);
    assert!(l.claim_write(R, W).is_ok());
    assert_eq!(l.state(), X | R | W);
}

#[test]
fn write_unlock_wakes_readers_and_clears_their_bit() {
    // (W,R-) -> (0,--): nobody is asleep, so the wake finds no one, but
    // the bit must go.
    let l = with_state(X | R);
    // SAFETY: the state says write-held (a test stands in for the holder).
    unsafe { l.unlock_exclusive() };
    assert_eq!(l.state(), 0);
}

#[test]
fn write_unlock_prefers_a_writer_and_keeps_readers_waiting() {
    // (W,RW) -> (0,R-) and a writer wake; with no writer asleep the
    // readers are woken and the bit cleared: (0,--).
    let l = with_state(X | R | W);
    // SAFETY: as above.
    unsafe { l.unlock_exclusive() };
    assert_eq!(l.state(), 0, "no writer slept: readers woken");
    assert_eq!(l.writer_notify.load(Ordering::Relaxed), 1);
}

#[test]
fn last_reader_wakes_a_writer() {
    let l = with_state(1 | W);
    // SAFETY: the state says one reader (the test).
    unsafe { l.unlock_shared() };
    assert_eq!(l.state(), 0);
    assert_eq!(l.writer_notify.load(Ordering::Relaxed), 1);
    // Not the last: no wake.
    let l = with_state(2 | W);
    // SAFETY: as above.
    unsafe { l.unlock_shared() };
    assert_eq!(l.state(), 1 | W);
    assert_eq!(l.writer_notify.load(Ordering::Relaxed), 0);
}

fn phased(s: u32) -> RawRwLockPhased {
    let l = RawRwLockPhased::new();
    l.state.store(s, Ordering::Relaxed);
    l
}

#[test]
fn turns_write_unlock_gives_waiting_readers_the_turn() {
    // (W,RW) -> (0,--): readers woken, and a writer (it announces
    // itself again when it finds them inside).
    let l = phased(X | R | W);
    // SAFETY: the state says write-held (the test stands in for the holder).
    unsafe { l.unlock_exclusive() };
    assert_eq!(l.state(), 0);
    assert_eq!(l.writer_notify.load(Ordering::Relaxed), 1);
    // The floor keeps READERS_WAITING for the writer it prefers; with no
    // writer asleep it wakes the readers too.
    let f = with_state(X | R | W);
    // SAFETY: as above.
    unsafe { f.unlock_exclusive() };
    assert_eq!(f.state(), 0);
}

#[test]
fn turns_last_reader_out_keeps_the_reservation_only_for_a_sleeper() {
    // (1,-W) -> (0,-W) and a writer wake; no writer is asleep, so the
    // reservation is dropped: (0,--).
    let l = phased(1 | W);
    // SAFETY: the state says one reader (the test).
    unsafe { l.unlock_shared() };
    assert_eq!(l.state(), 0);
    assert_eq!(l.writer_notify.load(Ordering::Relaxed), 1);
    // (1,R-) -> (0,--): readers left behind a writer that gave up.
    let l = phased(1 | R);
    // SAFETY: as above.
    unsafe { l.unlock_shared() };
    assert_eq!(l.state(), 0);
}

#[test]
fn turns_admit_a_reader_that_slept_past_waiter_bits_only() {
    assert!(is_turn_read_lockable(3 | R | W));
    assert!(!is_turn_read_lockable(X | R | W));
    assert!(!is_turn_read_lockable(RW_FLOOR_MAX_READERS));
}

#[test]
fn a_recursive_read_passes_a_waiting_writer_not_a_holder() {
    let l = with_state(1 | W);
    assert!(!l.try_lock_shared());
    assert!(l.try_lock_shared_recursive());
    assert_eq!(l.state(), 2 | W);
    let l = with_state(X | W);
    assert!(!l.try_lock_shared_recursive());
    // A second read while a writer waits for the first.
    let l = Arc::new(RawRwLockBatched::new());
    l.lock_shared();
    let l2 = l.clone();
    let w = std::thread::spawn(move || {
        l2.lock_exclusive();
        // SAFETY: taken just above.
        unsafe { l2.unlock_exclusive() };
    });
    while l.state() & W == 0 {
        std::thread::yield_now();
    }
    assert!(!l.try_lock_shared());
    l.lock_shared_recursive();
    // SAFETY: the two read locks taken above.
    unsafe {
        l.unlock_shared();
        l.unlock_shared();
    }
    w.join().unwrap();
    assert_eq!(l.state(), 0);
}

#[test]
fn a_waiting_writer_stops_new_readers() {
    let l = with_state(1 | W);
    assert!(!l.try_lock_shared());
    assert!(!l.lock_shared_until_ns(0));
    assert_eq!(l.state(), 1 | W | R, "the timed reader announced itself");
}

#[test]
fn timed_sides_time_out_on_a_held_lock() {
    let l = RwLockFloor::new(0);
    let g = l.write();
    assert!(
        l.try_read_for(std::time::Duration::from_millis(5))
            .is_none()
    );
    assert!(
        l.try_write_for(std::time::Duration::from_millis(5))
            .is_none()
    );
    drop(g);
    assert!(
        l.try_write_for(std::time::Duration::from_millis(5))
            .is_some()
    );
    let r = l.read();
    assert!(
        l.try_read_for(std::time::Duration::from_millis(5))
            .is_some()
    );
    drop(r);
    assert!(!l.is_locked());
}

#[test]
fn readers_and_writers_count_exactly() {
    count_exactly::<false, 0>();
    count_exactly::<true, 0>();
    count_exactly::<true, WRITER_BATCH_US>();
}

fn count_exactly<const PHASED: bool, const B: u32>() {
    let l = Arc::new(lock_api::RwLock::<RawRwLockFloorOf<PHASED, B>, _>::new((
        0u64, 0u64,
    )));
    let hs: Vec<_> = (0..8)
        .map(|i| {
            let l = l.clone();
            std::thread::spawn(move || {
                for _ in 0..3_000 {
                    if i % 2 == 0 {
                        let mut g = l.write();
                        g.0 += 1;
                        g.1 += 1;
                    } else {
                        let g = l.read();
                        assert_eq!(g.0, g.1, "torn read");
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(l.read().0, 12_000);
    assert!(!l.is_locked());
    // No timeouts here: every waiter bit set was cleared by a wake.
    // SAFETY: `raw` only reads the word; no guard is forged.
    assert_eq!(unsafe { l.raw() }.state(), 0);
}

/// The readers' turn behind a writer batch wakes nobody when the readers
/// that set READERS_WAITING timed out: it must pass the turn on to the
/// writers, or WRITERS_WAITING stays on a free lock that no release will
/// see (found by the fork test; it left `(0,-W)`).
#[test]
fn batched_readers_turn_that_wakes_no_reader_passes_to_the_writers() {
    let l = RawRwLockBatched::new();
    l.state.store(X | R | W, Ordering::Relaxed);
    let long_ago = now_us().wrapping_sub(WRITER_BATCH_US * 10);
    l.readers_since.store(long_ago, Ordering::Relaxed);
    // SAFETY: the state says write-locked (a unit test of the word).
    unsafe { l.unlock_exclusive() };
    assert_eq!(
        l.state(),
        0,
        "no reader and no writer asleep: free, no bits"
    );
    assert_eq!(
        l.writer_notify.load(Ordering::Relaxed),
        1,
        "a writer was called"
    );
}

//! klock's competitors: one registry line per lock (a `lock_api` lock needs no adapter
//! of its own: wrap it in [`LockApiMutex`] or [`LockApiRwLock`]).
//! Names start with `klock_`; the description is one line.

use super::entry::LockEntry;
use crate::adapter::{LockApiMutex, LockApiRwLock};
use klock::internal::mutex::{RawMutexBarge, RawMutexFloor, RawMutexGrant};
use klock::internal::rwlock::{RawRwLockBatched, RawRwLockFloor, RawRwLockPhased};
use klock::{
    Native, Pv, PvBase, RawQSpinLock, RawTasLock, RawTasParkLock, RawTasSleepLock, RawTicketLock,
    Unfair,
};
use klock::{RawMutex, RawRwLock, SpinNoQueue, SpinOff, SpinOsq, SpinPlain};

/// Registry lines for klock's locks: spinlocks, mutex variants, rwsem variants (seed
/// 003). The rwsem's reader behaviour is the process-wide tunable `KLOCK_RWSEM_READER`,
/// so steal vs spin is compared by running lockbench twice, not by two registry names.
pub fn entries() -> Vec<LockEntry> {
    vec![
        LockEntry::mutex::<LockApiMutex<RawTasLock<Native>>>(
            "klock_tas",
            "klock TAS: test-and-test-and-set byte lock with backoff (unfair byte lock)",
        ),
        LockEntry::mutex::<LockApiMutex<RawTasSleepLock<Pv>>>(
            "klock_tas_sleep",
            "klock TTAS + sleep: plain-store unlock; sleepers announce themselves and pay a membarrier",
        ),
        LockEntry::mutex::<LockApiMutex<RawTasParkLock<Pv>>>(
            "klock_tas_park",
            "klock TTAS + park: plain-store unlock; waiters park behind a membarrier, one wake in flight, grant past 1 ms (klock::SpinLock)",
        ),
        LockEntry::mutex::<LockApiMutex<RawTicketLock<Native>>>(
            "klock_ticket",
            "klock ticket lock, native (pure spinning, FIFO)",
        ),
        LockEntry::mutex::<LockApiMutex<RawTicketLock<Pv>>>(
            "klock_pvticket",
            "klock PV ticket lock: spin, then sleep; unlock wakes the next ticket (pvticketlock)",
        ),
        LockEntry::mutex::<LockApiMutex<RawQSpinLock<Native>>>(
            "klock_qspin",
            "klock native qspinlock: pending bit + MCS queue, pure spinning",
        ),
        LockEntry::mutex::<LockApiMutex<RawQSpinLock<PvBase>>>(
            "klock_pvqspin_base",
            "klock PV qspinlock, no kick-ahead/wait-early (pvqspinlock 4.2-rc1)",
        ),
        LockEntry::mutex::<LockApiMutex<RawQSpinLock<Pv>>>(
            "klock_pvqspin",
            "klock PV qspinlock + wait-early (+ kick-ahead if KLOCK_KICK_AHEAD>0)",
        ),
        LockEntry::mutex::<LockApiMutex<RawQSpinLock<Unfair>>>(
            "klock_unfair",
            "klock queued unfair lock: steal while the head does not claim; bounded (klock::SpinLock until issue 33)",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutex<SpinOsq>>>(
            "klock_mutex",
            "klock mutex: OSQ-queued optimistic spinning, FIFO sleepers, handoff",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutex<SpinOff>>>(
            "klock_mutex_nospin",
            "klock mutex without optimistic spinning (sleeps at once)",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutex<SpinNoQueue>>>(
            "klock_mutex_noqueue",
            "klock mutex, ablation: every spinner polls the owner (no OSQ)",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutex<SpinPlain>>>(
            "klock_mutex_plain",
            "klock mutex, floor spin: a 2 µs read-only spin that stops at waiters, then the FIFO wait list with hand-off (no OSQ, no yields)",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutexBarge>>(
            "klock_mutex_barge",
            "klock barging mutex: one word with an exact sleeper count, one wake-up in flight, hand-off only to a running waiter past 1 ms",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutexGrant>>(
            "klock_mutex_grant",
            "klock granting floor: std's futex protocol plus a hand-off to a running waiter that waited past 1 ms",
        ),
        LockEntry::mutex::<LockApiMutex<RawMutexFloor>>(
            "klock_mutex_floor",
            "klock floor mutex: std's futex protocol (0/1/2 word, short read-only spin, barging)",
        ),
        LockEntry::rwlock::<LockApiRwLock<RawRwLock<SpinOsq>>>(
            "klock_rwsem",
            "klock rwsem (seed 003): writers spin via OSQ, hand-off, readers per KLOCK_RWSEM_READER (4 steal+wait default, 1 steal, 2 spin, 3 join, 0 queue)",
        ),
        LockEntry::rwlock::<LockApiRwLock<RawRwLockFloor>>(
            "klock_rwlock_floor",
            "klock floor rwlock: std's futex rwlock protocol (one state word + a writer futex, short read-only spin, writer-preferring)",
        ),
        LockEntry::rwlock::<LockApiRwLock<RawRwLockPhased>>(
            "klock_rwlock_phased",
            "klock floor rwlock with turns: a woken writer's reservation, and a writer's unlock gives sleeping readers the next turn",
        ),
        LockEntry::rwlock::<LockApiRwLock<RawRwLockBatched>>(
            "klock_rwlock_batched",
            "klock floor rwlock with turns and writer batches: writers hand on among themselves until readers waited 0.2 ms, then the readers that slept",
        ),
        LockEntry::rwlock::<LockApiRwLock<RawRwLock<SpinOff>>>(
            "klock_rwsem_nospin",
            "klock rwsem without optimistic spinning (writers sleep at once); readers per KLOCK_RWSEM_READER",
        ),
    ]
}

/// The rwsem reader policy in effect (`KLOCK_RWSEM_READER`, read through
/// klock's tunables), for report headers.
///
/// ```
/// assert!(lockbench::locks::klock::rwsem_reader_mode().contains('('));
/// ```
pub fn rwsem_reader_mode() -> String {
    let v = klock::tune::get().rwsem_reader;
    let name = match v {
        0 => "queue",
        1 => "steal",
        2 => "spin on a writer owner",
        3 => "join other readers",
        _ => "steal, then wait running",
    };
    format!("{v} ({name})")
}

//! Contention statistics (KLOCK_STATS=1|2): filled in by the stats work.
/// Which family a lock belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family { Mutex, RwRead, RwWrite, Spin, Cond }
/// Read the configuration once (called from the interposer's initialisation).
pub fn init() {}
/// Are statistics on? Must be cheap (one relaxed load).
#[inline] pub fn enabled() -> bool { false }
/// A lock at `addr` was acquired; `contended`: its first attempt failed; `wait_ns`: time spent waiting.
pub fn acquired(_addr: usize, _f: Family, _contended: bool, _wait_ns: u64) {}
/// The lock at `addr` is about to be released by its holder (hold time ends).
pub fn released(_addr: usize, _f: Family) {}
/// Write the report (idempotent; called at exit and from the _exit/_Exit wrappers).
pub fn flush() {}

//! The registry entry: a competitor's name, kind and entry points. A [`LockEntry`]
//! is built with [`LockEntry::mutex`] or [`LockEntry::rwlock`]; those constructors
//! instantiate the generic runner for that type (`fn` pointers to
//! monomorphized code), so the hot loop never makes a `dyn` call per operation:
//!
//! ```
//! use lockbench::adapter::{LockApiMutex, LockApiRwLock};
//! use lockbench::locks::{LockEntry, LockKind};
//! let m = LockEntry::mutex::<LockApiMutex<parking_lot::RawMutex>>("pl_demo", "parking_lot::Mutex");
//! let rw = LockEntry::rwlock::<LockApiRwLock<parking_lot::RawRwLock>>("pl_rw_demo", "parking_lot::RwLock");
//! assert_eq!(m.name, "pl_demo");
//! assert_eq!(rw.kind, LockKind::RwLock);
//! ```

use crate::adapter::BenchLock;
use crate::runner::{self, RunOutput, RunSpec};

/// Whether a competitor is a mutex or a reader/writer lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// Exclusive lock only; usable in the `mutex` experiment.
    Mutex,
    /// Shared/exclusive lock; usable in both `rwlock` and `mutex` (writers only) experiments.
    RwLock,
}

impl LockKind {
    /// `"mutex"` or `"rwlock"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::RwLock => "rwlock",
        }
    }
}

/// One registered competitor: name, description, kind and monomorphized entry points.
#[derive(Clone, Copy, Debug)]
pub struct LockEntry {
    /// Name used on the command line and in reports (klock's start with `klock_`).
    pub name: &'static str,
    /// One-line description shown by `lockbench list`.
    pub desc: &'static str,
    /// Mutex or reader/writer lock.
    pub kind: LockKind,
    /// The contended runner instantiated for this lock type.
    pub run: fn(&RunSpec) -> RunOutput,
    /// Uncontended single-thread lock+unlock loop: `ops` iterations, returns ns/op;
    /// `true` takes the shared (read) side.
    pub uncontended: fn(u64, bool) -> f64,
}

impl LockEntry {
    /// Registers a mutex-like lock type.
    pub fn mutex<L: BenchLock>(name: &'static str, desc: &'static str) -> Self {
        LockEntry {
            name,
            desc,
            kind: LockKind::Mutex,
            run: runner::run::<L>,
            uncontended: runner::uncontended::<L>,
        }
    }
    /// Registers a reader/writer lock type (its `with_read` must be shared).
    pub fn rwlock<L: BenchLock>(name: &'static str, desc: &'static str) -> Self {
        LockEntry {
            kind: LockKind::RwLock,
            ..Self::mutex::<L>(name, desc)
        }
    }
}

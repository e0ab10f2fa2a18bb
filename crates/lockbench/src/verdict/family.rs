//! klock's lock families (the default lock and its variants) and which locks count
//! as their peers: not klock's, and plain spinlocks only where the family admits them.

use crate::locks::LockKind;

/// A family of klock locks: its default lock and its variants (seed reproductions
/// and ablations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// Short name: `SpinLock`, `Mutex`, `RwLock`.
    pub name: &'static str,
    /// The Rust type a user writes.
    pub api: &'static str,
    /// The lockbench name of the default lock.
    pub default: &'static str,
    /// The lockbench names of the variants.
    pub variants: &'static [&'static str],
    /// The kind of lock the peers must be (`None`: any).
    pub kind: Option<LockKind>,
    /// Whether plain spinlocks (locks that never sleep, [`is_spinning_peer`]) count as
    /// peers. A sleeping lock is not held against a pure spinlock, which wins while
    /// CPUs are free and collapses when they are not.
    pub spinning_peers: bool,
}

/// klock's lock families, in the order the verdict lists them.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "SpinLock",
        api: "klock::SpinLock",
        default: "klock_tas_park",
        variants: &[
            "klock_tas",
            "klock_tas_sleep",
            "klock_unfair",
            "klock_ticket",
            "klock_pvticket",
            "klock_qspin",
            "klock_pvqspin_base",
            "klock_pvqspin",
        ],
        kind: Some(LockKind::Mutex),
        spinning_peers: true,
    },
    Family {
        name: "Mutex",
        api: "klock::Mutex",
        default: "klock_mutex",
        variants: &[
            "klock_mutex_nospin",
            "klock_mutex_noqueue",
            "klock_mutex_pltree",
            "klock_mutex_floor",
            "klock_mutex_plain",
            "klock_mutex_barge",
            "klock_mutex_grant",
        ],
        kind: Some(LockKind::Mutex),
        spinning_peers: false,
    },
    Family {
        name: "RwLock",
        api: "klock::RwLock",
        default: "klock_rwlock_batched",
        variants: &[
            "klock_rwlock_floor",
            "klock_rwlock_phased",
            "klock_rwsem",
            "klock_rwsem_nospin",
        ],
        kind: Some(LockKind::RwLock),
        spinning_peers: false,
    },
    Family {
        name: "preload",
        api: "LD_PRELOAD=libklock_preload.so",
        default: "klock_preload",
        variants: &[],
        kind: None,
        spinning_peers: true,
    },
];

/// Whether `lock` is one of klock's (default or variant).
pub fn is_klock(lock: &str) -> bool {
    lock.starts_with("klock")
}

/// The family whose default lock is `lock`.
pub fn family_of_default(lock: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.default == lock)
}

/// The family `lock` is a variant of.
pub fn family_of_variant(lock: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.variants.contains(&lock))
}

/// Names of the plain spinning peers (they never sleep).
pub const SPINNING_PEERS: &[&str] = &["pthread_spin", "ttas", "ticket", "mcs"];

/// Whether `lock` is a plain spinlock that is not klock's (listed in
/// [`SPINNING_PEERS`] or described as never sleeping in the registry).
pub fn is_spinning_peer(lock: &str) -> bool {
    !is_klock(lock)
        && (SPINNING_PEERS.contains(&lock)
            || crate::locks::find(lock).is_some_and(|e| e.desc.contains("never sleeps")))
}

/// The kind of the registered lock `lock`.
pub fn kind_of(lock: &str) -> Option<LockKind> {
    crate::locks::find(lock).map(|e| e.kind)
}

//! The klock items this crate uses, in one place: klock's lock_api 0.5 raw
//! types and their tokens, the condvar, and the recursive-read extension
//! trait (all user-facing), and the lockdep hooks of klock's Rust locks
//! (`klock::internal::ldhook`: the inherent methods called here carry
//! none, so the lock_api 0.4 impls call them; feature `lockdep`).

pub(crate) use klock::internal::ldhook;
pub(crate) use klock::{
    MutexToken, RawCondvar, RawMutex, RawRwLock, RwLockRecursiveExt, WriteToken,
};

//! The klock items this crate uses, in one place: klock's lock_api 0.5 raw
//! types and their tokens, the condvar, and the recursive-read extension
//! trait (all user-facing; no `klock::internal` item).

pub(crate) use klock::{
    MutexToken, RawCondvar, RawMutex, RawRwLock, RwLockRecursiveExt, WriteToken,
};

//! The two types the locks hand to the validator: how an acquisition holds
//! its lock ([`Mode`]) and which lock instance it is ([`Lock`]).

/// How an acquisition holds (and waits for) its lock, as far as a deadlock
/// is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Exclusive: a mutex, a spinlock, a write lock.
    Write,
    /// Shared, on a lock whose new readers queue behind a waiting writer
    /// (glibc's `PREFER_WRITER_NONRECURSIVE_NP`, klock's fair rwsem).
    Read,
    /// Shared, on a reader-preferring lock: a reader never waits while the
    /// lock is read-held (glibc's default kind).
    ReadPassing,
}

impl Mode {
    /// Shared?
    pub fn is_read(self) -> bool {
        self != Mode::Write
    }
}

/// A lock instance's identity, from [`lock_stamped`](super::lock_stamped) or
/// [`lock_at`](super::lock_at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock(pub(super) u32);

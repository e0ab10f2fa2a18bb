//! The write side past the fast paths in `mod.rs`: the timed write lock
//! and the write slow path (`write_slow`: an unqueued try, optimistic
//! spinning (`spin.rs`) unless the policy, the owner hint or real-time
//! scheduling rules it out, then the wait list (`sleep.rs`)).
//!
//! Its part of the state diagram (module docs):
//!
//! ```text
//!  (0,-) --write: CAS--> (0,X)                                   (mod.rs; a failed CAS comes here)
//!  (x,X|..) or (n,W) --failed writer queues under WLOCK--> (..,W)  (sleep.rs)
//! ```

use super::raw::{Got, RawRwLock, WriteToken};
use super::word::Class;
use super::word::is_nonspinnable;
use crate::spin_policy::SpinPolicy;
use crate::stat::{self, Event};
use crate::sync::atomic::Ordering;
use crate::wait;

impl<S: SpinPolicy> RawRwLock<S> {
    /// Write lock with a deadline in [`wait::now_ns`] time: the token if it
    /// was taken (release it with [`unlock_exclusive`](Self::unlock_exclusive)),
    /// `None` if the deadline passed first (nothing is held). The
    /// `lock_api::RawRwLockTimed` methods go through it; public for the loom
    /// models (see [`lock_shared_until_ns`](Self::lock_shared_until_ns)).
    ///
    /// ```
    /// # use klock::internal::{condvar::RawCondvarInternals as _, mutex::{MutexTokenInternals as _, RawMutexInternals as _}, rwlock::RawRwLockInternals as _, spin::RawQSpinLockInternals as _};
    /// use klock::{RawRwLock, SpinOff};
    /// let l = RawRwLock::<SpinOff>::new();
    /// l.lock_shared();
    /// // A deadline already passed: fails at once.
    /// assert!(l.lock_exclusive_until_ns(0).is_none());
    /// unsafe { l.unlock_shared() };
    /// let t = l.lock_exclusive_until_ns(klock::internal::wait::now_ns() + 1_000_000).unwrap();
    /// unsafe { l.unlock_exclusive(t) };
    /// assert_eq!(l.count_word(), 0);
    /// ```
    pub(crate) fn lock_exclusive_until_ns(&self, deadline: u64) -> Option<WriteToken> {
        let id = crate::tid::current_id();
        (self.write_fast(id) || matches!(self.write_slow(id, Some(deadline)), Got::Yes))
            .then_some(WriteToken { id })
    }

    #[cold]
    pub(super) fn write_slow(&self, id: u32, deadline: Option<u64>) -> Got {
        let t = crate::tune::get();
        let got = if self.try_take(Class::Writer)
            || (S::SPIN
                && t.rwsem_spin != 0
                && !is_nonspinnable(self.owner.load(Ordering::Relaxed))
                && !wait::realtime() // INV-RT-NOSPIN
                && self.optimistic_spin(Class::Writer, id))
        {
            Got::Yes
        } else {
            self.wait(Class::Writer, deadline, false)
        };
        if matches!(got, Got::Yes) {
            self.set_writer_owned(id);
            stat::inc(Event::RwWriteSlow);
        }
        got
    }
}

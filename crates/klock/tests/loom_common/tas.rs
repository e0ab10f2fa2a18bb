//! The TAS sleep-lock models' shared scaffolding (`loom_tas_sleep.rs`,
//! `loom_tas_grant.rs`): a policy that never spins, a counter under a
//! `RawTasSleepLock<_, S>`, and the two- and three-thread models.

use super::run_model_reaching;
use klock::stat::Event;
use klock::{RawTasSleepLock, TasSleeper};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// No spin: a contended waiter announces itself and sleeps at once.
struct NoSpin;
impl klock::internal::spin::Seal for NoSpin {}
impl klock::WaitPolicy for NoSpin {
    const NAME: &'static str = "no_spin";
    const SLEEP: bool = true;
    const PATCHED: bool = false;
    const UNFAIR: bool = false;
    fn spin_ns() -> u64 {
        0
    }
    fn tas_backoff_ns() -> (u64, u64) {
        (1, 1)
    }
}

struct Shared<S: TasSleeper> {
    l: RawTasSleepLock<NoSpin, S>,
    n: UnsafeCell<usize>,
}

// SAFETY: `n` is accessed only under `l`.
unsafe impl<S: TasSleeper> Sync for Shared<S> {}

impl<S: TasSleeper> Shared<S> {
    fn new() -> Self {
        Shared {
            l: RawTasSleepLock::new(),
            n: UnsafeCell::new(0),
        }
    }

    fn incr(&self) {
        self.l.lock();
        // SAFETY: held under `l`.
        self.n.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: locked above.
        unsafe { self.l.unlock() };
    }

    fn check(&self, n: usize) {
        // SAFETY: every other thread has been joined.
        assert_eq!(self.n.with(|p| unsafe { *p }), n);
        assert!(!self.l.is_locked(), "word not clean");
    }
}

/// Two threads, two critical sections each.
pub fn two<S: TasSleeper>(t: klock::tune::Tunables, reach: &'static [Event]) {
    run_model_reaching(t, 2, reach, || {
        let s = Arc::new(Shared::<S>::new());
        let s1 = s.clone();
        let h = thread::spawn(move || {
            s1.incr();
            s1.incr();
        });
        s.incr();
        s.incr();
        h.join().unwrap();
        s.check(4);
    });
}

/// Three threads, one critical section each.
pub fn three<S: TasSleeper>(t: klock::tune::Tunables, reach: &'static [Event]) {
    run_model_reaching(t, 2, reach, || {
        let s = Arc::new(Shared::<S>::new());
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.incr())
            })
            .collect();
        s.incr();
        for h in hs {
            h.join().unwrap();
        }
        s.check(3);
    });
}

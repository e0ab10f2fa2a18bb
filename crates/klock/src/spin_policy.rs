//! How a sleeping lock's waiters spin before they sleep: the [`SpinPolicy`]
//! type parameter of the mutex (`RawMutex<S>`) and the rwsem
//! (`RawRwLock<S>`), so that each variant is monomorphised. A leaf: the
//! policies are data that the locks read.

/// How a sleeping lock spins before sleeping: a type parameter, so each variant is
/// monomorphised (no fast-path branch). Sealed: [`SpinOsq`], [`SpinNoQueue`],
/// [`SpinOff`].
///
/// ```
/// use klock::{SpinPolicy, SpinOsq, SpinOff};
/// assert!(SpinOsq::SPIN && SpinOsq::QUEUE);
/// assert!(!SpinOff::SPIN);
/// ```
pub trait SpinPolicy: sealed::Sealed + Send + Sync + 'static {
    /// Spin on the owner at all (the kernel's MUTEX_SPIN_ON_OWNER).
    const SPIN: bool;
    /// Queue spinners in an OSQ so only its head polls the owner (seed 004).
    const QUEUE: bool;
    /// Spin like the floor (`mutex/floor.rs`): a short read-only spin on the
    /// owner word that stops as soon as it shows waiters, then the wait list;
    /// no OSQ, no owner polling, no adaptive hint, no yield rounds.
    const PLAIN: bool = false;
    /// Name used by lockbench.
    const NAME: &'static str;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SpinOsq {}
    impl Sealed for super::SpinNoQueue {}
    impl Sealed for super::SpinOff {}
    impl Sealed for super::SpinPlain {}
}

/// Default policy: optimistic spinning, spinners queued in an OSQ (0 bytes).
///
/// ```
/// assert_eq!(<klock::SpinOsq as klock::SpinPolicy>::NAME, "osq");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinOsq;
/// Ablation (seed 004's "without the patch"): every spinner polls the owner
/// (0 bytes).
///
/// ```
/// assert!(!<klock::SpinNoQueue as klock::SpinPolicy>::QUEUE);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinNoQueue;
/// No optimistic spinning (MUTEX_SPIN_ON_OWNER off): sleep at once (0 bytes).
///
/// ```
/// assert!(!<klock::SpinOff as klock::SpinPolicy>::SPIN);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinOff;

/// The floor's waiting on klock's word and wait list: a read-only spin of
/// about 2 µs that stops when the word shows waiters, then the FIFO wait
/// list with its hand-off (0 bytes). Issue 32's design B.
///
/// ```
/// assert!(<klock::SpinPlain as klock::SpinPolicy>::PLAIN);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinPlain;

impl SpinPolicy for SpinPlain {
    const SPIN: bool = true;
    const QUEUE: bool = false;
    const PLAIN: bool = true;
    const NAME: &'static str = "plain";
}

impl SpinPolicy for SpinOsq {
    const SPIN: bool = true;
    const QUEUE: bool = true;
    const NAME: &'static str = "osq";
}
impl SpinPolicy for SpinNoQueue {
    const SPIN: bool = true;
    const QUEUE: bool = false;
    const NAME: &'static str = "noqueue";
}
impl SpinPolicy for SpinOff {
    const SPIN: bool = false;
    const QUEUE: bool = false;
    const NAME: &'static str = "nospin";
}

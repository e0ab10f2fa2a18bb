//! Every tunable number in klock, in one place (`docs/design.md`, principle P11).
//!
//! Each tunable has a default and an environment variable that overrides it.
//! The environment is read **once**, lazily, the first time any lock needs a
//! tunable ([`get`]). An invalid value (not a number, out of range, empty)
//! produces exactly one warning on stderr naming the variable and the allowed
//! range, and the default is used ([`Tunables::from_lookup`] runs the same
//! reader on any lookup). Variables are read through the crate's `env()`,
//! which ignores the environment in secure-execution mode (set-user-ID
//! programs and the like), so there every tunable keeps its default.
//!
//! At the same first read, every `KLOCK_*` variable in the environment that
//! no part of klock reads gets one warning naming the closest known name
//! (`closest_known`), e.g. `klock: unknown variable KLOCK_MUTX_SPIN_NS
//! (did you mean KLOCK_MUTEX_SPIN_NS?)`. The known names are one registry:
//! the tunables below ([`VARS`] and `KLOCK_SPIN`) and `OTHER_VARS`, the
//! variables of the interposer, the install script, the tools and the tests
//! (`known_vars`). In secure-execution mode nothing is read and nothing
//! is printed.
//!
//! **Spinlocks (`spin/`)**
//!
//! | variable | field | default | range | meaning |
//! |---|---|---|---|---|
//! | `KLOCK_SPIN_NS` | [`Tunables::spin_ns`] | 10000 | 0..=10000000 | PV queued spinlock: ns a waiter spins before it sleeps |
//! | `KLOCK_SPIN_HANDOFF_NS` | [`Tunables::spin_handoff_ns`] | 1000000 | 0..=1000000000 | parked TAS lock: a waiter's wait after which an unlock grants it the lock (0 = never) |
//! | `KLOCK_KICK_AHEAD` | [`Tunables::kick_ahead`] | 0 | 0..=64 | PV: sleeping successors woken ahead of their turn (0 = off) |
//! | `KLOCK_STEAL_NS` | [`Tunables::steal_threshold_ns`] | 1000000 | 0..=1000000000 | unfair lock: queue-head wait after which stealing stops |
//! | `KLOCK_SPIN_POLL_MAX_NS` | [`Tunables::spin_poll_max_ns`] | 16000 | 0..=100000 | unfair lock: waiters' poll backoff cap while the lock stays held (0 = poll continuously) |
//! | `KLOCK_SPIN_POLL_MIN_NS` | [`Tunables::spin_poll_min_ns`] | 100 | 0..=100000 | unfair lock: first delay of the poll backoff |
//! | `KLOCK_TAS_BACKOFF_MIN_NS` | [`Tunables::tas_backoff_min_ns`] | 50 | 0..=1000000 | TAS lock: first backoff |
//! | `KLOCK_TAS_BACKOFF_MAX_NS` | [`Tunables::tas_backoff_max_ns`] | 4000 | 0..=1000000 | TAS lock: backoff cap |
//! | `KLOCK_SPIN` | [`Tunables::spin_kind`] | `unfair` | `native`, `pv`, `pvbase`, `unfair`, `ticket`, `pvticket`, `tas` | variant behind the runtime-selected spinlock |
//!
//! **Mutex and condvar (`mutex/`, `condvar.rs`)**
//!
//! | variable | field | default | range | meaning |
//! |---|---|---|---|---|
//! | `KLOCK_MUTEX_HANDOFF_NS` | [`Tunables::mutex_handoff_ns`] | 2000000 | 0..=1000000000 | mutex: waiter wait after which the lock is handed to it |
//! | `KLOCK_MUTEX_SPIN_NS` | [`Tunables::mutex_spin_ns`] | 20000 | 0..=10000000 | mutex: optimistic spinning budget |
//! | `KLOCK_MUTEX_SPIN` | [`Tunables::mutex_spin`] | 1 | 0..=1 | mutex: optimistic spinning on (1) / off (0) |
//! | `KLOCK_MUTEX_SPIN_MAX_NS` | [`Tunables::mutex_spin_max_ns`] | 200000 | 0..=100000000 | mutex: cap on one spinning episode |
//! | `KLOCK_WAITLOCK_SPIN_NS` | [`Tunables::waitlock_spin_ns`] | 2000 | 0..=10000000 | mutex/condvar wait-list bit lock: spin before yield |
//! | `KLOCK_MUTEX_YIELDS` | [`Tunables::mutex_yields`] | 4 | 0..=64 | mutex: yield+trylock rounds after spinning, before sleeping |
//! | `KLOCK_MUTEX_FAIR_HANDOFF_NS` | [`Tunables::mutex_fair_handoff_ns`] | 1000000 | 0..=1000000000 | mutex: hand the lock to a first waiter that has been first this long, even asleep (0 = never) |
//! | `KLOCK_MUTEX_POLL_MAX_NS` | [`Tunables::mutex_poll_max_ns`] | 16000 | 0..=100000 | mutex: owner-poll backoff cap while one owner keeps the lock (0 = poll continuously) |
//! | `KLOCK_MUTEX_ADAPT` | [`Tunables::mutex_adapt`] | 1 | 0..=1 | mutex: adaptive spinning hint on (1) / off (0) |
//! | `KLOCK_MUTEX_ADAPT_PCT` | [`Tunables::mutex_adapt_pct`] | 25 | 0..=100 | mutex: recent spin success rate (%) below which a thread queues at once |
//! | `KLOCK_MUTEX_ADAPT_PROBE` | [`Tunables::mutex_adapt_probe`] | 16 | 1..=65536 | mutex: below it, every N-th slow path spins anyway |
//! | `KLOCK_MUTEX_ADAPT_PROBE_MAX` | [`Tunables::mutex_adapt_probe_max`] | 256 | 1..=65536 | mutex: cap of the probe interval, doubled by each failed probe |
//!
//! **RwLock (`rwlock/`, the rwsem)**
//!
//! | variable | field | default | range | meaning |
//! |---|---|---|---|---|
//! | `KLOCK_RWSEM_SPIN` | [`Tunables::rwsem_spin`] | 1 | 0..=1 | rwsem: optimistic spinning and readers' running waits on (1) / off (0) |
//! | `KLOCK_RWSEM_SPIN_NS` | [`Tunables::rwsem_spin_ns`] | 20000 | 0..=10000000 | rwsem: spin on one writer owner; a hand-off waiter's running wait |
//! | `KLOCK_RWSEM_SPIN_MAX_NS` | [`Tunables::rwsem_spin_max_ns`] | 200000 | 0..=100000000 | rwsem: cap on one spinning episode |
//! | `KLOCK_RWSEM_HANDOFF_NS` | [`Tunables::rwsem_handoff_ns`] | 4000000 | 0..=1000000000 | rwsem: first waiting writer's wait before it sets HANDOFF |
//! | `KLOCK_RWSEM_READER` | [`Tunables::rwsem_reader`] | 4 | 0..=4 | rwsem: failed reader: 0 queue, 1 steal, 2 spin on a writer owner, 3 join other readers, 4 steal then wait running |
//! | `KLOCK_RWSEM_WAKE_READERS` | [`Tunables::rwsem_wake_readers`] | 256 | 1..=256 | rwsem: most readers granted by one wake-up |
//! | `KLOCK_RWSEM_RSPIN_NS` | [`Tunables::rwsem_rspin_ns`] | 10000 | 0..=10000000 | rwsem: writer spin on a reader-owned lock (+500 ns/reader) |
//! | `KLOCK_RWSEM_READ_WAIT_NS` | [`Tunables::rwsem_read_wait_ns`] | 100000 | 0..=10000000 | rwsem, reader mode 4: running wait for a free lock before queueing |
//!
//! **Shared mechanisms (nodes, OSQ, owner polling)**
//!
//! | variable | field | default | range | meaning |
//! |---|---|---|---|---|
//! | `KLOCK_NODE_SLOTS` | [`Tunables::node_slots`] | 16383 | 1..=16383 | queue-node slots (threads that can queue at once) |
//! | `KLOCK_OSQ_STALE_NS` | [`Tunables::osq_stale_ns`] | 50000 | 0..=100000000 | OSQ: predecessor heartbeat age that looks descheduled (0 = off) |
//! | `KLOCK_OSQ_MAX_SPINNERS` | [`Tunables::osq_max_spinners`] | 0 | 0..=4096 | OSQ: most concurrent spinners of any lock that queues them (0 = effective CPUs - 1) |
//! | `KLOCK_POLL_MISS_TICKS` | [`Tunables::poll_miss_ticks`] | 40 | 0..=100000 | all locks: back off between owner polls only after a poll that missed the cache by more than this many TSC ticks (0 = always) |
//!
//! **Diagnostics (features `stats`, `chaos`)**
//!
//! | variable | field | default | range | meaning |
//! |---|---|---|---|---|
//! | `KLOCK_STATS` | [`Tunables::stats_report`] | 0 | 0..=2 | print the lock-event report at exit (feature `stats`; 2 is the interposer's level with call stacks, the same here) |
//! | `KLOCK_CHAOS_PERMILLE` | [`Tunables::chaos_permille`] | 100 | 0..=1000 | feature `chaos`: per-mille of marked windows that inject a delay |
//! | `KLOCK_CHAOS_SEED` | [`Tunables::chaos_seed`] | 0 | 0..=2^64-1 | feature `chaos`: seed of the injected delays (0 = from the clock) |
//!
//! ```
//! let t = klock::tune::get();
//! assert!(t.node_slots >= 1);
//! ```

use std::fmt;
use std::sync::OnceLock;

/// Which spinlock variant the runtime selector ([`crate::spin::RawSpin`]) uses.
///
/// ```
/// use klock::tune::SpinKind;
/// assert_eq!("unfair".parse::<SpinKind>(), Ok(SpinKind::Unfair));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpinKind {
    /// Native queued spinlock (pure spinning; dedicated CPUs only).
    Native,
    /// PV queued spinlock with kick-ahead and wait-early (seed 001 patches 1-5).
    Pv,
    /// PV queued spinlock without kick-ahead and wait-early ("pvqspinlock (4.2-rc1)").
    PvBase,
    /// Queued unfair lock (seed 001 patches 6, 8).
    Unfair,
    /// Native ticket lock.
    Ticket,
    /// PV ticket lock (spin, then sleep).
    PvTicket,
    /// Test-and-test-and-set byte lock with backoff.
    Tas,
}

impl SpinKind {
    /// All variants, in the order of the documentation table.
    ///
    /// ```
    /// assert_eq!(klock::tune::SpinKind::ALL.len(), 7);
    /// ```
    pub const ALL: [SpinKind; 7] = [
        SpinKind::Native,
        SpinKind::Pv,
        SpinKind::PvBase,
        SpinKind::Unfair,
        SpinKind::Ticket,
        SpinKind::PvTicket,
        SpinKind::Tas,
    ];

    /// The `KLOCK_SPIN` spelling of this variant.
    ///
    /// ```
    /// assert_eq!(klock::tune::SpinKind::PvTicket.name(), "pvticket");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            SpinKind::Native => "native",
            SpinKind::Pv => "pv",
            SpinKind::PvBase => "pvbase",
            SpinKind::Unfair => "unfair",
            SpinKind::Ticket => "ticket",
            SpinKind::PvTicket => "pvticket",
            SpinKind::Tas => "tas",
        }
    }
}

impl SpinKind {
    /// The variant spelt `name` (exactly, as in [`name`](Self::name)), or
    /// `None`. Allocates nothing: the interposer parses `KLOCK_SPIN` with it
    /// too, so that the names have one source.
    ///
    /// ```
    /// use klock::tune::SpinKind;
    /// assert_eq!(SpinKind::from_name(b"pvbase"), Some(SpinKind::PvBase));
    /// assert_eq!(SpinKind::from_name(b"fast"), None);
    /// ```
    pub fn from_name(name: &[u8]) -> Option<SpinKind> {
        SpinKind::ALL
            .into_iter()
            .find(|k| k.name().as_bytes() == name)
    }

    /// What `KLOCK_SPIN` allows, from [`ALL`](Self::ALL): "one of native,
    /// pv, ...".
    ///
    /// ```
    /// assert!(klock::tune::SpinKind::allowed().ends_with("pvticket, tas"));
    /// ```
    pub fn allowed() -> String {
        let names: Vec<&str> = SpinKind::ALL.iter().map(|k| k.name()).collect();
        format!("one of {}", names.join(", "))
    }
}

impl std::str::FromStr for SpinKind {
    type Err = TuneError;
    fn from_str(s: &str) -> Result<Self, TuneError> {
        SpinKind::from_name(s.trim().as_bytes()).ok_or_else(|| TuneError {
            var: "KLOCK_SPIN",
            value: s.to_string(),
            allowed: SpinKind::allowed(),
        })
    }
}

/// A rejected tunable value: which variable, what was given, what is allowed.
///
/// ```
/// let mut errors = Vec::new();
/// let lookup = |v: &str| (v == "KLOCK_KICK_AHEAD").then(|| "lots".to_string());
/// let _ = klock::tune::Tunables::from_lookup(lookup, |e| errors.push(e));
/// assert!(errors[0].to_string().contains("KLOCK_KICK_AHEAD"));
/// assert!(errors[0].to_string().contains("0..=64"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneError {
    /// The environment variable.
    pub var: &'static str,
    /// The rejected value, as given.
    pub value: String,
    /// Human-readable description of the allowed values.
    pub allowed: String,
}

impl fmt::Display for TuneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "klock: ignoring {}={:?}: expected {}; using the default",
            self.var, self.value, self.allowed
        )
    }
}

impl std::error::Error for TuneError {}

/// Description of one numeric tunable: its variable, default and range.
///
/// ```
/// let v = klock::tune::VARS.iter().find(|v| v.env == "KLOCK_SPIN_NS").unwrap();
/// assert!(v.min <= v.default && v.default <= v.max);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct VarInfo {
    /// Environment variable name.
    pub env: &'static str,
    /// Default value.
    pub default: u64,
    /// Smallest allowed value.
    pub min: u64,
    /// Largest allowed value.
    pub max: u64,
    /// One-line description.
    pub doc: &'static str,
}

/// Parse a decimal integer for `var` and check it against `min..=max`.
///
/// Leading/trailing whitespace and `_` digit separators are accepted; anything
/// else (empty, signs, garbage, overflow, out of range) is rejected.
pub(crate) fn parse_u64(
    var: &'static str,
    raw: &str,
    min: u64,
    max: u64,
) -> Result<u64, TuneError> {
    let err = || TuneError {
        var,
        value: raw.to_string(),
        allowed: format!("an integer in {min}..={max}"),
    };
    let t = raw.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || b == b'_') || t.starts_with('_') {
        return Err(err());
    }
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    let v: u64 = digits.parse().map_err(|_| err())?;
    if v < min || v > max {
        return Err(err());
    }
    Ok(v)
}

/// Parse a value for the variable `var` exactly as the start-up reader does.
/// Numeric variables yield their number, `KLOCK_SPIN` yields the index of the
/// variant in [`SpinKind::ALL`]. Unknown variables are rejected. The tests'
/// check of the start-up reader.
#[cfg(test)]
pub(crate) fn parse_value(var: &str, raw: &str) -> Result<u64, TuneError> {
    if var == "KLOCK_SPIN" {
        let k: SpinKind = raw.parse()?;
        return Ok(SpinKind::ALL.iter().position(|&x| x == k).unwrap_or(0) as u64);
    }
    match VARS.iter().find(|v| v.env == var) {
        Some(v) => parse_u64(v.env, raw, v.min, v.max),
        None => Err(TuneError {
            var: "KLOCK_?",
            value: format!("{var}={raw}"),
            allowed: "a known KLOCK_* variable".to_string(),
        }),
    }
}

/// Fixed ratios and check frequencies: numbers of the algorithms that are not
/// worth an environment variable, kept here so that every number lives in
/// this module.
pub mod fixed {
    /// The mutex owner-poll backoff starts at `KLOCK_MUTEX_POLL_MAX_NS /
    /// POLL_BACKOFF_MIN_DIVISOR` and doubles up to the cap.
    ///
    /// ```
    /// assert_eq!(klock::tune::fixed::POLL_BACKOFF_MIN_DIVISOR, 32);
    /// ```
    pub const POLL_BACKOFF_MIN_DIVISOR: u64 = 32;
    /// A spinning OSQ node publishes its heartbeat every this many polls
    /// (a power of two).
    ///
    /// ```
    /// assert!(klock::tune::fixed::OSQ_HEARTBEAT_EVERY.is_power_of_two());
    /// ```
    pub const OSQ_HEARTBEAT_EVERY: u32 = 64;
    /// A queued PV qspinlock waiter checks whether its predecessor sleeps
    /// (wait-early) every this many spins (a power of two; every spin under loom).
    ///
    /// ```
    /// assert!(klock::tune::fixed::PV_PREV_CHECK_EVERY.is_power_of_two());
    /// ```
    pub const PV_PREV_CHECK_EVERY: u32 = if cfg!(loom) { 1 } else { 64 };
    /// klock's internal registry lock (`crate::fork`, guarding the node-slot,
    /// thread-id and stats free lists): nanoseconds a contender spins before
    /// it sleeps on the lock word. Fixed, not read from the environment: the
    /// critical sections are a few list operations, and this lock must not
    /// depend on the tunables (which it helps to initialise fork-safely).
    ///
    /// ```
    /// assert_eq!(klock::tune::fixed::REGISTRY_SPIN_NS, 2_000);
    /// ```
    pub const REGISTRY_SPIN_NS: u64 = 2_000;
}

macro_rules! tunables {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident : $ty:ty = $default:literal, $env:literal, $min:literal ..= $max:literal;
    )*) => {
        /// All tunables, as read once from the environment (see the module docs).
        ///
        /// ```
        /// let t = klock::tune::Tunables::DEFAULT;
        /// assert_eq!(t.kick_ahead, 0);
        /// ```
        #[derive(Clone, Debug)]
        pub struct Tunables {
            $( $(#[doc = $doc])* pub $field: $ty, )*
            /// `KLOCK_SPIN`: variant behind the runtime-selected spinlock.
            pub spin_kind: SpinKind,
        }

        impl Tunables {
            /// The built-in defaults (no environment).
            ///
            /// ```
            /// assert_eq!(klock::tune::Tunables::DEFAULT.node_slots, 16383);
            /// ```
            pub const DEFAULT: Tunables = Tunables {
                $( $field: $default, )*
                spin_kind: SpinKind::Unfair,
            };

            /// Build the tunables from a variable lookup; every rejected value is
            /// passed to `warn` (once) and replaced by its default.
            ///
            /// ```
            /// use klock::tune::Tunables;
            /// let mut warnings = Vec::new();
            /// let t = Tunables::from_lookup(
            ///     |v| (v == "KLOCK_KICK_AHEAD").then(|| "x".to_string()),
            ///     |w| warnings.push(w),
            /// );
            /// assert_eq!(t.kick_ahead, Tunables::DEFAULT.kick_ahead);
            /// assert_eq!(warnings.len(), 1);
            /// ```
            pub fn from_lookup(
                lookup: impl Fn(&str) -> Option<String>,
                mut warn: impl FnMut(TuneError),
            ) -> Tunables {
                let mut t = Tunables::DEFAULT;
                $(
                    if let Some(raw) = lookup($env) {
                        match parse_u64($env, &raw, $min, $max) {
                            Ok(v) => t.$field = v as $ty,
                            Err(e) => warn(e),
                        }
                    }
                )*
                if let Some(raw) = lookup("KLOCK_SPIN") {
                    match raw.parse::<SpinKind>() {
                        Ok(k) => t.spin_kind = k,
                        Err(e) => warn(e),
                    }
                }
                t
            }
        }

        /// Every numeric tunable's variable, default and range.
        ///
        /// ```
        /// assert!(klock::tune::VARS.iter().any(|v| v.env == "KLOCK_STEAL_NS"));
        /// ```
        pub const VARS: &[VarInfo] = &[
            $( VarInfo {
                env: $env,
                default: $default as u64,
                min: $min,
                max: $max,
                doc: concat!($($doc, " "),*),
            }, )*
        ];
    };
}

tunables! {
    // ---- spinlocks (spin/) -------------------------------------------------
    /// `KLOCK_SPIN_NS`: the spinlocks (`SpinLock`, the queued unfair lock,
    /// PV variants): nanoseconds a waiter spins before it sleeps.
    /// 10 µs: 2 and 0.5 µs gave the SpinLock 0.45-0.70x at T=8
    /// (`docs/results/2026-11-28-spin-floor.md`).
    spin_ns: u64 = 10_000, "KLOCK_SPIN_NS", 0..=10_000_000;
    /// `KLOCK_SPIN_HANDOFF_NS`: parked TAS lock (`RawTasParkLock`, the
    /// `SpinLock`): an unlock that finds the word's first parked waiter
    /// waiting this long grants it the lock: the bound on bypass (0 = never;
    /// below 1 000: every unlock that finds a parked waiter grants).
    /// 1 ms: max/min 5.5-7 at T=128, where 0 left threads unserved and
    /// 0.1 ms cost 0.33-0.41x (`docs/results/2026-11-28-spin-floor.md`).
    spin_handoff_ns: u64 = 1_000_000, "KLOCK_SPIN_HANDOFF_NS", 0..=1_000_000_000;
    /// `KLOCK_KICK_AHEAD`: PV queued spinlock: how many sleeping successors
    /// behind the new queue head are woken ahead of their turn (0 = off).
    /// Off: on an overcommitted 2-vCPU machine K=1 made 2-50x fewer
    /// acquisitions than K=0 at 4-16 threads; the seed's kick-ahead
    /// experiment sets it (`docs/spinlocks.md`).
    kick_ahead: u32 = 0, "KLOCK_KICK_AHEAD", 0..=64;
    /// `KLOCK_STEAL_NS`: queued unfair lock: once the queue head has waited
    /// this long it claims the lock and stealing stops until it is served.
    /// 1 ms: bounds the head's wait at little throughput cost
    /// (`docs/results/2026-11-21-spinlocks.md`).
    steal_threshold_ns: u64 = 1_000_000, "KLOCK_STEAL_NS", 0..=1_000_000_000;
    /// `KLOCK_SPIN_POLL_MAX_NS`: queued unfair lock: while a stealer or the
    /// spinning queue head keeps finding the lock held, the delay between two
    /// polls of the word doubles (from `KLOCK_SPIN_POLL_MIN_NS`) up to this cap
    /// (`wait::PollBackoff`), so that waiters do not pull the line away from
    /// an owner that re-takes the lock at once. 0 = poll continuously.
    /// 16 µs: the mutex's measured cap, the same backoff
    /// (`docs/results/2026-11-24-overcommit.md`).
    spin_poll_max_ns: u64 = 16_000, "KLOCK_SPIN_POLL_MAX_NS", 0..=100_000;
    /// `KLOCK_SPIN_POLL_MIN_NS`: queued unfair lock: the first delay of the
    /// poll backoff, doubled up to `KLOCK_SPIN_POLL_MAX_NS`.
    /// 100 ns catches a `balanced` release: T=8 5.8 Mops/s against 4.0 with
    /// 500 ns (`docs/results/2026-11-24-overcommit.md`).
    spin_poll_min_ns: u64 = 100, "KLOCK_SPIN_POLL_MIN_NS", 0..=100_000;
    /// `KLOCK_TAS_BACKOFF_MIN_NS`: TAS locks (the `SpinLock`'s spin, the
    /// interposer's `tas`): first backoff after a failed attempt.
    /// 50 ns: about one contended cache-line transfer; not measured apart
    /// from the lock (`docs/results/2026-11-28-spin-floor.md`).
    tas_backoff_min_ns: u64 = 50, "KLOCK_TAS_BACKOFF_MIN_NS", 0..=1_000_000;
    /// `KLOCK_TAS_BACKOFF_MAX_NS`: TAS locks: backoff cap (doubling from the
    /// minimum). 4 µs: well under the 10 µs spin budget, so a waiter polls
    /// a few times before it sleeps; not measured apart from the lock
    /// (`docs/results/2026-11-28-spin-floor.md`).
    tas_backoff_max_ns: u64 = 4_000, "KLOCK_TAS_BACKOFF_MAX_NS", 0..=1_000_000;
    /// `KLOCK_NODE_SLOTS`: queue-node slots, i.e. how many threads can hold a
    /// queue node at once. 16 383: the most the tail's 14-bit slot field
    /// encodes (a bound, not a measurement; `docs/design.md`).
    node_slots: u32 = 16_383, "KLOCK_NODE_SLOTS", 1..=16_383;
    // ---- mutex / condvar / osq (section owned by the mutex work) -----------
    /// `KLOCK_MUTEX_HANDOFF_NS`: mutex: a running first waiter that has
    /// waited this long gets the lock handed to it (bounded unfairness).
    /// 2 ms: 300 µs, 50 µs and 0 did not fix `balanced` T=128 max/min
    /// (`docs/results/2026-11-24-overcommit.md`).
    mutex_handoff_ns: u64 = 2_000_000, "KLOCK_MUTEX_HANDOFF_NS", 0..=1_000_000_000;
    /// `KLOCK_MUTEX_SPIN_NS`: mutex: optimistic spinning budget per owner,
    /// and a woken hand-off waiter's running wait. 20 µs: a few typical
    /// holds, about the cost of a sleep and a wake-up
    /// (`docs/results/2026-11-24-overcommit.md`).
    mutex_spin_ns: u64 = 20_000, "KLOCK_MUTEX_SPIN_NS", 0..=10_000_000;
    /// `KLOCK_MUTEX_SPIN`: mutex: optimistic spinning on (1) or off (0).
    /// On: off cost `balanced` T=128 4.03 Mops/s against 5.3-5.8
    /// (`docs/results/2026-11-24-overcommit.md`).
    mutex_spin: u32 = 1, "KLOCK_MUTEX_SPIN", 0..=1;
    /// `KLOCK_MUTEX_SPIN_MAX_NS`: mutex: cap on one optimistic-spinning episode
    /// (the per-owner budget `KLOCK_MUTEX_SPIN_NS` restarts when the owner changes;
    /// this bounds the total, the stand-in for the kernel's `need_resched()`).
    /// 200 µs: ten owner budgets; not measured apart (`docs/mutex.md`).
    mutex_spin_max_ns: u64 = 200_000, "KLOCK_MUTEX_SPIN_MAX_NS", 0..=100_000_000;
    /// `KLOCK_OSQ_STALE_NS`: OSQ: a predecessor whose heartbeat is older than
    /// this looks descheduled, and its successor leaves the queue (0 = hint off).
    /// 50 µs: well past a running spinner's heartbeat, well under a
    /// scheduler tick; not measured apart (`docs/mutex.md`).
    osq_stale_ns: u64 = 50_000, "KLOCK_OSQ_STALE_NS", 0..=100_000_000;
    /// `KLOCK_OSQ_MAX_SPINNERS` (`KLOCK_MUTEX_MAX_SPINNERS` until
    /// 2026-11-29): most threads that spin at once in any lock's OSQ (the
    /// mutex's and the rwsem's positions); 0 = effective CPUs - 1, so a
    /// spinner never takes the owner's CPU (`docs/design.md`, principle P4).
    osq_max_spinners: u32 = 0, "KLOCK_OSQ_MAX_SPINNERS", 0..=4096;
    /// `KLOCK_WAITLOCK_SPIN_NS`: mutex/condvar internal wait-list bit lock:
    /// nanoseconds spun before yielding the CPU. 2 µs: its critical sections
    /// are a few list operations; not measured apart (`docs/mutex.md`).
    waitlock_spin_ns: u64 = 2_000, "KLOCK_WAITLOCK_SPIN_NS", 0..=10_000_000;
    /// `KLOCK_MUTEX_YIELDS`: mutex (spinning variants): `sched_yield` rounds,
    /// each followed by a trylock, a contender makes after optimistic spinning
    /// and before it sleeps (0 = sleep at once). 4: 0 wins only under a CPU
    /// quota (`docs/results/2026-11-25-no-starvation.md`, designs 1 and 3).
    mutex_yields: u32 = 4, "KLOCK_MUTEX_YIELDS", 0..=64;
    /// `KLOCK_MUTEX_FAIR_HANDOFF_NS`: mutex: eventual fairness. An unlock
    /// hands the lock to a first waiter that has been first this long, even
    /// while it sleeps (at most once per interval and lock; checked on every
    /// 16th slow unlock of a thread). 0 = never. 1 ms: `balanced` T=128
    /// max/min 3.1 instead of 443 at 1.14x
    /// (`docs/results/2026-11-25-no-starvation.md`, design 9).
    mutex_fair_handoff_ns: u64 = 1_000_000, "KLOCK_MUTEX_FAIR_HANDOFF_NS", 0..=1_000_000_000;
    // ---- rwsem (rwlock/) ---------------------------------------------------
    /// `KLOCK_RWSEM_SPIN`: rwsem: optimistic spinning of writers (and mode-2
    /// readers) and the running waits of readers on (1) or off (0).
    /// On: as the mutex (`docs/results/2026-11-24-rwsem.md`).
    rwsem_spin: u32 = 1, "KLOCK_RWSEM_SPIN", 0..=1;
    /// `KLOCK_RWSEM_SPIN_NS`: rwsem: how long a spinner polls one writer
    /// owner (an owner holding longer is probably not running), and a woken
    /// writer owed the hand-off waits running for it. 20 µs: the mutex's
    /// budget (`docs/results/2026-11-24-rwsem.md`).
    rwsem_spin_ns: u64 = 20_000, "KLOCK_RWSEM_SPIN_NS", 0..=10_000_000;
    /// `KLOCK_RWSEM_SPIN_MAX_NS`: rwsem: cap on one optimistic-spinning
    /// episode. 200 µs: the mutex's cap (`docs/results/2026-11-24-rwsem.md`).
    rwsem_spin_max_ns: u64 = 200_000, "KLOCK_RWSEM_SPIN_MAX_NS", 0..=100_000_000;
    /// `KLOCK_RWSEM_HANDOFF_NS`: rwsem: a first waiting writer that has waited
    /// this long (and was woken and lost the lock) sets HANDOFF: no stealing
    /// until it is served. 4 ms: the kernel's RWSEM_WAIT_TIMEOUT; 1 ms
    /// measured within noise (`docs/results/2026-11-25-rwlock.md`).
    rwsem_handoff_ns: u64 = 4_000_000, "KLOCK_RWSEM_HANDOFF_NS", 0..=1_000_000_000;
    /// `KLOCK_RWSEM_READER`: rwsem: what a reader that fails the fast path
    /// does before it queues: 0 = queue at once, 1 = steal the lock when no
    /// writer holds it and no hand-off is owed (kernel 5.11+), 2 = spin on a
    /// writer owner through the OSQ (seed 003, patch 8), 3 = steal even
    /// beside other readers (no writer, no hand-off; a queued writer gets in
    /// through its hand-off timer, INV-HANDOFF-TIMER in `rwlock`), 4 =
    /// steal as 1, then wait running for a free lock before queueing. Named
    /// by [`ReaderMode`] ([`Tunables::rwsem_reader_mode`]). 4: the least
    /// unfair of the five; the seed experiment varies it
    /// (`docs/results/2026-11-25-rwlock.md`, design 3).
    rwsem_reader: u32 = 4, "KLOCK_RWSEM_READER", 0..=4;
    /// `KLOCK_RWSEM_WAKE_READERS`: rwsem: most readers one wake-up grants the
    /// lock to. 256: the kernel's cap (seed 003 patch 15 wakes them all);
    /// not measured apart (`docs/rwsem.md`).
    rwsem_wake_readers: u32 = 256, "KLOCK_RWSEM_WAKE_READERS", 1..=256;
    /// `KLOCK_RWSEM_RSPIN_NS`: rwsem: base time a writer spins on a
    /// reader-owned lock (plus 500 ns per reader, up to 30 readers); past it
    /// the lock is marked non-spinnable. 10 µs: the kernel's
    /// `rwsem_rspin_threshold`; not measured apart (`docs/rwsem.md`).
    rwsem_rspin_ns: u64 = 10_000, "KLOCK_RWSEM_RSPIN_NS", 0..=10_000_000;
    /// `KLOCK_RWSEM_READ_WAIT_NS`: rwsem, reader mode 4: how long a reader
    /// that could not steal waits running for a free lock before it queues.
    /// 100 µs: with continuous polling 4+4 1.19x and 18+18 max/min 41 instead
    /// of 7 167 (`docs/results/2026-11-25-rwlock.md`, design 4).
    rwsem_read_wait_ns: u64 = 100_000, "KLOCK_RWSEM_READ_WAIT_NS", 0..=10_000_000;
    /// `KLOCK_MUTEX_POLL_MAX_NS`: mutex: while a spinner keeps seeing the
    /// same owner, the delay between two polls of the owner word doubles (from
    /// 1/32 of this) up to this cap, so that the spinner does not pull the
    /// line away from an owner that re-takes the lock at once; reset when the
    /// owner changes. 0 = poll continuously. 16 µs: `hot` 1.08-1.81x of
    /// parking_lot, 0.40-0.46x without it (`docs/results/2026-11-29-tunables.md`).
    mutex_poll_max_ns: u64 = 16_000, "KLOCK_MUTEX_POLL_MAX_NS", 0..=100_000;
    /// `KLOCK_POLL_MISS_TICKS`: every lock's owner polling
    /// (`wait::PollBackoff`): a waiter backs off between polls only after a
    /// poll that **missed the cache** (the owner re-took the lock since the
    /// last poll), a load slower than the calibrated L1 hit by more than
    /// this many TSC ticks (`wait::load_missed`; x86-64 only). 0 = every
    /// poll counts as a miss (the plain backoff). 40: keeps `hot`'s backoff
    /// and sees a `long` hold's release at once
    /// (`docs/results/2026-11-25-no-starvation.md`, design 6).
    poll_miss_ticks: u64 = 40, "KLOCK_POLL_MISS_TICKS", 0..=100_000;
    /// `KLOCK_MUTEX_ADAPT`: mutex: the adaptive spinning hint on (1) or off
    /// (0): a thread whose recent spins mostly failed (the owner kept the lock
    /// past the budget) skips spinning and the yield rounds and sleeps at
    /// once (`mutex::adapt`), so that an owner that yields or is preempted
    /// inside its critical section gets its CPU back. On: against `ADAPT=0`
    /// in the same binary (`docs/results/2026-11-24-adaptive-spin.md`).
    mutex_adapt: u32 = 1, "KLOCK_MUTEX_ADAPT", 0..=1;
    /// `KLOCK_MUTEX_ADAPT_PCT`: mutex: spin while at least this percentage of
    /// the thread's recent spins (EWMA over about 8) took the lock; below it,
    /// queue at once. 25: 50 is 12-27 % better on sysbench but skips 6 % of
    /// `hot`'s slow paths with 8x the sleeps
    /// (`docs/results/2026-11-24-adaptive-spin.md`).
    mutex_adapt_pct: u32 = 25, "KLOCK_MUTEX_ADAPT_PCT", 0..=100;
    /// `KLOCK_MUTEX_ADAPT_PROBE`: mutex: below the threshold, every this-many-th
    /// slow path spins anyway (a probe), so the score can recover when the
    /// owners become quick again (1 = always spin). 16: the starting
    /// interval that `KLOCK_MUTEX_ADAPT_PROBE_MAX` doubles; not measured apart
    /// (`docs/results/2026-11-24-adaptive-spin.md`).
    mutex_adapt_probe: u32 = 16, "KLOCK_MUTEX_ADAPT_PROBE", 1..=65_536;
    /// `KLOCK_MUTEX_ADAPT_PROBE_MAX`: mutex: each failed probe doubles the
    /// probe interval up to this cap (a success resets it). 256: 4096 is
    /// 3-24 % better but a thread whose owners became quick again sleeps
    /// through up to 4096 slow paths (`docs/results/2026-11-24-adaptive-spin.md`).
    mutex_adapt_probe_max: u32 = 256, "KLOCK_MUTEX_ADAPT_PROBE_MAX", 1..=65_536;
    // ---- add new mutex tunables above this line -----------------------------
    // ---- reporting ---------------------------------------------------------
    /// `KLOCK_STATS`: print the lock-event report to stderr at process exit
    /// (any non-zero value; the interposer's per-lock report reads the same
    /// variable and gives 2 a meaning of its own: call stacks)
    /// (only with the `stats` feature). Off: a report is asked for.
    stats_report: u32 = 0, "KLOCK_STATS", 0..=2;
    // ---- testing (feature `chaos`) -----------------------------------------
    /// `KLOCK_CHAOS_PERMILLE`: feature `chaos` only: how many of 1000 passes
    /// through a marked preemption window inject a delay (a yield, or one time
    /// in four a 1-200 µs sleep). 100: a test setting (`.ci/chaos`).
    chaos_permille: u32 = 100, "KLOCK_CHAOS_PERMILLE", 0..=1000;
    /// `KLOCK_CHAOS_SEED`: feature `chaos` only: the seed of the injected
    /// delays (0 = take one from the clock; the seed used is printed, so a
    /// failing run can be replayed).
    chaos_seed: u64 = 0, "KLOCK_CHAOS_SEED", 0..=18_446_744_073_709_551_615;
}

/// `KLOCK_RWSEM_READER` by name: what a rwsem reader that fails the fast
/// path does before it queues. The environment keeps the integer (parsed
/// and range-checked as every tunable, [`Tunables::rwsem_reader`]); the
/// rwsem reads it through [`Tunables::rwsem_reader_mode`].
///
/// ```
/// use klock::tune::{ReaderMode, Tunables};
/// assert_eq!(Tunables::DEFAULT.rwsem_reader_mode(), ReaderMode::StealThenWaitRunning);
/// assert_eq!(ReaderMode::try_from(2), Ok(ReaderMode::SpinOnWriter));
/// assert_eq!(ReaderMode::try_from(5), Err(5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderMode {
    /// 0: queue at once.
    Queue = 0,
    /// 1: steal the lock when no writer holds it, no hand-off is owed, no
    /// upgrade is under way and no other reader holds it (kernel 5.11+).
    Steal = 1,
    /// 2: spin on a writer owner through the OSQ (seed 003, patch 8),
    /// unless the owner word says NONSPINNABLE (patch 13).
    SpinOnWriter = 2,
    /// 3: steal as 1, even beside other readers (a queued writer gets in
    /// through its hand-off timer, INV-HANDOFF-TIMER).
    JoinReaders = 3,
    /// 4 (the default): steal as 1, then wait running, within
    /// `KLOCK_RWSEM_READ_WAIT_NS`, for a free lock before queueing.
    StealThenWaitRunning = 4,
}

impl ReaderMode {
    /// Every mode, in the order of its integer.
    pub const ALL: [ReaderMode; 5] = [
        ReaderMode::Queue,
        ReaderMode::Steal,
        ReaderMode::SpinOnWriter,
        ReaderMode::JoinReaders,
        ReaderMode::StealThenWaitRunning,
    ];
}

impl TryFrom<u32> for ReaderMode {
    /// The integer, outside `0..=4`.
    type Error = u32;

    fn try_from(v: u32) -> Result<Self, u32> {
        ReaderMode::ALL.get(v as usize).copied().ok_or(v)
    }
}

impl Tunables {
    /// [`rwsem_reader`](Tunables::rwsem_reader) as a [`ReaderMode`]. Outside
    /// `0..=4` (only in a `Tunables` built by hand: the parser rejects it)
    /// it is [`ReaderMode::Steal`], which is what the rwsem made of such an
    /// integer.
    #[inline]
    pub fn rwsem_reader_mode(&self) -> ReaderMode {
        ReaderMode::try_from(self.rwsem_reader).unwrap_or(ReaderMode::Steal)
    }
}

static TUNABLES: OnceLock<Tunables> = OnceLock::new();

/// The tunables, read from the environment on first call (warnings go to stderr
/// once), then cached for the life of the process.
///
/// ```
/// assert!(klock::tune::get().kick_ahead <= 64);
/// ```
#[inline]
pub fn get() -> &'static Tunables {
    match TUNABLES.get() {
        Some(t) => t,
        None => init(),
    }
}

/// At a fork: finish reading the tunables (see `crate::fork`).
static FORK_HOOKS: crate::fork::Hooks = crate::fork::Hooks {
    finish: || {
        let _ = get();
    },
    ..crate::fork::Hooks::NONE
};

#[cold]
fn init() -> &'static Tunables {
    // Fork hooks first, and outside the initialiser (see crate::fork).
    crate::fork::install(crate::fork::Slot::Tune, &FORK_HOOKS);
    TUNABLES.get_or_init(|| {
        warn_unknown_vars();
        Tunables::from_lookup(env, |e| warn(&e.to_string()))
    })
}

/// One warning line on stderr. Never panics (`eprintln!` does when the
/// write fails, e.g. EPIPE; this may run inside a C caller's lock call).
fn warn(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Warn once about every `KLOCK_*` variable in the environment that klock
/// does not read ([`unknown_var_warnings`]); nothing in secure-execution
/// mode, where klock reads no `KLOCK_*` variable at all.
fn warn_unknown_vars() {
    if secure() {
        return;
    }
    let names = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned());
    for line in unknown_var_warnings(names) {
        warn(&line);
    }
}

/// A `KLOCK_*` environment variable that some part of klock reads and that
/// is not a tunable of this module ([`VARS`], `KLOCK_SPIN`): its name and
/// who reads it. With those, the registry of every known name
/// ([`known_vars`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OtherVar {
    /// Environment variable name.
    pub env: &'static str,
    /// Who reads it (documentation: the registry says why each name is known).
    #[allow(dead_code)]
    pub reader: &'static str,
}

const fn other(env: &'static str, reader: &'static str) -> OtherVar {
    OtherVar { env, reader }
}

/// Every `KLOCK_*` variable read outside this module's tunables. A new one
/// goes here (a test checks the workspace's reads against the registry).
pub(crate) const OTHER_VARS: &[OtherVar] = &[
    other("KLOCK_MUTEX", "interposer: mutex variant"),
    other("KLOCK_RWLOCK", "interposer: rwlock variant"),
    other("KLOCK_RWLOCK_POLICY", "interposer: rwlock readers"),
    other("KLOCK_PRELOAD_CHECK", "interposer: say it is active"),
    other("KLOCK_STATS_FILE", "interposer: report file"),
    other("KLOCK_STATS_TOP", "interposer: locks reported"),
    other("KLOCK_STATS_SLOTS", "interposer: statistics table"),
    other("KLOCK_LOCKDEP", "lockdep: validation on/off/abort"),
    other("KLOCK_LOCKDEP_FILE", "lockdep: report file"),
    other("KLOCK_PRELOAD_LIB", "klockrun, lockbench: interposer"),
    other("KLOCK_PROFILE", "klock-c install.sh: profile"),
    other("KLOCK_INSTALL_DEBUG", "klock-c install.sh: debug info"),
    other("KLOCK_CI", "tests: running in CI"),
    other("KLOCK_PRELOAD_SO", "interposer tests: the library"),
    other("KLOCK_SECURETEST_HOLD", "interposer tests: secure.rs"),
    other("KLOCK_TORTURE_MULT", "klock tests: torture threads"),
    other("KLOCK_TORTURE_SECS", "klock tests: torture time"),
    other("KLOCK_TORTURE_STALL_SECS", "klock tests: torture watchdog"),
    other("KLOCK_FORK_TEST_ROUNDS", "klock tests: fork.rs rounds"),
    other("KLOCK_FORK_TEST_GDB", "klock tests: fork.rs in gdb"),
];

/// Every `KLOCK_*` name some part of klock reads: the tunables ([`VARS`]),
/// `KLOCK_SPIN`, and [`OTHER_VARS`].
pub(crate) fn known_vars() -> impl Iterator<Item = &'static str> {
    VARS.iter()
        .map(|v| v.env)
        .chain(["KLOCK_SPIN"])
        .chain(OTHER_VARS.iter().map(|v| v.env))
}

/// The known name ([`known_vars`]) closest to `name` by edit distance
/// (ignoring case), if it is close enough to be a misspelling: at most one
/// edit per three characters after `KLOCK_`, and at least one.
pub(crate) fn closest_known(name: &str) -> Option<&'static str> {
    let suffix = name.len().saturating_sub("KLOCK_".len());
    let limit = (suffix / 3).max(1);
    known_vars()
        .map(|k| (edit_distance(&name.to_ascii_uppercase(), k), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Levenshtein distance between `a` and `b` (bytes): the fewest insertions,
/// deletions and substitutions that turn one into the other.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The warnings for the unknown `KLOCK_*` names among `names` (an
/// environment's variable names; others are ignored): one line per name,
/// each once, sorted, naming the closest known variable if there is one.
pub(crate) fn unknown_var_warnings(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut unknown: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("KLOCK_") && !known_vars().any(|k| k == n))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
        .iter()
        .map(|n| match closest_known(n) {
            Some(k) => format!("klock: unknown variable {n} (did you mean {k}?)"),
            None => format!("klock: unknown variable {n} (ignored)"),
        })
        .collect()
}

/// Is the process in secure-execution mode (`getauxval(AT_SECURE) != 0`: a
/// set-user-ID or set-group-ID program, file capabilities, an LSM
/// transition)? There [`env()`] ignores the environment.
pub(crate) fn secure() -> bool {
    // SAFETY: getauxval only reads the auxiliary vector the kernel passed
    // to the process; no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// The value of the environment variable `name`, the way klock reads every
/// `KLOCK_*` variable: `None` when it is unset or not valid UTF-8, and always
/// `None` in secure-execution mode ([`secure`]), so a set-user-ID program
/// run by another user takes no settings from that user's environment (as
/// glibc's `secure_getenv`).
pub(crate) fn env(name: &str) -> Option<String> {
    if secure() {
        return None;
    }
    std::env::var(name).ok()
}

/// Install `t` as the process's tunables if they have not been read yet.
/// Returns `false` (and changes nothing) if [`get`] already ran. Meant for
/// tools and tests that set tunables programmatically before any lock is used.
///
/// ```
/// let mut t = klock::tune::Tunables::DEFAULT;
/// t.kick_ahead = 0;
/// let _ = klock::tune::set(t); // false if something already read them
/// ```
pub fn set(t: Tunables) -> bool {
    crate::fork::install(crate::fork::Slot::Tune, &FORK_HOOKS);
    TUNABLES.set(t).is_ok()
}

#[cfg(test)]
mod tests;

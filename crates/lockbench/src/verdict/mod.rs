//! The verdict: klock's default locks against the best peer measured in the same run.
//!
//! For every case (a workload at one thread count) in which a klock default lock
//! ([`FAMILIES`]) was measured, the verdict picks the best *eligible peer* (a lock
//! that is not klock's, of the same kind) by its median, and reports the ratio klock /
//! best peer (> 1: klock is better) with a 95 % bootstrap confidence interval over the
//! interleaved runs ([`crate::stats::ratio_ci`]) and the [`Outcome`] it decides.
//!
//! Fairness and tail latency are part of the verdict, not footnotes: a lock that
//! starved a thread ([`STARVED_MIN_AVG`]; glibc's default rwlock starves writers) or
//! whose p99.9 is over [`TAIL_MAX_X`] the best eligible peer's is never the pick; when
//! klock is such a lock its row reads **worse**, saying why ([`Cell::note`]).
//! [`summarize`] turns a family's cases into one sentence naming the lock to pick.

use crate::locks::LockKind;
use crate::record::{Record, Report};

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

fn kind_of(lock: &str) -> Option<LockKind> {
    crate::locks::find(lock).map(|e| e.kind)
}

/// One measured lock in one case.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The workload or experiment, e.g. `mutex balanced`.
    pub scenario: String,
    /// The point within it, e.g. `T=8` or `8+8`.
    pub point: String,
    /// Sort key of the point (thread count).
    pub order: usize,
    /// Lock name.
    pub lock: String,
    /// Median over runs.
    pub median: f64,
    /// Every run's value (may be empty: then the median alone).
    pub runs: Vec<f64>,
    /// Larger is better (throughput) or smaller (time, ns/op).
    pub higher_better: bool,
    /// Unit of `median`, e.g. `Mops/s`.
    pub unit: String,
    /// Whom this lock starved in the run (a thread under [`STARVED_MIN_AVG`]
    /// of the mean over all threads in some run): `"writers"`, `"readers"` or
    /// `"a thread"`. Such a lock is not eligible: total throughput rewards
    /// starving a thread.
    pub starves: Option<&'static str>,
    /// p99.9 latency of one acquisition in ns, when the record measured it.
    pub tail_ns: Option<u64>,
}

/// A record in which some thread, in some run, did less than this fraction of
/// the mean over all threads starved that thread (zero-op classes included).
pub const STARVED_MIN_AVG: f64 = 0.1;

/// A lock whose p99.9 latency exceeds this multiple of the best eligible
/// peer's is not eligible as the pick.
pub const TAIL_MAX_X: f64 = 2.0;

/// An inconclusive row names how many more runs would decide it up to this
/// many; beyond, it says the runs are too noisy (a number that large is not
/// advice anyone would take).
pub const MORE_RUNS_SHOWN: usize = 50;

/// "same" needs the whole confidence interval within 1 ± this.
pub const SAME_MARGIN: f64 = 0.05;

/// Whom a record starved, if anyone (see [`Sample::starves`]): the smallest
/// share of the mean over all threads that any thread had in any run
/// (`min_thread_share`; for reports written before it, the median run's
/// per-thread counts and the classes' minima).
fn starved_class(r: &Record) -> Option<&'static str> {
    let classes = || [&r.readers, &r.writers].into_iter().flatten();
    let share = r.min_thread_share.unwrap_or_else(|| {
        // Older records may carry only the classes' figures.
        let (min, mean) = if r.ops_per_thread.avg > 0.0 {
            (r.ops_per_thread.min, r.ops_per_thread.avg)
        } else {
            let (n, sum) = classes().fold((0usize, 0.0), |(n, s), c| {
                (n + c.threads, s + c.threads as f64 * c.ops_per_thread.avg)
            });
            (f64::INFINITY, if n > 0 { sum / n as f64 } else { 0.0 })
        };
        let min = classes().map(|c| c.ops_per_thread.min).fold(min, f64::min);
        if mean > 0.0 { min / mean } else { 1.0 }
    });
    if share >= STARVED_MIN_AVG {
        return None;
    }
    let low = |c: &Option<crate::record::ClassMetrics>| {
        c.as_ref().map_or(f64::INFINITY, |c| c.ops_per_thread.min)
    };
    Some(match (&r.readers, &r.writers) {
        (Some(_), Some(_)) if low(&r.writers) <= low(&r.readers) => "writers",
        (Some(_), Some(_)) => "readers",
        _ => "a thread",
    })
}

impl Sample {
    /// A sample of `runs` (their median; `point` is `T={order}`): what the seed
    /// experiments report per lock and thread count.
    pub fn of_runs(
        scenario: &str,
        order: usize,
        lock: &str,
        runs: Vec<f64>,
        higher_better: bool,
        unit: &str,
    ) -> Sample {
        Sample {
            scenario: scenario.into(),
            point: format!("T={order}"),
            order,
            lock: lock.into(),
            median: crate::stats::median(&runs),
            runs,
            higher_better,
            unit: unit.into(),
            starves: None,
            tail_ns: None,
        }
    }
    /// Samples per `lock` × `x` (`x` a thread count), from each cell's runs
    /// (`runs(lock, x)`; an empty cell is left out).
    pub fn grid(
        scenario: &str,
        unit: &str,
        higher_better: bool,
        locks: &[String],
        xs: &[usize],
        runs: impl Fn(&str, usize) -> Vec<f64>,
    ) -> Vec<Sample> {
        let cells = locks.iter().flat_map(|l| xs.iter().map(move |x| (l, *x)));
        cells
            .filter_map(|(l, x)| {
                let r = runs(l, x);
                (!r.is_empty()).then(|| Sample::of_runs(scenario, x, l, r, higher_better, unit))
            })
            .collect()
    }
    /// (median, min, max) over runs.
    pub fn range(&self) -> (f64, f64, f64) {
        let lo = self.runs.iter().copied().fold(self.median, f64::min);
        let hi = self.runs.iter().copied().fold(self.median, f64::max);
        (self.median, lo, hi)
    }
}

/// Short scenario name of a record: experiment, workload, noise.
pub fn scenario_of(r: &Record) -> String {
    let mut s = if r.experiment == "uncontended" {
        r.params.workload.clone()
    } else {
        format!("{} {}", r.experiment, r.params.workload)
    };
    if r.params.noise > 0 {
        s.push_str(&format!(" +{} noise", r.params.noise));
    }
    if let Some(q) = r.params.quota_cpus {
        s.push_str(&format!(" quota {q} CPU"));
    }
    s
}

/// Point label of a record: `T=8`, or `R+W` for reader/writer records.
pub fn point_of(r: &Record) -> String {
    match (&r.readers, &r.writers) {
        (Some(rd), Some(wr)) => format!("{}+{}", rd.threads, wr.threads),
        _ => format!("T={}", r.threads),
    }
}

/// Samples of a report's records (implicit references left out): throughput in
/// Mops/s, or ns/op for `uncontended`.
pub fn samples(report: &Report) -> Vec<Sample> {
    report
        .results
        .iter()
        .filter(|r| !r.implicit)
        .map(|r| {
            let (median, runs, higher, unit) = match r.uncontended_ns_per_op {
                Some(ns) => (
                    ns,
                    r.runs_mops.iter().map(|m| 1e3 / m.max(1e-12)).collect(),
                    false,
                    "ns/op",
                ),
                None if r.experiment == "preload" => (
                    r.throughput_mops,
                    r.runs_mops.clone(),
                    true,
                    "M/s (program's metric)",
                ),
                None => (r.throughput_mops, r.runs_mops.clone(), true, "Mops/s"),
            };
            Sample {
                scenario: scenario_of(r),
                point: point_of(r),
                order: r.threads,
                lock: r.lock.clone(),
                median,
                runs,
                higher_better: higher,
                unit: unit.into(),
                starves: starved_class(r),
                tail_ns: (r.latency_ns.samples > 0 && r.latency_ns.p999 > 0)
                    .then_some(r.latency_ns.p999),
            }
        })
        .collect()
}

/// Better, same, worse, or not yet decided by the runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The confidence interval lies above 1 (and not all within ±5 %).
    Better,
    /// The confidence interval lies within ±[`SAME_MARGIN`].
    Same,
    /// The confidence interval lies below 1 (and not all within ±5 %), or
    /// klock starved a thread or had more than [`TAIL_MAX_X`] the tail.
    Worse,
    /// The interval straddles 1 and reaches past ±5 %: more runs needed.
    Inconclusive,
}

impl Outcome {
    /// `better`, `same`, `worse`, `inconclusive`.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Better => "better",
            Outcome::Same => "same",
            Outcome::Worse => "worse",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// One verdict row.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The family.
    pub family: &'static Family,
    /// klock's sample (its scenario and point are the case's).
    pub klock: Sample,
    /// The best peer's sample.
    pub peer: Sample,
    /// Every eligible peer's sample in this case (the best one included).
    pub peers: Vec<Sample>,
    /// klock relative to the peer, > 1 = klock better (median of the
    /// per-round ratios).
    pub ratio: f64,
    /// Lower end of the ratio's 95 % confidence interval.
    pub ratio_lo: f64,
    /// Upper end of the ratio's 95 % confidence interval.
    pub ratio_hi: f64,
    /// The outcome.
    pub outcome: Outcome,
    /// For an inconclusive row: about how many more runs (per lock) would
    /// decide it, if the spread stays as it is.
    pub more_runs: Option<usize>,
    /// Why klock's row is worse whatever its throughput (it starved a
    /// thread, or its p99.9 is more than [`TAIL_MAX_X`] the best peer's).
    pub note: Option<String>,
    /// Set when no peer was eligible (every one starved a thread): `peer` is
    /// then the measured peer with the best median, and a klock that starved
    /// nobody reads **better** whatever its throughput, since a lock that
    /// starves a thread has not won.
    pub peer_note: Option<String>,
}

/// Compares a klock sample with a peer's: (ratio, lo, hi, outcome), the ratio
/// with its 95 % bootstrap interval over the runs (see the module docs).
///
/// ```
/// use lockbench::verdict::{Outcome, Sample, compare_samples};
/// let s = |runs: Vec<f64>| Sample {
///     scenario: "x".into(), point: "T=2".into(), order: 2, lock: "l".into(),
///     median: lockbench::stats::median(&runs), runs, higher_better: true,
///     unit: "Mops/s".into(), starves: None, tail_ns: None,
/// };
/// let (r, lo, hi, o) = compare_samples(&s(vec![1.9, 2.0, 2.1]), &s(vec![0.9, 1.0, 1.1]));
/// assert_eq!(o, Outcome::Better);
/// assert!((r - 2.0).abs() < 0.2 && lo > 1.7 && hi < 2.4);
/// // Within 2 % in every round: the same.
/// let (_, _, _, o) = compare_samples(&s(vec![1.01, 1.52, 0.99]), &s(vec![1.0, 1.5, 1.0]));
/// assert_eq!(o, Outcome::Same);
/// // 0.9x in every round, however noisy the peer: worse.
/// let (_, _, _, o) = compare_samples(&s(vec![0.9, 1.8, 0.45]), &s(vec![1.0, 2.0, 0.5]));
/// assert_eq!(o, Outcome::Worse);
/// ```
pub fn compare_samples(k: &Sample, p: &Sample) -> (f64, f64, f64, Outcome) {
    let (r, lo, hi, o, _) = compare_full(k, p);
    (r, lo, hi, o)
}

/// [`compare_samples`] plus, when inconclusive, about how many more runs per
/// lock would decide it (the interval's width shrinks as 1/sqrt(runs)).
pub fn compare_full(k: &Sample, p: &Sample) -> (f64, f64, f64, Outcome, Option<usize>) {
    let one = |s: &Sample| {
        if s.runs.is_empty() {
            vec![s.median]
        } else {
            s.runs.clone()
        }
    };
    let (kr, pr) = (one(k), one(p));
    let (r, lo, hi) = if k.higher_better {
        crate::stats::ratio_ci(&kr, &pr)
    } else {
        // Time per op: the peer's over klock's, so > 1 is still klock better.
        crate::stats::ratio_ci(&pr, &kr)
    };
    let n = kr.len().min(pr.len());
    let m = SAME_MARGIN;
    let outcome = if n < 2 || !(lo.is_finite() && hi.is_finite()) {
        Outcome::Inconclusive
    } else if lo >= 1.0 - m && hi <= 1.0 + m {
        Outcome::Same
    } else if lo > 1.0 {
        Outcome::Better
    } else if hi < 1.0 {
        Outcome::Worse
    } else {
        Outcome::Inconclusive
    };
    let more = (outcome == Outcome::Inconclusive).then(|| {
        // The half-width that would decide: inside ±m around 1 ("same"), or
        // clear of 1 ("better"/"worse"), whichever allows the wider interval.
        let need = (m - (r - 1.0).abs()).max((r - 1.0).abs());
        let half = (hi - lo) / 2.0;
        if n < 2 {
            5usize.saturating_sub(n).max(1)
        } else if need <= 0.0 || !half.is_finite() {
            usize::MAX
        } else {
            let total = (n as f64 * (half / need).powi(2)).ceil() as usize;
            total.saturating_sub(n).max(1)
        }
    });
    (r, lo, hi, outcome, more)
}

/// The verdict rows for every (scenario, point) where a klock default lock and at
/// least one peer of its kind were measured, in family, scenario, point order.
pub fn cells(samples: &[Sample]) -> Vec<Cell> {
    let scenarios = crate::stats::first_seen(samples.iter().map(|s| s.scenario.as_str()));
    let mut out = Vec::new();
    for fam in FAMILIES {
        for sc in &scenarios {
            let klock = samples
                .iter()
                .filter(|s| s.scenario == *sc && s.lock == fam.default);
            let points = crate::stats::sorted_distinct(klock.map(|s| (s.order, s.point.as_str())));
            for (order, pt) in points {
                let here: Vec<&Sample> = (samples.iter())
                    .filter(|s| s.scenario == *sc && s.point == pt && s.order == order)
                    .collect();
                out.extend(cell(fam, &here));
            }
        }
    }
    out
}

/// The eligible peers of `fam`'s default among `here` (one case's samples): not
/// klock's, of the family's kind, spinning only if the family admits spinlocks,
/// measured, not starving a thread, and with a p99.9 within [`TAIL_MAX_X`] of the
/// best such peer's (returned too).
fn eligible<'a>(fam: &Family, here: &[&'a Sample]) -> (Vec<&'a Sample>, Option<u64>) {
    let peers: Vec<&Sample> = (measured_peers(fam, here).into_iter())
        .filter(|s| s.starves.is_none())
        .collect();
    // Tail: the best (lowest) p99.9 among the non-starving peers.
    let best_tail = peers.iter().filter_map(|s| s.tail_ns).min();
    let peers = (peers.into_iter())
        .filter(|s| tail_ok(s, best_tail))
        .collect();
    (peers, best_tail)
}

/// The peers of `fam`'s default measured in one case (`here`): not klock's,
/// of the family's kind, spinning only if the family admits spinlocks, with a
/// result.
fn measured_peers<'a>(fam: &Family, here: &[&'a Sample]) -> Vec<&'a Sample> {
    (here.iter().copied())
        .filter(|s| !is_klock(&s.lock))
        .filter(|s| fam.spinning_peers || !is_spinning_peer(&s.lock))
        .filter(|s| match (fam.kind, kind_of(&s.lock)) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        })
        .filter(|s| s.median.is_finite() && s.median > 0.0)
        .collect()
}

fn tail_ok(s: &Sample, best_tail: Option<u64>) -> bool {
    match (s.tail_ns, best_tail) {
        (Some(t), Some(b)) => t as f64 <= TAIL_MAX_X * b as f64,
        _ => true,
    }
}

/// The verdict row of one case (`here`: its samples), if `fam`'s default and a
/// peer were measured in it: against the best eligible peer, or, when every
/// peer starved a thread, against the best of them ([`no_eligible_peer`]).
fn cell(fam: &'static Family, here: &[&Sample]) -> Option<Cell> {
    let k = here.iter().find(|s| s.lock == fam.default)?;
    let (peers, best_tail) = eligible(fam, here);
    let Some(p) = best_of(k, &peers) else {
        return no_eligible_peer(fam, k, here);
    };
    let (ratio, ratio_lo, ratio_hi, mut outcome, more_runs) = compare_full(k, p);
    let note = match (k.starves, k.tail_ns, best_tail) {
        (Some(who), _, _) => Some(format!("klock starved {who}")),
        (None, Some(t), Some(b)) if !tail_ok(k, best_tail) => Some(format!(
            "klock's p99.9 {:.1}x the best peer's",
            t as f64 / b.max(1) as f64
        )),
        _ => None,
    };
    if note.is_some() {
        outcome = Outcome::Worse;
    }
    Some(Cell {
        family: fam,
        klock: (*k).clone(),
        peer: p.clone(),
        peers: peers.iter().map(|s| (*s).clone()).collect(),
        ratio,
        ratio_lo,
        ratio_hi,
        outcome,
        more_runs: more_runs.filter(|_| outcome == Outcome::Inconclusive),
        note,
        peer_note: None,
    })
}

/// The sample of `peers` with the best median in `k`'s direction.
fn best_of<'a>(k: &Sample, peers: &[&'a Sample]) -> Option<&'a Sample> {
    peers.iter().copied().max_by(|a, b| {
        if k.higher_better {
            a.median.total_cmp(&b.median)
        } else {
            b.median.total_cmp(&a.median)
        }
    })
}

/// The row of a case where peers were measured but none is eligible (each
/// starved a thread): klock against the best of them by median. A klock
/// that starved nobody is **better**, whatever its throughput; one that
/// starved a thread too is **worse**, as everywhere. (Before 2026-11-28 such
/// a case had no row at all, so a klock that alone served every thread went
/// unseen.)
fn no_eligible_peer(fam: &'static Family, k: &Sample, here: &[&Sample]) -> Option<Cell> {
    let p = best_of(k, &measured_peers(fam, here))?;
    let (ratio, ratio_lo, ratio_hi, _, _) = compare_full(k, p);
    let (outcome, note) = match k.starves {
        Some(who) => (Outcome::Worse, Some(format!("klock starved {who}"))),
        None => (Outcome::Better, None),
    };
    Some(Cell {
        family: fam,
        klock: k.clone(),
        peer: p.clone(),
        peers: Vec::new(),
        ratio,
        ratio_lo,
        ratio_hi,
        outcome,
        more_runs: None,
        note,
        peer_note: Some("no peer eligible: every peer starved a thread".to_string()),
    })
}

/// A family's verdict in one sentence, with its counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The family.
    pub family: &'static Family,
    /// Cases where klock is better.
    pub better: usize,
    /// Cases within noise.
    pub same: usize,
    /// Cases where klock is worse.
    pub worse: usize,
    /// Cases the runs did not decide.
    pub inconclusive: usize,
    /// The lock to pick (a Rust type or a peer's lockbench name).
    pub pick: String,
    /// The answer: `Mutex: pick parking_lot.`
    pub headline: String,
    /// The evidence after it (counts, the largest differences).
    pub detail: String,
    /// `headline` and `detail` as one sentence.
    pub sentence: String,
}

fn case(c: &Cell) -> String {
    format!("{} {}", c.klock.scenario, c.klock.point)
}

/// Cases grouped by workload: `mutex hot T=2, T=8; spin job T=8` (at most 4
/// workloads, then a count).
fn list<'a>(cs: impl Iterator<Item = &'a Cell> + Clone) -> String {
    let scenarios = crate::stats::first_seen(cs.clone().map(|c| c.klock.scenario.as_str()));
    let mut v: Vec<String> = (scenarios.iter().take(4))
        .map(|s| {
            let here = cs.clone().filter(|c| c.klock.scenario == *s);
            let points: Vec<&str> = here.map(|c| c.klock.point.as_str()).collect();
            format!("{s} {}", points.join(", "))
        })
        .collect();
    if scenarios.len() > 4 {
        v.push(format!("{} more workloads", scenarios.len() - 4));
    }
    v.join("; ")
}

/// The lock that is most often the best peer (the last seen of equals).
fn most_common_peer(cs: &[&Cell]) -> String {
    let peers = crate::stats::first_seen(cs.iter().map(|c| c.peer.lock.as_str()));
    let count = |p: &&str| cs.iter().filter(|c| c.peer.lock == *p).count();
    peers
        .into_iter()
        .max_by_key(count)
        .unwrap_or_default()
        .into()
}

/// One summary per family that has verdict rows.
pub fn summarize(cells: &[Cell]) -> Vec<Summary> {
    (FAMILIES.iter())
        .filter_map(|fam| {
            let cs: Vec<&Cell> = cells.iter().filter(|c| c.family == fam).collect();
            (!cs.is_empty()).then(|| summary(fam, &cs))
        })
        .collect()
}

/// A pick: the lock, the headline and the evidence.
type Pick = (String, String, String);

fn summary(fam: &'static Family, cs: &[&Cell]) -> Summary {
    let by = |o: Outcome| {
        cs.iter()
            .copied()
            .filter(|c| c.outcome == o)
            .collect::<Vec<_>>()
    };
    let (b, s, w) = (by(Outcome::Better), by(Outcome::Same), by(Outcome::Worse));
    let inc = by(Outcome::Inconclusive);
    let (pick, headline, mut detail) = if w.is_empty() {
        pick_never_worse(fam, cs, &b, &s)
    } else {
        pick_sometimes_worse(fam, cs, &b, &s, &w)
    };
    detail.push_str(&caveats(cs, &inc));
    Summary {
        family: fam,
        better: b.len(),
        same: s.len(),
        worse: w.len(),
        inconclusive: inc.len(),
        sentence: format!("{headline} {detail}"),
        pick,
        headline,
        detail,
    }
}

/// klock against one peer in every case where both were measured: the cases (with
/// the ratio) where klock is ahead, and where it is behind.
fn head_to_head<'a>(cs: &[&'a Cell], peer: &str) -> [Vec<(&'a Cell, f64)>; 2] {
    let mut v = [Vec::new(), Vec::new()];
    for c in cs {
        if let Some(p) = c.peers.iter().find(|p| p.lock == peer) {
            match compare_samples(&c.klock, p) {
                (r, _, _, Outcome::Better) => v[0].push((*c, r)),
                (r, _, _, Outcome::Worse) => v[1].push((*c, r)),
                _ => {}
            }
        }
    }
    v
}

/// The pick when klock is never behind the best peer: klock when it beats it
/// somewhere, or when the most frequent best peer falls behind klock somewhere;
/// otherwise either.
fn pick_never_worse(fam: &Family, cs: &[&Cell], b: &[&Cell], s: &[&Cell]) -> Pick {
    let (api, name, n) = (fam.api, fam.name, cs.len());
    if let Some(c) = b.iter().max_by(|x, y| x.ratio.total_cmp(&y.ratio)) {
        let best = format!("{:.2}x at {}", c.ratio, case(c));
        return (
            api.to_string(),
            format!("{name}: pick {api}."),
            format!(
                "It beats the best peer in {} of {n} cases (up to {best}) and is within noise in the other {}.",
                b.len(),
                s.len()
            ),
        );
    }
    let p = most_common_peer(cs);
    let [ahead, _] = head_to_head(cs, &p);
    if ahead.is_empty() {
        return (
            format!("{api} or {p}"),
            format!("{name}: pick {api} or {p}."),
            format!(
                "{api} is within noise of the best peer in all {n} cases, and of {p} wherever both ran."
            ),
        );
    }
    (
        api.to_string(),
        format!("{name}: pick {api}."),
        format!(
            "It is within noise of the best peer in all {n} cases, and no single other lock keeps up everywhere: {p}, the most frequent best peer, is behind {api} at {}.",
            list(ahead.iter().map(|x| x.0))
        ),
    )
}

/// The pick when klock is behind the best peer somewhere: the peer that most often
/// beats it, unless klock is ahead of that peer somewhere (then it depends).
fn pick_sometimes_worse(fam: &Family, cs: &[&Cell], b: &[&Cell], s: &[&Cell], w: &[&Cell]) -> Pick {
    let (api, name, n) = (fam.api, fam.name, cs.len());
    let p = most_common_peer(w);
    let [ahead, behind] = head_to_head(cs, &p);
    if ahead.is_empty() {
        let worst = (w.iter().min_by(|x, y| x.ratio.total_cmp(&y.ratio)))
            .map(|c| format!("{:.2}x at {}, against {}", c.ratio, case(c), c.peer.lock))
            .unwrap_or_default();
        let also = if b.is_empty() {
            String::new()
        } else {
            format!(", ahead in {}", b.len())
        };
        return (
            p.clone(),
            format!("{name}: pick {p}."),
            format!(
                "{api} is behind the best peer in {} of {n} cases (down to {worst}), within noise in {}{also}, and never ahead of {p}.",
                w.len(),
                s.len(),
            ),
        );
    }
    let up = ahead.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let down = behind.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let (lose, by) = if behind.is_empty() {
        ("none".to_string(), String::new())
    } else {
        (
            list(behind.iter().map(|x| x.0)),
            format!(" ({api} down to {down:.2}x)"),
        )
    };
    (
        format!("{api} or {p}, by load"),
        format!("{name}: it depends on the load."),
        format!(
            "Against {p}: pick {api} for {} (up to {up:.2}x), {p} for {lose}{by}. Against the best peer of each case: {} better, {} within noise, {} worse of {n}.",
            list(ahead.iter().map(|x| x.0)),
            b.len(),
            s.len(),
            w.len()
        ),
    )
}

/// The inconclusive cases (and how many more runs would decide them), and the cases
/// where fairness or tail ruled klock out.
fn caveats(cs: &[&Cell], inc: &[&Cell]) -> String {
    let mut s = String::new();
    if !inc.is_empty() {
        let more = inc.iter().filter_map(|c| c.more_runs).max().unwrap_or(0);
        s.push_str(&format!(
            " {} of {} cases are inconclusive ({}){}.",
            inc.len(),
            cs.len(),
            list(inc.iter().copied()),
            if more > MORE_RUNS_SHOWN {
                ": the runs are too noisy to decide; rerun on a quieter machine".to_string()
            } else if more == 0 {
                String::new()
            } else {
                format!(": about {more} more runs per lock would decide them")
            }
        ));
    }
    let starved = cs.iter().copied().filter(|c| c.note.is_some());
    if let Some(first) = starved.clone().next() {
        s.push_str(&format!(
            " Fairness or tail ruled klock out at {} ({}).",
            list(starved),
            first.note.as_deref().unwrap_or_default()
        ));
    }
    s
}

/// How to read the verdict, one line.
pub const LEGEND: &str = "klock vs peer > 1 means klock is better (throughput ratio; for ns/op and times, peer / klock), \
     the median of the per-round ratios with its 95 % bootstrap confidence interval over the interleaved runs. \
     same: the interval lies within ±5 %; better / worse: it lies above / below 1; inconclusive: neither (more runs would decide). \
     A lock that starved a thread (under 10 % of the mean in a run) or whose p99.9 is over 2x the best peer's is never the pick; klock's row then reads worse.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::{has, rec, report, uncontended};
    use crate::table::outcome_text;

    fn cells_of(recs: Vec<Record>) -> Vec<Cell> {
        cells(&samples(&report(recs)))
    }

    /// A synthetic report: klock_mutex clearly ahead at T=8, tied at T=2, behind at
    /// T=1; klock_tas_park clearly ahead everywhere; an rwlock case; uncontended ns/op.
    fn synthetic() -> Report {
        let mut results = vec![
            rec("mutex", "klock_mutex", 1, &[3.0, 3.1, 3.2]),
            rec("mutex", "std", 1, &[3.5, 3.6, 3.7]),
            rec("mutex", "parking_lot", 1, &[3.3, 3.4, 3.5]),
            rec("mutex", "klock_tas_park", 1, &[4.0, 4.1, 4.2]),
            rec("mutex", "klock_pvqspin", 1, &[9.0, 9.0, 9.0]),
            rec("mutex", "klock_mutex", 2, &[2.0, 2.2, 2.4]),
            rec("mutex", "std", 2, &[2.1, 2.3, 2.5]),
            rec("mutex", "klock_tas_park", 2, &[3.0, 3.0, 3.0]),
            rec("mutex", "klock_mutex", 8, &[4.0, 4.2, 4.4]),
            rec("mutex", "std", 8, &[1.0, 1.1, 1.2]),
            rec("mutex", "parking_lot", 8, &[2.0, 2.1, 2.2]),
            rec("mutex", "std_rw", 8, &[50.0, 50.0, 50.0]),
            rec("mutex", "ticket", 8, &[2.5, 2.5, 2.5]),
            rec("mutex", "klock_tas_park", 8, &[3.0, 3.0, 3.1]),
            rec("rwlock", "klock_rwlock_batched", 4, &[5.0, 5.0, 5.0]),
            rec("rwlock", "std_rw", 4, &[1.0, 1.0, 1.0]),
            rec("rwlock", "std", 4, &[50.0, 50.0, 50.0]),
        ];
        for (lock, ns) in [("klock_mutex", 10.0), ("std", 20.0), ("parking_lot", 12.0)] {
            results.push(uncontended(lock, ns));
        }
        report(results)
    }

    #[test]
    fn a_peer_that_starves_writers_is_not_the_best_peer() {
        use crate::record::ClassMetrics;
        let class = |min: f64, avg: f64| ClassMetrics {
            threads: 4,
            ops_per_thread: crate::stats::MinAvgMax {
                min,
                avg,
                max: avg * 2.0,
            },
            ..ClassMetrics::default()
        };
        // The fastest lock's writers, min and mean ops per thread: one writer did
        // nothing; the whole class did nothing (each writer equals its class mean,
        // which a per-class rule let pass).
        for (wmin, wavg) in [(0.0, 100.0), (0.0, 0.0)] {
            let rw = |lock: &str, mops: f64, (wmin, wavg): (f64, f64)| {
                let mut r = rec("rwlock", lock, 8, &[mops, mops * 1.01, mops * 0.99]);
                r.readers = Some(class(90.0, 100.0));
                r.writers = Some(class(wmin, wavg));
                r
            };
            let ss = samples(&report(vec![
                rw("klock_rwlock_batched", 5.0, (80.0, 100.0)),
                rw("std_rw", 9.0, (wmin, wavg)),
                rw("parking_lot_rw", 6.0, (60.0, 100.0)),
            ]));
            let std_rw = ss.iter().find(|s| s.lock == "std_rw").unwrap();
            assert_eq!(std_rw.starves, Some("writers"));
            let c = &cells(&ss)[0];
            assert_eq!(
                (c.family.name, c.peer.lock.as_str()),
                ("RwLock", "parking_lot_rw")
            );
            assert!(c.peers.iter().all(|p| p.lock != "std_rw"));
        }
        // The same through the per-run share the runner records.
        let mut r = rec("mutex", "std", 8, &[9.0, 9.0, 9.0]);
        r.min_thread_share = Some(0.0);
        assert_eq!(samples(&report(vec![r]))[0].starves, Some("a thread"));
    }

    #[test]
    fn consistently_slower_reads_worse_however_noisy_the_peer() {
        // klock at exactly 0.9x the peer in every round; the peer's own runs
        // vary by 2x, so the runs' min-max ranges overlap (the old rule read
        // "same"). Paired by round, the interval is 0.9..0.9: worse.
        let peer = [4.0, 6.0, 3.0, 5.5, 4.5];
        let k: Vec<f64> = peer.iter().map(|x| x * 0.9).collect();
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &k),
            rec("mutex", "parking_lot", 8, &peer),
        ]);
        assert_eq!(cs[0].outcome, Outcome::Worse, "{:?}", cs[0]);
        assert!((cs[0].ratio - 0.9).abs() < 1e-9);
        // A 0.66x median with scattered rounds is not "same" either.
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &[2.0, 4.5, 2.6, 3.9, 2.2]),
            rec("mutex", "parking_lot", 8, &[4.0, 5.0, 3.5, 4.8, 3.9]),
        ]);
        assert_ne!(cs[0].outcome, Outcome::Same, "{:?}", cs[0]);
    }

    #[test]
    fn noisy_rounds_are_inconclusive_and_say_how_many_more_runs() {
        // Rounds scatter around 1.0 by +-15 %: neither within 5 % nor clear of 1.
        let cs = cells_of(vec![
            rec("mutex", "klock_mutex", 8, &[1.15, 0.85, 1.1, 0.9, 1.0]),
            rec("mutex", "parking_lot", 8, &[1.0, 1.0, 1.0, 1.0, 1.0]),
        ]);
        let c = &cs[0];
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
        let more = c.more_runs.expect("a number of runs");
        assert!((1..1000).contains(&more), "{more}");
        has(&outcome_text(c), "more runs");
        let sm = summarize(&cs).remove(0);
        assert_eq!(sm.inconclusive, 1);
        has(&sm.detail, "inconclusive");
    }

    #[test]
    fn tail_and_starvation_rule_out_peers_and_klock() {
        let with_tail = |lock: &str, runs: &[f64], p999: u64, share: f64| {
            let mut r = rec("mutex", lock, 32, runs);
            r.latency_ns.p999 = p999;
            r.latency_ns.samples = 1000;
            r.min_thread_share = Some(share);
            r
        };
        let pl = || with_tail("parking_lot", &[5.0, 5.1, 4.9], 1000, 0.8);
        for (recs, outcome, why) in [
            // std is fastest but its p99.9 is 3x parking_lot's: not the peer.
            (
                vec![
                    with_tail("klock_mutex", &[5.0; 3], 1000, 0.8),
                    with_tail("std", &[6.0; 3], 3000, 0.8),
                    pl(),
                ],
                Outcome::Same,
                "same",
            ),
            // klock faster but starving a thread, or with 5x the tail: worse, and
            // the row says why.
            (
                vec![with_tail("klock_mutex", &[7.0; 3], 1000, 0.001), pl()],
                Outcome::Worse,
                "starved a thread",
            ),
            (
                vec![with_tail("klock_mutex", &[7.0; 3], 5000, 0.8), pl()],
                Outcome::Worse,
                "p99.9 5.0x",
            ),
        ] {
            let c = &cells_of(recs)[0];
            assert_eq!((c.peer.lock.as_str(), c.outcome), ("parking_lot", outcome));
            has(&outcome_text(c), why);
        }
    }

    /// The ruler (issue 31): these values decide every verdict row. Changing
    /// one is a ruler change, made only in a commit of its own that shows the
    /// verdict before and after on unchanged locks (docs/report.md, "The
    /// ruler is frozen"); this test makes such a change deliberate. Variants
    /// may be added to a family: they are never peers and never the klock
    /// side. The quick suite's settings are pinned by
    /// `exp::report::tests::quick_plan_covers_klocks_conditions`.
    #[test]
    fn the_ruler_is_frozen() {
        assert_eq!((SAME_MARGIN, STARVED_MIN_AVG, TAIL_MAX_X), (0.05, 0.1, 2.0));
        assert_eq!(SPINNING_PEERS, ["pthread_spin", "ttas", "ticket", "mcs"]);
        let fams: Vec<_> = (FAMILIES.iter())
            .map(|f| (f.name, f.default, f.kind, f.spinning_peers))
            .collect();
        assert_eq!(
            fams,
            [
                ("SpinLock", "klock_tas_park", Some(LockKind::Mutex), true),
                ("Mutex", "klock_mutex", Some(LockKind::Mutex), false),
                (
                    "RwLock",
                    "klock_rwlock_batched",
                    Some(LockKind::RwLock),
                    false
                ),
                ("preload", "klock_preload", None, true),
            ]
        );
    }

    #[test]
    fn when_every_peer_starves_the_case_still_has_a_row() {
        let with_share = |lock: &str, runs: &[f64], share: f64| {
            let mut r = rec("mutex", lock, 32, runs);
            r.min_thread_share = Some(share);
            r
        };
        let starving_peers = || {
            vec![
                with_share("std", &[6.0; 3], 0.0),
                with_share("parking_lot", &[5.0; 3], 0.01),
            ]
        };
        // klock slower but serving every thread: better, against the fastest
        // measured peer, and the row says why.
        let mut recs = starving_peers();
        recs.push(with_share("klock_mutex", &[4.0; 3], 0.5));
        let c = &cells_of(recs)[0];
        assert_eq!((c.peer.lock.as_str(), c.outcome), ("std", Outcome::Better));
        assert!(c.note.is_none());
        has(&outcome_text(c), "every peer starved a thread");
        // klock starving too: worse, as everywhere.
        let mut recs = starving_peers();
        recs.push(with_share("klock_mutex", &[7.0; 3], 0.0));
        let c = &cells_of(recs)[0];
        assert_eq!(c.outcome, Outcome::Worse);
        has(&outcome_text(c), "klock starved a thread");
    }

    #[test]
    fn ratios_are_computed_from_the_records() {
        let cs = cells(&samples(&synthetic()));
        let get = |fam: &str, sc: &str, pt: &str| {
            cs.iter()
                .find(|c| c.family.name == fam && c.klock.scenario == sc && c.klock.point == pt)
                .unwrap_or_else(|| panic!("no cell {fam} {sc} {pt}: {cs:#?}"))
        };
        // T=8: best peer is parking_lot (2.1); std_rw (an rwlock) is not a mutex peer,
        // ticket (a plain spinlock) is not a Mutex peer and klock_tas_park (a klock
        // lock) is not a peer at all.
        let c = get("Mutex", "mutex balanced", "T=8");
        assert_eq!(c.peer.lock, "parking_lot");
        // Paired by round: 4.0/2.0, 4.2/2.1, 4.4/2.2, all 2.0.
        assert!((c.ratio - 2.0).abs() < 1e-9, "{}", c.ratio);
        assert!((c.ratio_lo - 2.0).abs() < 1e-9);
        assert!((c.ratio_hi - 2.0).abs() < 1e-9);
        assert_eq!(c.outcome, Outcome::Better);
        let c = get("Mutex", "mutex balanced", "T=2");
        assert_eq!((c.peer.lock.as_str(), c.outcome), ("std", Outcome::Same));
        let c = get("Mutex", "mutex balanced", "T=1");
        assert_eq!((c.peer.lock.as_str(), c.outcome), ("std", Outcome::Worse));
        assert!((c.ratio - 3.1 / 3.6).abs() < 1e-9);
        // SpinLock: the variant klock_pvqspin (9 Mops/s) is never the peer; plain
        // spinlocks are.
        let c = get("SpinLock", "mutex balanced", "T=1");
        assert_eq!((c.peer.lock.as_str(), c.outcome), ("std", Outcome::Better));
        let c = get("SpinLock", "mutex balanced", "T=8");
        assert_eq!(c.peer.lock, "ticket");
        // RwLock: std (a mutex) is not a peer.
        let c = get("RwLock", "rwlock balanced", "T=4");
        assert_eq!(c.peer.lock, "std_rw");
        assert!((c.ratio - 5.0).abs() < 1e-9);
        // Uncontended: smaller ns/op is better; ratio = peer / klock.
        let c = get("Mutex", "uncontended", "T=1");
        assert_eq!(c.peer.lock, "parking_lot");
        assert!((c.ratio - 1.2).abs() < 1e-9, "{}", c.ratio);
        assert_eq!(c.outcome, Outcome::Better);
        assert_eq!(c.klock.unit, "ns/op");
    }

    #[test]
    fn summaries_name_the_lock_to_pick() {
        let cs = cells(&samples(&synthetic()));
        let s = summarize(&cs);
        let get = |n: &str| s.iter().find(|x| x.family.name == n).unwrap();
        let m = get("Mutex");
        assert_eq!((m.better, m.same, m.worse), (2, 1, 1));
        has(&m.sentence, "depends");
        has(&m.sentence, "std");
        let sp = get("SpinLock");
        assert_eq!(sp.pick, "klock::SpinLock");
        assert!(sp.sentence.starts_with("SpinLock: pick klock::SpinLock"));
        assert_eq!(sp.headline, "SpinLock: pick klock::SpinLock.");
        let rw = get("RwLock");
        assert_eq!((rw.better, rw.worse), (1, 0));
        let summary = |recs: Vec<Record>| summarize(&cells_of(recs)).remove(0);
        // Behind parking_lot everywhere, never ahead of it: pick parking_lot.
        let m = summary(vec![
            rec("mutex", "klock_mutex", 1, &[1.0, 1.1]),
            rec("mutex", "parking_lot", 1, &[2.0, 2.1]),
            rec("mutex", "klock_mutex", 8, &[1.0, 1.1]),
            rec("mutex", "parking_lot", 8, &[2.0, 2.1]),
        ]);
        assert_eq!(m.headline, "Mutex: pick parking_lot.");
        has(&m.detail, "never ahead of parking_lot");
        // Behind std at T=1 (std best there), but far ahead of std at T=8, where
        // parking_lot is the best peer and within noise: it depends.
        let m = summary(vec![
            rec("mutex", "klock_mutex", 1, &[1.0, 1.1]),
            rec("mutex", "std", 1, &[2.0, 2.1]),
            rec("mutex", "klock_mutex", 8, &[2.0, 2.2]),
            rec("mutex", "std", 8, &[0.1, 0.1]),
            rec("mutex", "parking_lot", 8, &[2.1, 2.3]),
        ]);
        assert_eq!(m.headline, "Mutex: it depends on the load.");
        has(&m.detail, "klock::Mutex for mutex balanced T=8");
        // Within 5 % of the best peer in every round everywhere, and of that
        // peer everywhere.
        let m = summary(vec![
            rec("mutex", "klock_mutex", 1, &[1.0, 1.3]),
            rec("mutex", "std", 1, &[1.01, 1.29]),
        ]);
        assert_eq!(m.headline, "Mutex: pick klock::Mutex or std.");
        // The same as each case's best peer, but the usual best peer collapses
        // somewhere: klock alone.
        let m = summary(vec![
            rec("mutex", "klock_mutex", 1, &[1.0, 1.3]),
            rec("mutex", "std", 1, &[1.01, 1.29]),
            rec("mutex", "klock_mutex", 2, &[1.0, 1.3]),
            rec("mutex", "std", 2, &[1.01, 1.29]),
            rec("mutex", "klock_mutex", 8, &[1.0, 1.2]),
            rec("mutex", "std", 8, &[0.1, 0.2]),
            rec("mutex", "parking_lot", 8, &[1.01, 1.19]),
        ]);
        assert_eq!(m.headline, "Mutex: pick klock::Mutex.");
        has(&m.detail, "std, the most frequent best peer");
    }

    #[test]
    fn verdict_table_has_a_row_per_cell() {
        let cs = cells(&samples(&synthetic()));
        let fams = crate::table::verdict_by_family(&cs);
        assert_eq!(fams.iter().map(|f| f.2.rows.len()).sum::<usize>(), cs.len());
        for (_, c, t) in &fams {
            assert_eq!(t.rows.len(), c.len());
            assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        }
        let m = fams.iter().find(|f| f.0.family.name == "Mutex").unwrap();
        has(&m.2.to_text(), "2.00x (2.00-2.00)");
        // The mixed sentence groups cases by workload.
        has(&m.0.detail, "mutex balanced T=8; uncontended T=1");
    }
}

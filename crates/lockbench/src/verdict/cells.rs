//! The verdict rows: per case, klock's default lock against the best eligible peer
//! (not starving a thread, its p99.9 within [`TAIL_MAX_X`] of the best peer's), or,
//! when every peer starved a thread, against the best of them.

use super::compare::{Outcome, compare_full};
use super::family::{FAMILIES, Family, is_klock, is_spinning_peer, kind_of};
use super::sample::Sample;

/// A lock whose p99.9 latency exceeds this multiple of the best eligible
/// peer's is not eligible as the pick.
pub const TAIL_MAX_X: f64 = 2.0;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::{has, rec, report};
    use crate::table::outcome_text;
    use crate::verdict::sample::samples;
    use crate::verdict::testing::{cells_of, synthetic};

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
}

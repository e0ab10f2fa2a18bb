//! A family's verdict in one sentence: which lock to pick, with the counts and the
//! largest differences, and the caveats (undecided cases, fairness and tail).

use super::cells::Cell;
use super::compare::{Outcome, compare_samples};
use super::family::{FAMILIES, Family};

/// An inconclusive row names how many more runs would decide it up to this
/// many; beyond, it says the runs are too noisy (a number that large is not
/// advice anyone would take).
pub const MORE_RUNS_SHOWN: usize = 50;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use crate::record::testing::{has, rec};
    use crate::verdict::cells::cells;
    use crate::verdict::sample::samples;
    use crate::verdict::testing::{cells_of, synthetic};

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

//! `lockbench compare A.json B.json`: two reports side by side, in the manner of
//! critcmp for criterion: "did my change help?" (A = before, B = after) and "how does
//! this machine differ from that one?".
//!
//! Records are matched by workload (experiment, preset, noise), point (threads or
//! readers+writers) and lock. Per match: A's and B's medians, the ratio B / A oriented
//! so that > 1 means B is better (for ns/op, A / B), the change in percent, and a
//! **flag** when the difference of the medians exceeds *both* runs' spread (max − min
//! of each side's runs) and `--threshold`: then it is a change, not noise. A side
//! with a single run has no spread, so its differences are never flagged (`?`).

use std::path::PathBuf;

use crate::exp::CliError;
use crate::record::Report;
use crate::table::Table;
use crate::verdict::{Sample, samples};

/// Arguments of `lockbench compare`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompareArgs {
    /// The baseline: a JSON report (`--json` of an experiment, or report.json).
    pub a: PathBuf,
    /// The candidate, compared against A.
    pub b: PathBuf,
    /// Also require |change| >= PCT percent to flag (0..=1000; default 0: the
    /// spread alone decides).
    #[arg(long, default_value_t = 0.0, value_parser = parse_pct, value_name = "PCT")]
    pub threshold: f64,
    /// Show only the flagged rows.
    #[arg(long)]
    pub flagged_only: bool,
}

/// Parses a percentage 0..=1000.
///
/// ```
/// assert_eq!(lockbench::compare::parse_pct("5").unwrap(), 5.0);
/// assert!(lockbench::compare::parse_pct("-1").unwrap_err().contains("0..=1000"));
/// ```
pub fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "bad percentage '{s}': allowed is a number 0..=1000, e.g. 5"
        )),
    }
}

/// What a matched row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// B is better beyond both spreads.
    Improved,
    /// B is worse beyond both spreads.
    Regressed,
    /// Within noise.
    Noise,
    /// A side had fewer than two runs: its noise is unknown.
    Unknown,
}

/// One matched (workload, point, lock).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Workload.
    pub scenario: String,
    /// Point.
    pub point: String,
    /// Lock.
    pub lock: String,
    /// A's sample.
    pub a: Sample,
    /// B's sample.
    pub b: Sample,
    /// B relative to A, > 1 = B better.
    pub ratio: f64,
    /// (B − A) / A of the medians, percent (raw, not oriented).
    pub change_pct: f64,
    /// The flag.
    pub change: Change,
}

/// Matches and compares two reports' samples (their records' plus, for `report
/// --full`, the seed experiments'); `threshold` in percent.
pub fn compare_lists(sa: &[Sample], sb: &[Sample], threshold: f64) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for x in sa {
        let Some(y) = sb
            .iter()
            .find(|y| y.scenario == x.scenario && y.point == x.point && y.lock == x.lock)
        else {
            unmatched.push(format!("{} {} {} (only in A)", x.scenario, x.point, x.lock));
            continue;
        };
        let (am, alo, ahi) = x.range();
        let (bm, blo, bhi) = y.range();
        let diff = bm - am;
        let change_pct = if am != 0.0 { 100.0 * diff / am } else { 0.0 };
        let ratio = if x.higher_better {
            if am > 0.0 { bm / am } else { f64::INFINITY }
        } else if bm > 0.0 {
            am / bm
        } else {
            f64::INFINITY
        };
        let change = if x.runs.len() < 2 || y.runs.len() < 2 {
            Change::Unknown
        } else if diff.abs() > ahi - alo && diff.abs() > bhi - blo && change_pct.abs() >= threshold
        {
            if ratio > 1.0 {
                Change::Improved
            } else {
                Change::Regressed
            }
        } else {
            Change::Noise
        };
        rows.push(Row {
            scenario: x.scenario.clone(),
            point: x.point.clone(),
            lock: x.lock.clone(),
            a: x.clone(),
            b: y.clone(),
            ratio,
            change_pct,
            change,
        });
    }
    for y in sb {
        if !sa
            .iter()
            .any(|x| y.scenario == x.scenario && y.point == x.point && y.lock == x.lock)
        {
            unmatched.push(format!("{} {} {} (only in B)", y.scenario, y.point, y.lock));
        }
    }
    (rows, unmatched)
}

fn cell(s: &Sample) -> String {
    let (m, lo, hi) = s.range();
    let sp = if m != 0.0 { 100.0 * (hi - lo) / m } else { 0.0 };
    format!("{} ±{:.0}%", crate::table::fmt_value(m, &s.unit), sp / 2.0)
}

/// The flag column's text.
pub fn flag(c: Change) -> &'static str {
    match c {
        Change::Improved => "improved",
        Change::Regressed => "REGRESSED",
        Change::Noise => "",
        Change::Unknown => "? (1 run)",
    }
}

const HEADER: [&str; 7] = [
    "lock",
    "threads",
    "A (median ±half range)",
    "B (median ±half range)",
    "B vs A (>1 = B better)",
    "change",
    "flag",
];

/// The comparison as tables, one per workload.
pub fn tables(rows: &[Row], a_name: &str, b_name: &str, flagged_only: bool) -> Vec<Table> {
    let scen = crate::stats::first_seen(rows.iter().map(|r| r.scenario.as_str()));
    scen.iter()
        .filter_map(|sc| {
            let rs: Vec<Vec<String>> = rows
                .iter()
                .filter(|r| r.scenario == *sc)
                .filter(|r| {
                    !flagged_only || matches!(r.change, Change::Improved | Change::Regressed)
                })
                .map(|r| {
                    vec![
                        r.lock.clone(),
                        r.point.clone(),
                        cell(&r.a),
                        cell(&r.b),
                        format!("{:.2}x", r.ratio),
                        format!("{:+.1}%", r.change_pct),
                        flag(r.change).to_string(),
                    ]
                })
                .collect();
            (!rs.is_empty()).then(|| Table {
                rows: rs,
                ..Table::new(format!("{sc}: A = {a_name}, B = {b_name}"), &HEADER)
            })
        })
        .collect()
}

/// A report and its samples: the records', plus the seed experiments' of a
/// `report --full` (its `seed` object).
fn load(p: &PathBuf) -> Result<(Report, Vec<Sample>), CliError> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| CliError(format!("cannot read {}: {e}", p.display())))?;
    let r = Report::from_json(&text).map_err(|e| {
        CliError(format!(
            "{} is not a lockbench JSON report (write one with --json or `lockbench report`): {e}",
            p.display()
        ))
    })?;
    let mut s = samples(&r);
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && v.get("seed").is_some()
    {
        // Seed records (rwsem, preload) and the other seed data.
        let seed = crate::exp::report::seeds_from_json(&v["seed"]);
        s.extend(seed.samples);
    }
    Ok((r, s))
}

/// Runs `lockbench compare`; returns the exit status (0; 2 for unreadable inputs).
pub fn run(args: &CompareArgs) -> Result<i32, CliError> {
    let (a, sa) = load(&args.a)?;
    let (b, sb) = load(&args.b)?;
    let (rows, unmatched) = compare_lists(&sa, &sb, args.threshold);
    let color = crate::table::color_stdout();
    let mut s = String::new();
    for (n, p, r) in [("A", &args.a, &a), ("B", &args.b, &b)] {
        let m = &r.machine;
        s.push_str(&format!(
            "{n}: {} | {} | effective CPUs {} | kernel {} | {}\n",
            p.display(),
            m.cpu_model,
            m.effective_cpus,
            m.kernel,
            m.date_utc
        ));
        s.push_str(&format!(
            "   {}\n",
            crate::costs::header(m.costs.as_ref(), " | ")
        ));
    }
    if a.machine.cpu_model != b.machine.cpu_model
        || a.machine.effective_cpus != b.machine.effective_cpus
    {
        s.push_str("note: different machines; compare ratios, not absolute numbers.\n");
    }
    for t in tables(
        &rows,
        &args.a.display().to_string(),
        &args.b.display().to_string(),
        args.flagged_only,
    ) {
        // The ratio, change and flag columns, coloured by the flag.
        let style = |r: usize, c: usize| {
            (color && c >= 4).then(|| match t.rows[r][6].as_str() {
                "improved" => "\x1b[1;32m",
                "REGRESSED" => "\x1b[1;31m",
                _ => "\x1b[2m",
            })
        };
        s.push_str(&t.to_text_styled(&style));
    }
    let count = |c: Change| rows.iter().filter(|r| r.change == c).count();
    s.push_str(&format!(
        "\n{} matched: {} improved, {} regressed, {} within noise, {} with a single run; flag = the medians differ by more than both sides' run range{}.\n",
        rows.len(),
        count(Change::Improved),
        count(Change::Regressed),
        count(Change::Noise),
        count(Change::Unknown),
        if args.threshold > 0.0 {
            format!(" and by at least {}%", args.threshold)
        } else {
            String::new()
        }
    ));
    if !unmatched.is_empty() {
        s.push_str(&format!(
            "{} not matched: {}{}\n",
            unmatched.len(),
            unmatched[..unmatched.len().min(8)].join("; "),
            if unmatched.len() > 8 { "; ..." } else { "" }
        ));
    }
    crate::exp::out(&s);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::{has, report, uncontended};

    fn rec(lock: &str, t: usize, runs: &[f64]) -> crate::record::Record {
        crate::record::testing::rec("mutex", lock, t, runs)
    }

    #[test]
    fn flags_a_regression_and_not_noise() {
        let a = samples(&report(vec![
            rec("klock_mutex", 8, &[4.0, 4.1, 4.2]),
            rec("std", 8, &[2.0, 2.2, 2.4]),
            rec("parking_lot", 8, &[3.0, 3.0, 3.0]),
            rec("ttas", 8, &[1.0]),
            rec("mcs", 8, &[1.0, 1.0]),
        ]));
        let b = samples(&report(vec![
            // A real regression: every B run is below every A run, by more than
            // either side's range.
            rec("klock_mutex", 8, &[3.0, 3.1, 3.2]),
            // Noise: the median moved by 0.2, less than A's range (0.4).
            rec("std", 8, &[2.1, 2.4, 2.5]),
            // An improvement.
            rec("parking_lot", 8, &[3.5, 3.6, 3.6]),
            // One run: cannot tell.
            rec("ttas", 8, &[2.0]),
            rec("pthread", 8, &[1.0, 1.0]),
        ]));
        let (rows, unmatched) = compare_lists(&a, &b, 0.0);
        let get = |l: &str| rows.iter().find(|r| r.lock == l).unwrap();
        assert_eq!(get("klock_mutex").change, Change::Regressed);
        assert!((get("klock_mutex").ratio - 3.1 / 4.1).abs() < 1e-9);
        assert_eq!(get("std").change, Change::Noise);
        assert_eq!(get("parking_lot").change, Change::Improved);
        assert_eq!(get("ttas").change, Change::Unknown);
        assert_eq!(unmatched.len(), 2, "{unmatched:?}");
        // A threshold above the change silences the flag.
        let (rows, _) = compare_lists(&a, &b, 30.0);
        assert_eq!(rows[0].change, Change::Noise, "{:?}", rows[0]);
        let t = tables(&rows, "a.json", "b.json", false);
        assert_eq!(t.len(), 1);
        has(&t[0].to_text(), "a.json");
    }

    #[test]
    fn noise_alone_is_never_flagged() {
        // Both sides draw from the same spread; medians differ a little.
        let a = samples(&report(vec![rec("std", 2, &[1.9, 2.0, 2.1, 2.2, 1.8])]));
        let b = samples(&report(vec![rec("std", 2, &[2.05, 1.95, 2.15, 1.85, 2.2])]));
        let (rows, _) = compare_lists(&a, &b, 0.0);
        assert_eq!(rows[0].change, Change::Noise);
    }

    #[test]
    fn ns_per_op_is_better_when_lower() {
        let mk = |ns: f64| samples(&report(vec![uncontended("std", ns)]));
        let (rows, _) = compare_lists(&mk(20.0), &mk(10.0), 0.0);
        assert_eq!(rows[0].change, Change::Improved);
        assert!((rows[0].ratio - 2.0).abs() < 1e-6);
    }
}

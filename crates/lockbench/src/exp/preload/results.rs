//! The `preload` experiment's results: the records of its runs, the terminal table
//! of `lockbench preload`, and the report's section (per workload, glibc against the
//! interposer with their ratio and verdict, and a chart of the ratios).

use super::measure::{GLIBC, KLOCK};
use super::workloads::Workload;
use crate::record::{Params, Record};
use crate::stats::{first_seen, median, sorted_distinct, spread};
use crate::table::{Section, Table};
use crate::verdict::Sample;

/// One measured run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Workload name.
    pub workload: String,
    /// Threads.
    pub threads: usize,
    /// `glibc` or `klock_preload`.
    pub side: String,
    /// The metric (None: the run failed).
    pub value: Option<f64>,
    /// Why it failed (empty when it did not).
    pub error: String,
    /// Steal time during the run, ns.
    pub steal_ns: u64,
    /// Whether the idle gate gave up waiting for quiet before it.
    pub gate_flagged: bool,
}

/// Per (workload, T, side): the records, in workload × T × side order.
pub fn records(runs: &[RunResult], ws: &[&Workload], threads: &[usize], d: f64) -> Vec<Record> {
    let mut v = Vec::new();
    for w in ws {
        for &t in threads {
            for side in [GLIBC, KLOCK] {
                let mine: Vec<&RunResult> = runs
                    .iter()
                    .filter(|r| r.workload == w.name && r.threads == t && r.side == side)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let vals: Vec<f64> = mine
                    .iter()
                    .filter_map(|r| r.value)
                    .map(|x| x / 1e6)
                    .collect();
                let failed = mine.iter().filter(|r| r.value.is_none()).count();
                v.push(Record {
                    experiment: "preload".into(),
                    lock: side.into(),
                    threads: t,
                    params: Params {
                        workload: w.name.into(),
                        duration_s: if w.fixed_work() { 0.0 } else { d },
                        quota_cpus: crate::quota::active(),
                        ..Params::default()
                    },
                    throughput_mops: if vals.is_empty() { 0.0 } else { median(&vals) },
                    spread: if vals.is_empty() { 0.0 } else { spread(&vals) },
                    runs_mops: vals.clone(),
                    runs: vals.len(),
                    collapsed: failed > 0,
                    collapsed_runs: failed,
                    steal_ms: mine.iter().map(|r| r.steal_ns).sum::<u64>() / 1_000_000,
                    gate_flagged_runs: mine.iter().filter(|r| r.gate_flagged).count(),
                    ..Record::default()
                });
            }
        }
    }
    v
}

fn fmt_metric(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The side-by-side table: one row per (workload, T).
pub fn render(recs: &[Record], ws: &[&Workload], threads: &[usize], runs: u32) -> String {
    let mut t = Table::new(
        format!(
            "preload: glibc vs klock interposer, median of {runs} interleaved runs per side (ratio = klock / glibc; > 1: klock faster)"
        ),
        &[
            "workload",
            "metric",
            "T",
            "glibc",
            "klock preload",
            "ratio",
            "glibc spread",
            "klock spread",
            "failed g/k",
        ],
    );
    let get = |w: &Workload, th: usize, side: &str| {
        recs.iter()
            .find(|r| r.params.workload == w.name && r.threads == th && r.lock == side)
    };
    fn ran(r: Option<&Record>) -> Option<&Record> {
        r.filter(|r| r.runs > 0)
    }
    for &w in ws {
        for &th in threads {
            let (g, k) = (get(w, th, GLIBC), get(w, th, KLOCK));
            if g.is_none() && k.is_none() {
                continue;
            }
            let val = |r| ran(r).map_or("FAILED".into(), |r| fmt_metric(r.throughput_mops * 1e6));
            let sp = |r| ran(r).map_or("-".into(), |r| format!("{:.0}%", r.spread * 100.0));
            let ratio = match (ran(g), ran(k)) {
                (Some(g), Some(k)) if g.throughput_mops > 0.0 => {
                    format!("{:.2}", k.throughput_mops / g.throughput_mops)
                }
                _ => "-".into(),
            };
            let failed = |r: Option<&Record>| r.map_or(0, |r| r.collapsed_runs);
            t.rows.push(vec![
                w.name.into(),
                w.unit.into(),
                th.to_string(),
                val(g),
                val(k),
                ratio,
                sp(g),
                sp(k),
                format!("{}/{}", failed(g), failed(k)),
            ]);
        }
    }
    t.to_text()
}

/// The preload section from its records: per workload, glibc against the
/// interposer with their ratio and verdict, and a chart of the ratios.
pub fn section(recs: &[Record], note: &str) -> Section {
    let workloads = first_seen(recs.iter().map(|r| r.params.workload.as_str()));
    let ts = sorted_distinct(recs.iter().map(|r| r.threads));
    let (mut tables, mut series) = (Vec::new(), Vec::new());
    for (wi, w) in workloads.iter().enumerate() {
        let (table, points) = workload_table(recs, w, &ts);
        tables.push(table);
        if wi < crate::chart::MAX_SERIES {
            series.push(crate::chart::Series {
                name: w.to_string(),
                points,
                bold: false,
                style: wi,
            });
        }
    }
    let charts = vec![crate::chart::line(&crate::chart::LineChart {
        title: "preload: klock_preload / glibc per program (> 1: the interposer is faster)".into(),
        x_desc: "threads".into(),
        y_desc: "ratio (bars: run range)".into(),
        x_labels: ts.iter().map(|t| t.to_string()).collect(),
        series,
        scale: crate::chart::Scale::Auto,
        reference: Some(1.0),
    })];
    Section {
        title: "preload: unmodified programs, glibc's locks against klock's interposer".into(),
        notes: vec![format!(
            "Each program runs with and without LD_PRELOAD=libklock_preload.so, interleaved; the programs' own metrics (events/s, lock ops/s, bogo ops/s, TPS) in millions. {note}"
        )],
        tables,
        charts,
    }
}

/// One workload's table (per thread count: both sides, their ratio with its range
/// and verdict, spreads, failures) and the ratio's chart points.
fn workload_table(
    recs: &[Record],
    w: &str,
    ts: &[usize],
) -> (Table, Vec<(usize, crate::chart::Value)>) {
    let get = |t: usize, side: &str| {
        (recs.iter()).find(|r| r.params.workload == w && r.threads == t && r.lock == side)
    };
    let mut table = Table::new(
        format!("preload {w}: millions of the program's own metric per second, median"),
        &[
            "T",
            "glibc",
            "klock_preload",
            "klock / glibc (run range)",
            "verdict",
            "spread glibc / klock",
            "failed runs glibc / klock",
        ],
    );
    let mut points = Vec::new();
    for (ti, &t) in ts.iter().enumerate() {
        let (Some(g), Some(k)) = (get(t, GLIBC), get(t, KLOCK)) else {
            continue;
        };
        let side = |r: &Record| Sample {
            median: r.throughput_mops,
            ..Sample::of_runs("", t, &r.lock, r.runs_mops.clone(), true, "")
        };
        let (ratio, lo, hi, o) = crate::verdict::compare_samples(&side(k), &side(g));
        table.rows.push(vec![
            t.to_string(),
            format!("{:.4}", g.throughput_mops),
            format!("{:.4}", k.throughput_mops),
            format!("{ratio:.2}x ({lo:.2}-{hi:.2})"),
            o.word().to_string(),
            format!("{:.1}% / {:.1}%", g.spread * 100.0, k.spread * 100.0),
            format!("{} / {}", g.collapsed_runs, k.collapsed_runs),
        ]);
        let (lo, hi) = (lo.min(ratio), hi.max(ratio));
        points.push((ti, crate::chart::Value::Finite { y: ratio, lo, hi }));
    }
    (table, points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Report;
    use crate::sys::Machine;

    #[test]
    fn records_and_table() {
        let r = |w: &str, side: &str, v: Option<f64>| RunResult {
            workload: w.into(),
            threads: 2,
            side: side.into(),
            value: v,
            error: if v.is_none() { "boom" } else { "" }.into(),
            ..RunResult::default()
        };
        let runs = vec![
            r("sysbench-threads", GLIBC, Some(1000.0)),
            r("sysbench-threads", GLIBC, Some(1200.0)),
            r("sysbench-threads", KLOCK, Some(2000.0)),
            r("sysbench-threads", KLOCK, None),
            r("memcached", GLIBC, None),
        ];
        let ws = [
            Workload::parse("sysbench-threads").unwrap(),
            Workload::parse("memcached").unwrap(),
        ];
        let recs = records(&runs, &ws, &[2], 2.0);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].lock, GLIBC);
        assert!((recs[0].throughput_mops - 0.0011).abs() < 1e-12);
        assert!((recs[0].spread - 200.0 / 1100.0).abs() < 1e-9);
        assert_eq!((recs[1].runs, recs[1].collapsed_runs), (1, 1));
        assert_eq!(recs[2].runs, 0);
        let text = render(&recs, &ws, &[2], 2);
        let row = text
            .lines()
            .find(|l| l.contains("sysbench-threads"))
            .unwrap();
        assert!(
            row.contains("1100") && row.contains("2000") && row.contains("1.82"),
            "{row}"
        );
        assert!(row.contains("0/1"), "{row}");
        let row = text.lines().find(|l| l.contains("| memcached")).unwrap();
        assert!(row.contains("FAILED"), "{row}");
        // The records survive the JSON round trip and the generic renderers.
        let rep = Report {
            machine: Machine::default(),
            command: "t".into(),
            results: recs,
        };
        let back = Report::from_json(&rep.to_json()).unwrap();
        assert_eq!(back.results.len(), 3);
        for (b, r) in back.results.iter().zip(&rep.results) {
            assert_eq!(
                (&b.lock, &b.params.workload, b.runs),
                (&r.lock, &r.params.workload, r.runs)
            );
            assert!((b.throughput_mops - r.throughput_mops).abs() < 1e-12);
        }
        let html = crate::html::render(&back);
        assert!(html.contains("klock_preload") && html.contains("sysbench-threads"));
        assert!(crate::table::render(&back).contains("preload, workload sysbench-threads"));
    }
}

//! The `preload` experiment's results: the records of its runs, the terminal table
//! of `lockbench preload`, and the report's section (per workload, glibc against the
//! interposer with their ratio and verdict, and a chart of the ratios).

use super::measure::{GLIBC, HELGRIND, HELGRIND_DIV, KLOCK, LOCKDEP, TSAN, TSAN_DIV};
use super::parsers::Parser;
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
    /// `glibc`, `klock_preload`, `klock_lockdep`, `tsan` or `helgrind`.
    pub side: String,
    /// The metric (None: the run failed).
    pub value: Option<f64>,
    /// Why it failed (empty when it did not).
    pub error: String,
    /// Steal time during the run, ns.
    pub steal_ns: u64,
    /// Whether the idle gate gave up waiting for quiet before it.
    pub gate_flagged: bool,
    /// Lock-order reports in its stderr (lockdep, ThreadSanitizer, helgrind).
    #[serde(default)]
    pub reports: usize,
}

/// Every side, in table order.
pub const SIDES: [&str; 5] = [GLIBC, KLOCK, LOCKDEP, TSAN, HELGRIND];

/// Per (workload, T, side): the records, in workload × T × side order.
pub fn records(runs: &[RunResult], ws: &[&Workload], threads: &[usize], d: f64) -> Vec<Record> {
    let mut v = Vec::new();
    for w in ws {
        for t in w.thread_counts(threads) {
            for side in SIDES {
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
        for th in w.thread_counts(threads) {
            let (g, k) = (get(w, th, GLIBC), get(w, th, KLOCK));
            if g.is_none() && k.is_none() {
                continue;
            }
            let val = |r| ran(r).map_or("FAILED".into(), |r| fmt_shown(w, r));
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

/// The value of a record in its workload's unit: ns per pair for `held_cost` (its
/// records hold pairs/s), else the metric per second.
fn shown(w: &Workload, r: &Record) -> f64 {
    let v = r.throughput_mops * 1e6;
    if matches!(w.parser, Parser::HeldCost(_)) {
        1e9 / v
    } else {
        v
    }
}

/// [`shown`], formatted: ns with two decimals, else [`fmt_metric`].
fn fmt_shown(w: &Workload, r: &Record) -> String {
    if matches!(w.parser, Parser::HeldCost(_)) {
        format!("{:.2}", shown(w, r))
    } else {
        fmt_metric(shown(w, r))
    }
}

/// Whether lockdep's overhead on `w` has a target ([`LOCKDEP_TARGET`]).
pub fn has_target(w: &Workload) -> bool {
    w.name == "nested" || w.name == "sysbench-mutex" || w.name.starts_with("kc-")
}

/// The most lockdep may slow the targeted workloads down (klock / klock+lockdep).
pub const LOCKDEP_TARGET: f64 = 1.5;

/// `--lockdep`'s tables: klock+lockdep against klock per (workload, T), and, for the
/// workloads also run under ThreadSanitizer and helgrind, those against glibc.
pub fn render_lockdep(
    recs: &[Record],
    runs: &[RunResult],
    ws: &[&Workload],
    threads: &[usize],
    n: u32,
) -> String {
    // None: no run succeeded (or none ran: see `absent`).
    let get = |w: &Workload, th: usize, side: &str| {
        (recs.iter())
            .find(|r| r.params.workload == w.name && r.threads == th && r.lock == side)
            .filter(|r| r.runs > 0)
    };
    let absent = |w: &Workload, th: usize, side: &str| {
        !(recs.iter()).any(|r| r.params.workload == w.name && r.threads == th && r.lock == side)
    };
    let failed = |w: &Workload, th: usize, side: &str| {
        (recs.iter())
            .find(|r| r.params.workload == w.name && r.threads == th && r.lock == side)
            .map_or(0, |r| r.collapsed_runs)
    };
    let reports = |w: &Workload, th: usize, side: &str| -> usize {
        (runs.iter())
            .filter(|r| r.workload == w.name && r.threads == th && r.side == side)
            .map(|r| r.reports)
            .sum()
    };
    let val = |w: &Workload, r: Option<&Record>| r.map_or("FAILED".into(), |r| fmt_shown(w, r));
    let val_or_dash = |w: &Workload, th: usize, side: &str| {
        if absent(w, th, side) {
            "-".into()
        } else {
            val(w, get(w, th, side))
        }
    };
    // x times slower than `base` (a rate: base / r; ns: r / base).
    // The records hold rates (held_cost's too: pairs/s), so base / r either way.
    let slowdown = |base: Option<&Record>, r: Option<&Record>| match (base, r) {
        (Some(b), Some(r)) if b.throughput_mops > 0.0 && r.throughput_mops > 0.0 => {
            Some(b.throughput_mops / r.throughput_mops)
        }
        _ => None,
    };
    let x = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
    let sp = |r: Option<&Record>| r.map_or("-".into(), |r| format!("{:.0}%", r.spread * 100.0));
    let mut t = Table::new(
        format!(
            "preload --lockdep: klock interposer with KLOCK_LOCKDEP=1 vs without, median of {n} interleaved runs per side (lockdep / klock: the metric's ratio; slowdown: how many times slower with lockdep, target <= {LOCKDEP_TARGET}x on nested, sysbench-mutex, kc-*)"
        ),
        &[
            "workload",
            "metric",
            "T",
            "glibc",
            "klock",
            "klock+lockdep",
            "lockdep / klock",
            "slowdown",
            "target",
            "spread k/l",
            "lockdep reports",
            "failed k/l",
        ],
    );
    for &w in ws {
        for th in w.thread_counts(threads) {
            let (k, l) = (get(w, th, KLOCK), get(w, th, LOCKDEP));
            if k.is_none() && l.is_none() && failed(w, th, KLOCK) + failed(w, th, LOCKDEP) == 0 {
                continue;
            }
            let ratio = match (k, l) {
                (Some(k), Some(l)) => format!("{:.2}", shown(w, l) / shown(w, k)),
                _ => "-".into(),
            };
            let s = slowdown(k, l);
            let target = match s {
                Some(s) if has_target(w) => {
                    if s <= LOCKDEP_TARGET {
                        "ok"
                    } else {
                        "OVER"
                    }
                }
                _ => "-",
            };
            t.rows.push(vec![
                w.name.into(),
                w.unit.into(),
                th.to_string(),
                val_or_dash(w, th, GLIBC),
                val(w, k),
                val(w, l),
                ratio,
                x(s),
                target.into(),
                format!("{}/{}", sp(k), sp(l)),
                reports(w, th, LOCKDEP).to_string(),
                format!("{}/{}", failed(w, th, KLOCK), failed(w, th, LOCKDEP)),
            ]);
        }
    }
    let mut out = t.to_text();
    let san: Vec<&&Workload> = (ws.iter())
        .filter(|w| {
            w.sanitize
                && (runs.iter())
                    .any(|r| r.workload == w.name && (r.side == TSAN || r.side == HELGRIND))
        })
        .collect();
    if san.is_empty() {
        return out;
    }
    let mut t = Table::new(
        format!(
            "preload --lockdep: lock-order checkers on the same program, median of {n} runs (slowdown: how many times slower than glibc; tsan: gcc -fsanitize=thread -O2 with TSAN_OPTIONS={opts}, 1/{TSAN_DIV} of the iterations; helgrind: valgrind --tool=helgrind, 1/{HELGRIND_DIV} of the iterations; every side's lock ops/s is over its own work, timed inside the program, start-up excluded)",
            opts = super::measure::TSAN_OPTIONS
        ),
        &[
            "workload",
            "T",
            "glibc",
            "klock+lockdep",
            "tsan",
            "helgrind",
            "lockdep slowdown",
            "tsan slowdown",
            "helgrind slowdown",
            "reports l/t/h",
            "failed t/h",
        ],
    );
    for &&w in &san {
        for th in w.thread_counts(threads) {
            let (g, l) = (get(w, th, GLIBC), get(w, th, LOCKDEP));
            let (ts, hg) = (get(w, th, TSAN), get(w, th, HELGRIND));
            let ran = |side| {
                runs.iter()
                    .any(|r| r.workload == w.name && r.threads == th && r.side == side)
            };
            let v = |r: Option<&Record>, side| {
                if ran(side) {
                    val(w, r)
                } else {
                    "skipped".into()
                }
            };
            t.rows.push(vec![
                w.name.into(),
                th.to_string(),
                val(w, g),
                val(w, l),
                v(ts, TSAN),
                v(hg, HELGRIND),
                x(slowdown(g, l)),
                x(slowdown(g, ts)),
                x(slowdown(g, hg)),
                format!(
                    "{}/{}/{}",
                    reports(w, th, LOCKDEP),
                    reports(w, th, TSAN),
                    reports(w, th, HELGRIND)
                ),
                format!("{}/{}", failed(w, th, TSAN), failed(w, th, HELGRIND)),
            ]);
        }
    }
    out.push('\n');
    out.push_str(&t.to_text());
    out
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

    #[test]
    fn the_lockdep_tables() {
        let r = |w: &str, t: usize, side: &str, v: Option<f64>, reports: usize| RunResult {
            workload: w.into(),
            threads: t,
            side: side.into(),
            value: v,
            reports,
            ..RunResult::default()
        };
        let runs = vec![
            r("nested", 8, GLIBC, Some(40e6), 0),
            r("nested", 8, KLOCK, Some(36e6), 0),
            r("nested", 8, LOCKDEP, Some(30e6), 0),
            r("nested", 8, TSAN, Some(4e6), 1),
            r("nested", 8, HELGRIND, None, 0),
            r("kc-cache", 8, KLOCK, Some(1e6), 0),
            r("kc-cache", 8, LOCKDEP, Some(0.5e6), 2),
            r("held-cost-3", 1, KLOCK, Some(1e8), 0),
            r("held-cost-3", 1, LOCKDEP, Some(5e7), 0),
        ];
        let ws = ["nested", "kc-cache", "held-cost-3"].map(|n| Workload::parse(n).unwrap());
        let recs = records(&runs, &ws, &[8], 2.0);
        assert_eq!(recs.len(), 9);
        let text = render_lockdep(&recs, &runs, &ws, &[8], 1);
        let row = |name: &str, nth: usize| {
            (text.lines())
                .filter(|l| l.starts_with(&format!("| {name} ")))
                .nth(nth)
                .unwrap_or_else(|| panic!("{name}: {text}"))
                .to_string()
        };
        let n = row("nested", 0);
        assert!(
            n.contains("36.00 M") && n.contains("30.00 M") && n.contains("0.83"),
            "{n}"
        );
        assert!(n.contains("1.20x") && n.contains("| ok "), "{n}");
        let kc = row("kc-cache", 0);
        let cells: Vec<&str> = kc.split('|').map(str::trim).collect();
        assert_eq!(
            cells[4..],
            [
                "-", "1.00 M", "500.0 k", "0.50", "2.00x", "OVER", "0%/0%", "2", "0/0", ""
            ],
            "{kc}"
        );
        // held_cost: ns per pair, its ratio in ns (2x the ns), no target.
        let h = row("held-cost-3", 0);
        let cells: Vec<&str> = h.split('|').map(str::trim).collect();
        assert_eq!(
            cells[5..10],
            ["10.00", "20.00", "2.00", "2.00x", "-"],
            "{h}"
        );
        let s = row("nested", 1);
        assert!(
            s.contains("4.00 M") && s.contains("FAILED") && s.contains("10.00x"),
            "{s}"
        );
        assert!(s.contains("0/1/0") && s.contains("1.33x"), "{s}");
        // The plain table shows held_cost in ns too.
        let plain = render(&recs, &ws, &[8], 1);
        assert!(
            plain
                .lines()
                .any(|l| l.contains("held-cost-3") && l.contains("10.00")),
            "{plain}"
        );
    }
}

//! The report's views: the HTML and every SVG chart are well-formed XML, every
//! chart shows at least one series with data, and the verdict sits first.
//! Synthetic records only: no timing is asserted.

use lockbench::record::{ClassMetrics, Latency, Params, Record, Report};

fn rec(exp: &str, workload: &str, lock: &str, t: usize, runs: &[f64]) -> Record {
    let mut v = runs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let med = v[v.len() / 2];
    Record {
        experiment: exp.into(),
        lock: lock.into(),
        threads: t,
        params: Params {
            workload: workload.into(),
            cs_ns: 100.0,
            ncs_ns: 200.0,
            duration_s: 0.3,
            ..Params::default()
        },
        throughput_mops: med,
        runs_mops: runs.to_vec(),
        runs: runs.len(),
        spread: (v[v.len() - 1] - v[0]) / med,
        fairness_max_min: if lock == "ticket" && t == 8 {
            None
        } else {
            Some(1.0 + t as f64 / 10.0)
        },
        per_thread_ops: vec![100; t],
        latency_ns: Latency {
            p50: 100 * t as u64,
            p99: 1000 * t as u64,
            p999: 50_000 * t as u64,
            max: 1_000_000,
            samples: 1000,
        },
        ..Record::default()
    }
}

/// Every registered lock on a mutex series, rwlocks on a reader/writer series,
/// uncontended: the shape of the quick report.
fn synthetic() -> Report {
    let mut results = Vec::new();
    let reg = lockbench::locks::registry();
    for (i, e) in reg.iter().enumerate() {
        let f = 1.0 + (i % 7) as f64 * 0.1;
        match e.kind {
            lockbench::locks::LockKind::Mutex => {
                for t in [1, 2, 4, 8] {
                    let m = if e.desc.contains("never sleeps") && t > 2 {
                        0.01 * f
                    } else {
                        3.0 * f
                    };
                    results.push(rec("mutex", "balanced", e.name, t, &[m * 0.9, m, m * 1.1]));
                }
            }
            lockbench::locks::LockKind::RwLock => {
                for n in [2usize, 8] {
                    let mut r = rec("rwlock", "balanced", e.name, 2 * n, &[2.0 * f, 2.2 * f]);
                    let cls = |mops: f64| ClassMetrics {
                        threads: n,
                        throughput_mops: mops,
                        share_of_ops: 0.5,
                        ..ClassMetrics::default()
                    };
                    r.readers = Some(cls(1.5 * f));
                    r.writers = Some(cls(0.5 * f));
                    results.push(r);
                }
            }
        }
        let ns = 10.0 + i as f64;
        results.push(Record {
            experiment: "uncontended".into(),
            lock: e.name.into(),
            threads: 1,
            params: Params {
                workload: "uncontended".into(),
                ..Params::default()
            },
            throughput_mops: 1e3 / ns,
            runs_mops: vec![1e3 / ns * 0.95, 1e3 / ns, 1e3 / ns * 1.05],
            uncontended_ns_per_op: Some(ns),
            runs: 3,
            ..Record::default()
        });
    }
    Report {
        command: "lockbench report <quick> & more".into(),
        results,
        ..Report::default()
    }
}

#[test]
fn html_and_every_svg_are_well_formed_xml() {
    let report = synthetic();
    let html = lockbench::html::render(&report);
    // `<!DOCTYPE html>` is a (trivial) DTD, which roxmltree rejects unless allowed.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(&html, opts)
        .unwrap_or_else(|e| panic!("HTML is not XML: {e}"));
    let svgs = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .count();
    let charts = lockbench::html::all_charts(&report, &[]);
    assert!(charts.len() >= 6, "{} charts", charts.len());
    assert_eq!(svgs, charts.len(), "every chart is inline in the page");
    for c in &charts {
        roxmltree::Document::parse(&c.svg)
            .unwrap_or_else(|e| panic!("chart '{}' is not XML: {e}", c.title));
    }
}

#[test]
fn every_chart_has_a_series_with_data_and_at_most_eight() {
    let report = synthetic();
    for c in lockbench::html::all_charts(&report, &[]) {
        assert!(
            c.series.iter().any(|(_, n)| *n > 0),
            "chart '{}' has no data: {:?}",
            c.title,
            c.series
        );
        assert!(
            c.series.len() <= lockbench::chart::MAX_SERIES,
            "{}",
            c.title
        );
        assert!(!c.title.contains("not shown"), "{}", c.title);
    }
}

#[test]
fn charts_split_defaults_from_variants() {
    let report = synthetic();
    let titles: Vec<String> = lockbench::html::all_charts(&report, &[])
        .into_iter()
        .map(|c| c.title)
        .collect();
    assert!(
        titles.iter().any(|t| t.starts_with("klock defaults vs")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.contains("variants (seed reproductions, ablations)")),
        "{titles:?}"
    );
}

#[test]
fn verdict_comes_first_in_terminal_and_html() {
    let report = synthetic();
    let text = lockbench::table::render_with(&report, &[], &[], false);
    let v = text.find("## Verdict").expect("verdict in text");
    let first_table = text.find("### uncontended").expect("uncontended table");
    assert!(v < first_table);
    assert!(text.contains("* Mutex: "), "{text}");
    assert!(!text.contains("\x1b["), "no colour when asked for none");
    let coloured = lockbench::table::render_with(&report, &[], &[], true);
    assert!(coloured.contains("\x1b["));
    let html = lockbench::html::render(&report);
    let hv = html.find("id=\"verdict\"").unwrap();
    assert!(hv < html.find("<svg").unwrap());
    assert!(
        html.contains("class=\"better\"")
            || html.contains("class=\"same\"")
            || html.contains("class=\"worse\"")
    );
}

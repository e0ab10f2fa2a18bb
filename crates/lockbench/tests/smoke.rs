//! Runs a tiny experiment (milliseconds) for every registered competitor.

use std::time::Duration;

use lockbench::exp::{Config, RunOptions, Workload, add_single_thread_refs, run_configs};
use lockbench::gate::GateConfig;
use lockbench::locks::LockKind;
use lockbench::locks::registry;
use lockbench::runner::{RunOutput, RunSpec};

/// Runs `spec` until it shows progress (some ops, no collapse), doubling the
/// window from 5 ms up to ~1.3 s: a busy CI machine may not schedule every
/// thread in a few milliseconds. Mutual exclusion must hold in *every* attempt,
/// and a lock that never makes progress in nine attempts fails the test.
fn run_until_progress(e: &lockbench::locks::LockEntry, spec: &mut RunSpec) -> RunOutput {
    for attempt in 0..9u32 {
        spec.duration = Duration::from_millis(5 << attempt);
        let out = (e.run)(spec);
        assert_eq!(out.violations, 0, "{}: mutual exclusion violated", e.name);
        assert_eq!(out.torn_reads, 0, "{}: torn read", e.name);
        let ops: u64 = out.ops.iter().sum();
        if !out.collapsed && out.total_ops_final > 0 && ops > 0 {
            return out;
        }
    }
    panic!(
        "{}: no progress (collapsed or zero ops) in 9 attempts",
        e.name
    );
}

#[test]
fn every_competitor_runs_without_violations() {
    for e in registry() {
        let mut spec = RunSpec::quick(3, 5);
        spec.cs_iters = 20;
        let out = run_until_progress(&e, &mut spec);
        assert_eq!(out.ops.len(), 3);
        if e.kind == LockKind::RwLock {
            spec.readers = 2;
            let out = run_until_progress(&e, &mut spec);
            assert_eq!(out.readers.ops.len(), 2);
            assert_eq!(out.writers.ops.len(), 1);
        }
        let ns = (e.uncontended)(1000, false);
        assert!(ns.is_finite() && ns > 0.0, "{}: uncontended {ns}", e.name);
        if e.kind == LockKind::RwLock {
            let ns = (e.uncontended)(1000, true);
            assert!(
                ns.is_finite() && ns > 0.0,
                "{}: uncontended read {ns}",
                e.name
            );
        }
    }
}

#[test]
fn sleeping_critical_section_runs() {
    let e = lockbench::locks::find("std").unwrap();
    let mut spec = RunSpec::quick(2, 5);
    spec.cs_sleep = Some(Duration::from_micros(1));
    // Longer windows until something completes: on a busy machine (CI beside
    // other jobs) 5 ms of sleeping critical sections may complete none.
    let out = run_until_progress(&e, &mut spec);
    assert!(out.total_ops_final > 0);
}

#[test]
fn experiment_plumbing_produces_records_with_ceiling() {
    // No FIFO spinlock here: with the noise thread the run is overcommitted, and
    // ticket/MCS may legitimately complete nothing in a short window.
    let locks: Vec<_> = ["parking_lot", "ttas", "pthread_rw"]
        .iter()
        .map(|n| lockbench::locks::find(n).unwrap())
        .collect();
    let w = Workload::preset("hot").unwrap();
    let mut cfgs: Vec<Config> = locks
        .iter()
        .map(|e| Config {
            experiment: "mutex".into(),
            entry: *e,
            threads: 2,
            readers: 0,
            rw: false,
            workload: w.clone(),
            duration: Duration::from_millis(20),
            noise: 1,
            implicit: false,
        })
        .collect();
    add_single_thread_refs(&mut cfgs);
    assert_eq!(cfgs.len(), 6, "one implicit T=1 reference per lock");
    let opts = RunOptions {
        runs: 2,
        gate: GateConfig::disabled(),
        progress: false,
    };
    let mut machine = lockbench::sys::Machine::probe();
    let recs = run_configs(&cfgs, &opts, &mut machine);
    assert_eq!(recs.len(), 6);
    for r in &recs {
        assert_eq!(r.violations, 0, "{}", r.lock);
        assert_eq!(r.runs, 2);
        assert_eq!(r.runs_mops.len(), 2);
        // A record, not a speed: the value must be a real number; whether a
        // 20 ms window made progress on a loaded machine is not asserted.
        assert!(
            r.throughput_mops.is_finite() && r.throughput_mops >= 0.0,
            "{}",
            r.lock
        );
        assert!(
            r.ceiling_fraction.is_some(),
            "{} has a T=1 reference",
            r.lock
        );
        assert_eq!(r.implicit, r.threads == 1);
    }
    let text = lockbench::table::render(&lockbench::record::Report {
        machine,
        command: "test".into(),
        results: recs,
    });
    assert!(text.contains("parking_lot") && text.contains("T=2"));
}

#[test]
fn machine_description_is_sane() {
    let m = lockbench::sys::Machine::probe();
    assert!(m.online_cpus >= 1);
    assert!(m.effective_cpus >= 1 && m.effective_cpus <= m.online_cpus);
}

#[test]
fn html_report_is_self_contained_and_balanced() {
    let locks: Vec<_> = ["std", "ttas"]
        .iter()
        .map(|n| lockbench::locks::find(n).unwrap())
        .collect();
    let mut cfgs = lockbench::exp::mutex::configs(
        "mutex",
        &locks,
        &[1, 2],
        &Workload::preset("balanced").unwrap(),
        Duration::from_millis(3),
        0,
    );
    let rw = lockbench::locks::find("std_rw").unwrap();
    cfgs.extend(lockbench::exp::rwlock::configs(
        "rwlock",
        &[rw],
        &[(1, 1)],
        &Workload::preset("balanced").unwrap(),
        Duration::from_millis(3),
        0,
    ));
    let opts = RunOptions {
        runs: 1,
        gate: GateConfig::disabled(),
        progress: false,
    };
    let mut machine = lockbench::sys::Machine::probe();
    let mut results = run_configs(&cfgs, &opts, &mut machine);
    results.extend(lockbench::exp::uncontended::measure(
        &locks,
        1000,
        1,
        false,
        &GateConfig::disabled(),
    ));
    let html = lockbench::html::render(&lockbench::record::Report {
        machine,
        command: "test <cmd>".into(),
        results,
    });
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
            + html
                .matches("xmlns=\"http://www.w3.org/1999/xhtml\"")
                .count(),
        "the only URLs are the SVG and XHTML namespaces"
    );
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("https://"), "no network references");
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(html.matches("<svg").count() >= 5);
    assert_eq!(
        html.matches("<table>").count(),
        html.matches("</table>").count()
    );
    assert!(html.contains("test &lt;cmd&gt;"));
}

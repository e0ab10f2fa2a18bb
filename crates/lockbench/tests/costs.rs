//! The machine's costs in saved reports: a report from before they were
//! measured still loads, renders and compares (saying they were not
//! recorded); `lockbench costs` prints and writes them. No timing is asserted.

use std::path::PathBuf;
use std::process::{Command, Output};

use lockbench::record::Report;

fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("runs the binary")
}

/// A saved quick report of 2026-11-21 (no `machine.costs`).
fn old_report() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/2026-11-21-full/report.json")
}

fn stdout_ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn old_report_loads_without_costs() {
    let text = std::fs::read_to_string(old_report()).unwrap();
    assert!(!text.contains("\"costs\""));
    let r = Report::from_json(&text).expect("an old report still loads");
    assert!(r.machine.costs.is_none());
    assert!(!r.results.is_empty());
}

#[test]
fn old_report_renders_and_compares_saying_costs_were_not_recorded() {
    let f = old_report();
    let f = f.to_str().unwrap();
    let html = std::env::temp_dir().join(format!("lockbench-costs-{}.html", std::process::id()));
    let text = stdout_ok(&lockbench(&["render", f, "--html", html.to_str().unwrap()]));
    assert!(text.contains("machine costs: not recorded"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("machine costs: not recorded"));
    let _ = std::fs::remove_file(html);
    let cmp = stdout_ok(&lockbench(&["compare", f, f]));
    assert_eq!(
        cmp.matches("machine costs: not recorded").count(),
        2,
        "{cmp}"
    );
}

#[test]
fn costs_subcommand_prints_and_writes_them() {
    let json = std::env::temp_dir().join(format!("lockbench-costs-{}.json", std::process::id()));
    let text = stdout_ok(&lockbench(&["costs", "--json", json.to_str().unwrap()]));
    for part in [
        "machine costs, median (IQR)",
        "cache-line transfer",
        "futex wake-to-running",
        "sched_yield",
        "atomic RMW",
        "measured in",
    ] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }
    let c: lockbench::costs::Costs =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(json);
    let m = c.rmw_ns.expect("RMW measured").median;
    assert!(m.is_finite() && m > 0.0);
}

#[test]
fn a_report_with_costs_round_trips_and_shows_them() {
    let d = lockbench::costs::Dist::of(&[200.0, 210.0, 220.0]);
    let mut r = Report::default();
    r.machine.costs = Some(lockbench::costs::Costs {
        cpus: vec![0, 1],
        pinned: true,
        transfer_ns: d,
        futex_wake_ns: d,
        ..Default::default()
    });
    let back = Report::from_json(&r.to_json()).unwrap();
    assert_eq!(back, r);
    let text = lockbench::table::render_with(&back, &[], &[], false);
    assert!(
        text.contains("cache-line transfer 210 ns (205-215) (CPU 0 <-> 1)"),
        "{text}"
    );
    let html = lockbench::html::render(&back);
    assert!(html.contains("futex wake-to-running 210 ns (205-215)"));
}

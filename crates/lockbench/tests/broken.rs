//! A deliberately broken lock (it never excludes anyone) must be reported as a
//! mutual-exclusion violation. It lives only here, so `lockbench list` never shows it.

use std::time::Duration;

use lockbench::adapter::BenchLock;
use lockbench::exp::{Config, RunOptions, Workload, exit_status, run_configs};
use lockbench::gate::GateConfig;
use lockbench::locks::LockEntry;
use lockbench::record::Report;

/// "Locks" by doing nothing.
struct Broken;

impl BenchLock for Broken {
    type Ctx = ();
    fn new() -> Self {
        Broken
    }
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        f()
    }
}

fn broken_report(rw: bool) -> Report {
    let entry = if rw {
        LockEntry::rwlock::<Broken>("broken_rw", "test only: no exclusion at all")
    } else {
        LockEntry::mutex::<Broken>("broken", "test only: no exclusion at all")
    };
    // Long critical section, nothing outside: any overlap (two CPUs, or a preemption in
    // the middle of the critical section) loses an update or tears a read.
    let workload = Workload {
        name: "custom".into(),
        cs_ns: 500.0,
        ncs_ns: 0.0,
        cs_sleep_us: 0.0,
        cs_pauses: 0,
    };
    let cfg = Config {
        experiment: if rw { "rwlock" } else { "mutex" }.into(),
        entry,
        threads: 4,
        readers: if rw { 2 } else { 0 },
        rw,
        workload,
        duration: Duration::from_millis(30),
        noise: 0,
        implicit: false,
    };
    let opts = RunOptions {
        runs: 1,
        gate: GateConfig::disabled(),
        progress: false,
    };
    let mut machine = lockbench::sys::Machine::probe();
    // Overlap is overwhelmingly likely in one 30-ms run of 4 threads; repeat a few
    // times so a pathological scheduler cannot make the test flaky.
    let mut last = None;
    for _ in 0..20 {
        let results = run_configs(std::slice::from_ref(&cfg), &opts, &mut machine);
        let found = results[0].violations > 0;
        last = Some(Report {
            machine: machine.clone(),
            command: "test".into(),
            results,
        });
        if found {
            break;
        }
    }
    last.unwrap()
}

#[test]
fn broken_mutex_is_reported_as_violation() {
    let report = broken_report(false);
    assert!(
        report.results[0].violations > 0,
        "lost updates not detected"
    );
    // Through JSON, as a user would see it.
    let back = Report::from_json(&report.to_json()).unwrap();
    assert!(back.results[0].violations > 0);
    let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert!(v["results"][0]["violations"].as_u64().unwrap() > 0);
    // And as the process exit status.
    assert_ne!(exit_status(&report), 0);
    assert!(lockbench::table::render(&report).contains("VIOLATIONS"));
}

#[test]
fn broken_rwlock_is_reported_as_violation() {
    let report = broken_report(true);
    assert!(
        report.results[0].violations > 0,
        "torn reads / lost updates not detected"
    );
    assert_ne!(exit_status(&report), 0);
}

#[test]
fn broken_lock_is_not_registered() {
    assert!(
        lockbench::locks::registry()
            .iter()
            .all(|e| !e.name.contains("broken"))
    );
}

/// A correct lock whose first holder sleeps for 2 s: the other worker cannot drain
/// within a 100-ms drain timeout, so the run must be reported as collapsed (and must
/// return instead of hanging).
struct SleepyFirst {
    m: std::sync::Mutex<()>,
    first: std::sync::atomic::AtomicBool,
}

impl BenchLock for SleepyFirst {
    type Ctx = ();
    fn new() -> Self {
        SleepyFirst {
            m: std::sync::Mutex::new(()),
            first: std::sync::atomic::AtomicBool::new(true),
        }
    }
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        let _g = self.m.lock().unwrap();
        if self.first.swap(false, std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(2));
        }
        f()
    }
}

#[test]
fn a_lock_that_cannot_drain_is_reported_collapsed() {
    let mut spec = lockbench::runner::RunSpec::quick(2, 20);
    spec.drain_timeout = Duration::from_millis(100);
    let out = lockbench::runner::run::<SleepyFirst>(&spec);
    assert!(out.collapsed);
    assert_eq!(out.ops.len(), 2);
    // The exclusion check is skipped for collapsed runs (counters are still in flux).
    assert_eq!(out.violations, 0);
}

//! JSON round trip of a report, including the `null` encoding of infinite fairness.

use lockbench::record::{ClassMetrics, Latency, Params, Record, Report, to_csv};
use lockbench::stats::MinAvgMax;
use lockbench::sys::Machine;

fn sample() -> Report {
    let rec = Record {
        experiment: "rwlock".into(),
        lock: "pthread_rw".into(),
        threads: 16,
        params: Params {
            workload: "balanced".into(),
            cs_ns: 100.0,
            ncs_ns: 200.0,
            cs_sleep_us: 0.0,
            cs_work_ns: 99.5,
            duration_s: 0.5,
            noise: 1,
            quota_cpus: Some(0.5),
        },
        throughput_mops: 6.25,
        runs_mops: vec![6.0, 6.25, 7.0],
        spread: 0.16,
        ops_per_thread: MinAvgMax {
            min: 0.0,
            avg: 10.5,
            max: 21.0,
        },
        per_thread_ops: vec![0, 21],
        fairness_max_min: None,
        ceiling_fraction: Some(0.93),
        latency_ns: Latency {
            p50: 40,
            p99: 400,
            p999: 4000,
            max: 40000,
            samples: 12,
        },
        cpu_ns_per_op: 312.5,
        csw_voluntary: 3,
        csw_involuntary: 4,
        violations: 2,
        collapsed: true,
        collapsed_runs: 1,
        runs: 3,
        discarded_runs: 1,
        readers: Some(ClassMetrics {
            threads: 8,
            throughput_mops: 6.2,
            fairness_max_min: Some(1.5),
            ..ClassMetrics::default()
        }),
        writers: Some(ClassMetrics {
            threads: 8,
            fairness_max_min: None,
            ..ClassMetrics::default()
        }),
        ..Record::default()
    };
    Report {
        machine: Machine {
            cpu_model: "test cpu".into(),
            online_cpus: 2,
            effective_cpus: 2,
            ..Machine::default()
        },
        command: "lockbench rwlock".into(),
        results: vec![rec],
    }
}

#[test]
fn report_round_trips_through_json() {
    let r = sample();
    let s = r.to_json();
    let back = Report::from_json(&s).expect("parses");
    assert_eq!(back, r);
    assert_eq!(back.violations(), 2);
}

#[test]
fn json_has_the_documented_fields_and_null_for_infinite_fairness() {
    let v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
    assert_eq!(v["machine"]["online_cpus"], 2);
    assert!(v["machine"].get("effective_cpus").is_some());
    let rec = &v["results"][0];
    for key in [
        "experiment",
        "lock",
        "threads",
        "throughput_mops",
        "ops_per_thread",
        "fairness_max_min",
        "ceiling_fraction",
        "latency_ns",
        "cpu_ns_per_op",
        "csw_voluntary",
        "csw_involuntary",
        "violations",
        "collapsed",
        "runs",
        "discarded_runs",
        "spread",
        "readers",
        "writers",
    ] {
        assert!(rec.get(key).is_some(), "missing {key}");
    }
    assert!(rec["fairness_max_min"].is_null());
    assert!(rec["writers"]["fairness_max_min"].is_null());
    assert_eq!(rec["readers"]["fairness_max_min"], 1.5);
    assert_eq!(rec["latency_ns"]["p999"], 4000);
    for k in ["min", "avg", "max"] {
        assert!(rec["ops_per_thread"].get(k).is_some());
    }
}

#[test]
fn csv_has_one_line_per_record_and_inf_for_infinite_fairness() {
    let csv = to_csv(&sample().results);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2);
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len());
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("fairness_max_min"), "inf");
    assert_eq!(col("violations"), "2");
    assert_eq!(col("readers"), "8");
}

#[test]
fn reports_saved_before_the_accounting_still_parse() {
    let mut v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
    for rec in v["results"].as_array_mut().unwrap() {
        let o = rec.as_object_mut().unwrap();
        for k in [
            "per_op",
            "syscalls_unavailable",
            "worst_wait",
            "klock_events_per_op",
        ] {
            o.remove(k);
        }
    }
    let back = Report::from_json(&v.to_string()).expect("an old report parses");
    assert_eq!(back.results[0].per_op, None);
    assert_eq!(back.results[0].worst_wait, None);
    assert!(back.results[0].klock_events_per_op.is_empty());
}

#[test]
fn accounting_round_trips_and_has_csv_columns() {
    let mut r = sample();
    r.results[0].per_op = Some(lockbench::record::PerOp {
        cpu_ns: 350.0,
        csw_voluntary: 0.01,
        csw_involuntary: 0.002,
        futex: None,
        sched_yield: None,
    });
    r.results[0].syscalls_unavailable = Some("refused".into());
    r.results[0].worst_wait = Some(lockbench::record::WorstWait {
        ns: 5000,
        max_ns: 9000,
        thread: 1,
    });
    let back = Report::from_json(&r.to_json()).unwrap();
    assert_eq!(back, r);
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(v["results"][0]["per_op"]["futex"].is_null());
    let csv = to_csv(&r.results);
    let lines: Vec<&str> = csv.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len());
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("futex_per_op"), "");
    assert_eq!(col("csw_voluntary_per_op"), "0.010000");
    assert_eq!(col("worst_wait_max_ns"), "9000");
    assert_eq!(col("worst_wait_thread"), "1");
}

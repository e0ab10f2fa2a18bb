//! The uncontended experiment: one thread, lock + counter++ + unlock, ns per op.

use crate::gate::{GateConfig, wait_idle};
use crate::locks::LockEntry;
use crate::record::{Params, Record};
use crate::stats::{median, spread};

/// Measures every lock `runs` times (interleaved), `ops` operations per run;
/// `read` takes the shared side (workload `uncontended-read`).
pub fn measure(
    locks: &[LockEntry],
    ops: u64,
    runs: usize,
    read: bool,
    gate: &GateConfig,
) -> Vec<Record> {
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); locks.len()];
    for _ in 0..runs.max(1) {
        for (i, e) in locks.iter().enumerate() {
            if gate.enabled {
                let short = GateConfig {
                    max_wait: gate.max_wait.min(std::time::Duration::from_millis(300)),
                    ..*gate
                };
                wait_idle(&short);
            }
            ns[i].push((e.uncontended)(ops, read));
        }
    }
    locks
        .iter()
        .zip(ns)
        .map(|(e, v)| {
            let m = median(&v);
            let mops: Vec<f64> = v.iter().map(|x| 1e3 / x.max(1e-9)).collect();
            Record {
                experiment: "uncontended".into(),
                lock: e.name.into(),
                threads: 1,
                params: Params {
                    workload: if read {
                        "uncontended-read"
                    } else {
                        "uncontended"
                    }
                    .into(),
                    quota_cpus: crate::quota::active(),
                    ..Params::default()
                },
                throughput_mops: 1e3 / m.max(1e-9),
                spread: spread(&v),
                runs_mops: mops,
                fairness_max_min: Some(1.0),
                runs: v.len(),
                uncontended_ns_per_op: Some(m),
                ..Record::default()
            }
        })
        .collect()
}

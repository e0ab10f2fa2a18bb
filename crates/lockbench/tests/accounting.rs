//! Per-operation accounting (issue 31, item 1) and the worst wait (item 3): a lock
//! that always sleeps shows futex calls and context switches per op, a spin lock at
//! one thread none, and a run without the syscall counters says so instead of
//! printing zeros. Timing is never asserted. The tests check whether the counters
//! are available here first and assert the branch that applies.

use std::process::Command;
use std::time::Duration;

use lockbench::adapter::BenchLock;
use lockbench::exp::{Config, RunOptions, Workload, run_configs};
use lockbench::gate::GateConfig;
use lockbench::locks::LockEntry;
use lockbench::record::Record;

/// A real lock (std's mutex) whose every acquisition first sleeps in the kernel:
/// a FUTEX_WAIT with a 20 µs timeout on a word nobody wakes. Each op makes at least
/// one futex call and blocks once (a voluntary context switch).
struct Sleepy {
    inner: std::sync::Mutex<()>,
    word: u32,
}

fn futex_nap(word: &u32) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 that lives as long as the call,
    // with a valid relative timeout; it returns after the timeout (nobody wakes it).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const u32,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            &ts as *const libc::timespec,
        )
    };
}

impl BenchLock for Sleepy {
    type Ctx = ();
    fn new() -> Self {
        Sleepy {
            inner: std::sync::Mutex::new(()),
            word: 0,
        }
    }
    fn with_lock<R>(&self, _: &(), f: impl FnOnce() -> R) -> R {
        futex_nap(&self.word);
        let _g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

fn measure(entry: LockEntry, threads: usize, ms: u64) -> Record {
    let cfg = Config {
        experiment: "mutex".into(),
        entry,
        threads,
        readers: 0,
        rw: false,
        workload: Workload::preset("balanced").unwrap(),
        duration: Duration::from_millis(ms),
        noise: 0,
        implicit: false,
    };
    let opts = RunOptions {
        runs: 1,
        gate: GateConfig::disabled(),
        progress: false,
    };
    let mut machine = lockbench::sys::Machine::probe();
    run_configs(&[cfg], &opts, &mut machine).remove(0)
}

#[test]
fn a_lock_that_always_sleeps_makes_futex_calls_and_context_switches_per_op() {
    let e = LockEntry::mutex::<Sleepy>("sleepy", "test only: futex-waits 20 us per op");
    let r = measure(e, 2, 50);
    let p = r.per_op.expect("a mutex record has the accounting");
    assert!(r.throughput_mops > 0.0, "{r:?}");
    assert!(p.csw_voluntary > 0.0, "{p:?}");
    assert!(p.cpu_ns > 0.0, "{p:?}");
    match lockbench::syscount::availability() {
        Ok(()) => {
            assert_eq!(r.syscalls_unavailable, None);
            let futex = p.futex.expect("counted");
            // One FUTEX_WAIT per op at least (std's mutex may add more).
            assert!(futex >= 0.9, "{p:?}");
            assert_eq!(p.sched_yield, Some(0.0), "{p:?}");
        }
        Err(why) => {
            assert_eq!(p.futex, None, "{p:?}");
            assert_eq!(p.sched_yield, None, "{p:?}");
            assert_eq!(r.syscalls_unavailable.as_deref(), Some(why.as_str()));
        }
    }
    let w = r.worst_wait.expect("worst wait recorded");
    assert!(w.ns > 0 && w.max_ns >= w.ns && w.thread < 2, "{w:?}");
}

#[test]
fn a_spin_lock_at_one_thread_makes_no_futex_calls() {
    let e = lockbench::locks::find("ttas").expect("ttas registered");
    let r = measure(e, 1, 30);
    let p = r.per_op.expect("a mutex record has the accounting");
    match lockbench::syscount::availability() {
        Ok(()) => {
            assert_eq!(p.futex, Some(0.0), "{p:?}");
            assert_eq!(p.sched_yield, Some(0.0), "{p:?}");
        }
        Err(_) => assert!(p.futex.is_none() && r.syscalls_unavailable.is_some()),
    }
    let w = r.worst_wait.expect("worst wait recorded");
    assert_eq!(w.thread, 0);
}

/// Without permission (simulated by `LOCKBENCH_NO_SYSCOUNT=1`, which makes the
/// counters fail to open as a refused `perf_event_open` would) the record holds
/// `null` counts and the reason, and the text says so once instead of zeros.
#[test]
fn without_the_counters_the_report_says_so_instead_of_zeros() {
    let dir = std::env::temp_dir().join(format!("lockbench-acct-{}", std::process::id()));
    let json = dir.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "mutex",
            "--locks",
            "ttas",
            "--threads",
            "1",
            "--duration",
            "0.02",
        ])
        .args([
            "--runs",
            "1",
            "--quiet",
            "--no-idle-gate",
            "--explain",
            "--json",
        ])
        .arg(&json)
        .env("LOCKBENCH_NO_SYSCOUNT", "1")
        .output()
        .expect("runs the binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let note = "futex/yield counts unavailable: turned off by LOCKBENCH_NO_SYSCOUNT";
    // Once in the tables, once in the --explain part.
    assert_eq!(text.matches(note).count(), 2, "{text}");
    let row = (text.lines())
        .find(|l| l.starts_with("| ttas ") && l.contains(" / - / -"))
        .unwrap_or_else(|| panic!("no accounting row with '-' counts in:\n{text}"));
    assert!(!row.contains(" / 0 / 0 |"), "{row}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rec = &v["results"][0];
    assert!(rec["per_op"]["futex"].is_null(), "{rec}");
    assert!(rec["per_op"]["sched_yield"].is_null(), "{rec}");
    assert!(rec["per_op"]["csw_voluntary"].is_number(), "{rec}");
    let why = rec["syscalls_unavailable"].as_str().unwrap_or_default();
    assert!(why.contains("LOCKBENCH_NO_SYSCOUNT"), "{rec}");
    assert!(rec["worst_wait"]["ns"].is_u64(), "{rec}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! `lockbench realcrate`: a real crate's workload on crates.io's parking_lot 0.12 and
//! on klock through `[patch.crates-io]` (crates/klock-parking-lot), side by side.
//!
//! The workload (`workloads/r2d2-pool`, its own cargo workspace) checks connections
//! out of r2d2's pool and back in from many threads; r2d2 keeps its pool behind a
//! parking_lot `Mutex` and parks waiters on a parking_lot `Condvar`. It is built
//! twice under `target/realcrate/`, once as published and once with the patch, and
//! `cargo tree` must show which parking_lot each build got. The two binaries then
//! run interleaved (pairs swapped every other repetition) behind the idle gate.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::record::{Latency, Params, Record, Report};
use crate::stats::{fairness, median, min_avg_max, min_share, spread};

use super::proc::{Finished, cargo as cargo_command, repo_root, run_captured};
use super::{CliError, RunArgs, Schedule, Step, ThreadList, interleave, parse_threads};

/// Arguments of `lockbench realcrate`.
#[derive(clap::Args, Clone, Debug)]
pub struct RealCrateArgs {
    /// Comma-separated thread counts, each 1..=1024.
    #[arg(long, value_parser = parse_threads, default_value = "2,8,32")]
    pub threads: ThreadList,
    /// Connections in the pool (1..=1024); fewer than threads makes threads wait.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pool: u32,
    /// Busy work while holding a connection, ns (0..=1000000).
    #[arg(long, default_value_t = 200, allow_hyphen_values = true,
          value_parser = clap::value_parser!(i64).range(0..=1_000_000))]
    pub hold_ns: i64,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// The two builds: record lock name, and whether the patch is applied.
const SIDES: [(&str, bool); 2] = [("parking_lot", false), ("klock_parking_lot", true)];

/// `cargo` with the patch (or none) for `manifest`, its own target dir, and none of
/// the caller's build settings (a `--cfg loom` RUSTFLAGS must not reach r2d2).
fn cargo(args: &[&str], manifest: &Path, patched: bool) -> Command {
    let mut c = cargo_command();
    c.args(args).arg("--manifest-path").arg(manifest);
    if patched {
        let compat = repo_root().join("crates/klock-parking-lot");
        c.arg("--config").arg(format!(
            "patch.crates-io.parking_lot.path={:?}",
            compat
                .canonicalize()
                .unwrap_or(compat)
                .display()
                .to_string()
        ));
    }
    for v in ["RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"] {
        c.env_remove(v);
    }
    c
}

fn checked(f: Finished, what: &str) -> Result<String, CliError> {
    if f.ok {
        Ok(f.stdout)
    } else {
        Err(CliError(format!(
            "{} (realcrate needs cargo and crates.io to build the r2d2 workload)",
            f.error(what)
        )))
    }
}

/// Builds the workload for one side in `target/realcrate/<name>`, checks with `cargo
/// tree` which parking_lot it got, and returns the binary.
fn build(name: &str, patched: bool) -> Result<PathBuf, CliError> {
    let src = repo_root().join("crates/lockbench/workloads/r2d2-pool");
    let dir = repo_root().join("target/realcrate").join(name);
    std::fs::create_dir_all(dir.join("src"))
        .and_then(|_| std::fs::copy(src.join("Cargo.toml"), dir.join("Cargo.toml")))
        .and_then(|_| std::fs::copy(src.join("src/main.rs"), dir.join("src/main.rs")))
        .map_err(|e| {
            CliError(format!(
                "cannot copy {} to {}: {e}",
                src.display(),
                dir.display()
            ))
        })?;
    let manifest = dir.join("Cargo.toml");
    let long = Some(Duration::from_secs(1800));
    let mut b = cargo(&["build", "--release", "--quiet"], &manifest, patched);
    b.arg("--target-dir").arg(dir.join("target"));
    checked(
        run_captured(b, long),
        &format!("building the {name} workload"),
    )?;
    let tree = cargo(
        &["tree", "-i", "parking_lot", "-e", "normal"],
        &manifest,
        patched,
    );
    let tree = checked(run_captured(tree, long), "cargo tree -i parking_lot")?;
    let from_klock = tree.contains("klock-parking-lot)");
    if from_klock != patched || !tree.starts_with("parking_lot v0.12") {
        return Err(CliError(format!(
            "the {name} build got the wrong parking_lot:\n{tree}"
        )));
    }
    Ok(dir.join("target/release/r2d2-pool-workload"))
}

/// One run of the workload, as it reports it.
#[derive(Clone, Debug, Default, PartialEq)]
struct WorkRun {
    /// Checkouts per second, millions.
    mops: f64,
    /// Checkouts per thread.
    per: Vec<u64>,
    /// Checkout latency p50, p99, p99.9, max (ns) and the samples taken.
    lat: [u64; 5],
    /// Process CPU time per checkout, ns.
    cpu_ns_per_op: f64,
    /// Voluntary and involuntary context switches.
    csw: (u64, u64),
}

/// One run's result, or why it gave none.
type Outcome = Result<WorkRun, String>;

/// Parses the workload's line `ops=N secs=S per_thread=a,b lat=p50,p99,p999,max,n
/// cpu_ns=C nvcsw=V nivcsw=I`.
fn parse(out: &str) -> Option<WorkRun> {
    let field = |k: &str| out.split_whitespace().find_map(|w| w.strip_prefix(k));
    let num = |k: &str| field(k)?.parse::<f64>().ok();
    let list = |k: &str| {
        field(k)?
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<Vec<u64>>>()
    };
    let (ops, secs) = (num("ops=")?, num("secs=")?);
    let lat: [u64; 5] = list("lat=")?.try_into().ok()?;
    let run = WorkRun {
        mops: ops / secs.max(f64::MIN_POSITIVE) / 1e6,
        per: list("per_thread=")?,
        lat,
        cpu_ns_per_op: num("cpu_ns=")? / ops.max(1.0),
        csw: (num("nvcsw=")? as u64, num("nivcsw=")? as u64),
    };
    (secs > 0.0).then_some(run)
}

fn record(a: &RealCrateArgs, name: &str, threads: usize, runs: &[&WorkRun]) -> Record {
    let tputs: Vec<f64> = runs.iter().map(|r| r.mops).collect();
    let m = median(&tputs);
    let mid = runs
        .iter()
        .min_by(|x, y| (x.mops - m).abs().total_cmp(&(y.mops - m).abs()))
        .map(|r| (*r).clone())
        .unwrap_or_default();
    let med = |f: fn(&WorkRun) -> f64| median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    Record {
        experiment: "realcrate".into(),
        lock: name.into(),
        threads,
        params: Params {
            workload: format!("r2d2-pool{}", a.pool),
            cs_ns: a.hold_ns as f64,
            duration_s: a.run.duration,
            quota_cpus: crate::quota::active(),
            ..Params::default()
        },
        throughput_mops: m,
        spread: spread(&tputs),
        runs_mops: tputs,
        ops_per_thread: min_avg_max(&mid.per),
        fairness_max_min: median_opt_of(runs.iter().map(|r| fairness(&r.per))),
        min_thread_share: runs.iter().map(|r| min_share(&r.per)).reduce(f64::min),
        per_thread_ops: mid.per,
        latency_ns: Latency {
            p50: med(|r| r.lat[0] as f64) as u64,
            p99: med(|r| r.lat[1] as f64) as u64,
            p999: med(|r| r.lat[2] as f64) as u64,
            max: runs.iter().map(|r| r.lat[3]).max().unwrap_or(0),
            samples: runs.iter().map(|r| r.lat[4]).sum(),
        },
        cpu_ns_per_op: med(|r| r.cpu_ns_per_op),
        csw_voluntary: med(|r| r.csw.0 as f64) as u64,
        csw_involuntary: med(|r| r.csw.1 as f64) as u64,
        runs: runs.len(),
        ..Record::default()
    }
}

fn median_opt_of(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    crate::stats::median_opt(&v.collect::<Vec<_>>())
}

/// Runs `lockbench realcrate`; returns the exit status.
pub fn run(a: &RealCrateArgs) -> Result<i32, CliError> {
    let bins = SIDES
        .iter()
        .map(|&(name, patched)| build(name, patched))
        .collect::<Result<Vec<_>, _>>()?;
    let points: Vec<(usize, usize)> = a
        .threads
        .0
        .iter()
        .flat_map(|&t| (0..SIDES.len()).map(move |s| (t, s)))
        .collect();
    let schedule = Schedule {
        swap_pairs: true,
        ..a.run.schedule()
    };
    let prog = a.run.progress((points.len() * a.run.runs as usize) as u64);
    let step = |&(t, s): &(usize, usize)| Step {
        label: format!("realcrate {} T={t}", SIDES[s].0),
        units: 1,
        noise: 0,
    };
    let timeout = Some(a.run.window() * 10 + Duration::from_secs(60));
    let done = interleave(&points, &schedule, &prog, step, |_, &(t, s)| -> Outcome {
        let mut c = Command::new(&bins[s]);
        let args = [t.to_string(), a.pool.to_string(), a.hold_ns.to_string()];
        c.args(args).arg(a.run.duration.to_string());
        let f = run_captured(c, timeout);
        let what = format!("{} T={t}", SIDES[s].0);
        match f.ok {
            true => parse(&f.stdout).ok_or_else(|| format!("{what}: unreadable '{}'", f.stdout)),
            false => Err(f.error(&what)),
        }
    });
    prog.finish();
    let mut results = Vec::new();
    for (i, &(t, s)) in points.iter().enumerate() {
        let mine: Vec<&Outcome> = done
            .iter()
            .filter(|d| d.point == i)
            .map(|d| &d.out)
            .collect();
        if let Some(Err(e)) = mine.iter().find(|o| o.is_err()) {
            return Err(CliError(e.clone()));
        }
        let ok: Vec<&WorkRun> = mine.iter().filter_map(|o| o.as_ref().ok()).collect();
        results.push(record(a, SIDES[s].0, t, &ok));
    }
    let report = Report {
        machine: crate::sys::Machine::probe(),
        command: super::command_line(),
        results,
    };
    super::finish(&report, a.run.json.as_ref(), a.csv.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_workload_line_and_rejects_others() {
        let tail = "lat=1,2,3,4,5 cpu_ns=6000000 nvcsw=7 nivcsw=8";
        let r = parse(&format!(
            "ops=3000000 secs=1.500 per_thread=1000000,2000000 {tail}\n"
        ));
        let r = r.unwrap();
        assert!((r.mops - 2.0).abs() < 1e-9);
        assert_eq!(r.per, vec![1_000_000, 2_000_000]);
        assert_eq!((r.lat, r.csw), ([1, 2, 3, 4, 5], (7, 8)));
        assert!((r.cpu_ns_per_op - 2.0).abs() < 1e-9);
        assert!(parse(&format!("ops=3 secs=0 per_thread=1,2 {tail}")).is_none());
        assert!(parse(&format!("ops=3 secs=1 per_thread=1,x {tail}")).is_none());
        assert!(parse("ops=3 secs=1 per_thread=1,2 lat=1,2 cpu_ns=1 nvcsw=1 nivcsw=1").is_none());
        assert!(parse("usage: r2d2-pool-workload").is_none());
    }
}

//! `lockbench uncontended --preload`: the interposer's uncontended pthread pairs
//! (mutex, trylock, recursive, rdlock, wrlock, spin) against glibc's, in a
//! single-threaded process and in a threaded one (it has started an idle thread,
//! so glibc uses its lock prefix).
//!
//! A small C program (`exp/c/preload_uncontended.c`, built with `$CC` or `cc`
//! next to lockbench) times N pairs of each operation once per process; the
//! process runs plain and under `LD_PRELOAD=libklock_preload.so`, the two sides
//! interleaved (their order swapped every other pass) behind the idle gate, for
//! `--runs` passes (at least 7). Reported per operation and process kind: the
//! median ns per pair of each side, klock / glibc, and each side's spread.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::proc::{check_loads, exe_dir, find_lib, run_captured};
use super::{CliError, Schedule, Step, interleave};
use crate::gate::GateConfig;
use crate::progress::Progress;
use crate::stats::{median, spread};
use crate::table::Table;

/// The C program's source.
pub const SOURCE: &str = include_str!("c/preload_uncontended.c");

/// The operations, in the program's order.
pub const OPS: &[&str] = &["mutex", "trylock", "recursive", "rdlock", "wrlock", "spin"];

/// The fewest passes a median is taken over.
pub const MIN_PASSES: u32 = 7;

/// Builds the C program into `dir` with `$CC` (default `cc`); returns its path.
pub fn build(dir: &Path) -> Result<PathBuf, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    let (src, bin) = (
        dir.join("preload_uncontended.c"),
        dir.join("preload_uncontended"),
    );
    std::fs::write(&src, SOURCE)
        .map_err(|e| CliError(format!("cannot write {}: {e}", src.display())))?;
    let cc = std::env::var_os("CC")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "cc".into());
    let mut c = Command::new(&cc);
    c.arg("-O2")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .args(["-lpthread", "-ldl"]);
    let f = run_captured(c, Some(Duration::from_secs(120)));
    if !f.ok {
        return Err(CliError(format!(
            "cannot build the C program with {} (set CC to a C compiler): {}",
            cc.to_string_lossy(),
            f.error("cc")
        )));
    }
    Ok(bin)
}

/// Where the C program is built: `lockbench-c/` next to the lockbench binary, or
/// the temporary directory.
pub fn build_dir() -> PathBuf {
    let dir = exe_dir().map(|d| d.join("lockbench-c"));
    dir.filter(|d| std::fs::create_dir_all(d).is_ok())
        .unwrap_or_else(|| std::env::temp_dir().join(format!("lockbench-c-{}", std::process::id())))
}

/// One process kind × side: the program's arguments and environment.
#[derive(Clone, Debug)]
struct Point {
    threaded: bool,
    preload: Option<PathBuf>,
}

/// Parses the program's output: the `impl` line and ns per pair of every operation.
///
/// ```
/// let (imp, ns) = lockbench::exp::preload_unc::parse_output(
///     "impl /lib/libc.so.6\nmutex 10.5\ntrylock 9\nrecursive 12\nrdlock 20\nwrlock 19\nspin 8\n",
/// ).unwrap();
/// assert_eq!(imp, "/lib/libc.so.6");
/// assert_eq!(ns[0], 10.5);
/// assert!(lockbench::exp::preload_unc::parse_output("impl x\nmutex 1\n").is_err());
/// ```
pub fn parse_output(out: &str) -> Result<(String, Vec<f64>), String> {
    let imp = (out.lines().find_map(|l| l.strip_prefix("impl ")))
        .ok_or_else(|| format!("no 'impl' line in {out:?}"))?;
    let value = |op: &str| {
        out.lines()
            .find_map(|l| {
                l.strip_prefix(op)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .ok_or_else(|| format!("no figure for {op} in {out:?}"))
    };
    let ns = OPS
        .iter()
        .map(|op| value(op))
        .collect::<Result<Vec<f64>, String>>()?;
    Ok((imp.trim().to_string(), ns))
}

/// Runs the program once; ns per pair of every operation, or why not. The
/// klock side must really run the interposer (the `impl` line), the glibc side not.
fn pass(bin: &Path, ops: u64, p: &Point) -> Result<Vec<f64>, String> {
    let mut c = Command::new(bin);
    c.arg(ops.to_string());
    if p.threaded {
        c.arg("threaded");
    }
    c.env_remove("LD_PRELOAD");
    if let Some(lib) = &p.preload {
        c.env("LD_PRELOAD", lib);
    }
    let f = run_captured(c, Some(Duration::from_secs(600)));
    if !f.ok {
        return Err(f.error("the C program"));
    }
    let (imp, ns) = parse_output(&f.stdout)?;
    let klock = imp.contains("klock");
    if klock != p.preload.is_some() {
        return Err(format!(
            "pthread_mutex_lock came from {imp}, not the expected side"
        ));
    }
    Ok(ns)
}

/// One row of the result: an operation in one process kind.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    /// `mutex`, `trylock`, ...
    pub op: String,
    /// `single-threaded` or `threaded`.
    pub process: String,
    /// glibc's passes, ns per pair.
    pub glibc_ns: Vec<f64>,
    /// The interposer's passes, ns per pair.
    pub klock_ns: Vec<f64>,
}

impl Row {
    /// klock's median / glibc's (> 1: the interposer is slower).
    pub fn ratio(&self) -> f64 {
        median(&self.klock_ns) / median(&self.glibc_ns).max(1e-9)
    }
}

/// Measures: `passes` interleaved passes of the four process kinds × sides, `ops`
/// pairs per operation per pass, behind `gate`. A failed pass is an error.
pub fn measure(
    bin: &Path,
    lib: &Path,
    ops: u64,
    passes: usize,
    gate: GateConfig,
) -> Result<Vec<Row>, CliError> {
    let pts: Vec<Point> = [false, true]
        .into_iter()
        .flat_map(|threaded| {
            [None, Some(lib.to_path_buf())].map(|preload| Point { threaded, preload })
        })
        .collect();
    let sched = Schedule {
        swap_pairs: true,
        ..Schedule::new(passes, gate)
    };
    let step = |_: &Point| Step {
        label: "uncontended --preload".into(),
        units: 0,
        noise: 0,
    };
    let done = interleave(&pts, &sched, &Progress::hidden(), step, |_, p| {
        pass(bin, ops, p)
    });
    let mut per: Vec<Vec<Vec<f64>>> = vec![Vec::new(); pts.len()];
    for d in done {
        per[d.point].push(d.out.map_err(CliError)?);
    }
    let col = |pt: usize, op: usize| per[pt].iter().map(|v| v[op]).collect::<Vec<f64>>();
    let mut rows = Vec::new();
    for (k, kind) in ["single-threaded", "threaded"].iter().enumerate() {
        for (i, op) in OPS.iter().enumerate() {
            rows.push(Row {
                op: op.to_string(),
                process: kind.to_string(),
                glibc_ns: col(2 * k, i),
                klock_ns: col(2 * k + 1, i),
            });
        }
    }
    Ok(rows)
}

/// The table: op, process kind, glibc ns, klock ns, klock / glibc, spread.
pub fn table(rows: &[Row], ops: u64) -> Table {
    let passes = rows.first().map_or(0, |r| r.glibc_ns.len());
    let title = format!(
        "interposer's uncontended pairs vs glibc: ns per lock+unlock pair, median of {passes} passes of {ops} pairs (processes interleaved)"
    );
    let header = [
        "op",
        "process",
        "glibc ns",
        "klock ns",
        "klock / glibc",
        "spread glibc / klock",
    ];
    let mut t = Table::new(title, &header);
    t.rows = (rows.iter())
        .map(|r| {
            let pct = |v: &[f64]| format!("{:.0}%", spread(v) * 100.0);
            vec![
                r.op.clone(),
                r.process.clone(),
                format!("{:.2}", median(&r.glibc_ns)),
                format!("{:.2}", median(&r.klock_ns)),
                format!("{:.2}x", r.ratio()),
                format!("{} / {}", pct(&r.glibc_ns), pct(&r.klock_ns)),
            ]
        })
        .collect();
    t
}

/// What `lockbench uncontended --preload` takes from its command line.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `--runs`: passes (at least [`MIN_PASSES`]).
    pub runs: Option<u32>,
    /// `--ops`: lock+unlock pairs per pass.
    pub ops: u64,
    /// `--lib`: the interposer to use.
    pub lib: Option<std::path::PathBuf>,
    /// `--no-idle-gate`.
    pub no_idle_gate: bool,
    /// `--json`.
    pub json: Option<std::path::PathBuf>,
}

/// Runs `lockbench uncontended --preload`; returns the exit status.
pub fn run(a: &Settings) -> Result<i32, CliError> {
    let passes = a.runs.unwrap_or(MIN_PASSES);
    if passes < MIN_PASSES {
        return Err(CliError(format!(
            "--preload takes the median of at least {MIN_PASSES} passes: allowed --runs {MIN_PASSES}..=100"
        )));
    }
    let lib = find_lib(a.lib.as_deref())?;
    check_loads(&lib)?;
    let bin = build(&build_dir())?;
    let mut gate = GateConfig::from_env();
    gate.enabled &= !a.no_idle_gate;
    let rows = measure(&bin, &lib, a.ops, passes as usize, gate)?;
    super::out(&format!(
        "\nlockbench uncontended --preload: {} | interposer {}\n{}",
        crate::sys::Machine::probe().cpu_model,
        lib.display(),
        table(&rows, a.ops).to_text()
    ));
    super::write_json(
        a.json.as_ref(),
        &serde_json::json!({ "preload_uncontended": rows }),
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a C compiler and the interposer: a short measurement gives every
    /// operation in both process kinds, both sides positive.
    #[test]
    fn preload_uncontended_measures_both_sides() {
        let Ok(lib) = find_lib(None) else {
            eprintln!(
                "skipped: libklock_preload.so not found (cargo build --release -p klock-preload)"
            );
            return;
        };
        let dir = std::env::temp_dir().join(format!("lockbench-unc-test-{}", std::process::id()));
        let bin = match build(&dir) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("skipped: no C compiler ({})", e.0);
                return;
            }
        };
        let rows = measure(
            &bin,
            &lib,
            20_000,
            MIN_PASSES as usize,
            GateConfig::disabled(),
        )
        .unwrap();
        assert_eq!(rows.len(), 2 * OPS.len());
        for r in &rows {
            assert_eq!(r.glibc_ns.len(), MIN_PASSES as usize, "{r:?}");
            assert!(
                r.glibc_ns.iter().chain(&r.klock_ns).all(|&x| x > 0.0),
                "{r:?}"
            );
        }
        let text = table(&rows, 20_000).to_text();
        assert!(text.contains("threaded") && text.contains("spin"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

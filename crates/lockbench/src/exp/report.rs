//! `lockbench report [--quick|--full]`: the standard suite; also what runs with no
//! subcommand. Writes report.json, report.csv and report.html into `--out`.
//!
//! quick (default, under 5 min on 2 CPUs, idle gate shortened): uncontended, every
//! mutex on `balanced` at T = 1, 2, 4, 8 and 16 x the effective CPUs, every rwlock at
//! 2+2 and 8+8, the condvar hand-off (`lockbench condvar`), and the Mutex family under
//! a 0.5-CPU quota (a child process; a note says why when no cgroup can be made).
//! full (~30 min): longer windows, `hot`, the condvar hand-off, a quota row, then the
//! seed experiments `spin`, `fserver`, `rwsem`, `fio` and `preload`, each laid out
//! like its seed's tables with the seed's numbers beside ours. docs/lockbench.md lists the settings (`plan()` states them).
//!
//! Output order, terminal and HTML alike: the verdict ([`crate::verdict`]: klock's
//! default locks against the best peer, per case), then the charts (HTML) and tables.
//! `--scale F` multiplies every window (and the spin job's size) by F, to smoke-test
//! the suite in a fraction of its time; its numbers are then not worth quoting.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::proc::Finished;
use super::{CliError, Config, RunOptions, Workload, fio, fserver, preload, rwsem, spin};
use crate::gate::GateConfig;
use crate::locks::{LockEntry, LockKind};
use crate::progress::{Progress, run_units};
use crate::record::{Record, Report};
use crate::stats::{first_seen, sorted_distinct};
use crate::sys::Machine;
use crate::table::Section;
use crate::verdict::Sample;

/// Arguments of `lockbench report`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// The quick suite (default): under 5 minutes on 2 CPUs.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// The full suite: all experiments at publication length, plus the seed
    /// experiments spin, fserver, rwsem and fio (about 30 minutes).
    #[arg(long)]
    pub full: bool,
    /// Output directory for report.json, report.csv, report.html.
    #[arg(long, value_name = "DIR", default_value = "target/lockbench")]
    pub out: PathBuf,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// Disable the idle gate (same as LOCKBENCH_NO_IDLE_GATE=1).
    #[arg(long)]
    pub no_idle_gate: bool,
    /// Multiply every measurement window (and the spin job) by F, 0.01..=10: a
    /// smoke test of the suite in a fraction of its time, not a measurement.
    #[arg(long, value_name = "F", value_parser = parse_scale)]
    pub scale: Option<f64>,
}

/// Parses `--scale`: a number 0.01..=10.
///
/// ```
/// assert_eq!(lockbench::exp::report::parse_scale("0.1").unwrap(), 0.1);
/// assert!(lockbench::exp::report::parse_scale("0").unwrap_err().contains("0.01..=10"));
/// ```
pub fn parse_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.01..=10.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "bad scale '{s}': allowed is a number 0.01..=10 (1 = the suite as designed)"
        )),
    }
}

impl ReportArgs {
    /// What `lockbench` with no subcommand runs: `report --quick --out target/lockbench`.
    pub fn quick_default() -> ReportArgs {
        ReportArgs {
            quick: true,
            out: PathBuf::from("target/lockbench"),
            ..ReportArgs::default()
        }
    }
}

/// Thread counts, window seconds, runs.
type Sweep = (Vec<usize>, f64, usize);

/// The quota row: a child `lockbench --quota CPUS mutex` (see [`run_quota_row`]).
struct QuotaRow {
    /// Thread counts.
    threads: Vec<usize>,
    /// Window, seconds.
    window: f64,
    /// Runs.
    runs: usize,
    /// Only the Mutex family (klock's default and its peers) instead of every mutex.
    mutex_family: bool,
    /// The child runs without the idle gate (the quick suite's time bound: the
    /// child has no share of the parent's gate budget).
    no_gate: bool,
}

struct Plan {
    balanced: Sweep,
    hot: Option<Sweep>,
    rw: (Vec<(usize, usize)>, f64, usize),
    uncontended: (u64, usize),
    /// `lockbench condvar`: pairs (N producers + N consumers), window, runs.
    condvar: Sweep,
    quota: QuotaRow,
    gate: GateConfig,
}

/// The suite's settings; `cpus` is the effective CPU count (the quick suite's
/// overcommitted rows scale with it).
fn plan(full: bool, no_gate: bool, scale: f64, cpus: usize) -> Plan {
    let mut gate = GateConfig::from_env();
    if no_gate {
        gate.enabled = false;
    }
    // `--scale`: every window, and the uncontended operations.
    let d = |secs: f64| secs * scale;
    let ops = |n: u64| ((n as f64 * scale) as u64).max(1000);
    if full {
        Plan {
            balanced: (vec![1, 2, 4, 8, 32], d(2.0), 5),
            hot: Some((vec![1, 2, 4, 8, 32], d(1.0), 3)),
            rw: (vec![(2, 2), (8, 8)], d(2.0), 5),
            uncontended: (ops(10_000_000), 10),
            condvar: (vec![1, 2 * cpus, 8 * cpus], d(1.0), 5),
            quota: QuotaRow {
                threads: vec![8, 32],
                window: d(2.0),
                runs: 5,
                mutex_family: false,
                no_gate,
            },
            gate,
        }
    } else {
        gate.max_wait = Duration::from_millis(500);
        gate.window = Duration::from_millis(50);
        gate.max_retries = 1;
        // Keeps the quick suite within ~3 minutes even on a busy machine.
        gate.budget = Some(Duration::from_secs(50));
        // Five interleaved rounds per case (the verdict's bootstrap needs
        // them to tell a 5 % gap from noise), in about the same time.
        // Rows added by issue 31 (klock's conditions): T = 16 x CPUs in the
        // balanced series, a condvar hand-off at 1+1 and 2x CPUs + 2x CPUs, and
        // the Mutex family at T = 4 x CPUs under a 0.5-CPU quota (1 s windows:
        // a quota period is 100 ms).
        Plan {
            balanced: (vec![1, 2, 4, 8, 16 * cpus], d(0.2), 5),
            hot: None,
            rw: (vec![(2, 2), (8, 8)], d(0.2), 5),
            uncontended: (ops(1_000_000), 5),
            condvar: (vec![1, 2 * cpus], d(0.2), 5),
            quota: QuotaRow {
                threads: vec![4 * cpus],
                window: d(1.0),
                runs: 3,
                mutex_family: true,
                no_gate: true,
            },
            gate,
        }
    }
}

/// The seed experiments' arguments in the full report.
#[derive(Clone, Debug)]
pub struct SeedPlan {
    /// `spin`.
    pub spin: spin::SpinArgs,
    /// `fserver`.
    pub fserver: fserver::FserverArgs,
    /// `rwsem`.
    pub rwsem: rwsem::RwsemArgs,
    /// `fio`.
    pub fio: fio::FioArgs,
    /// `preload` (run as a child `lockbench preload`; skipped with the reason when
    /// its programs or the interposer are missing).
    pub preload: preload::PreloadArgs,
    /// The child's extra arguments (`--quiet`, `--no-idle-gate`, `--duration`).
    pub preload_argv: String,
}

/// Parses an experiment's arguments from `args`, separated by spaces (its defaults
/// when empty).
fn parse<A: clap::Args>(args: &str) -> A {
    let args: Vec<&str> = args.split_whitespace().collect();
    super::parse_args(&args).expect("the report's own seed arguments parse")
}

impl SeedPlan {
    /// The full report's settings: each experiment's defaults, with shorter rwsem
    /// windows (0.5 s: it has 120 configurations) and a spin timeout of 5 s at 1x, 2x
    /// and 4x the CPUs (the 16x column mostly measures the timeout).
    pub fn full(scale: f64, quiet: bool, no_gate: bool) -> SeedPlan {
        // `gated`: the experiment has an idle gate (spin has none).
        let flags = |quiet: bool, gated: bool| {
            let q = if quiet { " --quiet" } else { "" };
            let g = if gated && no_gate {
                " --no-idle-gate"
            } else {
                ""
            };
            format!("{q}{g}")
        };
        let d = |x: f64, quiet: bool| format!("--duration {}{}", x * scale, flags(quiet, true));
        let sections = ((200_000.0 * scale) as u64).max(1000);
        let spin = format!("--mults 1,2,4 --timeout 5 --sections {sections}");
        let pre = d(2.0, true);
        SeedPlan {
            spin: parse(&(spin + &flags(quiet, false))),
            fserver: parse(&d(1.0, quiet)),
            rwsem: parse(&d(0.5, quiet)),
            fio: parse(&d(1.0, quiet)),
            preload: parse(&pre),
            preload_argv: pre,
        }
    }
    /// Planned progress units.
    pub fn units(&self) -> u64 {
        spin::planned_units(&self.spin)
            + fserver::planned_units(&self.fserver)
            + rwsem::planned_units(&self.rwsem)
            + fio::planned_units(&self.fio)
            + self.preload_units()
    }
    fn preload_units(&self) -> u64 {
        let p = &self.preload;
        (p.run.runs as usize * p.workloads.len() * p.threads.0.len() * 2) as u64
            * (run_units(p.run.window()) + 500)
    }
}

/// What the seed experiments produced: sections, verdict samples, JSON, violations.
#[derive(Default)]
pub struct SeedResults {
    /// One section per experiment.
    pub sections: Vec<Section>,
    /// Verdict samples from them.
    pub samples: Vec<Sample>,
    /// Their data, for report.json's `seed` object.
    pub json: serde_json::Map<String, serde_json::Value>,
    /// Mutual-exclusion violations found.
    pub violations: u64,
}

impl SeedResults {
    fn push(&mut self, (section, samples): (Section, Vec<Sample>)) {
        self.sections.push(section);
        self.samples.extend(samples);
    }
    /// Adds an experiment's part: its data under `key`, its section and samples.
    fn add(&mut self, key: &str, data: impl serde::Serialize, part: (Section, Vec<Sample>)) {
        let v = serde_json::to_value(data).unwrap_or(serde_json::Value::Null);
        self.json.insert(key.into(), v);
        self.push(part);
    }
}

// Each seed experiment's section and verdict samples, from its data alone (the
// same whether it was just measured or read back from report.json).

fn spin_part(d: &spin::SpinData) -> (Section, Vec<Sample>) {
    (spin::section(d), spin::samples(d))
}

fn fserver_part(fr: &fserver::FsReport) -> (Section, Vec<Sample>) {
    let locks = first_seen(fr.runs.iter().map(|r| r.lock.clone()));
    let users = sorted_distinct(fr.runs.iter().map(|r| r.users));
    let samples = fserver::samples(fr, &locks, &users);
    (fserver::section(fr, &locks, &users), samples)
}

fn rwsem_part(recs: &[Record], slow: &[rwsem::SlowPath]) -> (Section, Vec<Sample>) {
    let locks = first_seen(recs.iter().map(|r| r.lock.clone()));
    let pairs = sorted_distinct(
        recs.iter()
            .filter_map(|r| r.readers.as_ref().map(|c| c.threads)),
    );
    let loads: Vec<rwsem::Load> = first_seen(recs.iter().map(|r| r.params.workload.as_str()))
        .into_iter()
        .filter_map(|w| {
            let spec = w.strip_prefix("pause").unwrap_or(w);
            rwsem::parse_loads(spec).ok().map(|l| l.0[0])
        })
        .collect();
    let view = rwsem::View {
        recs,
        slow,
        locks: &locks,
        pairs: &pairs,
        loads: &loads,
        duration_s: recs.first().map_or(0.0, |r| r.params.duration_s),
    };
    (view.section(), samples_of(recs))
}

fn fio_part(runs: &[fio::FioRun], read_pct: u64, file_mib: u64) -> (Section, Vec<Sample>) {
    let locks = first_seen(runs.iter().map(|r| r.lock.clone()));
    let threads = sorted_distinct(runs.iter().map(|r| r.threads));
    let per = (runs.iter())
        .filter(|r| r.lock == locks[0] && r.threads == threads[0])
        .count()
        .max(1);
    let dur = runs
        .first()
        .map_or(1.0, |r| (r.secs * 100.0).round() / 100.0);
    let t: Vec<String> = threads.iter().map(|t| t.to_string()).collect();
    let fa: fio::FioArgs = parse(&format!(
        "--threads {} --runs {per} --duration {} --read-pct {read_pct} --file-mib {file_mib}",
        t.join(","),
        dur.max(0.01)
    ));
    let samples = fio::samples(runs, &locks, &threads);
    (fio::section(runs, &locks, &fa), samples)
}

/// The verdict samples of some records.
fn samples_of(recs: &[Record]) -> Vec<Sample> {
    crate::verdict::samples(&Report {
        results: recs.to_vec(),
        ..Report::default()
    })
}

/// Runs the seed experiments of `plan` (progress on the open suite bar, if any).
/// `preload_dir`: where the `preload` child writes its files; `None` skips it.
pub fn run_seeds(
    plan: &SeedPlan,
    machine: &mut Machine,
    say: &dyn Fn(&str),
    preload_dir: Option<&Path>,
) -> Result<SeedResults, CliError> {
    let mut out = SeedResults::default();

    say("spin (seed 001)");
    let prog = Progress::new(spin::planned_units(&plan.spin), !plan.spin.quiet);
    let d = spin::measure(&plan.spin, &prog)?;
    prog.finish();
    out.violations += d
        .cells
        .iter()
        .flat_map(|c| &c.runs)
        .map(|r| r.violations)
        .sum::<u64>();
    out.add("spin", &d, spin_part(&d));

    say("fserver (seed 004)");
    let f = &plan.fserver;
    let prog = f.run.progress(fserver::planned_units(f));
    let fr = fserver::measure(f, &prog)?;
    prog.finish();
    out.violations += fr.runs.iter().map(|r| r.violations).sum::<u64>();
    out.add("fserver", &fr, fserver_part(&fr));

    say("rwsem (seed 003)");
    let (recs, slow, _) = rwsem::measure(&plan.rwsem, machine)?;
    out.violations += recs.iter().map(|x| x.violations).sum::<u64>();
    let data = serde_json::json!({ "results": recs, "rwsem_slowpath": slow });
    out.add("rwsem", data, rwsem_part(&recs, &slow));

    say("fio (seed 003)");
    let fa = &plan.fio;
    let prog = fa.run.progress(fio::planned_units(fa));
    let runs = fio::measure(fa, &prog)?;
    prog.finish();
    out.violations += runs.iter().map(|r| r.violations).sum::<u64>();
    let (rp, fm) = (fa.read_pct as u64, fa.file_mib as u64);
    let data = serde_json::json!({ "runs": runs, "read_pct": rp, "file_mib": fm });
    out.add("fio", data, fio_part(&runs, rp, fm));

    if let Some(dir) = preload_dir {
        say("preload (unmodified programs, glibc vs klock's interposer)");
        let prog = Progress::new(plan.preload_units(), !plan.fio.run.quiet);
        let (sec, recs) = run_preload(plan, dir);
        prog.inc(plan.preload_units(), "preload");
        prog.finish();
        out.add("preload", &recs, (sec, samples_of(&recs)));
    }
    Ok(out)
}

/// Rebuilds the seed sections and verdict samples from a saved report.json's `seed`
/// object (what `lockbench render` shows for a `report --full`); parts that do not
/// parse are left out.
pub fn seeds_from_json(seed: &serde_json::Value) -> SeedResults {
    use serde_json::from_value;
    let mut out = SeedResults::default();
    if let Ok(d) = from_value::<spin::SpinData>(seed["spin"].clone()) {
        out.push(spin_part(&d));
    }
    if let Ok(fr) = from_value::<fserver::FsReport>(seed["fserver"].clone()) {
        out.push(fserver_part(&fr));
    }
    if let Ok(recs) = from_value::<Vec<Record>>(seed["rwsem"]["results"].clone()) {
        let slow: Vec<rwsem::SlowPath> =
            from_value(seed["rwsem"]["rwsem_slowpath"].clone()).unwrap_or_default();
        out.push(rwsem_part(&recs, &slow));
    }
    if let Ok(runs) = from_value::<Vec<fio::FioRun>>(seed["fio"]["runs"].clone()) {
        let rp = seed["fio"]["read_pct"].as_u64().unwrap_or(50);
        let fm = seed["fio"]["file_mib"].as_u64().unwrap_or(64);
        out.push(fio_part(&runs, rp, fm));
    }
    if let Ok(recs) = from_value::<Vec<Record>>(seed["preload"].clone())
        && !recs.is_empty()
    {
        out.push((preload::results::section(&recs, ""), samples_of(&recs)));
    }
    out
}

/// Runs `lockbench preload` as a child process (its own output goes to
/// `dir/preload.txt`, its records to `dir/preload.json`) and builds the section: per
/// workload, glibc against the interposer with their ratio. When the programs or the
/// interposer are missing, the section says so and there are no records.
fn run_preload(plan: &SeedPlan, dir: &std::path::Path) -> (Section, Vec<Record>) {
    let title =
        "preload: unmodified programs, glibc's locks against klock's interposer".to_string();
    let skip = |why: String| {
        (
            Section {
                title: title.clone(),
                notes: vec![format!("Skipped: {why}")],
                ..Section::default()
            },
            Vec::new(),
        )
    };
    let a = &plan.preload;
    let check = preload::workloads::select(&a.workloads)
        .and_then(|ws| preload::workloads::check_programs(&ws))
        .and_then(|_| super::proc::find_lib(a.lib.as_deref()).map(|_| ()));
    if let Err(e) = check {
        return skip(e.0);
    }
    let args = format!("preload {}", plan.preload_argv);
    let (f, recs, txt) = match run_child(dir, "preload", &args) {
        Ok(r) => r,
        Err(e) => return skip(e),
    };
    let Some(recs) = recs else {
        return skip(format!(
            "`lockbench preload` wrote no report ({}); its output is in {}",
            f.status,
            txt.display()
        ));
    };
    let note = format!(
        "The full output of `lockbench preload` is in {}.",
        txt.display()
    );
    (preload::results::section(&recs, &note), recs)
}

/// The quota of the full report's quota row, in CPUs.
const QUOTA_ROW_CPUS: f64 = 0.5;

/// The quota row: `balanced` under a 0.5-CPU quota, run as a child `lockbench
/// --quota 0.5 mutex ...` (a process must enter its cgroup before klock reads the
/// CPU count). Full report: every mutex competitor at T = 8 and 32; quick: the
/// Mutex family ([`quota_locks`]) at T = 4 x CPUs. Its records carry the quota in
/// their parameters, so they form their own verdict rows. `Err` says why the row
/// could not run (e.g. not permitted to create a cgroup).
fn run_quota_row(
    mutexes: &[crate::locks::LockEntry],
    q: &QuotaRow,
    dir: &std::path::Path,
) -> Result<Vec<Record>, String> {
    let names = quota_locks(mutexes, q.mutex_family);
    let t: Vec<String> = q.threads.iter().map(usize::to_string).collect();
    let mut args = format!(
        "--quota {QUOTA_ROW_CPUS} mutex --locks {} --workload balanced --threads {} --quiet --duration {} --runs {}",
        names.join(","),
        t.join(","),
        q.window,
        q.runs
    );
    if q.no_gate {
        args.push_str(" --no-idle-gate");
    }
    let (f, recs, txt) = run_child(dir, "quota", &args)?;
    if !f.ok {
        let first = (f.stderr.lines().find(|l| l.starts_with("error")))
            .map_or(String::new(), |l| format!(": {l}"));
        return Err(format!(
            "`lockbench --quota {QUOTA_ROW_CPUS} mutex` failed ({}){first}; its output is in {}",
            f.status,
            txt.display()
        ));
    }
    recs.ok_or_else(|| {
        format!(
            "the quota run wrote no report; its output is in {}",
            txt.display()
        )
    })
}

/// The quota row's locks: every mutex, or only klock's Mutex and its verdict
/// peers (the locks that are not klock's and not plain spinlocks; spinlocks
/// collapse under a quota, which the full report shows).
fn quota_locks(mutexes: &[LockEntry], mutex_family: bool) -> Vec<&'static str> {
    use crate::verdict::{is_klock, is_spinning_peer};
    (mutexes.iter().map(|e| e.name))
        .filter(|n| !mutex_family || *n == "klock_mutex" || !(is_klock(n) || is_spinning_peer(n)))
        .collect()
}

/// The quota row's planned progress units (it runs as a child: ticked at its end).
fn quota_units(q: &QuotaRow, locks: usize) -> u64 {
    let configs = locks * (q.threads.len() + 1);
    (configs * q.runs) as u64 * run_units(Duration::from_secs_f64(q.window))
}

/// The suite's condvar row: `lockbench condvar` with the plan's pairs, window and
/// runs, behind the suite's gate.
fn condvar_args(p: &Plan, quiet: bool) -> super::condvar::CondvarArgs {
    let (pairs, dur, runs) = &p.condvar;
    let n: Vec<String> = pairs.iter().map(usize::to_string).collect();
    let q = if quiet { " --quiet" } else { "" };
    parse(&format!(
        "--pairs {} --duration {dur} --runs {runs}{q}",
        n.join(",")
    ))
}

/// Runs this binary with `args` (separated by spaces) and `--json DIR/NAME.json`, in its own process group
/// (its output goes to DIR/NAME.txt): how it finished, the records of the report it
/// wrote (if any), and where its output is.
fn run_child(
    dir: &Path,
    name: &str,
    args: &str,
) -> Result<(Finished, Option<Vec<Record>>, PathBuf), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the lockbench binary: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (json, txt) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.txt")),
    );
    let mut c = std::process::Command::new(exe);
    c.args(args.split_whitespace()).arg("--json").arg(&json);
    let f = super::proc::run_captured(c, None);
    let _ = std::fs::write(&txt, format!("{}{}", f.stdout, f.stderr));
    let recs = (std::fs::read_to_string(&json).ok())
        .and_then(|t| Report::from_json(&t).ok())
        .map(|r| r.results);
    Ok((f, recs, txt))
}

/// The suite's series of the generic runner: (title, configurations, runs).
fn series(p: &Plan, mutexes: &[LockEntry], rws: &[LockEntry]) -> Vec<(String, Vec<Config>, usize)> {
    let preset = |n| Workload::preset(n).expect("preset");
    let mut sweeps = vec![(preset("balanced"), &p.balanced)];
    sweeps.extend(p.hot.as_ref().map(|h| (preset("hot"), h)));
    let mut plans: Vec<(String, Vec<Config>, usize)> = (sweeps.into_iter())
        .map(|(w, (threads, dur, runs))| {
            let d = Duration::from_secs_f64(*dur);
            let cfgs = super::mutex::configs("mutex", mutexes, threads, &w, d, 0);
            (format!("mutex, workload {}", w.name), cfgs, *runs)
        })
        .collect();
    let (pairs, dur, runs) = &p.rw;
    let d = Duration::from_secs_f64(*dur);
    let cfgs = super::rwlock::configs("rwlock", rws, pairs, &preset("balanced"), d, 0);
    plans.push(("rwlock, workload balanced".into(), cfgs, *runs));
    plans
}

/// Writes report.json (with the seed experiments' data), report.csv and report.html
/// into `out`.
fn write_files(out: &Path, report: &Report, seed: &SeedResults) -> Result<(), CliError> {
    let mut json =
        serde_json::to_value(report).map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
    if !seed.json.is_empty() {
        json["seed"] = serde_json::Value::Object(seed.json.clone());
    }
    super::write_json(Some(&out.join("report.json")), &json)?;
    super::write_file(
        &out.join("report.csv"),
        &crate::record::to_csv(&report.results),
    )?;
    let html = crate::html::render_with(report, &seed.sections, &seed.samples);
    super::write_file(&out.join("report.html"), &html)
}

/// The closing lines: where the files are, how many runs the gate discarded or
/// flagged, and the verdict's sentences again (where the terminal leaves the reader).
fn closing(out: &Path, report: &Report, seed: &SeedResults, secs: f64) -> String {
    let discarded: usize = report.results.iter().map(|r| r.discarded_runs).sum();
    let flagged: usize = report.results.iter().map(|r| r.gate_flagged_runs).sum();
    let mut samples = crate::verdict::samples(report);
    samples.extend_from_slice(&seed.samples);
    let summary: String = crate::verdict::summarize(&crate::verdict::cells(&samples))
        .iter()
        .map(|s| format!("* {}\n", s.sentence))
        .collect();
    format!(
        "\nReport written to {} (report.json, report.csv, report.html) in {secs:.0} s; \
         runs discarded for foreign CPU use: {discarded}; kept but flagged noisy: {flagged}.\n{}{summary}",
        out.display(),
        if summary.is_empty() {
            ""
        } else {
            "Verdict (details at the top):\n"
        },
    )
}

/// Planned progress units: uncontended (~25 ns per op) and in all (with the series
/// and the seeds).
fn planned(
    p: &Plan,
    locks: usize,
    plans: &[(String, Vec<Config>, usize)],
    seeds: Option<&SeedPlan>,
    extra: u64,
) -> (u64, u64) {
    let (ops, runs) = p.uncontended;
    let unc = (locks * runs) as u64 * (ops * 25 / 1_000_000 + 5);
    let series: u64 = (plans.iter())
        .map(|(_, c, r)| c.iter().map(|c| run_units(c.duration)).sum::<u64>() * *r as u64)
        .sum();
    (unc, unc + series + extra + seeds.map_or(0, SeedPlan::units))
}

/// The uncontended step of the suite: every lock's lock+unlock cost.
fn uncontended(reg: &[LockEntry], p: &Plan, units: u64, progress: bool) -> Vec<Record> {
    let prog = Progress::new(units, progress);
    prog.message("uncontended lock+unlock");
    let (ops, runs) = p.uncontended;
    let results = super::uncontended::measure(reg, ops, runs, false, &p.gate);
    prog.inc(units, "uncontended lock+unlock");
    prog.finish();
    results
}

/// Runs the suite; returns the exit status.
pub fn run(args: &ReportArgs) -> Result<i32, CliError> {
    let t0 = Instant::now();
    let scale = args.scale.unwrap_or(1.0);
    let mut machine = Machine::probe();
    let p = plan(args.full, args.no_idle_gate, scale, machine.effective_cpus);
    let reg = crate::locks::registry();
    let of = |k| {
        reg.iter()
            .copied()
            .filter(|e| e.kind == k)
            .collect::<Vec<_>>()
    };
    let (mutexes, rws) = (of(LockKind::Mutex), of(LockKind::RwLock));
    let seeds = (args.full).then(|| SeedPlan::full(scale, args.quiet, args.no_idle_gate));
    let plans = series(&p, &mutexes, &rws);

    let cv = condvar_args(&p, args.quiet);
    let q_units = quota_units(&p.quota, quota_locks(&mutexes, p.quota.mutex_family).len());
    let extra = super::condvar::planned_units(&cv) + q_units;
    let (unc_units, total) = planned(&p, reg.len(), &plans, seeds.as_ref(), extra);
    let suite = Progress::suite(total, !args.quiet);
    let chatty = !args.quiet && crate::sys::stderr_is_tty();
    let say = |s: &str| {
        if suite.visible() {
            suite.println(&format!("lockbench report: {s}"));
        } else if chatty {
            eprintln!("lockbench report: {s}");
        }
    };

    say("the machine's costs");
    machine.costs = Some(crate::costs::measure());
    say("uncontended lock+unlock");
    let mut results = uncontended(&reg, &p, unc_units, !args.quiet);
    for (title, cfgs, runs) in &plans {
        say(title);
        let opts = RunOptions {
            runs: *runs,
            gate: p.gate,
            progress: !args.quiet,
        };
        results.extend(super::run_configs(cfgs, &opts, &mut machine));
    }
    say("condvar hand-off (producers and consumers through a bounded queue)");
    results.extend(super::condvar::measure(&cv, p.gate, &mut machine)?);
    let mut seed = match &seeds {
        Some(sp) => run_seeds(sp, &mut machine, &say, Some(&args.out))?,
        None => SeedResults::default(),
    };
    {
        say("mutex under a CPU quota of 0.5 CPUs");
        let prog = Progress::new(q_units, !args.quiet);
        let row = run_quota_row(&mutexes, &p.quota, &args.out);
        prog.inc(q_units, "quota row");
        prog.finish();
        match row {
            Ok(recs) => results.extend(recs),
            Err(why) => seed.sections.push(Section {
                title: format!("mutex balanced under --quota {QUOTA_ROW_CPUS}"),
                notes: vec![format!("Skipped: {why}")],
                ..Section::default()
            }),
        }
    }
    drop(suite);

    let report = Report {
        machine,
        command: super::command_line(),
        results,
    };
    write_files(&args.out, &report, &seed)?;
    let color = crate::table::color_stdout();
    let text = crate::table::render_with(&report, &seed.sections, &seed.samples, color);
    super::out(&text);
    super::out(&closing(
        &args.out,
        &report,
        &seed,
        t0.elapsed().as_secs_f64(),
    ));
    if seed.violations > 0 {
        eprintln!(
            "error: mutual-exclusion violations in the seed experiments ({} in total)",
            seed.violations
        );
        return Ok(1);
    }
    Ok(super::exit_status(&report))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny seed runs: every section has tables laid out like the seed's (with the
    /// seed's numbers) and charts with data, and the HTML with them is well-formed.
    #[test]
    fn seed_sections_render_with_the_seeds_numbers() {
        let mut plan = SeedPlan::full(0.01, true, true);
        let spin = "--locks klock_unfair,klock_pvqspin,std --mults 1,2 --sections 2000 --runs 1";
        plan.spin = parse(&format!("{spin} --quiet"));
        let tiny = "--duration 0.02 --quiet --no-idle-gate";
        let fs = "--users 1,2 --locks klock_mutex,klock_mutex_noqueue,parking_lot --runs 1";
        plan.fserver = parse(&format!("{fs} {tiny}"));
        let rw = "--pairs 1 --loads 1,sleep1us --locks klock_rwsem,std_rw --runs 2";
        plan.rwsem = parse(&format!("{rw} {tiny}"));
        let fio = "--threads 2 --locks klock_rwlock_batched,parking_lot_rw --file-mib 1 --runs 1";
        plan.fio = parse(&format!("{fio} {tiny}"));
        let mut m = Machine::default();
        let r = run_seeds(&plan, &mut m, &|_| {}, None).unwrap();
        assert_eq!(r.violations, 0);
        assert_eq!(r.sections.len(), 4);
        let text: String = r.sections.iter().map(Section::to_text).collect();
        for seed_number in ["2m44.9s", "+34.2%", "-22.7%", "2787"] {
            assert!(text.contains(seed_number), "{seed_number} missing:\n{text}");
        }
        for s in &r.sections {
            assert!(!s.tables.is_empty(), "{}", s.title);
            assert!(!s.charts.is_empty(), "{}", s.title);
        }
        for k in ["spin", "fserver", "rwsem", "fio"] {
            assert!(r.json.contains_key(k), "{k}");
        }
        assert!(r.samples.iter().any(|s| s.lock == "klock_mutex"));
        // Well-formed XML, chart by chart and as a page.
        for c in r.sections.iter().flat_map(|s| &s.charts) {
            roxmltree::Document::parse(&c.svg)
                .unwrap_or_else(|e| panic!("chart '{}' is not XML: {e}", c.title));
            assert!(c.series.iter().any(|(_, n)| *n > 0), "{}", c.title);
        }
        let html = crate::html::render_with(&Report::default(), &r.sections, &r.samples);
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        roxmltree::Document::parse_with_options(&html, opts).expect("HTML is XML");
        assert!(html.contains("RwLock: "), "the seeds feed the verdict");
        // `lockbench render` rebuilds the same sections from report.json's "seed".
        let back = seeds_from_json(&serde_json::Value::Object(r.json.clone()));
        let titles = |v: &[Section]| v.iter().map(|s| s.title.clone()).collect::<Vec<_>>();
        assert_eq!(titles(&back.sections), titles(&r.sections));
        assert_eq!(back.samples.len(), r.samples.len());
    }

    /// The quick suite's rows for klock's conditions: T = 16 x CPUs, a condvar
    /// row at 2 x CPUs pairs, the Mutex family at T = 4 x CPUs under the quota
    /// with windows of at least 1 s; the existing rows keep their settings.
    #[test]
    fn quick_plan_covers_klocks_conditions() {
        let p = plan(false, true, 1.0, 3);
        assert_eq!(p.balanced, (vec![1, 2, 4, 8, 48], 0.2, 5));
        assert_eq!(p.rw, (vec![(2, 2), (8, 8)], 0.2, 5));
        assert_eq!(p.uncontended, (1_000_000, 5));
        assert_eq!(p.condvar.0, vec![1, 6]);
        assert_eq!(p.quota.threads, vec![12]);
        assert!(p.quota.window >= 1.0 && p.quota.mutex_family);
        let names = quota_locks(&crate::locks::registry(), true);
        assert!(names.contains(&"klock_mutex") && names.contains(&"std"));
        for gone in [
            "ticket",
            "pthread_spin",
            "klock_unfair",
            "klock_mutex_nospin",
        ] {
            assert!(!names.contains(&gone), "{gone} in the quota row");
        }
        let cv = condvar_args(&p, true);
        assert_eq!((cv.pairs.0.clone(), cv.run.runs), (vec![1, 6], 5));
    }

    #[test]
    fn scale_shrinks_every_window() {
        let p = plan(true, true, 0.1, 2);
        assert!((p.balanced.1 - 0.2).abs() < 1e-9);
        assert!((p.rw.1 - 0.2).abs() < 1e-9);
        assert_eq!(p.uncontended.0, 1_000_000);
        let s = SeedPlan::full(0.1, true, true);
        assert!((s.rwsem.run.duration - 0.05).abs() < 1e-9);
        assert_eq!(s.spin.sections, 20_000);
        assert!(s.units() > 0);
    }
}

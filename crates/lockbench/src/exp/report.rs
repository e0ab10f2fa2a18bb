//! `lockbench report [--quick|--full]`: the standard suite; also what runs with no
//! subcommand. Writes report.json, report.csv and report.html into `--out`.
//!
//! * quick (default, ≲ 3 min on 2 CPUs): every mutex competitor on `balanced` at
//!   T = 1, 2, 4, 8 (0.2 s × 5 runs); every rwlock at 2+2 and 8+8 (0.2 s × 5);
//!   uncontended (10^6 ops × 5). Idle gate shortened (0.5 s wait, 1 retry, 50 s total
//!   budget; after that runs are only flagged).
//! * full (~30 min): `balanced` at T = 1, 2, 4, 8, 32 (2 s × 5), `hot` at the same
//!   thread counts (1 s × 3), rwlock 2+2 and 8+8 (2 s × 5: the writer-starvation check),
//!   uncontended (10^7 ops × 10); a quota row (`balanced` at T = 8, 32 under
//!   `--quota 0.5`, a child process); then the seed experiments, each laid out like its
//!   seed's tables with the seed's numbers beside ours: `spin` (seed 001), `fserver`
//!   (seed 004), `rwsem` and `fio` (seed 003). Full idle gate.
//!
//! Output order, terminal and HTML alike: the verdict ([`crate::verdict`]: klock's
//! default locks against the best peer, per case), then the charts (HTML) and tables.
//! `--scale F` multiplies every window (and the spin job's size) by F, to smoke-test
//! the suite in a fraction of its time; its numbers are then not worth quoting.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::proc::Finished;
use super::{CliError, Config, RunOptions, Workload, run_configs};
use crate::gate::GateConfig;
use crate::locks::LockKind;
use crate::progress::{Progress, Suite, run_units};
use crate::record::{Record, Report};
use crate::sys::Machine;
use crate::table::Section;
use crate::verdict::Sample;

/// Arguments of `lockbench report`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// The quick suite (default): about 3 minutes on 2 CPUs.
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

struct Plan {
    balanced: Sweep,
    hot: Option<Sweep>,
    rw: (Vec<(usize, usize)>, f64, usize),
    uncontended: (u64, usize),
    gate: GateConfig,
}

fn plan(full: bool, no_gate: bool, scale: f64) -> Plan {
    let mut gate = GateConfig::from_env();
    if no_gate {
        gate.enabled = false;
    }
    let mut p = if full {
        Plan {
            balanced: (vec![1, 2, 4, 8, 32], 2.0, 5),
            hot: Some((vec![1, 2, 4, 8, 32], 1.0, 3)),
            rw: (vec![(2, 2), (8, 8)], 2.0, 5),
            uncontended: (10_000_000, 10),
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
        Plan {
            balanced: (vec![1, 2, 4, 8], 0.2, 5),
            hot: None,
            rw: (vec![(2, 2), (8, 8)], 0.2, 5),
            uncontended: (1_000_000, 5),
            gate,
        }
    };
    p.balanced.1 *= scale;
    if let Some(h) = &mut p.hot {
        h.1 *= scale;
    }
    p.rw.1 *= scale;
    p.uncontended.0 = ((p.uncontended.0 as f64 * scale) as u64).max(1000);
    p
}

/// The seed experiments' arguments in the full report.
#[derive(Clone, Debug)]
pub struct SeedPlan {
    /// `spin`.
    pub spin: super::spin::SpinArgs,
    /// `fserver`.
    pub fserver: super::fserver::FserverArgs,
    /// `rwsem`.
    pub rwsem: super::rwsem::RwsemArgs,
    /// `fio`.
    pub fio: super::fio::FioArgs,
    /// `preload` (run as a child `lockbench preload`; skipped with the reason when
    /// its programs or the interposer are missing).
    pub preload: super::preload::PreloadArgs,
    /// The child's extra arguments (`--quiet`, `--no-idle-gate`, `--duration`).
    pub preload_argv: Vec<String>,
}

/// Parses an experiment's arguments from `args` (its defaults when empty).
fn parse<A: clap::Args>(args: &[&str]) -> A {
    #[derive(clap::Parser)]
    struct Wrap<A: clap::Args> {
        #[command(flatten)]
        a: A,
    }
    <Wrap<A> as clap::Parser>::try_parse_from(
        std::iter::once("lockbench").chain(args.iter().copied()),
    )
    .map(|w| w.a)
    .expect("the report's own seed arguments parse")
}

impl SeedPlan {
    /// The full report's settings: each experiment's defaults, with shorter rwsem
    /// windows (0.5 s: it has 120 configurations) and a spin timeout of 5 s at 1x, 2x
    /// and 4x the CPUs (the 16x column mostly measures the timeout).
    pub fn full(scale: f64, quiet: bool, no_gate: bool) -> SeedPlan {
        let d = |x: f64| format!("{}", x * scale);
        let q: &[&str] = if quiet { &["--quiet"] } else { &[] };
        let g: &[&str] = if no_gate { &["--no-idle-gate"] } else { &[] };
        let with = |base: Vec<String>| -> Vec<String> {
            base.into_iter()
                .chain(q.iter().map(|s| s.to_string()))
                .collect()
        };
        let sections = ((200_000.0 * scale) as u64).max(1000).to_string();
        let spin: Vec<String> = with(vec![
            "--mults".into(),
            "1,2,4".into(),
            "--timeout".into(),
            "5".into(),
            "--sections".into(),
            sections,
        ]);
        let fs: Vec<String> = with(vec!["--duration".into(), d(1.0)])
            .into_iter()
            .chain(g.iter().map(|s| s.to_string()))
            .collect();
        let rw: Vec<String> = with(vec!["--duration".into(), d(0.5)])
            .into_iter()
            .chain(g.iter().map(|s| s.to_string()))
            .collect();
        let fio: Vec<String> = with(vec!["--duration".into(), d(1.0)])
            .into_iter()
            .chain(g.iter().map(|s| s.to_string()))
            .collect();
        fn r(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        let pre: Vec<String> = vec!["--quiet".to_string(), "--duration".into(), d(2.0)]
            .into_iter()
            .chain(g.iter().map(|s| s.to_string()))
            .collect();
        SeedPlan {
            spin: parse(&r(&spin)),
            fserver: parse(&r(&fs)),
            rwsem: parse(&r(&rw)),
            fio: parse(&r(&fio)),
            preload: parse(&r(&pre)),
            preload_argv: pre,
        }
    }
    /// Planned progress units.
    pub fn units(&self) -> u64 {
        super::spin::planned_units(&self.spin)
            + super::fserver::planned_units(&self.fserver)
            + super::rwsem::planned_units(&self.rwsem)
            + super::fio::planned_units(&self.fio)
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

/// Runs the seed experiments of `plan` (progress on the open [`Suite`], if any).
/// `preload_dir`: where the `preload` child writes its files; `None` skips it.
pub fn run_seeds(
    plan: &SeedPlan,
    machine: &mut Machine,
    say: &dyn Fn(&str),
    preload_dir: Option<&std::path::Path>,
) -> Result<SeedResults, CliError> {
    let mut out = SeedResults::default();
    let j = |v: serde_json::Result<serde_json::Value>| v.unwrap_or(serde_json::Value::Null);

    say("spin (seed 001)");
    let prog = Progress::new(super::spin::planned_units(&plan.spin), !plan.spin.quiet);
    let d = super::spin::measure(&plan.spin, &prog)?;
    prog.finish();
    out.violations += d
        .cells
        .iter()
        .flat_map(|c| &c.runs)
        .map(|r| r.violations)
        .sum::<u64>();
    out.sections.push(super::spin::section(&d));
    out.samples.extend(super::spin::samples(&d));
    out.json.insert("spin".into(), j(serde_json::to_value(&d)));

    say("fserver (seed 004)");
    let f = &plan.fserver;
    let prog = Progress::new(super::fserver::planned_units(f), !f.run.quiet);
    let fr = super::fserver::measure(f, &prog)?;
    prog.finish();
    out.violations += fr.runs.iter().map(|r| r.violations).sum::<u64>();
    out.sections
        .push(super::fserver::section(&fr, &f.locks, &f.users.0));
    out.samples
        .extend(super::fserver::samples(&fr, &f.locks, &f.users.0));
    out.json
        .insert("fserver".into(), j(serde_json::to_value(&fr)));

    say("rwsem (seed 003)");
    let r = &plan.rwsem;
    let (recs, slow, names) = super::rwsem::measure(r, machine)?;
    out.violations += recs.iter().map(|x| x.violations).sum::<u64>();
    let view = super::rwsem::View {
        recs: &recs,
        slow: &slow,
        locks: &names,
        pairs: &r.pairs.0,
        loads: &r.loads.0,
        duration_s: r.run.duration,
    };
    out.sections.push(view.section());
    out.samples.extend(crate::verdict::samples(&Report {
        results: recs.clone(),
        ..Report::default()
    }));
    out.json.insert(
        "rwsem".into(),
        serde_json::json!({ "results": j(serde_json::to_value(&recs)), "rwsem_slowpath": j(serde_json::to_value(&slow)) }),
    );

    say("fio (seed 003)");
    let fa = &plan.fio;
    let names: Vec<String> = super::fio::select(&fa.locks)?
        .iter()
        .map(|l| l.0.to_string())
        .collect();
    let prog = Progress::new(super::fio::planned_units(fa), !fa.run.quiet);
    let runs = super::fio::measure(fa, &prog)?;
    prog.finish();
    out.violations += runs.iter().map(|r| r.violations).sum::<u64>();
    out.sections.push(super::fio::section(&runs, &names, fa));
    out.samples
        .extend(super::fio::samples(&runs, &names, &fa.threads.0));
    out.json.insert(
        "fio".into(),
        serde_json::json!({ "runs": j(serde_json::to_value(&runs)), "read_pct": fa.read_pct, "file_mib": fa.file_mib }),
    );

    if let Some(dir) = preload_dir {
        say("preload (unmodified programs, glibc vs klock's interposer)");
        let prog = Progress::new(plan.preload_units(), !plan.fio.run.quiet);
        let (sec, recs) = run_preload(plan, dir);
        prog.inc(plan.preload_units(), "preload");
        prog.finish();
        out.samples.extend(crate::verdict::samples(&Report {
            results: recs.clone(),
            ..Report::default()
        }));
        out.json
            .insert("preload".into(), j(serde_json::to_value(&recs)));
        out.sections.push(sec);
    }
    Ok(out)
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
    let check = super::preload::select(&a.workloads)
        .and_then(|ws| super::preload::check_programs(&ws))
        .and_then(|_| super::preload::find_lib(a.lib.as_deref()).map(|_| ()));
    if let Err(e) = check {
        return skip(e.0);
    }
    let mut args = vec!["preload".to_string()];
    args.extend(plan.preload_argv.iter().cloned());
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
    (preload_section(&recs, &note), recs)
}

/// The preload section from its records: per workload, glibc against the
/// interposer with their ratio and verdict, and a chart of the ratios.
pub fn preload_section(recs: &[Record], note: &str) -> Section {
    let title =
        "preload: unmodified programs, glibc's locks against klock's interposer".to_string();
    let mut tables = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    for r in recs {
        if !workloads.contains(&r.params.workload) {
            workloads.push(r.params.workload.clone());
        }
    }
    let get = |w: &str, t: usize, side: &str| {
        recs.iter()
            .find(|r| r.params.workload == w && r.threads == t && r.lock == side)
    };
    let mut series = Vec::new();
    let mut ts: Vec<usize> = recs.iter().map(|r| r.threads).collect();
    ts.sort_unstable();
    ts.dedup();
    for (wi, w) in workloads.iter().enumerate() {
        let mut rows = Vec::new();
        let mut points = Vec::new();
        for (ti, &t) in ts.iter().enumerate() {
            let (Some(g), Some(k)) = (
                get(w, t, super::preload::GLIBC),
                get(w, t, super::preload::KLOCK),
            ) else {
                continue;
            };
            let ks = Sample {
                scenario: String::new(),
                point: String::new(),
                order: t,
                lock: k.lock.clone(),
                median: k.throughput_mops,
                runs: k.runs_mops.clone(),
                higher_better: true,
                unit: String::new(),
                starves: None,
                tail_ns: None,
            };
            let gs = Sample {
                lock: g.lock.clone(),
                median: g.throughput_mops,
                runs: g.runs_mops.clone(),
                ..ks.clone()
            };
            let (ratio, lo, hi, o) = crate::verdict::compare_samples(&ks, &gs);
            rows.push(vec![
                t.to_string(),
                format!("{:.4}", g.throughput_mops),
                format!("{:.4}", k.throughput_mops),
                format!("{ratio:.2}x ({lo:.2}-{hi:.2})"),
                o.word().to_string(),
                format!("{:.1}% / {:.1}%", g.spread * 100.0, k.spread * 100.0),
                format!("{} / {}", g.collapsed_runs, k.collapsed_runs),
            ]);
            points.push((
                ti,
                crate::chart::Value::Finite {
                    y: ratio,
                    lo: lo.min(ratio),
                    hi: hi.max(ratio),
                },
            ));
        }
        tables.push(crate::table::Table {
            title: format!("preload {w}: millions of the program's own metric per second, median"),
            header: [
                "T",
                "glibc",
                "klock_preload",
                "klock / glibc (run range)",
                "verdict",
                "spread glibc / klock",
                "failed runs glibc / klock",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
        if wi < crate::chart::MAX_SERIES {
            series.push(crate::chart::Series {
                name: w.clone(),
                points,
                bold: false,
                style: wi,
            });
        }
    }
    let charts = vec![crate::chart::line(&crate::chart::LineChart {
        title: "preload: klock_preload / glibc per program (> 1: the interposer is faster)".into(),
        x_desc: "threads".into(),
        y_desc: "ratio (bars: run range)".into(),
        x_labels: ts.iter().map(|t| t.to_string()).collect(),
        series,
        scale: crate::chart::Scale::Auto,
        reference: Some(1.0),
    })];
    Section {
        title,
        notes: vec![format!(
            "Each program runs with and without LD_PRELOAD=libklock_preload.so, interleaved; the programs' own metrics (events/s, lock ops/s, bogo ops/s, TPS) in millions. {note}"
        )],
        tables,
        charts,
    }
}

/// The quota of the full report's quota row, in CPUs.
const QUOTA_ROW_CPUS: f64 = 0.5;

/// The full report's quota row: `balanced` at T = 8 and 32 for every mutex
/// competitor, run as a child `lockbench --quota 0.5 mutex ...` (a process
/// must enter its cgroup before klock reads the CPU count). Its records carry
/// the quota in their parameters, so they form their own verdict rows. `Err`
/// says why the row could not run (e.g. not permitted to create a cgroup).
fn run_quota_row(
    mutexes: &[crate::locks::LockEntry],
    p: &Plan,
    dir: &std::path::Path,
    no_gate: bool,
) -> Result<Vec<Record>, String> {
    let names: Vec<&str> = mutexes.iter().map(|e| e.name).collect();
    let mut args: Vec<String> = ["--quota", &QUOTA_ROW_CPUS.to_string(), "mutex", "--locks"]
        .map(String::from)
        .to_vec();
    args.push(names.join(","));
    args.extend(["--workload", "balanced", "--threads", "8,32", "--quiet"].map(String::from));
    args.extend(["--duration".into(), p.balanced.1.to_string()]);
    args.extend(["--runs".into(), p.balanced.2.to_string()]);
    if no_gate {
        args.push("--no-idle-gate".into());
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

/// Runs this binary with `args` and `--json DIR/NAME.json`, in its own process group
/// (its output goes to DIR/NAME.txt): how it finished, the records of the report it
/// wrote (if any), and where its output is.
fn run_child(
    dir: &Path,
    name: &str,
    args: &[String],
) -> Result<(Finished, Option<Vec<Record>>, PathBuf), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the lockbench binary: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (json, txt) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.txt")),
    );
    let mut c = std::process::Command::new(exe);
    c.args(args).arg("--json").arg(&json);
    let f = super::proc::run_captured(c, None);
    let _ = std::fs::write(&txt, format!("{}{}", f.stdout, f.stderr));
    let recs = (std::fs::read_to_string(&json).ok())
        .and_then(|t| Report::from_json(&t).ok())
        .map(|r| r.results);
    Ok((f, recs, txt))
}

/// Runs the suite; returns the exit status.
pub fn run(args: &ReportArgs) -> Result<i32, CliError> {
    let t0 = Instant::now();
    let scale = args.scale.unwrap_or(1.0);
    let p = plan(args.full, args.no_idle_gate, scale);
    let reg = crate::locks::registry();
    let mutexes: Vec<_> = reg
        .iter()
        .copied()
        .filter(|e| e.kind == LockKind::Mutex)
        .collect();
    let rws: Vec<_> = reg
        .iter()
        .copied()
        .filter(|e| e.kind == LockKind::RwLock)
        .collect();
    let seeds = args
        .full
        .then(|| SeedPlan::full(scale, args.quiet, args.no_idle_gate));

    let mut series: Vec<(&str, Workload, &Sweep)> = vec![(
        "mutex",
        Workload::preset("balanced").expect("preset"),
        &p.balanced,
    )];
    if let Some(h) = &p.hot {
        series.push(("mutex", Workload::preset("hot").expect("preset"), h));
    }
    let mut plans: Vec<(String, Vec<Config>, usize)> = Vec::new();
    for (exp, w, (threads, dur, runs)) in &series {
        let cfgs: Vec<Config> =
            super::mutex::configs(exp, &mutexes, threads, w, Duration::from_secs_f64(*dur), 0);
        plans.push((format!("{exp}, workload {}", w.name), cfgs, *runs));
    }
    let (pairs, dur, runs) = &p.rw;
    plans.push((
        "rwlock, workload balanced".into(),
        super::rwlock::configs(
            "rwlock",
            &rws,
            pairs,
            &Workload::preset("balanced").expect("preset"),
            Duration::from_secs_f64(*dur),
            0,
        ),
        *runs,
    ));

    // Planned units: uncontended (~25 ns per op), the series, the seeds.
    let unc_units = (reg.len() * p.uncontended.1) as u64 * (p.uncontended.0 * 25 / 1_000_000 + 5);
    let total = unc_units
        + plans
            .iter()
            .map(|(_, c, r)| c.iter().map(|c| run_units(c.duration)).sum::<u64>() * *r as u64)
            .sum::<u64>()
        + seeds.as_ref().map_or(0, SeedPlan::units);
    let suite = Suite::begin(total, !args.quiet);
    let chatty = !args.quiet && crate::sys::stderr_is_tty();
    let say = |s: &str| {
        if suite.visible() {
            suite.println(&format!("lockbench report: {s}"));
        } else if chatty {
            eprintln!("lockbench report: {s}");
        }
    };

    let mut machine = Machine::probe();
    let mut results: Vec<Record> = Vec::new();
    let opts = |runs| RunOptions {
        runs,
        gate: p.gate,
        progress: !args.quiet,
    };

    say("uncontended lock+unlock");
    let prog = Progress::new(unc_units, !args.quiet);
    prog.message("uncontended lock+unlock");
    results.extend(super::uncontended::measure(
        &reg,
        p.uncontended.0,
        p.uncontended.1,
        false,
        &p.gate,
    ));
    prog.inc(unc_units, "uncontended lock+unlock");
    prog.finish();

    for (title, cfgs, runs) in &plans {
        say(title);
        results.extend(run_configs(cfgs, &opts(*runs), &mut machine));
    }

    let mut seed = match &seeds {
        Some(sp) => run_seeds(sp, &mut machine, &say, Some(&args.out))?,
        None => SeedResults::default(),
    };
    if args.full {
        say("mutex under a CPU quota of 0.5 CPUs");
        match run_quota_row(&mutexes, &p, &args.out, args.no_idle_gate) {
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
    let out = &args.out;
    let mut json =
        serde_json::to_value(&report).map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
    if !seed.json.is_empty() {
        json["seed"] = serde_json::Value::Object(seed.json.clone());
    }
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
    super::write_file(&out.join("report.json"), &text)?;
    super::write_file(
        &out.join("report.csv"),
        &crate::record::to_csv(&report.results),
    )?;
    super::write_file(
        &out.join("report.html"),
        &crate::html::render_with(&report, &seed.sections, &seed.samples),
    )?;
    let color = crate::table::color_stdout();
    super::out(&crate::table::render_with(
        &report,
        &seed.sections,
        &seed.samples,
        color,
    ));
    let discarded: usize = report.results.iter().map(|r| r.discarded_runs).sum();
    let flagged: usize = report.results.iter().map(|r| r.gate_flagged_runs).sum();
    // The answer again at the end, where the terminal leaves the reader.
    let mut samples = crate::verdict::samples(&report);
    samples.extend_from_slice(&seed.samples);
    let summary: String = crate::verdict::summarize(&crate::verdict::cells(&samples))
        .iter()
        .map(|s| format!("* {}\n", s.sentence))
        .collect();
    super::out(&format!(
        "\nReport written to {} (report.json, report.csv, report.html) in {:.0} s; \
         runs discarded for foreign CPU use: {discarded}; kept but flagged noisy: {flagged}.\n{}{summary}",
        out.display(),
        t0.elapsed().as_secs_f64(),
        if summary.is_empty() {
            ""
        } else {
            "Verdict (details at the top):\n"
        },
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

/// Rebuilds the seed sections and verdict samples from a saved report.json's `seed`
/// object (what `lockbench render` shows for a `report --full`); parts that do not
/// parse are left out.
pub fn seeds_from_json(seed: &serde_json::Value) -> SeedResults {
    use serde_json::from_value;
    let mut out = SeedResults::default();
    let first_seen = |v: Vec<String>| {
        let mut u: Vec<String> = Vec::new();
        for x in v {
            if !u.contains(&x) {
                u.push(x);
            }
        }
        u
    };
    if let Ok(d) = from_value::<super::spin::SpinData>(seed["spin"].clone()) {
        out.sections.push(super::spin::section(&d));
        out.samples.extend(super::spin::samples(&d));
    }
    if let Ok(fr) = from_value::<super::fserver::FsReport>(seed["fserver"].clone()) {
        let locks = first_seen(fr.runs.iter().map(|r| r.lock.clone()).collect());
        let mut users: Vec<usize> = fr.runs.iter().map(|r| r.users).collect();
        users.sort_unstable();
        users.dedup();
        out.sections
            .push(super::fserver::section(&fr, &locks, &users));
        out.samples
            .extend(super::fserver::samples(&fr, &locks, &users));
    }
    if let Ok(recs) = from_value::<Vec<Record>>(seed["rwsem"]["results"].clone()) {
        let slow: Vec<super::rwsem::SlowPath> =
            from_value(seed["rwsem"]["rwsem_slowpath"].clone()).unwrap_or_default();
        let locks = first_seen(recs.iter().map(|r| r.lock.clone()).collect());
        let mut pairs: Vec<usize> = recs
            .iter()
            .filter_map(|r| r.readers.as_ref().map(|c| c.threads))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let names = first_seen(recs.iter().map(|r| r.params.workload.clone()).collect());
        let loads: Vec<super::rwsem::Load> = names
            .iter()
            .filter_map(|w| {
                let spec = w.strip_prefix("pause").unwrap_or(w);
                super::rwsem::parse_loads(spec).ok().map(|l| l.0[0])
            })
            .collect();
        let dur = recs.first().map_or(0.0, |r| r.params.duration_s);
        let view = super::rwsem::View {
            recs: &recs,
            slow: &slow,
            locks: &locks,
            pairs: &pairs,
            loads: &loads,
            duration_s: dur,
        };
        out.sections.push(view.section());
        out.samples.extend(crate::verdict::samples(&Report {
            results: recs,
            ..Report::default()
        }));
    }
    if let Ok(runs) = from_value::<Vec<super::fio::FioRun>>(seed["fio"]["runs"].clone()) {
        let locks = first_seen(runs.iter().map(|r| r.lock.clone()).collect());
        let mut threads: Vec<usize> = runs.iter().map(|r| r.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let per = runs
            .iter()
            .filter(|r| r.lock == locks[0] && r.threads == threads[0])
            .count()
            .max(1);
        let dur = runs
            .first()
            .map_or(1.0, |r| (r.secs * 100.0).round() / 100.0);
        let t: Vec<String> = threads.iter().map(|t| t.to_string()).collect();
        let rp = seed["fio"]["read_pct"].as_u64().unwrap_or(50).to_string();
        let fm = seed["fio"]["file_mib"].as_u64().unwrap_or(64).to_string();
        let (ts, ps, ds) = (t.join(","), per.to_string(), format!("{}", dur.max(0.01)));
        let fa: super::fio::FioArgs = parse(&[
            "--threads",
            &ts,
            "--runs",
            &ps,
            "--duration",
            &ds,
            "--read-pct",
            &rp,
            "--file-mib",
            &fm,
        ]);
        out.sections.push(super::fio::section(&runs, &locks, &fa));
        out.samples
            .extend(super::fio::samples(&runs, &locks, &threads));
    }
    if let Ok(recs) = from_value::<Vec<Record>>(seed["preload"].clone())
        && !recs.is_empty()
    {
        out.sections.push(preload_section(&recs, ""));
        out.samples.extend(crate::verdict::samples(&Report {
            results: recs,
            ..Report::default()
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny seed runs: every section has tables laid out like the seed's (with the
    /// seed's numbers) and charts with data, and the HTML with them is well-formed.
    #[test]
    fn seed_sections_render_with_the_seeds_numbers() {
        let mut plan = SeedPlan::full(0.01, true, true);
        plan.spin = parse(&[
            "--locks",
            "klock_unfair,klock_pvqspin,std",
            "--mults",
            "1,2",
            "--sections",
            "2000",
            "--runs",
            "1",
            "--quiet",
        ]);
        plan.fserver = parse(&[
            "--users",
            "1,2",
            "--locks",
            "klock_mutex,klock_mutex_noqueue,parking_lot",
            "--duration",
            "0.02",
            "--runs",
            "1",
            "--quiet",
            "--no-idle-gate",
        ]);
        plan.rwsem = parse(&[
            "--pairs",
            "1",
            "--loads",
            "1,sleep1us",
            "--locks",
            "klock_rwsem,std_rw",
            "--duration",
            "0.02",
            "--runs",
            "2",
            "--quiet",
            "--no-idle-gate",
        ]);
        plan.fio = parse(&[
            "--threads",
            "2",
            "--locks",
            "klock_rwsem,parking_lot_rw",
            "--file-mib",
            "1",
            "--duration",
            "0.02",
            "--runs",
            "1",
            "--quiet",
            "--no-idle-gate",
        ]);
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

    #[test]
    fn scale_shrinks_every_window() {
        let p = plan(true, true, 0.1);
        assert!((p.balanced.1 - 0.2).abs() < 1e-9);
        assert!((p.rw.1 - 0.2).abs() < 1e-9);
        assert_eq!(p.uncontended.0, 1_000_000);
        let s = SeedPlan::full(0.1, true, true);
        assert!((s.rwsem.run.duration - 0.05).abs() < 1e-9);
        assert_eq!(s.spin.sections, 20_000);
        assert!(s.units() > 0);
    }
}

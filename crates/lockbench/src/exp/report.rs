//! `lockbench report [--quick|--full]`: the standard suite; also what runs with no
//! subcommand. Writes report.json, report.csv and report.html into `--out`.
//!
//! * quick (default, ≲ 3 min on 2 CPUs): every mutex competitor on `balanced` at
//!   T = 1, 2, 4, 8 (0.3 s × 3 runs); every rwlock at 2+2 and 8+8 (0.3 s × 3);
//!   uncontended (10^6 ops × 3). Idle gate shortened (0.5 s wait, 1 retry, 50 s total
//!   budget; after that runs are only flagged).
//! * full (~15 min): `balanced` at T = 1, 2, 4, 8, 32 (2 s × 5), `hot` at the same
//!   thread counts (1 s × 3), rwlock 2+2 and 8+8 (2 s × 5: the writer-starvation check),
//!   uncontended (10^7 ops × 10). Full idle gate.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{CliError, Config, RunOptions, Workload, run_configs};
use crate::adapter::LockKind;
use crate::gate::GateConfig;
use crate::record::{Record, Report};
use crate::sys::Machine;

/// Arguments of `lockbench report`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// The quick suite (default): about 3 minutes on 2 CPUs.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// The full suite: all experiments at publication length (10-15 minutes).
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

fn plan(full: bool, no_gate: bool) -> Plan {
    let mut gate = GateConfig::from_env();
    if no_gate {
        gate.enabled = false;
    }
    if full {
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
        Plan {
            balanced: (vec![1, 2, 4, 8], 0.3, 3),
            hot: None,
            rw: (vec![(2, 2), (8, 8)], 0.3, 3),
            uncontended: (1_000_000, 3),
            gate,
        }
    }
}

/// Runs the suite; returns the exit status.
pub fn run(args: &ReportArgs) -> Result<i32, CliError> {
    let t0 = Instant::now();
    let p = plan(args.full, args.no_idle_gate);
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
    let mut machine = Machine::probe();
    let mut results: Vec<Record> = Vec::new();
    let opts = |runs| RunOptions {
        runs,
        gate: p.gate,
        progress: !args.quiet,
    };
    let chatty = !args.quiet && crate::sys::stderr_is_tty();
    let say = |s: &str| {
        if chatty {
            eprintln!("lockbench report: {s}");
        }
    };

    say("uncontended lock+unlock");
    results.extend(super::uncontended::measure(
        &reg,
        p.uncontended.0,
        p.uncontended.1,
        false,
        &p.gate,
    ));

    let mut series: Vec<(&str, Workload, &Sweep)> = vec![(
        "mutex",
        Workload::preset("balanced").expect("preset"),
        &p.balanced,
    )];
    if let Some(h) = &p.hot {
        series.push(("mutex", Workload::preset("hot").expect("preset"), h));
    }
    for (exp, w, (threads, dur, runs)) in series {
        say(&format!("{exp}, workload {}", w.name));
        let cfgs: Vec<Config> =
            super::mutex::configs(exp, &mutexes, threads, &w, Duration::from_secs_f64(*dur), 0);
        results.extend(run_configs(&cfgs, &opts(*runs), &mut machine));
    }

    say("rwlock, workload balanced");
    let (pairs, dur, runs) = &p.rw;
    let cfgs = super::rwlock::configs(
        "rwlock",
        &rws,
        pairs,
        &Workload::preset("balanced").expect("preset"),
        Duration::from_secs_f64(*dur),
        0,
    );
    results.extend(run_configs(&cfgs, &opts(*runs), &mut machine));

    let report = Report {
        machine,
        command: super::command_line(),
        results,
    };
    let out = &args.out;
    super::write_file(&out.join("report.json"), &report.to_json())?;
    super::write_file(
        &out.join("report.csv"),
        &crate::record::to_csv(&report.results),
    )?;
    super::write_file(&out.join("report.html"), &crate::html::render(&report))?;
    super::out(&crate::table::render(&report));
    let discarded: usize = report.results.iter().map(|r| r.discarded_runs).sum();
    let flagged: usize = report.results.iter().map(|r| r.gate_flagged_runs).sum();
    super::out(&format!(
        "\nReport written to {} (report.json, report.csv, report.html) in {:.0} s; \
         runs discarded for foreign CPU use: {discarded}; kept but flagged noisy: {flagged}.\n",
        out.display(),
        t0.elapsed().as_secs_f64()
    ));
    Ok(super::exit_status(&report))
}

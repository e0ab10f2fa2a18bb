//! The command line (clap derive). Usage errors exit with status 2, mutual-exclusion
//! violations with 1.
//!
//! To add a subcommand: add a variant to [`Command`] holding the experiment's clap
//! `Args` struct, and one arm in [`dispatch`] calling its `run` (see [`crate::exp`]).

use clap::{Parser, Subcommand};

use crate::exp::{self, CliError};

/// Side-by-side lock benchmarks: klock, std, parking_lot, glibc and plain spinlocks.
#[derive(Parser, Debug)]
#[command(name = "lockbench", version, about, long_about = None)]
pub struct Cli {
    /// What to run; without one, `report --quick`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Run under a CPU quota of CPUS (e.g. 0.5): the process moves into a new
    /// cgroup limited to that bandwidth (v1 `cpu.cfs_quota_us` or v2
    /// `cpu.max`); needs root or a delegated cgroup.
    #[arg(long, global = true, value_name = "CPUS", value_parser = parse_quota)]
    pub quota: Option<f64>,
}

/// `--quota`: a positive number of CPUs, at most 4096.
fn parse_quota(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if (0.01..=4096.0).contains(&q) => Ok(q),
        _ => Err(format!(
            "{s:?}: allowed: a number of CPUs in 0.01..=4096, e.g. 0.5"
        )),
    }
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the registered locks: name, then a one-line description.
    List,
    /// Contended counter loop: locks × thread counts.
    Mutex(exp::mutex::MutexArgs),
    /// Reader/writer loop with a torn-read check (rwlock competitors only).
    Rwlock(exp::rwlock::RwArgs),
    /// Seed 004's file-server job mix: jobs per minute vs users, OSQ ablation.
    Fserver(exp::fserver::FserverArgs),
    /// Seed 003's rwsem microbenchmark: N readers + N writers, pause/sleep loads;
    /// ops per thread, slow-path counts, all-writers vs half-writers.
    Rwsem(exp::rwsem::RwsemArgs),
    /// Seed 003's fio randrw in user space: 4 KiB random reads/writes on an
    /// in-memory file behind one rw lock; aggregated MB/s.
    Fio(exp::fio::FioArgs),
    /// Unmodified programs (sysbench, stress-ng, memcached; on request Kyoto Cabinet,
    /// pigz) with glibc's locks vs under klock's LD_PRELOAD interposer, side by side.
    Preload(exp::preload::PreloadArgs),
    /// Producer/consumer hand-off through a bounded queue: klock's Mutex + Condvar
    /// against std's, parking_lot's and glibc's pairs; items/s, fairness, latency.
    Condvar(exp::condvar::CondvarArgs),
    /// Single-thread lock+unlock cost, ns per op.
    Uncontended(exp::uncontended::UncontendedArgs),
    /// A real parking_lot 0.12 user (r2d2's connection pool) built with crates.io's
    /// parking_lot and with klock's `[patch.crates-io]` crate, side by side.
    Realcrate(exp::realcrate::RealCrateArgs),
    /// Seed 001's experiment: time to finish a fixed build-like job per spinlock
    /// at 1x..16x the effective CPUs, with and without noise, plus a pinned row.
    Spin(exp::spin::SpinArgs),
    /// The standard suite (default: --quick); writes report.json/.csv/.html.
    Report(exp::report::ReportArgs),
    /// Re-render a saved JSON report: print its tables, optionally write HTML/CSV.
    Render(RenderArgs),
    /// The machine's costs (cache-line transfer, futex wake-to-running,
    /// sched_yield, atomic RMW), as measured at the start of a report.
    Costs(exp::costs::CostsArgs),
    /// Two JSON reports side by side (A = baseline, B = candidate): ratios, and a flag
    /// where the difference exceeds both runs' spread.
    Compare(crate::compare::CompareArgs),
}

/// Arguments of `lockbench render`.
#[derive(clap::Args, Debug, Clone)]
pub struct RenderArgs {
    /// A JSON file written by `--json` or `report`.
    pub input: std::path::PathBuf,
    /// Write the HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Write the CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
}

/// Runs one parsed command; returns the exit status.
pub fn dispatch(cmd: Command) -> Result<i32, CliError> {
    match cmd {
        Command::List => {
            let mut text = String::new();
            for e in crate::locks::registry() {
                text.push_str(&format!(
                    "{}\n    {} [{}]\n",
                    e.name,
                    e.desc,
                    e.kind.as_str()
                ));
            }
            exp::out(&text);
            Ok(0)
        }
        Command::Mutex(a) => exp::mutex::run(&a),
        Command::Rwlock(a) => exp::rwlock::run(&a),
        Command::Fserver(a) => exp::fserver::run(&a),
        Command::Rwsem(a) => exp::rwsem::run(&a),
        Command::Fio(a) => exp::fio::run(&a),
        Command::Preload(a) => exp::preload::run(&a),
        Command::Uncontended(a) => exp::uncontended::run(&a),
        Command::Condvar(a) => exp::condvar::run(&a),
        Command::Realcrate(a) => exp::realcrate::run(&a),
        Command::Report(a) => exp::report::run(&a),
        Command::Spin(a) => exp::spin::run(&a),
        Command::Compare(a) => crate::compare::run(&a),
        Command::Costs(a) => exp::costs::run(&a),
        Command::Render(a) => {
            let text = std::fs::read_to_string(&a.input)
                .map_err(|e| CliError(format!("cannot read {}: {e}", a.input.display())))?;
            let report = crate::record::Report::from_json(&text).map_err(|e| {
                CliError(format!(
                    "{} is not a lockbench JSON report: {e}",
                    a.input.display()
                ))
            })?;
            // A `report --full` keeps its seed experiments under "seed".
            let seed = serde_json::from_str::<serde_json::Value>(&text)
                .map(|v| exp::report::seeds_from_json(&v["seed"]))
                .unwrap_or_default();
            if let Some(p) = &a.html {
                exp::write_file(
                    p,
                    &crate::html::render_with(&report, &seed.sections, &seed.samples),
                )?;
            }
            exp::out(&crate::table::render_with(
                &report,
                &seed.sections,
                &seed.samples,
                crate::table::color_stdout(),
            ));
            if let Some(p) = &a.csv {
                exp::write_file(p, &crate::record::to_csv(&report.results))?;
            }
            Ok(exp::exit_status(&report))
        }
    }
}

/// Parses `std::env::args`, runs, and returns the process exit status.
pub fn main() -> i32 {
    crate::sys::leave_single_threaded_mode();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            if e.kind() == clap::error::ErrorKind::InvalidSubcommand {
                use clap::CommandFactory;
                let names: Vec<String> = Cli::command()
                    .get_subcommands()
                    .map(|c| c.get_name().to_string())
                    .collect();
                eprintln!("allowed subcommands: {}", names.join(", "));
            }
            return e.exit_code();
        }
    };
    // Before anything reads the effective CPU count (klock computes it once).
    let _quota = match cli.quota.map(crate::quota::QuotaGroup::enter) {
        Some(Ok(g)) => {
            eprintln!(
                "lockbench: running under a CPU quota of {} CPUs (cgroup {})",
                g.cpus,
                g.dir().display()
            );
            Some(g)
        }
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return 2;
        }
        None => None,
    };
    let cmd = cli
        .command
        .unwrap_or_else(|| Command::Report(exp::report::ReportArgs::quick_default()));
    match dispatch(cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

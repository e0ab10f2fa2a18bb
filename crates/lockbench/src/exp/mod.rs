//! Experiments and the path they share: flags ([`RunArgs`], flattened into each
//! experiment's `Args`, or [`CommonArgs`] for the lock experiments), the one
//! interleaved loop with the idle gate ([`interleave`]; [`run_configs`] for the generic
//! runner's [`Config`]s), and the common ending ([`finish`]). How to add an
//! experiment, piece by piece: `docs/lockbench.md`, "Adding an experiment".
//!
//! The shared path lives in [`args`] (flags, value parsers, `--locks`), [`schedule`]
//! (the interleaved loop), [`configs`] (the generic runner's configurations and
//! their records) and here (the common ending: tables, files, exit status); their
//! items are re-exported here, so an experiment names them `exp::...`.

pub mod args;
pub mod condvar;
pub mod configs;
pub mod costs;
pub mod fio;
pub mod fserver;
pub mod handoff;
pub mod mutex;
pub mod preload;
pub mod preload_unc;
pub mod proc;
pub mod realcrate;
pub mod report;
pub mod rwlock;
pub mod rwsem;
pub mod schedule;
pub mod spin;
pub mod uncontended;

pub use args::{
    CliError, CommonArgs, RunArgs, ThreadList, parse_args, parse_counts, parse_duration,
    parse_nonneg, parse_threads, pick, select_locks,
};
pub use configs::{
    Config, PRESETS, RunOptions, Workload, add_single_thread_refs, fill_ceiling, pair_configs,
    run_configs, run_configs_with_events,
};
pub use schedule::{Done, Schedule, Step, interleave};

use std::path::PathBuf;

use crate::record::Report;
use crate::sys::Machine;
use crate::table::Table;

/// Runs `cfgs` with the common options (interleaved, idle-gated), then
/// [`finish`]es: the whole body of a plain `mutex`/`rwlock` experiment.
pub fn run_and_finish(cfgs: &[Config], c: &CommonArgs) -> Result<i32, CliError> {
    let mut machine = Machine::probe_with_costs();
    let results = run_configs(cfgs, &c.run.options(), &mut machine);
    let report = Report {
        machine,
        command: command_line(),
        results,
    };
    let status = finish(&report, c.run.json.as_ref(), c.csv.as_ref())?;
    if c.explain {
        out(&crate::explain::explain(&report));
    }
    Ok(status)
}

/// Common ending of an experiment: print tables (unless `quiet` and no terminal is
/// wanted), write `--json`/`--csv`, and return the exit status (1 if any violation).
pub fn finish(
    report: &Report,
    json: Option<&PathBuf>,
    csv: Option<&PathBuf>,
) -> Result<i32, CliError> {
    out(&crate::table::render(report));
    if let Some(p) = json {
        write_file(p, &report.to_json())?;
    }
    if let Some(p) = csv {
        write_file(p, &crate::record::to_csv(&report.results))?;
    }
    Ok(exit_status(report))
}

/// Tables as terminal text, one after the other.
pub fn text(tables: &[Table]) -> String {
    tables.iter().map(Table::to_text).collect()
}

/// Writes `s` to stdout, ignoring errors (a closed pipe such as `| head` must not
/// turn into a panic after the measurements are done).
pub fn out(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// 1 if the report holds any mutual-exclusion violation, else 0.
pub fn exit_status(report: &Report) -> i32 {
    if report.violations() > 0 {
        eprintln!(
            "error: mutual-exclusion violations detected ({} in total); see the `violations` column",
            report.violations()
        );
        1
    } else {
        0
    }
}

/// Writes `contents` to `path`, creating parent directories.
pub fn write_file(path: &PathBuf, contents: &str) -> Result<(), CliError> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)
            .map_err(|e| CliError(format!("cannot create {}: {e}", d.display())))?;
    }
    std::fs::write(path, contents)
        .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))
}

/// Writes `v` as pretty JSON to `path`, if given.
pub fn write_json<T: serde::Serialize>(path: Option<&PathBuf>, v: &T) -> Result<(), CliError> {
    let Some(p) = path else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| CliError(format!("cannot encode JSON: {e}")))?;
    write_file(p, &text)
}

/// The first line of a seed experiment's output: the machine and the settings.
pub fn header_line(name: &str, m: &Machine, runs: u32) -> String {
    format!(
        "\nlockbench {name}: {} | effective CPUs {} | kernel {}{} | {runs} runs per configuration, interleaved | KLOCK_RWSEM_READER={}\n",
        m.cpu_model,
        m.effective_cpus,
        m.kernel,
        if m.hypervisor { " (VM)" } else { "" },
        crate::locks::klock::rwsem_reader_mode(),
    )
}

/// The command line as one string, for reports.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

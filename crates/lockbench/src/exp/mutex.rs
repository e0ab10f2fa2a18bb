//! `lockbench mutex`: the contended counter loop, locks × thread counts.

use std::time::Duration;

use super::{CliError, CommonArgs, Config, select_locks};
use crate::locks::{LockEntry, LockKind};

/// Arguments of `lockbench mutex`.
#[derive(clap::Args, Clone, Debug)]
pub struct MutexArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Builds the mutex configurations for `locks × threads` (every thread a writer).
pub fn configs(
    experiment: &str,
    locks: &[LockEntry],
    threads: &[usize],
    workload: &super::Workload,
    duration: Duration,
    noise: usize,
) -> Vec<Config> {
    let pairs: Vec<(usize, usize)> = threads.iter().map(|&t| (0, t)).collect();
    super::pair_configs(experiment, locks, &pairs, false, workload, duration, noise)
}

/// Runs `lockbench mutex`; returns the exit status.
pub fn run(args: &MutexArgs) -> Result<i32, CliError> {
    let c = &args.common;
    let locks = select_locks(
        &c.locks,
        &[LockKind::Mutex, LockKind::RwLock],
        &[LockKind::Mutex],
    )?;
    let w = c.workload()?;
    let cfgs = configs(
        "mutex",
        &locks,
        &c.threads.0,
        &w,
        c.run.window(),
        c.noise as usize,
    );
    super::run_and_finish(&cfgs, c)
}

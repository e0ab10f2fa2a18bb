//! `lockbench rwlock`: readers check a torn-read invariant while writers update two
//! fields; per-class metrics (`readers`, `writers`).

use std::time::Duration;

use super::{CliError, CommonArgs, Config, select_locks};
use crate::locks::{LockEntry, LockKind};

/// Arguments of `lockbench rwlock`.
#[derive(clap::Args, Clone, Debug)]
pub struct RwArgs {
    /// Shared options (`--threads T` means T/2 readers and T − T/2 writers).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Reader threads (with --writers: one configuration R+W, replacing --threads).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub readers: Option<u32>,
    /// Writer threads (with --readers).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub writers: Option<u32>,
}

/// Builds reader/writer configurations for `locks × (readers, writers)` pairs.
pub fn configs(
    experiment: &str,
    locks: &[LockEntry],
    pairs: &[(usize, usize)],
    workload: &super::Workload,
    duration: Duration,
    noise: usize,
) -> Vec<Config> {
    super::pair_configs(experiment, locks, pairs, true, workload, duration, noise)
}

/// The (readers, writers) pairs requested by `args`.
pub fn pairs(args: &RwArgs) -> Result<Vec<(usize, usize)>, CliError> {
    match (args.readers, args.writers) {
        (Some(r), Some(w)) if r + w >= 1 => Ok(vec![(r as usize, w as usize)]),
        (Some(_), Some(_)) => Err(CliError(
            "--readers + --writers must be at least 1 thread".into(),
        )),
        (None, None) => Ok(args.common.threads.0.iter().map(|&t| (t / 2, t - t / 2)).collect()),
        _ => Err(CliError(
            "give both --readers and --writers, or neither (then --threads T splits T/2 readers, T-T/2 writers)"
                .into(),
        )),
    }
}

/// Runs `lockbench rwlock`; returns the exit status.
pub fn run(args: &RwArgs) -> Result<i32, CliError> {
    let c = &args.common;
    let locks = select_locks(&c.locks, &[LockKind::RwLock], &[LockKind::RwLock])?;
    let w = c.workload()?;
    let p = pairs(args)?;
    let cfgs = configs("rwlock", &locks, &p, &w, c.run.window(), c.noise as usize);
    super::run_and_finish(&cfgs, c)
}

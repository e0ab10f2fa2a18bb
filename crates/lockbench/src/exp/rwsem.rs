//! `lockbench rwsem`: seed 003's rwsem microbenchmark in user space. N readers and N
//! writers (2N writers for the all-writers configurations) run on the generic runner
//! ([`crate::runner`]) at pause or sleep critical-section loads; the output is the
//! seed's three tables (ops per thread, slow-path counts from klock's counters, all
//! writers against half writers) beside the seed's own numbers. Options, tables and
//! the `KLOCK_RWSEM_READER` tunable: `docs/lockbench.md`, "rwsem (seed 003)".

use std::path::PathBuf;
use std::time::Duration;

use super::{CliError, Config, RunArgs, ThreadList, Workload, parse_nonneg, select_locks};
use crate::chart::Value;
use crate::locks::{LockEntry, LockKind};
use crate::record::{Record, Report};
use crate::stats::{MinAvgMax, median};
use crate::sys::Machine;
use crate::table::{Section, Table, group_thousands};

/// Experiment name of the N readers + N writers records.
pub const EXPERIMENT: &str = "rwsem";
/// Experiment name of the all-writers (2N writers) records.
pub const EXPERIMENT_ALL_WRITERS: &str = "rwsem_allwriters";
/// Default `--locks`.
pub const DEFAULT_LOCKS: &str =
    "klock_rwsem,klock_rwsem_nospin,std_rw,parking_lot_rw,pthread_rw,pthread_rw_wpref";

/// Arguments of `lockbench rwsem`.
#[derive(clap::Args, Clone, Debug)]
#[command(
    mut_arg("duration", |a| a.help(
        "Measurement window per run, seconds (decimal, > 0, <= 3600; the seed used 10)"
    )),
    mut_arg("json", |a| a.help(
        "Write the results as JSON to FILE (a report `lockbench render` reads, plus the \
         slow-path counts under `rwsem_slowpath`)"
    ))
)]
pub struct RwsemArgs {
    /// Comma-separated pair counts N (N readers + N writers each), each 1..=512.
    #[arg(long, value_parser = parse_pairs, default_value = "4,18")]
    pub pairs: ThreadList,
    /// Comma-separated critical-section loads: a number of pause instructions
    /// (0..=100000) or sleep<N>us (N 1..=1000000).
    #[arg(long, value_parser = parse_loads, default_value = "1,10,50,100,sleep1us")]
    pub loads: LoadList,
    /// Comma-separated rwlock names (see `lockbench list`).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_LOCKS)]
    pub locks: Vec<String>,
    /// Busy work outside the critical section, ns (the seed's loop had none).
    #[arg(long, value_parser = parse_nonneg, default_value = "0", allow_hyphen_values = true)]
    pub ncs_ns: f64,
    /// Skip the all-writers configurations (and the % change table).
    #[arg(long)]
    pub no_all_writers: bool,
    /// Window, repetitions, JSON, progress, idle gate.
    #[command(flatten)]
    pub run: RunArgs,
    /// CPU-hog threads running beside the workload (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub noise: u32,
    /// Write the results as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// A critical-section load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// This many `std::hint::spin_loop()` calls.
    Pauses(u64),
    /// A sleep of this many µs.
    SleepUs(u64),
}

impl Load {
    /// The name used on the command line and as the records' workload: `pause10`,
    /// `sleep1us`.
    pub fn workload_name(self) -> String {
        match self {
            Load::Pauses(n) => format!("pause{n}"),
            Load::SleepUs(n) => format!("sleep{n}us"),
        }
    }
    /// The label in the tables, as the seed prints it: `10`, `1us sleep`.
    pub fn label(self) -> String {
        match self {
            Load::Pauses(n) => n.to_string(),
            Load::SleepUs(n) => format!("{n}us sleep"),
        }
    }
    /// The runner workload for this load.
    pub fn workload(self, ncs_ns: f64) -> Workload {
        let (cs_pauses, cs_sleep_us) = match self {
            Load::Pauses(n) => (n, 0.0),
            Load::SleepUs(n) => (0, n as f64),
        };
        Workload {
            name: self.workload_name(),
            cs_ns: 0.0,
            ncs_ns,
            cs_sleep_us,
            cs_pauses,
        }
    }
}

/// A parsed `--loads` list.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadList(pub Vec<Load>);

/// Parses `1,10,sleep1us` into loads.
///
/// ```
/// use lockbench::exp::rwsem::{Load, parse_loads};
/// assert_eq!(parse_loads("1,sleep1us").unwrap().0, vec![Load::Pauses(1), Load::SleepUs(1)]);
/// assert!(parse_loads("fast").is_err());
/// ```
pub fn parse_loads(s: &str) -> Result<LoadList, String> {
    let allowed = "allowed are pause counts 0..=100000 and sleep<N>us with N 1..=1000000, \
                   comma-separated, e.g. 1,10,50,100,sleep1us";
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let load = if let Some(n) = part
            .strip_prefix("sleep")
            .and_then(|r| r.strip_suffix("us"))
        {
            match n.parse::<u64>() {
                Ok(n) if (1..=1_000_000).contains(&n) => Load::SleepUs(n),
                _ => return Err(format!("bad load '{part}': {allowed}")),
            }
        } else {
            match part.parse::<u64>() {
                Ok(n) if n <= 100_000 => Load::Pauses(n),
                _ => return Err(format!("bad load '{part}': {allowed}")),
            }
        };
        if !v.contains(&load) {
            v.push(load);
        }
    }
    if v.is_empty() {
        return Err(format!("empty load list: {allowed}"));
    }
    Ok(LoadList(v))
}

/// Parses `4,18` into pair counts (each 1..=512).
///
/// ```
/// assert_eq!(lockbench::exp::rwsem::parse_pairs("4,18").unwrap().0, vec![4, 18]);
/// assert!(lockbench::exp::rwsem::parse_pairs("600").is_err());
/// ```
pub fn parse_pairs(s: &str) -> Result<ThreadList, String> {
    let allowed =
        "allowed are comma-separated integers 1..=512 (N readers + N writers each), e.g. 4,18";
    super::parse_counts(s, 512, "pair", allowed)
}

/// Builds the configurations: per pair count N, load and lock, N readers + N writers,
/// and (with `all_writers`) 2N writers.
pub fn configs(
    locks: &[LockEntry],
    pairs: &[usize],
    loads: &[Load],
    ncs_ns: f64,
    duration: Duration,
    noise: usize,
    all_writers: bool,
) -> Vec<Config> {
    let mut v = Vec::new();
    for &n in pairs {
        for &load in loads {
            for e in locks {
                let c = Config {
                    experiment: EXPERIMENT.into(),
                    entry: *e,
                    threads: 2 * n,
                    readers: n,
                    rw: true,
                    workload: load.workload(ncs_ns),
                    duration,
                    noise,
                    implicit: false,
                };
                if all_writers {
                    v.push(Config {
                        experiment: EXPERIMENT_ALL_WRITERS.into(),
                        readers: 0,
                        rw: false,
                        ..c.clone()
                    });
                }
                v.push(c);
            }
        }
    }
    v
}

/// Slow-path counts of one N readers + N writers configuration (klock counters, median
/// over runs; `None` without `--features stats` or for a lock without counters).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SlowPath {
    /// Lock name.
    pub lock: String,
    /// Total threads (2N).
    pub threads: usize,
    /// Workload name (`pause10`, `sleep1us`).
    pub workload: String,
    /// Reader acquisitions in the slow path (`rwsem_rlock_slow`).
    pub reader_slow: Option<f64>,
    /// Writer acquisitions in the slow path (`rwsem_wlock_slow`).
    pub writer_slow: Option<f64>,
    /// Reader acquisitions by the fast path (`rwsem_rlock_fast`).
    pub reader_fast: Option<f64>,
    /// Writer acquisitions by the fast path (`rwsem_wlock_fast`).
    pub writer_fast: Option<f64>,
}

/// Whether `lock` reports klock's rwsem counters.
pub fn has_counters(lock: &str) -> bool {
    lock.starts_with("klock_")
}

/// Slow-path rows from the per-run counter deltas that
/// [`run_configs_with_events`](super::run_configs_with_events) returns.
pub fn slowpath(cfgs: &[Config], events: &[Vec<klock::stat::Snapshot>]) -> Vec<SlowPath> {
    use klock::stat::Event as E;
    cfgs.iter()
        .zip(events)
        .filter(|(c, _)| c.experiment == EXPERIMENT)
        .map(|(c, ev)| {
            let on = klock::stat::ENABLED && has_counters(c.entry.name) && !ev.is_empty();
            let m =
                |e: E| on.then(|| median(&ev.iter().map(|s| s.get(e) as f64).collect::<Vec<_>>()));
            SlowPath {
                lock: c.entry.name.into(),
                threads: c.threads,
                workload: c.workload.name.clone(),
                reader_slow: m(E::RwReadSlow),
                writer_slow: m(E::RwWriteSlow),
                reader_fast: m(E::RwReadFast),
                writer_fast: m(E::RwWriteFast),
            }
        })
        .collect()
}

/// One seed row: (load, reader min/avg/max, writer min/avg/max, reader slow, writer
/// slow, all-writers avg, half-writers avg).
type SeedRow = (Load, [u64; 3], [u64; 3], u64, u64, u64, u64);

/// Seed 003, 2-socket 36-core (72 threads), patched 4.14: 18 readers + 18 writers, 10 s.
#[rustfmt::skip]
pub const SEED_PATCHED: &[SeedRow] = &[
    (Load::Pauses(1), [2_079_544, 2_284_896, 2_457_118], [713_537, 914_695, 1_166_480], 3_987_189, 3_992_714, 1_183_273, 914_695),
    (Load::Pauses(10), [2_239_922, 3_126_189, 4_076_386], [249_201, 415_814, 612_465], 1_460_878, 1_463_589, 1_035_676, 415_814),
    (Load::Pauses(50), [1_826_276, 2_163_704, 2_842_305], [72_111, 198_479, 359_692], 609_273, 610_224, 577_067, 198_479),
    (Load::Pauses(100), [1_587_516, 1_899_778, 2_256_065], [14_586, 251_545, 654_608], 202_764, 201_770, 392_179, 251_545),
    (Load::SleepUs(1), [8_034, 8_267, 8_555], [57_555, 64_190, 70_046], 148_805, 1_155_410, 35_823, 64_190),
];

/// Seed 003, same machine, unpatched 4.14 (no slow-path table in the seed: zeros).
#[rustfmt::skip]
pub const SEED_UNPATCHED: &[SeedRow] = &[
    (Load::Pauses(1), [9_521, 9_521, 9_522], [9_534, 397_336, 710_196], 0, 0, 1_135_832, 397_336),
    (Load::Pauses(10), [8_045, 8_046, 8_046], [8_047, 209_955, 489_798], 0, 0, 989_950, 209_955),
    (Load::Pauses(50), [7_730, 7_730, 7_731], [7_730, 172_723, 347_213], 0, 0, 593_352, 172_723),
    (Load::Pauses(100), [5_037, 5_038, 5_039], [5_037, 163_691, 694_101], 0, 0, 369_227, 163_691),
    (Load::SleepUs(1), [230, 231, 232], [230, 97_288, 822_645], 0, 0, 49_437, 97_288),
];

/// Label of the seed's numbers wherever they are quoted.
pub const SEED_LABEL: &str = "seed 003, 2-socket 36-core, patched 4.14";

fn seed_row(table: &[SeedRow], load: Load) -> Option<&SeedRow> {
    table.iter().find(|r| r.0 == load)
}

fn mam(v: [u64; 3]) -> String {
    v.map(|x| group_thousands(x as f64)).join("/")
}

fn fmt_mam(m: &MinAvgMax) -> String {
    mam([m.min, m.avg, m.max].map(|x| x.round() as u64))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

fn pct_change(all: f64, half: f64) -> String {
    if all > 0.0 {
        format!("{:+.1}%", 100.0 * (half - all) / all)
    } else {
        "-".into()
    }
}

fn find<'a>(
    recs: &'a [Record],
    exp: &str,
    lock: &str,
    threads: usize,
    load: Load,
) -> Option<&'a Record> {
    let w = load.workload_name();
    recs.iter().find(|r| {
        r.experiment == exp && r.lock == lock && r.threads == threads && r.params.workload == w
    })
}

/// What the tables are built from: the records, the slow-path rows and the settings.
pub struct View<'a> {
    /// `rwsem` and `rwsem_allwriters` records.
    pub recs: &'a [Record],
    /// Slow-path rows.
    pub slow: &'a [SlowPath],
    /// Lock names, in row order.
    pub locks: &'a [String],
    /// Pair counts N.
    pub pairs: &'a [usize],
    /// Critical-section loads.
    pub loads: &'a [Load],
    /// Window, seconds.
    pub duration_s: f64,
}

impl View<'_> {
    /// Seed 003's three tables per pair count (ops per thread, slow-path counts, all
    /// writers against half writers) from our records, then the seed's own numbers.
    pub fn tables(&self) -> Vec<Table> {
        let mut s: Vec<Table> = Vec::new();
        for &n in self.pairs {
            s.push(self.ops_table(n));
            s.push(self.slow_table(n));
            let t3 = self.all_writers_table(n);
            if !t3.rows.is_empty() {
                s.push(t3);
            }
        }
        s.extend(seed_table_list());
        s
    }

    /// Every (load, lock) that has a record of `exp` at `threads`, in table order.
    fn rows(&self, exp: &str, threads: usize) -> Vec<(Load, &String, &Record)> {
        let mut v = Vec::new();
        for &load in self.loads {
            for l in self.locks {
                if let Some(r) = find(self.recs, exp, l, threads, load) {
                    v.push((load, l, r));
                }
            }
        }
        v
    }

    /// Table 1: ops per thread of each class, and R:W beside the seed's.
    fn ops_table(&self, n: usize) -> Table {
        let mut t = Table::new(
            format!(
                "rwsem {n} readers + {n} writers: locking ops per thread in {} s, min/avg/max (median run); R:W = avg reader ops / avg writer ops",
                self.duration_s
            ),
            &[
                "CS load",
                "lock",
                "reader ops/thread",
                "writer ops/thread",
                "R:W",
                "seed R:W (patched)",
                "seed R:W (unpatched)",
            ],
        );
        for (load, l, r) in self.rows(EXPERIMENT, 2 * n) {
            let seed_rw = |tab: &[SeedRow]| {
                seed_row(tab, load).map_or("-".into(), |r| ratio(r.1[1] as f64, r.2[1] as f64))
            };
            let (rd, wr) = (
                r.readers.clone().unwrap_or_default(),
                r.writers.clone().unwrap_or_default(),
            );
            t.rows.push(vec![
                load.label(),
                l.clone(),
                fmt_mam(&rd.ops_per_thread),
                fmt_mam(&wr.ops_per_thread),
                ratio(rd.ops_per_thread.avg, wr.ops_per_thread.avg),
                seed_rw(SEED_PATCHED),
                seed_rw(SEED_UNPATCHED),
            ]);
        }
        t
    }

    /// Table 2: slow-path ops per class (klock's counters), or why there are none.
    fn slow_table(&self, n: usize) -> Table {
        let none = |why: &str| {
            let mut t = Table::new(
                format!("rwsem {n} readers + {n} writers: slow-path locking ops"),
                &["reader/writer slowpath ops"],
            );
            t.rows.push(vec![why.to_string()]);
            t
        };
        if !klock::stat::ENABLED && self.locks.iter().any(|l| has_counters(l)) {
            return none("n/a (build with --features stats)");
        }
        let mut t = Table::new(
            format!(
                "rwsem {n} readers + {n} writers: slow-path locking ops per run (klock counters, median of runs); % = share of that class's acquisitions"
            ),
            &[
                "CS load",
                "lock",
                "reader slowpath ops",
                "writer slowpath ops",
                "R:W slow",
                "seed R:W slow (patched)",
            ],
        );
        let cell = |slow: Option<f64>, fast: Option<f64>| match (slow, fast) {
            (Some(sl), Some(f)) if sl + f > 0.0 => {
                format!("{} ({:.1}%)", group_thousands(sl), 100.0 * sl / (sl + f))
            }
            (Some(_), Some(_)) => "0".into(),
            _ => "n/a (build with --features stats)".into(),
        };
        for &load in self.loads {
            let seed =
                seed_row(SEED_PATCHED, load).map_or("-".into(), |r| ratio(r.3 as f64, r.4 as f64));
            let w = load.workload_name();
            for l in self.locks.iter().filter(|l| has_counters(l)) {
                let Some(p) = (self.slow.iter())
                    .find(|p| &p.lock == l && p.threads == 2 * n && p.workload == w)
                else {
                    continue;
                };
                t.rows.push(vec![
                    load.label(),
                    l.clone(),
                    cell(p.reader_slow, p.reader_fast),
                    cell(p.writer_slow, p.writer_fast),
                    match (p.reader_slow, p.writer_slow) {
                        (Some(a), Some(b)) => ratio(a, b),
                        _ => "n/a".into(),
                    },
                    seed.clone(),
                ]);
            }
        }
        if t.rows.is_empty() {
            return none("no klock lock selected; only klock locks have counters");
        }
        t
    }

    /// Table 3: mean writer ops per thread, all writers against half writers.
    fn all_writers_table(&self, n: usize) -> Table {
        let t = 2 * n;
        let mut t3 = Table::new(
            format!(
                "rwsem: mean writer ops per thread, {t} writers (all) vs {n} readers + {n} writers (half)"
            ),
            &[
                "CS load",
                "lock",
                "all writers",
                "half writers",
                "% change",
                "seed % (patched)",
                "seed % (unpatched)",
            ],
        );
        for (load, l, all) in self.rows(EXPERIMENT_ALL_WRITERS, t) {
            let Some(half) = find(self.recs, EXPERIMENT, l, t, load) else {
                continue;
            };
            let seed_pct = |tab: &[SeedRow]| {
                seed_row(tab, load).map_or("-".into(), |r| pct_change(r.5 as f64, r.6 as f64))
            };
            let a = all.ops_per_thread.avg;
            let h = half.writers.as_ref().map_or(0.0, |w| w.ops_per_thread.avg);
            t3.rows.push(vec![
                load.label(),
                l.clone(),
                group_thousands(a),
                group_thousands(h),
                pct_change(a, h),
                seed_pct(SEED_PATCHED),
                seed_pct(SEED_UNPATCHED),
            ]);
        }
        t3
    }

    /// The report section: seed 003's tables and, per pair count, total throughput
    /// against the critical-section load.
    pub fn section(&self) -> Section {
        let x_labels: Vec<String> = self.loads.iter().map(|l| l.label()).collect();
        let axes = (
            "critical-section load (pause instructions, or sleep)",
            "Mops/s (median, bars: runs' min-max)",
        );
        let mut charts = Vec::new();
        for &n in self.pairs {
            let title = |g: &crate::html::Group| {
                format!(
                    "rwsem {n} readers + {n} writers: {}: total throughput",
                    g.title
                )
            };
            charts.extend(crate::html::lines(
                title,
                axes,
                &x_labels,
                self.locks,
                |l, i| {
                    find(self.recs, EXPERIMENT, l, 2 * n, self.loads[i])
                        .map(|r| Value::with_runs(r.throughput_mops, &r.runs_mops))
                },
            ));
        }
        Section {
            title: "rwsem (seed 003): N readers + N writers on one rw lock".into(),
            notes: vec![format!(
                "{} s windows; the critical section is a number of pause instructions or a 1 us sleep, nothing outside. The seed ran 18 + 18 threads for 10 s on a 2-socket 36-core machine: compare shapes (R:W ratios, signs of the % change), not absolute counts. Reader policy KLOCK_RWSEM_READER={}.",
                self.duration_s,
                crate::locks::klock::rwsem_reader_mode()
            )],
            tables: self.tables(),
            charts,
        }
    }
}

/// The seed's own tables (patched and unpatched 4.14).
pub fn seed_table_list() -> Vec<Table> {
    let mut s = Vec::new();
    for (label, tab) in [
        (SEED_LABEL, SEED_PATCHED),
        ("seed 003, 2-socket 36-core, unpatched 4.14", SEED_UNPATCHED),
    ] {
        let patched = std::ptr::eq(tab, SEED_PATCHED);
        let mut t = Table::new(
            format!("{label}: 18 readers + 18 writers, 10 s (quoted for shape, not measured here)"),
            &[
                "CS load",
                "reader ops/thread",
                "writer ops/thread",
                "R:W",
                "reader slowpath",
                "writer slowpath",
                "all writers",
                "half writers",
                "% change",
            ],
        );
        let n = |x: u64| group_thousands(x as f64);
        let sp = |x: u64| if patched { n(x) } else { "-".into() };
        for r in tab {
            t.rows.push(vec![
                r.0.label(),
                mam(r.1),
                mam(r.2),
                ratio(r.1[1] as f64, r.2[1] as f64),
                sp(r.3),
                sp(r.4),
                n(r.5),
                n(r.6),
                pct_change(r.5 as f64, r.6 as f64),
            ]);
        }
        s.push(t);
    }
    s
}

/// Planned progress units of a whole `rwsem` run.
pub fn planned_units(a: &RwsemArgs) -> u64 {
    let per_lock = a.pairs.0.len() * a.loads.0.len() * if a.no_all_writers { 1 } else { 2 };
    (per_lock * a.locks.len()) as u64
        * a.run.runs as u64
        * crate::progress::run_units(a.run.window())
}

/// What [`measure`] returns: records, slow-path rows, lock names.
pub type Measured = (Vec<Record>, Vec<SlowPath>, Vec<String>);

/// Runs every configuration: the records (`rwsem` and `rwsem_allwriters`), the
/// slow-path rows and the lock names.
pub fn measure(a: &RwsemArgs, machine: &mut Machine) -> Result<Measured, CliError> {
    let locks = select_locks(&a.locks, &[LockKind::RwLock], &[LockKind::RwLock])?;
    let names: Vec<String> = locks.iter().map(|e| e.name.to_string()).collect();
    let cfgs = configs(
        &locks,
        &a.pairs.0,
        &a.loads.0,
        a.ncs_ns,
        a.run.window(),
        a.noise as usize,
        !a.no_all_writers,
    );
    let (results, events) = super::run_configs_with_events(&cfgs, &a.run.options(), machine);
    let slow = slowpath(&cfgs, &events);
    Ok((results, slow, names))
}

/// Runs `lockbench rwsem`; returns the exit status.
pub fn run(a: &RwsemArgs) -> Result<i32, CliError> {
    let mut machine = Machine::probe();
    let (results, slow, names) = measure(a, &mut machine)?;
    let report = Report {
        machine,
        command: super::command_line(),
        results,
    };
    super::out(&super::header_line("rwsem", &report.machine, a.run.runs));
    let view = View {
        recs: &report.results,
        slow: &slow,
        locks: &names,
        pairs: &a.pairs.0,
        loads: &a.loads.0,
        duration_s: a.run.duration,
    };
    super::out(&super::text(&view.tables()));
    super::out(&crate::table::exclusion_line(report.violations()));
    // The report `lockbench render` reads, plus the slow-path rows.
    let (m, c, r) = (&report.machine, &report.command, &report.results);
    let j = serde_json::json!({"machine": m, "command": c, "results": r, "rwsem_slowpath": slow});
    super::write_json(a.run.json.as_ref(), &j)?;
    if let Some(p) = &a.csv {
        super::write_file(p, &crate::record::to_csv(&report.results))?;
    }
    Ok(super::exit_status(&report))
}

#[cfg(test)]
mod tests {
    use super::*;
    fn parse(args: &str) -> Result<RwsemArgs, String> {
        super::super::parse_args(&args.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn defaults_match_the_seed() {
        let a = parse("").unwrap();
        assert_eq!(a.pairs.0, vec![4, 18]);
        assert_eq!(
            a.loads.0,
            vec![
                Load::Pauses(1),
                Load::Pauses(10),
                Load::Pauses(50),
                Load::Pauses(100),
                Load::SleepUs(1)
            ]
        );
        assert_eq!(a.locks.join(","), DEFAULT_LOCKS);
        // Every default lock is a registered rwlock.
        assert!(select_locks(&a.locks, &[LockKind::RwLock], &[]).is_ok());
    }

    #[test]
    fn bad_flags_say_what_is_allowed() {
        for (args, allowed) in [
            ("--loads 1,fast", "sleep<N>us"),
            ("--loads 1,fast", "0..=100000"),
            ("--loads sleep0us", "1..=1000000"),
            ("--pairs 0", "1..=512"),
            ("--duration 0", "seconds > 0"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(allowed), "{e}");
        }
        for (lock, why, allowed) in [
            ("std", "cannot be used here", "klock_rwsem"),
            ("nope", "known locks", "pthread_rw_wpref"),
        ] {
            let e = run(&parse(&format!("--locks {lock}")).unwrap())
                .unwrap_err()
                .0;
            assert!(e.contains(why) && e.contains(allowed), "{e}");
        }
    }

    #[test]
    fn tiny_run_produces_the_three_tables() {
        let a = parse("--pairs 1 --loads 1,sleep1us --locks klock_rwsem,parking_lot_rw --duration 0.05 --runs 1 --quiet --no-idle-gate")
            .unwrap();
        let locks = select_locks(&a.locks, &[LockKind::RwLock], &[]).unwrap();
        let cfgs = configs(&locks, &a.pairs.0, &a.loads.0, 0.0, a.run.window(), 0, true);
        assert_eq!(cfgs.len(), 2 * 2 * 2);
        let (recs, events) =
            super::super::run_configs_with_events(&cfgs, &a.run.options(), &mut Machine::default());
        assert_eq!(events.len(), cfgs.len());
        assert!(recs.iter().all(|r| r.violations == 0));
        let half: Vec<_> = recs.iter().filter(|r| r.experiment == EXPERIMENT).collect();
        assert_eq!(half.len(), 4);
        for r in &half {
            let (rd, wr) = (r.readers.as_ref().unwrap(), r.writers.as_ref().unwrap());
            assert_eq!((rd.threads, wr.threads), (1, 1));
            assert!(
                rd.ops_per_thread.avg + wr.ops_per_thread.avg > 0.0,
                "{}",
                r.lock
            );
        }
        let slow = slowpath(&cfgs, &events);
        assert_eq!(slow.len(), 4);
        let k = slow.iter().find(|p| p.lock == "klock_rwsem").unwrap();
        assert_eq!(k.reader_slow.is_some(), klock::stat::ENABLED);
        let names: Vec<String> = a.locks.clone();
        let view = View {
            recs: &recs,
            slow: &slow,
            locks: &names,
            pairs: &[1],
            loads: &a.loads.0,
            duration_s: 0.05,
        };
        let text = super::super::text(&view.tables());
        assert!(text.contains("locking ops per thread"), "{text}");
        assert!(text.contains("slow-path locking ops"), "{text}");
        assert!(text.contains("all writers"), "{text}");
        assert!(text.contains("1us sleep"), "{text}");
        assert!(text.contains(SEED_LABEL), "{text}");
        // The seed's own % change is quoted beside ours.
        assert!(text.contains("-22.7%") && text.contains("+79.2%"), "{text}");
        if !klock::stat::ENABLED {
            assert!(text.contains("n/a (build with --features stats)"), "{text}");
        }
    }

    #[test]
    fn seed_numbers_reproduce_the_seed_percentages() {
        let p: Vec<String> = SEED_PATCHED
            .iter()
            .map(|r| pct_change(r.5 as f64, r.6 as f64))
            .collect();
        assert_eq!(p, ["-22.7%", "-59.9%", "-65.6%", "-35.9%", "+79.2%"]);
        let u: Vec<String> = SEED_UNPATCHED
            .iter()
            .map(|r| pct_change(r.5 as f64, r.6 as f64))
            .collect();
        assert_eq!(u, ["-65.0%", "-78.8%", "-70.9%", "-55.7%", "+96.8%"]);
    }
}

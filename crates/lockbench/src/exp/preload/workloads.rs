//! The workloads table: one row per program the `preload` experiment measures, with
//! its command line, how much work a run does, and how its metric is read. Adding a
//! workload is adding a row (and, for a new kind of output, a parser).

use super::parsers::Parser;
use crate::exp::proc::in_path;
use crate::exp::{CliError, pick};

/// One workload: what to run, for how long, and how to read its metric.
///
/// `command` and `server` are a program and its arguments, split at whitespace, with
/// placeholders filled for each run: `{t}` the thread count, `{secs}` `--duration`
/// rounded up to whole seconds, `{per}` the run's fixed work split over the threads,
/// `{port}` the server's loopback port, `{root}` `-u root` when running as root,
/// `{side}` `glibc` or `klock_preload`, `{pid}` lockbench's process id, `{input}` the
/// generated input file ([`INPUT_BYTES`]; the program writes `{input}.gz` beside it),
/// and `{scratch}/NAME` a file of this run in the scratch directory (removed before
/// and after the run). A program `@NAME` is one of lockbench's own C programs
/// ([`super::cprog`]), built next to lockbench before the runs.
#[derive(Debug, PartialEq, Eq)]
pub struct Workload {
    /// The `--workloads` name.
    pub name: &'static str,
    /// The metric's unit.
    pub unit: &'static str,
    /// How much a run does.
    pub work: Work,
    /// How the metric is read from the run.
    pub parser: Parser,
    /// The program's name in errors.
    pub label: &'static str,
    /// The measured command; preloaded unless there is a `server`.
    pub command: &'static str,
    /// A server started first, preloaded, that `command` drives (not preloaded); the
    /// run waits until it accepts connections on `{port}`.
    pub server: Option<&'static str>,
    /// The Debian package of each program: the server's first, then the command's.
    pub packages: &'static [&'static str],
    /// Single-threaded: runs once, at T = 1, whatever `--threads` says.
    pub single: bool,
    /// With `--lockdep`, also run under ThreadSanitizer and helgrind (a built `@`
    /// program only).
    pub sanitize: bool,
}

/// The defaults of the fields most rows leave alone.
const ROW: Workload = Workload {
    name: "",
    unit: "",
    work: Work::Timed,
    parser: Parser::SysbenchThreads,
    label: "",
    command: "",
    server: None,
    packages: &[],
    single: false,
    sanitize: false,
};

/// How much work a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// `--duration` seconds.
    Timed,
    /// `--mutex-ops` lock operations, split evenly over the threads.
    MutexOps,
    /// `--kc-records` records, split evenly over the threads.
    KcRecords,
    /// The generated input of [`INPUT_BYTES`].
    Input,
    /// `--nested-iters` iterations, split evenly over the threads.
    NestedIters,
    /// The program's own fixed amount (its command line says how much).
    Own,
}

/// The settings a run's work comes from.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// `--duration`, seconds.
    pub duration: f64,
    /// `--mutex-ops`.
    pub mutex_ops: u64,
    /// `--kc-records`.
    pub kc_records: u64,
    /// `--nested-iters`.
    pub nested_iters: u64,
}

impl Settings {
    /// The settings of a side that does `1/div` of the work (the sanitizers'): the
    /// fixed amounts divided by `div` (at least 1).
    pub fn scaled(&self, div: u64) -> Settings {
        let d = |n: u64| (n / div.max(1)).max(1);
        Settings {
            mutex_ops: d(self.mutex_ops),
            kc_records: d(self.kc_records),
            nested_iters: d(self.nested_iters),
            ..*self
        }
    }
}

impl Work {
    /// (per thread, total) of a run with `t` threads: the total is a whole multiple
    /// of the share per thread (at least 1); both 0 when timed.
    pub fn split(self, s: &Settings, t: usize) -> (u64, u64) {
        let per = |n: u64| (n / t as u64).max(1);
        match self {
            Work::Timed => (0, 0),
            Work::MutexOps => (per(s.mutex_ops), per(s.mutex_ops) * t as u64),
            Work::KcRecords => (per(s.kc_records), per(s.kc_records) * t as u64),
            Work::Input => (0, INPUT_BYTES as u64),
            Work::NestedIters => (per(s.nested_iters), per(s.nested_iters) * t as u64),
            Work::Own => (0, 0),
        }
    }
}

/// Size of the generated input (`{input}`).
pub const INPUT_BYTES: usize = 20 << 20;

/// Every workload, in table order.
#[rustfmt::skip]
pub const ALL: [Workload; 14] = [
    Workload { name: "sysbench-threads", unit: "events/s", work: Work::Timed, parser: Parser::SysbenchThreads,
        label: "sysbench threads", packages: &["sysbench"], server: None,
        command: "sysbench threads --threads={t} --thread-locks=1 --thread-yields=100 --time={secs} run", ..ROW },
    Workload { name: "sysbench-mutex", unit: "lock ops/s", work: Work::MutexOps, parser: Parser::SysbenchMutex,
        label: "sysbench mutex", packages: &["sysbench"], server: None,
        command: "sysbench mutex --threads={t} --mutex-num=1 --mutex-locks={per} --mutex-loops=0 run", ..ROW },
    Workload { name: "stress-mutex", unit: "bogo ops/s", work: Work::Timed, parser: Parser::StressNg("mutex"),
        label: "stress-ng", packages: &["stress-ng"], server: None,
        command: "stress-ng --mutex {t} -t {secs} --metrics-brief", ..ROW },
    Workload { name: "stress-pthread", unit: "bogo ops/s", work: Work::Timed, parser: Parser::StressNg("pthread"),
        label: "stress-ng", packages: &["stress-ng"], server: None,
        command: "stress-ng --pthread {t} -t {secs} --metrics-brief", ..ROW },
    Workload { name: "memcached", unit: "TPS", work: Work::Timed, parser: Parser::Memcaslap,
        label: "memcaslap", packages: &["memcached", "libmemcached-tools"],
        server: Some("memcached -l 127.0.0.1 -p {port} -U 0 -t {t} -m 64 {root}"),
        command: "memcaslap -s 127.0.0.1:{port} -T 2 -c 64 -t {secs}s", ..ROW },
    Workload { name: "kc-stash", unit: "record ops/s", work: Work::KcRecords, parser: Parser::KcOrder,
        label: "kcstashtest", packages: &["kyotocabinet-utils"], server: None,
        command: "kcstashtest order -th {t} {per}", ..ROW },
    Workload { name: "kc-cache", unit: "record ops/s", work: Work::KcRecords, parser: Parser::KcWicked,
        label: "kccachetest", packages: &["kyotocabinet-utils"], server: None,
        command: "kccachetest wicked -th {t} {per}", ..ROW },
    Workload { name: "kc-tree", unit: "record ops/s", work: Work::KcRecords, parser: Parser::KcOrder,
        label: "kctreetest", packages: &["kyotocabinet-utils"], server: None,
        command: "kctreetest order -th {t} {scratch}/kctree-{pid}-{side}.kct {per}", ..ROW },
    Workload { name: "pigz", unit: "MB/s", work: Work::Input, parser: Parser::Gzip,
        label: "pigz", packages: &["pigz"], server: None,
        command: "pigz -p {t} -b 32 -k -f -- {input}", ..ROW },
    Workload { name: "nested", unit: "lock ops/s", work: Work::NestedIters, parser: Parser::Nested,
        label: "nested", packages: &["gcc"], server: None, sanitize: true,
        command: "@nested {t} {per}", ..ROW },
    Workload { name: "held-cost-0", unit: "ns/pair", work: Work::Own, parser: Parser::HeldCost("held0"),
        label: "held_cost", packages: &["gcc"], server: None, single: true,
        command: "@held_cost 2000000 9 held0", ..ROW },
    Workload { name: "held-cost-1", unit: "ns/pair", work: Work::Own, parser: Parser::HeldCost("held1"),
        label: "held_cost", packages: &["gcc"], server: None, single: true,
        command: "@held_cost 2000000 9 held1", ..ROW },
    Workload { name: "held-cost-3", unit: "ns/pair", work: Work::Own, parser: Parser::HeldCost("held3"),
        label: "held_cost", packages: &["gcc"], server: None, single: true,
        command: "@held_cost 2000000 9 held3", ..ROW },
    Workload { name: "held-cost-new1", unit: "ns/pair", work: Work::Own, parser: Parser::HeldCost("new1"),
        label: "held_cost", packages: &["gcc"], server: None, single: true,
        command: "@held_cost 2000000 9 new1", ..ROW },
];

/// Default `--workloads`.
pub const DEFAULT_WORKLOADS: &str = "sysbench-threads,sysbench-mutex,stress-mutex,memcached";

impl Workload {
    /// Whether a run is a fixed amount of work rather than `--duration` seconds.
    pub fn fixed_work(&self) -> bool {
        self.work != Work::Timed
    }
    /// (program, Debian package) pairs it needs: the server's, then the command's (a
    /// built `@` program needs the C compiler `cc`).
    pub fn programs(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        let program = |c: &'static str| match c.split_whitespace().next().unwrap_or_default() {
            p if p.starts_with('@') => "cc",
            p => p,
        };
        (self.server.into_iter().chain([self.command]).map(program))
            .zip(self.packages.iter().copied())
    }
    /// The workload named `s`.
    pub fn parse(s: &str) -> Option<&'static Workload> {
        ALL.iter().find(|w| w.name == s)
    }
    /// The lockbench C program it runs (`@NAME`), if any.
    pub fn built(&self) -> Option<&'static str> {
        self.command.split_whitespace().next()?.strip_prefix('@')
    }
    /// The thread counts it runs at: `threads`, or 1 for a single-threaded one.
    pub fn thread_counts(&self, threads: &[usize]) -> Vec<usize> {
        if self.single {
            vec![1]
        } else {
            threads.to_vec()
        }
    }
}

/// `--workloads` names that stand for several rows: `held-cost` (or `held_cost`) is
/// every `held-cost-*` row.
pub const GROUPS: [(&str, &[&str]); 2] = [("held-cost", &HELD_COST), ("held_cost", &HELD_COST)];
const HELD_COST: [&str; 4] = [
    "held-cost-0",
    "held-cost-1",
    "held-cost-3",
    "held-cost-new1",
];

/// Resolves `--workloads` (a group name expands to its rows, in place).
pub fn select(names: &[String]) -> Result<Vec<&'static Workload>, CliError> {
    let mut all: Vec<(&'static str, Option<&'static Workload>)> =
        ALL.iter().map(|w| (w.name, Some(w))).collect();
    all.extend(GROUPS.iter().map(|g| (g.0, None)));
    let mut v: Vec<&'static Workload> = Vec::new();
    for (name, w) in pick(names, &all, "workload")? {
        let rows = match w {
            Some(w) => vec![w],
            None => (GROUPS.iter().find(|g| g.0 == name).map_or(&[][..], |g| g.1))
                .iter()
                .filter_map(|n| Workload::parse(n))
                .collect(),
        };
        for w in rows {
            if !v.contains(&w) {
                v.push(w);
            }
        }
    }
    Ok(v)
}

/// Checks that every program the workloads need is installed.
pub fn check_programs(ws: &[&Workload]) -> Result<(), CliError> {
    check_programs_in(ws, &std::env::var_os("PATH").unwrap_or_default())
}

/// [`check_programs`] against the `$PATH` value `path`.
pub fn check_programs_in(ws: &[&Workload], path: &std::ffi::OsStr) -> Result<(), CliError> {
    let mut missing = Vec::new();
    for w in ws {
        for (prog, pkg) in w.programs() {
            let m = format!(
                "{prog} (for {}; Debian package {pkg}: apt-get install {pkg})",
                w.name
            );
            if !in_path(prog, path) && !missing.contains(&m) {
                missing.push(m);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(CliError(format!(
        "not found in PATH: {}; or leave those workloads out with --workloads",
        missing.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Vec<&'static Workload> {
        names.iter().map(|n| Workload::parse(n).unwrap()).collect()
    }

    #[test]
    fn missing_programs_name_the_package() {
        let none = std::ffi::OsStr::new("/nonexistent-klock-test");
        let ws = named(&["memcached", "stress-mutex", "kc-stash", "kc-tree", "pigz"]);
        let e = check_programs_in(&ws, none).unwrap_err().0;
        for want in [
            "memcaslap (for memcached; Debian package libmemcached-tools",
            "apt-get install stress-ng",
            "kcstashtest (for kc-stash; Debian package kyotocabinet-utils",
            "kctreetest (for kc-tree",
            "apt-get install pigz",
            "--workloads",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn every_row_names_a_package_per_program() {
        for w in &ALL {
            assert_eq!(w.programs().count(), w.packages.len(), "{}", w.name);
            assert_eq!(Workload::parse(w.name), Some(w));
        }
        let progs: Vec<_> = named(&["memcached"])[0].programs().collect();
        assert_eq!(
            progs,
            [
                ("memcached", "memcached"),
                ("memcaslap", "libmemcached-tools")
            ]
        );
        assert_eq!(ALL.iter().filter(|w| w.fixed_work()).count(), 10);
        let nested = named(&["nested"])[0];
        assert_eq!(nested.programs().collect::<Vec<_>>(), [("cc", "gcc")]);
        assert_eq!((nested.built(), nested.sanitize), (Some("nested"), true));
        assert_eq!(named(&["kc-tree"])[0].built(), None);
        let held = named(&["held-cost-3"])[0];
        assert_eq!(held.thread_counts(&[2, 8]), [1]);
        assert_eq!(nested.thread_counts(&[2, 8]), [2, 8]);
    }

    #[test]
    fn groups_expand_in_place() {
        let names = |s: &str| -> Vec<&str> {
            let v: Vec<String> = s.split(',').map(String::from).collect();
            select(&v).unwrap().iter().map(|w| w.name).collect()
        };
        assert_eq!(
            names("nested,held_cost,sysbench-mutex,held-cost-1"),
            [
                "nested",
                "held-cost-0",
                "held-cost-1",
                "held-cost-3",
                "held-cost-new1",
                "sysbench-mutex"
            ]
        );
        let e = select(&["held".into()]).unwrap_err().0;
        assert!(e.contains("nested") && e.contains("held-cost"), "{e}");
    }
}

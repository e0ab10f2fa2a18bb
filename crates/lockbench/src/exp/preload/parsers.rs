//! The parsers: each program's output to the workload's metric, and [`Parser`], the
//! workloads table's name for one of them with what a run that exited 0 but gave no
//! number is told.

use std::path::Path;

use crate::exp::proc::{Finished, tail};

/// How a workload's metric is read from its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parser {
    /// [`parse_sysbench_threads`] of stdout.
    SysbenchThreads,
    /// [`parse_sysbench_mutex`] of stdout, over the run's lock operations.
    SysbenchMutex,
    /// [`parse_stress_ng`] of stdout and stderr, for the named stressor.
    StressNg(&'static str),
    /// [`parse_memcaslap`] of stdout.
    Memcaslap,
    /// [`parse_kc_order`] of stdout, over the run's records.
    KcOrder,
    /// [`parse_kc_wicked`] of stdout, over the run's records.
    KcWicked,
    /// Input MB/s over the wall time of the run, once the compressed output
    /// (`{input}.gz`) is checked to be a real one (under half the input).
    Gzip,
    /// [`parse_nested`] of stdout, over the run's iterations.
    Nested,
    /// [`parse_held_cost`] of stdout for the named case.
    HeldCost(&'static str),
}

/// What a finished run left for its parser.
pub struct Ran<'a> {
    /// How the program finished.
    pub out: &'a Finished,
    /// The program's name in errors.
    pub label: &'a str,
    /// The run's fixed amount of work: operations, records or input bytes (0 when timed).
    pub total: u64,
    /// Wall time of the run, seconds.
    pub secs: f64,
    /// The file the program wrote and its length, bytes (`{input}.gz`).
    pub written: Option<(&'a Path, u64)>,
}

impl Parser {
    /// The metric of a run that exited 0, or why it gave none.
    pub fn read(self, r: &Ran) -> Result<f64, String> {
        let (out, total) = (r.out.stdout.as_str(), r.total);
        let v = match self {
            Parser::SysbenchThreads => parse_sysbench_threads(out),
            Parser::SysbenchMutex => parse_sysbench_mutex(out, total),
            Parser::StressNg(s) => parse_stress_ng(&format!("{out}\n{}", r.out.stderr), s),
            Parser::Memcaslap => parse_memcaslap(out),
            Parser::KcOrder => {
                let want = format!("{total} after setting, 0 after removing");
                return kc_checked(parse_kc_order(out, total), r, &want);
            }
            Parser::KcWicked => return kc_checked(parse_kc_wicked(out, total), r, "a final `ok`"),
            Parser::Gzip => return gzip_rate(r),
            Parser::Nested => parse_nested(out, total),
            Parser::HeldCost(case) => parse_held_cost(out, case).map(|ns| 1e9 / ns),
        };
        v.ok_or_else(|| r.out.error(r.label))
    }
}

/// A Kyoto Cabinet metric, or that the run exited 0 without it (`want`: what the
/// output lacked).
fn kc_checked(v: Option<f64>, r: &Ran, want: &str) -> Result<f64, String> {
    v.ok_or_else(|| {
        format!(
            "{}: exit 0 but no metric, or a wrong record count (want {want}): {}",
            r.label,
            tail(&r.out.stdout)
        )
    })
}

/// Input MB/s of a compressing run, if its output is under half its input.
fn gzip_rate(r: &Ran) -> Result<f64, String> {
    let (path, len) = r.written.unwrap_or((Path::new(""), 0));
    if len == 0 || len >= r.total / 2 {
        return Err(format!(
            "{}: exit 0 but {} is {len} bytes for {} input bytes",
            r.label,
            path.display(),
            r.total
        ));
    }
    Ok(r.total as f64 / 1e6 / r.secs)
}

/// The value after `key` on its line (`key` then whitespace then a number, units
/// like `s` glued on are dropped).
fn value_after(text: &str, key: &str) -> Option<f64> {
    text.lines().rev().find_map(|l| {
        let i = l.find(key)?;
        let rest = l[i + key.len()..].trim_start();
        let num: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        num.parse().ok()
    })
}

/// sysbench threads: events per second (`total number of events` / `total time`).
pub fn parse_sysbench_threads(out: &str) -> Option<f64> {
    let ev = value_after(out, "total number of events:")?;
    let t = value_after(out, "total time:")?;
    (t > 0.0).then(|| ev / t)
}

/// sysbench mutex: lock operations per second (`ops` / `total time`).
pub fn parse_sysbench_mutex(out: &str, ops: u64) -> Option<f64> {
    let t = value_after(out, "total time:")?;
    (t > 0.0).then(|| ops as f64 / t)
}

/// stress-ng `--metrics-brief`: the stressor's bogo ops/s (real time).
pub fn parse_stress_ng(out: &str, stressor: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let rest = l.split_once("] ")?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        // stressor, bogo ops, real, usr, sys, bogo ops/s (real), bogo ops/s (usr+sys)
        if f.len() >= 6 && f[0] == stressor && f[1].parse::<u64>().is_ok() {
            f[5].parse().ok()
        } else {
            None
        }
    })
}

/// memcaslap: the final `TPS:` figure.
pub fn parse_memcaslap(out: &str) -> Option<f64> {
    value_after(out, "TPS:")
}

/// Kyoto Cabinet's `order` tests (`kcstashtest`, `kctreetest`): record operations
/// per second over the set, get and remove phases, `3 × records / Σ time:` (the
/// `time:` line of each phase), `records` being the total over all threads. `None`
/// unless the output ends with `ok`, all three phases report a time, and the record
/// count is `records` after setting and getting and 0 after removing (so a run that
/// lost or duplicated records never yields a number).
///
/// ```
/// let out = "setting records:\ncount: 4\ntime: 0.5\ngetting records:\ncount: 4\n\
///            time: 0.25\nremoving records:\ncount: 0 (0)\ntime: 0.25\n\
///            closing the database:\ntime: 0.001\nok\n";
/// assert_eq!(lockbench::exp::preload::parsers::parse_kc_order(out, 4), Some(12.0));
/// assert_eq!(lockbench::exp::preload::parsers::parse_kc_order(out, 5), None);
/// ```
pub fn parse_kc_order(out: &str, records: u64) -> Option<f64> {
    if out.lines().rev().find(|l| !l.trim().is_empty())?.trim() != "ok" {
        return None;
    }
    const PHASES: [&str; 3] = ["setting records:", "getting records:", "removing records:"];
    let mut phase: Option<usize> = None;
    let mut count: [Option<u64>; 3] = [None; 3];
    let mut time: [Option<f64>; 3] = [None; 3];
    let first_number = |rest: &str| -> Option<String> {
        let n: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!n.is_empty()).then_some(n)
    };
    for l in out.lines().map(str::trim) {
        if let Some(i) = PHASES.iter().position(|p| l == *p) {
            phase = Some(i);
        } else if l.ends_with(':') {
            // Another section ("opening the database:", "closing the database:").
            phase = None;
        } else if let Some(i) = phase {
            if let Some(rest) = l.strip_prefix("count:") {
                count[i] = count[i].or(first_number(rest).and_then(|n| n.parse().ok()));
            } else if let Some(rest) = l.strip_prefix("time:") {
                time[i] = first_number(rest).and_then(|n| n.parse().ok());
            }
        }
    }
    if count != [Some(records), Some(records), Some(0)] {
        return None;
    }
    let total: f64 = time.iter().map(|t| t.unwrap_or(f64::NAN)).sum();
    (total > 0.0).then(|| 3.0 * records as f64 / total)
}

/// Kyoto Cabinet's `wicked` test (`kccachetest`): `records / time:` (its one
/// `time:` line), `None` unless the output ends with `ok`.
///
/// ```
/// let out = "count: 9998 (9.998 thousand)\ntime: 0.5\nok\n";
/// assert_eq!(lockbench::exp::preload::parsers::parse_kc_wicked(out, 40000), Some(80000.0));
/// assert_eq!(lockbench::exp::preload::parsers::parse_kc_wicked("time: 0.5\nerror\n", 1), None);
/// ```
pub fn parse_kc_wicked(out: &str, records: u64) -> Option<f64> {
    if out.lines().rev().find(|l| !l.trim().is_empty())?.trim() != "ok" {
        return None;
    }
    let t = value_after(out, "time:")?;
    (t > 0.0).then(|| records as f64 / t)
}

/// The value of `key=` on the first line starting with `prefix`.
fn field(out: &str, prefix: &str, key: &str) -> Option<f64> {
    let line = out.lines().find(|l| l.starts_with(prefix))?;
    (line.split_whitespace())
        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))?
        .parse()
        .ok()
}

/// lockbench's `nested`: lock acquisitions per second (its `ops/s=`), `None` unless
/// its `iters=` is `iters` (0: not checked) and its time is positive.
///
/// ```
/// let out = "nested threads=8 iters=80 locks=240 elapsed=0.5 ops/s=480.0\n";
/// assert_eq!(lockbench::exp::preload::parsers::parse_nested(out, 80), Some(480.0));
/// assert_eq!(lockbench::exp::preload::parsers::parse_nested(out, 81), None);
/// ```
pub fn parse_nested(out: &str, iters: u64) -> Option<f64> {
    let got = field(out, "nested ", "iters")?;
    let wrong_count = iters != 0 && got != iters as f64;
    if wrong_count || field(out, "nested ", "elapsed")? <= 0.0 {
        return None;
    }
    field(out, "nested ", "ops/s").filter(|v| *v > 0.0)
}

/// lockbench's `held_cost`: the fastest timing loop's ns per lock+unlock pair
/// (`min_ns=`) of case `case` (`held0`, `held1`, `held3`, `new1`).
///
/// ```
/// let out = "held_cost case=held0 held=0 pairs=9 loops=9 min_ns=8.5 median_ns=9\n\
///            held_cost case=held3 held=3 pairs=9 loops=9 min_ns=20.25 median_ns=21\n";
/// assert_eq!(lockbench::exp::preload::parsers::parse_held_cost(out, "held3"), Some(20.25));
/// assert_eq!(lockbench::exp::preload::parsers::parse_held_cost(out, "held1"), None);
/// ```
pub fn parse_held_cost(out: &str, case: &str) -> Option<f64> {
    field(out, &format!("held_cost case={case} "), "min_ns").filter(|v| *v > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSBENCH_THREADS: &str = "General statistics:
    total time:                          2.0002s
    total number of events:              6433

Latency (ms):
         min:                                    0.05
";
    const SYSBENCH_MUTEX: &str = "General statistics:
    total time:                          0.0394s
    total number of events:              2
";
    const STRESS: &str = "stress-ng: info:  [17880] dispatching hogs: 2 mutex
stress-ng: metrc: [17880] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [17880]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [17880] mutex            700654      2.00      0.33      3.47    350045.31      184315.60
stress-ng: metrc: [17880] miscellaneous metrics:
stress-ng: metrc: [17880] mutex               1317.56 nanosecs per mutex (geometic mean of 2 instances)
";
    const MEMCASLAP: &str = "cmd_get: 222837
Run time: 2.0s Ops: 247629 TPS: 123805 Net_rate: 138.5M/s
";

    // `kcstashtest order -th 2 5` (Kyoto Cabinet 1.2.79), times edited.
    const KC_ORDER: &str = "<In-order Test>
  seed=327010342  rnum=5  thnum=2  rnd=0  etc=0  tran=0  bnum=-1  lv=0

opening the database:
count: 0
size: 8388664
memory: 147456
time: 0.000
setting records:
count: 10
size: 8388944
memory: 286720
time: 0.500
getting records:
count: 10
size: 8388944
memory: 286720
time: 0.250
removing records:
type: StashDB (stash database) (type=0x18)
opaque: 0
buckets: 0 (used=0) (load=0.00)
count: 0 (0)
size: 8388664 (8.000 MiB)
memory: 290816
time: 0.250
closing the database:
time: 0.002
ok
";
    // `kccachetest wicked -th 2 5`.
    const KC_WICKED: &str = "<Wicked Test>
  seed=327010352  rnum=5  thnum=2  itnum=1  opts=0  bnum=-1  capcnt=-1  capsiz=-1  lv=0

buckets: 1048583 (used=3) (load=1.00)
count: 3 (3) (capcnt=-1)
size: 8390733 (8.002 MiB) (capsiz=-1)
memory: 507904
time: 0.004
ok
";

    #[test]
    fn kyoto_parsers() {
        assert_eq!(parse_kc_order(KC_ORDER, 10), Some(30.0));
        assert_eq!(parse_kc_wicked(KC_WICKED, 10), Some(2500.0));
        // A count that does not match, a missing phase, no final `ok`: no number.
        assert_eq!(parse_kc_order(KC_ORDER, 12), None);
        for (from, to) in [
            ("count: 0 (0)", "count: 1 (1)"),
            ("getting records:", "getting:"),
            ("ok\n", "error\n"),
            ("time: 0.500", "time: x"),
        ] {
            assert_eq!(
                parse_kc_order(&KC_ORDER.replace(from, to), 10),
                None,
                "{to}"
            );
        }
        for (from, to) in [("ok", "error"), ("0.004", "0.000")] {
            assert_eq!(
                parse_kc_wicked(&KC_WICKED.replace(from, to), 10),
                None,
                "{to}"
            );
        }
    }

    #[test]
    fn parsers() {
        let v = parse_sysbench_threads(SYSBENCH_THREADS).unwrap();
        assert!((v - 6433.0 / 2.0002).abs() < 1e-6, "{v}");
        let v = parse_sysbench_mutex(SYSBENCH_MUTEX, 2_000_000).unwrap();
        assert!((v - 2e6 / 0.0394).abs() < 1e-3, "{v}");
        assert_eq!(parse_stress_ng(STRESS, "mutex"), Some(350045.31));
        assert_eq!(parse_stress_ng(STRESS, "pthread"), None);
        assert_eq!(parse_memcaslap(MEMCASLAP), Some(123805.0));
        assert_eq!(parse_sysbench_threads("garbage"), None);
        assert_eq!(parse_memcaslap(""), None);
    }
}

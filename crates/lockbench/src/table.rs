//! Tables for the terminal (markdown-style, like the anchor measurements and seeds) and
//! for the HTML report: locks as rows, thread counts as columns; and the rendering of
//! the verdict's data ([`crate::verdict`] computes, this module lays it out).

use crate::record::{Record, Report};
use crate::verdict::{self, Cell, Family, Summary};

/// A titled table of strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Heading printed above the table.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and no rows yet.
    pub fn new(title: impl Into<String>, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// A grid: one row per label in `rows`, one column per `cols` headed
    /// `col_head(col)` (after a first column headed `corner`), each cell
    /// `cell(row, col)` or `-`.
    ///
    /// ```
    /// let t = lockbench::table::Table::grid("x", "lock", &["a".to_string()], &[1, 2],
    ///     |t| format!("T={t}"), |_, t| (*t == 2).then(|| "5".to_string()));
    /// assert_eq!(t.header, ["lock", "T=1", "T=2"]);
    /// assert_eq!(t.rows, [["a", "-", "5"]]);
    /// ```
    pub fn grid<C>(
        title: impl Into<String>,
        corner: &str,
        rows: &[String],
        cols: &[C],
        col_head: impl Fn(&C) -> String,
        cell: impl Fn(&str, &C) -> Option<String>,
    ) -> Table {
        let mut header = vec![corner.to_string()];
        header.extend(cols.iter().map(col_head));
        let rows = rows
            .iter()
            .map(|r| {
                let mut row = vec![r.clone()];
                row.extend(
                    cols.iter()
                        .map(|c| cell(r, c).unwrap_or_else(|| "-".into())),
                );
                row
            })
            .collect();
        Table {
            title: title.into(),
            header,
            rows,
        }
    }

    /// Renders as an aligned markdown table.
    ///
    /// ```
    /// let t = lockbench::table::Table {
    ///     title: "x".into(),
    ///     header: vec!["lock".into(), "T=1".into()],
    ///     rows: vec![vec!["std".into(), "3.5".into()]],
    /// };
    /// assert!(t.to_text().contains("| std  | 3.5 |"));
    /// ```
    pub fn to_text(&self) -> String {
        self.to_text_styled(&|_, _| None)
    }

    /// Per column: whether it holds text (every cell starts with a letter, or is
    /// `-`), to be left-aligned like the first column.
    pub fn text_columns(&self) -> Vec<bool> {
        (0..self.header.len())
            .map(|i| {
                i == 0
                    || (!self.rows.is_empty()
                        && self.rows.iter().all(|r| {
                            r.get(i).is_none_or(|c| {
                                c == "-" || c.chars().next().is_some_and(char::is_alphabetic)
                            })
                        }))
            })
            .collect()
    }

    /// [`Table::to_text`] with ANSI styles: `style(row, column)` returns the escape
    /// sequence that opens a cell's style (reset after the cell). Widths are computed
    /// on the plain text.
    pub fn to_text_styled(&self, style: &dyn Fn(usize, usize) -> Option<&'static str>) -> String {
        let n = self.header.len();
        let mut w: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let left = self.text_columns();
        let line = |cells: &[String], row: Option<usize>| {
            let mut s = String::from("|");
            for (i, width) in w.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = width - c.chars().count();
                let (on, off) = match row.and_then(|r| style(r, i)) {
                    Some(on) => (on, "\x1b[0m"),
                    None => ("", ""),
                };
                if left[i] {
                    s.push_str(&format!(" {on}{c}{off}{} |", " ".repeat(pad)));
                } else {
                    s.push_str(&format!(" {}{on}{c}{off} |", " ".repeat(pad)));
                }
            }
            s.push('\n');
            s
        };
        let mut s = format!("\n### {}\n\n", self.title);
        s.push_str(&line(&self.header, None));
        s.push('|');
        for (i, width) in w.iter().enumerate() {
            s.push_str(&if left[i] {
                format!(":{}|", "-".repeat(width + 1))
            } else {
                format!("{}:|", "-".repeat(width + 1))
            });
        }
        s.push('\n');
        for (ri, r) in self.rows.iter().enumerate() {
            s.push_str(&line(r, Some(ri)));
        }
        s
    }
}

/// A titled group of tables and charts: one experiment's part of a report (the
/// seed experiments in `report --full`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// Paragraphs printed before the tables (what was run, how to read it).
    pub notes: Vec<String>,
    /// Tables, laid out like the seed's.
    pub tables: Vec<Table>,
    /// Charts (HTML only).
    pub charts: Vec<crate::chart::Chart>,
}

impl Section {
    /// The section as terminal text: heading, notes, tables.
    pub fn to_text(&self) -> String {
        let mut s = format!("\n## {}\n", self.title);
        for n in &self.notes {
            s.push_str(&format!("\n{n}\n"));
        }
        for t in &self.tables {
            s.push_str(&t.to_text());
        }
        s
    }
}

/// Formats a fairness ratio (`inf` for `None`).
pub fn fmt_fair(f: Option<f64>) -> String {
    match f {
        None => "inf".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// Formats throughput with 3 significant decimals (more for tiny values).
pub fn fmt_mops(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.4}")
    } else {
        format!("{x:.3}")
    }
}

/// Formats a count with thousands separators, as the seeds print them (`1,234,567`).
///
/// ```
/// assert_eq!(lockbench::table::group_thousands(1234567.4), "1,234,567");
/// ```
pub fn group_thousands(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Formats nanoseconds (`ns`, `us` from 10 µs, `ms` from 10 ms).
pub fn fmt_ns(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.0} ms", ns as f64 / 1e6)
    } else if ns >= 10_000 {
        format!("{:.0} us", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A series: records of one experiment with identical parameters.
pub struct Series<'a> {
    /// Title, e.g. "mutex, workload balanced (cs 100 ns, ncs 200 ns), 0.3 s x 3 runs".
    pub title: String,
    /// Records (implicit references excluded).
    pub recs: Vec<&'a Record>,
    /// Whether these are reader/writer records.
    pub rw: bool,
}

/// Groups a report's records into series, in order of first appearance.
pub fn series(report: &Report) -> Vec<Series<'_>> {
    let mut out: Vec<(String, Series)> = Vec::new();
    for r in report.results.iter().filter(|r| !r.implicit) {
        let p = &r.params;
        let key = format!(
            "{}|{}|{}|{}|{}|{}|{}|{:?}",
            r.experiment,
            p.workload,
            p.cs_ns,
            p.ncs_ns,
            p.cs_sleep_us,
            p.duration_s,
            p.noise,
            p.quota_cpus
        );
        let title = if r.experiment == "uncontended" {
            "uncontended lock+unlock (one thread, counter++ inside)".to_string()
        } else {
            let mut t = format!(
                "{}, workload {} (cs {} ns, ncs {} ns{}), {} s window",
                r.experiment,
                p.workload,
                p.cs_ns,
                p.ncs_ns,
                if p.cs_sleep_us > 0.0 {
                    format!(", sleep {} us inside", p.cs_sleep_us)
                } else {
                    String::new()
                },
                p.duration_s
            );
            if p.noise > 0 {
                t.push_str(&format!(
                    ", {} noise thread{}",
                    p.noise,
                    if p.noise == 1 { "" } else { "s" }
                ));
            }
            if let Some(q) = p.quota_cpus {
                t.push_str(&format!(", under a CPU quota of {q} CPUs"));
            }
            t
        };
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, s)) => s.recs.push(r),
            None => out.push((
                key,
                Series {
                    title,
                    recs: vec![r],
                    rw: r.readers.is_some(),
                },
            )),
        }
    }
    out.into_iter().map(|(_, s)| s).collect()
}

/// The locks of some records, in order of first appearance.
pub fn locks_of(recs: &[&Record]) -> Vec<String> {
    crate::stats::first_seen(recs.iter().map(|r| r.lock.clone()))
}

fn grid(title: String, s: &Series, cell: impl Fn(&Record) -> String) -> Table {
    Table::grid(
        title,
        "lock",
        &locks_of(&s.recs),
        &crate::stats::sorted_distinct(s.recs.iter().map(|r| r.threads)),
        |t| format!("T={t}"),
        |l, t| {
            s.recs
                .iter()
                .find(|r| r.lock == l && r.threads == *t)
                .map(|r| cell(r))
        },
    )
}

/// All tables of a report, in order.
pub fn tables(report: &Report) -> Vec<Table> {
    let mut out = Vec::new();
    for s in series(report) {
        if s.recs[0].experiment == "uncontended" {
            let mut t = Table::new(&s.title, &["lock", "ns/op median", "spread", "runs"]);
            t.rows = (s.recs.iter())
                .map(|r| {
                    let ns = r.uncontended_ns_per_op.unwrap_or(f64::NAN);
                    let spread = format!("{:.0}%", r.spread * 100.0);
                    vec![
                        r.lock.clone(),
                        format!("{ns:.2}"),
                        spread,
                        r.runs.to_string(),
                    ]
                })
                .collect();
            out.push(t);
        } else if s.rw {
            out.push(rw_table(&s));
        } else {
            out.extend(mutex_tables(&s));
        }
        if s.recs.iter().any(|r| r.per_op.is_some()) {
            let title = format!("{}: {}", s.title, CELL_HEAD);
            out.push(grid(title, &s, cell));
            let title = format!("{}: {}", s.title, WORST_HEAD);
            out.push(grid(title, &s, worst_cell));
        }
        let notes = notes(&s);
        if !notes.rows.is_empty() {
            out.push(notes);
        }
    }
    out
}

const WORST_HEAD: &str = "worst wait, every op: the worst thread's longest gap between two of its ops \
     (median over runs; max over runs, that thread), beside the sampled p99.9 above";

fn fmt_mam(m: &crate::stats::MinAvgMax) -> String {
    let g = group_thousands;
    format!("{} / {} / {}", g(m.min), g(m.avg), g(m.max))
}

fn fmt_ceiling(r: &Record) -> String {
    r.ceiling_fraction
        .map_or_else(|| "-".into(), |c| format!("{c:.2}"))
}

/// The lock × threads grids of a mutex series: throughput, ceiling, fairness,
/// per-thread ops, latency, CPU and context switches.
fn mutex_tables(s: &Series) -> Vec<Table> {
    type Cell = fn(&Record) -> String;
    let grids: [(String, Cell); 6] = [
        (
            format!("throughput, total Mops/s (median of {})", s.recs[0].runs),
            |r| fmt_mops(r.throughput_mops),
        ),
        ("ceiling fraction".into(), fmt_ceiling),
        (
            "fairness, per-thread ops max/min (inf = a thread starved)".into(),
            |r| fmt_fair(r.fairness_max_min),
        ),
        ("per-thread ops min / avg / max (median run)".into(), |r| {
            fmt_mam(&r.ops_per_thread)
        }),
        (
            "acquisition latency p50 / p99 / p99.9 (sampled 1/64)".into(),
            |r| {
                let q = r.latency_ns;
                format!("{} / {} / {}", fmt_ns(q.p50), fmt_ns(q.p99), fmt_ns(q.p999))
            },
        ),
        (
            "CPU ns/op / voluntary csw / involuntary csw / spread".into(),
            |r| {
                format!(
                    "{:.0} / {} / {} / {:.0}%",
                    r.cpu_ns_per_op,
                    r.csw_voluntary,
                    r.csw_involuntary,
                    r.spread * 100.0
                )
            },
        ),
    ];
    (grids.into_iter())
        .map(|(what, cell)| grid(format!("{}: {what}", s.title), s, cell))
        .collect()
}

fn rw_table(s: &Series) -> Table {
    let title = format!("{}: readers vs writers (median runs)", s.title);
    let mut t = Table::new(
        title,
        &[
            "lock",
            "R+W",
            "reader Mops/s",
            "writer Mops/s",
            "reader ops/thread min / avg / max",
            "writer ops/thread min / avg / max",
            "writer share",
            "writer max/min",
            "p99.9 R / W",
            "ceil",
        ],
    );
    let mut recs = s.recs.clone();
    recs.sort_by_key(|r| r.threads);
    for r in recs {
        let (Some(rd), Some(wr)) = (&r.readers, &r.writers) else {
            continue;
        };
        t.rows.push(vec![
            r.lock.clone(),
            format!("{}+{}", rd.threads, wr.threads),
            fmt_mops(rd.throughput_mops),
            fmt_mops(wr.throughput_mops),
            fmt_mam(&rd.ops_per_thread),
            fmt_mam(&wr.ops_per_thread),
            format!("{:.1}%", wr.share_of_ops * 100.0),
            fmt_fair(wr.fairness_max_min),
            format!(
                "{} / {}",
                fmt_ns(rd.latency_ns.p999),
                fmt_ns(wr.latency_ns.p999)
            ),
            fmt_ceiling(r),
        ]);
    }
    t
}

fn notes(s: &Series) -> Table {
    let rows = s
        .recs
        .iter()
        .filter(|r| {
            r.violations > 0 || r.collapsed || r.discarded_runs > 0 || r.gate_flagged_runs > 0
        })
        .map(|r| {
            vec![
                r.lock.clone(),
                r.threads.to_string(),
                if r.violations > 0 {
                    format!("ERROR {}", r.violations)
                } else {
                    "0".into()
                },
                if r.collapsed {
                    format!("{} (drain {:.0} ms)", r.collapsed_runs, r.drain_ms_max)
                } else {
                    "-".into()
                },
                r.discarded_runs.to_string(),
                r.gate_flagged_runs.to_string(),
            ]
        })
        .collect();
    let title = format!("{}: violations, collapses, idle-gate discards", s.title);
    let header = [
        "lock",
        "T",
        "violations",
        "collapsed runs",
        "discarded",
        "flagged noisy",
    ];
    Table {
        rows,
        ..Table::new(title, &header)
    }
}

/// Formats a value in its unit with sensible precision (`k`/`M` from 10^4).
///
/// ```
/// assert_eq!(lockbench::table::fmt_value(55_260_820.0, "jobs/min"), "55.3 M jobs/min");
/// assert_eq!(lockbench::table::fmt_value(3.456, "Mops/s"), "3.46 Mops/s");
/// ```
pub fn fmt_value(v: f64, unit: &str) -> String {
    let num = if v.abs() >= 1e6 {
        format!("{:.1} M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.1} k", v / 1e3)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 || v == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    format!("{num} {unit}")
}

/// Formats a ratio and its range: `1.32x (1.20-1.45)`.
pub fn fmt_ratio(c: &Cell) -> String {
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x:.2}")
        } else {
            "inf".into()
        }
    };
    format!("{}x ({}-{})", f(c.ratio), f(c.ratio_lo), f(c.ratio_hi))
}

/// The verdict column: the outcome, and why (klock ruled out) or how many
/// more runs would decide (inconclusive).
pub fn outcome_text(c: &Cell) -> String {
    match (&c.note, c.more_runs) {
        (Some(n), _) => format!("{} ({n})", c.outcome.word()),
        (None, _) if c.peer_note.is_some() => {
            format!("{} ({})", c.outcome.word(), c.peer_note.as_deref().unwrap())
        }
        (None, Some(m)) if m <= verdict::MORE_RUNS_SHOWN => {
            format!("{} (~{m} more runs)", c.outcome.word())
        }
        (None, Some(_)) => format!("{} (too noisy to decide)", c.outcome.word()),
        _ => c.outcome.word().to_string(),
    }
}

/// The verdict table of one family (plain cells; the terminal and HTML renderers
/// colour the last two columns by [`Cell::outcome`]).
pub fn verdict_table(fam: &Family, cells: &[&Cell]) -> Table {
    let rows = cells
        .iter()
        .map(|c| {
            vec![
                c.klock.scenario.clone(),
                c.klock.point.clone(),
                fmt_value(c.klock.median, &c.klock.unit),
                format!("{} {}", c.peer.lock, fmt_value(c.peer.median, &c.peer.unit)),
                fmt_ratio(c),
                outcome_text(c),
            ]
        })
        .collect();
    let title = format!(
        "{} ({}, lockbench name {}) against the best other lock in the same run",
        fam.name, fam.api, fam.default
    );
    let header = [
        "workload",
        "threads",
        "klock (median)",
        "best peer (median)",
        "klock vs peer (95% CI)",
        "verdict",
    ];
    Table {
        rows,
        ..Table::new(title, &header)
    }
}

/// Per family with cases: its summary, its cells and its table.
pub fn verdict_by_family(cells: &[Cell]) -> Vec<(Summary, Vec<&Cell>, Table)> {
    verdict::summarize(cells)
        .into_iter()
        .map(|sm| {
            let cs: Vec<&Cell> = cells.iter().filter(|c| c.family == sm.family).collect();
            let t = verdict_table(sm.family, &cs);
            (sm, cs, t)
        })
        .collect()
}

/// Whether stdout gets ANSI colours: a terminal, and `NO_COLOR` unset.
pub fn color_stdout() -> bool {
    // SAFETY: isatty has no memory-safety preconditions.
    std::env::var_os("NO_COLOR").is_none() && unsafe { libc::isatty(1) == 1 }
}

/// The verdict as terminal text: the table (outcome coloured when `color`), how to
/// read it, and one sentence per family. Empty if nothing to compare.
pub fn verdict_text(samples: &[crate::verdict::Sample], color: bool) -> String {
    use crate::verdict::Outcome;
    let cells = verdict::cells(samples);
    if cells.is_empty() {
        return String::new();
    }
    let (b, off) = if color {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("", "")
    };
    let mut s = format!("\n## {b}Verdict: which lock, and by how much{off}\n\n");
    let fams = verdict_by_family(&cells);
    for (sm, _, _) in &fams {
        s.push_str(&format!("* {b}{}{off} {}\n", sm.headline, sm.detail));
    }
    for (_, cs, t) in &fams {
        let style = |r: usize, c: usize| {
            (color && c >= 4).then(|| match cs[r].outcome {
                Outcome::Better => "\x1b[1;32m",
                Outcome::Same => "\x1b[2m",
                Outcome::Worse => "\x1b[1;31m",
                Outcome::Inconclusive => "\x1b[33m",
            })
        };
        s.push_str(&t.to_text_styled(&style));
    }
    s.push_str(&format!("\n{}\n", verdict::LEGEND));
    s
}

/// The whole report as terminal text: machine line, the machine's costs, the
/// verdict, then every table.
pub fn render(report: &Report) -> String {
    render_with(report, &[], &[], color_stdout())
}

/// [`render`] with extra sections and verdict samples, colours on or off.
pub fn render_with(
    report: &Report,
    sections: &[Section],
    extra: &[crate::verdict::Sample],
    color: bool,
) -> String {
    let m = &report.machine;
    let mut s = format!(
        "\nlockbench {}: {} | online CPUs {} | effective CPUs {} | kernel {}{} | work loop {:.3} ns/iter | steal during runs {} ms\n",
        m.lockbench_version,
        m.cpu_model,
        m.online_cpus,
        m.effective_cpus,
        m.kernel,
        if m.hypervisor { " (VM)" } else { "" },
        m.work_ns_per_iter,
        m.steal_ms_during
    );
    s.push_str(&crate::costs::header(m.costs.as_ref(), " | "));
    s.push('\n');
    let mut samples = crate::verdict::samples(report);
    samples.extend_from_slice(extra);
    s.push_str(&verdict_text(&samples, color));
    s.push_str(&unavailable_note(report));
    for t in tables(report) {
        s.push_str(&t.to_text());
    }
    for sec in sections {
        s.push_str(&sec.to_text());
    }
    s.push_str(&exclusion_line(report.violations()));
    s
}

/// `Mutual exclusion: OK in every run` or the number of violations, on its own line.
pub fn exclusion_line(violations: u64) -> String {
    if violations == 0 {
        "\nMutual exclusion: OK in every run\n".into()
    } else {
        format!("\nMutual exclusion: {violations} VIOLATIONS\n")
    }
}
/// A per-op figure with two significant digits (`0` for none, `-` for unknown).
///
/// ```
/// use lockbench::table::fmt_per_op;
/// assert_eq!(fmt_per_op(Some(0.0)), "0");
/// assert_eq!(fmt_per_op(Some(0.0123)), "0.012");
/// assert_eq!(fmt_per_op(Some(2.345)), "2.35");
/// assert_eq!(fmt_per_op(Some(1234.5)), "1234");
/// assert_eq!(fmt_per_op(None), "-");
/// ```
pub fn fmt_per_op(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) if x.abs() >= 100.0 => format!("{}", x.trunc() as i64),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => {
            let d = ((-x.abs().log10()).floor() as usize + 2).min(9);
            format!("{x:.d$}")
        }
    }
}

/// The accounting cell of a record: `CPU ns / vol csw / invol csw / futex / yield`
/// per op (`-` for a record written before the accounting existed).
pub fn cell(r: &Record) -> String {
    let Some(p) = r.per_op else {
        return "-".into();
    };
    format!(
        "{} / {} / {} / {} / {}",
        fmt_per_op(Some(p.cpu_ns)),
        fmt_per_op(Some(p.csw_voluntary)),
        fmt_per_op(Some(p.csw_involuntary)),
        fmt_per_op(p.futex),
        fmt_per_op(p.sched_yield)
    )
}

/// The heading of the accounting cells.
pub const CELL_HEAD: &str =
    "per op: CPU ns / voluntary csw / involuntary csw / futex calls / sched_yield calls";

/// A worst-wait cell: `1.2 ms (thread 3)`, `-` when not recorded.
pub fn worst_cell(r: &Record) -> String {
    r.worst_wait.map_or_else(
        || "-".into(),
        |w| format!("{} (max {} t{})", fmt_ns(w.ns), fmt_ns(w.max_ns), w.thread),
    )
}

/// The report's one line on unavailable syscall counters (empty when every record
/// has them): `futex/yield counts unavailable: <reason>`.
pub fn unavailable_note(report: &Report) -> String {
    match report
        .results
        .iter()
        .find_map(|r| r.syscalls_unavailable.as_ref())
    {
        Some(why) => format!("\nfutex/yield counts unavailable: {why}\n"),
        None => String::new(),
    }
}

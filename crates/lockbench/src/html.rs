//! The self-contained HTML report: inline CSS and SVG, no scripts, no network. The
//! document is well-formed XML (XHTML syntax), so any XML parser reads it.
//!
//! Layout: machine line; the **verdict** (one sentence per klock family naming the
//! lock to pick, then the coloured table of klock's defaults against the best peer);
//! per series its charts ([`series_charts`], locks split by [`groups`]); the extra
//! sections (the seed experiments of `report --full`); all tables of the terminal
//! output.

use crate::chart::{self, Chart, LineChart, MAX_SERIES, Row, RowChart, Scale, Value, esc};
use crate::record::{Record, Report};
use crate::table::{Section, Series, Table, series, tables};
use crate::verdict;

/// A chart group: a title and the locks it shows (defaults first, marked bold).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// What the group compares.
    pub title: String,
    /// Locks, at most [`MAX_SERIES`].
    pub locks: Vec<String>,
    /// Whether this is a defaults-vs-peers group (else variants).
    pub peers: bool,
}

fn chunks(title: &str, fixed: &[String], rest: &[String], peers: bool) -> Vec<Group> {
    let room = MAX_SERIES.saturating_sub(fixed.len()).max(1);
    if rest.is_empty() {
        return Vec::new();
    }
    let n = rest.len().div_ceil(room);
    rest.chunks(room)
        .enumerate()
        .map(|(i, c)| Group {
            title: if n > 1 {
                format!("{title} ({}/{n})", i + 1)
            } else {
                title.to_string()
            },
            locks: fixed.iter().chain(c).cloned().collect(),
            peers,
        })
        .collect()
}

/// Splits a series' locks into chart groups of at most [`MAX_SERIES`]: klock's
/// defaults against the peers (general-purpose and spinning peers apart when they do
/// not fit together), then each family's variants beside its default.
///
/// ```
/// let locks: Vec<String> = ["std", "klock_mutex", "ttas", "klock_mutex_nospin"]
///     .iter().map(|s| s.to_string()).collect();
/// let g = lockbench::html::groups(&locks);
/// assert_eq!(g[0].locks, ["klock_mutex", "std", "ttas"]);
/// assert_eq!(g[1].locks, ["klock_mutex", "klock_mutex_nospin"]);
/// ```
pub fn groups(locks: &[String]) -> Vec<Group> {
    let pick = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        locks.iter().filter(|l| keep(l)).cloned().collect()
    };
    let (defaults, peers) = (pick(&bold), pick(&|l| !verdict::is_klock(l)));
    let mut out = Vec::new();
    if defaults.len() + peers.len() <= MAX_SERIES {
        out.extend(chunks("klock defaults vs peers", &defaults, &peers, true));
    } else {
        let (spin, general): (Vec<String>, Vec<String>) = peers
            .iter()
            .cloned()
            .partition(|l| verdict::is_spinning_peer(l));
        out.extend(chunks(
            "klock defaults vs general-purpose locks",
            &defaults,
            &general,
            true,
        ));
        out.extend(chunks(
            "klock defaults vs plain spinlocks",
            &defaults,
            &spin,
            true,
        ));
    }
    for fam in verdict::FAMILIES {
        let vars = pick(&|l| verdict::family_of_variant(l) == Some(fam));
        let title = format!(
            "klock {} variants (seed reproductions, ablations)",
            fam.name
        );
        out.extend(chunks(&title, &pick(&|l| l == fam.default), &vars, false));
    }
    let other =
        pick(&|l| verdict::is_klock(l) && !bold(l) && verdict::family_of_variant(l).is_none());
    out.extend(chunks("other klock locks", &[], &other, false));
    if out.is_empty() && !locks.is_empty() {
        out.extend(chunks("locks", &[], locks, true));
    }
    out
}

/// Chart styles of a group: each klock default keeps its family's colour and
/// marker in every chart (SpinLock blue circle, Mutex vermillion square, RwLock green
/// triangle); the other locks take first the styles no default owns, then the rest.
///
/// ```
/// let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// let s = lockbench::html::styles(&l(&["klock_mutex", "klock_mutex_nospin"]));
/// assert_eq!(s, vec![1, 4]);
/// ```
pub fn styles(locks: &[String]) -> Vec<usize> {
    let fixed = |l: &str| verdict::FAMILIES.iter().position(|f| f.default == l);
    let taken: Vec<usize> = locks.iter().filter_map(|l| fixed(l)).collect();
    let n = verdict::FAMILIES.len();
    let mut free = (n..MAX_SERIES).chain(0..n).filter(|i| !taken.contains(i));
    (locks.iter())
        .map(|l| fixed(l).unwrap_or_else(|| free.next().unwrap_or(0)))
        .collect()
}

fn bold(lock: &str) -> bool {
    verdict::family_of_default(lock).is_some()
}

/// The x positions of a series: (sort key, label) per distinct point.
fn points(s: &Series) -> Vec<(usize, String)> {
    crate::stats::sorted_distinct(s.recs.iter().map(|r| (r.threads, verdict::point_of(r))))
}

/// The charts of one series of records: throughput per lock group; fairness (lock
/// series); reader against writer throughput (reader/writer series) and latency at
/// the last point; or the uncontended ns/op bars.
pub fn series_charts(s: &Series) -> Vec<Chart> {
    if s.recs[0].experiment == "uncontended" {
        return vec![uncontended_chart(s)];
    }
    let locks = crate::table::locks_of(&s.recs);
    let pts = points(s);
    let x_labels: Vec<String> = pts.iter().map(|p| p.1.clone()).collect();
    let find = |l: &str, p: &(usize, String)| {
        (s.recs.iter().copied())
            .find(|r| r.lock == l && r.threads == p.0 && verdict::point_of(r) == p.1)
    };
    let x_desc = if s.rw { "readers+writers" } else { "threads" };
    let axes = (x_desc, "Mops/s (median, bars: runs' min-max)");
    let title = |g: &Group| format!("{}: total throughput", g.title);
    let mut out = lines(title, axes, &x_labels, &locks, |l, i| {
        find(l, &pts[i]).map(|r| Value::with_runs(r.throughput_mops, &r.runs_mops))
    });
    if !s.rw && pts.len() > 1 {
        // The defaults-vs-peers locks.
        let main: Vec<String> = (groups(&locks).into_iter())
            .find(|g| g.peers)
            .map(|g| g.locks)
            .unwrap_or_else(|| locks.iter().take(MAX_SERIES).cloned().collect());
        out.push(chart::line(&LineChart {
            title: "fairness: per-thread ops max/min (1 = fair; inf = a thread starved)".into(),
            x_desc: x_desc.into(),
            y_desc: "max/min".into(),
            x_labels: x_labels.clone(),
            series: series_of(&main, pts.len(), |l, i| {
                find(l, &pts[i]).map(|r| r.fairness_max_min.map_or(Value::Inf, Value::at))
            }),
            scale: Scale::Log,
            reference: None,
        }));
    }
    let Some(last) = pts.last() else {
        return out;
    };
    let at_last: Vec<&Record> = locks.iter().filter_map(|l| find(l, last)).collect();
    if s.rw {
        out.push(chart::rows(&RowChart {
            title: format!("reader and writer throughput at {} (median runs)", last.1),
            x_desc: "Mops/s".into(),
            series: vec!["readers".into(), "writers".into()],
            rows: (at_last.iter())
                .map(|r| {
                    let class = |c: &Option<crate::record::ClassMetrics>| {
                        c.as_ref().map(|c| Value::at(c.throughput_mops))
                    };
                    row(r, vec![class(&r.readers), class(&r.writers)])
                })
                .collect(),
            scale: Scale::Auto,
            bars: false,
        }));
    }
    let at = if s.rw {
        last.1.clone()
    } else {
        format!("T={}", last.0)
    };
    out.extend(latency_chart(&at_last, &at));
    out
}

fn row(r: &Record, values: Vec<Option<Value>>) -> Row {
    Row {
        label: r.lock.clone(),
        bold: bold(&r.lock),
        values,
    }
}

/// ns per lock+unlock, one bar per lock, fastest first.
fn uncontended_chart(s: &Series) -> Chart {
    let mut recs = s.recs.clone();
    let ns = |r: &Record| r.uncontended_ns_per_op.unwrap_or(f64::MAX);
    recs.sort_by(|a, b| ns(a).total_cmp(&ns(b)));
    let rows = (recs.iter())
        .map(|r| {
            let runs: Vec<f64> = r.runs_mops.iter().map(|m| 1e3 / m.max(1e-12)).collect();
            let ns = r.uncontended_ns_per_op.unwrap_or(0.0);
            row(r, vec![Some(Value::with_runs(ns, &runs))])
        })
        .collect();
    chart::rows(&RowChart {
        title: "ns per lock+unlock, one thread (lower is better)".into(),
        x_desc: "ns per lock+unlock".into(),
        series: vec!["ns/op (whiskers: runs' min-max)".into()],
        rows,
        scale: Scale::Linear,
        bars: true,
    })
}

/// Acquisition latency percentiles per lock at one point (`at`), if any were sampled.
fn latency_chart(recs: &[&Record], at: &str) -> Option<Chart> {
    let rows: Vec<Row> = (recs.iter())
        .filter(|r| r.latency_ns.samples > 0)
        .map(|r| {
            let q = r.latency_ns;
            let v = |x: u64| Some(Value::at(x.max(1) as f64));
            row(r, vec![v(q.p50), v(q.p99), v(q.p999)])
        })
        .collect();
    (!rows.is_empty()).then(|| {
        chart::rows(&RowChart {
            title: format!("acquisition latency at {at} (sampled 1 in 64)"),
            x_desc: "ns".into(),
            series: vec!["p50".into(), "p99".into(), "p99.9".into()],
            rows,
            scale: Scale::Log,
            bars: false,
        })
    })
}

/// One line per lock (in its group style, klock's defaults bold), with its value at
/// each of `n` x positions from `value(lock, i)`.
fn series_of(
    locks: &[String],
    n: usize,
    value: impl Fn(&str, usize) -> Option<Value>,
) -> Vec<chart::Series> {
    (locks.iter().zip(styles(locks)))
        .map(|(l, style)| chart::Series {
            name: l.clone(),
            points: (0..n).filter_map(|i| value(l, i).map(|v| (i, v))).collect(),
            bold: bold(l),
            style,
        })
        .collect()
}

/// One line chart per lock group of `locks` ([`groups`]): captioned `title(group)`,
/// x positions `x_labels`, each lock's value at x index `i` from `value(lock, i)`.
pub fn lines(
    title: impl Fn(&Group) -> String,
    (x_desc, y_desc): (&str, &str),
    x_labels: &[String],
    locks: &[String],
    value: impl Fn(&str, usize) -> Option<Value>,
) -> Vec<Chart> {
    groups(locks)
        .iter()
        .map(|g| {
            chart::line(&LineChart {
                title: title(g),
                x_desc: x_desc.into(),
                y_desc: y_desc.into(),
                x_labels: x_labels.to_vec(),
                series: series_of(&g.locks, x_labels.len(), &value),
                scale: Scale::Auto,
                reference: None,
            })
        })
        .collect()
}

/// [`lines`] of verdict samples whose `order` is the x value: the seed experiments'
/// "metric against threads" charts (fio, fserver). `title` prefixes each group's.
pub fn per_group_lines(
    title: &str,
    axes: (&str, &str),
    xs: &[usize],
    locks: &[String],
    samples: &[verdict::Sample],
) -> Vec<Chart> {
    let labels: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    lines(
        |g| format!("{title}: {}", g.title),
        axes,
        &labels,
        locks,
        |l, i| {
            samples
                .iter()
                .find(|s| s.lock == l && s.order == xs[i])
                .map(|s| Value::with_runs(s.median, &s.runs))
        },
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1240px;color:#222}\
h1{margin-bottom:0.2em}h2{border-bottom:2px solid #ddd;padding-bottom:0.2em;margin-top:2em}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child,td.t{text-align:left}\
svg{display:block;margin:0.8em 0}.err{color:#b00;font-weight:bold}\
.better{background:#d4edda;color:#155724;font-weight:bold}\
.same{background:#eeeeee;color:#444}\
.worse{background:#f8d7da;color:#721c24;font-weight:bold}\
.inconclusive{background:#fff3cd;color:#856404}\
ul.picks li{margin:0.3em 0}p.meta{color:#555;font-size:13px}\
table.verdict td:nth-child(2){text-align:left}\
pre{background:#f7f7f7;padding:0.6em;font-size:12px;overflow-x:auto}";

fn table_html(
    t: &Table,
    class: Option<&str>,
    cell_class: &dyn Fn(usize, usize) -> Option<&'static str>,
) -> String {
    let attr = |c: Option<&str>| c.map(|c| format!(" class=\"{c}\"")).unwrap_or_default();
    let mut s = format!("<h3>{}</h3>\n<table{}><tr>", esc(&t.title), attr(class));
    for h in &t.header {
        s.push_str(&format!("<th>{}</th>", esc(h)));
    }
    s.push_str("</tr>\n");
    let text_cols = t.text_columns();
    for (i, r) in t.rows.iter().enumerate() {
        s.push_str("<tr>");
        for (j, c) in r.iter().enumerate() {
            let class = cell_class(i, j).or(text_cols[j].then_some("t"));
            s.push_str(&format!("<td{}>{}</td>", attr(class), esc(c)));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// The verdict block: sentences and the coloured table.
pub fn verdict_html(report: &Report, extra: &[verdict::Sample]) -> String {
    let mut samples = verdict::samples(report);
    samples.extend_from_slice(extra);
    let cells = verdict::cells(&samples);
    let mut s = String::from("<h2 id=\"verdict\">Verdict: which lock, and by how much</h2>\n");
    if cells.is_empty() {
        s.push_str("<p>No klock default lock was measured beside a peer in this report, so there is no verdict.</p>\n");
        return s;
    }
    let fams = crate::table::verdict_by_family(&cells);
    s.push_str("<ul class=\"picks\">\n");
    for (sm, _, _) in &fams {
        s.push_str(&format!(
            "<li><b>{}</b> {} <span class=\"meta\">({} better, {} same, {} worse, {} inconclusive)</span></li>\n",
            esc(&sm.headline),
            esc(&sm.detail),
            sm.better,
            sm.same,
            sm.worse,
            sm.inconclusive
        ));
    }
    s.push_str("</ul>\n");
    for (_, cs, t) in &fams {
        let class = |i: usize, j: usize| {
            // The outcome's word is its CSS class.
            (j >= 4).then(|| cs[i].outcome.word())
        };
        s.push_str(&table_html(t, Some("verdict"), &class));
    }
    s.push_str(&format!("<p class=\"meta\">{}</p>\n", esc(verdict::LEGEND)));
    s
}

fn section_html(sec: &Section, id: &str) -> String {
    let mut s = format!("<h2 id=\"{id}\">{}</h2>\n", esc(&sec.title));
    for p in &sec.notes {
        s.push_str(&format!("<p>{}</p>\n", esc(p)));
    }
    for c in &sec.charts {
        s.push_str(&c.svg);
    }
    for t in &sec.tables {
        s.push_str(&table_html(t, None, &|_, _| None));
    }
    s
}

/// Renders the whole report as one self-contained HTML document.
pub fn render(report: &Report) -> String {
    render_with(report, &[], &[])
}

/// [`render`] plus extra sections (the seed experiments of `report --full`) and
/// extra verdict samples (from those experiments).
pub fn render_with(report: &Report, sections: &[Section], extra: &[verdict::Sample]) -> String {
    let m = &report.machine;
    let mut s = format!(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/><title>lockbench report</title>\n<style>{STYLE}</style></head><body>\n<h1>lockbench report</h1>\n"
    );
    s.push_str(&format!(
        "<p class=\"meta\">{} · online CPUs {} · effective CPUs {} · kernel {}{} · work loop {:.3} ns/iter · steal during runs {} ms · {} · lockbench {}<br/><code>{}</code></p>\n",
        esc(&m.cpu_model),
        m.online_cpus,
        m.effective_cpus,
        esc(&m.kernel),
        if m.hypervisor { " (VM)" } else { "" },
        m.work_ns_per_iter,
        m.steal_ms_during,
        esc(&m.date_utc),
        esc(&m.lockbench_version),
        esc(&report.command)
    ));
    s.push_str(&format!(
        "<p class=\"meta\">{}</p>\n",
        esc(&crate::costs::header(m.costs.as_ref(), " · "))
    ));
    let v = report.violations();
    if v > 0 {
        s.push_str(&format!(
            "<p class=\"err\">Mutual-exclusion violations: {v}</p>\n"
        ));
    } else {
        s.push_str("<p>Mutual exclusion: OK in every run.</p>\n");
    }
    s.push_str(&verdict_html(report, extra));
    let ser = series(report);
    // Contents.
    s.push_str("<p class=\"meta\">Contents: <a href=\"#verdict\">verdict</a>");
    for (i, se) in ser.iter().enumerate() {
        s.push_str(&format!(" · <a href=\"#s{i}\">{}</a>", esc(&se.title)));
    }
    for (i, sec) in sections.iter().enumerate() {
        s.push_str(&format!(" · <a href=\"#x{i}\">{}</a>", esc(&sec.title)));
    }
    s.push_str(" · <a href=\"#tables\">all tables</a></p>\n");
    for (i, se) in ser.iter().enumerate() {
        s.push_str(&format!("<h2 id=\"s{i}\">{}</h2>\n", esc(&se.title)));
        for c in series_charts(se) {
            s.push_str(&c.svg);
        }
    }
    for (i, sec) in sections.iter().enumerate() {
        s.push_str(&section_html(sec, &format!("x{i}")));
    }
    s.push_str("<h2 id=\"tables\">Tables</h2>\n");
    let note = crate::table::unavailable_note(report);
    if !note.is_empty() {
        s.push_str(&format!("<p class=\"meta\">{}</p>\n", esc(note.trim())));
    }
    for t in tables(report) {
        s.push_str(&table_html(&t, None, &|_, _| None));
    }
    s.push_str("</body></html>\n");
    s
}

/// Every chart of a report (the series' charts and the sections'), in page order.
pub fn all_charts(report: &Report, sections: &[Section]) -> Vec<Chart> {
    let mut v: Vec<Chart> = series(report).iter().flat_map(series_charts).collect();
    for sec in sections {
        v.extend(sec.charts.iter().cloned());
    }
    v
}

//! The self-contained HTML report: inline CSS and SVG, no scripts, no network.
//!
//! Plots per series: throughput against threads per lock (line chart), fairness
//! (per-thread max/min against threads, log scale; a starved thread plots at the top as
//! `inf`), per-thread ops at the largest thread count (sorted, relative to the mean),
//! latency distribution (p50/p99/p99.9 bars per lock, log scale, at the largest
//! thread count); reader/writer throughput bars; uncontended ns/op bars. All tables of the
//! terminal output follow.

use crate::record::Report;
use crate::table::{Series, series, tables};

const PALETTE: [&str; 16] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#843c39", "#7b4173", "#3182bd",
];

/// Escapes text for HTML/SVG.
///
/// ```
/// assert_eq!(lockbench::html::esc("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
/// ```
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const W: f64 = 760.0;
const H: f64 = 400.0;
const L: f64 = 100.0;
const R: f64 = 170.0;
const T: f64 = 30.0;
/// Bottom margin of bar charts (rotated labels); line charts use [`B_LINE`].
const B: f64 = 120.0;
const B_LINE: f64 = 40.0;

struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    /// Bottom margin (px).
    b: f64,
}

impl Axis {
    fn new(vals: impl Iterator<Item = f64>, log: bool, b: f64) -> Axis {
        let v: Vec<f64> = vals
            .filter(|x| x.is_finite() && (!log || *x > 0.0))
            .collect();
        let hi = v.iter().cloned().fold(f64::MIN, f64::max);
        let lo = v.iter().cloned().fold(f64::MAX, f64::min);
        if v.is_empty() {
            return Axis {
                lo: if log { 1.0 } else { 0.0 },
                hi: 1.0,
                log,
                b,
            };
        }
        if log {
            let lo = 10f64.powf(lo.log10().floor());
            let mut hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            Axis { lo, hi, log, b }
        } else {
            Axis {
                lo: 0.0,
                hi: if hi > 0.0 { hi * 1.1 } else { 1.0 },
                log,
                b,
            }
        }
    }
    /// Maps a value to a y pixel (clamped to the plot area).
    fn y(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.h() - self.b - f.clamp(0.0, 1.0) * (self.h() - T - self.b)
    }
    /// Chart height: bar charts are taller (room for rotated labels).
    fn h(&self) -> f64 {
        H - B + self.b
    }
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut v = Vec::new();
            let mut x = self.lo;
            while x <= self.hi * 1.0001 {
                v.push(x);
                x *= 10.0;
            }
            v
        } else {
            (0..=4)
                .map(|i| self.lo + (self.hi - self.lo) * i as f64 / 4.0)
                .collect()
        }
    }
}

fn fmt_tick(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 1000.0 || x.abs() < 0.01 {
        format!("{x:.0e}")
    } else if x.abs() >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn frame(
    title: &str,
    ylabel: &str,
    axis: &Axis,
    body: &str,
    legend: &[(String, String)],
) -> String {
    let (h, b) = (axis.h(), axis.b);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    s.push_str(&format!(
        r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#,
        L,
        esc(title)
    ));
    for t in axis.ticks() {
        let y = axis.y(t);
        s.push_str(&format!(
            r##"<line x1="{L}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - R,
            L - 4.0,
            y + 4.0,
            fmt_tick(t)
        ));
    }
    s.push_str(&format!(
        r#"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (h - b + T) / 2.0,
        esc(ylabel)
    ));
    s.push_str(&format!(
        r##"<line x1="{L}" y1="{T}" x2="{L}" y2="{:.1}" stroke="#333"/><line x1="{L}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        h - b,
        h - b,
        W - R,
        h - b
    ));
    s.push_str(body);
    for (i, (name, color)) in legend.iter().enumerate() {
        let y = T + 14.0 * i as f64;
        s.push_str(&format!(
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - R + 10.0,
            y,
            W - R + 24.0,
            y + 9.0,
            esc(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// A line chart: one line per named series over categorical x labels. `None` values
/// are infinite and plotted at the top edge with an "inf" mark.
pub fn line_chart(
    title: &str,
    ylabel: &str,
    xlabels: &[String],
    lines: &[(String, Vec<Option<f64>>)],
    log: bool,
) -> String {
    let axis = Axis::new(
        lines.iter().flat_map(|(_, v)| v.iter().flatten().copied()),
        log,
        B_LINE,
    );
    let n = xlabels.len().max(1);
    let x = |i: usize| L + 20.0 + (W - L - R - 40.0) * i as f64 / (n.max(2) - 1) as f64;
    let mut body = String::new();
    for (i, lab) in xlabels.iter().enumerate() {
        body.push_str(&format!(
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(i),
            axis.h() - B_LINE + 16.0,
            esc(lab)
        ));
    }
    let mut legend = Vec::new();
    for (k, (name, vals)) in lines.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        legend.push((name.clone(), color.to_string()));
        let pts: Vec<(f64, f64, bool)> = vals
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < n)
            .map(|(i, v)| match v {
                Some(v) => (x(i), axis.y(*v), false),
                None => (x(i), T, true),
            })
            .collect();
        let path: Vec<String> = pts
            .iter()
            .map(|(a, b, _)| format!("{a:.1},{b:.1}"))
            .collect();
        body.push_str(&format!(
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        ));
        for (a, b, inf) in pts {
            body.push_str(&format!(
                r#"<circle cx="{a:.1}" cy="{b:.1}" r="3" fill="{color}"/>"#
            ));
            if inf {
                body.push_str(&format!(
                    r#"<text x="{:.1}" y="{:.1}" fill="{color}">inf</text>"#,
                    a + 4.0,
                    b + 4.0
                ));
            }
        }
    }
    frame(title, ylabel, &axis, &body, &legend)
}

/// A grouped bar chart: groups along x, one bar per name within each group.
pub fn bar_chart(
    title: &str,
    ylabel: &str,
    groups: &[(String, Vec<f64>)],
    names: &[String],
    log: bool,
) -> String {
    let axis = Axis::new(groups.iter().flat_map(|(_, v)| v.iter().copied()), log, B);
    let ng = groups.len().max(1) as f64;
    let gw = (W - L - R) / ng;
    let nb = names.len().max(1) as f64;
    let bw = (gw * 0.8 / nb).max(1.0);
    let mut body = String::new();
    for (g, (lab, vals)) in groups.iter().enumerate() {
        let gx = L + gw * g as f64 + gw * 0.1;
        for (b, v) in vals.iter().enumerate() {
            let y = axis.y(*v);
            body.push_str(&format!(
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {}</title></rect>"#,
                gx + bw * b as f64,
                bw * 0.95,
                (H - B - y).max(0.0),
                PALETTE[b % PALETTE.len()],
                esc(lab),
                esc(names.get(b).map(String::as_str).unwrap_or("")),
                fmt_tick(*v)
            ));
        }
        body.push_str(&format!(
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" transform="rotate(-40 {:.1} {:.1})">{}</text>"#,
            gx + gw * 0.4,
            H - B + 12.0,
            gx + gw * 0.4,
            H - B + 12.0,
            esc(lab)
        ));
    }
    let legend: Vec<(String, String)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), PALETTE[i % PALETTE.len()].to_string()))
        .collect();
    frame(title, ylabel, &axis, &body, &legend)
}

fn series_plots(s: &Series) -> String {
    let first = s.recs[0];
    if first.experiment == "uncontended" {
        let groups: Vec<(String, Vec<f64>)> = s
            .recs
            .iter()
            .map(|r| (r.lock.clone(), vec![r.uncontended_ns_per_op.unwrap_or(0.0)]))
            .collect();
        return bar_chart(
            "uncontended lock+unlock",
            "ns per lock+unlock",
            &groups,
            &["ns/op".into()],
            false,
        );
    }
    let mut ts: Vec<usize> = s.recs.iter().map(|r| r.threads).collect();
    ts.sort_unstable();
    ts.dedup();
    let mut locks: Vec<String> = Vec::new();
    for r in &s.recs {
        if !locks.contains(&r.lock) {
            locks.push(r.lock.clone());
        }
    }
    let find = |l: &str, t: usize| s.recs.iter().find(|r| r.lock == l && r.threads == t);
    if s.rw {
        let mut groups = Vec::new();
        for t in &ts {
            for l in &locks {
                if let Some(r) = find(l, *t) {
                    let (rd, wr) = (r.readers.as_ref(), r.writers.as_ref());
                    groups.push((
                        format!(
                            "{l} {}+{}",
                            rd.map(|c| c.threads).unwrap_or(0),
                            wr.map(|c| c.threads).unwrap_or(0)
                        ),
                        vec![
                            rd.map(|c| c.throughput_mops).unwrap_or(0.0),
                            wr.map(|c| c.throughput_mops).unwrap_or(0.0),
                        ],
                    ));
                }
            }
        }
        return bar_chart(
            "reader and writer throughput (median runs)",
            "Mops/s",
            &groups,
            &["readers".into(), "writers".into()],
            false,
        );
    }
    let xl: Vec<String> = ts.iter().map(|t| format!("T={t}")).collect();
    let tput: Vec<(String, Vec<Option<f64>>)> = locks
        .iter()
        .map(|l| {
            (
                l.clone(),
                ts.iter()
                    .map(|t| Some(find(l, *t).map(|r| r.throughput_mops).unwrap_or(0.0)))
                    .collect(),
            )
        })
        .collect();
    let fair: Vec<(String, Vec<Option<f64>>)> = locks
        .iter()
        .map(|l| {
            (
                l.clone(),
                ts.iter()
                    .map(|t| find(l, *t).map(|r| r.fairness_max_min).unwrap_or(Some(1.0)))
                    .collect(),
            )
        })
        .collect();
    let tmax = *ts.last().unwrap_or(&1);
    let lat: Vec<(String, Vec<f64>)> = locks
        .iter()
        .filter_map(|l| find(l, tmax))
        .map(|r| {
            let q = r.latency_ns;
            (
                r.lock.clone(),
                vec![
                    q.p50.max(1) as f64,
                    q.p99.max(1) as f64,
                    q.p999.max(1) as f64,
                ],
            )
        })
        .collect();
    let mut out = line_chart(
        "total throughput against threads",
        "Mops/s",
        &xl,
        &tput,
        false,
    );
    out.push_str(&line_chart(
        "per-thread fairness: ops max/min (log; inf = a thread starved)",
        "max/min",
        &xl,
        &fair,
        true,
    ));
    // Per-thread distribution at the largest T: each thread's ops relative to the mean,
    // sorted descending (a flat line at 1 is perfectly fair; 0 ops plot at 1e-4).
    let ranks: Vec<String> = (1..=tmax)
        .map(|i| {
            if tmax <= 12 || i == 1 || i == tmax || i % (tmax / 8).max(1) == 0 {
                format!("#{i}")
            } else {
                String::new()
            }
        })
        .collect();
    let dist: Vec<(String, Vec<Option<f64>>)> = locks
        .iter()
        .filter_map(|l| find(l, tmax))
        .map(|r| {
            let mut v = r.per_thread_ops.clone();
            v.sort_unstable_by(|a, b| b.cmp(a));
            let avg = r.ops_per_thread.avg.max(1e-9);
            (
                r.lock.clone(),
                v.iter()
                    .map(|&x| Some((x as f64 / avg).max(1e-4)))
                    .collect(),
            )
        })
        .collect();
    out.push_str(&line_chart(
        &format!("per-thread ops at T={tmax}, sorted, relative to the mean (log)"),
        "ops / mean",
        &ranks,
        &dist,
        true,
    ));
    out.push_str(&bar_chart(
        &format!("acquisition latency at T={tmax} (sampled, log scale)"),
        "ns",
        &lat,
        &["p50".into(), "p99".into(), "p99.9".into()],
        true,
    ));
    out
}

/// Renders the whole report as one self-contained HTML document.
pub fn render(report: &Report) -> String {
    let m = &report.machine;
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockbench report</title>\n<style>\
         body{font-family:sans-serif;margin:2em;max-width:1200px}\
         table{border-collapse:collapse;margin:0.5em 0 1.5em}\
         td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;text-align:right}\
         td:first-child,th:first-child{text-align:left}\
         svg{display:block;margin:0.5em 0}.err{color:#b00;font-weight:bold}\
         </style></head><body>\n<h1>lockbench report</h1>\n",
    );
    s.push_str(&format!(
        "<p>{} &middot; online CPUs {} &middot; effective CPUs {} &middot; kernel {}{} &middot; work loop {:.3} ns/iter &middot; steal during runs {} ms &middot; {} &middot; lockbench {}</p>\n<p><code>{}</code></p>\n",
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
    let v = report.violations();
    if v > 0 {
        s.push_str(&format!(
            "<p class=\"err\">Mutual-exclusion violations: {v}</p>\n"
        ));
    } else {
        s.push_str("<p>Mutual exclusion: OK in every run.</p>\n");
    }
    s.push_str("<h2>Plots</h2>\n");
    for se in series(report) {
        s.push_str(&format!("<h3>{}</h3>\n", esc(&se.title)));
        s.push_str(&series_plots(&se));
    }
    s.push_str("<h2>Tables</h2>\n");
    for t in tables(report) {
        s.push_str(&format!("<h3>{}</h3>\n<table><tr>", esc(&t.title)));
        for h in &t.header {
            s.push_str(&format!("<th>{}</th>", esc(h)));
        }
        s.push_str("</tr>\n");
        for r in &t.rows {
            s.push_str("<tr>");
            for c in r {
                s.push_str(&format!("<td>{}</td>", esc(c)));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
    }
    s.push_str("</body></html>\n");
    s
}

//! Charts for the HTML report, drawn with [plotters](https://docs.rs/plotters)' SVG
//! backend (default features off: no font or system libraries; the browser renders
//! the `<text>` elements, plotters only estimates their size for the layout).
//!
//! Two kinds: [`line`] (a value against an ordered x such as thread counts, one line
//! per lock, error bars from the runs' min and max) and [`rows`] (one row per lock,
//! markers or bars along a value axis). At most [`MAX_SERIES`] series per chart, each
//! with its own colour *and* marker in a legend right of the plot; value axes have
//! round ticks ([`Axis`]). A leaf: it knows nothing of locks, records or the verdict.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

/// At most this many series per chart (colours and markers stay distinct).
pub const MAX_SERIES: usize = 8;

/// The series colours, in order (Okabe-Ito's colour-blind-safe palette, its yellow
/// replaced by a brown that reads on white).
pub const COLORS: [RGBColor; MAX_SERIES] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0x8C, 0x56, 0x4B), // brown
];

/// How a value axis is scaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear from 0.
    Linear,
    /// Logarithmic (powers of ten).
    Log,
    /// Log when the positive values span more than a factor of 10, else linear.
    Auto,
}

/// One value: the median and the runs' min and max (equal to it when unknown), or
/// infinite (plotted at the top of the axis and labelled `inf`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A finite value with its range.
    Finite {
        /// Median.
        y: f64,
        /// Smallest run.
        lo: f64,
        /// Largest run.
        hi: f64,
    },
    /// Infinite (e.g. a fairness ratio with a starved thread).
    Inf,
}

impl Value {
    /// A value without a range.
    pub fn at(y: f64) -> Value {
        Value::Finite { y, lo: y, hi: y }
    }
    /// A median with the min and max of `runs` (the median alone if `runs` is empty).
    pub fn with_runs(y: f64, runs: &[f64]) -> Value {
        let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if runs.is_empty() || !lo.is_finite() || !hi.is_finite() {
            Value::at(y)
        } else {
            Value::Finite {
                y,
                lo: lo.min(y),
                hi: hi.max(y),
            }
        }
    }
}

/// A named series of a [`LineChart`]: (x index, value) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points: index into [`LineChart::x_labels`], value.
    pub points: Vec<(usize, Value)>,
    /// Drawn thicker (klock's default lock).
    pub bold: bool,
    /// Index into [`COLORS`] and the markers; must differ between a chart's series.
    pub style: usize,
}

/// A line chart over ordered categories.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Caption.
    pub title: String,
    /// X axis description.
    pub x_desc: String,
    /// Y axis description.
    pub y_desc: String,
    /// One label per x position.
    pub x_labels: Vec<String>,
    /// At most [`MAX_SERIES`] series (more are dropped and named in the caption).
    pub series: Vec<Series>,
    /// Y scale.
    pub scale: Scale,
    /// A dashed horizontal reference line at this value (e.g. 1 on a ratio chart).
    pub reference: Option<f64>,
}

/// One row of a [`RowChart`]: a label and one optional value per series.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Row label (a lock name).
    pub label: String,
    /// Highlight the label (klock's default lock).
    pub bold: bool,
    /// One entry per [`RowChart::series`].
    pub values: Vec<Option<Value>>,
}

/// A horizontal chart: one row per label, one marker (or bar) per series.
#[derive(Clone, Debug, PartialEq)]
pub struct RowChart {
    /// Caption.
    pub title: String,
    /// Value axis description.
    pub x_desc: String,
    /// Series names (at most [`MAX_SERIES`]).
    pub series: Vec<String>,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Value scale.
    pub scale: Scale,
    /// Bars from the axis origin instead of markers.
    pub bars: bool,
}

/// A rendered chart: its SVG and what it shows (for tests and the page's index).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// A standalone `<svg>` element.
    pub svg: String,
    /// Per series: name and number of data points drawn.
    pub series: Vec<(String, usize)>,
}

const FONT: &str = "sans-serif";
const LEGEND_W: u32 = 210;

/// Formats a tick value: the shortest exact decimal, `k`/`M` for large round values.
///
/// ```
/// use lockbench::chart::fmt_tick;
/// assert_eq!(fmt_tick(2.0), "2");
/// assert_eq!(fmt_tick(0.5), "0.5");
/// assert_eq!(fmt_tick(0.001), "0.001");
/// assert_eq!(fmt_tick(20000.0), "20k");
/// assert_eq!(fmt_tick(3_000_000.0), "3M");
/// assert_eq!(fmt_tick(1e9), "1G");
/// ```
pub fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let trim = |x: f64| {
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    };
    let a = v.abs();
    if a >= 1e9 && (a / 1e9).fract().abs() < 1e-9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 && (a / 1e6).fract().abs() < 1e-9 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 && (a / 1e3).fract().abs() < 1e-9 {
        format!("{}k", trim(v / 1e3))
    } else if a < 1e-4 {
        format!("{v:.0e}")
    } else {
        trim(v)
    }
}

/// A value axis: its drawn range (in axis units: the value, or log10 of it) and its
/// round ticks (1, 2, 5 x 10^k on a linear axis, powers of ten on a log axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Logarithmic.
    pub log: bool,
    /// Lower end, axis units.
    pub lo: f64,
    /// Upper end, axis units.
    pub hi: f64,
    /// Tick values (real values, not axis units), all "round".
    pub ticks: Vec<f64>,
}

impl Axis {
    /// Chooses the axis for these values (non-finite and, on a log axis,
    /// non-positive values ignored).
    ///
    /// ```
    /// use lockbench::chart::{Axis, Scale};
    /// let a = Axis::new(&[1.2, 2.99, 5.99, 8.98], Scale::Auto);
    /// assert!(!a.log);
    /// assert_eq!(a.ticks, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    /// let a = Axis::new(&[0.05, 3.0, 40.0], Scale::Auto);
    /// assert!(a.log);
    /// assert_eq!(a.ticks, vec![0.01, 0.1, 1.0, 10.0, 100.0]);
    /// ```
    pub fn new(values: &[f64], scale: Scale) -> Axis {
        let pos = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
        let (min, max) = pos.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let log = match scale {
            Scale::Linear => false,
            Scale::Log => true,
            Scale::Auto => min.is_finite() && max / min > 10.0,
        };
        if log {
            let (min, max) = if min.is_finite() {
                (min, max)
            } else {
                (1.0, 10.0)
            };
            let lo = min.log10().floor();
            let hi = max.log10().ceil().max(lo + 1.0);
            let decades = (hi - lo) as i32;
            let mut ticks = Vec::new();
            for k in 0..=decades {
                let p = 10f64.powi(lo as i32 + k);
                ticks.push(p);
                if decades <= 2 && k < decades {
                    ticks.extend([2.0 * p, 5.0 * p]);
                }
            }
            return Axis { log, lo, hi, ticks };
        }
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let max = finite.fold(0.0, f64::max);
        let max = if max > 0.0 { max } else { 1.0 };
        let raw = max / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw * 0.999)
            .unwrap_or(10.0 * mag);
        let n = (max / step - 1e-9).ceil().max(1.0) as usize;
        let ticks: Vec<f64> = (0..=n).map(|i| round_to(i as f64 * step, step)).collect();
        let (lo, hi) = (0.0, n as f64 * step);
        Axis { log, lo, hi, ticks }
    }
    /// A value in axis units (clamped to the axis on a log axis).
    pub fn to_axis(&self, v: f64) -> f64 {
        if self.log {
            v.max(10f64.powf(self.lo)).log10()
        } else {
            v
        }
    }
    /// The axis as a coordinate up to `top` (axis units), ticked at its ticks.
    fn ticked(&self, top: f64) -> Ticked {
        let ticks = self.tick_points();
        Ticked {
            lo: self.lo,
            hi: top,
            ticks,
        }
    }
    /// The origin of bars, axis units.
    fn origin(&self) -> f64 {
        self.lo
    }
    fn tick_points(&self) -> Vec<f64> {
        self.ticks.iter().map(|t| self.to_axis(*t)).collect()
    }
    fn label(&self, a: f64) -> String {
        let v = if self.log { 10f64.powf(a) } else { a };
        // Snap to the nearest tick so float noise never shows.
        let t = self
            .ticks
            .iter()
            .copied()
            .min_by(|x, y| (x - v).abs().total_cmp(&(y - v).abs()))
            .unwrap_or(v);
        fmt_tick(t)
    }
}

fn round_to(v: f64, step: f64) -> f64 {
    // Removes accumulated float error: keep the digits the step has.
    let digits = (-step.log10().floor()).max(0.0) as i32 + 1;
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

/// A linear coordinate with exactly the given tick positions (plotters' own f64
/// coordinate picks its ticks itself, and its key-point wrapper has no label
/// formatter).
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ticked {
    /// `n` categories at 0..n, with `pad` room before the first and after the last.
    fn categories(n: usize, pad: f64) -> Ticked {
        let ticks = (0..n).map(|i| i as f64).collect();
        let (lo, hi) = (-pad, n as f64 - (1.0 - pad));
        Ticked { lo, hi, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Ctx<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;
type Res = Result<(), Box<dyn std::error::Error>>;

fn style(i: usize) -> (RGBColor, usize) {
    (COLORS[i % MAX_SERIES], i % MAX_SERIES)
}

/// Draws marker `m` centred on pixel `(x, y)` of `area`: in series order a filled
/// circle, square, triangle and diamond, an open circle, square and triangle, a cross.
fn draw_marker(area: &Area, m: usize, c: RGBColor, (x, y): (i32, i32), r: i32) -> Res {
    let filled = ShapeStyle::from(&c).filled();
    let open = ShapeStyle::from(&c).stroke_width(2);
    let tri = |r: i32| vec![(x, y - r), (x + r, y + r * 3 / 4), (x - r, y + r * 3 / 4)];
    let square = [(x - r, y - r), (x + r, y + r)];
    match m {
        0 => area.draw(&Circle::new((x, y), r, filled))?,
        1 => area.draw(&Rectangle::new(square, filled))?,
        2 => area.draw(&Polygon::new(tri(r + 1), filled))?,
        3 => {
            let r = r + 1;
            area.draw(&Polygon::new(
                vec![(x, y - r), (x + r, y), (x, y + r), (x - r, y)],
                filled,
            ))?
        }
        4 => area.draw(&Circle::new((x, y), r, open))?,
        5 => area.draw(&Rectangle::new(square, open))?,
        6 => {
            let mut p = tri(r + 1);
            p.push(p[0]);
            area.draw(&PathElement::new(p, open))?
        }
        _ => {
            for (y0, y1) in [(y - r, y + r), (y + r, y - r)] {
                area.draw(&PathElement::new(vec![(x - r, y0), (x + r, y1)], open))?;
            }
        }
    }
    Ok(())
}

/// The legend panel: one entry per series (line sample + marker + name).
fn draw_legend(area: &Area, names: &[(String, bool, usize)], with_line: bool) -> Res {
    for (i, (name, bold, st)) in names.iter().enumerate() {
        let (c, m) = style(*st);
        let y = 40 + 20 * i as i32;
        if with_line {
            let w = if *bold { 3 } else { 2 };
            area.draw(&PathElement::new(
                vec![(8, y), (36, y)],
                ShapeStyle::from(&c).stroke_width(w),
            ))?;
        }
        draw_marker(area, m, c, (22, y), 4)?;
        let (label, weight) = if *bold {
            (format!("{name} (klock default)"), FontStyle::Bold)
        } else {
            (name.clone(), FontStyle::Normal)
        };
        let font = (FONT, 13, weight).into_font().color(&BLACK);
        area.draw(&Text::new(label, (44, y - 7), font))?;
    }
    Ok(())
}

fn finite(v: &Value) -> Option<(f64, f64, f64)> {
    match v {
        Value::Finite { y, lo, hi } if y.is_finite() => Some((*y, *lo, *hi)),
        _ => None,
    }
}

/// The values an axis must show: every finite value with its range.
fn extent<'a>(values: impl Iterator<Item = &'a Value>) -> Vec<f64> {
    values
        .filter_map(finite)
        .flat_map(|(y, lo, hi)| [y, lo, hi])
        .collect()
}

/// A `w` x `h` chart captioned `title` (and how many series were dropped):
/// `draw(root, (plot, legend), title)` fills it; an error becomes an SVG saying so.
/// `series`: each shown series' name and number of points.
fn render(
    (title, dropped): (&str, usize),
    (w, h): (u32, u32),
    series: Vec<(String, usize)>,
    draw: impl FnOnce(&Area, (&Area, &Area), &str) -> Res,
) -> Chart {
    let title = if dropped > 0 {
        format!("{title} (+{dropped} series not shown)")
    } else {
        title.to_string()
    };
    let mut svg = String::new();
    let res = (|| -> Res {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, legend) = root.split_horizontally(w - LEGEND_W);
        draw(&root, (&plot, &legend), &title)?;
        root.present()?;
        Ok(())
    })();
    if let Err(e) = res {
        svg = error_svg(&title, &e.to_string());
    }
    Chart { title, svg, series }
}

/// Renders a line chart with error bars (runs' min-max) and a legend.
pub fn line(c: &LineChart) -> Chart {
    let series: Vec<&Series> = c.series.iter().take(MAX_SERIES).collect();
    let values = || series.iter().flat_map(|s| s.points.iter().map(|(_, v)| v));
    let axis = Axis::new(&extent(values()), c.scale);
    let has_inf = values().any(|v| *v == Value::Inf);
    let shown = (series.iter())
        .map(|s| {
            let n = s.points.iter().filter(|(x, _)| *x < c.x_labels.len());
            (s.name.clone(), n.count())
        })
        .collect();
    let dropped = c.series.len() - series.len();
    render(
        (&c.title, dropped),
        (960, 360),
        shown,
        |root, areas, title| draw_line(root, areas, (c, &series), (&axis, has_inf), title),
    )
}

/// A chart's plotting frame: caption, margins, label areas and the two ranges.
fn frame<'a, 'b>(
    plot: &'a Area<'b>,
    title: &str,
    (x, y): (Ticked, Ticked),
    (label_w, margin_right): (u32, u32),
) -> Result<Ctx<'a, 'b>, Box<dyn std::error::Error>> {
    Ok(ChartBuilder::on(plot)
        .caption(title, (FONT, 16, FontStyle::Bold))
        .margin(12)
        .margin_right(margin_right)
        .x_label_area_size(42)
        .y_label_area_size(label_w)
        .build_cartesian_2d(x, y)?)
}

/// The grid and the axes: tick labels from `xl` and `yl`, the x description and, for
/// a line chart, the y description with horizontal grid lines (a row chart has
/// vertical ones).
fn mesh(
    chart: &mut Ctx,
    (x_desc, y_desc): (String, Option<String>),
    xl: &dyn Fn(&f64) -> String,
    yl: &dyn Fn(&f64) -> String,
) -> Res {
    let mut m = chart.configure_mesh();
    m.x_desc(x_desc)
        .x_label_formatter(xl)
        .y_label_formatter(yl)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .light_line_style(TRANSPARENT);
    match y_desc {
        Some(y) => m.y_desc(y).disable_x_mesh(),
        None => m.disable_y_mesh(),
    };
    m.draw()?;
    Ok(())
}

/// An axis description, with `(log scale)` on a log axis.
fn desc(d: &str, axis: &Axis) -> String {
    if axis.log {
        format!("{d} (log scale)")
    } else {
        d.to_string()
    }
}

/// A dashed horizontal line at `r` across the plot (a line chart's reference).
fn draw_reference(root: &Area, chart: &Ctx, axis: &Axis, (r, top): (f64, f64), n: usize) -> Res {
    let area = chart.plotting_area();
    let y = axis.to_axis(r);
    if y < axis.lo || y > top {
        return Ok(());
    }
    let (x0, py) = area.map_coordinate(&(-0.4, y));
    let (x1, _) = area.map_coordinate(&(n as f64 - 0.6, y));
    let mut x = x0;
    while x < x1 {
        root.draw(&PathElement::new(
            vec![(x, py), ((x + 6).min(x1), py)],
            ShapeStyle::from(&RGBColor(0x66, 0x66, 0x66)).stroke_width(1),
        ))?;
        x += 10;
    }
    Ok(())
}

/// One `inf` row at the top of the axis (labels per point would overlap).
fn draw_inf_row(root: &Area, chart: &Ctx, top: f64, n: usize) -> Res {
    let area = chart.plotting_area();
    let (x0, y) = area.map_coordinate(&(-0.4, top));
    let (x1, _) = area.map_coordinate(&(n as f64 - 0.6, top));
    root.draw(&PathElement::new(
        vec![(x0, y), (x1, y)],
        ShapeStyle::from(&RGBColor(0xBB, 0xBB, 0xBB)).stroke_width(1),
    ))?;
    let font = (FONT, 13).into_font().color(&BLACK);
    root.draw(&Text::new("inf", (x0 - 28, y - 7), font))?;
    Ok(())
}

/// Series `i` of `count`: its line, its error bars (runs' min-max) and its markers;
/// infinite values sit at `top`.
fn draw_series_line(
    root: &Area,
    chart: &mut Ctx,
    (axis, top, n): (&Axis, f64, usize),
    s: &Series,
    (i, count): (usize, usize),
) -> Res {
    let (col, m) = style(s.style);
    let pts: Vec<(f64, Value)> = (s.points.iter())
        .filter(|(x, _)| *x < n)
        .map(|(x, v)| (*x as f64, *v))
        .collect();
    let yv = |v: &Value| finite(v).map_or(top, |(y, _, _)| axis.to_axis(y));
    let width = if s.bold { 3 } else { 2 };
    // A small horizontal offset per series keeps overlapping error bars apart.
    let off = (i as f64 - (count as f64 - 1.0) / 2.0) * 0.03;
    chart.draw_series(LineSeries::new(
        pts.iter().map(|(x, v)| (x + off, yv(v))),
        ShapeStyle::from(&col).stroke_width(width),
    ))?;
    let area = chart.plotting_area();
    let st = ShapeStyle::from(&col).stroke_width(1);
    for (x, v) in &pts {
        let x = x + off;
        if let Some((_, lo, hi)) = finite(v)
            && hi > lo
        {
            let (lo, hi) = (axis.to_axis(lo), axis.to_axis(hi));
            area.draw(&PathElement::new(vec![(x, lo), (x, hi)], st))?;
            for e in [lo, hi] {
                area.draw(&PathElement::new(vec![(x - 0.05, e), (x + 0.05, e)], st))?;
            }
        }
        // Markers are drawn in pixels (the same shape on every scale).
        let p = area.map_coordinate(&(x, yv(v)));
        draw_marker(root, m, col, p, 4)?;
    }
    Ok(())
}

fn draw_line(
    root: &Area,
    (plot, legend): (&Area, &Area),
    (c, series): (&LineChart, &[&Series]),
    (axis, has_inf): (&Axis, bool),
    title: &str,
) -> Res {
    let n = c.x_labels.len().max(1);
    // Room above the top tick for `inf` markers.
    let top = if has_inf {
        axis.hi + (axis.hi - axis.lo) * 0.08
    } else {
        axis.hi
    };
    let ranges = (Ticked::categories(n, 0.4), axis.ticked(top));
    let mut chart = frame(plot, title, ranges, (64, 20))?;
    let xl = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            c.x_labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let descs = (c.x_desc.clone(), Some(desc(&c.y_desc, axis)));
    mesh(&mut chart, descs, &xl, &|y| axis.label(*y))?;
    if let Some(r) = (c.reference).filter(|r| r.is_finite() && (!axis.log || *r > 0.0)) {
        draw_reference(root, &chart, axis, (r, top), n)?;
    }
    if has_inf {
        draw_inf_row(root, &chart, top, n)?;
    }
    for (i, s) in series.iter().enumerate() {
        draw_series_line(root, &mut chart, (axis, top, n), s, (i, series.len()))?;
    }
    let names: Vec<(String, bool, usize)> = (series.iter())
        .map(|s| (s.name.clone(), s.bold, s.style))
        .collect();
    draw_legend(legend, &names, true)?;
    Ok(())
}

/// Renders a row chart (markers or bars per row, whiskers for the runs' min-max).
pub fn rows(c: &RowChart) -> Chart {
    let ns = c.series.len().min(MAX_SERIES);
    let values = c
        .rows
        .iter()
        .flat_map(|r| r.values.iter().take(ns).flatten());
    let axis = Axis::new(&extent(values), c.scale);
    let shown = (c.series.iter().take(ns).enumerate())
        .map(|(i, n)| {
            let has = |r: &&Row| r.values.get(i).is_some_and(|v| v.is_some());
            (n.to_string(), c.rows.iter().filter(has).count())
        })
        .collect();
    let h = (90 + 24 * c.rows.len().max(1) as u32).max(160);
    render(
        (&c.title, c.series.len() - ns),
        (960, h),
        shown,
        |root, areas, title| draw_rows(root, areas, (c, ns), &axis, title),
    )
}

fn draw_rows(
    root: &Area,
    (plot, legend): (&Area, &Area),
    (c, ns): (&RowChart, usize),
    axis: &Axis,
    title: &str,
) -> Res {
    let n = c.rows.len().max(1);
    let longest = c.rows.iter().map(|r| r.label.chars().count()).max();
    let label_w = longest.unwrap_or(4) as u32 * 8 + 16;
    let ranges = (axis.ticked(axis.hi), Ticked::categories(n, 0.5));
    let mut chart = frame(plot, title, ranges, (label_w, 24))?;
    // Row i is drawn at y = n-1-i so the first row is at the top.
    let yl = |y: &f64| {
        let i = y.round();
        if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
            let r = &c.rows[n - 1 - i as usize];
            if r.bold {
                format!("{} *", r.label)
            } else {
                r.label.clone()
            }
        } else {
            String::new()
        }
    };
    mesh(
        &mut chart,
        (desc(&c.x_desc, axis), None),
        &|x| axis.label(*x),
        &yl,
    )?;
    for (ri, r) in c.rows.iter().enumerate() {
        draw_row(root, &chart, (axis, (n - 1 - ri) as f64), r, (ns, c.bars))?;
    }
    if ns > 1 || !c.bars {
        let names: Vec<(String, bool, usize)> = (c.series.iter().take(ns).enumerate())
            .map(|(i, s)| (s.clone(), false, i))
            .collect();
        draw_legend(legend, &names, false)?;
    }
    Ok(())
}

/// One row at height `yc`: its highlight (klock's default), then per series a bar or
/// a marker with whiskers for the runs' min-max.
fn draw_row(
    root: &Area,
    chart: &Ctx,
    (axis, yc): (&Axis, f64),
    r: &Row,
    (ns, bars): (usize, bool),
) -> Res {
    let area = chart.plotting_area();
    if r.bold {
        area.draw(&Rectangle::new(
            [(axis.lo, yc - 0.5), (axis.hi, yc + 0.5)],
            RGBColor(0xFF, 0xF4, 0xD6).filled(),
        ))?;
    }
    for (si, v) in r.values.iter().take(ns).enumerate() {
        let Some((y, lo, hi)) = v.as_ref().and_then(finite) else {
            continue;
        };
        let (col, m) = style(si);
        let band = 0.8 / ns as f64;
        let yy = yc - 0.4 + band * (si as f64 + 0.5);
        let st = ShapeStyle::from(&col).stroke_width(1);
        if bars {
            area.draw(&Rectangle::new(
                [
                    (axis.origin(), yy - band * 0.4),
                    (axis.to_axis(y), yy + band * 0.4),
                ],
                col.mix(0.85).filled(),
            ))?;
        }
        if hi > lo {
            let (lo, hi) = (axis.to_axis(lo), axis.to_axis(hi));
            area.draw(&PathElement::new(vec![(lo, yy), (hi, yy)], st))?;
            for e in [lo, hi] {
                area.draw(&PathElement::new(
                    vec![(e, yy - band * 0.3), (e, yy + band * 0.3)],
                    st,
                ))?;
            }
        }
        if !bars {
            let p = area.map_coordinate(&(axis.to_axis(y), yy));
            draw_marker(root, m, col, p, 4)?;
        }
    }
    Ok(())
}

/// Escapes text for HTML/SVG.
///
/// ```
/// assert_eq!(lockbench::chart::esc("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
/// ```
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn error_svg(title: &str, e: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\"><text x=\"4\" y=\"20\">{}: chart error: {}</text></svg>\n",
        esc(title),
        esc(e)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1, 2 or 5 times a power of ten.
    fn round(t: f64) -> bool {
        let m = t / 10f64.powf(t.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|r| (m - r).abs() < 1e-6)
    }

    /// Equal round steps from 0.
    fn linear_round(t: &[f64]) -> bool {
        let step = t[1] - t[0];
        t[0] == 0.0
            && round(step)
            && t.iter()
                .enumerate()
                .all(|(i, x)| (x - i as f64 * step).abs() < step * 1e-6)
    }

    #[test]
    fn ticks_are_round_on_both_scales() {
        for vals in [
            vec![2.99, 5.99, 8.98],
            vec![0.013, 0.021],
            vec![1234.0, 99.0],
            vec![3.2e6],
            vec![0.0],
            vec![],
        ] {
            let a = Axis::new(&vals, Scale::Linear);
            assert!(linear_round(&a.ticks), "{vals:?}: {:?}", a.ticks);
            assert!(a.ticks.len() >= 2 && a.ticks.len() <= 11, "{:?}", a.ticks);
            assert!(vals.iter().all(|v| *v <= a.hi + 1e-12), "{vals:?} {a:?}");
            let a = Axis::new(&vals, Scale::Log);
            assert!(a.ticks.iter().all(|t| round(*t)), "{vals:?}: {:?}", a.ticks);
        }
        assert!(!Axis::new(&[1.0, 5.0], Scale::Auto).log);
        assert!(Axis::new(&[1.0, 50.0], Scale::Auto).log);
    }

    #[test]
    fn line_chart_is_svg_with_every_series() {
        let c = LineChart {
            title: "t <&>".into(),
            x_desc: "threads".into(),
            y_desc: "Mops/s".into(),
            x_labels: vec!["1".into(), "2".into(), "4".into()],
            series: (0..10)
                .map(|i| Series {
                    name: format!("lock{i}"),
                    points: vec![
                        (0, Value::with_runs(1.0 + i as f64, &[0.9, 1.2 + i as f64])),
                        (1, Value::at(2.0)),
                        (2, if i == 0 { Value::Inf } else { Value::at(3.0) }),
                    ],
                    bold: i == 0,
                    style: i % MAX_SERIES,
                })
                .collect(),
            scale: Scale::Auto,
            reference: None,
        };
        let ch = line(&c);
        assert_eq!(ch.series.len(), MAX_SERIES);
        assert!(ch.title.contains("+2 series not shown"));
        assert!(ch.svg.starts_with("<svg"), "{}", &ch.svg[..100]);
        assert!(ch.svg.contains("lock7") && !ch.svg.contains("lock8"));
        assert!(ch.svg.contains("t &lt;&amp;&gt;"));
    }
}

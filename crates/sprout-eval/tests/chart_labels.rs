//! The charts are fit to publish: no text overlaps another text, a marker or a line, nothing is
//! cut off at the edges, and points whose markers overlap share one label.
//!
//! Each SVG is parsed (roxmltree) and every `<text>` gets a box from its `x`, `y`, `font-size`,
//! `text-anchor`, `font-weight`, rotation, lines (`<tspan>`s) and characters, with the chart
//! module's own width estimate ([`text_width`]: per glyph, never under [`CHAR_WIDTH_EM`] or
//! [`BOLD_CHAR_WIDTH_EM`] per character; the charts keep it plus a margin clear) and its ascent
//! and descent. Tick labels, titles, legends, captions and
//! annotations count as texts. Markers are every `<circle>` and every `<rect>` or `<path>` of
//! class `marker`; lines are every `<line>` but grid lines, every other `<path>` (series, areas)
//! and the edges of the plot frames (`<rect class="frame">`). A leader may end at its own label.
//!
//! Covered: every chart that `eval --experiments all` writes on the real traces (skipped, with
//! a message, when ../shared/traces is absent), every chart it writes on a synthetic link (always),
//! the interactive experiment's chart of hand-made lines, and charts of hand-made and random
//! point sets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use sprout_eval::chart::{
    app_delay_chart, calibration_chart, delay_over_time_chart, frontier_chart, text_width,
    throughput_delay_chart, time_series_chart, time_series_chart_measured, utilization_delay_chart,
    AppDelayPanel, AppDelaySeries, CalibrationPanel, CalibrationSeries, ChartPoint, DelayPanel,
    DelaySeries, FrontierPanel, FrontierSeries, UtilizationPoint, ASCENT_EM, BOLD_CHAR_WIDTH_EM,
    CHAR_WIDTH_EM, DESCENT_EM, HEIGHT, WIDTH,
};
use sprout_eval::eval::{self, EvalOptions, Experiment};
use sprout_link::{testdata, SyntheticLink};
use sprout_sim::metrics::TimeSeriesPoint;

#[derive(Clone, Copy, Debug)]
struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn shrink(&self, d: f64) -> Rect {
        Rect {
            x0: self.x0 + d,
            y0: self.y0 + d,
            x1: self.x1 - d,
            y1: self.y1 - d,
        }
    }

    fn hits_circle(&self, cx: f64, cy: f64, r: f64) -> bool {
        let nx = cx.clamp(self.x0, self.x1);
        let ny = cy.clamp(self.y0, self.y1);
        (nx - cx).powi(2) + (ny - cy).powi(2) < r * r
    }

    /// Whether the segment passes through the box (Liang-Barsky).
    fn hits_segment(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, a.0 - self.x0),
            (dx, self.x1 - a.0),
            (-dy, a.1 - self.y0),
            (dy, self.y1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

struct Label {
    text: String,
    id: Option<String>,
    class: String,
    points: Vec<String>,
    bb: Rect,
}

enum Shape {
    Circle(f64, f64, f64),
    Box(Rect),
}

struct Marker {
    shape: Shape,
    what: String,
}

struct Line {
    a: (f64, f64),
    b: (f64, f64),
    what: String,
    leader_for: Option<String>,
}

struct Point {
    id: String,
    label: String,
    cx: f64,
    cy: f64,
    r: f64,
    values: (String, String),
}

#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    charts: usize,
    texts: usize,
    point_labels: usize,
    points: usize,
    markers: usize,
    lines: usize,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.charts += o.charts;
        self.texts += o.texts;
        self.point_labels += o.point_labels;
        self.points += o.points;
        self.markers += o.markers;
        self.lines += o.lines;
    }
}

fn num(n: roxmltree::Node, attr: &str) -> f64 {
    n.attribute(attr)
        .unwrap_or_else(|| panic!("<{}> without {attr}", n.tag_name().name()))
        .parse()
        .unwrap_or_else(|_| panic!("<{}> {attr} is not a number", n.tag_name().name()))
}

fn classes(n: roxmltree::Node) -> String {
    n.attribute("class").unwrap_or("").to_string()
}

fn has_class(n: roxmltree::Node, c: &str) -> bool {
    n.attribute("class")
        .is_some_and(|s| s.split_whitespace().any(|x| x == c))
}

/// Half the stroke width of a shape that has a stroke.
fn half_stroke(n: roxmltree::Node) -> f64 {
    match n.attribute("stroke") {
        None | Some("none") => 0.0,
        Some(_) => {
            n.attribute("stroke-width")
                .map_or(1.0, |w| w.parse().unwrap())
                / 2.0
        }
    }
}

/// The points of a path made of absolute M, L and Z commands (all the charts write).
fn path_points(d: &str) -> Vec<Vec<(f64, f64)>> {
    let mut subpaths: Vec<Vec<(f64, f64)>> = Vec::new();
    for c in d.chars().filter(|c| c.is_ascii_alphabetic()) {
        assert!(matches!(c, 'M' | 'L' | 'Z'), "path command {c} not handled");
    }
    // Walk the commands in order with their coordinates.
    let mut rest = d;
    while let Some(pos) = rest.find(['M', 'L', 'Z']) {
        let cmd = rest.as_bytes()[pos] as char;
        let after = &rest[pos + 1..];
        let end = after.find(['M', 'L', 'Z']).unwrap_or(after.len());
        let nums: Vec<f64> = after[..end]
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("path coordinate"))
            .collect();
        match cmd {
            'M' => subpaths.push(Vec::new()),
            'Z' => {
                if let Some(sp) = subpaths.last_mut() {
                    if let Some(&first) = sp.first() {
                        sp.push(first);
                    }
                }
            }
            _ => {}
        }
        let sp = subpaths.last_mut().expect("path starts with M");
        for xy in nums.chunks(2) {
            sp.push((xy[0], xy[1]));
        }
        rest = &after[end..];
    }
    subpaths
}

/// The lines of a `<text>`: its `<tspan>`s (each at the text's `x`, `dy` pixels below the
/// previous line), or its text.
fn text_lines(n: roxmltree::Node) -> Vec<(String, f64)> {
    let spans: Vec<roxmltree::Node> = n.children().filter(|c| c.has_tag_name("tspan")).collect();
    if spans.is_empty() {
        return vec![(n.text().unwrap_or("").to_string(), 0.0)];
    }
    spans
        .iter()
        .map(|t| {
            assert_eq!(t.attribute("x"), n.attribute("x"), "tspan x");
            let dy = t
                .attribute("dy")
                .map_or(0.0, |d| d.parse().expect("dy in pixels"));
            (t.text().unwrap_or("").to_string(), dy)
        })
        .collect()
}

/// The box of a `<text>`, from its attributes and character count (the longest line's).
fn text_box(n: roxmltree::Node, lines: &[(String, f64)]) -> Rect {
    let (x, y, size) = (num(n, "x"), num(n, "y"), num(n, "font-size"));
    let bold = n.attribute("font-weight") == Some("bold");
    let w = lines
        .iter()
        .map(|l| text_width(&l.0, size, bold))
        .fold(0.0, f64::max);
    let below: f64 = lines.iter().map(|l| l.1).sum();
    let x0 = match n.attribute("text-anchor").unwrap_or("start") {
        "start" => x,
        "middle" => x - w / 2.0,
        "end" => x - w,
        a => panic!("text-anchor {a}"),
    };
    let (up, down) = (ASCENT_EM * size, DESCENT_EM * size);
    match n.attribute("transform") {
        None => Rect {
            x0,
            y0: y - up,
            x1: x0 + w,
            y1: y + below + down,
        },
        Some(t) => {
            assert_eq!(lines.len(), 1, "turned text of several lines");
            // Only a quarter turn to the left about the text's own anchor point is written.
            let args: Vec<f64> = t
                .trim_start_matches("rotate(")
                .trim_end_matches(')')
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            assert_eq!(args, vec![-90.0, x, y], "transform {t} not handled");
            // (x + dx, y + dy) turns to (x + dy, y - dx).
            Rect {
                x0: x - up,
                y0: y - (x0 + w - x),
                x1: x + down,
                y1: y - (x0 - x),
            }
        }
    }
}

/// For a look at them: SPROUT_CHART_DIR=/some/dir writes every chart checked here.
fn dump_chart(name: &str, svg: &str) {
    let Ok(dir) = std::env::var("SPROUT_CHART_DIR") else {
        return;
    };
    let file: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let file = if file.ends_with(".svg") {
        file
    } else {
        format!("{file}.svg")
    };
    let _ = std::fs::write(Path::new(&dir).join(file), svg);
}

/// What a chart holds that must keep clear of each other: its texts, markers and lines, and
/// its data points.
#[derive(Default)]
struct Chart {
    labels: Vec<Label>,
    markers: Vec<Marker>,
    lines: Vec<Line>,
    points: Vec<Point>,
}

impl Chart {
    /// Reads every element of the document.
    fn parse(doc: &roxmltree::Document) -> Chart {
        let mut chart = Chart::default();
        for n in doc.descendants().filter(|n| n.is_element()) {
            match n.tag_name().name() {
                "text" => chart.add_text(n),
                "circle" => chart.add_circle(n),
                "rect" => chart.add_rect(n),
                "path" => chart.add_path(n),
                "line" if !has_class(n, "grid") => chart.lines.push(Line {
                    a: (num(n, "x1"), num(n, "y1")),
                    b: (num(n, "x2"), num(n, "y2")),
                    what: format!("line {}", classes(n)),
                    leader_for: n.attribute("data-for").map(str::to_string),
                }),
                _ => {}
            }
        }
        chart
    }

    /// A `<text>` that says something is a label.
    fn add_text(&mut self, n: roxmltree::Node) {
        let lines = text_lines(n);
        let text = lines
            .iter()
            .map(|l| l.0.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if text.trim().is_empty() {
            return;
        }
        self.labels.push(Label {
            bb: text_box(n, &lines),
            id: n.attribute("id").map(str::to_string),
            points: n
                .attribute("data-points")
                .map(|p| p.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            class: classes(n),
            text,
        });
    }

    /// A `<circle>` is a marker, and a data point if its class is `point`.
    fn add_circle(&mut self, n: roxmltree::Node) {
        let (cx, cy) = (num(n, "cx"), num(n, "cy"));
        let r = num(n, "r") + half_stroke(n);
        self.markers.push(Marker {
            shape: Shape::Circle(cx, cy, r),
            what: format!("circle {} at ({cx:.0}, {cy:.0})", classes(n)),
        });
        if has_class(n, "point") {
            self.points.push(Point {
                id: n.attribute("id").expect("point id").to_string(),
                label: n.attribute("data-label").expect("data-label").to_string(),
                cx,
                cy,
                r,
                values: (
                    n.attribute("data-delay-ms").unwrap_or("").to_string(),
                    n.attribute("data-y").unwrap_or("").to_string(),
                ),
            });
        }
    }

    /// A `<rect>` of class `marker` is a marker; the edges of one of class `frame` are lines.
    fn add_rect(&mut self, n: roxmltree::Node) {
        let b = Rect {
            x0: num(n, "x"),
            y0: num(n, "y"),
            x1: num(n, "x") + num(n, "width"),
            y1: num(n, "y") + num(n, "height"),
        };
        if has_class(n, "marker") {
            let h = half_stroke(n);
            self.markers.push(Marker {
                shape: Shape::Box(b.shrink(-h)),
                what: format!("rect {}", classes(n)),
            });
        } else if has_class(n, "frame") {
            let c = [(b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1)];
            for k in 0..4 {
                self.lines.push(Line {
                    a: c[k],
                    b: c[(k + 1) % 4],
                    what: "plot frame".into(),
                    leader_for: None,
                });
            }
        }
    }

    /// A `<path>` of class `marker` is a marker (its bounding box); any other is lines.
    fn add_path(&mut self, n: roxmltree::Node) {
        let class = classes(n);
        let subpaths = path_points(n.attribute("d").expect("path d"));
        if has_class(n, "marker") {
            let h = half_stroke(n);
            let all: Vec<&(f64, f64)> = subpaths.iter().flatten().collect();
            let b = Rect {
                x0: all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) - h,
                y0: all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min) - h,
                x1: all.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max) + h,
                y1: all.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max) + h,
            };
            self.markers.push(Marker {
                shape: Shape::Box(b),
                what: format!("path {class}"),
            });
        } else {
            for sp in subpaths {
                for w in sp.windows(2) {
                    self.lines.push(Line {
                        a: w[0],
                        b: w[1],
                        what: format!("path {class}"),
                        leader_for: None,
                    });
                }
            }
        }
    }

    /// Texts cut off at the canvas' edges, overlapping each other, covering a marker or
    /// crossed by a line (a leader may end at its own label).
    fn clearance_problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        let canvas = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: WIDTH,
            y1: HEIGHT,
        };
        for (i, l) in self.labels.iter().enumerate() {
            let b = &l.bb;
            if b.x0 < canvas.x0 || b.y0 < canvas.y0 || b.x1 > canvas.x1 || b.y1 > canvas.y1 {
                problems.push(format!("{:?} is cut off: {b:?}", l.text));
            }
            for o in &self.labels[i + 1..] {
                if b.overlaps(&o.bb) {
                    problems.push(format!("{:?} overlaps {:?}", l.text, o.text));
                }
            }
            for m in &self.markers {
                let hit = match m.shape {
                    Shape::Circle(cx, cy, r) => b.hits_circle(cx, cy, r),
                    Shape::Box(mb) => b.overlaps(&mb),
                };
                if hit {
                    problems.push(format!("{:?} covers the marker {}", l.text, m.what));
                }
            }
            for s in &self.lines {
                let own = s.leader_for.is_some() && s.leader_for == l.id;
                let bb = if own { b.shrink(1.0) } else { *b };
                if bb.hits_segment(s.a, s.b) {
                    problems.push(format!(
                        "{:?} is crossed by the {} from ({:.0}, {:.0}) to ({:.0}, {:.0})",
                        l.text, s.what, s.a.0, s.a.1, s.b.0, s.b.1
                    ));
                }
            }
        }
        problems
    }

    /// The point labels.
    fn point_labels(&self) -> Vec<&Label> {
        self.labels
            .iter()
            .filter(|l| l.class == "point-label")
            .collect()
    }

    /// Points: each has exactly one label, which names it; overlapping or equal points share
    /// it.
    fn point_problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        let point_labels = self.point_labels();
        let label_of = |id: &str| -> Vec<usize> {
            point_labels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.points.iter().any(|p| p == id))
                .map(|(k, _)| k)
                .collect()
        };
        for p in &self.points {
            let ls = label_of(&p.id);
            if ls.len() != 1 {
                problems.push(format!(
                    "point {} ({}) has {} labels",
                    p.id,
                    p.label,
                    ls.len()
                ));
                continue;
            }
            let text = &point_labels[ls[0]].text;
            let name = p.label.split(" (").next().unwrap_or(&p.label);
            for word in name.split_whitespace() {
                if !text.contains(word) {
                    problems.push(format!(
                        "label {text:?} of point {:?} lacks {word:?}",
                        p.label
                    ));
                }
            }
        }
        for (i, p) in self.points.iter().enumerate() {
            for q in &self.points[i + 1..] {
                let touch = ((p.cx - q.cx).powi(2) + (p.cy - q.cy).powi(2)).sqrt() < p.r + q.r;
                let equal = !p.values.0.is_empty() && p.values == q.values;
                if (touch || equal) && label_of(&p.id) != label_of(&q.id) {
                    problems.push(format!(
                        "points {:?} and {:?} {} but have different labels",
                        p.label,
                        q.label,
                        if equal { "are equal" } else { "overlap" }
                    ));
                }
            }
        }
        problems
    }
}

/// Checks one chart; returns what it counted. Panics with every problem found.
fn check_svg(name: &str, svg: &str) -> Counts {
    dump_chart(name, svg);
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
    let root = doc.root_element();
    assert_eq!(num(root, "width"), WIDTH, "{name}");
    assert_eq!(num(root, "height"), HEIGHT, "{name}");
    let chart = Chart::parse(&doc);
    let mut problems = chart.clearance_problems();
    problems.extend(chart.point_problems());
    assert!(
        problems.is_empty(),
        "{name}: {} problems:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
    Counts {
        charts: 1,
        texts: chart.labels.len(),
        point_labels: chart.point_labels().len(),
        points: chart.points.len(),
        markers: chart.markers.len(),
        lines: chart.lines.len(),
    }
}

/// Checks every SVG in `dir`; returns the counts and the files' names.
fn check_dir(dir: &Path) -> (Counts, Vec<String>) {
    let mut total = Counts::default();
    let mut names = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let svg = std::fs::read_to_string(&path).unwrap();
        total += check_svg(&name, &svg);
        names.push(name);
    }
    (total, names)
}

fn run_eval(traces: &Path, out: &Path) {
    eval::run(&EvalOptions {
        traces: Some(traces.to_path_buf()),
        experiments: Experiment::ALL.to_vec(),
        out: out.to_path_buf(),
        ..EvalOptions::default()
    })
    .expect("evaluation runs");
}

fn expect_every_chart(names: &[String], fig7_links: usize) {
    for want in [
        "fig1-Verizon-LTE-short-down.svg",
        "fig8-averages.svg",
        "summary.svg",
        "confidence.svg",
        "loss.svg",
        "sensitivity.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    assert_eq!(
        names.iter().filter(|n| n.starts_with("fig7-")).count(),
        2 * fig7_links
    );
    assert!(names.iter().any(|n| n.starts_with("distributions-")));
}

#[test]
fn every_chart_of_the_evaluation_on_the_real_traces() {
    let Some(traces) = testdata::require("traces") else {
        return;
    };
    check_evaluation_charts("real traces", &traces, 4);
}

/// Runs every experiment on the traces in `traces` (`links` link pairs), checks every chart it
/// draws, prints what was checked, and checks Figure 1's axis, shading, bin and peak.
fn check_evaluation_charts(what: &str, traces: &std::path::Path, links: usize) {
    let out = tempfile::tempdir().unwrap();
    run_eval(traces, out.path());
    let (counts, names) = check_dir(out.path());
    expect_every_chart(&names, links);
    eprintln!(
        "{what}: {} charts, {} texts ({} point labels for {} points), {} markers, {} lines checked",
        counts.charts,
        counts.texts,
        counts.point_labels,
        counts.points,
        counts.markers,
        counts.lines
    );
    check_figure1(
        &std::fs::read_to_string(out.path().join("fig1-Verizon-LTE-short-down.svg")).unwrap(),
    );
    check_colours(out.path());
    check_delay_ticks(out.path());
    check_sensitivity(out.path());
    check_model(out.path());
}

/// A synthetic link from the paper's model, written as mahimahi traces under the Figure-1
/// link's name so that the evaluation draws every chart, Figure 1 included.
#[test]
fn every_chart_of_the_evaluation_on_a_synthetic_link() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, dir_name) in [(11, "up"), (12, "down")] {
        let trace = SyntheticLink {
            seed,
            duration_s: 150.0,
            ..SyntheticLink::default()
        }
        .generate(format!("Verizon-LTE-short.{dir_name}"));
        let mut text = String::new();
        for ms in trace.opportunities_ms() {
            text.push_str(&format!("{ms}\n"));
        }
        std::fs::write(
            dir.path().join(format!("Verizon-LTE-short.{dir_name}")),
            text,
        )
        .unwrap();
    }
    check_evaluation_charts("synthetic link", dir.path(), 1);
}

/// Figure 1: a logarithmic delay axis, the skipped start shaded and said to be unmeasured,
/// the bin stated, the highest delay written.
fn check_figure1(svg: &str) {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    assert!(texts.iter().any(|t| t.contains("log scale")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("500 ms bins")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.starts_with("not measured")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.starts_with("highest: ")),
        "{texts:?}"
    );
    assert!(doc.descendants().any(|n| has_class(n, "shade")));
    assert!(doc.descendants().any(|n| has_class(n, "reference")));
}

// ---------------------------------------------------------------------------------------
// Colours, delay ticks, and the sensitivity and model charts of an evaluation.

/// The charts (file name, text) in `dir`, by name.
fn charts_in(dir: &Path) -> Vec<(String, String)> {
    let mut charts: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    charts.sort();
    charts
}

/// The colour an element shows: its fill, or its stroke when it has no fill (hollow markers
/// and lines).
fn paint(n: roxmltree::Node) -> String {
    let fill = n.attribute("fill").unwrap_or("").to_ascii_lowercase();
    if fill.is_empty() || fill == "none" || fill == "white" || fill == "#ffffff" {
        n.attribute("stroke").unwrap_or("").to_ascii_lowercase()
    } else {
        fill
    }
}

/// Each series of a chart (every element with `data-series`: legend swatches, data points,
/// their bars) and the colours it is drawn in.
fn series_colours(svg: &str) -> BTreeMap<String, BTreeSet<String>> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for n in doc.descendants().filter(|n| n.is_element()) {
        if let Some(series) = n.attribute("data-series") {
            out.entry(series.to_string()).or_default().insert(paint(n));
        }
    }
    out
}

/// The schemes of an evaluation: the `scheme` column of its results.csv.
fn schemes_of(dir: &Path) -> BTreeSet<String> {
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "scheme")
        .expect("a scheme column");
    r.records()
        .map(|rec| rec.unwrap()[col].to_string())
        .collect()
}

/// Colour problems of the charts `charts` of an evaluation of `schemes`: within a chart a
/// series has one colour and no two series share one; across charts a scheme always has the
/// same colour, and no other series anywhere is drawn in a scheme's colour.
fn colour_problems(charts: &[(String, String)], schemes: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    // colour -> every (series, chart) drawn in it.
    let mut users: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut scheme_colour: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, svg) in charts {
        let series = series_colours(svg);
        let mut owner: BTreeMap<&String, &String> = BTreeMap::new();
        for (s, colours) in &series {
            if colours.len() != 1 {
                problems.push(format!("{name}: series {s:?} is drawn in {colours:?}"));
            }
            for c in colours {
                if let Some(o) = owner.insert(c, s) {
                    problems.push(format!("{name}: {o:?} and {s:?} are both {c}"));
                }
                users
                    .entry(c.clone())
                    .or_default()
                    .insert((s.clone(), name.clone()));
                if schemes.contains(s) {
                    scheme_colour
                        .entry(s.clone())
                        .or_default()
                        .insert(c.clone());
                }
            }
        }
    }
    for (scheme, colours) in &scheme_colour {
        if colours.len() != 1 {
            problems.push(format!(
                "scheme {scheme:?} has colours {colours:?} across charts"
            ));
        }
        for c in colours {
            for (s, chart) in &users[c] {
                if s != scheme {
                    problems.push(format!("{chart}: {s:?} is drawn in {scheme}'s colour {c}"));
                }
            }
        }
    }
    problems
}

/// One colour per scheme across every chart of the evaluation in `dir`, and no two series of
/// one chart in one colour.
fn check_colours(dir: &Path) {
    let charts = charts_in(dir);
    let schemes = schemes_of(dir);
    assert!(
        schemes.contains("sprout") && schemes.contains("cubic"),
        "{schemes:?}"
    );
    let with_series = charts
        .iter()
        .filter(|(_, svg)| !series_colours(svg).is_empty())
        .count();
    assert_eq!(with_series, charts.len(), "every chart names its series");
    let problems = colour_problems(&charts, &schemes);
    assert!(
        problems.is_empty(),
        "{} colour problems:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The labelled values of the horizontal (delay) axis under `frame`: centred tick labels just
/// below it.
fn x_tick_values(doc: &roxmltree::Document, frame: &Rect) -> Vec<f64> {
    doc.descendants()
        .filter(|n| has_class(*n, "tick-label") && n.attribute("text-anchor") == Some("middle"))
        .filter(|n| {
            let (x, y) = (num(*n, "x"), num(*n, "y"));
            y > frame.y1 && y < frame.y1 + 30.0 && x >= frame.x0 - 1.0 && x <= frame.x1 + 1.0
        })
        .filter_map(|n| n.text()?.replace(',', "").parse::<f64>().ok())
        .collect()
}

/// On every scatter chart each point's delay lies between two labelled delay ticks of its
/// plot, so that it can be read off the logarithmic axis.
fn check_delay_ticks(dir: &Path) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (name, svg) in charts_in(dir) {
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let frames: Vec<Rect> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && has_class(*n, "frame"))
            .map(|n| Rect {
                x0: num(n, "x"),
                y0: num(n, "y"),
                x1: num(n, "x") + num(n, "width"),
                y1: num(n, "y") + num(n, "height"),
            })
            .collect();
        for p in doc.descendants().filter(|n| has_class(*n, "point")) {
            let Some(delay) = p
                .attribute("data-delay-ms")
                .and_then(|d| d.parse::<f64>().ok())
            else {
                continue;
            };
            let (cx, cy) = (num(p, "cx"), num(p, "cy"));
            let frame = frames
                .iter()
                .find(|f| cx >= f.x0 && cx <= f.x1 && cy >= f.y0 && cy <= f.y1)
                .unwrap_or_else(|| panic!("{name}: point at ({cx}, {cy}) outside every plot"));
            let ticks = x_tick_values(&doc, frame);
            let d = delay.max(1.0);
            let below = ticks.iter().any(|&t| t <= d * (1.0 + 1e-9));
            let above = ticks.iter().any(|&t| t >= d * (1.0 - 1e-9));
            if !(below && above) {
                problems.push(format!(
                    "{name}: {:?} at {delay} ms is not between labelled ticks {ticks:?}",
                    p.attribute("data-label").unwrap_or("")
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} points");
    assert!(
        problems.is_empty(),
        "{} points off the labelled delay ticks:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// sensitivity.svg: every scheme of the experiment on the uplinks and the downlinks, each
/// mean with bars over the seeds in its scheme's colour.
fn check_sensitivity(dir: &Path) {
    let svg = std::fs::read_to_string(dir.join("sensitivity.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_lowercase))
        .collect();
    for want in ["uplink", "downlink"] {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "no {want}: {texts:?}"
        );
    }
    let csv = std::fs::read_to_string(dir.join("sensitivity.csv")).unwrap();
    let rows = csv.lines().count() - 1;
    let points: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| has_class(*n, "point"))
        .collect();
    assert_eq!(points.len(), rows, "a point per link, direction and scheme");
    let bars: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| has_class(*n, "spread"))
        .collect();
    assert!(
        bars.len() >= rows,
        "{} spread bars for {rows} points",
        bars.len()
    );
    let colours = series_colours(&svg);
    for scheme in schemes_of(dir).iter().filter(|s| *s != "omniscient") {
        if csv.contains(&format!(",{scheme},")) {
            assert!(
                colours.contains_key(scheme),
                "{scheme} missing: {colours:?}"
            );
        }
    }
}

/// model.svg: its legend says what its series are, and the default variant's marker is not
/// covered by a marker drawn after it.
fn check_model(dir: &Path) {
    let svg = std::fs::read_to_string(dir.join("model.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert!(doc
        .descendants()
        .any(|n| n.has_tag_name("text") && n.text() == Some("Model variant")));
    assert!(!doc
        .descendants()
        .any(|n| n.has_tag_name("text") && n.text() == Some("Scheme")));
    let points: Vec<roxmltree::Node> = doc
        .descendants()
        .filter(|n| has_class(*n, "point"))
        .collect();
    let k = points
        .iter()
        .position(|n| {
            n.attribute("data-label")
                .is_some_and(|l| l.contains("(default)"))
        })
        .expect("the default variant's point");
    let (cx, cy) = (num(points[k], "cx"), num(points[k], "cy"));
    for later in &points[k + 1..] {
        let d = (num(*later, "cx") - cx).hypot(num(*later, "cy") - cy);
        assert!(
            d > num(*later, "r"),
            "the default variant is under {:?}",
            later.attribute("data-label")
        );
    }
}

/// A check of the charts an evaluation wrote into a folder.
type FolderCheck = fn(&Path);

/// The checks above on the charts of an evaluation already written into the folder
/// `SPROUT_CHECK_DIR` (`sprout eval --out DIR`); each check's failure is reported.
#[test]
#[ignore = "needs SPROUT_CHECK_DIR"]
fn checks_of_an_evaluation_folder() {
    let dir =
        std::path::PathBuf::from(std::env::var("SPROUT_CHECK_DIR").expect("SPROUT_CHECK_DIR"));
    let checks: [(&str, FolderCheck); 4] = [
        ("colours", check_colours),
        ("delay ticks", check_delay_ticks),
        ("sensitivity", check_sensitivity),
        ("model", check_model),
    ];
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, check)| std::panic::catch_unwind(|| check(&dir)).is_err())
        .map(|(name, _)| *name)
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
}

#[test]
fn colour_checks_catch_shared_and_inconsistent_colours() {
    let chart = |series: &[(&str, &str)]| -> String {
        let mut s = String::from(r#"<svg xmlns="http://www.w3.org/2000/svg">"#);
        for (name, colour) in series {
            s.push_str(&format!(
                r#"<circle class="legend-marker" cx="1" cy="1" r="1" fill="{colour}" data-series="{name}"/>"#
            ));
        }
        s.push_str("</svg>");
        s
    };
    let schemes: BTreeSet<String> = ["sprout", "cubic"].map(String::from).into();
    let ok = vec![
        (
            "a.svg".to_string(),
            chart(&[("sprout", "#d62728"), ("cubic", "#1f77b4")]),
        ),
        (
            "b.svg".to_string(),
            chart(&[("sprout", "#d62728"), ("x 5%", "#123456")]),
        ),
    ];
    assert!(colour_problems(&ok, &schemes).is_empty());
    // Two series of one chart in one colour.
    let shared = vec![(
        "a.svg".to_string(),
        chart(&[("x 5%", "#123456"), ("x 9%", "#123456")]),
    )];
    assert_eq!(colour_problems(&shared, &schemes).len(), 1);
    // A scheme in two colours on two charts.
    let moved = vec![
        ("a.svg".to_string(), chart(&[("cubic", "#1f77b4")])),
        ("b.svg".to_string(), chart(&[("cubic", "#000000")])),
    ];
    assert!(!colour_problems(&moved, &schemes).is_empty());
    // Another series in a scheme's colour.
    let borrowed = vec![
        ("a.svg".to_string(), chart(&[("cubic", "#1f77b4")])),
        ("b.svg".to_string(), chart(&[("x 5%", "#1f77b4")])),
    ];
    assert_eq!(colour_problems(&borrowed, &schemes).len(), 1);
}

// ---------------------------------------------------------------------------------------
// Hand-made and random charts.

fn pt(label: &str, kbps: f64, ms: f64, paper: bool) -> ChartPoint {
    ChartPoint {
        label: label.into(),
        throughput_kbps: kbps,
        delay_ms: ms,
        paper,
    }
}

#[test]
fn coincident_points_share_one_label() {
    let pts = vec![
        pt("cubic", 4900.0, 21000.0, false),
        pt("reno", 4900.0, 21000.0, false),
        pt("compound", 4900.0, 21000.0, false),
        pt("vegas", 3000.0, 150.0, false),
        pt("vegas", 3010.0, 152.0, true),
        pt("ledbat", 2000.0, 400.0, false),
        pt("bbr", 2030.0, 410.0, false),
        pt("sprout", 3000.0, 60.0, false),
    ];
    let svg = throughput_delay_chart("Coincident points", &pts);
    check_svg("coincident", &svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| has_class(*n, "point-label"))
        .filter_map(|n| n.text())
        .collect();
    assert!(labels.contains(&"cubic = reno = compound"), "{labels:?}");
    assert!(labels.contains(&"vegas"), "{labels:?}");
    assert!(labels.contains(&"ledbat ≈ bbr"), "{labels:?}");
    assert_eq!(labels.len(), 4, "{labels:?}");
}

#[test]
fn crowded_points_and_long_names() {
    let mut pts = Vec::new();
    for k in 0..18 {
        // About 24 px apart along a diagonal: crowded, but no two markers touch.
        let f = k as f64;
        pts.push(pt(
            &format!("scheme number {k} Verizon"),
            1000.0 + 37.0 * f,
            200.0 * 1.1f64.powf(f),
            k % 3 == 0,
        ));
    }
    // Six points on top of each other with long names: one label of several lines.
    for k in 0..6 {
        pts.push(pt(
            &format!("long scheme name {k} TMobile"),
            500.0,
            3000.0,
            k % 2 == 0,
        ));
    }
    pts.push(pt("a very long scheme name indeed", 900.0, 180.0, false));
    check_svg("crowded", &throughput_delay_chart("Crowded", &pts));
    let u: Vec<UtilizationPoint> = (0..12)
        .map(|k| UtilizationPoint {
            label: format!("s{k}"),
            utilization: 0.5 + 0.01 * k as f64,
            delay_ms: 300.0 + k as f64,
            paper: k % 2 == 1,
        })
        .collect();
    check_svg(
        "crowded utilization",
        &utilization_delay_chart("Crowded", &u),
    );
    check_svg("empty", &throughput_delay_chart("empty", &[]));
    check_svg(
        "a title far too long for the width of the chart",
        &throughput_delay_chart(&"A title far too long for the chart ".repeat(4), &pts),
    );
}

/// A synthetic series: a rate that swings, one outage with a long delay spike, a skipped start.
fn series(bin_s: f64, len_s: f64, spike_ms: f64) -> Vec<TimeSeriesPoint> {
    let n = (len_s / bin_s) as usize;
    (0..n)
        .map(|i| {
            let t = i as f64 * bin_s;
            let cap = 6000.0 + 5000.0 * (t * 0.2).sin();
            let delay = if (60.0..64.0).contains(&t) {
                spike_ms * (t - 59.0) / 5.0
            } else {
                70.0 + 40.0 * (t * 1.3).sin().abs()
            };
            TimeSeriesPoint {
                t_s: t,
                bin_s,
                capacity_kbps: cap,
                throughput_kbps: cap * 0.6,
                goodput_kbps: cap * 0.55,
                delay_ms: delay,
                delay_data_ms: delay * 1.2,
            }
        })
        .collect()
}

#[test]
fn time_series_charts() {
    for (bin, len, spike, skip) in [
        (0.5, 140.0, 3000.0, 60.0),
        (0.1, 30.0, 900.0, 10.0),
        (1.0, 800.0, 60000.0, 60.0),
        (0.5, 50.0, 200.0, 60.0),
    ] {
        let pts = series(bin, len, spike);
        let svg = time_series_chart_measured("Synthetic series", &pts, skip);
        check_svg(&format!("series {bin} s bins, {len} s"), &svg);
    }
    check_svg(
        "series, nothing shaded",
        &time_series_chart("x", &series(0.5, 100.0, 1000.0)),
    );
    check_svg("empty series", &time_series_chart("empty", &[]));
    // Delays all over a 6-decade axis: no room in the delay panel for the highest's label.
    let noisy: Vec<TimeSeriesPoint> = series(0.5, 140.0, 1000.0)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let u = ((i as f64 * 12.9898).sin() * 43758.5453).fract().abs();
            let delay = 10f64.powf(6.0 * u);
            TimeSeriesPoint {
                delay_ms: delay,
                delay_data_ms: delay,
                ..p
            }
        })
        .collect();
    check_svg(
        "noisy series",
        &time_series_chart_measured("Noisy", &noisy, 60.0),
    );
    let svg = time_series_chart_measured("Synthetic", &series(0.5, 140.0, 3000.0), 60.0);
    check_figure1(&svg);
}

/// The tunnel experiment's chart: two runs' delays in two panels, with gaps, a spike to
/// minutes, one panel only, nothing at all.
#[test]
fn delay_over_time_charts() {
    let line = |label: &str, base: f64, spike: f64, gap: bool| DelaySeries {
        label: label.into(),
        bins: (0..240)
            .filter(|i| !(gap && (100..110).contains(i)))
            .map(|i| {
                let t = i as f64 * 0.5;
                let d = base * (1.0 + 0.5 * (t * 0.7).sin().abs()) + spike * (t / 120.0).powi(2);
                (t, d)
            })
            .collect(),
    };
    let panels = vec![
        DelayPanel {
            axis_title: "Downlink delay (ms)".into(),
            series: vec![
                line("direct", 300.0, 9000.0, true),
                line("through the tunnel", 40.0, 0.0, false),
            ],
        },
        DelayPanel {
            axis_title: "Uplink delay (ms)".into(),
            series: vec![
                line("direct", 25.0, 10.0, false),
                line("through the tunnel", 30.0, 200.0, true),
            ],
        },
    ];
    let caption = "One-way delay of the interactive stream by send time, the highest in each \
                   500 ms bin; shaded: the start, not measured";
    for skip in [0.0, 60.0, 500.0] {
        let svg = delay_over_time_chart("Tunnel delays", &panels, 0.5, skip, caption);
        check_svg(&format!("delay over time, skip {skip}"), &svg);
        assert_eq!(
            svg.matches(r#"class="delay""#).count(),
            6,
            "one line per run of bins"
        );
    }
    let huge = vec![DelayPanel {
        axis_title: "A rather long axis title for a single panel (ms, log scale)".into(),
        series: vec![line("direct", 1.0, 600_000.0, false)],
    }];
    check_svg(
        "delay over time, one panel",
        &delay_over_time_chart(&"Long title ".repeat(12), &huge, 1.0, 10.0, ""),
    );
    check_svg(
        "delay over time, empty",
        &delay_over_time_chart("Nothing", &[], 0.5, 60.0, "nothing"),
    );
}

/// The calibration experiment's chart (forecasts met against stated confidence): the paper's
/// and the wide model over seven confidences and Sprout-EWMA's flat line, in two panels, from
/// well calibrated to far off (coverage down to 3%), a missing value; no panel at all.
#[test]
fn calibration_charts() {
    let confidences = [0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98];
    let panel = |title: &str, shift: f64| CalibrationPanel {
        title: title.into(),
        series: ["sprout", "sprout-wide"]
            .iter()
            .enumerate()
            .map(|(k, s)| CalibrationSeries {
                label: (*s).into(),
                points: confidences
                    .iter()
                    .map(|&c| {
                        let v = if k == 1 && c == 0.85 {
                            f64::NAN
                        } else {
                            (c - shift * (1.0 + k as f64)).clamp(0.0, 1.0)
                        };
                        (c, v)
                    })
                    .collect(),
            })
            .collect(),
        flat: vec![("sprout-ewma".into(), 0.6 - shift)],
    };
    let caption = [
        "Ideal observation: every opportunity fed to the estimator per 20 ms tick.",
        "Sprout-EWMA has no confidence: its share met is the dashed horizontal line.",
    ];
    for (what, shift) in [("calibrated", 0.0), ("off", 0.2), ("far off", 0.47)] {
        let svg = calibration_chart(
            "Forecast calibration",
            &[
                panel("1 tick ahead (20 ms)", shift),
                panel("8 ticks ahead", shift),
            ],
            &caption,
        );
        check_svg(&format!("calibration, {what}"), &svg);
        let colours = series_colours(&svg);
        assert_eq!(colours["sprout"].iter().next().unwrap(), "#d62728");
        assert_eq!(colours["sprout-ewma"].iter().next().unwrap(), "#ff7f0e");
        assert!(colour_problems(&[(what.into(), svg.clone())], &BTreeSet::new()).is_empty());
    }
    check_svg(
        "calibration, empty",
        &calibration_chart("Nothing", &[], &[]),
    );
}

/// The frontier experiment's chart (utilization against self-inflicted delay): four models'
/// sweeps as measured on the paper's links (issue 40's table), close together and crossing,
/// in two panels; a missing value; one panel alone; no panel at all.
#[test]
fn frontier_charts() {
    let series = |label: &str, pts: &[(f64, f64, f64)]| FrontierSeries {
        label: label.into(),
        points: pts.to_vec(),
    };
    let all = FrontierPanel {
        title: "the 8 link directions (average)".into(),
        series: vec![
            series(
                "sprout",
                &[
                    (0.5, 0.789, 1026.0),
                    (0.7, 0.77, 725.0),
                    (0.8, 0.731, 603.0),
                    (0.85, 0.686, 552.0),
                    (0.9, 0.615, 496.0),
                    (0.95, 0.468, 383.0),
                ],
            ),
            series(
                "sprout-wide",
                &[
                    (0.5, 0.809, 873.0),
                    (0.7, 0.775, 652.0),
                    (0.8, 0.729, 587.0),
                    (0.85, 0.679, 490.0),
                    (0.9, f64::NAN, 397.0),
                    (0.95, 0.442, 339.0),
                ],
            ),
            series(
                "wide-nb",
                &[
                    (0.5, 0.805, 922.0),
                    (0.7, 0.768, 584.0),
                    (0.8, 0.714, 518.0),
                    (0.95, 0.357, 334.0),
                ],
            ),
            series(
                "sprout-ewma",
                &[
                    (0.03125, 0.769, 541.0),
                    (0.0625, 0.788, 532.0),
                    (0.125, 0.803, 554.0),
                    (0.25, 0.805, 703.0),
                    (0.5, 0.796, 827.0),
                ],
            ),
        ],
    };
    let mut one = all.clone();
    one.title = "TMobile-UMTS-driving (both directions, average)".into();
    for s in &mut one.series {
        for p in &mut s.points {
            p.2 *= 0.8;
        }
    }
    let caption = ["Both directions loaded, 20 ms each way, whole traces, the first 60 s skipped"];
    let svg = frontier_chart("Frontier", &[all.clone(), one], &caption);
    check_svg("frontier", &svg);
    let colours = series_colours(&svg);
    assert_eq!(colours["sprout"].iter().next().unwrap(), "#d62728");
    assert_eq!(colours["sprout-ewma"].iter().next().unwrap(), "#ff7f0e");
    assert!(colour_problems(&[("frontier".into(), svg)], &BTreeSet::new()).is_empty());
    check_svg(
        "frontier, one panel",
        &frontier_chart("Frontier", &[all], &caption),
    );
    check_svg("frontier, empty", &frontier_chart("Nothing", &[], &[]));
}

/// The aqm experiment's chart: four queue panels side by side, five schemes on each as
/// measured on the paper's links (two queues with the same figures, close points), the
/// paper's Cubic over CoDel on the CoDel panel; and a run where a scheme is missing.
#[test]
fn aqm_charts() {
    use sprout_eval::aqm::{AqmAverage, AqmResults, AqmSettings, ALL};
    // Utilization % / self-inflicted delay ms, per scheme and queue (the 8 directions).
    let table: [(&str, [(f64, f64); 4]); 5] = [
        (
            "sprout",
            [(45.4, 339.0), (46.3, 189.0), (46.1, 261.0), (46.3, 189.0)],
        ),
        (
            "sprout-ewma",
            [(76.1, 434.0), (81.9, 252.0), (80.8, 487.0), (81.9, 252.0)],
        ),
        (
            "cubic",
            [(59.7, 944.0), (64.1, 793.0), (67.0, 1101.0), (64.1, 793.0)],
        ),
        (
            "bbr",
            [(57.4, 1149.0), (60.7, 779.0), (58.1, 1334.0), (60.7, 779.0)],
        ),
        (
            "copa",
            [(46.3, 635.0), (48.5, 598.0), (48.0, 724.0), (48.5, 598.0)],
        ),
    ];
    let settings = AqmSettings::default();
    let mut averages = Vec::new();
    for (scheme, cells) in table {
        for (q, (u, d)) in settings.queues.iter().zip(cells) {
            averages.push(AqmAverage {
                group: ALL.into(),
                queue: q.clone(),
                scheme: scheme.into(),
                utilization: u / 100.0,
                throughput_kbps: 1000.0,
                self_inflicted_ms: d,
                drop_share: 0.01,
                directions: 8,
            });
        }
    }
    let mut res = AqmResults {
        settings,
        links: (0..4).map(|i| format!("link{i}")).collect(),
        source: "test".into(),
        rows: Vec::new(),
        averages,
        stream: Vec::new(),
        simulations: 82,
        wall_s: 30.0,
    };
    let svg = sprout_eval::report::aqm_chart(&res);
    check_svg("aqm", &svg);
    let colours = series_colours(&svg);
    assert_eq!(colours["cubic"].iter().next().unwrap(), "#1f77b4");
    assert_eq!(
        colours["cubic-codel (paper)"].iter().next().unwrap(),
        "#17becf"
    );
    assert!(colour_problems(&[("aqm".into(), svg)], &BTreeSet::new()).is_empty());
    res.averages.retain(|a| a.scheme != "bbr");
    check_svg("aqm, bbr missing", &sprout_eval::report::aqm_chart(&res));
}

/// The interactive experiment's chart (application-level delay against offered rate): six
/// schemes over five rates in two panels, with delays from a millisecond to minutes, never
/// delivered (the "never" band) and missing; one rate only; a huge range; nothing at all.
#[test]
fn app_delay_charts() {
    let schemes = ["sprout", "sprout-ewma", "cubic", "bbr", "vegas", "direct"];
    let rates = [250.0, 500.0, 1000.0, 2000.0, 4000.0];
    let panel = |title: &str, scale: f64| AppDelayPanel {
        title: title.into(),
        series: schemes
            .iter()
            .enumerate()
            .map(|(k, s)| AppDelaySeries {
                label: (*s).into(),
                points: rates
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| {
                        let d = match (k, i) {
                            (_, 4) => f64::INFINITY,
                            (2, 3) => f64::NAN,
                            _ => scale * (1.0 + k as f64) * 3f64.powi(i as i32),
                        };
                        (r, d)
                    })
                    .collect(),
            })
            .collect(),
    };
    let caption = [
        "Each point: the median over the link directions of a run's p95 delay.",
        "\"never\": half the directions or more left over 5% of the messages undelivered.",
    ];
    let two = [panel("constant-rate stream", 20.0), panel("video", 30.0)];
    let svg = app_delay_chart("Application-level p95 delay", &two, &caption);
    check_svg("app delay", &svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let never = doc
        .descendants()
        .find(|n| has_class(*n, "tick-label") && n.text() == Some("never"))
        .expect("a never label");
    assert_eq!(never.attribute("text-anchor"), Some("end"));
    // One colour per scheme, each its colour on every other chart.
    let colours = series_colours(&svg);
    assert_eq!(colours.len(), schemes.len());
    assert!(colour_problems(&[("app delay".into(), svg.clone())], &BTreeSet::new()).is_empty());
    assert_eq!(colours["direct"].iter().next().unwrap(), "#6b4226");
    assert_eq!(colours["sprout"].iter().next().unwrap(), "#d62728");

    let one_rate: Vec<AppDelayPanel> = two
        .iter()
        .map(|p| AppDelayPanel {
            title: "A long panel title that has to shrink to fit over its own panel".into(),
            series: p
                .series
                .iter()
                .map(|s| AppDelaySeries {
                    label: s.label.clone(),
                    points: s.points[..1].to_vec(),
                })
                .collect(),
        })
        .collect();
    check_svg(
        "app delay, one rate",
        &app_delay_chart(&"Long title ".repeat(12), &one_rate, &caption),
    );
    check_svg(
        "app delay, a huge range",
        &app_delay_chart("Huge", &[panel("one", 0.01), panel("two", 3000.0)], &[]),
    );
    check_svg("app delay, empty", &app_delay_chart("Nothing", &[], &[]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random point sets, up to 24 points, some on top of each other, some far apart.
    #[test]
    fn random_scatter_charts_are_clear(
        raw in prop::collection::vec(
            (0usize..12, 0.0f64..1.0, 0.0f64..1.0, any::<bool>(), 0usize..4),
            0..24,
        ),
        spread in 0.05f64..4.0,
    ) {
        let names = ["sprout", "sprout-ewma", "cubic", "reno", "vegas", "ledbat", "bbr",
                     "compound", "cubic-codel", "sprout 95%", "down 10%", "bbr TMobile"];
        let mut pts: Vec<ChartPoint> = Vec::new();
        for (k, x, y, paper, dup) in raw {
            let p = pt(names[k], 100.0 + 9000.0 * y, 10f64.powf(1.5 + spread * x), paper);
            // Some points repeat an earlier point's values exactly.
            if dup == 0 && !pts.is_empty() {
                let q = pts[pts.len() / 2].clone();
                pts.push(ChartPoint { label: p.label, paper: p.paper, ..q });
            } else {
                pts.push(p);
            }
        }
        check_svg("random", &throughput_delay_chart("Random points", &pts));
    }

    /// Random series: any rates, delays from 1 ms to minutes, any bin, any skipped start.
    #[test]
    fn random_time_series_are_clear(
        raw in prop::collection::vec((0.0f64..30000.0, 0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0), 1..400),
        bin_s in 0.05f64..5.0,
        skip_frac in -0.2f64..1.2,
    ) {
        let pts: Vec<TimeSeriesPoint> = raw
            .iter()
            .enumerate()
            .map(|(i, &(cap, used, d, dd))| {
                let delay = 10f64.powf(6.0 * d * d);
                TimeSeriesPoint {
                    t_s: i as f64 * bin_s,
                    bin_s,
                    capacity_kbps: cap,
                    throughput_kbps: cap * used,
                    goodput_kbps: cap * used * 0.9,
                    delay_ms: delay,
                    delay_data_ms: delay * (1.0 + dd),
                }
            })
            .collect();
        let skip = skip_frac * bin_s * raw.len() as f64;
        check_svg("random series", &time_series_chart_measured("Random series", &pts, skip));
    }
}

#[test]
fn width_estimate_is_never_below_the_flat_floor() {
    for s in [
        "",
        "iiii",
        "sprout-ewma",
        "WWW",
        "1,000",
        "reno = compound",
        "ledbat ≈ bbr",
    ] {
        let n = s.chars().count() as f64;
        assert!(text_width(s, 12.0, false) >= n * 12.0 * CHAR_WIDTH_EM);
        assert!(text_width(s, 12.0, true) >= n * 12.0 * BOLD_CHAR_WIDTH_EM);
    }
}

/// `sprout traces plot`'s chart (trace_plot over rate_over_time_chart): the paper's pairs (when
/// ../shared/traces is there), synthetic pairs, a link that is mostly outage, rates from
/// kbit/s to Gbit/s, fine bins, and sixteen traces with long names on one chart.
#[test]
fn trace_plot_charts() {
    use sprout_eval::trace_plot::plot_svg;
    use sprout_link::{constant_rate_trace, Trace};

    let mut checked = 0;
    if let Some(dir) = testdata::require("traces") {
        let mut all = Vec::new();
        for (name, up, down) in Trace::find_pairs(&dir).unwrap() {
            let pair = vec![
                (up.display().to_string(), Trace::load(&up).unwrap()),
                (down.display().to_string(), Trace::load(&down).unwrap()),
            ];
            for bin in [1000, 100] {
                let svg = plot_svg(&pair, bin, None).unwrap();
                check_svg(&format!("trace plot {name} {bin} ms"), &svg);
                checked += 1;
            }
            all.extend(pair);
        }
        check_svg("trace plot all", &plot_svg(&all, 1000, None).unwrap());
        checked += 1;
    }
    let brownian = |seed: u64, s: f64| {
        SyntheticLink {
            seed,
            duration_s: s,
            ..SyntheticLink::default()
        }
        .generate("b")
    };
    let pair = vec![
        ("syn.up".to_string(), brownian(1, 120.0)),
        ("syn.down".to_string(), brownian(2, 90.0)),
    ];
    // 1 ms bins over 120 s would be 120,000 steps: refused.
    assert!(plot_svg(&pair, 1, None)
        .unwrap_err()
        .to_string()
        .contains("more than 100000 bins"));
    for bin in [2, 20, 500, 1000, 60_000] {
        let svg = plot_svg(&pair, bin, None).unwrap();
        check_svg(&format!("trace plot synthetic {bin} ms"), &svg);
        checked += 1;
    }
    let outage = Trace::from_opportunities_ms("o", vec![5, 6, 100_000]).unwrap();
    let fast = constant_rate_trace("f", 50_000.0, 2.0).unwrap();
    let slow = constant_rate_trace("s", 0.02, 600.0).unwrap();
    for (name, set) in [
        ("outage", vec![("o.down".to_string(), outage.clone())]),
        ("fast", vec![("f".to_string(), fast.clone())]),
        (
            "mixed",
            vec![
                ("f.up".to_string(), fast),
                ("s.down".to_string(), slow),
                ("o".to_string(), outage),
            ],
        ),
    ] {
        check_svg(
            &format!("trace plot {name}"),
            &plot_svg(&set, 1000, None).unwrap(),
        );
        checked += 1;
    }
    let many: Vec<(String, Trace)> = (0..16)
        .map(|k| {
            (
                format!(
                    "a-rather-long-trace-name-from-a-measurement-campaign-{k}.{}",
                    if k % 2 == 0 { "up" } else { "down" }
                ),
                brownian(k, 30.0 + k as f64),
            )
        })
        .collect();
    let svg = plot_svg(&many, 1000, Some(&"A long title ".repeat(10))).unwrap();
    check_svg("trace plot sixteen", &svg);
    assert_eq!(svg.matches(r#"class="rate""#).count(), 16);
    checked += 1;
    assert!(checked >= 9);
}

/// CIE L*, hue angle (degrees) and chroma of an `#rrggbb` colour (sRGB, D65).
fn lightness_hue_chroma(hex: &str) -> (f64, f64, f64) {
    let channel = |k: usize| {
        let c = f64::from(u8::from_str_radix(&hex[1 + 2 * k..3 + 2 * k], 16).unwrap()) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let (r, g, b) = (channel(0), channel(1), channel(2));
    let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
    let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
    let f = |v: f64| {
        if v > 0.008856 {
            v.cbrt()
        } else {
            7.787 * v + 16.0 / 116.0
        }
    };
    let (a, bb) = (500.0 * (f(x) - f(y)), 200.0 * (f(y) - f(z)));
    (
        116.0 * f(y) - 16.0,
        bb.atan2(a).to_degrees().rem_euclid(360.0),
        a.hypot(bb),
    )
}

/// Whether two series colours are clearly apart as thin lines and small markers: their hues
/// (35 degrees counting as much as 40 of lightness) or, for a grey, lightness alone. Sprout's
/// red against Sprout-EWMA's orange passes; the dark red and the olive and gold that the
/// frontier chart once drew next to Sprout's red and to each other do not.
fn colours_apart(a: &str, b: &str) -> bool {
    let ((l1, h1, c1), (l2, h2, c2)) = (lightness_hue_chroma(a), lightness_hue_chroma(b));
    let hue = if c1 < 15.0 || c2 < 15.0 {
        0.0
    } else {
        let d = (h1 - h2).abs();
        d.min(360.0 - d)
    };
    hue / 35.0 + (l1 - l2).abs() / 40.0 >= 1.0
}

#[test]
fn the_colour_distance_flags_near_identical_pairs() {
    assert!(!colours_apart("#d62728", "#67000d"), "red, dark red");
    assert!(!colours_apart("#8ca252", "#bd9e39"), "olive, gold");
    assert!(colours_apart("#d62728", "#ff7f0e"), "red, orange");
    assert!(colours_apart("#1f77b4", "#17becf"), "blue, cyan");
}

/// The frontier experiment's chart as its report draws it, on every group a full run has
/// (the 8 directions, TMobile-UMTS-driving, the links scaled x4 and x16, the synthetic
/// links: five panels) with all six models: short panel titles that keep apart (five long
/// ones once ran into each other, and the axis notes under each panel too), the groups'
/// long names in the caption, and six colours clearly apart.
#[test]
fn frontier_chart_of_a_full_run() {
    use sprout_eval::frontier::{FrontierAverage, FrontierResults, FrontierSettings, ALL};
    let settings = FrontierSettings::default();
    let links: Vec<String> = [
        "ATT-LTE-driving",
        "TMobile-UMTS-driving",
        "Verizon-EVDO-driving",
        "Verizon-LTE-short",
    ]
    .map(String::from)
    .to_vec();
    let synthetic = vec!["paper model, seed 1".to_string(), "stepwise, seed 1".into()];
    let sets = vec![
        ("x4".to_string(), links.clone()),
        ("x16".to_string(), links.clone()),
        ("synthetic".to_string(), synthetic),
    ];
    let mut res = FrontierResults {
        settings: settings.clone(),
        links,
        sets,
        source: "../shared/traces".into(),
        rows: Vec::new(),
        averages: Vec::new(),
        verdicts: Vec::new(),
        simulations: 0,
        wall_s: 0.0,
    };
    let groups = res.verdict_groups();
    assert_eq!(groups.len(), 5, "{groups:?}");
    for (g, group) in groups.iter().enumerate() {
        for (m, model) in settings.models.iter().enumerate() {
            let ewma = model == "sprout-ewma";
            let values = if ewma {
                &settings.gains
            } else {
                &settings.confidences
            };
            for (k, &value) in values.iter().enumerate() {
                res.averages.push(FrontierAverage {
                    group: group.clone(),
                    model: model.clone(),
                    knob: if ewma { "gain" } else { "confidence" }.into(),
                    value,
                    utilization: 0.82 - 0.05 * k as f64 - 0.01 * (m + g) as f64,
                    self_inflicted_ms: 1000.0 * 0.85f64.powi(k as i32) * (1.0 + 0.04 * m as f64),
                    directions: 8,
                });
            }
        }
    }
    assert!(groups[0] == ALL);
    let out = tempfile::tempdir().unwrap();
    sprout_eval::report::write_frontier(out.path(), &res).unwrap();
    let svg = std::fs::read_to_string(out.path().join("frontier.svg")).unwrap();
    check_svg("frontier, a full run", &svg);
    assert_eq!(svg.matches(r#"class="frame""#).count(), 5);
    for title in [
        ">8 directions<",
        ">TMobile-UMTS<",
        ">scaled x4<",
        ">scaled x16<",
        ">synthetic<",
    ] {
        assert!(svg.contains(title), "{title}");
    }
    assert!(
        svg.contains("TMobile-UMTS-driving&apos;s 2") || svg.contains("TMobile-UMTS-driving's 2")
    );
    let colours = series_colours(&svg);
    assert_eq!(colours.len(), 6, "{colours:?}");
    assert_eq!(colours["sprout"].iter().next().unwrap(), "#d62728");
    assert_eq!(colours["sprout-ewma"].iter().next().unwrap(), "#ff7f0e");
    let all: Vec<(&String, &String)> = colours
        .iter()
        .map(|(label, c)| {
            assert_eq!(c.len(), 1, "{label}: {c:?}");
            (label, c.iter().next().unwrap())
        })
        .collect();
    for (i, (l1, c1)) in all.iter().enumerate() {
        for (l2, c2) in &all[i + 1..] {
            assert!(colours_apart(c1, c2), "{l1} {c1} and {l2} {c2} look alike");
        }
    }
}

//! Figure 1: a time series of one run, capacity and throughput above, delay below on a
//! logarithmic axis, the unmeasured start shaded and the highest delay marked and written.

use sprout_sim::metrics::TimeSeriesPoint;

use super::axes::{
    ceil125, floor125, fmt_duration, fmt_num, x_tick, y_tick_label, Linear, LogAxis,
};
use super::geometry::{edges, polyline_segs, BBox, Seg};
use super::placement::Placer;
use super::style::{AXIS, GRID, HALO, HEIGHT, MUTED, WIDTH};
use super::svg::{polyline_d, title_text, Svg};
use super::text::{
    box_from_top, fit_size, text_pos, text_width, Anchor, Font, ASCENT_EM, DESCENT_EM, PAD,
};
use super::time_panels::{legend_rows, step_points, time_title, Swatch, TimeAxis};

/// Colour of the capacity area.
const CAP: &str = "#9a9a9a";
/// Colour of the throughput line.
const TPUT: &str = "#1f5fb4";
/// Colour of the delay line (and the peak's marker and label).
const DELAY: &str = "#c62828";
/// Colour of the data-only delay line.
const DDATA: &str = "#ef8a00";
/// Colour of the 100 ms target line.
const TARGET: &str = "#444444";

/// A Figure-1-style time series (SVG text); see [`time_series_chart_measured`]. Nothing is
/// shaded as unmeasured.
pub fn time_series_chart(title: &str, points: &[TimeSeriesPoint]) -> String {
    time_series_chart_measured(title, points, 0.0)
}

/// A Figure-1-style time series (SVG text). Top panel: the trace's capacity (grey, filled)
/// and the delivered throughput (blue line), kbit/s, against time in seconds. Bottom panel:
/// the per-bin maximum of the all-packet delay function (red), ms, on a logarithmic axis
/// from a round value below the typical delays to one above the highest, with a dotted 100 ms
/// target line and the highest value marked and written; the data-only delay is added
/// (orange, dashed) where it differs. Points are the bins of
/// [`sprout_sim::metrics::time_series`], drawn as steps over each bin, and a caption states the bin
/// length. The time before `measured_from_s` (the start-up the metrics skip) is shaded in
/// both panels and labelled "not measured"; 0 shades nothing.
pub fn time_series_chart_measured(
    title: &str,
    points: &[TimeSeriesPoint],
    measured_from_s: f64,
) -> String {
    let data = Series::new(points, measured_from_s);
    let mut svg = Svg::new(title);
    title_text(&mut svg, title);
    let lay = Layout::new(&mut svg, &data);
    let mut placer = Placer::default();
    draw_grid(&mut svg, &lay, &mut placer);
    if data.shaded {
        for panel in [&lay.top, &lay.bottom] {
            svg.rect(
                "shade",
                &BBox {
                    x0: lay.time.x(data.t0),
                    x1: lay.time.x(data.shade_to),
                    ..*panel
                },
                "#000000",
                "none",
                r#"fill-opacity="0.07""#,
            );
        }
    }
    draw_rates(&mut svg, &lay, &data, &mut placer);
    draw_delays(&mut svg, &lay, &data, &mut placer);
    let peak = peak_mark(&mut svg, &lay, &data, &mut placer);
    if data.shaded {
        not_measured_label(&mut svg, &lay, &data, &mut placer);
    }
    let peak_in_caption = peak.and_then(|peak| peak_label(&mut svg, &lay, &data, placer, peak));
    titles_and_caption(&mut svg, &lay, &data, peak_in_caption);
    svg.finish()
}

/// The end of a point's bin, s.
fn bin_end(p: &TimeSeriesPoint) -> f64 {
    p.t_s + if p.bin_s > 0.0 { p.bin_s } else { 0.0 }
}

/// The points to draw (those with finite values), their time span and what is shaded.
struct Series<'a> {
    pts: Vec<&'a TimeSeriesPoint>,
    /// Start of the first bin, s.
    t0: f64,
    /// End of the last bin, s.
    t1: f64,
    /// Whether the data-only delay differs somewhere from the all-packet delay.
    has_data_delay: bool,
    /// End of the shaded start, s.
    shade_to: f64,
    /// Whether anything is shaded.
    shaded: bool,
}

impl<'a> Series<'a> {
    fn new(points: &'a [TimeSeriesPoint], measured_from_s: f64) -> Self {
        let pts: Vec<&TimeSeriesPoint> = points
            .iter()
            .filter(|p| {
                p.t_s.is_finite()
                    && p.capacity_kbps.is_finite()
                    && p.throughput_kbps.is_finite()
                    && p.delay_ms.is_finite()
            })
            .collect();
        let (t0, t1) = if pts.is_empty() {
            (0.0, 1.0)
        } else {
            let a = pts.iter().map(|p| p.t_s).fold(f64::INFINITY, f64::min);
            let b = pts
                .iter()
                .map(|p| bin_end(p))
                .fold(f64::NEG_INFINITY, f64::max);
            if b > a {
                (a, b)
            } else {
                (a, a + 1.0)
            }
        };
        let has_data_delay = pts
            .iter()
            .any(|p| p.delay_data_ms.is_finite() && (p.delay_data_ms - p.delay_ms).abs() > 1e-9);
        let shade_to = measured_from_s.min(t1);
        let shaded = measured_from_s.is_finite() && shade_to > t0;
        Series {
            pts,
            t0,
            t1,
            has_data_delay,
            shade_to,
            shaded,
        }
    }

    /// The delay drawn for a point: the higher of the two delays where both are drawn.
    fn shown(&self, p: &TimeSeriesPoint) -> f64 {
        if self.has_data_delay && p.delay_data_ms.is_finite() {
            p.delay_ms.max(p.delay_data_ms)
        } else {
            p.delay_ms
        }
    }

    /// The delay axis' range, ms: from a round value below the typical delays (the 2nd
    /// percentile, and at most 50 ms so that the 100 ms target shows) to one above the highest.
    fn delay_range(&self) -> (f64, f64) {
        let mut delays: Vec<f64> = self
            .pts
            .iter()
            .map(|p| p.delay_ms)
            .filter(|&d| d > 0.0)
            .collect();
        delays.sort_by(f64::total_cmp);
        let typical_low = delays
            .get(delays.len() / 50)
            .copied()
            .unwrap_or(10.0)
            .clamp(1.0, 50.0);
        let delay_max = self.pts.iter().map(|p| self.shown(p)).fold(200.0, f64::max);
        (floor125(typical_low), ceil125(delay_max))
    }

    /// The legend's entries.
    fn legend_items(&self) -> Vec<(Swatch, String)> {
        let line = |stroke, dash| Swatch::Line { stroke, dash };
        let mut items: Vec<(Swatch, String)> = vec![
            (
                Swatch::Area {
                    fill: CAP,
                    opacity: "0.55",
                },
                "capacity".into(),
            ),
            (line(TPUT, ""), "throughput".into()),
            (line(DELAY, ""), "delay (max per bin)".into()),
        ];
        if self.has_data_delay {
            items.push((line(DDATA, "5 3"), "delay, data only".into()));
        }
        items.push((line(TARGET, "2 3"), "100 ms target".into()));
        items
    }

    /// `(bin start, bin end, value)` of every point, by `value`.
    fn steps(&self, value: impl Fn(&TimeSeriesPoint) -> f64) -> Vec<(f64, f64, f64)> {
        self.pts
            .iter()
            .map(|p| (p.t_s, bin_end(p), value(p)))
            .collect()
    }
}

/// Where the two panels are and their axes.
struct Layout {
    /// The time axis (left and right edges of both panels).
    time: TimeAxis,
    /// The rate panel.
    top: BBox,
    /// The delay panel.
    bottom: BBox,
    /// Height of each panel, px.
    panel_h: f64,
    /// The rate axis, kbit/s.
    ya: Linear,
    /// The delay axis, ms.
    yd: LogAxis,
    /// The font of tick labels.
    tick_font: Font,
}

impl Layout {
    /// Lays out the panels under the legend, which it draws.
    fn new(svg: &mut Svg, data: &Series) -> Layout {
        let tick_font = Font::plain(12.0);
        let (delay_lo, delay_hi) = data.delay_range();
        // Left margin: room for the widest tick label and the axis title.
        let rate_max = data
            .pts
            .iter()
            .map(|p| p.capacity_kbps.max(p.throughput_kbps))
            .fold(0.0, f64::max);
        let mut ya = Linear::nice(0.0, rate_max.max(1.0), 5.0, 0.0, 1.0);
        let rate_labels: Vec<String> = ya.ticks().into_iter().map(fmt_num).collect();
        let widest = rate_labels
            .iter()
            .map(|s| text_width(s, tick_font.size, false))
            .fold(text_width("10,000", tick_font.size, false), f64::max)
            .max(text_width(&fmt_num(delay_hi), tick_font.size, false));
        let l = (widest + 40.0).max(84.0);
        let r = WIDTH - 30.0;
        let ly = legend_rows(svg, &data.legend_items(), l, r);

        let t1_top = ly + 16.0;
        let b2 = HEIGHT - 66.0;
        let gap = 30.0;
        let panel_h = (b2 - t1_top - gap) / 2.0;
        let top = BBox {
            x0: l,
            y0: t1_top,
            x1: r,
            y1: t1_top + panel_h,
        };
        let bottom = BBox {
            x0: l,
            y0: top.y1 + gap,
            x1: r,
            y1: b2,
        };
        ya.p0 = top.y1;
        ya.p1 = top.y0;
        let yd = LogAxis {
            llo: delay_lo.log10(),
            lhi: delay_hi.log10(),
            plo: bottom.y1,
            phi: bottom.y0,
        };
        Layout {
            time: TimeAxis {
                l,
                r,
                t0: data.t0,
                t1: data.t1,
            },
            top,
            bottom,
            panel_h,
            ya,
            yd,
            tick_font,
        }
    }

    /// The pixel of time `t`, s.
    fn fx(&self, t: f64) -> f64 {
        self.time.x(t)
    }

    /// The pixel of delay `v`, ms (values below the axis drawn at its bottom).
    fn fyd(&self, v: f64) -> f64 {
        self.yd.map(v.max(10f64.powf(self.yd.llo)))
    }
}

/// Horizontal grid lines and tick labels of both panels, then vertical ones at the time
/// ticks, labelled under the delay panel.
fn draw_grid(svg: &mut Svg, lay: &Layout, placer: &mut Placer) {
    let (l, r) = (lay.time.l, lay.time.r);
    let mut ticks_a: Vec<(f64, String, bool)> = lay
        .ya
        .ticks()
        .into_iter()
        .map(|v| (lay.ya.map(v), fmt_num(v), true))
        .collect();
    for (v, lab) in lay.yd.ticks(18.0) {
        ticks_a.push((lay.yd.map(v), fmt_num(v), lab));
    }
    let mut kept: Vec<BBox> = Vec::new();
    for (y, s, lab) in &ticks_a {
        svg.line(
            "grid",
            (l, *y),
            (r, *y),
            GRID,
            if *lab { 1.0 } else { 0.6 },
            if *lab { "" } else { "2 3" },
            "",
        );
        if *lab {
            svg.line("tick", (l - 5.0, *y), (l, *y), AXIS, 1.0, "", "");
            y_tick_label(svg, l, *y, s, lay.tick_font, &mut kept);
        }
    }
    let t0 = lay.time.t0;
    for &v in &lay.time.ticks() {
        let x = lay.fx(t0 + v);
        for panel in [&lay.top, &lay.bottom] {
            svg.line("grid", (x, panel.y0), (x, panel.y1), GRID, 1.0, "", "");
        }
        let under_top = Seg {
            a: (x, lay.top.y1),
            b: (x, lay.top.y1 + 4.0),
        };
        svg.line("tick", under_top.a, under_top.b, AXIS, 1.0, "", "");
        placer.segs.push(under_top);
        x_tick(
            svg,
            x,
            lay.bottom.y1,
            &fmt_num(t0 + v),
            lay.tick_font,
            &mut kept,
        );
    }
}

/// The top panel: the capacity area and the throughput line, and the frame.
fn draw_rates(svg: &mut Svg, lay: &Layout, data: &Series, placer: &mut Placer) {
    let top = &lay.top;
    let cap = data.steps(|p| p.capacity_kbps);
    let tput = data.steps(|p| p.throughput_kbps);
    let fx = |t: f64| lay.fx(t);
    if !cap.is_empty() {
        let mut outline = vec![(fx(cap[0].0), top.y1)];
        outline.extend(step_points(&cap, fx, |v| lay.ya.map(v)));
        outline.push((fx(cap[cap.len() - 1].1), top.y1));
        outline.push(outline[0]);
        svg.path(
            &polyline_d(&outline),
            "none",
            0.0,
            CAP,
            r#"fill-opacity="0.55" class="capacity""#,
        );
        placer.segs.extend(polyline_segs(&outline));
        let line = step_points(&tput, fx, |v| lay.ya.map(v));
        svg.path(
            &polyline_d(&line),
            TPUT,
            1.6,
            "none",
            r#"class="throughput""#,
        );
        placer.segs.extend(polyline_segs(&line));
    }
    svg.rect("frame", top, "none", AXIS, "");
    placer.segs.extend(edges(top));
}

/// The bottom panel: the 100 ms target, the data-only delay (if it differs), the delay, and
/// the frame.
fn draw_delays(svg: &mut Svg, lay: &Layout, data: &Series, placer: &mut Placer) {
    let fx = |t: f64| lay.fx(t);
    let fyd = |v: f64| lay.fyd(v);
    let target = lay.yd.map(100.0);
    let target_seg = Seg {
        a: (lay.time.l, target),
        b: (lay.time.r, target),
    };
    svg.line(
        "reference",
        target_seg.a,
        target_seg.b,
        TARGET,
        1.2,
        "2 3",
        "",
    );
    placer.segs.push(target_seg);
    if data.has_data_delay {
        let dd: Vec<(f64, f64, f64)> = data
            .pts
            .iter()
            .filter(|p| p.delay_data_ms.is_finite())
            .map(|p| (p.t_s, bin_end(p), p.delay_data_ms))
            .collect();
        if !dd.is_empty() {
            let line = step_points(&dd, fx, fyd);
            svg.path(
                &polyline_d(&line),
                DDATA,
                1.4,
                "none",
                r#"stroke-dasharray="5 3" class="delay-data""#,
            );
            placer.segs.extend(polyline_segs(&line));
        }
    }
    let dl = data.steps(|p| p.delay_ms);
    if !dl.is_empty() {
        let line = step_points(&dl, fx, fyd);
        svg.path(&polyline_d(&line), DELAY, 1.6, "none", r#"class="delay""#);
        placer.segs.extend(polyline_segs(&line));
    }
    svg.rect("frame", &lay.bottom, "none", AXIS, "");
    placer.segs.extend(edges(&lay.bottom));
}

/// The highest delay: where it is marked (px), its value (ms) and its point.
type Peak<'a> = (f64, f64, f64, &'a TimeSeriesPoint);

/// Marks the highest delay with a circle (an obstacle for labels); returns it.
fn peak_mark<'a>(
    svg: &mut Svg,
    lay: &Layout,
    data: &Series<'a>,
    placer: &mut Placer,
) -> Option<Peak<'a>> {
    let peak = data
        .pts
        .iter()
        .map(|p| (*p, data.shown(p)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let peak_mark =
        peak.map(|(p, v)| ((lay.fx(p.t_s) + lay.fx(bin_end(p))) / 2.0, lay.fyd(v), v, p));
    if let Some((x, y, _, _)) = peak_mark {
        svg.circle(
            "marker",
            (x, y),
            3.5,
            "white",
            DELAY,
            1.5,
            r#"data-role="peak""#,
        );
        placer.circles.push(((x, y), 5.5));
    }
    peak_mark
}

/// The font of the small labels (not measured, highest delay).
const SMALL: Font = Font::plain(11.0);

/// The gap between the two panels, where a small label that fits nowhere else goes, and the
/// top at which a small label sits centred in it.
fn between_panels(lay: &Layout) -> (BBox, f64) {
    let between = BBox {
        x0: 0.0,
        y0: lay.top.y1 + 4.5,
        x1: WIDTH,
        y1: lay.bottom.y0 - 0.5,
    };
    let h = (ASCENT_EM + DESCENT_EM) * SMALL.size + 2.0 * PAD;
    let mid_gap = (between.y0 + between.y1 - h) / 2.0;
    (between, mid_gap)
}

/// "Not measured" on the shaded start: inside a panel where it is clear of the lines, else
/// between the panels.
fn not_measured_label(svg: &mut Svg, lay: &Layout, data: &Series, placer: &mut Placer) {
    let small = SMALL;
    let (between, mid_gap) = between_panels(lay);
    let h = (ASCENT_EM + DESCENT_EM) * small.size + 2.0 * PAD;
    let text = format!(
        "not measured (first {})",
        fmt_duration(data.shade_to - data.t0)
    );
    let (sx0, sx1) = (lay.fx(data.t0), lay.fx(data.shade_to));
    let sxm = (sx0 + sx1) / 2.0;
    let inside = |p: &BBox| p.inflate(-2.0);
    let mut cands: Vec<(BBox, Anchor, BBox)> = Vec::new();
    for panel in [&lay.top, &lay.bottom] {
        for (x, anchor) in [(sx0 + 4.0, Anchor::Start), (sxm, Anchor::Middle)] {
            for y_top in [panel.y0 + 4.0, panel.y1 - 4.0 - h] {
                cands.push((
                    box_from_top(x, y_top, &text, small, anchor),
                    anchor,
                    inside(panel),
                ));
            }
        }
    }
    for (x, anchor) in [(sxm, Anchor::Middle), (sx0, Anchor::Start)] {
        cands.push((
            box_from_top(x, mid_gap, &text, small, anchor),
            anchor,
            between,
        ));
    }
    let (bb, anchor) = placer.first_free(&cands).unwrap_or_else(|| {
        let (bb, anchor, _) = cands[cands.len() - 1];
        placer.boxes.push(bb);
        (bb, anchor)
    });
    let (x, y) = text_pos(&bb, small, anchor);
    svg.text(
        x,
        y,
        &text,
        small,
        anchor,
        MUTED,
        &format!(r#"class="shade-label" {HALO}"#),
    );
}

/// The highest delay, written beside its mark in the delay panel; else between the panels;
/// else returned, to go into the caption.
fn peak_label(
    svg: &mut Svg,
    lay: &Layout,
    data: &Series,
    mut placer: Placer,
    (x, y, v, p): Peak,
) -> Option<String> {
    let small = SMALL;
    let which = if data.has_data_delay && p.delay_data_ms > p.delay_ms {
        ", data packets"
    } else {
        ""
    };
    let text = format!(
        "highest: {} ms at {} s{which}",
        fmt_num(v.round()),
        fmt_num((p.t_s * 10.0).round() / 10.0)
    );
    let peak_attrs = format!(r#"class="peak-label" id="peak-label" {HALO}"#);
    let before = placer.clone();
    let pl = placer.place(
        (x, y),
        5.5,
        std::slice::from_ref(&text),
        small,
        &lay.bottom.inflate(-2.0),
    );
    if pl.free {
        if let Some(ld) = pl.leader {
            svg.line(
                "leader",
                ld.a,
                ld.b,
                DELAY,
                1.0,
                "",
                r#"data-for="peak-label""#,
            );
        }
        svg.text(pl.x, pl.y, &text, small, pl.anchor, DELAY, &peak_attrs);
        return None;
    }
    placer = before;
    let (between, mid_gap) = between_panels(lay);
    let cands: Vec<(BBox, Anchor, BBox)> = [(lay.time.r, Anchor::End), (lay.time.l, Anchor::Start)]
        .into_iter()
        .map(|(x, anchor)| {
            (
                box_from_top(x, mid_gap, &text, small, anchor),
                anchor,
                between,
            )
        })
        .collect();
    match placer.first_free(&cands) {
        Some((bb, anchor)) => {
            let (tx, ty) = text_pos(&bb, small, anchor);
            svg.text(tx, ty, &text, small, anchor, DELAY, &peak_attrs);
            None
        }
        None => Some(text),
    }
}

/// The axis titles, and the caption stating the bin (and the highest delay if it was written
/// nowhere else).
fn titles_and_caption(svg: &mut Svg, lay: &Layout, data: &Series, peak_in_caption: Option<String>) {
    let (top, bottom, panel_h) = (&lay.top, &lay.bottom, lay.panel_h);
    svg.vtext(
        22.0,
        (top.y0 + top.y1) / 2.0,
        "Throughput (kbit/s)",
        Font::plain(fit_size("Throughput (kbit/s)", panel_h, 13.0, 9.0, false)),
    );
    let dt = "Delay (ms, log scale)";
    svg.vtext(
        22.0,
        (bottom.y0 + bottom.y1) / 2.0,
        dt,
        Font::plain(fit_size(dt, panel_h, 13.0, 9.0, false)),
    );
    time_title(svg, &lay.time, bottom.y1);
    let bin = data
        .pts
        .first()
        .map(|p| p.bin_s)
        .filter(|&b| b > 0.0)
        .map(fmt_duration);
    if let Some(bin) = bin {
        let mut caption =
            format!("Throughput and capacity in {bin} bins; delay is the maximum in each bin.");
        if let Some(peak) = &peak_in_caption {
            caption.push_str(&format!(" Circled, the {peak}."));
        }
        let (l, r) = (lay.time.l, lay.time.r);
        svg.text(
            (l + r) / 2.0,
            bottom.y1 + 56.0,
            &caption,
            Font::plain(fit_size(&caption, r - l, 11.0, 8.0, false)),
            Anchor::Middle,
            MUTED,
            r#"class="caption""#,
        );
    }
}

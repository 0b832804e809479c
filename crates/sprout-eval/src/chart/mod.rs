//! SVG charts in the style of the paper's Figures 1, 7 and 8.
//!
//! # Approach
//!
//! The charts are built by a small SVG writer (module `svg`, plain string building), not by
//! a plotting crate: these charts need a *reversed logarithmic* delay axis, hollow-versus-filled
//! markers per scheme, label placement that avoids collisions, and machine-checkable output;
//! with a hand-written writer all of that is short, the output is deterministic, and the crate
//! gains no dependency. Text is emitted as SVG `<text>` in a generic sans-serif font.
//!
//! # Labels
//!
//! No text overlaps another text, a marker or a line. Every text's extent is estimated
//! conservatively ([`text_width`]: per-glyph widths, at least [`CHAR_WIDTH_EM`] or
//! [`BOLD_CHAR_WIDTH_EM`] per character; [`ASCENT_EM`] above the baseline and [`DESCENT_EM`]
//! below; [`LINE_EM`] between the lines of a label of several lines), and point labels
//! are placed greedily by a small placer: first the eight positions touching the point, then
//! rings of positions further out joined to the point by a leader line, then a scan of the whole
//! plot; a position is taken only if its box stays inside the plot and meets no label placed
//! before, no marker and no line (the paper-to-ours connectors and the leaders of earlier
//! labels), and if its leader crosses no label. Points whose markers overlap (or whose values are
//! equal) share one label, `"reno = compound"` for equal values and `"cubic ≈ reno"` for
//! markers that merely overlap. Tick labels that would collide are left out.
//!
//! # Machine-readable output
//!
//! Every data marker is a `<circle class="point">` with an `id` (`p0`, `p1`, ...; `ap0`, `bp0`,
//! ... on a chart of several plots) and `data-label`, `data-series`, `data-delay-ms`, `data-y`
//! and `data-paper` attributes; every point label is a `<text class="point-label">` with an
//! `id` (`l0`, ...) and `data-points` naming the markers it labels; a leader is a
//! `<line class="leader">` whose `data-for` names its label. Every element drawn in a series'
//! colour for that series (markers, legend swatches, the `spread` bars of repeated runs) names
//! it in `data-series`. Other classes:
//! `grid` (grid lines, the only lines a text may cross), `tick`, `frame` (plot borders),
//! `connector` (ours to the paper's), `marker` (legend swatches, the arrow head), `reference`
//! (the 100 ms target), `shade` (the unmeasured start of a time series) and, on time series,
//! `capacity`, `throughput`, `delay`, `delay-data`.
//!
//! Units: delays in milliseconds, throughputs in kbit/s, utilization as a fraction 0..1
//! (plotted as percent), time in seconds. The charts are [`WIDTH`] x [`HEIGHT`] pixels.
//!
//! # Where things are
//!
//! - `style`, `text`, `geometry`, `svg`: the canvas and its colours, text extents, boxes and
//!   segments, and the SVG writer.
//! - `axes`: linear and logarithmic axes, ticks and number formatting; `colours`: the one map
//!   from scheme to colour (every chart draws a scheme in it), colours for other series;
//!   `placement`: the label placer.
//! - Scatter charts: `throughput_delay` (Figure 7, and the model variants) and
//!   `utilization_delay` (Figure 8) over `scatter` (frame, axes, markers), `scatter_points`,
//!   `scatter_labels` and `scatter_legend`; `seed_spread` (the sensitivity experiment) draws
//!   several such plots on one chart, with bars over the runs.
//! - `rates` (the rates experiment): utilization and delay against the links' rate, 2 x 2
//!   panels, a line per scheme.
//! - `calibration` (the calibration experiment): reliability diagrams, forecasts met against
//!   stated confidence, a panel per horizon, a line per model.
//! - `frontier` (the frontier experiment): utilization against self-inflicted delay (reversed
//!   logarithmic), a panel per group of links, a line per model through its sweep's points;
//!   `lines` draws such a line with its markers for it, `rates` and `calibration`.
//! - `app_delay` (the interactive experiment): application-level delay against offered rate,
//!   a line per scheme, panels side by side on one logarithmic delay axis.
//! - Charts over time: `time_series` (Figure 1), `delay_over_time` (the tunnel experiment) and
//!   `rate_over_time` (`sprout traces plot`), over `time_panels` (time axis, stacked panels,
//!   legend row, step lines).
//!
//! A new chart goes in a module of its own beside these, built from the pieces above, and is
//! re-exported here.

mod app_delay;
mod axes;
mod calibration;
mod colours;
mod delay_over_time;
mod frontier;
mod geometry;
mod lines;
mod placement;
mod rate_over_time;
mod rates;
mod scatter;
mod scatter_labels;
mod scatter_legend;
mod scatter_points;
mod seed_spread;
mod style;
mod svg;
mod text;
mod throughput_delay;
mod time_panels;
mod time_series;
mod utilization_delay;

pub use app_delay::{app_delay_chart, AppDelayPanel, AppDelaySeries};
pub use calibration::{calibration_chart, CalibrationPanel, CalibrationSeries};
pub use delay_over_time::{delay_over_time_chart, DelayPanel, DelaySeries};
pub use frontier::{frontier_chart, FrontierPanel, FrontierSeries};
pub use rate_over_time::{rate_over_time_chart, RatePanel, RateSeries};
pub use rates::{rates_chart, RatesSeries};
pub use seed_spread::{seed_spread_chart, Spread, SpreadPanel, SpreadPoint};
pub use style::{HEIGHT, WIDTH};
pub use text::{text_width, ASCENT_EM, BOLD_CHAR_WIDTH_EM, CHAR_WIDTH_EM, DESCENT_EM, LINE_EM};
pub use throughput_delay::{
    mean_throughput_delay_chart, model_variants_chart, throughput_delay_chart, ChartPoint,
};
pub use time_series::{time_series_chart, time_series_chart_measured};
pub use utilization_delay::{utilization_delay_chart, UtilizationPoint};

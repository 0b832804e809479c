//! `sprout traces plot`: the capacity of mahimahi traces over time, in Mbit/s, as mahimahi's
//! graphs show it, on one SVG chart ([`crate::chart::rate_over_time_chart`]).
//!
//! Each trace line is one 1500-byte delivery opportunity; a bin's capacity is its
//! opportunities times 12,000 bits over the bin's length. Bins cover `[k * bin, (k + 1) *
//! bin)` ms from 0 to the trace's duration `D` (its last timestamp, mahimahi's loop period);
//! the last bin is closed, `[k * bin, D]`, so that the opportunity every trace has at `D` is
//! not drawn as a bin of its own, and when it is shorter than `bin` its capacity is over its
//! own length.
//!
//! Uplinks (`NAME.up`) go in one panel, downlinks (`NAME.down`) in the one below, other files
//! in a third; both directions of a pair are on the same chart, in the same colour, named
//! `NAME`. A panel with one trace shows it as a filled area, one with several as lines.

use sprout_core::direction::Direction;
use sprout_link::{Trace, OPPORTUNITY_BYTES};

use crate::chart::{rate_over_time_chart, RatePanel, RateSeries};

/// Most traces one chart shows (its colours): more would not be readable.
pub const MAX_TRACES: usize = 16;

/// Most bins a series may have (a 1000 s trace in 10 ms bins): a finer chart is refused
/// rather than written as a huge SVG.
pub const MAX_BINS: u64 = 100_000;

/// Which panel a trace goes in: its link direction's (uplink above downlink), or, for a file
/// name that says none, the other panel below them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Panel {
    /// `NAME.up` or `NAME.down`.
    Link(Direction),
    /// Any other file name.
    Other,
}

impl Panel {
    /// The panel a file name says, and the name without `.up` / `.down`.
    pub fn of_name(file_name: &str) -> (Panel, String) {
        for dir in Direction::BOTH {
            let suffix = format!(".{}", dir.as_str());
            if let Some(stem) = file_name.strip_suffix(&suffix).filter(|s| !s.is_empty()) {
                return (Panel::Link(dir), stem.to_string());
            }
        }
        (Panel::Other, file_name.to_string())
    }

    /// The panel's axis title.
    pub fn axis_title(self) -> &'static str {
        match self {
            Panel::Link(Direction::Up) => "Uplink (Mbit/s)",
            Panel::Link(Direction::Down) => "Downlink (Mbit/s)",
            Panel::Other => "Capacity (Mbit/s)",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Panel::Link(dir) => dir.as_str(),
            Panel::Other => "",
        }
    }
}

/// Capacity per bin of `bin_ms` (Mbit/s), bins as in the module's documentation. `bin_ms` 0
/// is taken as 1.
pub fn capacity_mbit(trace: &Trace, bin_ms: u64) -> Vec<f64> {
    let bin = bin_ms.max(1);
    let duration = trace.period_ms();
    let bins = duration.div_ceil(bin).max(1);
    let mut counts = vec![0u64; bins as usize];
    for &t in trace.opportunities_ms() {
        let k = (t / bin).min(bins - 1);
        counts[k as usize] += 1;
    }
    let bits = (OPPORTUNITY_BYTES * 8) as f64;
    counts
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let start = k as u64 * bin;
            let len = if k as u64 + 1 == bins {
                (duration - start).max(1).min(bin)
            } else {
                bin
            };
            // bits per ms = kbit/s; / 1000 = Mbit/s.
            c as f64 * bits / len as f64 / 1000.0
        })
        .collect()
}

/// Why a trace chart cannot be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    /// No trace given.
    #[error("no trace to plot")]
    NoTrace,
    /// More than [`MAX_TRACES`] traces.
    #[error("{0} traces: one chart shows at most {MAX_TRACES}")]
    TooManyTraces(usize),
    /// A bin of 0 ms.
    #[error("the bin must be at least 1 ms")]
    ZeroBin,
    /// More than [`MAX_BINS`] bins.
    #[error("{longest} ms in {bin_ms} ms bins is more than {MAX_BINS} bins; use a larger --bin")]
    TooManyBins {
        /// The longest trace's length, ms.
        longest: u64,
        /// The bin, ms.
        bin_ms: u64,
    },
}

/// The chart of `traces` (each with the file name it was loaded from, which gives its
/// direction and label) in bins of `bin_ms` (SVG text); `title` replaces the default
/// ("Capacity of NAME" or "Capacity of N traces"). Errors for no trace, more than
/// [`MAX_TRACES`], a bin of 0, or more than [`MAX_BINS`] bins.
pub fn plot_svg(
    traces: &[(String, Trace)],
    bin_ms: u64,
    title: Option<&str>,
) -> Result<String, PlotError> {
    if traces.is_empty() {
        return Err(PlotError::NoTrace);
    }
    if traces.len() > MAX_TRACES {
        return Err(PlotError::TooManyTraces(traces.len()));
    }
    if bin_ms == 0 {
        return Err(PlotError::ZeroBin);
    }
    let longest = traces.iter().map(|(_, t)| t.period_ms()).max().unwrap_or(1);
    if longest.div_ceil(bin_ms) > MAX_BINS {
        return Err(PlotError::TooManyBins { longest, bin_ms });
    }
    let mut entries: Vec<(Panel, String, &Trace)> = traces
        .iter()
        .map(|(file, t)| {
            let base = std::path::Path::new(file)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.clone());
            let (dir, label) = Panel::of_name(&base);
            (dir, label, t)
        })
        .collect();
    // Two files of one name in one panel (from different folders): name them by path.
    let clashes = |entries: &[(Panel, String, &Trace)], i: usize| {
        entries
            .iter()
            .enumerate()
            .any(|(j, e)| j != i && e.0 == entries[i].0 && e.1 == entries[i].1)
    };
    let clashing: Vec<bool> = (0..entries.len()).map(|i| clashes(&entries, i)).collect();
    for (i, e) in entries.iter_mut().enumerate() {
        if clashing[i] {
            let (_, label) = Panel::of_name(&traces[i].0);
            e.1 = label;
        }
    }
    entries.sort_by_key(|e| e.0);

    let mut panels: Vec<(Panel, RatePanel)> = Vec::new();
    let mut means: Vec<String> = Vec::new();
    for (dir, label, trace) in &entries {
        let series = RateSeries {
            label: label.clone(),
            values: capacity_mbit(trace, bin_ms),
        };
        match panels.last_mut() {
            Some((d, p)) if d == dir => p.series.push(series),
            _ => panels.push((
                *dir,
                RatePanel {
                    axis_title: dir.axis_title().into(),
                    series: vec![series],
                },
            )),
        }
        let mean = three_figures(trace.mean_capacity_kbps() / 1000.0);
        means.push(
            format!("{label} {} {mean}", dir.short())
                .replace("  ", " ")
                .trim()
                .to_string(),
        );
    }
    let mut names: Vec<&str> = Vec::new();
    for (_, label, _) in &entries {
        if !names.contains(&label.as_str()) {
            names.push(label);
        }
    }
    let default_title = if names.len() == 1 {
        format!("Capacity of {}", names[0])
    } else {
        format!("Capacity of {} traces", entries.len())
    };
    let bin = if bin_ms.is_multiple_of(1000) {
        format!("{} s", bin_ms / 1000)
    } else {
        format!("{bin_ms} ms")
    };
    let base = format!("{bin} bins, 1500 bytes per trace line");
    let with_means = format!("{base}; mean Mbit/s: {}", means.join(", "));
    let caption = if with_means.chars().count() <= 150 {
        with_means
    } else {
        base
    };
    let panels: Vec<RatePanel> = panels.into_iter().map(|(_, p)| p).collect();
    Ok(rate_over_time_chart(
        title.unwrap_or(&default_title),
        &panels,
        bin_ms as f64 / 1000.0,
        &caption,
    ))
}

/// `v` to three significant figures (at most 6 decimals): 5.95, 12.0, 50000, 0.000360.
fn three_figures(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return "0".into();
    }
    let decimals = (2 - v.log10().floor() as i64).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_close_at_the_end() {
        // 12 Mbit/s: 1..=3000 ms, one per ms.
        let t = Trace::from_opportunities_ms("c", (1..=3000).collect()).unwrap();
        let c = capacity_mbit(&t, 1000);
        assert_eq!(c.len(), 3);
        assert!((c[0] - 11.988).abs() < 1e-9, "{c:?}");
        assert!((c[1] - 12.0).abs() < 1e-9);
        assert!((c[2] - 12.012).abs() < 1e-9);
        // 2500 ms in 1 s bins: the last bin is 500 ms long.
        let t = Trace::from_opportunities_ms("c", (1..=2500).collect()).unwrap();
        let c = capacity_mbit(&t, 1000);
        assert_eq!(c.len(), 3);
        // 2000..=2500: 501 opportunities over 500 ms.
        assert!((c[2] - 12.024).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn means_to_three_figures() {
        assert_eq!(three_figures(5.946), "5.95");
        assert_eq!(three_figures(12.0), "12.0");
        assert_eq!(three_figures(50_000.0), "50000");
        assert_eq!(three_figures(0.00036), "0.000360");
        assert_eq!(three_figures(0.0), "0");
    }

    #[test]
    fn directions_from_names() {
        assert_eq!(
            Panel::of_name("A.up"),
            (Panel::Link(Direction::Up), "A".into())
        );
        assert_eq!(
            Panel::of_name("A.b.down"),
            (Panel::Link(Direction::Down), "A.b".into())
        );
        assert_eq!(Panel::of_name(".up"), (Panel::Other, ".up".into()));
        assert_eq!(Panel::of_name("x"), (Panel::Other, "x".into()));
    }

    #[test]
    fn one_pair_two_panels() {
        let up = Trace::from_opportunities_ms("u", (1..=2000).step_by(2).collect()).unwrap();
        let down = Trace::from_opportunities_ms("d", (1..=2000).collect()).unwrap();
        let svg = plot_svg(
            &[("x/L.down".into(), down), ("x/L.up".into(), up)],
            500,
            None,
        )
        .unwrap();
        assert!(svg.contains("Capacity of L"));
        assert!(svg.contains("Uplink (Mbit/s)"));
        assert!(svg.contains("Downlink (Mbit/s)"));
        // Uplink first, and the means in the caption.
        assert!(svg.find("Uplink").unwrap() < svg.find("Downlink").unwrap());
        assert!(svg.contains("mean Mbit/s: L up 6.00, L down 12.0"), "{svg}");
        assert_eq!(svg.matches(r#"class="capacity""#).count(), 2);
        assert!(plot_svg(&[], 1000, None).is_err());
    }
}

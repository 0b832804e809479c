//! A series drawn as a line with a marker at each point, shared by the charts whose panels
//! carry lines of points (the rates, calibration and frontier charts).

use super::geometry::Pt;
use super::svg::{esc, polyline_d, Svg};

/// Radius of a point's marker, px.
pub(super) const MARKER_R: f64 = 3.5;

/// The series `label` in `colour`: a line through `points` in their order, broken at a point
/// without a position, and a marker at each placed point. A point is `(x, y, position)`, its
/// data values (written as the marker's `data-x` and `data-y`) and its pixel, if drawn.
pub(super) fn series_line(
    svg: &mut Svg,
    label: &str,
    points: &[(f64, f64, Option<Pt>)],
    colour: &str,
) {
    let series = format!(r#"data-series="{}""#, esc(label));
    let mut runs: Vec<Vec<Pt>> = vec![Vec::new()];
    for &(_, _, pos) in points {
        match pos {
            Some(pt) => runs.last_mut().expect("a run").push(pt),
            None => runs.push(Vec::new()),
        }
    }
    for run in runs.iter().filter(|r| r.len() >= 2) {
        svg.path(
            &polyline_d(run),
            colour,
            1.8,
            "none",
            &format!(r#"class="series" {series}"#),
        );
    }
    for &(x, v, pos) in points {
        if let Some(pt) = pos {
            svg.circle(
                "marker",
                pt,
                MARKER_R,
                colour,
                "white",
                0.8,
                &format!(r#"{series} data-x="{x}" data-y="{v}""#),
            );
        }
    }
}

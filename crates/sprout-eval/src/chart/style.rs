//! The canvas every chart is drawn on and the colours of its frame, grid and text.

/// Width of every chart, pixels.
pub const WIDTH: f64 = 840.0;
/// Height of every chart, pixels.
pub const HEIGHT: f64 = 560.0;

/// The font families every text asks for, first choice first.
pub(super) const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
/// Colour of grid lines.
pub(super) const GRID: &str = "#e3e3e3";
/// Colour of plot frames, ticks and the legend's arrow.
pub(super) const AXIS: &str = "#333333";
/// Colour of ordinary text.
pub(super) const TEXT: &str = "#222222";
/// Colour of secondary text (captions, notes).
pub(super) const MUTED: &str = "#666666";
/// The attributes of a white outline drawn under a label's glyphs, so that it reads over lines.
pub(super) const HALO: &str =
    r#"stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke""#;

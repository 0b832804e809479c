//! The progress bar every long run shows (the evaluation, sweeps, the lab's real-time
//! experiments): elapsed time, a bar, done out of total.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps, each `unit` (`""` for a count of runs, `" s"` for seconds), or a
/// hidden one when `show` is false.
pub fn bar(len: u64, unit: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    let template =
        format!("{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}}{unit} {{msg}}");
    b.set_style(
        ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b
}

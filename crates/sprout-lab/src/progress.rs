//! The progress bar of the real-time experiments: seconds of run time done out of the total.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total_s` seconds of run time, or a hidden one when `show` is false.
pub(crate) fn seconds_bar(total_s: u64, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total_s);
    b.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} s {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b
}

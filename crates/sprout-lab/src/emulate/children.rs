//! The peer processes of emulated runs: where their output goes, waiting for them with
//! progress shown, and reaping them.

use std::fs::File;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::error::LabError;

/// Output of a peer process goes to `PREFIX.out` and `PREFIX.err`, next to the logs.
pub(super) fn redirect(cmd: &mut Command, prefix: &str) -> Result<(), LabError> {
    let out = File::create(format!("{prefix}.out"))?;
    let err = File::create(format!("{prefix}.err"))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    Ok(())
}

/// Kills a child if it is still running and reaps it.
pub(super) fn finish(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// Waits up to `limit` from `started` for `child` to exit, moving `bar` one step a second up
/// to `seconds`, then to its end.
pub(super) fn wait_showing_progress(
    child: &mut Child,
    started: Instant,
    limit: Duration,
    seconds: f64,
    bar: &ProgressBar,
) -> std::io::Result<Option<ExitStatus>> {
    let mut shown = 0u64;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if started.elapsed() > limit {
            break None;
        }
        let secs = started.elapsed().as_secs().min(seconds as u64);
        if secs > shown {
            bar.inc(secs - shown);
            shown = secs;
        }
        thread::sleep(Duration::from_millis(100));
    };
    bar.inc((seconds as u64).saturating_sub(shown));
    Ok(status)
}

//! The round trips: each link pair recorded (both directions at once) and checked.

use sprout_core::direction::Direction;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use sprout_link::Trace;

use super::compare::{align_offset_ms, compare_seconds, window_trace, with_outage};
use super::options::CheckOptions;
use super::output::{row_line, write_outputs};
use super::recording::{EmuFacts, Recorded};
use super::results::{CheckResults, DirectionResult};
use super::sprout::compare_sprout;
use super::{emulated, simulated};
use crate::error::{Context, LabError, Result};

/// Runs the round trips and writes `saturator-check.csv`, `saturator-check.json` and
/// `saturator-check-seconds.csv` into the output folder.
pub fn run(o: &CheckOptions) -> Result<CheckResults> {
    let started = Instant::now();
    if !o.simulated {
        sprout_emu::check_privileges()?;
    }
    let mut pairs = Trace::find_pairs(&o.traces)
        .with_context(|| format!("looking for trace pairs in {}", o.traces.display()))?;
    if !o.links.is_empty() {
        for l in &o.links {
            if !pairs.iter().any(|p| &p.0 == l) {
                return Err(LabError::no_link_pair(l, o.traces.display()));
            }
        }
        pairs.retain(|p| o.links.contains(&p.0));
    }
    if pairs.is_empty() {
        return Err(LabError::Invalid(format!(
            "no trace pairs (NAME.up and NAME.down) in {}; {}",
            o.traces.display(),
            sprout_link::data_dirs::folder_contents(&o.traces)
        )));
    }
    fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    let mut rows = Vec::new();
    for (i, (name, up_path, down_path)) in pairs.iter().enumerate() {
        if o.progress {
            eprintln!(
                "[{}/{}] {name}: recording both directions for {} s ({}, {})",
                i + 1,
                pairs.len(),
                o.record_s(),
                o.variant(),
                if o.simulated {
                    "link model"
                } else {
                    "emulator, real time"
                }
            );
        }
        rows.extend(check_link(o, name, up_path, down_path)?);
    }
    let results = CheckResults {
        source: o.traces.display().to_string(),
        variant: o.variant(),
        replay: if o.simulated {
            "link model (virtual clock)".into()
        } else {
            "emulator (real time)".into()
        },
        from_s: o.from_s,
        seconds: o.seconds,
        loss: o.loss,
        outage_ms: o.outage_ms(),
        all_ok: rows.iter().all(|r| r.ok),
        rows,
        wall_s: started.elapsed().as_secs_f64(),
    };
    write_outputs(&o.out, &results)?;
    Ok(results)
}

/// Records one link pair (both directions at once) and checks the recordings: its two rows.
fn check_link(
    o: &CheckOptions,
    name: &str,
    up_path: &Path,
    down_path: &Path,
) -> Result<Vec<DirectionResult>> {
    let (outage_from, outage_len) = o.outage_ms();
    let up = sprout_eval::eval::load_trace(up_path)?;
    let down = sprout_eval::eval::load_trace(down_path)?;
    for t in [&up, &down] {
        let last = t.opportunities_ms().last().copied().unwrap_or(0);
        if last < (o.from_s + o.seconds) * 1000 {
            return Err(LabError::Invalid(format!(
                "{} is {:.1} s long, shorter than the compared window ({} s from {} s)",
                t.name(),
                last as f64 / 1000.0,
                o.seconds,
                o.from_s
            )));
        }
    }
    let up_r = Arc::new(with_outage(&up, outage_from, outage_len)?);
    let down_r = Arc::new(with_outage(&down, outage_from, outage_len)?);
    let (recs, facts) = if o.simulated {
        simulated::recordings(o, &up_r, &down_r)
    } else {
        emulated::recordings(o, name, &up_r, &down_r)
            .with_context(|| format!("recording {name} through the emulator"))?
    };
    let mut dir_rows = Vec::new();
    let mut on_replay = Vec::new();
    for (k, (dir, replay)) in [(Direction::Up, &up_r), (Direction::Down, &down_r)]
        .into_iter()
        .enumerate()
    {
        let (row, times) =
            direction_row(o, name, dir, replay, recs[k].as_ref(), facts.map(|f| f[k]));
        dir_rows.push(row);
        on_replay.push(times);
    }
    // Sprout on the recorded windows against the replayed ones (plain variant).
    if o.loss == 0.0 && o.outage_s == 0 {
        let (seconds, from_ms) = (o.seconds as usize, o.from_s * 1000);
        if let (Some(ru), Some(rd)) = (&on_replay[0], &on_replay[1]) {
            let replay_ms = |t: &Trace| -> Vec<i64> {
                t.opportunities_ms().iter().map(|&x| x as i64).collect()
            };
            let windows = (
                window_trace("replayed.up", &replay_ms(&up_r), from_ms, seconds),
                window_trace("replayed.down", &replay_ms(&down_r), from_ms, seconds),
                window_trace("recorded.up", ru, from_ms, seconds),
                window_trace("recorded.down", rd, from_ms, seconds),
            );
            if let (Some(a), Some(b), Some(c), Some(d)) = windows {
                let [su, sd] = compare_sprout((&a, &b), (&c, &d), seconds)?;
                dir_rows[0].sprout = Some(su);
                dir_rows[1].sprout = Some(sd);
            }
        }
    }
    for r in &mut dir_rows {
        r.ok = r.completed
            && r.seconds.per_second_ok
            && r.seconds.total_ok
            && r.sprout
                .as_ref()
                .is_none_or(|s| s.throughput_ok && s.delay_ok)
            && r.loss_reported_ok.unwrap_or(true)
            && r.outage_reported_ok.unwrap_or(true)
            && (o.loss > 0.0 || o.outage_s > 0 || r.sprout.is_some());
        if o.progress {
            eprintln!("    {}", row_line(r));
        }
    }
    Ok(dir_rows)
}

/// One direction's row (its `ok` left to the caller) and its recorded arrivals on the
/// replay's clock (ms), if it was recorded.
fn direction_row(
    o: &CheckOptions,
    name: &str,
    dir: Direction,
    replay: &Trace,
    rec: Option<&Recorded>,
    facts: Option<EmuFacts>,
) -> (DirectionResult, Option<Vec<i64>>) {
    let (seconds, from_ms) = (o.seconds as usize, o.from_s * 1000);
    let (cmp, times) = match rec {
        Some(r) => {
            let est = r.offset_us.div_euclid(1000);
            let offset = align_offset_ms(&r.arrivals_ms, replay.opportunities_ms(), est);
            let times: Vec<i64> = r
                .arrivals_ms
                .iter()
                .map(|&t| i64::from(t) + offset)
                .collect();
            let mut c = compare_seconds(&times, replay.opportunities_ms(), from_ms, seconds);
            c.offset_ms = offset;
            (c, Some(times))
        }
        None => (
            compare_seconds(&[], replay.opportunities_ms(), from_ms, seconds),
            None,
        ),
    };
    let summary = rec.map(|r| r.summary.clone()).unwrap_or_default();
    let loss_reported_ok =
        (o.loss > 0.0).then(|| (summary.loss_rate - o.loss).abs() <= (0.01f64).max(0.2 * o.loss));
    let outage_reported_ok = (o.outage_s > 0)
        .then_some(summary.outages >= 1 && summary.longest_gap_ms >= o.outage_ms().1);
    let row = DirectionResult {
        link: name.to_string(),
        direction: dir.as_str().into(),
        variant: o.variant(),
        completed: rec.is_some(),
        seconds: cmp,
        sprout: None,
        summary,
        loss_reported_ok,
        outage_reported_ok,
        link_utilization: facts.map(|f| f.0),
        emulator_late_us: facts.map(|f| f.1),
        ok: false,
    };
    (row, times)
}

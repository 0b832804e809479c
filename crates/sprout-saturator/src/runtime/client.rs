//! `sprout saturator client` as a call ([`client`]): records a link to a server and writes
//! `NAME.down` (its recording of the downlink), `NAME.up` (the server's recording of the
//! uplink, sent back when the recording ends) and `NAME.json` (both summaries).
//!
//! While it records, the downlink's arrivals are appended to `NAME.down.partial` about once a
//! second (a killed client leaves them). At the end the previous run's `NAME.json` is
//! removed, each final file is written whole or not at all (a temporary name, renamed), the
//! JSON last, and only then is the partial file removed: the files of a run are complete
//! (`NAME.json` and no `NAME.down.partial`) or visibly not.

use sprout_core::direction::Load;
use std::path::Path;

use serde::Serialize;
use sprout_os::signals::SignalWatcher;

use sprout_core::time::{Duration, Instant};

use crate::recorder::write_trace;
use crate::runtime::client_run::ClientRun;
use crate::runtime::error::SaturatorError;
use crate::runtime::fetch::{finish_client, Ending};
use crate::runtime::options::ClientOptions;
use crate::runtime::output::{with_suffix, write_file, write_json};
use crate::runtime::socket::random_session;
use crate::sender::SenderStats;
use crate::summary::Summary;
use crate::transfer::max_result_bytes;

/// The client's final summary (the last line with `json`, and `NAME.json`).
#[derive(Clone, Debug, Serialize)]
pub struct ClientSummary {
    /// "summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "client".
    pub role: &'static str,
    /// The session id, 16 hex digits.
    pub session: String,
    /// Directions recorded.
    pub mode: Load,
    /// The server's address (data path).
    pub server: String,
    /// The server's address over the feedback path, if one.
    pub feedback: Option<String>,
    /// The downlink's recording (this side's).
    pub down: Option<Summary>,
    /// The uplink's recording (the server's, transferred back).
    pub up: Option<Summary>,
    /// Why the uplink's recording is missing, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_error: Option<String>,
    /// The uplink's sender (this side's).
    pub up_sender: Option<SenderStats>,
    /// Files written.
    pub files: Vec<String>,
}

/// Records a link to a server as `o` says, printing a line per second and the summary on
/// stdout (JSON lines with `o.json`); Ctrl-C ends the recording early, as if its duration had
/// passed. Returns the summary written to `NAME.json`.
pub fn client(o: &ClientOptions) -> Result<ClientSummary, SaturatorError> {
    let payload = o.validate()?;
    let mut run = ClientRun::new(o, payload, random_session())?;
    let signals = SignalWatcher::new().map_err(SaturatorError::Signals)?;
    run.handshake(&signals)?;
    run.announce();
    let stop = run.record(&signals)?;

    // The end: FIN until FIN-ACK, then the uplink's recording.
    let fetch_deadline = stop + Duration::from(o.fetch_timeout);
    let up_sent = run.sender.as_ref().map_or(0, |s| s.stats().packets_sent);
    let ending = finish_client(
        &run.end,
        run.session,
        run.mode,
        max_result_bytes(up_sent),
        fetch_deadline,
        &signals,
    )?;
    let acknowledged = ending.acknowledged;
    let summary = write_client_files(o, &mut run, stop, ending)?;
    print_client_summary(&summary, o.json)?;
    if !acknowledged {
        return Err(SaturatorError::ServerGone(
            o.connect,
            summary.files.join(", "),
        ));
    }
    Ok(summary)
}

/// Writes `NAME.down`, `NAME.up` and `NAME.json` (removing the previous run's JSON first,
/// and this run's partial trace last); the summary.
fn write_client_files(
    o: &ClientOptions,
    run: &mut ClientRun<'_>,
    stop: Instant,
    ending: Ending,
) -> Result<ClientSummary, SaturatorError> {
    let Ending { up, up_error, .. } = ending;
    let json_path = with_suffix(&o.name, ".json");
    // A kill from here on must not leave the new traces beside the old summary.
    match std::fs::remove_file(&json_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(SaturatorError::Write {
                path: json_path,
                source: e,
            })
        }
        _ => {}
    }
    let mut files = Vec::new();
    let down_summary = run.rec.as_ref().map(|r| r.summary(stop));
    if let Some(r) = &run.rec {
        let p = with_suffix(&o.name, ".down");
        write_file(&p, |w| r.write_trace(w))?;
        files.push(p.display().to_string());
    }
    let up_summary = match up {
        Some((s, ms)) => {
            let p = with_suffix(&o.name, ".up");
            write_file(&p, |w| write_trace(&ms, w))?;
            files.push(p.display().to_string());
            Some(s)
        }
        None => None,
    };
    files.push(json_path.display().to_string());
    let summary = ClientSummary {
        kind: "summary",
        role: "client",
        session: format!("{:016x}", run.session),
        mode: run.mode,
        server: o.connect.to_string(),
        feedback: o.feedback.map(|f| f.to_string()),
        down: down_summary,
        up: up_summary,
        up_error,
        up_sender: run.sender.as_ref().map(|s| s.stats()),
        files,
    };
    write_json(Path::new(&json_path), &summary)?;
    if let Some(p) = run.partial.take() {
        p.remove();
    }
    Ok(summary)
}

/// The summary on stdout: one JSON line, or each direction's text and the files written.
fn print_client_summary(summary: &ClientSummary, json: bool) -> Result<(), SaturatorError> {
    if json {
        println!("{}", serde_json::to_string(summary)?);
    } else {
        for s in [&summary.down, &summary.up].into_iter().flatten() {
            println!("{}", s.text());
        }
        if let Some(e) = &summary.up_error {
            println!("up: no recording: {e}");
        }
        println!("wrote {}", summary.files.join(", "));
    }
    Ok(())
}

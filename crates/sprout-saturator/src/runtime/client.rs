//! `sprout saturator client` as a call ([`client`]): records a link to a server and writes
//! `NAME.down` (its recording of the downlink), `NAME.up` (the server's recording of the
//! uplink, sent back when the recording ends) and `NAME.json` (both summaries).
//!
//! A recording is complete when the server acknowledges its end. One whose server never
//! does (it died, or ended the session) is incomplete: it is cut where the server was last
//! heard (the rule is [`ClientRun::record`]'s), written as `NAME.incomplete.down` and
//! `NAME.incomplete.json` (never the finished names), its JSON says `"complete": false`, why,
//! and when the server went silent, and [`client`] returns an error (the command exits
//! non-zero). A recording the server ended at its bound (`--max-recording`) is complete,
//! cut there: `"ended": "server-limit"`.
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
    /// Whether the recording is complete: the server acknowledged its end. An incomplete
    /// one's files are `NAME.incomplete.*`.
    pub complete: bool,
    /// How the recording ended: "duration" (it passed), "interrupted" (a stop signal),
    /// "server-limit" (the server's bound on a recording's length: cut there, complete),
    /// "server-silent" (the server never acknowledged the end: cut where it was last heard,
    /// incomplete).
    pub ended: &'static str,
    /// Why the recording is incomplete, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// With "server-silent": when the server was last heard, s since the start of the
    /// recording (where the recording is cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_silent_since_s: Option<f64>,
    /// With "server-limit": the server's bound, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_limit_s: Option<f64>,
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
    let (stop, why) = run.record(&signals)?;

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
    let end = if acknowledged {
        End::Complete {
            stop,
            why,
            limit: run.server_limit,
        }
    } else {
        // The server never acknowledged the end: it went silent when it was last heard, and
        // the recording is cut there (not an outage of the link).
        let silent = run.last_from_server.min(stop);
        if let Some(r) = run.rec.as_mut() {
            r.cut(silent);
        }
        End::ServerSilent {
            silent_since: silent - run.start,
            stop: silent,
        }
    };
    let summary = write_client_files(o, &mut run, &end, ending)?;
    print_client_summary(&summary, o.json)?;
    match end {
        End::ServerSilent { silent_since, .. } => Err(SaturatorError::ServerGone {
            addr: o.connect,
            silent_since_s: silent_since.as_secs_f64(),
            files: summary.files.join(", "),
        }),
        End::Complete {
            limit: Some(limit), ..
        } => {
            eprintln!(
                "note: the server ends recordings at {} s (its --max-recording): this one is \
                 cut there",
                limit.as_secs_f64()
            );
            Ok(summary)
        }
        End::Complete { .. } => Ok(summary),
    }
}

/// How a recording ended, for its files.
enum End {
    /// The server acknowledged the end: at `stop`, for `why` ([`ClientRun::record`]'s), with
    /// the server's bound if it ended it.
    Complete {
        stop: Instant,
        why: &'static str,
        limit: Option<Duration>,
    },
    /// The server never acknowledged the end: the recording is cut at `stop`, where it was
    /// last heard, `silent_since` after the start.
    ServerSilent {
        stop: Instant,
        silent_since: Duration,
    },
}

/// Writes `NAME.down`, `NAME.up` and `NAME.json` (`NAME.incomplete.*` for an incomplete
/// recording), removing the previous run's JSON of that name first, and this run's partial
/// trace last; the summary.
fn write_client_files(
    o: &ClientOptions,
    run: &mut ClientRun<'_>,
    end: &End,
    ending: Ending,
) -> Result<ClientSummary, SaturatorError> {
    let Ending { up, up_error, .. } = ending;
    let (stop, prefix) = match end {
        End::Complete { stop, .. } => (*stop, o.name.clone()),
        End::ServerSilent { stop, .. } => (*stop, with_suffix(&o.name, ".incomplete")),
    };
    let json_path = with_suffix(&prefix, ".json");
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
        let p = with_suffix(&prefix, ".down");
        write_file(&p, |w| r.write_trace(w))?;
        files.push(p.display().to_string());
    }
    let up_summary = match up {
        Some((s, ms)) => {
            let p = with_suffix(&prefix, ".up");
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
        complete: matches!(end, End::Complete { .. }),
        ended: match end {
            End::Complete { why, .. } => why,
            End::ServerSilent { .. } => "server-silent",
        },
        incomplete_reason: match end {
            End::ServerSilent { silent_since, .. } => Some(format!(
                "the server did not acknowledge the end of the recording, and nothing came from \
                 it after {:.3} s (it died, or ended the session): cut there",
                silent_since.as_secs_f64()
            )),
            End::Complete { .. } => None,
        },
        server_silent_since_s: match end {
            End::ServerSilent { silent_since, .. } => Some(silent_since.as_secs_f64()),
            End::Complete { .. } => None,
        },
        server_limit_s: match end {
            End::Complete { limit, .. } => limit.map(|l| l.as_secs_f64()),
            End::ServerSilent { .. } => None,
        },
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

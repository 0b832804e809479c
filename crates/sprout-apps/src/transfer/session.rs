//! The data phase of a session, on either side: send, receive, print a line per second, end
//! by BYE, duration or silence, print the summary.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sprout_net::message::{Bye, Mode, DATA_HEADER_BYTES};
use sprout_net::EndpointStats;

use crate::app_delay::{paced_count, AppDelay, Stream};
use crate::transfer::end::SessionEnd;
use crate::transfer::limits::{BYE_COPIES, ENDED_DRAIN, PACED_PAYLOAD, SESSION_POLL, SILENCE};
use crate::transfer::lines::{print_header, quantile, round, sorted, Summary, Tick};
use crate::transfer::peer::{DataSender, Inbox, Listener, Peer};
use crate::transfer::plan::Plan;

/// Whether the peer's silence ends the session, `elapsed` into it: nothing heard for
/// [`SILENCE`]. A client that redials a silent server keeps going until its duration ends (the
/// endpoint redials after SILENCE); after it, silence ends the session as it would.
fn silent(plan: &Plan, s: &EndpointStats, elapsed: Duration, duration: Duration) -> bool {
    s.since_last_received_s
        .is_none_or(|t| t > SILENCE.as_secs_f64())
        && elapsed > SILENCE
        && !(plan.redials && elapsed < duration)
}

/// How a session whose endpoint has ended (`s`, `past` its duration or not) ended: the peer
/// may have said BYE and then closed the session (its close can overtake our reading of the
/// BYE: what arrived before the end is read first); a client that does not redial
/// (`--no-redial`) had its endpoint give up a server silent for [`SILENCE`], the silence that
/// ends a session otherwise; an end after the duration is the duration's (the peer closed
/// the session, its BYE lost); else it was closed.
fn ended_how(listener: &Listener, plan: &Plan, s: &EndpointStats, past: bool) -> SessionEnd {
    let drained = listener.wait_until(ENDED_DRAIN, |ib| ib.drained || ib.bye.is_some());
    let unheard = s
        .since_last_received_s
        .is_none_or(|t| t >= SILENCE.as_secs_f64());
    if drained && listener.inbox().bye.is_some() {
        SessionEnd::Bye
    } else if plan.ends_at_duration && !plan.redials && unheard {
        SessionEnd::Silence
    } else if past {
        SessionEnd::Duration
    } else {
        SessionEnd::Closed
    }
}

/// Runs the data phase of a session on `ep` (after the handshake) and prints its lines and
/// summary. Returns the summary.
pub(crate) fn run_session(ep: &Arc<dyn Peer>, listener: &Listener, plan: &Plan) -> Summary {
    let h = &plan.hello;
    let duration = Duration::from_millis(h.duration_ms as u64);
    let start = Instant::now();
    // Counters run from the endpoint's creation: the server's first reply and the client's
    // first burst may come before either side's session clock starts.
    let base = EndpointStats::default();
    let mut sender = plan.sends.then(|| DataSender::start(ep, h));
    let mut data_sent = 0;
    let mut bye_sent = false;
    let mut last = base.clone();
    let mut next_tick = 1u32;
    if plan.session.is_none() {
        print_header(plan.json, false);
    }
    let end = loop {
        // Sleep until the next thing due (the per-second line, the end of the duration, the
        // end of the grace), at most SESSION_POLL; the peer's BYE ends the wait at once.
        let elapsed = start.elapsed();
        let mut due = start_plus(next_tick);
        if elapsed < duration + plan.grace {
            due = due.min(duration + plan.grace);
        }
        if !bye_sent {
            due = due.min(duration);
        }
        let wait = due.saturating_sub(elapsed).min(SESSION_POLL);
        if listener.inbox().bye.is_none() {
            listener.wait_until(wait, |ib| ib.bye.is_some());
        } else {
            thread::sleep(wait);
        }
        let elapsed = start.elapsed();
        let s = ep.stats();
        if elapsed >= duration && !bye_sent {
            if let Some(snd) = sender.take() {
                data_sent = snd.stop(ep.as_ref());
            }
            send_bye(
                ep.as_ref(),
                h.session,
                data_sent,
                s.app_bytes_sent - base.app_bytes_sent,
            );
            bye_sent = true;
        }
        if elapsed >= start_plus(next_tick) {
            let delays = std::mem::take(&mut listener.inbox().second_delays);
            print_tick(plan, elapsed, &base, &last, &s, sorted(delays));
            last = s.clone();
            next_tick += 1;
        }
        if !s.running {
            break ended_how(listener, plan, &s, elapsed >= duration);
        }
        if silent(plan, &s, elapsed, duration) {
            break SessionEnd::Silence;
        }
        let bye = listener.inbox().bye.is_some();
        // The client ends at its duration without the server's BYE only once it has heard
        // from the server since the duration ended: a server that died before then (its BYE
        // never comes) ends the session by silence, an error, not as if it had finished.
        let alive = !plan.ends_at_duration || heard_since(&s, elapsed.saturating_sub(duration));
        let done = if plan.ends_at_duration {
            elapsed >= duration && (bye || (!plan.peer_sends && alive))
        } else {
            bye
        };
        if done {
            break if bye {
                SessionEnd::Bye
            } else {
                SessionEnd::Duration
            };
        }
        if elapsed >= duration + plan.grace && alive {
            break SessionEnd::Duration;
        }
    };
    let elapsed = start.elapsed();
    if !bye_sent {
        if let Some(snd) = sender.take() {
            data_sent = snd.stop(ep.as_ref());
        }
        let s = ep.stats();
        send_bye(
            ep.as_ref(),
            h.session,
            data_sent,
            s.app_bytes_sent - base.app_bytes_sent,
        );
    }
    // Let BYE leave (the window permitting).
    ep.wait_writable(0, Duration::from_secs(1));
    let s = ep.stats();
    let ib = listener.inbox();
    let all = sorted(ib.delays.iter().map(|&d| d as f64).collect());
    let secs = elapsed.min(duration).as_secs_f64().max(1e-3);
    let sent_bytes = s.app_bytes_sent - base.app_bytes_sent;
    let received_bytes = s.app_bytes_received - base.app_bytes_received;
    let secure = (plan.drops)();
    let summary = Summary {
        kind: "summary",
        role: plan.role,
        session: plan.session.as_ref().map(|(id, _)| id.clone()),
        peer_key: plan.session.as_ref().map(|(_, k)| k.clone()),
        peer: s.peer_addr,
        scheme: h.scheme.as_str(),
        confidence: h.confidence,
        direction: h.direction,
        mode: h.mode,
        rate_kbps: (h.mode == Mode::Paced).then_some(h.rate_kbps),
        duration_s: duration.as_secs_f64(),
        elapsed_s: round(elapsed.as_secs_f64(), 3),
        end,
        sent_bytes,
        received_bytes,
        sent_kbps: round(sent_bytes as f64 * 8.0 / 1000.0 / secs, 1),
        received_kbps: round(received_bytes as f64 * 8.0 / 1000.0 / secs, 1),
        data_sent,
        data_received: ib.data_received,
        peer_data_sent: ib.bye.map(|b| b.data_sent),
        dropped_unread: s.incoming_dropped - base.incoming_dropped,
        owd_p50_ms: quantile(&all, 0.5).map(|x| round(x, 3)),
        owd_p95_ms: quantile(&all, 0.95).map(|x| round(x, 3)),
        owd_p99_ms: quantile(&all, 0.99).map(|x| round(x, 3)),
        owd_mean_ms: (!all.is_empty())
            .then(|| round(all.iter().sum::<f64>() / all.len() as f64, 3)),
        app: app_delay(plan, ep.as_ref(), &ib, &all),
        datagrams_sent: s.datagrams_sent,
        datagrams_received: s.datagrams_received,
        heartbeats_sent: s.heartbeats_sent,
        malformed: s.malformed,
        dropped: secure.dropped_total(),
        drops: secure.drops_by_name().into_iter().collect(),
        roams: s.roams,
        bad_messages: ib.bad_messages,
        send_errors: s.send_errors,
        state: s.state,
        reconnections: s.reconnections,
    };
    summary.print(plan.json);
    summary
}

/// The application-level delay of the paced stream this side received (none in bulk mode, or
/// when the peer sends nothing): every DATA the peer created, from its creation stamp
/// (`CLOCK_REALTIME`) to its delivery here. The peer's BYE says how many it created; without
/// it (the BYE still queued behind data when this side stopped waiting), the highest sequence
/// number received or the count the rate and duration give, whichever is more.
fn app_delay(plan: &Plan, ep: &dyn Peer, ib: &Inbox, delays_ms: &[f64]) -> Option<AppDelay> {
    let h = &plan.hello;
    if h.mode != Mode::Paced || !plan.peer_sends {
        return None;
    }
    let size = match h.payload_bytes {
        0 => PACED_PAYLOAD,
        n => n as usize,
    }
    .clamp(DATA_HEADER_BYTES, ep.max_payload()) as u64;
    let duration_s = h.duration_ms as f64 / 1000.0;
    let offered = ib.bye.map(|b| b.data_sent).unwrap_or_else(|| {
        let seen = ib.max_seq.map_or(0, |s| s + 1);
        seen.max(paced_count(duration_s, h.rate_kbps as f64, size))
    });
    Some(AppDelay::new(Stream {
        clock: "CLOCK_REALTIME",
        offered,
        datagram_bytes: size,
        duration_s,
        delays_ms,
    }))
}

/// Whether anything came from the peer within the last `within` (the endpoint's clock).
fn heard_since(s: &sprout_net::EndpointStats, within: Duration) -> bool {
    s.since_last_received_s
        .is_some_and(|t| t < within.as_secs_f64())
}

fn start_plus(secs: u32) -> Duration {
    Duration::from_secs(secs as u64)
}

fn send_bye(ep: &dyn Peer, session: u64, data_sent: u64, app_bytes_sent: u64) {
    let bye = Bye {
        session,
        data_sent,
        app_bytes_sent,
    };
    for _ in 0..BYE_COPIES {
        ep.send(bye.encode());
    }
}

fn print_tick(
    plan: &Plan,
    elapsed: Duration,
    base: &EndpointStats,
    last: &EndpointStats,
    s: &EndpointStats,
    delays: Vec<f64>,
) {
    let dt = (s.elapsed_s - last.elapsed_s).max(1e-3);
    Tick {
        kind: "tick",
        role: plan.role,
        session: plan.session.as_ref().map(|(id, _)| id.clone()),
        peer: plan.session.as_ref().and(s.peer_addr),
        elapsed_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        sent_kbps: round(
            (s.app_bytes_sent - last.app_bytes_sent) as f64 * 8.0 / 1000.0 / dt,
            1,
        ),
        received_kbps: round(
            (s.app_bytes_received - last.app_bytes_received) as f64 * 8.0 / 1000.0 / dt,
            1,
        ),
        sent_bytes: s.app_bytes_sent - base.app_bytes_sent,
        received_bytes: s.app_bytes_received - base.app_bytes_received,
        window_bytes: s.queue_estimate_bytes + s.window_bytes,
        room_bytes: s.window_bytes,
        queue_estimate_bytes: s.queue_estimate_bytes,
        forecast_packets: s.peer_forecast_packets,
        forecast: s.peer_forecast.clone(),
        incoming_rate_pps: (s.incoming_rate_pps * 10.0).round() / 10.0,
        data_received: delays.len(),
        owd_p50_ms: quantile(&delays, 0.5).map(|x| round(x, 3)),
        owd_p95_ms: quantile(&delays, 0.95).map(|x| round(x, 3)),
        malformed: s.malformed,
        dropped: (plan.drops)().dropped_total(),
        state: s.state,
        reconnections: s.reconnections,
    }
    .print(plan.json);
}

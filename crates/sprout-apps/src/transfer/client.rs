//! `sprout client`: one secure session with a server, a saturating or paced transfer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sprout_core::direction::Direction;
use sprout_net::message::{Hello, Mode, DATA_HEADER_BYTES};
use sprout_net::secure::{ClientConfig, Limits, PrivateKey, PublicKey};
use sprout_net::{realtime_us, Endpoint, ReconnectOptions};

use crate::app_delay::AppDelay;
use crate::transfer::address::resolve;
use crate::transfer::end::SessionEnd;
use crate::transfer::error::TransferError;
use crate::transfer::limits::{CLIENT_GRACE, HANDSHAKE, SILENCE};
use crate::transfer::options::ClientOptions;
use crate::transfer::peer::{Listener, Peer};
use crate::transfer::plan::Plan;
use crate::transfer::session::run_session;

/// The HELLO of `o`, after checking its options.
fn hello(o: &ClientOptions) -> Result<Hello, TransferError> {
    let invalid = |m: String| Err(TransferError::InvalidOption(m));
    if !(o.duration > 0.0 && o.duration * 1000.0 <= u32::MAX as f64) {
        return invalid(format!(
            "--duration must be a positive number of seconds, got {}",
            o.duration
        ));
    }
    if !(o.confidence > 0.0 && o.confidence < 1.0) {
        return invalid(format!(
            "--confidence must be strictly between 0 and 1, got {}",
            o.confidence
        ));
    }
    let rate_kbps = match o.rate {
        None => None,
        Some(r) if r >= 1.0 && r <= u32::MAX as f64 => Some(r.round() as u32),
        Some(r) => return invalid(format!("--rate must be at least 1 kbit/s, got {r}")),
    };
    let payload = o.payload;
    let max_payload = sprout_core::Config::default().max_datagram_bytes
        - sprout_core::wire::header_bytes(sprout_core::Config::default().model.forecast_ticks);
    if !(DATA_HEADER_BYTES..=max_payload).contains(&payload) {
        return invalid(format!(
            "--payload must be {DATA_HEADER_BYTES}..={max_payload} bytes, got {payload}"
        ));
    }
    Ok(Hello {
        session: realtime_us() ^ ((std::process::id() as u64) << 32),
        direction: o.direction,
        mode: if rate_kbps.is_some() {
            Mode::Paced
        } else {
            Mode::Bulk
        },
        scheme: o.scheme,
        confidence: o.confidence,
        rate_kbps: rate_kbps.unwrap_or(0),
        duration_ms: (o.duration * 1000.0).round().max(1.0) as u32,
        payload_bytes: payload as u16,
    })
}

/// Waits for the server's ACCEPT (or first DATA), at most the handshake time (or the
/// duration, if shorter).
fn wait_for_accept(
    o: &ClientOptions,
    ep: &Endpoint,
    listener: &Listener,
    remote: SocketAddr,
) -> Result<(), TransferError> {
    let wait = HANDSHAKE.min(Duration::from_secs_f64(o.duration));
    let t0 = Instant::now();
    while !listener.wait_until(Duration::from_millis(100), |ib| ib.accepted) {
        if let Some(error) = ep.error() {
            return Err(TransferError::NoSession { remote, error });
        }
        if t0.elapsed() >= wait {
            // The server answered, authenticated, that it is full: say so, not "check the keys".
            if let Some(error) = ep.refusal() {
                return Err(TransferError::NoSession { remote, error });
            }
            let how = if ep.is_established() {
                "the handshake completed but the server did not accept the session (it refuses a greeting it does not understand, and sessions beyond its limit)"
            } else if o.key.is_none() {
                "is `sprout server` running there and reachable over UDP, is --server-key its public key, and does it accept any client (--allow-any-client)? Without --key this client uses an ephemeral key, which a server with --allowed-clients refuses"
            } else {
                "is `sprout server` running there and reachable over UDP, is --server-key its public key, and is this client's public key (`sprout keygen --public FILE`) in its --allowed-clients file?"
            };
            return Err(TransferError::NoAnswer {
                remote,
                wait_s: wait.as_secs_f64(),
                how,
            });
        }
    }
    Ok(())
}

/// Runs `sprout client`: one session with the server, its lines on stdout. An error when the
/// session could not start or the server fell silent.
pub fn run(o: &ClientOptions) -> Result<(), TransferError> {
    run_stream(o).map(|_| ())
}

/// Runs `sprout client` as [`run`] does, and returns the application-level delay of the paced
/// stream it received from the server (`None` in bulk mode or when the server sends nothing,
/// `--direction up`), as its summary printed it.
pub fn run_stream(o: &ClientOptions) -> Result<Option<AppDelay>, TransferError> {
    let hello = hello(o)?;
    let server_key = PublicKey::from_arg(&o.server_key).map_err(TransferError::ServerKey)?;
    let private_key = match &o.key {
        Some(p) => PrivateKey::read_file(p).map_err(TransferError::Key)?,
        None => PrivateKey::generate(),
    };
    let remote = resolve(&o.connect)?;
    let local = match &o.bind {
        Some(b) => resolve(b)?,
        None if remote.is_ipv4() => SocketAddr::from(([0, 0, 0, 0], 0)),
        None => SocketAddr::from(([0u16; 8], 0)),
    };
    let keys = ClientConfig {
        private_key,
        server_key,
        limits: Limits::default(),
    };
    // A server silent for SILENCE is redialled (unless --no-redial): the session's data
    // phase goes on through a restarted server.
    let reconnect = ReconnectOptions {
        enabled: !o.no_redial,
        dead_after: SILENCE,
        ..ReconnectOptions::default()
    };
    let config = hello.config();
    let ep = Endpoint::connect_with(local, remote, keys, config, &hello.encode(), reconnect)
        .map_err(|source| TransferError::Connect {
            remote,
            local,
            source,
        })?;
    let ep = Arc::new(ep);
    let peer: Arc<dyn Peer> = ep.clone();
    let listener = Listener::start(peer.clone());
    wait_for_accept(o, &ep, &listener, remote)?;
    if !o.json {
        eprintln!(
            "connected to {remote} from {} ({} {}, {} s)",
            ep.local_addr(),
            hello.scheme.as_str(),
            hello.direction.as_str(),
            o.duration
        );
    }
    let stats_ep = ep.clone();
    let plan = Plan {
        role: "client",
        hello,
        sends: hello.direction.carries(Direction::Up),
        peer_sends: hello.direction.carries(Direction::Down),
        ends_at_duration: true,
        grace: CLIENT_GRACE,
        json: o.json,
        redials: !o.no_redial,
        session: None,
        drops: Arc::new(move || stats_ep.stats().secure.unwrap_or_default()),
    };
    let summary = run_session(&peer, &listener, &plan);
    drop(listener);
    drop(plan);
    ep.close();
    // A server that died ends the session by silence (during the duration or after it: see
    // run_session) or by the security layer giving up: the client says so and fails.
    match summary.end {
        SessionEnd::Silence => {
            return Err(TransferError::Silence {
                remote,
                silence_s: SILENCE.as_secs(),
            })
        }
        SessionEnd::Closed => {
            if let Some(error) = ep.error() {
                return Err(TransferError::SessionLost { remote, error });
            }
        }
        _ => {}
    }
    Ok(summary.app)
}

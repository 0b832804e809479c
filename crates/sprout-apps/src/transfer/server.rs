//! `sprout server`: many clients at once on one UDP socket, each session on its own thread.

use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use sprout_core::direction::Direction;
use sprout_net::message::{self, Message, Mode};
use sprout_net::secure::{
    read_allowed_keys, AllowedClients, DropReason, PrivateKey, SecureStats, ServerConfig,
};
use sprout_net::{Server, ServerOptions as NetServerOptions, Session};

use crate::transfer::address::resolve;
use crate::transfer::end::SessionEnd;
use crate::transfer::error::TransferError;
use crate::transfer::limits::{BYE_COPIES, SERVER_GRACE};
use crate::transfer::lines::print_header;
use crate::transfer::options::ServerOptions;
use crate::transfer::peer::{Listener, Peer};
use crate::transfer::plan::Plan;
use crate::transfer::session::run_session;

/// The server's private key: read from `path`, or a new ephemeral one.
fn server_private_key(path: Option<&PathBuf>) -> Result<PrivateKey, TransferError> {
    match path {
        Some(p) => PrivateKey::read_file(p).map_err(TransferError::Key),
        None => Ok(PrivateKey::generate()),
    }
}

/// The security layer's drop counters by name, "reason count, ...".
fn drops_text(s: &SecureStats) -> String {
    let by: Vec<String> = s
        .drops_by_name()
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    by.join(", ")
}

/// Checks the options and binds the server (printing its address and public key).
fn bind(o: &ServerOptions) -> Result<Server, TransferError> {
    let listen = resolve(&o.listen)?;
    if o.max_sessions == 0 {
        return Err(TransferError::InvalidOption(
            "--max-sessions must be at least 1".into(),
        ));
    }
    if o.max_sessions_per_source == 0 || o.max_sessions_per_key == 0 {
        return Err(TransferError::InvalidOption(
            "--max-sessions-per-source and --max-sessions-per-key must be at least 1".into(),
        ));
    }
    if !(o.idle_timeout.is_finite() && o.idle_timeout > 0.0 && o.idle_timeout <= 86_400.0) {
        return Err(TransferError::InvalidOption(format!(
            "--idle-timeout must be a positive number of seconds (at most a day), got {}",
            o.idle_timeout
        )));
    }
    let key = server_private_key(o.key.as_ref())?;
    let allowed = match (&o.allowed_clients, o.allow_any_client) {
        (Some(path), false) => {
            let keys = read_allowed_keys(path).map_err(TransferError::AllowedClients)?;
            if keys.is_empty() {
                return Err(TransferError::NoAllowedClient(path.clone()));
            }
            AllowedClients::Keys(keys.into_iter().collect())
        }
        (None, true) => AllowedClients::Any,
        _ => return Err(TransferError::ClientsChoice),
    };
    let mut config = ServerConfig::new(key, allowed);
    config.max_sessions_per_source = o.max_sessions_per_source;
    config.max_sessions_per_key = o.max_sessions_per_key;
    let mut options = NetServerOptions::new(config);
    options.max_sessions = o.max_sessions;
    options.idle_timeout = Duration::from_secs_f64(o.idle_timeout);
    let server = Server::bind(listen, options, |_, _, greeting| {
        match Message::decode(greeting) {
            Ok(Message::Hello(h)) => Some(h.config()),
            _ => None,
        }
    })
    .map_err(|source| TransferError::Listen {
        addr: listen,
        source,
    })?;
    eprintln!(
        "sprout server listening on {} with public key {}{}",
        server.local_addr(),
        server.public_key(),
        if o.key.is_none() { " (ephemeral)" } else { "" }
    );
    Ok(server)
}

/// Starts a new session's thread: ACCEPT, the data phase, its end; `done` hears when it is
/// over.
fn start_session(server: &Arc<Server>, session: Session, json: bool, done: mpsc::Sender<()>) {
    let Ok(Message::Hello(hello)) = Message::decode(session.greeting()) else {
        // The acceptor only lets HELLOs through.
        return;
    };
    let label = format!("{:08x}", session.id());
    let peer_key = session.peer_key().to_base64();
    eprintln!(
        "session {label} from {} (key {peer_key}): {} {} {}, {} s",
        session.peer_addr(),
        hello.scheme.as_str(),
        hello.direction.as_str(),
        match hello.mode {
            Mode::Bulk => "bulk".to_string(),
            Mode::Paced => format!("paced {} kbit/s", hello.rate_kbps),
        },
        hello.duration_ms as f64 / 1000.0
    );
    let srv = server.clone();
    let plan = Plan {
        role: "server",
        hello,
        sends: hello.direction.carries(Direction::Down),
        peer_sends: hello.direction.carries(Direction::Up),
        ends_at_duration: false,
        grace: SERVER_GRACE,
        json,
        session: Some((label.clone(), peer_key)),
        drops: Arc::new(move || srv.stats().secure),
        redials: false,
    };
    let session: Arc<Session> = Arc::new(session);
    thread::spawn(move || {
        let ep: Arc<dyn Peer> = session.clone();
        for _ in 0..BYE_COPIES {
            ep.send(message::encode_accept(plan.hello.session));
        }
        let listener = Listener::start(ep.clone());
        let summary = run_session(&ep, &listener, &plan);
        match summary.end {
            SessionEnd::Silence => eprintln!("session {label}: the client fell silent"),
            SessionEnd::Closed => eprintln!(
                "session {label}: closed ({})",
                session.end_reason().unwrap_or_default()
            ),
            _ => {}
        }
        drop(listener);
        session.close();
        let _ = done.send(());
    });
}

/// The once-a-second note of the security layer's drops (when they changed).
fn report_drops(server: &Server, last_drops: &mut SecureStats) {
    let s = server.stats();
    let old = s.secure.dropped(DropReason::OldVersion);
    if old > 0 && last_drops.dropped(DropReason::OldVersion) == 0 {
        eprintln!(
            "server: refusing datagrams of wire version 1 (unencrypted, from a sprout build older than this one); this server speaks version 2 only: upgrade the client"
        );
    }
    if s.secure.dropped != last_drops.dropped {
        eprintln!(
            "server: {} sessions open; dropped datagrams so far: {}",
            s.sessions_open,
            drops_text(&s.secure)
        );
        *last_drops = s.secure;
    }
}

/// Runs `sprout server`: serves clients until killed (or, with `once`, until the first
/// session ends), printing each session's lines on stdout and notes on stderr.
pub fn serve(o: &ServerOptions) -> Result<(), TransferError> {
    let server = Arc::new(bind(o)?);
    print_header(o.json, true);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut last_drops = SecureStats::default();
    let mut next_report = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(session) = server.accept_timeout(Duration::from_millis(100)) {
            start_session(&server, session, o.json, done_tx.clone());
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(1);
            report_drops(&server, &mut last_drops);
        }
        if o.once && done_rx.try_recv().is_ok() {
            let s = server.stats();
            eprintln!(
                "server: {} sessions accepted, {} refused; dropped datagrams: {}",
                s.sessions_accepted,
                s.sessions_refused,
                if s.secure.dropped_total() == 0 {
                    "none".to_string()
                } else {
                    drops_text(&s.secure)
                }
            );
            return Ok(());
        }
        if !server.is_running() {
            return Err(TransferError::ServerStopped(
                server.fatal_error().unwrap_or_default(),
            ));
        }
    }
}

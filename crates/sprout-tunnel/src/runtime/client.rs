//! The mobile host's end on one connected UDP socket: [`Client`], [`run_client`]; its device
//! is made when the relay's assignment arrives ([`super::device_setup`]).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicI32};
use std::sync::Arc;

use mio::Waker;
use serde_json::json;
use sprout_core::time::Instant;
use sprout_os::clock::MonotonicClock;

use super::device_setup::{set_up_client, ClientSetup};
use super::event_loop::{run_loop, Control};
use super::io::{bind_error, udp_socket, End, Io};
use super::output::{exit_line, out, out_json, StatusPrinter};
use super::stop::{stop_on_signals, ExitReason, StopHandle};
use crate::client::{ClientTunnelEvent, TunnelClient};
use crate::config::TunnelClientConfig;
use crate::device::{self, SetupError};
use crate::status::TunnelStatus;

/// A client with no assignment this long after it started gives up.
pub const ASSIGNMENT_TIMEOUT: sprout_core::Duration = sprout_core::Duration::from_secs(15);

/// The client engine with the server's address (its datagrams all go there).
pub(super) struct ClientEnd {
    pub(super) engine: TunnelClient,
    pub(super) server: SocketAddr,
}

impl End for ClientEnd {
    fn handle_udp(&mut self, now: Instant, _from: SocketAddr, d: &[u8]) {
        self.engine.handle_udp(now, d)
    }
    fn handle_tun(&mut self, now: Instant, p: &[u8]) {
        self.engine.handle_tun(now, p)
    }
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        self.engine.poll_udp(now, buf).then_some(self.server)
    }
    fn poll_tun(&mut self) -> Option<Vec<u8>> {
        self.engine.poll_tun()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.engine.poll_timeout()
    }
    fn status(&mut self, now: Instant) -> TunnelStatus {
        self.engine.status(now)
    }
}

/// A tunnel client: [`Client::new`] then [`Client::run`].
pub struct Client {
    cfg: TunnelClientConfig,
    end: ClientEnd,
    io: Io,
    ctl: Control,
    waker: Arc<Waker>,
    local: SocketAddr,
}

impl Client {
    /// Checks privileges, binds and connects the socket, starts the handshake. The device is
    /// made when the assignment arrives.
    pub fn new(cfg: TunnelClientConfig) -> Result<Client, SetupError> {
        device::check_can_create()?;
        let server = cfg.run.server;
        let local: SocketAddr = if server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let (sock, _) = udp_socket(local).map_err(|e| bind_error("bind", local, e))?;
        sock.connect(server)
            .map_err(|e| SetupError(format!("cannot reach the server {server}: {e}")))?;
        let local = sock.local_addr().unwrap_or(local);
        let (io, waker) = Io::new(sock, true)?;
        let clock = MonotonicClock::new();
        let engine = TunnelClient::new(cfg.settings.clone(), Instant::ZERO)
            .map_err(|e| SetupError(e.to_string()))?;
        let ctl = Control {
            stop: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicI32::new(0)),
            clock,
            end: cfg.run.duration.map(|d| Instant::ZERO + d),
            status_interval: cfg.run.status_interval,
        };
        Ok(Client {
            cfg,
            end: ClientEnd { engine, server },
            io,
            ctl,
            waker,
            local,
        })
    }

    /// Stops [`Client::run`] from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.ctl.stop.clone(),
            signal: self.ctl.signal.clone(),
            waker: self.waker.clone(),
        }
    }

    /// Runs until stopped; removes the device and routes whatever happens.
    pub fn run(mut self) -> Result<ExitReason, SetupError> {
        let json = self.cfg.run.json;
        let run = self.cfg.run.clone();
        let key = run.public_key.to_base64();
        if json {
            out_json(json!({
                "event": "connecting",
                "server": run.server,
                "local": self.local,
                "public_key": key,
                "ephemeral_key": run.ephemeral_key,
            }));
        } else {
            out(&format!(
                "sprout tunnel client, public key {key}{}",
                if run.ephemeral_key {
                    " (ephemeral: only a server with --allow-any-client accepts it)"
                } else {
                    ""
                }
            ));
            out(&format!("connecting to {} from {}", run.server, self.local));
        }
        let mut setup: Option<ClientSetup> = None;
        let mut printer = StatusPrinter::new(json, false);
        let mut established = false;
        let result = run_loop(
            &mut self.end,
            &mut self.io,
            &self.ctl,
            &mut printer,
            |end, io, now| {
                while let Some(ev) = end.engine.poll_event() {
                    match ev {
                        ClientTunnelEvent::Established => {
                            established = true;
                            let n = end.engine.reconnections();
                            if json {
                                out_json(
                                    json!({"event": "established", "server": run.server, "reconnections": n}),
                                );
                            } else if n > 0 {
                                out(&format!(
                                    "session established again with {} (reconnection {n})",
                                    run.server
                                ));
                            } else {
                                out(&format!("session established with {}", run.server));
                            }
                        }
                        ClientTunnelEvent::Reconnecting(why) => {
                            if json {
                                out_json(
                                    json!({"event": "reconnecting", "server": run.server, "reason": why}),
                                );
                            } else {
                                out(&format!(
                                    "the server {} is silent, reconnecting: {why}",
                                    run.server
                                ));
                            }
                        }
                        ClientTunnelEvent::Assigned(a) => {
                            if setup.as_ref().is_some_and(|s| s.assignment == a) {
                                continue;
                            }
                            // A new or changed assignment: the old device and routes go first.
                            if let Some(old) = setup.take() {
                                io.detach();
                                drop(old);
                            }
                            setup = Some(set_up_client(&run, &a, io)?);
                        }
                        ClientTunnelEvent::Failed(why) => {
                            return Err(SetupError(format!(
                                "the tunnel to {} failed: {why}{}",
                                run.server,
                                if established { "" } else { hint(&run) }
                            )));
                        }
                    }
                }
                if setup.is_none() && now >= Instant::ZERO + ASSIGNMENT_TIMEOUT {
                    return Err(SetupError(if established {
                        format!(
                            "the server {} completed the handshake but assigned no tunnel address within {} s (is it a `sprout tunnel server`, with addresses left?)",
                            run.server,
                            ASSIGNMENT_TIMEOUT.as_micros() / 1_000_000
                        )
                    } else {
                        format!(
                            "no answer from {} within {} s: {}",
                            run.server,
                            ASSIGNMENT_TIMEOUT.as_micros() / 1_000_000,
                            hint(&run).trim_start_matches(": ")
                        )
                    }));
                }
                Ok(())
            },
        );
        let now = self.ctl.clock.now();
        // The client quits: the relay is told (the session's authenticated close, a few
        // copies, best-effort) and frees the session and its addresses at once. Nothing is
        // sent when no session is up (a failed or closed tunnel).
        self.end.engine.close(now);
        self.io.send_final(&mut self.end, now);
        // Whatever happened: the device goes (with its addresses and routes), then the rest.
        self.io.detach();
        let removed = setup.as_ref().and_then(|s| {
            s.undo
                .pending()
                .first()
                .map(|a| format!("`ip {}`", a.join(" ")))
        });
        drop(setup);
        let reason = result?;
        let s = self.end.status(now);
        printer.print(s, &self.io.counters);
        exit_line(
            &printer,
            &self.io.counters,
            &reason,
            now,
            json!({
                "removed": removed.map(|r| format!("ran {r}")),
                "state": self.end.engine.state(),
                "reconnections": self.end.engine.reconnections(),
            }),
        );
        Ok(reason)
    }
}

pub(super) fn hint(run: &crate::config::ClientRun) -> &'static str {
    if run.ephemeral_key {
        ": is `sprout tunnel server` running there and reachable over UDP, is --server-key its public key, and does it accept any client (--allow-any-client)? Without --key this client's key is ephemeral"
    } else {
        ": is `sprout tunnel server` running there and reachable over UDP, is --server-key its public key, and is this client's public key in its --allowed-clients file or [[peer]] list?"
    }
}

/// Runs a client until a signal, `--duration` or a failure: [`Client::new`], signals,
/// [`Client::run`].
pub fn run_client(cfg: TunnelClientConfig) -> Result<ExitReason, SetupError> {
    crate::cleanup::install_panic_hook();
    let client = Client::new(cfg)?;
    stop_on_signals(client.stop_handle())
        .map_err(|e| SetupError(format!("cannot catch signals: {e}")))?;
    client.run()
}

//! The relay's end on a TUN device and one UDP socket: [`Server`], [`run_server`].

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicI32};
use std::sync::Arc;

use ipnet::Ipv4Net;
use mio::Waker;
use serde_json::json;
use sprout_core::time::Instant;
use sprout_os::clock::MonotonicClock;

use super::event_loop::{run_loop, Control};
use super::io::{bind_error, sticky, udp_socket, Io};
use super::output::{exit_line, out, out_json, print_server_event, StatusPrinter};
use super::stop::{stop_on_signals, ExitReason, StopHandle};
use crate::config::TunnelServerConfig;
use crate::device::{self, Device, DeviceSpec, SetupError};
use crate::server::{ServerTunnelEvent, TunnelServer};

/// A running server, made by [`Server::new`] and run by [`Server::run`] (as
/// [`super::Client`] is for the client). Exposes the stop handle before running.
pub struct Server {
    cfg: TunnelServerConfig,
    engine: TunnelServer,
    io: Io,
    ctl: Control,
    waker: Arc<Waker>,
    local: SocketAddr,
    notes: Vec<String>,
}

impl Server {
    /// Checks privileges, makes the engine, binds the socket, creates and configures the
    /// device. Nothing is left if it fails.
    pub fn new(mut cfg: TunnelServerConfig) -> Result<Server, SetupError> {
        device::check_can_create()?;
        let mut notes = Vec::new();
        if cfg.settings.v6.is_some() && !device::host_ipv6_enabled() {
            notes.push("IPv6 is disabled on this host: the tunnel carries IPv4 only".to_string());
            cfg.settings.v6 = None;
            for p in cfg.settings.pinned.values_mut() {
                p.v6 = None;
            }
            if cfg.settings.v4.is_none() {
                return Err(SetupError::new(
                    "IPv6 is disabled on this host and --address is none: nothing to carry",
                ));
            }
        }
        let mut engine =
            TunnelServer::new(cfg.settings.clone()).map_err(|e| SetupError(e.to_string()))?;
        let (sock, _) =
            udp_socket(cfg.run.listen).map_err(|e| bind_error("listen on", cfg.run.listen, e))?;
        let local = sock.local_addr().unwrap_or(cfg.run.listen);
        let (mut io, waker) = Io::new(sock, false)?;
        if local.ip().is_unspecified() && sticky::enable(&io.udp, local.is_ipv6()) {
            io.sticky = Some(HashMap::new());
        }
        let spec = DeviceSpec {
            name: cfg.run.device.clone(),
            mtu: cfg.settings.tun_mtu,
            v4: cfg.settings.v4,
            v6: cfg.settings.v6,
            prefix_routes: !cfg.run.no_routes,
        };
        let dev = Device::create(&spec)?;
        io.attach(dev)?;
        let ctl = Control {
            stop: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicI32::new(0)),
            clock: MonotonicClock::new(),
            end: cfg.run.duration.map(|d| Instant::ZERO + d),
            status_interval: cfg.run.status_interval,
        };
        if cfg.settings.isolate {
            engine.set_host_addresses(host_addresses());
        } else {
            notes.push("clients reach every service on this host's own addresses (its tunnel address, and others they route into the tunnel); --isolate drops their packets to this host".to_string());
        }
        if cfg.settings.v4.is_some() && !device::forwarding_enabled(false) {
            notes.push("IPv4 forwarding is off on this host (net.ipv4.ip_forward = 0): clients reach this host and each other, not the networks behind it".to_string());
        }
        Ok(Server {
            cfg,
            engine,
            io,
            ctl,
            waker,
            local,
            notes,
        })
    }

    /// Stops [`Server::run`] from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.ctl.stop.clone(),
            signal: self.ctl.signal.clone(),
            waker: self.waker.clone(),
        }
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.io
            .device
            .as_ref()
            .map(|d| d.name().to_string())
            .unwrap_or_default()
    }

    /// Prints the start lines and runs until stopped; then removes the device.
    pub fn run(mut self) -> Result<ExitReason, SetupError> {
        let json = self.cfg.run.json;
        let device = self.device_name();
        let key = self.engine.public_key().to_base64();
        let v4 = self.cfg.settings.v4.map(|n| n.to_string());
        let v6 = self.cfg.settings.v6.map(|n| n.to_string());
        let mtu = self.cfg.settings.tun_mtu;
        if json {
            out_json(json!({
                "event": "listening",
                "listen": self.local,
                "device": device,
                "v4": v4,
                "v6": v6,
                "mtu": mtu,
                "path_mtu": self.cfg.run.path_mtu,
                "public_key": key,
                "max_clients": self.cfg.settings.secure.max_sessions,
                "client_to_client": self.cfg.settings.client_to_client,
                "isolate": self.cfg.settings.isolate,
                "prefix_routes": !self.cfg.run.no_routes,
                "notes": self.notes,
            }));
        } else {
            out(&format!(
                "sprout tunnel server listening on {} (UDP), public key {key}",
                self.local
            ));
            let addrs: Vec<String> = v4.iter().chain(v6.iter()).cloned().collect();
            out(&format!(
                "device {device}: {}, MTU {mtu} (path MTU {}){}",
                addrs.join(" "),
                self.cfg.run.path_mtu,
                if self.cfg.run.no_routes {
                    ", addresses without prefix routes (--no-routes)"
                } else {
                    ""
                }
            ));
            for n in &self.notes {
                out(&format!("note: {n}"));
            }
        }
        let mut printer = StatusPrinter::new(json, true);
        let mut clients_seen = 0u64;
        let isolate = self.cfg.settings.isolate;
        let mut refresh = Instant::ZERO + HOST_ADDRESSES_REFRESH;
        let result = run_loop(
            &mut self.engine,
            &mut self.io,
            &self.ctl,
            &mut printer,
            |engine, _io, now| {
                if isolate && now >= refresh {
                    engine.set_host_addresses(host_addresses());
                    refresh = now + HOST_ADDRESSES_REFRESH;
                }
                while let Some(ev) = engine.poll_event() {
                    if matches!(ev, ServerTunnelEvent::ClientUp { .. }) {
                        clients_seen += 1;
                    }
                    print_server_event(&ev, json);
                }
                Ok(())
            },
        );
        let now = self.ctl.clock.now();
        let reason = result?;
        let s = self.engine.status(now);
        printer.print(s, &self.io.counters);
        self.io.detach();
        exit_line(
            &printer,
            &self.io.counters,
            &reason,
            now,
            json!({ "clients_seen": clients_seen }),
        );
        Ok(reason)
    }
}

/// How often a server with `--isolate` reads the host's addresses again (they change with
/// DHCP, roaming, an operator's `ip addr`).
pub(super) const HOST_ADDRESSES_REFRESH: sprout_core::time::Duration =
    sprout_core::time::Duration::from_secs(2);

/// The relay host's own addresses: every interface address, and each IPv4 network's
/// broadcast address.
pub(super) fn host_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    for a in sprout_os::interfaces::interface_addresses() {
        out.push(a.address);
        if let (IpAddr::V4(v4), Some(p)) = (a.address, a.prefix_len) {
            if let Ok(n) = Ipv4Net::new(v4, p) {
                if p < 31 {
                    out.push(n.broadcast().into());
                }
            }
        }
    }
    out
}

/// Runs a server until a signal or `--duration`: [`Server::new`], signals, [`Server::run`].
pub fn run_server(cfg: TunnelServerConfig) -> Result<ExitReason, SetupError> {
    crate::cleanup::install_panic_hook();
    let server = Server::new(cfg)?;
    stop_on_signals(server.stop_handle())
        .map_err(|e| SetupError(format!("cannot catch signals: {e}")))?;
    server.run()
}

//! The client's device set-up: the TUN device from the relay's assignment, then its routes
//! and their undo list, and the `up` line.

use ipnet::{Ipv4Net, Ipv6Net};
use serde_json::json;

use super::io::Io;
use super::output::{out, out_json};
use crate::cleanup::Undo;
use crate::control::{Assignment, MIN_TUN_MTU_V6};
use crate::device::{self, Device, DeviceSpec, SetupError};
use crate::routes::{self, AppliedRoutes};

/// The client's device, routes and clean-up, made from an assignment.
pub(super) struct ClientSetup {
    pub(super) assignment: Assignment,
    pub(super) undo: Undo,
}

/// The relay's tunnel address in `a` and the interface holding it, if it is on one of this
/// namespace's interfaces: the relay runs here, beside its client (issue 39).
fn relay_here(a: &Assignment) -> Option<(std::net::IpAddr, String)> {
    let relay: Vec<std::net::IpAddr> =
        a.v4.map(|v| v.server.into())
            .into_iter()
            .chain(a.v6.map(|v| v.server.into()))
            .collect();
    device::interface_addresses()
        .into_iter()
        .find(|i| relay.contains(&i.net.addr()))
        .map(|i| (i.net.addr(), i.interface))
}

/// Makes the client's device from the assignment, then its routes; prints the `up` line.
pub(super) fn set_up_client(
    run: &crate::config::ClientRun,
    a: &Assignment,
    io: &mut Io,
) -> Result<ClientSetup, SetupError> {
    let mut notes = Vec::new();
    let mut v6 = a.v6;
    if v6.is_some() && !device::host_ipv6_enabled() {
        notes.push("IPv6 is disabled on this host: only IPv4 is set up".to_string());
        v6 = None;
    }
    if v6.is_some() && a.mtu < MIN_TUN_MTU_V6 {
        notes.push(format!(
            "the MTU {} is below IPv6's 1280: only IPv4 is set up",
            a.mtu
        ));
        v6 = None;
    }
    let v4net =
        a.v4.map(|v| Ipv4Net::new(v.client, v.prefix))
            .transpose()
            .map_err(|_| SetupError::new("the server assigned a bad IPv4 prefix"))?;
    let v6net = v6
        .map(|v| Ipv6Net::new(v.client, v.prefix))
        .transpose()
        .map_err(|_| SetupError::new("the server assigned a bad IPv6 prefix"))?;
    if v4net.is_none() && v6net.is_none() {
        return Err(SetupError::new(
            "the server assigned no address this host can use",
        ));
    }
    if let Some((addr, interface)) = relay_here(a) {
        return Err(SetupError(format!(
            "the relay {} runs in this network namespace (its tunnel address {addr} is on \
             interface {interface}): a client needs a host or network namespace of its own; \
             to try the tunnel on one machine, run `sudo sprout tunnel try`",
            run.server
        )));
    }
    let spec = DeviceSpec {
        name: run.device.clone(),
        mtu: a.mtu,
        v4: v4net,
        v6: v6net,
        prefix_routes: !run.no_routes,
    };
    let dev = Device::create(&spec)?;
    let name = dev.name().to_string();
    io.attach(dev)?;
    let mut undo = Undo::new();
    let applied = if run.no_routes {
        AppliedRoutes::default()
    } else {
        routes::apply(
            &name,
            &run.routes,
            run.server.ip(),
            v4net.is_some(),
            v6net.is_some(),
            &mut undo,
        )?
    };
    if let Some(n) = &applied.note {
        notes.push(n.clone());
    }
    let routes: Vec<String> = applied.via_tunnel.iter().map(|r| r.to_string()).collect();
    if run.json {
        out_json(json!({
            "event": "up",
            "device": name,
            "v4": v4net.map(|n| n.to_string()),
            "server_v4": a.v4.map(|v| v.server.to_string()),
            "v6": v6net.map(|n| n.to_string()),
            "server_v6": v6.map(|v| v.server.to_string()),
            "mtu": a.mtu,
            "routes": routes,
            "server_route": applied.server_route,
            "prefix_routes": !run.no_routes,
            "notes": notes,
        }));
    } else {
        let mut parts = Vec::new();
        if let (Some(n), Some(v)) = (v4net, a.v4) {
            parts.push(format!("{n} (server {})", v.server));
        }
        if let (Some(n), Some(v)) = (v6net, v6) {
            parts.push(format!("{n} (server {})", v.server));
        }
        out(&format!(
            "device {name} up: {}, MTU {}",
            parts.join(", "),
            a.mtu
        ));
        if run.no_routes {
            out("routes: none (--no-routes; the addresses have no prefix routes)");
        } else if !routes.is_empty() {
            out(&format!(
                "routes through {name}: {}{}",
                routes.join(" "),
                applied
                    .server_route
                    .as_ref()
                    .map(|r| format!("; to the server outside the tunnel: {r} (removed on exit)"))
                    .unwrap_or_default()
            ));
        }
        for n in &notes {
            out(&format!("note: {n}"));
        }
    }
    Ok(ClientSetup {
        assignment: *a,
        undo,
    })
}

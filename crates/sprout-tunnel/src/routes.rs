//! The client's routes through the tunnel.
//!
//! - **Default**: only the tunnel networks. The kernel adds, for each address given to the
//!   device, the prefix route of the tunnel network through it (`10.77.0.0/24 dev sprout0
//!   proto kernel scope link src 10.77.0.2`, `fd77::/64 dev sprout0 proto kernel`), so the
//!   server and the other clients are reachable and nothing else changes.
//! - **`--route CIDR`** (repeatable): also that prefix through the device (`ip route add CIDR
//!   dev sprout0`).
//! - **`--route 0.0.0.0/0`** (or `::/0`), a full tunnel: `0.0.0.0/1` and `128.0.0.0/1` (or
//!   `::/1` and `8000::/1`) through the device. They are more specific than any default route,
//!   which is never touched, so everything goes through the tunnel while the old default route
//!   stays in place (and comes back into use the moment the device is gone). So that the
//!   tunnel's own datagrams do not loop into the tunnel, a host route to the server's UDP
//!   address is first added through the path the host used before (`ip route get SERVER`:
//!   `ip route add SERVER/32 via GATEWAY dev IFACE`). The same host route is added whenever a
//!   `--route` prefix contains the server's address. It is the only thing made outside the
//!   device: it is registered with [`crate::cleanup`] before it is made and removed on exit,
//!   Ctrl-C, a panic, or (by the watchdog) a crash or `SIGKILL`. If a route to exactly that
//!   host exists already it is used as it is and left alone. Routes on the LAN (the connected
//!   prefix routes) stay more specific than the `/1`s, so the LAN stays reachable directly;
//!   DNS settings are not changed.
//! - **`--no-routes`**: the device and its addresses only, the addresses added `noprefixroute`.
//!   The kernel then adds only the local-table entries of the addresses themselves: `local
//!   10.77.0.2 dev sprout0 table local`, `broadcast 10.77.0.255 dev sprout0 table local`, and
//!   with IPv6 `local fd77::2 dev sprout0 table local` and `multicast ff00::/8 dev sprout0 table
//!   local`. No route leads into the tunnel until you add one (`ip route add 10.77.0.0/24 dev
//!   sprout0`).
//!
//! The server adds no routes: its addresses' prefix routes (the kernel's) lead to its clients
//! (with `--no-routes`, added `noprefixroute` as above). To let clients reach beyond the
//! server, enable forwarding and NAT on the server yourself (see the README).

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use crate::cleanup::Undo;
use crate::device::{ip, SetupError};

/// `0.0.0.0/0` as two `/1`s, `::/0` likewise; other prefixes as they are (host bits cleared),
/// without duplicates.
pub fn expand(routes: &[IpNet]) -> Vec<IpNet> {
    let mut out: Vec<IpNet> = Vec::new();
    for r in routes {
        let r = r.trunc();
        let parts: Vec<IpNet> = match r {
            IpNet::V4(n) if n.prefix_len() == 0 => vec![
                IpNet::V4(Ipv4Net::new([0, 0, 0, 0].into(), 1).expect("valid")),
                IpNet::V4(Ipv4Net::new([128, 0, 0, 0].into(), 1).expect("valid")),
            ],
            IpNet::V6(n) if n.prefix_len() == 0 => vec![
                IpNet::V6(Ipv6Net::new(0u128.into(), 1).expect("valid")),
                IpNet::V6(Ipv6Net::new((1u128 << 127).into(), 1).expect("valid")),
            ],
            other => vec![other],
        };
        for p in parts {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// What `ip route get ADDR` said: the kind of route (`unicast`, `local`, ...), the gateway and
/// the interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteGet {
    /// `unicast`, or the route type `ip` printed first (`local`, `unreachable`, ...).
    pub kind: String,
    /// The next hop, if through a gateway.
    pub via: Option<IpAddr>,
    /// The outgoing interface.
    pub dev: Option<String>,
}

/// Parses the first line of `ip route get ADDR`'s output.
pub fn parse_route_get(out: &str) -> Option<RouteGet> {
    let line = out.lines().next()?;
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let first = *tokens.first()?;
    let kind = if first.parse::<IpAddr>().is_ok() {
        "unicast".to_string()
    } else {
        first.to_string()
    };
    let mut via = None;
    let mut dev = None;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i] {
            "via" => {
                let mut j = i + 1;
                if matches!(tokens.get(j), Some(&"inet") | Some(&"inet6")) {
                    j += 1;
                }
                via = tokens.get(j).and_then(|t| t.parse().ok());
                i = j;
            }
            "dev" => {
                dev = tokens.get(i + 1).map(|s| s.to_string());
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    Some(RouteGet { kind, via, dev })
}

/// The host route to `server` through the path the host uses now (as `ip` arguments after
/// `route add`/`route del`), or `None` if the server is on this host (no loop possible).
pub fn host_route_to(server: IpAddr) -> Result<Option<Vec<String>>, SetupError> {
    let s = server.to_string();
    let out = ip(&["route", "get", &s]).map_err(|e| {
        SetupError(format!(
            "cannot find the route to the server {server} (needed to keep the tunnel's own datagrams off the tunnel): {e}"
        ))
    })?;
    let r = parse_route_get(&out).ok_or_else(|| {
        SetupError(format!(
            "cannot read `ip route get {server}`: {:?}",
            out.trim()
        ))
    })?;
    match r.kind.as_str() {
        "unicast" => {}
        "local" => return Ok(None),
        other => {
            return Err(SetupError(format!(
                "the server {server} is not reachable from this host (`ip route get`: {other})"
            )))
        }
    }
    let dev = r.dev.ok_or_else(|| {
        SetupError(format!(
            "`ip route get {server}` named no interface: {:?}",
            out.trim()
        ))
    })?;
    let host = match server {
        IpAddr::V4(_) => format!("{server}/32"),
        IpAddr::V6(_) => format!("{server}/128"),
    };
    let mut args = vec![host];
    if let Some(via) = r.via {
        args.push("via".into());
        args.push(via.to_string());
    }
    args.push("dev".into());
    args.push(dev);
    Ok(Some(args))
}

/// What [`apply`] did, for the output lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppliedRoutes {
    /// Prefixes routed through the device (beyond the tunnel networks).
    pub via_tunnel: Vec<IpNet>,
    /// The host route to the server added outside the tunnel (`ip route` arguments), if any.
    pub server_route: Option<String>,
    /// Said when a host route to the server existed already and was used as it is.
    pub note: Option<String>,
}

/// Adds `routes` (see the module docs) through device `dev`, whose tunnel carries IPv4
/// (`v4`) and/or IPv6 (`v6`); `server` is the server's UDP address. The host route to the
/// server, when needed, is registered with `undo` before it is made. On an error, what was
/// made through the device goes with the device, and `undo` removes the rest.
pub fn apply(
    dev: &str,
    routes: &[IpNet],
    server: IpAddr,
    v4: bool,
    v6: bool,
    undo: &mut Undo,
) -> Result<AppliedRoutes, SetupError> {
    for r in routes {
        let carried = match r {
            IpNet::V4(_) => v4,
            IpNet::V6(_) => v6,
        };
        if !carried {
            return Err(SetupError(format!(
                "--route {r}: the tunnel carries no {} (the server assigned none, or this host has IPv6 off)",
                if r.addr().is_ipv4() { "IPv4" } else { "IPv6" }
            )));
        }
    }
    let expanded = expand(routes);
    let mut done = AppliedRoutes::default();
    let server = match server {
        IpAddr::V6(a) => a.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(a)),
        a => a,
    };
    if expanded.iter().any(|r| r.contains(&server)) && !server.is_loopback() {
        if let Some(args) = host_route_to(server)? {
            let mut del = vec!["route", "del"];
            del.extend(args.iter().map(String::as_str));
            let id = undo.register(&del)?;
            let mut add = vec!["route", "add"];
            add.extend(args.iter().map(String::as_str));
            match ip(&add) {
                Ok(_) => done.server_route = Some(args.join(" ")),
                Err(e) if e.0.contains("File exists") => {
                    undo.forget(id);
                    done.note = Some(format!(
                        "a route to {server} existed already; the tunnel's datagrams follow it"
                    ));
                }
                Err(e) => {
                    undo.forget(id);
                    return Err(e);
                }
            }
        }
    }
    for r in &expanded {
        let p = r.to_string();
        let family = if r.addr().is_ipv4() { "-4" } else { "-6" };
        ip(&[family, "route", "add", &p, "dev", dev]).map_err(|e| {
            SetupError(format!(
                "{e} (a route to {p} exists already? remove it or leave out --route {p})"
            ))
        })?;
        done.via_tunnel.push(*r);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(s: &[&str]) -> Vec<IpNet> {
        s.iter().map(|x| x.parse().unwrap()).collect()
    }

    #[test]
    fn default_routes_become_two_halves() {
        assert_eq!(
            expand(&nets(&["0.0.0.0/0", "10.0.0.0/8", "::/0", "0.0.0.0/1"])),
            nets(&["0.0.0.0/1", "128.0.0.0/1", "10.0.0.0/8", "::/1", "8000::/1"])
        );
        assert_eq!(expand(&nets(&["10.1.2.3/8"])), nets(&["10.0.0.0/8"]));
        let halves = expand(&nets(&["0.0.0.0/0"]));
        for a in ["1.2.3.4", "200.1.1.1", "127.0.0.1", "255.255.255.255"] {
            let a: IpAddr = a.parse().unwrap();
            assert_eq!(halves.iter().filter(|n| n.contains(&a)).count(), 1, "{a}");
        }
    }

    #[test]
    fn route_get_lines() {
        assert_eq!(
            parse_route_get("192.0.2.1 via 10.0.2.2 dev eth0 src 10.0.2.15 uid 0 \n    cache \n"),
            Some(RouteGet {
                kind: "unicast".into(),
                via: Some("10.0.2.2".parse().unwrap()),
                dev: Some("eth0".into()),
            })
        );
        assert_eq!(
            parse_route_get("10.100.1.2 dev spi1f-0 src 10.100.1.3 uid 0 \n    cache \n"),
            Some(RouteGet {
                kind: "unicast".into(),
                via: None,
                dev: Some("spi1f-0".into()),
            })
        );
        assert_eq!(
            parse_route_get("local 10.5.0.1 dev lo src 10.5.0.1 uid 0 \n    cache <local>\n")
                .unwrap()
                .kind,
            "local"
        );
        let v6 = parse_route_get(
            "2001:db8::1 from :: via fe80::1 dev wlan0 proto ra src 2001:db8::2 metric 600 pref medium\n",
        )
        .unwrap();
        assert_eq!(v6.via, Some("fe80::1".parse().unwrap()));
        assert_eq!(v6.dev.as_deref(), Some("wlan0"));
        let mixed = parse_route_get("192.0.2.9 via inet6 fe80::1 dev eth0 src 10.0.0.2\n").unwrap();
        assert_eq!(mixed.via, Some("fe80::1".parse().unwrap()));
        assert_eq!(parse_route_get(""), None);
    }
}

//! The command lines of `sprout tunnel server` and `sprout tunnel client`, rendered from the
//! tunnel's own typed flags ([`ServerFlags`], [`ClientFlags`]): the one place in the lab where
//! their flags are spelled.
//!
//! The flags mirror `ServerArgs` and `ClientArgs` of the CLI (`crates/sprout-cli/src/tunnel_cmd.rs`),
//! whose clap parser lives in the binary and cannot be reached from here; the flags structs are
//! also the keys of the tunnel's TOML file (kebab-case, unknown keys refused), which
//! `tests/tunnel_args.rs` parses the rendered arguments back through. Both functions destructure
//! their struct completely, so a flag added to the tunnel fails to compile here until it is
//! rendered.

use std::ffi::OsString;
use std::path::Path;

use sprout_tunnel::config::{ClientFlags, ServerFlags};

/// Arguments of a `sprout` command line, built up flag by flag.
struct Args(Vec<OsString>);

impl Args {
    /// `--NAME=VALUE` when the value is given: one argument, so that a value starting with `-`
    /// is not read as a flag. Numbers print in Rust's shortest round-trip form, so that the
    /// parser reads back the same value.
    fn value(&mut self, name: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.0.push(format!("--{name}={}", v.to_string()).into());
        }
    }

    /// `--NAME=PATH` when the path is given (any bytes the path holds are kept).
    fn path(&mut self, name: &str, value: Option<&Path>) {
        if let Some(p) = value {
            let mut arg = OsString::from(format!("--{name}="));
            arg.push(p.as_os_str());
            self.0.push(arg);
        }
    }

    /// `--NAME` when `on`.
    fn switch(&mut self, name: &str, on: bool) {
        if on {
            self.0.push(format!("--{name}").into());
        }
    }
}

/// The arguments of `sprout tunnel server` (after the program) for `flags`. Its `[[peer]]`
/// entries exist only in a `--config` file and are not rendered (it must have none).
pub fn server_args(flags: &ServerFlags) -> Vec<OsString> {
    let ServerFlags {
        config,
        key,
        allowed_clients,
        allow_any_client,
        listen,
        address,
        address6,
        device,
        path_mtu,
        no_routes,
        no_client_to_client,
        probe,
        confidence,
        model,
        max_clients,
        idle_timeout,
        json,
        status_interval,
        duration,
        peer,
    } = flags;
    debug_assert!(peer.is_empty(), "[[peer]] entries go in a --config file");
    let mut a = Args(vec!["tunnel".into(), "server".into()]);
    a.path("config", config.as_deref());
    a.path("key", key.as_deref());
    a.path("allowed-clients", allowed_clients.as_deref());
    a.switch("allow-any-client", *allow_any_client);
    a.value("listen", listen.as_ref());
    a.value("address", address.as_ref());
    a.value("address6", address6.as_ref());
    a.value("device", device.as_ref());
    a.value("path-mtu", path_mtu.as_ref());
    a.switch("no-routes", *no_routes);
    a.switch("no-client-to-client", *no_client_to_client);
    a.switch("probe", *probe);
    a.value("confidence", confidence.as_ref());
    a.value("model", model.as_ref());
    a.value("max-clients", max_clients.as_ref());
    a.value("idle-timeout", idle_timeout.as_ref());
    a.switch("json", *json);
    a.value("status-interval", status_interval.as_ref());
    a.value("duration", duration.as_ref());
    a.0
}

/// The arguments of `sprout tunnel client` (after the program) for `flags`; each of its routes
/// is one `--route`.
pub fn client_args(flags: &ClientFlags) -> Vec<OsString> {
    let ClientFlags {
        config,
        server,
        server_key,
        key,
        device,
        path_mtu,
        route,
        no_routes,
        probe,
        confidence,
        model,
        json,
        status_interval,
        duration,
    } = flags;
    let mut a = Args(vec!["tunnel".into(), "client".into()]);
    a.path("config", config.as_deref());
    a.value("server", server.as_ref());
    a.value("server-key", server_key.as_ref());
    a.path("key", key.as_deref());
    a.value("device", device.as_ref());
    a.value("path-mtu", path_mtu.as_ref());
    for r in route {
        a.value("route", Some(r));
    }
    a.switch("no-routes", *no_routes);
    a.switch("probe", *probe);
    a.value("confidence", confidence.as_ref());
    a.value("model", model.as_ref());
    a.switch("json", *json);
    a.value("status-interval", status_interval.as_ref());
    a.value("duration", duration.as_ref());
    a.0
}

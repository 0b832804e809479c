//! The rendered `sprout tunnel server|client` arguments parse back into the flags they came
//! from. The CLI's parser (`ServerArgs` and `ClientArgs` in `crates/sprout-cli/src/tunnel_cmd.rs`)
//! is in the binary and cannot be called from here; its flags are the keys of the tunnel's TOML
//! file (`ServerFlags`, `ClientFlags`: kebab-case, unknown keys refused), so each `--name=value`
//! is turned into `name = value` and read back with the tunnel's own structs. The CLI itself
//! parses them in `crates/sprout-cli/tests/tunnel_namespaces.rs` (as root).

use std::ffi::OsString;
use std::path::PathBuf;

use sprout_lab::tunnel_args::{client_args, server_args};
use sprout_tunnel::config::{ClientFlags, RateModel, ServerFlags};

/// Flags that may be given more than once: TOML arrays.
const REPEATABLE: [&str; 1] = ["route"];

/// The TOML document of rendered arguments after `tunnel server|client`: `--name=value` is
/// `name = value` (a number as it is, anything else a string), a bare `--name` is `name = true`.
fn as_toml(args: &[OsString], subcommand: &str) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_str().expect("UTF-8 arguments").to_string())
        .collect();
    assert_eq!(args[..2], ["tunnel", subcommand]);
    let value = |v: &str| {
        if v.parse::<f64>().is_ok() {
            v.to_string()
        } else {
            format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
        }
    };
    let mut keys: Vec<(String, Vec<String>)> = Vec::new();
    for arg in &args[2..] {
        let flag = arg
            .strip_prefix("--")
            .unwrap_or_else(|| panic!("{arg} is not a flag"));
        let (name, v) = match flag.split_once('=') {
            Some((name, v)) => (name.to_string(), value(v)),
            None => (flag.to_string(), "true".to_string()),
        };
        match keys.iter_mut().find(|(n, _)| *n == name) {
            Some((_, vs)) if REPEATABLE.contains(&name.as_str()) => vs.push(v),
            Some(_) => panic!("--{name} given twice"),
            None => keys.push((name, vec![v])),
        }
    }
    keys.iter()
        .map(|(n, vs)| {
            if REPEATABLE.contains(&n.as_str()) {
                format!("{n} = [{}]\n", vs.join(", "))
            } else {
                format!("{n} = {}\n", vs[0])
            }
        })
        .collect()
}

fn full_server() -> ServerFlags {
    ServerFlags {
        config: None,
        key: Some(PathBuf::from("/run/sprout/server.key")),
        allowed_clients: Some(PathBuf::from("/etc/sprout/clients")),
        allow_any_client: true,
        listen: Some("10.0.0.1:9300".into()),
        address: Some("10.77.5.1/24".into()),
        address6: Some("none".into()),
        device: Some("sts1a2b0".into()),
        path_mtu: Some(1400),
        no_routes: true,
        no_client_to_client: true,
        probe: true,
        confidence: Some(0.75),
        model: Some(RateModel::Paper),
        max_clients: Some(8),
        idle_timeout: Some(12.5),
        json: true,
        status_interval: Some(0.5),
        duration: Some(30.0),
        peer: Vec::new(),
    }
}

fn full_client() -> ClientFlags {
    ClientFlags {
        config: None,
        server: Some("10.0.0.1:9300".into()),
        server_key: Some("q0Yb1sJ1n2V+Y4m8xQH5yJqkz2H2vQe7M8Qx2oX3mQ0=".into()),
        key: Some(PathBuf::from("/run/sprout/laptop.key")),
        device: Some("stc1a2b0".into()),
        path_mtu: Some(1300),
        route: vec!["0.0.0.0/0".into(), "fd00::/8".into()],
        no_routes: true,
        probe: true,
        confidence: Some(0.5),
        model: Some(RateModel::Wide),
        json: true,
        status_interval: Some(2.0),
        duration: Some(120.0),
    }
}

#[test]
fn every_server_flag_parses_back_to_itself() {
    let flags = full_server();
    let text = as_toml(&server_args(&flags), "server");
    let back: ServerFlags = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(format!("{back:?}"), format!("{flags:?}"), "\n{text}");
}

#[test]
fn every_client_flag_parses_back_to_itself() {
    let flags = full_client();
    let text = as_toml(&client_args(&flags), "client");
    let back: ClientFlags = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(format!("{back:?}"), format!("{flags:?}"), "\n{text}");
}

#[test]
fn flags_not_given_are_not_rendered() {
    assert_eq!(server_args(&ServerFlags::default()), ["tunnel", "server"]);
    assert_eq!(client_args(&ClientFlags::default()), ["tunnel", "client"]);
    let args = client_args(&ClientFlags {
        config: Some(PathBuf::from("client.toml")),
        ..ClientFlags::default()
    });
    assert_eq!(args, ["tunnel", "client", "--config=client.toml"]);
}

#[test]
fn numbers_are_rendered_as_rust_prints_them() {
    let args = server_args(&ServerFlags {
        confidence: Some(0.75),
        duration: Some(30.0),
        ..ServerFlags::default()
    });
    assert_eq!(
        args,
        ["tunnel", "server", "--confidence=0.75", "--duration=30"]
    );
}

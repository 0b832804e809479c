//! The peer programs of an emulated run: `sprout server` / `sprout client` for Sprout, `sprout
//! tcp server` / `sprout tcp client` for the kernel's TCP.

use std::path::Path;
use std::process::Command;

use sprout_eval::eval::Scheme;
use sprout_secure::PublicKey;

/// The server and client command lines of a scheme, given the server's address and, for
/// Sprout, the server's key file and public key. `seconds`: the client's run time.
pub(super) fn peer_commands(
    exe: &Path,
    scheme: Scheme,
    server: &str,
    seconds: f64,
    keys: Option<(&Path, PublicKey)>,
) -> (Command, Command) {
    let secs = format!("{seconds}");
    let mut srv = Command::new(exe);
    let mut cli = Command::new(exe);
    match scheme {
        Scheme::Sprout | Scheme::SproutEwma => {
            srv.args(["server", "--once", "--json", "--listen", server]);
            cli.args(["client"]);
            if let Some((key_file, public)) = keys {
                srv.arg("--key").arg(key_file).arg("--allow-any-client");
                cli.args(["--server-key", &public.to_base64()]);
            }
            cli.args(["--json", "--direction", "both", "--connect", server])
                .args(["--duration", &secs, "--scheme", scheme.key()]);
        }
        _ => {
            let cc = match scheme {
                Scheme::Reno => "reno",
                Scheme::Bbr => "bbr",
                _ => "cubic",
            };
            srv.args(["tcp", "server", "--once", "--json", "--listen", server]);
            cli.args([
                "tcp",
                "client",
                "--json",
                "--direction",
                "both",
                "--connect",
                server,
            ])
            .args(["--duration", &secs, "--cc", cc]);
        }
    }
    (srv, cli)
}

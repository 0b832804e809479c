//! `sprout tcp server` and `sprout tcp client`: the options are [`sprout_apps::kernel_tcp`]'s
//! clap arguments; each side is one call into it.

use anyhow::Result;
pub(crate) use sprout_apps::kernel_tcp::TcpOptions as TcpArgs;
use sprout_apps::kernel_tcp::{self, TcpRole};

/// Runs `sprout tcp`.
pub(crate) fn run(a: TcpArgs) -> Result<()> {
    match a.role {
        TcpRole::Server(o) => Ok(kernel_tcp::serve(&o)?),
        TcpRole::Client(o) => Ok(kernel_tcp::run(&o)?),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use sprout_apps::kernel_tcp::{TcpClientOptions, TcpRole, TcpServerOptions};
    use sprout_core::direction::Load;

    use crate::{Cli, Command};

    /// The side the CLI's parser makes of `args` (after the program name).
    fn parse(args: Vec<String>) -> TcpRole {
        match Cli::try_parse_from(std::iter::once("sprout".to_string()).chain(args.clone())) {
            Ok(Cli {
                command: Command::Tcp(a),
            }) => a.role,
            Ok(_) => panic!("{args:?}: not `sprout tcp`"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn the_tcp_builders_defaults_are_the_cli_defaults() {
        let words = |w: &[&str]| w.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            parse(words(&["tcp", "server"])),
            TcpRole::Server(TcpServerOptions::default())
        );
        assert_eq!(
            parse(words(&["tcp", "client", "--connect", "10.0.0.1:9"])),
            TcpRole::Client(TcpClientOptions::new("10.0.0.1:9".parse().unwrap()))
        );
    }

    #[test]
    fn the_tcp_builders_render_what_the_cli_parses_back() {
        for o in [
            TcpServerOptions::default(),
            TcpServerOptions {
                listen: "[::1]:7".parse().unwrap(),
                once: true,
                json: true,
            },
        ] {
            assert_eq!(parse(o.to_args()), TcpRole::Server(o));
        }
        for o in [
            TcpClientOptions::new("10.0.0.1:9100".parse().unwrap()),
            TcpClientOptions {
                cc: "bbr".into(),
                direction: Load::Up,
                duration: 1e-3,
                json: true,
                ..TcpClientOptions::new("127.0.0.1:1".parse().unwrap())
            },
        ] {
            assert_eq!(parse(o.to_args()), TcpRole::Client(o));
        }
    }
}

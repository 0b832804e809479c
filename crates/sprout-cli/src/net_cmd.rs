//! `sprout server` and `sprout client`: the options are [`sprout_apps::transfer`]'s clap
//! arguments; each command is one call into it.

use anyhow::Result;
pub(crate) use sprout_apps::transfer::{ClientOptions as ClientArgs, ServerOptions as ServerArgs};

/// Runs `sprout server`.
pub(crate) fn server(a: ServerArgs) -> Result<()> {
    Ok(sprout_apps::transfer::serve(&a)?)
}

/// Runs `sprout client`.
pub(crate) fn client(a: ClientArgs) -> Result<()> {
    Ok(sprout_apps::transfer::run(&a)?)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use sprout_core::direction::Load;
    use sprout_core::SproutVariant;

    use super::{ClientArgs, ServerArgs};
    use crate::{Cli, Command};

    /// What the CLI's parser makes of `args` (after the program name).
    fn parse(args: Vec<String>) -> Command {
        match Cli::try_parse_from(std::iter::once("sprout".to_string()).chain(args.clone())) {
            Ok(cli) => cli.command,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn the_server_builder_renders_what_the_cli_parses_back() {
        let defaults = ServerArgs {
            allow_any_client: true,
            ..ServerArgs::default()
        };
        let every = ServerArgs {
            listen: "[::1]:9200".into(),
            key: Some("/tmp/server key".into()),
            allowed_clients: Some("clients.txt".into()),
            allow_any_client: false,
            max_sessions: 7,
            max_sessions_per_source: 3,
            max_sessions_per_key: 2,
            idle_timeout: 2.5,
            once: true,
            json: true,
        };
        for o in [defaults, every] {
            let Command::Server(parsed) = parse(o.to_args()) else {
                panic!("not `sprout server`");
            };
            assert_eq!(parsed, o);
        }
    }

    #[test]
    fn the_builders_defaults_are_the_cli_defaults() {
        let Command::Server(parsed) = parse(vec!["server".into(), "--allow-any-client".into()])
        else {
            panic!("not `sprout server`");
        };
        assert_eq!(
            parsed,
            ServerArgs {
                allow_any_client: true,
                ..ServerArgs::default()
            }
        );
        let args = ["client", "--connect", "h:1", "--server-key", "k"];
        let Command::Client(parsed) = parse(args.iter().map(|a| a.to_string()).collect()) else {
            panic!("not `sprout client`");
        };
        assert_eq!(parsed, ClientArgs::new("h:1", "k"));
    }

    #[test]
    fn the_client_builder_renders_what_the_cli_parses_back() {
        let defaults = ClientArgs::new("10.0.0.1:9100", "c2VydmVy");
        let every = ClientArgs {
            direction: Load::Down,
            rate: Some(-0.5),
            duration: 0.1 + 0.2,
            confidence: 0.5,
            scheme: SproutVariant::SproutEwma,
            payload: 24,
            bind: Some("-weird".into()),
            key: Some("client.key".into()),
            json: true,
            ..ClientArgs::new("host:1", "--key")
        };
        for o in [defaults, every] {
            let Command::Client(parsed) = parse(o.to_args()) else {
                panic!("not `sprout client`");
            };
            assert_eq!(parsed, o);
        }
    }
}

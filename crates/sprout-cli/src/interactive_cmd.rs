//! `sprout interactive server` and `sprout interactive client`: the options are
//! [`sprout_apps::interactive`]'s clap arguments; each side is one call into it.

use anyhow::Result;
pub(crate) use sprout_apps::interactive::InteractiveOptions as InteractiveArgs;
use sprout_apps::interactive::{self, InteractiveRole};

/// Runs `sprout interactive`.
pub(crate) fn run(a: InteractiveArgs) -> Result<()> {
    match a.role {
        InteractiveRole::Server(o) => interactive::serve(&o)?,
        InteractiveRole::Client(o) => interactive::run(&o)?,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use sprout_apps::interactive::{
        InteractiveClientOptions, InteractiveRole, InteractiveServerOptions, StreamOptions,
    };

    use crate::{Cli, Command};

    /// The side the CLI's parser makes of `args` (after the program name).
    fn parse(args: Vec<String>) -> InteractiveRole {
        match Cli::try_parse_from(std::iter::once("sprout".to_string()).chain(args.clone())) {
            Ok(Cli {
                command: Command::Interactive(a),
            }) => a.role,
            Ok(_) => panic!("{args:?}: not `sprout interactive`"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn the_interactive_builders_defaults_are_the_cli_defaults() {
        let words = |w: &[&str]| w.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            parse(words(&["interactive", "server"])),
            InteractiveRole::Server(InteractiveServerOptions::default())
        );
        assert_eq!(
            parse(words(&["interactive", "client", "--connect", "10.0.0.1:9"])),
            InteractiveRole::Client(InteractiveClientOptions {
                connect: "10.0.0.1:9".parse().unwrap(),
                stream: StreamOptions::default(),
            })
        );
    }

    #[test]
    fn the_interactive_builders_render_what_the_cli_parses_back() {
        let every = StreamOptions {
            rate_kbps: 123.25,
            payload_bytes: 24,
            duration: Some(0.5),
            linger: 0.0,
            csv: Some("/tmp/a b.csv".into()),
            json: true,
        };
        for o in [
            InteractiveServerOptions::default(),
            InteractiveServerOptions {
                listen: "[::]:1".parse().unwrap(),
                stream: every.clone(),
            },
        ] {
            assert_eq!(parse(o.to_args()), InteractiveRole::Server(o));
        }
        for stream in [StreamOptions::default(), every] {
            let o = InteractiveClientOptions {
                connect: "10.0.0.2:9101".parse().unwrap(),
                stream,
            };
            assert_eq!(parse(o.to_args()), InteractiveRole::Client(o));
        }
    }
}

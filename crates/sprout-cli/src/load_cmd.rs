//! `sprout bench load`: the options are [`sprout_apps::load`]'s clap arguments; the bench is
//! one call into it, with this binary as the `sprout server` under test.

use anyhow::{Context, Result};
pub(crate) use sprout_apps::load::LoadOptions as LoadArgs;

/// Runs `sprout bench load`.
pub(crate) fn run(a: LoadArgs) -> Result<()> {
    let exe = std::env::current_exe().context("finding the sprout binary")?;
    sprout_apps::load::run(&a, &exe)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use sprout_core::SproutVariant;

    use super::LoadArgs;
    use crate::{BenchCommand, Cli, Command};

    #[test]
    fn the_load_builder_renders_what_the_cli_parses_back() {
        let every = LoadArgs {
            sessions: 3,
            rate: 64.5,
            duration: 2.0,
            flood: 0,
            ramp: Some(0.25),
            scheme: SproutVariant::SproutEwma,
            tolerance: 1.0,
            client_nice: 0,
            json: true,
        };
        // The bare command gives the builder's defaults; every builder's line reads back.
        let bare = vec!["bench".to_string(), "load".to_string()];
        for (args, o) in [
            (bare, LoadArgs::default()),
            (LoadArgs::default().to_args(), LoadArgs::default()),
            (every.to_args(), every),
        ] {
            let parsed = match Cli::try_parse_from(std::iter::once("sprout".into()).chain(args)) {
                Ok(Cli {
                    command:
                        Command::Bench {
                            command: BenchCommand::Load(a),
                        },
                }) => a,
                Ok(_) => panic!("not `sprout bench load`"),
                Err(e) => panic!("{e}"),
            };
            assert_eq!(parsed, o);
        }
    }
}

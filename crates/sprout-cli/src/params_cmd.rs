//! `sprout params`: a Sprout scheme's configuration, every parameter `--param` can change with
//! its value.

use anyhow::{bail, Result};
use sprout_eval::eval::Scheme;
use sprout_sim::overrides;

/// The options of `sprout params`.
#[derive(clap::Args)]
pub(crate) struct ParamsArgs {
    /// sprout or sprout-ewma.
    #[arg(long, default_value = "sprout")]
    scheme: Scheme,
    /// Changes to show applied, as in `sim` and `eval` [default: none].
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
}

/// Runs `sprout params`.
pub(crate) fn run(a: ParamsArgs) -> Result<()> {
    if !a.scheme.is_sprout() {
        bail!("`sprout params` describes sprout and sprout-ewma; other schemes have no Sprout parameters");
    }
    let mut cfg = a.scheme.protocol_config();
    overrides::apply(&mut cfg, &a.params)?;
    println!("{}", overrides::describe(&cfg));
    Ok(())
}

//! `sprout tcp` (skeleton).
use anyhow::{bail, Result};

/// `sprout tcp` arguments.
#[derive(clap::Args)]
pub struct TcpArgs {}

/// Runs `sprout tcp`.
pub fn run(_a: TcpArgs) -> Result<()> {
    bail!("not implemented yet")
}

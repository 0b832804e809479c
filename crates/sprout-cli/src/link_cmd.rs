//! `sprout link` (skeleton).
use anyhow::{bail, Result};

/// `sprout link` arguments.
#[derive(clap::Args)]
pub struct LinkArgs {}

/// Runs `sprout link`.
pub fn run(_a: LinkArgs) -> Result<()> {
    bail!("not implemented yet")
}

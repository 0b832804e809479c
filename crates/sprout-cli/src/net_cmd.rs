//! `sprout server` and `sprout client` (skeleton).
use anyhow::{bail, Result};

/// `sprout server` arguments.
#[derive(clap::Args)]
pub struct ServerArgs {}

/// `sprout client` arguments.
#[derive(clap::Args)]
pub struct ClientArgs {}

/// Runs `sprout server`.
pub fn server(_a: ServerArgs) -> Result<()> {
    bail!("not implemented yet")
}

/// Runs `sprout client`.
pub fn client(_a: ClientArgs) -> Result<()> {
    bail!("not implemented yet")
}

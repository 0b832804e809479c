//! `sprout keygen`: X25519 keys for secure sessions, as WireGuard's `wg genkey` / `wg pubkey`.
//!
//! `sprout keygen --out FILE` writes a new private key (base64 on one line) to a new file
//! created with mode 0600 (an existing file is never overwritten) and prints its public key
//! (base64) on stdout; `sprout keygen --public FILE` prints the public key of an existing
//! private key file.

use std::path::PathBuf;

use anyhow::Result;
use sprout_net::secure::PrivateKey;

/// `sprout keygen` arguments.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["out", "public"])))]
pub(crate) struct KeygenArgs {
    /// Write a new private key to FILE (created with mode 0600; an existing file is never
    /// overwritten) and print its public key (base64) on stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print the public key (base64) of the private key in FILE.
    #[arg(long, value_name = "FILE")]
    public: Option<PathBuf>,
}

/// Runs `sprout keygen`.
pub(crate) fn run(a: KeygenArgs) -> Result<()> {
    let key = match (&a.out, &a.public) {
        (Some(path), None) => {
            let key = PrivateKey::generate();
            key.write_file(path)
                .map_err(|e| anyhow::anyhow!("--out: {e}"))?;
            key
        }
        (None, Some(path)) => {
            PrivateKey::read_file(path).map_err(|e| anyhow::anyhow!("--public: {e}"))?
        }
        _ => anyhow::bail!("give exactly one of --out FILE and --public FILE"),
    };
    println!("{}", key.public_key());
    Ok(())
}

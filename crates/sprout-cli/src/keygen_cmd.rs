//! `sprout keygen`: X25519 keys for secure sessions, as WireGuard's `wg genkey` / `wg pubkey`.
//!
//! `sprout keygen --out FILE` writes a new private key to a new file created with mode 0600
//! (an existing file is never overwritten) and prints its public key (base64) on stdout;
//! with `--public-out FILE` it also writes the public key to a new file. `sprout keygen
//! --public FILE` prints the public key of an existing private key file.
//!
//! The files say what they hold on their first line (`# sprout private key: keep it secret`,
//! `# sprout public key`), so that a private key file given where a public key is expected
//! (`--server-key`), or a public key file given as `--key`, is refused with a message that
//! says so. Key files without that line (older builds) are still read.

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
    /// With --out: also write the public key to FILE (a new file, mode 0644), to hand to the
    /// other side (`--server-key FILE`, or a line of `--allowed-clients`).
    #[arg(long, value_name = "FILE", requires = "out")]
    public_out: Option<PathBuf>,
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
            if let Some(p) = &a.public_out {
                key.public_key()
                    .write_file(p)
                    .map_err(|e| anyhow::anyhow!("--public-out: {e}"))?;
            }
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

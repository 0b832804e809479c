//! Rendering options back into command-line arguments (the typed builders' `to_args`).

use std::fmt::Display;
use std::path::Path;

/// A command line being written: subcommand words, then flags.
#[derive(Debug, Default)]
pub(crate) struct ArgsWriter(Vec<String>);

impl ArgsWriter {
    /// Starts with the subcommand words (`["tcp", "server"]`).
    pub(crate) fn new(words: &[&str]) -> ArgsWriter {
        ArgsWriter(words.iter().map(|w| w.to_string()).collect())
    }

    /// `--name` when `on`.
    pub(crate) fn switch(&mut self, name: &str, on: bool) -> &mut Self {
        if on {
            self.0.push(format!("--{name}"));
        }
        self
    }

    /// `--name=VALUE` (one argument, so that a value starting with `-` is not read as a
    /// flag). Numbers print as Rust's shortest round-trip form, so that the parser reads back
    /// the same value.
    pub(crate) fn value(&mut self, name: &str, v: impl Display) -> &mut Self {
        self.0.push(format!("--{name}={v}"));
        self
    }

    /// `--name VALUE` when given.
    pub(crate) fn opt(&mut self, name: &str, v: Option<impl Display>) -> &mut Self {
        if let Some(v) = v {
            self.value(name, v);
        }
        self
    }

    /// `--name PATH` when given (a path that is not UTF-8 is written lossily).
    pub(crate) fn path(&mut self, name: &str, p: Option<&Path>) -> &mut Self {
        self.opt(name, p.map(|p| p.to_string_lossy().into_owned()))
    }

    /// The arguments.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        std::mem::take(&mut self.0)
    }
}

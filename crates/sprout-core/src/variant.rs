//! Which Sprout both ends of a connection run: the one enum of the Sprout variants, named
//! by the network protocol's HELLO (`sprout_net`), the programs' `--scheme` and the
//! simulator's Sprout schemes (`sprout_sim::scheme::Scheme::sprout_variant`).

use serde::Serialize;

use crate::Config;

/// Which receiver estimator (and rate model) both ends run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum SproutVariant {
    /// Sprout: Bayesian inference and the cautious forecast, on the paper's rate model (to
    /// about 12 Mbit/s).
    #[serde(rename = "sprout")]
    Sprout,
    /// Sprout-EWMA: a moving average of the observed rate, without caution.
    #[serde(rename = "sprout-ewma")]
    SproutEwma,
    /// Sprout on the wide rate model (outage to 1 Gbit/s); the paper's is
    /// [`SproutVariant::Sprout`].
    #[serde(rename = "sprout-wide")]
    SproutWide,
}

impl SproutVariant {
    /// The Sprout configuration of this variant with the given forecast confidence (0 < p < 1).
    pub fn config(self, confidence: f64) -> Config {
        let base = match self {
            SproutVariant::Sprout => Config::default(),
            SproutVariant::SproutEwma => Config::ewma(),
            SproutVariant::SproutWide => Config::wide(),
        };
        Config { confidence, ..base }
    }

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SproutVariant::Sprout => "sprout",
            SproutVariant::SproutEwma => "sprout-ewma",
            SproutVariant::SproutWide => "sprout-wide",
        }
    }
}

//! The schemes a simulation can run (Sprout, Sprout-EWMA, the TCP peers, the omniscient
//! sender), their keys as the command line and results.csv spell them, and how each sets up a
//! [`SimConfig`].

use serde::{Deserialize, Serialize};
use sprout_core::Config;
use sprout_link::QueueConfig;
use sprout_tcp::CcKind;

use crate::error::UnknownName;
use crate::sim::{SimConfig, Transport};

/// A scheme the evaluation can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scheme {
    /// Sprout with its cautious forecast.
    #[serde(rename = "sprout")]
    Sprout,
    /// Sprout-EWMA.
    #[serde(rename = "sprout-ewma")]
    SproutEwma,
    /// TCP Cubic (RFC 9438).
    #[serde(rename = "cubic")]
    Cubic,
    /// TCP NewReno (RFC 5681/6582).
    #[serde(rename = "reno")]
    Reno,
    /// TCP Vegas.
    #[serde(rename = "vegas")]
    Vegas,
    /// LEDBAT (RFC 6817).
    #[serde(rename = "ledbat")]
    Ledbat,
    /// BBR v1.
    #[serde(rename = "bbr")]
    Bbr,
    /// Compound TCP.
    #[serde(rename = "compound")]
    Compound,
    /// TCP Cubic over a CoDel queue (RFC 8289) on both directions of the link.
    #[serde(rename = "cubic-codel")]
    CubicCodel,
    /// The omniscient sender: every opportunity used, no queueing (computed from the trace).
    #[serde(rename = "omniscient")]
    Omniscient,
}

impl Scheme {
    /// Every scheme, in the order tables list them.
    pub const ALL: [Scheme; 10] = [
        Scheme::Sprout,
        Scheme::SproutEwma,
        Scheme::Cubic,
        Scheme::Reno,
        Scheme::Vegas,
        Scheme::Ledbat,
        Scheme::Bbr,
        Scheme::Compound,
        Scheme::CubicCodel,
        Scheme::Omniscient,
    ];

    /// The scheme's key, as used on the command line and in results.csv.
    pub fn key(&self) -> &'static str {
        match self {
            Scheme::Sprout => "sprout",
            Scheme::SproutEwma => "sprout-ewma",
            Scheme::Cubic => "cubic",
            Scheme::Reno => "reno",
            Scheme::Vegas => "vegas",
            Scheme::Ledbat => "ledbat",
            Scheme::Bbr => "bbr",
            Scheme::Compound => "compound",
            Scheme::CubicCodel => "cubic-codel",
            Scheme::Omniscient => "omniscient",
        }
    }

    /// Whether this is Sprout or Sprout-EWMA (which have a forecast confidence).
    pub fn is_sprout(&self) -> bool {
        matches!(self, Scheme::Sprout | Scheme::SproutEwma)
    }

    /// Whether the scheme is simulated (the omniscient sender is computed from the trace).
    pub fn is_simulated(&self) -> bool {
        *self != Scheme::Omniscient
    }

    /// The Sprout configuration the scheme runs with (the default for non-Sprout schemes).
    pub fn protocol_config(&self) -> Config {
        match self {
            Scheme::SproutEwma => Config::ewma(),
            _ => Config::default(),
        }
    }

    /// Sets up `cfg` to run this scheme: transport, Sprout configuration and queue.
    pub fn configure(&self, cfg: &mut SimConfig) {
        cfg.protocol = self.protocol_config();
        cfg.transport = match self {
            Scheme::Sprout | Scheme::SproutEwma | Scheme::Omniscient => Transport::Sprout,
            Scheme::Cubic | Scheme::CubicCodel => Transport::Tcp(CcKind::Cubic),
            Scheme::Reno => Transport::Tcp(CcKind::Reno),
            Scheme::Vegas => Transport::Tcp(CcKind::Vegas),
            Scheme::Ledbat => Transport::Tcp(CcKind::Ledbat),
            Scheme::Bbr => Transport::Tcp(CcKind::Bbr),
            Scheme::Compound => Transport::Tcp(CcKind::Compound),
        };
        if *self == Scheme::CubicCodel {
            cfg.link.queue = QueueConfig::codel();
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        let key = scheme_key(s);
        Scheme::ALL
            .iter()
            .find(|x| x.key() == key || (key == "ewma" && **x == Scheme::SproutEwma))
            .copied()
            .ok_or_else(|| {
                let known: Vec<&str> = Scheme::ALL.iter().map(|x| x.key()).collect();
                UnknownName {
                    what: "scheme",
                    name: s.trim().to_string(),
                    choices: format!("known: {}", known.join(", ")),
                }
            })
    }
}

/// Normalizes a scheme name to our key: lowercase, `_` and spaces become `-`; a few aliases
/// (`"tcp-cubic"`, `"cubic-over-codel"`, `"compound-tcp"`, `"tcp-vegas"`) are folded.
pub fn scheme_key(scheme: &str) -> String {
    let s = scheme.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    match s.as_str() {
        "tcp-cubic" => "cubic".into(),
        "tcp-vegas" => "vegas".into(),
        "compound-tcp" | "ctcp" => "compound".into(),
        "cubic-over-codel" | "cubic+codel" | "cubic/codel" => "cubic-codel".into(),
        "sprout-ewma" | "sproutewma" => "sprout-ewma".into(),
        _ => s,
    }
}

//! Which congestion controller: [`CcKind`], its names, and [`new_controller`], which builds
//! one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{copa, Bbr, CcConfig, Compound, CongestionControl, Copa, Cubic, Ledbat, Reno, Vegas};

/// Which congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CcKind {
    /// NewReno: RFC 5681 slow start and congestion avoidance, RFC 6582 fast recovery.
    #[serde(alias = "reno")]
    Reno,
    /// CUBIC (RFC 9438), Linux's default.
    #[serde(alias = "cubic")]
    Cubic,
    /// TCP Vegas (delay-based: 2–4 segments queued).
    #[serde(alias = "vegas")]
    Vegas,
    /// LEDBAT (RFC 6817): less-than-best-effort, 100 ms queueing-delay target.
    #[serde(alias = "ledbat")]
    Ledbat,
    /// BBR version 1: model-based, paced.
    #[serde(alias = "bbr")]
    Bbr,
    /// Compound TCP (Windows): Reno plus a delay-based window.
    #[serde(alias = "compound")]
    Compound,
    /// Copa (NSDI 2018): delay-based, target rate 1/(delta d_q), delta 0.5 (the paper's).
    #[serde(alias = "copa")]
    Copa,
    /// Copa with delta 0.1, as Pantheon runs it (`do_ss:auto:0.1`): a larger standing queue.
    #[serde(alias = "copa-0.1")]
    CopaTenth,
}

impl CcKind {
    /// All controllers, in the order above.
    pub const ALL: [CcKind; 8] = [
        CcKind::Reno,
        CcKind::Cubic,
        CcKind::Vegas,
        CcKind::Ledbat,
        CcKind::Bbr,
        CcKind::Compound,
        CcKind::Copa,
        CcKind::CopaTenth,
    ];

    /// Lower-case name, as accepted by [`FromStr`]: `"reno"`, `"cubic"`, `"vegas"`,
    /// `"ledbat"`, `"bbr"`, `"compound"`, `"copa"`, `"copa-0.1"`.
    pub fn name(&self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::Cubic => "cubic",
            CcKind::Vegas => "vegas",
            CcKind::Ledbat => "ledbat",
            CcKind::Bbr => "bbr",
            CcKind::Compound => "compound",
            CcKind::Copa => "copa",
            CcKind::CopaTenth => "copa-0.1",
        }
    }
}

impl fmt::Display for CcKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no controller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion controller {input:?} (expected reno, cubic, vegas, ledbat, bbr, compound, copa or copa-0.1)")]
pub struct ParseCcKindError {
    /// The string given.
    pub input: String,
}

impl FromStr for CcKind {
    type Err = ParseCcKindError;

    /// Parses a [`name`](CcKind::name), ignoring ASCII case and surrounding whitespace;
    /// `"newreno"` is accepted for Reno.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let kind = match t.as_str() {
            "reno" | "newreno" => CcKind::Reno,
            "cubic" => CcKind::Cubic,
            "vegas" => CcKind::Vegas,
            "ledbat" => CcKind::Ledbat,
            "bbr" => CcKind::Bbr,
            "compound" | "ctcp" => CcKind::Compound,
            "copa" => CcKind::Copa,
            "copa-0.1" | "copa0.1" => CcKind::CopaTenth,
            _ => {
                return Err(ParseCcKindError {
                    input: s.to_string(),
                })
            }
        };
        Ok(kind)
    }
}

/// Builds the controller `kind` with `cfg`.
pub fn new_controller(kind: CcKind, cfg: &CcConfig) -> Box<dyn CongestionControl> {
    match kind {
        CcKind::Reno => Box::new(Reno::new(cfg)),
        CcKind::Cubic => Box::new(Cubic::new(cfg)),
        CcKind::Vegas => Box::new(Vegas::new(cfg)),
        CcKind::Ledbat => Box::new(Ledbat::new(cfg)),
        CcKind::Bbr => Box::new(Bbr::new(cfg)),
        CcKind::Compound => Box::new(Compound::new(cfg)),
        CcKind::Copa => Box::new(Copa::new(cfg)),
        CcKind::CopaTenth => Box::new(Copa::with_delta(
            cfg,
            copa::PANTHEON_DELTA,
            CcKind::CopaTenth,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in CcKind::ALL {
            assert_eq!(k.name().parse::<CcKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
            assert_eq!(
                new_controller(k, &CcConfig::from_tcp(&Default::default())).kind(),
                k
            );
        }
        assert_eq!(" CUBIC ".parse::<CcKind>(), Ok(CcKind::Cubic));
        assert!("tahoe".parse::<CcKind>().is_err());
    }
}

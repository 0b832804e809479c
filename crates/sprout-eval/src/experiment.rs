//! The paper's experiments: their names, the links and values each runs over, and the
//! variants of the receiver's model the `model` experiment compares.

use serde::{Deserialize, Serialize};

/// A named experiment of the paper's evaluation, simulated ([`Experiment::ALL`]) or emulated
/// in real time (`sprout eval --emulate`, [`Experiment::EMULATED`]): the one type
/// `--experiments` is parsed into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Experiment {
    /// All schemes on all links, one chart per link (the paper's Figure 7).
    Fig7,
    /// Average utilization against average self-inflicted delay (Figure 8).
    Fig8,
    /// The introduction's table: Sprout's throughput ratio and delay reduction per scheme.
    Summary,
    /// Sprout's confidence sweep on the T-Mobile UMTS uplink (Figure 9).
    Confidence,
    /// Sprout on Verizon LTE at 0%, 5% and 10% loss each way (the loss table).
    Loss,
    /// Synthetic links with other inter-arrival distributions (the reproduction's extension).
    Distributions,
    /// Five seeds of each scheme on two links: mean and standard deviation.
    Sensitivity,
    /// Sprout with each named variant of the receiver's model ([`MODEL_VARIANTS`]) on every
    /// link: what each detail of the authors' arithmetic changes.
    Model,
    /// Application streams below the link's rate (constant-rate, video and adaptive video
    /// sources) by Sprout, Sprout-EWMA, Cubic, BBR, Vegas and `direct`, each link direction
    /// loaded alone, scored by application-level delay ([`crate::interactive`]). Not in
    /// [`Experiment::ALL`] (`all` runs the paper's experiments): asked for by name
    /// ([`Experiment::OPT_IN`]).
    Interactive,
    /// Sprout at today's link rates (issue 24): the paper's links scaled x1 to x64 and
    /// constant links to 1 Gbit/s, Sprout on the paper's and the wide model against
    /// Sprout-EWMA, Cubic and BBR ([`crate::rates`]). Not in [`Experiment::ALL`]: asked for
    /// by name ([`Experiment::OPT_IN`]).
    Rates,
    /// How well each estimator's forecast is calibrated against the link itself (issue 40):
    /// the paper's and the wide model at several confidences and Sprout-EWMA, fed each link
    /// direction's opportunities tick by tick as a saturated receiver would be, the share of
    /// forecasts met per horizon and where the misses fall ([`crate::calibration`]). Not in
    /// [`Experiment::ALL`]: asked for by name ([`Experiment::OPT_IN`]).
    Calibration,
    /// The paper's open question (issue 40): each Sprout model's confidence sweep against
    /// Sprout-EWMA's gain sweep on every link direction, utilization against self-inflicted
    /// delay, and which points dominate which ([`crate::frontier`]). Not in
    /// [`Experiment::ALL`]: asked for by name ([`Experiment::OPT_IN`]).
    Frontier,
    /// The paper's CoDel comparison made whole (issue 38): Sprout, Sprout-EWMA, Cubic, BBR and
    /// Copa over a finite 100 ms drop-tail buffer, CoDel, PIE and FQ-CoDel on every link
    /// direction, and the interactive stream beside a Cubic download in one FQ-CoDel queue
    /// ([`crate::aqm`]). Not in [`Experiment::ALL`]: asked for by name
    /// ([`Experiment::OPT_IN`]).
    Aqm,
    /// Emulated only: the isolation experiment, bulk and interactive flows direct, then through
    /// SproutTunnel (§5.7).
    Tunnel,
    /// Emulated only: the tunnel's cost, a TCP download through it over a constant 10 Mbit/s
    /// link.
    #[serde(rename = "tunnel-cost")]
    TunnelCost,
}

/// The named variants of the receiver's model that the `model` experiment compares: a name
/// (the `variant` column of results.csv), what it changes, and its `--param` assignments.
pub const MODEL_VARIANTS: [(&str, &str, &[&str]); 7] = [
    (
        "authors",
        "the default: the authors' arithmetic, every forecast of their fixtures reproduced",
        &[],
    ),
    (
        "exact-cdf",
        "the exact Gaussian CDF instead of their table of 32,768 cells read at cell midpoints",
        &["model.gaussian_cdf=Exact"],
    ),
    (
        "lowest-1.95",
        "the lowest rate at 1.95 packets/s (a trickle) instead of an outage at exactly 0",
        &["model.grid=Midpoint", "model.bins=257"],
    ),
    (
        "lump-tail",
        "tick counts of 30 or more lumped at 30 in the forecast tables instead of dropped",
        &["model.count_tail=Lump"],
    ),
    (
        "symmetric-kernel",
        "a symmetric evolution kernel instead of one running a value past the upper reach",
        &["model.kernel_span=Symmetric"],
    ),
    (
        "former",
        "all four of the above: this project's model before it reproduced the authors' code",
        &[
            "model.gaussian_cdf=Exact",
            "model.grid=Midpoint",
            "model.bins=257",
            "model.count_tail=Lump",
            "model.kernel_span=Symmetric",
        ],
    ),
    (
        "paper-literal",
        "the paper's text: 256 values from 0, value 0 a sticky outage",
        &["model.grid=ZeroOutage"],
    ),
];

impl Experiment {
    /// Every experiment, in run order.
    pub const ALL: [Experiment; 8] = [
        Experiment::Fig7,
        Experiment::Fig8,
        Experiment::Summary,
        Experiment::Confidence,
        Experiment::Loss,
        Experiment::Distributions,
        Experiment::Sensitivity,
        Experiment::Model,
    ];

    /// The simulated experiments that `all` leaves out, run only when named: `interactive`,
    /// `rates`, `calibration`, `frontier` and `aqm` (their runs and outputs are their own, so
    /// that `all` gives the paper's experiments alone).
    pub const OPT_IN: [Experiment; 5] = [
        Experiment::Interactive,
        Experiment::Rates,
        Experiment::Calibration,
        Experiment::Frontier,
        Experiment::Aqm,
    ];

    /// Every experiment of `sprout eval --emulate`, in run order (its `fig7` is the schemes
    /// through the emulator).
    pub const EMULATED: [Experiment; 3] =
        [Experiment::Fig7, Experiment::Tunnel, Experiment::TunnelCost];

    /// The experiment's key, as on the command line and in results.csv.
    pub fn key(&self) -> &'static str {
        match self {
            Experiment::Fig7 => "fig7",
            Experiment::Fig8 => "fig8",
            Experiment::Summary => "summary",
            Experiment::Confidence => "confidence",
            Experiment::Loss => "loss",
            Experiment::Distributions => "distributions",
            Experiment::Sensitivity => "sensitivity",
            Experiment::Model => "model",
            Experiment::Interactive => "interactive",
            Experiment::Rates => "rates",
            Experiment::Calibration => "calibration",
            Experiment::Frontier => "frontier",
            Experiment::Aqm => "aqm",
            Experiment::Tunnel => "tunnel",
            Experiment::TunnelCost => "tunnel-cost",
        }
    }

    /// Parses a comma-separated list of keys, where `all` stands for [`Experiment::ALL`]
    /// (`all,interactive`: those and [`Experiment::OPT_IN`]'s), sorted into run order without
    /// repeats.
    pub fn parse_list(s: &str) -> Result<Vec<Experiment>, ExperimentError> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let es: Vec<Experiment> = if part.trim().eq_ignore_ascii_case("all") {
                Experiment::ALL.to_vec()
            } else {
                vec![part.parse()?]
            };
            for e in es {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        if out.is_empty() {
            return Err(ExperimentError::NoneGiven);
        }
        out.sort();
        Ok(out)
    }
}

impl Experiment {
    /// Parses the emulated experiments' comma-separated keys (or `all`), sorted into run
    /// order without repeats; no key at all is `fig7`, the emulated evaluation.
    pub fn parse_emulated_list(s: &str) -> Result<Vec<Experiment>, ExperimentError> {
        if s.trim() == "all" {
            return Ok(Self::EMULATED.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let key = part.to_ascii_lowercase();
            let e = Self::EMULATED
                .iter()
                .copied()
                .find(|e| e.key() == key)
                .ok_or_else(|| ExperimentError::UnknownEmulated {
                    name: part.to_string(),
                    known: Self::EMULATED.iter().map(|e| e.key()).collect(),
                })?;
            if !out.contains(&e) {
                out.push(e);
            }
        }
        if out.is_empty() {
            out.push(Experiment::Fig7);
        }
        out.sort();
        Ok(out)
    }
}

/// An experiment's key that names none, or a list of none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExperimentError {
    /// A key that is no experiment of the simulated evaluation.
    #[error("unknown experiment '{name}' (known: {}, or all)", known.join(", "))]
    Unknown {
        /// The key as given.
        name: String,
        /// The experiments' keys.
        known: Vec<&'static str>,
    },
    /// A key that is no emulated experiment.
    #[error("unknown emulated experiment '{name}' (with --emulate: {}, or all)", known.join(", "))]
    UnknownEmulated {
        /// The key as given.
        name: String,
        /// The emulated experiments' keys.
        known: Vec<&'static str>,
    },
    /// An empty list.
    #[error("no experiment given")]
    NoneGiven,
}

impl std::str::FromStr for Experiment {
    type Err = ExperimentError;
    fn from_str(s: &str) -> Result<Self, ExperimentError> {
        let key = s.trim().to_ascii_lowercase();
        Experiment::ALL
            .iter()
            .chain(&Experiment::OPT_IN)
            .find(|e| e.key() == key)
            .copied()
            .ok_or_else(|| ExperimentError::Unknown {
                name: s.trim().to_string(),
                known: Experiment::ALL
                    .iter()
                    .chain(&Experiment::OPT_IN)
                    .map(|e| e.key())
                    .collect(),
            })
    }
}

/// Confidences of the `confidence` experiment (the paper's Figure 9 sweep and more).
pub const CONFIDENCES: [f64; 7] = [0.05, 0.25, 0.50, 0.75, 0.90, 0.95, 0.98];
/// Loss probabilities each way of the `loss` experiment.
pub const LOSSES: [f64; 3] = [0.0, 0.05, 0.10];
/// Seeds of the `sensitivity` experiment.
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// The link whose downlink the Figure-1 time series shows.
pub const FIGURE1_LINK: &str = "Verizon-LTE-short";
/// The link of the confidence sweep (the paper's Figure 9: its uplink).
pub const CONFIDENCE_LINK: &str = "TMobile-UMTS-driving";
/// The link of the loss experiment.
pub const LOSS_LINK: &str = "Verizon-LTE-short";
/// The real link whose mean rates the synthetic distributions copy.
pub const DISTRIBUTIONS_LINK: &str = "Verizon-LTE-short";
/// The two links of the sensitivity experiment.
pub const SENSITIVITY_LINKS: [&str; 2] = ["Verizon-LTE-short", "TMobile-UMTS-driving"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulated_experiment_lists() {
        use Experiment::*;
        assert_eq!(Experiment::parse_emulated_list("").unwrap(), vec![Fig7]);
        assert_eq!(
            Experiment::parse_emulated_list("tunnel-cost, Tunnel,tunnel").unwrap(),
            vec![Tunnel, TunnelCost]
        );
        assert_eq!(
            Experiment::parse_emulated_list("all").unwrap(),
            vec![Fig7, Tunnel, TunnelCost]
        );
        let e = Experiment::parse_emulated_list("tunnel,loss").unwrap_err();
        let e = e.to_string();
        assert!(e.contains("'loss'") && e.contains("tunnel-cost"), "{e}");
        // The simulated evaluation does not run the emulated experiments.
        assert!(Experiment::parse_list("tunnel").is_err());
    }

    #[test]
    fn interactive_is_asked_for_by_name() {
        use Experiment::*;
        assert_eq!(
            Experiment::parse_list("all").unwrap(),
            Experiment::ALL.to_vec()
        );
        assert!(!Experiment::parse_list("all")
            .unwrap()
            .contains(&Interactive));
        assert_eq!(
            Experiment::parse_list("Interactive, fig7").unwrap(),
            vec![Fig7, Interactive]
        );
        let both = Experiment::parse_list("interactive,all").unwrap();
        assert_eq!(both.len(), Experiment::ALL.len() + 1);
        assert_eq!(both.last(), Some(&Interactive));
        let e = Experiment::parse_list("interactiv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("model, interactive"), "{e}");
        // The emulated evaluation's interactive experiment is the command line's own.
        assert!(Experiment::parse_emulated_list("interactive").is_err());
    }
}

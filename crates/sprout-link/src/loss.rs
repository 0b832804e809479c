//! Gilbert-Elliott bursty loss: a two-state Markov chain, as netem's `loss gemodel p r 1-h 1-k`.
//!
//! The chain is in a good or a bad state; a packet reaching the queue is lost with the current
//! state's probability (`1-k` in the good state, `1-h` in the bad one), then the chain moves
//! (good to bad with probability `p`, bad to good with `r`). Two independent draws per packet
//! from the link's loss generator (a seeded `ChaCha8Rng`), so runs are deterministic. The chain
//! starts in the good state.
//!
//! In the long run the chain is bad a fraction `p / (p + r)` of packets, so the loss rate is
//! `(r (1-k) + p (1-h)) / (p + r)`; with `1-h = 1` and `1-k = 0` (the simple Gilbert model)
//! losses come in bursts of mean length `1 / r`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// netem's `gemodel` parameters, each a probability in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertElliott {
    /// Good to bad, per packet (netem's `p`).
    pub p: f64,
    /// Bad to good, per packet (netem's `r`).
    pub r: f64,
    /// Loss probability in the bad state (netem's `1-h`).
    pub loss_bad: f64,
    /// Loss probability in the good state (netem's `1-k`).
    pub loss_good: f64,
}

impl GilbertElliott {
    /// The long-run loss rate: `(r (1-k) + p (1-h)) / (p + r)` (`1-k` if `p + r` is 0).
    pub fn stationary_loss(&self) -> f64 {
        let sum = self.p + self.r;
        if sum == 0.0 {
            return self.loss_good;
        }
        (self.r * self.loss_good + self.p * self.loss_bad) / sum
    }

    /// The first parameter outside `[0, 1]` (or NaN), named as netem names it.
    pub fn invalid(&self) -> Option<(&'static str, f64)> {
        [
            ("p", self.p),
            ("r", self.r),
            ("1-h", self.loss_bad),
            ("1-k", self.loss_good),
        ]
        .into_iter()
        .find(|(_, v)| !(0.0..=1.0).contains(v))
    }
}

/// A `gemodel` the command line cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad gemodel '{0}': expected P,R[,1-H[,1-K]], probabilities from 0 to 1 or percentages \
     (e.g. 1%,30%,100%,0%)"
)]
pub struct BadGilbertElliott(pub String);

impl FromStr for GilbertElliott {
    type Err = BadGilbertElliott;
    /// `P,R[,1-H[,1-K]]` (commas or blanks between), each a probability or a percentage
    /// (`5%`); `1-H` defaults to 1 and `1-K` to 0, as in netem.
    fn from_str(s: &str) -> Result<Self, BadGilbertElliott> {
        let bad = || BadGilbertElliott(sprout_files::excerpt(s.trim()));
        let values: Vec<f64> = s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .map(|f| match f.strip_suffix('%') {
                Some(pct) => pct.parse::<f64>().map(|v| v / 100.0),
                None => f.parse::<f64>(),
            })
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        if !(2..=4).contains(&values.len()) {
            return Err(bad());
        }
        let ge = GilbertElliott {
            p: values[0],
            r: values[1],
            loss_bad: values.get(2).copied().unwrap_or(1.0),
            loss_good: values.get(3).copied().unwrap_or(0.0),
        };
        match ge.invalid() {
            Some(_) => Err(bad()),
            None => Ok(ge),
        }
    }
}

impl fmt::Display for GilbertElliott {
    /// `p=P r=R 1-h=H 1-k=K`, as the mm-link log's header writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gemodel p={} r={} 1-h={} 1-k={}",
            self.p, self.r, self.loss_bad, self.loss_good
        )
    }
}

/// The chain's state as the link runs it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GeState {
    /// Whether the chain is in the bad state.
    pub bad: bool,
}

impl GeState {
    /// Whether the packet now reaching the queue is lost, given two uniform draws in `[0, 1)`:
    /// `u_loss` against the state's loss probability, then `u_move` against its transition's.
    #[inline]
    pub(crate) fn step(&mut self, ge: &GilbertElliott, u_loss: f64, u_move: f64) -> bool {
        let (loss, leave) = if self.bad {
            (ge.loss_bad, ge.r)
        } else {
            (ge.loss_good, ge.p)
        };
        let lost = u_loss < loss;
        if u_move < leave {
            self.bad = !self.bad;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_netem_style() {
        let ge: GilbertElliott = "1%,30%,100%,0%".parse().unwrap();
        assert_eq!(ge.p, 0.01);
        assert_eq!(ge.r, 0.3);
        assert_eq!(ge.loss_bad, 1.0);
        assert_eq!(ge.loss_good, 0.0);
        let short: GilbertElliott = "0.01 0.3".parse().unwrap();
        assert_eq!(short, ge);
        for bad in ["", "0.1", "0.1,0.2,0.3,0.4,0.5", "2,0.1", "x,y", "-1%,5%"] {
            assert!(bad.parse::<GilbertElliott>().is_err(), "{bad}");
        }
        assert!((ge.stationary_loss() - 0.01 / 0.31).abs() < 1e-15);
    }
}

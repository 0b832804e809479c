//! One direction of a cellular link: the one direction type of every crate above (the
//! simulator's links, the published values, the interactive stream's packets, trace charts).
//! `Up` is from the mobile host (the client) to the server, `Down` back. [`Load`] says which
//! of them carry data.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One direction of the link (serialized as `"up"` / `"down"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the mobile host (the client) to the server.
    Up,
    /// From the server to the mobile host (the client).
    Down,
}

impl Direction {
    /// Both, up first.
    pub const BOTH: [Direction; 2] = [Direction::Up, Direction::Down];

    /// `"up"` or `"down"` (also the suffix of a trace file, `NAME.up`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }

    /// Parses `"up"`, `"down"`, `"uplink"`, `"downlink"` (any case, surrounding spaces
    /// ignored).
    pub fn parse(s: &str) -> Option<Direction> {
        match s.trim().to_ascii_lowercase().as_str() {
            "up" | "uplink" => Some(Direction::Up),
            "down" | "downlink" => Some(Direction::Down),
            _ => None,
        }
    }

    /// The other direction.
    pub fn opposite(self) -> Direction {
        match self {
            Direction::Up => Direction::Down,
            Direction::Down => Direction::Up,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which directions of a connection carry data (the other, if any, carries only feedback):
/// the one such enum of every crate above (the simulator's `--load`, the programs'
/// `--direction`, the HELLOs of `sprout_net` and of the Saturator). Serialized as `"up"`,
/// `"down"` or `"both"`; each wire format keeps its own byte for it and converts at its codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// Only the uplink: the mobile host (the client) sends, the server receives.
    Up,
    /// Only the downlink: the server sends, the mobile host (the client) receives.
    Down,
    /// Both directions at once (the paper's setup).
    Both,
}

impl Load {
    /// Every load, in the order the command lines list them.
    pub const ALL: [Load; 3] = [Load::Up, Load::Down, Load::Both];

    /// Whether `direction` carries data under this load.
    pub fn carries(self, direction: Direction) -> bool {
        matches!(
            (self, direction),
            (Load::Both, _) | (Load::Up, Direction::Up) | (Load::Down, Direction::Down)
        )
    }

    /// `"up"`, `"down"` or `"both"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Load::Up => "up",
            Load::Down => "down",
            Load::Both => "both",
        }
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Load {
    type Err = UnknownLoad;

    /// Parses exactly `"up"`, `"down"` or `"both"`.
    fn from_str(s: &str) -> Result<Load, UnknownLoad> {
        Load::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownLoad(s.to_string()))
    }
}

/// A load's name that is none of up, down or both (the name given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown direction '{0}' (expected up, down or both)")]
pub struct UnknownLoad(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_carries_its_directions_only() {
        let carried = |l: Load| Direction::BOTH.map(|d| l.carries(d));
        assert_eq!(carried(Load::Up), [true, false]);
        assert_eq!(carried(Load::Down), [false, true]);
        assert_eq!(carried(Load::Both), [true, true]);
    }

    #[test]
    fn a_load_round_trips_its_names_and_refuses_others() {
        for l in Load::ALL {
            assert_eq!(l.as_str().parse::<Load>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
            let json = serde_json::to_string(&l).unwrap();
            assert_eq!(json, format!("\"{}\"", l.as_str()));
            assert_eq!(serde_json::from_str::<Load>(&json).unwrap(), l);
        }
        let err = "Both".parse::<Load>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown direction 'Both' (expected up, down or both)"
        );
    }
}

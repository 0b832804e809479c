//! One direction of a cellular link: the one direction type of every crate above (the
//! simulator's links, the published values, the interactive stream's packets, trace charts).
//! `Up` is from the mobile host (the client) to the server, `Down` back.

use std::fmt;

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

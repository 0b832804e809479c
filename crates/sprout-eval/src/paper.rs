//! Published values to compare against, as data (from the project's `sprout-reference.md`,
//! which collects them from Winstein et al., NSDI 2013, and from reference runs of the
//! authors' implementation on this kind of machine).
//!
//! Keys used here:
//! * links: our trace names (`"Verizon-LTE-short"`, `"ATT-LTE-driving"`,
//!   `"TMobile-UMTS-driving"`, `"Verizon-EVDO-driving"`) or the paper's link names
//!   (`"Verizon LTE"`, `"AT&T LTE"`, `"T-Mobile UMTS"`, `"Verizon EV-DO"`); see [`paper_link`].
//! * directions: `"down"` / `"up"` (also `"downlink"` / `"uplink"`, any case).
//! * schemes: `"sprout"`, `"sprout-ewma"`, `"cubic"`, `"vegas"`, `"ledbat"`, `"compound"`,
//!   `"cubic-codel"`, `"skype"`, `"hangout"`, `"facetime"` (any case; `_` and spaces read as `-`).
//!
//! Delays are milliseconds, throughputs kbit/s, utilizations fractions 0..1.

use serde::{Deserialize, Serialize};
pub use sprout_sim::scheme::scheme_key;

/// Our trace names and the paper's link they come from.
pub const TRACE_LINKS: [(&str, &str); 4] = [
    ("Verizon-LTE-short", "Verizon LTE"),
    ("ATT-LTE-driving", "AT&T LTE"),
    ("TMobile-UMTS-driving", "T-Mobile UMTS"),
    ("Verizon-EVDO-driving", "Verizon EV-DO"),
];

/// The schemes plotted per link in the paper's Figure 7 (our scheme keys).
pub const FIG7_SCHEMES: [&str; 6] = [
    "sprout",
    "sprout-ewma",
    "cubic",
    "vegas",
    "ledbat",
    "compound",
];

/// Transfer direction of a published value: the one direction type
/// ([`sprout_core::direction::Direction`]).
pub use sprout_core::direction::Direction;

/// A published (self-inflicted delay, throughput) point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaperPoint {
    /// 95th-percentile self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
    /// Average throughput, kbit/s.
    pub throughput_kbps: f64,
}

/// One row of the paper's Figure 7: one scheme on one link and direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fig7Row {
    /// The paper's link name, e.g. `"Verizon LTE"`.
    pub link: &'static str,
    /// Direction.
    pub direction: Direction,
    /// Our scheme key, e.g. `"sprout-ewma"`.
    pub scheme: &'static str,
    /// The published point.
    pub point: PaperPoint,
}

const fn p(self_inflicted_ms: f64, throughput_kbps: f64) -> PaperPoint {
    PaperPoint {
        self_inflicted_ms,
        throughput_kbps,
    }
}

/// Figure 7 per link and direction, in [`FIG7_SCHEMES`] order:
/// (link, direction, [sprout, sprout-ewma, cubic, vegas, ledbat, compound]).
/// The Verizon LTE rows come from the full drive trace (`Verizon-LTE-short` is an excerpt).
pub const FIG7_TABLE: [(&str, Direction, [PaperPoint; 6]); 8] = [
    (
        "Verizon LTE",
        Direction::Down,
        [
            p(73.0, 4741.0),
            p(208.0, 7413.0),
            p(7568.0, 5719.0),
            p(215.0, 2773.0),
            p(313.0, 3040.0),
            p(349.0, 2059.0),
        ],
    ),
    (
        "Verizon LTE",
        Direction::Up,
        [
            p(332.0, 3703.0),
            p(780.0, 4981.0),
            p(13059.0, 4362.0),
            p(725.0, 2638.0),
            p(675.0, 3014.0),
            p(1777.0, 2005.0),
        ],
    ),
    (
        "AT&T LTE",
        Direction::Down,
        [
            p(52.0, 2304.0),
            p(161.0, 3822.0),
            p(5426.0, 1208.0),
            p(197.0, 1025.0),
            p(254.0, 988.0),
            p(288.0, 940.0),
        ],
    ),
    (
        "AT&T LTE",
        Direction::Up,
        [
            p(127.0, 412.0),
            p(350.0, 862.0),
            p(24262.0, 841.0),
            p(374.0, 693.0),
            p(877.0, 844.0),
            p(1236.0, 740.0),
        ],
    ),
    (
        "T-Mobile UMTS",
        Direction::Down,
        [
            p(331.0, 680.0),
            p(487.0, 1600.0),
            p(8350.0, 668.0),
            p(499.0, 762.0),
            p(569.0, 781.0),
            p(1472.0, 761.0),
        ],
    ),
    (
        "T-Mobile UMTS",
        Direction::Up,
        [
            p(136.0, 370.0),
            p(252.0, 833.0),
            p(32640.0, 971.0),
            p(551.0, 693.0),
            p(1775.0, 850.0),
            p(826.0, 607.0),
        ],
    ),
    (
        "Verizon EV-DO",
        Direction::Down,
        [
            p(1287.0, 209.0),
            p(1608.0, 402.0),
            p(97631.0, 521.0),
            p(1771.0, 300.0),
            p(1387.0, 372.0),
            p(5498.0, 385.0),
        ],
    ),
    (
        "Verizon EV-DO",
        Direction::Up,
        [
            p(199.0, 239.0),
            p(355.0, 628.0),
            p(12379.0, 166.0),
            p(994.0, 311.0),
            p(1253.0, 475.0),
            p(775.0, 261.0),
        ],
    ),
];

/// The paper's link name for one of our trace names, or the name itself if it already is
/// one of the paper's link names; `None` otherwise.
pub fn paper_link(trace_or_link: &str) -> Option<&'static str> {
    let t = trace_or_link.trim();
    TRACE_LINKS
        .iter()
        .find(|(trace, link)| trace.eq_ignore_ascii_case(t) || link.eq_ignore_ascii_case(t))
        .map(|(_, link)| *link)
}

/// Our trace name for a paper link name or trace name; `None` otherwise.
pub fn trace_name(trace_or_link: &str) -> Option<&'static str> {
    let link = paper_link(trace_or_link)?;
    TRACE_LINKS
        .iter()
        .find(|(_, l)| *l == link)
        .map(|(trace, _)| *trace)
}

/// All Figure-7 rows, flattened.
pub fn fig7_rows() -> Vec<Fig7Row> {
    FIG7_TABLE
        .iter()
        .flat_map(|(link, direction, pts)| {
            FIG7_SCHEMES
                .iter()
                .zip(pts.iter())
                .map(move |(scheme, point)| Fig7Row {
                    link,
                    direction: *direction,
                    scheme,
                    point: *point,
                })
        })
        .collect()
}

/// Figure 7's point for a link (our trace name or the paper's link name), a direction
/// (`"down"`/`"up"`) and a scheme key (see [`FIG7_SCHEMES`]).
pub fn fig7(link: &str, direction: &str, scheme: &str) -> Option<PaperPoint> {
    let link = paper_link(link)?;
    let dir = Direction::parse(direction)?;
    let key = scheme_key(scheme);
    let si = FIG7_SCHEMES.iter().position(|s| *s == key)?;
    FIG7_TABLE
        .iter()
        .find(|(l, d, _)| *l == link && *d == dir)
        .map(|(_, _, pts)| pts[si])
}

/// A Figure-8 average over the 8 links.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fig8Point {
    /// Average 95th-percentile self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
    /// Average utilization, fraction 0..1.
    pub utilization: f64,
}

/// Figure 8: (scheme key, average self-inflicted delay ms, average utilization 0..1).
pub const FIG8_TABLE: [(&str, Fig8Point); 4] = [
    (
        "sprout",
        Fig8Point {
            self_inflicted_ms: 317.0,
            utilization: 0.421,
        },
    ),
    (
        "sprout-ewma",
        Fig8Point {
            self_inflicted_ms: 525.0,
            utilization: 0.797,
        },
    ),
    (
        "cubic",
        Fig8Point {
            self_inflicted_ms: 25164.0,
            utilization: 0.617,
        },
    ),
    (
        "cubic-codel",
        Fig8Point {
            self_inflicted_ms: 497.0,
            utilization: 0.611,
        },
    ),
];

/// Figure 8's average for a scheme key (`"sprout"`, `"sprout-ewma"`, `"cubic"`, `"cubic-codel"`).
pub fn fig8(scheme: &str) -> Option<Fig8Point> {
    let key = scheme_key(scheme);
    FIG8_TABLE
        .iter()
        .find(|(s, _)| *s == key)
        .map(|(_, pt)| *pt)
}

/// A row of the introduction's table (averages over the 8 links).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntroRow {
    /// How many times more throughput Sprout had than this scheme (Sprout = 1.0; Sprout-EWMA
    /// 0.5, i.e. EWMA had 2x Sprout's throughput).
    pub sprout_speedup: f64,
    /// Average 95th-percentile self-inflicted delay, seconds.
    pub self_inflicted_s: f64,
}

/// The introduction's table: (scheme key, row).
pub const INTRO_TABLE: [(&str, IntroRow); 10] = [
    ("sprout", intro_row(1.0, 0.32)),
    ("sprout-ewma", intro_row(0.5, 0.53)),
    ("skype", intro_row(2.2, 2.52)),
    ("hangout", intro_row(4.4, 2.28)),
    ("facetime", intro_row(1.9, 2.75)),
    ("compound", intro_row(1.3, 1.53)),
    ("vegas", intro_row(1.1, 0.67)),
    ("ledbat", intro_row(1.0, 0.89)),
    ("cubic", intro_row(0.91, 25.0)),
    ("cubic-codel", intro_row(0.70, 0.50)),
];

const fn intro_row(sprout_speedup: f64, self_inflicted_s: f64) -> IntroRow {
    IntroRow {
        sprout_speedup,
        self_inflicted_s,
    }
}

/// The introduction's row for a scheme key.
pub fn intro(scheme: &str) -> Option<IntroRow> {
    let key = scheme_key(scheme);
    INTRO_TABLE.iter().find(|(s, _)| *s == key).map(|(_, r)| *r)
}

/// Figure 9: Sprout's confidence sweep on the T-Mobile UMTS uplink
/// (confidence in percent, published point).
pub const FIG9_LINK: (&str, Direction) = ("T-Mobile UMTS", Direction::Up);

/// Figure 9's points: (forecast confidence %, self-inflicted delay ms / throughput kbit/s).
pub const FIG9: [(u32, PaperPoint); 4] = [
    (95, p(136.0, 370.0)),
    (75, p(300.0, 755.0)),
    (50, p(458.0, 857.0)),
    (5, p(999.0, 888.0)),
];

/// Figure 9's point for a confidence in percent (95, 75, 50 or 5).
pub fn fig9(confidence_pct: u32) -> Option<PaperPoint> {
    FIG9.iter()
        .find(|(c, _)| *c == confidence_pct)
        .map(|(_, pt)| *pt)
}

/// A row of the loss-resilience table (Verizon LTE, full drive trace; Sprout).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    /// Direction.
    pub direction: Direction,
    /// Bernoulli loss probability each way, percent.
    pub loss_pct: u32,
    /// Throughput, kbit/s.
    pub throughput_kbps: f64,
    /// 95th-percentile self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
}

const fn loss_row(direction: Direction, loss_pct: u32, tput: f64, delay: f64) -> LossRow {
    LossRow {
        direction,
        loss_pct,
        throughput_kbps: tput,
        self_inflicted_ms: delay,
    }
}

/// The loss-resilience table (Verizon LTE).
pub const LOSS_TABLE: [LossRow; 6] = [
    loss_row(Direction::Down, 0, 4741.0, 73.0),
    loss_row(Direction::Down, 5, 3971.0, 60.0),
    loss_row(Direction::Down, 10, 2768.0, 58.0),
    loss_row(Direction::Up, 0, 3703.0, 332.0),
    loss_row(Direction::Up, 5, 2598.0, 378.0),
    loss_row(Direction::Up, 10, 1163.0, 314.0),
];

/// The loss table's row for a direction (`"down"`/`"up"`) and loss percentage (0, 5, 10).
pub fn loss(direction: &str, loss_pct: u32) -> Option<LossRow> {
    let dir = Direction::parse(direction)?;
    LOSS_TABLE
        .iter()
        .find(|r| r.direction == dir && r.loss_pct == loss_pct)
        .copied()
}

/// Implementations of the reference runs measured on this kind of machine (mahimahi
/// `mm-delay 20 mm-link`, unlimited drop-tail queue, one direction loaded, first 120 s of
/// each trace, nothing skipped).
pub const REFERENCE_IMPLS: [&str; 3] = ["sprout-original", "cubic-kernel", "bbr-kernel"];

/// A reference-run measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReferencePoint {
    /// Utilization, fraction 0..1.
    pub utilization: f64,
    /// 95th-percentile self-inflicted delay (all packets), ms.
    pub self_inflicted_ms: f64,
}

const fn r(utilization: f64, self_inflicted_ms: f64) -> ReferencePoint {
    ReferencePoint {
        utilization,
        self_inflicted_ms,
    }
}

/// Reference runs: (our trace name, direction, [sprout-original, cubic-kernel, bbr-kernel]).
pub const REFERENCE_TABLE: [(&str, Direction, [ReferencePoint; 3]); 8] = [
    (
        "Verizon-LTE-short",
        Direction::Down,
        [r(0.44, 58.0), r(0.99, 8638.0), r(0.83, 759.0)],
    ),
    (
        "Verizon-LTE-short",
        Direction::Up,
        [r(0.44, 51.0), r(1.0, 7130.0), r(0.91, 1220.0)],
    ),
    (
        "ATT-LTE-driving",
        Direction::Down,
        [r(0.58, 3689.0), r(1.0, 10253.0), r(0.93, 3952.0)],
    ),
    (
        "ATT-LTE-driving",
        Direction::Up,
        [r(0.42, 205.0), r(1.0, 21521.0), r(0.94, 1180.0)],
    ),
    (
        "TMobile-UMTS-driving",
        Direction::Down,
        [r(0.28, 900.0), r(0.99, 51911.0), r(0.89, 17882.0)],
    ),
    (
        "TMobile-UMTS-driving",
        Direction::Up,
        [r(0.32, 1822.0), r(1.0, 45346.0), r(0.9, 2179.0)],
    ),
    (
        "Verizon-EVDO-driving",
        Direction::Down,
        [r(0.37, 598.0), r(0.99, 17741.0), r(0.89, 7680.0)],
    ),
    (
        "Verizon-EVDO-driving",
        Direction::Up,
        [r(0.29, 66.0), r(1.0, 26211.0), r(0.86, 909.0)],
    ),
];

/// The reference run for a trace (ours or the paper's link name), direction and
/// implementation (`"sprout-original"` (alias `"sprout"`), `"cubic-kernel"` (alias `"cubic"`),
/// `"bbr-kernel"` (alias `"bbr"`)).
pub fn reference_run(trace: &str, direction: &str, implementation: &str) -> Option<ReferencePoint> {
    let trace = trace_name(trace)?;
    let dir = Direction::parse(direction)?;
    let idx = match scheme_key(implementation).as_str() {
        "sprout-original" | "sprout" | "original" => 0,
        "cubic-kernel" | "cubic" => 1,
        "bbr-kernel" | "bbr" => 2,
        _ => return None,
    };
    REFERENCE_TABLE
        .iter()
        .find(|(t, d, _)| *t == trace && *d == dir)
        .map(|(_, _, pts)| pts[idx])
}

/// The original Sprout with both directions loaded (unmodified bulk-transfer program):
/// (our trace name, downlink utilization, uplink utilization), fractions 0..1.
pub const REFERENCE_BOTH_DIRECTIONS: [(&str, f64, f64); 2] = [
    ("Verizon-LTE-short", 0.52, 0.51),
    ("ATT-LTE-driving", 0.47, 0.45),
];

/// The paper's SproutTunnel result (Verizon LTE downlink, Cubic bulk + Skype):
/// throughputs in kbit/s and Skype's 95% delay in seconds, without and with the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TunnelResult {
    /// Cubic's throughput without / with SproutTunnel, kbit/s.
    pub cubic_kbps: (f64, f64),
    /// Skype's throughput without / with SproutTunnel, kbit/s.
    pub skype_kbps: (f64, f64),
    /// Skype's 95% end-to-end delay without / with SproutTunnel, seconds.
    pub skype_delay_s: (f64, f64),
}

/// The paper's SproutTunnel result.
pub const TUNNEL: TunnelResult = TunnelResult {
    cubic_kbps: (8336.0, 3776.0),
    skype_kbps: (78.0, 490.0),
    skype_delay_s: (6.0, 0.17),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fig7_lookups() {
        let pt = fig7("Verizon-LTE-short", "down", "sprout").unwrap();
        assert_eq!(pt, p(73.0, 4741.0));
        let pt = fig7("TMobile-UMTS-driving", "up", "Sprout-EWMA").unwrap();
        assert_eq!(pt, p(252.0, 833.0));
        let pt = fig7("AT&T LTE", "uplink", "cubic").unwrap();
        assert_eq!(pt, p(24262.0, 841.0));
        let pt = fig7("Verizon-EVDO-driving", "down", "compound").unwrap();
        assert_eq!(pt, p(5498.0, 385.0));
        assert_eq!(
            fig7("Verizon-EVDO-driving", "up", "ledbat").unwrap(),
            p(1253.0, 475.0)
        );
        assert!(fig7("nowhere", "down", "sprout").is_none());
        assert!(fig7("ATT-LTE-driving", "sideways", "sprout").is_none());
        assert!(fig7("ATT-LTE-driving", "down", "skype").is_none());
        assert_eq!(fig7_rows().len(), 48);
    }

    #[test]
    fn other_tables() {
        assert_eq!(fig8("sprout").unwrap().utilization, 0.421);
        assert_eq!(fig8("Cubic over CoDel").unwrap().self_inflicted_ms, 497.0);
        assert_eq!(intro("TCP Cubic").unwrap().self_inflicted_s, 25.0);
        assert_eq!(intro("hangout").unwrap().sprout_speedup, 4.4);
        assert_eq!(fig9(75).unwrap(), p(300.0, 755.0));
        assert_eq!(loss("up", 5).unwrap().throughput_kbps, 2598.0);
        let rr = reference_run("T-Mobile UMTS", "down", "sprout-original").unwrap();
        assert!((rr.utilization - 0.28).abs() < 1e-12);
        assert_eq!(rr.self_inflicted_ms, 900.0);
        assert_eq!(
            reference_run("Verizon-EVDO-driving", "up", "bbr")
                .unwrap()
                .self_inflicted_ms,
            909.0
        );
        assert_eq!(paper_link("ATT-LTE-driving"), Some("AT&T LTE"));
        assert_eq!(trace_name("Verizon EV-DO"), Some("Verizon-EVDO-driving"));
    }
}

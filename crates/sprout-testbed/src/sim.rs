//! The deterministic discrete-event simulator: two Sprout endpoints joined by an uplink and a
//! downlink, each replaying its own trace through the shared link model, running exactly the
//! protocol code a real socket runtime runs. Same inputs give byte-identical outputs.

use std::io::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sprout_core::{Config, Connection};
use sprout_link::{Link, LinkConfig, LinkEvent, MmLogWriter, Trace};

use crate::metrics::{self, Arrival, DirectionMetrics, Window};

/// Which directions carry application data (the other carries only feedback and heartbeats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// Both directions saturated at once, as in the paper.
    Both,
    /// Only the mobile's uplink carries data.
    Up,
    /// Only the downlink toward the mobile carries data.
    Down,
}

impl std::str::FromStr for Load {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(Load::Both),
            "up" => Ok(Load::Up),
            "down" => Ok(Load::Down),
            _ => Err(format!("unknown load '{s}' (expected both, up or down)")),
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The protocol configuration of both endpoints.
    pub protocol: Config,
    /// The link model of both directions.
    pub link: LinkConfig,
    /// Simulated time, in microseconds; `None` = the longer trace's length.
    pub duration_us: Option<u64>,
    /// Start of the measured window, in microseconds (paper: 60 s).
    pub skip_us: u64,
    /// Which directions carry data.
    pub load: Load,
    /// Seed for anything random (reserved for loss models; the runs here are deterministic).
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            protocol: Config::default(),
            link: LinkConfig::default(),
            duration_us: None,
            skip_us: metrics::DEFAULT_SKIP_US,
            load: Load::Both,
            seed: 0,
        }
    }
}

/// What happened in one direction of a run.
#[derive(Clone, Debug)]
pub struct DirectionRun {
    /// The trace replayed.
    pub trace: Arc<Trace>,
    /// Every packet that left the link queue, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Every delivery opportunity up to the end of the run, in microseconds.
    pub opportunities_us: Vec<u64>,
    /// The measured window.
    pub window: Window,
    /// The paper's metrics over the window.
    pub metrics: DirectionMetrics,
    /// Datagrams sent in this direction, heartbeats included.
    pub datagrams_sent: u64,
    /// Heartbeats sent in this direction.
    pub heartbeats_sent: u64,
}

/// Result of a simulation: both directions.
#[derive(Clone, Debug)]
pub struct SimOutput {
    /// Mobile to server.
    pub uplink: DirectionRun,
    /// Server to mobile.
    pub downlink: DirectionRun,
    /// Simulated time, in microseconds.
    pub duration_us: u64,
}

/// A packet on the simulated wire: the real datagram plus what the metrics need.
struct WirePacket {
    datagram: Vec<u8>,
    app_bytes: u32,
    heartbeat: bool,
}

/// Optional mahimahi-format logs, one per direction.
pub struct Logs<'a> {
    /// Uplink log.
    pub uplink: &'a mut dyn Write,
    /// Downlink log.
    pub downlink: &'a mut dyn Write,
}

struct Side {
    conn: Connection,
    /// Link this endpoint sends on.
    link: Link<WirePacket>,
    arrivals: Vec<Arrival>,
}

/// Runs the simulation. `logs`, if given, receive each link's mm-link log.
pub fn run(
    uplink: Arc<Trace>,
    downlink: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<Logs<'_>>,
) -> anyhow::Result<SimOutput> {
    let duration = cfg
        .duration_us
        .unwrap_or_else(|| uplink.duration_us().max(downlink.duration_us()));
    let overhead = cfg.protocol.link_overhead_bytes;
    let mk = |trace: &Arc<Trace>| Link::new(trace.clone(), cfg.link.clone());
    let conn = |bulk: bool| -> anyhow::Result<Connection> {
        let mut c = Connection::new(cfg.protocol.clone(), 0).map_err(anyhow::Error::msg)?;
        c.set_bulk(bulk);
        c.set_keep_incoming(false);
        Ok(c)
    };
    // The server sends on the downlink, the mobile on the uplink.
    let mut sides = [
        Side {
            conn: conn(cfg.load != Load::Up)?,
            link: mk(&downlink),
            arrivals: Vec::new(),
        },
        Side {
            conn: conn(cfg.load != Load::Down)?,
            link: mk(&uplink),
            arrivals: Vec::new(),
        },
    ];
    let mut writers = match logs {
        Some(l) => Some([
            MmLogWriter::new(l.downlink, "downlink", downlink.name(), &cfg.link)?,
            MmLogWriter::new(l.uplink, "uplink", uplink.name(), &cfg.link)?,
        ]),
        None => None,
    };

    let mut buf = Vec::with_capacity(2048);
    let mut delivered: Vec<(usize, sprout_link::Delivery<WirePacket>)> = Vec::new();
    let mut now = 0u64;
    let mut log_error: Option<std::io::Error> = None;
    loop {
        // 1. Links deliver what is due.
        for (i, side) in sides.iter_mut().enumerate() {
            side.link.advance(now, &mut |ev: LinkEvent<WirePacket>| {
                if let Some(w) = writers.as_mut() {
                    if let Err(e) = w[i].event(&ev) {
                        log_error.get_or_insert(e);
                    }
                }
                if let LinkEvent::Delivered(d) = ev {
                    delivered.push((i, d));
                }
            });
        }
        // 2. Receivers take in their datagrams (downlink packets reach the mobile, side 1).
        for (i, d) in delivered.drain(..) {
            let receiver = 1 - i;
            let p = &d.payload;
            sides[i].arrivals.push(Arrival {
                sent_us: d.sent_us,
                arrived_us: d.delivered_us,
                bytes: d.bytes,
                app_bytes: p.app_bytes,
                is_data: !p.heartbeat && p.app_bytes > 0,
            });
            // Our own datagrams always parse; a failure here would be a bug worth seeing.
            sides[receiver]
                .conn
                .handle_datagram(d.delivered_us, &p.datagram)
                .map_err(|e| anyhow::anyhow!("simulated datagram failed to parse: {e}"))?;
        }
        // 3. Endpoints run their timers and send.
        for side in sides.iter_mut() {
            side.conn.handle_timeout(now);
            while let Some(t) = side.conn.poll_transmit(now, &mut buf) {
                let packet = WirePacket {
                    datagram: buf.clone(),
                    app_bytes: t.app_bytes as u32,
                    heartbeat: t.heartbeat,
                };
                side.link.send(now, t.len as u32 + overhead, packet);
            }
        }
        // 4. Jump to the next thing that can happen.
        let mut next = u64::MAX;
        for side in sides.iter_mut() {
            if let Some(t) = side.link.next_event_us() {
                next = next.min(t);
            }
            if let Some(t) = side.conn.poll_timeout() {
                next = next.min(t);
            }
        }
        // The last step lands exactly on the end, so the links report everything up to it
        // (wasted opportunities included, for the logs).
        if now >= duration {
            break;
        }
        now = next.max(now + 1).min(duration);
    }
    if let Some(ws) = writers {
        for w in ws {
            w.finish()?;
        }
    }
    if let Some(e) = log_error {
        return Err(e.into());
    }

    let [down_side, up_side] = sides;
    let finish = |side: Side, trace: Arc<Trace>| {
        let stats = side.conn.stats();
        let end = if cfg.link.looping {
            duration.min(trace.duration_us().max(1))
        } else {
            duration
        };
        let window = Window::new(cfg.skip_us.min(end), end);
        let opportunities_us = opportunities_until(&trace, duration, cfg.link.looping);
        let m = metrics::compute(
            &side.arrivals,
            &opportunities_us,
            cfg.link.opportunity_bytes,
            cfg.link.propagation_delay_us,
            window,
            metrics::DEFAULT_STEP_US,
        );
        DirectionRun {
            trace,
            arrivals: side.arrivals,
            opportunities_us,
            window,
            metrics: m,
            datagrams_sent: stats.datagrams_sent,
            heartbeats_sent: stats.heartbeats_sent,
        }
    };
    Ok(SimOutput {
        downlink: finish(down_side, downlink),
        uplink: finish(up_side, uplink),
        duration_us: duration,
    })
}

/// Every opportunity time of a trace up to `end_us`, in microseconds, looping or not, exactly
/// as the link replays them.
pub fn opportunities_until(trace: &Arc<Trace>, end_us: u64, looping: bool) -> Vec<u64> {
    trace.cursor(looping).take_while(|&t| t <= end_us).collect()
}

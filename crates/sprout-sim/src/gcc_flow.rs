//! The GCC flow of the simulator ([`crate::sim::Transport::Gcc`]): a media sender that paces
//! its packets at [`PACING_FACTOR`] times the target rate of a [`GccController`], each packet
//! carrying an RTP-like transport-wide sequence number whose send time the controller keeps;
//! and a receiver that reports every packet's arrival time every [`FEEDBACK_INTERVAL`] back
//! over the link's other direction, as transport-wide congestion control feedback does. At
//! start-up the sender paces out the controller's probe clusters (padding when it has no
//! media). Each endpoint is both: it sends its own media and reports on its peer's.

use std::collections::VecDeque;

use sprout_core::time::{Duration, Instant};

use sprout_gcc::feedback::FeedbackBuilder;
use sprout_gcc::probe::ProbeCluster;
use sprout_gcc::{Feedback, GccConfig, GccController, SentPacket};

/// Headers a GCC media packet carries on the link on top of its payload, bytes: IPv4/UDP
/// (28), RTP (12) and the transport-wide sequence number extension (8).
pub const GCC_HEADER_BYTES: u32 = 48;

/// The largest media payload per packet, bytes (about what WebRTC puts in one RTP packet).
pub const GCC_MAX_PAYLOAD: usize = 1200;

/// The pacer sends media at this many times the target rate (libwebrtc's pacing factor 2.5),
/// so that a frame sized at the target leaves well before the next one is captured.
pub const PACING_FACTOR: f64 = 2.5;

/// How often the receiver sends feedback (50 ms; transport-wide feedback goes every 50-100
/// ms).
pub const FEEDBACK_INTERVAL: Duration = Duration::from_millis(50);

/// What a GCC packet on the wire is.
#[derive(Clone, Debug)]
pub(crate) enum GccPacket {
    /// Media or probe padding, with its transport-wide sequence number.
    Media { seq: u64 },
    /// Feedback on the peer's packets.
    Feedback(Feedback),
}

/// A packet the host puts on the link now.
pub(crate) struct Outgoing {
    pub(crate) packet: GccPacket,
    /// The application message it carries part of, if media.
    pub(crate) message: Option<u32>,
    /// Application payload, bytes.
    pub(crate) app_bytes: u32,
    /// Size on the link, bytes.
    pub(crate) wire_bytes: u32,
}

/// One GCC endpoint: sender of its own media, receiver of its peer's.
pub(crate) struct GccHost {
    controller: GccController,
    feedback: FeedbackBuilder,
    /// (message, payload bytes) of media waiting for the pacer.
    queue: VecDeque<(u32, u32)>,
    queued_bytes: u64,
    next_seq: u64,
    next_send: Instant,
    next_feedback: Instant,
    /// The probe cluster being sent and the packets it still needs.
    probe: Option<(ProbeCluster, u32)>,
    /// Media has been handed over (probing starts with the media).
    started: bool,
    /// Time between frames, s (for the allowance of adaptive video).
    frame_interval_s: f64,
    sent: u64,
}

impl GccHost {
    /// A host starting at `now`, whose adaptive video (if any) captures `fps` frames a
    /// second.
    pub(crate) fn new(now: Instant, fps: f64) -> GccHost {
        GccHost {
            controller: GccController::new(GccConfig::default()),
            feedback: FeedbackBuilder::new(),
            queue: VecDeque::new(),
            queued_bytes: 0,
            next_seq: 0,
            next_send: now,
            next_feedback: now + FEEDBACK_INTERVAL,
            probe: None,
            started: false,
            frame_interval_s: 1.0 / fps,
            sent: 0,
        }
    }

    /// Takes a packet from the peer at `now`.
    pub(crate) fn receive(&mut self, now: Instant, packet: &GccPacket) {
        match packet {
            GccPacket::Media { seq } => self.feedback.on_packet(*seq, now),
            GccPacket::Feedback(fb) => self.controller.on_feedback(now, fb),
        }
    }

    /// Queues `len` bytes of message `message` for the pacer.
    pub(crate) fn enqueue(&mut self, message: u32, len: u32) {
        self.started = true;
        self.queue.push_back((message, len));
        self.queued_bytes += u64::from(len);
    }

    /// Media bytes waiting for the pacer.
    pub(crate) fn backlog(&self) -> u64 {
        self.queued_bytes
    }

    /// What adaptive video may hand over now, bytes: one frame interval at the target rate,
    /// less the packets' headers (the target is a rate on the wire).
    pub(crate) fn allowance(&self) -> u64 {
        let payload_share =
            GCC_MAX_PAYLOAD as f64 / (GCC_MAX_PAYLOAD as f64 + f64::from(GCC_HEADER_BYTES));
        (self.controller.target_bps() * self.frame_interval_s / 8.0 * payload_share) as u64
    }

    /// Packets sent (media, padding and feedback).
    pub(crate) fn sent(&self) -> u64 {
        self.sent
    }

    /// The next packet to put on the link at `now`: feedback when due, else the paced media
    /// or probe packet when due.
    pub(crate) fn transmit(&mut self, now: Instant) -> Option<Outgoing> {
        if now >= self.next_feedback {
            self.next_feedback = (self.next_feedback + FEEDBACK_INTERVAL).max(now);
            if let Some(fb) = self.feedback.poll(now) {
                self.sent += 1;
                return Some(Outgoing {
                    wire_bytes: fb.wire_bytes(),
                    packet: GccPacket::Feedback(fb),
                    message: None,
                    app_bytes: 0,
                });
            }
        }
        if self.started && self.probe.is_none() {
            self.probe = self.controller.poll_probe().map(|c| (c, c.packets));
        }
        if now < self.next_send || (self.queue.is_empty() && self.probe.is_none()) {
            return None;
        }
        let media = self.queue.pop_front();
        let (message, app_bytes, wire_bytes) = match media {
            Some((m, len)) => {
                self.queued_bytes -= u64::from(len);
                (Some(m), len, len + GCC_HEADER_BYTES)
            }
            None => (None, 0, GccConfig::default().probe_packet_bytes),
        };
        let probe = self.probe.map(|(c, _)| c.id);
        let rate = match self.probe.as_mut() {
            Some((c, left)) => {
                *left -= 1;
                let rate = c.rate_bps;
                if *left == 0 {
                    self.probe = None;
                }
                rate
            }
            None => PACING_FACTOR * self.controller.target_bps(),
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.controller.on_packet_sent(SentPacket {
            seq,
            send_time: now,
            bytes: wire_bytes,
            probe,
        });
        let gap = Duration::from_micros((f64::from(wire_bytes) * 8.0 / rate * 1e6).round() as u64);
        self.next_send = self.next_send.max(now) + gap.max(Duration::from_micros(1));
        self.sent += 1;
        Some(Outgoing {
            packet: GccPacket::Media { seq },
            message,
            app_bytes,
            wire_bytes,
        })
    }

    /// When the host next has something to do: its feedback, or its pacer when it holds
    /// media or a probe.
    pub(crate) fn next_timeout(&self) -> Instant {
        if !self.queue.is_empty() || self.probe.is_some() {
            self.next_feedback.min(self.next_send)
        } else {
            self.next_feedback
        }
    }
}

//! The emulator's single event-loop thread: TUN devices in, link models, TUN devices out.
//!
//! Each iteration reads every pending packet of both TUN devices (a bounded batch each),
//! hands each to its direction's [`Link`] at the time it was read, advances both links to now
//! and writes their deliveries to the other side's TUN device, then sleeps in `ppoll` until a
//! device is readable, the next link event is due (nanosecond timeout, 1 ns timer slack), or
//! the emulator is stopped. A stop may ask for a drain first: the uplink's queue and delay line
//! (what the command in the namespace sent before it exited) are still delivered, for at most
//! a given time, while nothing new is read.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sprout_core::time::Instant;
use sprout_link::ecn::{ip_ecn, set_ip_ce};
use sprout_link::flow::ip_flow_key;
use sprout_link::{Ecn, Link, LinkEvent, MmLogWriter, QueueConfig};
use sprout_os::clock::monotonic_ns;
use sprout_os::poll::{poll_readable, EventFd};
use sprout_os::tun::TunDevice;

use crate::stats::{DeliveryRecord, DirectionReport, DirectionStats, EmulatorStats, Histogram};

/// Most packets read from one device per iteration, so that one busy direction cannot delay
/// the other's deliveries for long.
const READ_BATCH: usize = 64;

/// Largest packet a TUN read can return (bytes); the MTU is 1500.
const READ_BUFFER: usize = 65_536;

/// A packet in the link model: its bytes and when it was read (ns since time 0).
#[derive(Debug)]
pub(crate) struct Packet {
    data: Vec<u8>,
    read_ns: u64,
}

/// One direction: a link model between an entry and an exit TUN device.
pub(crate) struct Direction {
    link: Link<Packet>,
    entry: Arc<TunDevice>,
    exit: Arc<TunDevice>,
    log: Option<MmLogWriter<File>>,
    log_error: Option<io::Error>,
    stats: DirectionStats,
    lateness_us: Histogram,
    queue_delay_us: Histogram,
    records: Vec<DeliveryRecord>,
    record_limit: usize,
    /// Whether the link's queue keys packets by flow (FQ-CoDel): then each packet's 5-tuple is
    /// hashed on the way in.
    keyed: bool,
    /// Whether the link marks CE (ECN or the L4S step): then each packet's ECN codepoint is
    /// read on the way in, and the header of a packet the link marked is rewritten to CE on
    /// the way out (the IPv4 checksum updated) so that the receiving kernel sees the mark.
    marks: bool,
}

impl Direction {
    /// A direction reading packets from TUN device `entry` and writing them to `exit` (both
    /// shared with the other direction, and closed, hence removed, when the loop ends),
    /// logging to `log` if given and recording the first `record_limit` deliveries.
    pub(crate) fn new(
        link: Link<Packet>,
        entry: Arc<TunDevice>,
        exit: Arc<TunDevice>,
        log: Option<MmLogWriter<File>>,
        record_limit: usize,
    ) -> Direction {
        Direction {
            keyed: matches!(link.config().queue, QueueConfig::FqCodel { .. }),
            marks: link.config().ecn || link.config().l4s_step_us.is_some(),
            link,
            entry,
            exit,
            log,
            log_error: None,
            stats: DirectionStats::default(),
            lateness_us: Histogram::new(),
            queue_delay_us: Histogram::new(),
            records: Vec::new(),
            record_limit,
        }
    }

    /// Reads up to [`READ_BATCH`] pending packets and sends each into the link at its read time.
    fn read_pending(&mut self, buf: &mut [u8], epoch_ns: u64) {
        for _ in 0..READ_BATCH {
            let n = match self.entry.read(buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // EAGAIN (nothing pending), or an error: try again next iteration
                Err(_) => break,
            };
            let read_ns = monotonic_ns().saturating_sub(epoch_ns);
            self.stats.packets_read += 1;
            let flow = if self.keyed {
                ip_flow_key(&buf[..n])
            } else {
                0
            };
            let ecn = if self.marks {
                ip_ecn(&buf[..n])
            } else {
                Ecn::NotEct
            };
            self.link.send_ecn(
                Instant::from_micros(read_ns / 1000),
                n as u32,
                flow,
                ecn,
                Packet {
                    data: buf[..n].to_vec(),
                    read_ns,
                },
            );
        }
    }

    /// Advances the link to `now_us`, logging its events and writing its deliveries.
    fn advance(&mut self, now_us: u64, epoch_ns: u64) {
        let Direction {
            link,
            exit,
            log,
            log_error,
            stats,
            lateness_us,
            queue_delay_us,
            records,
            record_limit,
            ..
        } = self;
        link.advance(Instant::from_micros(now_us), &mut |event| {
            if let Some(writer) = log.as_mut() {
                if let Err(e) = writer.event(&event) {
                    *log_error = Some(e);
                    *log = None;
                }
            }
            if let LinkEvent::Delivered(mut d) = event {
                if d.mark.is_some() {
                    set_ip_ce(&mut d.payload.data);
                }
                let data = &d.payload.data;
                let written = exit.write(data);
                let written_ns = monotonic_ns().saturating_sub(epoch_ns);
                if written.is_err() {
                    stats.write_errors += 1;
                } else {
                    stats.packets_written += 1;
                }
                let delivered_us = d.delivered.as_micros();
                lateness_us.record(written_ns.saturating_sub(delivered_us * 1000) / 1000);
                queue_delay_us.record((d.delivered - d.enqueued).as_micros());
                if records.len() < *record_limit {
                    records.push(DeliveryRecord {
                        bytes: d.bytes,
                        read_ns: d.payload.read_ns,
                        sent_us: d.sent.as_micros(),
                        enqueued_us: d.enqueued.as_micros(),
                        delivered_us,
                        written_ns,
                    });
                }
            }
        });
        stats.link = link.stats();
    }

    fn finish(mut self) -> (DirectionReport, Option<io::Error>) {
        // Our references to the devices go first (the last one closed removes a device).
        drop(self.entry);
        drop(self.exit);
        let mut error = self.log_error.take();
        if let Some(writer) = self.log.take() {
            if let Err(e) = writer.finish().and_then(|f| f.sync_all()) {
                error.get_or_insert(e);
            }
        }
        (
            DirectionReport {
                stats: self.stats,
                lateness_us: self.lateness_us,
                queue_delay_us: self.queue_delay_us,
                deliveries: self.records,
            },
            error,
        )
    }
}

/// Everything the loop thread needs.
pub(crate) struct LoopSetup {
    pub uplink: Direction,
    pub downlink: Direction,
    pub stop: Arc<EventFd>,
    /// Longest drain of the uplink when `stop` is notified (µs; 0: stop at once), set before
    /// the notification.
    pub drain_us: Arc<AtomicU64>,
    pub shared: Arc<Mutex<EmulatorStats>>,
    /// `CLOCK_MONOTONIC` time of the links' time 0 (ns).
    pub epoch_ns: u64,
}

/// What the loop returns when stopped: both directions' reports and the first log error.
pub(crate) struct LoopOutcome {
    pub uplink: DirectionReport,
    pub downlink: DirectionReport,
    /// The first log error: 0 for the uplink's log, 1 for the downlink's.
    pub log_error: Option<(usize, io::Error)>,
    /// Link time when the loop stopped (µs).
    pub ended_us: u64,
}

/// Most batches read from the uplink's device when a drain starts (what the command sent just
/// before it exited may still wait there).
const DRAIN_READ_BATCHES: usize = 64;

/// Advances both links until the uplink holds nothing (queue and delay line) or `max_us` has
/// passed, reading no new packet except those already waiting in the uplink's device.
fn drain_uplink(
    uplink: &mut Direction,
    downlink: &mut Direction,
    buf: &mut [u8],
    epoch_ns: u64,
    max_us: u64,
) {
    for _ in 0..DRAIN_READ_BATCHES {
        let before = uplink.stats.packets_read;
        uplink.read_pending(buf, epoch_ns);
        if uplink.stats.packets_read == before {
            break;
        }
    }
    let deadline_us = (monotonic_ns().saturating_sub(epoch_ns) / 1000).saturating_add(max_us);
    loop {
        let now_us = monotonic_ns().saturating_sub(epoch_ns) / 1000;
        uplink.advance(now_us, epoch_ns);
        downlink.advance(now_us, epoch_ns);
        let empty = uplink.link.queue_packets() == 0 && uplink.link.in_flight_packets() == 0;
        if empty || now_us >= deadline_us {
            return;
        }
        let next_us = uplink
            .link
            .next_event()
            .map_or(deadline_us, Instant::as_micros)
            .clamp(now_us, deadline_us);
        std::thread::sleep(Duration::from_micros(next_us - now_us));
    }
}

/// Runs the loop until `setup.stop` is notified.
pub(crate) fn run(setup: LoopSetup) -> io::Result<LoopOutcome> {
    let LoopSetup {
        mut uplink,
        mut downlink,
        stop,
        drain_us,
        shared,
        epoch_ns,
    } = setup;
    sprout_os::sched::set_precise_timer_slack();
    let mut buf = vec![0u8; READ_BUFFER];
    let publish = |up: &Direction, down: &Direction| {
        if let Ok(mut s) = shared.lock() {
            s.uplink = up.stats;
            s.downlink = down.stats;
        }
    };
    let result = loop {
        uplink.read_pending(&mut buf, epoch_ns);
        downlink.read_pending(&mut buf, epoch_ns);
        let now_us = monotonic_ns().saturating_sub(epoch_ns) / 1000;
        uplink.advance(now_us, epoch_ns);
        downlink.advance(now_us, epoch_ns);
        publish(&uplink, &downlink);

        let next_us = match (uplink.link.next_event(), downlink.link.next_event()) {
            (Some(a), Some(b)) => Some(a.min(b).as_micros()),
            (a, b) => a.or(b).map(Instant::as_micros),
        };
        let timeout_ns =
            next_us.map(|t| (t * 1000).saturating_sub(monotonic_ns().saturating_sub(epoch_ns)));
        let fds = [uplink.entry.as_fd(), downlink.entry.as_fd(), stop.as_fd()];
        let ready = match poll_readable(fds, timeout_ns) {
            Ok(r) => r,
            Err(e) => break Err(e),
        };
        if ready[2].any {
            let max_us = drain_us.load(Ordering::Acquire);
            if max_us > 0 {
                drain_uplink(&mut uplink, &mut downlink, &mut buf, epoch_ns, max_us);
            }
            break Ok(());
        }
        if ready[..2].iter().any(|r| r.failed) {
            break Err(io::Error::other("a TUN device failed"));
        }
    };
    // Account for the time up to the stop (opportunities, last deliveries).
    let ended_us = monotonic_ns().saturating_sub(epoch_ns) / 1000;
    uplink.advance(ended_us, epoch_ns);
    downlink.advance(ended_us, epoch_ns);
    publish(&uplink, &downlink);
    let (up, e1) = uplink.finish();
    let (down, e2) = downlink.finish();
    result.map(|()| LoopOutcome {
        uplink: up,
        downlink: down,
        log_error: e1.map(|e| (0, e)).or(e2.map(|e| (1, e))),
        ended_us,
    })
}
